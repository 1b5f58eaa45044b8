//! HKDF with SHA-256 (RFC 5869).

use crate::{Error, Result};
use hkdf::Hkdf;
use sha2::Sha256;
use zeroize::Zeroizing;

/// `HKDF-Expand(HKDF-Extract(salt, ikm), info, len)`.
///
/// # Errors
/// If `len` exceeds 255 · 32 bytes.
pub fn hkdf_sha256(salt: &[u8], ikm: &[u8], info: &[u8], len: usize) -> Result<Zeroizing<Vec<u8>>> {
    let hk = Hkdf::<Sha256>::new(Some(salt), ikm);
    let mut out = Zeroizing::new(vec![0u8; len]);
    hk.expand(info, &mut out)
        .map_err(|_| Error::InvalidParameter("HKDF output longer than 8160 bytes"))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 5869 Appendix A.1.
    #[test]
    fn rfc5869_case_1() {
        let ikm = [0x0bu8; 22];
        let salt: Vec<u8> = (0u8..=0x0c).collect();
        let info: Vec<u8> = (0xf0u8..=0xf9).collect();
        let okm = hkdf_sha256(&salt, &ikm, &info, 42).unwrap();
        let hex: String = okm.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            hex,
            "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"
        );
        assert!(hkdf_sha256(&salt, &ikm, &info, 255 * 32 + 1).is_err());
    }
}
