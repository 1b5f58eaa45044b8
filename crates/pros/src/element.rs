//! Set elements as integers (PROS §4.1: an ordered set is a vector of integers whose
//! position is the rank).
//!
//! An element becomes a value `v < 2^b` that serves as a polynomial root, a Horner
//! exponent and the FNP payload. Dummies (padding) are drawn from `[2^b, 2^{b+1})`, a
//! range no real element can take, so a dummy never matches.

use crate::bn::{self, Nat};
use crate::{Error, Result};
use openssl::bn::{BigNum, BigNumRef};
use rand_core::CryptoRngCore;
use sha2::{Digest, Sha256};

/// How set elements are mapped to integers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ElementEncoding {
    /// Any byte string, hashed: `SHA-256("tacit-pros/v1/element\0" ‖ e)` cut to 127
    /// bits. Collisions among 2²⁰ elements have probability below 2⁻⁸⁶.
    #[default]
    Hash127,
    /// The paper's 32-bit integers (§6: "each set element had a length of 32 bits"):
    /// the element is a decimal `u32`.
    Integer32,
}

impl ElementEncoding {
    /// Bits of an element value.
    pub fn bits(self) -> u32 {
        match self {
            ElementEncoding::Hash127 => 127,
            ElementEncoding::Integer32 => 32,
        }
    }

    /// Wire code.
    pub fn code(self) -> u8 {
        match self {
            ElementEncoding::Hash127 => 0,
            ElementEncoding::Integer32 => 1,
        }
    }

    /// From a wire code.
    pub fn from_code(c: u8) -> Result<Self> {
        match c {
            0 => Ok(ElementEncoding::Hash127),
            1 => Ok(ElementEncoding::Integer32),
            _ => Err(Error::Wire(tacit_wire::Error::invalid(
                "element encoding",
                format!("unknown code {c}"),
            ))),
        }
    }

    /// The smallest key that leaves room for elements, dummies and a 64-bit margin
    /// (the chance that a random dummy root equals an element).
    pub fn min_key_bits(self) -> u32 {
        self.bits() + 65
    }

    /// The value of an element.
    pub fn value(self, e: &[u8]) -> Result<Nat> {
        match self {
            ElementEncoding::Hash127 => {
                let mut h = Sha256::new();
                h.update(b"tacit-pros/v1/element\0");
                h.update(e);
                let mut d: [u8; 32] = h.finalize().into();
                d[0] &= 0x7f;
                Ok(BigNum::from_slice(&d[..16])?)
            }
            ElementEncoding::Integer32 => {
                let s = std::str::from_utf8(e)
                    .ok()
                    .map(str::trim)
                    .ok_or_else(|| Error::Invalid("a 32-bit element must be a decimal number".into()))?;
                let v: u32 = s
                    .parse()
                    .map_err(|_| Error::Invalid(format!("{s:?} is not a decimal number below 2^32")))?;
                bn::from_u64(v as u64)
            }
        }
    }

    /// A dummy value in `[2^b, 2^{b+1})`.
    pub fn dummy(self, rng: &mut impl CryptoRngCore) -> Result<Nat> {
        let mut top = BigNum::new()?;
        top.set_bit(self.bits() as i32)?;
        let low = bn::random_below(rng, &top)?;
        bn::add(&top, &low)
    }

    /// Whether `v` can be an element value (below `2^b`).
    pub fn is_element_value(self, v: &openssl::bn::BigNumRef) -> bool {
        !v.is_negative() && (v.num_bits() as u32) <= self.bits()
    }
}

/// A **match tag**: what an evaluation decrypts to when the compared elements are
/// equal, `h = SHA-256(domain ‖ sid ‖ u32 i ‖ u32 j ‖ value (16 bytes))` read as a
/// 256-bit integer and reduced mod `n`.
///
/// The evaluating party returns `E(r·(y − a) + h(y))` instead of FNP's
/// `E(r·(y − a) + y)`: a party that holds `E(−a)` can compute `E(a)` (the inverse mod
/// `n²`) but not `E(h(a))` without knowing `a`, because `h` is not affine in `a`
/// (a random oracle). So a match is something only a holder of the element can
/// produce (issue 26, item 1). `sid` (fresh per session) and the pair `(i, j)` make
/// every comparison's tag different, so two partial matches (equal modulo one prime
/// factor of the key) cannot be linked to each other.
pub fn match_tag(domain: &[u8], sid: &[u8; 32], i: u32, j: u32, value: &BigNumRef, n: &BigNumRef) -> Result<Nat> {
    let mut h = Sha256::new();
    h.update(domain);
    h.update(sid);
    h.update(i.to_be_bytes());
    h.update(j.to_be_bytes());
    h.update(value_bytes(value)?);
    let d: [u8; 32] = h.finalize().into();
    bn::reduce(&*BigNum::from_slice(&d)?, n)
}

/// The session identifier of a PROS run: `SHA-256(domain ‖ channel binding ‖ nonce)`
/// with the TLS channel binding (zeros over plain TCP) and the evaluating party's
/// fresh nonce.
pub fn session_id(domain: &[u8], binding: &[u8; 32], nonce: &[u8; 32]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(domain);
    h.update(binding);
    h.update(nonce);
    h.finalize().into()
}

/// Fixed 16-byte big-endian form of an element value (for outcomes on the wire).
pub(crate) fn value_bytes(v: &openssl::bn::BigNumRef) -> Result<[u8; 16]> {
    let b = bn::to_fixed(v, 16)?;
    let mut out = [0u8; 16];
    out.copy_from_slice(&b);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;

    #[test]
    fn values_and_dummies_never_overlap() {
        let mut rng = ChaCha20Rng::from_seed([1; 32]);
        for enc in [ElementEncoding::Hash127, ElementEncoding::Integer32] {
            for _ in 0..100 {
                let d = enc.dummy(&mut rng).unwrap();
                assert!(!enc.is_element_value(&d));
                assert_eq!(d.num_bits() as u32, enc.bits() + 1);
            }
        }
        let v = ElementEncoding::Hash127.value(b"alice").unwrap();
        assert!(ElementEncoding::Hash127.is_element_value(&v));
        assert_eq!(
            ElementEncoding::Integer32.value(b"4294967295").unwrap(),
            bn::from_u64(u32::MAX as u64).unwrap()
        );
        assert!(ElementEncoding::Integer32.value(b"4294967296").is_err());
        assert!(ElementEncoding::Integer32.value(b"abc").is_err());
    }
}
