//! The Paillier cryptosystem (Paillier, EUROCRYPT '99; PROS paper §3.1 and §4.2).
//!
//! * Key generation: primes `p`, `q` of equal length (`|p| = |q| = bits/2`, top two
//!   bits set so `n = p·q` has exactly `bits` bits), `g = n + 1`.
//! * Encryption: `E(m) = g^m · rⁿ = (1 + m·n) · rⁿ mod n²` for a uniform unit `r`
//!   of `Z_n`. With `g = n + 1` the first factor costs one multiplication, so an
//!   encryption is one exponentiation `rⁿ mod n²`, which does not depend on `m` and
//!   can be computed ahead of time: an [`RnPool`] holds such values, filled on all
//!   cores, and an online encryption is then a single multiplication mod `n²`.
//! * Decryption with the Chinese Remainder Theorem (Paillier §7), with every constant
//!   precomputed at key generation (PROS §4.2):
//!   `m_p = L_p(c^{p−1} mod p²) · h_p mod p` with `L_p(x) = (x − 1)/p` and
//!   `h_p = L_p(g^{p−1} mod p²)⁻¹ mod p` (the same for `q`), then
//!   `m = m_q + q · ((m_p − m_q) · q⁻¹ mod p)`.
//! * Homomorphisms: `E(a)·E(b) = E(a + b)`, `E(a)^k = E(k·a)`, and re-randomisation
//!   `E(a)·rⁿ`.
//! * Signed plaintexts as python-paillier encodes them: `0 ≤ m ≤ max_int` stands for
//!   itself, `n − max_int ≤ m < n` for `m − n`, with `max_int = ⌊n/3⌋ − 1`; anything
//!   between is an overflow.
//!
//! Every exponentiation with a secret exponent (`p − 1`, `q − 1`, `r`, `n` applied to a
//! secret `r`, a constant that is secret to the caller) is constant-time
//! ([`crate::bn::pow_secret`]).

use crate::bn::{self, Nat};
pub use crate::modproof::ModulusProof;
use crate::{Error, Result};
use openssl::bn::{BigNum, BigNumRef};
use rand_chacha::ChaCha20Rng;
use rand_core::{CryptoRngCore, SeedableRng};
use rayon::prelude::*;
use std::sync::Mutex;
use tacit_wire::{Reader, Writer};

/// The default modulus size: 3072 bits (≈128-bit security, NIST SP 800-57).
pub const DEFAULT_KEY_BITS: u32 = 3072;
/// The smallest modulus accepted (the paper's benchmarks start at 32 bits). Such keys
/// are for reproducing the paper's figures only; they offer no security.
pub const MIN_KEY_BITS: u32 = 32;
/// The largest modulus accepted.
pub const MAX_KEY_BITS: u32 = 4096;

/// A Paillier public key `(n, g = n + 1)` with `n²` precomputed.
pub struct PublicKey {
    n: Nat,
    n2: Nat,
    max_int: Nat,
    bits: u32,
}

impl core::fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "PublicKey({} bits, n = {}…)", self.bits, self.short_id())
    }
}

impl PartialEq for PublicKey {
    fn eq(&self, other: &Self) -> bool {
        self.n == other.n
    }
}
impl Eq for PublicKey {}

/// A ciphertext: an element of `Z*_{n²}` under some [`PublicKey`].
#[derive(PartialEq, Eq)]
pub struct Ciphertext(pub(crate) Nat);

impl Clone for Ciphertext {
    fn clone(&self) -> Self {
        Ciphertext(bn::dup_or_die(&self.0))
    }
}

impl Clone for PublicKey {
    fn clone(&self) -> Self {
        PublicKey {
            n: bn::dup_or_die(&self.n),
            n2: bn::dup_or_die(&self.n2),
            max_int: bn::dup_or_die(&self.max_int),
            bits: self.bits,
        }
    }
}

impl core::fmt::Debug for Ciphertext {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Ciphertext({} bits)", self.0.num_bits())
    }
}

impl Ciphertext {
    /// The ciphertext as an integer in `[1, n²)`.
    pub fn value(&self) -> &BigNumRef {
        &self.0
    }
}

fn check_bits(bits: u32) -> Result<()> {
    if !(MIN_KEY_BITS..=MAX_KEY_BITS).contains(&bits) || !bits.is_multiple_of(2) {
        return Err(Error::KeySize(format!(
            "a {bits}-bit modulus is not supported; use an even size from {MIN_KEY_BITS} to {MAX_KEY_BITS} bits"
        )));
    }
    Ok(())
}

impl PublicKey {
    /// The key with modulus `n`, validated as a peer's key must be: an odd modulus of
    /// an even size in the supported range, with no prime factor below
    /// 2^[`bn::MIN_FACTOR_BITS`] (2²⁴: trial division below 2¹⁴, then one gcd with
    /// the primes up to 2²⁴ multiplied modulo `n`).
    ///
    /// That `n = p·q` is proven by [`crate::modproof`]; that *both* factors are large
    /// (beyond 2²⁴) is not proven: see `docs/pros.md`, "The modulus proof".
    pub fn from_modulus(n: Nat) -> Result<Self> {
        let bits = n.num_bits() as u32;
        check_bits(bits)?;
        if n.is_negative() || !n.is_odd() {
            return Err(Error::BadKey("the modulus is even".into()));
        }
        for &p in bn::small_primes() {
            if n.mod_word(p)? == 0 {
                return Err(Error::BadKey(format!("the modulus has the small factor {p}")));
            }
        }
        if bn::has_factor_below_2_24(&n)? {
            return Err(Error::BadKey(format!(
                "the modulus has a prime factor below 2^{}",
                bn::MIN_FACTOR_BITS
            )));
        }
        Self::from_modulus_unchecked(n)
    }

