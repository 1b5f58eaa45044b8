//! Gadgets on [`Builder`] words, optimised for size (AND gates), since GMW pays for
//! every AND gate with a triple and for every AND layer with a round trip
//! (paper §2.4). Costs are for `n`-bit words; XOR and INV are free.
//!
//! | gadget | AND gates | AND depth |
//! |---|---|---|
//! | [`Builder::add`], [`Builder::sub`] (ripple carry, one AND per full adder) | n | n |
//! | [`Builder::lt`], [`Builder::le`] (the carry chain of `a − b` alone) | n | n |
//! | [`Builder::eq`] (XNOR, then an AND tree) | n − 1 | ⌈log₂ n⌉ |
//! | [`Builder::mux_word`], [`Builder::cswap`] (`t = s ∧ (a ⊕ b)`) | n | 1 |
//! | [`Builder::compare_exchange`] | 2n | n + 1 |
//! | [`Builder::argmin`] over `k` keys with payloads | (k − 1)(2n + payload) at most | |
//! | [`Builder::square`] (partial products, carry-save columns, ripple) | ≈ n² − n | |
//!
//! The full adder with one AND gate: `s = a ⊕ b ⊕ c`, `c' = c ⊕ ((a ⊕ c) ∧ (b ⊕ c))`
//! (Kolesnikov–Schneider); the comparator is the carry-out of `a + ¬b + 1`.

use super::builder::{Bit, Builder, Word};

impl Builder {
    /// Bitwise XOR of two words of equal width.
    pub fn xor_word(&mut self, a: &[Bit], b: &[Bit]) -> Word {
        debug_assert_eq!(a.len(), b.len());
        a.iter().zip(b).map(|(&x, &y)| self.xor(x, y)).collect()
    }

    /// Bitwise NOT.
    pub fn not_word(&mut self, a: &[Bit]) -> Word {
        a.iter().map(|&x| self.not(x)).collect()
    }

    /// Every bit of `a` ANDed with `s`: `n` ANDs.
    pub fn and_word(&mut self, s: Bit, a: &[Bit]) -> Word {
        a.iter().map(|&x| self.and(s, x)).collect()
    }

    /// The carry out of a full adder (one AND): `c ⊕ ((a ⊕ c) ∧ (b ⊕ c))`.
    pub fn carry(&mut self, a: Bit, b: Bit, c: Bit) -> Bit {
        let ac = self.xor(a, c);
        let bc = self.xor(b, c);
        let t = self.and(ac, bc);
        self.xor(c, t)
    }

    /// `a + b + cin` over `max(|a|, |b|)` bits (the shorter word zero-extended), and the
    /// carry out. Ripple carry: one AND per bit.
    pub fn add_with_carry(&mut self, a: &[Bit], b: &[Bit], cin: Bit) -> (Word, Bit) {
        let n = a.len().max(b.len());
        let mut c = cin;
        let mut s = Vec::with_capacity(n);
        for k in 0..n {
            let x = a.get(k).copied().unwrap_or(Bit::ZERO);
            let y = b.get(k).copied().unwrap_or(Bit::ZERO);
            let xy = self.xor(x, y);
            s.push(self.xor(xy, c));
            c = self.carry(x, y, c);
        }
        (s, c)
    }

    /// `a + b`, one bit wider than the wider operand.
    pub fn add(&mut self, a: &[Bit], b: &[Bit]) -> Word {
        let (mut s, c) = self.add_with_carry(a, b, Bit::ZERO);
        s.push(c);
        s
    }

    /// `a + b mod 2^n` with `n = max(|a|, |b|)` (no carry out: one AND fewer).
    pub fn add_mod(&mut self, a: &[Bit], b: &[Bit]) -> Word {
        let n = a.len().max(b.len());
        let mut c = Bit::ZERO;
        let mut s = Vec::with_capacity(n);
        for k in 0..n {
            let x = a.get(k).copied().unwrap_or(Bit::ZERO);
            let y = b.get(k).copied().unwrap_or(Bit::ZERO);
            let xy = self.xor(x, y);
            s.push(self.xor(xy, c));
            if k + 1 < n {
                c = self.carry(x, y, c);
            }
        }
        s
    }

