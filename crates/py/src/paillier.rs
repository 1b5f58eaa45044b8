//! `tacit.paillier`: python-paillier's API (`phe`) on tacit's Paillier.
//!
//! The names and semantics are phe's: `generate_paillier_keypair(n_length)`,
//! `PaillierPublicKey(n)`, `PaillierPrivateKey(public_key, p, q)`, `EncryptedNumber`
//! with `+`, `-`, scalar `*` and `/`, `EncodedNumber` (base-16 fixed point: a value is
//! `mantissa · 16^exponent`, ints with exponent 0, floats with the exponent that keeps
//! all 53 bits of the mantissa). The arithmetic is tacit's (`tacit_pros::paillier`):
//!
//! * decryption with the CRT and the constants precomputed at key generation (two
//!   half-size exponentiations `c^{p−1} mod p²`, `c^{q−1} mod q²`);
//! * encryption `E(m) = (1 + m·n)·rⁿ mod n²`. With only the public key, `rⁿ mod n²`
//!   costs a full exponentiation. A public key that knows its private key (from
//!   `generate_paillier_keypair`, `PaillierPrivateKey(...)` or `private_key.public_key`)
//!   computes `rⁿ` with the CRT instead: for `r` uniform in `Z*_n`, `rⁿ mod p²` depends
//!   only on `r mod p`, and `r ↦ r^q` permutes `Z*_p` (`gcd(q, p−1) = 1`), so
//!   `rⁿ mod p² = (r^q)^p mod p²` is distributed as `y^p mod p²` for `y` uniform in
//!   `Z*_p` — one exponentiation with a half-size exponent modulo `p²`, the same for
//!   `q`, combined with the CRT. The ciphertext's distribution is exactly that of the
//!   textbook encryption; the work is about a quarter.
//! * every exponentiation with a secret exponent (`p`, `q`, `r`, a scalar) is
//!   constant-time (`tacit_pros::bn::pow_secret`).
//!
//! The `*_many` functions take lists, release the GIL and run on all cores (rayon).

use crate::err;
use crate::mont::{MNum, Mont, NSquare};
use num_bigint::{BigInt, Sign};
use openssl::bn::{BigNum, BigNumRef};
use pyo3::exceptions::{PyNotImplementedError, PyOverflowError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyFloat, PyInt};
use rand_chacha::ChaCha20Rng;
use rand_core::{CryptoRngCore, RngCore, SeedableRng};
use rayon::prelude::*;
use std::sync::Arc;
use tacit_pros::bn::{self, Nat};
use tacit_pros::paillier::{PrivateKey, PublicKey};

/// phe's `EncodedNumber.BASE`.
const BASE: u32 = 16;
/// phe's default key size and ours.
const DEFAULT_BITS: u32 = 3072;

fn rng() -> ChaCha20Rng {
    ChaCha20Rng::from_entropy()
}

fn seeds(rng: &mut impl RngCore, count: usize) -> Vec<[u8; 32]> {
    (0..count)
        .map(|_| {
            let mut s = [0u8; 32];
            rng.fill_bytes(&mut s);
            s
        })
        .collect()
}

/// A Python int as an OpenSSL number (signed).
pub(crate) fn bn_from_bigint(x: &BigInt) -> PyResult<Nat> {
    let (sign, bytes) = x.to_bytes_be();
    let mut b = BigNum::from_slice(&bytes).map_err(err)?;
    b.set_negative(sign == Sign::Minus);
    Ok(b)
}

/// An OpenSSL number as a Python int (signed).
pub(crate) fn bigint_from_bn(x: &BigNumRef) -> BigInt {
    let sign = if x.is_negative() { Sign::Minus } else { Sign::Plus };
    BigInt::from_bytes_be(sign, &x.to_vec())
}

fn dup(x: &BigNumRef) -> PyResult<Nat> {
    bn::dup(x).map_err(err)
}

/// The secret constants of CRT encryption (`rⁿ mod n² = CRT(y_p^p mod p², y_q^q mod
/// q²)`) and CRT decryption (`m_p = L_p(c^{p−1} mod p²)·h_p mod p`, the same mod `q`),
/// with the Montgomery constants of `p²` and `q²` made once.
struct Crt {
    p: Nat,
    q: Nat,
    p2: Nat,
    q2: Nat,
    pm1: Nat,
    qm1: Nat,
    /// `L_p(g^{p−1} mod p²)⁻¹ mod p`.
    hp: Nat,
    /// `L_q(g^{q−1} mod q²)⁻¹ mod q`.
    hq: Nat,
    /// `(q²)⁻¹ mod p²`.
    q2_inv_p2: Nat,
    /// `q⁻¹ mod p`.
    q_inv_p: Nat,
    mont_p2: Mont,
    mont_q2: Mont,
}

impl Drop for Crt {
    fn drop(&mut self) {
        for x in [
            &mut self.p,
            &mut self.q,
            &mut self.p2,
            &mut self.q2,
            &mut self.pm1,
            &mut self.qm1,
            &mut self.hp,
            &mut self.hq,
            &mut self.q2_inv_p2,
            &mut self.q_inv_p,
        ] {
            bn::wipe(x);
        }
    }
}

/// `L_p(x) = (x − 1)/p`.
fn l_func(x: &BigNumRef, p: &BigNumRef) -> tacit_pros::Result<Nat> {
    let mut t = bn::dup(x)?;
    t.sub_word(1)?;
    bn::div(&t, p)
}

impl Crt {
    fn new(sk: &PrivateKey) -> tacit_pros::Result<Self> {
        let (p, q) = sk.primes();
        let s = |x: Nat| {
            let mut x = x;
            x.set_const_time();
            x
        };
        let p2 = s(bn::mul(p, p)?);
        let q2 = s(bn::mul(q, q)?);
        let q2_inv_p2 = s(bn::inv_mod(&q2, &p2)?);
        let mut pm1 = s(bn::dup(p)?);
        pm1.sub_word(1)?;
        let mut qm1 = s(bn::dup(q)?);
        qm1.sub_word(1)?;
        let mont_p2 = Mont::new(&p2, true)?;
        let mont_q2 = Mont::new(&q2, true)?;
        let g = bn::add(sk.public().n(), &*bn::from_u64(1)?)?;
        let h = |pm1: &BigNumRef, p: &BigNumRef, p2: &BigNumRef, mont: &Mont| -> tacit_pros::Result<Nat> {
            let x = mont.pow_secret(&*bn::reduce(&g, p2)?, pm1)?;
            Ok(s(bn::inv_mod(&*l_func(&x, p)?, p)?))
        };
        let hp = h(&pm1, p, &p2, &mont_p2)?;
        let hq = h(&qm1, q, &q2, &mont_q2)?;
        Ok(Crt {
            p: s(bn::dup(p)?),
            q: s(bn::dup(q)?),
            q_inv_p: s(bn::inv_mod(q, p)?),
            p2,
            q2,
            pm1,
            qm1,
            hp,
            hq,
            q2_inv_p2,
            mont_p2,
            mont_q2,
        })
    }

    /// A uniform `n`-th residue mod `n²`, distributed as `rⁿ` for uniform `r ∈ Z*_n`.
    fn rn(&self, rng: &mut impl CryptoRngCore) -> tacit_pros::Result<Nat> {
        let mut yp = bn::random_unit(rng, &self.p)?;
        let a = self.mont_p2.pow_secret(&yp, &self.p)?;
        bn::wipe(&mut yp);
        let mut yq = bn::random_unit(rng, &self.q)?;
        let b = self.mont_q2.pow_secret(&yq, &self.q)?;
        bn::wipe(&mut yq);
        // x ≡ a (mod p²), x ≡ b (mod q²): x = b + q²·((a − b)·(q²)⁻¹ mod p²)
        let d = bn::sub_mod(&a, &*bn::reduce(&b, &self.p2)?, &self.p2)?;
        let h = bn::mul_mod(&d, &self.q2_inv_p2, &self.p2)?;
        bn::add(&b, &*bn::mul(&h, &self.q2)?)
    }

