//! Set intersection by sort–compare–shuffle with a Waksman network (paper §6.3; the
//! SCS-WN circuit of Huang, Evans, Katz, NDSS 2012).
//!
//! Each party maps its elements to `σ`-bit values (an element that is a decimal
//! number below `2^σ` is taken as it is, any other is hashed: SHA-256, truncated),
//! drops duplicates and sorts them ascending, locally. The circuit
//!
//! 1. **merges** the two sorted lists with Batcher's bitonic merger (A's list, then
//!    B's reversed, is bitonic; padding to a power of two uses public `+∞` slots whose
//!    compare-exchanges cost nothing): `2σ` AND gates per compare-exchange;
//! 2. **compares** neighbours for equality: `eq_j = [m_j = m_{j+1}]`, `σ − 1` ANDs each.
//!    A common element appears exactly twice, next to itself, and no value three
//!    times (each list has distinct values), so `eq_{2i}` and `eq_{2i+1}` are never both
//!    set and both involve `m_{2i+1}`: the pair becomes one result
//!    `(f_i, f_i ∧ m_{2i+1})` with `f_i = eq_{2i} ⊕ eq_{2i+1}` — `σ` ANDs for two
//!    comparisons, and half as many results to shuffle as \[HEK12\]'s one per comparison;
//! 3. **shuffles** the `⌈(N − 1)/2⌉` results (`N = n_A + n_B`) through a Waksman
//!    network programmed by a uniformly random permutation that A (the serving party)
//!    chooses and inputs as the network's control bits: `σ + 1` ANDs per switch.
//!
//! Only B (the querying party) learns the outputs: the shuffled results, whose set
//! flags mark the intersection. **Who chooses the permutation matters**: the position
//! of a result before the shuffle tells where the common element sits in the merged
//! order, that is, how many of the other party's elements are smaller. The shuffle
//! hides it from B because B does not know A's permutation; A, who knows it, learns
//! no output at all. If both parties were to learn the result, each would have to
//! shuffle (two networks), or the permuting party would learn those ranks.
//! Both learn `n_A`, `n_B` and `σ` (they size the circuit); B learns `|S_A ∩ S_B|`,
//! which the intersection itself shows.
//!
//! **Only against a querier that follows the protocol.** GMW is semi-honest: a B that
//! flips its shares of `f_i` on the ANDs `f_i ∧ m_{2i+1}` gets `(¬f_i) ∧ m_{2i+1}`,
//! the merged list's elements, and two such queries give it A's whole set (the test
//! `a_deviating_querier_reads_the_servers_set`). `tacit mpc psi serve` serves only
//! with `--semi-honest-peers`.
//!
//! Sizes per element bit for `n = n_A = n_B` a power of two: `2n(log₂ n + 1)` (merge)
//! `+ (2n − 1)(1 − 1/σ)` (compare) `+ n` (select) `+ (n log₂ n − n + 1)(1 + 1/σ)`
//! (shuffle), about `3n log₂ n + 4n`, against the `5n log₂ n + 6n` per bit of the
//! paper's Table 3.

use super::{Size, split_words};
use crate::circuit::waksman;
use crate::circuit::{Bit, Builder, Circuit, Word};
use crate::gmw::PartyInputs;
use crate::{Error, Party, bits};
use rand_core::RngCore;
use sha2::{Digest, Sha256};

mod service;
pub use service::{BoundServer, NEEDS_SEMI_HONEST, Query, Server, ServerBuilder, ServerEvent};

/// The longest element representation (bits).
pub const MAX_SIGMA: usize = 256;
/// The most elements per party.
pub const MAX_SET: usize = 1 << 16;

/// Parameters of the SCS-WN circuit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PsiParams {
    /// Bits per element `σ`.
    pub sigma: usize,
    /// A's elements (after deduplication).
    pub n_a: usize,
    /// B's elements.
    pub n_b: usize,
}

impl PsiParams {
    fn check(&self) -> Result<(), Error> {
        if !(1..=MAX_SIGMA).contains(&self.sigma) {
            return Err(Error::Params(format!(
                "elements of {} bits; between 1 and {MAX_SIGMA} are supported",
                self.sigma
            )));
        }
        if self.n_a == 0 || self.n_b == 0 || self.n_a > MAX_SET || self.n_b > MAX_SET {
            return Err(Error::Params(format!(
                "sets of {} and {} elements; each must have between 1 and {MAX_SET}",
                self.n_a, self.n_b
            )));
        }
        Ok(())
    }

