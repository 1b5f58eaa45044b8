//! The TracEdge service over TLS (`tacit_pir::tracedge::service`): the server and
//! client a product embeds, against honest and deviating peers.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tacit_crypto::sign::SigningKey;
use tacit_net::{FramedConn, FramedListener, NetConfig};
use tacit_pir::tracedge::service::{client, operator, server};
use tacit_pir::tracedge::*;
use tacit_wire::{Decode, Encode, ErrorMessage};

struct Dir(PathBuf);
impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn dir(name: &str) -> Dir {
    let d = std::env::temp_dir().join(format!("tacit-pir-service-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    Dir(d)
}

async fn start(store: &Path, open: bool) -> (String, tokio::task::JoinHandle<()>) {
    let running = server::Server::builder(store)
        .listen("127.0.0.1:0")
        .open_enrollment(open)
        .bind()
        .await
        .unwrap();
    let addr = running.local_addr().to_string();
    let h = tokio::spawn(async move {
        let _ = running.serve().await;
    });
    (addr, h)
}

fn outcome_name(o: &client::AuthOutcome) -> &'static str {
    match o {
        client::AuthOutcome::Authenticated { .. } => "authenticated",
        client::AuthOutcome::Caught(_) => "caught",
        client::AuthOutcome::NotEnrolled { .. } => "not enrolled",
        client::AuthOutcome::Refused { .. } => "refused",
    }
}

/// Issue 25, hole 4: a removal followed by a registration before the server looked
/// reused the row with no rekey, so the removed subscriber, who kept K, authenticated
/// forever. Now the freed row is not handed out before the rekey that retires it, a
/// rekey follows any change of a registered row, and the removed subscriber is told
/// "not enrolled" by the signed log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_removal_rekeys_and_its_row_waits_for_the_rekey() {
    let d = dir("removal");
    let store = d.0.join("op.sqlite3");
    let keys = operator::init(&store, 200, CommitScheme::Binding, 3600).unwrap();
    let (addr, _h) = start(&store, true).await;
    let alice = d.0.join("alice.json");
    let e = client::enroll(&addr, keys.pin, keys.server_key, "alice", &alice)
        .await
        .unwrap();
    assert_eq!(e.row, 0);
    let opts = client::AuthOptions::default();
    let r = client::authenticate(&alice, &opts).await.unwrap();
    let epoch0 = match r.outcome {
        client::AuthOutcome::Authenticated { epoch, .. } => epoch,
        o => panic!("{o:?}"),
    };
    // Remove alice and register someone at once, before the server polls.
    operator::remove(&store, 0).unwrap();
    let bob = tacit_pir::tracedge::SubscriberSecret::random(&mut rand_core::OsRng);
    let reg = operator::register(&store, &bob.public_bytes(), "bob", Duration::from_secs(10)).unwrap();
    assert_ne!(reg.row, 0, "the freed row waits for its rekey");
    assert!(reg.receipt.is_some(), "the running server signed the receipt");
    // The server rekeys.
    let mut rekeyed = false;
    for _ in 0..200 {
        let s = operator::status(&store).unwrap();
        if s.tables.iter().any(|t| t.status == "current" && t.epoch > epoch0) && s.freed_rows == 0 {
            rekeyed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(rekeyed, "a rekey followed the removal");
    // Alice is told, from the signed log, that she was removed.
    let r = client::authenticate(&alice, &opts).await.unwrap();
    assert_eq!(outcome_name(&r.outcome), "not enrolled", "{:?}", r.outcome);
}

/// A deviating TLS server that answers every Hello with `reply` and counts its
/// connections; the identity file of a subscriber of it.
async fn deviant(d: &Path, reply: Vec<u8>) -> (PathBuf, Arc<AtomicUsize>) {
    let sk = SigningKey::generate(&mut rand_core::OsRng);
    let sub = SubscriberSecret::random(&mut rand_core::OsRng);
    let empty = SubscriberSecret::random(&mut rand_core::OsRng).public_bytes();
    let receipt = EnrolmentReceipt::issue(&sk, 3, sub.public_bytes(), 100, empty, 1, 0);
    let tls = tacit_net::tls::SelfSigned::generate("tracedge.tacit.invalid").unwrap();
    let l = FramedListener::bind(
        "127.0.0.1:0",
        &NetConfig::default().speaking(tacit_net::Protocol::TracEdge),
    )
    .await
    .unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let id = client::Identity {
        connect: addr,
        pin: hex::encode(tls.fingerprint().unwrap()),
        server_key: hex::encode(sk.verifying_key().to_bytes()),
        row: Some(3),
        secret: hex::encode(&sub.to_bytes()[..]),
        receipt: Some(hex::encode(receipt.to_wire())),
    };
    let path = d.join("victim.json");
    id.create(&path).unwrap();
    let count = Arc::new(AtomicUsize::new(0));
    let c2 = count.clone();
    let cfg = tls.server_config().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok(c) = l.accept().await else { return };
            c2.fetch_add(1, Ordering::SeqCst);
            let (cfg, reply) = (cfg.clone(), reply.clone());
            tokio::spawn(async move {
                if let Ok(mut c) = c.accept_tls(cfg).await {
                    let _ = c.recv().await;
                    let _ = c.send(&reply).await;
                }
            });
        }
    });
    (path, count)
}

