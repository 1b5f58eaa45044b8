//! The embedding API (issue 29): an IBE root [`Authority`], an [`Advertiser`] and
//! [`Browser`]s over loopback through the builders, and deviating peers against the
//! library's advertiser and authority, showing that the protections the CLI had
//! (private handshakes only by default, replay refusal, admission limits, revocations
//! picked up while serving, one key per root name) moved with the code.

mod common;

use common::{Home, UNTIL, flood};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tacit_crypto::rng::SecureRng;
use tacit_discovery::blessing::Principal;
use tacit_discovery::handshake::zero_rtt;
use tacit_discovery::handshake::{Error as HsError, Mode, PrefixCredentials};
use tacit_discovery::service::{self, Error as SvcError, ServerEvent};
use tacit_discovery::{Advertiser, AdvertiserEvent, Authority, Browser, Error, authority, stored};
use tacit_net::{FramedConn, NetConfig, Protocol};

/// The connection events an advertiser reported.
fn recorder() -> (
    Arc<Mutex<Vec<ServerEvent>>>,
    impl Fn(AdvertiserEvent) + Send + Sync + 'static,
) {
    let log = Arc::new(Mutex::new(Vec::new()));
    let l = log.clone();
    (log, move |e| {
        if let AdvertiserEvent::Connection(e) = e {
            l.lock().unwrap().push(e);
        }
    })
}

async fn settle() {
    tokio::time::sleep(Duration::from_millis(100)).await;
}

