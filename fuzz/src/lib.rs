//! Shared parameters of the fuzz targets.
use tacit_crypto::GroupId;
use tacit_psi::{PsiParams, Security};

/// The parameter sets the PSI decoders are fuzzed with; the first input byte picks one.
pub fn params(selector: u8) -> PsiParams {
    let group = if selector & 1 == 0 {
        GroupId::Ristretto255
    } else {
        GroupId::P256
    };
    let security = if selector & 2 == 0 {
        Security::Malicious
    } else {
        Security::SemiHonest
    };
    PsiParams::new(security).with_group(group).with_bounds(2, 4)
}
