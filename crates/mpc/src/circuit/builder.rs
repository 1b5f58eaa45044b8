//! A circuit builder: wires, gates, constant folding, dead-gate elimination, and the
//! gadgets the applications of paper §6 are made of (`circuit::gadgets`, private to the crate).
//!
//! A [`Bit`] is either a constant known when the circuit is built or a wire. Gates on
//! constants are folded away (`x ⊕ 0 = x`, `x ∧ 0 = 0`, `x ∧ 1 = x`, `x ⊕ x = 0`,
//! `x ∧ x = x`), so a gadget fed public values costs nothing for them (a multiplexer
//! between two public indices, the carry-in of a subtraction). Words are
//! little-endian `Vec<Bit>` (bit 0 = least significant).
//!
//! [`Builder::finish`] numbers the inputs first, drops every gate no output depends
//! on, and returns a checked [`Circuit`]; [`super::bristol::write`] writes it in
//! Bristol Fashion. A builder in [`Builder::counting`] mode stores no gates and only
//! counts AND gates and AND depth, for circuits too large to hold (the size tables of
//! the benchmarks); gadgets are written so that they leave no dead AND gates, and the
//! tests check that both modes agree.

use super::{Circuit, Gate, Wire};
use crate::Error;

/// A bit of a circuit under construction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Bit {
    /// A constant known when the circuit is built.
    Const(bool),
    /// A wire (internal numbering of the builder).
    Wire(Wire),
}

impl Bit {
    /// Constant zero.
    pub const ZERO: Bit = Bit::Const(false);
    /// Constant one.
    pub const ONE: Bit = Bit::Const(true);

    /// The constant, if this bit is one.
    pub fn as_const(self) -> Option<bool> {
        match self {
            Bit::Const(b) => Some(b),
            Bit::Wire(_) => None,
        }
    }
}

/// A little-endian word of bits.
pub type Word = Vec<Bit>;

/// The word of the `width` low bits of `v` as constants.
pub fn const_word(v: u64, width: usize) -> Word {
    (0..width).map(|k| Bit::Const(k < 64 && v >> k & 1 == 1)).collect()
}

/// Gate counts kept while building.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BuildCounts {
    /// AND gates emitted.
    pub and_gates: usize,
    /// XOR, INV and constant gates emitted.
    pub free_gates: usize,
    /// The deepest AND gate (AND depth).
    pub and_depth: usize,
}

/// Builds a [`Circuit`].
#[derive(Debug, Clone)]
pub struct Builder {
    next: Wire,
    inputs: Vec<Vec<Wire>>,
    gates: Vec<Gate>,
    store: bool,
    depth: Vec<u32>,
    counts: BuildCounts,
}

impl Default for Builder {
    fn default() -> Self {
        Builder::new()
    }
}

/// The most wires a builder hands out.
pub const MAX_BUILDER_WIRES: u64 = u32::MAX as u64 - 1;

impl Builder {
    /// A builder that keeps its gates (for [`Builder::finish`]).
    pub fn new() -> Self {
        Builder {
            next: 0,
            inputs: Vec::new(),
            gates: Vec::new(),
            store: true,
            depth: Vec::new(),
            counts: BuildCounts::default(),
        }
    }

    /// A builder that only counts AND gates and AND depth (no gates are kept; `finish`
    /// is refused). For the size tables of circuits too large to hold in memory.
    pub fn counting() -> Self {
        Builder {
            store: false,
            ..Builder::new()
        }
    }

    /// Counts so far (before dead-gate elimination).
    pub fn counts(&self) -> BuildCounts {
        self.counts
    }

    /// Wires made so far (inputs and gate outputs).
    pub fn wires(&self) -> u64 {
        self.next as u64
    }

    fn fresh(&mut self, depth: u32) -> Wire {
        let w = self.next;
        self.next = self.next.checked_add(1).expect("more than 2^32 wires in one circuit");
        self.depth.push(depth);
        w
    }

    fn depth_of(&self, b: Bit) -> u32 {
        match b {
            Bit::Const(_) => 0,
            Bit::Wire(w) => self.depth[w as usize],
        }
    }

