//! Account identifiers: the UUID that AirDrop puts in the account's TLS certificate
//! (PrivateDrop §2.4; the paper notes it is per account, not per device).

use rand_core::CryptoRngCore;
use tacit_wire::{Reader, Writer};

/// A random 128-bit account identifier (UUID version 4).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AccountId(pub [u8; 16]);

impl AccountId {
    /// A fresh random UUID v4.
    pub fn random(rng: &mut impl CryptoRngCore) -> Self {
        let mut b = [0u8; 16];
        rng.fill_bytes(&mut b);
        b[6] = (b[6] & 0x0f) | 0x40;
        b[8] = (b[8] & 0x3f) | 0x80;
        AccountId(b)
    }

    pub(crate) fn encode(&self, w: &mut Writer) {
        w.put_fixed(&self.0);
    }

    pub(crate) fn decode(r: &mut Reader<'_>) -> tacit_wire::Result<Self> {
        Ok(AccountId(r.array("account id")?))
    }

    /// Parses the hyphenated form.
    pub fn parse(s: &str) -> Option<Self> {
        let digits: String = s.chars().filter(|c| *c != '-').collect();
        // Hex digits only, exactly 32 of them (`from_str_radix` would take a sign).
        let mut b = [0u8; 16];
        hex::decode_to_slice(&digits, &mut b).ok()?;
        Some(AccountId(b))
    }
}

impl core::fmt::Display for AccountId {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        for (i, b) in self.0.iter().enumerate() {
            if matches!(i, 4 | 6 | 8 | 10) {
                f.write_str("-")?;
            }
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl core::fmt::Debug for AccountId {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "AccountId({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tacit_crypto::rng::SecureRng;

    #[test]
    fn display_parse_roundtrip() {
        let a = AccountId::random(&mut SecureRng::from_seed([5; 32]));
        let s = a.to_string();
        assert_eq!(s.len(), 36);
        assert_eq!(&s[14..15], "4");
        assert_eq!(AccountId::parse(&s), Some(a));
        assert_eq!(AccountId::parse("nope"), None);
        assert_eq!(AccountId::parse(&format!("+{}", "a".repeat(31))), None);
    }
}
