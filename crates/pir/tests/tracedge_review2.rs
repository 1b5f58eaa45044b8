//! Second adversarial review of TracEdge (after commit 1344da4): a hostile operator
//! tags subscribers through the fixes of the first review.
//!
//! Every test here asserts the SECURE behaviour `docs/pir.md` promises and FAILS on
//! the reviewed code (branch rev-pir2); `held_*` tests record attacks that did not
//! work. The harness (`World`, `Hostile`, `hostile_session`) is a copy of the one in
//! `tests/tracedge_review.rs`.
#![allow(dead_code)]

use curve25519_dalek::scalar::Scalar;
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use sha2::{Digest, Sha256};
use tacit_crypto::sign::SigningKey;
use tacit_pir::lwe::LweServer;
use tacit_pir::tracedge::*;
use tacit_pir::{Error, PirServer};
use tacit_wire::Encode;

const NOW: u64 = 1_700_000_000_000;
/// A clock far enough after every entry the tests stamp.
const LATER: u64 = NOW + 365 * 86_400_000;
const N: usize = 300;

struct World {
    server: TracEdgeServer<LweServer>,
    subs: Vec<SubscriberSecret>,
    receipts: Vec<EnrolmentReceipt>,
    rng: ChaCha20Rng,
}

fn world(seed: u64, flagged: &[u64]) -> World {
    world_with(seed, flagged, ServerConfig::default())
}

fn world_with(seed: u64, flagged: &[u64], config: ServerConfig) -> World {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut server = TracEdgeServer::new(
        SigningKey::generate(&mut rng),
        Scalar::random(&mut rng),
        config,
        N as u64,
        NOW - 10_000_000,
    )
    .unwrap();
    // Rows 0..200 are subscribers, the rest empty (the server's own key).
    let subs: Vec<SubscriberSecret> = (0..200).map(|_| SubscriberSecret::random(&mut rng)).collect();
    let changes: Vec<Change> = subs
        .iter()
        .enumerate()
        .map(|(i, s)| (i as u64, s.public_bytes()))
        .collect();
    let applied = server.apply_changes(&changes, NOW - 9_000_000).unwrap();
    let receipts = applied.receipts;
    let keys = server.directory().keys().to_vec();
    let key = TableKey::random(&mut rng);
    let second = TableKey::random(&mut rng);
    let flag = (!flagged.is_empty()).then_some(Flagged {
        key: &second,
        rows: flagged,
    });
    let mut table = build_lwe_table(
        1,
        key,
        CommitScheme::Binding,
        &server.dh_public(),
        keys,
        flag,
        &|_| {},
        &mut rng,
    )
    .unwrap();
    if !flagged.is_empty() {
        table.add_second_key(second);
    }
    server.install(table, NOW - 8_000_000).unwrap();
    World {
        server,
        subs,
        receipts,
        rng,
    }
}

fn client(w: &World, row: u64, audits: usize) -> TracEdgeClient {
    TracEdgeClient::new(
        w.server.verifying_key(),
        row,
        w.subs[row as usize].clone(),
        ClientConfig {
            audits,
            accept_paper_commitment: false,
        },
    )
}

fn fresh_view(w: &World, row: u64) -> ClientView {
    let mut v = ClientView::new(
        w.server.verifying_key(),
        N as u64,
        w.server.dh_public().compress().to_bytes(),
    )
    .unwrap();
    if let Some(r) = w.receipts.iter().find(|r| r.row == row) {
        v.set_own(r.clone()).unwrap();
    }
    v
}

/// How a run ended.
#[derive(Debug)]
#[allow(dead_code)]
enum End {
    Outcome(ClientOutcome, Option<usize>),
    Stopped(ClientStop),
}

impl End {
    fn authenticated(&self) -> bool {
        matches!(self, End::Outcome(ClientOutcome::Authenticated { .. }, _))
    }
    fn caught(&self) -> Option<&MisbehaviourProof> {
        match self {
            End::Outcome(ClientOutcome::Caught(p), _) | End::Stopped(ClientStop::Caught(p)) => Some(p),
            _ => None,
        }
    }
    fn short(&self) -> String {
        match self {
            End::Outcome(ClientOutcome::Authenticated { epoch, .. }, k) => {
                format!("authenticated (epoch {epoch}, key {k:?})")
            }
            End::Outcome(ClientOutcome::Caught(p), _) | End::Stopped(ClientStop::Caught(p)) => {
                format!("caught: {:?}", p.verify().map(|f| f.what))
            }
            End::Outcome(ClientOutcome::NotEnrolled { row, since }, _)
            | End::Stopped(ClientStop::NotEnrolled { row, since }) => {
                format!("not enrolled (row {row}, entry {since})")
            }
            End::Outcome(ClientOutcome::Refused(r), _) => format!("refused: {r}"),
            End::Stopped(ClientStop::Error(e)) => format!("stopped without proof: {e}"),
        }
    }
}