    pub(crate) fn from_modulus_unchecked(n: Nat) -> Result<Self> {
        let bits = n.num_bits() as u32;
        let n2 = bn::mul(&n, &n)?;
        let mut max_int = bn::div(&n, &*bn::from_u64(3)?)?;
        max_int.sub_word(1)?;
        Ok(PublicKey { n, n2, max_int, bits })
    }

    /// The modulus `n`.
    pub fn n(&self) -> &BigNumRef {
        &self.n
    }

    /// `n²`.
    pub fn n_squared(&self) -> &BigNumRef {
        &self.n2
    }

    /// The size of `n` in bits.
    pub fn bits(&self) -> u32 {
        self.bits
    }

    /// The largest positive plaintext of the signed encoding, `⌊n/3⌋ − 1`.
    pub fn max_int(&self) -> &BigNumRef {
        &self.max_int
    }

    /// Bytes of `n` on the wire, `⌈bits/8⌉`.
    pub fn modulus_len(&self) -> usize {
        (self.bits as usize).div_ceil(8)
    }

    /// Bytes of a ciphertext on the wire, `⌈2·bits/8⌉`.
    pub fn ciphertext_len(&self) -> usize {
        (2 * self.bits as usize).div_ceil(8)
    }

    /// The first 8 hex digits of `n`, to tell keys apart in messages.
    pub fn short_id(&self) -> String {
        let b = self.n.to_vec();
        b.iter().take(4).map(|x| format!("{x:02x}")).collect()
    }

    /// `gᵐ = 1 + m·n mod n²` for `m` in `[0, n)`.
    pub fn g_pow(&self, m: &BigNumRef) -> Result<Nat> {
        let mut t = bn::mul(m, &self.n)?;
        t.add_word(1)?;
        bn::reduce(&t, &self.n2)
    }

    /// `rⁿ mod n²` for a fresh uniform unit `r` (the expensive, message-independent
    /// half of an encryption).
    pub fn fresh_rn(&self, rng: &mut impl CryptoRngCore) -> Result<Nat> {
        let mut r = bn::random_unit(rng, &self.n)?;
        let out = bn::pow_secret(&r, &self.n, &self.n2);
        bn::wipe(&mut r);
        out
    }

    /// `E(m) = (1 + m·n)·rn mod n²` with a given `rn = rⁿ`, for `m` in `[0, n)`.
    pub fn encrypt_with_rn(&self, m: &BigNumRef, rn: &BigNumRef) -> Result<Ciphertext> {
        self.check_residue(m)?;
        Ok(Ciphertext(bn::mul_mod(&*self.g_pow(m)?, rn, &self.n2)?))
    }

    /// Encrypts a residue `m ∈ [0, n)` with fresh randomness.
    pub fn encrypt_raw(&self, m: &BigNumRef, rng: &mut impl CryptoRngCore) -> Result<Ciphertext> {
        let rn = self.fresh_rn(rng)?;
        self.encrypt_with_rn(m, &rn)
    }

    /// Encrypts a residue, taking `rⁿ` from `pool` (falls back to a fresh one when the
    /// pool is empty).
    pub fn encrypt_pooled(&self, m: &BigNumRef, pool: &RnPool, rng: &mut impl CryptoRngCore) -> Result<Ciphertext> {
        let rn = pool.take(self, rng)?;
        self.encrypt_with_rn(m, &rn)
    }

    /// The residue standing for a signed integer `m` (`|m| ≤ max_int`).
    pub fn encode_signed(&self, m: &BigNumRef) -> Result<Nat> {
        if m.ucmp(&self.max_int).is_gt() {
            return Err(Error::PlaintextRange(format!(
                "|{}| exceeds the largest plaintext of a {}-bit key",
                short_dec(m),
                self.bits
            )));
        }
        bn::reduce(m, &self.n)
    }

    /// The signed integer a residue stands for.
    pub fn decode_signed(&self, x: &BigNumRef) -> Result<Nat> {
        if x.ucmp(&self.max_int).is_le() {
            return bn::dup(x);
        }
        let neg_bound = bn::sub(&self.n, &self.max_int)?;
        if x.ucmp(&neg_bound).is_ge() {
            return bn::sub(x, &self.n);
        }
        Err(Error::PlaintextRange(
            "the plaintext overflowed the signed range (more than n/3 in absolute value)".into(),
        ))
    }

    /// Encrypts a signed integer with fresh randomness.
    pub fn encrypt(&self, m: &BigNumRef, rng: &mut impl CryptoRngCore) -> Result<Ciphertext> {
        self.encrypt_raw(&*self.encode_signed(m)?, rng)
    }

