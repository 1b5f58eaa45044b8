//! Third adversarial review of TracEdge (after commit 0b9d04b): a hostile operator
//! tags subscribers through the fixes of the second review (log sync window, hint cache key, MalformedAnswer).
//!
//! Every test here asserts the SECURE behaviour `docs/pir.md` promises and FAILS on
//! the reviewed code (branch rev-pir3); `held_*` tests record attacks that did not
//! work. The harness (`World`, `Hostile`, `hostile_session`) is `tests/hostile/`.

use rand_core::RngCore;
use tacit_crypto::sign::SigningKey;
use tacit_pir::tracedge::*;

mod hostile;
use hostile::*;

/// A commit to `header` under log entry `log_seq` (with `log_hash`), signed by the
/// server's key, for the session `hello` starts.
fn signed_commit(
    w: &mut World,
    hello: &Hello,
    header: TableHeader,
    log_seq: u64,
    log_hash: [u8; 32],
    now: u64,
) -> Commit {
    let sk = SigningKey::from_seed(&w.server.signing_key().to_seed());
    let mut server_nonce = [0u8; 32];
    w.rng.fill_bytes(&mut server_nonce);
    let sig = sk.sign(&commit_signed_bytes(
        &header,
        now,
        &hello.nonce,
        &server_nonce,
        log_seq,
        &log_hash,
    ));
    Commit {
        header,
        t_s: now,
        server_nonce,
        log_seq,
        log_hash,
        sig,
    }
}

/// The log-sync part of a session against a server that answers each `LogRequest`
/// with `serve`: `Ok(requests)` when the client is ready to query, `Err` where it
/// stopped.
fn sync_only(
    w: &mut World,
    c: &TracEdgeClient,
    v: &mut ClientView,
    now: u64,
    serve: &mut dyn FnMut(&LogRequest) -> LogSegment,
) -> Result<Vec<LogRequest>, String> {
    let log = Hostile::of(w);
    let header = *w.server.current().unwrap().header();
    let (cs, hello) = c.start(now, &mut w.rng);
    let head = log.head().clone();
    let commit = signed_commit(w, &hello, header, head.seq, head.hash(), now);
    let mut reqs = Vec::new();
    for _ in 0..1000 {
        match c.commit_needs(&cs, &commit, v) {
            Err(s) => return Err(format!("{reqs:?} then stopped: {s:?}")),
            Ok(CommitNeeds::Ready) => return Ok(reqs),
            Ok(CommitNeeds::Log(req)) => {
                reqs.push(req);
                let seg = serve(&req);
                v.apply(&seg, now)
                    .map_err(|e| format!("{reqs:?} then refused the segment: {e:?}"))?;
            }
        }
    }
    Err("the client never stopped asking".into())
}

// ---------------------------------------------------------------------------------
// G1. A segment that skips entries tells the server where the client's copy ends.
// ---------------------------------------------------------------------------------

/// The fixed window makes the first `LogRequest` depend on the client's copy only
/// through `k`; but neither `ClientView::apply` nor `commit_needs` (nor the service
/// client's `sync` loop) checks that the segment the server sends STARTS at the
/// requested `from` and has no gap. A client takes a segment whose first entry is
/// `P > from` exactly when it already holds entries `from..P` (they are skipped as
/// held), and refuses it ("the server sent log entry P where entry h+1 was next")
/// otherwise. So the server answers the window with a segment that starts one past
/// the head a chosen earlier session of the client ended on: that client goes on
/// and authenticates, every other client stops — without any proof (the entries are
/// the honest, signed chain). Repeated with other positions, this is a linear or
/// binary search for where the client's copy ends, which the window was to hide.
/// Secure: a segment that does not begin at `from` (or has a gap) is refused by
/// every client alike, whatever it holds.
#[test]
fn a_log_segment_that_skips_held_entries_does_not_tell_where_the_clients_copy_ends() {
    let mut w = world(301, &[]);
    let (a, b) = (client(&w, 10, 4), client(&w, 20, 4));
    let (mut va, mut vb) = (fresh_view(&w, 10), fresh_view(&w, 20));
    // Both clients synced once; then three entries; then only A synced again; then
    // three more.
    assert!(honest_session(&mut w, &a, &mut va, LATER).authenticated());
    assert!(honest_session(&mut w, &b, &mut vb, LATER).authenticated());
    for i in 0..3 {
        w.server.apply_changes(&[], NOW + i * 1000).unwrap();
    }
    assert!(honest_session(&mut w, &a, &mut va, LATER + 1000).authenticated());
    let tag = va.head_seq().unwrap();
    for i in 0..3 {
        w.server.apply_changes(&[], NOW + 10_000 + i * 1000).unwrap();
    }
    let log = Hostile::of(&w);
    // The hostile answer to any first request: the entries after `tag` only.
    let mut serve = |req: &LogRequest| {
        if req.from <= tag {
            LogSegment {
                records: log.records[tag as usize + 1..].to_vec(),
            }
        } else {
            log.segment(req)
        }
    };
    let ra = sync_only(&mut w, &a, &mut va, LATER + 2000, &mut serve);
    let rb = sync_only(&mut w, &b, &mut vb, LATER + 2000, &mut serve);
    eprintln!("A (copy ends at {tag}): {ra:?}\nB: {rb:?}");
    assert_eq!(
        ra.is_ok(),
        rb.is_ok(),
        "a segment starting at entry {} is taken by the client whose copy ends at {tag} and refused by the other: the server learns where a client's copy ends, with no proof",
        tag + 1
    );
    // The fix: a segment that does not start at the request's `from` is refused by
    // both, whatever they hold.
    assert!(ra.is_err() && rb.is_err(), "A: {ra:?}; B: {rb:?}");
}

