//! The Miller-loop lines of a secret `K ∈ G₂`, in a buffer that is wiped on drop.
//!
//! blstrs' `G2Prepared` holds the same 68 line coefficients (≈ 19.6 KB, enough to
//! pair with `K` as if one held `K`) in a private `Vec` that it frees without wiping.
//! This type computes and uses them through blst's own entry points
//! (`blst_precompute_lines`, `blst_miller_loop_lines`, what `G2Prepared` and
//! `multi_miller_loop` call) and owns the buffer, so it can overwrite it. The only
//! unsafe code in the crate is here: three calls into blst with buffers of the sizes
//! blst documents, and one conversion of a `blst_fp12` into blstrs'
//! `MillerLoopResult`, which is `#[repr(transparent)]` over it (as is the `Fp12` in
//! between). `tests::own_lines_pair_like_blstrs` compares every result with
//! `blstrs::pairing`.
#![allow(unsafe_code)]

use super::Wipe;
use blst::{blst_fp6, blst_fp12};
use blstrs::{G1Affine, G2Affine, Gt, MillerLoopResult};
use group::Group;
use group::prime::PrimeCurveAffine;
use pairing::MillerLoopResult as _;
use zeroize::Zeroize;

/// Line coefficients per Miller loop of BLS12-381 (the count `G2Prepared` allocates
/// for `blst_precompute_lines`).
const LINES: usize = 68;

// The conversion below relies on these layouts; a blstrs or blst release that changed
// them fails to compile here.
const _: () = assert!(core::mem::size_of::<MillerLoopResult>() == core::mem::size_of::<blst_fp12>());
const _: () = assert!(core::mem::align_of::<MillerLoopResult>() == core::mem::align_of::<blst_fp12>());
const _: () = assert!(core::mem::size_of::<Wipe<blst_fp6>>() == core::mem::size_of::<blst_fp6>());

/// The precomputed lines of a secret point of G₂, wiped on drop, never printed.
pub(super) struct SecretLines {
    /// `None` for the identity (no lines; every pairing with it is 1).
    lines: Option<Box<[Wipe<blst_fp6>; LINES]>>,
}

impl SecretLines {
    /// Precomputes the lines of `k`.
    pub(super) fn new(k: &G2Affine) -> Self {
        if bool::from(k.is_identity()) {
            return SecretLines { lines: None };
        }
        let mut lines = Box::new([Wipe(blst_fp6::default()); LINES]);
        // SAFETY: `lines` holds LINES = 68 `blst_fp6` (`Wipe` is
        // `#[repr(transparent)]`), the number blst writes for one point (blstrs'
        // `G2Prepared::from` allocates the same); `k` is a valid affine point.
        unsafe { blst::blst_precompute_lines(lines.as_mut_ptr().cast::<blst_fp6>(), k.as_ref()) };
        SecretLines { lines: Some(lines) }
    }

    /// `e(p, K)`: one Miller loop over the stored lines and one final exponentiation.
    pub(super) fn pair(&self, p: &G1Affine) -> Gt {
        let Some(lines) = &self.lines else {
            return Gt::identity();
        };
        if bool::from(p.is_identity()) {
            return Gt::identity();
        }
        let mut f = Wipe(blst_fp12::default());
        // SAFETY: `lines` holds the 68 lines `blst_precompute_lines` wrote; `f` and `p`
        // are valid for writes and reads of one `blst_fp12` and one affine point.
        unsafe { blst::blst_miller_loop_lines(&mut f.0, lines.as_ptr().cast::<blst_fp6>(), p.as_ref()) };
        // SAFETY: `MillerLoopResult` is `#[repr(transparent)]` over `Fp12`, which is
        // `#[repr(transparent)]` over `blst_fp12` (sizes and alignments asserted
        // above); every `blst_fp12` Miller-loop output is a valid value of it.
        let ml: MillerLoopResult = unsafe { core::mem::transmute::<blst_fp12, MillerLoopResult>(f.0) };
        f.zeroize();
        ml.final_exponentiation()
    }
}

impl Drop for SecretLines {
    fn drop(&mut self) {
        if let Some(lines) = &mut self.lines {
            lines.zeroize();
        }
    }
}

impl core::fmt::Debug for SecretLines {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("SecretLines(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use blstrs::{G1Projective, G2Projective, Scalar};
    use ff::Field;
    use rand_core::SeedableRng;

    #[test]
    fn own_lines_pair_like_blstrs() {
        let mut rng = rand_chacha::ChaCha20Rng::from_seed([7; 32]);
        for _ in 0..4 {
            let k = (G2Projective::generator() * Scalar::random(&mut rng)).into();
            let p: G1Affine = (G1Projective::generator() * Scalar::random(&mut rng)).into();
            let lines = SecretLines::new(&k);
            assert_eq!(lines.pair(&p), blstrs::pairing(&p, &k));
            assert_eq!(lines.pair(&G1Affine::identity()), Gt::identity());
        }
        let none = SecretLines::new(&G2Affine::identity());
        assert_eq!(none.pair(&G1Affine::generator()), Gt::identity());
        assert_eq!(format!("{none:?}"), "SecretLines(<redacted>)");
    }
}
