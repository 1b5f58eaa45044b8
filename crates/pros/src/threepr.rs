//! 3PR^C: privacy-preserving fair reconciliation of two ordered sets (Meyer, Wetzel,
//! Ioannidis; PROS paper §3.4 and §4.6), under Sum of Ranks (Def. 3) and Minimum of
//! Ranks (Def. 4), in the three variants of §4.6: FNP-implicit, PSI-explicit
//! non-cached and PSI-explicit cached.
//!
//! Each party holds a list of `n` elements, best first. Position `i` (0 = best) has
//! rank `n − i`. A pair `(a_i, b_j)` has combined preference `(n−i) + (n−j)` under
//! SOR and `min(n−i, n−j)` under MOR. The protocol compares the pairs in rounds of
//! equal combined preference, best round first, and stops after the first round that
//! has a match; its output is every common element of that round (all maximisers):
//!
//! * SOR: round `t = 0 … 2n−2` holds the pairs with `i + j = t` (≤ 2n−1 rounds);
//! * MOR: round `t = 0 … n−1` holds the pairs with `max(i, j) = t` — `a_t` against
//!   `b_0 … b_t` and `b_t` against `a_0 … a_{t−1}` (≤ n rounds).
//!
//! Every comparison is FNP's oblivious evaluation of `x − a_i` at `b_j` (§3.4), with
//! a **match tag** as the payload instead of `b_j`:
//!
//! ```text
//! A (key holder)                                         B
//!   Hello = scheme, variant, encoding, n_A, pk,
//!           proof that pk is Paillier–Blum         ───▶  checks bounds, verifies the proof
//!                                                  ◀───  Accept = n = max(n_A, n_B), nonce
//!   both: sid = SHA-256(channel binding ‖ nonce); h_ij(v) = SHA-256(sid ‖ i ‖ j ‖ v)
//!   for t = 0, 1, …:
//!   Query_t = E(−a_i) for the round's pairs        ───▶  for each pair (i, j) of round t:
//!     implicit:        one per distinct a_i                E(r·(b_j − a_i) + h_ij(b_j)),
//!     explicit:        one PM query per pair               r fresh, re-randomised by ρⁿ
//!     explicit-cached: only a_i not sent before    ◀───  Answer_t = those, in pair order,
//!                                                         shuffled within each run of one a_i
//!   decrypts; an answer of the run of a_i equal to
//!   h_ij(a_i) for a pair (i, j) of that run is a
//!   common element
//!   no match and t not last: Query_{t+1}
//!   else Outcome = t, the common elements          ───▶  B checks each is one of its
//!                                                         elements in round t
//! ```
//!
//! The paper's payload `b_j` let a deviating B answer `E(−a_i)⁻¹ = E(a_i)`, which A
//! took for a match on every one of its elements (issue 26): `E(h_ij(a_i))` cannot be
//! made from `E(−a_i)` without knowing `a_i`. Both parties learn the output and the
//! number of rounds; see `docs/pros.md` for what each learns against a semi-honest and
//! against a deviating peer, claim by claim with its test.

use crate::bn::{self, Nat};
use crate::element::{ElementEncoding, match_tag, session_id, value_bytes};
use crate::facproof::{self, FacProof, Offer, RingPedersen};
use crate::fnp::{dedupe, evaluate, seeds, shuffle};
use crate::messages::{KeyFloor, check_key_bits, check_refusal};
use crate::paillier::{Ciphertext, ModulusProof, PrivateKey, PublicKey, RnPool};
use crate::{Error, Result};
use openssl::bn::BigNum;
use rand_chacha::ChaCha20Rng;
use rand_core::{CryptoRngCore, SeedableRng};
use rayon::prelude::*;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use tacit_wire::{Envelope, Reader, Writer};

/// Wire tag of A's hello.
pub const TAG_HELLO: u16 = 0x0420;
/// Wire tag of B's accept.
pub const TAG_ACCEPT: u16 = 0x0421;
/// Wire tag of a round's query.
pub const TAG_QUERY: u16 = 0x0422;
/// Wire tag of a round's answer.
pub const TAG_ANSWER: u16 = 0x0423;
/// Wire tag of the outcome.
pub const TAG_OUTCOME: u16 = 0x0424;
/// Wire tag of A's no-small-factor proof (Π^fac), sent right after B's accept.
pub const TAG_FACTOR_PROOF: u16 = 0x0425;

/// The largest ordered set (the worst case costs `n²` comparisons).
pub const MAX_ORDERED_SET: u32 = 4096;

/// Domain of the 3PR session identifier.
pub const SESSION_DOMAIN: &[u8] = b"tacit-pros/v1/3pr-session\0";
/// Domain of 3PR's match tags.
pub const MATCH_DOMAIN: &[u8] = b"tacit-pros/v1/3pr-match\0";
/// Domain of the context A's Π^fac is bound to (with the channel binding and B's
/// nonce).
pub const FACTOR_PROOF_DOMAIN: &[u8] = b"tacit-pros/v1/3pr-factor-proof\0";

/// The preference order composition scheme (§3.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Scheme {
    /// Sum of Ranks (Def. 3).
    #[default]
    Sor,
    /// Minimum of Ranks (Def. 4).
    Mor,
}

/// The protocol variant (§3.4, §4.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Variant {
    /// 3PR-FNP-implicit: one polynomial per distinct element of A in each round.
    #[default]
    Implicit,
    /// 3PR-PSI-explicit, non-cached: one PM query per comparison.
    Explicit,
    /// 3PR-PSI-explicit, cached: each of A's polynomials is sent once; B keeps them
    /// keyed by rank.
    ExplicitCached,
}

