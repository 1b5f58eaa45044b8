#![no_main]
//! The refusal messages (words and typed mismatch); a decoded message re-encodes to
//! the same bytes.
use libfuzzer_sys::fuzz_target;
use tacit_wire::{Decode, Encode, ErrorMessage, Mismatch};

fuzz_target!(|data: &[u8]| {
    if let Ok(m) = ErrorMessage::from_wire(data) {
        assert_eq!(m.to_wire(), data);
    }
    if let Ok(m) = Mismatch::from_wire(data) {
        assert_eq!(m.to_wire(), data);
    }
});
