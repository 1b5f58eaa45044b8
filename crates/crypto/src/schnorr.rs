//! Schnorr proof of knowledge of a discrete logarithm with respect to an arbitrary
//! base, made non-interactive with Fiat–Shamir.
//!
//! PrivateDrop §4.5: a device asks the CA to certify `y = α · H(ID)`; the CA must be
//! sure `y` is a blinding of the legitimately hashed identifier and that the device
//! knows `α`. The statement is `(B, Y)` with `Y = α · B`:
//!
//! ```text
//! prover:   r ←$ Zq,  T = r·B,  c = H(DST, context, B, Y, T),  s = r + c·α
//! verifier: T' = s·B − c·Y,  accept iff c = H(DST, context, B, Y, T')
//! ```
//!
//! The hash is the group's `HashToScalar` (RFC 9380 `expand_message_xmd`) under the
//! domain separation tag `"tacit-schnorr-dlog-v1-" || suite`; every input is length
//! prefixed, and the whole statement (base, public value, caller context such as the
//! account UUID) is in the transcript, so a proof cannot be moved to another statement.

use crate::group::{PrimeGroup, SecretScalar};
use crate::{Error, Result};
use rand_core::CryptoRngCore;

/// A proof `(c, s)`.
#[derive(Clone, Copy, PartialEq)]
pub struct DlogProof<G: PrimeGroup> {
    /// Challenge.
    pub c: G::Scalar,
    /// Response.
    pub s: G::Scalar,
}

fn challenge<G: PrimeGroup>(
    context: &[u8],
    base: &G::Element,
    public: &G::Element,
    commitment: &G::Element,
) -> Result<G::Scalar> {
    let b = G::element_bytes(base);
    let y = G::element_bytes(public);
    let t = G::element_bytes(commitment);
    let ctx_len = (context.len() as u64).to_be_bytes();
    G::hash_to_scalar(
        &[&ctx_len, context, b.as_ref(), y.as_ref(), t.as_ref()],
        &[b"tacit-schnorr-dlog-v1-", G::SUITE_ID.as_bytes()],
    )
}

impl<G: PrimeGroup> DlogProof<G> {
    /// Encoded length.
    pub const LEN: usize = 2 * G::SCALAR_LEN;

    /// Proves knowledge of `secret` with `public = secret · base`.
    pub fn prove(
        base: &G::Element,
        secret: &SecretScalar<G>,
        context: &[u8],
        rng: &mut impl CryptoRngCore,
    ) -> Result<Self> {
        let public = G::mul(base, secret.expose());
        let r = SecretScalar::<G>::random(rng);
        let t = G::mul(base, r.expose());
        let c = challenge::<G>(context, base, &public, &t)?;
        let s = G::scalar_add(r.expose(), &G::scalar_mul(&c, secret.expose()));
        Ok(DlogProof { c, s })
    }

    /// Verifies the proof for the statement `public = α · base` under `context`.
    pub fn verify(&self, base: &G::Element, public: &G::Element, context: &[u8]) -> Result<()> {
        if G::is_identity(base) || G::is_identity(public) {
            return Err(Error::ProofInvalid("Schnorr"));
        }
        let neg_c = G::scalar_sub(&G::scalar_zero(), &self.c);
        let t = G::vartime_lincomb(&[self.s, neg_c], &[*base, *public]);
        let expected = challenge::<G>(context, base, public, &t)?;
        if expected == self.c {
            Ok(())
        } else {
            Err(Error::ProofInvalid("Schnorr"))
        }
    }

    /// `c || s`.
    pub fn to_bytes(&self) -> Vec<u8> {
        crate::group::two_scalars_to_bytes::<G>(&self.c, &self.s)
    }

    /// Decodes `c || s`; both scalars must be canonical.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let (c, s) = crate::group::two_scalars_from_bytes::<G>(bytes)?;
        Ok(DlogProof { c, s })
    }
}

impl<G: PrimeGroup> core::fmt::Debug for DlogProof<G> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        crate::group::fmt_hex(f, "DlogProof", &self.to_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oprf::{Mode, Oprf};
    use crate::rng::SecureRng;
    use crate::{P256, Ristretto255};

    fn suite<G: PrimeGroup>() {
        let mut rng = SecureRng::from_seed([3; 32]);
        let base = Oprf::<G>::new(Mode::Voprf).hash_to_group(b"alice@example.com").unwrap();
        let alpha = SecretScalar::<G>::random(&mut rng);
        let y = G::mul(&base, alpha.expose());
        let proof = DlogProof::<G>::prove(&base, &alpha, b"uuid-1", &mut rng).unwrap();
        proof.verify(&base, &y, b"uuid-1").unwrap();
        let back = DlogProof::<G>::from_bytes(&proof.to_bytes()).unwrap();
        back.verify(&base, &y, b"uuid-1").unwrap();
        // another context, another base, another public value: refused
        assert!(proof.verify(&base, &y, b"uuid-2").is_err());
        let other = Oprf::<G>::new(Mode::Voprf).hash_to_group(b"bob@example.com").unwrap();
        assert!(
            proof
                .verify(&other, &G::mul(&other, alpha.expose()), b"uuid-1")
                .is_err()
        );
        assert!(proof.verify(&base, &G::add(&y, &G::generator()), b"uuid-1").is_err());
        // tampered response refused
        let bad = DlogProof::<G> {
            c: proof.c,
            s: G::scalar_add(&proof.s, &G::scalar_mul(&proof.c, &proof.c)),
        };
        assert!(bad.verify(&base, &y, b"uuid-1").is_err());
        assert!(proof.verify(&base, &G::identity(), b"uuid-1").is_err());
    }

    #[test]
    fn ristretto() {
        suite::<Ristretto255>();
    }

    #[test]
    fn p256() {
        suite::<P256>();
    }
}
