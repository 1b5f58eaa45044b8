//! Second adversarial review of TracEdge (after commit 1344da4): a hostile operator
//! tags subscribers through the fixes of the first review.
//!
//! Every test here asserts the SECURE behaviour `docs/pir.md` promises and FAILS on
//! the reviewed code (branch rev-pir2); `held_*` tests record attacks that did not
//! work. The harness (`World`, `Hostile`, `hostile_session`) is `tests/hostile/`.
#![allow(dead_code)]

use curve25519_dalek::scalar::Scalar;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use tacit_crypto::sign::SigningKey;
use tacit_pir::lwe::LweServer;
use tacit_pir::tracedge::*;
use tacit_wire::Encode;

mod hostile;
use hostile::*;

// ---------------------------------------------------------------------------------
// F1. The hour-anchored sync is anchored on hours the server chooses.
// ---------------------------------------------------------------------------------

/// `ClientView::sync_from` asks from the first entry of the hour (by the entries'
/// SIGNED times) in which the client's copy ends. The server signs those times, and a
/// client accepts any time that is not after its clock (plus the skew) nor before the
/// previous entry: times in the past are fine. So a server that stamps each entry an
/// hour after the previous one — in the past, e.g. a log whose times trail the real
/// clock — puts every entry in an hour of its own: each session is shown a fresh head
/// (one empty entry appended per session, a table re-listing), and the client's next
/// `LogRequest.from` is exactly that head: every session is linked to the client's
/// previous one, as with the 64-entry rounding the first review broke. Nothing is
/// provable: the log is one chain, the same for everyone, its times monotone and not
/// in the future. Docs: "however many entries the server appends, the request tells
/// it only the hour in which the client's copy ends (when it last synced)".
#[test]
fn the_log_request_does_not_link_sessions_through_entry_times_the_server_picks() {
    let mut w = world(201, &[]);
    let (a, b) = (client(&w, 10, 4), client(&w, 20, 4));
    let (mut va, mut vb) = (fresh_view(&w, 10), fresh_view(&w, 20));
    let mut froms = Vec::new();
    let mut heads = Vec::new();
    // All four sessions happen within one minute of the clients' clock.
    for (i, who) in [0, 1, 0, 1].into_iter().enumerate() {
        // One empty entry per session, stamped an hour after the previous one (all
        // in the past of the clients' clock: NOW + i h < LATER).
        w.server.apply_changes(&[], NOW + (i as u64 + 1) * 3_600_000).unwrap();
        let log = Hostile::of(&w);
        let header = *w.server.current().unwrap().header();
        let (c, v) = if who == 0 { (&a, &mut va) } else { (&b, &mut vb) };
        let mut from = Vec::new();
        let end = hostile_session(
            &mut w,
            &log,
            log.head().seq,
            header,
            c,
            v,
            LATER + i as u64 * 1000,
            &mut from,
        );
        assert!(end.authenticated(), "{}", end.short());
        heads.push(log.head().seq);
        froms.push(from[0]);
    }
    eprintln!("heads shown per session: {heads:?}; LogRequest.from of each session: {froms:?}");
    // Fixed: a session's first request is the last SYNC_WINDOW·2^k entries before
    // the head it is shown, whatever the entries' times: both second sessions (one
    // session behind) ask for the window that their head alone gives (k = 0).
    for i in [2, 3] {
        assert_eq!(
            froms[i],
            (heads[i] + 1).saturating_sub(tacit_pir::tracedge::log::SYNC_WINDOW),
            "session {i} (head {}) asks from {}: the request depends on where the client's copy ended",
            heads[i],
            froms[i]
        );
    }
}

// ---------------------------------------------------------------------------------
// F2. The hint cache is a cookie again: a table id can come back.
// ---------------------------------------------------------------------------------

fn wall_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// A server whose library state the test steers between sessions, served over TLS
/// with the service's messages; it counts the `HintRequest`s it answers.
struct Steered {
    srv: std::sync::Mutex<(TracEdgeServer<LweServer>, ChaCha20Rng)>,
    hint_requests: std::sync::atomic::AtomicUsize,
}

