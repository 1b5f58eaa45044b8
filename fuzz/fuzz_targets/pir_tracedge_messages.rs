#![no_main]
//! The TracEdge message decoders (what client and server read from each other):
//! each decodes without panicking and re-encodes to the same bytes.
use libfuzzer_sys::fuzz_target;
use tacit_pir::tracedge::*;
use tacit_wire::{Decode, Encode};

fn check<T: Decode + Encode>(data: &[u8]) {
    if let Ok(m) = T::from_wire(data) {
        assert_eq!(m.to_wire(), data);
    }
}

fuzz_target!(|data: &[u8]| {
    check::<Hello>(data);
    check::<Commit>(data);
    check::<Queries>(data);
    check::<Response>(data);
    check::<DirLookup>(data);
    check::<DirEntries>(data);
    check::<ClientAuth>(data);
    check::<ServerAuth>(data);
    check::<HintRequest>(data);
    check::<EnrollRequest>(data);
    check::<EnrollReply>(data);
    if let Ok(e) = DirEntries::from_wire(data) {
        for entry in &e.entries {
            let _ = entry.verify(1 << 20, &[0; 32]);
        }
    }
});
