//! The oblivious pseudorandom function of RFC 9497, modes 0 (OPRF) and 1 (VOPRF).
//!
//! With `contextString = "OPRFV1-" || I2OSP(mode, 1) || "-" || identifier`:
//!
//! ```text
//! Blind(input, r)         = r · HashToGroup(input)                       (§3.3.1)
//! BlindEvaluate(k, B)     = k · B                                        (§3.3.1)
//! Finalize(input, r, Z)   = Hash(I2OSP(len(input), 2) || input ||
//!                                I2OSP(len(N), 2) || N || "Finalize"),
//!                           N = SerializeElement(r⁻¹ · Z)                (§3.3.1)
//! Evaluate(k, input)      = Finalize with N = k · HashToGroup(input)     (§3.3.2)
//! ```
//!
//! The VOPRF adds a batched DLEQ proof (§2.2) that every evaluated element was
//! computed with the key behind the public key `pk = k · G`: one proof for a whole
//! batch, built from the composite elements `M = Σ dᵢ·Cᵢ`, `Z = Σ dᵢ·Dᵢ` with
//! `dᵢ = HashToScalar(seed, i, Cᵢ, Dᵢ, "Composite")`.
//!
//! This is the malicious-secure PSI's core: the PSI receiver's blinded elements
//! are `Cᵢ`, the sender's answers `Dᵢ = k·Cᵢ`, and one proof binds all of them to `pk`.

use crate::group::{PrimeGroup, SecretScalar};
use crate::{Error, Result};
use rand_core::CryptoRngCore;
use sha2::Digest;
use sha2::digest::Output;
use zeroize::Zeroize;

/// RFC 9497 protocol mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Mode {
    /// Mode 0: plain OPRF, no proof.
    Oprf = 0,
    /// Mode 1: verifiable OPRF, batched DLEQ proof.
    Voprf = 1,
}

/// A server's OPRF key pair; the secret is zeroized on drop and never printed.
#[derive(Debug, Clone)]
pub struct KeyPair<G: PrimeGroup> {
    secret: SecretScalar<G>,
    public: G::Element,
}

impl<G: PrimeGroup> KeyPair<G> {
    /// The key pair of a secret scalar.
    pub fn from_secret(secret: SecretScalar<G>) -> Self {
        let public = G::mul_base(secret.expose());
        KeyPair { secret, public }
    }

    /// The public key `pk = k · G`.
    pub fn public(&self) -> &G::Element {
        &self.public
    }

    /// The secret scalar `k`.
    pub fn secret(&self) -> &SecretScalar<G> {
        &self.secret
    }
}

/// A batched DLEQ proof `(c, s)` (RFC 9497 §2.2.1).
#[derive(Clone, Copy, PartialEq)]
pub struct Proof<G: PrimeGroup> {
    /// Challenge.
    pub c: G::Scalar,
    /// Response.
    pub s: G::Scalar,
}

impl<G: PrimeGroup> Proof<G> {
    /// Encoded length: two scalars.
    pub const LEN: usize = 2 * G::SCALAR_LEN;

    /// `SerializeScalar(c) || SerializeScalar(s)`.
    pub fn to_bytes(&self) -> Vec<u8> {
        crate::group::two_scalars_to_bytes::<G>(&self.c, &self.s)
    }

    /// Decodes `c || s`; both scalars must be canonical.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let (c, s) = crate::group::two_scalars_from_bytes::<G>(bytes)?;
        Ok(Proof { c, s })
    }
}

/// An RFC 9497 context: the mode and suite with their derived domain separation tags.
#[derive(Debug, Clone)]
pub struct Oprf<G: PrimeGroup> {
    mode: Mode,
    context: Vec<u8>,
    _g: core::marker::PhantomData<G>,
}

fn i2osp2(n: usize) -> [u8; 2] {
    (n as u16).to_be_bytes()
}

