//! The library servers and clients (`tacit_pros::endpoint`, issue 29): honest runs
//! through the builders over TLS, and deviating peers against the library server —
//! the protections of `tacit pros … serve` (key floor, `--allow`, pinning, trust on
//! first use) hold for a library user by default.
//!
//! Keys: 1024-bit Paillier keys (the floor, `MIN_PEER_KEY_BITS`, so no insecure
//! opt-in) and the 1024-bit ring-Pedersen test fixture, so the tests stay fast.

use std::sync::{Arc, Mutex};
use std::time::Duration;
use tacit_net::{NetConfig, Protocol};
use tacit_pros::endpoint::{self, Error, ServerTrust};
use tacit_pros::facproof::MIN_PEER_KEY_BITS;
use tacit_pros::fnp::PsiParams;
use tacit_pros::paillier::{PrivateKey, RnPool};
use tacit_pros::service::Event;
use tacit_pros::threepr::{ReconcileParams, Reconciled};
use tacit_pros::{psi, reconcile};
use tacit_store::Store;

type Log<T> = Arc<Mutex<Vec<(Option<[u8; 32]>, Result<T, String>)>>>;

fn logger<T: Send + 'static>() -> (Log<T>, impl Fn(Event<T>) + Send + Sync + 'static) {
    let log: Log<T> = Arc::default();
    let l = log.clone();
    (log, move |e| {
        if let Event::Done { client, result, .. } = e {
            l.lock().unwrap().push((client, result));
        }
    })
}

fn store() -> Store {
    Store::open_in_memory().unwrap()
}

/// A store whose pros TLS key exists, with that key's fingerprint.
fn store_with_key() -> (Store, [u8; 32]) {
    let mut st = store();
    let fp = endpoint::identity(&mut st).unwrap().fingerprint().unwrap();
    (st, fp)
}

const BOB: [&str; 4] = ["d", "c", "b", "a"];