impl Scheme {
    fn code(self) -> u8 {
        match self {
            Scheme::Sor => 0,
            Scheme::Mor => 1,
        }
    }
    fn from_code(c: u8) -> Result<Self> {
        match c {
            0 => Ok(Scheme::Sor),
            1 => Ok(Scheme::Mor),
            _ => Err(Error::Wire(tacit_wire::Error::invalid(
                "scheme",
                format!("unknown code {c}"),
            ))),
        }
    }

    /// Number of rounds for sets of `n` elements.
    pub fn rounds(self, n: u32) -> u32 {
        match self {
            Scheme::Sor => (2 * n).saturating_sub(1),
            Scheme::Mor => n,
        }
    }

    /// The pairs `(i, j)` of positions compared in round `t` (0-based), in a fixed order.
    pub fn round_pairs(self, n: u32, t: u32) -> Vec<(u32, u32)> {
        match self {
            Scheme::Sor => {
                let lo = t.saturating_sub(n.saturating_sub(1));
                let hi = t.min(n.saturating_sub(1));
                (lo..=hi).map(|i| (i, t - i)).collect()
            }
            Scheme::Mor => {
                let mut v: Vec<(u32, u32)> = (0..=t).map(|j| (t, j)).collect();
                v.extend((0..t).map(|i| (i, t)));
                v
            }
        }
    }

    /// The combined preference of positions `(i, j)` (higher is better).
    pub fn combined(self, n: u32, i: u32, j: u32) -> u32 {
        match self {
            Scheme::Sor => (n - i) + (n - j),
            Scheme::Mor => (n - i).min(n - j),
        }
    }
}

/// The runs of a round's pairs (in [`Scheme::round_pairs`] order) that share A's
/// position `i`, as index ranges: B shuffles its answers within each run only, and A
/// checks the answers of a run only against its own element at that position. So an
/// answer counts for exactly one of A's positions, and B gets one guess per answer
/// against that position: `n` guesses per A position in a whole session (every pair
/// `(i, j)` occurs in exactly one round), however B spends its answers. Within a run
/// the order hides which of B's positions `j` matched (MOR's round `t` compares `a_t`
/// with `b_0 … b_t`).
pub fn position_runs(pairs: &[(u32, u32)]) -> Vec<core::ops::Range<usize>> {
    let mut runs = Vec::new();
    let mut start = 0;
    for k in 1..=pairs.len() {
        if k == pairs.len() || pairs[k].0 != pairs[start].0 {
            runs.push(start..k);
            start = k;
        }
    }
    runs
}

impl Variant {
    fn code(self) -> u8 {
        match self {
            Variant::Implicit => 0,
            Variant::Explicit => 1,
            Variant::ExplicitCached => 2,
        }
    }
    fn from_code(c: u8) -> Result<Self> {
        match c {
            0 => Ok(Variant::Implicit),
            1 => Ok(Variant::Explicit),
            2 => Ok(Variant::ExplicitCached),
            _ => Err(Error::Wire(tacit_wire::Error::invalid(
                "variant",
                format!("unknown code {c}"),
            ))),
        }
    }
}

impl core::fmt::Display for Scheme {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            Scheme::Sor => "sor",
            Scheme::Mor => "mor",
        })
    }
}

impl core::fmt::Display for Variant {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            Variant::Implicit => "implicit",
            Variant::Explicit => "explicit",
            Variant::ExplicitCached => "explicit-cached",
        })
    }
}

/// Parameters both parties must agree on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ReconcileParams {
    /// SOR or MOR.
    pub scheme: Scheme,
    /// Which 3PR variant.
    pub variant: Variant,
    /// How elements become integers.
    pub encoding: ElementEncoding,
}

impl ReconcileParams {
    /// The parameters in words ("3PR SOR / fast / Hash127").
    pub fn describe(&self) -> String {
        format!("3PR {} / {} / {:?}", self.scheme, self.variant, self.encoding)
    }
}

/// The positions of A's elements that appear in round `t`, ascending.
fn a_positions(scheme: Scheme, n: u32, t: u32) -> Vec<u32> {
    let mut v: Vec<u32> = scheme.round_pairs(n, t).into_iter().map(|(i, _)| i).collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// The result of a reconciliation, the same on both sides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reconciled {
    /// The common elements of maximal combined preference (empty: none in common).
    pub elements: Vec<Vec<u8>>,
    /// Rounds run.
    pub rounds: u32,
    /// The agreed set length `n`.
    pub n: u32,
    /// Comparisons made.
    pub comparisons: u64,
    /// Ciphertexts A sent.
    pub ciphertexts_sent: u64,
}

struct Elements {
    items: Vec<Vec<u8>>,
    values: Vec<Nat>,
}

fn prepare<T: AsRef<[u8]>>(set: &[T], enc: ElementEncoding) -> Result<Elements> {
    let items = dedupe(set);
    if items.is_empty() {
        return Err(Error::Invalid("the ordered set is empty".into()));
    }
    if items.len() > MAX_ORDERED_SET as usize {
        return Err(Error::SetTooLarge {
            what: "the ordered set",
            len: items.len(),
            max: MAX_ORDERED_SET as usize,
        });
    }
    let values = items.iter().map(|e| enc.value(e)).collect::<Result<_>>()?;
    Ok(Elements { items, values })
}

// ---------------------------------------------------------------- messages

/// A's hello.
#[derive(Debug, Clone, PartialEq)]
pub struct Hello {
    /// The parameters A runs.
    pub params: ReconcileParams,
    /// A's set length.
    pub n: u32,
    /// A's public key.
    pub key: PublicKey,
    /// The proof that the key's modulus is a Paillier–Blum modulus.
    pub proof: Arc<ModulusProof>,
}

