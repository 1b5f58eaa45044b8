//! The server's commitment to the table key (Algorithm 1: `Γ = g^K·h^r`, opened by
//! `K{r}`, the nonce `r` encrypted under `K`).
//!
//! * [`CommitScheme::Binding`] (default): `g` and `h` come from hash-to-group
//!   (`RistrettoPoint::hash_from_bytes::<Sha512>` over fixed labels), so nobody knows
//!   `log_g h` and the commitment is computationally binding under discrete log.
//! * [`CommitScheme::PaperEquivocable`]: as in Algorithm 1, `g = B` and `h` is the
//!   server's own public key `y·B`. The server knows `y = log_g h` and opens one `Γ`
//!   to any key of its choice ([`equivocate`]); kept for reproduction only.
//!
//! In both, `K` enters as the scalar `k = H(K)` and the opening travels as
//! `c = r·m(K)` with `m(K) = H'(K)` (a one-time multiplicative pad in the scalar
//! field: `r = c·m(K)⁻¹`).

use curve25519_dalek::constants::RISTRETTO_BASEPOINT_POINT;
use curve25519_dalek::ristretto::{CompressedRistretto, RistrettoPoint};
use curve25519_dalek::scalar::Scalar;
use rand_core::{CryptoRng, RngCore};
use sha2::Sha512;

use super::keytable::{TableKey, hash_scalar};
use crate::{Error, Result};

/// Which commitment a table uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommitScheme {
    /// Generators from hash-to-group: binding (the default).
    Binding,
    /// The paper's `g^K·h^r` with `h` the server's public key: **equivocable** by the
    /// server; for reproduction only.
    PaperEquivocable,
}

impl CommitScheme {
    /// Wire code.
    pub fn code(self) -> u8 {
        match self {
            CommitScheme::Binding => 1,
            CommitScheme::PaperEquivocable => 2,
        }
    }

    /// The scheme of a wire code.
    pub fn from_code(c: u8) -> Option<Self> {
        match c {
            1 => Some(CommitScheme::Binding),
            2 => Some(CommitScheme::PaperEquivocable),
            _ => None,
        }
    }

    /// The name used on the command line and in docs.
    pub fn name(self) -> &'static str {
        match self {
            CommitScheme::Binding => "binding",
            CommitScheme::PaperEquivocable => "paper-equivocable",
        }
    }
}

impl core::str::FromStr for CommitScheme {
    type Err = String;
    fn from_str(s: &str) -> core::result::Result<Self, String> {
        match s {
            "binding" => Ok(CommitScheme::Binding),
            "paper-equivocable" => Ok(CommitScheme::PaperEquivocable),
            o => Err(format!("unknown commitment {o:?}; choose binding or paper-equivocable")),
        }
    }
}

/// `(g, h)` for a scheme; `server_public` is the server's ristretto255 key `y·B`.
pub fn generators(scheme: CommitScheme, server_public: &RistrettoPoint) -> (RistrettoPoint, RistrettoPoint) {
    match scheme {
        CommitScheme::Binding => (
            RistrettoPoint::hash_from_bytes::<Sha512>(b"tacit/tracedge/v1/commit/g"),
            RistrettoPoint::hash_from_bytes::<Sha512>(b"tacit/tracedge/v1/commit/h"),
        ),
        CommitScheme::PaperEquivocable => (RISTRETTO_BASEPOINT_POINT, *server_public),
    }
}

fn key_scalar(key: &TableKey) -> Scalar {
    hash_scalar(b"tacit/tracedge/v1/commit-key\0", key.as_bytes())
}

fn mask_scalar(key: &TableKey) -> Scalar {
    hash_scalar(b"tacit/tracedge/v1/commit-open\0", key.as_bytes())
}

/// A commitment `Γ` with its encrypted opening `c = r·m(K)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Commitment {
    /// `Γ = k·g + r·h`.
    pub point: [u8; 32],
    /// `c = r·m(K)` (canonical scalar bytes).
    pub opening: [u8; 32],
}

