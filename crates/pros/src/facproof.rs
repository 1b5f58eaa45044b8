//! The **no-small-factor proof** Π^fac and the **ring-Pedersen parameter proof**
//! Π^prm of Canetti, Gennaro, Goldfeder, Makriyannis and Peled (*UC Non-Interactive,
//! Proactive, Threshold ECDSA with Identifiable Aborts*, CCS 2020 / ePrint 2021/060:
//! Π^fac in App. C.5, Fig. 28 of the revised version; Π^prm in §6.4, Fig. 17), made
//! non-interactive by Fiat–Shamir and bound to the session.
//!
//! Why PROS needs it: [`crate::modproof`] (Π^mod) proves that a peer's Paillier
//! modulus is `N₀ = p·q` with two primes, not that both are large. A key holder whose
//! `p` is small tests `D / p` candidates of an element domain of size `D` per
//! comparison (docs/pros.md, "The modulus proof"). Π^fac proves `p, q ≤ 2^{ℓ+ε+1}·√N₀`,
//! hence both `≥ √N₀ / 2^{ℓ+ε+2}` ([`proven_min_factor_bits`]: 2¹¹⁵⁰ at 3072 bits).
//!
//! Π^fac is sound only against a prover who cannot solve strong RSA modulo `N̂`, a
//! product of two safe primes whose factors the **verifier** knows: so the verifier
//! (3PR's B, the FNP sender) makes `(N̂, s, t)` ([`RingPedersen::generate`], once per
//! installation: `tacit` keeps them in its store) and sends them first, with Π^prm
//! proving `s ∈ ⟨t⟩`; the prover (the key holder) checks Π^prm before it proves, since
//! with `s ∉ ⟨t⟩` the commitments `s^p·t^μ` could reveal `p`.
//!
//! ```text
//! Verifier V: N̂ = P̂·Q̂ (safe primes), t = τ² mod N̂, λ ← [0, φ(N̂)/4), s = t^λ
//!   Π^prm: a_i ← [0, φ(N̂)), A_i = t^{a_i}  (i < 128)
//!          e = SHA-256(domain ‖ N̂ ‖ s ‖ t ‖ A_0 … A_127) (128 bits), z_i = a_i + e_i·λ mod φ(N̂)
//!   ───▶ (N̂, s, t, A_i, z_i)                    prover checks t^{z_i} ≡ A_i·s^{e_i}
//! Prover (p, q with N₀ = p·q), H = ⌈bits(N₀)/2⌉, ℓ = 128, ε = 256:
//!   α, β ← [0, 2^{ℓ+ε+H}),  μ, ν ← [0, 2^ℓ·N̂),  x, y ← [0, 2^{ℓ+ε}·N̂),  r ← [0, 2^{ℓ+ε}·N₀·N̂)
//!   P = s^p t^μ, Q = s^q t^ν, A = s^α t^x, B = s^β t^y, T = Q^α t^r   (mod N̂)
//!   e = SHA-256(domain ‖ context ‖ N₀ ‖ N̂ ‖ s ‖ t ‖ P ‖ Q ‖ A ‖ B ‖ T) (128 bits)
//!   z₁ = α + e·p, z₂ = β + e·q, w₁ = x + e·μ, w₂ = y + e·ν, v = r − e·ν·p
//!   ───▶ (P, Q, A, B, T, z₁, z₂, w₁, w₂, v)
//! Verifier: P, Q, A, B, T units; 0 ≤ z₁, z₂ < 2^{ℓ+ε+H+1}; with R = s^{N₀}:
//!   s^{z₁} t^{w₁} ≡ A·P^e,  s^{z₂} t^{w₂} ≡ B·Q^e,  Q^{z₁} t^{v} ≡ T·R^e   (mod N̂)
//! ```
//!
//! **Departures from Fig. 28, argued in docs/pros.md.** The paper samples every mask in
//! a range centred on 0 (`±X`); here in `[0, 2X)`, with a non-negative challenge: this
//! shifts every response by a public constant, so the zero-knowledge and extraction
//! arguments are unchanged, and every secret exponent is non-negative (one
//! constant-time exponentiation each, no branch on a secret sign). The paper's `σ`
//! (sampled by the prover and sent in the clear, `R = s^{N₀}·t^σ`) is dropped
//! (`σ = 0`): a public value contributes nothing. `ℓ = 128` is the challenge length
//! (soundness `2^{−128}` per hash query) and `ε = 256 = ℓ + 128` the slack that keeps
//! `e·μ` and `e·ν·p` statistically hidden (distance `≤ 2^{−128}`); the paper's
//! ECDSA setting uses `ℓ = |q| = 256`.
//!
//! **Binding.** The challenge hashes a `context` the caller derives from the session
//! (the TLS channel binding and the verifier's fresh nonce) together with both keys
//! (`N₀` and `(N̂, s, t)`), so a proof made for another session, another verifier or
//! another modulus does not verify.

use crate::bn::{self, Nat};
use crate::paillier::{PrivateKey, PublicKey};
use crate::{Error, Result};
use openssl::bn::{BigNum, BigNumRef};
use rand_core::CryptoRngCore;
use rayon::prelude::*;
use sha2::{Digest, Sha256};
use tacit_wire::{Reader, Writer};

/// `ℓ`: challenge bits of Π^fac.
pub const CHALLENGE_BITS: u32 = 128;
/// `ε`: statistical slack bits of Π^fac's masks (`ℓ + 128`).
pub const SLACK_BITS: u32 = 256;
/// Repetitions of Π^prm (binary challenges): soundness `2^{−128}`.
pub const PRM_ROUNDS: usize = 128;
/// The size of `N̂` that [`RingPedersen::generate`] makes by default.
pub const DEFAULT_RING_BITS: u32 = 3072;
/// The smallest `N̂` a prover accepts (the verifier's own security; tests use 1024).
pub const MIN_RING_BITS: u32 = 1024;
/// The largest `N̂` a prover accepts (bounds its work and the message).
pub const MAX_RING_BITS: u32 = 4096;

const DOMAIN_PRM: &[u8] = b"tacit-pros/v1/ring-pedersen-proof\0";
const DOMAIN_FAC: &[u8] = b"tacit-pros/v1/no-small-factor-proof\0";