impl Hello {
    /// `01 0420 || u8 scheme || u8 variant || u8 encoding || u32 n || key || modulus
    /// proof`.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::with_capacity(Self::max_len(self.key.bits()));
        w.put_envelope(TAG_HELLO);
        w.put_u8(self.params.scheme.code());
        w.put_u8(self.params.variant.code());
        w.put_u8(self.params.encoding.code());
        w.put_u32(self.n);
        self.key.encode(&mut w);
        self.proof.encode(&self.key, &mut w);
        w.into_bytes()
    }

    /// The size of a hello under a `bits`-bit key.
    pub fn max_len(bits: u32) -> usize {
        let nl = (bits as usize).div_ceil(8);
        3 + 3 + 4 + 2 + nl + ModulusProof::encoded_len(nl)
    }

    /// Decodes a hello (the key is validated as a peer's; the proof is decoded, and
    /// [`Responder::on_hello`] verifies it before anything else).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        check_refusal(bytes)?;
        let mut r = Reader::new(bytes);
        r.envelope(TAG_HELLO, "3PR hello")?;
        let params = ReconcileParams {
            scheme: Scheme::from_code(r.u8()?)?,
            variant: Variant::from_code(r.u8()?)?,
            encoding: ElementEncoding::from_code(r.u8()?)?,
        };
        let n = r.u32()?;
        if n == 0 || n > MAX_ORDERED_SET {
            return Err(Error::Wire(tacit_wire::Error::invalid(
                "set length",
                format!("{n} is not in 1..={MAX_ORDERED_SET}"),
            )));
        }
        let key = PublicKey::decode(&mut r)?;
        let proof = Arc::new(ModulusProof::decode(&mut r, &key)?);
        r.finish()?;
        Ok(Hello { params, n, key, proof })
    }
}

/// `01 0421 || u32 n || nonce (32) || ring-Pedersen parameters (N̂, s, t) || Π^prm`.
fn accept_bytes(n: u32, nonce: &[u8; 32], rp: &RingPedersen) -> Vec<u8> {
    let mut w = Writer::new();
    w.put_envelope(TAG_ACCEPT);
    w.put_u32(n);
    w.put_fixed(nonce);
    rp.encode_offer(&mut w);
    w.into_bytes()
}

/// Bytes of B's accept with ring-Pedersen parameters of the largest size A accepts
/// ([`facproof::MAX_RING_BITS`]).
pub const ACCEPT_LEN: usize = 3 + 4 + 32 + RingPedersen::offer_len(facproof::MAX_RING_BITS);

fn accept_from_bytes(bytes: &[u8]) -> Result<(u32, [u8; 32], Offer)> {
    check_refusal(bytes)?;
    let mut r = Reader::new(bytes);
    r.envelope(TAG_ACCEPT, "3PR accept")?;
    let n = r.u32()?;
    let nonce = r.array::<32>("session nonce")?;
    let offer = Offer::decode(&mut r)?;
    r.finish()?;
    Ok((n, nonce, offer))
}

/// `01 0425 || Π^fac` for A's key against B's parameters.
fn factor_proof_bytes(proof: &FacProof, key: &PublicKey, offer: &Offer) -> Vec<u8> {
    let mut w = Writer::with_capacity(3 + FacProof::encoded_len(key.bits(), offer.params.bits()));
    w.put_envelope(TAG_FACTOR_PROOF);
    proof.encode(key, &offer.params, &mut w);
    w.into_bytes()
}

/// The largest round of sets of `n` (SOR: `n` pairs; MOR: `2n − 1`).
pub fn max_round_pairs(scheme: Scheme, n: u32) -> usize {
    match scheme {
        Scheme::Sor => n as usize,
        Scheme::Mor => (2 * n as usize).saturating_sub(1),
    }
}

/// A round's query: the encrypted lower coefficients of `x − a_i`.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    /// The round (0-based).
    pub round: u32,
    /// `(position of a_i, E(−a_i))`: implicit — each distinct position of the round;
    /// explicit — one per pair, in pair order; cached — the positions not sent before.
    pub entries: Vec<(u32, Ciphertext)>,
}

impl Query {
    /// `01 0422 || u32 round || u32 count || count × (u32 position || ciphertext)`.
    pub fn to_bytes(&self, key: &PublicKey) -> Vec<u8> {
        let mut w = Writer::with_capacity(11 + self.entries.len() * (4 + key.ciphertext_len()));
        w.put_envelope(TAG_QUERY);
        w.put_u32(self.round);
        w.put_count(self.entries.len());
        for (p, c) in &self.entries {
            w.put_u32(*p);
            key.encode_ciphertext(c, &mut w);
        }
        w.into_bytes()
    }

    /// The size of a query of `entries` entries under a `bits`-bit key.
    pub fn len_for(entries: usize, bits: u32) -> usize {
        11 + entries * (4 + (2 * bits as usize).div_ceil(8))
    }

    /// Decodes a query under A's key; at most `max` entries.
    pub fn from_bytes(bytes: &[u8], key: &PublicKey, max: usize) -> Result<Self> {
        check_refusal(bytes)?;
        let mut r = Reader::new(bytes);
        r.envelope(TAG_QUERY, "3PR query")?;
        let round = r.u32()?;
        let count = r.count("query entries", max, 4 + key.ciphertext_len())?;
        let mut entries = Vec::with_capacity(count);
        for _ in 0..count {
            let p = r.u32()?;
            let mut one = key.decode_ciphertexts_unchecked_units(&mut r, 1)?;
            entries.push((p, one.remove(0)));
        }
        r.finish()?;
        let cts: Vec<Ciphertext> = entries.iter().map(|(_, c)| c.clone()).collect();
        key.check_units(&cts)?;
        Ok(Query { round, entries })
    }
}

/// A round's answer: one evaluation per pair, in the order of
/// [`Scheme::round_pairs`] and shuffled within each of [`position_runs`].
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// The round.
    pub round: u32,
    /// The evaluations.
    pub values: Vec<Ciphertext>,
}