    /// Declares the next input value, `width` bits wide, and returns its bits. Inputs
    /// are numbered in declaration order (input value 0 first).
    pub fn input(&mut self, width: usize) -> Word {
        let ws: Vec<Wire> = (0..width).map(|_| self.fresh(0)).collect();
        let bits = ws.iter().map(|&w| Bit::Wire(w)).collect();
        self.inputs.push(ws);
        bits
    }

    /// `a ⊕ b` (free in GMW).
    pub fn xor(&mut self, a: Bit, b: Bit) -> Bit {
        match (a, b) {
            (Bit::Const(x), Bit::Const(y)) => Bit::Const(x ^ y),
            (Bit::Const(false), w) | (w, Bit::Const(false)) => w,
            (Bit::Const(true), w) | (w, Bit::Const(true)) => self.not(w),
            (Bit::Wire(x), Bit::Wire(y)) if x == y => Bit::ZERO,
            (Bit::Wire(x), Bit::Wire(y)) => {
                let d = self.depth_of(a).max(self.depth_of(b));
                let out = self.fresh(d);
                self.push(Gate::Xor { a: x, b: y, out }, false);
                Bit::Wire(out)
            }
        }
    }

    /// `¬a` (free in GMW).
    pub fn not(&mut self, a: Bit) -> Bit {
        match a {
            Bit::Const(x) => Bit::Const(!x),
            Bit::Wire(x) => {
                let d = self.depth_of(a);
                let out = self.fresh(d);
                self.push(Gate::Inv { a: x, out }, false);
                Bit::Wire(out)
            }
        }
    }

    /// `a ∧ b`: one AND gate unless a constant or equal inputs fold it.
    pub fn and(&mut self, a: Bit, b: Bit) -> Bit {
        match (a, b) {
            (Bit::Const(x), Bit::Const(y)) => Bit::Const(x & y),
            (Bit::Const(false), _) | (_, Bit::Const(false)) => Bit::ZERO,
            (Bit::Const(true), w) | (w, Bit::Const(true)) => w,
            (Bit::Wire(x), Bit::Wire(y)) if x == y => a,
            (Bit::Wire(x), Bit::Wire(y)) => {
                let d = self.depth_of(a).max(self.depth_of(b)) + 1;
                let out = self.fresh(d);
                self.push(Gate::And { a: x, b: y, out }, true);
                self.counts.and_depth = self.counts.and_depth.max(d as usize);
                Bit::Wire(out)
            }
        }
    }

    fn push(&mut self, g: Gate, and: bool) {
        if and {
            self.counts.and_gates += 1;
        } else {
            self.counts.free_gates += 1;
        }
        if self.store {
            self.gates.push(g);
        }
    }

    /// `a ∨ b = a ⊕ b ⊕ (a ∧ b)`: one AND.
    pub fn or(&mut self, a: Bit, b: Bit) -> Bit {
        match (a, b) {
            (Bit::Const(true), _) | (_, Bit::Const(true)) => Bit::ONE,
            (Bit::Const(false), w) | (w, Bit::Const(false)) => w,
            _ => {
                let x = self.xor(a, b);
                let y = self.and(a, b);
                self.xor(x, y)
            }
        }
    }

    /// `s ? one : zero`: one AND (`zero ⊕ s ∧ (zero ⊕ one)`), none when the two are
    /// equal constants or the same wire.
    pub fn mux(&mut self, s: Bit, zero: Bit, one: Bit) -> Bit {
        let d = self.xor(zero, one);
        let t = self.and(s, d);
        self.xor(zero, t)
    }