    /// `a − b mod 2^n` and the borrow (`a < b`), `n = max(|a|, |b|)`.
    pub fn sub(&mut self, a: &[Bit], b: &[Bit]) -> (Word, Bit) {
        let n = a.len().max(b.len());
        let nb: Word = (0..n)
            .map(|k| {
                let y = b.get(k).copied().unwrap_or(Bit::ZERO);
                self.not(y)
            })
            .collect();
        let (d, c) = self.add_with_carry(a, &nb, Bit::ONE);
        let borrow = self.not(c);
        (d, borrow)
    }

    /// `a + 1·s` (an increment by one bit): `n − 1` ANDs, and the carry out (one more).
    pub fn increment(&mut self, a: &[Bit], s: Bit) -> (Word, Bit) {
        let mut c = s;
        let mut out = Vec::with_capacity(a.len());
        for &x in a {
            out.push(self.xor(x, c));
            c = self.and(x, c);
        }
        (out, c)
    }

    /// `a < b` (unsigned, zero-extended to equal width): the borrow of `a − b`, one AND
    /// per bit and no sum bits.
    pub fn lt(&mut self, a: &[Bit], b: &[Bit]) -> Bit {
        let n = a.len().max(b.len());
        // carry of a + ¬b + 1: 1 iff a ≥ b.
        let mut c = Bit::ONE;
        for k in 0..n {
            let x = a.get(k).copied().unwrap_or(Bit::ZERO);
            let y = b.get(k).copied().unwrap_or(Bit::ZERO);
            let ny = self.not(y);
            c = self.carry(x, ny, c);
        }
        self.not(c)
    }

    /// `a ≤ b` (unsigned).
    pub fn le(&mut self, a: &[Bit], b: &[Bit]) -> Bit {
        let g = self.lt(b, a);
        self.not(g)
    }

    /// `a = b`: XNOR of every bit pair, then a balanced AND tree (`n − 1` ANDs, depth
    /// `⌈log₂ n⌉`).
    pub fn eq(&mut self, a: &[Bit], b: &[Bit]) -> Bit {
        let n = a.len().max(b.len());
        let bits: Word = (0..n)
            .map(|k| {
                let x = a.get(k).copied().unwrap_or(Bit::ZERO);
                let y = b.get(k).copied().unwrap_or(Bit::ZERO);
                let d = self.xor(x, y);
                self.not(d)
            })
            .collect();
        self.and_all(&bits)
    }

    /// The AND of all bits, as a balanced tree.
    pub fn and_all(&mut self, bits: &[Bit]) -> Bit {
        self.tree(bits, Bit::ONE, &mut |b, x, y| b.and(x, y))
    }

    /// The OR of all bits, as a balanced tree.
    pub fn or_all(&mut self, bits: &[Bit]) -> Bit {
        self.tree(bits, Bit::ZERO, &mut |b, x, y| b.or(x, y))
    }

    fn tree(&mut self, bits: &[Bit], empty: Bit, op: &mut dyn FnMut(&mut Builder, Bit, Bit) -> Bit) -> Bit {
        if bits.is_empty() {
            return empty;
        }
        let mut level: Vec<Bit> = bits.to_vec();
        while level.len() > 1 {
            let mut next = Vec::with_capacity(level.len().div_ceil(2));
            for pair in level.chunks(2) {
                next.push(if pair.len() == 2 {
                    op(self, pair[0], pair[1])
                } else {
                    pair[0]
                });
            }
            level = next;
        }
        level[0]
    }

