//! Ed25519 signatures with strict verification (RFC 8032, with the `verify_strict`
//! rules of ed25519-dalek: canonical `S`, no small-order keys or `R`).

use crate::{Error, Result};
use ed25519_dalek::Signer;
use rand_core::CryptoRngCore;

/// Length of a signature.
pub const SIGNATURE_LEN: usize = 64;
/// Length of a public key.
pub const PUBLIC_KEY_LEN: usize = 32;

/// An Ed25519 signing key (zeroized on drop, never printed).
pub struct SigningKey(ed25519_dalek::SigningKey);

/// An Ed25519 public key.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct VerifyingKey(ed25519_dalek::VerifyingKey);

impl SigningKey {
    /// A fresh random key.
    pub fn generate(rng: &mut impl CryptoRngCore) -> Self {
        SigningKey(ed25519_dalek::SigningKey::generate(rng))
    }

    /// From the 32-byte seed.
    pub fn from_seed(seed: &[u8; 32]) -> Self {
        SigningKey(ed25519_dalek::SigningKey::from_bytes(seed))
    }

    /// The 32-byte seed (secret: handle with care).
    pub fn to_seed(&self) -> zeroize::Zeroizing<[u8; 32]> {
        zeroize::Zeroizing::new(self.0.to_bytes())
    }

    /// The public key.
    pub fn verifying_key(&self) -> VerifyingKey {
        VerifyingKey(self.0.verifying_key())
    }

    /// Signs `msg`.
    pub fn sign(&self, msg: &[u8]) -> [u8; SIGNATURE_LEN] {
        self.0.sign(msg).to_bytes()
    }
}

impl core::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "SigningKey(<redacted>, public {:?})", self.verifying_key())
    }
}

impl VerifyingKey {
    /// Decodes a public key; refuses encodings that are not points and small-order
    /// (weak) keys.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let arr: [u8; 32] = bytes
            .try_into()
            .map_err(|_| Error::InvalidKey("an Ed25519 public key is 32 bytes"))?;
        let k = ed25519_dalek::VerifyingKey::from_bytes(&arr)
            .map_err(|_| Error::InvalidKey("not an Ed25519 public key"))?;
        if k.is_weak() {
            return Err(Error::InvalidKey("small-order Ed25519 public key"));
        }
        Ok(VerifyingKey(k))
    }

    /// The 32-byte encoding.
    pub fn to_bytes(&self) -> [u8; 32] {
        self.0.to_bytes()
    }

    /// Strict verification of `sig` over `msg`.
    pub fn verify(&self, msg: &[u8], sig: &[u8]) -> Result<()> {
        let arr: [u8; SIGNATURE_LEN] = sig.try_into().map_err(|_| Error::BadSignature)?;
        let sig = ed25519_dalek::Signature::from_bytes(&arr);
        self.0.verify_strict(msg, &sig).map_err(|_| Error::BadSignature)
    }
}

impl core::fmt::Debug for VerifyingKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let b = self.to_bytes();
        write!(f, "VerifyingKey(")?;
        for x in &b[..8] {
            write!(f, "{x:02x}")?;
        }
        write!(f, "…)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SecureRng;

    #[test]
    fn sign_verify() {
        let mut rng = SecureRng::from_seed([1; 32]);
        let k = SigningKey::generate(&mut rng);
        let sig = k.sign(b"hello");
        let vk = VerifyingKey::from_bytes(&k.verifying_key().to_bytes()).unwrap();
        vk.verify(b"hello", &sig).unwrap();
        assert!(vk.verify(b"hellp", &sig).is_err());
        let mut bad = sig;
        bad[63] ^= 0x80; // S no longer canonical / wrong
        assert!(vk.verify(b"hello", &bad).is_err());
        assert!(vk.verify(b"hello", &sig[..63]).is_err());
        assert!(!format!("{k:?}").contains(&format!("{:?}", k.to_seed().as_slice())));
    }

    #[test]
    fn weak_key_refused() {
        // the identity point is a small-order key
        let mut id = [0u8; 32];
        id[0] = 1;
        assert!(VerifyingKey::from_bytes(&id).is_err());
    }
}
