//! Every circuit in `testdata/circuits` (copied from the Bristol Fashion set, see
//! ORIGIN.md): the published test vectors in the clear, Bristol write/parse round
//! trips, and GMW against the plaintext evaluator on random inputs.

use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use tacit_mpc::bits::{be_bytes_from_bits, bits_from_be_bytes, bits_from_u64, u64_from_bits};
use tacit_mpc::circuit::{Circuit, LayeredCircuit, bristol};
use tacit_mpc::gmw::{Online, Outputs, PartyInputs, Step, default_owners};
use tacit_mpc::prg::Seed;
use tacit_mpc::triples::deal;
use tacit_mpc::{Party, circuit_digest};

/// The circuits folder, from the manifest folder cargo gives at run time (a test
/// binary reused from another checkout sharing the target folder reads this one's).
fn dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| env!("CARGO_MANIFEST_DIR").into())
        .join("testdata/circuits")
}

fn load(name: &str) -> Circuit {
    let text = std::fs::read_to_string(dir().join(format!("{name}.txt"))).unwrap();
    bristol::parse(&text).unwrap()
}

fn all() -> Vec<(String, Circuit)> {
    let mut v: Vec<_> = std::fs::read_dir(dir())
        .unwrap()
        .filter_map(|e| {
            let p = e.unwrap().path();
            let name = p.file_stem()?.to_str()?.to_string();
            (p.extension()? == "txt" && name != "License").then_some(name)
        })
        .collect();
    v.sort();
    v.into_iter().map(|n| (n.clone(), load(&n))).collect()
}

fn hex(s: &str) -> Vec<u8> {
    hex::decode(s).unwrap()
}

#[test]
fn aes128_fips197() {
    let c = load("aes_128");
    let key = bits_from_be_bytes(&hex("000102030405060708090a0b0c0d0e0f"));
    let pt = bits_from_be_bytes(&hex("00112233445566778899aabbccddeeff"));
    let out = c.eval(&[key, pt]).unwrap();
    assert_eq!(
        hex::encode(be_bytes_from_bits(&out[0])),
        "69c4e0d86a7b0430d8cdb78070b4c55a"
    );
    let z = vec![false; 128];
    let out = c.eval(&[z.clone(), z]).unwrap();
    assert_eq!(
        hex::encode(be_bytes_from_bits(&out[0])),
        "66e94bd4ef8a2c3b884cfa59ca342b2e"
    );
}

#[test]
fn aes256_fips197() {
    let c = load("aes_256");
    let key = bits_from_be_bytes(&hex("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"));
    let pt = bits_from_be_bytes(&hex("00112233445566778899aabbccddeeff"));
    let out = c.eval(&[key, pt]).unwrap();
    assert_eq!(
        hex::encode(be_bytes_from_bits(&out[0])),
        "8ea2b7ca516745bfeafc49904b496089"
    );
}

fn sha256_pad(msg: &[u8]) -> Vec<u8> {
    let mut b = msg.to_vec();
    b.push(0x80);
    while b.len() % 64 != 56 {
        b.push(0);
    }
    b.extend_from_slice(&((msg.len() as u64) * 8).to_be_bytes());
    b
}

const SHA256_IV: &str = "6a09e667bb67ae853c6ef372a54ff53a510e527f9b05688c1f83d9ab5be0cd19";

#[test]
fn sha256_vectors() {
    let c = load("sha256");
    for (msg, want) in [
        (
            &b""[..],
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        ),
        (
            &b"abc"[..],
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
        ),
    ] {
        let out = c
            .eval(&[
                bits_from_be_bytes(&sha256_pad(msg)),
                bits_from_be_bytes(&hex(SHA256_IV)),
            ])
            .unwrap();
        assert_eq!(hex::encode(be_bytes_from_bits(&out[0])), want);
    }
}

#[test]
fn adder_vector() {
    let c = load("adder64");
    let out = c.eval(&[bits_from_u64(59, 64), bits_from_u64(101312320, 64)]).unwrap();
    assert_eq!(u64_from_bits(&out[0]), 101312379);
}

