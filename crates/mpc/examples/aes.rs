//! Two parties compute AES-128 under GMW in one program: party a holds the key, party
//! b the plaintext, and both learn the ciphertext — nothing else of the other's
//! input. Triples come from OT extension between the two; the channel is TLS 1.3,
//! each side pinning the other's key. The result is checked against the circuit
//! evaluated in the clear.
//!
//!     cargo run -p tacit-mpc --example aes

use std::sync::Arc;
use tacit_mpc::bits::{be_bytes_from_bits, bits_from_be_bytes};
use tacit_mpc::circuit::{LayeredCircuit, bristol};
use tacit_mpc::{Channel, Event, Session, Triples, shipped};
use tacit_net::tls::{SelfSigned, pinned};

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

fn bits(hex_text: &str) -> Vec<bool> {
    bits_from_be_bytes(&hex::decode(hex_text).expect("a hex constant"))
}

#[tokio::main]
async fn main() -> Result<()> {
    // The shipped Bristol Fashion AES-128: input 0 = key, input 1 = plaintext.
    let circuit = bristol::parse(shipped::AES_128)?;
    let lc = Arc::new(LayeredCircuit::new(circuit.clone()));
    let key = bits("000102030405060708090a0b0c0d0e0f"); // party a's secret
    let plaintext = bits("00112233445566778899aabbccddeeff"); // party b's secret
    println!("AES-128: {} AND gates, AND depth {}", lc.and_gates(), lc.and_depth());

    // Each party's TLS key; each pins the other's (in real life: exchanged beforehand).
    let (alice, bob) = (SelfSigned::generate("a.invalid")?, SelfSigned::generate("b.invalid")?);
    let for_a = Channel::tls(&alice, pinned(bob.fingerprint()?))?;
    let for_b = Channel::tls(&bob, pinned(alice.fingerprint()?))?;

    // Party a listens (port 0: any free port) with its input, party b connects.
    let a = Session::builder(lc.clone())
        .inputs(vec![key.clone()])
        .triples(Triples::Ot)
        .channel(for_a)
        .on_event(|e| {
            if let Event::Connected { peer_key: Some(k) } = e {
                println!("party a: peer connected with the pinned key {}", hex::encode(&k[..8]));
            }
        })
        .bind("127.0.0.1:0")
        .await?;
    let addr = a.local_addr().to_string();
    let b = Session::builder(lc)
        .inputs(vec![plaintext.clone()])
        .triples(Triples::Ot)
        .channel(for_b)
        .connect(&addr);
    let (out_a, out_b) = tokio::join!(a.run(), b);
    let (out_a, out_b) = (out_a?, out_b?);

    let ciphertext = hex::encode(be_bytes_from_bits(&out_b.outputs()[0]));
    let clear = hex::encode(be_bytes_from_bits(&circuit.eval(&[key, plaintext])?[0]));
    println!("party a got {}", hex::encode(be_bytes_from_bits(&out_a.outputs()[0])));
    println!("party b got {ciphertext}");
    println!("in the clear {clear}");
    let r = &out_a.report;
    println!(
        "setup {:.0} ms ({} triples by OT extension), online {:.1} ms in {} rounds, {} bytes sent by a",
        r.setup.time.as_secs_f64() * 1e3,
        r.triples,
        r.online.time.as_secs_f64() * 1e3,
        r.online.rounds,
        r.setup.bytes_sent + r.online.bytes_sent
    );
    if out_a.outputs() != out_b.outputs() || ciphertext != clear {
        return Err("the parties' outputs differ from the clear evaluation".into());
    }
    println!("ok: both parties hold AES-128(key, plaintext), checked against the clear circuit");
    Ok(())
}
