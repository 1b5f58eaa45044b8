//! The three handshakes between honest and deviating peers: a home camera whose
//! policy is `Home/*`, the owner's phone `Home/Owner/Phone`, a visitor's phone
//! `Street/Visitor/Phone`, all with prefix keys from one IBE root.

use std::sync::Arc;
use tacit_crypto::rng::SecureRng;
use tacit_discovery::blessing::{self, Applied, Blessing, Policy, Principal, SignedRevocationList, TrustedRoots};
use tacit_discovery::handshake::client::Client;
use tacit_discovery::handshake::server::{ServerConfig, on_client_hello};
use tacit_discovery::handshake::zero_rtt::{Service, connect, open_advert};
use tacit_discovery::handshake::{Credentials, DecryptionCache, Error, Mode, PrefixCredentials};
use tacit_discovery::prefix::{Prefix, PrefixAuthority};
use tacit_wire::{Decode as _, Writer};

const NOW: u64 = 1_800_000_000;
const YEAR: u64 = 365 * 24 * 3600;

struct World {
    rng: SecureRng,
    roots: TrustedRoots,
    ibe: PrefixAuthority,
    home: (Principal, Blessing),
    street: (Principal, Blessing),
}

struct Party {
    creds: Credentials,
    prefix: PrefixCredentials,
}

impl World {
    fn new(seed: u8) -> Self {
        let mut rng = SecureRng::from_seed([seed; 32]);
        let home = Principal::new_root(&mut rng, "Home", NOW + YEAR).unwrap();
        let street = Principal::new_root(&mut rng, "Street", NOW + YEAR).unwrap();
        let mut roots = TrustedRoots::new();
        roots.add("Home", home.0.public_key()).unwrap();
        roots.add("Street", street.0.public_key()).unwrap();
        let ibe = PrefixAuthority::generate(&mut rng);
        World {
            rng,
            roots,
            ibe,
            home,
            street,
        }
    }

    /// A principal blessed `root/a/b` with policy `policy`.
    fn party(&mut self, under_home: bool, path: &[&str], policy: &str) -> Party {
        let (root, root_blessing) = if under_home { &self.home } else { &self.street };
        let me = Principal::generate(&mut self.rng);
        // intermediate principal for a three-link chain
        let mid = Principal::generate(&mut self.rng);
        let mid_b = root
            .bless(root_blessing, &mid.public_key(), path[0], NOW + YEAR, vec![])
            .unwrap();
        let b = mid
            .bless(&mid_b, &me.public_key(), path[1], NOW + YEAR, vec![])
            .unwrap();
        let name = b.unverified_name();
        let key = self
            .ibe
            .extract(&Prefix::parse(name.as_str()).unwrap(), &mut self.rng)
            .unwrap();
        Party {
            creds: Credentials {
                principal: Arc::new(me),
                blessing: b,
                roots: self.roots.clone(),
                policy: policy.parse::<Policy>().unwrap(),
            },
            prefix: PrefixCredentials {
                mpk: Arc::new(self.ibe.public().clone()),
                key: Some(Arc::new(key)),
            },
        }
    }
}

fn run(
    mode: Mode,
    w: &mut World,
    client: &Party,
    server: &ServerConfig,
    cache: Option<Arc<DecryptionCache>>,
) -> Result<(String, String), Error> {
    let (c, hello) = Client::start(
        mode,
        client.creds.clone(),
        Some(client.prefix.clone()),
        cache,
        &mut w.rng,
    )?;
    let (s, sh) = on_client_hello(server, &hello, &mut w.rng)?;
    let (mut ce, fin) = c.on_server_hello(&sh, NOW)?;
    let mut se = s.on_client_finish(&fin, NOW)?;
    let m = se.keys.open(&ce.keys.seal(b"ping"))?;
    assert_eq!(m, b"ping");
    let m = ce.keys.open(&se.keys.seal(b"pong"))?;
    assert_eq!(m, b"pong");
    Ok((ce.peer.name().to_string(), se.peer.name().to_string()))
}

/// The camera, answering both handshakes so the tests can exercise SIGMA-I too (a
/// private server answers only private mutual authentication by default: see
/// `a_private_server_refuses_sigma_and_sends_nothing`).
fn camera(w: &mut World, cache: bool) -> (Party, ServerConfig) {
    let cam = w.party(true, &["Devices", "Camera"], "Home/*");
    let cfg =
        ServerConfig::new(cam.creds.clone(), Some(cam.prefix.clone()), cache).with_modes(&[Mode::Sigma, Mode::Private]);
    (cam, cfg)
}

