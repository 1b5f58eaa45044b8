#![no_main]
//! The `lwe` hint decoder (what a client reads from the server or a mirror).
use libfuzzer_sys::fuzz_target;
use tacit_pir::lwe::{LweClient, LweHint};
use tacit_wire::{Decode, Encode};

fuzz_target!(|data: &[u8]| {
    if let Ok(h) = LweHint::from_wire(data) {
        assert_eq!(h.to_wire(), data);
        let _ = LweClient::new(h);
    }
});
