//! The online phase of two-party GMW (paper §2.4), sans-I/O.
//!
//! Every wire carries an XOR sharing `v = v_A ⊕ v_B`. XOR and INV are local (only A
//! flips on INV and adds constants). An AND gate `z = x ∧ y` consumes one triple
//! `(a_i, b_i, c_i)`: each party publishes `d_i = x_i ⊕ a_i` and `e_i = y_i ⊕ b_i`,
//! both compute `d = d_A ⊕ d_B`, `e = e_A ⊕ e_B` and set
//!
//! ```text
//! z_i = c_i ⊕ (d ∧ b_i) ⊕ (e ∧ a_i) ⊕ [i = A]·(d ∧ e)
//! ```
//!
//! so that `z_A ⊕ z_B = c ⊕ d·b ⊕ e·a ⊕ d·e = x·y`. All ANDs of one AND layer travel
//! in one message, so the online phase takes `d(f)` round trips plus one to open the
//! outputs. Values are bit-sliced: a wire holds `⌈n/64⌉` words for `n` parallel
//! instances, and a layer's `d`/`e` bits are packed densely (`k·n` bits for `k` ANDs),
//! so one word operation handles 64 gates or 64 instances.
//!
//! Inputs are shared without an online message: the owner of an input value chose a
//! seed in the setup phase and sent it to the peer; the peer's share is the seed's
//! keystream and the owner's share is its input XOR that keystream.

use crate::bits;
use crate::circuit::{Gate, LayeredCircuit, eval_gate_words};
use crate::messages::{LayerMessage, OutputMessage};
use crate::prg::{Prg, Seed};
use crate::triples::TripleShares;
use crate::{Error, Party};
use zeroize::Zeroize;

/// State value `d` of the input-mask keystreams.
const INPUT_MASK_D: u64 = 0x6d70_635f_696e_7075; // "mpc_inpu"

/// One party's inputs for `n` instances: `values[i]` is `Some(instances)` for every
/// input value this party owns (one `Vec<bool>` of the value's width per instance) and
/// `None` for the peer's.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct PartyInputs {
    /// Per input value.
    pub values: Vec<Option<Vec<Vec<bool>>>>,
}

impl std::fmt::Debug for PartyInputs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PartyInputs(..)")
    }
}

impl Drop for PartyInputs {
    fn drop(&mut self) {
        for v in self.values.iter_mut().flatten() {
            for i in v.iter_mut() {
                i.zeroize();
            }
        }
    }
}

/// Who learns the outputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum OutputTo {
    /// Both parties (each sends its output shares to the other).
    #[default]
    Both,
    /// Only A (B sends its shares; A sends an empty message).
    A,
    /// Only B.
    B,
}

impl OutputTo {
    /// Whether `party` learns the outputs.
    pub fn includes(self, party: Party) -> bool {
        match self {
            OutputTo::Both => true,
            OutputTo::A => party == Party::A,
            OutputTo::B => party == Party::B,
        }
    }

    pub(crate) fn code(self) -> u8 {
        match self {
            OutputTo::Both => 0,
            OutputTo::A => 1,
            OutputTo::B => 2,
        }
    }

    pub(crate) fn from_code(c: u8) -> tacit_wire::Result<OutputTo> {
        Ok(match c {
            0 => OutputTo::Both,
            1 => OutputTo::A,
            2 => OutputTo::B,
            _ => {
                return Err(tacit_wire::Error::invalid(
                    "output receiver",
                    format!("unknown code {c}"),
                ));
            }
        })
    }
}

/// Who owns which input value.
pub fn default_owners(inputs: usize) -> Vec<Party> {
    (0..inputs).map(|i| if i == 0 { Party::A } else { Party::B }).collect()
}