impl<G: PrimeGroup> Oprf<G> {
    /// The context for `mode` and the group's suite.
    pub fn new(mode: Mode) -> Self {
        let mut context = b"OPRFV1-".to_vec();
        context.push(mode as u8);
        context.push(b'-');
        context.extend_from_slice(G::SUITE_ID.as_bytes());
        Oprf {
            mode,
            context,
            _g: core::marker::PhantomData,
        }
    }

    /// The mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// `contextString`.
    pub fn context_string(&self) -> &[u8] {
        &self.context
    }

    /// A fresh random key pair.
    pub fn generate_key(&self, rng: &mut impl CryptoRngCore) -> KeyPair<G> {
        KeyPair::from_secret(SecretScalar::random(rng))
    }

    /// `DeriveKeyPair(seed, info)` (RFC 9497 §3.2.1).
    pub fn derive_key_pair(&self, seed: &[u8], info: &[u8]) -> Result<KeyPair<G>> {
        if info.len() > u16::MAX as usize {
            return Err(Error::InvalidParameter("key info longer than 65535 bytes"));
        }
        let info_len = i2osp2(info.len());
        for counter in 0u8..=255 {
            let sk = G::hash_to_scalar(&[seed, &info_len, info, &[counter]], &[b"DeriveKeyPair", &self.context])?;
            if !G::scalar_is_zero(&sk) {
                return Ok(KeyPair::from_secret(SecretScalar::new(sk)));
            }
        }
        Err(Error::DeriveKeyPair)
    }

    /// `HashToGroup(input)` with this context's DST, refusing the identity.
    pub fn hash_to_group(&self, input: &[u8]) -> Result<G::Element> {
        let e = G::hash_to_group(&[input], &[b"HashToGroup-", &self.context])?;
        if G::is_identity(&e) {
            return Err(Error::InvalidInput);
        }
        Ok(e)
    }

    /// `HashToScalar(msg)` with this context's default DST.
    pub fn hash_to_scalar(&self, msg: &[&[u8]]) -> Result<G::Scalar> {
        G::hash_to_scalar(msg, &[b"HashToScalar-", &self.context])
    }

    /// `Blind(input)` with a caller-chosen non-zero blind.
    pub fn blind(&self, input: &[u8], blind: &G::Scalar) -> Result<G::Element> {
        Ok(G::mul(&self.hash_to_group(input)?, blind))
    }

    /// `BlindEvaluate(skS, blindedElement)`.
    pub fn blind_evaluate(&self, key: &KeyPair<G>, blinded: &G::Element) -> G::Element {
        G::mul(blinded, key.secret.expose())
    }

    /// The final hash over the input and the unblinded element.
    pub fn finalize_unblinded(&self, input: &[u8], unblinded: &G::Element) -> Output<G::Hash> {
        let n = G::element_bytes(unblinded);
        let mut h = G::Hash::new();
        h.update(i2osp2(input.len()));
        h.update(input);
        h.update(i2osp2(n.as_ref().len()));
        h.update(n.as_ref());
        h.update(b"Finalize");
        h.finalize()
    }

    /// `Finalize(input, blind, evaluatedElement)`: unblinds with `blind⁻¹` and hashes.
    pub fn finalize(&self, input: &[u8], blind: &G::Scalar, evaluated: &G::Element) -> Output<G::Hash> {
        let unblinded = G::mul(evaluated, &G::scalar_invert(blind));
        self.finalize_unblinded(input, &unblinded)
    }

    /// `Evaluate(skS, input)`: the server computes the PRF output directly.
    pub fn evaluate(&self, key: &KeyPair<G>, input: &[u8]) -> Result<Output<G::Hash>> {
        let e = G::mul(&self.hash_to_group(input)?, key.secret.expose());
        Ok(self.finalize_unblinded(input, &e))
    }

    fn composite_seed(&self, pk: &[u8]) -> Output<G::Hash> {
        let mut h = G::Hash::new();
        h.update(i2osp2(pk.len()));
        h.update(pk);
        let seed_dst_len = 5 + self.context.len();
        h.update(i2osp2(seed_dst_len));
        h.update(b"Seed-");
        h.update(&self.context);
        h.finalize()
    }

