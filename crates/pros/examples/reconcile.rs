//! Bob serves his ranked lunch places, Alice reconciles hers against them, both in
//! one process over loopback TLS 1.3 (Alice pins Bob's key, Bob sees Alice's). 3PR
//! (sum of ranks) gives both the place they like best together and nothing else
//! about the other's list.
//!
//!     cargo run -p tacit-pros --example reconcile

use std::time::Instant;
use tacit_pros::endpoint::Error;
use tacit_pros::reconcile;
use tacit_pros::service::Event;
use tacit_pros::threepr::ReconcileParams;
use tacit_store::Store;

fn hex(fp: &[u8; 32]) -> String {
    fp.iter().map(|b| format!("{b:02x}")).collect()
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let params = ReconcileParams::default(); // sum of ranks, FNP-implicit
    let bob = ["ramen", "tacos", "pizza", "salad"];
    let alice = ["pizza", "sushi", "tacos", "ramen"];

    // Bob: a server for one session. His store keeps his TLS key and his
    // ring-Pedersen parameters (made once; 2048 bits here to keep the example quick,
    // 3072 is the default). Peers' Paillier keys of 2048 bits and more are accepted.
    let t = Instant::now();
    let server = reconcile::serve(Store::open_in_memory()?, params, &bob)
        .ring_bits(2048)
        .sessions(1)
        .bind("127.0.0.1:0")
        .await?;
    let addr = server.local_addr()?.to_string();
    let pin = server.fingerprint().expect("a TLS server has a key");
    println!("bob: serving {} places on {addr} (key {})", bob.len(), hex(&pin));
    println!(
        "bob: ring-Pedersen parameters made in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let serving = tokio::spawn(server.serve(|e| match e {
        Event::Done {
            client, result: Ok(r), ..
        } => println!(
            "bob: agreed on {:?} with key {} after {} rounds",
            r.elements.iter().map(|e| String::from_utf8_lossy(e)).collect::<Vec<_>>(),
            client.map(|fp| hex(&fp)).unwrap_or_default(),
            r.rounds
        ),
        Event::Done { result: Err(why), .. } => println!("bob: session failed: {why}"),
        Event::Busy { peer } => println!("bob: refused {peer} (busy)"),
    }));

    // Alice: holds a fresh 2048-bit Paillier key, pins Bob's TLS key.
    let t = Instant::now();
    let out = reconcile::connect(Store::open_in_memory()?, params, &alice)
        .pin(pin)
        .key_bits(2048)
        .run(&addr)
        .await?;
    let agreed: Vec<_> = out.result.elements.iter().map(|e| String::from_utf8_lossy(e)).collect();
    println!(
        "alice: agreed on {agreed:?} after {} rounds ({} comparisons, {:.1} s)",
        out.result.rounds,
        out.result.comparisons,
        t.elapsed().as_secs_f64()
    );
    serving.await.map_err(|e| Error::Config(e.to_string()))??;
    // ranks count down from n = 4 for the first choice: pizza has 2 + 4 = 6, more
    // than tacos (3 + 2) or ramen (4 + 1)
    Ok(())
}
