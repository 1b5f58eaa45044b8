//! The attack on `ntru-paper`: the server recovers the queried row from the query
//! alone (with the client's public key, which is public).
//!
//! 1. **Evaluation at 1.** `X − 1` divides `X^N − 1`, so evaluating at 1 is a ring
//!    homomorphism `Z_q[X]/(X^N − 1) → Z_q`. The blinding `r = r₁⋆r₂ + r₃` has as many
//!    `+1` as `−1` in each factor, so `r(1) = 0` and `c(1) = r(1)·h(1) + m(1) = m(1)`:
//!    the ciphertexts of `E(0)` evaluate to 0 and the selecting one to its weight. The
//!    region of the query — the selection vector — is in the clear.
//! 2. **The offset.** For a candidate `t`, `(c − x^t)⋆h⁻¹ = r + (m − x^t)⋆h⁻¹` is the
//!    short blinding polynomial `r` exactly when `m = x^t`, and a random-looking
//!    polynomial otherwise; the `N` candidates are tried in `O(N²)`.
//!
//! Region and offset give the group of rows the client asked for (the row itself
//! when rows are not grouped).

use super::ring::{self, Poly};
use super::{NtruLayout, NtruParams, NtruQuery};

/// What the attack learns from one query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recovered {
    /// Regions whose ciphertext evaluates to a non-zero value at 1, with that value
    /// (the selection weights).
    pub selected_regions: Vec<(usize, u32)>,
    /// The offset inside the region, found from the short blinding polynomial.
    pub offset: Option<usize>,
    /// The first row of the recovered group (`(region·N + offset)·k`).
    pub first_row: Option<u64>,
}

/// Runs both steps on a query made with public key `h`.
pub fn recover_row(query: &NtruQuery, h: &[u32]) -> Recovered {
    let p = NtruParams::PAPER;
    let mask = (1u32 << p.log_q) - 1;
    let selected_regions: Vec<(usize, u32)> = query
        .cts
        .iter()
        .enumerate()
        .filter_map(|(i, c)| {
            let v = c.iter().fold(0u32, |a, x| a.wrapping_add(*x)) & mask;
            (v != 0).then_some((i, v))
        })
        .collect();
    let offset = match (selected_regions.first(), ring::invert_mod_pow2(h, p.log_q)) {
        (Some(&(region, w)), Some(h_inv)) => find_offset(&query.cts[region], w, &h_inv),
        _ => None,
    };
    let first_row = match (selected_regions.first(), offset) {
        (Some(&(region, _)), Some(t)) => Some(group_start(&query.layout, region, t)),
        _ => None,
    };
    Recovered {
        selected_regions,
        offset,
        first_row,
    }
}

fn group_start(layout: &NtruLayout, region: usize, offset: usize) -> u64 {
    (region * NtruParams::PAPER.n + offset) as u64 * layout.group() as u64
}

/// The `t` for which `(c − w·x^t)⋆h⁻¹` is short.
fn find_offset(c: &[u32], w: u32, h_inv: &[u32]) -> Option<usize> {
    let p = NtruParams::PAPER;
    let mask = (1u32 << p.log_q) - 1;
    let n = p.n;
    let u: Poly = ring::mul(c, h_inv, mask);
    // (c − w·x^t)⋆h⁻¹ = u − w·(x^t ⋆ h⁻¹), and x^t ⋆ h⁻¹ is h⁻¹ rotated by t.
    (0..n).find(|&t| {
        (0..n).all(|k| {
            let rot = h_inv[(k + n - t) % n];
            let v = u[k].wrapping_sub(w.wrapping_mul(rot)) & mask;
            ring::centre(v, p.log_q).abs() < 64
        })
    })
}
