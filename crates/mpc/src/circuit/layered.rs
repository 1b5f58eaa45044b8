//! A circuit cut into AND layers for GMW: layer `L` holds the AND gates of AND depth
//! `L` and then the free gates whose inputs are all known once those ANDs are done.
//! One round trip per layer carries all of its ANDs (paper §2.4: `d(f)` rounds).
//!
//! **Slots.** The gates of the layers name *slots*, not the circuit's wires: a wire
//! holds a value from the gate that writes it to its last reader, and a slot is
//! given back once its wire is dead, so the evaluator keeps only the wires alive at
//! once (sha256: a few thousand of its 135 073) instead of every wire. At 1 024
//! parallel instances that is the difference between a working set in L2 and 17 MB
//! of fresh pages touched once each during the online phase.

use super::{Circuit, Gate, Wire};

/// An AND gate of a layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AndGate {
    /// First input.
    pub a: Wire,
    /// Second input.
    pub b: Wire,
    /// Output.
    pub out: Wire,
}

/// A free gate (XOR, INV, constant, copy).
pub type LinearGate = Gate;

/// One AND layer and the free gates that follow it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Layer {
    /// AND gates, all of the same AND depth (empty for layer 0).
    pub ands: Vec<AndGate>,
    /// Free gates, in topological order.
    pub linear: Vec<LinearGate>,
}

/// A circuit prepared for layer-by-layer evaluation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayeredCircuit {
    circuit: Circuit,
    layers: Vec<Layer>,
    slots: usize,
    input_slots: Vec<Wire>,
    output_slots: Vec<Wire>,
    and_gates: usize,
    max_layer_ands: usize,
    digest: [u8; 32],
}

impl LayeredCircuit {
    /// Cuts `circuit` into layers and gives its wires slots.
    pub fn new(circuit: Circuit) -> Self {
        let (layers, and_gates) = Self::cut(&circuit);
        let max_layer_ands = layers.iter().map(|l| l.ands.len()).max().unwrap_or(0);
        let digest = crate::circuit_digest(&circuit);
        let mut lc = LayeredCircuit {
            circuit,
            layers,
            slots: 0,
            input_slots: Vec::new(),
            output_slots: Vec::new(),
            and_gates,
            max_layer_ands,
            digest,
        };
        lc.assign_slots();
        lc
    }

    /// Renames every wire of the layers to a slot, in the order the evaluator touches
    /// them: the inputs; layer 0's free gates; then per layer the reads of its ANDs
    /// (all of them, when the layer's message is made), the writes of its ANDs (when
    /// the peer's message is in), its free gates in order; the outputs last. A slot is
    /// freed after the last read of its wire (never for an output) and a gate's output
    /// never shares a slot with that gate's inputs.
    fn assign_slots(&mut self) {
        const NEVER: u32 = u32::MAX;
        const KEEP: u32 = u32::MAX - 1;
        let c = &self.circuit;
        // last[w]: the step of the last read of wire w (KEEP for outputs).
        let mut last = vec![NEVER; c.num_wires()];
        let mut step = 1u32;
        for (li, layer) in self.layers.iter().enumerate() {
            if li > 0 {
                for g in &layer.ands {
                    last[g.a as usize] = step;
                    last[g.b as usize] = step;
                }
                step += 2;
            }
            for g in &layer.linear {
                let (ins, n) = g.inputs();
                for &w in &ins[..n] {
                    last[w as usize] = step;
                }
                step += 1;
            }
        }
        for &w in c.output_wires() {
            last[w as usize] = KEEP;
        }
        let mut slot = vec![NEVER; c.num_wires()];
        let mut free: Vec<Wire> = Vec::new();
        let mut next: Wire = 0;
        let mut take = |free: &mut Vec<Wire>| {
            free.pop().unwrap_or_else(|| {
                next += 1;
                next - 1
            })
        };
        let inputs = c.total_input_bits();
        for s in slot.iter_mut().take(inputs) {
            *s = take(&mut free);
        }
        self.input_slots = slot[..inputs].to_vec();
        for w in 0..inputs as Wire {
            if last[w as usize] == NEVER {
                free.push(slot[w as usize]);
            }
        }
        // Wires whose slot went back (a wire feeding several ANDs of a layer is freed
        // once).
        let mut freed = vec![false; c.num_wires()];
        let mut step = 1u32;
        for (li, layer) in self.layers.iter_mut().enumerate() {
            if li > 0 {
                for g in layer.ands.iter_mut() {
                    let (a, b) = (g.a, g.b);
                    g.a = slot[a as usize];
                    g.b = slot[b as usize];
                    for w in [a, b] {
                        if last[w as usize] == step && !freed[w as usize] {
                            freed[w as usize] = true;
                            free.push(slot[w as usize]);
                        }
                    }
                }
                step += 1;
                for g in layer.ands.iter_mut() {
                    let out = g.out;
                    slot[out as usize] = take(&mut free);
                    g.out = slot[out as usize];
                    if last[out as usize] == NEVER {
                        free.push(slot[out as usize]);
                    }
                }
                step += 1;
            }
            for g in layer.linear.iter_mut() {
                let (ins, n) = g.inputs();
                let out = g.output();
                let o = take(&mut free);
                slot[out as usize] = o;
                *g = rename(*g, &slot);
                for &w in &ins[..n] {
                    // The same wire twice (a ⊕ a) is freed once.
                    if last[w as usize] == step && !freed[w as usize] {
                        freed[w as usize] = true;
                        free.push(slot[w as usize]);
                    }
                }
                if last[out as usize] == NEVER {
                    free.push(o);
                }
                step += 1;
            }
        }
        self.output_slots = c.output_wires().iter().map(|&w| slot[w as usize]).collect();
        self.slots = next as usize;
    }

