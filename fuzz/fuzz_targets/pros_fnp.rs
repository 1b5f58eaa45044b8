#![no_main]
//! FNP queries (what a sender reads) and answers (what a chooser reads).
use libfuzzer_sys::fuzz_target;
use tacit_pros::fnp::{Answer, Query};

fuzz_target!(|data: &[u8]| {
    let Some((&sel, msg)) = data.split_first() else { return };
    let p = tacit_fuzz::pros::fnp_params(sel);
    if sel & 4 == 0 {
        if let Ok(q) = Query::from_bytes(msg, &p, 0, 4096, tacit_pros::testing::ring_pedersen().public()) {
            assert_eq!(q.to_bytes(), msg);
        }
    } else {
        let pk = tacit_fuzz::pros::key().public();
        if let Ok(a) = Answer::from_bytes(msg, &p, pk) {
            assert_eq!(a.to_bytes(pk), msg);
        }
    }
});