/// The least size (log₂) Π^fac proves for both prime factors of a `bits`-bit
/// modulus: `⌈bits/2⌉ − ℓ − ε − 2` (≤ 0 means the proof shows nothing at that size;
/// the gcd with the primes below 2²⁴ still holds). 3072 bits: 1150; 2048: 638;
/// 1024: 126.
pub fn proven_min_factor_bits(bits: u32) -> i64 {
    bits.div_ceil(2) as i64 - CHALLENGE_BITS as i64 - SLACK_BITS as i64 - 2
}

/// The smallest peer key, in bits, for which Π^fac's bound means something, and so
/// the floor under every peer key B (3PR) and the FNP sender accept, whatever
/// minimum their caller gives: `2·(2ℓ + ε)` = **1024**.
///
/// Derivation: the bound must be as strong as the proof itself. Π^fac proves both
/// factors `≥ 2^{⌈bits/2⌉−ℓ−ε−2}`; at `bits ≥ 2·(2ℓ + ε)` that is `≥ 2^{ℓ−2}`, so a
/// class modulo either factor holds at most one element of any dictionary of up to
/// `2^{ℓ−2}` — searching a larger one costs about the `2^ℓ` hash queries that also
/// forge a Π^fac — and a comparison tests two candidates whatever the dictionary.
/// Below it the bound falls half a bit per key bit (`2⁶²` at 896 bits) and is
/// nothing from about 772 bits down. The paper's small keys stay available only to
/// a party that names it locally ([`crate::threepr::Responder::accept_insecure_small_keys`],
/// [`crate::fnp::Sender::accept_insecure_small_keys`]); no message can ask for it.
pub const MIN_PEER_KEY_BITS: u32 = 2 * (2 * CHALLENGE_BITS + SLACK_BITS);

const _: () = assert!(
    (MIN_PEER_KEY_BITS / 2) as i64 - CHALLENGE_BITS as i64 - SLACK_BITS as i64 - 2 == CHALLENGE_BITS as i64 - 2
);

fn pow2(bits: u32) -> Result<Nat> {
    let mut x = BigNum::new()?;
    x.set_bit(bits as i32)?;
    Ok(x)
}

fn shl(x: &BigNumRef, bits: u32) -> Result<Nat> {
    let mut r = BigNum::new()?;
    r.lshift(x, bits as i32)?;
    Ok(r)
}

fn unit_in(v: &BigNumRef, n: &BigNumRef) -> bool {
    !v.is_negative() && !bn::is_zero(v) && v.ucmp(n).is_lt()
}

/// Whether every value is a unit modulo `n` (one gcd of their product).
fn all_units(vs: &[&BigNumRef], n: &BigNumRef) -> Result<bool> {
    let mut acc = bn::from_u64(1)?;
    for v in vs {
        if !unit_in(v, n) {
            return Ok(false);
        }
        acc = bn::mul_mod(&acc, v, n)?;
    }
    Ok(bn::is_one(&*bn::gcd(&acc, n)?))
}

// ------------------------------------------------------------ signed encoding

/// `u8 sign (0: ≥ 0, 1: < 0) || magnitude (len bytes, big-endian)`.
fn put_signed(w: &mut Writer, v: &BigNumRef, len: usize) {
    w.put_u8(v.is_negative() as u8);
    let mut m = match bn::dup(v) {
        Ok(m) => m,
        Err(_) => {
            w.put_fixed(&vec![0; len]);
            return;
        }
    };
    m.set_negative(false);
    match m.to_vec_padded(len as i32) {
        Ok(b) => w.put_fixed(&b),
        // too large: a value the verifier refuses
        Err(_) => w.put_fixed(&vec![0xff; len]),
    }
}

fn get_signed(r: &mut Reader<'_>, len: usize, what: &'static str) -> Result<Nat> {
    let sign = r.u8()?;
    if sign > 1 {
        return Err(Error::Wire(tacit_wire::Error::invalid(what, "sign byte is not 0 or 1")));
    }
    let mut v = BigNum::from_slice(r.fixed("ring-Pedersen value", len)?)?;
    v.set_negative(sign == 1);
    Ok(v)
}

fn put_fixed(w: &mut Writer, v: &BigNumRef, len: usize) {
    match v.to_vec_padded(len as i32) {
        Ok(b) => w.put_fixed(&b),
        Err(_) => w.put_fixed(&vec![0xff; len]),
    }
}

fn get_fixed(r: &mut Reader<'_>, len: usize) -> Result<Nat> {
    Ok(BigNum::from_slice(r.fixed("ring-Pedersen value", len)?)?)
}

// ------------------------------------------------------------ ring-Pedersen

/// Ring-Pedersen parameters `(N̂, s, t)` as a prover receives them: public, and
/// trusted by the prover only with a verified [`PrmProof`].
#[derive(Debug, PartialEq, Eq)]
pub struct RingPedersenParams {
    n: Nat,
    s: Nat,
    t: Nat,
}

impl Clone for RingPedersenParams {
    fn clone(&self) -> Self {
        let dup = |v: &Nat| bn::dup_or_die(v);
        RingPedersenParams {
            n: dup(&self.n),
            s: dup(&self.s),
            t: dup(&self.t),
        }
    }
}

impl RingPedersenParams {
    /// `N̂`.
    pub fn n(&self) -> &BigNumRef {
        &self.n
    }

    /// `s`.
    pub fn s(&self) -> &BigNumRef {
        &self.s
    }

    /// `t`.
    pub fn t(&self) -> &BigNumRef {
        &self.t
    }

    /// Bits of `N̂`.
    pub fn bits(&self) -> u32 {
        self.n.num_bits() as u32
    }

    /// Bytes of `N̂`.
    pub fn len(&self) -> usize {
        (self.n.num_bits() as usize).div_ceil(8)
    }

    /// Never empty (a parameter set always has a modulus).
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The parameters `(n, s, t)` taken as they are, for tests of what a deviating
    /// verifier sends; [`PrmProof::verify`] is what a prover relies on.
    pub fn from_parts(n: Nat, s: Nat, t: Nat) -> Self {
        RingPedersenParams { n, s, t }
    }

