//! Discrete Gaussian sampling for the LWE error, `σ = 6.4` (SimplePIR's choice).
//!
//! Inversion sampling over a cumulative table of `D_{Z,σ}` on `[−T, T]`, `T = 12σ`
//! rounded up (the mass outside is below 2⁻¹⁰⁰). Every sample scans the whole table,
//! so the time does not depend on the value drawn.

use rand_core::RngCore;

/// The standard deviation of the error.
pub const SIGMA: f64 = 6.4;
/// The tail cut.
const TAIL: i32 = 77;

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
        let below: i32 = self.cdf.iter().map(|&c| (c < u) as i32).sum();
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
        assert!(mean.abs() < 0.1, "mean {mean}");
        assert!((var.sqrt() - SIGMA).abs() < 0.1, "sd {}", var.sqrt());
    }
}
