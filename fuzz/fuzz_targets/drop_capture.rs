#![no_main]
//! The attack tool's capture reader (files of recorded messages) and range parser.
use libfuzzer_sys::fuzz_target;
use tacit_drop::DropParams;

fuzz_target!(|data: &[u8]| {
    let _ = tacit_drop::attack::read_capture(data, &DropParams::default());
    if let Ok(s) = std::str::from_utf8(data) {
        if let Ok(r) = tacit_drop::attack::PhoneRange::parse(s) {
            assert!(r.len() >= 10);
        }
    }
});
