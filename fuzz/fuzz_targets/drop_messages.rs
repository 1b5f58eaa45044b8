#![no_main]
//! PrivateDrop and legacy AirDrop message decoders (what a peer sends over HTTPS).
use libfuzzer_sys::fuzz_target;
use tacit_crypto::{P256, PrimeGroup, Ristretto255};
use tacit_drop::DropParams;
use tacit_drop::legacy::{DiscoverRequest, DiscoverResponse};
use tacit_drop::protocol::{Ask, FinishPsiRequest, FinishPsiResponse, StartPsiRequest, StartPsiResponse};

fn check<G: PrimeGroup>(params: &DropParams, msg: &[u8]) {
    if let Ok(m) = StartPsiResponse::<G>::from_bytes(msg, params) {
        assert_eq!(m.to_bytes(), msg);
    }
    if let Ok(m) = StartPsiRequest::<G>::from_bytes(msg, params) {
        assert_eq!(m.to_bytes(), msg);
    }
    if let Ok(m) = FinishPsiRequest::<G>::from_bytes(msg, params) {
        assert_eq!(m.to_bytes(), msg);
    }
    if let Ok(m) = FinishPsiResponse::<G>::from_bytes(msg, params) {
        assert_eq!(m.to_bytes(), msg);
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&sel, msg)) = data.split_first() else { return };
    let params = DropParams {
        psi: tacit_fuzz::params(sel & 1),
    };
    if sel & 1 == 0 {
        check::<Ristretto255>(&params, msg);
    } else {
        check::<P256>(&params, msg);
    }
    if let Ok(m) = Ask::from_bytes(msg) {
        assert_eq!(m.to_bytes(), msg);
    }
    if let Ok(m) = DiscoverRequest::from_bytes(msg) {
        assert_eq!(m.to_bytes(), msg);
    }
    if let Ok(m) = DiscoverResponse::from_bytes(msg) {
        assert_eq!(m.to_bytes(), msg);
    }
});
