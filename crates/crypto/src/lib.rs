//! tacit's cryptographic core.
//!
//! * [`group`]: prime-order groups behind one trait, [`PrimeGroup`], with two
//!   implementations: [`Ristretto255`] (the default) and [`P256`] (the curve of the
//!   PrivateDrop paper). Encodings are canonical; decoding rejects non-canonical
//!   encodings and the identity.
//! * [`xmd`]: `expand_message_xmd` from RFC 9380 §5.3.1; hashing to the groups follows
//!   RFC 9380 (P256_XMD:SHA-256_SSWU_RO_) and RFC 9497 §4.1 (ristretto255).
//! * [`oprf`]: the RFC 9497 OPRF (mode 0) and VOPRF (mode 1) with batched DLEQ proofs.
//! * [`schnorr`]: a Schnorr proof of knowledge of a discrete logarithm with respect to
//!   an arbitrary base (PrivateDrop §4.5: the CA certifies `y = H(ID)^α` only after the
//!   client proves knowledge of `α`).
//! * [`sign`] (Ed25519, strict verification), [`aead`] (ChaCha20-Poly1305),
//!   [`kdf`] (HKDF-SHA256) and [`rng`] (a CSPRNG seeded by the operating system).
//!
//! Secret scalars and keys are zeroized on drop and never printed by `Debug`.
//!
//! ```
//! use tacit_crypto::{oprf::{Mode, Oprf}, PrimeGroup, Ristretto255, rng::SecureRng};
//!
//! let mut rng = SecureRng::from_os();
//! let oprf = Oprf::<Ristretto255>::new(Mode::Voprf);
//! let key = oprf.generate_key(&mut rng);
//!
//! // Client: blind the input.
//! let blind = Ristretto255::random_scalar(&mut rng);
//! let blinded = oprf.blind(b"+15551234567", &blind).unwrap();
//! // Server: evaluate and prove.
//! let evaluated = oprf.blind_evaluate(&key, &blinded);
//! let proof = oprf.generate_proof(&key, &[blinded], &[evaluated], &mut rng);
//! // Client: verify, unblind and finalize; equals the server's direct evaluation.
//! oprf.verify_proof(key.public(), &[blinded], &[evaluated], &proof).unwrap();
//! let out = oprf.finalize(b"+15551234567", &blind, &evaluated);
//! assert_eq!(out, oprf.evaluate(&key, b"+15551234567").unwrap());
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod aead;
pub mod group;
pub mod kdf;
pub mod oprf;
pub mod rng;
pub mod schnorr;
pub mod sign;
pub mod xmd;

pub use group::{GroupId, P256, PrimeGroup, Ristretto255, SecretScalar};

/// Errors of the cryptographic core.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// An encoded group element is malformed, non-canonical, off the curve or the
    /// identity.
    #[error("invalid {group} element: {why}")]
    InvalidElement {
        /// Group name.
        group: &'static str,
        /// What is wrong.
        why: &'static str,
    },
    /// An encoded scalar is malformed or not reduced.
    #[error("invalid {group} scalar: {why}")]
    InvalidScalar {
        /// Group name.
        group: &'static str,
        /// What is wrong.
        why: &'static str,
    },
    /// An input hashed to the identity element (RFC 9497 `InvalidInputError`).
    #[error("input hashes to the identity element")]
    InvalidInput,
    /// A proof (DLEQ or Schnorr) did not verify.
    #[error("{0} proof does not verify")]
    ProofInvalid(&'static str),
    /// A signature did not verify.
    #[error("signature does not verify")]
    BadSignature,
    /// A key has the wrong length or form.
    #[error("invalid key: {0}")]
    InvalidKey(&'static str),
    /// AEAD decryption failed (wrong key, nonce or associated data, or tampering).
    #[error("decryption failed: the ciphertext was tampered with or the key is wrong")]
    Decrypt,
    /// Parameters outside what the primitive allows (for example an
    /// `expand_message_xmd` output longer than 255 hash blocks).
    #[error("invalid parameter: {0}")]
    InvalidParameter(&'static str),
    /// Key derivation gave up (RFC 9497 `DeriveKeyPairError`).
    #[error("key derivation failed")]
    DeriveKeyPair,
    /// Lists that must have the same length do not.
    #[error("length mismatch: {0}")]
    LengthMismatch(&'static str),
}

/// Result alias of this crate.
pub type Result<T> = core::result::Result<T, Error>;
