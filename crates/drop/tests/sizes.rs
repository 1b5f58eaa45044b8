//! Issue 32, item 3: what a network observer learns from message sizes.
//!
//! TLS hides content, not lengths. M3 used to carry the receiver's validation record
//! only when DO2 matched and `Ask` the sender's only when DO3 matched, so a relay that
//! counts bytes learned both bits (10 292 against 10 423 bytes server → client in the
//! review), and the device names' lengths too. This test is that relay: for every
//! combination of who holds whom, in both discoverability modes, with device names
//! of different lengths, the bytes in each direction must be equal.

use std::net::SocketAddr;
use std::sync::Arc;
use tacit_crypto::Ristretto255;
use tacit_crypto::rng::SecureRng;
use tacit_drop::DropParams;
use tacit_drop::ca::{CertificateAuthority, DeviceEnrollment, DropIdentity, MemoryRegistry};
use tacit_drop::protocol::{AddressBook, Discoverability, FileOffer};
use tacit_drop::revocation::Revocations;
use tacit_drop::transport::{self, BookSupply, Limits, ReceiverConfig, SenderConfig};
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

fn identity(ca: &CertificateAuthority, ids: &[&str]) -> Arc<DropIdentity<G>> {
    let mut rng = SecureRng::from_os();
    let e = DeviceEnrollment::<G>::new(&params(), ids, &mut rng).unwrap();
    let issued = ca
        .enroll(e.request(), &|_| true, &mut MemoryRegistry::new(), now() - 5, &mut rng)
        .unwrap();
    Arc::new(e.finish(issued, &ca.public_key(), now()).unwrap())
}

/// A TCP relay to `target` that reports `(client → server, server → client)` bytes of
/// each connection when it ends.
async fn counting_relay(target: SocketAddr) -> (SocketAddr, tokio::sync::mpsc::UnboundedReceiver<(u64, u64)>) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((mut client, _)) = l.accept().await {
            let tx = tx.clone();
            tokio::spawn(async move {
                let mut server = tokio::net::TcpStream::connect(target).await.unwrap();
                let counts = tokio::io::copy_bidirectional(&mut client, &mut server)
                    .await
                    .unwrap_or((0, 0));
                let _ = tx.send(counts);
            });
        }
    });
    (addr, rx)
}

/// One authentication and a declined `Ask` through the relay: the bytes each way.
async fn observed(
    ca: &CertificateAuthority,
    (alice, bob): (&Arc<DropIdentity<G>>, &Arc<DropIdentity<G>>),
    (sender_knows, receiver_knows): (bool, bool),
    mode: Discoverability,
    (sender_name, receiver_name): (&str, &str),
) -> (u64, u64) {
    let stranger = "carol@example.com";
    let alice_book = Arc::new(AddressBook::new(&[if sender_knows {
        "bob@example.com"
    } else {
        stranger
    }]));
    let bob_book = Arc::new(AddressBook::new(&[if receiver_knows {
        "alice@example.com"
    } else {
        stranger
    }]));
    let supply_book = bob_book.clone();
    let cfg = Arc::new(ReceiverConfig {
        identity: bob.clone(),
        book: bob_book,
        ca: ca.public_key(),
        revocations: Revocations::new(),
        mode,
        name: receiver_name.into(),
        dir: std::env::temp_dir(),
        legacy: false,
        limits: Limits::default(),
        supply: BookSupply::spawn(move || supply_book.fresh_sender::<G>(&params()), 1),
        decide: Arc::new(|_| false),
        events: Arc::new(|_| {}),
        capture: None,
    });
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let target = l.local_addr().unwrap();
    let receiver = tokio::spawn(transport::serve(l, cfg, Some(1)));
    let (relay, mut counts) = counting_relay(target).await;
    let sender = Arc::new(SenderConfig {
        identity: alice.clone(),
        book: alice_book.clone(),
        ca: ca.public_key(),
        revocations: Revocations::new(),
        name: sender_name.into(),
        limits: Limits::default(),
        events: Arc::new(|_| {}),
    });
    let mut session = transport::authenticate(
        &relay.to_string(),
        sender,
        alice_book.fresh_sender::<G>(&params()).unwrap(),
    )
    .await
    .unwrap();
    assert_eq!(!session.outcome.known_by_receiver.is_empty(), receiver_knows);
    let offer = FileOffer {
        name: "holiday.jpg".into(),
        size: 1000,
        media_type: "image/jpeg".into(),
        sha256: [7; 32],
    };
    // Declined either way (by the user, or as a non-contact in contacts-only mode).
    let _ = session.ask(&[offer]).await;
    drop(session);
    let c = tokio::time::timeout(std::time::Duration::from_secs(10), counts.recv())
        .await
        .unwrap()
        .unwrap();
    receiver.await.unwrap().unwrap();
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn message_sizes_do_not_say_who_holds_whom() {
    let ca = CertificateAuthority::generate(&mut SecureRng::from_os()).unwrap();
    let alice = identity(&ca, &["alice@example.com"]);
    let bob = identity(&ca, &["bob@example.com"]);
    let names = [
        ("s", "r"),
        ("a sender's device", "kitchen"),
        ("x", "a rather long receiver name"),
    ];
    for mode in [Discoverability::Everyone, Discoverability::ContactsOnly] {
        let mut seen = Vec::new();
        for (i, bits) in [(true, true), (true, false), (false, true), (false, false)]
            .into_iter()
            .enumerate()
        {
            let bytes = observed(&ca, (&alice, &bob), bits, mode, names[i % names.len()]).await;
            seen.push((bits, bytes));
        }
        let first = seen[0].1;
        assert!(
            seen.iter().all(|(_, b)| *b == first),
            "{mode:?}: bytes (client → server, server → client) by (sender knows receiver, receiver knows sender): {seen:?}"
        );
    }
}
