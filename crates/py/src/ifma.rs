//! The Montgomery product mod `n²` on AVX-512 IFMA, for the encrypted addition.
//!
//! OpenSSL's assembly Montgomery product (`BN_mod_mul_montgomery`) runs at one 64×64-bit
//! word product per cycle (`mulx`): 6.9 µs for 6144 bits on this machine's AMD EPYC,
//! which bounds an addition of `tacit.paillier` at about 3× phe's on two cores. CPUs with
//! AVX-512 IFMA (`vpmadd52luq`/`vpmadd52huq`: eight 52×52-bit products per instruction)
//! do the same product in 1.6 µs here. This module is that product: numbers as `L`
//! limbs of 52 bits (`L` a multiple of 8, `52·L > bits(m)`), `R = 2^(52·L)`, the
//! word-serial Montgomery algorithm with the accumulator in `L/8` vector registers (the
//! layout of OpenSSL's `rsaz-*-avx512` code: low halves of the products before the
//! one-limb shift, high halves after it), then one carry pass and a conditional
//! subtraction, so that every result is the canonical `a·b·R⁻¹ mod m`.
//!
//! Ciphertexts go through it, and so does the randomness `rⁿ` of an encryption (one
//! product to bring it into Montgomery form): no branch or memory access depends on the
//! values (a fixed number of limbs per key, the final subtraction a masked select). It
//! is used only where the CPU reports `avx512f` and `avx512ifma` at run time, and the
//! suite checks its products against Python's arithmetic
//! (`test_both_montgomery_products_match_python`,
//! `test_raw_ciphertexts_are_textbook_paillier`).

use openssl::bn::{BigNum, BigNumRef};
use tacit_pros::Error;

const MASK: u64 = (1 << 52) - 1;

/// The largest number of 8-limb vectors supported: 20, i.e. moduli up to 8319 bits (`n²`
/// of a 4096-bit key is 8192).
const MAX_V: usize = 20;

/// Whether this CPU has AVX-512 IFMA.
pub(crate) fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f") && std::arch::is_x86_feature_detected!("avx512ifma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// A number in Montgomery form as 52-bit limbs.
pub(crate) type Limbs = Box<[u64]>;

/// The constants of an odd modulus `m`.
pub(crate) struct Amm {
    /// Limbs, a multiple of 8.
    l: usize,
    m: Limbs,
    /// `−m⁻¹ mod 2⁵²`.
    k0: u64,
    /// `R² mod m`, to enter Montgomery form.
    rr: Limbs,
    /// `1`, to leave it.
    one: Limbs,
}

/// The limbs of `x < 2^(52·l)`.
fn to_limbs(x: &BigNumRef, l: usize) -> Result<Limbs, Error> {
    // padded, so that the work does not depend on the number's length
    let be = x.to_vec_padded(((52 * l).div_ceil(8)) as i32)?;
    let mut words = vec![0u64; l * 52 / 64 + 2];
    for (i, byte) in be.iter().rev().enumerate() {
        words[i / 8] |= u64::from(*byte) << (8 * (i % 8));
    }
    Ok((0..l)
        .map(|i| {
            let (w, off) = (i * 52 / 64, i * 52 % 64);
            let lo = words[w] >> off;
            let hi = if off > 12 { words[w + 1] << (64 - off) } else { 0 };
            (lo | hi) & MASK
        })
        .collect::<Vec<_>>()
        .into_boxed_slice())
}

/// The number with limbs `x` (each below 2⁵²).
fn from_limbs(x: &[u64]) -> Result<BigNum, Error> {
    let mut words = vec![0u64; x.len() * 52 / 64 + 2];
    for (i, &v) in x.iter().enumerate() {
        let (w, off) = (i * 52 / 64, i * 52 % 64);
        words[w] |= v << off;
        if off > 12 {
            words[w + 1] |= v >> (64 - off);
        }
    }
    let be: Vec<u8> = words.iter().rev().flat_map(|w| w.to_be_bytes()).collect();
    Ok(BigNum::from_slice(&be)?)
}

impl Amm {
    /// The constants of `m` (odd, at most `52·8·MAX_V − 1` bits), or `None` when this
    /// CPU has no IFMA or `m` is out of range.
    pub(crate) fn new(m: &BigNumRef) -> Result<Option<Self>, Error> {
        let bits = m.num_bits() as usize;
        let l = (bits + 1).div_ceil(52).div_ceil(8) * 8;
        if !available() || !m.is_bit_set(0) || m.is_negative() || l / 8 > MAX_V {
            return Ok(None);
        }
        let limbs = to_limbs(m, l)?;
        // m₀⁻¹ mod 2⁶⁴ by Newton's iteration (each step doubles the correct bits)
        let m0 = limbs[0];
        let mut inv = 1u64;
        for _ in 0..6 {
            inv = inv.wrapping_mul(2u64.wrapping_sub(m0.wrapping_mul(inv)));
        }
        let k0 = inv.wrapping_neg() & MASK;
        let mut r2 = BigNum::new()?;
        r2.set_bit((2 * 52 * l) as i32)?;
        let rr = tacit_pros::bn::reduce(&r2, m)?;
        Ok(Some(Amm {
            l,
            m: limbs,
            k0,
            rr: to_limbs(&rr, l)?,
            one: to_limbs(&*tacit_pros::bn::from_u64(1)?, l)?,
        }))
    }

