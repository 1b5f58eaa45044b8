//! PrivateDrop attacked as a network observer (from the adversarial review after
//! issue 32).
//!
//! `docs/drop.md` claims: "A byte-counting relay sees the same byte counts in both
//! directions for all four combinations of 'the sender holds the receiver' and 'the
//! receiver holds the sender', in both discoverability modes", and "/Ask answers
//! `accepted` or `declined` padded to one length". These tests play the relay.

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

/// One authentication and one `Ask` offering `offer` through the relay, the receiver
/// (contacts-only) declining whatever it may decline: the bytes each way.
async fn observed(
    ca: &CertificateAuthority,
    (alice, bob): (&Arc<DropIdentity<G>>, &Arc<DropIdentity<G>>),
    receiver_knows: bool,
    offer: FileOffer,
    limits: Limits,
) -> (u64, u64) {
    let alice_book = Arc::new(AddressBook::new(&["bob@example.com"]));
    let bob_book = Arc::new(AddressBook::new(&[if receiver_knows {
        "alice@example.com"
    } else {
        "carol@example.com"
    }]));
    let supply_book = bob_book.clone();
    let cfg = Arc::new(ReceiverConfig {
        identity: bob.clone(),
        book: bob_book,
        ca: ca.public_key(),
        revocations: Revocations::new(),
        mode: Discoverability::ContactsOnly,
        name: "kitchen".into(),
        dir: std::env::temp_dir(),
        legacy: false,
        limits,
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
        name: "phone".into(),
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
    let _ = session.ask(&[offer]).await;
    drop(session);
    let c = tokio::time::timeout(std::time::Duration::from_secs(10), counts.recv())
        .await
        .unwrap()
        .unwrap();
    receiver.await.unwrap().unwrap();
    c
}

/// Finding: a contacts-only receiver answers `/Ask` from a sender it cannot identify
/// with the padded `declined`, but checks a contact's offer against its limits and
/// free space and answers 413 with a reason of its own length. An offer over the
/// receiver's limits (or a receiver whose disk is nearly full: the offer plus
/// 256 MiB must fit) therefore tells a byte-counting observer whether the receiver
/// holds the sender. The claim broken: `/Ask` answers have one length, and the byte
/// counts are equal whichever party holds the other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_offer_over_the_receivers_limits_does_not_say_whether_it_holds_the_sender() {
    let ca = CertificateAuthority::generate(&mut SecureRng::from_os()).unwrap();
    let alice = identity(&ca, &["alice@example.com"]);
    let bob = identity(&ca, &["bob@example.com"]);
    let offer = FileOffer {
        name: "holiday.mov".into(),
        // Over the default 4 GiB cap (as any offer is when the disk is nearly full).
        size: (4 << 30) + 1,
        media_type: "video/quicktime".into(),
        sha256: [7; 32],
    };
    let holds = observed(&ca, (&alice, &bob), true, offer.clone(), Limits::default()).await;
    let does_not = observed(&ca, (&alice, &bob), false, offer, Limits::default()).await;
    assert_eq!(
        holds, does_not,
        "bytes (client → server, server → client): receiver holds the sender {holds:?}, does not {does_not:?}"
    );
}

/// Held: an ordinary offer that the user declines and a contacts-only refusal of a
/// non-contact look the same (the padded `declined`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decline_and_a_contacts_only_refusal_look_the_same() {
    let ca = CertificateAuthority::generate(&mut SecureRng::from_os()).unwrap();
    let alice = identity(&ca, &["alice@example.com"]);
    let bob = identity(&ca, &["bob@example.com"]);
    let offer = FileOffer {
        name: "holiday.jpg".into(),
        size: 1000,
        media_type: "image/jpeg".into(),
        sha256: [7; 32],
    };
    let holds = observed(&ca, (&alice, &bob), true, offer.clone(), Limits::default()).await;
    let does_not = observed(&ca, (&alice, &bob), false, offer, Limits::default()).await;
    assert_eq!(holds, does_not);
}

/// Review of the fix above: with the offer checked before the sender is identified,
/// the free-space check answered any sender — a non-contact of a contacts-only
/// receiver too — 413 "does not fit in the receiver's free space" or not, one bit per
/// session: a binary search of the receiver's free disk space. Now a sender that is
/// not accepted gets the same `declined` whatever the offer's size within the limits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_non_contact_cannot_search_the_receivers_free_space() {
    let ca = CertificateAuthority::generate(&mut SecureRng::from_os()).unwrap();
    let alice = identity(&ca, &["alice@example.com"]);
    let bob = identity(&ca, &["bob@example.com"]);
    let unlimited = Limits {
        max_file: u64::MAX,
        max_offer: u64::MAX,
        ..Limits::default()
    };
    let free = transport::free_space(&std::env::temp_dir()).unwrap();
    let offer = |size| FileOffer {
        name: "holiday.mov".into(),
        size,
        media_type: "video/quicktime".into(),
        sha256: [7; 32],
    };
    let fits = observed(&ca, (&alice, &bob), false, offer(1000), unlimited).await;
    let too_big = observed(&ca, (&alice, &bob), false, offer(free + 1), unlimited).await;
    assert_eq!(
        fits, too_big,
        "bytes (client → server, server → client): an offer that fits {fits:?}, one beyond the free space {too_big:?}"
    );
}
