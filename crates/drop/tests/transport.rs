//! PrivateDrop over real loopback HTTPS with mutual TLS: authentication, file
//! transfer, refusals and limits.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use tacit_crypto::rng::SecureRng;
use tacit_drop::ca::CertificateAuthority;
use tacit_drop::protocol::{AddressBook, Discoverability, FileOffer, Peer};
use tacit_drop::revocation::{RevocationList, Revocations};
use tacit_drop::transport::{self, BookSupply, Event, Limits, ReceiverConfig, SenderConfig};
use tokio::net::TcpListener;

mod common;
use common::*;

struct Receiver {
    addr: String,
    dir: PathBuf,
    events: Arc<Mutex<Vec<String>>>,
    /// The running receiver's revocation state (shared: updating it reaches it).
    revocations: Revocations,
    task: tokio::task::JoinHandle<tacit_drop::Result<()>>,
}

async fn start_receiver(
    ca: &CertificateAuthority,
    d: &Device,
    mode: Discoverability,
    legacy: bool,
    tag: &str,
    sessions: u64,
) -> Receiver {
    start_receiver_with(ca, d, mode, legacy, tag, sessions, Limits::default()).await
}

async fn start_receiver_with(
    ca: &CertificateAuthority,
    d: &Device,
    mode: Discoverability,
    legacy: bool,
    tag: &str,
    sessions: u64,
    limits: Limits,
) -> Receiver {
    start_receiver_revoking(ca, d, (mode, legacy), tag, sessions, limits, Revocations::new()).await
}

async fn start_receiver_revoking(
    ca: &CertificateAuthority,
    d: &Device,
    (mode, legacy): (Discoverability, bool),
    tag: &str,
    sessions: u64,
    limits: Limits,
    revocations: Revocations,
) -> Receiver {
    let dir = tmpdir(tag);
    let events = Arc::new(Mutex::new(Vec::new()));
    let ev = events.clone();
    let book = d.book.clone();
    let cfg = Arc::new(ReceiverConfig {
        identity: d.identity.clone(),
        book: d.book.clone(),
        ca: ca.public_key(),
        revocations: revocations.clone(),
        mode,
        name: "receiver".into(),
        dir: dir.clone(),
        legacy,
        limits,
        supply: BookSupply::spawn(move || book_sender(&book), 1),
        decide: Arc::new(|_| true),
        events: Arc::new(move |e: Event| ev.lock().unwrap().push(format!("{e:?}"))),
        capture: None,
    });
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let task = tokio::spawn(transport::serve(l, cfg, Some(sessions)));
    Receiver {
        addr,
        dir,
        events,
        revocations,
        task,
    }
}