impl Answer {
    /// `01 0423 || u32 round || u32 count || count × ciphertext`.
    pub fn to_bytes(&self, key: &PublicKey) -> Vec<u8> {
        let mut w = Writer::with_capacity(11 + self.values.len() * key.ciphertext_len());
        w.put_envelope(TAG_ANSWER);
        w.put_u32(self.round);
        w.put_count(self.values.len());
        for c in &self.values {
            key.encode_ciphertext(c, &mut w);
        }
        w.into_bytes()
    }

    /// The size of an answer of `values` evaluations under a `bits`-bit key.
    pub fn len_for(values: usize, bits: u32) -> usize {
        11 + values * (2 * bits as usize).div_ceil(8)
    }

    /// Decodes an answer under A's key; exactly `expected` values.
    pub fn from_bytes(bytes: &[u8], key: &PublicKey, expected: usize) -> Result<Self> {
        check_refusal(bytes)?;
        let mut r = Reader::new(bytes);
        r.envelope(TAG_ANSWER, "3PR answer")?;
        let round = r.u32()?;
        let count = r.count("answer values", expected, key.ciphertext_len())?;
        if count != expected {
            return Err(Error::WrongCount {
                what: "evaluations",
                count,
                expected,
            });
        }
        let values = key.decode_ciphertexts(&mut r, count)?;
        r.finish()?;
        Ok(Answer { round, values })
    }
}

/// A's outcome: the last round and the common elements found in it (their values).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The last round run.
    pub round: u32,
    /// The values (16 bytes each) of the common elements, A's preference order.
    pub values: Vec<[u8; 16]>,
}

impl Outcome {
    /// `01 0424 || u32 round || u32 count || count × value (16)`.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.put_envelope(TAG_OUTCOME);
        w.put_u32(self.round);
        w.put_count(self.values.len());
        for v in &self.values {
            w.put_fixed(v);
        }
        w.into_bytes()
    }

    /// The size of an outcome of `values` elements.
    pub fn len_for(values: usize) -> usize {
        11 + 16 * values
    }

    /// Decodes an outcome with at most `max` values.
    pub fn from_bytes(bytes: &[u8], max: usize) -> Result<Self> {
        check_refusal(bytes)?;
        let mut r = Reader::new(bytes);
        r.envelope(TAG_OUTCOME, "3PR outcome")?;
        let round = r.u32()?;
        let count = r.count("outcome values", max, 16)?;
        let mut values = Vec::with_capacity(count);
        for _ in 0..count {
            values.push(r.array::<16>("element value")?);
        }
        r.finish()?;
        Ok(Outcome { round, values })
    }
}

// ---------------------------------------------------------------- party A

/// Party A: holds the key, sends queries, decrypts, announces the outcome.
#[derive(Debug)]
pub struct Initiator;

/// A after its hello.
pub struct InitiatorAwaitingAccept {
    params: ReconcileParams,
    key: PrivateKey,
    set: Elements,
    pool: Arc<RnPool>,
    max_peer_set: u32,
}

/// The longest list A accepts from B by default ([`InitiatorAwaitingAccept::with_max_peer_set`]):
/// B gets one guess per comparison, so `n` guesses against each of A's positions, and
/// `n` is at most `max(n_A, this)`.
pub const DEFAULT_MAX_PEER_SET: u32 = 256;

impl core::fmt::Debug for InitiatorAwaitingAccept {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "InitiatorAwaitingAccept({:?})", self.params)
    }
}

/// A waiting for the answer to round `round`.
pub struct InitiatorAwaitingAnswer {
    params: ReconcileParams,
    key: PrivateKey,
    set: Elements,
    /// E(−a_i) values: A's dummies get a random root.
    roots: Vec<Nat>,
    n: u32,
    round: u32,
    sent: Vec<bool>,
    pool: Arc<RnPool>,
    sid: [u8; 32],
    comparisons: u64,
    ciphertexts_sent: u64,
}

impl core::fmt::Debug for InitiatorAwaitingAnswer {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "InitiatorAwaitingAnswer(round {} of {})",
            self.round,
            self.params.scheme.rounds(self.n)
        )
    }
}

/// What A does after an answer.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // moved once per round
pub enum InitiatorStep {
    /// No match yet: send the next query.
    Continue(InitiatorAwaitingAnswer, Vec<u8>),
    /// Done: send the outcome; both parties learn the result.
    Done(Reconciled, Vec<u8>),
}

impl Initiator {
    /// Starts with `key`, `set` (best first, duplicates removed) and a pool of
    /// precomputed `rⁿ` for the key (may be empty). The hello carries the key's
    /// [`PrivateKey::modulus_proof`] (made now unless the key has it already).
    pub fn start<T: AsRef<[u8]>>(
        params: ReconcileParams,
        key: PrivateKey,
        set: &[T],
        pool: Arc<RnPool>,
    ) -> Result<(InitiatorAwaitingAccept, Vec<u8>)> {
        if key.public().bits() < params.encoding.min_key_bits() {
            return Err(Error::KeySize(format!(
                "a {}-bit key leaves no room for {}-bit elements; use at least {} bits",
                key.public().bits(),
                params.encoding.bits(),
                params.encoding.min_key_bits()
            )));
        }
        let set = prepare(set, params.encoding)?;
        let hello = Hello {
            params,
            n: set.items.len() as u32,
            key: key.public().clone(),
            proof: key.modulus_proof()?,
        };
        Ok((
            InitiatorAwaitingAccept {
                params,
                key,
                set,
                pool,
                max_peer_set: DEFAULT_MAX_PEER_SET,
            },
            hello.to_bytes(),
        ))
    }
}

impl InitiatorAwaitingAccept {
    /// Accepts a session length `n` from B only up to `max(n_A, max_peer_set)`
    /// (default [`DEFAULT_MAX_PEER_SET`]; at most [`MAX_ORDERED_SET`]). A deviating B
    /// gets exactly `n` guesses against each of A's positions (docs/pros.md), so this
    /// bounds what it can test; an honest B with a longer list is refused with a
    /// message naming the bound.
    pub fn with_max_peer_set(mut self, max_peer_set: u32) -> Self {
        self.max_peer_set = max_peer_set;
        self
    }

