//! The PrivateDrop scene of `tacit demo`: mutual contacts authenticate and a file
//! arrives over HTTPS with mutual TLS; a non-contact learns nothing new.

use crate::util::now_unix as unix_now;
use crate::util::phone;
use anyhow::Result;
use std::sync::{Arc, Mutex};
use tacit_crypto::PrimeGroup;
use tacit_crypto::rng::SecureRng;
use tacit_drop::DropParams;
use tacit_drop::ca::{CertificateAuthority, DeviceEnrollment, DropIdentity, MemoryRegistry};
use tacit_drop::protocol::{AddressBook, Peer};
use tacit_drop::revocation::{DEFAULT_LIST_LIFETIME_SECS, Revocations};
use tacit_drop::service::receiver::Receiver;
use tacit_drop::service::sender::Sender;
use tacit_drop::transport::{self, Event};

/// A demo device: enrolled with the CA, with an address book.
struct Device<G: PrimeGroup> {
    identity: Arc<DropIdentity<G>>,
    book: Arc<AddressBook>,
}

fn demo_device<G: PrimeGroup>(
    ca: &CertificateAuthority,
    params: &DropParams,
    ids: &[&str],
    book: &[String],
    rng: &mut SecureRng,
) -> Result<Device<G>> {
    let e = DeviceEnrollment::<G>::new(params, ids, rng)?;
    let issued = ca.enroll(e.request(), &|_| true, &mut MemoryRegistry::new(), unix_now() - 5, rng)?;
    Ok(Device {
        identity: Arc::new(e.finish(issued, &ca.public_key(), unix_now())?),
        book: Arc::new(AddressBook::new(book)),
    })
}

