#![no_main]
//! Issue 10: the key-request messages fed to each state of both sides. A root in a
//! fixed world (one trusted naming root, one IBE master key) answers a fresh
//! challenge with whatever the input is, so every check of `on_request` runs on
//! hostile bytes; the requester's `on_challenge` and `on_grant` and the root
//! service's list decoder do the same.
use libfuzzer_sys::fuzz_target;
use std::sync::{Arc, OnceLock};
use tacit_crypto::rng::SecureRng;
use tacit_discovery::blessing::{Blessing, Principal, TrustedRoots};
use tacit_discovery::ibe::MasterPublicKey;
use tacit_discovery::key_request::{KeyAuthority, Requester};
use tacit_discovery::prefix::PrefixAuthority;

const NOW: u64 = 1_800_000_000;

struct World {
    authority: KeyAuthority,
    hello: Vec<u8>,
    principal: Arc<Principal>,
    blessing: Blessing,
    mpk: Arc<MasterPublicKey>,
}

fn world() -> &'static World {
    static W: OnceLock<World> = OnceLock::new();
    W.get_or_init(|| {
        let mut rng = SecureRng::from_seed([42; 32]);
        let (home, home_b) = Principal::new_root(&mut rng, "Home", NOW + 1000).unwrap();
        let cam = Principal::generate(&mut rng);
        let blessing = home.bless(&home_b, &cam.public_key(), "Camera", NOW + 1000, vec![]).unwrap();
        let mut roots = TrustedRoots::new();
        roots.add("Home", home.public_key()).unwrap();
        let ibe = Arc::new(PrefixAuthority::generate(&mut rng));
        let mpk = Arc::new(ibe.public().clone());
        let principal = Arc::new(cam);
        let (_, hello) = Requester::start(principal.clone(), blessing.clone(), mpk.clone()).unwrap();
        World {
            authority: KeyAuthority::new(ibe, roots),
            hello,
            principal,
            blessing,
            mpk,
        }
    })
}

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
