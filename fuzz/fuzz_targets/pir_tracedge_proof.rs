#![no_main]
//! The proof-of-misbehaviour decoder and offline verifier (`tacit pir verify-proof`
//! reads files from anyone): no panic, and a decoded proof re-encodes to its bytes.
use libfuzzer_sys::fuzz_target;
use tacit_pir::tracedge::MisbehaviourProof;
use tacit_wire::{Decode, Encode};

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = MisbehaviourProof::from_wire(data) {
        assert_eq!(p.to_wire(), data);
        let _ = p.verify();
    }
});
