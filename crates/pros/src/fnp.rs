//! FNP private set intersection (Freedman, Nissim, Pinkas, EUROCRYPT 2004; PROS §3.3,
//! §4.5) with FNP's balanced-allocation bucketing, and private matching (PM) of single
//! elements (§4.5, Fig. 3).
//!
//! ```text
//! Chooser C (key holder)                                   Sender S
//!   places its elements in B bins (two choices, greedy),
//!   pads each bin to M roots with dummies,
//!   p_k(x) = ∏_{c ∈ bin k} (x − c)   (monic, degree M)
//!   Query = pk, proof that pk is a Paillier–Blum
//!           modulus, seed, E(α_{k,i}) for k < B, i < M  ───▶  verifies the proof first;
//!                                                          nonce, sid = H(binding ‖ nonce);
//!                                                          for each y ∈ X_S (padded to
//!                                                          the bound with dummies), for
//!                                                          both bins k ∈ {h₁(y), h₂(y)}:
//!                                                            E(r·p_k(y) + h(sid, k, y)),
//!                                                            r fresh
//!                                                  ◀───   Answer = nonce, the 2·n results,
//!                                                          shuffled
//!   decrypts; a value equal to h(sid, k, c) for one of its elements c (in bin k) means
//!   c is in the intersection
//! ```
//!
//! The payload is the **match tag** `h` ([`crate::element::match_tag`]), not FNP's
//! `y`: with one root per polynomial (PM, or a bin of one) the sender holds `E(−c)`
//! and could return its inverse `E(c)`, a false "match" on an element it does not
//! hold; `E(h(c))` it cannot make without knowing `c`.
//!
//! Without bucketing (`B = 1`, `M = m`) this is the protocol of §3.3 with `O(m·n)`
//! exponentiations for S; with bucketing S does `O(n·M)` with `M = O(log log m)`.
//! The leading coefficient of a monic polynomial is 1 and is not sent. All sizes
//! depend only on the public bounds `(m, n)`: C learns the intersection and nothing
//! else; S learns nothing (semantic security of Paillier).
//!
//! S re-randomises every result with a fresh `ρⁿ` so that C, who made the
//! coefficients, cannot relate the result's randomness to its own.

use crate::bn::{self, Nat};
use crate::element::{ElementEncoding, match_tag};
use crate::facproof::{self, FacProof, Offer, RingPedersen, RingPedersenParams};
use crate::messages::KeyFloor;
use crate::paillier::{Ciphertext, ModulusProof, PrivateKey, PublicKey, RnPool};
use crate::poly::{Multiplier, Poly, horner_encrypted};
use crate::{Error, Result};
use openssl::bn::BigNumRef;
use rand_chacha::ChaCha20Rng;
use rand_core::{CryptoRngCore, SeedableRng};
use rayon::prelude::*;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::Arc;
use tacit_wire::{Reader, Writer};

/// Wire tag of the chooser's query.
pub const TAG_QUERY: u16 = 0x0410;
/// Wire tag of the sender's answer.
pub const TAG_ANSWER: u16 = 0x0411;
/// Wire tag of the sender's setup (its first message: nonce, ring-Pedersen
/// parameters and their proof).
pub const TAG_SETUP: u16 = 0x0412;
/// Domain of the context the chooser's Π^fac is bound to.
pub const FACTOR_PROOF_DOMAIN: &[u8] = b"tacit-pros/v1/fnp-factor-proof\0";
/// Bytes of the largest setup ([`facproof::MAX_RING_BITS`]).
pub const SETUP_LEN: usize = 3 + 32 + RingPedersen::offer_len(facproof::MAX_RING_BITS);

/// What the sender keeps of the setup it sent for one session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opening {
    /// The sender's fresh nonce: the chooser's Π^fac is bound to it.
    pub nonce: [u8; 32],
}

/// The setup as the chooser reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setup {
    /// The sender's nonce.
    pub nonce: [u8; 32],
    /// The sender's ring-Pedersen parameters with Π^prm (not yet verified).
    pub offer: Offer,
}

impl Setup {
    /// Decodes `01 0412 || nonce (32) || N̂, s, t || Π^prm` (or surfaces a refusal).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        crate::messages::check_refusal(bytes)?;
        let mut r = Reader::new(bytes);
        r.envelope(TAG_SETUP, "FNP setup")?;
        let nonce = r.array::<32>("session nonce")?;
        let offer = Offer::decode(&mut r)?;
        r.finish()?;
        Ok(Setup { nonce, offer })
    }

    /// The encoding.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.put_envelope(TAG_SETUP);
        w.put_fixed(&self.nonce);
        self.offer.encode(&mut w);
        w.into_bytes()
    }
}

/// Largest bound on either set.
pub const MAX_SET_BOUND: u32 = 100_000;

/// Public parameters of one FNP run; both parties must run with the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PsiParams {
    /// Balanced-allocation bucketing on (the default) or one polynomial of degree `m`.
    pub bucketing: bool,
    /// How elements become integers.
    pub encoding: ElementEncoding,
    /// The chooser's set bound `m`.
    pub chooser_bound: u32,
    /// The sender's set bound `n`.
    pub sender_bound: u32,
    /// How the chooser multiplies polynomials (local choice; not sent).
    pub multiplier: Multiplier,
}

impl PsiParams {
    /// Bucketed, hashed elements, with the given bounds.
    pub fn new(chooser_bound: u32, sender_bound: u32) -> Self {
        PsiParams {
            bucketing: true,
            encoding: ElementEncoding::Hash127,
            chooser_bound,
            sender_bound,
            multiplier: Multiplier::Karatsuba,
        }
    }