    /// Encrypts an `i64`.
    pub fn encrypt_i64(&self, m: i64, rng: &mut impl CryptoRngCore) -> Result<Ciphertext> {
        let mut v = bn::from_u64(m.unsigned_abs())?;
        v.set_negative(m < 0);
        self.encrypt(&v, rng)
    }

    /// `E(a + b) = E(a)·E(b) mod n²`.
    pub fn add(&self, a: &Ciphertext, b: &Ciphertext) -> Result<Ciphertext> {
        Ok(Ciphertext(bn::mul_mod(&a.0, &b.0, &self.n2)?))
    }

    /// `E(a + k)` for a plaintext residue `k`.
    pub fn add_plain(&self, a: &Ciphertext, k: &BigNumRef) -> Result<Ciphertext> {
        Ok(Ciphertext(bn::mul_mod(
            &a.0,
            &*self.g_pow(&*bn::reduce(k, &self.n)?)?,
            &self.n2,
        )?))
    }

    /// `E(k·a) = E(a)^k mod n²` for a constant `k` (signed; taken mod `n`). The
    /// exponentiation is constant-time: the constant may be the caller's secret.
    pub fn mul_const(&self, a: &Ciphertext, k: &BigNumRef) -> Result<Ciphertext> {
        let mut k = bn::reduce(k, &self.n)?;
        let out = bn::pow_secret(&a.0, &k, &self.n2);
        bn::wipe(&mut k);
        Ok(Ciphertext(out?))
    }

    /// `E(a)·rⁿ`: the same plaintext under fresh randomness.
    pub fn rerandomize(&self, a: &Ciphertext, rng: &mut impl CryptoRngCore) -> Result<Ciphertext> {
        let rn = self.fresh_rn(rng)?;
        Ok(Ciphertext(bn::mul_mod(&a.0, &rn, &self.n2)?))
    }

    fn check_residue(&self, m: &BigNumRef) -> Result<()> {
        if m.is_negative() || m.ucmp(&self.n).is_ge() {
            return Err(Error::PlaintextRange("a raw plaintext must lie in [0, n)".into()));
        }
        Ok(())
    }

    /// Checks that `c` is a ciphertext of this key: `0 < c < n²` and `gcd(c, n) = 1`
    /// (an element of `Z*_{n²}`). Everything a peer sends passes this check.
    pub fn check_ciphertext(&self, c: &BigNumRef) -> Result<()> {
        self.check_range(c)?;
        if !bn::is_one(&*bn::gcd(c, &self.n)?) {
            return Err(Error::BadCiphertext("the value is not a unit mod n²".into()));
        }
        Ok(())
    }

    /// A ciphertext from an integer, checked with [`PublicKey::check_ciphertext`].
    pub fn ciphertext(&self, c: Nat) -> Result<Ciphertext> {
        self.check_ciphertext(&c)?;
        Ok(Ciphertext(c))
    }

    /// Writes `u16 bits || n (⌈bits/8⌉ bytes, big-endian)`.
    pub fn encode(&self, w: &mut Writer) {
        w.put_u16(self.bits as u16);
        // n has exactly `bits` bits, so it fits.
        w.put_fixed(&self.n.to_vec());
    }

    /// Reads a public key written by [`PublicKey::encode`] and validates it as a peer's.
    pub fn decode(r: &mut Reader<'_>) -> Result<Self> {
        let bits = r.u16()? as u32;
        check_bits(bits)?;
        let len = (bits as usize).div_ceil(8);
        let bytes = r.fixed("Paillier modulus", len)?;
        let n = BigNum::from_slice(bytes)?;
        if n.num_bits() as u32 != bits {
            return Err(Error::BadKey(format!(
                "the modulus has {} bits but the key says {bits}",
                n.num_bits()
            )));
        }
        Self::from_modulus(n)
    }

    /// Writes a ciphertext of this key (fixed width, [`PublicKey::ciphertext_len`]).
    pub fn encode_ciphertext(&self, c: &Ciphertext, w: &mut Writer) {
        match c.0.to_vec_padded(self.ciphertext_len() as i32) {
            Ok(b) => w.put_fixed(&b),
            // A ciphertext of this key always fits; a foreign one is a caller bug.
            Err(_) => w.put_fixed(&vec![0; self.ciphertext_len()]),
        }
    }

    /// Reads a fixed-width ciphertext and checks it is in `Z*_{n²}`.
    pub fn decode_ciphertext(&self, r: &mut Reader<'_>) -> Result<Ciphertext> {
        let b = r.fixed("Paillier ciphertext", self.ciphertext_len())?;
        self.ciphertext(BigNum::from_slice(b)?)
    }

    /// Decodes a sequence of `count` fixed-width ciphertexts: each must lie in
    /// `[1, n²)`, and all must be units, which [`PublicKey::check_units`] tests with
    /// one gcd for the whole batch.
    pub fn decode_ciphertexts(&self, r: &mut Reader<'_>, count: usize) -> Result<Vec<Ciphertext>> {
        let out = self.decode_ciphertexts_unchecked_units(r, count)?;
        self.check_units(&out)?;
        Ok(out)
    }