    /// The size checks a prover makes before anything else: `N̂` odd, of
    /// [`MIN_RING_BITS`]`..=`[`MAX_RING_BITS`] bits; `s`, `t` units of `Z_N̂`.
    pub fn check(&self) -> Result<()> {
        let bits = self.bits();
        if !(MIN_RING_BITS..=MAX_RING_BITS).contains(&bits) || !self.n.is_odd() || self.n.is_negative() {
            return Err(Error::BadKey(format!(
                "the peer's ring-Pedersen modulus has {bits} bits or is even; we accept odd moduli of {MIN_RING_BITS} to {MAX_RING_BITS} bits"
            )));
        }
        if !all_units(&[&self.s, &self.t], &self.n)? {
            return Err(Error::BadKey("the peer's ring-Pedersen s or t is not a unit".into()));
        }
        Ok(())
    }

    /// `u16 len || N̂ || s || t`, each `len` bytes.
    pub fn encode(&self, w: &mut Writer) {
        let len = self.len();
        w.put_u16(len as u16);
        put_fixed(w, &self.n, len);
        put_fixed(w, &self.s, len);
        put_fixed(w, &self.t, len);
    }

    /// Decodes parameters of at most [`MAX_RING_BITS`] (checked by [`Self::check`]).
    pub fn decode(r: &mut Reader<'_>) -> Result<Self> {
        let len = r.u16()? as usize;
        if len == 0 || len > (MAX_RING_BITS as usize).div_ceil(8) {
            return Err(Error::Wire(tacit_wire::Error::invalid(
                "ring-Pedersen modulus length",
                format!("{len} bytes is not in 1..={}", MAX_RING_BITS / 8),
            )));
        }
        let n = get_fixed(r, len)?;
        // one encoding: `len` is the length of N̂ (no zero byte in front), which is also
        // the length Π^prm's values are read at
        if (n.num_bits() as usize).div_ceil(8) != len {
            return Err(Error::Wire(tacit_wire::Error::invalid(
                "ring-Pedersen modulus length",
                format!(
                    "{len} bytes for a {}-bit modulus (it must have no leading zero byte)",
                    n.num_bits()
                ),
            )));
        }
        let s = get_fixed(r, len)?;
        let t = get_fixed(r, len)?;
        Ok(RingPedersenParams { n, s, t })
    }

    /// Bytes of [`Self::encode`] at `bits`.
    pub const fn encoded_len(bits: u32) -> usize {
        2 + 3 * (bits as usize).div_ceil(8)
    }

    fn absorb(&self, h: &mut Sha256) -> Result<()> {
        let len = self.len();
        h.update((len as u32).to_be_bytes());
        h.update(bn::to_fixed(&self.n, len)?);
        h.update(bn::to_fixed(&self.s, len)?);
        h.update(bn::to_fixed(&self.t, len)?);
        Ok(())
    }
}

/// The verifier's ring-Pedersen parameters with their trapdoor (the safe primes and
/// `λ = log_t s`) and the proof [`PrmProof`] that `s ∈ ⟨t⟩`. Secrets are wiped on
/// drop and never printed.
pub struct RingPedersen {
    public: RingPedersenParams,
    p: Nat,
    q: Nat,
    /// `φ(N̂) = (P̂ − 1)(Q̂ − 1)`.
    phi: Nat,
    lambda: Nat,
    proof: PrmProof,
}

impl core::fmt::Debug for RingPedersen {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "RingPedersen({} bits, <secret>)", self.public.bits())
    }
}

impl Drop for RingPedersen {
    fn drop(&mut self) {
        for x in [&mut self.p, &mut self.q, &mut self.phi, &mut self.lambda] {
            bn::wipe(x);
        }
    }
}

/// Whether `p ≠ q` are both safe primes (`p` and `(p − 1)/2` prime; 64 rounds).
fn distinct_safe_primes(p: &BigNumRef, q: &BigNumRef) -> Result<bool> {
    let safe = |x: &BigNumRef| -> Result<bool> {
        let mut half = BigNum::new()?;
        half.rshift1(x)?;
        bn::with_ctx(|ctx| Ok(x.is_prime(64, ctx)? && half.is_prime(64, ctx)?))
    };
    Ok(p != q && safe(p)? && safe(q)?)
}

/// Whether `x` generates the quadratic residues modulo `P̂·Q̂` for safe primes `P̂`,
/// `Q̂`: there the residues of each prime form a group of prime order, so `x` does
/// exactly when it is a residue other than 1 modulo each (Euler's criterion).
fn generates_qr(x: &BigNumRef, p: &BigNumRef, q: &BigNumRef) -> Result<bool> {
    for m in [p, q] {
        let r = bn::reduce(x, m)?;
        if bn::is_one(&r) || bn::is_zero(&r) {
            return Ok(false);
        }
        let mut half = BigNum::new()?;
        half.rshift1(m)?;
        let mut e = bn::pow_secret(&r, &half, m)?;
        let residue = bn::is_one(&e);
        bn::wipe(&mut e);
        if !residue {
            return Ok(false);
        }
    }
    Ok(true)
}

/// `φ(N̂) = (P̂ − 1)(Q̂ − 1)`, flagged for constant-time use (it is secret).
fn phi(p: &BigNumRef, q: &BigNumRef) -> Result<Nat> {
    let mut pm1 = bn::dup(p)?;
    pm1.sub_word(1)?;
    let mut qm1 = bn::dup(q)?;
    qm1.sub_word(1)?;
    let mut phi = bn::mul(&pm1, &qm1)?;
    phi.set_const_time();
    Ok(phi)
}

impl RingPedersen {
    /// Makes fresh parameters with a `bits`-bit `N̂` (two safe primes from OpenSSL's
    /// `BN_generate_prime_ex`, drawn on two threads): seconds to a minute at 3072 bits.
    pub fn generate(bits: u32, rng: &mut impl CryptoRngCore) -> Result<Self> {
        if !(MIN_RING_BITS..=MAX_RING_BITS).contains(&bits) || !bits.is_multiple_of(2) {
            return Err(Error::KeySize(format!(
                "ring-Pedersen moduli have an even size of {MIN_RING_BITS} to {MAX_RING_BITS} bits, not {bits}"
            )));
        }
        let half = (bits / 2) as i32;
        let safe = || -> Result<Nat> {
            let mut p = BigNum::new()?;
            p.generate_prime(half, true, None, None)?;
            Ok(p)
        };
        loop {
            let (p, q) = rayon::join(safe, safe);
            let (p, q) = (p?, q?);
            if p == q || bn::mul(&p, &q)?.num_bits() as u32 != bits {
                continue;
            }
            return Self::from_safe_primes(p, q, rng);
        }
    }

