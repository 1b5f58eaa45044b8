#![no_main]
//! The two-way PSI bundle decoder (M2 of the interleaved runs).
use libfuzzer_sys::fuzz_target;
use tacit_crypto::{P256, Ristretto255};
use tacit_psi::two_way::Bundle;

fuzz_target!(|data: &[u8]| {
    let Some((&sel, msg)) = data.split_first() else { return };
    let p = tacit_fuzz::params(sel);
    if sel & 1 == 0 {
        if let Ok(b) = Bundle::<Ristretto255>::from_bytes(msg, &p) {
            assert_eq!(b.to_bytes(), msg);
        }
    } else if let Ok(b) = Bundle::<P256>::from_bytes(msg, &p) {
        assert_eq!(b.to_bytes(), msg);
    }
});
