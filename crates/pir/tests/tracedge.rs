//! End-to-end tests of TracEdge (Algorithm 1) with honest and deviating servers and
//! clients, in process (the TLS transport is tested by the CLI).

use curve25519_dalek::scalar::Scalar;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use tacit_crypto::sign::SigningKey;
use tacit_pir::Error;
use tacit_pir::lwe::{LweHint, LweServer};
use tacit_pir::tracedge::*;
use tacit_wire::{Decode, Encode};

const NOW: u64 = 1_700_000_000_000;
const N: usize = 300;

struct World {
    server: TracEdgeServer<LweServer>,
    subs: Vec<SubscriberSecret>,
    rng: ChaCha20Rng,
}

fn world(seed: u64, scheme: CommitScheme, flagged: &[u64], equivocate: bool) -> World {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut server = TracEdgeServer::new(
        SigningKey::generate(&mut rng),
        Scalar::random(&mut rng),
        ServerConfig::default(),
    );
    // Rows 0..200 are subscribers, the rest empty (the server's own key).
    let subs: Vec<SubscriberSecret> = (0..200).map(|_| SubscriberSecret::random(&mut rng)).collect();
    let mut keys = vec![server.dh_public().compress().to_bytes(); N];
    for (i, s) in subs.iter().enumerate() {
        keys[i] = s.public_bytes();
    }
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
    server.install(table, NOW);
    World { server, subs, rng }
}

fn client(w: &World, row: u64, config: ClientConfig) -> TracEdgeClient {
    TracEdgeClient::new(w.server.verifying_key(), row, w.subs[row as usize].clone(), config)
}

fn hint(w: &World) -> LweHint {
    w.server.current().unwrap().hint().clone()
}

