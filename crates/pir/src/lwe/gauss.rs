//! Discrete Gaussian sampling for the LWE error, `σ = 58`.
//!
//! SimplePIR uses `σ = 6.4` with `n = 1024`, `q = 2³²`; its 128-bit claim is the
//! lattice estimator's gate count, while the core-SVP estimate of that set is only
//! about 95 bits (see [`super::security`] and `docs/pir.md`). `σ = 58` brings the
//! core-SVP estimate to 129 bits at the same `n` and `q`, and still decodes with
//! `p = 2⁸` up to about 2·10⁴ matrix columns.
//!
//! Inversion sampling over a cumulative table of `D_{Z,σ}` on `[−T, T]`, `T = 12σ`
//! (the mass outside is below 2⁻¹⁰⁰). Every sample scans the whole table, so the
//! time does not depend on the value drawn.

use rand_core::RngCore;

/// The standard deviation of the error.
pub const SIGMA: f64 = 58.0;
/// The tail cut.
const TAIL: i32 = 696;

/// A table-based sampler.
pub(crate) struct Gaussian {
    /// `cdf[k] = P(X ≤ k − TAIL) · 2⁶⁴`, saturated.
    cdf: Vec<u64>,
}

impl Gaussian {
    pub(crate) fn new() -> Self {
        let w: Vec<f64> = (-TAIL..=TAIL)
            .map(|x| (-(x as f64).powi(2) / (2.0 * SIGMA * SIGMA)).exp())
            .collect();
        let total: f64 = w.iter().sum();
        let mut acc = 0.0;
        let cdf = w
            .iter()
            .map(|p| {
                acc += p / total;
                let v = acc * 18446744073709551616.0;
                if v >= 18446744073709551615.0 {
                    u64::MAX
                } else {
                    v as u64
                }
            })
            .collect();
        Gaussian { cdf }
    }

    /// One sample in `[−TAIL, TAIL]`.
    pub(crate) fn sample(&self, rng: &mut impl RngCore) -> i32 {
        let u = rng.next_u64();
        // Count table entries below u, without branching on u.
        let below = self.cdf.iter().fold(0i32, |acc, &c| acc + (c < u) as i32);
        below.min(2 * TAIL) - TAIL
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;

    #[test]
    fn moments_match_sigma() {
        let g = Gaussian::new();
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        let n = 200_000;
        let xs: Vec<f64> = (0..n).map(|_| g.sample(&mut rng) as f64).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
        assert!(mean.abs() < 0.5, "mean {mean}");
        assert!((var.sqrt() - SIGMA).abs() < 0.5, "sd {}", var.sqrt());
    }
}