/// Issue 25, break 2: the client retried whenever the server's refusal contained
/// "the message is for table", giving the server several probes per `client auth`.
/// Now only typed refusals are retried, and never more often than asked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_follow_typed_refusals_only_and_as_often_as_asked() {
    let d = dir("retries");
    // The server's words, whatever they say, are never retried.
    let words = ErrorMessage::new("the message is for table 00ff; this side holds table 0011").to_wire();
    let (id, count) = deviant(&d.0, words).await;
    let opts = client::AuthOptions {
        retries: 3,
        ..Default::default()
    };
    let r = client::authenticate(&id, &opts).await.unwrap();
    assert_eq!(outcome_name(&r.outcome), "refused");
    assert_eq!(count.load(Ordering::SeqCst), 1);
    // A typed "table changed" is retried exactly `retries` times.
    let d2 = dir("retries2");
    let typed = Refusal {
        code: RefusalCode::TableChanged,
        reason: "the table changed".into(),
    }
    .to_wire();
    let (id, count) = deviant(&d2.0, typed).await;
    let r = client::authenticate(&id, &opts).await.unwrap();
    assert_eq!(outcome_name(&r.outcome), "refused");
    assert_eq!(r.sessions, 4);
    assert_eq!(count.load(Ordering::SeqCst), 4);
    let r = client::authenticate(
        &id,
        &client::AuthOptions {
            retries: 0,
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(r.sessions, 1);
    assert_eq!(count.load(Ordering::SeqCst), 5);
}

/// Issue 25, hole 6: `HintRequest` could be repeated on one connection (each cloned
/// and encoded the whole hint) and every message could be as large as the hint plus
/// 1 MiB. Now one hint per connection, and a frame before the session is at most a
/// few KB (refused before it is read).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_hint_per_connection_and_frames_bounded_per_step() {
    let d = dir("hint");
    let store = d.0.join("op.sqlite3");
    let keys = operator::init(&store, 200, CommitScheme::Binding, 3600).unwrap();
    let (addr, _h) = start(&store, false).await;
    let tls = tacit_net::tls::checked_server_client(tacit_net::tls::pinned(keys.pin)).unwrap();
    let net = NetConfig::default()
        .with_max_frame_at_least(64 << 20)
        .speaking(tacit_net::Protocol::TracEdge);
    let mut c = FramedConn::connect_tls(&addr, &net, tls.clone(), "tracedge.tacit.invalid")
        .await
        .unwrap();
    let epoch = operator::status(&store)
        .unwrap()
        .tables
        .iter()
        .find(|t| t.status == "current")
        .unwrap()
        .epoch;
    // Outside a session: refused (review 2: a hint costs the server ~2× its size).
    c.send(&HintRequest { epoch }.to_wire()).await.unwrap();
    let r = Refusal::from_wire(&c.recv().await.unwrap()).expect("a refusal, not a hint");
    assert!(r.reason.contains("inside a session"), "{}", r.reason);
    let mut c = FramedConn::connect_tls(&addr, &net, tls.clone(), "tracedge.tacit.invalid")
        .await
        .unwrap();
    c.send(&Hello { t_s: 0, nonce: [3; 32] }.to_wire()).await.unwrap();
    let _commit = c.recv().await.unwrap();
    c.send(&HintRequest { epoch }.to_wire()).await.unwrap();
    let hint = c.recv().await.unwrap();
    assert!(tacit_pir::lwe::LweHint::from_wire(&hint).is_ok());
    c.send(&HintRequest { epoch }.to_wire()).await.unwrap();
    let again = c.recv().await.unwrap();
    let r = Refusal::from_wire(&again).expect("a refusal, not a second hint");
    assert!(r.reason.contains("one hint per connection"), "{}", r.reason);
    // 1 MiB before any session: refused before it is read.
    let mut c = FramedConn::connect_tls(&addr, &net, tls, "tracedge.tacit.invalid")
        .await
        .unwrap();
    let _ = c.send(&vec![0u8; 1 << 20]).await;
    assert!(c.recv().await.is_err(), "the server closes the connection");
}

/// A log record the store cannot keep stops the server (fail closed): serving an entry
/// it may lose would, after a restart, make it sign another entry for the same
/// position — which clients rightly take for equivocation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_record_that_cannot_be_stored_stops_the_server() {
    let d = dir("failclosed");
    let store = d.0.join("op.sqlite3");
    let keys = operator::init(&store, 200, CommitScheme::Binding, 3600).unwrap();
    let running = server::Server::builder(&store)
        .listen("127.0.0.1:0")
        .open_enrollment(true)
        .bind()
        .await
        .unwrap();
    let addr = running.local_addr().to_string();
    let serving = tokio::spawn(running.serve());
    // Something else takes the next log position in the store.
    let db = rusqlite::Connection::open(&store).unwrap();
    let next: i64 = db
        .query_row("SELECT MAX(seq) + 1 FROM pir_log", [], |r| r.get(0))
        .unwrap();
    db.execute("INSERT INTO pir_log (seq, record) VALUES (?1, x'00')", [next])
        .unwrap();
    drop(db);
    let alice = d.0.join("alice.json");
    assert!(
        client::enroll(&addr, keys.pin, keys.server_key, "alice", &alice)
            .await
            .is_err()
    );
    let r = tokio::time::timeout(Duration::from_secs(10), serving)
        .await
        .expect("the server stops")
        .unwrap();
    let e = r.expect_err("serve reports why it stopped");
    assert!(e.to_string().contains("could not be stored"), "{e}");
}

