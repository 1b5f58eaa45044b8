//! Arithmetic in `Z_q[X]/(X^N − 1)` for `q` a power of two: dense polynomials,
//! sparse ternary polynomials (NTRU's product-form keys and blinding values), and
//! inversion (over `F₂` by the extended Euclidean algorithm, then Newton lifting to
//! `2^k`).

use rand_core::RngCore;

/// A dense polynomial, coefficients reduced modulo `q` (stored in `u32`).
pub(crate) type Poly = Vec<u32>;

/// A sparse ternary polynomial: positions of its `+1` and `−1` coefficients.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Ternary {
    pub(crate) plus: Vec<u16>,
    pub(crate) minus: Vec<u16>,
}

impl zeroize::Zeroize for Ternary {
    fn zeroize(&mut self) {
        self.plus.zeroize();
        self.minus.zeroize();
    }
}

impl Ternary {
    /// `d` coefficients `+1` and `d_minus` coefficients `−1` at distinct random positions.
    pub(crate) fn random(n: usize, d_plus: usize, d_minus: usize, rng: &mut impl RngCore) -> Self {
        let mut taken = vec![false; n];
        let mut pick = |k: usize| -> Vec<u16> {
            let mut out = Vec::with_capacity(k);
            while out.len() < k {
                let i = (rng.next_u64() % n as u64) as usize;
                if !taken[i] {
                    taken[i] = true;
                    out.push(i as u16);
                }
            }
            out
        };
        let plus = pick(d_plus);
        let minus = pick(d_minus);
        Ternary { plus, minus }
    }

    /// `self ⋆ a mod (X^N − 1, q)`.
    pub(crate) fn mul(&self, a: &[u32], mask: u32) -> Poly {
        let n = a.len();
        let mut out = vec![0u32; n];
        for &i in &self.plus {
            let i = i as usize;
            for (j, &v) in a.iter().enumerate() {
                let k = if i + j >= n { i + j - n } else { i + j };
                out[k] = out[k].wrapping_add(v);
            }
        }
        for &i in &self.minus {
            let i = i as usize;
            for (j, &v) in a.iter().enumerate() {
                let k = if i + j >= n { i + j - n } else { i + j };
                out[k] = out[k].wrapping_sub(v);
            }
        }
        out.iter_mut().for_each(|v| *v &= mask);
        out
    }

    /// The dense form, modulo `q`.
    pub(crate) fn dense(&self, n: usize, mask: u32) -> Poly {
        let mut out = vec![0u32; n];
        for &i in &self.plus {
            out[i as usize] = out[i as usize].wrapping_add(1) & mask;
        }
        for &i in &self.minus {
            out[i as usize] = out[i as usize].wrapping_sub(1) & mask;
        }
        out
    }
}

/// `a ⋆ b mod (X^N − 1, q)`, schoolbook.
pub(crate) fn mul(a: &[u32], b: &[u32], mask: u32) -> Poly {
    let n = a.len();
    let mut out = vec![0u32; n];
    for (i, &x) in a.iter().enumerate() {
        if x == 0 {
            continue;
        }
        for (j, &y) in b.iter().enumerate() {
            let k = if i + j >= n { i + j - n } else { i + j };
            out[k] = out[k].wrapping_add(x.wrapping_mul(y));
        }
    }
    out.iter_mut().for_each(|v| *v &= mask);
    out
}

/// A coefficient modulo `q` as a centred integer in `(−q/2, q/2]`.
pub(crate) fn centre(v: u32, log_q: u32) -> i64 {
    let q = 1i64 << log_q;
    let v = v as i64;
    if v > q / 2 { v - q } else { v }
}

/// The inverse of `a` in `Z_{2^log_q}[X]/(X^N − 1)`, if `a` is invertible modulo 2.
pub(crate) fn invert_mod_pow2(a: &[u32], log_q: u32) -> Option<Poly> {
    let n = a.len();
    let inv2 = invert_mod2(a)?;
    let mut b: Poly = inv2.into_iter().map(|x| x as u32).collect();
    let mut k = 1u32;
    // Newton: b ← b·(2 − a·b), doubling the precision each step.
    while k < log_q {
        k = (2 * k).min(32);
        let mask = if k >= 32 { u32::MAX } else { (1u32 << k) - 1 };
        let ab = mul(a, &b, mask);
        let mut two_minus: Poly = ab.iter().map(|&v| 0u32.wrapping_sub(v) & mask).collect();
        two_minus[0] = two_minus[0].wrapping_add(2) & mask;
        b = mul(&b, &two_minus, mask);
    }
    let mask = (1u32 << log_q) - 1;
    b.iter_mut().for_each(|v| *v &= mask);
    debug_assert!({
        let one = mul(a, &b, mask);
        one[0] == 1 && one[1..].iter().all(|&v| v == 0)
    });
    let _ = n;
    Some(b)
}