#[test]
fn sigma_and_private_authenticate_mutually() {
    let mut w = World::new(1);
    // A server that offers both on purpose (a public SIGMA-I endpoint).
    let (_, cam) = camera(&mut w, false);
    let owner = w.party(true, &["Owner", "Phone"], "Home/Devices/*");
    for mode in [Mode::Sigma, Mode::Private] {
        let (c_saw, s_saw) = run(mode, &mut w, &owner, &cam, None).unwrap();
        assert_eq!(c_saw, "Home/Devices/Camera");
        assert_eq!(s_saw, "Home/Owner/Phone");
    }
    // with the server's identity cached and the client's decryption cached
    let (_, cam) = camera(&mut w, true);
    let cache = Arc::new(DecryptionCache::new());
    for _ in 0..3 {
        run(Mode::Private, &mut w, &owner, &cam, Some(cache.clone())).unwrap();
    }
}

/// Issue 9, defect 1: a private server used to answer whatever mode the hello asked
/// for, so a SIGMA-I hello (which anyone can send: it is `sid, gˣ`) got the server's
/// blessing back. A private server now refuses it and sends nothing.
#[test]
fn a_private_server_refuses_sigma_and_sends_nothing() {
    let mut w = World::new(9);
    let (cam_party, _) = camera(&mut w, false);
    let cam = ServerConfig::new(cam_party.creds.clone(), Some(cam_party.prefix.clone()), false);
    assert_eq!(cam.modes(), &[Mode::Private]);
    for who in [
        w.party(false, &["Visitor", "Phone"], "Home/*"),
        w.party(true, &["Owner", "Phone"], "Home/Devices/*"),
    ] {
        let (_, hello) = Client::start(Mode::Sigma, who.creds.clone(), None, None, &mut w.rng).unwrap();
        match on_client_hello(&cam, &hello, &mut w.rng) {
            Err(Error::ModeRefused(m)) => assert_eq!(m, "SIGMA-I"),
            Err(e) => panic!("unexpected error {e}"),
            Ok((_, server_hello)) => panic!("a private server answered SIGMA-I with {} bytes", server_hello.len()),
        }
    }
    // A server without prefix credentials is public: SIGMA-I only.
    let public = ServerConfig::new(cam_party.creds.clone(), None, false);
    assert_eq!(public.modes(), &[Mode::Sigma]);
    let owner = w.party(true, &["Owner", "Phone2"], "Home/Devices/*");
    let (_, hello) = Client::start(
        Mode::Private,
        owner.creds.clone(),
        Some(owner.prefix.clone()),
        None,
        &mut w.rng,
    )
    .unwrap();
    assert!(matches!(
        on_client_hello(&public, &hello, &mut w.rng),
        Err(Error::ModeRefused("private mutual authentication"))
    ));
}

#[test]
fn a_client_outside_the_server_policy_learns_nothing_and_reveals_nothing() {
    let mut w = World::new(2);
    let (_, cam) = camera(&mut w, false);
    let visitor = w.party(false, &["Visitor", "Phone"], "Home/*");
    let (c, hello) = Client::start(
        Mode::Private,
        visitor.creds.clone(),
        Some(visitor.prefix.clone()),
        None,
        &mut w.rng,
    )
    .unwrap();
    let (_s, sh) = on_client_hello(&cam, &hello, &mut w.rng).unwrap();
    // the visitor's key does not satisfy Home/*: no pairing, no identity, no finish
    let err = c.on_server_hello(&sh, NOW).unwrap_err();
    assert!(
        matches!(err, Error::NotAuthorizedByPeer(ref p) if p == "Home/*"),
        "{err}"
    );
    // the server's identity is not in the clear anywhere in its hello
    let cam_name = b"Camera";
    assert!(!sh.windows(cam_name.len()).any(|x| x == cam_name));
    // while SIGMA-I shows the camera's identity to the same visitor
    let (c, hello) = Client::start(Mode::Sigma, visitor.creds.clone(), None, None, &mut w.rng).unwrap();
    let (_s, sh) = on_client_hello(&cam, &hello, &mut w.rng).unwrap();
    let (e, _) = c.on_server_hello(&sh, NOW).unwrap();
    assert_eq!(e.peer.name().to_string(), "Home/Devices/Camera");
}

