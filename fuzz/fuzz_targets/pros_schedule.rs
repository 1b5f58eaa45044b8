#![no_main]
//! The scheduling window message.
use libfuzzer_sys::fuzz_target;
use tacit_pros::schedule::Window;

fuzz_target!(|data: &[u8]| {
    if let Ok(w) = Window::from_bytes(data) {
        assert_eq!(w.to_bytes(), data);
    }
});