fn ms_of(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// PrivateDrop between local devices over loopback HTTPS with mutual TLS: mutual
/// contacts authenticate and a file arrives; a non-contact learns nothing new.
pub async fn drop_demo<G: PrimeGroup>(contacts: u32, seed: u64) -> Result<()> {
    let params = DropParams::default().with_group(G::ID);
    let mut rng = SecureRng::from_os();
    let mut data_rng = SecureRng::from_seed([(seed % 251) as u8; 32]);
    let ca = CertificateAuthority::generate(&mut rng)?;
    let filler = |rng: &mut SecureRng, n: u32| -> Vec<String> { (0..n).map(|_| phone(rng)).collect() };
    let mut alice_book = filler(&mut data_rng, contacts.saturating_sub(1));
    alice_book.push("bob@example.org".into());
    let mut bob_book = filler(&mut data_rng, contacts.saturating_sub(1));
    bob_book.push("14155550142".into());
    let mut mallory_book = filler(&mut data_rng, contacts.saturating_sub(1));
    mallory_book.push("bob@example.org".into());
    let alice = demo_device::<G>(
        &ca,
        &params,
        &["14155550142", "alice@example.org"],
        &alice_book,
        &mut rng,
    )?;
    let bob = demo_device::<G>(&ca, &params, &["bob@example.org", "12125550199"], &bob_book, &mut rng)?;
    let mallory = demo_device::<G>(&ca, &params, &["13105550123"], &mallory_book, &mut rng)?;

    println!();
    println!("tacit demo — PrivateDrop: mutual TLS, DO2 → DO3 in three messages, CA-certified inputs");
    println!("  The CA enrolled Alice, Bob and Mallory after checking their Schnorr proofs.");
    println!("  Alice's book holds bob@example.org and Bob's holds Alice's 14155550142 (mutual contacts);");
    println!("  Mallory's book holds bob@example.org, but Bob does not have Mallory.");

    let inbox = std::env::temp_dir().join(format!("tacit-demo-{}-{}", std::process::id(), unix_now()));
    std::fs::create_dir_all(&inbox)?;
    let log: Arc<Mutex<Vec<String>>> = Arc::default();
    let log2 = log.clone();
    // The CA's (empty) revocation list in force on every device.
    let (list, _) = ca.publish_revocations(None, &[], unix_now(), DEFAULT_LIST_LIFETIME_SECS)?;
    let revocations = Revocations::from_list(list.verify(&ca.public_key())?);
    let receiver = Receiver::builder(bob.identity.clone(), bob.book.clone(), ca.public_key())
        .revocations(revocations.clone())
        .name("Bob's phone")
        .dir(&inbox)
        .accept_contacts()
        .sessions(Some(2))
        .events(move |e: Event| {
            let line = match e {
                Event::Authenticated(Peer::Contact { identifier }) => {
                    format!("Bob learned: the sender is his contact {identifier}")
                }
                Event::Authenticated(Peer::Unknown) => "Bob learned: the sender is not one of his contacts".into(),
                Event::Received(p) => format!(
                    "Bob received {}",
                    p.file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default()
                ),
                _ => return,
            };
            if let Ok(mut l) = log2.lock() {
                l.push(line);
            }
        })
        .bind("127.0.0.1:0")
        .await?;
    let addr = receiver.local_addr().to_string();
    let server = tokio::spawn(receiver.serve());

    let outbox = inbox.join("outgoing");
    std::fs::create_dir_all(&outbox)?;
    let file = outbox.join("note.txt");
    std::fs::write(&file, "Lunch at noon? — Alice")?;
    let sender = |d: &Device<G>, name: &str| {
        Sender::builder(d.identity.clone(), d.book.clone(), ca.public_key())
            .revocations(revocations.clone())
            .name(name)
            .build()
    };
    let offer = transport::offer_for(&file).await?;
    let mut s = sender(&alice, "Alice's laptop").authenticate(&addr).await?;
    let t = s.timings;
    println!();
    println!(
        "  Alice → Bob over https://{addr}: authenticated in {:.1} ms (TLS {:.1} ms, Alice's computation {:.1} ms)",
        ms_of(t.total),
        ms_of(t.tls),
        ms_of(t.compute)
    );
    match &s.outcome.receiver {
        Peer::Contact { identifier } => println!(
            "    Alice learned: the receiver is her contact {identifier}, and it has her as {}",
            s.outcome.known_by_receiver.join(", ")
        ),
        Peer::Unknown => println!("    Alice learned: the receiver is not one of her contacts"),
    }
    anyhow::ensure!(s.ask(std::slice::from_ref(&offer)).await?, "Bob declined Alice's file");
    let stored = s.upload(0, &file, &offer).await?;
    drop(s);
    // Bob's side of Alice's session, printed under it.
    let flush = |log: &Arc<Mutex<Vec<String>>>| -> Result<()> {
        for line in log.lock().map_err(|_| anyhow::anyhow!("log lock poisoned"))?.drain(..) {
            println!("    {line}");
        }
        Ok(())
    };
    flush(&log)?;

    let mut m = sender(&mallory, "Mallory's phone").authenticate(&addr).await?;
    println!("  Mallory → Bob:");
    match &m.outcome.receiver {
        Peer::Contact { identifier } => println!(
            "    Mallory learned: the receiver holds {identifier}, which her book already had, and that it does not know her"
        ),
        Peer::Unknown => println!("    Mallory learned: nothing about the receiver"),
    }
    let refused = m.ask(&[]).await;
    drop(m);
    server.await??;
    flush(&log)?;
    match refused {
        // The answer is the same as a user's decline, so that its size does not say
        // whether Bob holds her (issue 32); Bob's log says why.
        Ok(false) => println!("    Mallory's Ask was refused (Bob's receiver accepts contacts only)"),
        Err(e) => println!("    Mallory's Ask was refused: {e}"),
        Ok(true) => anyhow::bail!("Bob accepted a non-contact in contacts-only mode"),
    }
    let got = std::fs::read_to_string(inbox.join(&stored))?;
    println!("  Alice's file arrived intact (SHA-256 checked) as {stored:?}: {got:?}");
    println!("  Bob's other identifier and Alice's alice@example.org never left their devices; Mallory saw");
    println!("  no hash of any identifier she did not already hold.");
    let _ = std::fs::remove_dir_all(&inbox);
    Ok(())
}
