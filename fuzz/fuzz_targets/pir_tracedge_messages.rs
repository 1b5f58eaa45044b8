#![no_main]
//! The TracEdge message decoders (what client and server read from each other):
//! each decodes without panicking and re-encodes to the same bytes; a decoded log
//! segment is applied to a client's view, and a view file is read, without panicking.
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
    check::<ClientAuth>(data);
    check::<ServerAuth>(data);
    check::<HintRequest>(data);
    check::<EnrollRequest>(data);
    check::<EnrollReply>(data);
    check::<LogRequest>(data);
    check::<LogSegment>(data);
    check::<EnrolmentReceipt>(data);
    if let Ok(r) = Refusal::from_wire(data) {
        assert_eq!(Refusal::from_wire(&r.to_wire()).ok(), Some(r));
    }
    if let Ok(seg) = LogSegment::from_wire(data)
        && let Some(first) = seg.records.first()
        && let Ok(vk) = tacit_crypto::sign::VerifyingKey::from_bytes(&[7; 32])
        && let Ok(mut view) = ClientView::new(vk, first.entry.rows.min(4096), first.entry.empty_key)
    {
        let _ = view.apply(&seg, 1_700_000_000_000);
    }
    let _ = ClientView::from_bytes(data);
});
