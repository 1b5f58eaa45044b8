//! Boolean circuits: the gate list, its statistics, a plaintext evaluator, the
//! Bristol Fashion format and a builder with gadgets.
//!
//! A [`Circuit`] is a list of gates in topological order over numbered wires; every
//! wire is written exactly once (the inputs by the caller, every other wire by one
//! gate). The size that matters for GMW is the number of AND gates `|f|` and the AND
//! depth `d(f)` (paper §2.4): XOR, INV, constants and copies are free.

pub mod bristol;
pub mod builder;
mod gadgets;
mod layered;
pub mod waksman;

pub use builder::{Bit, Builder, Word, const_word};
pub use gadgets::Slot;
pub use layered::{AndGate, Layer, LayeredCircuit, LinearGate};

use crate::Error;
use crate::bits;

/// A wire number.
pub type Wire = u32;

/// One gate. MAND gates of Bristol Fashion are split into their AND gates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Gate {
    /// `out = a ⊕ b`.
    Xor {
        /// First input.
        a: Wire,
        /// Second input.
        b: Wire,
        /// Output.
        out: Wire,
    },
    /// `out = a ∧ b`.
    And {
        /// First input.
        a: Wire,
        /// Second input.
        b: Wire,
        /// Output.
        out: Wire,
    },
    /// `out = ¬a`.
    Inv {
        /// Input.
        a: Wire,
        /// Output.
        out: Wire,
    },
    /// `out = value` (Bristol Fashion `EQ`).
    Const {
        /// The constant.
        value: bool,
        /// Output.
        out: Wire,
    },
    /// `out = a` (Bristol Fashion `EQW`).
    Copy {
        /// Input.
        a: Wire,
        /// Output.
        out: Wire,
    },
}

impl Gate {
    /// The wire this gate writes.
    pub fn output(&self) -> Wire {
        match *self {
            Gate::Xor { out, .. }
            | Gate::And { out, .. }
            | Gate::Inv { out, .. }
            | Gate::Const { out, .. }
            | Gate::Copy { out, .. } => out,
        }
    }

    /// The wires this gate reads (zero, one or two).
    pub fn inputs(&self) -> ([Wire; 2], usize) {
        match *self {
            Gate::Xor { a, b, .. } | Gate::And { a, b, .. } => ([a, b], 2),
            Gate::Inv { a, .. } | Gate::Copy { a, .. } => ([a, 0], 1),
            Gate::Const { .. } => ([0, 0], 0),
        }
    }
}

/// Gate counts and AND depth of a circuit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CircuitStats {
    /// All gates (MAND counted as its AND gates).
    pub gates: usize,
    /// AND gates: the multiplicative size `|f|`.
    pub and_gates: usize,
    /// XOR gates.
    pub xor_gates: usize,
    /// INV gates.
    pub inv_gates: usize,
    /// Constants and copies.
    pub other_gates: usize,
    /// The longest chain of AND gates from an input to an output: `d(f)`.
    pub and_depth: usize,
    /// Wires.
    pub wires: usize,
}

impl std::fmt::Display for CircuitStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} gates ({} AND, {} XOR, {} INV, {} other), AND depth {}, {} wires",
            self.gates, self.and_gates, self.xor_gates, self.inv_gates, self.other_gates, self.and_depth, self.wires
        )
    }
}

/// A Boolean circuit with numbered wires and gates in topological order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Circuit {
    wires: u32,
    inputs: Vec<u32>,
    outputs: Vec<u32>,
    gates: Vec<Gate>,
    output_wires: Vec<Wire>,
}

