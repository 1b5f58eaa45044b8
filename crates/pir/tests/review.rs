//! Adversarial review of TracEdge (issue 25 follow-up): attacks by a hostile operator
//! (the server), a hostile client, hostile files and the network, in process.
//!
//! Every test here asserts the SECURE behaviour the docs (`docs/pir.md`) promise; a
//! test that fails shows a break. The harness is a copy of the deviating-server
//! harness of `tests/tracedge.rs`, plus a fully hostile server (`Hostile`) that can
//! serve any log it signs and run a session on any table it holds.

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
            End::Outcome(ClientOutcome::Authenticated { epoch, .. }, k) => format!("authenticated (epoch {epoch}, key {k:?})"),
            End::Outcome(ClientOutcome::Caught(p), _) | End::Stopped(ClientStop::Caught(p)) => {
                format!("caught: {:?}", p.verify().map(|f| f.what))
            }
            End::Outcome(ClientOutcome::NotEnrolled { row, since }, _)
            | End::Stopped(ClientStop::NotEnrolled { row, since }) => format!("not enrolled (row {row}, entry {since})"),
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
    let (mut cs, hello) = c.start(now, v, &mut w.rng);
    let mut server_nonce = [0u8; 32];
    w.rng.fill_bytes(&mut server_nonce);
    let log_hash = log.records[log_seq as usize].entry.hash();
    let sig = sk.sign(&commit_signed_bytes(
        &header,
        hello.t_s,
        &hello.nonce,
        &server_nonce,
        log_seq,
        &log_hash,
    ));
    let commit = Commit {
        header,
        t_s: hello.t_s,
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
                if let Err(e) = v.apply(&seg) {
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
        hello.t_s,
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
// R1. An honest server that rekeys 16 times within the grace period is "caught".
// ---------------------------------------------------------------------------------

/// `TracEdgeServer::install` inserts the new table and deprecates the old one
/// BEFORE it appends the log entry; with 16 deprecated tables still in their grace
/// period the append fails (`MAX_TABLES_PER_ENTRY`), but the table stays current.
/// Every later `Commit` then names a table that the head entry does not list: every
/// client gets a `CommitNotInLog` proof that verifies, against an unmodified server.
#[test]
fn r1_an_honest_server_is_never_proven_misbehaving_after_many_rekeys() {
    let mut w = world(101, &[]);
    let mut results = Vec::new();
    for epoch in 2..=17u64 {
        let keys = w.server.directory().keys().to_vec();
        let t = build_lwe_table(
            epoch,
            TableKey::random(&mut w.rng),
            CommitScheme::Binding,
            &w.server.dh_public(),
            keys,
            None,
            &|_| {},
            &mut w.rng,
        )
        .unwrap();
        // Sixteen rekeys within the (default, 1 h) grace period, e.g. sixteen
        // removals in an hour: each removal rekeys.
        results.push(w.server.install(t, NOW - 7_000_000 + epoch * 60_000).map(|_| ()));
    }
    eprintln!("install results: {:?}", results.iter().map(|r| r.is_ok()).collect::<Vec<_>>());
    let c = client(&w, 7, 4);
    let mut v = fresh_view(&w, 7);
    let end = honest_session(&mut w, &c, &mut v, NOW);
    if let Some(p) = end.caught() {
        let f = p.verify();
        panic!("an UNMODIFIED server was proven misbehaving: {f:?}");
    }
    assert!(end.authenticated(), "{}", end.short());
}

// ---------------------------------------------------------------------------------
// R2. A no-op change of a row in one log entry makes its subscriber "not enrolled".
// ---------------------------------------------------------------------------------

/// The view marks the subscriber removed when an entry's change LIST contains its row
/// with another key, not when the directory after the entry no longer holds its key.
/// A hostile operator appends one entry `[(r, X), (r, Y_r)]`: the directory is
/// unchanged (every other subscriber sees a no-op entry and authenticates), but the
/// target's client stops with "not enrolled" after the log sync, for ever — so the
/// operator recognises every session of the target (the only one that stops after
/// the sync), and the target has no proof (the public directory still lists it).
#[test]
fn r2_a_no_op_change_of_a_row_is_not_a_removal() {
    let mut w = world(102, &[]);
    let target = 42u64;
    let sk = SigningKey::from_seed(&w.server.signing_key().to_seed());
    let mut log = Hostile::of(&w);
    let x = SubscriberSecret::random(&mut w.rng).public_bytes();
    let y = w.subs[target as usize].public_bytes();
    let header = *w.server.current().unwrap().header();
    let rec = log.append(&sk, vec![(target, x), (target, y)], vec![header], NOW - 60_000);
    assert_eq!(rec.entry.dir_root, header.dir_root, "the entry changes nothing");
    let seq = rec.entry.seq;
    let mut from = Vec::new();
    // Another subscriber authenticates on the hostile log.
    let other = client(&w, 43, 4);
    let mut vo = fresh_view(&w, 43);
    let e_other = hostile_session(&mut w, &log, seq, header, &other, &mut vo, NOW, &mut from);
    assert!(e_other.authenticated(), "{}", e_other.short());
    // The target.
    let t = client(&w, target, 4);
    let mut vt = fresh_view(&w, target);
    let e_t = hostile_session(&mut w, &log, seq, header, &t, &mut vt, NOW, &mut from);
    assert_eq!(vt.directory().key(target).unwrap(), y, "the target's view still lists its key");
    assert!(
        e_t.authenticated() || e_t.caught().is_some_and(|p| p.verify().is_ok()),
        "the target is told: {} — while the directory (its own copy) still lists its key at row {target}",
        e_t.short()
    );
}

/// The same in the other direction: the entry the receipt names registers the key
/// and then overwrites it (`[(r, Y), (r, X)]`). The receipt check only asks whether
/// the change list contains `(r, Y)`; the client then stops with "the view's
/// directory disagrees with its receipt" — neither "not enrolled" nor a proof.
#[test]
fn r2b_a_receipt_entry_that_overwrites_the_key_is_proven() {
    let mut w = world(103, &[]);
    let sk = SigningKey::from_seed(&w.server.signing_key().to_seed());
    let mut log = Hostile::of(&w);
    let newcomer = SubscriberSecret::random(&mut w.rng);
    let row = 250u64;
    let x = SubscriberSecret::random(&mut w.rng).public_bytes();
    let header = *w.server.current().unwrap().header();
    let rec = log.append(
        &sk,
        vec![(row, newcomer.public_bytes()), (row, x)],
        vec![header],
        NOW - 60_000,
    );
    let receipt = EnrolmentReceipt::issue(
        &sk,
        row,
        newcomer.public_bytes(),
        N as u64,
        w.server.dh_public().compress().to_bytes(),
        rec.entry.seq,
        NOW - 60_000,
    );
    let c = TracEdgeClient::new(w.server.verifying_key(), row, newcomer, ClientConfig::default());
    let mut v = ClientView::for_receipt(receipt).unwrap();
    let mut from = Vec::new();
    let h = rec.entry.tables[0];
    let end = hostile_session(&mut w, &log, rec.entry.seq, h, &c, &mut v, NOW, &mut from);
    assert!(
        end.caught().is_some_and(|p| p.verify().is_ok()),
        "the receipt's own entry leaves another key at row {row}; the client ends: {}",
        end.short()
    );
}
