#![no_main]
//! The refusal message; a decoded message re-encodes to the same bytes.
use libfuzzer_sys::fuzz_target;
use tacit_wire::{Decode, Encode, ErrorMessage};

fuzz_target!(|data: &[u8]| {
    if let Ok(m) = ErrorMessage::from_wire(data) {
        assert_eq!(m.to_wire(), data);
    }
});
