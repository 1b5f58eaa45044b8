//! Waksman permutation networks of any size (the arbitrary-size variant of Beauquier
//! and Darrot, "AS-Waksman"), with the looping algorithm that programs one for a
//! given permutation. The SCS-WN set-intersection circuit of \[HEK12\] (paper §6.3)
//! shuffles its results through one, programmed by one party's random permutation.
//!
//! `W(n)` for `n ≥ 3`: a column of `⌊n/2⌋` input switches (inputs `2i`, `2i+1`; the
//! upper output feeds the top subnetwork `W(⌊n/2⌋)`, the lower one the bottom
//! subnetwork `W(⌈n/2⌉)`; for odd `n` the last input goes straight to the bottom),
//! the two subnetworks, and a column of output switches (outputs `2j`, `2j+1` from
//! top output `j` and bottom output `j`). For even `n` the last output switch is
//! left out (output `n−2` from the top, `n−1` from the bottom), for odd `n` the last
//! output comes straight from the bottom. Switches:
//! `S(n) = n − 1 + S(⌊n/2⌋) + S(⌈n/2⌉)`, `S(1) = 0`, `S(2) = 1`, which is
//! `n·log₂ n − n + 1` for powers of two; every permutation of `n` elements is
//! realised. A switch is a conditional swap: one AND gate per bit in GMW.
//!
//! Control bits are ordered: this level's input switches, the top subnetwork's, the
//! bottom subnetwork's, this level's output switches.

use super::builder::{Bit, Builder, Word};
use crate::Error;

/// Switches of a Waksman network on `n` elements.
pub fn switch_count(n: usize) -> usize {
    match n {
        0 | 1 => 0,
        2 => 1,
        _ => n - 1 + switch_count(n / 2) + switch_count(n.div_ceil(2)),
    }
}

/// Runs the network over `v` with controls from `ctl`: `swap(a, b, c)` returns the two
/// outputs of a switch with control `c` (swapped when set).
fn network<T, C>(
    mut v: Vec<T>,
    ctl: &mut dyn Iterator<Item = C>,
    swap: &mut dyn FnMut(T, T, C) -> (T, T),
) -> Result<Vec<T>, Error> {
    let n = v.len();
    let next = |ctl: &mut dyn Iterator<Item = C>| {
        ctl.next()
            .ok_or_else(|| Error::Params("too few Waksman control bits".into()))
    };
    if n <= 1 {
        return Ok(v);
    }
    if n == 2 {
        let b = v.pop();
        let a = v.pop();
        let (Some(a), Some(b)) = (a, b) else { unreachable!() };
        let c = next(ctl)?;
        let (x, y) = swap(a, b, c);
        return Ok(vec![x, y]);
    }
    let half = n / 2;
    let mut top = Vec::with_capacity(half);
    let mut bottom = Vec::with_capacity(n.div_ceil(2));
    let mut it = v.into_iter();
    for _ in 0..half {
        let (Some(a), Some(b)) = (it.next(), it.next()) else {
            unreachable!()
        };
        let c = next(ctl)?;
        let (x, y) = swap(a, b, c);
        top.push(x);
        bottom.push(y);
    }
    if let Some(last) = it.next() {
        bottom.push(last);
    }
    let top = network(top, ctl, swap)?;
    let bottom = network(bottom, ctl, swap)?;
    let mut out = Vec::with_capacity(n);
    let mut ti = top.into_iter();
    let mut bi = bottom.into_iter();
    let switched = if n.is_multiple_of(2) { half - 1 } else { half };
    for _ in 0..switched {
        let (Some(a), Some(b)) = (ti.next(), bi.next()) else {
            unreachable!()
        };
        let c = next(ctl)?;
        let (x, y) = swap(a, b, c);
        out.push(x);
        out.push(y);
    }
    out.extend(ti);
    out.extend(bi);
    Ok(out)
}

/// Applies the network in the clear: `out[j]` is the element the network routes to
/// output `j`.
pub fn apply<T>(v: Vec<T>, controls: &[bool]) -> Result<Vec<T>, Error> {
    if controls.len() != switch_count(v.len()) {
        return Err(Error::Params(format!(
            "a Waksman network on {} elements takes {} control bits, not {}",
            v.len(),
            switch_count(v.len()),
            controls.len()
        )));
    }
    let mut it = controls.iter().copied();
    network(v, &mut it, &mut |a, b, c| if c { (b, a) } else { (a, b) })
}

impl Builder {
    /// The network as a circuit: each switch is [`Builder::cswap`] on whole words
    /// (`w` ANDs for `w`-bit words). `controls` holds [`switch_count`]`(n)` bits.
    pub fn waksman(&mut self, v: Vec<Word>, controls: &[Bit]) -> Result<Vec<Word>, Error> {
        if controls.len() != switch_count(v.len()) {
            return Err(Error::Params(format!(
                "a Waksman network on {} elements takes {} control bits, not {}",
                v.len(),
                switch_count(v.len()),
                controls.len()
            )));
        }
        let mut it = controls.iter().copied();
        network(v, &mut it, &mut |a: Word, b: Word, c: Bit| self.cswap(c, &a, &b))
    }
}

/// Programs the network (the looping algorithm): `perm[i]` is the output that input
/// `i` must reach. Returns the control bits in network order.
pub fn route(perm: &[usize]) -> Result<Vec<bool>, Error> {
    let n = perm.len();
    let mut seen = vec![false; n];
    for &p in perm {
        if p >= n || std::mem::replace(&mut seen[p], true) {
            return Err(Error::Params("the Waksman routing input is not a permutation".into()));
        }
    }
    let mut out = Vec::with_capacity(switch_count(n));
    route_into(perm, &mut out);
    Ok(out)
}

