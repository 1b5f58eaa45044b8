//! The hotspot scene of `tacit demo`: an operator's authentication server and its
//! subscribers run TracEdge (Algorithm 1 with the signed table log) — an honest
//! authentication, then a server that gives one subscriber a second key, caught, and
//! the proof checked by a third party.

use anyhow::{Result, bail};
use curve25519_dalek::scalar::Scalar;
use tacit_crypto::rng::SecureRng;
use tacit_crypto::sign::SigningKey;
use tacit_pir::lwe::{LweHint, LweServer};
use tacit_pir::tracedge::*;
use tacit_wire::{Decode, Encode};

const ROWS: u64 = 2000;

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

struct World {
    server: TracEdgeServer<LweServer>,
    subs: Vec<SubscriberSecret>,
    receipts: Vec<EnrolmentReceipt>,
    hint: LweHint,
}

fn world(rng: &mut SecureRng, cheat_row: Option<u64>) -> Result<World> {
    let mut server = TracEdgeServer::<LweServer>::new(
        SigningKey::generate(rng),
        Scalar::random(rng),
        ServerConfig::default(),
        ROWS,
        now_ms(),
    )?;
    let subs: Vec<SubscriberSecret> = (0..3).map(|_| SubscriberSecret::random(rng)).collect();
    let changes: Vec<Change> = subs
        .iter()
        .enumerate()
        .map(|(i, s)| (100 + i as u64 * 500, s.public_bytes()))
        .collect();
    let receipts = server.apply_changes(&changes, now_ms())?.receipts;
    let second = TableKey::random(rng);
    let flagged: Vec<u64> = cheat_row.into_iter().collect();
    let flag = cheat_row.map(|_| Flagged {
        key: &second,
        rows: &flagged,
    });
    let mut table = build_lwe_table(
        1,
        TableKey::random(rng),
        CommitScheme::Binding,
        &server.dh_public(),
        server.directory().keys().to_vec(),
        flag,
        &|_| {},
        rng,
    )?;
    if cheat_row.is_some() {
        table.add_second_key(second.clone());
    }
    let hint = table.hint().clone();
    server.install(table, now_ms())?;
    Ok(World {
        server,
        subs,
        receipts,
        hint,
    })
}

/// One authentication of subscriber `i`; the client's outcome and what the server saw.
fn authenticate(w: &mut World, i: usize, rng: &mut SecureRng) -> Result<(ClientOutcome, String)> {
    let r = w.receipts[i].clone();
    let client = TracEdgeClient::new(
        w.server.verifying_key(),
        r.row,
        w.subs[i].clone(),
        ClientConfig::default(),
    );
    let mut view = ClientView::for_receipt(r, u64::MAX / 2)?;
    let run = authenticate_in_process(&mut w.server, &client, &mut view, w.hint.clone(), now_ms(), rng);
    let seen = match run.key_index {
        Some(0) => "a subscriber (which one: unknown)".to_string(),
        Some(k) => format!("a subscriber holding second key {k}"),
        None => "a client whose MAC matched no key (refused)".to_string(),
    };
    match run.client {
        Ok(o) => Ok((o, seen)),
        Err(ClientStop::Caught(p)) => Ok((ClientOutcome::Caught(p), seen)),
        Err(s) => bail!("the session stopped: {s}"),
    }
}

/// Runs the scene.
pub fn hotspot_demo() -> Result<()> {
    println!("\n=== hotspot: TracEdge anonymous authentication ({ROWS}-row key table, lwe PIR) ===");
    let mut rng = SecureRng::from_os();
    let mut w = world(&mut rng, None)?;
    println!(
        "operator: 3 subscribers enrolled, each with a signed receipt; table log of {} signed entries",
        w.server.log().head().seq + 1
    );
    let (out, seen) = authenticate(&mut w, 1, &mut rng)?;
    println!(
        "alice (row 600) syncs the table log, queries the table privately (4 rows audited against her copy of the directory)"
    );
    match out {
        ClientOutcome::Authenticated { .. } => {
            println!("alice: authenticated; the log, the commitment and the audits check out")
        }
        other => bail!("the honest authentication failed: {other:?}"),
    }
    println!("server: authenticated {seen}");

    println!("\n--- the same operator, cheating: alice's row gets a second key to tag her ---");
    let mut w = world(&mut rng, Some(600))?;
    let (out, seen) = authenticate(&mut w, 1, &mut rng)?;
    println!("server: {seen} — alice's random MAC looks like any outsider's");
    let ClientOutcome::Caught(proof) = out else {
        bail!("the cheating server was not caught: {out:?}");
    };
    let file = proof.to_wire();
    println!(
        "alice: SERVER CAUGHT — her row does not hold the committed key; proof of {} bytes",
        file.len()
    );
    let checked = MisbehaviourProof::from_wire(&file)?.verify()?;
    println!("a third party (tacit pir verify-proof): VALID — {}", checked.what);
    let (out, seen) = authenticate(&mut w, 0, &mut rng)?;
    println!(
        "bob (row 100, not flagged): {}; server saw {seen}",
        match out {
            ClientOutcome::Authenticated { .. } => "authenticated".to_string(),
            ClientOutcome::Caught(_) => "caught the server in an audit".to_string(),
            ClientOutcome::NotEnrolled { .. } => "not enrolled".to_string(),
            ClientOutcome::Refused(r) => format!("refused ({r})"),
        }
    );
    Ok(())
}
