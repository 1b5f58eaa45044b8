#![no_main]
//! The stream frame decoder, fed in arbitrary pieces.
use libfuzzer_sys::fuzz_target;
use tacit_wire::FrameDecoder;

fuzz_target!(|data: &[u8]| {
    let Some((&split, rest)) = data.split_first() else {
        return;
    };
    let mut d = FrameDecoder::new(64);
    let at = (split as usize).min(rest.len());
    for part in [&rest[..at], &rest[at..]] {
        d.push(part);
        while let Ok(Some(frame)) = d.next_frame() {
            assert!(frame.len() <= 64);
        }
    }
});