    /// Parameters from two distinct safe primes (checked): `t` a random square, `λ`
    /// random, `s = t^λ`, and the proof.
    pub fn from_safe_primes(p: Nat, q: Nat, rng: &mut impl CryptoRngCore) -> Result<Self> {
        if !distinct_safe_primes(&p, &q)? {
            return Err(Error::BadKey(
                "ring-Pedersen parameters need two distinct safe primes".into(),
            ));
        }
        let n = bn::mul(&p, &q)?;
        let phi = phi(&p, &q)?;
        let tau = bn::random_unit(rng, &n)?;
        let t = bn::mul_mod(&tau, &tau, &n)?;
        // λ uniform modulo the order of QR_N̂, P̂′Q̂′ = φ(N̂)/4
        let order = bn::div(&phi, &*bn::from_u64(4)?)?;
        let mut lambda = bn::random_below(rng, &order)?;
        lambda.set_const_time();
        let s = bn::pow_secret(&t, &lambda, &n)?;
        let public = RingPedersenParams { n, s, t };
        let proof = PrmProof::prove(&public, &phi, &lambda, rng)?;
        let mut p = p;
        let mut q = q;
        p.set_const_time();
        q.set_const_time();
        Ok(RingPedersen {
            public,
            p,
            q,
            phi,
            lambda,
            proof,
        })
    }

    /// The public parameters.
    pub fn public(&self) -> &RingPedersenParams {
        &self.public
    }

    /// The proof that `s ∈ ⟨t⟩`.
    pub fn proof(&self) -> &PrmProof {
        &self.proof
    }

    /// `params || proof`: what the verifier sends the prover.
    pub fn encode_offer(&self, w: &mut Writer) {
        self.public.encode(w);
        self.proof.encode(&self.public, w);
    }

    /// The offer as a key holder receives it: the public parameters and Π^prm.
    pub fn offer(&self) -> Offer {
        Offer {
            params: self.public.clone(),
            proof: self.proof.clone(),
        }
    }

    /// Bytes of [`Self::encode_offer`] for an `N̂` of `bits`.
    pub const fn offer_len(bits: u32) -> usize {
        RingPedersenParams::encoded_len(bits) + PrmProof::encoded_len(bits)
    }

    /// The secret form for a store: `u16 len || P̂ || Q̂ || t || λ || proof`.
    pub fn to_secret_bytes(&self) -> Vec<u8> {
        let len = self.public.len();
        let mut w = Writer::new();
        w.put_u16(len as u16);
        put_fixed(&mut w, &self.p, len);
        put_fixed(&mut w, &self.q, len);
        put_fixed(&mut w, &self.public.t, len);
        put_fixed(&mut w, &self.lambda, len);
        self.proof.encode(&self.public, &mut w);
        w.into_bytes()
    }

    /// Reads [`Self::to_secret_bytes`] back (the primes are checked to be safe primes,
    /// `s` recomputed, the stored proof verified).
    pub fn from_secret_bytes(bytes: &[u8]) -> Result<Self> {
        let mut r = Reader::new(bytes);
        let len = r.u16()? as usize;
        if len == 0 || len > (MAX_RING_BITS as usize).div_ceil(8) {
            return Err(Error::Invalid("stored ring-Pedersen parameters: bad length".into()));
        }
        let p = get_fixed(&mut r, len)?;
        let q = get_fixed(&mut r, len)?;
        let t = get_fixed(&mut r, len)?;
        let mut lambda = get_fixed(&mut r, len)?;
        lambda.set_const_time();
        let n = bn::mul(&p, &q)?;
        let s = bn::pow_secret(&t, &lambda, &n)?;
        let public = RingPedersenParams { n, s, t };
        public.check()?;
        let proof = PrmProof::decode(&mut r, &public)?;
        r.finish()?;
        proof.verify(&public)?;
        if !distinct_safe_primes(&p, &q)? {
            return Err(Error::Invalid(
                "stored ring-Pedersen parameters: not two distinct safe primes".into(),
            ));
        }
        // t and s must generate the quadratic residues: with t = 1 (or of small
        // order) Π^prm still verifies and Π^fac binds nothing (review rev26b).
        if !generates_qr(&public.t, &p, &q)? || !generates_qr(&public.s, &p, &q)? {
            return Err(Error::Invalid(
                "stored ring-Pedersen parameters: t or s does not generate the quadratic residues".into(),
            ));
        }
        let phi = phi(&p, &q)?;
        Ok(RingPedersen {
            public,
            p,
            q,
            phi,
            lambda,
            proof,
        })
    }

    /// `base^e mod N̂` for a unit `base` and any signed `e`, reducing `e` mod `φ(N̂)`
    /// (constant time: the reduced exponent depends on the secret `φ`).
    fn pow_reduced(&self, base: &BigNumRef, e: &BigNumRef) -> Result<Nat> {
        let mut r = bn::reduce(e, &self.phi)?;
        r.set_const_time();
        let out = bn::pow_secret(base, &r, &self.public.n);
        bn::wipe(&mut r);
        out
    }
}

/// Π^prm: `s ∈ ⟨t⟩` modulo `N̂` (CGGMP21 Fig. 17), [`PRM_ROUNDS`] binary challenges.
#[derive(PartialEq, Eq)]
pub struct PrmProof {
    a: Vec<Nat>,
    z: Vec<Nat>,
}

impl core::fmt::Debug for PrmProof {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "PrmProof({} rounds)", self.a.len())
    }
}

impl Clone for PrmProof {
    fn clone(&self) -> Self {
        let dup = |v: &Nat| bn::dup_or_die(v);
        PrmProof {
            a: self.a.iter().map(dup).collect(),
            z: self.z.iter().map(dup).collect(),
        }
    }
}