#[test]
fn a_server_outside_the_client_policy_never_sees_the_client() {
    let mut w = World::new(3);
    let (_, cam) = camera(&mut w, false);
    // the owner only talks to Home/Lights/*
    let owner = w.party(true, &["Owner", "Phone"], "Home/Lights/*");
    for mode in [Mode::Sigma, Mode::Private] {
        let (c, hello) =
            Client::start(mode, owner.creds.clone(), Some(owner.prefix.clone()), None, &mut w.rng).unwrap();
        let (_s, sh) = on_client_hello(&cam, &hello, &mut w.rng).unwrap();
        let err = c.on_server_hello(&sh, NOW).unwrap_err();
        assert!(matches!(err, Error::PeerNotAuthorized { .. }), "{err}");
        // no finish message exists, so ID_C was never sent
    }
}

#[test]
fn the_server_refuses_a_client_outside_its_policy() {
    let mut w = World::new(4);
    let (_, cam) = camera(&mut w, false);
    let visitor = w.party(false, &["Visitor", "Phone"], "Home/*");
    let (c, hello) = Client::start(Mode::Sigma, visitor.creds.clone(), None, None, &mut w.rng).unwrap();
    let (s, sh) = on_client_hello(&cam, &hello, &mut w.rng).unwrap();
    let (_, fin) = c.on_server_hello(&sh, NOW).unwrap();
    assert!(matches!(
        s.on_client_finish(&fin, NOW),
        Err(Error::PeerNotAuthorized { .. })
    ));
}

#[test]
fn tampered_messages_and_stolen_blessings_are_rejected() {
    let mut w = World::new(5);
    let (_, cam) = camera(&mut w, false);
    let owner = w.party(true, &["Owner", "Phone"], "Home/*");
    for mode in [Mode::Sigma, Mode::Private] {
        // flip each byte of the server hello's ciphertext region
        let (_, hello) =
            Client::start(mode, owner.creds.clone(), Some(owner.prefix.clone()), None, &mut w.rng).unwrap();
        let (_, sh) = on_client_hello(&cam, &hello, &mut w.rng).unwrap();
        for i in (3..sh.len()).step_by(37) {
            let (c, hello2) =
                Client::start(mode, owner.creds.clone(), Some(owner.prefix.clone()), None, &mut w.rng).unwrap();
            let (_, mut sh2) = on_client_hello(&cam, &hello2, &mut w.rng).unwrap();
            sh2[i] ^= 1;
            assert!(c.on_server_hello(&sh2, NOW).is_err(), "flip at {i} accepted");
        }
        // a tampered finish
        let (c, hello) =
            Client::start(mode, owner.creds.clone(), Some(owner.prefix.clone()), None, &mut w.rng).unwrap();
        let (s, sh) = on_client_hello(&cam, &hello, &mut w.rng).unwrap();
        let (_, mut fin) = c.on_server_hello(&sh, NOW).unwrap();
        let last = fin.len() - 1;
        fin[last] ^= 0x80;
        assert!(matches!(s.on_client_finish(&fin, NOW), Err(Error::Decrypt(_))));
    }
    // a server presenting the camera's blessing without its key
    let thief = Principal::generate(&mut w.rng);
    let mut stolen = cam.creds.clone();
    stolen.principal = Arc::new(thief);
    let fake = ServerConfig::new(stolen, cam.prefix.clone(), false).with_modes(&[Mode::Sigma, Mode::Private]);
    for mode in [Mode::Sigma, Mode::Private] {
        let (c, hello) =
            Client::start(mode, owner.creds.clone(), Some(owner.prefix.clone()), None, &mut w.rng).unwrap();
        let (_, sh) = on_client_hello(&fake, &hello, &mut w.rng).unwrap();
        assert!(matches!(c.on_server_hello(&sh, NOW), Err(Error::BadSignature(_))));
    }
    // an expired chain
    let (c, hello) = Client::start(Mode::Sigma, owner.creds.clone(), None, None, &mut w.rng).unwrap();
    let (_, sh) = on_client_hello(&cam, &hello, &mut w.rng).unwrap();
    assert!(matches!(
        c.on_server_hello(&sh, NOW + 2 * YEAR),
        Err(Error::Blessing(_))
    ));
}