fn temp_store(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("tacit-discovery-api-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("store.sqlite3")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_honest_run_through_the_builders() {
    let mut h = Home::new(1);
    // The authority online; members prove their blessings for their prefix keys.
    let root = Authority::builder_for(h.ibe.clone(), h.roots.clone())
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let at = root.local_addr().to_string();
    let serving_root = tokio::spawn(root.serve());
    let mpk = Arc::new(h.ibe.public().clone());
    let net = NetConfig::default();
    let fetch = async |c: &tacit_discovery::handshake::Credentials| {
        let key = authority::fetch_prefix_key(&at, c.principal.clone(), c.blessing.clone(), mpk.clone(), &net)
            .await
            .unwrap();
        PrefixCredentials::new(mpk.clone(), Some(key))
    };
    let camera = h.member(true, "Camera", "Home/*");
    let phone = h.member(true, "Phone", "Home/*");
    let visitor = h.member(false, "Phone", "Home/*");
    let (camera_keys, phone_keys, visitor_keys) = (fetch(&camera).await, fetch(&phone).await, fetch(&visitor).await);
    assert!(authority::fetch_revocations(&at, &net).await.unwrap().is_empty());

    let (log, events) = recorder();
    let adv = Advertiser::builder(camera, camera_keys)
        .respond(|who, req| [who.as_bytes(), b":", req].concat())
        .on_event(events)
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let (addr, advert) = (adv.local_addr(), adv.advert());
    let serving = tokio::spawn(adv.serve());

    let phone = Browser::builder(phone).prefix(phone_keys).build();
    let seen = phone.open(&advert, Some(addr)).unwrap();
    assert_eq!(seen.name(), "Home/Camera");
    let o = phone.zero_rtt(&seen, b"status?").await.unwrap();
    assert_eq!(o.response, b"Home/Phone:status?");
    let o = phone
        .connect(&addr.to_string(), Mode::Private, b"unlock")
        .await
        .unwrap();
    assert_eq!(o.session.peer.name().to_string(), "Home/Camera");
    assert_eq!(o.response, b"Home/Phone:unlock");

    // The visitor (Street/Phone) is outside the camera's policy Home/*: it cannot
    // read the advertisement, and its private handshake stops before it sends its
    // identity (the camera saw a connection end, not a name).
    let visitor = Browser::builder(visitor).prefix(visitor_keys).build();
    assert!(matches!(
        visitor.open(&advert, Some(addr)),
        Err(Error::Handshake(HsError::NotAuthorizedByPeer(_)))
    ));
    assert!(matches!(
        visitor.connect(&addr.to_string(), Mode::Private, b"hi").await,
        Err(Error::Service(SvcError::Handshake(HsError::NotAuthorizedByPeer(_))))
    ));
    settle().await;
    let log = log.lock().unwrap().clone();
    let authenticated: Vec<_> = log
        .iter()
        .filter_map(|e| match e {
            ServerEvent::Authenticated { handshake, client } => Some((*handshake, client.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(
        authenticated,
        [("0-RTT", "Home/Phone"), ("private mutual authentication", "Home/Phone")]
    );
    assert!(
        !format!("{log:?}").contains("Street"),
        "the camera learnt the visitor's name: {log:?}"
    );
    serving.abort();
    serving_root.abort();
}

/// A SIGMA-I hello would hand the service's name to anyone: the library advertiser
/// answers it only when told to, by name (`allow_sigma`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sigma_hello_gets_nothing_from_a_default_advertiser() {
    let mut h = Home::new(2);
    let camera = h.member(true, "Camera", "Home/*");
    let keys = h.keys(&camera);
    let visitor = Browser::builder(h.member(false, "Phone", "Home/*")).build();
    for allow in [false, true] {
        let builder = Advertiser::builder(camera.clone(), keys.clone());
        // The default, and the explicit opt-in.
        let builder = if allow { builder.allow_sigma(true) } else { builder };
        let adv = builder.bind("127.0.0.1:0").await.unwrap();
        let addr = adv.local_addr().to_string();
        let serving = tokio::spawn(adv.serve());
        let r = visitor.connect(&addr, Mode::Sigma, b"who are you?").await;
        if allow {
            // Answered: the server hello (with the camera's name) went out, and only
            // the visitor's own name was then refused.
            assert!(matches!(r, Err(Error::Service(SvcError::Refused))), "{r:?}");
        } else {
            assert!(matches!(r, Err(Error::Service(SvcError::NoAnswer(_)))), "{r:?}");
        }
        serving.abort();
    }
}

/// A deviating client replays an honest 0-RTT first flight it observed: the library
/// advertiser answers the first and closes the second without a word.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_zero_rtt_flight_is_refused() {
    let mut h = Home::new(3);
    let camera = h.member(true, "Camera", "Home/*");
    let camera_keys = h.keys(&camera);
    let phone = h.member(true, "Phone", "Home/*");
    let phone_keys = h.keys(&phone);
    let (log, events) = recorder();
    let adv = Advertiser::builder(camera, camera_keys)
        .respond(|_, _| b"door unlocked".to_vec())
        .on_event(events)
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let (addr, advert) = (adv.local_addr(), adv.advert());
    let serving = tokio::spawn(adv.serve());

    let seen = Browser::builder(phone.clone())
        .prefix(phone_keys)
        .build()
        .open(&advert, Some(addr))
        .unwrap();
    let (_, flight) = zero_rtt::connect(seen.service, &phone, b"unlock", &mut SecureRng::from_os()).unwrap();
    let cfg = NetConfig::default().speaking(Protocol::DiscoveryService);
    let mut first = FramedConn::connect(addr, &cfg).await.unwrap();
    first.send(&flight).await.unwrap();
    assert!(first.recv().await.is_ok(), "the honest flight was not answered");
    let mut replay = FramedConn::connect(addr, &cfg).await.unwrap();
    replay.send(&flight).await.unwrap();
    assert!(replay.recv().await.is_err(), "the replayed flight was answered");
    settle().await;
    let log = format!("{:?}", log.lock().unwrap());
    assert!(log.contains("replayed 0-RTT first flight"), "{log}");
    serving.abort();
}

/// A deviating client floods the library advertiser with idle connections from one
/// address: the admission limits moved with the code, so an honest phone is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_advertiser_serves_during_an_idle_flood() {
    let mut h = Home::new(4);
    let camera = h.member(true, "Camera", "Home/*");
    let camera_keys = h.keys(&camera);
    let phone = h.member(true, "Phone", "Home/*");
    let phone = Browser::builder(phone.clone()).prefix(h.keys(&phone)).build();
    let (log, events) = recorder();
    let adv = Advertiser::builder(camera, camera_keys)
        .respond(|_, _| b"ok".to_vec())
        .on_event(events)
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let (addr, advert) = (adv.local_addr(), adv.advert());
    let serving = tokio::spawn(adv.serve());
    let _idle = flood(addr, service::MAX_CONNECTIONS + 10).await;
    let seen = phone.open(&advert, Some(addr)).unwrap();
    let o = tokio::time::timeout(Duration::from_secs(5), phone.zero_rtt(&seen, b"hi"))
        .await
        .expect("the honest phone waited past 5 s")
        .unwrap();
    assert_eq!(o.response, b"ok");
    // The flooding address holds at most its share; the rest was turned away.
    let refused = log
        .lock()
        .unwrap()
        .iter()
        .filter(|e| matches!(e, ServerEvent::Admission(tacit_net::guard::ServeEvent::Refused { peer, .. }) if peer.ip().to_string() == "127.0.0.2"))
        .count();
    assert!(
        refused >= service::MAX_CONNECTIONS + 10 - service::MAX_PER_ADDRESS,
        "only {refused} of the flood's connections were refused"
    );
    serving.abort();
}

/// The root signs a revocation of the phone's blessing into the advertiser's store
/// while it serves: within `RELOAD_EVERY` the camera refuses the phone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revocation_stored_while_serving_takes_effect() {
    let mut h = Home::new(5);
    let camera = h.member(true, "Camera", "Home/*");
    let camera_keys = h.keys(&camera);
    let phone_creds = h.member(true, "Phone", "Home/*");
    let phone = Browser::builder(phone_creds.clone())
        .prefix(h.keys(&phone_creds))
        .build();
    let path = temp_store("revocation");
    let roots = camera.roots.clone();
    let adv = Advertiser::builder(camera, camera_keys)
        .revocations_from_store(&path)
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = adv.local_addr().to_string();
    let serving = tokio::spawn(adv.serve());
    phone.connect(&addr, Mode::Private, b"1").await.unwrap();

    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let list = h
        .home
        .0
        .sign_revocations(&h.home.1, 1, now, UNTIL, [phone_creds.blessing.id()])
        .unwrap();
    // Another process (`tacit discover id refresh`) stores the list; the camera's
    // own copy of the roots has not seen it.
    let mut st = tacit_store::Store::open(&path).unwrap();
    stored::adopt(
        &mut st,
        &tacit_discovery::blessing::TrustedRoots::from_file_bytes(&roots.to_file_bytes()).unwrap(),
        &list,
    )
    .unwrap();
    drop(st);
    tokio::time::sleep(tacit_discovery::advertiser::RELOAD_EVERY + Duration::from_millis(500)).await;
    let r = phone.connect(&addr, Mode::Private, b"2").await;
    assert!(matches!(r, Err(Error::Service(SvcError::Refused))), "{r:?}");
    serving.abort();
}

/// One root name trusted with two keys would let members under one read what is
/// encrypted for the other: the library authority refuses to bind, unless the keys
/// are marked as one root's rollover.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_authority_refuses_two_roots_of_one_name() {
    let h = Home::new(6);
    let mut roots = h.roots.clone();
    let (impostor, _) = Principal::new_root(&mut SecureRng::from_seed([9; 32]), "Home", UNTIL).unwrap();
    roots.add("Home", impostor.public_key()).unwrap();
    let r = Authority::builder_for(h.ibe.clone(), roots.clone())
        .bind("127.0.0.1:0")
        .await;
    assert!(
        matches!(&r, Err(Error::AmbiguousRootName { name, keys: 2 }) if name == "Home"),
        "{r:?}"
    );
    Authority::builder_for(h.ibe.clone(), roots)
        .rollover("Home")
        .bind("127.0.0.1:0")
        .await
        .unwrap();
}
