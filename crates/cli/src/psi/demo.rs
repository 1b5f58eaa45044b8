//! The PSI scene of `tacit demo`: Alice learns which of her identifiers are in Bob's
//! address book, Bob learns nothing, and a cheating Bob is caught.

use super::cmd::precompute_progress;
use crate::util::ms;
use anyhow::{Context, Result};
use rand_core::RngCore;
use std::time::Instant;
use tacit_crypto::oprf::{KeyPair, Oprf};
use tacit_crypto::rng::SecureRng;
use tacit_crypto::{PrimeGroup, SecretScalar};
use tacit_net::{FramedConn, FramedListener, NetConfig};
use tacit_psi::{PsiParams, Receiver, ReceiverPrecomputation, Response, Reuse, Security};

/// A random US-style phone number for generated address books.
fn phone(rng: &mut SecureRng) -> String {
    format!("1555{:07}", rng.next_u32() % 10_000_000)
}

/// Two local parties intersect privately over loopback TCP: Bob's book holds
/// `contacts` generated numbers (from `seed`).
pub async fn psi_demo<G: PrimeGroup>(contacts: u32, seed: u64) -> Result<()> {
    let params = PsiParams::new(Security::Malicious).with_group(G::ID);
    let mut data_rng = SecureRng::from_seed({
        let mut s = [0u8; 32];
        s[..8].copy_from_slice(&seed.to_le_bytes());
        s
    });
    // Alice's own identifiers; Bob's book holds two of them among random numbers.
    let alice = [
        phone(&mut data_rng),
        "alice@example.org".to_string(),
        phone(&mut data_rng),
        "a.work@example.com".into(),
    ];
    let mut book: Vec<String> = (0..contacts.saturating_sub(2)).map(|_| phone(&mut data_rng)).collect();
    book.push(alice[2].clone());
    book.push(alice[1].clone());
    let expected = [alice[1].clone(), alice[2].clone()];

    println!("tacit demo — private set intersection between two local parties");
    println!(
        "  protocol: {params} (l = {} bits per sender element)",
        params.truncation_bits()
    );
    println!();

    // Bob: the PSI sender, precomputes while idle.
    let mut rng = SecureRng::from_os();
    let t = Instant::now();
    let pb = precompute_progress(book.len(), "tacit psi demo");
    let bob = tacit_psi::server::make_sender::<G>(&params, &book, 1, Reuse::FreshPerSession, &mut rng, &|p| {
        pb.set_position(p.done)
    })?;
    pb.finish();
    let precompute = t.elapsed();
    let net = NetConfig::default().speaking(tacit_net::Protocol::Psi);
    let listener = FramedListener::bind("127.0.0.1:0", &net).await?;
    let addr = listener.local_addr()?;
    let server = tokio::spawn(async move {
        let mut rng = SecureRng::from_os();
        let mut conn = listener.accept().await?;
        let req = conn.recv().await?;
        let t = Instant::now();
        let resp = bob.respond(&req, &mut rng)?;
        let online = t.elapsed();
        conn.send(&resp).await?;
        anyhow::Ok((req.len(), resp.len(), online))
    });

    // Alice: the PSI receiver.
    let pre = ReceiverPrecomputation::<G>::compute(&params, &alice, &mut rng)?;
    let mut conn = FramedConn::connect_early(addr, &net).await?;
    let (waiting, req) = Receiver::start(&pre);
    conn.send(&req).await?;
    let resp = conn.recv().await?;
    let t = Instant::now();
    let found = waiting.on_response(&resp)?;
    let alice_online = t.elapsed();
    let (req_len, resp_len, bob_online) = server.await.context("sender task")??;

    println!(
        "  Bob   (sender)   address book: {} contacts, padded to n = {}",
        book.len(),
        params.max_sender
    );
    println!(
        "                   precomputation {:.1} ms on all cores",
        ms(precompute)
    );
    println!(
        "  Alice (receiver) own identifiers: {}, padded to m = {}",
        alice.len(),
        params.max_receiver
    );
    println!("  over TCP {addr}: request {req_len} B, response {resp_len} B");
    println!();
    println!(
        "  Alice learned: {} of her identifiers are in Bob's address book:",
        found.len()
    );
    for item in found.items() {
        println!("                   {}", String::from_utf8_lossy(item));
    }
    println!(
        "                 and nothing about Bob's other contacts (she saw {} truncated",
        params.max_sender
    );
    println!("                 PRF values under Bob's key, in random order, real and dummy alike).");
    println!(
        "  Bob learned:   nothing — {} blinded group elements, the same for any set of",
        params.max_receiver
    );
    println!("                 at most {} identifiers.", params.max_receiver);
    println!(
        "  online compute: Bob {:.2} ms (evaluate + batched proof), Alice {:.2} ms (verify + unblind + match)",
        ms(bob_online),
        ms(alice_online)
    );
    let got: Vec<String> = found
        .items()
        .iter()
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .collect();
    anyhow::ensure!(
        got == expected,
        "demo result {got:?} differs from the plain intersection {expected:?}"
    );

    // A cheating Bob: one answer computed with a second key. Alice's proof check
    // refuses the whole response.
    println!();
    let key = tacit_psi::SenderKey::<G>::generate(&mut rng, 2);
    let honest_pre = tacit_psi::SenderPrecomputation::compute(&params, &key, &book, Reuse::FreshPerSession, &mut rng)?;
    let honest = tacit_psi::Sender::new(&params, key, honest_pre)?;
    let (waiting, req) = Receiver::start_typed(&pre);
    let mut cheat: Response<G> = honest.respond_to(&req, &mut rng)?;
    let other = KeyPair::<G>::from_secret(SecretScalar::random(&mut rng));
    cheat.evaluated[0] = Oprf::<G>::new(params.security.mode()).blind_evaluate(&other, &req.blinded[0]);
    match waiting.on_response_typed(&cheat) {
        Err(e) => println!("  A cheating Bob (second key for one element) is caught by Alice: {e}"),
        Ok(_) => anyhow::bail!("the cheating sender was not caught"),
    }
    Ok(())
}