    /// Handles B's accept: checks `n`, verifies B's ring-Pedersen parameters (Π^prm)
    /// before anything is computed with them, proves that both factors of our modulus
    /// are large (Π^fac, bound to this session) and makes the first query. Returns the
    /// proof message and the query, to be sent in this order. `binding` is the TLS
    /// channel binding of the session ([`crate::NO_CHANNEL_BINDING`] outside TLS); B
    /// must use the same.
    pub fn on_accept(
        self,
        bytes: &[u8],
        binding: &[u8; 32],
        rng: &mut impl CryptoRngCore,
    ) -> Result<(InitiatorAwaitingAnswer, Vec<u8>, Vec<u8>)> {
        let (n, nonce, offer) = accept_from_bytes(bytes)?;
        let own = self.set.items.len() as u32;
        let most = own.max(self.max_peer_set).min(MAX_ORDERED_SET);
        if n < own || n > most {
            return Err(Error::Deviation(format!(
                "B set the length to {n}, but it must be at least ours ({own}) and at most {most} \
                 (each position of ours meets n of B's guesses; raise the peer-list limit to allow more)"
            )));
        }
        let verified = offer.verify()?;
        let ctx = facproof::context(FACTOR_PROOF_DOMAIN, binding, &nonce);
        let fac = FacProof::prove(&self.key, &verified, &ctx, rng)?;
        let fac = factor_proof_bytes(&fac, self.key.public(), &offer);
        let pk = self.key.public();
        let mut lo = BigNum::new()?;
        lo.set_bit(self.params.encoding.bits() as i32 + 1)?;
        let span = bn::sub(pk.n(), &lo)?;
        let mut roots = Vec::with_capacity(n as usize);
        for v in &self.set.values {
            roots.push(bn::sub_mod(&*BigNum::new()?, v, pk.n())?);
        }
        while roots.len() < n as usize {
            let d = bn::add(&lo, &*bn::random_below(rng, &span)?)?;
            roots.push(bn::sub_mod(&*BigNum::new()?, &d, pk.n())?);
        }
        let mut a = InitiatorAwaitingAnswer {
            params: self.params,
            key: self.key,
            set: self.set,
            roots,
            n,
            round: 0,
            sent: vec![false; n as usize],
            pool: self.pool,
            sid: session_id(SESSION_DOMAIN, binding, &nonce),
            comparisons: 0,
            ciphertexts_sent: 0,
        };
        let q = a.query(rng)?;
        Ok((a, fac, q))
    }
}

impl InitiatorAwaitingAnswer {
    /// The round being answered.
    pub fn round(&self) -> u32 {
        self.round
    }

    /// The most rounds this session can take ([`Scheme::rounds`] of the session length).
    pub fn rounds(&self) -> u32 {
        self.params.scheme.rounds(self.n)
    }

    fn query(&mut self, rng: &mut impl CryptoRngCore) -> Result<Vec<u8>> {
        let (scheme, n, t) = (self.params.scheme, self.n, self.round);
        let positions: Vec<u32> = match self.params.variant {
            Variant::Implicit => a_positions(scheme, n, t),
            Variant::Explicit => scheme.round_pairs(n, t).into_iter().map(|(i, _)| i).collect(),
            Variant::ExplicitCached => a_positions(scheme, n, t)
                .into_iter()
                .filter(|&i| !self.sent[i as usize])
                .collect(),
        };
        let pk = self.key.public().clone();
        let s = seeds(rng, positions.len());
        let pool = &self.pool;
        let roots = &self.roots;
        let cts: Vec<Ciphertext> = positions
            .par_iter()
            .zip(s)
            .map(|(&i, s)| pk.encrypt_pooled(&roots[i as usize], pool, &mut ChaCha20Rng::from_seed(s)))
            .collect::<Result<_>>()?;
        for &i in &positions {
            self.sent[i as usize] = true;
        }
        self.ciphertexts_sent += cts.len() as u64;
        let q = Query {
            round: t,
            entries: positions.into_iter().zip(cts).collect(),
        };
        Ok(q.to_bytes(&pk))
    }

    /// The agreed length `n`.
    pub fn n(&self) -> u32 {
        self.n
    }

    /// The size of B's answer to the current round (what a driver lets it be).
    pub fn expected_answer_len(&self) -> usize {
        let pairs = self.params.scheme.round_pairs(self.n, self.round).len();
        Answer::len_for(pairs, self.key.public().bits())
    }