/// Review M8: `LogRequest`s were answered without a `Hello`, without end, on one
/// connection. Now only after a `Hello` (or an enrolment) on the connection, and for a
/// bounded number of entries.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_requests_need_a_hello_and_are_bounded() {
    let d = dir("logspam");
    let store = d.0.join("op.sqlite3");
    let keys = operator::init(&store, 200, CommitScheme::Binding, 3600).unwrap();
    let (addr, _h) = start(&store, false).await;
    let tls = tacit_net::tls::checked_server_client(tacit_net::tls::pinned(keys.pin)).unwrap();
    let net = NetConfig::default()
        .with_max_frame_at_least(64 << 20)
        .speaking(tacit_net::Protocol::TracEdge);
    let everything = LogRequest { from: 0, to: u64::MAX };
    // No Hello: refused.
    let mut c = FramedConn::connect_tls(&addr, &net, tls.clone(), "tracedge.tacit.invalid")
        .await
        .unwrap();
    c.send(&everything.to_wire()).await.unwrap();
    // A refusal, or the connection closed: either way nothing of the log.
    if let Ok(m) = c.recv().await {
        assert!(
            Refusal::from_wire(&m).is_ok(),
            "a LogRequest before any Hello was answered"
        );
    }
    // After a Hello: answered, then refused once the connection's budget is spent.
    let mut c = FramedConn::connect_tls(&addr, &net, tls, "tracedge.tacit.invalid")
        .await
        .unwrap();
    c.send(&Hello { t_s: 0, nonce: [7; 32] }.to_wire()).await.unwrap();
    let _commit = c.recv().await.unwrap();
    let mut answered = 0;
    let mut refused = false;
    for _ in 0..10_000 {
        if c.send(&everything.to_wire()).await.is_err() {
            refused = true;
            break;
        }
        match c.recv().await {
            Ok(m) if Refusal::from_wire(&m).is_ok() => {
                refused = true;
                break;
            }
            Ok(_) => answered += 1,
            Err(_) => {
                refused = true;
                break;
            }
        }
    }
    assert!(answered >= 1, "the first LogRequest after a Hello is answered");
    assert!(refused, "{answered} LogRequests answered on one connection and no end");
}

/// Review M7: a 112-byte view file or an identity whose receipt says 2^34 rows made
/// the client allocate 512 GiB and abort. Now a one-line error before any large
/// allocation.
#[test]
fn hostile_view_and_identity_files_are_refused_in_one_line() {
    let d = dir("hostilefiles");
    let sk = SigningKey::from_seed(&[9; 32]);
    let empty = SubscriberSecret::random(&mut <rand_chacha::ChaCha20Rng as rand_core::SeedableRng>::seed_from_u64(5))
        .public_bytes();
    let bytes = ClientView::new(sk.verifying_key(), 300, empty).unwrap().to_bytes();
    let vk = sk.verifying_key().to_bytes();
    let at = bytes.windows(32).position(|w| w == vk).unwrap() + 32;
    for rows in [1u64 << 34, 1 << 27, 0] {
        let mut b = bytes.clone();
        b[at..at + 8].copy_from_slice(&rows.to_be_bytes());
        let path = d.0.join("huge.view");
        std::fs::write(&path, &b).unwrap();
        let e = client::load_view(&path).expect_err("a view of an impossible size was loaded");
        assert!(!e.to_string().contains('\n'), "{e}");
    }
    // An identity whose (validly self-signed) receipt names 2^34 rows.
    let key = SubscriberSecret::random(&mut <rand_chacha::ChaCha20Rng as rand_core::SeedableRng>::seed_from_u64(6));
    let receipt = EnrolmentReceipt::issue(&sk, 0, key.public_bytes(), 1 << 34, empty, 1, 0);
    let id = client::Identity {
        connect: "127.0.0.1:9".into(),
        pin: "00".repeat(32),
        server_key: hex::encode(vk),
        row: Some(0),
        secret: hex::encode(key.to_bytes()),
        receipt: Some(hex::encode(receipt.to_wire())),
    };
    let path = d.0.join("evil.json");
    std::fs::write(&path, serde_json::to_vec(&id).unwrap()).unwrap();
    let e = client::Identity::load(&path).expect_err("an identity with a 2^34-row receipt was loaded");
    assert!(!e.to_string().contains('\n'), "{e}");
}
