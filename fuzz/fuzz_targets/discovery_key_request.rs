#![no_main]
//! Issue 10: the key-request messages fed to each state of both sides. A root in a
//! fixed world (one trusted naming root, one IBE master key) answers a fresh
//! challenge with whatever the input is, so every check of `on_request` runs on
//! hostile bytes; the requester's `on_challenge` and `on_grant` and the root
//! service's list decoder do the same.
use libfuzzer_sys::fuzz_target;
use tacit_crypto::rng::SecureRng;
use tacit_discovery::key_request::Requester;
use tacit_fuzz::key_request::{NOW, world};

fuzz_target!(|data: &[u8]| {
    let w = world();
    let mut rng = SecureRng::from_seed([7; 32]);
    let _ = w.authority.on_hello(data, &mut rng);
    if let Ok((root, _)) = w.authority.on_hello(&w.hello, &mut rng) {
        let _ = root.on_request(data, NOW, &mut rng);
    }
    if let Ok((req, _)) = Requester::start(w.principal.clone(), w.blessing.clone(), w.mpk.clone()) {
        if let Ok((waiting, _)) = req.on_challenge(data, &mut rng) {
            let _ = waiting.on_grant(data);
        }
    }
    let _ = tacit_discovery::root_service::decode_lists(data);
});