    /// Results after the compare step (the size of the shuffle).
    pub fn results(&self) -> usize {
        (self.n_a + self.n_b - 1).div_ceil(2)
    }

    /// Control bits of the Waksman network (A's second input).
    pub fn control_bits(&self) -> usize {
        waksman::switch_count(self.results())
    }
}

/// Builds the circuit: input 0 = A's sorted elements (`n_a·σ` bits, element `i` at
/// bits `iσ..(i+1)σ`, little-endian), input 1 = B's, input 2 = A's control bits; one
/// output per result: `σ` value bits, then the flag.
pub fn build(bld: &mut Builder, p: &PsiParams) -> Result<Vec<Word>, Error> {
    p.check()?;
    let s = p.sigma;
    let ia = bld.input(p.n_a * s);
    let ib = bld.input(p.n_b * s);
    let ctl = bld.input(p.control_bits());
    let wa = split_words(&ia, &vec![s; p.n_a]);
    let wb = split_words(&ib, &vec![s; p.n_b]);
    let m = bld.merge_sorted(wa, wb, s);
    let n = m.len();
    let eq: Vec<Bit> = (0..n - 1).map(|j| bld.eq(&m[j], &m[j + 1])).collect();
    let mut results = Vec::with_capacity(p.results());
    for i in 0..p.results() {
        let e0 = eq[2 * i];
        let e1 = eq.get(2 * i + 1).copied().unwrap_or(Bit::ZERO);
        let f = bld.xor(e0, e1);
        let mut v = bld.and_word(f, &m[2 * i + 1]);
        v.push(f);
        results.push(v);
    }
    bld.waksman(results, &ctl)
}

/// The circuit.
pub fn circuit(p: &PsiParams) -> Result<Circuit, Error> {
    let mut b = Builder::new();
    let outs = build(&mut b, p)?;
    b.finish(&outs)
}

/// AND gates and depth without holding the circuit.
pub fn size(p: &PsiParams) -> Result<Size, Error> {
    super::count(|b| build(b, p).map(|_| ()))
}

/// About how many bytes one party takes to build the circuit of `p`, layer it and
/// run it (one instance): the gates and wires as [`bristol::memory_estimate`] counts
/// them, the triples (three bits per AND gate, twice while they are made) and a word
/// per wire. Counted without holding the circuit (a counting build: 4 bytes a wire,
/// and about a fifth of the build's time), so a server can refuse a query it cannot
/// afford before it builds anything ([`serve_within`]).
///
/// [`bristol::memory_estimate`]: crate::circuit::bristol::memory_estimate
pub fn footprint(p: &PsiParams) -> Result<u64, Error> {
    let mut b = Builder::counting();
    build(&mut b, p)?;
    let c = b.counts();
    let gates = (c.and_gates + c.free_gates) as u64;
    let wires = b.wires();
    Ok(crate::circuit::bristol::memory_estimate(gates, wires)
        .saturating_add((c.and_gates as u64 * 6).div_ceil(8))
        .saturating_add(wires / 8))
}

/// Who owns which input: A its elements and the control bits, B its elements.
pub fn owners() -> Vec<Party> {
    vec![Party::A, Party::B, Party::A]
}

/// A `σ`-bit element value, big-endian in `⌈σ/8⌉` bytes (high unused bits zero).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Element(pub Vec<u8>);

/// Maps an element to `σ` bits: a decimal number below `2^σ` (and below 2^128) is
/// taken as it is; anything else is `SHA-256("tacit-mpc psi element v1" ‖ e)`
/// truncated to its low `σ` bits. Returns the value and whether it was hashed.
pub fn map_element(e: &str, sigma: usize) -> (Element, bool) {
    let nb = sigma.div_ceil(8);
    let direct = if !e.is_empty() && e.len() <= 39 && e.bytes().all(|c| c.is_ascii_digit()) {
        e.parse::<u128>().ok().filter(|&v| sigma >= 128 || v >> sigma == 0)
    } else {
        None
    };
    let mut out = vec![0u8; nb];
    let hashed = match direct {
        Some(v) => {
            let be = v.to_be_bytes();
            let take = nb.min(16);
            out[nb - take..].copy_from_slice(&be[16 - take..]);
            false
        }
        None => {
            let mut h = Sha256::new();
            h.update(b"tacit-mpc psi element v1");
            h.update(e.as_bytes());
            let d = h.finalize();
            let take = nb.min(32);
            out[nb - take..].copy_from_slice(&d[32 - take..]);
            true
        }
    };
    if !sigma.is_multiple_of(8) {
        out[0] &= (1u8 << (sigma % 8)) - 1;
    }
    (Element(out), hashed)
}