async fn serve_steered(st: std::sync::Arc<Steered>) -> (String, [u8; 32]) {
    use tacit_net::{FramedListener, NetConfig};
    use tacit_wire::{Decode, Envelope};
    let tls = tacit_net::tls::SelfSigned::generate("tracedge.tacit.invalid").unwrap();
    let pin = tls.fingerprint().unwrap();
    let cfg = tls.server_config().unwrap();
    let l = FramedListener::bind(
        "127.0.0.1:0",
        &NetConfig::default().speaking(tacit_net::Protocol::TracEdge),
    )
    .await
    .unwrap();
    let addr = l.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        loop {
            let Ok(c) = l.accept().await else { return };
            let (cfg, st) = (cfg.clone(), st.clone());
            tokio::spawn(async move {
                let Ok(mut c) = c.accept_tls(cfg).await else { return };
                c.set_max_frame(64 << 20);
                let mut sess = None;
                while let Ok(msg) = c.recv().await {
                    let Ok(env) = Envelope::peek(&msg) else { return };
                    let reply: Vec<u8> = {
                        let mut g = st.srv.lock().unwrap();
                        let (srv, rng) = &mut *g;
                        match env.tag {
                            TAG_HELLO => {
                                let h = Hello::from_wire(&msg).unwrap();
                                let (s, commit) = srv.hello(&h, wall_ms(), rng).unwrap();
                                sess = Some(s);
                                commit.to_wire()
                            }
                            TAG_LOG_REQUEST => srv.log_segment(&LogRequest::from_wire(&msg).unwrap()).to_wire(),
                            TAG_HINT_REQUEST => {
                                st.hint_requests.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                                srv.hint(&HintRequest::from_wire(&msg).unwrap()).unwrap().to_wire()
                            }
                            TAG_QUERIES => {
                                let q = Queries::from_wire(&msg).unwrap();
                                srv.respond(sess.as_mut().unwrap(), &q).unwrap().to_wire()
                            }
                            TAG_CLIENT_AUTH => {
                                let a = ClientAuth::from_wire(&msg).unwrap();
                                match srv.finish(sess.as_mut().unwrap(), &a) {
                                    Ok((sa, _)) => sa.to_wire(),
                                    Err(e) => Refusal {
                                        code: RefusalCode::Other,
                                        reason: e.to_string(),
                                    }
                                    .to_wire(),
                                }
                            }
                            _ => return,
                        }
                    };
                    if c.send(&reply).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (addr, pin)
}

/// Issue 25 hole 3 asked that the hint cache stop being a cookie the server reads.
/// The fix derives `A` from the epoch ("one epoch has one A") and says "a table with
/// another id in the same epoch is a log entry every other subscriber can compare
/// against". But a table's id is a function of its content, and rows written on the
/// fly can be written back: a server that registers a (dummy) key Y₁ in a spare row
/// before session 1, Y₂ before session 2, … gives each session a table id of its
/// own, which the client caches (`ID.hints/`, keyed by table id). Later it writes Y₁
/// back: the table id is again session 1's, and the one client that does NOT send a
/// `HintRequest` is session 1's client. Every entry is an ordinary registration in
/// one linear log, the same for everyone: nothing to compare, nothing to prove. Docs:
/// "A server cannot use the cache as a cookie".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hint_cache_is_no_cookie_when_a_table_id_comes_back() {
    let mut rng = ChaCha20Rng::seed_from_u64(202);
    let t0 = wall_ms() - 60_000;
    let sk = SigningKey::generate(&mut rng);
    let mut server = TracEdgeServer::new(
        SigningKey::from_seed(&sk.to_seed()),
        Scalar::random(&mut rng),
        ServerConfig::default(),
        N as u64,
        t0,
    )
    .unwrap();
    let subs: Vec<SubscriberSecret> = (0..4).map(|_| SubscriberSecret::random(&mut rng)).collect();
    let changes: Vec<Change> = subs
        .iter()
        .enumerate()
        .map(|(i, s)| (i as u64, s.public_bytes()))
        .collect();
    let receipts = server.apply_changes(&changes, t0).unwrap().receipts;
    let keys = server.directory().keys().to_vec();
    let table = build_lwe_table(
        1,
        TableKey::random(&mut rng),
        CommitScheme::Binding,
        &server.dh_public(),
        keys,
        None,
        &|_| {},
        &mut rng,
    )
    .unwrap();
    server.install(table, t0).unwrap();
    let st = std::sync::Arc::new(Steered {
        srv: std::sync::Mutex::new((server, ChaCha20Rng::seed_from_u64(203))),
        hint_requests: Default::default(),
    });
    let (addr, pin) = serve_steered(st.clone()).await;
    let dir = std::env::temp_dir().join(format!("tacit-review2-cookie-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let identity = |i: usize| {
        let id = tacit_pir::tracedge::service::client::Identity {
            connect: addr.clone(),
            pin: hex::encode(pin),
            server_key: hex::encode(sk.verifying_key().to_bytes()),
            row: Some(i as u64),
            secret: hex::encode(&subs[i].to_bytes()[..]),
            receipt: Some(hex::encode(receipts[i].to_wire())),
        };
        let p = dir.join(format!("sub{i}.json"));
        id.create(&p).unwrap();
        p
    };
    let (alice, bob) = (identity(1), identity(2));
    let spare = 250u64;
    let y: Vec<[u8; 32]> = (0..2)
        .map(|_| SubscriberSecret::random(&mut rng).public_bytes())
        .collect();
    let set = |k: [u8; 32]| {
        let mut g = st.srv.lock().unwrap();
        g.0.apply_changes(&[(spare, k)], wall_ms()).unwrap();
        g.0.current().unwrap().header().table_id
    };
    let opts = tacit_pir::tracedge::service::client::AuthOptions::default();
    let auth = |p: std::path::PathBuf| {
        let opts = opts.clone();
        async move {
            tacit_pir::tracedge::service::client::authenticate(&p, &opts)
                .await
                .unwrap()
        }
    };
    // Session 1 (alice) on table id T1, session 2 (bob) on T2.
    let t1 = set(y[0]);
    let r = auth(alice.clone()).await;
    assert!(
        matches!(
            r.outcome,
            tacit_pir::tracedge::service::client::AuthOutcome::Authenticated { .. }
        ),
        "{:?}",
        r.outcome
    );
    let t2 = set(y[1]);
    let r = auth(bob.clone()).await;
    assert!(
        matches!(
            r.outcome,
            tacit_pir::tracedge::service::client::AuthOutcome::Authenticated { .. }
        ),
        "{:?}",
        r.outcome
    );
    // Y1 written back: the table id of session 1 again.
    let t3 = set(y[0]);
    assert_eq!(t3, t1, "the table id is a function of the table's content");
    assert_ne!(t1, t2);
    let before = st.hint_requests.load(std::sync::atomic::Ordering::SeqCst);
    let ra = auth(alice.clone()).await;
    let mid = st.hint_requests.load(std::sync::atomic::Ordering::SeqCst);
    let rb = auth(bob.clone()).await;
    let after = st.hint_requests.load(std::sync::atomic::Ordering::SeqCst);
    let _ = std::fs::remove_dir_all(&dir);
    let (asked_a, asked_b) = (mid - before, after - mid);
    eprintln!(
        "third round on T1 again: alice sent {asked_a} HintRequest(s) (cached: {}), bob {asked_b} (cached: {})",
        ra.hint_cached, rb.hint_cached
    );
    assert!(matches!(
        ra.outcome,
        tacit_pir::tracedge::service::client::AuthOutcome::Authenticated { .. }
    ));
    assert!(matches!(
        rb.outcome,
        tacit_pir::tracedge::service::client::AuthOutcome::Authenticated { .. }
    ));
    assert_eq!(
        asked_a, asked_b,
        "the server tells session 1's client (alice: {asked_a} hint requests) from session 2's (bob: {asked_b}) by writing a row back to session 1's key: the hint cache is a cookie"
    );
}

// ---------------------------------------------------------------------------------
// F3. A signed audit answer of the wrong shape: refused after ClientAuth, no proof.
// ---------------------------------------------------------------------------------

/// The response's answers are checked for their number and the signature, not their
/// shape. A server that signs an audit answer with one element too few (or another
/// table id) passes the own-row check, gets the client's real MAC (it learns the
/// client is a subscriber and the session key is live), answers `ServerAuth` — and
/// then the client's audit check fails to decode and the session ends "refused: the
/// audit could not be checked", with NO proof, although an honest server never signs
/// such an answer. A server can thus make chosen sessions fail after they proved
/// membership, and make every audit of a session it cheats in silently void (a
/// flagged row in the audited slot is then never proven by a third party). Docs: a
/// signed answer that is not what the table gives is caught with a proof that
/// `verify-proof` accepts; "honest transcripts make no valid proof" — and dishonest
/// ones should make one.
#[test]
fn a_signed_audit_answer_of_the_wrong_shape_is_proven() {
    for how in ["short", "other table id"] {
        let mut w = world(203, &[]);
        let log = Hostile::of(&w);
        let header = *w.server.current().unwrap().header();
        let c = client(&w, 5, 4);
        let mut v = fresh_view(&w, 5);
        let mangle = |a: &mut Vec<tacit_pir::lwe::LweAnswer>| {
            if how == "short" {
                a[1].values.pop();
            } else {
                a[1].table_id[0] ^= 1;
            }
        };
        let end = hostile_session_mangled(
            &mangle,
            &mut w,
            &log,
            log.head().seq,
            header,
            &c,
            &mut v,
            NOW,
            &mut Vec::new(),
        );
        eprintln!("audit answer {how}: {}", end.short());
        assert!(
            end.caught().is_some_and(|p| p.verify().is_ok()),
            "a signed malformed audit answer ({how}) ended without a proof: {}",
            end.short()
        );
    }
}