    /// CRT decryption of `c ∈ Z*_{n²}` (plain form) to the residue `m ∈ [0, n)`: two
    /// constant-time exponentiations with half-size exponents and moduli, as
    /// `tacit_pros::paillier::PrivateKey::decrypt_raw`, without its per-call unit check
    /// (every `EncryptedNumber` was checked when it was made) and with the Montgomery
    /// constants of `p²`, `q²` made once.
    fn decrypt(&self, c: &BigNumRef) -> tacit_pros::Result<Nat> {
        let half = |p: &BigNumRef, p2: &BigNumRef, pm1: &BigNumRef, hp: &BigNumRef, mont: &Mont| {
            let x = mont.pow_secret(&*bn::reduce(c, p2)?, pm1)?;
            bn::mul_mod(&*l_func(&x, p)?, hp, p)
        };
        let mp = half(&self.p, &self.p2, &self.pm1, &self.hp, &self.mont_p2)?;
        let mq = half(&self.q, &self.q2, &self.qm1, &self.hq, &self.mont_q2)?;
        // m = m_q + q·((m_p − m_q)·q⁻¹ mod p)
        let d = bn::sub_mod(&mp, &*bn::reduce(&mq, &self.p)?, &self.p)?;
        let h = bn::mul_mod(&d, &self.q_inv_p, &self.p)?;
        bn::add(&mq, &*bn::mul(&h, &self.q)?)
    }
}

/// A public key, its Montgomery constants mod `n²`, and the CRT constants when this
/// process holds the private key.
///
/// Every `EncryptedNumber` keeps its ciphertext in Montgomery form (`c·R mod n²`,
/// "mform" below): an encrypted addition is then one Montgomery product
/// ([`KeyCore::add_raw`]), where a plain product mod `n²` costs 2.3 times as much. The
/// form changes only at the edges: encryption, reading an int or JSON, and
/// `ciphertext()` / `to_json()` / decryption (one Montgomery product each, against an
/// exponentiation that costs a thousand).
pub(crate) struct KeyCore {
    pk: PublicKey,
    mont: NSquare,
    crt: Option<Crt>,
}

impl KeyCore {
    fn new(pk: PublicKey, crt: Option<Crt>) -> tacit_pros::Result<Self> {
        let mont = NSquare::new(pk.n_squared())?;
        Ok(KeyCore { pk, mont, crt })
    }

    fn rn(&self, rng: &mut impl CryptoRngCore) -> tacit_pros::Result<Nat> {
        match &self.crt {
            Some(c) => c.rn(rng),
            None => {
                let mut r = bn::random_unit(rng, self.pk.n())?;
                let out = self.mont.pow_secret(&r, self.pk.n());
                bn::wipe(&mut r);
                out
            }
        }
    }

    /// `E(m)` in mform for a residue `m ∈ [0, n)`, with an `rⁿ` from [`KeyCore::rn`].
    fn encrypt_residue(&self, m: &BigNumRef, rng: &mut impl CryptoRngCore) -> tacit_pros::Result<MNum> {
        let rn = self.rn(rng)?;
        self.encrypt_with_rn(m, &rn)
    }

    /// `g^m·rⁿ` in mform for a residue `m ∈ [0, n)` and `rⁿ` in plain form.
    fn encrypt_with_rn(&self, m: &BigNumRef, rn: &BigNumRef) -> tacit_pros::Result<MNum> {
        if m.is_negative() || m.ucmp(self.pk.n()).is_ge() {
            return Err(tacit_pros::Error::PlaintextRange(
                "a raw plaintext must lie in [0, n)".into(),
            ));
        }
        // (g^m·R)·(rⁿ·R)·R⁻¹ = g^m·rⁿ·R
        self.mont
            .mul(&self.mont.enter(&*self.pk.g_pow(m)?)?, &self.mont.enter(rn)?)
    }

    /// A plain-form residue mod `n²` in mform.
    fn mform(&self, c: &BigNumRef) -> tacit_pros::Result<MNum> {
        self.mont.enter(c)
    }

    /// An mform residue in plain form.
    fn plain(&self, c: &MNum) -> tacit_pros::Result<Nat> {
        self.mont.leave(c)
    }

    fn n2(&self) -> &BigNumRef {
        self.pk.n_squared()
    }

    /// Checks that a ciphertext from outside is in `Z*_{n²}`: `0 < c < n²` and
    /// `c mod n` invertible mod `n`. The ciphertext and `n` are public, so the
    /// variable-time inversion (0.34 ms for 3072 bits here) stands in for
    /// `tacit_pros`' constant-time gcd (2.7 ms); a failure takes the library's check
    /// for its message.
    fn check_ciphertext(&self, c: &BigNumRef) -> tacit_pros::Result<()> {
        let n = self.pk.n();
        if c.is_negative() || bn::is_zero(c) || c.ucmp(self.n2()).is_ge() {
            return self.pk.check_ciphertext(c);
        }
        match bn::inv_mod(&*bn::reduce(c, n)?, n) {
            Ok(_) => Ok(()),
            Err(_) => self.pk.check_ciphertext(c),
        }
    }

    /// `c^k mod n²` (mform in and out) for a residue `k ∈ [0, n)`, as phe computes it:
    /// a `k` that encodes a negative number (`k ≥ n − max_int`) as `(c⁻¹)^{n−k}`, so
    /// that small negative scalars cost a short exponentiation. Constant-time in `k`'s
    /// bits.
    fn raw_mul(&self, cm: &MNum, k: &BigNumRef) -> tacit_pros::Result<MNum> {
        let n = self.pk.n();
        let c = self.plain(cm)?;
        let neg_bound = bn::sub(n, self.pk.max_int())?;
        let out = if k.ucmp(&neg_bound).is_ge() {
            let inv = bn::inv_mod(&c, self.n2())?;
            let mut e = bn::sub(n, k)?;
            let out = self.mont.pow_secret(&inv, &e);
            bn::wipe(&mut e);
            out?
        } else if bn::is_zero(k) {
            bn::from_u64(1)?
        } else {
            self.mont.pow_secret(&c, k)?
        };
        self.mform(&out)
    }

    /// The same number with its exponent lowered by `d`: `c^(16^d) mod n²` (mform in
    /// and out; `d` is public, so variable time).
    fn scale(&self, cm: &MNum, d: u64) -> tacit_pros::Result<MNum> {
        // phe multiplies by the encoding of 16^d, which must be a plaintext (≤ max_int)
        if 4 * d + 2 >= self.pk.bits() as u64 {
            return Err(tacit_pros::Error::Invalid(format!(
                "aligning the exponents needs the factor 16^{d}, beyond the largest plaintext"
            )));
        }
        let mut e = BigNum::new()?;
        e.set_bit((4 * d) as i32)?;
        self.mform(&*bn::pow_public(&*self.plain(cm)?, &e, self.n2())?)
    }

    /// `E(a + b)`: one Montgomery product of two mform ciphertexts.
    fn add_raw(&self, a: &MNum, b: &MNum) -> tacit_pros::Result<MNum> {
        self.mont.mul(a, b)
    }

    /// `E(−a)`: the inverse mod `n²` (mform in and out).
    fn negate(&self, cm: &MNum) -> tacit_pros::Result<MNum> {
        self.mform(&*bn::inv_mod(&*self.plain(cm)?, self.n2())?)
    }

    /// `c·rⁿ` for a fresh `rⁿ` (mform in and out).
    fn rerandomise(&self, cm: &MNum) -> tacit_pros::Result<MNum> {
        let rn = self.rn(&mut rng())?;
        self.mont.mul(cm, &self.mform(&rn)?)
    }
}

// ---------------------------------------------------------------------------------
// Encoding (phe's EncodedNumber)
// ---------------------------------------------------------------------------------

enum Scalar {
    Int(BigInt),
    Float(f64),
}

fn scalar(obj: &Bound<'_, PyAny>) -> PyResult<Scalar> {
    if let Ok(f) = obj.cast::<PyFloat>() {
        return Ok(Scalar::Float(f.value()));
    }
    if obj.is_instance_of::<PyInt>() {
        return Ok(Scalar::Int(obj.extract()?));
    }
    if obj.hasattr("__index__")? {
        return Ok(Scalar::Int(obj.call_method0("__index__")?.extract()?));
    }
    Err(PyTypeError::new_err(format!(
        "Don't know the precision of type {}.",
        obj.get_type().name()?
    )))
}