/// A party's prepared set: distinct `σ`-bit values, ascending, and for each the
/// original elements that map to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreparedSet {
    /// `σ`.
    pub sigma: usize,
    /// Distinct values, ascending.
    pub values: Vec<Element>,
    /// The original elements of each value (more than one: a collision in this set).
    pub originals: Vec<Vec<String>>,
    /// Whether any element was hashed.
    pub hashed: bool,
}

impl PreparedSet {
    /// Maps, deduplicates and sorts `elements`.
    pub fn new(elements: &[String], sigma: usize) -> Result<Self, Error> {
        if !(1..=MAX_SIGMA).contains(&sigma) {
            return Err(Error::Params(format!(
                "elements of {sigma} bits; between 1 and {MAX_SIGMA} are supported"
            )));
        }
        let mut m: std::collections::BTreeMap<Element, Vec<String>> = Default::default();
        let mut hashed = false;
        for e in elements {
            let (v, h) = map_element(e, sigma);
            hashed |= h;
            let entry = m.entry(v).or_default();
            if !entry.contains(e) {
                entry.push(e.clone());
            }
        }
        if m.len() > MAX_SET {
            return Err(Error::Input(format!(
                "the set has {} distinct elements; the limit is {MAX_SET}",
                m.len()
            )));
        }
        if m.is_empty() {
            return Err(Error::Input("the set is empty".into()));
        }
        let (values, originals) = m.into_iter().unzip();
        Ok(PreparedSet {
            sigma,
            values,
            originals,
            hashed,
        })
    }

    /// The values as circuit input bits (element `i` at bits `iσ..`, little-endian).
    pub fn bits(&self) -> Vec<bool> {
        let mut out = Vec::with_capacity(self.values.len() * self.sigma);
        for v in &self.values {
            let b = bits::bits_from_be_bytes(&v.0);
            out.extend_from_slice(&b[..self.sigma]);
        }
        out
    }

    /// The probability bound that some pair of different elements of the two sets
    /// maps to the same value: `n_A·n_B / 2^σ` (when hashing was used; 0 otherwise).
    pub fn false_positive_bound(&self, peer_size: usize, peer_hashed: bool) -> f64 {
        if !self.hashed && !peer_hashed {
            return 0.0;
        }
        (self.values.len() as f64 * peer_size as f64 / 2f64.powi(self.sigma as i32)).min(1.0)
    }
}

/// A's inputs: its sorted values and the control bits of a uniformly random
/// permutation of the results.
pub fn inputs_a(p: &PsiParams, set: &PreparedSet, rng: &mut impl RngCore) -> Result<PartyInputs, Error> {
    if set.values.len() != p.n_a || set.sigma != p.sigma {
        return Err(Error::Input("A's set does not match the parameters".into()));
    }
    let k = p.results();
    let mut perm: Vec<usize> = (0..k).collect();
    // Fisher–Yates with rejection sampling (no modulo bias).
    for i in (1..k).rev() {
        let bound = (i + 1) as u64;
        let zone = u64::MAX - u64::MAX % bound;
        let j = loop {
            let r = rng.next_u64();
            if r < zone {
                break (r % bound) as usize;
            }
        };
        perm.swap(i, j);
    }
    let ctl = waksman::route(&perm)?;
    Ok(PartyInputs {
        values: vec![Some(vec![set.bits()]), None, Some(vec![ctl])],
    })
}

/// B's inputs.
pub fn inputs_b(p: &PsiParams, set: &PreparedSet) -> Result<PartyInputs, Error> {
    if set.values.len() != p.n_b || set.sigma != p.sigma {
        return Err(Error::Input("B's set does not match the parameters".into()));
    }
    Ok(PartyInputs {
        values: vec![None, Some(vec![set.bits()]), None],
    })
}

/// B reads the outputs of one instance: the values whose flag is set.
pub fn decode(p: &PsiParams, out: &[Vec<bool>]) -> Result<Vec<Element>, Error> {
    if out.len() != p.results() || out.iter().any(|o| o.len() != p.sigma + 1) {
        return Err(Error::Params(
            "the outputs do not have the SCS-WN circuit's shape".into(),
        ));
    }
    let nb = p.sigma.div_ceil(8);
    let mut res = Vec::new();
    for o in out {
        if o[p.sigma] {
            let mut v = o[..p.sigma].to_vec();
            v.resize(nb * 8, false);
            res.push(Element(bits::be_bytes_from_bits(&v)));
        }
    }
    res.sort();
    Ok(res)
}