// ---------------------------------------------------------------------------------
// G2. The "next after segment" cursor outlives the session.
// ---------------------------------------------------------------------------------

/// `ClientView::next_after_segment` is a field of the VIEW (kept in memory for as
/// long as the view lives), but `commit_needs` uses it as the SESSION's cursor. In a
/// process that keeps its view across sessions (any embedding of the sans-I/O
/// client, `authenticate_in_process`), a server that answers a session's first
/// request with an empty segment makes `commit_needs` ask again from the previous
/// session's last segment end + 1 — exactly one past the head that the client's
/// previous session was shown: the server links the two sessions (each session can
/// be shown its own head by appending an entry per session), and nothing is
/// provable. A client whose view was just loaded from a file stops instead ("no
/// further log entries"): clients behave differently by their history. Secure: an
/// empty answer to a session's request stops the session, whatever the view did
/// before.
#[test]
fn an_empty_segment_does_not_make_the_client_name_its_previous_sessions_head() {
    let mut w = world(302, &[]);
    let a = client(&w, 10, 4);
    let mut va = fresh_view(&w, 10);
    // Session 1, honest: the server appended an entry for it (a head of its own).
    w.server.apply_changes(&[], NOW).unwrap();
    assert!(honest_session(&mut w, &a, &mut va, LATER).authenticated());
    let shown = va.head_seq().unwrap();
    // Entries appended by others' sessions, then session 2 of the same client.
    for i in 0..5 {
        w.server.apply_changes(&[], NOW + 1000 + i).unwrap();
    }
    let log = Hostile::of(&w);
    let mut n = 0;
    let mut serve = |req: &LogRequest| {
        n += 1;
        if n == 1 {
            LogSegment { records: Vec::new() }
        } else {
            log.segment(req)
        }
    };
    let r = sync_only(&mut w, &a, &mut va, LATER + 1000, &mut serve);
    eprintln!("session 1 was shown head {shown}; session 2: {r:?}");
    assert!(
        r.is_err(),
        "after an empty segment the client asked again: {r:?} (the second request starts one past entry {shown}, the head its previous session was shown)"
    );
}

// ---------------------------------------------------------------------------------
// G3. A signed head at u64::MAX.
// ---------------------------------------------------------------------------------

/// A signed `Commit` naming log entry `u64::MAX` (outside input) overflows
/// `commit.log_seq + 1` in `commit_needs` (the rollback evidence lookup) and
/// `head + 1` in `ClientView::sync_from`: a panic in a debug build, a wrap in release
/// (where `entry(0)`, the genesis, is then taken as rollback evidence). Secure: a
/// clear refusal.
#[test]
fn a_commit_naming_the_last_possible_log_entry_is_refused_not_a_panic() {
    let mut w = world(303, &[]);
    let a = client(&w, 10, 4);
    let va = fresh_view(&w, 10);
    let header = *w.server.current().unwrap().header();
    let (cs, hello) = a.start(LATER, &mut w.rng);
    let commit = signed_commit(&mut w, &hello, header, u64::MAX, [7; 32], LATER);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| a.commit_needs(&cs, &commit, &va)));
    match r {
        Err(_) => panic!("commit_needs panicked on a signed commit naming entry u64::MAX"),
        Ok(Ok(CommitNeeds::Log(req))) => panic!("the client asks for {req:?}"),
        Ok(Ok(CommitNeeds::Ready)) => panic!("the client is ready"),
        Ok(Err(e)) => assert!(!matches!(e, ClientStop::Caught(_)), "a bogus proof: {e:?}"),
    }
}