/// `(negative, |mantissa|, e2)` with `x = ±mantissa · 2^e2` exactly, and the exponent
/// of `math.frexp(x)`.
fn float_parts(x: f64) -> (bool, u64, i64, i64) {
    let bits = x.to_bits();
    let neg = bits >> 63 == 1;
    let be = ((bits >> 52) & 0x7ff) as i64;
    let frac = bits & ((1u64 << 52) - 1);
    if be == 0 {
        let fe = if frac == 0 {
            0
        } else {
            64 - frac.leading_zeros() as i64 - 1074
        };
        (neg, frac, -1074, fe)
    } else {
        (neg, frac | (1u64 << 52), be - 1075, be - 1022)
    }
}

/// Rounds `mag / 2^k` to the nearest integer, ties to even (Python's `round`).
fn round_shift(mag: &BigInt, k: u64) -> BigInt {
    if k as u128 > mag.bits() as u128 + 1 {
        return BigInt::from(0);
    }
    let q: BigInt = mag >> k;
    let r: BigInt = mag - (&q << k);
    let half: BigInt = BigInt::from(1) << (k - 1);
    if r > half || (r == half && q.bit(0)) { q + 1 } else { q }
}

/// phe's `EncodedNumber.encode`: the residue mod `n` and the exponent.
fn encode(
    core: &KeyCore,
    value: &Bound<'_, PyAny>,
    precision: Option<f64>,
    max_exponent: Option<i64>,
) -> PyResult<(Nat, i64)> {
    let s = scalar(value)?;
    let (neg, mag, e2, prec_exponent) = match &s {
        Scalar::Int(v) => (v.sign() == Sign::Minus, BigInt::from(v.magnitude().clone()), 0i64, 0i64),
        Scalar::Float(x) => {
            if !x.is_finite() {
                return Err(PyValueError::new_err(format!("cannot encode {x}: not a finite number")));
            }
            let (neg, m, e2, fe) = float_parts(*x);
            // floor((frexp exponent − 53) / log2(16))
            (neg, BigInt::from(m), e2, (fe - 53).div_euclid(4))
        }
    };
    let prec_exponent = match precision {
        None => prec_exponent,
        Some(p) => {
            if !(p > 0.0 && p.is_finite()) {
                return Err(PyValueError::new_err("precision must be a positive number"));
            }
            (p.ln() / (BASE as f64).ln()).floor() as i64
        }
    };
    let exponent = match max_exponent {
        Some(m) => m.min(prec_exponent),
        None => prec_exponent,
    };
    let too_big = || {
        PyValueError::new_err(format!(
            "Integer needs to be within +/- {} but got a number of more than {} bits",
            bigint_from_bn(core.pk.max_int()),
            core.pk.bits()
        ))
    };
    // int_rep = round(|x| · 16^(−exponent)) = round(mag · 2^(e2 − 4·exponent))
    let shift = (e2 as i128) - 4 * (exponent as i128);
    let int_rep = if shift >= 0 {
        if mag.bits() != 0 && mag.bits() as i128 + shift > core.pk.bits() as i128 + 1 {
            return Err(too_big());
        }
        mag << (shift as u64)
    } else {
        round_shift(&mag, (-shift).min(u64::MAX as i128) as u64)
    };
    let mut r = bn_from_bigint(&int_rep)?;
    if r.ucmp(core.pk.max_int()).is_gt() {
        return Err(PyValueError::new_err(format!(
            "Integer needs to be within +/- {} but got {}{}",
            bigint_from_bn(core.pk.max_int()),
            if neg { "-" } else { "" },
            int_rep
        )));
    }
    let zero = bn::is_zero(&r);
    r.set_negative(neg && !zero);
    Ok((bn::reduce(&r, core.pk.n()).map_err(err)?, exponent))
}

/// phe's `EncodedNumber.decode`: `mantissa · 16^exponent`, an int for `exponent ≥ 0`,
/// a float (correctly rounded, Python's int division) otherwise.
fn decode(py: Python<'_>, core: &KeyCore, residue: &BigNumRef, exponent: i64) -> PyResult<Py<PyAny>> {
    if residue.ucmp(core.pk.n()).is_ge() || residue.is_negative() {
        return Err(PyValueError::new_err("Attempted to decode corrupted number"));
    }
    let m = match core.pk.decode_signed(residue) {
        Ok(m) => bigint_from_bn(&m),
        Err(_) => return Err(PyOverflowError::new_err("Overflow detected in decrypted number")),
    };
    if exponent >= 0 {
        if exponent > 1 << 24 {
            return Err(PyOverflowError::new_err("the exponent is too large to decode"));
        }
        let v: BigInt = m << (4 * exponent as u64);
        return Ok(v.into_pyobject(py)?.into_any().unbind());
    }
    let k = 4 * exponent.unsigned_abs() as u128;
    if k > m.bits() as u128 + 1100 {
        let zero = if m.sign() == Sign::Minus { -0.0f64 } else { 0.0 };
        return Ok(zero.into_pyobject(py)?.into_any().unbind());
    }
    let den: BigInt = BigInt::from(1) << (k as u64);
    let mp = m.into_pyobject(py)?;
    Ok(mp.call_method1("__truediv__", (den,))?.unbind())
}

fn map_pros(e: tacit_pros::Error) -> PyErr {
    match e {
        tacit_pros::Error::PlaintextRange(m) => PyOverflowError::new_err(format!("plaintext out of range: {m}")),
        e => err(e),
    }
}

// ---------------------------------------------------------------------------------
// Public key
// ---------------------------------------------------------------------------------

/// A Paillier public key `(n, g = n + 1)`, as phe's `PaillierPublicKey`.
///
/// `PaillierPublicKey(n)` validates `n` as a peer's key must be (odd, an even size
/// from 32 to 4096 bits, no prime factor below 2²⁴).
#[pyclass(module = "tacit.paillier", name = "PaillierPublicKey", frozen)]
pub struct PyPublicKey {
    pub(crate) core: Arc<KeyCore>,
}

impl PyPublicKey {
    fn from_pk(pk: PublicKey) -> PyResult<Self> {
        Ok(PyPublicKey {
            core: Arc::new(KeyCore::new(pk, None).map_err(err)?),
        })
    }
}

fn same_key(a: &KeyCore, b: &KeyCore) -> bool {
    std::ptr::eq(a, b) || a.pk == b.pk
}

/// A ciphertext (mform) from arithmetic (not re-randomised, as in phe).
fn new_encrypted(py: Python<'_>, key: &Py<PyPublicKey>, c: MNum, exponent: i64) -> PyResult<Py<PyEncryptedNumber>> {
    new_encrypted_obf(py, key, c, exponent, false)
}

fn new_encrypted_obf(
    py: Python<'_>,
    key: &Py<PyPublicKey>,
    c: MNum,
    exponent: i64,
    obfuscated: bool,
) -> PyResult<Py<PyEncryptedNumber>> {
    Py::new(
        py,
        PyEncryptedNumber {
            public_key: key.clone_ref(py),
            c: Arc::new(c),
            exponent,
            obfuscated,
        },
    )
}

#[pymethods]
impl PyPublicKey {
    /// Pickling (as phe's keys pickle): rebuilt from `n`.
    fn __reduce__(slf: &Bound<'_, Self>) -> (Py<PyAny>, (BigInt,)) {
        (
            slf.get_type().into_any().unbind(),
            (bigint_from_bn(slf.get().core.pk.n()),),
        )
    }

    /// A key is immutable: a copy is the key itself.
    fn __copy__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// A key is immutable: a deep copy is the key itself.
    fn __deepcopy__(slf: Py<Self>, _memo: &Bound<'_, PyAny>) -> Py<Self> {
        slf
    }

