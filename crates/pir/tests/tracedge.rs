//! End-to-end tests of TracEdge (Algorithm 1 with the table log) with honest and
//! deviating servers and clients, in process (the TLS transport is tested in
//! `tests/service.rs` and by the CLI).
//!
//! A deviating server here is the honest [`TracEdgeServer`] plus a [`Bugs`] value that
//! replaces any message it sends with one of its choosing, re-signed with the server's
//! key where it likes (in the spirit of BoringSSL's `ProtocolBugs`): an attack is a
//! few lines, and each attack of issue 25 is a test below.

use curve25519_dalek::scalar::Scalar;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use tacit_crypto::sign::SigningKey;
use tacit_pir::Error;
use tacit_pir::lwe::{LweHint, LweServer};
use tacit_pir::tracedge::*;
use tacit_wire::{Decode, Encode};

const NOW: u64 = 1_700_000_000_000;
/// A clock far enough after every entry the tests stamp.
const LATER: u64 = NOW + 365 * 86_400_000;
const N: usize = 300;

struct World {
    server: TracEdgeServer<LweServer>,
    subs: Vec<SubscriberSecret>,
    receipts: Vec<EnrolmentReceipt>,
    views: Vec<Option<ClientView>>,
    rng: ChaCha20Rng,
}

fn world(seed: u64, scheme: CommitScheme, flagged: &[u64], equivocate: bool) -> World {
    world_with(seed, scheme, flagged, equivocate, ServerConfig::default())
}

fn world_with(seed: u64, scheme: CommitScheme, flagged: &[u64], equivocate: bool, config: ServerConfig) -> World {
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
    assert_eq!(receipts.len(), 200);
    let keys = server.directory().keys().to_vec();
    let key = TableKey::random(&mut rng);
    let second = TableKey::random(&mut rng);
    let flag = (!flagged.is_empty()).then_some(Flagged {
        key: &second,
        rows: flagged,
    });
    let mut table = build_lwe_table(
        1,
        key.clone(),
        scheme,
        &server.dh_public(),
        keys,
        flag,
        &|_| {},
        &mut rng,
    )
    .unwrap();
    if !flagged.is_empty() {
        table.add_second_key(second.clone());
        if equivocate {
            let c = commit::equivocate(server.dh_secret(), &key, &second).unwrap();
            table.set_commitment(c);
        }
    }
    server.install(table, NOW - 8_000_000).unwrap();
    let views = (0..N).map(|_| None).collect();
    World {
        server,
        subs,
        receipts,
        views,
        rng,
    }
}

fn client(w: &World, row: u64, config: ClientConfig) -> TracEdgeClient {
    TracEdgeClient::new(w.server.verifying_key(), row, w.subs[row as usize].clone(), config)
}