    /// Handles B's answer to the current round. A value counts as a match only if it
    /// is the match tag `h_ij(a_i)` of one of A's own elements `a_i` at a pair `(i, j)`
    /// of this round, which B can produce only if it holds `a_i`.
    pub fn on_answer(mut self, bytes: &[u8], rng: &mut impl CryptoRngCore) -> Result<InitiatorStep> {
        let (scheme, n, t) = (self.params.scheme, self.n, self.round);
        let pairs = scheme.round_pairs(n, t);
        let ans = Answer::from_bytes(bytes, self.key.public(), pairs.len())?;
        if ans.round != t {
            return Err(Error::Deviation(format!(
                "answer for round {} while round {t} runs",
                ans.round
            )));
        }
        self.comparisons += pairs.len() as u64;
        let key = &self.key;
        let plain: Vec<Nat> = ans
            .values
            .par_iter()
            .map(|c| key.decrypt_raw(c))
            .collect::<Result<_>>()?;
        // the match tag of each pair of this round with a real element of A
        let own = self.set.items.len() as u32;
        let pk_n = self.key.public().n();
        // Positional: the answers of the run of pairs (i, ·) are compared only with
        // A's tags for those pairs, so each answer is one guess against one position
        // (a run of one pair is checked against that pair alone).
        let mut found: BTreeMap<u32, [u8; 16]> = BTreeMap::new();
        for run in position_runs(&pairs) {
            let i = pairs[run.start].0;
            if i >= own {
                continue;
            }
            let mut tags: HashSet<Vec<u8>> = HashSet::new();
            for &(_, j) in &pairs[run.clone()] {
                tags.insert(match_tag(MATCH_DOMAIN, &self.sid, i, j, &self.set.values[i as usize], pk_n)?.to_vec());
            }
            if plain[run].iter().any(|v| tags.contains(&v.to_vec())) {
                found.insert(i, value_bytes(&self.set.values[i as usize])?);
            }
        }
        let last = t + 1 >= scheme.rounds(n);
        if found.is_empty() && !last {
            self.round += 1;
            let q = self.query(rng)?;
            return Ok(InitiatorStep::Continue(self, q));
        }
        let elements = found.keys().map(|&i| self.set.items[i as usize].clone()).collect();
        let outcome = Outcome {
            round: t,
            values: found.into_values().collect(),
        };
        Ok(InitiatorStep::Done(
            Reconciled {
                elements,
                rounds: t + 1,
                n,
                comparisons: self.comparisons,
                ciphertexts_sent: self.ciphertexts_sent,
            },
            outcome.to_bytes(),
        ))
    }
}

// ---------------------------------------------------------------- party B

/// What B lets one session cost it (issue 26, item 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The longest list B accepts from A (`n_A`); a longer one is refused at the
    /// hello.
    pub max_peer_set: u32,
    /// The most comparisons (evaluations) B does in one session: a hello whose `n²`
    /// exceeds it is refused before any work.
    pub max_comparisons: u64,
}

impl Default for Limits {
    /// The protocol's own bounds: `n_A ≤ 4096`, `4096²` comparisons.
    fn default() -> Self {
        Limits {
            max_peer_set: MAX_ORDERED_SET,
            max_comparisons: (MAX_ORDERED_SET as u64).pow(2),
        }
    }
}

/// Party B: evaluates A's polynomials at its elements.
pub struct Responder {
    params: ReconcileParams,
    set: Elements,
    min_key_bits: u32,
    max_key_bits: u32,
    key_floor: KeyFloor,
    limits: Limits,
    rp: Arc<RingPedersen>,
}

impl core::fmt::Debug for Responder {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Responder({:?}, {} elements)", self.params, self.set.items.len())
    }
}

/// B waiting for a query or the outcome.
pub struct ResponderAwaiting {
    params: ReconcileParams,
    set: Elements,
    key: PublicKey,
    n: u32,
    /// B's Horner exponents: its values, then dummies.
    ys: Vec<Nat>,
    /// The next round expected; `answered` is the last round answered.
    next: u32,
    answered: Option<u32>,
    cache: HashMap<u32, Ciphertext>,
    pool: Arc<RnPool>,
    sid: [u8; 32],
    comparisons: u64,
    received: u64,
    rp: Arc<RingPedersen>,
    /// The context A's Π^fac must be bound to.
    fac_context: [u8; 32],
    /// Whether A's Π^fac verified: until then nothing is computed with its key.
    proven: bool,
}

impl core::fmt::Debug for ResponderAwaiting {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "ResponderAwaiting(round {})", self.next)
    }
}

/// What B does after a message.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // moved once per round
pub enum ResponderStep {
    /// Send this answer and wait for the next message.
    Answer(ResponderAwaiting, Vec<u8>),
    /// A announced the outcome.
    Done(Reconciled),
}

impl Responder {
    /// B with `set` (best first), accepting A's keys of `min_key_bits..=max_key_bits`,
    /// with its ring-Pedersen parameters `rp` (A proves its factors large against
    /// them; made once per installation, [`RingPedersen::generate`]).
    pub fn new<T: AsRef<[u8]>>(
        params: ReconcileParams,
        set: &[T],
        min_key_bits: u32,
        max_key_bits: u32,
        rp: Arc<RingPedersen>,
    ) -> Result<Self> {
        let set = prepare(set, params.encoding)?;
        Ok(Responder {
            params,
            set,
            min_key_bits,
            max_key_bits,
            key_floor: KeyFloor::FactorProof,
            limits: Limits::default(),
            rp,
        })
    }

    /// **Insecure**: also accept A's keys below [`facproof::MIN_PEER_KEY_BITS`] (down
    /// to `min_key_bits`), for which Π^fac bounds nothing — a key holder with a small
    /// factor then tests many candidates of B's list per comparison. For reproducing
    /// the paper's tables (256-bit keys) on one's own machine only; the peer cannot
    /// ask for it (`tacit … serve --insecure-small-keys`).
    pub fn accept_insecure_small_keys(mut self) -> Self {
        self.key_floor = KeyFloor::InsecureSmallKeys;
        self
    }

    /// The same with other limits on what one session may cost.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// B's list length.
    pub fn set_len(&self) -> usize {
        self.set.items.len()
    }

    /// The largest hello B reads (a key of its largest accepted size with its proof).
    pub fn max_hello_len(&self) -> usize {
        Hello::max_len(self.max_key_bits)
    }

    /// The parameters.
    pub fn params(&self) -> ReconcileParams {
        self.params
    }

