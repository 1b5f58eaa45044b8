//! The LWE error: `x₁ + 9·x₂` with `x₁, x₂` independent discrete Gaussians of
//! parameter `σ₁ = 6.4`, so standard deviation `σ = 6.4·√82 ≈ 57.95` (and
//! sub-Gaussian with that parameter, which is what the correctness bound uses).
//!
//! SimplePIR uses `σ = 6.4` with `n = 1024`, `q = 2³²`; its 128-bit claim is the
//! lattice estimator's gate count, while the core-SVP estimate of that set is only
//! about 95 bits (see [`super::security`] and `docs/pir.md`). `σ ≈ 58` brings the
//! core-SVP estimate to 129 bits at the same `n` and `q`, and still decodes with
//! `p = 2⁸` up to about 2·10⁴ matrix columns.
//!
//! Each `xᵢ` is drawn by inversion over a cumulative table of `D_{Z,6.4}` on
//! `[−77, 77]` (the mass outside is below 2⁻¹⁰⁰); every draw scans the whole table,
//! so the time does not depend on the value drawn. Two small draws cost a ninth of
//! one draw from a table for `σ = 58`.

use rand_core::RngCore;

/// The standard deviation of the error.
pub const SIGMA: f64 = 57.951_704_030_792_27;
/// The parameter of each of the two draws.
const SIGMA_1: f64 = 6.4;
/// The weight of the second draw.
const K: i32 = 9;
/// The tail cut.
const TAIL: i32 = 77;

/// A table-based sampler.
pub(crate) struct Gaussian {
    /// `cdf[k] = P(X ≤ k − TAIL) · 2⁶⁴` for `D_{Z,6.4}`, saturated.
    cdf: Vec<u64>,
}

impl Gaussian {
    pub(crate) fn new() -> Self {
        let w: Vec<f64> = (-TAIL..=TAIL)
            .map(|x| (-(x as f64).powi(2) / (2.0 * SIGMA_1 * SIGMA_1)).exp())
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

    /// One error `x₁ + 9·x₂`.
    pub(crate) fn sample(&self, rng: &mut impl RngCore) -> i32 {
        self.draw(rng) + K * self.draw(rng)
    }

    /// One draw from `D_{Z,6.4}` in `[−TAIL, TAIL]`.
    fn draw(&self, rng: &mut impl RngCore) -> i32 {
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