    /// Cuts `circuit` into layers (wires not yet renamed to slots).
    fn cut(circuit: &Circuit) -> (Vec<Layer>, usize) {
        let mut level = vec![0u32; circuit.num_wires()];
        let mut layers: Vec<Layer> = vec![Layer::default()];
        let mut and_gates = 0;
        for g in circuit.gates() {
            let (ins, n) = g.inputs();
            let mut l = ins[..n].iter().map(|&w| level[w as usize]).max().unwrap_or(0);
            if let Gate::And { a, b, out } = *g {
                l += 1;
                and_gates += 1;
                while layers.len() <= l as usize {
                    layers.push(Layer::default());
                }
                layers[l as usize].ands.push(AndGate { a, b, out });
            } else {
                layers[l as usize].linear.push(*g);
            }
            level[g.output() as usize] = l;
        }
        (layers, and_gates)
    }

    /// Slots the evaluator needs (the most wires alive at once).
    pub fn slots(&self) -> usize {
        self.slots
    }

    /// The slot of each input wire, in wire order (input value `i`, bit `k` is wire
    /// `circuit().input_offset(i) + k`).
    pub fn input_slots(&self) -> &[Wire] {
        &self.input_slots
    }

    /// The slot of each output wire, in the order of `circuit().output_wires()`.
    pub fn output_slots(&self) -> &[Wire] {
        &self.output_slots
    }

    /// [`crate::circuit_digest`] of the circuit, computed once here (circuit
    /// preparation) rather than in every session's setup.
    pub fn digest(&self) -> [u8; 32] {
        self.digest
    }

    /// The circuit.
    pub fn circuit(&self) -> &Circuit {
        &self.circuit
    }

    /// Layer 0 (free gates on the inputs) and then one layer per AND depth; their
    /// gates name slots ([`Self::slots`]), not the circuit's wires.
    pub fn layers(&self) -> &[Layer] {
        &self.layers
    }

    /// AND depth `d(f)`: the number of AND layers (round trips of the online phase).
    pub fn and_depth(&self) -> usize {
        self.layers.len() - 1
    }

    /// AND gates `|f|`: triples needed per instance.
    pub fn and_gates(&self) -> usize {
        self.and_gates
    }

    /// The most AND gates in one layer.
    pub fn max_layer_ands(&self) -> usize {
        self.max_layer_ands
    }
}