fn prm_challenge(params: &RingPedersenParams, a: &[Nat]) -> Result<[u8; 32]> {
    let mut h = Sha256::new();
    h.update(DOMAIN_PRM);
    params.absorb(&mut h)?;
    let len = params.len();
    for v in a {
        h.update(bn::to_fixed(v, len)?);
    }
    Ok(h.finalize().into())
}

impl PrmProof {
    fn prove(
        params: &RingPedersenParams,
        phi: &BigNumRef,
        lambda: &BigNumRef,
        rng: &mut impl CryptoRngCore,
    ) -> Result<Self> {
        let mut masks = Vec::with_capacity(PRM_ROUNDS);
        for _ in 0..PRM_ROUNDS {
            let mut m = bn::random_below(rng, phi)?;
            m.set_const_time();
            masks.push(m);
        }
        let a: Vec<Nat> = masks
            .par_iter()
            .map(|m| bn::pow_secret(&params.t, m, &params.n))
            .collect::<Result<_>>()?;
        let e = prm_challenge(params, &a)?;
        let mut z = Vec::with_capacity(PRM_ROUNDS);
        for (i, mut m) in masks.into_iter().enumerate() {
            let zi = if e[i / 8] >> (i % 8) & 1 == 1 {
                bn::add_mod(&m, lambda, phi)?
            } else {
                bn::dup(&m)?
            };
            bn::wipe(&mut m);
            z.push(zi);
        }
        Ok(PrmProof { a, z })
    }

    /// What the prover checks before it proves anything against `params`: the sizes
    /// ([`RingPedersenParams::check`]) and `t^{z_i} ≡ A_i·s^{e_i} (mod N̂)` for every
    /// round.
    pub fn verify(&self, params: &RingPedersenParams) -> Result<()> {
        params.check()?;
        let bad = |why: &str| Err(Error::BadKey(format!("the peer's ring-Pedersen proof fails: {why}")));
        if self.a.len() != PRM_ROUNDS || self.z.len() != PRM_ROUNDS {
            return bad("it has the wrong number of rounds");
        }
        let n = &params.n;
        let refs: Vec<&BigNumRef> = self.a.iter().map(|v| &**v).collect();
        if !all_units(&refs, n)? {
            return bad("a commitment is not a unit");
        }
        if self.z.iter().any(|z| z.is_negative() || z.ucmp(n).is_ge()) {
            return bad("a response is not in [0, N̂)");
        }
        let e = prm_challenge(params, &self.a)?;
        (0..PRM_ROUNDS).into_par_iter().try_for_each(|i| {
            let lhs = bn::pow_public(&params.t, &self.z[i], n)?;
            let rhs = if e[i / 8] >> (i % 8) & 1 == 1 {
                bn::mul_mod(&self.a[i], &params.s, n)?
            } else {
                bn::dup(&self.a[i])?
            };
            if lhs == rhs {
                Ok(())
            } else {
                Err(Error::BadKey(format!(
                    "the peer's ring-Pedersen proof fails: round {i} is wrong (s is not in ⟨t⟩?)"
                )))
            }
        })
    }

    /// Bytes for an `N̂` of `bits`.
    pub const fn encoded_len(bits: u32) -> usize {
        2 * PRM_ROUNDS * (bits as usize).div_ceil(8)
    }

    /// `A_0 … A_127 || z_0 … z_127`, each `len(N̂)` bytes.
    pub fn encode(&self, params: &RingPedersenParams, w: &mut Writer) {
        let len = params.len();
        for v in self.a.iter().chain(&self.z) {
            put_fixed(w, v, len);
        }
    }

    /// Decodes a proof for `params`.
    pub fn decode(r: &mut Reader<'_>, params: &RingPedersenParams) -> Result<Self> {
        let len = params.len();
        let a = (0..PRM_ROUNDS).map(|_| get_fixed(r, len)).collect::<Result<_>>()?;
        let z = (0..PRM_ROUNDS).map(|_| get_fixed(r, len)).collect::<Result<_>>()?;
        Ok(PrmProof { a, z })
    }
}

/// Ring-Pedersen parameters with their proof, as a prover receives them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offer {
    /// `(N̂, s, t)`.
    pub params: RingPedersenParams,
    /// Π^prm.
    pub proof: PrmProof,
}

impl Offer {
    /// Decodes an offer ([`RingPedersen::encode_offer`]); not yet verified.
    pub fn decode(r: &mut Reader<'_>) -> Result<Self> {
        let params = RingPedersenParams::decode(r)?;
        let proof = PrmProof::decode(r, &params)?;
        Ok(Offer { params, proof })
    }

    /// `params || proof`.
    pub fn encode(&self, w: &mut Writer) {
        self.params.encode(w);
        self.proof.encode(&self.params, w);
    }

    /// [`PrmProof::verify`]; the parameters, once verified, are what a prover may prove
    /// against ([`FacProof::prove`] takes nothing else).
    pub fn verify(&self) -> Result<VerifiedOffer> {
        self.proof.verify(&self.params)?;
        Ok(VerifiedOffer {
            params: self.params.clone(),
        })
    }
}

/// Ring-Pedersen parameters whose Π^prm verified ([`Offer::verify`] is the only way to
/// make one): what [`FacProof::prove`] takes, so that a key holder cannot prove
/// against parameters it has not checked — with `s ∉ ⟨t⟩` the commitments `s^p·t^μ`
/// would reveal its primes (docs/pros.md, "What the key holder checks").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedOffer {
    params: RingPedersenParams,
}

impl VerifiedOffer {
    /// The verified `(N̂, s, t)`.
    pub fn params(&self) -> &RingPedersenParams {
        &self.params
    }
}

// ------------------------------------------------------------ Π^fac

/// Π^fac: both prime factors of a Paillier modulus `N₀` are at least
/// `2^{`[`proven_min_factor_bits`]`}`, with respect to the verifier's ring-Pedersen
/// parameters and a session context (module docs).
#[derive(PartialEq, Eq)]
pub struct FacProof {
    cp: Nat,
    cq: Nat,
    ca: Nat,
    cb: Nat,
    ct: Nat,
    z1: Nat,
    z2: Nat,
    w1: Nat,
    w2: Nat,
    v: Nat,
}