    /// Like [`PublicKey::decode_ciphertexts`] without the unit check: the caller must
    /// run [`PublicKey::check_units`] on the result before using it.
    pub(crate) fn decode_ciphertexts_unchecked_units(
        &self,
        r: &mut Reader<'_>,
        count: usize,
    ) -> Result<Vec<Ciphertext>> {
        let len = self.ciphertext_len();
        let raw = r.fixed("Paillier ciphertexts", count.saturating_mul(len))?;
        raw.chunks(len)
            .map(|b| {
                let c = BigNum::from_slice(b)?;
                self.check_range(&c)?;
                Ok(Ciphertext(c))
            })
            .collect()
    }

    fn check_range(&self, c: &BigNumRef) -> Result<()> {
        if c.is_negative() || bn::is_zero(c) || c.ucmp(&self.n2).is_ge() {
            return Err(Error::BadCiphertext("the value is not in [1, n²)".into()));
        }
        Ok(())
    }

    /// Checks that every ciphertext is a unit mod `n²`: `gcd(∏ cᵢ mod n, n) = 1` holds
    /// exactly when no `cᵢ` shares a factor with `n` (one gcd for the batch).
    pub fn check_units(&self, cs: &[Ciphertext]) -> Result<()> {
        let mut acc = bn::from_u64(1)?;
        for c in cs {
            acc = bn::mul_mod(&acc, &c.0, &self.n)?;
        }
        if !bn::is_one(&*bn::gcd(&acc, &self.n)?) {
            return Err(Error::BadCiphertext("a value is not a unit mod n²".into()));
        }
        Ok(())
    }
}

/// A Paillier private key with the constants of CRT decryption precomputed. The
/// secrets are erased on drop and never printed.
pub struct PrivateKey {
    public: PublicKey,
    p: Nat,
    q: Nat,
    p2: Nat,
    q2: Nat,
    pm1: Nat,
    qm1: Nat,
    hp: Nat,
    hq: Nat,
    q_inv_p: Nat,
    /// The proof that `n` is a Paillier–Blum modulus, made on first use.
    proof: std::sync::OnceLock<std::sync::Arc<ModulusProof>>,
}

impl core::fmt::Debug for PrivateKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "PrivateKey({:?}, <secret>)", self.public)
    }
}

impl Drop for PrivateKey {
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
            &mut self.q_inv_p,
        ] {
            bn::wipe(x);
        }
    }
}

impl Clone for PrivateKey {
    fn clone(&self) -> Self {
        // The primes are valid: this only fails on allocation failure.
        match (bn::dup(&self.p), bn::dup(&self.q)) {
            (Ok(p), Ok(q)) => match Self::from_primes_unchecked(p, q) {
                Ok(k) => {
                    if let Some(proof) = self.proof.get() {
                        let _ = k.proof.set(proof.clone());
                    }
                    k
                }
                Err(e) => panic!("cloning a private key: {e}"),
            },
            _ => panic!("cloning a private key: allocation failed"),
        }
    }
}

fn secret(x: Nat) -> Nat {
    let mut x = x;
    x.set_const_time();
    x
}

impl PrivateKey {
    /// Generates a key with a `bits`-bit modulus: two primes `p ≡ q ≡ 3 (mod 4)` (a
    /// Blum integer, so that [`ModulusProof`] can prove it) from OpenSSL's CSPRNG via
    /// `BN_generate_prime_ex` (top two bits set, so `n` has exactly `bits` bits).
    pub fn generate(bits: u32) -> Result<Self> {
        check_bits(bits)?;
        let half = (bits / 2) as i32;
        let blum_prime = || -> Result<Nat> {
            loop {
                let mut p = BigNum::new()?;
                p.generate_prime(half, false, None, None)?;
                if p.mod_word(4)? == 3 {
                    return Ok(p);
                }
            }
        };
        loop {
            let p = blum_prime()?;
            let q = blum_prime()?;
            if p == q {
                continue;
            }
            let n = bn::mul(&p, &q)?;
            if n.num_bits() as u32 != bits {
                continue;
            }
            return Self::from_primes_unchecked(p, q);
        }
    }

    /// The key with primes `p` and `q`, checked: `p·q` of a supported size (checked
    /// first, before any primality test), both prime, distinct, and
    /// `gcd(n, (p−1)(q−1)) = 1`.
    pub fn from_primes(p: Nat, q: Nat) -> Result<Self> {
        if p.is_negative() || q.is_negative() {
            return Err(Error::BadKey("p and q must be positive".into()));
        }
        check_bits(bn::mul(&p, &q)?.num_bits() as u32)?;
        let prime = |x: &BigNumRef| bn::with_ctx(|ctx| Ok(x.is_prime(64, ctx)?));
        if p == q || !prime(&p)? || !prime(&q)? {
            return Err(Error::BadKey("p and q must be two distinct primes".into()));
        }
        Self::from_primes_unchecked(p, q)
    }

