//! Private contact discovery in one process: a service holds the registered users'
//! phone numbers and answers over TLS; a new user learns which of her contacts are
//! registered — and nothing else — while the service learns nothing about her
//! contacts. Then a client that pins another key is refused.
//!
//!     cargo run -p tacit-psi --example contact_discovery

use tacit_psi::service::Event;
use tacit_psi::{Client, PsiParams, Security, Server, ServerEvent, ServiceError};

#[tokio::main]
async fn main() -> Result<(), ServiceError> {
    // Both sides agree on the protocol and the bounds: at most 8 contacts per
    // query, at most 2 000 registered users.
    let params = PsiParams::new(Security::Malicious).with_bounds(8, 2000);

    // The service: 1 000 registered users, TLS with a fresh key, two sessions.
    let registered: Vec<String> = (0..1000).map(|i| format!("+1555{:07}", i * 7919)).collect();
    let server = Server::builder()
        .params(params)
        .set(&registered)
        .sessions(2)
        .on_event(|e| match e {
            ServerEvent::Session(Event::Answered {
                peer, bytes: (i, o), ..
            }) => {
                println!("service: answered {peer} ({i} B in, {o} B out) and learned nothing")
            }
            ServerEvent::Session(Event::Failed { peer, why }) => println!("service: session from {peer}: {why}"),
            _ => {}
        })
        .bind("127.0.0.1:0")
        .await?;
    let (addr, pin) = (
        server.local_addr().to_string(),
        server.fingerprint().unwrap_or_default(),
    );
    let key: String = pin.iter().map(|b| format!("{b:02x}")).collect();
    println!("service: {} users on {addr}, TLS key {key}", server.distinct());
    let serving = tokio::spawn(server.serve());

    // The new user: her address book, the service's key pinned.
    let contacts = [&*registered[3], "+15550000001", &*registered[42], "+15550000002"];
    let mut client = Client::builder().params(params).pin(pin).build()?;
    let found = client.query(&addr, &contacts).await?;
    println!(
        "user: {} of her {} contacts use the service: {:?} ({} B sent, {} B received)",
        found.intersection.len(),
        contacts.len(),
        found.strings(),
        found.request_bytes,
        found.response_bytes,
    );
    assert_eq!(found.strings(), [contacts[0], contacts[2]]);

    // Someone else's key: the TLS handshake fails before any PSI message is sent.
    let mut wrong = Client::builder().params(params).pin([7; 32]).build()?;
    match wrong.query(&addr, &contacts).await {
        Err(e) => {
            let why = std::error::Error::source(&e).map(|s| s.to_string()).unwrap_or_default();
            println!("user pinning another key: refused ({e}: {why})")
        }
        Ok(_) => return Err(ServiceError::Config("a wrong pin was accepted".into())),
    }
    serving.await.map_err(|e| ServiceError::Config(e.to_string()))??;
    Ok(())
}