fn route_into(perm: &[usize], out: &mut Vec<bool>) {
    let n = perm.len();
    if n <= 1 {
        return;
    }
    if n == 2 {
        out.push(perm[0] == 1);
        return;
    }
    let half = n / 2;
    let mut inv = vec![0usize; n];
    for (i, &p) in perm.iter().enumerate() {
        inv[p] = i;
    }
    // side[i]: false = top subnetwork, true = bottom.
    let mut side: Vec<Option<bool>> = vec![None; n];
    // The partner of an input in its input switch, of an output in its output pair.
    let in_partner = |i: usize| -> Option<usize> { if i < 2 * half { Some(i ^ 1) } else { None } };
    let out_partner = |j: usize| -> Option<usize> { if j < 2 * half { Some(j ^ 1) } else { None } };
    // Colour `start` with `s` and follow the chain of constraints: the input-switch
    // partner takes the other side, and so does the input whose output is paired with
    // this input's output.
    let colour = |start: usize, s: bool, side: &mut Vec<Option<bool>>| {
        let mut stack = vec![(start, s)];
        while let Some((x, s)) = stack.pop() {
            match side[x] {
                Some(_) => continue,
                None => side[x] = Some(s),
            }
            if let Some(p) = in_partner(x)
                && side[p].is_none()
            {
                stack.push((p, !s));
            }
            if let Some(q) = out_partner(perm[x]) {
                let y = inv[q];
                if side[y].is_none() {
                    stack.push((y, !s));
                }
            }
        }
    };
    // Fixed routes: the last output comes from the bottom (and, for even n, output
    // n − 2 from the top, which the output pair constraint then gives); for odd n the
    // last input goes to the bottom.
    if n % 2 == 1 {
        colour(n - 1, true, &mut side);
    }
    colour(inv[n - 1], true, &mut side);
    for x in 0..n {
        if side[x].is_none() {
            colour(x, false, &mut side);
        }
    }
    let side: Vec<bool> = side.into_iter().map(|s| s.unwrap_or(false)).collect();
    // Input switches: swapped when the upper input goes to the bottom.
    for i in 0..half {
        out.push(side[2 * i]);
    }
    // Subnetwork permutations.
    let mut top = vec![0usize; half];
    let mut bottom = vec![0usize; n.div_ceil(2)];
    for x in 0..n {
        if side[x] {
            bottom[x / 2] = perm[x] / 2;
        } else {
            top[x / 2] = perm[x] / 2;
        }
    }
    route_into(&top, out);
    route_into(&bottom, out);
    // Output switches: swapped when output 2j is fed from the bottom.
    let switched = if n.is_multiple_of(2) { half - 1 } else { half };
    for j in 0..switched {
        out.push(side[inv[2 * j]]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha20Rng;
    use rand_core::{RngCore, SeedableRng};

    fn check(perm: &[usize]) {
        let c = route(perm).unwrap();
        assert_eq!(c.len(), switch_count(perm.len()));
        let out = apply((0..perm.len()).collect(), &c).unwrap();
        for (i, &p) in perm.iter().enumerate() {
            assert_eq!(out[p], i, "perm {perm:?}");
        }
    }

    fn permutations(n: usize) -> Vec<Vec<usize>> {
        if n == 0 {
            return vec![vec![]];
        }
        let mut res = Vec::new();
        for p in permutations(n - 1) {
            for pos in 0..n {
                let mut q = p.clone();
                q.insert(pos, n - 1);
                res.push(q);
            }
        }
        res
    }

    #[test]
    fn routes_every_permutation_of_small_sizes() {
        for n in 0..=7 {
            for p in permutations(n) {
                check(&p);
            }
        }
    }

    #[test]
    fn routes_random_permutations_and_counts_switches() {
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        for n in [8usize, 9, 15, 16, 17, 31, 33, 64, 100, 257] {
            for _ in 0..20 {
                let mut p: Vec<usize> = (0..n).collect();
                for i in (1..n).rev() {
                    p.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
                }
                check(&p);
            }
        }
        for k in 1..12 {
            let n = 1usize << k;
            assert_eq!(switch_count(n), n * k - n + 1);
        }
        assert!(route(&[0, 0]).is_err());
        assert!(apply(vec![1, 2, 3], &[true]).is_err());
    }

    #[test]
    fn circuit_network_matches_the_clear_one() {
        use crate::bits::{bits_from_u64, u64_from_bits};
        let n = 11;
        let perm: Vec<usize> = vec![3, 7, 0, 10, 1, 9, 2, 8, 4, 6, 5];
        let ctl = route(&perm).unwrap();
        let mut b = Builder::new();
        let vals = b.input(4 * n);
        let c = b.input(ctl.len());
        let words: Vec<Word> = vals.chunks(4).map(|w| w.to_vec()).collect();
        let out = b.waksman(words, &c).unwrap();
        let circ = b.finish(&out).unwrap();
        assert_eq!(circ.stats().and_gates, 4 * switch_count(n));
        let inputs: Vec<bool> = (0..n as u64).flat_map(|v| bits_from_u64(v, 4)).collect();
        let res = circ.eval(&[inputs, ctl]).unwrap();
        for (i, &p) in perm.iter().enumerate() {
            assert_eq!(u64_from_bits(&res[p]), i as u64);
        }
    }
}