impl Circuit {
    /// Builds a circuit and checks it: input values occupy wires `0..Σ inputs`, every
    /// gate reads only wires already written and writes a wire never written before,
    /// and every output wire is written.
    pub fn new(
        wires: u32,
        inputs: Vec<u32>,
        outputs: Vec<u32>,
        gates: Vec<Gate>,
        output_wires: Vec<Wire>,
    ) -> Result<Self, Error> {
        let total_out: u64 = outputs.iter().map(|&w| w as u64).sum();
        if total_out != output_wires.len() as u64 {
            return Err(Error::Circuit(format!(
                "output widths add up to {total_out} but {} output wires are given",
                output_wires.len()
            )));
        }
        let total_in: u64 = inputs.iter().map(|&w| w as u64).sum();
        if total_in > wires as u64 {
            return Err(Error::Circuit(format!("{total_in} input wires but only {wires} wires")));
        }
        let mut written = vec![false; wires as usize];
        for w in written.iter_mut().take(total_in as usize) {
            *w = true;
        }
        for (i, g) in gates.iter().enumerate() {
            let (ins, n) = g.inputs();
            for &w in &ins[..n] {
                if w >= wires || !written[w as usize] {
                    return Err(Error::Circuit(format!("gate {i} reads wire {w} before it is written")));
                }
            }
            let o = g.output();
            if o >= wires {
                return Err(Error::Circuit(format!(
                    "gate {i} writes wire {o}; the circuit has {wires} wires"
                )));
            }
            if written[o as usize] {
                return Err(Error::Circuit(format!(
                    "gate {i} writes wire {o}, which is already written"
                )));
            }
            written[o as usize] = true;
        }
        for &w in &output_wires {
            if w >= wires || !written[w as usize] {
                return Err(Error::Circuit(format!("output wire {w} is never written")));
            }
        }
        Ok(Circuit {
            wires,
            inputs,
            outputs,
            gates,
            output_wires,
        })
    }

    /// Number of wires.
    pub fn num_wires(&self) -> usize {
        self.wires as usize
    }

    /// Bit widths of the input values, in order.
    pub fn input_widths(&self) -> &[u32] {
        &self.inputs
    }

    /// Bit widths of the output values, in order.
    pub fn output_widths(&self) -> &[u32] {
        &self.outputs
    }

    /// All input bits (Σ of the input widths): input value `i` occupies the wires that
    /// follow those of values `0..i`.
    pub fn total_input_bits(&self) -> usize {
        self.inputs.iter().map(|&w| w as usize).sum()
    }

    /// All output bits.
    pub fn total_output_bits(&self) -> usize {
        self.output_wires.len()
    }

    /// The first wire of input value `i`.
    pub fn input_offset(&self, i: usize) -> usize {
        self.inputs[..i].iter().map(|&w| w as usize).sum()
    }

    /// The gates in topological order.
    pub fn gates(&self) -> &[Gate] {
        &self.gates
    }

    /// The wires read as outputs, in output order.
    pub fn output_wires(&self) -> &[Wire] {
        &self.output_wires
    }

    /// Gate counts and AND depth.
    pub fn stats(&self) -> CircuitStats {
        let mut s = CircuitStats {
            wires: self.wires as usize,
            gates: self.gates.len(),
            ..Default::default()
        };
        let mut depth = vec![0u32; self.wires as usize];
        for g in &self.gates {
            let d = match *g {
                Gate::Xor { a, b, .. } => {
                    s.xor_gates += 1;
                    depth[a as usize].max(depth[b as usize])
                }
                Gate::And { a, b, .. } => {
                    s.and_gates += 1;
                    depth[a as usize].max(depth[b as usize]) + 1
                }
                Gate::Inv { a, .. } => {
                    s.inv_gates += 1;
                    depth[a as usize]
                }
                Gate::Copy { a, .. } => {
                    s.other_gates += 1;
                    depth[a as usize]
                }
                Gate::Const { .. } => {
                    s.other_gates += 1;
                    0
                }
            };
            depth[g.output() as usize] = d;
        }
        s.and_depth = self.output_wires.iter().map(|&w| depth[w as usize]).max().unwrap_or(0) as usize;
        // The depth of a circuit is the deepest AND gate, output or not.
        s.and_depth = s.and_depth.max(depth.iter().copied().max().unwrap_or(0) as usize);
        s
    }

    /// Checks that `inputs` has one value per input, each of the declared width.
    pub fn check_inputs(&self, inputs: &[Vec<bool>]) -> Result<(), Error> {
        if inputs.len() != self.inputs.len() {
            return Err(Error::Input(format!(
                "the circuit takes {} input values; {} were given",
                self.inputs.len(),
                inputs.len()
            )));
        }
        for (i, (v, &w)) in inputs.iter().zip(&self.inputs).enumerate() {
            if v.len() != w as usize {
                return Err(Error::Input(format!(
                    "input {i} is {w} bits wide; {} bits were given",
                    v.len()
                )));
            }
        }
        Ok(())
    }