/// The online phase, between two AND layers.
pub struct Online<'c> {
    lc: &'c LayeredCircuit,
    party: Party,
    n: usize,
    words: usize,
    vals: Vec<u64>,
    ones: Vec<u64>,
    triples: TripleShares,
    t_off: usize,
    layer: usize,
    mine: Vec<u64>,
    scratch: [Vec<u64>; 4],
    outputs: OutputTo,
}

impl std::fmt::Debug for Online<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Online")
            .field("party", &self.party)
            .field("instances", &self.n)
            .field("layer", &self.layer)
            .finish_non_exhaustive()
    }
}

impl Drop for Online<'_> {
    fn drop(&mut self) {
        self.vals.zeroize();
        self.mine.zeroize();
        for s in self.scratch.iter_mut() {
            s.zeroize();
        }
    }
}

/// What to do next.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // moved once per layer; boxing would allocate per layer
pub enum Step<'c> {
    /// Send the message (this party's `d`, `e` bits of the next AND layer) and feed
    /// the peer's message of the same layer to [`Online::on_layer`].
    Layer(Online<'c>, Vec<u8>),
    /// Send the message (this party's output shares) and feed the peer's to
    /// [`Reveal::on_outputs`].
    Reveal(Reveal, Vec<u8>),
}

/// Waiting for the peer's output shares.
pub struct Reveal {
    n: usize,
    out_bits: usize,
    widths: Vec<u32>,
    mine: Vec<u64>,
    receive: bool,
}

impl std::fmt::Debug for Reveal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Reveal({} instances)", self.n)
    }
}

impl Drop for Reveal {
    fn drop(&mut self) {
        self.mine.zeroize();
    }
}

/// The outputs: `values[j][o]` is output value `o` of instance `j`, in wire order
/// (empty for a party that does not learn the outputs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outputs {
    /// Per instance, per output value.
    pub values: Vec<Vec<Vec<bool>>>,
}