    /// `s ? one : zero` bit by bit: `n` ANDs (none where the two bits are equal
    /// constants, so a multiplexer between public values is free where they agree).
    pub fn mux_word(&mut self, s: Bit, zero: &[Bit], one: &[Bit]) -> Word {
        debug_assert_eq!(zero.len(), one.len());
        zero.iter().zip(one).map(|(&z, &o)| self.mux(s, z, o)).collect()
    }

    /// Conditional swap: `(b, a)` if `s`, else `(a, b)`; `n` ANDs (`t = s ∧ (a ⊕ b)`
    /// serves both outputs).
    pub fn cswap(&mut self, s: Bit, a: &[Bit], b: &[Bit]) -> (Word, Word) {
        debug_assert_eq!(a.len(), b.len());
        let mut x = Vec::with_capacity(a.len());
        let mut y = Vec::with_capacity(a.len());
        for (&p, &q) in a.iter().zip(b) {
            let d = self.xor(p, q);
            let t = self.and(s, d);
            x.push(self.xor(p, t));
            y.push(self.xor(q, t));
        }
        (x, y)
    }

    /// `(min(a, b), max(a, b))` by key: the comparator on `a[..key_bits]` (the low
    /// `key_bits` bits hold the key; bits above are payload carried along) and one
    /// conditional swap of the whole words: `key_bits + n` ANDs.
    pub fn compare_exchange(&mut self, a: &[Bit], b: &[Bit], key_bits: usize) -> (Word, Word) {
        let s = self.lt(&b[..key_bits], &a[..key_bits]);
        self.cswap(s, a, b)
    }

    /// The smallest key and its payload (ties go to the earlier one), by a tournament:
    /// each match is a comparator on the keys and a multiplexer of key and payload.
    /// Payload bits that are public constants at a match where both agree cost nothing
    /// (the index of a leaf, for example).
    pub fn argmin(&mut self, items: &[(Word, Word)]) -> Option<(Word, Word)> {
        let w = items.first().map(|i| i.0.len()).unwrap_or(0);
        self.argmin_keep(items, w)
    }

    /// [`Builder::argmin`] when only the top `keep` bits of the winning key are needed
    /// after the last match (the key multiplexer of the final match shrinks to them).
    /// Returns those key bits and the payload.
    pub fn argmin_keep(&mut self, items: &[(Word, Word)], keep: usize) -> Option<(Word, Word)> {
        let mut level: Vec<(Word, Word)> = items.to_vec();
        if level.is_empty() {
            return None;
        }
        if level.len() == 1 {
            let (k, p) = level.pop()?;
            return Some((k[k.len() - keep.min(k.len())..].to_vec(), p));
        }
        while level.len() > 1 {
            let last = level.len() == 2;
            let mut next = Vec::with_capacity(level.len().div_ceil(2));
            let mut it = level.into_iter();
            while let Some(x) = it.next() {
                match it.next() {
                    None => next.push(x),
                    Some(y) => {
                        // take y iff y.key < x.key
                        let s = self.lt(&y.0, &x.0);
                        let from = if last { x.0.len() - keep.min(x.0.len()) } else { 0 };
                        let k = self.mux_word(s, &x.0[from..], &y.0[from..]);
                        let p = self.mux_word(s, &x.1, &y.1);
                        next.push((k, p));
                    }
                }
            }
            level = next;
        }
        level.pop()
    }

