//! The applications of paper §6 as circuits built with [`crate::circuit::Builder`]:
//! availability scheduling ([`availability`], §6.1), location-aware scheduling
//! ([`location`], §6.2, Fig. 9) and set intersection by sort–compare–shuffle with a
//! Waksman network ([`psi`], §6.3, the SCS-WN circuit of \[HEK12\]).
//!
//! Each module builds the circuit, encodes each party's inputs in the circuit's
//! wire order, decodes the outputs, and has a plaintext reference function the
//! tests compare the circuit (in the clear and under GMW) against. [`paper`] holds
//! the sizes the paper reports, so that every circuit is checked never to be larger.

pub mod availability;
pub mod location;
pub mod paper;
pub mod psi;
pub mod schedule;

use crate::circuit::{Builder, Word};

/// Size and depth of a circuit, as the paper reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Size {
    /// AND gates `|f|`.
    pub and_gates: usize,
    /// AND depth `d(f)`.
    pub depth: usize,
}

/// Bits needed to write the numbers `0..n` (at least one).
pub fn index_bits(n: usize) -> usize {
    (usize::BITS - n.saturating_sub(1).leading_zeros()).max(1) as usize
}

/// Splits `bits` into consecutive words of the given widths.
pub(crate) fn split_words(bits: &[crate::circuit::Bit], widths: &[usize]) -> Vec<Word> {
    let mut at = 0;
    widths
        .iter()
        .map(|&w| {
            let v = bits[at..at + w].to_vec();
            at += w;
            v
        })
        .collect()
}

/// Builds with `f` in counting mode and returns the size (for parameters too large
/// to hold as a circuit).
pub fn count(f: impl FnOnce(&mut Builder) -> Result<(), crate::Error>) -> Result<Size, crate::Error> {
    let mut b = Builder::counting();
    f(&mut b)?;
    let c = b.counts();
    Ok(Size {
        and_gates: c.and_gates,
        depth: c.and_depth,
    })
}

/// Feeds bytes to every decoder of the applications' messages (the fuzz target's
/// entry point): the first byte picks one; what decodes must re-encode identically.
pub fn fuzz_decode(b: &[u8]) {
    use tacit_wire::{Decode, Encode};
    let Some((&sel, msg)) = b.split_first() else { return };
    match sel % 4 {
        0 => {
            if let Ok(h) = schedule::ScheduleHello::from_wire(msg) {
                assert_eq!(h.to_wire(), msg);
            }
        }
        1 => {
            if let Ok(h) = psi::PsiHello::from_wire(msg) {
                assert_eq!(h.to_wire(), msg);
            }
        }
        2 => {
            // Outputs of the SCS-WN circuit as B reads them.
            let p = psi::PsiParams {
                sigma: 8,
                n_a: 3,
                n_b: 2,
            };
            let outs: Vec<Vec<bool>> = msg.chunks(9).map(|c| c.iter().map(|&x| x & 1 == 1).collect()).collect();
            let _ = psi::decode(&p, &outs);
        }
        _ => {
            let p = location::LocationParams::new(5);
            let w = p.output_widths();
            let mut it = msg.iter().map(|&x| x & 1 == 1);
            let outs: Vec<Vec<bool>> = w.iter().map(|&k| it.by_ref().take(k).collect()).collect();
            let _ = location::decode(&p, &outs);
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn index_bits_cover_the_range() {
        assert_eq!(super::index_bits(1), 1);
        assert_eq!(super::index_bits(2), 1);
        assert_eq!(super::index_bits(3), 2);
        assert_eq!(super::index_bits(56), 6);
        assert_eq!(super::index_bits(64), 6);
        assert_eq!(super::index_bits(65), 7);
        assert_eq!(super::index_bits(2604), 12);
    }
}