    fn from_primes_unchecked(p: Nat, q: Nat) -> Result<Self> {
        let n = bn::mul(&p, &q)?;
        check_bits(n.num_bits() as u32)?;
        let mut pm1 = bn::dup(&p)?;
        pm1.sub_word(1)?;
        let mut qm1 = bn::dup(&q)?;
        qm1.sub_word(1)?;
        if !bn::is_one(&*bn::gcd(&n, &*bn::mul(&pm1, &qm1)?)?) {
            return Err(Error::BadKey("gcd(n, (p−1)(q−1)) ≠ 1".into()));
        }
        let public = PublicKey::from_modulus_unchecked(n)?;
        let p = secret(p);
        let q = secret(q);
        let p2 = secret(bn::mul(&p, &p)?);
        let q2 = secret(bn::mul(&q, &q)?);
        let pm1 = secret(pm1);
        let qm1 = secret(qm1);
        // h_p = L_p(g^{p−1} mod p²)^{-1} mod p
        let hp = {
            let gp = bn::pow_secret(&*bn::reduce(&*public.g_pow(&*bn::from_u64(1)?)?, &p2)?, &pm1, &p2)?;
            secret(bn::inv_mod(&*l_func(&gp, &p)?, &p)?)
        };
        let hq = {
            let gq = bn::pow_secret(&*bn::reduce(&*public.g_pow(&*bn::from_u64(1)?)?, &q2)?, &qm1, &q2)?;
            secret(bn::inv_mod(&*l_func(&gq, &q)?, &q)?)
        };
        let q_inv_p = secret(bn::inv_mod(&q, &p)?);
        Ok(PrivateKey {
            public,
            p,
            q,
            p2,
            q2,
            pm1,
            qm1,
            hp,
            hq,
            q_inv_p,
            proof: std::sync::OnceLock::new(),
        })
    }

    /// The proof that this key's modulus is a Paillier–Blum modulus (made once, then
    /// kept with the key; a deterministic function of the key). Peers refuse a key
    /// without it.
    pub fn modulus_proof(&self) -> Result<std::sync::Arc<ModulusProof>> {
        if let Some(p) = self.proof.get() {
            return Ok(p.clone());
        }
        let p = std::sync::Arc::new(ModulusProof::prove(self)?);
        let _ = self.proof.set(p.clone());
        Ok(p)
    }

    /// The residue mod `n` with residues `xp mod p` and `xq mod q` (Garner).
    pub(crate) fn crt(&self, xp: &BigNumRef, xq: &BigNumRef) -> Result<Nat> {
        let d = bn::sub_mod(&*bn::reduce(xp, &self.p)?, &*bn::reduce(xq, &self.p)?, &self.p)?;
        let h = bn::mul_mod(&d, &self.q_inv_p, &self.p)?;
        bn::add(&*bn::reduce(xq, &self.q)?, &*bn::mul(&h, &self.q)?)
    }

    /// The key recovered from `n` and `λ = lcm(p−1, q−1)` (python-paillier's
    /// serialised form), by factoring `n` with a multiple of `λ`: for random `w`,
    /// `w^{λ/2^i}` eventually reveals a square root of 1 other than ±1, whose
    /// `gcd(x − 1, n)` is a factor (Miller's reduction).
    pub fn from_lambda(n: &BigNumRef, lambda: &BigNumRef, rng: &mut impl CryptoRngCore) -> Result<Self> {
        let public = PublicKey::from_modulus(bn::dup(n)?)?;
        if bn::is_zero(lambda) || lambda.is_negative() {
            return Err(Error::BadKey("λ must be positive".into()));
        }
        let mut odd = bn::dup(lambda)?;
        let mut s = 0;
        while !odd.is_odd() {
            let t = bn::dup(&odd)?;
            odd.rshift1(&t)?;
            s += 1;
        }
        let n_minus_1 = {
            let mut t = bn::dup(n)?;
            t.sub_word(1)?;
            t
        };
        for _ in 0..256 {
            let w = bn::random_unit(rng, &public.n)?;
            let mut x = bn::pow_secret(&w, &odd, n)?;
            if bn::is_one(&x) || x == n_minus_1 {
                continue;
            }
            for _ in 0..s {
                let y = bn::mul_mod(&x, &x, n)?;
                if bn::is_one(&y) {
                    let mut xm1 = bn::dup(&x)?;
                    xm1.sub_word(1)?;
                    let f = bn::gcd(&xm1, n)?;
                    if !bn::is_one(&f) && f != *n {
                        let g = bn::div(n, &f)?;
                        let (p, q) = if f.ucmp(&g).is_gt() { (f, g) } else { (g, f) };
                        let key = Self::from_primes(p, q)?;
                        // λ must decrypt: it is a multiple of lcm(p−1, q−1).
                        if !bn::is_zero(&*bn::reduce(lambda, &*key.lambda()?)?) {
                            return Err(Error::BadKey("λ is not a multiple of lcm(p−1, q−1)".into()));
                        }
                        return Ok(key);
                    }
                    break;
                }
                if y == n_minus_1 {
                    break;
                }
                x = y;
            }
        }
        Err(Error::BadKey(
            "λ does not factor n: it is not lcm(p−1, q−1) of this modulus".into(),
        ))
    }

    /// The public half.
    pub fn public(&self) -> &PublicKey {
        &self.public
    }

    /// The prime factors `(p, q)` (secret!).
    pub fn primes(&self) -> (&BigNumRef, &BigNumRef) {
        (&self.p, &self.q)
    }

