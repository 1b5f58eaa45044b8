//! The GPU's ristretto255 code (`src/gpu/ristretto.cu`) compiled as host C++ and
//! checked against curve25519-dalek: decoding (which keys it refuses), scalar
//! multiplication and encoding, on random and edge-case keys and scalars. This runs
//! on every machine with a C++ compiler, so the kernel's arithmetic is tested in CI
//! although CI has no GPU (the GPU run itself is in `tests/gpu.rs`). Without a C++
//! compiler the test prints why it is skipped.
#![cfg(feature = "gpu")]

use std::io::Write;
use std::process::{Command, Stdio};

use curve25519_dalek::constants::RISTRETTO_BASEPOINT_POINT;
use curve25519_dalek::ristretto::{CompressedRistretto, RistrettoPoint};
use curve25519_dalek::scalar::Scalar;
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use tacit_pir::gpu::ristretto::{SOURCE, radix16};

const HARNESS: &str = r#"
#include <stdio.h>
#include "ristretto.cu"
int main(void) {
    i8 digits[64];
    u8 in[32], out[32];
    if (fread(digits, 1, 64, stdin) != 64) return 2;
    while (fread(in, 1, 32, stdin) == 32) {
        const int ok = ristretto_mul_encode(out, in, digits);
        putchar(ok);
        fwrite(out, 1, 32, stdout);
    }
    return 0;
}
"#;

/// The harness binary, or `None` (after printing why) without a C++ compiler.
fn harness() -> Option<std::path::PathBuf> {
    let dir = std::env::temp_dir().join(format!("tacit-ristretto-host-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("ristretto.cu"), SOURCE).unwrap();
    std::fs::write(dir.join("harness.cpp"), HARNESS).unwrap();
    let bin = dir.join("harness");
    for cxx in ["c++", "g++", "clang++"] {
        let out = Command::new(cxx)
            .args(["-O2", "-std=c++14", "-Wall", "-Werror", "-o"])
            .arg(&bin)
            .arg(dir.join("harness.cpp"))
            .output();
        match out {
            Ok(o) if o.status.success() => return Some(bin),
            Ok(o) => panic!("{cxx} failed on ristretto.cu:\n{}", String::from_utf8_lossy(&o.stderr)),
            Err(_) => continue,
        }
    }
    eprintln!("skipping: no C++ compiler (c++, g++ or clang++) to compile ristretto.cu for the host");
    None
}

/// (accepted, encode(k·decode(key))) for each key, from the host build of the kernel.
fn run(bin: &std::path::Path, k: &Scalar, keys: &[[u8; 32]]) -> Vec<(bool, [u8; 32])> {
    let mut child = Command::new(bin)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input: Vec<u8> = radix16(k).iter().map(|&d| d as u8).collect();
    for key in keys {
        input.extend_from_slice(key);
    }
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(&input).unwrap());
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(out.status.success());
    assert_eq!(out.stdout.len(), 33 * keys.len());
    out.stdout
        .chunks_exact(33)
        .map(|c| (c[0] == 1, c[1..].try_into().unwrap()))
        .collect()
}

fn le_bytes(x: &[u64; 4]) -> [u8; 32] {
    let mut b = [0u8; 32];
    for (i, w) in x.iter().enumerate() {
        b[8 * i..8 * i + 8].copy_from_slice(&w.to_le_bytes());
    }
    b
}

/// Random points, random strings, and the encodings a careless decoder accepts.
fn keys(rng: &mut ChaCha20Rng) -> Vec<[u8; 32]> {
    let mut keys: Vec<[u8; 32]> = (0..300)
        .map(|_| (RISTRETTO_BASEPOINT_POINT * Scalar::random(rng)).compress().to_bytes())
        .collect();
    for _ in 0..150 {
        let mut b = [0u8; 32];
        rng.fill_bytes(&mut b);
        keys.push(b);
        b[31] &= 0x7f;
        b[0] &= 0xfe;
        keys.push(b);
    }
    let p = [0xffff_ffff_ffff_ffed, u64::MAX, u64::MAX, 0x7fff_ffff_ffff_ffff];
    keys.push(le_bytes(&p)); // p itself (0, not canonical)
    keys.push(le_bytes(&[p[0] + 2, p[1], p[2], p[3]])); // p + 2
    keys.push([0xff; 32]);
    keys.push([0; 32]); // the identity
    keys.push(RistrettoPoint::default().compress().to_bytes());
    keys.push(RISTRETTO_BASEPOINT_POINT.compress().to_bytes());
    let mut high = RISTRETTO_BASEPOINT_POINT.compress().to_bytes();
    high[31] |= 0x80; // bit 255 set
    keys.push(high);
    let mut small = [0u8; 32];
    for v in 1..=12u8 {
        small[0] = v; // small s: odd (negative) and even, square and not
        keys.push(small);
    }
    keys
}

#[test]
fn host_build_of_the_kernel_equals_dalek() {
    let Some(bin) = harness() else { return };
    let mut rng = ChaCha20Rng::seed_from_u64(255);
    let keys = keys(&mut rng);
    let scalars = [
        Scalar::random(&mut rng),
        Scalar::random(&mut rng),
        Scalar::ONE,
        Scalar::ZERO,
        -Scalar::ONE,
        Scalar::from(8u8),
        Scalar::from_bytes_mod_order([0x88; 32]),
    ];
    let (mut accepted, mut refused) = (0, 0);
    for k in &scalars {
        let got = run(&bin, k, &keys);
        for (key, (ok, enc)) in keys.iter().zip(got) {
            let want = CompressedRistretto(*key)
                .decompress()
                .filter(|p| *p != RistrettoPoint::default());
            assert_eq!(ok, want.is_some(), "decoding {key:02x?}");
            if let Some(p) = want {
                assert_eq!(enc, (k * p).compress().to_bytes(), "k = {k:?}, key {key:02x?}");
                accepted += 1;
            } else {
                refused += 1;
            }
        }
    }
    // Both outcomes occur, so neither half of the check is vacuous.
    assert!(
        accepted > 2000 && refused > 500,
        "{accepted} accepted, {refused} refused"
    );
}