    /// The parameters both sides must agree on, in words ("FNP with bucketing,
    /// hash encoding, bounds m = 10, n = 1000").
    pub fn describe(&self) -> String {
        format!(
            "FNP {}, {} encoding, bounds m = {}, n = {}",
            if self.bucketing {
                "with bucketing"
            } else {
                "without bucketing"
            },
            match self.encoding {
                ElementEncoding::Hash127 => "hash",
                ElementEncoding::Integer32 => "int32",
            },
            self.chooser_bound,
            self.sender_bound
        )
    }

    fn check(&self) -> Result<()> {
        for (what, b) in [
            ("chooser bound", self.chooser_bound),
            ("sender bound", self.sender_bound),
        ] {
            if b == 0 || b > MAX_SET_BOUND {
                return Err(Error::Invalid(format!("{what} {b} is not in 1..={MAX_SET_BOUND}")));
            }
        }
        Ok(())
    }

    /// Number of bins `B`: `⌈m / ln ln m⌉` (FNP §5.1), one bin below 16 elements or
    /// without bucketing.
    pub fn bins(&self) -> u32 {
        let m = self.chooser_bound as f64;
        if !self.bucketing || self.chooser_bound < 16 {
            return 1;
        }
        (m / m.ln().ln()).ceil() as u32
    }

    /// Roots per bin `M`: `m` with one bin, else `⌈m/B⌉ + ⌈log₂ ln B⌉ + 2`, the
    /// two-choice maximum load (Azar et al.) with a margin; the chooser draws a new
    /// hash seed in the rare case its set overflows a bin.
    pub fn load(&self) -> u32 {
        let b = self.bins();
        if b == 1 {
            return self.chooser_bound;
        }
        let avg = self.chooser_bound.div_ceil(b);
        avg + ((b as f64).ln().log2().ceil().max(0.0) as u32) + 2
    }

    /// Root slots of the query, `B·M`: every one can hold a guess of a deviating
    /// chooser (the sender cannot tell dummies from elements).
    pub fn root_slots(&self) -> usize {
        self.bins() as usize * self.load() as usize
    }

    /// The most candidate elements a deviating chooser can test against the sender's
    /// set in one session: two per root slot, `2·B·M` — one per prime factor of its
    /// (proven Paillier–Blum) modulus, because the chooser knows the factors and can
    /// put a different root modulo each (`docs/pros.md`, test
    /// `a_deviating_chooser_tests_at_most_two_per_root_slot`). An honest chooser
    /// tests its `m` elements.
    pub fn chooser_tests(&self) -> usize {
        2 * self.root_slots()
    }

    /// Answers the sender returns: `2n` with bucketing (both candidate bins), else `n`.
    pub fn answers(&self) -> usize {
        self.sender_bound as usize * if self.bins() > 1 { 2 } else { 1 }
    }

    fn encode(&self, w: &mut Writer) {
        w.put_bool(self.bucketing);
        w.put_u8(self.encoding.code());
        w.put_u32(self.chooser_bound);
        w.put_u32(self.sender_bound);
    }

    fn decode(r: &mut Reader<'_>) -> Result<Self> {
        let bucketing = r.bool("bucketing")?;
        let encoding = ElementEncoding::from_code(r.u8()?)?;
        let p = PsiParams {
            bucketing,
            encoding,
            chooser_bound: r.u32()?,
            sender_bound: r.u32()?,
            multiplier: Multiplier::Karatsuba,
        };
        p.check()?;
        Ok(p)
    }

    fn same_as(&self, other: &PsiParams) -> bool {
        self.bucketing == other.bucketing
            && self.encoding == other.encoding
            && self.chooser_bound == other.chooser_bound
            && self.sender_bound == other.sender_bound
    }

    /// The largest query under a `bits`-bit key (with the modulus proof and a
    /// no-small-factor proof against the largest ring-Pedersen modulus).
    pub fn query_len(&self, bits: u32) -> usize {
        self.query_len_for(bits, facproof::MAX_RING_BITS)
    }

    /// Size in bytes of a query under a `bits`-bit key against a sender whose
    /// ring-Pedersen modulus has `ring_bits`.
    pub fn query_len_for(&self, bits: u32, ring_bits: u32) -> usize {
        let ct = (2 * bits as usize).div_ceil(8);
        let nl = (bits as usize).div_ceil(8);
        3 + 10
            + 2
            + nl
            + ModulusProof::encoded_len(nl)
            + FacProof::encoded_len(bits, ring_bits)
            + 32
            + 8
            + self.root_slots() * ct
    }

    /// Size in bytes of an answer under a `bits`-bit key.
    pub fn answer_len(&self, bits: u32) -> usize {
        3 + 32 + 4 + self.answers() * (2 * bits as usize).div_ceil(8)
    }
}

/// The two candidate bins of a value under a seed.
pub fn bins_of(seed: &[u8; 32], v: &BigNumRef, bins: u32) -> Result<(u32, u32)> {
    let vb = crate::element::value_bytes(v)?;
    let h = |which: u8| {
        let mut d = Sha256::new();
        d.update(b"tacit-pros/v1/bin\0");
        d.update(seed);
        d.update([which]);
        d.update(vb);
        let out: [u8; 32] = d.finalize().into();
        let mut x = [0u8; 8];
        x.copy_from_slice(&out[..8]);
        (u64::from_be_bytes(x) % bins as u64) as u32
    };
    Ok((h(1), h(2)))
}

