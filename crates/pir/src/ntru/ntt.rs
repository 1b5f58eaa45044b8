//! A number-theoretic transform of length 1024 over the prime
//! `P = 2⁶⁴ − 2³² + 1`, used as the paper's "FFT" (§4.4, §5.4): the server keeps every
//! column polynomial of the table in transformed form, multiplies point by point with
//! the transformed query, sums over the table and transforms back once per column.
//!
//! A product of a query polynomial (coefficients `< 2²¹`) and a 0/1 column polynomial
//! of degree `< N = 439` is a linear convolution of length `2N − 1 ≤ 1024`, so it is
//! computed without wrap-around; the sum over `R` regions has coefficients below
//! `R·N·2²¹ < P` for `R < 2³³`, so the integer result is exact and is folded modulo
//! `X^N − 1` and reduced modulo `q` afterwards.

/// The prime `2⁶⁴ − 2³² + 1`.
pub(crate) const P: u64 = 0xffff_ffff_0000_0001;
/// Transform length.
pub(crate) const LEN: usize = 1024;

#[inline]
pub(crate) fn add(a: u64, b: u64) -> u64 {
    let (s, over) = a.overflowing_add(b);
    let (s, over2) = s.overflowing_sub(P);
    if over || !over2 { s } else { s.wrapping_add(P) }
}

#[inline]
fn sub(a: u64, b: u64) -> u64 {
    let (d, under) = a.overflowing_sub(b);
    if under { d.wrapping_add(P) } else { d }
}

/// Reduces a 128-bit product modulo `P` (2⁶⁴ ≡ 2³² − 1, 2⁹⁶ ≡ −1).
#[inline]
pub(crate) fn reduce(x: u128) -> u64 {
    let lo = x as u64;
    let hi = (x >> 64) as u64;
    let hi_hi = hi >> 32;
    let hi_lo = hi & 0xffff_ffff;
    let (t0, borrow) = lo.overflowing_sub(hi_hi);
    let t0 = if borrow { t0.wrapping_sub(0xffff_ffff) } else { t0 };
    let t1 = hi_lo * 0xffff_ffff;
    let (r, carry) = t0.overflowing_add(t1);
    let r = if carry { r.wrapping_add(0xffff_ffff) } else { r };
    if r >= P { r - P } else { r }
}

#[inline]
pub(crate) fn mul(a: u64, b: u64) -> u64 {
    reduce(a as u128 * b as u128)
}

fn pow(mut b: u64, mut e: u64) -> u64 {
    let mut r = 1u64;
    while e > 0 {
        if e & 1 == 1 {
            r = mul(r, b);
        }
        b = mul(b, b);
        e >>= 1;
    }
    r
}

/// Precomputed twiddles for the forward and inverse transforms.
pub(crate) struct Ntt {
    fwd: Vec<u64>,
    inv: Vec<u64>,
    n_inv: u64,
}

impl Ntt {
    pub(crate) fn new() -> Self {
        // 7 generates the multiplicative group of P.
        let w = pow(7, (P - 1) / LEN as u64);
        let wi = pow(w, P - 2);
        let tw = |root: u64| {
            let mut v = vec![0u64; LEN / 2];
            let mut x = 1u64;
            for t in v.iter_mut() {
                *t = x;
                x = mul(x, root);
            }
            v
        };
        Ntt {
            fwd: tw(w),
            inv: tw(wi),
            n_inv: pow(LEN as u64, P - 2),
        }
    }

    fn transform(a: &mut [u64], tw: &[u64]) {
        let n = a.len();
        // Bit-reversal permutation.
        let mut j = 0;
        for i in 1..n {
            let mut bit = n >> 1;
            while j & bit != 0 {
                j ^= bit;
                bit >>= 1;
            }
            j |= bit;
            if i < j {
                a.swap(i, j);
            }
        }
        let mut len = 2;
        while len <= n {
            let step = n / len;
            for start in (0..n).step_by(len) {
                for k in 0..len / 2 {
                    let w = tw[k * step];
                    let u = a[start + k];
                    let v = mul(a[start + k + len / 2], w);
                    a[start + k] = add(u, v);
                    a[start + k + len / 2] = sub(u, v);
                }
            }
            len <<= 1;
        }
    }

    /// The transform of a polynomial with small non-negative coefficients, zero-padded.
    pub(crate) fn forward(&self, coeffs: &[u32]) -> Vec<u64> {
        let mut a = vec![0u64; LEN];
        for (x, &c) in a.iter_mut().zip(coeffs) {
            *x = c as u64;
        }
        Self::transform(&mut a, &self.fwd);
        a
    }

    /// The inverse transform (exact integers `< P`).
    pub(crate) fn inverse(&self, mut a: Vec<u64>) -> Vec<u64> {
        Self::transform(&mut a, &self.inv);
        a.iter_mut().for_each(|x| *x = mul(*x, self.n_inv));
        a
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reduce_is_modular() {
        for &(a, b) in &[(P - 1, P - 1), (1u64 << 63, 3), (12345, 67890), (P - 2, 2)] {
            assert_eq!(mul(a, b) as u128, (a as u128 * b as u128) % P as u128);
        }
    }

    #[test]
    fn convolution_by_transform() {
        let ntt = Ntt::new();
        let a: Vec<u32> = (0..439).map(|i| (i * 7919 % 2_000_000) as u32).collect();
        let b: Vec<u32> = (0..439).map(|i| (i % 3 == 0) as u32).collect();
        let (fa, fb) = (ntt.forward(&a), ntt.forward(&b));
        let prod: Vec<u64> = fa.iter().zip(&fb).map(|(x, y)| mul(*x, *y)).collect();
        let c = ntt.inverse(prod);
        let mut want = vec![0u64; LEN];
        for i in 0..439 {
            for j in 0..439 {
                want[i + j] += a[i] as u64 * b[j] as u64;
            }
        }
        assert_eq!(c, want);
    }
}