    #[new]
    fn py_new(py: Python<'_>, n: BigInt) -> PyResult<Self> {
        let n = bn_from_bigint(&n)?;
        // the key check trial-divides n by the primes below 2^24 (0.5 s at 3072 bits)
        let pk = py.detach(move || PublicKey::from_modulus(n)).map_err(err)?;
        Self::from_pk(pk)
    }

    /// The modulus `n`.
    #[getter]
    fn n(&self) -> BigInt {
        bigint_from_bn(self.core.pk.n())
    }

    /// `g = n + 1`.
    #[getter]
    fn g(&self) -> BigInt {
        bigint_from_bn(self.core.pk.n()) + 1
    }

    /// `n²`.
    #[getter]
    fn nsquare(&self) -> BigInt {
        bigint_from_bn(self.core.pk.n_squared())
    }

    /// The largest plaintext magnitude, `⌊n/3⌋ − 1`.
    #[getter]
    fn max_int(&self) -> BigInt {
        bigint_from_bn(self.core.pk.max_int())
    }

    /// The size of `n` in bits.
    #[getter]
    fn bits(&self) -> u32 {
        self.core.pk.bits()
    }

    /// Whether this key encrypts with the CRT (this process holds the private key).
    #[getter]
    fn crt_encryption(&self) -> bool {
        self.core.crt.is_some()
    }

    fn __repr__(&self) -> String {
        format!("<PaillierPublicKey {}>", self.core.pk.short_id())
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        match other.cast::<PyPublicKey>() {
            Ok(o) => same_key(&self.core, &o.get().core),
            Err(_) => false,
        }
    }

    fn __hash__(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.core.pk.n().to_vec().hash(&mut h);
        h.finish()
    }

    /// Encrypts an int or a float (phe's `encrypt`): the value is encoded as
    /// `EncodedNumber.encode(self, value, precision)`, then encrypted with fresh
    /// randomness (or with `r_value` as `r`, as phe allows).
    #[pyo3(signature = (value, precision=None, r_value=None))]
    fn encrypt(
        slf: &Bound<'_, Self>,
        value: &Bound<'_, PyAny>,
        precision: Option<f64>,
        r_value: Option<BigInt>,
    ) -> PyResult<Py<PyEncryptedNumber>> {
        let py = slf.py();
        let core = slf.get().core.clone();
        let (m, exponent) = encode(&core, value, precision, None)?;
        let fresh = r_value.is_none();
        let c = encrypt_one(py, &core, m, r_value)?;
        new_encrypted_obf(py, &slf.clone().unbind(), c, exponent, fresh)
    }

    /// Encrypts an `EncodedNumber` (phe's `encrypt_encoded`).
    #[pyo3(signature = (encoding, r_value=None))]
    fn encrypt_encoded(
        slf: &Bound<'_, Self>,
        encoding: &PyEncodedNumber,
        r_value: Option<BigInt>,
    ) -> PyResult<Py<PyEncryptedNumber>> {
        let py = slf.py();
        let core = slf.get().core.clone();
        if !same_key(&core, &encoding.public_key.get().core) {
            return Err(PyValueError::new_err("the encoding was made for another public key"));
        }
        let fresh = r_value.is_none();
        let c = encrypt_one(py, &core, dup(&encoding.encoding)?, r_value)?;
        new_encrypted_obf(py, &slf.clone().unbind(), c, encoding.exponent, fresh)
    }

    /// The ciphertext of a residue `plaintext ∈ [0, n)` as an int (phe's
    /// `raw_encrypt`; `r_value=1` gives the deterministic `g^m`).
    #[pyo3(signature = (plaintext, r_value=None))]
    fn raw_encrypt(&self, py: Python<'_>, plaintext: BigInt, r_value: Option<BigInt>) -> PyResult<BigInt> {
        let m = bn_from_bigint(&plaintext)?;
        if m.is_negative() || m.ucmp(self.core.pk.n()).is_ge() {
            return Err(PyValueError::new_err("a raw plaintext must lie in [0, n)"));
        }
        let c = encrypt_one(py, &self.core, m, r_value)?;
        let c = self.core.plain(&c).map_err(err)?;
        Ok(bigint_from_bn(&c))
    }

    /// Encrypts every value of a list (ints or floats) on all cores, with the GIL
    /// released; returns a list of `EncryptedNumber`.
    #[pyo3(signature = (values, precision=None))]
    fn encrypt_many(
        slf: &Bound<'_, Self>,
        values: Vec<Bound<'_, PyAny>>,
        precision: Option<f64>,
    ) -> PyResult<Vec<Py<PyEncryptedNumber>>> {
        let py = slf.py();
        let core = slf.get().core.clone();
        let encoded: Vec<(Nat, i64)> = values
            .iter()
            .map(|v| encode(&core, v, precision, None))
            .collect::<PyResult<_>>()?;
        let seeds = seeds(&mut rng(), encoded.len());
        let cs: Vec<MNum> = py
            .detach(|| {
                encoded
                    .par_iter()
                    .zip(seeds)
                    .map(|((m, _), s)| core.encrypt_residue(m, &mut ChaCha20Rng::from_seed(s)))
                    .collect::<tacit_pros::Result<Vec<_>>>()
            })
            .map_err(map_pros)?;
        let key = slf.clone().unbind();
        cs.into_iter()
            .zip(encoded)
            .map(|(c, (_, e))| new_encrypted_obf(py, &key, c, e, true))
            .collect()
    }

    /// The key as python-paillier's JSON (JWK, `{"kty": "DAJ", "alg": "PAI-GN1",
    /// "n": …}`), as `pheutil genpkey` writes it.
    #[pyo3(signature = (kid=None))]
    fn to_json(&self, kid: Option<&str>) -> PyResult<String> {
        let kid = kid.unwrap_or("tacit public key");
        serde_json::to_string(&tacit_pros::phe::public_key_json(&self.core.pk, kid)).map_err(err)
    }

    /// Reads a public key from python-paillier's JSON (validated as a peer's key).
    #[staticmethod]
    fn from_json(py: Python<'_>, s: &str) -> PyResult<Self> {
        let v: serde_json::Value = serde_json::from_str(s).map_err(|e| err(format!("python-paillier JSON: {e}")))?;
        Self::from_pk(py.detach(move || tacit_pros::phe::read_public_key(&v)).map_err(err)?)
    }
}

/// `E(m)` in mform, with `r_value` as `r` if given.
fn encrypt_one(py: Python<'_>, core: &Arc<KeyCore>, m: Nat, r_value: Option<BigInt>) -> PyResult<MNum> {
    match r_value {
        Some(r) => {
            let r = bn_from_bigint(&r)?;
            let core = core.clone();
            // every EncryptedNumber is a unit (decryption trusts that): an r that is
            // not a unit modulo n (0, p, q, ...) would make one that is not
            py.detach(move || -> PyResult<MNum> {
                let r = bn::reduce(&r, core.pk.n()).map_err(err)?;
                let gcd = bn::gcd(&r, core.pk.n()).map_err(err)?;
                if bn::is_zero(&r) || !bn::is_one(&gcd) {
                    return Err(PyValueError::new_err("r_value is not a unit modulo n"));
                }
                let rn = core.mont.pow_secret(&r, core.pk.n()).map_err(err)?;
                core.encrypt_with_rn(&m, &rn).map_err(map_pros)
            })
        }
        None => {
            let core = core.clone();
            py.detach(move || core.encrypt_residue(&m, &mut rng()))
                .map_err(map_pros)
        }
    }
}

// ---------------------------------------------------------------------------------
// Private key
// ---------------------------------------------------------------------------------

/// A Paillier private key, as phe's `PaillierPrivateKey(public_key, p, q)`. Its
/// `public_key` encrypts with the CRT. The primes are erased on drop and never
/// printed.
#[pyclass(module = "tacit.paillier", name = "PaillierPrivateKey", frozen)]
pub struct PyPrivateKey {
    sk: Arc<PrivateKey>,
    /// The public key (it encrypts with the CRT).
    #[pyo3(get)]
    public_key: Py<PyPublicKey>,
}