/// Greedy two-choice allocation of values to bins; `None` if a bin would exceed
/// `load`.
pub fn allocate(seed: &[u8; 32], values: &[Nat], bins: u32, load: u32) -> Result<Option<Vec<Vec<usize>>>> {
    let mut out: Vec<Vec<usize>> = vec![Vec::new(); bins as usize];
    for (i, v) in values.iter().enumerate() {
        let (a, b) = bins_of(seed, v, bins)?;
        let k = if out[b as usize].len() < out[a as usize].len() {
            b
        } else {
            a
        };
        if out[k as usize].len() >= load as usize {
            return Ok(None);
        }
        out[k as usize].push(i);
    }
    Ok(Some(out))
}

/// Domain of the FNP session identifier.
pub const SESSION_DOMAIN: &[u8] = b"tacit-pros/v1/fnp-session\0";
/// Domain of FNP's match tags.
pub const MATCH_DOMAIN: &[u8] = b"tacit-pros/v1/fnp-match\0";

/// The chooser's first (and only) message.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    /// The run's parameters.
    pub params: PsiParams,
    /// The chooser's public key.
    pub key: PublicKey,
    /// The proof that the key's modulus is a Paillier–Blum modulus.
    pub proof: Arc<ModulusProof>,
    /// The proof that both its factors are large (Π^fac), against `ring`.
    pub fac: Arc<FacProof>,
    /// The sender's ring-Pedersen parameters the proof is made against (not sent:
    /// the sender has them).
    pub ring: RingPedersenParams,
    /// The seed of the bin hashes.
    pub seed: [u8; 32],
    /// `B·M` encrypted coefficients, bin by bin, `α₀ … α_{M−1}` each.
    pub coeffs: Vec<Ciphertext>,
}

impl Query {
    /// `01 0410 || params || key || modulus proof || no-small-factor proof || seed ||
    /// u32 B || u32 M || B·M × ciphertext`.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::with_capacity(self.params.query_len_for(self.key.bits(), self.ring.bits()));
        w.put_envelope(TAG_QUERY);
        self.params.encode(&mut w);
        self.key.encode(&mut w);
        self.proof.encode(&self.key, &mut w);
        self.fac.encode(&self.key, &self.ring, &mut w);
        w.put_fixed(&self.seed);
        w.put_u32(self.params.bins());
        w.put_u32(self.params.load());
        for c in &self.coeffs {
            self.key.encode_ciphertext(c, &mut w);
        }
        w.into_bytes()
    }

    /// Decodes a query for a sender running `ours` with keys of `min_bits..=max_bits`
    /// and ring-Pedersen parameters `ring` (the proofs are decoded, not verified:
    /// [`Sender::respond_typed`] verifies them, and refuses keys below
    /// [`facproof::MIN_PEER_KEY_BITS`] whatever `min_bits` is, before any other work).
    pub fn from_bytes(
        bytes: &[u8],
        ours: &PsiParams,
        min_bits: u32,
        max_bits: u32,
        ring: &RingPedersenParams,
    ) -> Result<Self> {
        Self::decode(bytes, ours, ring, |key| {
            crate::messages::check_key_range(key, min_bits.max(ours.encoding.min_key_bits()), max_bits)
        })
    }

    /// [`Self::from_bytes`] with the key's size checked by `check_key` as soon as it is
    /// read (before the proofs are decoded).
    fn decode(
        bytes: &[u8],
        ours: &PsiParams,
        ring: &RingPedersenParams,
        check_key: impl FnOnce(&PublicKey) -> Result<()>,
    ) -> Result<Self> {
        crate::messages::check_refusal(bytes)?;
        let mut r = Reader::new(bytes);
        r.envelope(TAG_QUERY, "FNP query")?;
        let params = PsiParams::decode(&mut r)?;
        if !params.same_as(ours) {
            return Err(Error::Mismatch(tacit_wire::Mismatch::new(
                "parameter",
                ours.describe(),
                params.describe(),
            )));
        }
        let key = PublicKey::decode(&mut r)?;
        check_key(&key)?;
        let proof = Arc::new(ModulusProof::decode(&mut r, &key)?);
        let fac = Arc::new(FacProof::decode(&mut r, &key, ring)?);
        let seed = r.array::<32>("bin seed")?;
        let (b, m) = (r.u32()?, r.u32()?);
        if b != params.bins() || m != params.load() {
            return Err(Error::ParamsMismatch(format!(
                "the chooser uses {b} bins of {m} roots; the parameters give {} of {}",
                params.bins(),
                params.load()
            )));
        }
        let count = b as usize * m as usize;
        let coeffs = key.decode_ciphertexts(&mut r, count)?;
        r.finish()?;
        Ok(Query {
            params,
            key,
            proof,
            fac,
            ring: ring.clone(),
            seed,
            coeffs,
        })
    }
}

/// The sender's answer: its nonce and the evaluations, shuffled.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// The sender's fresh nonce (part of the session identifier).
    pub nonce: [u8; 32],
    /// `E(r·p(y) + h(sid, k, y))` for every evaluation.
    pub values: Vec<Ciphertext>,
}

impl Answer {
    /// `01 0411 || nonce (32) || u32 count || count × ciphertext`.
    pub fn to_bytes(&self, key: &PublicKey) -> Vec<u8> {
        let mut w = Writer::with_capacity(39 + self.values.len() * key.ciphertext_len());
        w.put_envelope(TAG_ANSWER);
        w.put_fixed(&self.nonce);
        w.put_count(self.values.len());
        for c in &self.values {
            key.encode_ciphertext(c, &mut w);
        }
        w.into_bytes()
    }