/// `g` with its wires replaced by their slots.
fn rename(g: Gate, slot: &[Wire]) -> Gate {
    let s = |w: Wire| slot[w as usize];
    match g {
        Gate::Xor { a, b, out } => Gate::Xor {
            a: s(a),
            b: s(b),
            out: s(out),
        },
        Gate::And { a, b, out } => Gate::And {
            a: s(a),
            b: s(b),
            out: s(out),
        },
        Gate::Inv { a, out } => Gate::Inv { a: s(a), out: s(out) },
        Gate::Copy { a, out } => Gate::Copy { a: s(a), out: s(out) },
        Gate::Const { value, out } => Gate::Const { value, out: s(out) },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::circuit::bristol;

    #[test]
    fn layers_match_stats() {
        let c = bristol::parse(include_str!("../../testdata/circuits/adder64.txt")).unwrap();
        let s = c.stats();
        let l = LayeredCircuit::new(c);
        assert_eq!(l.and_depth(), s.and_depth);
        assert_eq!(l.and_gates(), s.and_gates);
        let total: usize = l.layers().iter().map(|x| x.ands.len() + x.linear.len()).sum();
        assert_eq!(total, s.gates);
    }

    /// Evaluates the slot-renamed layers in the clear, in the evaluator's order
    /// (layer 0's free gates; per layer all AND reads, then all AND writes, then the
    /// free gates), one instance.
    fn eval_slots(lc: &LayeredCircuit, input: &[bool]) -> Vec<bool> {
        let mut v = vec![false; lc.slots()];
        for (w, &s) in lc.input_slots().iter().enumerate() {
            v[s as usize] = input[w];
        }
        let free = |v: &mut Vec<bool>, g: &Gate| {
            let mut words: Vec<u64> = v.iter().map(|&b| b as u64).collect();
            crate::circuit::eval_gate_words(&mut words, 1, g, &[1], true);
            *v = words.iter().map(|&w| w & 1 == 1).collect();
        };
        for (li, layer) in lc.layers().iter().enumerate() {
            if li > 0 {
                let z: Vec<bool> = layer.ands.iter().map(|g| v[g.a as usize] & v[g.b as usize]).collect();
                for (g, z) in layer.ands.iter().zip(z) {
                    v[g.out as usize] = z;
                }
            }
            for g in &layer.linear {
                free(&mut v, g);
            }
        }
        lc.output_slots().iter().map(|&s| v[s as usize]).collect()
    }

    /// A random valid circuit with dead gates, gates reading one wire twice, and
    /// outputs that are inputs or repeated.
    fn random_circuit(rng: &mut impl rand_core::RngCore) -> Circuit {
        let inputs = 1 + rng.next_u32() % 8;
        let gates = 1 + rng.next_u32() % 120;
        let mut g = Vec::new();
        let mut w = inputs;
        for _ in 0..gates {
            let pick = |rng: &mut dyn rand_core::RngCore| rng.next_u32() % w;
            let (a, b) = (pick(rng), pick(rng));
            g.push(match rng.next_u32() % 6 {
                0 | 1 => Gate::And { a, b, out: w },
                2 => Gate::Xor { a, b, out: w },
                3 => Gate::Xor { a, b: a, out: w },
                4 => Gate::Inv { a, out: w },
                _ => Gate::Const {
                    value: rng.next_u32().is_multiple_of(2),
                    out: w,
                },
            });
            w += 1;
        }
        let outs = 1 + rng.next_u32() % 6;
        let output_wires: Vec<Wire> = (0..outs).map(|_| rng.next_u32() % w).collect();
        Circuit::new(w, vec![inputs], vec![outs], g, output_wires).unwrap()
    }

    #[test]
    fn slots_evaluate_like_the_wires() {
        use rand_chacha::ChaCha20Rng;
        use rand_core::{RngCore, SeedableRng};
        let mut rng = ChaCha20Rng::seed_from_u64(11);
        for _ in 0..300 {
            let c = random_circuit(&mut rng);
            let lc = LayeredCircuit::new(c.clone());
            assert!(lc.slots() <= c.num_wires());
            for _ in 0..4 {
                let input: Vec<bool> = (0..c.total_input_bits()).map(|_| rng.next_u32() & 1 == 1).collect();
                let want: Vec<bool> = c.eval(std::slice::from_ref(&input)).unwrap().concat();
                assert_eq!(eval_slots(&lc, &input), want, "{c:?}");
            }
        }
    }

    #[test]
    fn sha256_keeps_a_few_thousand_slots() {
        let c = bristol::parse(include_str!("../../testdata/circuits/sha256.txt")).unwrap();
        let wires = c.num_wires();
        let lc = LayeredCircuit::new(c);
        assert!(lc.slots() * 10 < wires, "{} slots of {wires} wires", lc.slots());
    }
}
