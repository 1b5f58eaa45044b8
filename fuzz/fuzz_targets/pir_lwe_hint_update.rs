#![no_main]
//! The `lwe` hint-update decoder and `apply_update` (what a client reads from the
//! server after a row changed).
use libfuzzer_sys::fuzz_target;
use tacit_pir::lwe::LweHintUpdate;
use tacit_wire::{Decode, Encode};

fuzz_target!(|data: &[u8]| {
    if let Ok(u) = LweHintUpdate::from_wire(data) {
        assert_eq!(u.to_wire(), data);
        let (_, client) = tacit_fuzz::pir::lwe();
        let mut c = client.clone();
        let mut u = u;
        u.old_id = c.table_id();
        let _ = c.apply_update(&u);
    }
});