#[test]
fn every_circuit_has_stats_and_survives_write_parse() {
    let mut rng = ChaCha20Rng::seed_from_u64(4);
    for (name, c) in all() {
        let s = c.stats();
        assert!(s.and_gates > 0 && s.and_depth > 0, "{name}: {s}");
        let again = bristol::parse(&bristol::write(&c)).unwrap();
        assert_eq!(again.stats().and_gates, s.and_gates, "{name}");
        assert_eq!(again.stats().and_depth, s.and_depth, "{name}");
        let inputs: Vec<Vec<bool>> = c
            .input_widths()
            .iter()
            .map(|&w| random_bits(&mut rng, w as usize))
            .collect();
        assert_eq!(c.eval(&inputs).unwrap(), again.eval(&inputs).unwrap(), "{name}");
        // The digest is a function of the circuit.
        assert_eq!(circuit_digest(&c), circuit_digest(&c.clone()));
    }
}

fn random_bits(rng: &mut impl RngCore, w: usize) -> Vec<bool> {
    (0..w).map(|_| rng.next_u32() & 1 == 1).collect()
}

fn run_pair(lc: &LayeredCircuit, owners: &[Party], inputs: &[Vec<Vec<bool>>], rng: &mut impl RngCore) -> Outputs {
    let n = inputs[0].len();
    let (ta, tb) = deal(lc.and_gates() * n, rng);
    let mut s = [0u8; 16];
    rng.fill_bytes(&mut s);
    let sa = Seed(s);
    rng.fill_bytes(&mut s);
    let sb = Seed(s);
    let mine = |p: Party| PartyInputs {
        values: owners
            .iter()
            .zip(inputs)
            .map(|(&o, v)| (o == p).then(|| v.clone()))
            .collect(),
    };
    let mut a = Online::start(lc, Party::A, owners, n, &mine(Party::A), &sa, &sb, ta).unwrap();
    let mut b = Online::start(lc, Party::B, owners, n, &mine(Party::B), &sb, &sa, tb).unwrap();
    loop {
        match (a, b) {
            (Step::Layer(x, ma), Step::Layer(y, mb)) => {
                a = x.on_layer(&mb).unwrap();
                b = y.on_layer(&ma).unwrap();
            }
            (Step::Reveal(x, ma), Step::Reveal(y, mb)) => {
                let oa = x.on_outputs(&mb).unwrap();
                assert_eq!(oa, y.on_outputs(&ma).unwrap());
                return oa;
            }
            _ => panic!("out of step"),
        }
    }
}

#[test]
fn gmw_matches_plaintext_on_every_circuit() {
    let mut rng = ChaCha20Rng::seed_from_u64(8);
    for (name, c) in all() {
        let lc = LayeredCircuit::new(c.clone());
        let k = c.input_widths().len();
        let owners = default_owners(k);
        let n = if name == "sha256" { 2 } else { 3 };
        let inputs: Vec<Vec<Vec<bool>>> = c
            .input_widths()
            .iter()
            .map(|&w| (0..n).map(|_| random_bits(&mut rng, w as usize)).collect())
            .collect();
        let out = run_pair(&lc, &owners, &inputs, &mut rng);
        for j in 0..n {
            let inst: Vec<Vec<bool>> = inputs.iter().map(|v| v[j].clone()).collect();
            assert_eq!(out.values[j], c.eval(&inst).unwrap(), "{name} instance {j}");
        }
    }
}

#[test]
fn gmw_aes_many_instances_bit_sliced() {
    let c = load("aes_128");
    let lc = LayeredCircuit::new(c.clone());
    let mut rng = ChaCha20Rng::seed_from_u64(21);
    let n = 130;
    let inputs: Vec<Vec<Vec<bool>>> = (0..2)
        .map(|_| (0..n).map(|_| random_bits(&mut rng, 128)).collect())
        .collect();
    let out = run_pair(&lc, &default_owners(2), &inputs, &mut rng);
    let plain = c
        .eval_simd(
            &(0..n)
                .map(|j| [inputs[0][j].clone(), inputs[1][j].clone()].concat())
                .collect::<Vec<_>>(),
        )
        .unwrap();
    for (j, p) in plain.iter().enumerate() {
        assert_eq!(&out.values[j][0], p, "instance {j}");
    }
}