    /// Evaluates the circuit in the clear on one set of inputs (one `Vec<bool>` per
    /// input value, in wire order) and returns one `Vec<bool>` per output value.
    pub fn eval(&self, inputs: &[Vec<bool>]) -> Result<Vec<Vec<bool>>, Error> {
        self.check_inputs(inputs)?;
        let flat: Vec<bool> = inputs.iter().flatten().copied().collect();
        let out = self.eval_simd(&[flat])?;
        Ok(self.split_outputs(&out[0]))
    }

    /// Splits a flat output bit vector into one vector per output value.
    pub fn split_outputs(&self, flat: &[bool]) -> Vec<Vec<bool>> {
        let mut res = Vec::with_capacity(self.outputs.len());
        let mut at = 0;
        for &w in &self.outputs {
            res.push(flat[at..at + w as usize].to_vec());
            at += w as usize;
        }
        res
    }

    /// Evaluates many instances at once, bit-sliced: instance `j` of every wire is bit
    /// `j` of that wire's words, so one machine operation evaluates a gate for 64
    /// instances. `instances[j]` is the flat input of instance `j` (all input values
    /// concatenated); the result is the flat output of each instance.
    pub fn eval_simd(&self, instances: &[Vec<bool>]) -> Result<Vec<Vec<bool>>, Error> {
        let n = instances.len();
        let ni = self.total_input_bits();
        for (j, inst) in instances.iter().enumerate() {
            if inst.len() != ni {
                return Err(Error::Input(format!(
                    "instance {j} has {} input bits; the circuit takes {ni}",
                    inst.len()
                )));
            }
        }
        let words = bits::words_for(n);
        let mut vals = vec![0u64; self.wires as usize * words];
        for (j, inst) in instances.iter().enumerate() {
            for (w, &b) in inst.iter().enumerate() {
                if b {
                    vals[w * words + j / 64] |= 1 << (j % 64);
                }
            }
        }
        let ones = bits::lane_mask(n);
        for g in &self.gates {
            eval_gate_words(&mut vals, words, g, &ones, true);
        }
        let mut out = vec![Vec::with_capacity(self.output_wires.len()); n];
        for &w in &self.output_wires {
            let base = w as usize * words;
            for (j, o) in out.iter_mut().enumerate() {
                o.push(vals[base + j / 64] >> (j % 64) & 1 == 1);
            }
        }
        Ok(out)
    }
}

/// Evaluates one gate on bit-sliced wire values (`words` words per wire). AND gates
/// are evaluated in the clear (the plaintext evaluator); `ones` holds the lanes in
/// use, and `holds_constants` says whether this party adds the constants (in GMW
/// only party A does, so that the XOR of both shares is right).
#[inline]
pub(crate) fn eval_gate_words(vals: &mut [u64], words: usize, g: &Gate, ones: &[u64], holds_constants: bool) {
    let (ins, n) = g.inputs();
    let (o, a, b) = (g.output() as usize, ins[0] as usize, ins[1] as usize);
    if let Gate::Const { value, .. } = *g {
        let out = &mut vals[o * words..(o + 1) * words];
        if value && holds_constants {
            out.copy_from_slice(&ones[..words]);
        } else {
            out.fill(0);
        }
        return;
    }
    if o == a || (n == 2 && o == b) {
        // A gate that overwrites one of its inputs (never in a checked circuit or
        // its slots): word by word.
        return eval_gate_words_in_place(vals, words, g, ones, holds_constants);
    }
    let (out, x, y) = rows(vals, words, o, a, if n == 2 { b } else { a });
    match *g {
        Gate::Xor { .. } => out.iter_mut().zip(x).zip(y).for_each(|((o, x), y)| *o = x ^ y),
        Gate::And { .. } => out.iter_mut().zip(x).zip(y).for_each(|((o, x), y)| *o = x & y),
        Gate::Inv { .. } if holds_constants => out.iter_mut().zip(x).zip(ones).for_each(|((o, x), m)| *o = x ^ m),
        Gate::Inv { .. } | Gate::Copy { .. } => out.copy_from_slice(x),
        Gate::Const { .. } => {} // written above
    }
}

/// Row `o` of `vals` (rows of `words` words) to write, rows `a` and `b` to read;
/// `o` differs from `a` and `b`. Split borrows, so the loops over them vectorise.
#[inline]
fn rows(vals: &mut [u64], words: usize, o: usize, a: usize, b: usize) -> (&mut [u64], &[u64], &[u64]) {
    let (lo, hi) = vals.split_at_mut(o * words);
    let (out, hi) = hi.split_at_mut(words);
    let (lo, hi) = (&*lo, &*hi);
    let row = |r: usize| -> &[u64] {
        if r < o {
            &lo[r * words..(r + 1) * words]
        } else {
            &hi[(r - o - 1) * words..(r - o) * words]
        }
    };
    (out, row(a), row(b))
}

