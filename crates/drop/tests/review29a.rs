//! Review of issue 29 (rev29a): the PrivateDrop builders' defaults against what the
//! CLI does before it calls them.

use tacit_crypto::rng::SecureRng;
use tacit_drop::service::receiver::Receiver;
use tacit_drop::service::sender::Sender;

mod common;
use common::*;

/// `crates/drop/src/service/mod.rs` (the module doc): "Every protection the CLI has
/// is the builders' default (… revocation checks …); what weakens one is a builder
/// method that names it". `tacit drop receive` always brings the device's revocation
/// list in force (`revocations_on_start`, refreshed from the CA when past due) before
/// it builds the receiver; `Receiver::builder` starts from `Revocations::new()` (no
/// list, `StalePolicy::Warn`): nothing is ever revoked unless the product remembers
/// `.revocations(..)`. Here the CA revoked Alice's account (a stolen phone) and Bob's
/// receiver, built with the defaults, still authenticates her as a contact and
/// would take her files. Safe by default would be: a receiver without a list refuses
/// every sender (the `Refuse` policy), or the list is a required argument, and
/// `insecure_no_revocations()` names the opposite.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_built_with_the_defaults_refuses_a_revoked_sender() {
    let authority = tacit_drop::ca::CertificateAuthority::generate(&mut SecureRng::from_os()).unwrap();
    let key = authority.public_key();
    let alice = device(&authority, &["alice@example.com"], &["bob@example.com"]);
    let bob = device(&authority, &["bob@example.com"], &["alice@example.com"]);
    // The CA revoked Alice's account and published the list.
    let (list, _) = authority
        .publish_revocations(None, &[alice.identity.account], now(), 3600)
        .unwrap();
    assert!(list.verify(&key).unwrap().list().contains(&alice.identity.account));

    let rx = Receiver::builder(bob.identity.clone(), bob.book.clone(), key)
        .dir(tmpdir("rev29a-rx-default"))
        .accept_contacts()
        .sessions(Some(1))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = rx.local_addr().to_string();
    let serving = tokio::spawn(rx.serve());
    let tx = Sender::builder(alice.identity.clone(), alice.book.clone(), key).build();
    let r = tx.authenticate(&addr).await;
    let _ = serving.await;
    assert!(
        r.is_err(),
        "a revoked account authenticated to a default-built receiver as {:?}",
        r.map(|s| s.outcome.receiver)
    );
}

/// The same on the sending side: `Sender::builder` without `.revocations(..)` sends
/// its certified inputs (and then files) to a receiver whose account the CA revoked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sender_built_with_the_defaults_refuses_a_revoked_receiver() {
    let authority = tacit_drop::ca::CertificateAuthority::generate(&mut SecureRng::from_os()).unwrap();
    let key = authority.public_key();
    let alice = device(&authority, &["alice@example.com"], &["bob@example.com"]);
    let bob = device(&authority, &["bob@example.com"], &["alice@example.com"]);
    let (list, _) = authority
        .publish_revocations(None, &[bob.identity.account], now(), 3600)
        .unwrap();
    assert!(list.verify(&key).unwrap().list().contains(&bob.identity.account));

    let rx = Receiver::builder(bob.identity.clone(), bob.book.clone(), key)
        .dir(tmpdir("rev29a-rx-revoked"))
        .sessions(Some(1))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = rx.local_addr().to_string();
    let serving = tokio::spawn(rx.serve());
    let tx = Sender::builder(alice.identity.clone(), alice.book.clone(), key).build();
    let r = tx.authenticate(&addr).await;
    let _ = serving.await;
    assert!(
        r.is_err(),
        "a default-built sender authenticated to a revoked receiver: {:?}",
        r.map(|s| s.outcome.receiver)
    );
}