#[test]
fn zero_rtt_discovery_round_trip_replay_and_expiry() {
    let mut w = World::new(6);
    let (cam, _) = camera(&mut w, false);
    let owner = w.party(true, &["Owner", "Phone"], "Home/Devices/*");
    let svc = Service::new(cam.creds.clone());
    let ad = svc.refresh(&cam.prefix.mpk, NOW, NOW + 3600, &mut w.rng).unwrap();
    let advert = ad.advert().to_vec();
    assert!(advert.len() <= 700, "advert is {} bytes", advert.len());

    let found = open_advert(&advert, &owner.creds, &owner.prefix, NOW).unwrap();
    assert_eq!(found.server.name().to_string(), "Home/Devices/Camera");
    let (waiting, hello) = connect(found.clone(), &owner.creds, b"unlock the door", &mut w.rng).unwrap();
    let acc = svc.on_hello(&hello, NOW + 1).unwrap();
    assert_eq!(acc.early_data, b"unlock the door");
    assert_eq!(acc.client.name().to_string(), "Home/Owner/Phone");
    let (mut se, reply) = acc.reply(b"door unlocked", &mut w.rng).unwrap();
    let mut done = waiting.on_reply(&reply).unwrap();
    assert_eq!(done.data, b"door unlocked");
    assert_eq!(se.keys.open(&done.session.keys.seal(b"thanks")).unwrap(), b"thanks");

    // the same first flight again is a replay
    assert!(matches!(svc.on_hello(&hello, NOW + 2), Err(Error::Replay)));
    // a tampered first flight
    let (_, mut h2) = connect(found.clone(), &owner.creds, b"x", &mut w.rng).unwrap();
    let n = h2.len();
    h2[n - 3] ^= 1;
    assert!(matches!(svc.on_hello(&h2, NOW), Err(Error::Decrypt(_))));
    // after the advert expired: the client refuses it, the server refuses flights
    assert!(matches!(
        open_advert(&advert, &owner.creds, &owner.prefix, NOW + 3601),
        Err(Error::AdvertExpired { .. })
    ));
    let (_, h3) = connect(found, &owner.creds, b"late", &mut w.rng).unwrap();
    assert!(matches!(
        svc.on_hello(&h3, NOW + 3601),
        Err(Error::AdvertExpired { .. })
    ));
    // a refresh retires expired adverts: their flights become unknown
    svc.refresh(&cam.prefix.mpk, NOW + 4000, NOW + 8000, &mut w.rng)
        .unwrap();
    assert!(matches!(svc.on_hello(&h3, NOW + 4001), Err(Error::UnknownAdvert)));
}

#[test]
fn zero_rtt_unauthorised_forged_and_tampered_adverts() {
    let mut w = World::new(7);
    let (cam, _) = camera(&mut w, false);
    let visitor = w.party(false, &["Visitor", "Phone"], "Home/*");
    let owner = w.party(true, &["Owner", "Phone"], "Home/*");
    let svc = Service::new(cam.creds.clone());
    let advert = svc
        .refresh(&cam.prefix.mpk, NOW, NOW + 3600, &mut w.rng)
        .unwrap()
        .advert()
        .to_vec();
    // a visitor sees only the policy
    assert!(matches!(
        open_advert(&advert, &visitor.creds, &visitor.prefix, NOW),
        Err(Error::NotAuthorizedByPeer(_))
    ));
    // every byte flipped in the advert is caught
    for i in 0..advert.len() {
        let mut bad = advert.clone();
        bad[i] ^= 0x01;
        assert!(
            open_advert(&bad, &owner.creds, &owner.prefix, NOW).is_err(),
            "flip at {i} accepted"
        );
    }
    // a forged advert: the camera's blessing signed by another key
    let mut forged = cam.creds.clone();
    forged.principal = Arc::new(Principal::generate(&mut w.rng));
    let fake = Service::new(forged);
    let fake_ad = fake.refresh(&cam.prefix.mpk, NOW, NOW + 3600, &mut w.rng).unwrap();
    assert!(matches!(
        open_advert(fake_ad.advert(), &owner.creds, &owner.prefix, NOW),
        Err(Error::BadSignature(_))
    ));
    // an advert whose server is outside the client's policy
    let picky = w.party(true, &["Owner", "Tablet"], "Home/Lights/*");
    assert!(matches!(
        open_advert(&advert, &picky.creds, &picky.prefix, NOW),
        Err(Error::PeerNotAuthorized { .. })
    ));
    // a first flight for an advert this service never made
    let found = open_advert(fake_ad.advert(), &owner.creds, &owner.prefix, NOW);
    assert!(found.is_err());
    let real = open_advert(&advert, &owner.creds, &owner.prefix, NOW).unwrap();
    let (_, hello) = connect(real, &owner.creds, b"", &mut w.rng).unwrap();
    assert!(matches!(fake.on_hello(&hello, NOW), Err(Error::UnknownAdvert)));
}