impl core::fmt::Debug for FacProof {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "FacProof(z1: {} bits)", self.z1.num_bits())
    }
}

impl Clone for FacProof {
    fn clone(&self) -> Self {
        let dup = |v: &Nat| bn::dup_or_die(v);
        FacProof {
            cp: dup(&self.cp),
            cq: dup(&self.cq),
            ca: dup(&self.ca),
            cb: dup(&self.cb),
            ct: dup(&self.ct),
            z1: dup(&self.z1),
            z2: dup(&self.z2),
            w1: dup(&self.w1),
            w2: dup(&self.w2),
            v: dup(&self.v),
        }
    }
}

/// Lengths (bytes) of the responses for a modulus of `n0_bits` and an `N̂` of
/// `nh_bits`: `z` (< 2^{ℓ+ε+H+1}), `w` (< 2^{ℓ+ε+1}·N̂), `v` (|v| < 2^{ℓ+ε+1}·N₀·N̂).
fn response_lens(n0_bits: u32, nh_bits: u32) -> (usize, usize, usize) {
    let le = CHALLENGE_BITS + SLACK_BITS;
    let z = (le + n0_bits.div_ceil(2) + 1).div_ceil(8) as usize;
    let w = (le + 1 + nh_bits).div_ceil(8) as usize;
    let v = (le + 1 + n0_bits + nh_bits).div_ceil(8) as usize;
    (z, w, v)
}

#[allow(clippy::too_many_arguments)]
fn fac_challenge(
    context: &[u8; 32],
    n0: &PublicKey,
    rp: &RingPedersenParams,
    cp: &BigNumRef,
    cq: &BigNumRef,
    ca: &BigNumRef,
    cb: &BigNumRef,
    ct: &BigNumRef,
) -> Result<Nat> {
    let mut h = Sha256::new();
    h.update(DOMAIN_FAC);
    h.update(context);
    let l0 = n0.modulus_len();
    h.update((l0 as u32).to_be_bytes());
    h.update(bn::to_fixed(n0.n(), l0)?);
    rp.absorb(&mut h)?;
    let len = rp.len();
    for v in [cp, cq, ca, cb, ct] {
        h.update(bn::to_fixed(v, len)?);
    }
    let d: [u8; 32] = h.finalize().into();
    Ok(BigNum::from_slice(&d[..(CHALLENGE_BITS / 8) as usize])?)
}

impl FacProof {
    /// Proves that both factors of `key`'s modulus are large, against the verifier's
    /// parameters `rp` in the session `context`. `rp` is a [`VerifiedOffer`]: parameters
    /// whose Π^prm has not been verified cannot be proven against —
    ///
    /// ```compile_fail,E0308
    /// # use tacit_pros::facproof::{FacProof, RingPedersenParams};
    /// # use tacit_pros::paillier::PrivateKey;
    /// fn prove(key: &PrivateKey, unverified: &RingPedersenParams, rng: &mut rand_chacha::ChaCha20Rng) {
    ///     let _ = FacProof::prove(key, unverified, &[0; 32], rng);
    /// }
    /// ```
    ///
    /// — only `offer.verify()?` gives what it takes.
    pub fn prove(
        key: &PrivateKey,
        rp: &VerifiedOffer,
        context: &[u8; 32],
        rng: &mut impl CryptoRngCore,
    ) -> Result<Self> {
        let (p, q) = key.primes();
        Self::prove_with(key.public(), p, q, rp, context, rng)
    }

    /// The same from the primes (what a deviating prover with unbalanced primes
    /// would run; tests).
    pub fn prove_with(
        n0: &PublicKey,
        p: &BigNumRef,
        q: &BigNumRef,
        rp: &VerifiedOffer,
        context: &[u8; 32],
        rng: &mut impl CryptoRngCore,
    ) -> Result<Self> {
        let rp = &rp.params;
        let nh = &rp.n;
        let le = CHALLENGE_BITS + SLACK_BITS;
        let h = n0.bits().div_ceil(2);
        let mut draw = |bound: Nat| -> Result<Nat> {
            let mut x = bn::random_below(rng, &bound)?;
            x.set_const_time();
            Ok(x)
        };
        let alpha = draw(pow2(le + h)?)?;
        let beta = draw(pow2(le + h)?)?;
        let mu = draw(shl(nh, CHALLENGE_BITS)?)?;
        let nu = draw(shl(nh, CHALLENGE_BITS)?)?;
        let x = draw(shl(nh, le)?)?;
        let y = draw(shl(nh, le)?)?;
        let r = draw(shl(&*bn::mul(n0.n(), nh)?, le)?)?;
        // commitments: s^a·t^b, the exponents secret and non-negative
        let commit = |a: &BigNumRef, b: &BigNumRef| -> Result<Nat> {
            let (sa, tb) = rayon::join(|| bn::pow_secret(&rp.s, a, nh), || bn::pow_secret(&rp.t, b, nh));
            bn::mul_mod(&*sa?, &*tb?, nh)
        };
        let (cp, cq) = rayon::join(|| commit(p, &mu), || commit(q, &nu));
        let (cp, cq) = (cp?, cq?);
        let (ca, cb) = rayon::join(|| commit(&alpha, &x), || commit(&beta, &y));
        let (ca, cb) = (ca?, cb?);
        let (qa, tr) = rayon::join(|| bn::pow_secret(&cq, &alpha, nh), || bn::pow_secret(&rp.t, &r, nh));
        let ct = bn::mul_mod(&*qa?, &*tr?, nh)?;
        let e = fac_challenge(context, n0, rp, &cp, &cq, &ca, &cb, &ct)?;
        let z1 = bn::add(&alpha, &*bn::mul(&e, p)?)?;
        let z2 = bn::add(&beta, &*bn::mul(&e, q)?)?;
        let w1 = bn::add(&x, &*bn::mul(&e, &mu)?)?;
        let w2 = bn::add(&y, &*bn::mul(&e, &nu)?)?;
        let v = bn::sub(&r, &*bn::mul(&*bn::mul(&e, &nu)?, p)?)?;
        for mut m in [alpha, beta, mu, nu, x, y, r] {
            bn::wipe(&mut m);
        }
        Ok(FacProof {
            cp,
            cq,
            ca,
            cb,
            ct,
            z1,
            z2,
            w1,
            w2,
            v,
        })
    }