/// Runs Algorithm 1 to the end; returns both outcomes.
fn run(w: &mut World, c: &TracEdgeClient) -> (ClientOutcome, Result<ServerOutcome, Error>) {
    let h = hint(w);
    let (mut cs, hello) = c.start(NOW, &mut w.rng);
    let (mut ss, commit) = w.server.hello(&hello, NOW, &mut w.rng).unwrap();
    let q = c.on_commit(&mut cs, commit, h, &mut w.rng).unwrap();
    let resp = w.server.respond(&mut ss, &q).unwrap();
    let lookup = c.on_response(&mut cs, resp).unwrap();
    let entries = w.server.directory(&ss, &lookup).unwrap();
    let auth = c.on_directory(&mut cs, entries, &mut w.rng).unwrap();
    match w.server.finish(&mut ss, &auth) {
        Ok((reply, out)) => (c.on_server_auth(&mut cs, Ok(reply)), Ok(out)),
        Err(e) => (c.on_server_auth(&mut cs, Err(e.to_string())), Err(e)),
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
}

#[test]
fn outsider_is_refused_and_sees_no_misbehaviour() {
    let mut w = world(2, CommitScheme::Binding, &[], false);
    let mut rng = ChaCha20Rng::seed_from_u64(99);
    // A key that is not in the directory, claiming a subscriber's row and an empty row.
    for row in [5u64, 250] {
        let c = TracEdgeClient::new(
            w.server.verifying_key(),
            row,
            SubscriberSecret::random(&mut rng),
            ClientConfig::default(),
        );
        let (co, so) = run(&mut w, &c);
        assert!(matches!(so, Err(Error::Refused(_))));
        assert!(matches!(co, ClientOutcome::Refused(_)), "{co:?}");
    }
}

#[test]
fn flagged_client_catches_the_server_and_the_proof_verifies_offline() {
    let mut w = world(3, CommitScheme::Binding, &[10, 11], false);
    let c = client(&w, 10, ClientConfig::default());
    let (co, so) = run(&mut w, &c);
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
    bad.response.answers[0].values[0] ^= 1;
    assert!(matches!(bad.verify(), Err(Error::Signature(_))));
    // Nor one whose query seed does not make the signed query.
    let mut bad = (*proof).clone();
    bad.queries.own.values[0] ^= 1;
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
    let (co, _) = run(&mut w, &c);
    let proof = match co {
        ClientOutcome::Caught(p) => p,
        other => panic!("expected the audit to catch the server, got {other:?}"),
    };
    assert!(matches!(proof.kind, ProofKind::Audit { .. }));
    let finding = proof.verify().unwrap();
    assert_eq!(finding.epoch, 1);
    let back = MisbehaviourProof::from_wire(&proof.to_wire()).unwrap();
    back.verify().unwrap();
}

#[test]
fn honest_transcript_makes_no_valid_proof() {
    // A client that fabricates an audit proof against an honest server fails.
    let mut w = world(5, CommitScheme::Binding, &[7], false);
    let c = client(&w, 7, ClientConfig::default());
    let (co, _) = run(&mut w, &c);
    let ClientOutcome::Caught(proof) = co else {
        panic!("flagged row 7 must be caught")
    };
    // Claim the row holds a key it does not: swap in a key that opens nothing.
    let mut bad = (*proof).clone();
    if let ProofKind::OwnRow { shared, .. } = &mut bad.kind {
        shared[0] ^= 1;
    }
    assert!(bad.verify().is_err());
    // Honest server, honest client: the audit proof with the real key does not hold.
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
    let (mut cs, hello) = c.start(NOW, &mut w.rng);
    let (_, commit) = w.server.hello(&hello, NOW, &mut w.rng).unwrap();
    let h = hint(&w);
    assert!(matches!(
        c.on_commit(&mut cs, commit, h, &mut w.rng),
        Err(Error::Refused(_))
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
    let (co, _) = run(&mut w, &c);
    let ClientOutcome::Caught(p) = co else {
        panic!("binding commitment must catch the flag")
    };
    p.verify().unwrap();
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
        let (co, so) = run(&mut w, &c);
        let caught = matches!(co, ClientOutcome::Caught(_));
        assert_eq!(caught, flagged.contains(&row), "row {row}");
        if !caught {
            assert_eq!(so.unwrap().key_index, 0);
        }
    }
}

#[test]
fn replayed_and_stale_messages_are_refused() {
    let mut w = world(9, CommitScheme::Binding, &[], false);
    let c = client(&w, 1, ClientConfig::default());
    let (mut cs, hello) = c.start(NOW, &mut w.rng);
    let (mut ss, commit) = w.server.hello(&hello, NOW, &mut w.rng).unwrap();
    // Replay of the same timestamp and nonce.
    assert!(matches!(
        w.server.hello(&hello, NOW, &mut w.rng),
        Err(Error::Refused(_))
    ));
    // A timestamp far from the server's clock.
    let (_, old) = c.start(NOW - 3_600_000, &mut w.rng);
    assert!(matches!(w.server.hello(&old, NOW, &mut w.rng), Err(Error::Refused(_))));
    // A commit for another hello is refused by the client.
    let (cs2, _) = c.start(NOW, &mut w.rng);
    assert!(c.check_commit(&cs2, &commit).is_err());
    // A tampered signature is refused.
    let mut forged = commit.clone();
    forged.header.rows -= 1;
    assert!(matches!(c.check_commit(&cs, &forged), Err(Error::Signature(_))));
    // Directory entries only after a response in the session.
    assert!(matches!(
        w.server.directory(&ss, &DirLookup { buckets: vec![0] }),
        Err(Error::Refused(_))
    ));
    // Queries for another epoch are refused; the session survives.
    let h = hint(&w);
    let mut q = c.on_commit(&mut cs, commit, h, &mut w.rng).unwrap();
    q.epoch += 1;
    assert!(matches!(w.server.respond(&mut ss, &q), Err(Error::Refused(_))));
    q.epoch -= 1;
    let resp = w.server.respond(&mut ss, &q).unwrap();
    // A second set of queries in the same session is out of order.
    assert!(matches!(w.server.respond(&mut ss, &q), Err(Error::Refused(_))));
    // A response replayed into another session does not verify.
    let (mut cs3, hello3) = c.start(NOW + 1, &mut w.rng);
    let (_, commit3) = w.server.hello(&hello3, NOW + 1, &mut w.rng).unwrap();
    let h = hint(&w);
    c.on_commit(&mut cs3, commit3, h, &mut w.rng).unwrap();
    assert!(matches!(
        c.on_response(&mut cs3, resp.clone()),
        Err(Error::Signature(_)) | Err(Error::Refused(_))
    ));
    // One answer value changed (the signature covers the answers' digest): refused,
    // and the session still takes the genuine response.
    let mut tampered = resp.clone();
    tampered.answers[1].values[0] ^= 1;
    assert!(matches!(c.on_response(&mut cs, tampered), Err(Error::Signature(_))));
    c.on_response(&mut cs, resp).unwrap();
}

#[test]
fn rekeying_serves_the_deprecated_table_until_its_keys_expire() {
    let mut w = world(10, CommitScheme::Binding, &[], false);
    let c = client(&w, 4, ClientConfig::default());
    // A session starts on epoch 1.
    let old_hint = hint(&w);
    let (mut cs, hello) = c.start(NOW, &mut w.rng);
    let (mut ss, commit) = w.server.hello(&hello, NOW, &mut w.rng).unwrap();
    // Rekey: epoch 2 becomes current while the session is in flight.
    let keys = w.server.current().unwrap().directory().keys().to_vec();
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
    w.server.install(t2, NOW);
    let q = c.on_commit(&mut cs, commit, old_hint, &mut w.rng).unwrap();
    let resp = w.server.respond(&mut ss, &q).unwrap();
    let lookup = c.on_response(&mut cs, resp).unwrap();
    let entries = w.server.directory(&ss, &lookup).unwrap();
    let auth = c.on_directory(&mut cs, entries, &mut w.rng).unwrap();
    let (reply, _) = w.server.finish(&mut ss, &auth).unwrap();
    match c.on_server_auth(&mut cs, Ok(reply)) {
        ClientOutcome::Authenticated { epoch, expires_ms, .. } => {
            assert_eq!(epoch, 1);
            // The session began while epoch 1 was current.
            assert_eq!(expires_ms, 0);
        }
        other => panic!("{other:?}"),
    }
    let old = w.server.tables().find(|t| t.header().epoch == 1).unwrap();
    assert_eq!(old.header().expires_ms, NOW + ServerConfig::default().grace_ms);
    // New sessions run on epoch 2.
    let (co, _) = run(&mut w, &c);
    assert!(matches!(co, ClientOutcome::Authenticated { epoch: 2, .. }));
    // After the grace period the old table is gone: a late session is refused.
    let (mut cs, hello) = c.start(NOW, &mut w.rng);
    let _ = &mut cs;
    let (mut ss, _) = w.server.hello(&hello, NOW, &mut w.rng).unwrap();
    let fake_old = Queries {
        epoch: 1,
        own: tacit_pir::lwe::LweQuery {
            table_id: [0; 32],
            values: vec![],
        },
        audits: vec![],
    };
    w.server.expire(NOW + ServerConfig::default().grace_ms + 1);
    assert!(w.server.tables().all(|t| t.header().epoch == 2));
    assert!(matches!(w.server.respond(&mut ss, &fake_old), Err(Error::Refused(_))));
}

#[test]
fn registration_and_removal_on_the_fly_while_serving() {
    let mut w = world(11, CommitScheme::Binding, &[], false);
    // Register a new subscriber into empty row 260 of the live table.
    let newcomer = SubscriberSecret::random(&mut w.rng);
    w.server
        .table_mut(1)
        .unwrap()
        .set_row(260, &newcomer.public_bytes())
        .unwrap();
    let c = TracEdgeClient::new(w.server.verifying_key(), 260, newcomer.clone(), ClientConfig::default());
    let (co, _) = run(&mut w, &c);
    assert!(matches!(co, ClientOutcome::Authenticated { .. }), "{co:?}");
    // Remove subscriber 8: its row now encrypts to the server's key.
    let server_key = w.server.dh_public().compress().to_bytes();
    w.server.table_mut(1).unwrap().set_row(8, &server_key).unwrap();
    let c = client(&w, 8, ClientConfig::default());
    let (co, so) = run(&mut w, &c);
    assert!(matches!(co, ClientOutcome::Refused(_)), "{co:?}");
    assert!(so.is_err());
    // Others are unaffected.
    let c = client(&w, 9, ClientConfig::default());
    assert!(matches!(run(&mut w, &c).0, ClientOutcome::Authenticated { .. }));
}

#[test]
fn concurrent_sessions_are_answered_in_one_pass() {
    let mut w = world(12, CommitScheme::Binding, &[], false);
    let h = hint(&w);
    let clients: Vec<TracEdgeClient> = (0..4).map(|r| client(&w, r * 13, ClientConfig::default())).collect();
    let mut c_sessions = Vec::new();
    let mut s_sessions = Vec::new();
    let mut queries = Vec::new();
    for (i, c) in clients.iter().enumerate() {
        let (mut cs, hello) = c.start(NOW + i as u64, &mut w.rng);
        let (ss, commit) = w.server.hello(&hello, NOW, &mut w.rng).unwrap();
        queries.push(c.on_commit(&mut cs, commit, h.clone(), &mut w.rng).unwrap());
        c_sessions.push(cs);
        s_sessions.push(ss);
    }
    let mut items: Vec<(&mut ServerSession, &Queries)> = s_sessions.iter_mut().zip(queries.iter()).collect();
    let responses = w.server.respond_batch(&mut items);
    for (((c, cs), ss), resp) in clients
        .iter()
        .zip(c_sessions.iter_mut())
        .zip(s_sessions.iter_mut())
        .zip(responses)
    {
        let lookup = c.on_response(cs, resp.unwrap()).unwrap();
        let entries = w.server.directory(ss, &lookup).unwrap();
        let auth = c.on_directory(cs, entries, &mut w.rng).unwrap();
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
    let (mut cs, hello) = c.start(NOW, &mut w.rng);
    let (mut ss, commit) = w.server.hello(&hello, NOW, &mut w.rng).unwrap();
    let h = hint(&w);
    let q = c.on_commit(&mut cs, commit.clone(), h, &mut w.rng).unwrap();
    let resp = w.server.respond(&mut ss, &q).unwrap();
    assert_eq!(Hello::from_wire(&hello.to_wire()).unwrap(), hello);
    assert_eq!(Commit::from_wire(&commit.to_wire()).unwrap(), commit);
    assert_eq!(Queries::from_wire(&q.to_wire()).unwrap(), q);
    assert_eq!(Response::from_wire(&resp.to_wire()).unwrap(), resp);
    for bytes in [hello.to_wire(), commit.to_wire(), q.to_wire(), resp.to_wire()] {
        let mut long = bytes.clone();
        long.push(0);
        assert!(Hello::from_wire(&long).is_err() && Commit::from_wire(&long).is_err());
        assert!(Queries::from_wire(&long).is_err() && Response::from_wire(&long).is_err());
        for cut in [0, 1, bytes.len() / 2, bytes.len() - 1] {
            assert!(Hello::from_wire(&bytes[..cut]).is_err());
            assert!(Commit::from_wire(&bytes[..cut]).is_err());
            assert!(Queries::from_wire(&bytes[..cut]).is_err());
            assert!(Response::from_wire(&bytes[..cut]).is_err());
        }
    }
    // A query over the wrong table is refused by the PIR backend, not a panic.
    let mut bad = q.clone();
    bad.own.values.pop();
    let (_, hello2) = c.start(NOW + 5, &mut w.rng);
    let (mut ss2, _) = w.server.hello(&hello2, NOW, &mut w.rng).unwrap();
    assert!(w.server.respond(&mut ss2, &bad).is_err());
    assert_eq!(w.server.current().unwrap().directory().rows(), N as u64);
}