    /// Handles A's hello; answers with the agreed length and B's nonce. Checks, in
    /// this order and before any computation with A's key: the parameters, the key
    /// size, `n_A` against [`Limits::max_peer_set`], `n²` against
    /// [`Limits::max_comparisons`], then the modulus proof. `binding` is the TLS
    /// channel binding ([`crate::NO_CHANNEL_BINDING`] outside TLS).
    pub fn on_hello(
        self,
        bytes: &[u8],
        binding: &[u8; 32],
        rng: &mut impl CryptoRngCore,
    ) -> Result<(ResponderAwaiting, Vec<u8>)> {
        let h = Hello::from_bytes(bytes)?;
        if h.params != self.params {
            return Err(Error::Mismatch(tacit_wire::Mismatch::new(
                "parameter",
                self.params.describe(),
                h.params.describe(),
            )));
        }
        check_key_bits(
            &h.key,
            self.min_key_bits.max(self.params.encoding.min_key_bits()),
            self.max_key_bits,
            self.key_floor,
        )?;
        if h.n > self.limits.max_peer_set {
            return Err(Error::SetTooLarge {
                what: "the peer's list",
                len: h.n as usize,
                max: self.limits.max_peer_set as usize,
            });
        }
        let n = h.n.max(self.set.items.len() as u32);
        let worst = (n as u64) * (n as u64);
        if worst > self.limits.max_comparisons {
            return Err(Error::Invalid(format!(
                "a session with lists of {n} may need {worst} comparisons; this party allows {}",
                self.limits.max_comparisons
            )));
        }
        h.proof.verify(&h.key)?;
        let mut ys: Vec<Nat> = self.set.values.iter().map(|v| bn::dup(v)).collect::<Result<_>>()?;
        while ys.len() < n as usize {
            ys.push(self.params.encoding.dummy(rng)?);
        }
        let pool = Arc::new(RnPool::new(&h.key)?);
        let mut nonce = [0u8; 32];
        rng.fill_bytes(&mut nonce);
        let accept = accept_bytes(n, &nonce, &self.rp);
        Ok((
            ResponderAwaiting {
                params: self.params,
                set: self.set,
                key: h.key,
                n,
                ys,
                next: 0,
                answered: None,
                cache: HashMap::new(),
                pool,
                sid: session_id(SESSION_DOMAIN, binding, &nonce),
                comparisons: 0,
                received: 0,
                rp: self.rp,
                fac_context: facproof::context(FACTOR_PROOF_DOMAIN, binding, &nonce),
                proven: false,
            },
            accept,
        ))
    }
}

impl ResponderAwaiting {
    /// A's public key.
    pub fn peer_key(&self) -> &PublicKey {
        &self.key
    }

    /// The agreed length `n`.
    pub fn n(&self) -> u32 {
        self.n
    }

    /// The parameters.
    pub fn params(&self) -> ReconcileParams {
        self.params
    }

    /// The next round expected (0-based).
    pub fn round(&self) -> u32 {
        self.next
    }

    /// The most rounds this session can take ([`Scheme::rounds`] of `n`).
    pub fn rounds(&self) -> u32 {
        self.params.scheme.rounds(self.n)
    }

    /// The pool of `ρⁿ` for A's key (a driver may fill it while waiting).
    pub fn pool(&self) -> Arc<RnPool> {
        self.pool.clone()
    }

    /// Handles A's no-small-factor proof (the message after B's accept): verifies it
    /// against B's ring-Pedersen parameters and this session. Until it verifies, B
    /// computes nothing with A's key and refuses every other message.
    pub fn on_factor_proof(mut self, bytes: &[u8]) -> Result<Self> {
        check_refusal(bytes)?;
        if self.proven {
            return Err(Error::Deviation("a second no-small-factor proof".into()));
        }
        let mut r = Reader::new(bytes);
        r.envelope(TAG_FACTOR_PROOF, "3PR no-small-factor proof")?;
        let proof = FacProof::decode(&mut r, &self.key, self.rp.public())?;
        r.finish()?;
        proof.verify(&self.key, &self.rp, &self.fac_context)?;
        self.proven = true;
        Ok(self)
    }

    /// Whether A's no-small-factor proof verified.
    pub fn is_proven(&self) -> bool {
        self.proven
    }

    /// The largest message A may send next: its no-small-factor proof (first), then
    /// the next round's query (its most entries: one per pair) or the outcome of the
    /// round just answered.
    pub fn max_next_message_len(&self) -> usize {
        if !self.proven {
            return 3 + FacProof::encoded_len(self.key.bits(), self.rp.public().bits());
        }
        let (scheme, n) = (self.params.scheme, self.n);
        let query = if self.next < scheme.rounds(n) {
            Query::len_for(scheme.round_pairs(n, self.next).len(), self.key.bits())
        } else {
            0
        };
        let outcome = match self.answered {
            Some(t) => Outcome::len_for(scheme.round_pairs(n, t).len()),
            None => 0,
        };
        query.max(outcome)
    }

    /// Comparisons of the next round (how many `ρⁿ` it needs), 0 after the last.
    pub fn next_round_size(&self) -> usize {
        if !self.proven || self.next >= self.params.scheme.rounds(self.n) {
            return 0;
        }
        self.params.scheme.round_pairs(self.n, self.next).len()
    }

    /// Handles A's next message: a query (answered) or the outcome.
    pub fn on_message(self, bytes: &[u8], rng: &mut impl CryptoRngCore) -> Result<ResponderStep> {
        check_refusal(bytes)?;
        if !self.proven {
            return Err(Error::Deviation(
                "the first message after the accept must be the no-small-factor proof".into(),
            ));
        }
        match Envelope::peek(bytes)?.tag {
            TAG_QUERY => self.on_query(bytes, rng),
            TAG_OUTCOME => self.on_outcome(bytes).map(ResponderStep::Done),
            other => Err(Error::Wire(tacit_wire::Error::UnexpectedType {
                expected: "3PR query or outcome",
                got: other,
            })),
        }
    }

