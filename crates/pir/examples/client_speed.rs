//! Timing of the lwe client's offline query half at 10^7 rows of 41 bytes.
use std::sync::Arc;
use std::time::Instant;

use aes::Aes128;
use aes::cipher::{BlockEncrypt, KeyInit, generic_array::GenericArray};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use tacit_pir::TableShape;
use tacit_pir::lwe::{LWE_N, LweClient, LweHint, LweParams};

fn main() {
    let p = LweParams::new(TableShape::new(10_000_000, 41).unwrap(), [1; 16]).unwrap();
    let hint = LweHint {
        params: p,
        h: Arc::new(vec![0u32; p.matrix_rows() * LWE_N]),
    };
    let client = LweClient::new(hint).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    for _ in 0..3 {
        let t = Instant::now();
        let q = client.prepare(&mut rng);
        println!("prepare: {:.1} ms", t.elapsed().as_secs_f64() * 1e3);
        std::hint::black_box(q);
    }
    let cipher = Aes128::new(GenericArray::from_slice(&[1u8; 16]));
    let mut blocks = vec![GenericArray::from([0u8; 16]); 8];
    let n = p.cols() * LWE_N / 4 / 8;
    let t = Instant::now();
    for i in 0..n {
        blocks[0][0] = i as u8;
        cipher.encrypt_blocks(&mut blocks);
    }
    println!(
        "aes alone for A: {:.1} ms one thread ({} MB)",
        t.elapsed().as_secs_f64() * 1e3,
        n * 128 / 1_000_000
    );
}
