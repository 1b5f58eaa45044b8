//! OpenSSL's Montgomery arithmetic (`BN_MONT_CTX`), which the `openssl` crate does not
//! wrap: a modulus's Montgomery constants computed once and kept with the key, products
//! of numbers kept in Montgomery form (`x·R mod m`, `R = 2^(64·words)`), and the
//! constant-time exponentiation with those constants.
//!
//! Why: an encrypted addition is one product mod `n²`. `BN_mod_mul` (a product, then a
//! division) costs 2.3 times OpenSSL's assembly Montgomery product on 6144-bit
//! numbers (15.7 µs against 6.8 µs on this machine's AMD EPYC, `docs/python.md`), so
//! `tacit.paillier` keeps ciphertexts in Montgomery form and an addition is one
//! [`Mont::mul`] — or, where the CPU has AVX-512 IFMA, one product of
//! [`crate::ifma`] (1.4 µs), which [`NSquare`] chooses per key. Decryption exponentiates with [`Mont::pow_secret`] on constants made
//! once per key instead of once per call.
//!
//! A `BN_MONT_CTX` is only read after [`Mont::new`] (OpenSSL's RSA shares one between
//! threads the same way), so [`Mont`] is `Send + Sync`; each thread keeps its own
//! `BN_CTX` scratch area.

use foreign_types::ForeignTypeRef;
use openssl::bn::{BigNum, BigNumContext, BigNumRef};
use openssl::error::ErrorStack;
use openssl_sys::{BIGNUM, BN_CTX};
use std::cell::RefCell;
use std::os::raw::c_int;
use tacit_pros::Error;

#[allow(non_camel_case_types)]
#[repr(C)]
struct BN_MONT_CTX {
    _opaque: [u8; 0],
}

unsafe extern "C" {
    fn BN_MONT_CTX_new() -> *mut BN_MONT_CTX;
    fn BN_MONT_CTX_free(mont: *mut BN_MONT_CTX);
    fn BN_MONT_CTX_set(mont: *mut BN_MONT_CTX, modulus: *const BIGNUM, ctx: *mut BN_CTX) -> c_int;
    fn BN_mod_mul_montgomery(
        r: *mut BIGNUM,
        a: *const BIGNUM,
        b: *const BIGNUM,
        mont: *mut BN_MONT_CTX,
        ctx: *mut BN_CTX,
    ) -> c_int;
    fn BN_to_montgomery(r: *mut BIGNUM, a: *const BIGNUM, mont: *mut BN_MONT_CTX, ctx: *mut BN_CTX) -> c_int;
    fn BN_from_montgomery(r: *mut BIGNUM, a: *const BIGNUM, mont: *mut BN_MONT_CTX, ctx: *mut BN_CTX) -> c_int;
    fn BN_mod_exp_mont_consttime(
        r: *mut BIGNUM,
        a: *const BIGNUM,
        p: *const BIGNUM,
        m: *const BIGNUM,
        ctx: *mut BN_CTX,
        mont: *mut BN_MONT_CTX,
    ) -> c_int;
}

thread_local! {
    static CTX: RefCell<Option<BigNumContext>> = const { RefCell::new(None) };
}

fn with_ctx<R>(f: impl FnOnce(*mut BN_CTX) -> Result<R, Error>) -> Result<R, Error> {
    CTX.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            *slot = Some(BigNumContext::new()?);
        }
        match slot.as_mut() {
            Some(ctx) => f(ctx.as_ptr()),
            None => Err(Error::Backend("no BN_CTX".into())),
        }
    })
}

fn check(rc: c_int) -> Result<(), Error> {
    if rc == 1 { Ok(()) } else { Err(ErrorStack::get().into()) }
}

/// The Montgomery constants of an odd modulus `m`.
pub(crate) struct Mont {
    ptr: *mut BN_MONT_CTX,
    m: BigNum,
}

// SAFETY: the BN_MONT_CTX is written once, in `new`, and only read afterwards
// (BN_mod_mul_montgomery, BN_to/from_montgomery and BN_mod_exp_mont_consttime take it
// as an input); `m` is an owned BIGNUM that is never mutated.
unsafe impl Send for Mont {}
unsafe impl Sync for Mont {}

impl Drop for Mont {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from BN_MONT_CTX_new and is freed once (BN_MONT_CTX_free
        // clears its copies of the modulus).
        unsafe { BN_MONT_CTX_free(self.ptr) }
        tacit_pros::bn::wipe(&mut self.m);
    }
}

impl Mont {
    /// The constants of the odd modulus `m`; with `secret` (a modulus made of a
    /// private key's primes) OpenSSL computes them in constant time.
    pub(crate) fn new(m: &BigNumRef, secret: bool) -> Result<Self, Error> {
        if !m.is_bit_set(0) || m.is_negative() {
            return Err(Error::Invalid("a Montgomery modulus must be odd and positive".into()));
        }
        // SAFETY: plain allocation; checked for NULL below.
        let ptr = unsafe { BN_MONT_CTX_new() };
        if ptr.is_null() {
            return Err(ErrorStack::get().into());
        }
        let mut owned = m.to_owned()?;
        if secret {
            owned.set_const_time();
        }
        let mont = Mont { ptr, m: owned };
        // SAFETY: `ptr` is a fresh BN_MONT_CTX, `m` a valid BIGNUM, `ctx` this thread's.
        with_ctx(|ctx| check(unsafe { BN_MONT_CTX_set(mont.ptr, mont.m.as_ptr(), ctx) }))?;
        Ok(mont)
    }

    fn op(&self, f: impl FnOnce(*mut BIGNUM, *mut BN_CTX) -> c_int) -> Result<BigNum, Error> {
        let r = BigNum::new()?;
        with_ctx(|ctx| check(f(r.as_ptr(), ctx)))?;
        Ok(r)
    }