/// Polynomials over `F₂` as bit vectors (little-endian words).
fn deg(p: &[u64]) -> Option<usize> {
    for (w, &x) in p.iter().enumerate().rev() {
        if x != 0 {
            return Some(w * 64 + 63 - x.leading_zeros() as usize);
        }
    }
    None
}

fn xor_shifted(dst: &mut [u64], src: &[u64], shift: usize) {
    let (ws, bs) = (shift / 64, shift % 64);
    for i in (0..src.len()).rev() {
        if src[i] == 0 {
            continue;
        }
        if i + ws < dst.len() {
            dst[i + ws] ^= src[i] << bs;
        }
        if bs != 0 && i + ws + 1 < dst.len() {
            dst[i + ws + 1] ^= src[i] >> (64 - bs);
        }
    }
}

/// The inverse of `a mod 2` in `F₂[X]/(X^N − 1)` by the extended Euclidean algorithm.
fn invert_mod2(a: &[u32]) -> Option<Vec<u8>> {
    let n = a.len();
    let words = (n + 1).div_ceil(64) + 1;
    let mut r0 = vec![0u64; words]; // X^N − 1 = X^N + 1 over F₂
    r0[0] = 1;
    r0[n / 64] |= 1 << (n % 64);
    let mut r1 = vec![0u64; words];
    for (i, &c) in a.iter().enumerate() {
        if c & 1 == 1 {
            r1[i / 64] |= 1 << (i % 64);
        }
    }
    let mut s0 = vec![0u64; words]; // coefficient of a
    let mut s1 = vec![0u64; words];
    s1[0] = 1;
    // Invariant: r_i ≡ s_i · a (mod X^N − 1).
    while let Some(d1) = deg(&r1) {
        let d0 = deg(&r0)?;
        if d0 < d1 {
            std::mem::swap(&mut r0, &mut r1);
            std::mem::swap(&mut s0, &mut s1);
            continue;
        }
        let shift = d0 - d1;
        let (r1c, s1c) = (r1.clone(), s1.clone());
        xor_shifted(&mut r0, &r1c, shift);
        // s0 ^= s1 << shift, reduced modulo X^N − 1 (rotate).
        let mut shifted = vec![0u64; words];
        for i in 0..n {
            if (s1c[i / 64] >> (i % 64)) & 1 == 1 {
                let j = (i + shift) % n;
                shifted[j / 64] |= 1 << (j % 64);
            }
        }
        for (x, y) in s0.iter_mut().zip(&shifted) {
            *x ^= y;
        }
        if deg(&r0).is_none() {
            // r1 = gcd; invertible iff it is 1.
            if deg(&r1) == Some(0) {
                return Some((0..n).map(|i| ((s1[i / 64] >> (i % 64)) & 1) as u8).collect());
            }
            return None;
        }
    }
    if deg(&r0) == Some(0) {
        return Some((0..n).map(|i| ((s0[i / 64] >> (i % 64)) & 1) as u8).collect());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;

    #[test]
    fn inverse_mod_power_of_two() {
        let mut rng = ChaCha20Rng::seed_from_u64(3);
        let n = 439;
        let mask = (1u32 << 21) - 1;
        let mut found = 0;
        for _ in 0..6 {
            let t = Ternary::random(n, 147, 146, &mut rng);
            let a = t.dense(n, mask);
            if let Some(b) = invert_mod_pow2(&a, 21) {
                let one = mul(&a, &b, mask);
                assert_eq!(one[0], 1);
                assert!(one[1..].iter().all(|&v| v == 0));
                found += 1;
            }
        }
        assert!(found > 0);
        // Equal numbers of ±1 make a(1) = 0: divisible by X − 1, never invertible.
        let t = Ternary::random(n, 146, 146, &mut rng);
        assert!(invert_mod_pow2(&t.dense(n, mask), 21).is_none());
    }

    #[test]
    fn sparse_and_dense_products_agree() {
        let mut rng = ChaCha20Rng::seed_from_u64(4);
        let n = 31;
        let mask = (1u32 << 21) - 1;
        let t = Ternary::random(n, 5, 4, &mut rng);
        let a: Poly = (0..n).map(|_| rng.next_u32() & mask).collect();
        assert_eq!(t.mul(&a, mask), mul(&t.dense(n, mask), &a, mask));
    }
}
