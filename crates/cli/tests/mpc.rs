//! `tacit mpc` between separate processes: the token manufactured and served by
//! `tacit mpc token`, the two parties by `tacit mpc run`, on the shipped Bristol
//! circuits against their published test vectors (FIPS-197, SHA-256).

mod common;

use common::{err, out, spawn, spawn_listening, tacit, tmp};
use std::path::PathBuf;
use std::process::Output;
use tacit_mpc::bits::{be_bytes_from_bits, bits_from_be_bytes, parse_bit_string, to_bit_string};

fn circuit(name: &str) -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| env!("CARGO_MANIFEST_DIR").into())
        .join(format!("../mpc/testdata/circuits/{name}.txt"))
}

fn bits_of_hex(h: &str) -> String {
    to_bit_string(&bits_from_be_bytes(&hex::decode(h).unwrap()))
}

fn hex_of_bits(line: &str) -> String {
    hex::encode(be_bytes_from_bits(&parse_bit_string(line.trim()).unwrap()))
}

/// Runs party a (spawned) and party b (waited on) on `circuit` with the given
/// arguments; returns both outputs.
fn run_pair(circuit: &std::path::Path, a: &[&str], b: &[&str]) -> (Output, Output) {
    let c = circuit.to_str().unwrap();
    let mut args_a = vec!["mpc", "run", "--circuit", c, "--party", "a", "--listen", "127.0.0.1:0"];
    args_a.extend_from_slice(a);
    let (pa, addr) = spawn(&args_a);
    let mut args_b = vec!["mpc", "run", "--circuit", c, "--party", "b", "--connect", &addr];
    args_b.extend_from_slice(b);
    let ob = tacit().args(&args_b).output().unwrap();
    let oa = pa.wait_with_output().unwrap();
    (oa, ob)
}

/// AES-128 of the FIPS-197 example between two processes, with triples from a token
/// process that party a holds; twice, so the second session takes fresh sequences
/// from the token's committed state. Both parties print the ciphertext.
#[test]
fn aes128_with_token_triples_matches_fips197() {
    let state = tmp("token.state");
    let ca_key = state.with_file_name("ca.key");
    let init = tacit()
        .args(["mpc", "token", "init", "--state", state.to_str().unwrap()])
        .args(["--ca-key", ca_key.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(init.status.success(), "{}", err(&init));
    let ca = out(&init)
        .lines()
        .find_map(|l| l.split("--trust-ca): ").nth(1).map(str::to_string))
        .expect("the CA key line");
    let (mut token, taddr) = spawn_listening(&[
        "mpc",
        "token",
        "serve",
        "--state",
        state.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
        "--connections",
        "2",
    ]);
    let key = bits_of_hex("000102030405060708090a0b0c0d0e0f");
    let pt = bits_of_hex("00112233445566778899aabbccddeeff");
    for _ in 0..2 {
        let (oa, ob) = run_pair(
            &circuit("aes_128"),
            &["--triples", "token", "--token", &taddr, "--input", &key],
            &["--triples", "token", "--trust-ca", &ca, "--input", &pt],
        );
        assert!(oa.status.success(), "a: {}", err(&oa));
        assert!(ob.status.success(), "b: {}", err(&ob));
        for o in [&oa, &ob] {
            assert_eq!(hex_of_bits(&out(o)), "69c4e0d86a7b0430d8cdb78070b4c55a");
        }
    }
    assert!(token.wait().unwrap().success());
}

/// SHA-256("abc") with OT-extension triples (no token): party a holds the padded
/// message block, party b the chaining value (the IV). JSON output, with the
/// online phase's rounds (AND depth + 1) and its compute share.
#[test]
fn sha256_with_ot_triples_matches_the_vector() {
    let mut block = b"abc".to_vec();
    block.push(0x80);
    block.resize(56, 0);
    block.extend_from_slice(&24u64.to_be_bytes());
    let msg = to_bit_string(&bits_from_be_bytes(&block));
    let iv = bits_of_hex("6a09e667bb67ae853c6ef372a54ff53a510e527f9b05688c1f83d9ab5be0cd19");
    let (oa, ob) = run_pair(
        &circuit("sha256"),
        &["--triples", "ot", "--input", &msg, "--json"],
        &["--triples", "ot", "--input", &iv, "--json"],
    );
    assert!(oa.status.success(), "a: {}", err(&oa));
    assert!(ob.status.success(), "b: {}", err(&ob));
    for o in [&oa, &ob] {
        let v: serde_json::Value = serde_json::from_str(out(o).trim()).unwrap();
        assert_eq!(
            hex_of_bits(v["outputs"][0].as_str().unwrap()),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(v["online_rounds"], 1608);
        assert!(v["online_compute_ms"].as_f64().unwrap() <= v["online_ms"].as_f64().unwrap());
    }
}