impl PyPrivateKey {
    fn from_sk(py: Python<'_>, sk: PrivateKey) -> PyResult<Self> {
        let crt = Crt::new(&sk).map_err(err)?;
        let core = KeyCore::new(sk.public().clone(), Some(crt)).map_err(err)?;
        let public_key = Py::new(py, PyPublicKey { core: Arc::new(core) })?;
        Ok(PyPrivateKey {
            sk: Arc::new(sk),
            public_key,
        })
    }

    fn check_key(&self, key: &Py<PyPublicKey>) -> PyResult<()> {
        if !same_key(&self.public_key.get().core, &key.get().core) {
            return Err(PyValueError::new_err(
                "encrypted_number was encrypted against a different key!",
            ));
        }
        Ok(())
    }

    fn crt(&self) -> tacit_pros::Result<&Crt> {
        self.public_key
            .get()
            .core
            .crt
            .as_ref()
            .ok_or_else(|| tacit_pros::Error::Backend("a private key without its CRT constants".into()))
    }

    /// The residue of an `EncryptedNumber`'s ciphertext (mform).
    fn decrypt_residue(&self, cm: &MNum) -> tacit_pros::Result<Nat> {
        let c = self.public_key.get().core.plain(cm)?;
        self.crt()?.decrypt(&c)
    }
}

#[pymethods]
impl PyPrivateKey {
    /// Pickling (as phe's keys pickle): rebuilt from the public key, `p` and `q` —
    /// the pickle holds the secret primes.
    fn __reduce__(slf: &Bound<'_, Self>) -> (Py<PyAny>, (Py<PyPublicKey>, BigInt, BigInt)) {
        let me = slf.get();
        let (p, q) = me.sk.primes();
        (
            slf.get_type().into_any().unbind(),
            (me.public_key.clone_ref(slf.py()), bigint_from_bn(p), bigint_from_bn(q)),
        )
    }

    /// A key is immutable: a copy is the key itself.
    fn __copy__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// A key is immutable: a deep copy is the key itself.
    fn __deepcopy__(slf: Py<Self>, _memo: &Bound<'_, PyAny>) -> Py<Self> {
        slf
    }

    #[new]
    fn py_new(py: Python<'_>, public_key: &PyPublicKey, p: BigInt, q: BigInt) -> PyResult<Self> {
        let (p, q) = (bn_from_bigint(&p)?, bn_from_bigint(&q)?);
        let sk = py.detach(|| PrivateKey::from_primes(p, q)).map_err(err)?;
        if sk.public() != &public_key.core.pk {
            return Err(PyValueError::new_err(
                "given public key does not match the given p and q.",
            ));
        }
        Self::from_sk(py, sk)
    }

    /// The prime `p` (secret).
    #[getter]
    fn p(&self) -> BigInt {
        bigint_from_bn(self.sk.primes().0)
    }

    /// The prime `q` (secret).
    #[getter]
    fn q(&self) -> BigInt {
        bigint_from_bn(self.sk.primes().1)
    }

    fn __repr__(&self) -> String {
        format!("<PaillierPrivateKey for {}>", self.public_key.get().__repr__())
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        match other.cast::<PyPrivateKey>() {
            Ok(o) => {
                let (p, _) = self.sk.primes();
                let (op, oq) = o.get().sk.primes();
                self.sk.public() == o.get().sk.public() && (p == op || p == oq)
            }
            Err(_) => false,
        }
    }

    fn __hash__(&self) -> u64 {
        self.public_key.get().__hash__()
    }

    /// Decrypts an `EncryptedNumber` to an int or a float (phe's `decrypt`).
    fn decrypt(&self, py: Python<'_>, encrypted_number: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let e = encrypted_number.cast::<PyEncryptedNumber>().map_err(|_| {
            PyTypeError::new_err(format!(
                "Expected encrypted_number to be an EncryptedNumber not: {}",
                encrypted_number
                    .get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default()
            ))
        })?;
        let e = e.borrow();
        self.check_key(&e.public_key)?;
        let c = e.c.clone();
        let m = py.detach(|| self.decrypt_residue(&c)).map_err(err)?;
        decode(py, &self.public_key.get().core, &m, e.exponent)
    }

    /// Decrypts to an `EncodedNumber` (phe's `decrypt_encoded`).
    fn decrypt_encoded(
        &self,
        py: Python<'_>,
        encrypted_number: PyRef<'_, PyEncryptedNumber>,
    ) -> PyResult<PyEncodedNumber> {
        self.check_key(&encrypted_number.public_key)?;
        let c = encrypted_number.c.clone();
        let m = py.detach(|| self.decrypt_residue(&c)).map_err(err)?;
        Ok(PyEncodedNumber {
            public_key: self.public_key.clone_ref(py),
            encoding: m,
            exponent: encrypted_number.exponent,
        })
    }

    /// Decrypts a raw ciphertext (an int) to its residue in `[0, n)` (phe's
    /// `raw_decrypt`).
    fn raw_decrypt(&self, py: Python<'_>, ciphertext: BigInt) -> PyResult<BigInt> {
        let c = bn_from_bigint(&ciphertext)?;
        let m = py
            .detach(|| {
                self.public_key.get().core.check_ciphertext(&c)?;
                self.crt()?.decrypt(&c)
            })
            .map_err(err)?;
        Ok(bigint_from_bn(&m))
    }

    /// Decrypts every `EncryptedNumber` of a list on all cores, with the GIL released.
    fn decrypt_many(
        &self,
        py: Python<'_>,
        encrypted_numbers: Vec<PyRef<'_, PyEncryptedNumber>>,
    ) -> PyResult<Vec<Py<PyAny>>> {
        let mut cs = Vec::with_capacity(encrypted_numbers.len());
        for e in &encrypted_numbers {
            self.check_key(&e.public_key)?;
            cs.push(e.c.clone());
        }
        let ms: Vec<Nat> = py
            .detach(|| {
                cs.par_iter()
                    .map(|c| self.decrypt_residue(c))
                    .collect::<tacit_pros::Result<_>>()
            })
            .map_err(err)?;
        let core = &self.public_key.get().core;
        ms.iter()
            .zip(&encrypted_numbers)
            .map(|(m, e)| decode(py, core, m, e.exponent))
            .collect()
    }

    /// The key as pheutil's JSON (`{"kty": "DAJ", "key_ops": ["decrypt"], "p", "q",
    /// "pub"}`). Secret: store it like a password.
    #[pyo3(signature = (kid=None))]
    fn to_json(&self, kid: Option<&str>) -> PyResult<String> {
        let kid = kid.unwrap_or("tacit private key");
        serde_json::to_string(&tacit_pros::phe::private_key_json(&self.sk, kid, "tacit public key")).map_err(err)
    }

    /// Reads a private key from pheutil's JSON (`p`/`q`, or phe's `lambda`/`mu`).
    #[staticmethod]
    fn from_json(py: Python<'_>, s: &str) -> PyResult<Self> {
        let v: serde_json::Value = serde_json::from_str(s).map_err(|e| err(format!("python-paillier JSON: {e}")))?;
        let sk = py
            .detach(|| tacit_pros::phe::read_private_key(&v, &mut rng()))
            .map_err(err)?;
        Self::from_sk(py, sk)
    }
}

// ---------------------------------------------------------------------------------
// Encoded and encrypted numbers
// ---------------------------------------------------------------------------------

/// phe's `EncodedNumber`: a residue `encoding ∈ [0, n)` standing for the signed
/// mantissa, and a base-16 `exponent`.
/// The constructor arguments a pickled number is rebuilt from: key, value, exponent.
type NumberArgs = (Py<PyPublicKey>, BigInt, i64);

#[pyclass(module = "tacit.paillier", name = "EncodedNumber")]
pub struct PyEncodedNumber {
    #[pyo3(get)]
    public_key: Py<PyPublicKey>,
    encoding: Nat,
    #[pyo3(get, set)]
    exponent: i64,
}

#[pymethods]
impl PyEncodedNumber {
    /// Pickling: rebuilt from the public key, the encoding and the exponent.
    fn __reduce__(slf: &Bound<'_, Self>) -> (Py<PyAny>, NumberArgs) {
        let me = slf.borrow();
        (
            slf.get_type().into_any().unbind(),
            (
                me.public_key.clone_ref(slf.py()),
                bigint_from_bn(&me.encoding),
                me.exponent,
            ),
        )
    }