async fn reconcile_server(
    b: endpoint::ServerBuilder<reconcile::Service>,
    sessions: u64,
) -> (
    String,
    [u8; 32],
    Log<Reconciled>,
    tokio::task::JoinHandle<Result<(), Error>>,
) {
    let server = b
        .ring_pedersen(tacit_pros::testing::ring_pedersen())
        .sessions(sessions)
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = server.local_addr().unwrap().to_string();
    let fp = server.fingerprint().unwrap();
    let (log, events) = logger();
    (addr, fp, log, tokio::spawn(server.serve(events)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_honest_reconciliation_through_the_builders_over_tls() {
    let p = ReconcileParams::default();
    let b = reconcile::serve(store(), p, &BOB).min_key_bits(1024);
    let (addr, server_fp, log, h) = reconcile_server(b, 1).await;
    let (client_store, client_fp) = store_with_key();
    let steps = Arc::new(Mutex::new(0usize));
    let s2 = steps.clone();
    let out = reconcile::connect(client_store, p, &["a", "x", "c"])
        .pin(server_fp)
        .key_bits(1024)
        .progress(move |_| *s2.lock().unwrap() += 1)
        .run(&addr)
        .await
        .unwrap();
    h.await.unwrap().unwrap();
    // sum of ranks: a = 1 + 3, c = 3 + 1 → both
    assert_eq!(out.result.elements, vec![b"a".to_vec(), b"c".to_vec()]);
    assert_eq!(out.server_key, Some(server_fp));
    assert!(*steps.lock().unwrap() > 0, "progress was reported");
    let log = log.lock().unwrap();
    assert_eq!(log.len(), 1);
    // the server learns who it reconciled with (mutual TLS) and the same result
    assert_eq!(log[0].0, Some(client_fp));
    assert_eq!(log[0].1.as_ref().unwrap().elements, out.result.elements);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_honest_psi_query_through_the_builders_with_trust_on_first_use() {
    let p = PsiParams::new(4, 8);
    let server = psi::serve(store(), p, &["x", "y", "z"])
        .min_key_bits(1024)
        .ring_pedersen(tacit_pros::testing::ring_pedersen())
        .sessions(2)
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = server.local_addr().unwrap().to_string();
    let server_fp = server.fingerprint().unwrap();
    let (log, events) = logger::<()>();
    let h = tokio::spawn(server.serve(events));
    let mut st = store();
    let recorded = Arc::new(Mutex::new(None));
    let r2 = recorded.clone();
    // first use: the key is recorded in the client's store …
    let key = PrivateKey::generate(1024).unwrap();
    let pool = Arc::new(RnPool::new(key.public()).unwrap());
    let name = endpoint::known_name(&addr);
    let out = psi::query(st, p, &["y", "w", "x"])
        .key(key.clone(), pool.clone())
        .on_connected(move |c| *r2.lock().unwrap() = c.recorded)
        .run(&addr)
        .await;
    let mut found = out.unwrap().result;
    found.sort();
    assert_eq!(found, vec![b"x".to_vec(), b"y".to_vec()]);
    assert_eq!(*recorded.lock().unwrap(), Some(server_fp));
    // … and required later (a store that recorded another key refuses this server)
    st = store();
    st.remember_peer(&name, &[7; 32], 0).unwrap();
    let e = psi::query(st, p, &["y"]).key(key, pool).run(&addr).await.unwrap_err();
    assert!(matches!(e, Error::RecordedKeyRefused { .. }), "{e}");
    assert!(e.to_string().contains("tacit pros forget --connect"), "{e}");
    h.await.unwrap().unwrap();
    assert!(log.lock().unwrap()[0].1.is_ok());
}

/// A deviating peer against the library server: a key under the floor
/// (`MIN_PEER_KEY_BITS`) sent by a raw client over the library's channel, and a
/// library client that opted into small keys itself (the peer cannot ask for it):
/// both refused by the server's defaults.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_key_under_the_floor_is_refused_by_the_library_server() {
    let p = ReconcileParams::default();
    // the defaults: peer keys of 2048 bits and more
    let (addr, server_fp, log, h) = reconcile_server(reconcile::serve(store(), p, &BOB), 2).await;
    let small = PrivateKey::generate(512).unwrap();
    let pool = Arc::new(RnPool::new(small.public()).unwrap());
    let mut c = endpoint::connect_channel(
        store(),
        ServerTrust::Pinned(server_fp),
        &addr,
        &NetConfig::default(),
        Protocol::ProsReconcile,
    )
    .await
    .unwrap();
    let mut rng = <rand_chacha::ChaCha20Rng as rand_core::SeedableRng>::seed_from_u64(9);
    let e = tacit_pros::net::reconcile_initiator(&mut c.conn, p, small, &["a"], pool, &mut rng)
        .await
        .unwrap_err();
    assert!(
        matches!(e, tacit_pros::Error::PeerRefused(ref m) if m.contains("2048 to 4096 bits")),
        "{e}"
    );
    // a 1024-bit key (at the protocol's floor) is under this server's 2048
    let e = reconcile::connect(store(), p, &["a"])
        .pin(server_fp)
        .key_bits(1024)
        .run(&addr)
        .await
        .unwrap_err();
    assert!(e.to_string().starts_with(&format!("reconciliation with {addr}")), "{e}");
    h.await.unwrap().unwrap();
    {
        let log = log.lock().unwrap();
        assert_eq!(log.len(), 2);
        assert!(log.iter().all(|(_, r)| r.is_err()), "{log:?}");
    }
    // and below the protocol's floor only by the explicitly named opt-in
    let e = reconcile::serve(store(), p, &BOB)
        .min_key_bits(MIN_PEER_KEY_BITS / 2)
        .ring_pedersen(tacit_pros::testing::ring_pedersen())
        .bind("127.0.0.1:0")
        .await
        .unwrap_err();
    assert!(
        matches!(e, Error::Config(ref m) if m.contains("insecure_small_keys")),
        "{e}"
    );
    let e = reconcile::connect(store(), p, &["a"])
        .key_bits(512)
        .run(&addr)
        .await
        .unwrap_err();
    assert!(
        matches!(e, Error::Config(ref m) if m.contains("insecure_small_keys")),
        "{e}"
    );
}

/// A client whose key the server does not admit (`allow`) is refused in the TLS
/// handshake, before any protocol message; an admitted one is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_key_not_allowed_is_refused_in_the_handshake() {
    let p = ReconcileParams::default();
    let (admitted, admitted_fp) = store_with_key();
    let b = reconcile::serve(store(), p, &BOB).min_key_bits(1024).allow(admitted_fp);
    let (addr, server_fp, log, h) = reconcile_server(b, 2).await;
    let e = reconcile::connect(store(), p, &["a"])
        .pin(server_fp)
        .key_bits(1024)
        .run(&addr)
        .await
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::PinnedKeyRefused { .. } | Error::Connect { .. } | Error::Session { .. }
        ),
        "{e}"
    );
    let out = reconcile::connect(admitted, p, &["a"])
        .pin(server_fp)
        .key_bits(1024)
        .timeout(Duration::from_secs(60))
        .run(&addr)
        .await
        .unwrap();
    assert_eq!(out.result.elements, vec![b"a".to_vec()]);
    h.await.unwrap().unwrap();
    let log = log.lock().unwrap();
    assert!(
        log[0]
            .1
            .as_ref()
            .is_err_and(|e| e.contains("not one of the --allow keys")),
        "{log:?}"
    );
    assert_eq!(log[1].0, Some(admitted_fp));
}
