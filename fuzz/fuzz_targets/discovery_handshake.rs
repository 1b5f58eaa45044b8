//! Hostile bytes into every handshake decoder of `tacit-discovery`: client hello,
//! server hello (SIGMA-I and private), client finish, advertisement, 0-RTT hello and
//! reply. Nothing may panic; nothing random may authenticate.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tacit_crypto::rng::SecureRng;
use tacit_discovery::handshake::client::Client;
use tacit_discovery::handshake::server::on_client_hello;
use tacit_discovery::handshake::zero_rtt::{connect, open_advert};
use tacit_discovery::handshake::{Error, Mode, hello_mode};

use tacit_fuzz::discovery::{NOW, world};

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
    // A valid first flight (from the seeds) is accepted exactly once.
    if w.service.on_hello(data, NOW).is_ok() {
        assert!(
            matches!(w.service.on_hello(data, NOW), Err(Error::Replay)),
            "replay accepted"
        );
    }
    let (waiting, _) = connect(w.found.clone(), &w.client, b"", &mut rng).unwrap();
    assert!(waiting.on_reply(data).is_err(), "random 0-RTT reply accepted");
});
