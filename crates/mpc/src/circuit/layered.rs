//! A circuit cut into AND layers for GMW: layer `L` holds the AND gates of AND depth
//! `L` and then the free gates whose inputs are all known once those ANDs are done.
//! One round trip per layer carries all of its ANDs (paper §2.4: `d(f)` rounds).

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
    and_gates: usize,
    max_layer_ands: usize,
    digest: [u8; 32],
}

impl LayeredCircuit {
    /// Cuts `circuit` into layers.
    pub fn new(circuit: Circuit) -> Self {
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
        let max_layer_ands = layers.iter().map(|l| l.ands.len()).max().unwrap_or(0);
        let digest = crate::circuit_digest(&circuit);
        LayeredCircuit {
            circuit,
            layers,
            and_gates,
            max_layer_ands,
            digest,
        }
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

    /// Layer 0 (free gates on the inputs) and then one layer per AND depth.
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
}
