#![no_main]
//! 3PR messages: hello, accept (through the initiator), query, answer, outcome, and
//! the responder state fed arbitrary bytes as A's no-small-factor proof.
use libfuzzer_sys::fuzz_target;
use rand_core::SeedableRng;
use std::sync::Arc;
use tacit_pros::paillier::RnPool;
use tacit_pros::threepr::{Answer, Hello, Initiator, Outcome, Query, ReconcileParams, Responder};

fuzz_target!(|data: &[u8]| {
    let Some((&sel, msg)) = data.split_first() else { return };
    let key = tacit_fuzz::pros::key();
    let pk = key.public();
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(sel as u64);
    match sel % 6 {
        0 => {
            if let Ok(h) = Hello::from_bytes(msg) {
                assert_eq!(h.to_bytes(), msg);
            }
        }
        1 => {
            if let Ok(q) = Query::from_bytes(msg, pk, 64) {
                assert_eq!(q.to_bytes(pk), msg);
            }
        }
        2 => {
            if let Ok(a) = Answer::from_bytes(msg, pk, 3) {
                assert_eq!(a.to_bytes(pk), msg);
            }
        }
        3 => {
            if let Ok(o) = Outcome::from_bytes(msg, 8) {
                assert_eq!(o.to_bytes(), msg);
            }
        }
        4 => {
            // an initiator reading a hostile accept
            let pool = Arc::new(RnPool::new(pk).unwrap());
            let (w, _) = Initiator::start(ReconcileParams::default(), key.clone(), &["a", "b"], pool).unwrap();
            let _ = w.on_accept(msg, &tacit_pros::NO_CHANNEL_BINDING, &mut rng);
        }
        _ => {
            // a responder after a valid hello, reading a hostile no-small-factor proof
            // (then, were it to pass, the message as a query or outcome)
            let pool = Arc::new(RnPool::new(pk).unwrap());
            let (_, hello) = Initiator::start(ReconcileParams::default(), key.clone(), &["a", "b"], pool).unwrap();
            // the fuzz key has 256 bits (fast): below the floor of Π^fac, so named as such
            let r = Responder::new(ReconcileParams::default(), &["b", "c"], 0, 4096, tacit_pros::facproof::test_ring_pedersen())
                .unwrap()
                .accept_insecure_small_keys();
            let (state, _) = r.on_hello(&hello, &tacit_pros::NO_CHANNEL_BINDING, &mut rng).unwrap();
            if let Ok(state) = state.on_factor_proof(msg) {
                let _ = state.on_message(msg, &mut rng);
            }
        }
    }
});