    /// Verifies the proof for the peer's key `n0` against our own parameters `rp` in
    /// the session `context`. Exponents are reduced modulo `φ(N̂)`, which only the
    /// verifier knows.
    pub fn verify(&self, n0: &PublicKey, rp: &RingPedersen, context: &[u8; 32]) -> Result<()> {
        let bad = |why: &str| Err(Error::BadKey(format!("the no-small-factor proof fails: {why}")));
        let params = &rp.public;
        let nh = &params.n;
        if !all_units(&[&self.cp, &self.cq, &self.ca, &self.cb, &self.ct], nh)? {
            return bad("a commitment is not a unit modulo our ring-Pedersen modulus");
        }
        let zmax = pow2(CHALLENGE_BITS + SLACK_BITS + n0.bits().div_ceil(2) + 1)?;
        for z in [&self.z1, &self.z2] {
            if z.is_negative() || z.ucmp(&zmax).is_ge() {
                return bad("a factor is out of range (one of the primes is too small)");
            }
        }
        let (_, wl, vl) = response_lens(n0.bits(), params.bits());
        for (v, l) in [(&self.w1, wl), (&self.w2, wl), (&self.v, vl)] {
            if v.num_bits() as usize > 8 * l {
                return bad("a response is out of range");
            }
        }
        let e = fac_challenge(context, n0, params, &self.cp, &self.cq, &self.ca, &self.cb, &self.ct)?;
        // each equation is b^x·t^y ≡ a·c^f (mod N̂), exponents reduced mod φ(N̂)
        let ne = bn::mul(n0.n(), &e)?;
        type Equation<'a> = (&'a str, [&'a BigNumRef; 6]);
        let equations: [Equation<'_>; 3] = [
            (
                "s^z1·t^w1 ≠ A·P^e",
                [&params.s, &self.z1, &self.w1, &self.ca, &self.cp, &e],
            ),
            (
                "s^z2·t^w2 ≠ B·Q^e",
                [&params.s, &self.z2, &self.w2, &self.cb, &self.cq, &e],
            ),
            // R^e = s^{N₀·e}
            (
                "Q^z1·t^v ≠ T·R^e",
                [&self.cq, &self.z1, &self.v, &self.ct, &params.s, &ne],
            ),
        ];
        let holds = |[b, x, y, a, c, f]: [&BigNumRef; 6]| -> Result<bool> {
            let lhs = bn::mul_mod(&*rp.pow_reduced(b, x)?, &*rp.pow_reduced(&params.t, y)?, nh)?;
            Ok(lhs == bn::mul_mod(a, &*rp.pow_reduced(c, f)?, nh)?)
        };
        let results: Vec<Result<bool>> = equations.par_iter().map(|(_, v)| holds(*v)).collect();
        for ((why, _), ok) in equations.iter().zip(results) {
            if !ok? {
                return bad(why);
            }
        }
        Ok(())
    }

    /// Bytes of a proof for a modulus of `n0_bits` against an `N̂` of `nh_bits`.
    pub fn encoded_len(n0_bits: u32, nh_bits: u32) -> usize {
        let (z, w, v) = response_lens(n0_bits, nh_bits);
        5 * (nh_bits as usize).div_ceil(8) + 2 * z + 2 * w + 1 + v
    }

    /// `P || Q || A || B || T` (each `len(N̂)` bytes) `|| z₁ || z₂ || w₁ || w₂`
    /// (fixed lengths) `|| u8 sign || v`.
    pub fn encode(&self, n0: &PublicKey, rp: &RingPedersenParams, w: &mut Writer) {
        let len = rp.len();
        for c in [&self.cp, &self.cq, &self.ca, &self.cb, &self.ct] {
            put_fixed(w, c, len);
        }
        let (zl, wl, vl) = response_lens(n0.bits(), rp.bits());
        put_fixed(w, &self.z1, zl);
        put_fixed(w, &self.z2, zl);
        put_fixed(w, &self.w1, wl);
        put_fixed(w, &self.w2, wl);
        put_signed(w, &self.v, vl);
    }

    /// Decodes a proof for `n0` against `rp`.
    pub fn decode(r: &mut Reader<'_>, n0: &PublicKey, rp: &RingPedersenParams) -> Result<Self> {
        let len = rp.len();
        let (zl, wl, vl) = response_lens(n0.bits(), rp.bits());
        Ok(FacProof {
            cp: get_fixed(r, len)?,
            cq: get_fixed(r, len)?,
            ca: get_fixed(r, len)?,
            cb: get_fixed(r, len)?,
            ct: get_fixed(r, len)?,
            z1: get_fixed(r, zl)?,
            z2: get_fixed(r, zl)?,
            w1: get_fixed(r, wl)?,
            w2: get_fixed(r, wl)?,
            v: get_signed(r, vl, "no-small-factor proof")?,
        })
    }
}

/// The context a Π^fac is bound to: `SHA-256(domain ‖ channel binding ‖ the
/// verifier's nonce)`.
pub fn context(domain: &[u8], binding: &[u8; 32], nonce: &[u8; 32]) -> [u8; 32] {
    crate::element::session_id(domain, binding, nonce)
}

/// Ring-Pedersen parameters for tests: a 1024-bit `N̂` of two fixed 512-bit safe
/// primes (made with `openssl prime -generate -safe -bits 512` for this crate; their
/// factors are public, so they give a verifier no soundness), `t` and `λ` from a
/// fixed seed. Made once per process.
#[cfg(any(test, feature = "testing"))]
pub fn test_ring_pedersen() -> std::sync::Arc<RingPedersen> {
    use rand_core::SeedableRng;
    static RP: std::sync::OnceLock<std::sync::Arc<RingPedersen>> = std::sync::OnceLock::new();
    RP.get_or_init(|| {
        let dec = |s: &str| match BigNum::from_dec_str(s) {
            Ok(v) => v,
            Err(e) => panic!("fixture: {e}"),
        };
        let p = dec("10994217430540898447084257960864340158453224670164664376336819559366414367522178449437805689478907083875943140737044766268857480360515266371416645338482207");
        let q = dec("10444365923567918074514704686655954986697689194327340810249761577271598057567177079790828390906146631126198346050414234088026327964142508285513880908494767");
        match RingPedersen::from_safe_primes(p, q, &mut rand_chacha::ChaCha20Rng::seed_from_u64(26)) {
            Ok(rp) => std::sync::Arc::new(rp),
            Err(e) => panic!("fixture: {e}"),
        }
    })
    .clone()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;

    fn rng(s: u64) -> ChaCha20Rng {
        ChaCha20Rng::seed_from_u64(s)
    }

    fn roundtrip(p: &FacProof, n0: &PublicKey, rp: &RingPedersenParams) -> FacProof {
        let mut w = Writer::new();
        p.encode(n0, rp, &mut w);
        let b = w.into_bytes();
        assert_eq!(b.len(), FacProof::encoded_len(n0.bits(), rp.bits()));
        let mut r = Reader::new(&b);
        let back = FacProof::decode(&mut r, n0, rp).unwrap();
        r.finish().unwrap();
        back
    }

    #[test]
    fn honest_proofs_verify_and_roundtrip() {
        let rp = test_ring_pedersen();
        rp.proof().verify(rp.public()).unwrap();
        let back = RingPedersen::from_secret_bytes(&rp.to_secret_bytes()).unwrap();
        assert_eq!(back.public(), rp.public());
        let mut w = Writer::new();
        rp.encode_offer(&mut w);
        let b = w.into_bytes();
        assert_eq!(b.len(), RingPedersen::offer_len(rp.public().bits()));
        let mut r = Reader::new(&b);
        let offer = Offer::decode(&mut r).unwrap();
        r.finish().unwrap();
        offer.verify().unwrap();
        for bits in [256, 1024] {
            let k = PrivateKey::generate(bits).unwrap();
            let ctx = [7u8; 32];
            let p = FacProof::prove(&k, &rp.offer().verify().unwrap(), &ctx, &mut rng(1)).unwrap();
            p.verify(k.public(), &rp, &ctx).unwrap();
            let back = roundtrip(&p, k.public(), rp.public());
            assert_eq!(back, p);
            back.verify(k.public(), &rp, &ctx).unwrap();
        }
    }

    #[test]
    fn a_changed_proof_or_context_is_refused() {
        let rp = test_ring_pedersen();
        let k = PrivateKey::generate(512).unwrap();
        let ctx = [1u8; 32];
        let p = FacProof::prove(&k, &rp.offer().verify().unwrap(), &ctx, &mut rng(2)).unwrap();
        assert!(p.verify(k.public(), &rp, &[2u8; 32]).is_err());
        let other = PrivateKey::generate(512).unwrap();
        assert!(p.verify(other.public(), &rp, &ctx).is_err());
        let one = bn::from_u64(1).unwrap();
        let mut bad = p.clone();
        bad.z1 = bn::add(&bad.z1, &one).unwrap();
        assert!(bad.verify(k.public(), &rp, &ctx).is_err());
        let mut bad = p.clone();
        bad.v = bn::add(&bad.v, &one).unwrap();
        assert!(bad.verify(k.public(), &rp, &ctx).is_err());
        let mut bad = p.clone();
        bad.ct = bn::from_u64(0).unwrap();
        assert!(bad.verify(k.public(), &rp, &ctx).is_err());
    }

    /// Item 2 of the rev26 follow-up: the only path to a proof is an offer as it
    /// arrives, decoded and verified ([`Offer::verify`] gives the [`VerifiedOffer`]
    /// that [`FacProof::prove`] takes; the `compile_fail` example on `prove` shows
    /// that bare parameters do not type-check). An offer with `s ∉ ⟨t⟩` gives none.
    #[test]
    fn a_prover_proves_only_against_a_verified_offer() {
        let rp = test_ring_pedersen();
        let k = PrivateKey::generate(1024).unwrap();
        let ctx = [3u8; 32];
        let mut w = Writer::new();
        rp.encode_offer(&mut w);
        let bytes = w.into_bytes();
        let mut r = Reader::new(&bytes);
        let offer = Offer::decode(&mut r).unwrap();
        r.finish().unwrap();
        let verified = offer.verify().unwrap();
        assert_eq!(verified.params(), rp.public());
        let p = FacProof::prove(&k, &verified, &ctx, &mut rng(3)).unwrap();
        p.verify(k.public(), &rp, &ctx).unwrap();
        // t of order 2 and s = 4: s ∉ ⟨t⟩, and P = ±4^p would confirm guesses of p
        let nh = bn::dup(rp.public().n()).unwrap();
        let mut minus_one = bn::dup(&nh).unwrap();
        minus_one.sub_word(1).unwrap();
        let bad = Offer {
            params: RingPedersenParams::from_parts(nh, bn::from_u64(4).unwrap(), minus_one),
            proof: rp.proof().clone(),
        };
        assert!(bad.verify().is_err());
    }

    #[test]
    fn a_tampered_prm_proof_is_refused() {
        let rp = test_ring_pedersen();
        let mut bad = rp.proof().clone();
        bad.z[3] = bn::add(&bad.z[3], &bn::from_u64(1).unwrap()).unwrap();
        assert!(bad.verify(rp.public()).is_err());
        let mut bad = rp.proof().clone();
        bad.a.pop();
        assert!(bad.verify(rp.public()).is_err());
        // small or even moduli are refused before any exponentiation
        let small = RingPedersenParams::from_parts(
            bn::from_u64(1_000_003 * 1_000_033).unwrap(),
            bn::from_u64(4).unwrap(),
            bn::from_u64(9).unwrap(),
        );
        assert!(small.check().unwrap_err().to_string().contains("bits"));
    }

    #[test]
    fn proven_bounds() {
        assert_eq!(proven_min_factor_bits(3072), 1150);
        assert_eq!(proven_min_factor_bits(2048), 638);
        assert!(proven_min_factor_bits(256) < 0);
        assert_eq!(MIN_PEER_KEY_BITS, 1024);
        assert_eq!(proven_min_factor_bits(MIN_PEER_KEY_BITS), CHALLENGE_BITS as i64 - 2);
        assert!(proven_min_factor_bits(772) <= 0);
    }
}
