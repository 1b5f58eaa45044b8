//! PrivateDrop in one process: a certification authority, two devices that enrol with
//! it over TLS, Bob's receiver and Alice's sender proving to each other that they are
//! mutual contacts, and a file that arrives (all over loopback).
//!
//!     cargo run -p tacit-drop --example airdrop

use std::sync::Arc;
use tacit_crypto::Ristretto255 as G;
use tacit_drop::DropParams;
use tacit_drop::protocol::{AddressBook, Peer};
use tacit_drop::revocation::Revocations;
use tacit_drop::service::ca::{self, Ca};
use tacit_drop::service::receiver::Receiver;
use tacit_drop::service::sender::{self, Sender};
use tacit_drop::service::{Result, ServiceError};

#[tokio::main]
async fn main() -> Result<()> {
    let dir = std::env::temp_dir().join(format!("tacit-airdrop-{}", std::process::id()));
    let io = |e: &dyn std::fmt::Display| ServiceError::Invalid(e.to_string());

    // The CA: its keys in a folder, its endpoint confirming every identifier.
    let authority = ca::init(&dir.join("ca"), true)?;
    let key = authority.public_key();
    let server = Ca::builder(authority, dir.join("ca"))
        .confirm(|_, _| true) // a product checks by SMS or e-mail here
        .sessions(Some(3))
        .bind("127.0.0.1:0")
        .await?;
    let ca_addr = server.local_addr().to_string();
    let ca_task = tokio::spawn(server.serve());

    // Two devices enrol: Schnorr proofs for their blinded identifiers, certificates back.
    let params = DropParams::default().with_bounds(4, 100);
    let alice = ca::enroll::<G>(&ca_addr, key, &params, &["alice@example.com".into()]).await?;
    let bob = ca::enroll::<G>(&ca_addr, key, &params, &["14155550100".into()]).await?;
    // The CA's revocation list, in force on both (the builders refuse every peer without).
    let revocations = Revocations::from_list(ca::fetch_revocations(&ca_addr, key).await?);
    ca_task.await.map_err(|e| io(&e))??;
    println!("the CA certified alice ({}) and bob ({})", alice.account, bob.account);

    // Bob receives from contacts only; his book holds Alice.
    let receiver = Receiver::builder(Arc::new(bob), Arc::new(AddressBook::new(&["alice@example.com"])), key)
        .revocations(revocations.clone())
        .dir(dir.join("inbox"))
        .accept_contacts()
        .sessions(Some(1))
        .bind("127.0.0.1:0")
        .await?;
    let addr = receiver.local_addr().to_string();
    let serving = tokio::spawn(receiver.serve());

    // Alice's book holds Bob's number: the mutual-contact check, then the file.
    let note = dir.join("note.txt");
    std::fs::write(&note, "Lunch at noon? — Alice").map_err(|e| io(&e))?;
    let alice = Sender::builder(Arc::new(alice), Arc::new(AddressBook::new(&["14155550100"])), key)
        .revocations(revocations)
        .build();
    let session = alice.authenticate(&addr).await?;
    if let Peer::Contact { identifier } = &session.outcome.receiver {
        println!(
            "alice: the receiver is my contact {identifier}, and it has me as {}",
            session.outcome.known_by_receiver.join(", ")
        );
    }
    let offers = sender::offers(&[note], &|_, _, _| {}).await?;
    let delivered = sender::deliver(session, &offers).await?;
    serving.await.map_err(|e| io(&e))??;
    let got = std::fs::read_to_string(dir.join("inbox").join(&delivered[0].stored_as)).map_err(|e| io(&e))?;
    println!("bob received {:?} (SHA-256 checked): {got:?}", delivered[0].stored_as);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