    /// Finishes: inputs become wires `0..`, gates follow in order, gates no output
    /// depends on are dropped, and the result is checked by [`Circuit::new`].
    /// `outputs[i]` is output value `i`.
    pub fn finish(self, outputs: &[Word]) -> Result<Circuit, Error> {
        if !self.store {
            return Err(Error::Params("a counting builder keeps no gates to finish".into()));
        }
        let n = self.next as usize;
        // Liveness, backwards from the outputs.
        let mut live = vec![false; n];
        for o in outputs.iter().flatten() {
            if let Bit::Wire(w) = o {
                live[*w as usize] = true;
            }
        }
        let mut keep = vec![false; self.gates.len()];
        for (i, g) in self.gates.iter().enumerate().rev() {
            if live[g.output() as usize] {
                keep[i] = true;
                let (ins, k) = g.inputs();
                for &w in &ins[..k] {
                    live[w as usize] = true;
                }
            }
        }
        let mut map = vec![u32::MAX; n];
        let mut next = 0u32;
        let mut widths = Vec::with_capacity(self.inputs.len());
        for v in &self.inputs {
            widths.push(v.len() as u32);
            for &w in v {
                map[w as usize] = next;
                next += 1;
            }
        }
        let mut gates = Vec::with_capacity(keep.iter().filter(|&&k| k).count() + 2);
        let m = |map: &[u32], w: Wire| map[w as usize];
        for (g, k) in self.gates.iter().zip(&keep) {
            if !k {
                continue;
            }
            let out = next;
            next += 1;
            let ng = match *g {
                Gate::Xor { a, b, .. } => Gate::Xor {
                    a: m(&map, a),
                    b: m(&map, b),
                    out,
                },
                Gate::And { a, b, .. } => Gate::And {
                    a: m(&map, a),
                    b: m(&map, b),
                    out,
                },
                Gate::Inv { a, .. } => Gate::Inv { a: m(&map, a), out },
                Gate::Copy { a, .. } => Gate::Copy { a: m(&map, a), out },
                Gate::Const { value, .. } => Gate::Const { value, out },
            };
            map[g.output() as usize] = out;
            gates.push(ng);
        }
        // Constant outputs get one constant gate each value.
        let mut consts: [Option<Wire>; 2] = [None, None];
        let mut out_wires = Vec::new();
        for o in outputs.iter().flatten() {
            let w = match *o {
                Bit::Wire(w) => map[w as usize],
                Bit::Const(v) => match consts[v as usize] {
                    Some(w) => w,
                    None => {
                        let w = next;
                        next += 1;
                        gates.push(Gate::Const { value: v, out: w });
                        consts[v as usize] = Some(w);
                        w
                    }
                },
            };
            out_wires.push(w);
        }
        let out_widths = outputs.iter().map(|o| o.len() as u32).collect();
        Circuit::new(next, widths, out_widths, gates, out_wires)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_fold_and_dead_gates_vanish() {
        let mut b = Builder::new();
        let x = b.input(2);
        let y = b.input(1);
        let z = b.and(x[0], Bit::ONE);
        assert_eq!(z, x[0]);
        assert_eq!(b.and(x[0], Bit::ZERO), Bit::ZERO);
        assert_eq!(b.xor(x[1], x[1]), Bit::ZERO);
        assert_eq!(b.mux(y[0], Bit::ONE, Bit::ONE), Bit::ONE);
        let dead = b.and(x[0], x[1]);
        let _ = b.and(dead, y[0]);
        let live = b.and(x[1], y[0]);
        let o = b.or(live, x[0]);
        assert_eq!(b.counts().and_gates, 4);
        let c = b.finish(&[vec![o, Bit::ONE, x[0]]]).unwrap();
        let s = c.stats();
        assert_eq!((s.and_gates, s.and_depth), (2, 2));
        for v in 0..8u8 {
            let (x0, x1, y0) = (v & 1 == 1, v & 2 == 2, v & 4 == 4);
            let out = c.eval(&[vec![x0, x1], vec![y0]]).unwrap();
            assert_eq!(out, vec![vec![(x1 & y0) | x0, true, x0]]);
        }
        // and it survives Bristol Fashion
        let again = crate::circuit::bristol::parse(&crate::circuit::bristol::write(&c)).unwrap();
        assert_eq!(
            again.eval(&[vec![true, false], vec![true]]).unwrap(),
            vec![vec![true, true, true]]
        );
    }

    #[test]
    fn counting_mode_counts_without_gates() {
        let mut b = Builder::counting();
        let x = b.input(3);
        let a = b.and(x[0], x[1]);
        let _ = b.and(a, x[2]);
        assert_eq!(b.counts().and_gates, 2);
        assert_eq!(b.counts().and_depth, 2);
        assert!(b.finish(&[]).is_err());
    }
}