    /// Decodes an answer to a query of `params` under `key`.
    pub fn from_bytes(bytes: &[u8], params: &PsiParams, key: &PublicKey) -> Result<Self> {
        crate::messages::check_refusal(bytes)?;
        let mut r = Reader::new(bytes);
        r.envelope(TAG_ANSWER, "FNP answer")?;
        let nonce = r.array::<32>("session nonce")?;
        let count = r.count("FNP answers", params.answers(), key.ciphertext_len())?;
        if count != params.answers() {
            return Err(Error::WrongCount {
                what: "evaluations",
                count,
                expected: params.answers(),
            });
        }
        let values = key.decode_ciphertexts(&mut r, count)?;
        r.finish()?;
        Ok(Answer { nonce, values })
    }
}

/// `E(r·p(y) + payload)` with `r` a fresh unit, re-randomised by a fresh `ρⁿ` (from
/// `pool` when it has one): the sender's oblivious evaluation (§3.3, with the payload
/// a match tag instead of `y`; see [`crate::element::match_tag`]). Costs the Horner
/// exponentiations, one full-size exponentiation by `r` mod `n²`, one `ρⁿ` and two
/// multiplications: the payload adds nothing to FNP's cost.
pub fn evaluate(
    pk: &PublicKey,
    enc: &[Ciphertext],
    y: &BigNumRef,
    payload: &BigNumRef,
    pool: &RnPool,
    rng: &mut impl CryptoRngCore,
) -> Result<Ciphertext> {
    let py = horner_encrypted(pk, enc, y)?;
    let mut r = bn::random_unit(rng, pk.n())?;
    let masked = bn::pow_secret(&py.0, &r, pk.n_squared());
    bn::wipe(&mut r);
    let rn = pool.take(pk, rng)?;
    // E(payload) = g^payload·ρⁿ with g^payload = 1 + payload·n
    let ep = bn::mul_mod(&*pk.g_pow(&*bn::reduce(payload, pk.n())?)?, &rn, pk.n_squared())?;
    Ok(Ciphertext(bn::mul_mod(&*masked?, &ep, pk.n_squared())?))
}

/// Seeds for `count` parallel workers.
pub(crate) fn seeds(rng: &mut impl CryptoRngCore, count: usize) -> Vec<[u8; 32]> {
    (0..count)
        .map(|_| {
            let mut s = [0u8; 32];
            rng.fill_bytes(&mut s);
            s
        })
        .collect()
}

/// Fisher–Yates shuffle with the caller's RNG.
pub(crate) fn shuffle<T>(v: &mut [T], rng: &mut impl CryptoRngCore) {
    for i in (1..v.len()).rev() {
        let j = uniform(rng, i as u64 + 1) as usize;
        v.swap(i, j);
    }
}

fn uniform(rng: &mut impl CryptoRngCore, n: u64) -> u64 {
    let zone = u64::MAX - (u64::MAX % n);
    loop {
        let x = rng.next_u64();
        if x < zone {
            return x % n;
        }
    }
}

/// Removes duplicates, keeping the first occurrence.
pub(crate) fn dedupe<T: AsRef<[u8]>>(items: &[T]) -> Vec<Vec<u8>> {
    let mut seen = std::collections::HashSet::new();
    items
        .iter()
        .filter(|x| seen.insert(x.as_ref().to_vec()))
        .map(|x| x.as_ref().to_vec())
        .collect()
}

/// The chooser before it sends its query.
#[derive(Debug)]
pub struct Chooser;

/// The chooser waiting for the sender's answer.
#[derive(Debug)]
pub struct ChooserAwaitingAnswer {
    params: PsiParams,
    key: PrivateKey,
    /// Each real element: its value, the bin it was placed in, the element.
    members: Vec<(Nat, u32, Vec<u8>)>,
}