    /// CRT decryption to the residue `m ∈ [0, n)`.
    pub fn decrypt_raw(&self, c: &Ciphertext) -> Result<Nat> {
        let mp = self.half(&c.0, &self.p, &self.p2, &self.pm1, &self.hp)?;
        let mq = self.half(&c.0, &self.q, &self.q2, &self.qm1, &self.hq)?;
        // m = m_q + q·((m_p − m_q)·q⁻¹ mod p)
        let d = bn::sub_mod(&mp, &*bn::reduce(&mq, &self.p)?, &self.p)?;
        let h = bn::mul_mod(&d, &self.q_inv_p, &self.p)?;
        bn::add(&mq, &*bn::mul(&h, &self.q)?)
    }

    fn half(&self, c: &BigNumRef, p: &BigNumRef, p2: &BigNumRef, pm1: &BigNumRef, hp: &BigNumRef) -> Result<Nat> {
        let cp = bn::reduce(c, p2)?;
        let x = bn::pow_secret(&cp, pm1, p2)?;
        bn::mul_mod(&*l_func(&x, p)?, hp, p)
    }

    /// `(c mod p², c mod q²)`: the inputs of the two half-size exponentiations.
    pub fn crt_inputs(&self, c: &Ciphertext) -> Result<(Nat, Nat)> {
        Ok((bn::reduce(&c.0, &self.p2)?, bn::reduce(&c.0, &self.q2)?))
    }

    /// The two half-size exponentiations CRT decryption consists of, and nothing else
    /// (the floor that `tacit bench pros` compares decryption with), on inputs from
    /// [`PrivateKey::crt_inputs`].
    pub fn decrypt_floor(&self, cp: &BigNumRef, cq: &BigNumRef) -> Result<(Nat, Nat)> {
        Ok((
            bn::pow_secret(cp, &self.pm1, &self.p2)?,
            bn::pow_secret(cq, &self.qm1, &self.q2)?,
        ))
    }

    /// Decryption without the CRT, `m = L(c^λ mod n²)·μ mod n` (for comparison).
    pub fn decrypt_textbook(&self, c: &Ciphertext) -> Result<Nat> {
        let lambda = bn::div(&*bn::mul(&self.pm1, &self.qm1)?, &*bn::gcd(&self.pm1, &self.qm1)?)?;
        let n = &self.public.n;
        let x = bn::pow_secret(&c.0, &lambda, &self.public.n2)?;
        let mu = bn::inv_mod(&lambda, n)?;
        bn::mul_mod(&*l_func(&x, n)?, &mu, n)
    }

    /// Decrypts to the signed integer (python-paillier's encoding).
    pub fn decrypt(&self, c: &Ciphertext) -> Result<Nat> {
        self.public.decode_signed(&*self.decrypt_raw(c)?)
    }

    /// `λ = lcm(p−1, q−1)` (python-paillier's serialised form; secret).
    pub fn lambda(&self) -> Result<Nat> {
        bn::div(&*bn::mul(&self.pm1, &self.qm1)?, &*bn::gcd(&self.pm1, &self.qm1)?)
    }

    /// Writes `u16 bits || p || q` (each `⌈bits/16⌉` bytes; secret!).
    pub fn encode(&self, w: &mut Writer) -> Result<()> {
        let len = (self.public.bits as usize / 2).div_ceil(8);
        w.put_u16(self.public.bits as u16);
        w.put_fixed(&bn::to_fixed(&self.p, len)?);
        w.put_fixed(&bn::to_fixed(&self.q, len)?);
        Ok(())
    }

    /// Reads a key written by [`PrivateKey::encode`], checking the primes.
    pub fn decode(r: &mut Reader<'_>) -> Result<Self> {
        let bits = r.u16()? as u32;
        check_bits(bits)?;
        let len = (bits as usize / 2).div_ceil(8);
        let p = BigNum::from_slice(r.fixed("prime p", len)?)?;
        let q = BigNum::from_slice(r.fixed("prime q", len)?)?;
        let key = Self::from_primes(p, q)?;
        if key.public.bits != bits {
            return Err(Error::BadKey("p·q does not have the announced size".into()));
        }
        Ok(key)
    }
}

/// `L_p(x) = (x − 1)/p`.
fn l_func(x: &BigNumRef, p: &BigNumRef) -> Result<Nat> {
    let mut t = bn::dup(x)?;
    t.sub_word(1)?;
    bn::div(&t, p)
}

fn short_dec(x: &BigNumRef) -> String {
    match x.to_dec_str() {
        Ok(s) if s.len() <= 24 => s.to_string(),
        Ok(s) => format!("{}…({} digits)", &s[..12], s.len()),
        Err(_) => "?".into(),
    }
}

/// A pool of precomputed `rⁿ mod n²` values (the offline half of encryption).
///
/// [`RnPool::fill`] computes them on all cores (rayon) from seeds drawn from the
/// caller's RNG; [`PublicKey::encrypt_pooled`] then costs one multiplication mod `n²`.
/// Each value is used once and erased when taken.
pub struct RnPool {
    n: Nat,
    values: Mutex<Vec<Nat>>,
}

impl core::fmt::Debug for RnPool {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "RnPool({} values)", self.len())
    }
}

impl Drop for RnPool {
    fn drop(&mut self) {
        if let Ok(mut v) = self.values.lock() {
            for x in v.iter_mut() {
                bn::wipe(x);
            }
        }
    }
}

