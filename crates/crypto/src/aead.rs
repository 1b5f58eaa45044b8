//! ChaCha20-Poly1305 (RFC 8439) authenticated encryption.

use crate::{Error, Result};
use chacha20poly1305::ChaCha20Poly1305;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use zeroize::{Zeroize, ZeroizeOnDrop};

/// Key length.
pub const KEY_LEN: usize = 32;
/// Nonce length.
pub const NONCE_LEN: usize = 12;
/// Tag length (ciphertext expansion).
pub const TAG_LEN: usize = 16;

/// A ChaCha20-Poly1305 key, zeroized on drop and never printed.
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub struct AeadKey([u8; KEY_LEN]);

impl AeadKey {
    /// Wraps 32 key bytes.
    pub fn new(bytes: [u8; KEY_LEN]) -> Self {
        AeadKey(bytes)
    }

    /// Encrypts `plaintext` with associated data `aad`. A nonce must never repeat
    /// under one key.
    pub fn seal(&self, nonce: &[u8; NONCE_LEN], aad: &[u8], plaintext: &[u8]) -> Vec<u8> {
        ChaCha20Poly1305::new((&self.0).into())
            .encrypt(nonce.into(), Payload { msg: plaintext, aad })
            .expect("ChaCha20-Poly1305 encryption of an in-memory buffer cannot fail")
    }

    /// Decrypts and authenticates.
    pub fn open(&self, nonce: &[u8; NONCE_LEN], aad: &[u8], ciphertext: &[u8]) -> Result<Vec<u8>> {
        ChaCha20Poly1305::new((&self.0).into())
            .decrypt(nonce.into(), Payload { msg: ciphertext, aad })
            .map_err(|_| Error::Decrypt)
    }
}

impl core::fmt::Debug for AeadKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("AeadKey(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip_and_tamper() {
        let k = AeadKey::new([9; 32]);
        let n = [1; 12];
        let ct = k.seal(&n, b"ad", b"secret");
        assert_eq!(ct.len(), 6 + TAG_LEN);
        assert_eq!(k.open(&n, b"ad", &ct).unwrap(), b"secret");
        assert_eq!(k.open(&n, b"AD", &ct), Err(Error::Decrypt));
        let mut bad = ct.clone();
        bad[0] ^= 1;
        assert_eq!(k.open(&n, b"ad", &bad), Err(Error::Decrypt));
        assert_eq!(AeadKey::new([8; 32]).open(&n, b"ad", &ct), Err(Error::Decrypt));
        assert_eq!(format!("{k:?}"), "AeadKey(<redacted>)");
    }
}