impl Chooser {
    /// Handles the sender's setup and builds the query: verifies the sender's
    /// ring-Pedersen parameters (Π^prm) first, proves our key's factors large against
    /// them (Π^fac, bound to `binding` and the sender's nonce), then builds and
    /// encrypts the bin polynomials of `set` (deduplicated; at most
    /// `params.chooser_bound` elements) under `key`, taking `rⁿ` values from `pool`.
    /// `binding` is the TLS channel binding ([`crate::NO_CHANNEL_BINDING`] outside TLS).
    #[allow(clippy::too_many_arguments)]
    pub fn start<T: AsRef<[u8]>>(
        params: &PsiParams,
        key: PrivateKey,
        set: &[T],
        setup: &[u8],
        binding: &[u8; 32],
        pool: &RnPool,
        rng: &mut impl CryptoRngCore,
    ) -> Result<(ChooserAwaitingAnswer, Query)> {
        params.check()?;
        let setup = Setup::from_bytes(setup)?;
        let pk = key.public().clone();
        if pk.bits() < params.encoding.min_key_bits() {
            return Err(Error::KeySize(format!(
                "a {}-bit key leaves no room for {}-bit elements; use at least {} bits",
                pk.bits(),
                params.encoding.bits(),
                params.encoding.min_key_bits()
            )));
        }
        let set = dedupe(set);
        if set.len() > params.chooser_bound as usize {
            return Err(Error::SetTooLarge {
                what: "the chooser's set",
                len: set.len(),
                max: params.chooser_bound as usize,
            });
        }
        let values: Vec<Nat> = set.iter().map(|e| params.encoding.value(e)).collect::<Result<_>>()?;
        let proof = key.modulus_proof()?;
        let verified = setup.offer.verify()?;
        let ctx = facproof::context(FACTOR_PROOF_DOMAIN, binding, &setup.nonce);
        let fac = Arc::new(FacProof::prove(&key, &verified, &ctx, rng)?);
        let (bins, load) = (params.bins(), params.load());
        let mut seed = [0u8; 32];
        let alloc = loop {
            rng.fill_bytes(&mut seed);
            if let Some(a) = allocate(&seed, &values, bins, load)? {
                break a;
            }
        };
        let mut members = Vec::with_capacity(set.len());
        for (k, m) in alloc.iter().enumerate() {
            for &i in m {
                members.push((bn::dup(&values[i])?, k as u32, set[i].clone()));
            }
        }
        // dummy roots: uniform in [2^{b+1}, n), never a sender value
        let mut lo = openssl::bn::BigNum::new()?;
        lo.set_bit(params.encoding.bits() as i32 + 1)?;
        let span = bn::sub(pk.n(), &lo)?;
        let mut roots_per_bin = Vec::with_capacity(bins as usize);
        for members in &alloc {
            let mut roots: Vec<Nat> = members.iter().map(|&i| bn::dup(&values[i])).collect::<Result<_>>()?;
            while roots.len() < load as usize {
                roots.push(bn::add(&lo, &*bn::random_below(rng, &span)?)?);
            }
            roots_per_bin.push(roots);
        }
        let polys: Vec<Poly> = roots_per_bin
            .par_iter()
            .map(|r| Poly::from_roots(r, pk.n(), params.multiplier))
            .collect::<Result<_>>()?;
        let plain: Vec<&Nat> = polys.iter().flat_map(|p| &p.coeffs()[..load as usize]).collect();
        let s = seeds(rng, plain.len());
        let coeffs: Vec<Ciphertext> = plain
            .par_iter()
            .zip(s)
            .map(|(c, s)| pk.encrypt_pooled(c, pool, &mut ChaCha20Rng::from_seed(s)))
            .collect::<Result<_>>()?;
        Ok((
            ChooserAwaitingAnswer {
                params: *params,
                key,
                members,
            },
            Query {
                params: *params,
                key: pk,
                proof,
                fac,
                ring: setup.offer.params,
                seed,
                coeffs,
            },
        ))
    }
}

impl ChooserAwaitingAnswer {
    /// Decrypts the answer (on all cores) and returns the intersection, in the order
    /// the elements were found. `binding` is the TLS channel binding of the session
    /// ([`crate::NO_CHANNEL_BINDING`] outside TLS); the sender must use the same.
    pub fn on_answer(self, bytes: &[u8], binding: &[u8; 32]) -> Result<Vec<Vec<u8>>> {
        let ans = Answer::from_bytes(bytes, &self.params, self.key.public())?;
        self.on_answer_typed(&ans, binding)
    }

    /// Like [`ChooserAwaitingAnswer::on_answer`] with a typed answer.
    ///
    /// A value counts only if it equals the match tag `h(sid, k, c)` of one of the
    /// chooser's own elements `c` in its bin `k`, which a sender cannot produce
    /// without holding `c`. More distinct elements than the sender's bound is a
    /// deviation (a sender answering for guesses in both bins of each element): the
    /// output is always an intersection with some set of at most `n` elements.
    pub fn on_answer_typed(self, ans: &Answer, binding: &[u8; 32]) -> Result<Vec<Vec<u8>>> {
        if ans.values.len() != self.params.answers() {
            return Err(Error::WrongCount {
                what: "evaluations",
                count: ans.values.len(),
                expected: self.params.answers(),
            });
        }
        let plain: Vec<Nat> = ans
            .values
            .par_iter()
            .map(|c| self.key.decrypt_raw(c))
            .collect::<Result<_>>()?;
        let sid = crate::element::session_id(SESSION_DOMAIN, binding, &ans.nonce);
        let n = self.key.public().n();
        let mut expect: HashMap<Vec<u8>, usize> = HashMap::with_capacity(self.members.len());
        for (idx, (v, k, _)) in self.members.iter().enumerate() {
            expect.insert(match_tag(MATCH_DOMAIN, &sid, *k, 0, v, n)?.to_vec(), idx);
        }
        let mut out = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for v in plain {
            if let Some(&idx) = expect.get(&v.to_vec())
                && seen.insert(idx)
            {
                out.push(self.members[idx].2.clone());
            }
        }
        if out.len() > self.params.sender_bound as usize {
            return Err(Error::Deviation(format!(
                "the sender's answer matches {} of our elements, more than its bound of {}",
                out.len(),
                self.params.sender_bound
            )));
        }
        Ok(out)
    }
}

/// The sender: its set and the policy it accepts queries under.
#[derive(Debug)]
pub struct Sender {
    params: PsiParams,
    values: Vec<Nat>,
    min_key_bits: u32,
    max_key_bits: u32,
    key_floor: KeyFloor,
    rp: Arc<RingPedersen>,
}

impl Sender {
    /// A sender with `set` (deduplicated; at most `params.sender_bound` elements)
    /// accepting chooser keys of `min_key_bits..=max_key_bits` and never below
    /// [`facproof::MIN_PEER_KEY_BITS`] (unless [`Self::accept_insecure_small_keys`]),
    /// with its ring-Pedersen parameters `rp` (the chooser proves its key's factors
    /// large against them).
    pub fn new<T: AsRef<[u8]>>(
        params: &PsiParams,
        set: &[T],
        min_key_bits: u32,
        max_key_bits: u32,
        rp: Arc<RingPedersen>,
    ) -> Result<Self> {
        params.check()?;
        let set = dedupe(set);
        if set.len() > params.sender_bound as usize {
            return Err(Error::SetTooLarge {
                what: "the sender's set",
                len: set.len(),
                max: params.sender_bound as usize,
            });
        }
        let values = set.iter().map(|e| params.encoding.value(e)).collect::<Result<_>>()?;
        Ok(Sender {
            params: *params,
            values,
            min_key_bits,
            max_key_bits,
            key_floor: KeyFloor::FactorProof,
            rp,
        })
    }