    /// `a·b·R⁻¹ mod m` for `a, b ∈ [0, m)`: the product of two numbers in Montgomery
    /// form, in Montgomery form.
    pub(crate) fn mul(&self, a: &BigNumRef, b: &BigNumRef) -> Result<BigNum, Error> {
        // SAFETY: valid BIGNUMs and the constants of `self.m`; a, b are reduced (the
        // callers keep every Montgomery-form number in [0, m)).
        self.op(|r, ctx| unsafe { BN_mod_mul_montgomery(r, a.as_ptr(), b.as_ptr(), self.ptr, ctx) })
    }

    /// `a·R mod m` for `a ∈ [0, m)`.
    pub(crate) fn enter(&self, a: &BigNumRef) -> Result<BigNum, Error> {
        // SAFETY: as in `mul`.
        self.op(|r, ctx| unsafe { BN_to_montgomery(r, a.as_ptr(), self.ptr, ctx) })
    }

    /// `a·R⁻¹ mod m`: a number out of Montgomery form.
    pub(crate) fn leave(&self, a: &BigNumRef) -> Result<BigNum, Error> {
        // SAFETY: as in `mul`.
        self.op(|r, ctx| unsafe { BN_from_montgomery(r, a.as_ptr(), self.ptr, ctx) })
    }

    /// `base^e mod m` for a secret exponent (plain form in and out): OpenSSL's
    /// constant-time exponentiation (`BN_mod_exp_mont_consttime`, as
    /// `tacit_pros::bn::pow_secret`) with these constants instead of new ones per call.
    pub(crate) fn pow_secret(&self, base: &BigNumRef, e: &BigNumRef) -> Result<BigNum, Error> {
        let mut e = e.to_owned()?;
        e.set_const_time();
        // SAFETY: valid BIGNUMs; BN_mod_exp_mont_consttime reduces a base ≥ m itself.
        let out = self.op(|r, ctx| unsafe {
            BN_mod_exp_mont_consttime(r, base.as_ptr(), e.as_ptr(), self.m.as_ptr(), ctx, self.ptr)
        });
        e.clear();
        out
    }
}

/// A number mod `n²` in Montgomery form: 52-bit limbs for [`crate::ifma::Amm`], or an
/// OpenSSL number for [`Mont`] (one kind per key, chosen by [`NSquare::new`]).
pub(crate) enum MNum {
    /// `x·2^(52·L) mod n²` as limbs.
    Limbs(crate::ifma::Limbs),
    /// `x·2^(64·words) mod n²`.
    Bn(BigNum),
}

impl MNum {
    /// A copy.
    pub(crate) fn dup(&self) -> Result<Self, Error> {
        Ok(match self {
            MNum::Limbs(l) => MNum::Limbs(l.clone()),
            MNum::Bn(b) => MNum::Bn(tacit_pros::bn::dup(b)?),
        })
    }
}

/// The Montgomery arithmetic mod `n²` of a key: AVX-512 IFMA where the CPU has it
/// ([`crate::ifma`], 1.6 µs per 6144-bit product here), else OpenSSL's (6.9 µs). The
/// environment variable `TACIT_NO_IFMA=1` (read when a key is made) forces OpenSSL's,
/// for comparison and for testing both.
pub(crate) struct NSquare {
    ossl: Mont,
    ifma: Option<crate::ifma::Amm>,
}

impl NSquare {
    pub(crate) fn new(n2: &BigNumRef) -> Result<Self, Error> {
        let ifma = if std::env::var_os("TACIT_NO_IFMA").is_some_and(|v| v != "0" && !v.is_empty()) {
            None
        } else {
            crate::ifma::Amm::new(n2)?
        };
        Ok(NSquare {
            ossl: Mont::new(n2, false)?,
            ifma,
        })
    }

    /// Which product this key uses: `"avx512-ifma"` or `"openssl"`.
    pub(crate) fn kind(&self) -> &'static str {
        if self.ifma.is_some() { "avx512-ifma" } else { "openssl" }
    }

    /// `x·R mod n²` for `x ∈ [0, n²)`.
    pub(crate) fn enter(&self, x: &BigNumRef) -> Result<MNum, Error> {
        Ok(match &self.ifma {
            Some(a) => MNum::Limbs(a.enter(x)?),
            None => MNum::Bn(self.ossl.enter(x)?),
        })
    }

    /// `x·R⁻¹ mod n²`.
    pub(crate) fn leave(&self, x: &MNum) -> Result<BigNum, Error> {
        match (&self.ifma, x) {
            (Some(a), MNum::Limbs(l)) => a.leave(l),
            (None, MNum::Bn(b)) => self.ossl.leave(b),
            _ => Err(Error::Backend("a Montgomery form of another kind".into())),
        }
    }

    /// The Montgomery product.
    pub(crate) fn mul(&self, x: &MNum, y: &MNum) -> Result<MNum, Error> {
        match (&self.ifma, x, y) {
            (Some(a), MNum::Limbs(p), MNum::Limbs(q)) => Ok(MNum::Limbs(a.mul(p, q))),
            (None, MNum::Bn(p), MNum::Bn(q)) => Ok(MNum::Bn(self.ossl.mul(p, q)?)),
            _ => Err(Error::Backend("a Montgomery form of another kind".into())),
        }
    }

    /// `base^e mod n²` for a secret exponent (plain form), as [`Mont::pow_secret`].
    pub(crate) fn pow_secret(&self, base: &BigNumRef, e: &BigNumRef) -> Result<BigNum, Error> {
        self.ossl.pow_secret(base, e)
    }
}
