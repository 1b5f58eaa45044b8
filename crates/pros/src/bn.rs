//! Big-integer arithmetic on OpenSSL's `BIGNUM` (the measured default backend; see
//! `docs/pros.md` for the measurement that chose it).
//!
//! OpenSSL is Apache-2.0 licensed and its `BN_mod_exp_mont_consttime` is the
//! constant-time Montgomery ladder-with-fixed-window that OpenSSL's own RSA uses. Every
//! exponentiation whose exponent is a secret (the factors of a private key, the
//! randomness `r` of an encryption or of a blinding, a sender's set element used as a
//! Horner exponent) goes through [`pow_secret`], which sets `BN_FLG_CONSTTIME` on the
//! exponent so that OpenSSL takes that path. [`pow_public`] is for public exponents.
//!
//! A `BN_CTX` scratch area is kept per thread, so rayon workers never share one.

use crate::Error;
use openssl::bn::{BigNum, BigNumContext, BigNumContextRef, BigNumRef};
use rand_core::CryptoRngCore;
use rayon::prelude::*;
use std::cell::RefCell;

/// A natural number (or, where said, a signed integer) in OpenSSL's representation.
pub type Nat = BigNum;

thread_local! {
    static CTX: RefCell<Option<BigNumContext>> = const { RefCell::new(None) };
}

/// Runs `f` with this thread's `BN_CTX`.
pub(crate) fn with_ctx<R>(f: impl FnOnce(&mut BigNumContextRef) -> Result<R, Error>) -> Result<R, Error> {
    CTX.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            *slot = Some(BigNumContext::new()?);
        }
        match slot.as_mut() {
            Some(ctx) => f(ctx),
            None => Err(Error::Backend("no BN_CTX".into())),
        }
    })
}

/// `x` as an owned copy.
pub fn dup(x: &BigNumRef) -> Result<Nat, Error> {
    Ok(x.to_owned()?)
}

/// Copies a number where no error can be returned (`Clone`); OpenSSL fails only when
/// memory is exhausted, which Rust treats as fatal anyway.
pub(crate) fn dup_or_die(x: &BigNumRef) -> Nat {
    match x.to_owned() {
        Ok(v) => v,
        Err(e) => panic!("out of memory copying a big integer: {e}"),
    }
}

/// The small integer `v`.
pub fn from_u64(v: u64) -> Result<Nat, Error> {
    Ok(BigNum::from_slice(&v.to_be_bytes())?)
}

/// `a · b mod m`.
pub fn mul_mod(a: &BigNumRef, b: &BigNumRef, m: &BigNumRef) -> Result<Nat, Error> {
    with_ctx(|ctx| {
        let mut r = BigNum::new()?;
        r.mod_mul(a, b, m, ctx)?;
        Ok(r)
    })
}

/// `a + b mod m` for `a, b` in `[0, m)`.
pub fn add_mod(a: &BigNumRef, b: &BigNumRef, m: &BigNumRef) -> Result<Nat, Error> {
    with_ctx(|ctx| {
        let mut r = BigNum::new()?;
        r.mod_add(a, b, m, ctx)?;
        Ok(r)
    })
}

/// `a − b mod m` for `a, b` in `[0, m)`.
pub fn sub_mod(a: &BigNumRef, b: &BigNumRef, m: &BigNumRef) -> Result<Nat, Error> {
    with_ctx(|ctx| {
        let mut r = BigNum::new()?;
        r.mod_sub(a, b, m, ctx)?;
        Ok(r)
    })
}

/// `a mod m` in `[0, m)`, for any signed `a`.
pub fn reduce(a: &BigNumRef, m: &BigNumRef) -> Result<Nat, Error> {
    with_ctx(|ctx| {
        let mut r = BigNum::new()?;
        r.nnmod(a, m, ctx)?;
        Ok(r)
    })
}

/// `a · b` over the integers.
pub fn mul(a: &BigNumRef, b: &BigNumRef) -> Result<Nat, Error> {
    with_ctx(|ctx| {
        let mut r = BigNum::new()?;
        r.checked_mul(a, b, ctx)?;
        Ok(r)
    })
}