impl RnPool {
    /// An empty pool for `key`.
    pub fn new(key: &PublicKey) -> Result<Self> {
        Ok(RnPool {
            n: bn::dup(&key.n)?,
            values: Mutex::new(Vec::new()),
        })
    }

    /// Values available.
    pub fn len(&self) -> usize {
        self.values.lock().map(|v| v.len()).unwrap_or(0)
    }

    /// Whether the pool is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds `count` fresh values, computed in parallel.
    pub fn fill(&self, key: &PublicKey, count: usize, rng: &mut impl CryptoRngCore) -> Result<()> {
        if key.n != self.n {
            return Err(Error::KeyMismatch("the pool belongs to another key".into()));
        }
        let seeds: Vec<[u8; 32]> = (0..count)
            .map(|_| {
                let mut s = [0u8; 32];
                rng.fill_bytes(&mut s);
                s
            })
            .collect();
        let fresh: Vec<Nat> = seeds
            .into_par_iter()
            .map(|s| key.fresh_rn(&mut ChaCha20Rng::from_seed(s)))
            .collect::<Result<_>>()?;
        self.values
            .lock()
            .map_err(|_| Error::Backend("pool lock poisoned".into()))?
            .extend(fresh);
        Ok(())
    }

    /// Takes one value, or computes a fresh one when the pool is empty.
    pub fn take(&self, key: &PublicKey, rng: &mut impl CryptoRngCore) -> Result<Nat> {
        if key.n != self.n {
            return Err(Error::KeyMismatch("the pool belongs to another key".into()));
        }
        let v = self.values.lock().ok().and_then(|mut v| v.pop());
        match v {
            Some(v) => Ok(v),
            None => key.fresh_rn(rng),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn rng(seed: u8) -> ChaCha20Rng {
        ChaCha20Rng::from_seed([seed; 32])
    }

    fn key(bits: u32) -> PrivateKey {
        PrivateKey::generate(bits).unwrap()
    }

    #[test]
    fn roundtrip_small_and_default_sizes() {
        for bits in [32, 64, 256, 512] {
            let k = key(bits);
            assert_eq!(k.public().bits(), bits);
            let mut r = rng(1);
            for m in [0i64, 1, -1, 42, -12345] {
                let c = k.public().encrypt_i64(m, &mut r).unwrap();
                let d = k.decrypt(&c).unwrap();
                let mut want = bn::from_u64(m.unsigned_abs()).unwrap();
                want.set_negative(m < 0);
                assert_eq!(d, want, "bits {bits} m {m}");
                assert_eq!(k.decrypt_raw(&c).unwrap(), k.decrypt_textbook(&c).unwrap());
            }
        }
    }

    #[test]
    fn homomorphisms() {
        let k = key(256);
        let pk = k.public();
        let mut r = rng(2);
        let a = pk.encrypt_i64(1000, &mut r).unwrap();
        let b = pk.encrypt_i64(-58, &mut r).unwrap();
        let s = pk.add(&a, &b).unwrap();
        assert_eq!(k.decrypt(&s).unwrap(), bn::from_u64(942).unwrap());
        let mut minus3 = bn::from_u64(3).unwrap();
        minus3.set_negative(true);
        let t = pk.mul_const(&a, &minus3).unwrap();
        let mut want = bn::from_u64(3000).unwrap();
        want.set_negative(true);
        assert_eq!(k.decrypt(&t).unwrap(), want);
        let u = pk.add_plain(&b, &bn::from_u64(60).unwrap()).unwrap();
        assert_eq!(k.decrypt(&u).unwrap(), bn::from_u64(2).unwrap());
        let rr = pk.rerandomize(&a, &mut r).unwrap();
        assert_ne!(rr, a);
        assert_eq!(k.decrypt(&rr).unwrap(), k.decrypt(&a).unwrap());
    }

    #[test]
    fn pool_encryption_matches_fresh() {
        let k = key(256);
        let pk = k.public();
        let pool = RnPool::new(pk).unwrap();
        pool.fill(pk, 8, &mut rng(3)).unwrap();
        assert_eq!(pool.len(), 8);
        let c = pk
            .encrypt_pooled(&bn::from_u64(77).unwrap(), &pool, &mut rng(4))
            .unwrap();
        assert_eq!(pool.len(), 7);
        assert_eq!(k.decrypt_raw(&c).unwrap(), bn::from_u64(77).unwrap());
        let other = key(256);
        assert!(matches!(
            pool.take(other.public(), &mut rng(5)),
            Err(Error::KeyMismatch(_))
        ));
    }

    #[test]
    fn signed_overflow_is_refused() {
        let k = key(64);
        let pk = k.public();
        let mut big = bn::dup(pk.max_int()).unwrap();
        big.add_word(1).unwrap();
        assert!(pk.encrypt(&big, &mut rng(6)).is_err());
        // n/2 decrypts to an overflow
        let half = bn::div(pk.n(), &bn::from_u64(2).unwrap()).unwrap();
        let c = pk.encrypt_raw(&half, &mut rng(7)).unwrap();
        assert!(matches!(k.decrypt(&c), Err(Error::PlaintextRange(_))));
    }

    #[test]
    fn ciphertexts_outside_the_group_are_refused() {
        let k = key(128);
        let pk = k.public();
        assert!(pk.ciphertext(bn::from_u64(0).unwrap()).is_err());
        assert!(pk.ciphertext(bn::dup(pk.n_squared()).unwrap()).is_err());
        assert!(pk.ciphertext(bn::dup(pk.n()).unwrap()).is_err());
        let (p, _) = k.primes();
        assert!(pk.ciphertext(bn::mul(p, &bn::from_u64(5).unwrap()).unwrap()).is_err());
        // wire: too short, and a value ≥ n²
        let mut w = Writer::new();
        w.put_fixed(&vec![0xff; pk.ciphertext_len()]);
        let b = w.into_bytes();
        assert!(pk.decode_ciphertext(&mut Reader::new(&b)).is_err());
        assert!(pk.decode_ciphertext(&mut Reader::new(&b[1..])).is_err());
    }

    #[test]
    fn key_encodings_roundtrip_and_validate() {
        let k = key(256);
        let mut w = Writer::new();
        k.public().encode(&mut w);
        let b = w.into_bytes();
        assert_eq!(b.len(), 2 + 32);
        let mut r = Reader::new(&b);
        assert_eq!(&PublicKey::decode(&mut r).unwrap(), k.public());
        r.finish().unwrap();
        // an even modulus, a small factor, an odd size
        let mut bad = b.clone();
        bad[33] &= 0xfe;
        assert!(matches!(
            PublicKey::decode(&mut Reader::new(&bad)),
            Err(Error::BadKey(_))
        ));
        let n3 = bn::mul(k.public().n(), &bn::from_u64(3).unwrap()).unwrap();
        assert!(PublicKey::from_modulus(n3).is_err());
        assert!(matches!(
            PublicKey::decode(&mut Reader::new(&[0x01, 0x01, 0x01])),
            Err(Error::KeySize(_))
        ));
        let mut w = Writer::new();
        k.encode(&mut w).unwrap();
        let sb = w.into_bytes();
        let k2 = PrivateKey::decode(&mut Reader::new(&sb)).unwrap();
        assert_eq!(k2.public(), k.public());
        // p's least significant bit cleared: an even p is never prime. (Flipping a
        // middle bit gave another prime about once in 45 runs.)
        let mut bad = sb.clone();
        bad[2 + 16 - 1] &= 0xfe;
        assert!(PrivateKey::decode(&mut Reader::new(&bad)).is_err());
        assert!(!format!("{k:?}").contains(&k.primes().0.to_dec_str().unwrap().to_string()));
    }

    /// Issue 26, item 7: an imported key's size is checked before the 64-round
    /// primality tests (two 3000-bit "primes" used to be tested first).
    #[test]
    fn an_oversized_key_is_refused_before_primality_tests() {
        let mut big = BigNum::new().unwrap();
        big.set_bit(3000).unwrap();
        big.add_word(1).unwrap();
        let e = PrivateKey::from_primes(bn::dup(&big).unwrap(), big).unwrap_err();
        assert!(matches!(e, Error::KeySize(_)), "{e}");
    }

    #[test]
    fn lambda_form_recovers_the_primes() {
        let k = key(256);
        let lambda = k.lambda().unwrap();
        let k2 = PrivateKey::from_lambda(k.public().n(), &lambda, &mut rng(9)).unwrap();
        // The primes come back larger first; generation does not order them.
        let sorted = |k: &PrivateKey| {
            let (a, b) = (k.primes().0.to_owned().unwrap(), k.primes().1.to_owned().unwrap());
            if a.ucmp(&b).is_gt() { (a, b) } else { (b, a) }
        };
        assert_eq!(sorted(&k2), sorted(&k));
        let mut wrong = bn::dup(&lambda).unwrap();
        wrong.add_word(2).unwrap();
        assert!(PrivateKey::from_lambda(k.public().n(), &wrong, &mut rng(9)).is_err());
    }

    #[test]
    fn floor_matches_decryption_work() {
        let k = key(256);
        let c = k.public().encrypt_i64(5, &mut rng(10)).unwrap();
        let (cp, cq) = k.crt_inputs(&c).unwrap();
        let (a, b) = k.decrypt_floor(&cp, &cq).unwrap();
        assert!(a.num_bits() > 0 && b.num_bits() > 0);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]
        #[test]
        fn add_and_scale_match_plain_arithmetic(a in -1_000_000i64..1_000_000, b in -1_000_000i64..1_000_000, k in -1000i64..1000) {
            static KEY: std::sync::OnceLock<PrivateKey> = std::sync::OnceLock::new();
            let sk = KEY.get_or_init(|| key(256));
            let pk = sk.public();
            let mut r = rng(11);
            let ca = pk.encrypt_i64(a, &mut r).unwrap();
            let cb = pk.encrypt_i64(b, &mut r).unwrap();
            let mut kk = bn::from_u64(k.unsigned_abs()).unwrap();
            kk.set_negative(k < 0);
            let c = pk.add(&pk.mul_const(&ca, &kk).unwrap(), &cb).unwrap();
            let want = (a as i128) * (k as i128) + b as i128;
            let got = sk.decrypt(&c).unwrap().to_dec_str().unwrap().to_string();
            prop_assert_eq!(got, want.to_string());
        }
    }
}