fn eval_gate_words_in_place(vals: &mut [u64], words: usize, g: &Gate, ones: &[u64], holds_constants: bool) {
    match *g {
        Gate::Xor { a, b, out } => {
            let (a, b, o) = (a as usize * words, b as usize * words, out as usize * words);
            for k in 0..words {
                vals[o + k] = vals[a + k] ^ vals[b + k];
            }
        }
        Gate::And { a, b, out } => {
            let (a, b, o) = (a as usize * words, b as usize * words, out as usize * words);
            for k in 0..words {
                vals[o + k] = vals[a + k] & vals[b + k];
            }
        }
        Gate::Inv { a, out } => {
            let (a, o) = (a as usize * words, out as usize * words);
            if holds_constants {
                for k in 0..words {
                    vals[o + k] = vals[a + k] ^ ones[k];
                }
            } else {
                for k in 0..words {
                    vals[o + k] = vals[a + k];
                }
            }
        }
        Gate::Copy { a, out } => {
            let (a, o) = (a as usize * words, out as usize * words);
            for k in 0..words {
                vals[o + k] = vals[a + k];
            }
        }
        Gate::Const { value, out } => {
            let o = out as usize * words;
            for k in 0..words {
                vals[o + k] = if value && holds_constants { ones[k] } else { 0 };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The split-row evaluator equals the word-by-word one on every gate kind, and a
    /// gate that names its output among its inputs still gets the word-by-word result.
    #[test]
    fn gate_rows_equal_word_by_word() {
        let words = 3;
        let ones = vec![u64::MAX, u64::MAX, 0x0f];
        let start: Vec<u64> = (0..5 * words as u64)
            .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
            .collect();
        for (a, b, o) in [(0, 1, 2), (3, 1, 0), (4, 4, 2), (2, 0, 2), (1, 3, 3), (2, 2, 2)] {
            for g in [
                Gate::Xor { a, b, out: o },
                Gate::And { a, b, out: o },
                Gate::Inv { a, out: o },
                Gate::Copy { a, out: o },
                Gate::Const { value: true, out: o },
                Gate::Const { value: false, out: o },
            ] {
                for holds in [true, false] {
                    let (mut fast, mut slow) = (start.clone(), start.clone());
                    eval_gate_words(&mut fast, words, &g, &ones, holds);
                    eval_gate_words_in_place(&mut slow, words, &g, &ones, holds);
                    assert_eq!(fast, slow, "{g:?} {holds}");
                }
            }
        }
    }

    #[test]
    fn rejects_bad_topology() {
        let g = vec![Gate::And { a: 0, b: 3, out: 2 }, Gate::Xor { a: 0, b: 1, out: 3 }];
        assert!(Circuit::new(4, vec![1, 1], vec![1], g, vec![3]).is_err());
        let g = vec![Gate::Xor { a: 0, b: 1, out: 1 }];
        assert!(Circuit::new(3, vec![1, 1], vec![1], g, vec![1]).is_err());
        let g = vec![Gate::Xor { a: 0, b: 1, out: 2 }];
        assert!(Circuit::new(4, vec![1, 1], vec![1], g, vec![3]).is_err());
    }

    #[test]
    fn stats_and_eval() {
        // out = (x0 & x1) & ~x0 ^ 1
        let g = vec![
            Gate::And { a: 0, b: 1, out: 2 },
            Gate::Inv { a: 0, out: 3 },
            Gate::And { a: 2, b: 3, out: 4 },
            Gate::Const { value: true, out: 5 },
            Gate::Xor { a: 4, b: 5, out: 6 },
        ];
        let c = Circuit::new(7, vec![1, 1], vec![1], g, vec![6]).unwrap();
        let s = c.stats();
        assert_eq!((s.and_gates, s.and_depth, s.gates), (2, 2, 5));
        for x in 0..4 {
            let a = x & 1 == 1;
            let b = x & 2 == 2;
            assert_eq!(c.eval(&[vec![a], vec![b]]).unwrap(), vec![vec![true]]);
        }
        assert!(c.eval(&[vec![true]]).is_err());
        assert!(c.eval(&[vec![true], vec![true, false]]).is_err());
    }
}