/// A fully hostile server: the honest server's keys and tables, and a log of its
/// own choosing (the honest records plus any it signs), on which it runs sessions on
/// any table it holds.
struct Hostile {
    records: Vec<LogRecord>,
}

impl Hostile {
    fn of(w: &World) -> Self {
        Hostile {
            records: w.server.log().records().to_vec(),
        }
    }

    fn head(&self) -> &LogEntry {
        &self.records.last().unwrap().entry
    }

    fn directory(&self) -> Directory {
        let rows = self.head().rows;
        let mut d = Directory::build(vec![self.records[0].entry.empty_key; rows as usize]).unwrap();
        for r in &self.records {
            d.set_many(&r.changes).unwrap();
        }
        d
    }

    /// Signs and appends an entry with `changes` (anything: they are not checked)
    /// listing `tables` (each re-pointed at the new directory root).
    fn append(&mut self, sk: &SigningKey, changes: Vec<Change>, tables: Vec<TableHeader>, time_ms: u64) -> LogRecord {
        let mut d = self.directory();
        d.set_many(&changes).unwrap();
        let head = self.head().clone();
        let tables = tables
            .into_iter()
            .map(|mut t| {
                t.dir_root = d.root();
                t
            })
            .collect();
        let mut entry = LogEntry {
            seq: head.seq + 1,
            time_ms,
            prev: head.hash(),
            rows: head.rows,
            empty_key: head.empty_key,
            dir_root: d.root(),
            changes_hash: tacit_pir::tracedge::log::changes_hash(&changes),
            n_changes: changes.len() as u32,
            tables,
            sig: [0; 64],
        };
        entry.sig = sk.sign(&entry.signed_bytes());
        let rec = LogRecord { entry, changes };
        self.records.push(rec.clone());
        rec
    }

    fn segment(&self, req: &LogRequest) -> LogSegment {
        let to = req.to.min(self.head().seq);
        LogSegment {
            records: (req.from..=to)
                .take(256)
                .map(|s| self.records[s as usize].clone())
                .collect(),
        }
    }
}

/// One session with a hostile server that commits to `header` (a table it holds)
/// under log entry `log_seq` of `log`, and answers honestly from that table.
#[allow(clippy::too_many_arguments)]
fn hostile_session(
    w: &mut World,
    log: &Hostile,
    log_seq: u64,
    header: TableHeader,
    c: &TracEdgeClient,
    v: &mut ClientView,
    now: u64,
    from_seen: &mut Vec<u64>,
) -> End {
    let sk = SigningKey::from_seed(&w.server.signing_key().to_seed());
    let table = w
        .server
        .tables()
        .find(|t| t.header().epoch == header.epoch)
        .expect("the hostile server holds the table");
    let hint = table.hint().clone();
    let (mut cs, hello) = c.start(now, &mut w.rng);
    let mut server_nonce = [0u8; 32];
    w.rng.fill_bytes(&mut server_nonce);
    let log_hash = log.records[log_seq as usize].entry.hash();
    let sig = sk.sign(&commit_signed_bytes(
        &header,
        now,
        &hello.nonce,
        &server_nonce,
        log_seq,
        &log_hash,
    ));
    let commit = Commit {
        header,
        t_s: now,
        server_nonce,
        log_seq,
        log_hash,
        sig,
    };
    loop {
        match c.commit_needs(&cs, &commit, v) {
            Err(s) => return End::Stopped(s),
            Ok(CommitNeeds::Ready) => break,
            Ok(CommitNeeds::Log(req)) => {
                from_seen.push(req.from);
                let seg = log.segment(&req);
                let before = v.head_seq();
                if let Err(e) = v.apply(&seg, now) {
                    return End::Stopped(e.into());
                }
                if v.head_seq() == before {
                    return End::Stopped(ClientStop::Error(Error::Refused("no log".into())));
                }
            }
        }
    }
    let q = match c.on_commit(&mut cs, commit.clone(), hint, v, &mut w.rng) {
        Ok(q) => q,
        Err(s) => return End::Stopped(s),
    };
    // Answers from the committed table, signed.
    let refs: Vec<_> = q.all().collect();
    let answers = table.pir().answer_batch_refs(&refs).unwrap();
    let qhash = wire_hash(&q);
    let ahash = answers_hash(&answers);
    let rsig = sk.sign(&response_signed_bytes(
        now,
        &hello.nonce,
        &server_nonce,
        header.epoch,
        &qhash,
        &ahash,
    ));
    let resp = Response {
        epoch: header.epoch,
        answers,
        sig: rsig,
    };
    let mut tr = Sha256::new();
    tr.update(hello.to_wire());
    tr.update(commit.to_wire());
    tr.update(qhash);
    tr.update(response_transcript_bytes(header.epoch, &ahash, &rsig));
    let transcript: [u8; 32] = tr.finalize().into();
    let auth = match c.on_response(&mut cs, resp, &mut w.rng) {
        Ok(a) => a,
        Err(s) => return End::Stopped(s),
    };
    let key = table.key();
    if auth.mac == key.session_mac_key("client", &transcript) {
        let reply = ServerAuth {
            mac: key.session_mac_key("server", &transcript),
        };
        End::Outcome(c.on_server_auth(&mut cs, Ok(reply)), Some(0))
    } else {
        End::Outcome(c.on_server_auth(&mut cs, Err("not a subscriber".into())), None)
    }
}