#[test]
fn a_policy_with_several_prefixes_admits_each_of_them() {
    let mut w = World::new(8);
    // the camera admits Home/* and Street/Visitor/*: one ciphertext per prefix
    let mut cam = w.party(true, &["Devices", "Camera"], "Home/*");
    cam.creds.policy = "Home/*,Street/Visitor/*".parse::<Policy>().unwrap();
    let cfg = ServerConfig::new(cam.creds.clone(), Some(cam.prefix.clone()), false);
    let visitor = w.party(false, &["Visitor", "Phone"], "Home/*");
    let owner = w.party(true, &["Owner", "Phone"], "Home/*");
    for client in [&visitor, &owner] {
        let (_, s_saw) = run(Mode::Private, &mut w, client, &cfg, None).unwrap();
        assert_eq!(s_saw, client.creds.blessing.unverified_name().to_string());
    }
    let svc = Service::new(cam.creds.clone());
    let ad = svc.refresh(&cam.prefix.mpk, NOW, NOW + 60, &mut w.rng).unwrap();
    for client in [&visitor, &owner] {
        let found = open_advert(ad.advert(), &client.creds, &client.prefix, NOW).unwrap();
        assert_eq!(found.server.name().to_string(), "Home/Devices/Camera");
    }
    // a stranger under neither prefix sees both policies and nothing else
    let stranger = w.party(false, &["Other", "Phone"], "Home/*");
    match open_advert(ad.advert(), &stranger.creds, &stranger.prefix, NOW) {
        Err(Error::NotAuthorizedByPeer(p)) => assert_eq!(p, "Home/*,Street/Visitor/*"),
        other => panic!("{other:?}"),
    }
    // more than four prefixes is refused when the server is configured
    let mut many = cam.creds.clone();
    many.policy = "A/*,B/*,C/*,D/*,E/*".parse::<Policy>().unwrap();
    assert!(matches!(
        Service::new(many).refresh(&cam.prefix.mpk, NOW, NOW + 60, &mut w.rng),
        Err(Error::Config(_))
    ));
}

/// Issue 9, defect 6: the handshake listener used to accept without limit; issue 32:
/// with the limit reached by idle connections, an honest client waited until they
/// timed out (20 s). Now one address holds at most its share, and a newcomer from
/// another address takes a slot from the busiest one: the honest client is served
/// while the flood is still connected.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_flood_does_not_keep_an_honest_client_out_of_the_handshake_listener() {
    use std::sync::Mutex;
    use tacit_discovery::service::{self, ServerEvent, ServerState};
    use tacit_net::{FramedListener, NetConfig};
    let mut w = World::new(31);
    let (cam_party, cam) = camera(&mut w, false);
    let owner = w.party(true, &["Owner", "Phone"], "Home/Devices/*");
    let events = Arc::new(Mutex::new(Vec::<String>::new()));
    let ev = events.clone();
    let state = Arc::new(ServerState {
        config: cam,
        service: Service::new(cam_party.creds.clone()),
        respond: Arc::new(|_: &str, _: &[u8]| b"ok".to_vec()),
        events: Arc::new(move |e| {
            ev.lock().unwrap().push(match e {
                ServerEvent::Authenticated { .. } => "authenticated".into(),
                ServerEvent::Refused(_) => "refused".into(),
                ServerEvent::Admission(e) => e.to_string(),
            })
        }),
    });
    let net = NetConfig::default();
    let l = FramedListener::bind("127.0.0.1:0", &net).await.unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let server = tokio::spawn(service::serve_with_limit(l, state, 4));
    let mut stallers = Vec::new();
    for _ in 0..10 {
        if let Ok(c) = tacit_net::guard::connect_from("127.0.0.2".parse().unwrap(), addr.parse().unwrap()).await {
            stallers.push(c);
        }
    }
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let o = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        service::connect(
            &addr,
            Mode::Private,
            &owner.creds,
            Some(&owner.prefix),
            None,
            b"hi",
            &NetConfig::default(),
        ),
    )
    .await
    .expect("the honest client waited past 5 s")
    .unwrap();
    assert_eq!(o.response, b"ok");
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    assert!(events.lock().unwrap().contains(&"authenticated".to_string()));
    server.abort();
}