    /// **Insecure**: also accept chooser keys below [`facproof::MIN_PEER_KEY_BITS`]
    /// (down to `min_key_bits`), for which Π^fac bounds nothing — a chooser with a
    /// small factor then tests many candidates per root slot. For reproducing the
    /// paper's tables (256-bit keys) on one's own machine only; the chooser cannot ask
    /// for it (`tacit pros psi serve --insecure-small-keys`).
    pub fn accept_insecure_small_keys(mut self) -> Self {
        self.key_floor = KeyFloor::InsecureSmallKeys;
        self
    }

    fn check_key(&self, key: &PublicKey) -> Result<()> {
        crate::messages::check_key_bits(
            key,
            self.min_key_bits.max(self.params.encoding.min_key_bits()),
            self.max_key_bits,
            self.key_floor,
        )
    }

    /// The sender's first message of a session: a fresh nonce and its ring-Pedersen
    /// parameters with their proof. Keep the [`Opening`] for [`Sender::respond`].
    pub fn open(&self, rng: &mut impl CryptoRngCore) -> (Opening, Vec<u8>) {
        let mut nonce = [0u8; 32];
        rng.fill_bytes(&mut nonce);
        let mut w = Writer::with_capacity(SETUP_LEN);
        w.put_envelope(TAG_SETUP);
        w.put_fixed(&nonce);
        self.rp.encode_offer(&mut w);
        (Opening { nonce }, w.into_bytes())
    }

    /// The largest query this sender reads (its largest key, its own ring-Pedersen
    /// modulus).
    pub fn max_query_len(&self) -> usize {
        self.params.query_len_for(self.max_key_bits, self.rp.public().bits())
    }

    /// The parameters.
    pub fn params(&self) -> &PsiParams {
        &self.params
    }

    /// The largest chooser key accepted, in bits.
    pub fn max_key_bits(&self) -> u32 {
        self.max_key_bits
    }

    /// Decodes a query of the session `opening` and answers it; `binding` is the TLS
    /// channel binding of the session ([`crate::NO_CHANNEL_BINDING`] outside TLS).
    pub fn respond(
        &self,
        opening: &Opening,
        bytes: &[u8],
        binding: &[u8; 32],
        rng: &mut impl CryptoRngCore,
    ) -> Result<(Answer, PublicKey)> {
        let q = Query::decode(bytes, &self.params, self.rp.public(), |key| self.check_key(key))?;
        let a = self.respond_typed(opening, &q, binding, None, rng)?;
        Ok((a, q.key))
    }

    /// Answers a decoded query; `pool` may hold precomputed `ρⁿ` for the chooser's key.
    /// The modulus proof and the no-small-factor proof (against this sender's
    /// parameters, in the session of `opening` and `binding`) are verified before
    /// anything else is computed.
    pub fn respond_typed(
        &self,
        opening: &Opening,
        q: &Query,
        binding: &[u8; 32],
        pool: Option<&RnPool>,
        rng: &mut impl CryptoRngCore,
    ) -> Result<Answer> {
        if !q.params.same_as(&self.params) {
            return Err(Error::ParamsMismatch("the query was made for other parameters".into()));
        }
        self.check_key(&q.key)?;
        q.proof.verify(&q.key)?;
        if q.ring != *self.rp.public() {
            return Err(Error::Deviation(
                "the no-small-factor proof was made against other ring-Pedersen parameters".into(),
            ));
        }
        let ctx = facproof::context(FACTOR_PROOF_DOMAIN, binding, &opening.nonce);
        q.fac.verify(&q.key, &self.rp, &ctx)?;
        let pk = &q.key;
        let own_pool;
        let pool = match pool {
            Some(p) => p,
            None => {
                own_pool = RnPool::new(pk)?;
                &own_pool
            }
        };
        let (bins, load) = (self.params.bins(), self.params.load() as usize);
        if q.coeffs.len() != bins as usize * load {
            return Err(Error::WrongCount {
                what: "encrypted coefficients",
                count: q.coeffs.len(),
                expected: bins as usize * load,
            });
        }
        // the jobs: (bin, value); dummies pad the set to the bound and cost the same
        let mut jobs: Vec<(u32, Nat)> = Vec::with_capacity(self.params.answers());
        let pad = self.params.sender_bound as usize - self.values.len();
        let mut ys: Vec<Nat> = self.values.iter().map(|v| bn::dup(v)).collect::<Result<_>>()?;
        for _ in 0..pad {
            ys.push(self.params.encoding.dummy(rng)?);
        }
        for y in ys {
            if bins == 1 {
                jobs.push((0, y));
            } else {
                let (a, b) = bins_of(&q.seed, &y, bins)?;
                jobs.push((a, bn::dup(&y)?));
                jobs.push((b, y));
            }
        }
        let mut nonce = [0u8; 32];
        rng.fill_bytes(&mut nonce);
        let sid = crate::element::session_id(SESSION_DOMAIN, binding, &nonce);
        let s = seeds(rng, jobs.len());
        let mut values: Vec<Ciphertext> = jobs
            .par_iter()
            .zip(s)
            .map(|((k, y), s)| {
                let enc = &q.coeffs[*k as usize * load..(*k as usize + 1) * load];
                let h = match_tag(MATCH_DOMAIN, &sid, *k, 0, y, pk.n())?;
                evaluate(pk, enc, y, &h, pool, &mut ChaCha20Rng::from_seed(s))
            })
            .collect::<Result<_>>()?;
        shuffle(&mut values, rng);
        Ok(Answer { nonce, values })
    }
}

