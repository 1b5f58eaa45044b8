//! The hotspot scene of `tacit demo`: an operator's authentication server and its
//! subscribers run TracEdge (Algorithm 1) — an honest authentication, then a server
//! that gives one subscriber a second key, caught, and the proof checked by a third
//! party.

use anyhow::{Result, bail};
use curve25519_dalek::scalar::Scalar;
use tacit_crypto::rng::SecureRng;
use tacit_crypto::sign::SigningKey;
use tacit_pir::lwe::{LweHint, LweServer};
use tacit_pir::tracedge::*;
use tacit_wire::{Decode, Encode};

const ROWS: usize = 2000;

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// One authentication; returns the client's outcome and what the server saw.
fn authenticate(
    server: &mut TracEdgeServer<LweServer>,
    client: &TracEdgeClient,
    hint: &LweHint,
    rng: &mut SecureRng,
) -> Result<(ClientOutcome, String, usize)> {
    let now = now_ms();
    let (mut cs, hello) = client.start(now, rng);
    let (mut ss, commit) = server.hello(&hello, now, rng)?;
    let queries = client.on_commit(&mut cs, commit, hint.clone(), rng)?;
    let bytes = queries.to_wire().len();
    let resp = server.respond(&mut ss, &queries)?;
    let lookup = client.on_response(&mut cs, resp)?;
    let entries = server.directory(&ss, &lookup)?;
    let auth = client.on_directory(&mut cs, entries, rng)?;
    let (reply, seen) = match server.finish(&mut ss, &auth) {
        Ok((r, o)) if o.key_index == 0 => (Ok(r), "a subscriber (which one: unknown)".to_string()),
        Ok((r, o)) => (Ok(r), format!("a subscriber holding second key {}", o.key_index)),
        Err(e) => (Err(e.to_string()), format!("refused ({e})")),
    };
    Ok((client.on_server_auth(&mut cs, reply), seen, bytes))
}

fn world(
    rng: &mut SecureRng,
    cheat_row: Option<u64>,
) -> Result<(TracEdgeServer<LweServer>, Vec<SubscriberSecret>, LweHint)> {
    let mut server =
        TracEdgeServer::<LweServer>::new(SigningKey::generate(rng), Scalar::random(rng), ServerConfig::default());
    let subs: Vec<SubscriberSecret> = (0..3).map(|_| SubscriberSecret::random(rng)).collect();
    let mut keys = vec![server.dh_public().compress().to_bytes(); ROWS];
    for (i, s) in subs.iter().enumerate() {
        keys[100 + i * 500] = s.public_bytes();
    }
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
        keys,
        flag,
        &|_| {},
        rng,
    )?;
    if cheat_row.is_some() {
        table.add_second_key(second.clone());
    }
    let hint = table.hint().clone();
    server.install(table, now_ms());
    Ok((server, subs, hint))
}

/// Runs the scene.
pub fn hotspot_demo() -> Result<()> {
    println!("\n=== hotspot: TracEdge anonymous authentication ({ROWS}-row key table, lwe PIR) ===");
    let mut rng = SecureRng::from_os();
    let (mut server, subs, hint) = world(&mut rng, None)?;
    let alice = TracEdgeClient::new(server.verifying_key(), 600, subs[1].clone(), ClientConfig::default());
    let (out, seen, bytes) = authenticate(&mut server, &alice, &hint, &mut rng)?;
    println!("alice (row 600) queries the table privately ({bytes} B of queries, 4 rows audited)");
    match out {
        ClientOutcome::Authenticated { .. } => {
            println!("alice: authenticated; the commitment and the audits check out")
        }
        other => bail!("the honest authentication failed: {other:?}"),
    }
    println!("server: authenticated {seen}");

    println!("\n--- the same operator, cheating: alice's row gets a second key to tag her ---");
    let (mut server, subs, hint) = world(&mut rng, Some(600))?;
    let alice = TracEdgeClient::new(server.verifying_key(), 600, subs[1].clone(), ClientConfig::default());
    let (out, seen, _) = authenticate(&mut server, &alice, &hint, &mut rng)?;
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
    let bob = TracEdgeClient::new(server.verifying_key(), 100, subs[0].clone(), ClientConfig::default());
    let (out, seen, _) = authenticate(&mut server, &bob, &hint, &mut rng)?;
    println!(
        "bob (row 100, not flagged): {}; server saw {seen}",
        match out {
            ClientOutcome::Authenticated { .. } => "authenticated".to_string(),
            ClientOutcome::Caught(_) => "caught the server in an audit".to_string(),
            ClientOutcome::Refused(r) => format!("refused ({r})"),
        }
    );
    Ok(())
}