/// [`hostile_session`] whose signed answers are first changed by `mangle`.
/// One session with a hostile server that commits to `header` (a table it holds)
/// under log entry `log_seq` of `log`, and answers honestly from that table.
#[allow(clippy::too_many_arguments)]
fn hostile_session_mangled(
    mangle: &dyn Fn(&mut Vec<tacit_pir::lwe::LweAnswer>),
    w: &mut World,
    log: &Hostile,
    log_seq: u64,
    header: TableHeader,
    c: &TracEdgeClient,
    v: &mut ClientView,
    now: u64,
    from_seen: &mut Vec<u64>,
) -> End {
    let sk = SigningKey::from_seed(&w.server.signing_key().to_seed());
    let table = w
        .server
        .tables()
        .find(|t| t.header().epoch == header.epoch)
        .expect("the hostile server holds the table");
    let hint = table.hint().clone();
    let (mut cs, hello) = c.start(now, &mut w.rng);
    let mut server_nonce = [0u8; 32];
    w.rng.fill_bytes(&mut server_nonce);
    let log_hash = log.records[log_seq as usize].entry.hash();
    let sig = sk.sign(&commit_signed_bytes(
        &header,
        now,
        &hello.nonce,
        &server_nonce,
        log_seq,
        &log_hash,
    ));
    let commit = Commit {
        header,
        t_s: now,
        server_nonce,
        log_seq,
        log_hash,
        sig,
    };
    loop {
        match c.commit_needs(&cs, &commit, v) {
            Err(s) => return End::Stopped(s),
            Ok(CommitNeeds::Ready) => break,
            Ok(CommitNeeds::Log(req)) => {
                from_seen.push(req.from);
                let seg = log.segment(&req);
                let before = v.head_seq();
                if let Err(e) = v.apply(&seg, now) {
                    return End::Stopped(e.into());
                }
                if v.head_seq() == before {
                    return End::Stopped(ClientStop::Error(Error::Refused("no log".into())));
                }
            }
        }
    }
    let q = match c.on_commit(&mut cs, commit.clone(), hint, v, &mut w.rng) {
        Ok(q) => q,
        Err(s) => return End::Stopped(s),
    };
    // Answers from the committed table, signed.
    let refs: Vec<_> = q.all().collect();
    let mut answers = table.pir().answer_batch_refs(&refs).unwrap();
    mangle(&mut answers);
    let qhash = wire_hash(&q);
    let ahash = answers_hash(&answers);
    let rsig = sk.sign(&response_signed_bytes(
        now,
        &hello.nonce,
        &server_nonce,
        header.epoch,
        &qhash,
        &ahash,
    ));
    let resp = Response {
        epoch: header.epoch,
        answers,
        sig: rsig,
    };
    let mut tr = Sha256::new();
    tr.update(hello.to_wire());
    tr.update(commit.to_wire());
    tr.update(qhash);
    tr.update(response_transcript_bytes(header.epoch, &ahash, &rsig));
    let transcript: [u8; 32] = tr.finalize().into();
    let auth = match c.on_response(&mut cs, resp, &mut w.rng) {
        Ok(a) => a,
        Err(s) => return End::Stopped(s),
    };
    let key = table.key();
    if auth.mac == key.session_mac_key("client", &transcript) {
        let reply = ServerAuth {
            mac: key.session_mac_key("server", &transcript),
        };
        End::Outcome(c.on_server_auth(&mut cs, Ok(reply)), Some(0))
    } else {
        End::Outcome(c.on_server_auth(&mut cs, Err("not a subscriber".into())), None)
    }
}

/// An honest session (the unmodified server), through `authenticate_in_process`.
fn honest_session(w: &mut World, c: &TracEdgeClient, v: &mut ClientView, now: u64) -> End {
    let hint = w.server.current().unwrap().hint().clone();
    let r = authenticate_in_process(&mut w.server, c, v, hint, now, &mut w.rng);
    match r.client {
        Ok(o) => End::Outcome(o, r.key_index),
        Err(s) => End::Stopped(s),
    }
}

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
    let l = FramedListener::bind("127.0.0.1:0", &NetConfig::default())
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