    /// `a·b·R⁻¹ mod m` for `a, b ∈ [0, m)` as limbs.
    pub(crate) fn mul(&self, a: &[u64], b: &[u64]) -> Limbs {
        let mut r = vec![0u64; self.l].into_boxed_slice();
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `new` returned this `Amm` only after `available()` saw avx512f and
        // avx512ifma; every slice has `self.l` limbs (asserted inside).
        unsafe {
            x86::amm(&mut r, a, b, &self.m, self.k0)
        };
        #[cfg(not(target_arch = "x86_64"))]
        let _ = (a, b);
        r
    }

    /// `x·R mod m` for `x ∈ [0, m)`.
    pub(crate) fn enter(&self, x: &BigNumRef) -> Result<Limbs, Error> {
        Ok(self.mul(&to_limbs(x, self.l)?, &self.rr))
    }

    /// `x·R⁻¹ mod m`: out of Montgomery form.
    pub(crate) fn leave(&self, x: &[u64]) -> Result<BigNum, Error> {
        from_limbs(&self.mul(x, &self.one))
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{MASK, MAX_V};
    use std::arch::x86_64::*;

    /// Dispatches on the number of vectors, so that each size gets a loop the compiler
    /// unrolls with the accumulator in registers.
    #[target_feature(enable = "avx512f,avx512ifma")]
    pub(super) fn amm(r: &mut [u64], a: &[u64], b: &[u64], m: &[u64], k0: u64) {
        macro_rules! dispatch {
            ($($v:literal)*) => {
                match r.len() / 8 {
                    $($v => amm_v::<$v>(r, a, b, m, k0),)*
                    _ => unreachable!("Amm::new keeps l/8 in 1..=MAX_V"),
                }
            };
        }
        const _: () = assert!(MAX_V == 20);
        dispatch!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20)
    }

    // Index loops over the parallel vector arrays read as the algorithm does.
    #[allow(clippy::needless_range_loop)]
    #[target_feature(enable = "avx512f,avx512ifma")]
    fn amm_v<const V: usize>(r: &mut [u64], a: &[u64], b: &[u64], m: &[u64], k0: u64) {
        let l = 8 * V;
        assert!(r.len() == l && a.len() == l && b.len() == l && m.len() == l);
        let zero = _mm512_setzero_si512();
        let mut av = [zero; V];
        let mut mv = [zero; V];
        let mut acc = [zero; V];
        for k in 0..V {
            // SAFETY: 8 limbs from index 8k < l, within the slices (asserted above).
            unsafe {
                av[k] = _mm512_loadu_si512(a.as_ptr().add(8 * k).cast());
                mv[k] = _mm512_loadu_si512(m.as_ptr().add(8 * k).cast());
            }
        }
        for &bi in b.iter() {
            let bv = _mm512_set1_epi64(bi as i64);
            for k in 0..V {
                acc[k] = _mm512_madd52lo_epu64(acc[k], av[k], bv);
            }
            let a0 = _mm_cvtsi128_si64(_mm512_castsi512_si128(acc[0])) as u64;
            let q = a0.wrapping_mul(k0) & MASK;
            let qv = _mm512_set1_epi64(q as i64);
            for k in 0..V {
                acc[k] = _mm512_madd52lo_epu64(acc[k], mv[k], qv);
            }
            // the lowest limb is now ≡ 0 mod 2⁵²: shift one limb down, carrying its top
            let carry = (_mm_cvtsi128_si64(_mm512_castsi512_si128(acc[0])) as u64) >> 52;
            for k in 0..V {
                let next = if k + 1 < V { acc[k + 1] } else { zero };
                acc[k] = _mm512_alignr_epi64::<1>(next, acc[k]);
            }
            acc[0] = _mm512_add_epi64(acc[0], _mm512_maskz_set1_epi64(1, carry as i64));
            for k in 0..V {
                acc[k] = _mm512_madd52hi_epu64(acc[k], av[k], bv);
            }
            for k in 0..V {
                acc[k] = _mm512_madd52hi_epu64(acc[k], mv[k], qv);
            }
        }
        let mut t = [0u64; 8 * MAX_V];
        for k in 0..V {
            // SAFETY: 8 limbs at 8k < 8·V ≤ 8·MAX_V.
            unsafe { _mm512_storeu_si512(t.as_mut_ptr().add(8 * k).cast(), acc[k]) };
        }
        // Carry pass: each lane holds less than 2⁶², the value is below 2m < R.
        let mut carry = 0u64;
        for i in 0..l {
            let v = t[i] + carry;
            r[i] = v & MASK;
            carry = v >> 52;
        }
        // r − m, kept when it does not borrow: a masked select, not a branch, since the
        // randomness rⁿ of an encryption passes through here too.
        let mut s = [0u64; 8 * MAX_V];
        let mut borrow = 0i64;
        for i in 0..l {
            let v = r[i] as i64 - m[i] as i64 + borrow;
            s[i] = (v as u64) & MASK;
            borrow = v >> 52;
        }
        // borrow is 0 (r ≥ m: keep s) or −1 (keep r)
        let keep_r = borrow as u64;
        for i in 0..l {
            r[i] = (r[i] & keep_r) | (s[i] & !keep_r);
        }
    }
}
