//! Quick timing of the lwe server at a given size: `cargo run --release -p tacit-pir
//! --example lwe_speed -- ROWS ROW_BYTES BATCH`.
use std::time::Instant;

use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use tacit_pir::lwe::{LweClient, LweParams, LweServer};
use tacit_pir::{PirClient, PirServer, Selection, Table, TableShape};

fn main() {
    let args: Vec<u64> = std::env::args().skip(1).map(|a| a.parse().unwrap()).collect();
    let (rows, rb, batch) = (args[0], args[1] as u32, args[2] as usize);
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let table = Table::random(TableShape::new(rows, rb).unwrap(), &mut rng);
    let t = Instant::now();
    let params = LweParams::new(table.shape(), [1; 16]).unwrap();
    println!(
        "params {:?} m={} l={} fail=2^{:.0}",
        params,
        params.matrix_rows(),
        params.cols(),
        params.failure_log2()
    );
    let server = LweServer::setup(&table, params).unwrap();
    println!("setup {:.2}s", t.elapsed().as_secs_f64());
    // scan floor
    let data = table.as_bytes();
    for _ in 0..3 {
        let t = Instant::now();
        use rayon::prelude::*;
        let s: u64 = data
            .par_chunks(1 << 20)
            .map(|c| c.chunks(8).map(|x| x[0] as u64).sum::<u64>())
            .sum();
        println!("scan {:.2} ms ({s})", t.elapsed().as_secs_f64() * 1e3);
    }
    let client = LweClient::new(server.hint()).unwrap();
    let t = Instant::now();
    let (st, q) = client.query(&Selection::row(rows / 3), &mut rng).unwrap();
    println!("query {:.2} ms", t.elapsed().as_secs_f64() * 1e3);
    for _ in 0..3 {
        let t = Instant::now();
        let a = server.answer(&q).unwrap();
        println!("answer {:.2} ms", t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        let d = client.decode(&st, &a).unwrap();
        println!(
            "decode {:.3} ms ok={}",
            t.elapsed().as_secs_f64() * 1e3,
            d.to_row_bytes(rb) == table.row(rows / 3).unwrap()
        );
    }
    let qs: Vec<_> = (0..batch).map(|_| q.clone()).collect();
    for _ in 0..2 {
        let t = Instant::now();
        let _ = server.answer_batch(&qs).unwrap();
        let dt = t.elapsed().as_secs_f64();
        println!("batch {batch}: {:.1} ms, {:.1} q/s", dt * 1e3, batch as f64 / dt);
    }
}