/// The plaintext function: the common values, ascending.
pub fn reference(a: &PreparedSet, b: &PreparedSet) -> Vec<Element> {
    let sa: std::collections::BTreeSet<&Element> = a.values.iter().collect();
    b.values.iter().filter(|v| sa.contains(v)).cloned().collect()
}

/// Session parameters, sent by the querier and answered by the server (tag `0x0531`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PsiHello {
    /// Bits per element.
    pub sigma: u16,
    /// Distinct elements of the sender's set.
    pub set_size: u32,
    /// Whether the sender hashed any element (for the false-positive bound).
    pub hashed: bool,
}

impl tacit_wire::Encode for PsiHello {
    fn encode(&self, w: &mut tacit_wire::Writer) {
        w.put_envelope(crate::messages::tags::PSI_HELLO);
        w.put_u16(self.sigma);
        w.put_u32(self.set_size);
        w.put_u8(self.hashed as u8);
    }
}

impl tacit_wire::Decode for PsiHello {
    fn decode(r: &mut tacit_wire::Reader<'_>) -> tacit_wire::Result<Self> {
        r.envelope(crate::messages::tags::PSI_HELLO, "set intersection hello")?;
        let sigma = r.u16()?;
        let set_size = r.u32()?;
        let hashed = match r.u8()? {
            0 => false,
            1 => true,
            v => return Err(tacit_wire::Error::invalid("hashed flag", format!("{v}"))),
        };
        if sigma == 0 || sigma as usize > MAX_SIGMA || set_size == 0 || set_size as usize > MAX_SET {
            return Err(tacit_wire::Error::invalid(
                "set intersection hello",
                format!("{set_size} elements of {sigma} bits"),
            ));
        }
        Ok(PsiHello {
            sigma,
            set_size,
            hashed,
        })
    }
}

/// What a session did, as one party saw it.
#[derive(Debug, Clone)]
pub struct PsiReport {
    /// The circuit's parameters.
    pub params: PsiParams,
    /// Building the circuit (both parties build it after the hellos).
    pub build: std::time::Duration,
    /// Triples, setup and online statistics.
    pub run: crate::driver::RunReport,
    /// The false-positive bound `n_A·n_B/2^σ` when hashing was used.
    pub false_positive_bound: f64,
}

/// The querier's result: the common elements (its own originals), sorted.
#[derive(Debug, Clone)]
pub struct PsiResult {
    /// Elements of the querier's set that are in the intersection.
    pub elements: Vec<String>,
    /// The session.
    pub report: PsiReport,
}

fn session_config(p: &PsiParams) -> crate::driver::SessionConfig {
    let mut h = Sha256::new();
    h.update(b"tacit-mpc psi scs-wn v1");
    h.update((p.sigma as u64).to_be_bytes());
    h.update((p.n_a as u64).to_be_bytes());
    h.update((p.n_b as u64).to_be_bytes());
    crate::driver::SessionConfig::new(1, owners())
        .with_outputs(crate::gmw::OutputTo::B)
        .with_context(h.finalize().into())
}

/// Serves one query (party A: listened, chooses the shuffle, learns nothing): reads
/// the querier's hello, answers with its own, runs the circuit. `max_peer` bounds the
/// querier's set size. The querier chooses its set size (up to `max_peer`), and with
/// it the size of the circuit the server builds: [`serve_within`] also bounds the
/// memory that takes.
pub async fn serve<S: crate::driver::TripleSource>(
    conn: &mut tacit_net::FramedConn,
    set: &PreparedSet,
    max_peer: usize,
    source: &mut S,
    rng: &mut impl rand_core::CryptoRngCore,
) -> Result<PsiReport, Error> {
    serve_within(conn, set, max_peer, None, source, rng).await
}

/// [`serve`], refusing (with an [`ErrorMessage`](tacit_wire::ErrorMessage) to the
/// querier, before anything is built) a query whose circuit would take more than
/// `max_bytes` ([`footprint`]). One session's check; a server running sessions side
/// by side shares one [`MemoryBudget`] among them ([`serve_reserving`]).
pub async fn serve_within<S: crate::driver::TripleSource>(
    conn: &mut tacit_net::FramedConn,
    set: &PreparedSet,
    max_peer: usize,
    max_bytes: Option<u64>,
    source: &mut S,
    rng: &mut impl rand_core::CryptoRngCore,
) -> Result<PsiReport, Error> {
    let budget = max_bytes.map(MemoryBudget::new);
    serve_reserving(conn, set, max_peer, budget.as_ref(), source, rng).await
}