    /// The composite weights `dᵢ = H(seed, i, Cᵢ, Dᵢ)` over the canonical encodings.
    fn composite_scalars(&self, pk: &[u8], c: &[G::ElementBytes], d: &[G::ElementBytes]) -> Result<Vec<G::Scalar>> {
        let seed = self.composite_seed(pk);
        let seed_len = i2osp2(seed.len());
        c.iter()
            .zip(d)
            .enumerate()
            .map(|(i, (cb, db))| {
                self.hash_to_scalar(&[
                    &seed_len,
                    &seed,
                    &i2osp2(i),
                    &i2osp2(cb.as_ref().len()),
                    cb.as_ref(),
                    &i2osp2(db.as_ref().len()),
                    db.as_ref(),
                    b"Composite",
                ])
            })
            .collect()
    }

    fn challenge(
        &self,
        pk: &[u8],
        m: &G::Element,
        z: &G::Element,
        t2: &G::Element,
        t3: &G::Element,
    ) -> Result<G::Scalar> {
        let parts = [
            G::element_bytes(m),
            G::element_bytes(z),
            G::element_bytes(t2),
            G::element_bytes(t3),
        ];
        let lens: Vec<[u8; 2]> = parts.iter().map(|p| i2osp2(p.as_ref().len())).collect();
        self.hash_to_scalar(&[
            &i2osp2(pk.len()),
            pk,
            &lens[0],
            parts[0].as_ref(),
            &lens[1],
            parts[1].as_ref(),
            &lens[2],
            parts[2].as_ref(),
            &lens[3],
            parts[3].as_ref(),
            b"Challenge",
        ])
    }

    /// `GenerateProof(k, G, pk, C, D)` with a random nonce.
    pub fn generate_proof(
        &self,
        key: &KeyPair<G>,
        blinded: &[G::Element],
        evaluated: &[G::Element],
        rng: &mut impl CryptoRngCore,
    ) -> Proof<G> {
        let r = SecretScalar::<G>::random(rng);
        self.generate_proof_with_nonce(key, blinded, evaluated, r.expose())
            .expect("lists built by the caller have equal length")
    }

    /// `GenerateProof` with a given nonce `r` (for the RFC test vectors).
    pub fn generate_proof_with_nonce(
        &self,
        key: &KeyPair<G>,
        blinded: &[G::Element],
        evaluated: &[G::Element],
        r: &G::Scalar,
    ) -> Result<Proof<G>> {
        let cb: Vec<G::ElementBytes> = blinded.iter().map(G::element_bytes).collect();
        let db: Vec<G::ElementBytes> = evaluated.iter().map(G::element_bytes).collect();
        self.prove(key, (blinded, &cb), (evaluated, &db), r)
    }

    /// [`Oprf::generate_proof`] for a caller that already holds the canonical
    /// encodings of `C` and `D` (decoded from, or about to be written to, the wire):
    /// saves one point compression per element. `blinded.1[i]` must be the encoding of
    /// `blinded.0[i]`, and likewise for `evaluated` (checked in debug builds).
    pub fn generate_proof_encoded(
        &self,
        key: &KeyPair<G>,
        blinded: (&[G::Element], &[G::ElementBytes]),
        evaluated: (&[G::Element], &[G::ElementBytes]),
        rng: &mut impl CryptoRngCore,
    ) -> Result<Proof<G>> {
        let r = SecretScalar::<G>::random(rng);
        self.prove(key, blinded, evaluated, r.expose())
    }

    fn prove(
        &self,
        key: &KeyPair<G>,
        (blinded, cb): (&[G::Element], &[G::ElementBytes]),
        (evaluated, db): (&[G::Element], &[G::ElementBytes]),
        r: &G::Scalar,
    ) -> Result<Proof<G>> {
        check_batch::<G>(blinded, cb, evaluated, db)
            .map_err(|_| Error::LengthMismatch("proof batch must be 1..=65535 equal-length lists"))?;
        let pk = G::element_bytes(&key.public);
        // ComputeCompositesFast: M = Σ dᵢ·Cᵢ, Z = k·M.
        let d = self.composite_scalars(pk.as_ref(), cb, db)?;
        let m = G::vartime_lincomb(&d, blinded);
        let z = G::mul(&m, key.secret.expose());
        let t2 = G::mul_base(r);
        let t3 = G::mul(&m, r);
        let c = self.challenge(pk.as_ref(), &m, &z, &t2, &t3)?;
        // s = r - c·k; the product c·k reveals k to anyone who sees it with c, so it is
        // wiped as soon as s is computed.
        let mut ck = G::scalar_mul(&c, key.secret.expose());
        let s = G::scalar_sub(r, &ck);
        ck.zeroize();
        Ok(Proof { c, s })
    }

