//! The hostile-operator harness of the TracEdge review tests (`tracedge_review*.rs`):
//! a world (server, subscribers, views), a fully hostile server (`Hostile`) that can
//! serve any log it signs and run a session on any table it holds, and the sessions.
#![allow(dead_code, unused_imports)]

use curve25519_dalek::scalar::Scalar;
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use sha2::{Digest, Sha256};
use tacit_crypto::sign::SigningKey;
use tacit_pir::lwe::LweServer;
use tacit_pir::tracedge::*;
use tacit_pir::{Error, PirServer};
use tacit_wire::Encode;

pub const NOW: u64 = 1_700_000_000_000;
/// A clock far enough after every entry the tests stamp.
pub const LATER: u64 = NOW + 365 * 86_400_000;
pub const N: usize = 300;

pub struct World {
    pub server: TracEdgeServer<LweServer>,
    pub subs: Vec<SubscriberSecret>,
    pub receipts: Vec<EnrolmentReceipt>,
    pub rng: ChaCha20Rng,
}

pub fn world(seed: u64, flagged: &[u64]) -> World {
    world_with(seed, flagged, ServerConfig::default())
}

pub fn world_with(seed: u64, flagged: &[u64], config: ServerConfig) -> World {
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

pub fn client(w: &World, row: u64, audits: usize) -> TracEdgeClient {
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

pub fn fresh_view(w: &World, row: u64) -> ClientView {
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
pub enum End {
    Outcome(ClientOutcome, Option<usize>),
    Stopped(ClientStop),
}

impl End {
    pub fn authenticated(&self) -> bool {
        matches!(self, End::Outcome(ClientOutcome::Authenticated { .. }, _))
    }
    pub fn caught(&self) -> Option<&MisbehaviourProof> {
        match self {
            End::Outcome(ClientOutcome::Caught(p), _) | End::Stopped(ClientStop::Caught(p)) => Some(p),
            _ => None,
        }
    }
    pub fn short(&self) -> String {
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
pub struct Hostile {
    pub records: Vec<LogRecord>,
}

impl Hostile {
    pub fn of(w: &World) -> Self {
        Hostile {
            records: w.server.log().records().to_vec(),
        }
    }

    pub fn head(&self) -> &LogEntry {
        &self.records.last().unwrap().entry
    }

    pub fn directory(&self) -> Directory {
        let rows = self.head().rows;
        let mut d = Directory::build(vec![self.records[0].entry.empty_key; rows as usize]).unwrap();
        for r in &self.records {
            d.set_many(&r.changes).unwrap();
        }
        d
    }

    /// Signs and appends an entry with `changes` (anything: they are not checked)
    /// listing `tables` (each re-pointed at the new directory root).
    pub fn append(
        &mut self,
        sk: &SigningKey,
        changes: Vec<Change>,
        tables: Vec<TableHeader>,
        time_ms: u64,
    ) -> LogRecord {
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

    pub fn segment(&self, req: &LogRequest) -> LogSegment {
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
pub fn hostile_session(
    w: &mut World,
    log: &Hostile,
    log_seq: u64,
    header: TableHeader,
    c: &TracEdgeClient,
    v: &mut ClientView,
    now: u64,
    from_seen: &mut Vec<u64>,
) -> End {
    hostile_session_mangled(&|_| {}, w, log, log_seq, header, c, v, now, from_seen)
}

/// [`hostile_session`] whose signed answers are first changed by `mangle`.
#[allow(clippy::too_many_arguments)]
pub fn hostile_session_mangled(
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
pub fn honest_session(w: &mut World, c: &TracEdgeClient, v: &mut ClientView, now: u64) -> End {
    let hint = w.server.current().unwrap().hint().clone();
    let r = authenticate_in_process(&mut w.server, c, v, hint, now, &mut w.rng);
    match r.client {
        Ok(o) => End::Outcome(o, r.key_index),
        Err(s) => End::Stopped(s),
    }
}