/// Private matching (PM) of single elements (§4.5): FNP with sets of one element,
/// without bucketing. The chooser's query is `E(−a)` (the lower coefficient of
/// `x − a`); the sender answers `E(r·(y − a) + h(sid, y))` and the chooser accepts
/// exactly `h(sid, a)` (not FNP's `E(r·(y − a) + y)`: the sender could return
/// `E(−a)⁻¹ = E(a)`, a false match).
pub mod pm {
    use super::*;

    /// Domain of PM's match tags.
    pub const MATCH_DOMAIN: &[u8] = b"tacit-pros/v1/pm-match\0";

    /// The chooser's PM query for element value `a`.
    pub fn query(pk: &PublicKey, a: &BigNumRef, pool: &RnPool, rng: &mut impl CryptoRngCore) -> Result<Ciphertext> {
        let neg = bn::sub_mod(&*openssl::bn::BigNum::new()?, &*bn::reduce(a, pk.n())?, pk.n())?;
        pk.encrypt_pooled(&neg, pool, rng)
    }

    /// The sender's PM answer for its element value `y` in session `sid`.
    pub fn answer(
        pk: &PublicKey,
        q: &Ciphertext,
        y: &BigNumRef,
        sid: &[u8; 32],
        pool: &RnPool,
        rng: &mut impl CryptoRngCore,
    ) -> Result<Ciphertext> {
        let h = match_tag(MATCH_DOMAIN, sid, 0, 0, y, pk.n())?;
        evaluate(pk, std::slice::from_ref(q), y, &h, pool, rng)
    }