/// Commits to `key` with a fresh nonce.
pub fn commit<R: RngCore + CryptoRng>(
    scheme: CommitScheme,
    server_public: &RistrettoPoint,
    key: &TableKey,
    rng: &mut R,
) -> Commitment {
    let (g, h) = generators(scheme, server_public);
    let r = Scalar::random(rng);
    let point = (key_scalar(key) * g + r * h).compress().to_bytes();
    Commitment {
        point,
        opening: (r * mask_scalar(key)).to_bytes(),
    }
}

/// Whether `key` opens `c` (Algorithm 1: `r' = Dec_K'(K{r})`, `g^K'·h^r' = Γ`).
pub fn opens(scheme: CommitScheme, server_public: &RistrettoPoint, key: &TableKey, c: &Commitment) -> bool {
    let (g, h) = generators(scheme, server_public);
    let Some(ct) = Option::<Scalar>::from(Scalar::from_canonical_bytes(c.opening)) else {
        return false;
    };
    let m = mask_scalar(key);
    if m == Scalar::ZERO {
        return false;
    }
    let r = ct * m.invert();
    (key_scalar(key) * g + r * h).compress() == CompressedRistretto(c.point)
}

/// The equivocation of the paper's commitment: a server that knows `y = log_g h`
/// makes one `(Γ, c)` that **both** `first` and `second` open. Solving
/// `k₁ + y·c/m₁ = k₂ + y·c/m₂` for `c` gives `c = (k₂ − k₁)/(y·(m₁⁻¹ − m₂⁻¹))`.
///
/// Works for [`CommitScheme::PaperEquivocable`] only; for [`CommitScheme::Binding`]
/// it would need `log_g h`, which nobody has.
pub fn equivocate(server_secret: &Scalar, first: &TableKey, second: &TableKey) -> Result<Commitment> {
    let (k1, k2) = (key_scalar(first), key_scalar(second));
    let (m1, m2) = (mask_scalar(first), mask_scalar(second));
    let den = server_secret * (m1.invert() - m2.invert());
    if den == Scalar::ZERO || m1 == Scalar::ZERO || m2 == Scalar::ZERO {
        return Err(Error::InvalidParams("degenerate keys for the equivocation".into()));
    }
    let c = (k2 - k1) * den.invert();
    let r1 = c * m1.invert();
    let point = (k1 * RISTRETTO_BASEPOINT_POINT + r1 * (RISTRETTO_BASEPOINT_POINT * server_secret))
        .compress()
        .to_bytes();
    Ok(Commitment {
        point,
        opening: c.to_bytes(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;

    #[test]
    fn honest_commitment_opens_only_to_its_key() {
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        let y = Scalar::random(&mut rng);
        let ypub = RISTRETTO_BASEPOINT_POINT * y;
        for scheme in [CommitScheme::Binding, CommitScheme::PaperEquivocable] {
            let k = TableKey::random(&mut rng);
            let other = TableKey::random(&mut rng);
            let c = commit(scheme, &ypub, &k, &mut rng);
            assert!(opens(scheme, &ypub, &k, &c));
            assert!(!opens(scheme, &ypub, &other, &c));
            let mut bad = c;
            bad.opening[0] ^= 1;
            assert!(!opens(scheme, &ypub, &k, &bad));
        }
    }

    #[test]
    fn paper_commitment_is_equivocable_binding_is_not() {
        let mut rng = ChaCha20Rng::seed_from_u64(2);
        let y = Scalar::random(&mut rng);
        let ypub = RISTRETTO_BASEPOINT_POINT * y;
        let k1 = TableKey::random(&mut rng);
        let k2 = TableKey::random(&mut rng);
        let c = equivocate(&y, &k1, &k2).unwrap();
        // Against the paper's commitment, one Γ opens to two different keys.
        assert!(opens(CommitScheme::PaperEquivocable, &ypub, &k1, &c));
        assert!(opens(CommitScheme::PaperEquivocable, &ypub, &k2, &c));
        // The same trick does not open under the binding generators.
        assert!(!opens(CommitScheme::Binding, &ypub, &k1, &c));
        assert!(!opens(CommitScheme::Binding, &ypub, &k2, &c));
    }
}