/// `a + b` over the integers.
pub fn add(a: &BigNumRef, b: &BigNumRef) -> Result<Nat, Error> {
    let mut r = BigNum::new()?;
    r.checked_add(a, b)?;
    Ok(r)
}

/// `a − b` over the integers.
pub fn sub(a: &BigNumRef, b: &BigNumRef) -> Result<Nat, Error> {
    let mut r = BigNum::new()?;
    r.checked_sub(a, b)?;
    Ok(r)
}

/// `⌊a / b⌋` over the integers.
pub fn div(a: &BigNumRef, b: &BigNumRef) -> Result<Nat, Error> {
    with_ctx(|ctx| {
        let mut r = BigNum::new()?;
        r.checked_div(a, b, ctx)?;
        Ok(r)
    })
}

/// `a⁻¹ mod m`.
pub fn inv_mod(a: &BigNumRef, m: &BigNumRef) -> Result<Nat, Error> {
    with_ctx(|ctx| {
        let mut r = BigNum::new()?;
        r.mod_inverse(a, m, ctx)?;
        Ok(r)
    })
}

/// `gcd(a, b)`.
pub fn gcd(a: &BigNumRef, b: &BigNumRef) -> Result<Nat, Error> {
    with_ctx(|ctx| {
        let mut r = BigNum::new()?;
        r.gcd(a, b, ctx)?;
        Ok(r)
    })
}

/// `base^e mod m` for a **secret** exponent `e` (`m` odd): OpenSSL's constant-time
/// Montgomery exponentiation, whose sequence of operations and memory accesses depends
/// only on the number of 64-bit words of `e`, not on its bits.
pub fn pow_secret(base: &BigNumRef, e: &BigNumRef, m: &BigNumRef) -> Result<Nat, Error> {
    let mut e = e.to_owned()?;
    e.set_const_time();
    with_ctx(|ctx| {
        let mut r = BigNum::new()?;
        r.mod_exp(base, &e, m, ctx)?;
        e.clear();
        Ok(r)
    })
}

/// `base^e mod m` for a **public** exponent (variable time).
pub fn pow_public(base: &BigNumRef, e: &BigNumRef, m: &BigNumRef) -> Result<Nat, Error> {
    with_ctx(|ctx| {
        let mut r = BigNum::new()?;
        r.mod_exp(base, e, m, ctx)?;
        Ok(r)
    })
}

/// A uniformly random integer in `[0, bound)`, drawn from `rng` by rejection sampling
/// (no modulo bias).
pub fn random_below(rng: &mut impl CryptoRngCore, bound: &BigNumRef) -> Result<Nat, Error> {
    let bits = bound.num_bits().max(1) as usize;
    let bytes = bits.div_ceil(8);
    let excess = bytes * 8 - bits;
    let mut buf = vec![0u8; bytes];
    loop {
        rng.fill_bytes(&mut buf);
        buf[0] &= 0xffu8 >> excess;
        let x = BigNum::from_slice(&buf)?;
        if x.ucmp(bound) == std::cmp::Ordering::Less {
            zeroize::Zeroize::zeroize(&mut buf);
            return Ok(x);
        }
    }
}

/// A uniformly random unit of `Z_n` (`gcd(r, n) = 1`, `r ≠ 0`).
pub fn random_unit(rng: &mut impl CryptoRngCore, n: &BigNumRef) -> Result<Nat, Error> {
    loop {
        let r = random_below(rng, n)?;
        if r.num_bits() == 0 {
            continue;
        }
        if is_one(&*gcd(&r, n)?) {
            return Ok(r);
        }
    }
}

/// Whether `x = 1`.
pub fn is_one(x: &BigNumRef) -> bool {
    x.num_bits() == 1 && !x.is_negative()
}

/// Whether `x = 0`.
pub fn is_zero(x: &BigNumRef) -> bool {
    x.num_bits() == 0
}

/// `x` as big-endian bytes, left-padded to `len` (x must be non-negative and fit).
pub fn to_fixed(x: &BigNumRef, len: usize) -> Result<Vec<u8>, Error> {
    Ok(x.to_vec_padded(len as i32)?)
}

