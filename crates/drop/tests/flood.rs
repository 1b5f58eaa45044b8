//! Issue 32, item 1: one unauthenticated peer must not crash `drop receive`.
//!
//! The review reproduced it with the descriptor limit lowered to 256: 244 idle
//! connections, then "accept: Too many open files" ended the receiver. This test does
//! the same in-process: idle connections from one address (`127.0.0.2`) take every
//! descriptor the limit leaves, so `accept` fails; the receiver must go on, and once
//! descriptors free up, serve an honest sender (from `127.0.0.1`) while the flood
//! holds no more than its address's share.
//!
//! One test in this file: it changes the process's descriptor limit.

use std::sync::{Arc, Mutex};
use std::time::Duration;
use tacit_crypto::Ristretto255;
use tacit_crypto::rng::SecureRng;
use tacit_drop::DropParams;
use tacit_drop::ca::{CertificateAuthority, DeviceEnrollment, DropIdentity, MemoryRegistry};
use tacit_drop::protocol::{AddressBook, Discoverability, Peer};
use tacit_drop::revocation::Revocations;
use tacit_drop::transport::{self, BookSupply, Event, Limits, ReceiverConfig, SenderConfig};
use tokio::net::TcpListener;

type G = Ristretto255;

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn params() -> DropParams {
    DropParams::default().with_bounds(3, 20)
}

fn device(ca: &CertificateAuthority, ids: &[&str], book: &[&str]) -> (Arc<DropIdentity<G>>, Arc<AddressBook>) {
    let mut rng = SecureRng::from_os();
    let e = DeviceEnrollment::<G>::new(&params(), ids, &mut rng).unwrap();
    let issued = ca
        .enroll(e.request(), &|_| true, &mut MemoryRegistry::new(), now() - 5, &mut rng)
        .unwrap();
    (
        Arc::new(e.finish(issued, &ca.public_key(), now()).unwrap()),
        Arc::new(AddressBook::new(book)),
    )
}

fn set_soft_limit(n: u64) {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let cur = getrlimit(Resource::Nofile);
    setrlimit(
        Resource::Nofile,
        Rlimit {
            current: Some(n),
            maximum: cur.maximum,
        },
    )
    .unwrap();
}

fn highest_descriptor() -> u64 {
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u64>().ok())
        .max()
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_connection_flood_does_not_end_the_receiver() {
    let ca = CertificateAuthority::generate(&mut SecureRng::from_os()).unwrap();
    let (alice_id, alice_book) = device(&ca, &["alice@example.com"], &["bob@example.com"]);
    let (bob_id, bob_book) = device(&ca, &["bob@example.com"], &["alice@example.com"]);
    let events = Arc::new(Mutex::new(Vec::<String>::new()));
    let ev = events.clone();
    let supply_book = bob_book.clone();
    let cfg = Arc::new(ReceiverConfig {
        identity: bob_id.clone(),
        book: bob_book.clone(),
        ca: ca.public_key(),
        revocations: Revocations::new(),
        mode: Discoverability::ContactsOnly,
        name: "receiver".into(),
        dir: std::env::temp_dir(),
        legacy: false,
        limits: Limits::default(),
        supply: BookSupply::spawn(move || supply_book.fresh_sender::<G>(&params()), 1),
        decide: Arc::new(|_| false),
        events: Arc::new(move |e: Event| ev.lock().unwrap().push(format!("{e:?}"))),
        capture: None,
    });
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let receiver = tokio::spawn(transport::serve(listener, cfg, None));

    // The flood's sockets are made first, so that they hold the low descriptor
    // numbers; then the limit drops to just above what is open now: the receiver's
    // accept has no descriptor left (a descriptor's number must be under the limit).
    let mut flood = Vec::new();
    for _ in 0..120 {
        let s = tokio::net::TcpSocket::new_v4().unwrap();
        s.bind("127.0.0.2:0".parse().unwrap()).unwrap();
        flood.push(s);
    }
    let high = highest_descriptor();
    set_soft_limit(high + 1);
    // Fill every free number under the limit too.
    let mut fillers = Vec::new();
    while let Ok(f) = std::fs::File::open("/dev/null") {
        fillers.push(f);
    }
    assert!(std::fs::File::open("/dev/null").is_err());
    let mut idle = Vec::new();
    for s in flood {
        // (A receiver that ended resets the rest.)
        if let Ok(c) = s.connect(addr).await {
            idle.push(c);
        }
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !receiver.is_finished(),
        "the receiver ended: {:?}",
        receiver.await.map(|r| r.map_err(|e| e.to_string()))
    );
    // Free the lowest 60 descriptor numbers: the receiver accepts again, the flood's
    // address gets its share and no more, and an honest sender gets through.
    let rest = idle.split_off(idle.len().min(60));
    drop(idle);
    drop(fillers);
    let alice = Arc::new(SenderConfig {
        identity: alice_id,
        book: alice_book.clone(),
        ca: ca.public_key(),
        revocations: Revocations::new(),
        name: "sender".into(),
        limits: Limits::default(),
        events: Arc::new(|_| {}),
    });
    let session = tokio::time::timeout(
        Duration::from_secs(8),
        transport::authenticate(
            &addr.to_string(),
            alice,
            alice_book.fresh_sender::<G>(&params()).unwrap(),
        ),
    )
    .await
    .expect("the honest sender waited past 8 s")
    .expect("the honest sender was refused");
    assert!(matches!(session.outcome.receiver, Peer::Contact { .. }));
    assert!(!receiver.is_finished());
    drop(rest);
    set_soft_limit(high + 4096);
    receiver.abort();
}
