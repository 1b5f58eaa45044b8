//! The library API (`tacit_drop::service`) end to end over loopback: the CA's
//! endpoint and a device's enrolment, the receiver and sender builders; and
//! deviating peers against the library CA and receiver, showing that the CLI's
//! protections are the builders' defaults.

use std::sync::{Arc, Mutex};
use tacit_crypto::rng::SecureRng;
use tacit_drop::ca::DeviceEnrollment;
use tacit_drop::protocol::{AddressBook, Peer};
use tacit_drop::service::ca::{self, Ca, CaEvent};
use tacit_drop::service::receiver::Receiver;
use tacit_drop::service::sender::{self, Sender};
use tacit_drop::service::{ServiceError, device};
use tacit_drop::transport::Limits;
use tacit_store::Store;

mod common;
use common::*;

/// A CA folder and its endpoint, confirming every identifier, for `sessions`
/// connections; its address, key and serving task.
async fn start_ca(
    tag: &str,
    sessions: u64,
    confirm: impl Fn(&tacit_drop::AccountId, &str) -> bool + Send + Sync + 'static,
) -> (
    std::path::PathBuf,
    String,
    tacit_drop::records::CaPublicKey,
    tokio::task::JoinHandle<tacit_drop::service::Result<()>>,
) {
    let dir = tmpdir(tag).join("ca");
    let authority = ca::init(&dir, false).unwrap();
    let key = authority.public_key();
    let server = Ca::builder(authority, &dir)
        .confirm(confirm)
        .sessions(Some(sessions))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    assert_eq!(server.public_key(), key);
    let addr = server.local_addr().to_string();
    (dir, addr, key, tokio::spawn(server.serve()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ca_two_enrolled_devices_and_a_file_through_the_builders() {
    let (dir, ca_addr, key, ca_task) = start_ca("svc-honest", 3, |_, _| true).await;
    let p = params();
    let alice = ca::enroll::<G>(&ca_addr, key, &p, &["alice@example.com".into()])
        .await
        .unwrap();
    let bob = ca::enroll::<G>(&ca_addr, key, &p, &["bob@example.com".into()])
        .await
        .unwrap();
    let list = ca::fetch_revocations(&ca_addr, key).await.unwrap();
    assert!(list.list().accounts().is_empty());
    // The CA's list in force on both devices (without it the builders refuse every peer).
    let revocations = tacit_drop::revocation::Revocations::from_list(list);
    ca_task.await.unwrap().unwrap();

    // The device's store keeps what `tacit id` keeps.
    let mut st = Store::open(&dir.join("alice.sqlite3")).unwrap();
    device::remember_ca(&mut st, &key).unwrap();
    device::remember_ca_address(&mut st, &ca_addr).unwrap();
    device::store_identity(&mut st, &alice).unwrap();
    assert_eq!(device::ca_public(&st).unwrap(), key);
    assert_eq!(device::identity::<G>(&st).unwrap().account, alice.account);
    assert_eq!(device::ca_address(&st).unwrap().as_deref(), Some(ca_addr.as_str()));

    let inbox = dir.join("inbox");
    let received = Arc::new(Mutex::new(Vec::new()));
    let r2 = received.clone();
    let rx = Receiver::builder(Arc::new(bob), Arc::new(AddressBook::new(&["alice@example.com"])), key)
        .name("Bob's phone")
        .revocations(revocations.clone())
        .dir(&inbox)
        .accept_contacts()
        .sessions(Some(1))
        .events(move |e| {
            if let tacit_drop::transport::Event::Received(p) = e {
                r2.lock().unwrap().push(p);
            }
        })
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    assert_eq!(rx.swept(), Ok(0));
    let addr = rx.local_addr().to_string();
    let serving = tokio::spawn(rx.serve());

    let file = dir.join("note.txt");
    std::fs::write(&file, b"lunch at noon?").unwrap();
    let tx = Sender::builder(Arc::new(alice), Arc::new(AddressBook::new(&["bob@example.com"])), key)
        .name("Alice's laptop")
        .revocations(revocations)
        .build();
    let offers = sender::offers(std::slice::from_ref(&file), &|_, _, _| {})
        .await
        .unwrap();
    let session = tx.authenticate(&addr).await.unwrap();
    assert_eq!(
        session.outcome.receiver,
        Peer::Contact {
            identifier: "bob@example.com".into()
        }
    );
    assert_eq!(session.outcome.known_by_receiver, vec!["alice@example.com".to_string()]);
    let delivered = sender::deliver(session, &offers).await.unwrap();
    serving.await.unwrap().unwrap();
    assert_eq!(delivered.len(), 1);
    assert_eq!(
        std::fs::read(inbox.join(&delivered[0].stored_as)).unwrap(),
        b"lunch at noon?"
    );
    assert_eq!(received.lock().unwrap().len(), 1);
}

/// Deviating devices against the library CA: one enrols under a registered
/// account's UUID with its own keys (the victim's certificates must not be
/// re-issued to it), one sends junk, and a revoked account asks for a renewal — each
/// refused with the reason. And an enrolment the operator has not confirmed yet does
/// not hold up the revocation list: the operator's answer here is released only once
/// the list arrived (with the list behind the confirmation this test never ends
/// before the list request's deadline, and fails).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_library_ca_refuses_deviating_devices_and_serves_lists_while_an_enrolment_waits() {
    let (gate_tx, gate_rx) = std::sync::mpsc::channel::<()>();
    let (entered_tx, entered_rx) = std::sync::mpsc::channel::<()>();
    let gate = Mutex::new(Some((gate_rx, entered_tx)));
    let refusals = Arc::new(Mutex::new(Vec::new()));
    let dir = tmpdir("svc-ca-hostile").join("ca");
    let authority = ca::init(&dir, false).unwrap();
    let key = authority.public_key();
    let r2 = refusals.clone();
    let server = Ca::builder(authority, &dir)
        .confirm(move |_, id| {
            // The first enrolment of "slow@" waits for the test's release.
            if id.starts_with("slow@")
                && let Some((rx, entered)) = gate.lock().unwrap().take()
            {
                let _ = entered.send(());
                let _ = rx.recv();
            }
            true
        })
        .events(move |e| {
            if let CaEvent::Refused(why) = e {
                r2.lock().unwrap().push(why);
            }
        })
        .sessions(Some(7))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = server.local_addr().to_string();
    let serving = tokio::spawn(server.serve());
    let p = params();

    // An enrolment waits for the operator; the list is served meanwhile.
    let (a2, p2) = (addr.clone(), p);
    let waiting = tokio::spawn(async move { ca::enroll::<G>(&a2, key, &p2, &["slow@example.com".into()]).await });
    tokio::task::spawn_blocking(move || entered_rx.recv())
        .await
        .unwrap()
        .unwrap();
    let list = ca::fetch_revocations(&addr, key).await;
    gate_tx.send(()).unwrap();
    assert!(list.is_ok(), "{:?}", list.err());
    let victim = waiting.await.unwrap().unwrap();

    // Under the victim's UUID, with fresh keys and no renewal signature.
    let forged =
        DeviceEnrollment::<G>::for_account(&p, victim.account, &["mallory@example.com"], &mut SecureRng::from_os())
            .unwrap();
    let e = ca::exchange(&addr, key, &forged.request().to_bytes(), ca::ENROLMENT_DEADLINE)
        .await
        .unwrap_err();
    assert!(matches!(e, ServiceError::CaRefused(_)), "{e}");
    assert!(e.to_string().contains(&victim.account.to_string()), "{e}");

    // Junk.
    let e = ca::exchange(&addr, key, b"junk", ca::ENROLMENT_DEADLINE)
        .await
        .unwrap_err();
    assert!(e.to_string().starts_with("the CA refused: enrolment request"), "{e}");

    // A revoked account cannot renew, and the list names it.
    let registry = ca::load(&dir).unwrap();
    ca::revoke(&registry, &dir, &victim.account, 3600).unwrap();
    let e = ca::renew::<G>(&addr, key, &victim, &["slow@example.com".into()])
        .await
        .unwrap_err();
    assert!(e.to_string().contains("revoked"), "{e}");
    let list = ca::fetch_revocations(&addr, key).await.unwrap();
    assert!(list.list().contains(&victim.account));

    // A device that pins another CA key does not talk to this endpoint at all.
    let other = tacit_drop::ca::CertificateAuthority::generate(&mut SecureRng::from_os()).unwrap();
    assert!(ca::fetch_revocations(&addr, other.public_key()).await.is_err());
    serving.await.unwrap().unwrap();
    assert_eq!(refusals.lock().unwrap().len(), 3, "{:?}", refusals.lock().unwrap());
}

/// Deviating senders against the library receiver with the builder's defaults: a
/// request out of order, a replayed `StartPSI` past the default per-account rate,
/// and a sender the revocation list names.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_library_receiver_keeps_its_protections_by_default() {
    let authority = tacit_drop::ca::CertificateAuthority::generate(&mut SecureRng::from_os()).unwrap();
    let key = authority.public_key();
    let alice = device(&authority, &["alice@example.com"], &["bob@example.com"]);
    let bob = device(&authority, &["bob@example.com"], &["alice@example.com"]);
    let burst = Limits::default().start_psi_per_minute as usize;
    let n = burst + 3;
    let revocations = tacit_drop::revocation::Revocations::new();
    let rx = Receiver::builder(bob.identity.clone(), bob.book.clone(), key)
        .dir(tmpdir("svc-rx-hostile"))
        .revocations(revocations.clone())
        .sessions(Some(n as u64 + 2))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = rx.local_addr().to_string();
    let serving = tokio::spawn(rx.serve());

    // /Ask before any PSI: 409.
    let early = raw(
        &addr,
        &alice,
        "POST /Ask HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
        b"",
        false,
    )
    .await
    .unwrap();
    assert!(early.starts_with("HTTP/1.1 409"), "{early}");

    // One valid StartPSI replayed: the default rate answers 429 past the burst.
    let body = start_body(&authority, &alice, &bob);
    let head = format!(
        "POST /StartPSI HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let mut statuses = Vec::new();
    for _ in 0..n {
        let resp = raw(&addr, &alice, &head, &body, false).await.unwrap();
        statuses.push(resp.get(9..12).unwrap_or("").to_string());
    }
    assert_eq!(statuses.iter().filter(|s| *s == "200").count(), burst, "{statuses:?}");
    assert_eq!(
        statuses.iter().filter(|s| *s == "429").count(),
        n - burst,
        "{statuses:?}"
    );

    // Revoked while the receiver runs: closed right after the handshake.
    let (list, _) = authority
        .publish_revocations(None, &[alice.identity.account], now(), 3600)
        .unwrap();
    revocations.update(list.verify(&key).unwrap()).unwrap();
    // (a sender that checks nothing itself: the receiver is the one refusing)
    let tx = Sender::builder(alice.identity.clone(), alice.book.clone(), key)
        .insecure_no_revocations()
        .build();
    match tx.authenticate(&addr).await {
        Ok(_) => panic!("a revoked sender authenticated"),
        Err(e) => assert!(!matches!(e, tacit_drop::Error::NoRevocationList), "{e}"),
    }
    serving.await.unwrap().unwrap();
}
