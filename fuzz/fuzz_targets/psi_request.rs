#![no_main]
//! The PSI request decoder (what a sender reads from an untrusted receiver).
use libfuzzer_sys::fuzz_target;
use tacit_crypto::{P256, Ristretto255};
use tacit_psi::Request;

fuzz_target!(|data: &[u8]| {
    let Some((&sel, msg)) = data.split_first() else { return };
    let p = tacit_fuzz::params(sel);
    if sel & 1 == 0 {
        if let Ok(r) = Request::<Ristretto255>::from_bytes(msg, &p) {
            assert_eq!(r.to_bytes(), msg);
        }
    } else if let Ok(r) = Request::<P256>::from_bytes(msg, &p) {
        assert_eq!(r.to_bytes(), msg);
    }
});