/// The client's copy of the log (made on first use from its receipt).
fn view(w: &mut World, row: u64) -> ClientView {
    if let Some(v) = &w.views[row as usize] {
        return v.clone();
    }
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

fn hint(w: &World) -> LweHint {
    w.server.current().unwrap().hint().clone()
}

/// Replaces a commit, given the hello and the server's signing key to re-sign.
type CommitBug = Box<dyn Fn(&Hello, Commit, &SigningKey) -> Commit>;

/// How a deviating server changes what it sends (each `None` is honest).
#[derive(Default)]
struct Bugs {
    /// Replaces the commit.
    commit: Option<CommitBug>,
    /// Replaces each log segment.
    segment: Option<Box<dyn Fn(LogSegment) -> LogSegment>>,
    /// Replaces the hint.
    hint: Option<Box<dyn Fn(LweHint) -> LweHint>>,
}

/// How a run ended.
#[derive(Debug)]
enum End {
    Outcome(ClientOutcome, Result<ServerOutcome, Error>),
    Stopped(ClientStop),
}

impl End {
    fn proof(self) -> Box<MisbehaviourProof> {
        match self {
            End::Outcome(ClientOutcome::Caught(p), _) | End::Stopped(ClientStop::Caught(p)) => p,
            other => panic!("expected the server to be caught, got {other:?}"),
        }
    }
}

/// Re-signs a commit after a deviating server changed it.
fn resign(hello: &Hello, mut c: Commit, sk: &SigningKey) -> Commit {
    c.sig = sk.sign(&commit_signed_bytes(
        &c.header,
        c.t_s,
        &hello.nonce,
        &c.server_nonce,
        c.log_seq,
        &c.log_hash,
    ));
    c
}

/// Runs Algorithm 1 with the log sync to the end, the server deviating as `bugs` says;
/// the client's view is kept for the next run.
fn run_bugs(w: &mut World, c: &TracEdgeClient, bugs: &Bugs) -> End {
    let mut v = view(w, c.row());
    let end = run_on(w, c, &mut v, bugs);
    w.views[c.row() as usize] = Some(v);
    end
}

fn run_on(w: &mut World, c: &TracEdgeClient, v: &mut ClientView, bugs: &Bugs) -> End {
    let h = match &bugs.hint {
        Some(f) => f(hint(w)),
        None => hint(w),
    };
    let (mut cs, hello) = c.start(NOW, &mut w.rng);
    let (mut ss, commit) = w.server.hello(&hello, NOW, &mut w.rng).unwrap();
    let commit = match &bugs.commit {
        Some(f) => f(&hello, commit, w.server.signing_key()),
        None => commit,
    };
    loop {
        match c.commit_needs(&cs, &commit, v) {
            Err(s) => return End::Stopped(s),
            Ok(CommitNeeds::Ready) => break,
            Ok(CommitNeeds::Log(req)) => {
                let seg = w.server.log_segment(&req);
                let seg = match &bugs.segment {
                    Some(f) => f(seg),
                    None => seg,
                };
                let before = v.head_seq();
                if let Err(e) = v.apply(&seg, LATER) {
                    return End::Stopped(e.into());
                }
                if v.head_seq() == before {
                    return End::Stopped(ClientStop::Error(Error::Refused("the server sent no log".into())));
                }
            }
        }
    }
    let q = match c.on_commit(&mut cs, commit, h, v, &mut w.rng) {
        Ok(q) => q,
        Err(s) => return End::Stopped(s),
    };
    let resp = w.server.respond(&mut ss, &q).unwrap();
    let auth = match c.on_response(&mut cs, resp, &mut w.rng) {
        Ok(a) => a,
        Err(s) => return End::Stopped(s),
    };
    match w.server.finish(&mut ss, &auth) {
        Ok((reply, out)) => End::Outcome(c.on_server_auth(&mut cs, Ok(reply)), Ok(out)),
        Err(e) => End::Outcome(c.on_server_auth(&mut cs, Err(e.to_string())), Err(e)),
    }
}

fn run(w: &mut World, c: &TracEdgeClient) -> (ClientOutcome, Result<ServerOutcome, Error>) {
    match run_bugs(w, c, &Bugs::default()) {
        End::Outcome(o, s) => (o, s),
        End::Stopped(s) => panic!("the client stopped: {s}"),
    }
}

#[test]
fn honest_authentication_both_sides_agree() {
    let mut w = world(1, CommitScheme::Binding, &[], false);
    for row in [0u64, 17, 199] {
        let c = client(&w, row, ClientConfig::default());
        let (co, so) = run(&mut w, &c);
        let so = so.unwrap();
        assert_eq!(so.key_index, 0);
        match co {
            ClientOutcome::Authenticated { session_key, epoch, .. } => {
                assert_eq!(*session_key, *so.session_key);
                assert_eq!(epoch, 1);
            }
            other => panic!("expected authentication, got {other:?}"),
        }
    }
    // A second run of the same client syncs only the new part of the log.
    let c = client(&w, 17, ClientConfig::default());
    assert!(matches!(run(&mut w, &c).0, ClientOutcome::Authenticated { .. }));
}

#[test]
fn outsider_is_refused_and_sees_no_misbehaviour() {
    let mut w = world(2, CommitScheme::Binding, &[], false);
    let mut rng = ChaCha20Rng::seed_from_u64(99);
    // A key that is not in the directory, claiming a subscriber's row: with no receipt
    // of its own it cannot even start (own-row checks need one).
    let c = TracEdgeClient::new(
        w.server.verifying_key(),
        5,
        SubscriberSecret::random(&mut rng),
        ClientConfig::default(),
    );
    match run_bugs(&mut w, &c, &Bugs::default()) {
        End::Stopped(ClientStop::Error(Error::Refused(m))) => assert!(m.contains("receipt"), "{m}"),
        other => panic!("{other:?}"),
    }
    // With another subscriber's receipt (stolen file, wrong key): refused locally.
    let mut v = view(&mut w, 5);
    match run_on(&mut w, &c, &mut v, &Bugs::default()) {
        End::Stopped(ClientStop::Error(Error::Refused(m))) => assert!(m.contains("another subscriber"), "{m}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn flagged_client_catches_the_server_and_the_proof_verifies_offline() {
    let mut w = world(3, CommitScheme::Binding, &[10, 11], false);
    let c = client(&w, 10, ClientConfig::default());
    let (co, so) = match run_bugs(&mut w, &c, &Bugs::default()) {
        End::Outcome(o, s) => (o, s),
        other => panic!("{other:?}"),
    };
    // The flagged client sent a random MAC: the server cannot tell it from an outsider.
    assert!(matches!(so, Err(Error::Refused(_))));
    let proof = match co {
        ClientOutcome::Caught(p) => p,
        other => panic!("expected the server to be caught, got {other:?}"),
    };
    assert!(matches!(proof.kind, ProofKind::OwnRow { row: 10, .. }));
    let finding = proof.verify().unwrap();
    assert!(finding.what.contains("row 10"), "{}", finding.what);
    // Through its encoding, as a file would carry it.
    let bytes = proof.to_wire();
    let back = MisbehaviourProof::from_wire(&bytes).unwrap();
    assert_eq!(back.verify().unwrap(), finding);
    // A tampered proof does not verify: flip one bit of the signed answer.
    let mut bad = (*proof).clone();
    if let ProofKind::OwnRow { session, .. } = &mut bad.kind {
        session.response.answers[0].values[0] ^= 1;
    }
    assert!(matches!(bad.verify(), Err(Error::Signature(_))));
    // Nor one whose query seed does not make the signed query.
    let mut bad = (*proof).clone();
    if let ProofKind::OwnRow { session, .. } = &mut bad.kind {
        session.queries.own.values[0] ^= 1;
    }
    assert!(bad.verify().is_err());
    // Nor a claim against another subscriber's key.
    let mut bad = (*proof).clone();
    if let ProofKind::OwnRow { subscriber_key, .. } = &mut bad.kind {
        *subscriber_key = w.subs[12].public_bytes();
    }
    assert!(matches!(bad.verify(), Err(Error::InvalidProof(_))));
}

#[test]
fn audits_catch_flagged_rows_of_other_clients() {
    // Every row but 0 is flagged: any audit of client 0 hits a flagged row.
    let flagged: Vec<u64> = (1..N as u64).collect();
    let mut w = world(4, CommitScheme::Binding, &flagged, false);
    let c = client(
        &w,
        0,
        ClientConfig {
            audits: 3,
            ..Default::default()
        },
    );
    let proof = run_bugs(&mut w, &c, &Bugs::default()).proof();
    assert!(matches!(proof.kind, ProofKind::Audit { .. }));
    let finding = proof.verify().unwrap();
    assert_eq!(finding.epoch, 1);
    let back = MisbehaviourProof::from_wire(&proof.to_wire()).unwrap();
    back.verify().unwrap();
}

/// Issue 25, break 1: v2 asked the server for the directory buckets of the audited
/// rows (and of its own row when its check failed) after the answer; a server that
/// left a bucket out suppressed every proof (400 audited sessions: control caught 19
/// times, withholding 0). Now the client takes its own row and the audited rows from
/// its copy of the directory: there is nothing to withhold. Over the same sessions
/// against the same flagged table, every session whose audit covers a flagged row is
/// caught with a proof, and the only thing the server can still withhold — the log —
/// stops the client before it sends anything that depends on its row.
#[test]
fn withholding_cannot_suppress_a_proof() {
    let flagged: Vec<u64> = (100..200).collect();
    let mut w = world(40, CommitScheme::Binding, &flagged, false);
    let config = ClientConfig {
        audits: 4,
        ..Default::default()
    };
    let mut caught = 0;
    let mut hits = 0;
    for i in 0..24u64 {
        let c = client(&w, i % 50, config);
        let mut v = view(&mut w, i % 50);
        let (mut cs, hello) = c.start(NOW, &mut w.rng);
        let (mut ss, commit) = w.server.hello(&hello, NOW, &mut w.rng).unwrap();
        while let CommitNeeds::Log(req) = c.commit_needs(&cs, &commit, &v).unwrap() {
            v.apply(&w.server.log_segment(&req), LATER).unwrap();
        }
        let q = c.on_commit(&mut cs, commit, hint(&w), &v, &mut w.rng).unwrap();
        if cs.audited_rows().iter().any(|r| flagged.contains(r)) {
            hits += 1;
        }
        let resp = w.server.respond(&mut ss, &q).unwrap();
        let auth = c.on_response(&mut cs, resp, &mut w.rng).unwrap();
        let reply = w.server.finish(&mut ss, &auth).map(|r| r.0).map_err(|e| e.to_string());
        if let ClientOutcome::Caught(p) = c.on_server_auth(&mut cs, reply) {
            p.verify().unwrap();
            caught += 1;
        }
    }
    assert!(hits > 0, "the audits must cover flagged rows");
    assert_eq!(caught, hits, "every session whose audit hit a flagged row is caught");
    // Withholding the log: the client stops before queries, having revealed nothing
    // that depends on its row, and never concludes "not enrolled".
    let c = client(&w, 150, config);
    let bugs = Bugs {
        segment: Some(Box::new(|_| LogSegment { records: vec![] })),
        ..Default::default()
    };
    assert!(matches!(
        run_bugs(&mut w, &c, &bugs),
        End::Stopped(ClientStop::Error(_))
    ));
    // A flagged subscriber catches the server with its own row, from its receipt and
    // its copy of the directory.
    let c = client(&w, 150, config);
    assert!(matches!(
        run_bugs(&mut w, &c, &Bugs::default()).proof().kind,
        ProofKind::OwnRow { row: 150, .. }
    ));
}

/// Issue 25, break 1: a failed own-row check never becomes "not enrolled" unless the
/// signed log says so. A removal is a signed change of the row; the client says
/// "not enrolled" naming that entry, before sending any query.
#[test]
fn not_enrolled_only_by_a_signed_removal() {
    let mut w = world(41, CommitScheme::Binding, &[], false);
    let c = client(&w, 8, ClientConfig::default());
    assert!(matches!(run(&mut w, &c).0, ClientOutcome::Authenticated { .. }));
    let empty = w.server.dh_public().compress().to_bytes();
    let applied = w.server.apply_changes(&[(8, empty)], NOW).unwrap();
    let since = applied.records[0].entry.seq;
    match run_bugs(&mut w, &c, &Bugs::default()) {
        End::Stopped(ClientStop::NotEnrolled { row: 8, since: s }) => assert_eq!(s, since),
        other => panic!("{other:?}"),
    }
    // A row whose key the server changes in the table but not in the log is caught.
    let mut w = world(42, CommitScheme::Binding, &[60], false);
    let c = client(&w, 60, ClientConfig::default());
    assert!(matches!(
        run_bugs(&mut w, &c, &Bugs::default()).proof().kind,
        ProofKind::OwnRow { .. }
    ));
}

/// Issue 25, break 2: a server that shows a variant table (the target's row
/// re-encrypted, same K, epoch, R and Γ) to chosen sessions must list it in a log
/// entry; that entry and the one other subscribers hold for the same position are a
/// proof of equivocation — found by the target itself once it has seen the real
/// entry, and offline by two subscribers comparing their views.
#[test]
fn a_variant_table_for_chosen_sessions_is_equivocation() {
    let mut w = world(43, CommitScheme::Binding, &[], false);
    let honest = client(&w, 3, ClientConfig::default());
    assert!(matches!(run(&mut w, &honest).0, ClientOutcome::Authenticated { .. }));
    // The fork: the server signs another entry for the current head position, with
    // a variant header (another table id: the target's row re-encrypted).
    let head = w.server.log().head().clone();
    let mut fork = head.clone();
    fork.tables[0].table_id[0] ^= 1;
    fork.sig = w.server.signing_key().sign(&fork.signed_bytes());
    let fork_rec = LogRecord {
        entry: fork.clone(),
        changes: w.server.log().records()[head.seq as usize].changes.clone(),
    };
    let variant_header = fork.tables[0];
    let (fseq, fhash) = (fork.seq, fork.hash());
    let bugs = || Bugs {
        commit: Some(Box::new(move |h: &Hello, mut c: Commit, sk: &SigningKey| {
            c.header = variant_header;
            c.log_seq = fseq;
            c.log_hash = fhash;
            resign(h, c, sk)
        })),
        segment: Some(Box::new({
            let fork_rec = fork_rec.clone();
            move |mut s: LogSegment| {
                for r in s.records.iter_mut() {
                    if r.entry.seq == fork_rec.entry.seq {
                        *r = fork_rec.clone();
                    }
                }
                s
            }
        })),
        ..Default::default()
    };
    // A subscriber that holds the real entry (it authenticated before) catches it:
    // the signed commit names another entry for a position it holds.
    let proof = run_bugs(&mut w, &honest, &bugs()).proof();
    assert!(matches!(proof.kind, ProofKind::CommitNotInLog { .. }));
    assert!(proof.verify().unwrap().what.contains("different tables"));
    // Had it synced from an earlier position, the fork arrives in the segment: an
    // equivocation proof.
    let mut v_old = ClientView::new(
        w.server.verifying_key(),
        N as u64,
        w.server.dh_public().compress().to_bytes(),
    )
    .unwrap();
    let real = w.server.log_segment(&LogRequest { from: 0, to: head.seq });
    v_old.apply(&real, LATER).unwrap();
    match v_old.apply(
        &LogSegment {
            records: vec![fork_rec.clone()],
        },
        LATER,
    ) {
        Err(ViewError::Caught(p)) => {
            assert!(matches!(p.kind, ProofKind::Equivocation { .. }));
            assert!(p.verify().unwrap().what.contains("different tables"));
        }
        other => panic!("{other:?}"),
    }
    // A subscriber seeing the server for the first time takes the fork; comparing its
    // view with one of the real log proves the equivocation offline.
    let target = client(&w, 4, ClientConfig::default());
    let mut v_target = view(&mut w, 4);
    let _ = run_on(&mut w, &target, &mut v_target, &bugs());
    assert_eq!(v_target.head(), Some(&fork));
    let v_honest = w.views[3].clone().unwrap();
    let p = v_target.compare(&v_honest).unwrap().expect("the views differ");
    p.verify().unwrap();
    let p = MisbehaviourProof::from_wire(&p.to_wire()).unwrap();
    p.verify().unwrap();
    // Honest views compare clean.
    let other = client(&w, 9, ClientConfig::default());
    assert!(matches!(run(&mut w, &other).0, ClientOutcome::Authenticated { .. }));
    assert!(w.views[9].as_ref().unwrap().compare(&v_honest).unwrap().is_none());
}

/// Issue 25, break 2: a re-signed header with a smaller `rows` turned the client's
/// early row-range check into a membership probe ("is this client's row < R?"). Now
/// a header the log entry does not list is a proof, the same for every row.
#[test]
fn a_resigned_header_with_another_n_is_proven_whatever_the_row() {
    let mut w = world(44, CommitScheme::Binding, &[], false);
    for row in [5u64, 150] {
        let c = client(&w, row, ClientConfig::default());
        let bugs = Bugs {
            commit: Some(Box::new(|h: &Hello, mut c: Commit, sk: &SigningKey| {
                c.header.rows = 100;
                resign(h, c, sk)
            })),
            ..Default::default()
        };
        let p = run_bugs(&mut w, &c, &bugs).proof();
        assert!(matches!(p.kind, ProofKind::CommitNotInLog { .. }), "row {row}");
        p.verify().unwrap();
    }
}

/// A commit that names an older log head than one the client already holds: with a
/// proof when the held entry is older than the commit by the margin.
#[test]
fn a_rollback_of_the_log_head_is_refused_or_proven() {
    let mut w = world(45, CommitScheme::Binding, &[], false);
    let c = client(&w, 2, ClientConfig::default());
    assert!(matches!(run(&mut w, &c).0, ClientOutcome::Authenticated { .. }));
    let empty = w.server.dh_public().compress().to_bytes();
    // Time passes; the log moves on (a removal); the client syncs.
    w.server.apply_changes(&[(199, empty)], NOW).unwrap();
    assert!(matches!(run(&mut w, &c).0, ClientOutcome::Authenticated { .. }));
    // The entry before the newest: the evidence of a rollback to it is the newest
    // entry (the one after the commit's head), signed at NOW.
    let records = w.server.log().records();
    let older = records[records.len() - 2].entry.clone();
    let bugs = Bugs {
        commit: Some(Box::new(move |h: &Hello, mut c: Commit, sk: &SigningKey| {
            c.log_seq = older.seq;
            c.log_hash = older.hash();
            resign(h, c, sk)
        })),
        ..Default::default()
    };
    // The client's newest entry was signed at NOW, as is the commit: refused, no proof.
    match run_bugs(&mut w, &c, &bugs) {
        End::Stopped(ClientStop::Error(Error::Refused(m))) => assert!(m.contains("already holds"), "{m}"),
        other => panic!("{other:?}"),
    }
    // An hour later the same rollback is a proof.
    let (mut cs, hello) = c.start(NOW + 3_600_000, &mut w.rng);
    let _ = &mut cs;
    let (_, commit) = w.server.hello(&hello, NOW + 3_600_000, &mut w.rng).unwrap();
    let records = w.server.log().records();
    let older = records[records.len() - 2].entry.clone();
    let mut rolled = commit;
    rolled.log_seq = older.seq;
    rolled.log_hash = older.hash();
    let rolled = resign(&hello, rolled, w.server.signing_key());
    match c.commit_needs(&cs, &rolled, w.views[2].as_ref().unwrap()) {
        Err(ClientStop::Caught(p)) => {
            assert!(matches!(p.kind, ProofKind::Rollback { .. }));
            p.verify().unwrap();
        }
        other => panic!("{other:?}"),
    }
}

/// A receipt whose entry does not register the key (the server left the
/// registration out of its log) is a proof.
#[test]
fn a_receipt_the_log_does_not_honour_is_proven() {
    let mut w = world(46, CommitScheme::Binding, &[], false);
    let newcomer = SubscriberSecret::random(&mut w.rng);
    // The server signs a receipt for row 250 at the next entry, then logs nothing
    // for the row.
    let next = w.server.log().head().seq + 1;
    let empty = w.server.dh_public().compress().to_bytes();
    let receipt = EnrolmentReceipt::issue(
        w.server.signing_key(),
        250,
        newcomer.public_bytes(),
        N as u64,
        empty,
        next,
        NOW,
    );
    let other = SubscriberSecret::random(&mut w.rng);
    w.server.apply_changes(&[(251, other.public_bytes())], NOW).unwrap();
    let mut v = ClientView::new(
        w.server.verifying_key(),
        N as u64,
        w.server.dh_public().compress().to_bytes(),
    )
    .unwrap();
    v.set_own(receipt).unwrap();
    let c = TracEdgeClient::new(w.server.verifying_key(), 250, newcomer, ClientConfig::default());
    let p = run_on(&mut w, &c, &mut v, &Bugs::default()).proof();
    assert!(matches!(p.kind, ProofKind::Receipt { .. }));
    assert!(p.verify().unwrap().what.contains("row 250"));
}

/// Issue 25, hole 3: one epoch has one `A`; a table with another (a cookie for the
/// hint cache) is refused even when the log lists it.
#[test]
fn the_lwe_matrix_is_derived_from_the_epoch() {
    let mut w = world(47, CommitScheme::Binding, &[], false);
    let keys = w.server.directory().keys().to_vec();
    let key = TableKey::random(&mut w.rng);
    let table = tacit_pir::Table::from_bytes(
        tacit_pir::tracedge::keytable::build_rows(&key, 2, &keys, None, &|_| {}).unwrap(),
        16,
    )
    .unwrap();
    let pir = LweServer::setup(&table, tacit_pir::lwe::LweParams::new(table.shape(), [9; 16]).unwrap()).unwrap();
    let hint = pir.hint();
    let dir = Directory::build(keys).unwrap();
    let live = LiveTable::new(
        2,
        key,
        CommitScheme::Binding,
        &w.server.dh_public(),
        pir,
        hint,
        dir,
        None,
        &mut w.rng,
    )
    .unwrap();
    w.server.install(live, NOW).unwrap();
    let c = client(&w, 7, ClientConfig::default());
    match run_bugs(&mut w, &c, &Bugs::default()) {
        End::Stopped(ClientStop::Error(Error::Refused(m))) => assert!(m.contains("derives"), "{m}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn honest_transcript_makes_no_valid_proof() {
    // A client that fabricates an own-row proof against an honest server fails.
    let mut w = world(5, CommitScheme::Binding, &[7], false);
    let c = client(&w, 7, ClientConfig::default());
    let proof = run_bugs(&mut w, &c, &Bugs::default()).proof();
    let mut bad = (*proof).clone();
    if let ProofKind::OwnRow { shared, .. } = &mut bad.kind {
        shared[0] ^= 1;
    }
    assert!(bad.verify().is_err());
    // Two identical log entries are no equivocation; non-consecutive ones neither.
    let log = w.server.log();
    let e1 = log.records()[1].entry.clone();
    let e3 = log.head().clone();
    for (a, b) in [(e1.clone(), e1.clone()), (log.records()[0].entry.clone(), e3)] {
        let p = MisbehaviourProof {
            server_key: w.server.verifying_key().to_bytes(),
            kind: ProofKind::Equivocation { a, b },
        };
        assert!(matches!(p.verify(), Err(Error::InvalidProof(_))));
    }
    // Honest server, honest client: authenticated.
    let mut w = world(6, CommitScheme::Binding, &[], false);
    let c = client(&w, 3, ClientConfig::default());
    let (co, _) = run(&mut w, &c);
    assert!(matches!(co, ClientOutcome::Authenticated { .. }));
}

#[test]
fn equivocation_defeats_the_papers_commitment_but_not_the_binding_one() {
    // The paper's commitment, equivocated: the flagged client's check passes and the
    // server learns which key it used (the tag).
    let mut w = world(7, CommitScheme::PaperEquivocable, &[20], true);
    let config = ClientConfig {
        audits: 0,
        accept_paper_commitment: true,
    };
    let c = client(&w, 20, config);
    let (co, so) = run(&mut w, &c);
    assert!(matches!(co, ClientOutcome::Authenticated { .. }), "{co:?}");
    assert_eq!(so.unwrap().key_index, 1, "the server tagged the client");
    // An unflagged client authenticates with the committed key.
    let c = client(&w, 21, config);
    let (co, so) = run(&mut w, &c);
    assert!(matches!(co, ClientOutcome::Authenticated { .. }));
    assert_eq!(so.unwrap().key_index, 0);
    // A default client refuses the paper's commitment outright.
    let c = client(&w, 21, ClientConfig::default());
    assert!(matches!(
        run_bugs(&mut w, &c, &Bugs::default()),
        End::Stopped(ClientStop::Error(Error::Refused(_)))
    ));

    // The same cheat against the binding commitment: the server cannot equivocate, so
    // its commitment opens to K only and the flagged client catches it.
    let mut w = world(7, CommitScheme::Binding, &[20], false);
    let c = client(
        &w,
        20,
        ClientConfig {
            audits: 0,
            ..Default::default()
        },
    );
    run_bugs(&mut w, &c, &Bugs::default()).proof().verify().unwrap();
}

#[test]
fn detection_is_exactly_a_query_hitting_a_flagged_row() {
    // Without audits a cheat is detected exactly when the authenticating client's row
    // is flagged (Table 1, "No matches" column).
    let flagged = [3u64, 50, 77, 150];
    let mut w = world(8, CommitScheme::Binding, &flagged, false);
    let config = ClientConfig {
        audits: 0,
        ..Default::default()
    };
    for row in [1u64, 3, 49, 50, 77, 100, 150, 199] {
        let c = client(&w, row, config);
        match run_bugs(&mut w, &c, &Bugs::default()) {
            End::Outcome(ClientOutcome::Caught(_), _) => assert!(flagged.contains(&row), "row {row}"),
            End::Outcome(ClientOutcome::Authenticated { .. }, so) => {
                assert!(!flagged.contains(&row), "row {row}");
                assert_eq!(so.unwrap().key_index, 0);
            }
            other => panic!("row {row}: {other:?}"),
        }
    }
}

#[test]
fn replayed_and_stale_messages_are_refused() {
    let mut w = world(9, CommitScheme::Binding, &[], false);
    let c = client(&w, 1, ClientConfig::default());
    let mut v = view(&mut w, 1);
    let (mut cs, hello) = c.start(NOW, &mut w.rng);
    // The client sends no clock (hole 7 and review L1: the offset of a client's clock
    // linked its sessions, even rounded to the minute): t_s is the server's, signed.
    assert_eq!(hello.t_s, 0);
    let (mut ss, commit) = w.server.hello(&hello, NOW, &mut w.rng).unwrap();
    // Replay of the same timestamp and nonce.
    assert!(matches!(
        w.server.hello(&hello, NOW, &mut w.rng),
        Err(Error::Refused(_))
    ));
    // A server clock far from the client's: the client refuses the commit.
    let (cs_old, old) = c.start(NOW - 3_600_000, &mut w.rng);
    let (_, c_old) = w.server.hello(&old, NOW, &mut w.rng).unwrap();
    match c.commit_needs(&cs_old, &c_old, &v) {
        Err(ClientStop::Error(Error::Refused(m))) => assert!(m.contains("clock"), "{m}"),
        other => panic!("{other:?}"),
    }
    // A commit for another hello is refused by the client.
    let (cs2, _) = c.start(NOW, &mut w.rng);
    assert!(c.commit_needs(&cs2, &commit, &v).is_err());
    // A tampered signature is refused.
    let mut forged = commit.clone();
    forged.header.rows -= 1;
    assert!(matches!(
        c.commit_needs(&cs, &forged, &v),
        Err(ClientStop::Error(Error::Signature(_)))
    ));
    while let CommitNeeds::Log(req) = c.commit_needs(&cs, &commit, &v).unwrap() {
        v.apply(&w.server.log_segment(&req), LATER).unwrap();
    }
    // Queries for another epoch are refused; the session survives.
    let mut q = c.on_commit(&mut cs, commit, hint(&w), &v, &mut w.rng).unwrap();
    q.epoch += 1;
    assert!(matches!(w.server.respond(&mut ss, &q), Err(Error::Refused(_))));
    q.epoch -= 1;
    let resp = w.server.respond(&mut ss, &q).unwrap();
    // A second set of queries in the same session is out of order.
    assert!(matches!(w.server.respond(&mut ss, &q), Err(Error::Refused(_))));
    // A response replayed into another session does not verify.
    let (mut cs3, hello3) = c.start(NOW + 1, &mut w.rng);
    let (_, commit3) = w.server.hello(&hello3, NOW + 1, &mut w.rng).unwrap();
    c.on_commit(&mut cs3, commit3, hint(&w), &v, &mut w.rng).unwrap();
    assert!(matches!(
        c.on_response(&mut cs3, resp.clone(), &mut w.rng),
        Err(ClientStop::Error(Error::Signature(_) | Error::Refused(_)))
    ));
    // One answer value changed (the signature covers the answers' digest): refused,
    // and the session still takes the genuine response.
    let mut tampered = resp.clone();
    tampered.answers[1].values[0] ^= 1;
    assert!(matches!(
        c.on_response(&mut cs, tampered, &mut w.rng),
        Err(ClientStop::Error(Error::Signature(_)))
    ));
    c.on_response(&mut cs, resp, &mut w.rng).unwrap();
}

/// Issue 25, hole 6: the replay set is bounded in count; past it the server sheds
/// load with a typed "busy" refusal.
#[test]
fn a_full_replay_set_is_busy() {
    let mut w = world_with(
        48,
        CommitScheme::Binding,
        &[],
        false,
        ServerConfig {
            max_replay_entries: 3,
            ..ServerConfig::default()
        },
    );
    let c = client(&w, 1, ClientConfig::default());
    let _v = view(&mut w, 1);
    for _ in 0..3 {
        let (_, hello) = c.start(NOW, &mut w.rng);
        w.server.hello(&hello, NOW, &mut w.rng).unwrap();
    }
    let (_, hello) = c.start(NOW, &mut w.rng);
    assert!(matches!(w.server.hello(&hello, NOW, &mut w.rng), Err(Error::Busy(_))));
    // Once the entries leave the skew window, sessions are accepted again.
    w.server.expire(NOW + 3_600_000).unwrap();
    let (_, hello) = c.start(NOW + 3_600_000, &mut w.rng);
    w.server.hello(&hello, NOW + 3_600_000, &mut w.rng).unwrap();
}

/// Issue 25, hole 10: an audit count that one query cannot honour is an error, and
/// the session reports the rows it audited.
#[test]
fn audit_counts_are_honoured_or_refused() {
    let mut w = world(49, CommitScheme::Binding, &[], false);
    let c = client(
        &w,
        1,
        ClientConfig {
            audits: 5000,
            ..Default::default()
        },
    );
    match run_bugs(&mut w, &c, &Bugs::default()) {
        End::Stopped(ClientStop::Error(Error::InvalidSelection(m))) => assert!(m.contains("at most"), "{m}"),
        other => panic!("{other:?}"),
    }
    let params = hint(&w).params;
    let cap = max_audits(&params);
    let c = client(
        &w,
        1,
        ClientConfig {
            audits: cap,
            ..Default::default()
        },
    );
    let mut v = view(&mut w, 1);
    let (mut cs, hello) = c.start(NOW, &mut w.rng);
    let (_, commit) = w.server.hello(&hello, NOW, &mut w.rng).unwrap();
    while let CommitNeeds::Log(req) = c.commit_needs(&cs, &commit, &v).unwrap() {
        v.apply(&w.server.log_segment(&req), LATER).unwrap();
    }
    c.on_commit(&mut cs, commit, hint(&w), &v, &mut w.rng).unwrap();
    let audited = cs.audited_rows();
    assert!(!audited.is_empty() && audited.len() <= cap);
    assert!(!audited.contains(&1));
}

#[test]
fn rekeying_serves_the_deprecated_table_until_its_keys_expire() {
    let mut w = world(10, CommitScheme::Binding, &[], false);
    let c = client(&w, 4, ClientConfig::default());
    assert!(matches!(run(&mut w, &c).0, ClientOutcome::Authenticated { .. }));
    // A session starts on epoch 1.
    let old_hint = hint(&w);
    let mut v = view(&mut w, 4);
    let (mut cs, hello) = c.start(NOW, &mut w.rng);
    let (mut ss, commit) = w.server.hello(&hello, NOW, &mut w.rng).unwrap();
    while let CommitNeeds::Log(req) = c.commit_needs(&cs, &commit, &v).unwrap() {
        v.apply(&w.server.log_segment(&req), LATER).unwrap();
    }
    // Rekey: epoch 2 becomes current while the session is in flight.
    let keys = w.server.directory().keys().to_vec();
    let t2 = build_lwe_table(
        2,
        TableKey::random(&mut w.rng),
        CommitScheme::Binding,
        &w.server.dh_public(),
        keys,
        None,
        &|_| {},
        &mut w.rng,
    )
    .unwrap();
    w.server.install(t2, NOW).unwrap();
    let q = c.on_commit(&mut cs, commit, old_hint, &v, &mut w.rng).unwrap();
    let resp = w.server.respond(&mut ss, &q).unwrap();
    let auth = c.on_response(&mut cs, resp, &mut w.rng).unwrap();
    let (reply, _) = w.server.finish(&mut ss, &auth).unwrap();
    match c.on_server_auth(&mut cs, Ok(reply)) {
        ClientOutcome::Authenticated { epoch, expires_ms, .. } => {
            assert_eq!(epoch, 1);
            // The session began while epoch 1 was current.
            assert_eq!(expires_ms, 0);
        }
        other => panic!("{other:?}"),
    }
    w.views[4] = Some(v);
    let old = w.server.tables().find(|t| t.header().epoch == 1).unwrap();
    assert_eq!(old.header().expires_ms, NOW + ServerConfig::default().grace_ms);
    // New sessions run on epoch 2.
    let (co, _) = run(&mut w, &c);
    assert!(matches!(co, ClientOutcome::Authenticated { epoch: 2, .. }));
    // After the grace period the old table is gone (a log entry says so): a late
    // session is refused.
    let _v = view(&mut w, 4);
    let (_, hello) = c.start(NOW, &mut w.rng);
    let (mut ss, _) = w.server.hello(&hello, NOW, &mut w.rng).unwrap();
    let fake_old = Queries {
        epoch: 1,
        own: tacit_pir::lwe::LweQuery {
            table_id: [0; 32],
            values: vec![],
        },
        audits: vec![],
    };
    let recs = w.server.expire(NOW + ServerConfig::default().grace_ms + 1).unwrap();
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0].entry.tables.len(), 1);
    assert!(w.server.tables().all(|t| t.header().epoch == 2));
    assert!(matches!(w.server.respond(&mut ss, &fake_old), Err(Error::Refused(_))));
}

#[test]
fn registration_and_removal_on_the_fly_while_serving() {
    let mut w = world(11, CommitScheme::Binding, &[], false);
    // Register a new subscriber into empty row 260 of the live table.
    let newcomer = SubscriberSecret::random(&mut w.rng);
    let applied = w.server.apply_changes(&[(260, newcomer.public_bytes())], NOW).unwrap();
    assert_eq!(applied.receipts.len(), 1);
    w.receipts.push(applied.receipts[0].clone());
    let c = TracEdgeClient::new(w.server.verifying_key(), 260, newcomer.clone(), ClientConfig::default());
    let (co, _) = run(&mut w, &c);
    assert!(matches!(co, ClientOutcome::Authenticated { .. }), "{co:?}");
    // Others are unaffected.
    let c = client(&w, 9, ClientConfig::default());
    assert!(matches!(run(&mut w, &c).0, ClientOutcome::Authenticated { .. }));
}

/// Issue 25, hole 5: one query with a wrong length or table id refused the whole
/// batch; now each session is checked on its own and fails alone.
#[test]
fn one_bad_session_fails_alone_in_a_batch() {
    let mut w = world(12, CommitScheme::Binding, &[], false);
    let clients: Vec<TracEdgeClient> = (0..4).map(|r| client(&w, r * 13, ClientConfig::default())).collect();
    let mut c_sessions = Vec::new();
    let mut s_sessions = Vec::new();
    let mut queries = Vec::new();
    for c in clients.iter() {
        let mut v = view(&mut w, c.row());
        let (mut cs, hello) = c.start(NOW, &mut w.rng);
        let (ss, commit) = w.server.hello(&hello, NOW, &mut w.rng).unwrap();
        while let CommitNeeds::Log(req) = c.commit_needs(&cs, &commit, &v).unwrap() {
            v.apply(&w.server.log_segment(&req), LATER).unwrap();
        }
        queries.push(c.on_commit(&mut cs, commit, hint(&w), &v, &mut w.rng).unwrap());
        c_sessions.push(cs);
        s_sessions.push(ss);
    }
    // Session 1 sends a query of the wrong length, session 2 one for another table.
    queries[1].own.values.pop();
    queries[2].audits[0].table_id[0] ^= 1;
    let mut items: Vec<(&mut ServerSession, &Queries)> = s_sessions.iter_mut().zip(queries.iter()).collect();
    let responses = w.server.respond_batch(&mut items);
    assert!(matches!(responses[1], Err(Error::WrongLength { .. })));
    assert!(matches!(responses[2], Err(Error::WrongTable { .. })));
    for i in [0usize, 3] {
        let (c, cs, ss) = (&clients[i], &mut c_sessions[i], &mut s_sessions[i]);
        let auth = c.on_response(cs, responses[i].clone().unwrap(), &mut w.rng).unwrap();
        let (reply, _) = w.server.finish(ss, &auth).unwrap();
        assert!(matches!(
            c.on_server_auth(cs, Ok(reply)),
            ClientOutcome::Authenticated { .. }
        ));
    }
}

#[test]
fn messages_round_trip_and_reject_trailing_bytes() {
    let mut w = world(13, CommitScheme::Binding, &[], false);
    let c = client(&w, 2, ClientConfig::default());
    let mut v = view(&mut w, 2);
    let (mut cs, hello) = c.start(NOW, &mut w.rng);
    let (mut ss, commit) = w.server.hello(&hello, NOW, &mut w.rng).unwrap();
    let mut segs = Vec::new();
    while let CommitNeeds::Log(req) = c.commit_needs(&cs, &commit, &v).unwrap() {
        let seg = w.server.log_segment(&req);
        v.apply(&seg, LATER).unwrap();
        segs.push(seg);
    }
    let q = c.on_commit(&mut cs, commit.clone(), hint(&w), &v, &mut w.rng).unwrap();
    let resp = w.server.respond(&mut ss, &q).unwrap();
    assert_eq!(Hello::from_wire(&hello.to_wire()).unwrap(), hello);
    assert_eq!(Commit::from_wire(&commit.to_wire()).unwrap(), commit);
    assert_eq!(Queries::from_wire(&q.to_wire()).unwrap(), q);
    assert_eq!(Response::from_wire(&resp.to_wire()).unwrap(), resp);
    assert_eq!(LogSegment::from_wire(&segs[0].to_wire()).unwrap(), segs[0]);
    let refusal = Refusal {
        code: RefusalCode::TableChanged,
        reason: "x".repeat(600),
    };
    let back = Refusal::from_wire(&refusal.to_wire()).unwrap();
    assert_eq!(back.code, RefusalCode::TableChanged);
    assert_eq!(back.reason.len(), 512);
    for bytes in [
        hello.to_wire(),
        commit.to_wire(),
        q.to_wire(),
        resp.to_wire(),
        segs[0].to_wire(),
    ] {
        let mut long = bytes.clone();
        long.push(0);
        assert!(Hello::from_wire(&long).is_err() && Commit::from_wire(&long).is_err());
        assert!(Queries::from_wire(&long).is_err() && Response::from_wire(&long).is_err());
        assert!(LogSegment::from_wire(&long).is_err());
        for cut in [0, 1, bytes.len() / 2, bytes.len() - 1] {
            assert!(Hello::from_wire(&bytes[..cut]).is_err());
            assert!(Commit::from_wire(&bytes[..cut]).is_err());
            assert!(Queries::from_wire(&bytes[..cut]).is_err());
            assert!(Response::from_wire(&bytes[..cut]).is_err());
            assert!(LogSegment::from_wire(&bytes[..cut]).is_err());
        }
    }
    assert_eq!(w.server.current().unwrap().directory().rows(), N as u64);
}
