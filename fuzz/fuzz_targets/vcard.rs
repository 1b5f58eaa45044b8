#![no_main]
//! The vCard parser (files from anywhere).
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = tacit_store::vcard::parse(&text);
});