/// The memory a server's sessions may take together: each session reserves its
/// circuit's [`footprint`] before it builds anything and gives it back when it ends
/// (its [`Reservation`] is dropped), so queriers arriving at once cannot each pass a
/// check against the same free memory.
#[derive(Debug)]
pub struct MemoryBudget {
    total: u64,
    used: std::sync::Mutex<u64>,
}

/// Bytes reserved from a [`MemoryBudget`], given back on drop.
#[derive(Debug)]
pub struct Reservation {
    budget: std::sync::Arc<MemoryBudget>,
    bytes: u64,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        let mut used = self.budget.used.lock().unwrap_or_else(|e| e.into_inner());
        *used = used.saturating_sub(self.bytes);
    }
}

impl MemoryBudget {
    /// A budget of `total` bytes, none reserved.
    pub fn new(total: u64) -> std::sync::Arc<Self> {
        std::sync::Arc::new(MemoryBudget {
            total,
            used: std::sync::Mutex::new(0),
        })
    }

    /// Bytes not reserved now.
    pub fn left(&self) -> u64 {
        let used = *self.used.lock().unwrap_or_else(|e| e.into_inner());
        self.total.saturating_sub(used)
    }

    /// Reserves `bytes`, or returns what is left when they do not fit.
    pub fn try_reserve(self: &std::sync::Arc<Self>, bytes: u64) -> Result<Reservation, u64> {
        let mut used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        let left = self.total.saturating_sub(*used);
        if bytes > left {
            return Err(left);
        }
        *used += bytes;
        Ok(Reservation {
            budget: self.clone(),
            bytes,
        })
    }
}

/// A byte count for a person: `512 B`, `12.5 KiB`, `3.0 MiB`, `1.2 GiB` (never "0 MiB"
/// for a small budget).
pub fn human_bytes(b: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if b < 1024 {
        return format!("{b} B");
    }
    let mut v = b as f64 / 1024.0;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if v < 100.0 {
        format!("{v:.1} {}", UNITS[u])
    } else {
        format!("{v:.0} {}", UNITS[u])
    }
}

/// [`serve`] with the session's circuit reserved from `budget`, shared by the
/// sessions running side by side: a query whose [`footprint`] does not fit what the
/// other sessions left is refused (an [`ErrorMessage`](tacit_wire::ErrorMessage) to
/// the querier) before anything is built; the reservation lasts until the session
/// ends.
pub async fn serve_reserving<S: crate::driver::TripleSource>(
    conn: &mut tacit_net::FramedConn,
    set: &PreparedSet,
    max_peer: usize,
    budget: Option<&std::sync::Arc<MemoryBudget>>,
    source: &mut S,
    rng: &mut impl rand_core::CryptoRngCore,
) -> Result<PsiReport, Error> {
    use tacit_wire::{Decode, Encode};
    let got = conn.recv().await?;
    crate::driver::refused(&got)?;
    let q = PsiHello::from_wire(&got)?;
    let mut _reserved = None;
    let refuse = if q.sigma as usize != set.sigma {
        Some(format!(
            "the server compares {}-bit elements, not {}-bit",
            set.sigma, q.sigma
        ))
    } else if q.set_size as usize > max_peer {
        Some(format!(
            "the query has {} elements; this server takes at most {max_peer}",
            q.set_size
        ))
    } else if let Some(budget) = budget {
        let p = PsiParams {
            sigma: set.sigma,
            n_a: set.values.len(),
            n_b: q.set_size as usize,
        };
        let need = footprint(&p)?;
        match budget.try_reserve(need) {
            Ok(r) => {
                _reserved = Some(r);
                None
            }
            Err(left) => Some(format!(
                "a query of {} elements takes about {} here; this server may use {} now: try fewer elements or later",
                q.set_size,
                human_bytes(need),
                human_bytes(left)
            )),
        }
    } else {
        None
    };
    if let Some(why) = refuse {
        let _ = conn.send(&tacit_wire::ErrorMessage::new(why.clone()).to_wire()).await;
        return Err(Error::Peer(why));
    }
    let mine = PsiHello {
        sigma: set.sigma as u16,
        set_size: set.values.len() as u32,
        hashed: set.hashed,
    };
    conn.send(&mine.to_wire()).await?;
    let p = PsiParams {
        sigma: set.sigma,
        n_a: set.values.len(),
        n_b: q.set_size as usize,
    };
    let t = std::time::Instant::now();
    let lc = crate::circuit::LayeredCircuit::new(circuit(&p)?);
    let inputs = inputs_a(&p, set, rng)?;
    let build = t.elapsed();
    let run = crate::driver::run(conn, &lc, Party::A, &session_config(&p), &inputs, source, rng).await?;
    Ok(PsiReport {
        params: p,
        build,
        run,
        false_positive_bound: set.false_positive_bound(p.n_b, q.hashed),
    })
}