    /// Adds the bits of `columns` (column `k` holds bits of weight `2^k`) into one
    /// number of `width` bits (higher bits dropped): carry-save reduction with full
    /// and half adders (one AND each) until every column holds at most two bits, then
    /// one ripple-carry addition.
    pub fn add_columns(&mut self, mut columns: Vec<Vec<Bit>>, width: usize) -> Word {
        columns.resize(width, Vec::new());
        columns.truncate(width);
        // Drop constant zeros, fold constant ones into the column count.
        for k in 0..width {
            let mut ones = 0usize;
            columns[k].retain(|b| match b {
                Bit::Const(false) => false,
                Bit::Const(true) => {
                    ones += 1;
                    false
                }
                Bit::Wire(_) => true,
            });
            // ones·2^k: bit 0 stays here, the rest carries up.
            if ones & 1 == 1 {
                columns[k].push(Bit::ONE);
            }
            let mut carry = ones >> 1;
            let mut j = k + 1;
            while carry > 0 && j < width {
                if carry & 1 == 1 {
                    columns[j].push(Bit::ONE);
                }
                carry >>= 1;
                j += 1;
            }
        }
        // Carry-save: each full adder turns three bits of column k into one of k and
        // one of k + 1.
        loop {
            let mut changed = false;
            for k in 0..width {
                while columns[k].len() > 2 {
                    let c = columns[k].pop().unwrap_or(Bit::ZERO);
                    let b = columns[k].pop().unwrap_or(Bit::ZERO);
                    let a = columns[k].pop().unwrap_or(Bit::ZERO);
                    let ab = self.xor(a, b);
                    let s = self.xor(ab, c);
                    let cy = self.carry(a, b, c);
                    columns[k].insert(0, s);
                    if k + 1 < width {
                        columns[k + 1].push(cy);
                    }
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        let x: Word = columns
            .iter()
            .map(|c| c.first().copied().unwrap_or(Bit::ZERO))
            .collect();
        let y: Word = columns.iter().map(|c| c.get(1).copied().unwrap_or(Bit::ZERO)).collect();
        self.add_mod(&x, &y)
    }

    /// Partial-product columns of `a²` (unsigned): `a_i` at weight `2^{2i}` and
    /// `a_i ∧ a_j` (`i < j`) at weight `2^{i+j+1}` — `n(n − 1)/2` ANDs.
    pub fn square_columns(&mut self, a: &[Bit]) -> Vec<Vec<Bit>> {
        let n = a.len();
        let mut cols = vec![Vec::new(); 2 * n];
        for i in 0..n {
            cols[2 * i].push(a[i]);
            for j in i + 1..n {
                let p = self.and(a[i], a[j]);
                cols[i + j + 1].push(p);
            }
        }
        cols
    }

    /// `a²` (unsigned), `2n` bits.
    pub fn square(&mut self, a: &[Bit]) -> Word {
        let cols = self.square_columns(a);
        self.add_columns(cols, 2 * a.len())
    }

    /// `a · b` (unsigned), `|a| + |b|` bits: `|a|·|b|` partial products and a
    /// carry-save sum.
    pub fn mul(&mut self, a: &[Bit], b: &[Bit]) -> Word {
        let mut cols = vec![Vec::new(); a.len() + b.len()];
        for (i, &x) in a.iter().enumerate() {
            for (j, &y) in b.iter().enumerate() {
                let p = self.and(x, y);
                cols[i + j].push(p);
            }
        }
        self.add_columns(cols, a.len() + b.len())
    }
}

/// A comparator network position: `None` is a public `+∞` (a padding element known
/// to sort last), which compare-exchanges move without gates.
pub type Slot = Option<Word>;

impl Builder {
    /// Compare-exchange of two slots, smaller first; a `+∞` slot costs nothing.
    pub fn compare_exchange_slots(&mut self, a: Slot, b: Slot, key_bits: usize) -> (Slot, Slot) {
        match (a, b) {
            (Some(x), Some(y)) => {
                let (lo, hi) = self.compare_exchange(&x, &y, key_bits);
                (Some(lo), Some(hi))
            }
            (None, y) => (y, None),
            (x, None) => (x, None),
        }
    }

    /// Batcher's bitonic merger: sorts a bitonic sequence (ascending, then descending)
    /// of `2^k` slots ascending in `k` stages of `2^{k−1}` compare-exchanges each
    /// (`2^{k−1}·k` in all); slots that are `+∞` cost nothing. The length must be a
    /// power of two (pad with `None`).
    pub fn bitonic_merge(&mut self, mut v: Vec<Slot>, key_bits: usize) -> Vec<Slot> {
        let n = v.len();
        assert!(n.is_power_of_two(), "the bitonic merger takes 2^k slots");
        let mut half = n / 2;
        while half >= 1 {
            for start in (0..n).step_by(2 * half) {
                for i in start..start + half {
                    let a = v[i].take();
                    let b = v[i + half].take();
                    let (lo, hi) = self.compare_exchange_slots(a, b, key_bits);
                    v[i] = lo;
                    v[i + half] = hi;
                }
            }
            half /= 2;
        }
        v
    }

    /// Merges two ascending lists with the bitonic merger: `a ‖ (+∞ padding) ‖
    /// reverse(b)` is bitonic. Returns the `|a| + |b|` smallest slots, ascending.
    pub fn merge_sorted(&mut self, a: Vec<Word>, b: Vec<Word>, key_bits: usize) -> Vec<Word> {
        let total = a.len() + b.len();
        let n = total.next_power_of_two().max(1);
        let mut v: Vec<Slot> = Vec::with_capacity(n);
        v.extend(a.into_iter().map(Some));
        v.resize(n - b.len(), None);
        v.extend(b.into_iter().rev().map(Some));
        let out = self.bitonic_merge(v, key_bits);
        out.into_iter().take(total).map(|s| s.unwrap_or_default()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::super::builder::const_word;
    use super::*;
    use crate::bits::{bits_from_u64, u64_from_bits};
    use proptest::prelude::*;

    /// Builds `f` over two inputs of widths `wa`, `wb`, evaluates it on `(x, y)`.
    fn run2(wa: usize, wb: usize, x: u64, y: u64, f: impl Fn(&mut Builder, &[Bit], &[Bit]) -> Vec<Word>) -> Vec<u64> {
        let mut b = Builder::new();
        let a = b.input(wa);
        let c = b.input(wb);
        let outs = f(&mut b, &a, &c);
        let circ = b.finish(&outs).unwrap();
        let res = circ.eval(&[bits_from_u64(x, wa), bits_from_u64(y, wb)]).unwrap();
        res.iter().map(|o| u64_from_bits(o)).collect()
    }

    proptest! {
        #[test]
        fn arithmetic_matches_plain(x in 0u64..1 << 12, y in 0u64..1 << 12) {
            let r = run2(12, 12, x, y, |b, a, c| {
                let s = b.add(a, c);
                let (d, borrow) = b.sub(a, c);
                let lt = b.lt(a, c);
                let le = b.le(a, c);
                let eq = b.eq(a, c);
                let p = b.mul(&a[..6], &c[..6]);
                let sq = b.square(a);
                let (inc, cy) = b.increment(a, c[0]);
                vec![s, d, vec![borrow], vec![lt], vec![le], vec![eq], p, sq, inc, vec![cy]]
            });
            prop_assert_eq!(r[0], x + y);
            prop_assert_eq!(r[1], x.wrapping_sub(y) & 0xfff);
            prop_assert_eq!(r[2], (x < y) as u64);
            prop_assert_eq!(r[3], (x < y) as u64);
            prop_assert_eq!(r[4], (x <= y) as u64);
            prop_assert_eq!(r[5], (x == y) as u64);
            prop_assert_eq!(r[6], (x & 63) * (y & 63));
            prop_assert_eq!(r[7], x * x);
            prop_assert_eq!(r[8], (x + (y & 1)) & 0xfff);
            prop_assert_eq!(r[9], ((x + (y & 1)) >> 12) & 1);
        }

        #[test]
        fn columns_add_constants_and_wires(x in 0u64..256, y in 0u64..256, k in 0u64..1000) {
            let r = run2(8, 8, x, y, |b, a, c| {
                let mut cols = vec![Vec::new(); 12];
                for i in 0..8 { cols[i].push(a[i]); cols[i].push(c[i]); }
                for (i, bit) in const_word(k, 10).into_iter().enumerate() { cols[i].push(bit); }
                vec![b.add_columns(cols, 12)]
            });
            prop_assert_eq!(r[0], (x + y + k) & 0xfff);
        }

        #[test]
        fn argmin_matches_plain(keys in proptest::collection::vec(0u64..16, 1..9)) {
            let n = keys.len();
            let mut b = Builder::new();
            let inp = b.input(4 * n);
            let items: Vec<(Word, Word)> = (0..n)
                .map(|i| (inp[4 * i..4 * i + 4].to_vec(), const_word(i as u64, 4)))
                .collect();
            let (k, p) = b.argmin(&items).unwrap();
            let c = b.finish(&[k, p]).unwrap();
            let bits: Vec<bool> = keys.iter().flat_map(|&k| bits_from_u64(k, 4)).collect();
            let out = c.eval(&[bits]).unwrap();
            let min = *keys.iter().min().unwrap();
            let first = keys.iter().position(|&k| k == min).unwrap();
            prop_assert_eq!(u64_from_bits(&out[0]), min);
            prop_assert_eq!(u64_from_bits(&out[1]), first as u64);
        }

        #[test]
        fn merge_matches_plain(mut xs in proptest::collection::vec(0u64..64, 0..7), mut ys in proptest::collection::vec(0u64..64, 1..7)) {
            xs.sort();
            ys.sort();
            let mut b = Builder::new();
            let ia = b.input(6 * xs.len());
            let ib = b.input(6 * ys.len());
            let wa: Vec<Word> = ia.chunks(6).map(|c| c.to_vec()).collect();
            let wb: Vec<Word> = ib.chunks(6).map(|c| c.to_vec()).collect();
            let m = b.merge_sorted(wa, wb, 6);
            let c = b.finish(&m).unwrap();
            let bits = |v: &[u64]| v.iter().flat_map(|&k| bits_from_u64(k, 6)).collect::<Vec<bool>>();
            let out: Vec<u64> = c.eval(&[bits(&xs), bits(&ys)]).unwrap().iter().map(|o| u64_from_bits(o)).collect();
            let mut all = xs.clone();
            all.extend(&ys);
            all.sort();
            prop_assert_eq!(out, all);
        }
    }

    type TwoWordGadget<'a> = &'a dyn Fn(&mut Builder, &[Bit], &[Bit]) -> Vec<Word>;

    #[test]
    fn costs_are_as_documented() {
        let n = 16;
        let cost = |f: TwoWordGadget| {
            let mut b = Builder::new();
            let x = b.input(n);
            let y = b.input(n);
            let o = f(&mut b, &x, &y);
            b.finish(&o).unwrap().stats()
        };
        assert_eq!(cost(&|b, x, y| vec![b.add(x, y)]).and_gates, n);
        assert_eq!(cost(&|b, x, y| vec![vec![b.lt(x, y)]]).and_gates, n);
        let e = cost(&|b, x, y| vec![vec![b.eq(x, y)]]);
        assert_eq!((e.and_gates, e.and_depth), (n - 1, 4));
        assert_eq!(cost(&|b, x, y| vec![b.mux_word(x[0], x, y)]).and_gates, n);
        let (ce, depth) = {
            let s = cost(&|b, x, y| {
                let (l, h) = b.compare_exchange(x, y, n);
                vec![l, h]
            });
            (s.and_gates, s.and_depth)
        };
        assert_eq!((ce, depth), (2 * n, n + 1));
        // bitonic merge of 2 × 8 words: 8·4 compare-exchanges
        let mut b = Builder::new();
        let x = b.input(8 * 4);
        let y = b.input(8 * 4);
        let m = b.merge_sorted(
            x.chunks(4).map(|c| c.to_vec()).collect(),
            y.chunks(4).map(|c| c.to_vec()).collect(),
            4,
        );
        assert_eq!(b.finish(&m).unwrap().stats().and_gates, 8 * 4 * 8);
    }
}