    /// Whether the answer shows a match with the chooser's value `a` in session `sid`.
    pub fn matched(key: &PrivateKey, answer: &Ciphertext, a: &BigNumRef, sid: &[u8; 32]) -> Result<bool> {
        let h = match_tag(MATCH_DOMAIN, sid, 0, 0, a, key.public().n())?;
        Ok(*key.decrypt_raw(answer)? == *h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NO_CHANNEL_BINDING;
    use proptest::prelude::*;

    fn rng(s: u8) -> ChaCha20Rng {
        ChaCha20Rng::from_seed([s; 32])
    }

    fn key() -> PrivateKey {
        static K: std::sync::OnceLock<PrivateKey> = std::sync::OnceLock::new();
        K.get_or_init(|| PrivateKey::generate(1024).unwrap()).clone()
    }

    fn rp() -> Arc<RingPedersen> {
        crate::facproof::test_ring_pedersen()
    }

    /// A sender's opening and the chooser's query for it.
    fn start(params: &PsiParams, c: &[String], seed: u8) -> Result<(Opening, ChooserAwaitingAnswer, Query)> {
        let k = key();
        let pool = RnPool::new(k.public()).unwrap();
        let any = Sender::new(params, &names(&["1"]), 0, 4096, rp()).unwrap();
        let (opening, setup) = any.open(&mut rng(seed.wrapping_add(100)));
        let (wait, q) = Chooser::start(params, k, c, &setup, &NO_CHANNEL_BINDING, &pool, &mut rng(seed))?;
        Ok((opening, wait, q))
    }

    fn run(params: &PsiParams, c: &[String], s: &[String], seed: u8) -> Vec<Vec<u8>> {
        let (o, wait, q) = start(params, c, seed).unwrap();
        let sender = Sender::new(params, s, 1024, 4096, rp()).unwrap();
        let (a, pk) = sender
            .respond(&o, &q.to_bytes(), &NO_CHANNEL_BINDING, &mut rng(seed))
            .unwrap();
        wait.on_answer(&a.to_bytes(&pk), &NO_CHANNEL_BINDING).unwrap()
    }

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn bucketed_and_plain_find_the_intersection() {
        let c: Vec<String> = (0..40).map(|i| format!("c{i}")).collect();
        let mut s: Vec<String> = (0..30).map(|i| format!("s{i}")).collect();
        s.extend(names(&["c3", "c17", "c39"]));
        for bucketing in [true, false] {
            let mut p = PsiParams::new(40, 40);
            p.bucketing = bucketing;
            assert_eq!(p.bins() > 1, bucketing);
            let mut got = run(&p, &c, &s, 1);
            got.sort();
            assert_eq!(got, vec![b"c17".to_vec(), b"c3".to_vec(), b"c39".to_vec()]);
        }
    }

    #[test]
    fn sizes_depend_only_on_bounds() {
        let p = PsiParams::new(20, 10);
        let (o1, _, q1) = start(&p, &names(&["a"]), 2).unwrap();
        let (_, _, q2) = start(&p, &(0..20).map(|i| i.to_string()).collect::<Vec<_>>(), 3).unwrap();
        assert_eq!(q1.to_bytes().len(), q2.to_bytes().len());
        assert_eq!(q1.to_bytes().len(), p.query_len_for(1024, rp().public().bits()));
        assert!(q1.to_bytes().len() <= p.query_len(1024));
        let s1 = Sender::new(&p, &names(&["x"]), 1024, 4096, rp()).unwrap();
        let s2 = Sender::new(
            &p,
            &(0..10).map(|i| i.to_string()).collect::<Vec<_>>(),
            1024,
            4096,
            rp(),
        )
        .unwrap();
        let a1 = s1
            .respond(&o1, &q1.to_bytes(), &NO_CHANNEL_BINDING, &mut rng(4))
            .unwrap();
        let a2 = s2
            .respond(&o1, &q1.to_bytes(), &NO_CHANNEL_BINDING, &mut rng(4))
            .unwrap();
        assert_eq!(a1.0.to_bytes(&a1.1).len(), a2.0.to_bytes(&a2.1).len());
        assert_eq!(a1.0.to_bytes(&a1.1).len(), p.answer_len(1024));
        let (_, setup) = s1.open(&mut rng(9));
        assert!(setup.len() <= SETUP_LEN);
    }

    #[test]
    fn overflowing_sets_and_mismatched_peers_are_refused() {
        let p = PsiParams::new(4, 4);
        assert!(matches!(
            start(&p, &names(&["1", "2", "3", "4", "5"]), 5),
            Err(Error::SetTooLarge { .. })
        ));
        let (o, wait, q) = start(&p, &names(&["1"]), 5).unwrap();
        // a sender with other bounds refuses
        let other = Sender::new(&PsiParams::new(5, 4), &names(&["1"]), 1024, 4096, rp()).unwrap();
        assert!(matches!(
            other.respond(&o, &q.to_bytes(), &NO_CHANNEL_BINDING, &mut rng(6)),
            Err(Error::Mismatch(_))
        ));
        // a sender demanding bigger keys refuses
        let strict = Sender::new(&p, &names(&["1"]), 2048, 4096, rp()).unwrap();
        assert!(matches!(
            strict.respond(&o, &q.to_bytes(), &NO_CHANNEL_BINDING, &mut rng(6)),
            Err(Error::KeySize(_))
        ));
        // trailing bytes, truncation
        let s = Sender::new(&p, &names(&["1"]), 1024, 4096, rp()).unwrap();
        let mut b = q.to_bytes();
        b.push(0);
        assert!(s.respond(&o, &b, &NO_CHANNEL_BINDING, &mut rng(6)).is_err());
        assert!(
            s.respond(&o, &q.to_bytes()[..100], &NO_CHANNEL_BINDING, &mut rng(6))
                .is_err()
        );
        // an answer with one evaluation too few
        let (a, pk) = s.respond(&o, &q.to_bytes(), &NO_CHANNEL_BINDING, &mut rng(6)).unwrap();
        let short = Answer {
            nonce: a.nonce,
            values: a.values[1..].to_vec(),
        };
        assert!(matches!(
            wait.on_answer(&short.to_bytes(&pk), &NO_CHANNEL_BINDING),
            Err(Error::WrongCount { .. })
        ));
    }

    #[test]
    fn a_ciphertext_outside_the_group_is_refused() {
        let p = PsiParams::new(2, 2);
        let (o, _, mut q) = start(&p, &names(&["1"]), 7).unwrap();
        q.coeffs[0] = Ciphertext(bn::dup(q.key.n()).unwrap());
        let s = Sender::new(&p, &names(&["1"]), 1024, 4096, rp()).unwrap();
        assert!(matches!(
            s.respond(&o, &q.to_bytes(), &NO_CHANNEL_BINDING, &mut rng(8)),
            Err(Error::BadCiphertext(_))
        ));
    }

    #[test]
    fn two_choice_allocation_rarely_needs_a_second_seed() {
        let p = PsiParams::new(2000, 1);
        let values: Vec<Nat> = (0..2000u64)
            .map(|i| ElementEncoding::Hash127.value(&i.to_be_bytes()).unwrap())
            .collect();
        let mut fails = 0;
        for s in 0..20u8 {
            if allocate(&[s; 32], &values, p.bins(), p.load()).unwrap().is_none() {
                fails += 1;
            }
        }
        assert!(fails <= 2, "{fails} of 20 seeds overflowed");
    }

    #[test]
    fn private_matching() {
        let k = key();
        let pk = k.public();
        let pool = RnPool::new(pk).unwrap();
        let mut r = rng(9);
        let a = bn::from_u64(77).unwrap();
        let sid = [3; 32];
        let q = pm::query(pk, &a, &pool, &mut r).unwrap();
        let yes = pm::answer(pk, &q, &a, &sid, &pool, &mut r).unwrap();
        let no = pm::answer(pk, &q, &bn::from_u64(78).unwrap(), &sid, &pool, &mut r).unwrap();
        assert!(pm::matched(&k, &yes, &a, &sid).unwrap());
        assert!(!pm::matched(&k, &no, &a, &sid).unwrap());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(8))]
        #[test]
        fn intersection_equals_plain_intersection(
            c in proptest::collection::btree_set(0u32..60, 0..20),
            s in proptest::collection::btree_set(0u32..60, 0..20),
            bucketing in any::<bool>(),
        ) {
            let mut p = PsiParams::new(20, 20);
            p.bucketing = bucketing;
            p.encoding = ElementEncoding::Integer32;
            let cv: Vec<String> = c.iter().map(|x| x.to_string()).collect();
            let sv: Vec<String> = s.iter().map(|x| x.to_string()).collect();
            let mut got: Vec<u32> = run(&p, &cv, &sv, 10).iter().map(|b| String::from_utf8(b.clone()).unwrap().parse().unwrap()).collect();
            got.sort();
            let want: Vec<u32> = c.intersection(&s).cloned().collect();
            prop_assert_eq!(got, want);
        }
    }
}
