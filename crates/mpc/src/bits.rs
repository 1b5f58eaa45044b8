//! Bit vectors packed into `u64` words (bit `i` is bit `i % 64` of word `i / 64`),
//! and the conversions between values and wire-order bits.

/// Words needed to hold `n` bits (at least one).
pub fn words_for(n: usize) -> usize {
    n.div_ceil(64).max(1)
}

/// `words_for(n)` words whose first `n` bits are set.
pub fn lane_mask(n: usize) -> Vec<u64> {
    let mut m = vec![0u64; words_for(n)];
    for (k, w) in m.iter_mut().enumerate() {
        let lo = k * 64;
        if n >= lo + 64 {
            *w = u64::MAX;
        } else if n > lo {
            *w = (1u64 << (n - lo)) - 1;
        }
    }
    m
}

/// Reads bit `i`.
#[inline]
pub fn get(v: &[u64], i: usize) -> bool {
    v[i / 64] >> (i % 64) & 1 == 1
}

/// Sets bit `i` to `b`.
#[inline]
pub fn set(v: &mut [u64], i: usize, b: bool) {
    let m = 1u64 << (i % 64);
    if b {
        v[i / 64] |= m;
    } else {
        v[i / 64] &= !m;
    }
}

/// XORs `n` bits of `src` (from bit 0) into `dst` starting at bit `off`.
#[inline]
pub fn xor_bits_at(dst: &mut [u64], off: usize, src: &[u64], n: usize) {
    if n == 0 {
        return;
    }
    let sh = off % 64;
    let w0 = off / 64;
    let full = n / 64;
    let rem = n % 64;
    if sh == 0 {
        for k in 0..full {
            dst[w0 + k] ^= src[k];
        }
        if rem > 0 {
            dst[w0 + full] ^= src[full] & ((1u64 << rem) - 1);
        }
        return;
    }
    for k in 0..full {
        let s = src[k];
        dst[w0 + k] ^= s << sh;
        dst[w0 + k + 1] ^= s >> (64 - sh);
    }
    if rem > 0 {
        let s = src[full] & ((1u64 << rem) - 1);
        dst[w0 + full] ^= s << sh;
        if sh + rem > 64 {
            dst[w0 + full + 1] ^= s >> (64 - sh);
        }
    }
}

/// Reads `n` bits of `src` starting at bit `off` into `dst` (from bit 0; the unused
/// high bits of the last word are cleared).
#[inline]
pub fn read_bits_at(src: &[u64], off: usize, dst: &mut [u64], n: usize) {
    let sh = off % 64;
    let w0 = off / 64;
    let nw = n.div_ceil(64);
    for k in 0..nw {
        let lo = src[w0 + k] >> sh;
        let hi = if sh != 0 && w0 + k + 1 < src.len() {
            src[w0 + k + 1] << (64 - sh)
        } else {
            0
        };
        dst[k] = lo | hi;
    }
    if !n.is_multiple_of(64) {
        dst[nw - 1] &= (1u64 << (n % 64)) - 1;
    }
}

/// Parses a string of `0`/`1` characters (first character = first wire).
pub fn parse_bit_string(s: &str) -> Result<Vec<bool>, String> {
    s.chars()
        .enumerate()
        .map(|(i, c)| match c {
            '0' => Ok(false),
            '1' => Ok(true),
            _ => Err(format!(
                "character {} of the bit string is {c:?}; only 0 and 1 are allowed",
                i + 1
            )),
        })
        .collect()
}

/// Formats bits as a string of `0`/`1` (first wire first).
pub fn to_bit_string(bits: &[bool]) -> String {
    bits.iter().map(|&b| if b { '1' } else { '0' }).collect()
}

/// The wire-order bits of the integer whose big-endian bytes are `bytes`: wire `k`
/// is bit `k` (least significant first), so wire 0 is the low bit of the last byte
/// (the convention of the Bristol Fashion AES and SHA-256 circuits).
pub fn bits_from_be_bytes(bytes: &[u8]) -> Vec<bool> {
    let n = bytes.len() * 8;
    (0..n)
        .map(|k| bytes[bytes.len() - 1 - k / 8] >> (k % 8) & 1 == 1)
        .collect()
}

/// The inverse of [`bits_from_be_bytes`]; `bits.len()` must be a multiple of 8.
pub fn be_bytes_from_bits(bits: &[bool]) -> Vec<u8> {
    let nb = bits.len() / 8;
    let mut out = vec![0u8; nb];
    for (k, &b) in bits.iter().enumerate() {
        if b {
            out[nb - 1 - k / 8] |= 1 << (k % 8);
        }
    }
    out
}

/// The `width` low bits of `v`, least significant first.
pub fn bits_from_u64(v: u64, width: usize) -> Vec<bool> {
    (0..width).map(|k| k < 64 && v >> k & 1 == 1).collect()
}

/// The integer whose bits (least significant first) are `bits` (at most 64).
pub fn u64_from_bits(bits: &[bool]) -> u64 {
    bits.iter()
        .take(64)
        .enumerate()
        .fold(0, |acc, (k, &b)| acc | (b as u64) << k)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn xor_and_read_roundtrip(src in proptest::collection::vec(any::<u64>(), 1..5), off in 0usize..200, n in 0usize..256) {
            let n = n.min(src.len() * 64);
            let mut dst = vec![0u64; (off + n).div_ceil(64) + 1];
            xor_bits_at(&mut dst, off, &src, n);
            for i in 0..n {
                prop_assert_eq!(get(&dst, off + i), get(&src, i));
            }
            for i in 0..off { prop_assert!(!get(&dst, i)); }
            let mut back = vec![0u64; n.div_ceil(64).max(1)];
            read_bits_at(&dst, off, &mut back, n);
            for i in 0..n { prop_assert_eq!(get(&back, i), get(&src, i)); }
        }

        #[test]
        fn be_bytes_roundtrip(b in proptest::collection::vec(any::<u8>(), 0..40)) {
            prop_assert_eq!(be_bytes_from_bits(&bits_from_be_bytes(&b)), b);
        }
    }

    #[test]
    fn bit_strings() {
        assert_eq!(parse_bit_string("0110").unwrap(), vec![false, true, true, false]);
        assert!(parse_bit_string("01x").is_err());
        assert_eq!(to_bit_string(&[true, false]), "10");
        assert_eq!(lane_mask(70), vec![u64::MAX, 0x3f]);
        assert_eq!(u64_from_bits(&bits_from_u64(59, 64)), 59);
    }
}
