//! Hostile bytes into every handshake decoder of `tacit-discovery`: client hello,
//! server hello (SIGMA-I and private), client finish, advertisement, 0-RTT hello and
//! reply. Nothing may panic; nothing random may authenticate.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::sync::{Arc, OnceLock};
use tacit_crypto::rng::SecureRng;
use tacit_discovery::blessing::{Policy, Principal, TrustedRoots};
use tacit_discovery::handshake::client::Client;
use tacit_discovery::handshake::server::{ServerConfig, on_client_hello};
use tacit_discovery::handshake::zero_rtt::{Service, connect, open_advert};
use tacit_discovery::handshake::{Credentials, Mode, PrefixCredentials, hello_mode};
use tacit_discovery::prefix::{Prefix, PrefixAuthority};

const NOW: u64 = 1_800_000_000;

struct World {
    client: Credentials,
    client_prefix: PrefixCredentials,
    server: ServerConfig,
    service: Service,
    advert: Vec<u8>,
}

fn world() -> &'static World {
    static W: OnceLock<World> = OnceLock::new();
    W.get_or_init(|| {
        let mut rng = SecureRng::from_seed([9; 32]);
        let (root, root_b) = Principal::new_root(&mut rng, "Home", NOW + 1_000_000).unwrap();
        let mut roots = TrustedRoots::new();
        roots.add("Home", root.public_key()).unwrap();
        let ibe = PrefixAuthority::generate(&mut rng);
        let mk = |rng: &mut SecureRng, ext: &str, policy: &str| {
            let p = Principal::generate(rng);
            let b = root.bless(&root_b, &p.public_key(), ext, NOW + 1_000_000, vec![]).unwrap();
            let key = ibe.extract(&Prefix::parse(b.unverified_name().as_str()).unwrap(), rng).unwrap();
            (
                Credentials {
                    principal: Arc::new(p),
                    blessing: b,
                    roots: roots.clone(),
                    policy: policy.parse::<Policy>().unwrap(),
                },
                PrefixCredentials {
                    mpk: Arc::new(ibe.public().clone()),
                    key: Some(Arc::new(key)),
                },
            )
        };
        let (client, client_prefix) = mk(&mut rng, "Phone", "Home/*");
        let (server_c, server_p) = mk(&mut rng, "Camera", "Home/*");
        let service = Service::new(server_c.clone());
        let advert = service
            .refresh(&server_p.mpk, NOW, NOW + 3600, &mut rng)
            .unwrap()
            .advert()
            .to_vec();
        World {
            client,
            client_prefix,
            server: ServerConfig::new(server_c, Some(server_p), true),
            service,
            advert,
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let w = world();
    let mut rng = SecureRng::from_seed([1; 32]);
    let _ = hello_mode(data);
    let _ = on_client_hello(&w.server, data, &mut rng);
    for mode in [Mode::Sigma, Mode::Private] {
        let (c, _) = Client::start(mode, w.client.clone(), Some(w.client_prefix.clone()), None, &mut rng).unwrap();
        assert!(c.on_server_hello(data, NOW).is_err(), "random server hello accepted");
    }
    let (c, hello) = Client::start(Mode::Sigma, w.client.clone(), None, None, &mut rng).unwrap();
    let (s, _) = on_client_hello(&w.server, &hello, &mut rng).unwrap();
    drop(c);
    assert!(s.on_client_finish(data, NOW).is_err(), "random finish accepted");
    let _ = open_advert(data, &w.client, &w.client_prefix, NOW);
    assert!(w.service.on_hello(data, NOW).is_err(), "random 0-RTT hello accepted");
    let found = open_advert(&w.advert, &w.client, &w.client_prefix, NOW).unwrap();
    let (waiting, _) = connect(found, &w.client, b"", &mut rng).unwrap();
    assert!(waiting.on_reply(data).is_err(), "random 0-RTT reply accepted");
});