    fn on_query(mut self, bytes: &[u8], rng: &mut impl CryptoRngCore) -> Result<ResponderStep> {
        let (scheme, n, t) = (self.params.scheme, self.n, self.next);
        if t >= scheme.rounds(n) {
            return Err(Error::Deviation(format!(
                "a query after the last round ({})",
                scheme.rounds(n)
            )));
        }
        let pairs = scheme.round_pairs(n, t);
        let q = Query::from_bytes(bytes, &self.key, pairs.len())?;
        if q.round != t {
            return Err(Error::Deviation(format!(
                "query for round {} while round {t} is due",
                q.round
            )));
        }
        // the ciphertext of each pair, by variant
        let per_pair: Vec<Ciphertext> = match self.params.variant {
            Variant::Implicit => {
                let want = a_positions(scheme, n, t);
                let got: Vec<u32> = q.entries.iter().map(|(p, _)| *p).collect();
                if got != want {
                    return Err(Error::Deviation(format!(
                        "round {t} needs polynomials for positions {want:?}; got {got:?}"
                    )));
                }
                let by: HashMap<u32, &Ciphertext> = q.entries.iter().map(|(p, c)| (*p, c)).collect();
                pairs.iter().map(|(i, _)| by[i].clone()).collect()
            }
            Variant::Explicit => {
                let want: Vec<u32> = pairs.iter().map(|(i, _)| *i).collect();
                let got: Vec<u32> = q.entries.iter().map(|(p, _)| *p).collect();
                if got != want {
                    return Err(Error::Deviation(format!(
                        "round {t} needs one PM query per pair, positions {want:?}; got {got:?}"
                    )));
                }
                q.entries.iter().map(|(_, c)| c.clone()).collect()
            }
            Variant::ExplicitCached => {
                let want: Vec<u32> = a_positions(scheme, n, t)
                    .into_iter()
                    .filter(|i| !self.cache.contains_key(i))
                    .collect();
                let got: Vec<u32> = q.entries.iter().map(|(p, _)| *p).collect();
                if got != want {
                    return Err(Error::Deviation(format!(
                        "round {t} needs the uncached positions {want:?}; got {got:?}"
                    )));
                }
                for (p, c) in q.entries {
                    self.cache.insert(p, c);
                }
                pairs.iter().map(|(i, _)| self.cache[i].clone()).collect()
            }
        };
        self.received += per_pair.len() as u64;
        let s = seeds(rng, pairs.len());
        let (pk, ys, pool, sid) = (&self.key, &self.ys, &self.pool, &self.sid);
        let mut values: Vec<Ciphertext> = pairs
            .par_iter()
            .zip(per_pair.par_iter())
            .zip(s)
            .map(|((&(i, j), c), s)| {
                let y = &ys[j as usize];
                let h = match_tag(MATCH_DOMAIN, sid, i, j, y, pk.n())?;
                evaluate(pk, std::slice::from_ref(c), y, &h, pool, &mut ChaCha20Rng::from_seed(s))
            })
            .collect::<Result<_>>()?;
        for run in position_runs(&pairs) {
            shuffle(&mut values[run], rng);
        }
        self.comparisons += values.len() as u64;
        let a = Answer { round: t, values };
        let bytes = a.to_bytes(&self.key);
        self.answered = Some(t);
        self.next = t + 1;
        Ok(ResponderStep::Answer(self, bytes))
    }

    fn on_outcome(self, bytes: &[u8]) -> Result<Reconciled> {
        let (scheme, n) = (self.params.scheme, self.n);
        let Some(t) = self.answered else {
            return Err(Error::Deviation("an outcome before any round".into()));
        };
        let pairs = scheme.round_pairs(n, t);
        let o = Outcome::from_bytes(bytes, pairs.len())?;
        if o.round != t {
            return Err(Error::Deviation(format!(
                "the outcome names round {} but round {t} ran",
                o.round
            )));
        }
        if o.values.is_empty() && t + 1 < scheme.rounds(n) {
            return Err(Error::Deviation(format!(
                "no match announced after round {t}, but {} rounds remain",
                scheme.rounds(n) - t - 1
            )));
        }
        let own = self.set.items.len() as u32;
        let mut in_round: HashMap<[u8; 16], u32> = HashMap::new();
        for (_, j) in &pairs {
            if *j < own {
                in_round.insert(value_bytes(&self.set.values[*j as usize])?, *j);
            }
        }
        let mut elements = Vec::with_capacity(o.values.len());
        let mut seen = std::collections::HashSet::new();
        for v in &o.values {
            match in_round.get(v) {
                Some(&j) if seen.insert(j) => elements.push(self.set.items[j as usize].clone()),
                Some(_) => return Err(Error::Deviation("the outcome names an element twice".into())),
                None => {
                    return Err(Error::Deviation(format!(
                        "the outcome names an element that is not one of ours in round {t}"
                    )));
                }
            }
        }
        Ok(Reconciled {
            elements,
            rounds: t + 1,
            n,
            comparisons: self.comparisons,
            ciphertexts_sent: self.received,
        })
    }
}

/// The plain computation 3PR replaces: the common elements of maximal combined
/// preference, in A's order, and the round in which the protocol finds them.
pub fn reconcile_in_clear<T: AsRef<[u8]>>(scheme: Scheme, a: &[T], b: &[T]) -> (Vec<Vec<u8>>, u32) {
    let a = dedupe(a);
    let b = dedupe(b);
    let n = a.len().max(b.len()) as u32;
    let mut best: Option<u32> = None;
    let mut out: Vec<(u32, Vec<u8>)> = Vec::new();
    for (i, x) in a.iter().enumerate() {
        if let Some(j) = b.iter().position(|y| y == x) {
            let c = scheme.combined(n, i as u32, j as u32);
            match best {
                Some(bc) if c < bc => {}
                Some(bc) if c == bc => out.push((i as u32, x.clone())),
                _ => {
                    best = Some(c);
                    out = vec![(i as u32, x.clone())];
                }
            }
        }
    }
    let rounds = match best {
        None => scheme.rounds(n),
        Some(c) => match scheme {
            Scheme::Sor => 2 * n - c + 1,
            Scheme::Mor => n - c + 1,
        },
    };
    (out.into_iter().map(|(_, x)| x).collect(), rounds)
}
