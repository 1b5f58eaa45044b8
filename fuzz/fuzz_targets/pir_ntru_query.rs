#![no_main]
//! The `ntru-paper` query decoder and the server's checks.
use libfuzzer_sys::fuzz_target;
use tacit_pir::PirServer;
use tacit_pir::ntru::NtruQuery;
use tacit_wire::{Decode, Encode};

fuzz_target!(|data: &[u8]| {
    if let Ok(q) = NtruQuery::from_wire(data) {
        assert_eq!(q.to_wire(), data);
        let (server, _) = tacit_fuzz::pir::ntru();
        let _ = server.answer(&q);
    }
});