    /// `VerifyProof(G, pk, C, D, proof)`.
    ///
    /// # Errors
    /// [`Error::ProofInvalid`] if any evaluated element was not computed with the key
    /// behind `pk` (or the lists differ in length).
    pub fn verify_proof(
        &self,
        pk: &G::Element,
        blinded: &[G::Element],
        evaluated: &[G::Element],
        proof: &Proof<G>,
    ) -> Result<()> {
        let cb: Vec<G::ElementBytes> = blinded.iter().map(G::element_bytes).collect();
        let db: Vec<G::ElementBytes> = evaluated.iter().map(G::element_bytes).collect();
        self.verify_proof_encoded((pk, &G::element_bytes(pk)), (blinded, &cb), (evaluated, &db), proof)
    }

    /// [`Oprf::verify_proof`] for a caller that already holds the canonical encodings
    /// of `pk`, `C` and `D` (as decoded from the wire): saves one point compression per
    /// element. Each encoding must be that of the element beside it (checked in debug
    /// builds); elements decoded from those very bytes satisfy this by construction.
    pub fn verify_proof_encoded(
        &self,
        (pk, pk_bytes): (&G::Element, &G::ElementBytes),
        (blinded, cb): (&[G::Element], &[G::ElementBytes]),
        (evaluated, db): (&[G::Element], &[G::ElementBytes]),
        proof: &Proof<G>,
    ) -> Result<()> {
        check_batch::<G>(blinded, cb, evaluated, db)?;
        debug_assert_eq!(G::element_bytes(pk).as_ref(), pk_bytes.as_ref());
        // ComputeComposites: M = Σ dᵢ·Cᵢ, Z = Σ dᵢ·Dᵢ.
        let d = self.composite_scalars(pk_bytes.as_ref(), cb, db)?;
        let m = G::vartime_lincomb(&d, blinded);
        let z = G::vartime_lincomb(&d, evaluated);
        // t2 = s·G + c·pk, t3 = s·M + c·Z
        let t2 = G::vartime_double_base(&proof.c, pk, &proof.s);
        let t3 = G::vartime_lincomb(&[proof.s, proof.c], &[m, z]);
        let expected = self.challenge(pk_bytes.as_ref(), &m, &z, &t2, &t3)?;
        if expected == proof.c {
            Ok(())
        } else {
            Err(Error::ProofInvalid("DLEQ"))
        }
    }
}

/// The batch shape a DLEQ proof accepts: `1..=65535` elements on each side, equal
/// lengths, one encoding per element.
fn check_batch<G: PrimeGroup>(
    c: &[G::Element],
    cb: &[G::ElementBytes],
    d: &[G::Element],
    db: &[G::ElementBytes],
) -> Result<()> {
    if c.len() != d.len() || c.is_empty() || c.len() > u16::MAX as usize || cb.len() != c.len() || db.len() != d.len() {
        return Err(Error::ProofInvalid("DLEQ"));
    }
    debug_assert!(
        c.iter()
            .zip(cb)
            .all(|(e, b)| G::element_bytes(e).as_ref() == b.as_ref())
    );
    debug_assert!(
        d.iter()
            .zip(db)
            .all(|(e, b)| G::element_bytes(e).as_ref() == b.as_ref())
    );
    Ok(())
}

impl<G: PrimeGroup> core::fmt::Debug for Proof<G> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        crate::group::fmt_hex(f, "Proof", &self.to_bytes())
    }
}
