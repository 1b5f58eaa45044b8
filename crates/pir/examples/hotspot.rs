//! A hotspot operator and a subscriber in one process: the operator's TracEdge server
//! over TLS, a subscriber who enrols and authenticates anonymously, then the same
//! operator cheating (a second key for the subscriber's row, to tag her) — caught,
//! with a proof anyone can check offline.
//!
//!     cargo run -p tacit-pir --example hotspot

use tacit_pir::tracedge::CommitScheme;
use tacit_pir::tracedge::service::{ServiceError, client, operator, server};

#[tokio::main]
async fn main() -> Result<(), ServiceError> {
    let dir = std::env::temp_dir().join(format!("tacit-hotspot-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| ServiceError::Config(e.to_string()))?;
    let store = dir.join("operator.sqlite3");
    let alice = dir.join("alice.json");

    // The operator: keys, a 1 000-row table, open enrolment.
    let keys = operator::init(&store, 1000, CommitScheme::Binding, 3600)?;
    let honest = server::Server::builder(&store)
        .listen("127.0.0.1:0")
        .open_enrollment(true)
        .sessions(2)
        .bind()
        .await?;
    let addr = honest.local_addr().to_string();
    let serving = tokio::spawn(honest.serve());

    // The subscriber: enrol (a signed receipt), then authenticate anonymously.
    let e = client::enroll(&addr, keys.pin, keys.server_key, "alice", &alice).await?;
    println!("alice enrolled at row {} of {}", e.row, e.rows);
    let r = client::authenticate(&alice, &client::AuthOptions::default()).await?;
    match &r.outcome {
        client::AuthOutcome::Authenticated { epoch, .. } => println!(
            "alice authenticated anonymously (table {epoch}, {} rows audited, {} log entries synced)",
            r.audited_rows.len(),
            r.log_entries_fetched
        ),
        other => return Err(ServiceError::Config(format!("unexpected: {other:?}"))),
    }
    serving.await.map_err(|e| ServiceError::Config(e.to_string()))??;

    // The same operator restarts cheating: alice's row gets a second key.
    let cheating = server::Server::builder(&store)
        .listen(addr.as_str())
        .cheat_rows(vec![e.row])
        .sessions(1)
        .bind()
        .await?;
    let serving = tokio::spawn(cheating.serve());
    let r = client::authenticate(&alice, &client::AuthOptions::default()).await?;
    let client::AuthOutcome::Caught(proof) = r.outcome else {
        return Err(ServiceError::Config(format!(
            "the cheat was not caught: {:?}",
            r.outcome
        )));
    };
    // A third party checks the proof with nothing but the proof itself.
    let finding = proof.verify()?;
    println!("SERVER CAUGHT: {}", finding.what);
    serving.await.map_err(|e| ServiceError::Config(e.to_string()))??;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