fn sender_cfg(ca: &CertificateAuthority, d: &Device) -> Arc<SenderConfig<G>> {
    Arc::new(SenderConfig {
        identity: d.identity.clone(),
        book: d.book.clone(),
        ca: ca.public_key(),
        revocations: Revocations::new(),
        name: "sender".into(),
        limits: Limits::default(),
        events: Arc::new(|_| {}),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_contacts_transfer_a_file() {
    let ca = CertificateAuthority::generate(&mut SecureRng::from_os()).unwrap();
    let alice = device(&ca, &["alice@example.com"], &["bob@example.com"]);
    let bob = device(&ca, &["bob@example.com"], &["alice@example.com"]);
    let r = start_receiver(&ca, &bob, Discoverability::ContactsOnly, false, "ok", 1).await;
    let src = tmpdir("src").join("hello.txt");
    std::fs::write(&src, b"hello, bob").unwrap();
    let offer = transport::offer_for(&src).await.unwrap();
    assert_eq!(offer.media_type, "text/plain");
    assert_eq!(offer.size, 10);
    let mut s = transport::authenticate(&r.addr, sender_cfg(&ca, &alice), book_sender(&alice.book).unwrap())
        .await
        .unwrap();
    assert_eq!(
        s.outcome.receiver,
        Peer::Contact {
            identifier: "bob@example.com".into()
        }
    );
    assert!(s.ask(std::slice::from_ref(&offer)).await.unwrap());
    let stored = s.upload(0, &src, &offer).await.unwrap();
    assert_eq!(stored, "hello.txt");
    // issue 9, defect 4: the accepted file cannot be uploaded a second time (each
    // repeat used to store another copy, so one accepted offer could fill the disk)
    let again = s.upload(0, &src, &offer).await.unwrap_err();
    assert!(
        again.to_string().contains("409") && again.to_string().contains("already uploaded"),
        "{again}"
    );
    drop(s);
    r.task.await.unwrap().unwrap();
    assert_eq!(std::fs::read(r.dir.join("hello.txt")).unwrap(), b"hello, bob");
    assert_eq!(std::fs::read_dir(&r.dir).unwrap().count(), 1);
    let ev = r.events.lock().unwrap().join("\n");
    assert!(ev.contains("alice@example.com"), "{ev}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_work_first_receiver_authenticates_the_same() {
    let ca = CertificateAuthority::generate(&mut SecureRng::from_os()).unwrap();
    let alice = device(&ca, &["alice@example.com"], &["bob@example.com"]);
    let bob = device(&ca, &["bob@example.com"], &["alice@example.com"]);
    let limits = Limits {
        prepare_answer: false,
        ..Limits::default()
    };
    let r = start_receiver_with(&ca, &bob, Discoverability::ContactsOnly, false, "wf", 1, limits).await;
    let mut s = transport::authenticate(&r.addr, sender_cfg(&ca, &alice), book_sender(&alice.book).unwrap())
        .await
        .unwrap();
    assert!(matches!(s.outcome.receiver, tacit_drop::protocol::Peer::Contact { .. }));
    assert!(s.outcome.ask_record.is_some());
    s.ask(&[]).await.unwrap();
    drop(s);
    r.task.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_non_contact_is_refused_and_gets_nothing() {
    let ca = CertificateAuthority::generate(&mut SecureRng::from_os()).unwrap();
    let mallory = device(&ca, &["mallory@example.com"], &["bob@example.com"]);
    let bob = device(&ca, &["bob@example.com"], &["alice@example.com"]);
    let r = start_receiver(&ca, &bob, Discoverability::ContactsOnly, false, "nc", 1).await;
    let mut s = transport::authenticate(&r.addr, sender_cfg(&ca, &mallory), book_sender(&mallory.book).unwrap())
        .await
        .unwrap();
    // Mallory has Bob's address, so DO2 matches and Bob shows one record of an
    // identifier Mallory already holds; Bob does not know Mallory: Ask is refused,
    // with the same answer as a decline (issue 32: its size must not say why).
    assert!(s.outcome.ask_record.is_none());
    assert!(!s.ask(&[]).await.unwrap());
    drop(s);
    r.task.await.unwrap().unwrap();
    let events = r.events.lock().unwrap().clone();
    assert!(events.iter().any(|e| e.contains("accepts contacts only")), "{events:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corrupted_or_truncated_uploads_are_rejected_and_removed() {
    let ca = CertificateAuthority::generate(&mut SecureRng::from_os()).unwrap();
    let alice = device(&ca, &["alice@example.com"], &["bob@example.com"]);
    let bob = device(&ca, &["bob@example.com"], &["alice@example.com"]);
    let r = start_receiver(&ca, &bob, Discoverability::ContactsOnly, false, "bad", 1).await;
    let src = tmpdir("src2").join("data.bin");
    std::fs::write(&src, vec![7u8; 200_000]).unwrap();
    let mut offer = transport::offer_for(&src).await.unwrap();
    let mut s = transport::authenticate(&r.addr, sender_cfg(&ca, &alice), book_sender(&alice.book).unwrap())
        .await
        .unwrap();
    offer.sha256[0] ^= 1; // the offer's hash does not match the content
    assert!(s.ask(std::slice::from_ref(&offer)).await.unwrap());
    let err = s.upload(0, &src, &offer).await.unwrap_err();
    assert!(err.to_string().contains("422"), "{err}");
    drop(s);
    r.task.await.unwrap().unwrap();
    let left: Vec<_> = std::fs::read_dir(&r.dir).unwrap().collect();
    assert!(left.is_empty(), "nothing may remain: {left:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_discover_works_between_contacts() {
    let ca = CertificateAuthority::generate(&mut SecureRng::from_os()).unwrap();
    let alice = device(&ca, &["alice@example.com"], &["bob@example.com"]);
    let bob = device(&ca, &["bob@example.com"], &["alice@example.com"]);
    let r = start_receiver(&ca, &bob, Discoverability::ContactsOnly, true, "legacy", 1).await;
    let (peer, name, _) = transport::legacy_discover(&r.addr, sender_cfg(&ca, &alice))
        .await
        .unwrap();
    assert_eq!(
        peer,
        Peer::Contact {
            identifier: "bob@example.com".into()
        }
    );
    assert_eq!(name, "receiver");
    r.task.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_from_another_ca_cannot_even_connect() {
    let ca = CertificateAuthority::generate(&mut SecureRng::from_os()).unwrap();
    let rogue = CertificateAuthority::generate(&mut SecureRng::from_os()).unwrap();
    let eve = device(&rogue, &["eve@example.com"], &["bob@example.com"]);
    let bob = device(&ca, &["bob@example.com"], &["alice@example.com"]);
    let r = start_receiver(&ca, &bob, Discoverability::Everyone, false, "rogue", 1).await;
    let err = transport::authenticate(&r.addr, sender_cfg(&rogue, &eve), book_sender(&eve.book).unwrap()).await;
    assert!(err.is_err());
    r.task.await.unwrap().unwrap();
}

/// Issue 10: a revoked device is refused by a receiver right after TLS (PrivateDrop
/// and the legacy flow), and a sender that holds the list sends a revoked receiver
/// nothing. The list reaches a receiver that is already running.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_device_is_refused_by_receivers_and_senders() {
    let ca = CertificateAuthority::generate(&mut SecureRng::from_os()).unwrap();
    let alice = device(&ca, &["alice@example.com"], &["bob@example.com"]);
    let bob = device(&ca, &["bob@example.com"], &["alice@example.com"]);
    let r = start_receiver(&ca, &bob, Discoverability::Everyone, true, "revoked", 3).await;
    let s = transport::authenticate(&r.addr, sender_cfg(&ca, &alice), book_sender(&alice.book).unwrap())
        .await
        .unwrap();
    assert!(matches!(s.outcome.receiver, Peer::Contact { .. }));
    drop(s);

    // Alice's phone is lost: the CA revokes her account; Bob's running receiver
    // installs the list.
    let list = ca
        .sign_revocation_list(RevocationList::new(1, now(), now() + 3600, [alice.identity.account]).unwrap())
        .verify(&ca.public_key())
        .unwrap();
    r.revocations.update(list.clone()).unwrap();
    let before = r.events.lock().unwrap().len();
    assert!(
        transport::authenticate(&r.addr, sender_cfg(&ca, &alice), book_sender(&alice.book).unwrap())
            .await
            .is_err()
    );
    assert!(
        transport::legacy_discover(&r.addr, sender_cfg(&ca, &alice))
            .await
            .is_err()
    );
    r.task.await.unwrap().unwrap();
    let events = r.events.lock().unwrap()[before..].to_vec();
    let revoked = format!(
        "account {} is revoked by the certification authority",
        alice.identity.account
    );
    assert_eq!(events.iter().filter(|e| e.contains(&revoked)).count(), 2, "{events:?}");
    assert!(!events.iter().any(|e| e.contains("Authenticated")), "{events:?}");

    // Bob as the sender, with the list, meets Alice's receiver: he stops before
    // sending anything (Alice's receiver sees a connection and no request).
    let ra = start_receiver(&ca, &alice, Discoverability::Everyone, false, "revoked-r", 1).await;
    let cfg = Arc::new(SenderConfig {
        identity: bob.identity.clone(),
        book: bob.book.clone(),
        ca: ca.public_key(),
        revocations: {
            let r = Revocations::new();
            r.update(list).unwrap();
            r
        },
        name: "sender".into(),
        limits: Limits::default(),
        events: Arc::new(|_| {}),
    });
    let e = match transport::authenticate(&ra.addr, cfg, book_sender(&bob.book).unwrap()).await {
        Err(e) => e.to_string(),
        Ok(_) => panic!("authenticated a revoked receiver"),
    };
    assert_eq!(e, revoked);
    ra.task.await.unwrap().unwrap();
    let events = ra.events.lock().unwrap().clone();
    assert!(!events.iter().any(|e| e.contains("Authenticated")), "{events:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversize_malformed_out_of_order_and_slow_requests_are_refused() {
    let ca = CertificateAuthority::generate(&mut SecureRng::from_os()).unwrap();
    let alice = device(&ca, &["alice@example.com"], &["bob@example.com"]);
    let bob = device(&ca, &["bob@example.com"], &["alice@example.com"]);
    let limits = Limits {
        read_timeout: std::time::Duration::from_millis(500),
        ..Limits::default()
    };
    let r = start_receiver_with(&ca, &bob, Discoverability::Everyone, false, "limits", 4, limits).await;
    // an oversize body is refused from its Content-Length: 413
    let big = raw(
        &r.addr,
        &alice,
        "POST /StartPSI HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n",
        &[0; 5000],
        false,
    )
    .await
    .unwrap();
    assert!(big.starts_with("HTTP/1.1 413"), "{big}");
    // a malformed body: 400 with a reason
    let bad = raw(
        &r.addr,
        &alice,
        "POST /StartPSI HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\n",
        b"junk",
        false,
    )
    .await
    .unwrap();
    assert!(bad.starts_with("HTTP/1.1 400"), "{bad}");
    assert!(bad.contains("malformed message"), "{bad}");
    // a request out of order: 409
    let early = raw(
        &r.addr,
        &alice,
        "POST /Ask HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
        b"",
        false,
    )
    .await
    .unwrap();
    assert!(early.starts_with("HTTP/1.1 409"), "{early}");
    // a client that never finishes its headers is cut off
    let slow = raw(&r.addr, &alice, "POST /StartPSI HTTP/1.1\r\nHost: x\r\n", b"", true).await;
    assert!(slow.map(|s| !s.starts_with("HTTP/1.1 200")).unwrap_or(true));
    r.task.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_upload_leaves_no_partial_file() {
    let ca = CertificateAuthority::generate(&mut SecureRng::from_os()).unwrap();
    let alice = device(&ca, &["alice@example.com"], &["bob@example.com"]);
    let bob = device(&ca, &["bob@example.com"], &["alice@example.com"]);
    let r = start_receiver(&ca, &bob, Discoverability::ContactsOnly, false, "cut", 1).await;
    let src = tmpdir("src3").join("big.bin");
    std::fs::write(&src, vec![1u8; 300_000]).unwrap();
    let mut offer = transport::offer_for(&src).await.unwrap();
    // The sender announces more bytes than it has: the stream ends early.
    offer.size += 1_000_000;
    let mut s = transport::authenticate(&r.addr, sender_cfg(&ca, &alice), book_sender(&alice.book).unwrap())
        .await
        .unwrap();
    assert!(s.ask(std::slice::from_ref(&offer)).await.unwrap());
    assert!(s.upload(0, &src, &offer).await.is_err());
    drop(s);
    r.task.await.unwrap().unwrap();
    let left: Vec<_> = std::fs::read_dir(&r.dir).unwrap().collect();
    assert!(left.is_empty(), "nothing may remain: {left:?}");
}

/// Issue 9, defect 4: offered sizes are capped by the receiver and checked against
/// its free space.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offers_over_the_receivers_limits_or_free_space_are_refused() {
    let ca = CertificateAuthority::generate(&mut SecureRng::from_os()).unwrap();
    let alice = device(&ca, &["alice@example.com"], &["bob@example.com"]);
    let bob = device(&ca, &["bob@example.com"], &["alice@example.com"]);
    let limits = Limits {
        max_file: 1000,
        max_offer: 1500,
        ..Limits::default()
    };
    let r = start_receiver_with(&ca, &bob, Discoverability::ContactsOnly, false, "limits", 3, limits).await;
    let src = tmpdir("src-limits").join("a.bin");
    std::fs::write(&src, vec![1u8; 800]).unwrap();
    let offer = transport::offer_for(&src).await.unwrap();
    let huge = tacit_drop::protocol::FileOffer {
        size: u64::MAX / 2,
        ..offer.clone()
    };
    for (files, why) in [
        (vec![huge.clone()], "takes files up to 1000 bytes"),
        (vec![offer.clone(), offer.clone()], "takes up to 1500 bytes at once"),
    ] {
        let mut s = transport::authenticate(&r.addr, sender_cfg(&ca, &alice), book_sender(&alice.book).unwrap())
            .await
            .unwrap();
        let e = s.ask(&files).await.unwrap_err().to_string();
        assert!(e.contains("413") && e.contains(why), "{e}");
    }
    // free space: an offer within the size caps but beyond the disk is refused too
    let free = transport::free_space(&r.dir).unwrap();
    let unlimited = Limits {
        max_file: u64::MAX,
        max_offer: u64::MAX,
        ..Limits::default()
    };
    assert!(
        transport::check_offer(
            &[FileOffer {
                size: free,
                ..offer.clone()
            }],
            &unlimited,
            &r.dir
        )
        .unwrap_err()
        .contains("free space")
    );
    let mut s = transport::authenticate(&r.addr, sender_cfg(&ca, &alice), book_sender(&alice.book).unwrap())
        .await
        .unwrap();
    assert!(s.ask(std::slice::from_ref(&offer)).await.unwrap());
    s.upload(0, &src, &offer).await.unwrap();
    drop(s);
    r.task.await.unwrap().unwrap();
}

/// Issue 9, defect 6: a receiver that stops answering cannot hold the sender.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalling_receiver_cannot_hold_the_sender() {
    let ca = CertificateAuthority::generate(&mut SecureRng::from_os()).unwrap();
    let alice = device(&ca, &["alice@example.com"], &["bob@example.com"]);
    let bob = device(&ca, &["bob@example.com"], &["alice@example.com"]);
    // A receiver that accepts TLS and then never answers.
    let tls = tacit_net::tls::MutualTls::new(
        &bob.identity.account_cert,
        bob.identity.tls_key.pkcs8_der(),
        &bob.identity.root_cert,
    )
    .unwrap()
    .server_config()
    .unwrap();
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let hold = tokio::spawn(async move {
        let (tcp, _) = l.accept().await.unwrap();
        let tls = tacit_net::tls::TlsAcceptor::from(tls).accept(tcp).await.unwrap();
        tokio::time::sleep(std::time::Duration::from_secs(30)).await;
        drop(tls);
    });
    let cfg = Arc::new(SenderConfig {
        identity: alice.identity.clone(),
        book: alice.book.clone(),
        ca: ca.public_key(),
        revocations: Revocations::new(),
        name: "sender".into(),
        limits: Limits {
            read_timeout: std::time::Duration::from_millis(500),
            ..Limits::default()
        },
        events: Arc::new(|_| {}),
    });
    let e = match transport::authenticate(&addr, cfg, book_sender(&alice.book).unwrap()).await {
        Err(e) => e.to_string(),
        Ok(_) => panic!("authenticated against a silent receiver"),
    };
    assert!(e.contains("did not answer within"), "{e}");
    hold.abort();
}

/// Issue 9, defect 6: file names lose directories, control characters and invisible
/// or bidirectional format characters before they reach the disk.
#[test]
fn received_file_names_are_cleaned() {
    assert_eq!(transport::safe_file_name("../../etc/passwd"), "passwd");
    assert_eq!(transport::safe_file_name("report\u{202E}fdp.exe"), "reportfdp.exe");
    assert_eq!(transport::safe_file_name("a\u{1b}[2Jb\u{200B}.txt"), "a[2Jb.txt");
    assert_eq!(transport::safe_file_name("\u{202E}"), "received-file");
    assert_eq!(transport::safe_file_name(".hidden"), "hidden");
}

/// Issue 32, item 4: `/StartPSI` took a precomputation of the address book (and
/// started the next one: about 0.3 s at n = 10 000) before it parsed and checked the
/// request, even with discoverability off, and without any rate. Now the request is
/// checked first, and one account gets a bounded number of `StartPSI` per minute.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_psi_spends_no_precomputation_before_the_request_is_checked() {
    let ca = CertificateAuthority::generate(&mut SecureRng::from_os()).unwrap();
    let alice = device(&ca, &["alice@example.com"], &["bob@example.com"]);
    let bob = device(&ca, &["bob@example.com"], &["alice@example.com"]);
    let body = start_body(&ca, &alice, &bob);
    let head = |len: usize| {
        format!("POST /StartPSI HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {len}\r\n\r\n")
    };
    // Discoverability off: valid requests are refused, and cost no precomputation.
    let (r, supply) = start_counting_receiver(&ca, &bob, Discoverability::Off, "off", 5).await;
    for _ in 0..5 {
        let resp = raw(&r.addr, &alice, &head(body.len()), &body, false).await.unwrap();
        assert!(resp.starts_with("HTTP/1.1 403"), "{resp}");
    }
    r.task.await.unwrap().unwrap();
    assert_eq!(spent(&supply).await, 0, "precomputations spent");
    // Malformed requests: the same.
    let (r, supply) = start_counting_receiver(&ca, &bob, Discoverability::ContactsOnly, "junk", 5).await;
    for _ in 0..5 {
        let resp = raw(&r.addr, &alice, &head(4), b"junk", false).await.unwrap();
        assert!(resp.starts_with("HTTP/1.1 400"), "{resp}");
    }
    r.task.await.unwrap().unwrap();
    assert_eq!(spent(&supply).await, 0, "precomputations spent");
    // An enrolled peer repeating valid StartPSI requests: the first `burst` cost one
    // precomputation each, the rest are refused with 429 and cost nothing.
    let burst = Limits::default().start_psi_per_minute as usize;
    let n = burst + 6;
    let (r, supply) = start_counting_receiver(&ca, &bob, Discoverability::ContactsOnly, "rate", n as u64).await;
    let mut statuses = Vec::new();
    for _ in 0..n {
        let resp = raw(&r.addr, &alice, &head(body.len()), &body, false).await.unwrap();
        statuses.push(resp.get(9..12).unwrap_or("").to_string());
    }
    r.task.await.unwrap().unwrap();
    assert_eq!(statuses.iter().filter(|s| *s == "200").count(), burst, "{statuses:?}");
    assert_eq!(
        statuses.iter().filter(|s| *s == "429").count(),
        n - burst,
        "{statuses:?}"
    );
    assert_eq!(spent(&supply).await, burst as u64);
}

/// A receiver and its address-book supply (whose `made()` counts precomputations).
async fn start_counting_receiver(
    ca: &CertificateAuthority,
    d: &Device,
    mode: Discoverability,
    tag: &str,
    sessions: u64,
) -> (Receiver, Arc<BookSupply<G>>) {
    let dir = tmpdir(tag);
    let events = Arc::new(Mutex::new(Vec::new()));
    let ev = events.clone();
    let book = d.book.clone();
    let revocations = Revocations::new();
    let supply = BookSupply::spawn(move || book_sender(&book), 1);
    let cfg = Arc::new(ReceiverConfig {
        identity: d.identity.clone(),
        book: d.book.clone(),
        ca: ca.public_key(),
        revocations: revocations.clone(),
        mode,
        name: "receiver".into(),
        dir: dir.clone(),
        legacy: false,
        limits: Limits::default(),
        supply: supply.clone(),
        decide: Arc::new(|_| true),
        events: Arc::new(move |e: Event| ev.lock().unwrap().push(format!("{e:?}"))),
        capture: None,
    });
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let task = tokio::spawn(transport::serve(l, cfg, Some(sessions)));
    (
        Receiver {
            addr,
            dir,
            events,
            revocations,
            task,
        },
        supply,
    )
}

/// Precomputations a supply handed out (it keeps one ready beyond those).
async fn spent(supply: &BookSupply<G>) -> u64 {
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    supply.made() - supply.ready() as u64
}

/// Issue 32, item 2: under the refuse policy a device whose revocation list is past
/// its next update (or missing) talks to no peer, as receiver or as sender; under
/// the default (warn) it goes on. A current list lifts the refusal at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_revocation_list_refuses_peers_only_under_the_refuse_policy() {
    use tacit_drop::revocation::StalePolicy;
    let ca = CertificateAuthority::generate(&mut SecureRng::from_os()).unwrap();
    let alice = device(&ca, &["alice@example.com"], &["bob@example.com"]);
    let bob = device(&ca, &["bob@example.com"], &["alice@example.com"]);
    let list = |seq: u64, next: u64| {
        ca.sign_revocation_list(RevocationList::new(seq, now() - 7200, next, []).unwrap())
            .verify(&ca.public_key())
            .unwrap()
    };
    let stale = Revocations::new().with_stale_policy(StalePolicy::Refuse);
    stale.update(list(1, now() - 60)).unwrap();
    let r = start_receiver_revoking(
        &ca,
        &bob,
        (Discoverability::Everyone, false),
        "stale",
        2,
        Limits::default(),
        stale.clone(),
    )
    .await;
    let e = match transport::authenticate(&r.addr, sender_cfg(&ca, &alice), book_sender(&alice.book).unwrap()).await {
        Err(e) => e.to_string(),
        Ok(_) => panic!("a receiver with a stale list under the refuse policy authenticated a sender"),
    };
    assert!(!e.is_empty());
    // A current list reaches the running receiver: it serves again.
    stale.update(list(2, now() + 3600)).unwrap();
    let s = transport::authenticate(&r.addr, sender_cfg(&ca, &alice), book_sender(&alice.book).unwrap())
        .await
        .unwrap();
    drop(s);
    r.task.await.unwrap().unwrap();
    let events = r.events.lock().unwrap().clone();
    assert!(
        events.iter().any(|e| e.contains("(number 1) was due to be replaced")),
        "{events:?}"
    );
    // The sender side: refused before anything is sent under refuse, fine under warn.
    for (policy, ok) in [(StalePolicy::Refuse, false), (StalePolicy::Warn, true)] {
        let ra = start_receiver(&ca, &bob, Discoverability::Everyone, false, "stale-s", 1).await;
        let revocations = Revocations::new().with_stale_policy(policy);
        revocations.update(list(1, now() - 60)).unwrap();
        let cfg = Arc::new(SenderConfig {
            identity: alice.identity.clone(),
            book: alice.book.clone(),
            ca: ca.public_key(),
            revocations,
            name: "sender".into(),
            limits: Limits::default(),
            events: Arc::new(|_| {}),
        });
        let got = transport::authenticate(&ra.addr, cfg, book_sender(&alice.book).unwrap()).await;
        assert_eq!(got.is_ok(), ok, "{policy:?}: {:?}", got.as_ref().err());
        if let Err(e) = got {
            assert!(
                e.to_string().contains("refuses peers until it has a current one"),
                "{e}"
            );
        }
        ra.task.abort();
    }
}

/// Review of issue 32: a sender makes its address-book precomputation for a receiver
/// only after TLS succeeded with an account certificate of its CA, so fake mDNS
/// advertisements (an address that closes the connection, a device of another CA)
/// cost it a connection each, not a precomputation; an honest receiver gets exactly
/// one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sender_precomputes_only_for_a_receiver_of_its_ca() {
    let ca = CertificateAuthority::generate(&mut SecureRng::from_os()).unwrap();
    let rogue = CertificateAuthority::generate(&mut SecureRng::from_os()).unwrap();
    let alice = device(&ca, &["alice@example.com"], &["bob@example.com"]);
    let mallory = device(&rogue, &["bob@example.com"], &["alice@example.com"]);
    let bob = device(&ca, &["bob@example.com"], &["alice@example.com"]);
    let made = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counting = |book: Arc<AddressBook>| {
        let made = made.clone();
        move || {
            made.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            book_sender(&book)
        }
    };
    // An address that accepts and closes at once.
    let closer = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let closer_addr = closer.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        while let Ok((c, _)) = closer.accept().await {
            drop(c);
        }
    });
    let r = transport::authenticate_with(&closer_addr, sender_cfg(&ca, &alice), counting(alice.book.clone())).await;
    assert!(r.is_err());
    // A receiver whose certificate comes from another CA.
    let m = start_receiver(&rogue, &mallory, Discoverability::Everyone, false, "rogue-rx", 1).await;
    let r = transport::authenticate_with(&m.addr, sender_cfg(&ca, &alice), counting(alice.book.clone())).await;
    assert!(r.is_err());
    assert_eq!(
        made.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "precomputed for a fake receiver"
    );
    m.task.abort();
    // The honest receiver: one precomputation.
    let r = start_receiver(&ca, &bob, Discoverability::Everyone, false, "honest-rx", 1).await;
    let s = transport::authenticate_with(&r.addr, sender_cfg(&ca, &alice), counting(alice.book.clone()))
        .await
        .unwrap();
    assert!(matches!(s.outcome.receiver, Peer::Contact { .. }));
    drop(s);
    r.task.await.unwrap().unwrap();
    assert_eq!(made.load(std::sync::atomic::Ordering::SeqCst), 1);
}