/// Queries a server (party B: connected, learns the intersection).
pub async fn query<S: crate::driver::TripleSource>(
    conn: &mut tacit_net::FramedConn,
    set: &PreparedSet,
    max_peer: usize,
    source: &mut S,
    rng: &mut impl rand_core::CryptoRngCore,
) -> Result<PsiResult, Error> {
    use tacit_wire::{Decode, Encode};
    let mine = PsiHello {
        sigma: set.sigma as u16,
        set_size: set.values.len() as u32,
        hashed: set.hashed,
    };
    conn.send(&mine.to_wire()).await?;
    let got = conn.recv().await?;
    crate::driver::refused(&got)?;
    let s = PsiHello::from_wire(&got)?;
    if s.sigma as usize != set.sigma {
        return Err(Error::Peer(format!("answered for {}-bit elements", s.sigma)));
    }
    if s.set_size as usize > max_peer {
        return Err(Error::Peer(format!(
            "has {} elements; at most {max_peer} are accepted",
            s.set_size
        )));
    }
    let p = PsiParams {
        sigma: set.sigma,
        n_a: s.set_size as usize,
        n_b: set.values.len(),
    };
    let t = std::time::Instant::now();
    let lc = crate::circuit::LayeredCircuit::new(circuit(&p)?);
    let inputs = inputs_b(&p, set)?;
    let build = t.elapsed();
    let run = crate::driver::run(conn, &lc, Party::B, &session_config(&p), &inputs, source, rng).await?;
    let common = decode(&p, &run.outputs.values[0])?;
    let mut elements = Vec::new();
    for v in &common {
        let i = set
            .values
            .binary_search(v)
            .map_err(|_| Error::Peer("the outputs name a value outside our set".into()))?;
        elements.extend(set.originals[i].iter().cloned());
    }
    elements.sort();
    Ok(PsiResult {
        elements,
        report: PsiReport {
            params: p,
            build,
            run,
            false_positive_bound: set.false_positive_bound(p.n_a, s.hashed),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;

    fn run_clear(p: &PsiParams, a: &PreparedSet, b: &PreparedSet, seed: u64) -> Vec<Vec<bool>> {
        let c = circuit(p).unwrap();
        let ia = inputs_a(p, a, &mut ChaCha20Rng::seed_from_u64(seed)).unwrap();
        let ib = inputs_b(p, b).unwrap();
        let take = |x: &Option<Vec<Vec<bool>>>| x.as_ref().unwrap()[0].clone();
        c.eval(&[take(&ia.values[0]), take(&ib.values[1]), take(&ia.values[2])])
            .unwrap()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]
        #[test]
        fn circuit_matches_the_intersection(
            xs in proptest::collection::vec(0u32..40, 1..12),
            ys in proptest::collection::vec(0u32..40, 1..12),
            sigma in 6usize..12,
            seed in any::<u64>(),
        ) {
            let sa: Vec<String> = xs.iter().map(|x| x.to_string()).collect();
            let sb: Vec<String> = ys.iter().map(|x| x.to_string()).collect();
            let a = PreparedSet::new(&sa, sigma).unwrap();
            let b = PreparedSet::new(&sb, sigma).unwrap();
            let p = PsiParams { sigma, n_a: a.values.len(), n_b: b.values.len() };
            let out = run_clear(&p, &a, &b, seed);
            prop_assert_eq!(decode(&p, &out).unwrap(), reference(&a, &b));
        }
    }

    #[test]
    fn value_zero_and_hashed_elements() {
        let a = PreparedSet::new(&["0".into(), "alice@example.org".into(), "7".into()], 24).unwrap();
        let b = PreparedSet::new(&["0".into(), "bob@example.org".into(), "alice@example.org".into()], 24).unwrap();
        assert!(a.hashed);
        let p = PsiParams {
            sigma: 24,
            n_a: 3,
            n_b: 3,
        };
        let got = decode(&p, &run_clear(&p, &a, &b, 1)).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got, reference(&a, &b));
        assert!(a.false_positive_bound(3, false) > 0.0);
        let plain = PreparedSet::new(&["1".into()], 24).unwrap();
        assert_eq!(plain.false_positive_bound(5, false), 0.0);
    }

    #[test]
    fn the_shuffle_moves_results() {
        // The same sets under two permutations give the same intersection at
        // different positions (with overwhelming probability for 32 results).
        let sa: Vec<String> = (0..32).map(|x: u32| (2 * x).to_string()).collect();
        let sb: Vec<String> = (0..32).map(|x: u32| (3 * x).to_string()).collect();
        let a = PreparedSet::new(&sa, 16).unwrap();
        let b = PreparedSet::new(&sb, 16).unwrap();
        let p = PsiParams {
            sigma: 16,
            n_a: 32,
            n_b: 32,
        };
        let o1 = run_clear(&p, &a, &b, 1);
        let o2 = run_clear(&p, &a, &b, 2);
        assert_ne!(o1, o2);
        assert_eq!(decode(&p, &o1).unwrap(), decode(&p, &o2).unwrap());
    }

    #[test]
    fn counting_and_building_agree_and_beat_the_paper() {
        let p = PsiParams {
            sigma: 24,
            n_a: 32,
            n_b: 32,
        };
        let s = circuit(&p).unwrap().stats();
        let n = size(&p).unwrap();
        assert_eq!((s.and_gates, s.and_depth), (n.and_gates, n.depth));
        for sigma in super::super::paper::PSI_BITS {
            for n in super::super::paper::PSI_SIZES {
                let ours = size(&PsiParams { sigma, n_a: n, n_b: n }).unwrap();
                let paper = super::super::paper::psi(sigma, n).unwrap();
                assert!(ours.and_gates <= paper, "σ={sigma} n={n}: {} > {paper}", ours.and_gates);
            }
        }
    }

    /// The AND gates `f_i ∧ m_{2i+1}` of the select step, as (layer, index in the
    /// layer) of [`LayeredCircuit`]'s cut. `f_i = eq_{2i} ⊕ eq_{2i+1}` is an XOR of two
    /// AND outputs (the roots of the two equality trees), or one root where the pair
    /// has a single comparison, and it feeds exactly σ ANDs. (The merge's swap bits,
    /// the other wires feeding σ ANDs, are carries `c ⊕ (… ∧ …)` whose `c` is an XOR
    /// for σ ≥ 3; the shuffle's control bits are circuit inputs.)
    fn select_gates(c: &Circuit, sigma: usize) -> Vec<(usize, usize)> {
        use crate::circuit::Gate;
        let mut uses = vec![0usize; c.num_wires()];
        let mut and_out = vec![false; c.num_wires()];
        let mut flag = vec![false; c.num_wires()];
        for g in c.gates() {
            if let Gate::And { a, b, out } = *g {
                uses[a as usize] += 1;
                uses[b as usize] += 1;
                and_out[out as usize] = true;
            }
        }
        for g in c.gates() {
            match *g {
                Gate::Xor { a, b, out } if and_out[a as usize] && and_out[b as usize] => flag[out as usize] = true,
                Gate::And { out, .. } => flag[out as usize] = true,
                _ => {}
            }
        }
        let mut level = vec![0u32; c.num_wires()];
        let mut count: std::collections::HashMap<u32, usize> = Default::default();
        let mut found = Vec::new();
        for g in c.gates() {
            let (ins, n) = g.inputs();
            let mut l = ins[..n].iter().map(|&w| level[w as usize]).max().unwrap_or(0);
            if let Gate::And { a, .. } = *g {
                l += 1;
                let k = count.entry(l).or_default();
                if uses[a as usize] == sigma && flag[a as usize] {
                    found.push((l as usize, *k));
                }
                *k += 1;
            }
            level[g.output() as usize] = l;
        }
        found
    }

    /// Runs one session in memory; B flips its shares of the first inputs of the
    /// select ANDs when `deviate`. Returns B's raw outputs (σ value bits and the
    /// flag per result).
    fn session(a: &PreparedSet, b: &PreparedSet, deviate: bool, seed: u64) -> Vec<Vec<bool>> {
        use crate::circuit::LayeredCircuit;
        use crate::gmw::{Online, OutputTo, Step};
        use crate::prg::Seed;
        let p = PsiParams {
            sigma: a.sigma,
            n_a: a.values.len(),
            n_b: b.values.len(),
        };
        let c = circuit(&p).unwrap();
        let gates = select_gates(&c, p.sigma);
        assert_eq!(gates.len(), p.sigma * p.results(), "one AND per value bit and result");
        let lc = LayeredCircuit::new(c);
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let (ta, tb) = crate::triples::deal(lc.and_gates(), &mut rng);
        let (sa, sb) = (Seed::random(&mut rng), Seed::random(&mut rng));
        let ia = inputs_a(&p, a, &mut rng).unwrap();
        let ib = inputs_b(&p, b).unwrap();
        let mut sta = Online::start_to(&lc, Party::A, &owners(), 1, &ia, &sa, &sb, ta, OutputTo::B).unwrap();
        let mut stb = Online::start_to(&lc, Party::B, &owners(), 1, &ib, &sb, &sa, tb, OutputTo::B).unwrap();
        loop {
            match (sta, stb) {
                (Step::Layer(x, ma), Step::Layer(mut y, mut mb)) => {
                    // d bits of this layer's select ANDs (one instance: bit k for AND k).
                    let here: Vec<usize> = gates.iter().filter(|g| g.0 == y.layer()).map(|g| g.1).collect();
                    if deviate && !here.is_empty() {
                        y.deviate(&mut mb, &here);
                    }
                    sta = x.on_layer(&mb).unwrap();
                    stb = y.on_layer(&ma).unwrap();
                }
                (Step::Reveal(x, ma), Step::Reveal(y, mb)) => {
                    assert!(x.on_outputs(&mb).unwrap().values.is_empty());
                    return y.on_outputs(&ma).unwrap().values.remove(0);
                }
                _ => panic!("out of step"),
            }
        }
    }

    /// Item 4 of issue 27, the hostile querier, kept as the test that documents the
    /// leak (GMW here is semi-honest; `tacit mpc psi serve` serves only with
    /// `--semi-honest-peers`). B flips its shares of `f_i` on the ANDs
    /// `f_i ∧ m_{2i+1}`, so each result carries `(¬f_i) ∧ m_{2i+1}`: the odd
    /// elements of the merged list. With the query {max} those are A's elements at
    /// odd positions of its sorted list; with {0, max}, at even positions. Two
    /// queries — whose honest answers are empty — give B all of A's set.
    #[test]
    fn a_deviating_querier_reads_the_servers_set() {
        let sigma = 8;
        let server: Vec<String> = [5u32, 9, 12, 20, 33, 77, 130, 201]
            .iter()
            .map(|x| x.to_string())
            .collect();
        let a = PreparedSet::new(&server, sigma).unwrap();
        let mut read = std::collections::BTreeSet::new();
        for q in [&["255"][..], &["0", "255"][..]] {
            let b = PreparedSet::new(&q.iter().map(|s| s.to_string()).collect::<Vec<_>>(), sigma).unwrap();
            let p = PsiParams {
                sigma,
                n_a: a.values.len(),
                n_b: b.values.len(),
            };
            // Honestly, nothing is common.
            assert!(decode(&p, &session(&a, &b, false, 1)).unwrap().is_empty());
            for r in session(&a, &b, true, 2) {
                let v: u32 = (0..sigma).map(|k| (r[k] as u32) << k).sum();
                if v != 0 && v != 255 {
                    read.insert(v.to_string());
                }
            }
        }
        let want: std::collections::BTreeSet<String> = server.into_iter().collect();
        assert_eq!(read, want, "the deviating querier read the server's whole set");
    }

    #[test]
    fn bad_parameters_are_errors() {
        assert!(PreparedSet::new(&[], 32).is_err());
        assert!(PreparedSet::new(&["x".into()], 0).is_err());
        assert!(
            circuit(&PsiParams {
                sigma: 8,
                n_a: 0,
                n_b: 3
            })
            .is_err()
        );
        let a = PreparedSet::new(&["1".into()], 8).unwrap();
        let p = PsiParams {
            sigma: 8,
            n_a: 2,
            n_b: 1,
        };
        assert!(inputs_b(&p, &a).is_ok());
        assert!(inputs_a(&p, &a, &mut ChaCha20Rng::seed_from_u64(0)).is_err());
    }
}