    /// `EncodedNumber.BASE`.
    #[classattr]
    #[allow(non_snake_case)]
    fn BASE() -> u32 {
        BASE
    }

    #[new]
    fn py_new(public_key: Py<PyPublicKey>, encoding: BigInt, exponent: i64) -> PyResult<Self> {
        let encoding = bn_from_bigint(&encoding)?;
        if encoding.is_negative() || encoding.ucmp(public_key.get().core.pk.n()).is_ge() {
            return Err(PyValueError::new_err("an encoding must lie in [0, n)"));
        }
        Ok(PyEncodedNumber {
            public_key,
            encoding,
            exponent,
        })
    }

    /// The residue.
    #[getter]
    fn encoding(&self) -> BigInt {
        bigint_from_bn(&self.encoding)
    }

    /// phe's `EncodedNumber.encode`.
    #[classmethod]
    #[pyo3(signature = (public_key, scalar, precision=None, max_exponent=None))]
    fn encode(
        _cls: &Bound<'_, pyo3::types::PyType>,
        public_key: Py<PyPublicKey>,
        scalar: &Bound<'_, PyAny>,
        precision: Option<f64>,
        max_exponent: Option<i64>,
    ) -> PyResult<Self> {
        let (encoding, exponent) = encode(&public_key.get().core, scalar, precision, max_exponent)?;
        Ok(PyEncodedNumber {
            public_key,
            encoding,
            exponent,
        })
    }

    /// The number: an int for exponent ≥ 0, a float otherwise.
    fn decode(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        decode(py, &self.public_key.get().core, &self.encoding, self.exponent)
    }

    /// The same number with a lower exponent.
    fn decrease_exponent_to(&self, py: Python<'_>, new_exp: i64) -> PyResult<Self> {
        if new_exp > self.exponent {
            return Err(PyValueError::new_err(format!(
                "New exponent {new_exp} should be more negative than old exponent {}",
                self.exponent
            )));
        }
        let core = &self.public_key.get().core;
        let d = exponent_gap(self.exponent, new_exp)?;
        let mut f = BigNum::new().map_err(err)?;
        f.set_bit((4 * d) as i32).map_err(err)?;
        let f = bn::reduce(&f, core.pk.n()).map_err(err)?;
        Ok(PyEncodedNumber {
            public_key: self.public_key.clone_ref(py),
            encoding: bn::mul_mod(&self.encoding, &f, core.pk.n()).map_err(err)?,
            exponent: new_exp,
        })
    }

    fn __repr__(&self) -> String {
        format!("<EncodedNumber exponent={}>", self.exponent)
    }
}

/// phe's `EncryptedNumber`: a ciphertext of a mantissa and its base-16 `exponent`.
/// `+` and `-` with encrypted numbers and with plain ints/floats, `*` and `/` by
/// plain scalars; the exponents are aligned as phe aligns them.
#[pyclass(module = "tacit.paillier", name = "EncryptedNumber")]
pub struct PyEncryptedNumber {
    /// The key the number is encrypted under.
    #[pyo3(get)]
    public_key: Py<PyPublicKey>,
    /// The ciphertext in Montgomery form (`c·R mod n²`, [`KeyCore`]), shared with the
    /// batch functions' worker threads without a copy.
    c: Arc<MNum>,
    /// The base-16 exponent: the value is `mantissa · 16^exponent`.
    #[pyo3(get, set)]
    exponent: i64,
    /// Whether `c` carries fresh randomness nobody else knows (false after arithmetic
    /// with public values, as in phe: `ciphertext()` then re-randomises first).
    obfuscated: bool,
}

/// What the right-hand side of an operation is.
enum Operand {
    /// An encrypted number's mform ciphertext.
    Encrypted(Arc<MNum>, i64, Py<PyPublicKey>),
    /// An encoding's residue.
    Encoded(Nat, i64, Py<PyPublicKey>),
    Scalar,
}

fn operand(other: &Bound<'_, PyAny>) -> PyResult<Operand> {
    if let Ok(e) = other.cast::<PyEncryptedNumber>() {
        let e = e.borrow();
        return Ok(Operand::Encrypted(
            e.c.clone(),
            e.exponent,
            e.public_key.clone_ref(other.py()),
        ));
    }
    if let Ok(e) = other.cast::<PyEncodedNumber>() {
        let e = e.borrow();
        return Ok(Operand::Encoded(
            dup(&e.encoding)?,
            e.exponent,
            e.public_key.clone_ref(other.py()),
        ));
    }
    Ok(Operand::Scalar)
}

/// `|a − b|`, the base-16 digits two exponents are apart, refused beyond 2¹⁶ (an
/// exponent read from a file may be any i64: `a − b` overflowed and panicked).
fn exponent_gap(a: i64, b: i64) -> PyResult<u64> {
    match a.checked_sub(b) {
        Some(d) if d.unsigned_abs() <= 1 << 16 => Ok(d.unsigned_abs()),
        _ => Err(PyValueError::new_err("the exponents are too far apart to align")),
    }
}

/// The exponent of a product, `a + b`, refused when it leaves i64.
fn exponent_sum(a: i64, b: i64) -> PyResult<i64> {
    a.checked_add(b)
        .ok_or_else(|| PyOverflowError::new_err("the product's exponent is out of range"))
}

/// `a + b` for ciphertexts with exponents, aligned to the smaller exponent.
fn add_aligned(core: &KeyCore, a: (&MNum, i64), b: (&MNum, i64)) -> tacit_pros::Result<(MNum, i64)> {
    let (ca, ea) = a;
    let (cb, eb) = b;
    if ea > eb {
        let ca = core.scale(ca, (ea - eb) as u64)?;
        Ok((core.add_raw(&ca, cb)?, eb))
    } else if eb > ea {
        let cb = core.scale(cb, (eb - ea) as u64)?;
        Ok((core.add_raw(ca, &cb)?, ea))
    } else {
        Ok((core.add_raw(ca, cb)?, ea))
    }
}

impl PyEncryptedNumber {
    fn core(&self) -> &KeyCore {
        &self.public_key.get().core
    }

    fn check_exponent_gap(a: i64, b: i64) -> PyResult<()> {
        exponent_gap(a, b).map(|_| ())
    }