/// Issue 10: a revoked blessing is refused wherever a chain is validated — by a
/// server in SIGMA-I, private mutual authentication and 0-RTT, and by a client
/// reading a server hello or an advertisement. Revoking an intermediate link revokes
/// everything below it. The camera's credentials share the roots' revocation state,
/// so a list applied once reaches the running service.
#[test]
fn a_revoked_blessing_is_refused_in_every_handshake() {
    let mut w = World::new(40);
    let (cam, cfg) = camera(&mut w, false);
    let owner = w.party(true, &["Owner", "Phone"], "Home/*");
    let tablet = w.party(true, &["Owner", "Tablet"], "Home/*");
    let svc = Service::new(cam.creds.clone());
    let advert = svc
        .refresh(&cam.prefix.mpk, NOW, NOW + 3600, &mut w.rng)
        .unwrap()
        .advert()
        .to_vec();
    for mode in [Mode::Sigma, Mode::Private] {
        run(mode, &mut w, &owner, &cfg, None).unwrap();
    }
    let found = open_advert(&advert, &owner.creds, &owner.prefix, NOW).unwrap();

    // Home revokes the owner's phone (the last link of Home/Owner/Phone).
    let list1 = w
        .home
        .0
        .sign_revocations(&w.home.1, 1, NOW, NOW + YEAR, [owner.creds.blessing.id()])
        .unwrap();
    assert_eq!(w.roots.apply_revocations(&list1).unwrap(), Applied::Installed);
    let revoked =
        |e: &Error, at: usize| matches!(e, Error::Blessing(blessing::Error::Revoked { link, .. }) if *link == at);
    for mode in [Mode::Sigma, Mode::Private] {
        let e = run(mode, &mut w, &owner, &cfg, None).unwrap_err();
        assert!(revoked(&e, 3), "{mode:?}: {e}");
        // the tablet, another device of the owner, is not affected
        run(mode, &mut w, &tablet, &cfg, None).unwrap();
    }
    let (_, hello) = connect(found, &owner.creds, b"open the door", &mut w.rng).unwrap();
    let e = svc.on_hello(&hello, NOW).unwrap_err();
    assert!(revoked(&e, 3), "{e}");

    // Home revokes Home/Devices: the camera below it is refused by clients.
    let devices = cam.creds.blessing.link_ids()[1];
    let list2 = w
        .home
        .0
        .sign_revocations(&w.home.1, 2, NOW, NOW + YEAR, [owner.creds.blessing.id(), devices])
        .unwrap();
    assert_eq!(w.roots.apply_revocations(&list2).unwrap(), Applied::Installed);
    for mode in [Mode::Sigma, Mode::Private] {
        let e = run(mode, &mut w, &tablet, &cfg, None).unwrap_err();
        assert!(revoked(&e, 2), "{mode:?}: {e}");
    }
    let e = open_advert(&advert, &tablet.creds, &tablet.prefix, NOW).unwrap_err();
    assert!(revoked(&e, 2), "{e}");
    assert_eq!(
        e.to_string(),
        format!("the peer's blessing is not valid: link 2 (Devices) is revoked by its root (certificate {devices})")
    );
}