impl<'c> Online<'c> {
    /// Starts the online phase: shares the inputs with the setup-phase seeds
    /// (`own_seed` for this party's inputs, `peer_seed` for the peer's), evaluates the
    /// free gates on them and returns the first message.
    ///
    /// `triples` must hold at least `|f| · n` triples. Both parties learn the outputs
    /// ([`Online::start_to`] chooses who does).
    #[allow(clippy::too_many_arguments)]
    pub fn start(
        lc: &'c LayeredCircuit,
        party: Party,
        owners: &[Party],
        instances: usize,
        inputs: &PartyInputs,
        own_seed: &Seed,
        peer_seed: &Seed,
        triples: TripleShares,
    ) -> Result<Step<'c>, Error> {
        Self::start_to(
            lc,
            party,
            owners,
            instances,
            inputs,
            own_seed,
            peer_seed,
            triples,
            OutputTo::Both,
        )
    }

    /// [`Online::start`] with the outputs opened only to `outputs`: the other party
    /// sends its output shares and receives an empty message.
    #[allow(clippy::too_many_arguments)]
    pub fn start_to(
        lc: &'c LayeredCircuit,
        party: Party,
        owners: &[Party],
        instances: usize,
        inputs: &PartyInputs,
        own_seed: &Seed,
        peer_seed: &Seed,
        triples: TripleShares,
        outputs: OutputTo,
    ) -> Result<Step<'c>, Error> {
        let c = lc.circuit();
        let n = instances;
        if n == 0 {
            return Err(Error::Params("at least one instance is needed".into()));
        }
        if owners.len() != c.input_widths().len() || inputs.values.len() != owners.len() {
            return Err(Error::Input(format!(
                "the circuit has {} input values; {} owners and {} inputs were given",
                c.input_widths().len(),
                owners.len(),
                inputs.values.len()
            )));
        }
        let need = lc
            .and_gates()
            .checked_mul(n)
            .ok_or_else(|| Error::Params("too many triples".into()))?;
        if triples.len() < need {
            return Err(Error::Triples(format!(
                "the circuit needs {need} triples for {n} instances; {} are available",
                triples.len()
            )));
        }
        let words = bits::words_for(n);
        // One row of words per slot (wires alive at once), not per wire.
        let mut vals = vec![0u64; lc.slots() * words];
        let slot = lc.input_slots();
        let mut own = Prg::new(own_seed, INPUT_MASK_D);
        let mut peer = Prg::new(peer_seed, INPUT_MASK_D);
        let mut mask = vec![0u64; words];
        for (i, (&owner, val)) in owners.iter().zip(&inputs.values).enumerate() {
            let off = c.input_offset(i);
            let width = c.input_widths()[i] as usize;
            if owner == party {
                let val = val
                    .as_ref()
                    .ok_or_else(|| Error::Input(format!("input {i} is ours but missing")))?;
                if val.len() != n {
                    return Err(Error::Input(format!(
                        "input {i} has {} instances; {n} are run",
                        val.len()
                    )));
                }
                for (j, inst) in val.iter().enumerate() {
                    if inst.len() != width {
                        return Err(Error::Input(format!(
                            "input {i} is {width} bits wide; instance {j} has {} bits",
                            inst.len()
                        )));
                    }
                }
                for k in 0..width {
                    own.fill_words(&mut mask);
                    let sk = slot[off + k] as usize;
                    let w = &mut vals[sk * words..(sk + 1) * words];
                    w.copy_from_slice(&mask);
                    for (j, inst) in val.iter().enumerate() {
                        if inst[k] {
                            w[j / 64] ^= 1 << (j % 64);
                        }
                    }
                }
            } else {
                if val.is_some() {
                    return Err(Error::Input(format!("input {i} belongs to the peer")));
                }
                for k in 0..width {
                    let sk = slot[off + k] as usize;
                    peer.fill_words(&mut vals[sk * words..(sk + 1) * words]);
                }
            }
        }
        mask.zeroize();
        let ones = bits::lane_mask(n);
        let mut s = Online {
            lc,
            party,
            n,
            words,
            vals,
            ones,
            triples,
            t_off: 0,
            layer: 0,
            mine: Vec::new(),
            scratch: Default::default(),
            outputs,
        };
        s.linear(0);
        Ok(s.next())
    }

    fn linear(&mut self, layer: usize) {
        let holds = self.party == Party::A;
        let gates = &self.lc.layers()[layer].linear;
        if self.words == 1 {
            // Up to 64 instances: one word per wire, so the gate's dispatch is the
            // cost; a plain loop over the words (aes_128 ×1: ~500 free gates a layer).
            let (v, one) = (&mut self.vals, if holds { self.ones[0] } else { 0 });
            for g in gates {
                match *g {
                    Gate::Xor { a, b, out } => v[out as usize] = v[a as usize] ^ v[b as usize],
                    Gate::And { a, b, out } => v[out as usize] = v[a as usize] & v[b as usize],
                    Gate::Inv { a, out } => v[out as usize] = v[a as usize] ^ one,
                    Gate::Copy { a, out } => v[out as usize] = v[a as usize],
                    Gate::Const { value, out } => v[out as usize] = if value { one } else { 0 },
                }
            }
            return;
        }
        for g in gates {
            eval_gate_words(&mut self.vals, self.words, g, &self.ones, holds);
        }
    }

    fn next(mut self) -> Step<'c> {
        self.layer += 1;
        if self.layer < self.lc.layers().len() {
            let msg = self.layer_message();
            return Step::Layer(self, msg);
        }
        let c = self.lc.circuit();
        let out_bits = c.total_output_bits() * self.n;
        let mut mine = vec![0u64; bits::words_for(out_bits)];
        for (o, &w) in self.lc.output_slots().iter().enumerate() {
            let base = w as usize * self.words;
            bits::xor_bits_at(&mut mine, o * self.n, &self.vals[base..base + self.words], self.n);
        }
        // Send our shares unless only we learn the outputs.
        let peer_learns = self.outputs.includes(self.party.peer());
        let msg = if peer_learns {
            OutputMessage::encode_bits(&mine, out_bits)
        } else {
            OutputMessage::encode_bits(&[], 0)
        };
        Step::Reveal(
            Reveal {
                n: self.n,
                out_bits,
                widths: c.output_widths().to_vec(),
                mine,
                receive: self.outputs.includes(self.party),
            },
            msg,
        )
    }

    /// The current layer's `d ‖ e` bits: `x ⊕ a` for every AND of the layer and
    /// instance, then `y ⊕ b`.
    fn layer_message(&mut self) -> Vec<u8> {
        let layer = &self.lc.layers()[self.layer];
        let (n, words) = (self.n, self.words);
        let kn = layer.ands.len() * n;
        let total = 2 * kn;
        self.mine.clear();
        self.mine.resize(bits::words_for(total), 0);
        for (g, and) in layer.ands.iter().enumerate() {
            let a = and.a as usize * words;
            let b = and.b as usize * words;
            bits::xor_bits_at(&mut self.mine, g * n, &self.vals[a..a + words], n);
            bits::xor_bits_at(&mut self.mine, kn + g * n, &self.vals[b..b + words], n);
        }
        if self.t_off.is_multiple_of(64) && kn.is_multiple_of(64) {
            // Word-aligned (n a multiple of 64): the triple bits are XORed in place.
            let (w0, kw) = (self.t_off / 64, kn / 64);
            let (d, e) = self.mine.split_at_mut(kw);
            d.iter_mut()
                .zip(&self.triples.a()[w0..w0 + kw])
                .for_each(|(x, a)| *x ^= a);
            e.iter_mut()
                .zip(&self.triples.b()[w0..w0 + kw])
                .for_each(|(x, b)| *x ^= b);
        } else {
            let tmp = &mut self.scratch[0];
            tmp.clear();
            tmp.resize(bits::words_for(kn), 0);
            bits::read_bits_at(self.triples.a(), self.t_off, tmp, kn);
            bits::xor_bits_at(&mut self.mine, 0, tmp, kn);
            bits::read_bits_at(self.triples.b(), self.t_off, tmp, kn);
            bits::xor_bits_at(&mut self.mine, kn, tmp, kn);
        }
        LayerMessage::encode_bits(self.layer as u32, &self.mine, total)
    }

    /// The AND layer this state waits for (1-based).
    pub fn layer(&self) -> usize {
        self.layer
    }

    /// Bytes of this party's message for AND layer `layer` (both parties send this
    /// many): `⌈2·k·n / 8⌉` plus the header.
    pub fn layer_message_len(lc: &LayeredCircuit, layer: usize, n: usize) -> usize {
        LayerMessage::encoded_len(2 * lc.layers()[layer].ands.len() * n)
    }

    /// Takes the peer's message for the current layer, finishes its ANDs and the free
    /// gates after them, and returns the next step.
    pub fn on_layer(mut self, peer: &[u8]) -> Result<Step<'c>, Error> {
        let layer = &self.lc.layers()[self.layer];
        let (n, words) = (self.n, self.words);
        let kn = layer.ands.len() * n;
        let total = 2 * kn;
        // d ‖ e = ours ⊕ theirs, decoded straight into our buffer.
        LayerMessage::decode_xor_into(peer, self.layer as u32, total, &mut self.mine)?;
        let kw = bits::words_for(kn);
        let [ta, tb, tc, te] = &mut self.scratch;
        // [A]: the d ∧ e term only party A adds.
        let da = if self.party == Party::A { u64::MAX } else { 0 };
        if self.t_off.is_multiple_of(64) && kn.is_multiple_of(64) {
            // Word-aligned (n a multiple of 64): z from the triple bits in place.
            let w0 = self.t_off / 64;
            let (a, b, c) = (
                &self.triples.a()[w0..w0 + kw],
                &self.triples.b()[w0..w0 + kw],
                &self.triples.c()[w0..w0 + kw],
            );
            let (d, e) = self.mine.split_at(kw);
            tc.clear();
            tc.extend((0..kw).map(|k| c[k] ^ (d[k] & b[k]) ^ (e[k] & a[k]) ^ (d[k] & e[k] & da)));
        } else {
            for v in [&mut *ta, &mut *tb, &mut *tc, &mut *te] {
                v.clear();
                v.resize(kw, 0);
            }
            bits::read_bits_at(self.triples.a(), self.t_off, ta, kn);
            bits::read_bits_at(self.triples.b(), self.t_off, tb, kn);
            bits::read_bits_at(self.triples.c(), self.t_off, tc, kn);
            bits::read_bits_at(&self.mine, kn, te, kn);
            let d = &self.mine[..kw];
            // z = c ⊕ (d ∧ b) ⊕ (e ∧ a) ⊕ [A](d ∧ e), into tc.
            for k in 0..kw {
                let (dk, ek) = (d[k], te[k]);
                tc[k] ^= (dk & tb[k]) ^ (ek & ta[k]) ^ (dk & ek & da);
            }
        }
        for (g, and) in layer.ands.iter().enumerate() {
            let o = and.out as usize * words;
            bits::read_bits_at(tc, g * n, &mut self.vals[o..o + words], n);
        }
        self.t_off += kn;
        let l = self.layer;
        self.linear(l);
        Ok(self.next())
    }
}