    fn add_any(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyEncryptedNumber>> {
        let core = self.core();
        let (c, e) = match operand(other)? {
            Operand::Encrypted(cb, eb, key) => {
                if !same_key(core, &key.get().core) {
                    return Err(PyValueError::new_err(
                        "Attempted to add numbers encrypted against different public keys!",
                    ));
                }
                Self::check_exponent_gap(self.exponent, eb)?;
                add_aligned(core, (&self.c, self.exponent), (&cb, eb)).map_err(err)?
            }
            Operand::Encoded(m, eb, key) => {
                if !same_key(core, &key.get().core) {
                    return Err(PyValueError::new_err(
                        "Attempted to add numbers encoded against different public keys!",
                    ));
                }
                Self::check_exponent_gap(self.exponent, eb)?;
                let gm = core.pk.g_pow(&m).and_then(|g| core.mform(&g)).map_err(err)?;
                add_aligned(core, (&self.c, self.exponent), (&gm, eb)).map_err(err)?
            }
            Operand::Scalar => {
                let (m, eb) = encode(core, other, None, Some(self.exponent))?;
                Self::check_exponent_gap(self.exponent, eb)?;
                let gm = core.pk.g_pow(&m).and_then(|g| core.mform(&g)).map_err(err)?;
                add_aligned(core, (&self.c, self.exponent), (&gm, eb)).map_err(err)?
            }
        };
        new_encrypted(py, &self.public_key, c, e)
    }

    fn mul_any(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyEncryptedNumber>> {
        let core = self.core();
        let (k, ek) = match operand(other)? {
            Operand::Encrypted(..) => return Err(PyNotImplementedError::new_err("Good luck with that...")),
            Operand::Encoded(m, e, key) => {
                if !same_key(core, &key.get().core) {
                    return Err(PyValueError::new_err("the encoding was made for another public key"));
                }
                (m, e)
            }
            Operand::Scalar => encode(core, other, None, None)?,
        };
        let c = self.c.clone();
        let out = py.detach(|| core.raw_mul(&c, &k)).map_err(err)?;
        new_encrypted(py, &self.public_key, out, exponent_sum(self.exponent, ek)?)
    }

    fn negated(&self, py: Python<'_>) -> PyResult<Py<PyEncryptedNumber>> {
        let core = self.core();
        let inv = core.negate(&self.c).map_err(err)?;
        new_encrypted(py, &self.public_key, inv, self.exponent)
    }
}

#[pymethods]
impl PyEncryptedNumber {
    /// Pickling: rebuilt from the public key, the ciphertext and the exponent. The
    /// number is re-randomised first if it is not (as `ciphertext(be_secure=True)`):
    /// a pickle never holds a ciphertext whose randomness others know.
    fn __reduce__(slf: &Bound<'_, Self>) -> PyResult<(Py<PyAny>, NumberArgs)> {
        let py = slf.py();
        let mut me = slf.borrow_mut();
        let c = me.ciphertext(py, true)?;
        Ok((
            slf.get_type().into_any().unbind(),
            (me.public_key.clone_ref(py), c, me.exponent),
        ))
    }

    #[new]
    #[pyo3(signature = (public_key, ciphertext, exponent=0))]
    fn py_new(public_key: Py<PyPublicKey>, ciphertext: BigInt, exponent: i64) -> PyResult<Self> {
        let c = bn_from_bigint(&ciphertext)?;
        let core = &public_key.get().core;
        core.check_ciphertext(&c).map_err(err)?;
        let c = Arc::new(core.mform(&c).map_err(err)?);
        Ok(PyEncryptedNumber {
            public_key,
            c,
            exponent,
            obfuscated: false,
        })
    }

    /// The ciphertext as an int. With `be_secure` (default) a ciphertext that came
    /// from arithmetic is re-randomised first (`c·rⁿ`), as phe does, so that it
    /// reveals nothing about the operands to whoever knows them.
    #[pyo3(signature = (be_secure=true))]
    fn ciphertext(&mut self, py: Python<'_>, be_secure: bool) -> PyResult<BigInt> {
        if be_secure && !self.obfuscated {
            self.obfuscate(py)?;
        }
        let c = self.core().plain(&self.c).map_err(err)?;
        Ok(bigint_from_bn(&c))
    }

    /// Re-randomises the ciphertext in place (`c·rⁿ`).
    fn obfuscate(&mut self, py: Python<'_>) -> PyResult<()> {
        let core = self.public_key.get().core.clone();
        let c = self.c.clone();
        self.c = Arc::new(py.detach(|| core.rerandomise(&c)).map_err(err)?);
        self.obfuscated = true;
        Ok(())
    }

    /// The same number with a lower exponent (`c^(16^(exponent − new_exp))`).
    fn decrease_exponent_to(&self, py: Python<'_>, new_exp: i64) -> PyResult<Py<PyEncryptedNumber>> {
        if new_exp > self.exponent {
            return Err(PyValueError::new_err(format!(
                "New exponent {new_exp} should be more negative than old exponent {}",
                self.exponent
            )));
        }
        let d = exponent_gap(self.exponent, new_exp)?;
        let c = self.core().scale(&self.c, d).map_err(err)?;
        new_encrypted(py, &self.public_key, c, new_exp)
    }

    fn __add__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyEncryptedNumber>> {
        self.add_any(py, other)
    }

    fn __radd__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyEncryptedNumber>> {
        self.add_any(py, other)
    }

    fn __sub__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyEncryptedNumber>> {
        if let Ok(e) = other.cast::<PyEncryptedNumber>() {
            let neg = e.borrow().negated(py)?;
            return self.add_any(py, neg.bind(py).as_any());
        }
        let neg = other.call_method1("__mul__", (-1,))?;
        if neg.is(py.NotImplemented()) {
            return Err(PyTypeError::new_err("unsupported operand for -"));
        }
        self.add_any(py, &neg)
    }

    fn __rsub__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyEncryptedNumber>> {
        let neg = self.negated(py)?;
        neg.borrow(py).add_any(py, other)
    }

    fn __neg__(&self, py: Python<'_>) -> PyResult<Py<PyEncryptedNumber>> {
        self.negated(py)
    }

    fn __mul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyEncryptedNumber>> {
        self.mul_any(py, other)
    }

    fn __rmul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyEncryptedNumber>> {
        self.mul_any(py, other)
    }

    fn __truediv__(&self, py: Python<'_>, scalar: &Bound<'_, PyAny>) -> PyResult<Py<PyEncryptedNumber>> {
        let inv = 1.0f64.into_pyobject(py)?.call_method1("__truediv__", (scalar,))?;
        if inv.is(py.NotImplemented()) {
            let f: f64 = scalar.extract()?;
            return self.mul_any(py, (1.0 / f).into_pyobject(py)?.as_any());
        }
        self.mul_any(py, &inv)
    }

    fn __repr__(&self) -> String {
        format!("<EncryptedNumber exponent={}>", self.exponent)
    }

    /// The number as python-paillier's JSON `{"v": "<ciphertext>", "e": exponent,
    /// "key_fp": …}` (phe ignores `key_fp`; tacit refuses a number whose `key_fp` is
    /// not its key's).
    #[pyo3(name = "to_json")]
    fn json_string(&mut self, py: Python<'_>) -> PyResult<String> {
        if !self.obfuscated {
            self.obfuscate(py)?;
        }
        let pk = &self.core().pk;
        let e = tacit_pros::phe::EncryptedNumber {
            ciphertext: pk.ciphertext(self.core().plain(&self.c).map_err(err)?).map_err(err)?,
            exponent: i32::try_from(self.exponent).map_err(|_| err("the exponent does not fit phe's JSON"))?,
        };
        serde_json::to_string(&tacit_pros::phe::encrypted_json_for(pk, &e).map_err(err)?).map_err(err)
    }

    /// Reads `{"v": …, "e": …}` under `public_key` (the ciphertext must be in `Z*_{n²}`).
    #[staticmethod]
    fn from_json(public_key: Py<PyPublicKey>, s: &str) -> PyResult<Self> {
        let v: serde_json::Value = serde_json::from_str(s).map_err(|e| err(format!("python-paillier JSON: {e}")))?;
        let core = &public_key.get().core;
        let e = tacit_pros::phe::read_encrypted(&core.pk, &v).map_err(err)?;
        let c = Arc::new(core.mform(e.ciphertext.value()).map_err(err)?);
        Ok(PyEncryptedNumber {
            public_key,
            c,
            exponent: e.exponent as i64,
            obfuscated: true,
        })
    }
}

// ---------------------------------------------------------------------------------
// Module functions
// ---------------------------------------------------------------------------------

/// phe's `generate_paillier_keypair`: `(public_key, private_key)` with an
/// `n_length`-bit modulus (default 3072), primes from OpenSSL's CSPRNG.
#[pyfunction]
#[pyo3(signature = (private_keyring=None, n_length=DEFAULT_BITS))]
fn generate_paillier_keypair(
    py: Python<'_>,
    private_keyring: Option<&Bound<'_, PyAny>>,
    n_length: u32,
) -> PyResult<(Py<PyPublicKey>, Py<PyPrivateKey>)> {
    let sk = py.detach(|| PrivateKey::generate(n_length)).map_err(err)?;
    let sk = Py::new(py, PyPrivateKey::from_sk(py, sk)?)?;
    if let Some(ring) = private_keyring {
        ring.call_method1("add", (sk.clone_ref(py),))?;
    }
    Ok((sk.get().public_key.clone_ref(py), sk))
}

/// The right-hand side of an addition in [`add_many`].
enum Rhs {
    /// An mform ciphertext.
    Encrypted(Arc<MNum>),
    /// A plaintext residue.
    Plain(Nat),
}

/// Elementwise `a[i] + b[i]` on all cores with the GIL released: `a` is a list of
/// `EncryptedNumber`, `b` a list of `EncryptedNumber` or plain numbers.
#[pyfunction]
fn add_many(
    py: Python<'_>,
    a: Vec<PyRef<'_, PyEncryptedNumber>>,
    b: Vec<Bound<'_, PyAny>>,
) -> PyResult<Vec<Py<PyEncryptedNumber>>> {
    if a.len() != b.len() {
        return Err(PyValueError::new_err(format!(
            "the lists have {} and {} elements",
            a.len(),
            b.len()
        )));
    }
    let Some(first) = a.first() else {
        return Ok(Vec::new());
    };
    let key = first.public_key.clone_ref(py);
    let core = key.get().core.clone();
    let mut jobs = Vec::with_capacity(a.len());
    for (x, y) in a.iter().zip(&b) {
        if !same_key(&core, x.core()) {
            return Err(PyValueError::new_err(
                "Attempted to add numbers encrypted against different public keys!",
            ));
        }
        let rhs = match operand(y)? {
            Operand::Encrypted(c, e, k) => {
                if !same_key(&core, &k.get().core) {
                    return Err(PyValueError::new_err(
                        "Attempted to add numbers encrypted against different public keys!",
                    ));
                }
                (Rhs::Encrypted(c), e)
            }
            Operand::Encoded(m, e, k) => {
                if !same_key(&core, &k.get().core) {
                    return Err(PyValueError::new_err(
                        "Attempted to add numbers encoded against different public keys!",
                    ));
                }
                (Rhs::Plain(m), e)
            }
            Operand::Scalar => {
                let (m, e) = encode(&core, y, None, Some(x.exponent))?;
                (Rhs::Plain(m), e)
            }
        };
        PyEncryptedNumber::check_exponent_gap(x.exponent, rhs.1)?;
        jobs.push((x.c.clone(), x.exponent, rhs));
    }
    let out: Vec<(MNum, i64)> = py
        .detach(|| {
            jobs.par_iter()
                .map(|(ca, ea, (y, eb))| match y {
                    Rhs::Encrypted(cb) => add_aligned(&core, (ca, *ea), (cb, *eb)),
                    Rhs::Plain(m) => {
                        let gm = core.mform(&*core.pk.g_pow(m)?)?;
                        add_aligned(&core, (ca, *ea), (&gm, *eb))
                    }
                })
                .collect::<tacit_pros::Result<_>>()
        })
        .map_err(err)?;
    out.into_iter().map(|(c, e)| new_encrypted(py, &key, c, e)).collect()
}

/// Elementwise `a[i] * k[i]` for plain scalars `k[i]`, on all cores with the GIL
/// released.
#[pyfunction]
fn mul_many(
    py: Python<'_>,
    a: Vec<PyRef<'_, PyEncryptedNumber>>,
    k: Vec<Bound<'_, PyAny>>,
) -> PyResult<Vec<Py<PyEncryptedNumber>>> {
    if a.len() != k.len() {
        return Err(PyValueError::new_err(format!(
            "the lists have {} and {} elements",
            a.len(),
            k.len()
        )));
    }
    let Some(first) = a.first() else {
        return Ok(Vec::new());
    };
    let key = first.public_key.clone_ref(py);
    let core = key.get().core.clone();
    let mut jobs = Vec::with_capacity(a.len());
    for (x, y) in a.iter().zip(&k) {
        if !same_key(&core, x.core()) {
            return Err(PyValueError::new_err(
                "the numbers are encrypted against different public keys",
            ));
        }
        let (m, e) = match operand(y)? {
            Operand::Encrypted(..) => return Err(PyNotImplementedError::new_err("Good luck with that...")),
            Operand::Encoded(m, e, k) => {
                if !same_key(&core, &k.get().core) {
                    return Err(PyValueError::new_err("the encoding was made for another public key"));
                }
                (m, e)
            }
            Operand::Scalar => encode(&core, y, None, None)?,
        };
        jobs.push((x.c.clone(), m, exponent_sum(x.exponent, e)?));
    }
    let out: Vec<MNum> = py
        .detach(|| {
            jobs.par_iter()
                .map(|(c, m, _)| core.raw_mul(c, m))
                .collect::<tacit_pros::Result<_>>()
        })
        .map_err(err)?;
    out.into_iter()
        .zip(&jobs)
        .map(|(c, (_, _, e))| new_encrypted(py, &key, c, *e))
        .collect()
}

/// The sum of a list of `EncryptedNumber` (one product mod `n²` per element).
#[pyfunction]
fn sum_encrypted(py: Python<'_>, a: Vec<PyRef<'_, PyEncryptedNumber>>) -> PyResult<Py<PyEncryptedNumber>> {
    let Some(first) = a.first() else {
        return Err(PyValueError::new_err("the sum of an empty list has no key"));
    };
    let key = first.public_key.clone_ref(py);
    let core = key.get().core.clone();
    let mut acc = (first.c.dup().map_err(err)?, first.exponent);
    for x in &a[1..] {
        if !same_key(&core, x.core()) {
            return Err(PyValueError::new_err(
                "Attempted to add numbers encrypted against different public keys!",
            ));
        }
        PyEncryptedNumber::check_exponent_gap(acc.1, x.exponent)?;
        acc = add_aligned(&core, (&acc.0, acc.1), (&x.c, x.exponent)).map_err(err)?;
    }
    new_encrypted(py, &key, acc.0, acc.1)
}

/// The floor of an encrypted addition, for `bench/python`: seconds for `count`
/// products `a·b mod m` on one core with the GIL released, in OpenSSL's `BN_mod_mul` (a
/// product and a division), in its Montgomery product (`BN_mod_mul_montgomery`), and in
/// the AVX-512 IFMA Montgomery product (`None` without IFMA) — what an addition of
/// `tacit.paillier` costs, next to its Python object.
#[pyfunction]
fn _floor_mulmod(py: Python<'_>, a: BigInt, b: BigInt, m: BigInt, count: usize) -> PyResult<(f64, f64, Option<f64>)> {
    let (a, b, m) = (bn_from_bigint(&a)?, bn_from_bigint(&b)?, bn_from_bigint(&m)?);
    py.detach(|| {
        let t = std::time::Instant::now();
        for _ in 0..count {
            std::hint::black_box(bn::mul_mod(&a, &b, &m)?);
        }
        let plain = t.elapsed().as_secs_f64();
        let (a, b) = (bn::reduce(&a, &m)?, bn::reduce(&b, &m)?);
        let mont = Mont::new(&m, false)?;
        let (am, bm) = (mont.enter(&a)?, mont.enter(&b)?);
        let t = std::time::Instant::now();
        for _ in 0..count {
            std::hint::black_box(mont.mul(&am, &bm)?);
        }
        let ossl = t.elapsed().as_secs_f64();
        let ifma = match crate::ifma::Amm::new(&m)? {
            Some(amm) => {
                let (al, bl) = (amm.enter(&a)?, amm.enter(&b)?);
                let t = std::time::Instant::now();
                for _ in 0..count {
                    std::hint::black_box(amm.mul(&al, &bl));
                }
                Some(t.elapsed().as_secs_f64())
            }
            None => None,
        };
        Ok((plain, ossl, ifma))
    })
    .map_err(|e: tacit_pros::Error| err(e))
}

/// Which Montgomery product a key's arithmetic mod `n²` uses (`"avx512-ifma"` or
/// `"openssl"`), for `bench/python` and the tests.
#[pyfunction]
fn _mform_kind(public_key: &PyPublicKey) -> &'static str {
    public_key.core.mont.kind()
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_floor_mulmod, m)?)?;
    m.add_function(wrap_pyfunction!(_mform_kind, m)?)?;
    m.add_class::<PyPublicKey>()?;
    m.add_class::<PyPrivateKey>()?;
    m.add_class::<PyEncryptedNumber>()?;
    m.add_class::<PyEncodedNumber>()?;
    m.add_function(wrap_pyfunction!(generate_paillier_keypair, m)?)?;
    m.add_function(wrap_pyfunction!(add_many, m)?)?;
    m.add_function(wrap_pyfunction!(mul_many, m)?)?;
    m.add_function(wrap_pyfunction!(sum_encrypted, m)?)?;
    Ok(())
}
