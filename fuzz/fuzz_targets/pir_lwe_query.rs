#![no_main]
//! The `lwe` query decoder and the server's checks (what a server reads from an
//! untrusted client).
use libfuzzer_sys::fuzz_target;
use tacit_pir::PirServer;
use tacit_pir::lwe::LweQuery;
use tacit_wire::{Decode, Encode};

fuzz_target!(|data: &[u8]| {
    if let Ok(q) = LweQuery::from_wire(data) {
        assert_eq!(q.to_wire(), data);
        let (server, _) = tacit_fuzz::pir::lwe();
        let mut q = q;
        // Also past the table-id check, so that the length checks and the kernel run.
        q.table_id = server.table_id();
        let _ = server.answer(&q);
    }
});