/// Issue 10: only a root's own key revokes in its tree; an older list never replaces
/// a newer one; two lists with one sequence number are refused; lists survive their
/// file form.
#[test]
fn revocation_lists_come_from_the_root_and_never_go_back() {
    let mut w = World::new(41);
    let owner = w.party(true, &["Owner", "Phone"], "Home/*");
    let id = owner.creds.blessing.id();
    let (home, home_b) = (&w.home.0, &w.home.1);
    // Mallory's own "Home" root signs a list naming the owner's phone.
    let (mallory, fake_home) = Principal::new_root(&mut w.rng, "Home", NOW + YEAR).unwrap();
    let forged = mallory.sign_revocations(&fake_home, 9, NOW, NOW + 60, [id]).unwrap();
    assert!(matches!(
        w.roots.apply_revocations(&forged),
        Err(blessing::Error::RootKeyMismatch { .. })
    ));
    let elsewhere = Principal::new_root(&mut w.rng, "Elsewhere", NOW + YEAR).unwrap();
    let untrusted = elsewhere
        .0
        .sign_revocations(&elsewhere.1, 1, NOW, NOW + 60, [id])
        .unwrap();
    assert!(matches!(
        w.roots.apply_revocations(&untrusted),
        Err(blessing::Error::UntrustedRoot { .. })
    ));
    // The street root's list cannot reach Home's tree: it applies to Street only.
    let street = w
        .street
        .0
        .sign_revocations(&w.street.1, 1, NOW, NOW + 60, [id])
        .unwrap();
    w.roots.apply_revocations(&street).unwrap();
    assert!(owner.creds.blessing.validate(&w.roots, NOW).is_ok());
    // A tampered list does not verify.
    let l2 = home.sign_revocations(home_b, 2, NOW, NOW + 60, [id]).unwrap();
    let mut bytes = l2.to_file_bytes();
    let n = bytes.len();
    bytes[n - 70] ^= 1;
    let tampered = SignedRevocationList::from_file_bytes(&bytes).unwrap();
    assert!(matches!(
        w.roots.apply_revocations(&tampered),
        Err(blessing::Error::BadRevocationSignature { .. })
    ));
    // In force, through the file form.
    let l2 = SignedRevocationList::from_file_bytes(&l2.to_file_bytes()).unwrap();
    assert_eq!(w.roots.apply_revocations(&l2).unwrap(), Applied::Installed);
    assert_eq!(w.roots.apply_revocations(&l2).unwrap(), Applied::Unchanged);
    assert!(owner.creds.blessing.validate(&w.roots, NOW).is_err());
    // The replayed older, empty list is refused and the revocation stays.
    let l1 = home.sign_revocations(home_b, 1, NOW, NOW + 60, []).unwrap();
    assert!(matches!(
        w.roots.apply_revocations(&l1),
        Err(blessing::Error::StaleRevocationList { have: 2, got: 1, .. })
    ));
    let other2 = home.sign_revocations(home_b, 2, NOW, NOW + 60, []).unwrap();
    assert!(matches!(
        w.roots.apply_revocations(&other2),
        Err(blessing::Error::InvalidRevocationList(_))
    ));
    assert!(owner.creds.blessing.validate(&w.roots, NOW).is_err());
    let in_force: Vec<String> = w
        .roots
        .revocation_lists()
        .iter()
        .map(|l| format!("{}#{}", l.unverified().root().name(), l.unverified().sequence()))
        .collect();
    assert_eq!(in_force, ["Home#2", "Street#1"]);
    // A fresh copy of the roots (from the file form) holds no lists until applied.
    let fresh = TrustedRoots::from_file_bytes(&w.roots.to_file_bytes()).unwrap();
    assert!(owner.creds.blessing.validate(&fresh, NOW).is_ok());
}

/// What a client outside the policy can compute from a private server hello: it
/// chose `x`, so it derives `htkₛ` itself (the KDF is public, `docs/wire.md`) and
/// reads everything sealed under it. Returns whether any 64-byte string it can read
/// there verifies, as the server's signature over `(sid, CT_S, gˣ, gʸ)`, under
/// `candidate`: a key the attacker holds (from an earlier session, a SIGMA-I
/// endpoint, a blessing file).
fn outsider_recognises(w: &mut World, server: &ServerConfig, outsider: &Party, candidate: &[u8; 32]) -> bool {
    use sha2::{Digest, Sha256};
    use tacit_crypto::{PrimeGroup, Ristretto255, SecretScalar};
    // The outsider's hello, with its own DH share.
    let (_, mut hello) = Client::start(
        Mode::Private,
        outsider.creds.clone(),
        Some(outsider.prefix.clone()),
        None,
        &mut w.rng,
    )
    .unwrap();
    let x = SecretScalar::<Ristretto255>::random(&mut w.rng);
    let gx = Ristretto255::element_bytes(&Ristretto255::mul_base(x.expose()));
    let sid: [u8; 16] = hello[4..20].try_into().unwrap();
    hello[20..52].copy_from_slice(&gx);
    let (_, sh) = on_client_hello(server, &hello, &mut w.rng).unwrap();
    // ServerHello = 01 0341 || sid || gʸ || u32 len || c
    let gy: [u8; 32] = sh[19..51].try_into().unwrap();
    let c = &sh[55..];
    let gxy = Ristretto255::element_bytes(&Ristretto255::mul(
        &Ristretto255::decode_element(&gy).unwrap(),
        x.expose(),
    ));
    let mut th = Sha256::new();
    for p in [&sid[..], &gx[..], &gy[..]] {
        th.update((p.len() as u64).to_be_bytes());
        th.update(p);
    }
    let info = [b"private-mutual-auth".as_slice(), &th.finalize()].concat();
    let okm = tacit_crypto::kdf::hkdf_sha256(b"tacit-discovery/v1", &gxy, &info, 128).unwrap();
    let htk_s: [u8; 32] = okm[..32].try_into().unwrap();
    let inner = tacit_crypto::aead::AeadKey::new(htk_s)
        .open(&[0u8; 12], b"server", c)
        .expect("the outsider reads everything under htkₛ");
    // CTs = u8 n || n × (u32 len || prefix ciphertext), then whatever follows.
    let n = inner[0] as usize;
    let mut end = 1;
    for _ in 0..n {
        let len = u32::from_be_bytes(inner[end..end + 4].try_into().unwrap()) as usize;
        let ct = tacit_discovery::prefix::PrefixCiphertext::from_wire(&inner[end + 4..end + 4 + len]).unwrap();
        assert_eq!(ct.policy().to_string(), "Home", "the outsider parsed CT_S");
        end += 4 + len;
    }
    let mut content = Writer::new();
    content.put_str("private/server");
    for p in [&sid[..], &inner[..end], &gx[..], &gy[..]] {
        content.put_var_bytes(p);
    }
    let msg = [
        b"tacit-discovery/principal-signature/v1\0".as_slice(),
        &content.into_bytes(),
    ]
    .concat();
    let key = tacit_crypto::sign::VerifyingKey::from_bytes(candidate).unwrap();
    inner[end..].windows(64).any(|sig| key.verify(&msg, sig).is_ok())
}