#[cfg(test)]
impl Online<'_> {
    /// The deviating peer of the tests: flips bits `bits` of this party's `d ‖ e`
    /// shares of the current layer, in the message it sends (`msg`, as
    /// [`Step::Layer`] returned it) and in what it keeps, so that it goes on as if
    /// its shares of those AND inputs were flipped (paper §3.1 assumes no party does).
    pub(crate) fn deviate(&mut self, msg: &mut [u8], bits: &[usize]) {
        const PACKED: usize = 3 + 4 + 4; // envelope, layer, byte count
        for &i in bits {
            msg[PACKED + i / 8] ^= 1 << (i % 8);
            self.mine[i / 64] ^= 1 << (i % 64);
        }
    }
}

impl Reveal {
    /// Takes the peer's output shares and opens the outputs.
    pub fn on_outputs(mut self, peer: &[u8]) -> Result<Outputs, Error> {
        if !self.receive {
            OutputMessage::decode_xor_into(peer, 0, &mut [])?;
            return Ok(Outputs { values: Vec::new() });
        }
        OutputMessage::decode_xor_into(peer, self.out_bits, &mut self.mine)?;
        let mut values = Vec::with_capacity(self.n);
        for j in 0..self.n {
            let mut per = Vec::with_capacity(self.widths.len());
            let mut o = 0;
            for &w in &self.widths {
                per.push(
                    (0..w as usize)
                        .map(|k| bits::get(&self.mine, (o + k) * self.n + j))
                        .collect(),
                );
                o += w as usize;
            }
            values.push(per);
        }
        Ok(Outputs { values })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::circuit::bristol;
    use crate::triples::deal;
    use rand_chacha::ChaCha20Rng;
    use rand_core::{RngCore, SeedableRng};

    /// Runs both parties in memory.
    pub(crate) fn run_pair(lc: &LayeredCircuit, owners: &[Party], inputs: &[Vec<Vec<bool>>], seed: u64) -> Outputs {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let n = inputs[0].len();
        let (ta, tb) = deal(lc.and_gates() * n, &mut rng);
        let (sa, sb) = (Seed::random(&mut rng), Seed::random(&mut rng));
        let mine = |p: Party| PartyInputs {
            values: owners
                .iter()
                .zip(inputs)
                .map(|(&o, v)| if o == p { Some(v.clone()) } else { None })
                .collect(),
        };
        let mut a = Online::start(lc, Party::A, owners, n, &mine(Party::A), &sa, &sb, ta).unwrap();
        let mut b = Online::start(lc, Party::B, owners, n, &mine(Party::B), &sb, &sa, tb).unwrap();
        loop {
            match (a, b) {
                (Step::Layer(sa, ma), Step::Layer(sb, mb)) => {
                    a = sa.on_layer(&mb).unwrap();
                    b = sb.on_layer(&ma).unwrap();
                }
                (Step::Reveal(ra, ma), Step::Reveal(rb, mb)) => {
                    let oa = ra.on_outputs(&mb).unwrap();
                    let ob = rb.on_outputs(&ma).unwrap();
                    assert_eq!(oa, ob);
                    return oa;
                }
                _ => panic!("parties out of step"),
            }
        }
    }

    fn random_bits(rng: &mut impl RngCore, w: usize) -> Vec<bool> {
        (0..w).map(|_| rng.next_u32() & 1 == 1).collect()
    }

    #[test]
    fn adder_matches_plaintext_for_several_instance_counts() {
        let c = bristol::parse(include_str!("../testdata/circuits/adder64.txt")).unwrap();
        let lc = LayeredCircuit::new(c.clone());
        let mut rng = ChaCha20Rng::seed_from_u64(9);
        for n in [1usize, 3, 64, 65, 130] {
            let inputs: Vec<Vec<Vec<bool>>> = c
                .input_widths()
                .iter()
                .map(|&w| (0..n).map(|_| random_bits(&mut rng, w as usize)).collect())
                .collect();
            let out = run_pair(&lc, &default_owners(2), &inputs, n as u64);
            for j in 0..n {
                let inst: Vec<Vec<bool>> = inputs.iter().map(|v| v[j].clone()).collect();
                assert_eq!(out.values[j], c.eval(&inst).unwrap(), "n={n} j={j}");
            }
        }
    }

    #[test]
    fn deviating_peer_is_refused() {
        let c = bristol::parse(include_str!("../testdata/circuits/adder64.txt")).unwrap();
        let lc = LayeredCircuit::new(c);
        let mut rng = ChaCha20Rng::seed_from_u64(3);
        let (ta, _) = deal(lc.and_gates(), &mut rng);
        let s = Seed::random(&mut rng);
        let inputs = PartyInputs {
            values: vec![Some(vec![vec![false; 64]]), None],
        };
        let step = Online::start(&lc, Party::A, &default_owners(2), 1, &inputs, &s, &s, ta.clone()).unwrap();
        let Step::Layer(st, msg) = step else { panic!() };
        // wrong length
        let short = LayerMessage::encode_bits(1, &[0; 4], 200);
        assert!(matches!(st.on_layer(&short), Err(Error::Peer(_))));
        // wrong layer number
        let step = Online::start(&lc, Party::A, &default_owners(2), 1, &inputs, &s, &s, ta.clone()).unwrap();
        let Step::Layer(st, _) = step else { panic!() };
        let mut other = msg.clone();
        other[6] ^= 1;
        assert!(matches!(st.on_layer(&other), Err(Error::Peer(_))));
        // trailing bytes
        let step = Online::start(&lc, Party::A, &default_owners(2), 1, &inputs, &s, &s, ta.clone()).unwrap();
        let Step::Layer(st, _) = step else { panic!() };
        let mut long = msg.clone();
        long.push(0);
        assert!(st.on_layer(&long).is_err());
        // too few triples
        let mut few = ta;
        few.truncate(3);
        assert!(matches!(
            Online::start(&lc, Party::A, &default_owners(2), 1, &inputs, &s, &s, few),
            Err(Error::Triples(_))
        ));
        // inputs of the wrong width
        let bad = PartyInputs {
            values: vec![Some(vec![vec![false; 63]]), None],
        };
        let (t, _) = deal(lc.and_gates(), &mut rng);
        assert!(matches!(
            Online::start(&lc, Party::A, &default_owners(2), 1, &bad, &s, &s, t),
            Err(Error::Input(_))
        ));
    }
}