/// Erases a secret: OpenSSL's `BN_clear` overwrites the limbs with zeros.
pub fn wipe(x: &mut BigNum) {
    x.clear();
}

/// Odd primes below 2¹⁴, for trial division of a peer's modulus.
pub(crate) fn small_primes() -> &'static [u32] {
    static PRIMES: std::sync::OnceLock<Vec<u32>> = std::sync::OnceLock::new();
    PRIMES.get_or_init(|| {
        const LIMIT: usize = 1 << 14;
        let mut sieve = vec![true; LIMIT];
        let mut out = Vec::new();
        for i in 2..LIMIT {
            if sieve[i] {
                if i > 2 {
                    out.push(i as u32);
                }
                let mut j = i * i;
                while j < LIMIT {
                    sieve[j] = false;
                    j += i;
                }
            }
        }
        out
    })
}

/// Every prime factor of a peer's modulus is at least this (log₂): below 2¹⁴ by
/// trial division (`small_primes`), below 2²⁴ by one gcd (`has_factor_below_2_24`).
pub const MIN_FACTOR_BITS: u32 = 24;

/// The primes from 2¹⁴ to 2²⁴ (about 1.07 million) multiplied into products of 128
/// primes (3 072 bits each), built once per process.
fn medium_prime_products() -> &'static [Nat] {
    static P: std::sync::OnceLock<Vec<Nat>> = std::sync::OnceLock::new();
    P.get_or_init(|| {
        const LO: usize = 1 << 14;
        const HI: usize = 1 << MIN_FACTOR_BITS;
        let mut sieve = vec![true; HI];
        let mut i = 2;
        while i * i < HI {
            if sieve[i] {
                let mut j = i * i;
                while j < HI {
                    sieve[j] = false;
                    j += i;
                }
            }
            i += 1;
        }
        let primes: Vec<u32> = (LO..HI).filter(|&q| sieve[q]).map(|q| q as u32).collect();
        primes
            .par_chunks(128)
            .map(|c| {
                let mut acc = BigNum::from_u32(1).expect("allocation");
                for &q in c {
                    acc.mul_word(q).expect("allocation");
                }
                acc
            })
            .collect()
    })
}

/// Whether `n` has a prime factor from 2¹⁴ to 2²⁴: `gcd(n, Π products mod n) ≠ 1`,
/// one multiplication mod `n` per product of 128 primes (about 8 400), on all cores.
pub(crate) fn has_factor_below_2_24(n: &BigNumRef) -> Result<bool, Error> {
    let parts: Vec<Nat> = medium_prime_products()
        .par_chunks(512)
        .map(|group| {
            let mut acc = from_u64(1)?;
            for c in group {
                acc = mul_mod(&acc, &*reduce(c, n)?, n)?;
            }
            Ok(acc)
        })
        .collect::<Result<_, Error>>()?;
    let mut acc = from_u64(1)?;
    for p in &parts {
        acc = mul_mod(&acc, p, n)?;
    }
    Ok(!is_one(&*gcd(n, &acc)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;

    #[test]
    fn secret_and_public_powers_agree() {
        let mut rng = ChaCha20Rng::from_seed([1; 32]);
        let m = from_u64(1_000_000_007).unwrap();
        for _ in 0..20 {
            let b = random_below(&mut rng, &m).unwrap();
            let e = random_below(&mut rng, &m).unwrap();
            assert_eq!(pow_secret(&b, &e, &m).unwrap(), pow_public(&b, &e, &m).unwrap());
        }
    }

    #[test]
    fn random_below_stays_below() {
        let mut rng = ChaCha20Rng::from_seed([2; 32]);
        let m = from_u64(1000).unwrap();
        for _ in 0..200 {
            let x = random_below(&mut rng, &m).unwrap();
            assert!(x.ucmp(&m).is_lt());
        }
        let u = random_unit(&mut rng, &from_u64(15).unwrap()).unwrap();
        assert!(is_one(&gcd(&u, &from_u64(15).unwrap()).unwrap()));
    }

    #[test]
    fn small_primes_sieve() {
        let p = small_primes();
        assert_eq!(&p[..5], &[3, 5, 7, 11, 13]);
        assert_eq!(*p.last().unwrap(), 16381);
    }
}