/// Issue 32, item 5: the paper's Fig. 1 encrypts the server's signature only under
/// `htkₛ`, which any client derives; signatures are not key-private, so a client
/// outside the policy that holds candidate public keys could test the signature
/// against each and recognise (and track) the server across fresh `CT_S`. The
/// signature is now sealed under a key derived from `htkₛ` and a secret inside
/// `CT_S`: the outsider cannot tell the server from another one with the same policy.
#[test]
fn a_client_outside_the_policy_cannot_recognise_the_server_by_its_key() {
    let mut w = World::new(44);
    let a = w.party(true, &["Devices", "Camera"], "Home/*");
    let b = w.party(true, &["Devices", "Lock"], "Home/*");
    let outsider = w.party(false, &["Visitor", "Phone"], "Home/*");
    let servers = [
        ServerConfig::new(a.creds.clone(), Some(a.prefix.clone()), false),
        ServerConfig::new(b.creds.clone(), Some(b.prefix.clone()), false),
    ];
    let keys = [
        a.creds.principal.public_key().to_bytes(),
        b.creds.principal.public_key().to_bytes(),
    ];
    for (i, server) in servers.iter().enumerate() {
        for (j, key) in keys.iter().enumerate() {
            assert!(
                !outsider_recognises(&mut w, server, &outsider, key),
                "an outsider recognised server {i} with key {j}"
            );
        }
    }
    // An authorised client still authenticates each of them.
    let owner = w.party(true, &["Owner", "Phone"], "Home/*");
    for server in &servers {
        run(Mode::Private, &mut w, &owner, server, None).unwrap();
    }
}

/// Issue 32, item 7: the 0-RTT replay cache is bounded per advertisement. Only
/// authorised clients reach it, but they could make the service store a share per
/// first flight for the advertisement's lifetime; beyond the bound, 0-RTT is
/// refused under that advertisement (replays stay refused), and the next one starts
/// empty.
#[test]
fn the_zero_rtt_replay_cache_is_bounded() {
    let mut w = World::new(45);
    let (cam, _) = camera(&mut w, false);
    let owner = w.party(true, &["Owner", "Phone"], "Home/Devices/*");
    let svc = Service::new(cam.creds.clone()).with_replay_limit(3);
    let ad = svc.refresh(&cam.prefix.mpk, NOW, NOW + 3600, &mut w.rng).unwrap();
    let found = open_advert(ad.advert(), &owner.creds, &owner.prefix, NOW).unwrap();
    let mut first = None;
    for _ in 0..3 {
        let (_, hello) = connect(found.clone(), &owner.creds, b"hi", &mut w.rng).unwrap();
        svc.on_hello(&hello, NOW).unwrap();
        first.get_or_insert(hello);
    }
    let (_, fourth) = connect(found.clone(), &owner.creds, b"hi", &mut w.rng).unwrap();
    assert!(matches!(svc.on_hello(&fourth, NOW), Err(Error::ReplayCacheFull(3))));
    assert!(matches!(svc.on_hello(&first.unwrap(), NOW), Err(Error::Replay)));
    let ad2 = svc.refresh(&cam.prefix.mpk, NOW, NOW + 3600, &mut w.rng).unwrap();
    let found2 = open_advert(ad2.advert(), &owner.creds, &owner.prefix, NOW).unwrap();
    let (_, hello) = connect(found2, &owner.creds, b"hi", &mut w.rng).unwrap();
    svc.on_hello(&hello, NOW).unwrap();
}
