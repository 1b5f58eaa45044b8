//! `tacit mpc` between separate processes: the token manufactured and served by
//! `tacit mpc token`, the two parties by `tacit mpc run`, on the shipped Bristol
//! circuits against their published test vectors (FIPS-197, SHA-256).

mod common;

use common::{err, out, spawn, spawn_listening, tacit, tmp, write};
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
/// arguments, each with a store of its own; returns both outputs.
fn run_pair(circuit: &std::path::Path, a: &[&str], b: &[&str]) -> (Output, Output) {
    let (sa, sb) = (tmp("a.sqlite3"), tmp("b.sqlite3"));
    run_pair_in(circuit, &sa, &sb, a, b)
}

fn run_pair_in(
    circuit: &std::path::Path,
    store_a: &std::path::Path,
    store_b: &std::path::Path,
    a: &[&str],
    b: &[&str],
) -> (Output, Output) {
    let c = circuit.to_str().unwrap();
    let (sa, sb) = (store_a.to_str().unwrap(), store_b.to_str().unwrap());
    let mut args_a = vec![
        "--store",
        sa,
        "mpc",
        "run",
        "--circuit",
        c,
        "--party",
        "a",
        "--listen",
        "127.0.0.1:0",
    ];
    args_a.extend_from_slice(a);
    let (pa, addr) = spawn(&args_a);
    let mut args_b = vec![
        "--store",
        sb,
        "mpc",
        "run",
        "--circuit",
        c,
        "--party",
        "b",
        "--connect",
        &addr,
    ];
    args_b.extend_from_slice(b);
    let ob = tacit().args(&args_b).output().unwrap();
    let oa = pa.wait_with_output().unwrap();
    (oa, ob)
}

/// The value after `marker` on the line of `text` that has it.
fn after(text: &str, marker: &str) -> String {
    text.lines()
        .find_map(|l| l.split(marker).nth(1).map(|s| s.trim().to_string()))
        .unwrap_or_else(|| panic!("no {marker:?} in {text}"))
}

/// A software token made as the setup in `tacit mpc token --help` says: the CA by its
/// own command, the token paired with party a's store key, its state sealed.
struct Token {
    state: PathBuf,
    seal: PathBuf,
    ca: String,
    link: String,
    store_a: PathBuf,
}

fn make_token() -> Token {
    let state = tmp("token.state");
    let dir = state.parent().unwrap().to_path_buf();
    let (ca_key, seal, store_a) = (dir.join("ca.key"), dir.join("seal.key"), dir.join("a.sqlite3"));
    let ca = tacit()
        .args(["mpc", "token", "ca", "--out", ca_key.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(ca.status.success(), "{}", err(&ca));
    let host = tacit()
        .args(["--store", store_a.to_str().unwrap(), "mpc", "token", "host-key"])
        .output()
        .unwrap();
    assert!(host.status.success(), "{}", err(&host));
    let init = tacit()
        .args(["mpc", "token", "init", "--state", state.to_str().unwrap()])
        .args([
            "--ca-key",
            ca_key.to_str().unwrap(),
            "--seal-key",
            seal.to_str().unwrap(),
        ])
        .args(["--pair", out(&host).trim()])
        .output()
        .unwrap();
    assert!(init.status.success(), "{}", err(&init));
    Token {
        ca: after(&out(&init), "--trust-ca): "),
        link: after(&out(&init), "--token-pin): "),
        state,
        seal,
        store_a,
    }
}

fn serve_token(t: &Token, extra: &[&str]) -> (std::process::Child, String) {
    let mut args = vec![
        "mpc",
        "token",
        "serve",
        "--state",
        t.state.to_str().unwrap(),
        "--seal-key",
        t.seal.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
    ];
    args.extend_from_slice(extra);
    spawn_listening(&args)
}

/// AES-128 of the FIPS-197 example between two processes, with triples from a token
/// process that party a holds; twice, so the second session takes fresh sequences
/// from the token's committed state. Both parties print the ciphertext. Party b
/// accepts the software token only when told to.
#[test]
fn aes128_with_token_triples_matches_fips197() {
    let t = make_token();
    let (mut token, taddr) = serve_token(&t, &["--connections", "2"]);
    let store_b = tmp("b.sqlite3");
    let key = bits_of_hex("000102030405060708090a0b0c0d0e0f");
    let pt = bits_of_hex("00112233445566778899aabbccddeeff");
    for _ in 0..2 {
        let (oa, ob) = run_pair_in(
            &circuit("aes_128"),
            &t.store_a,
            &store_b,
            &[
                "--triples",
                "token",
                "--token",
                &taddr,
                "--token-pin",
                &t.link,
                "--input",
                &key,
            ],
            &[
                "--triples",
                "token",
                "--trust-ca",
                &t.ca,
                "--accept-software-token",
                "--input",
                &pt,
            ],
        );
        assert!(oa.status.success(), "a: {}", err(&oa));
        assert!(ob.status.success(), "b: {}", err(&ob));
        for o in [&oa, &ob] {
            assert_eq!(hex_of_bits(&out(o)), "69c4e0d86a7b0430d8cdb78070b4c55a");
        }
    }
    assert!(token.wait().unwrap().success());
}

/// Item 1 of issue 27 through the commands: party b refuses a software token unless
/// told (one line that names the flag), and `token init` does not make a CA key.
#[test]
fn b_refuses_a_software_token_without_the_flag() {
    let t = make_token();
    let (mut token, taddr) = serve_token(&t, &["--connections", "1"]);
    let key = bits_of_hex("000102030405060708090a0b0c0d0e0f");
    let (oa, ob) = run_pair_in(
        &circuit("aes_128"),
        &t.store_a,
        &tmp("b.sqlite3"),
        &["--triples", "token", "--token", &taddr, "--input", &key],
        &["--triples", "token", "--trust-ca", &t.ca, "--input", &key],
    );
    assert!(!ob.status.success() && !oa.status.success());
    assert_eq!(err(&ob).trim().lines().filter(|l| l.contains("error")).count(), 1);
    assert!(err(&ob).contains("--accept-software-token"), "{}", err(&ob));
    assert!(token.wait().unwrap().success());
    // `token init` with a CA key that does not exist: refused, nothing made.
    let state = tmp("token.state");
    let o = tacit()
        .args(["mpc", "token", "init", "--state", state.to_str().unwrap()])
        .args(["--ca-key", state.with_file_name("no.key").to_str().unwrap()])
        .args(["--seal-key", state.with_file_name("seal").to_str().unwrap()])
        .args(["--pair", &"00".repeat(32)])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(err(&o).contains("tacit mpc token ca"), "{}", err(&o));
    assert!(!state.exists() && !state.with_file_name("no.key").exists());
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

/// Flips one bit of the A→B stream, knowing the protocol: on plain TCP the last
/// byte of the frame that carries A's output shares (a GMW message with tag 0x0503),
/// on TLS the first byte of the fifth application-data record (type 23).
#[derive(Default)]
struct Flipper {
    /// Header bytes of the unit (frame or record) being read.
    head: Vec<u8>,
    /// Payload bytes of the unit still to come.
    left: usize,
    /// Whether the unit is the one to change, and its payload's first bytes.
    first: Vec<u8>,
    tls: Option<bool>,
    records: usize,
    done: bool,
}

impl Flipper {
    fn byte(&mut self, b: u8) -> u8 {
        if self.done {
            return b;
        }
        let tls = *self.tls.get_or_insert(b == 0x16);
        let hlen = if tls { 5 } else { 4 };
        if self.left == 0 {
            self.head.push(b);
            if self.head.len() == hlen {
                self.left = if tls {
                    u16::from_be_bytes([self.head[3], self.head[4]]) as usize
                } else {
                    u32::from_be_bytes(self.head[..4].try_into().unwrap()) as usize
                };
                if tls && self.head[0] == 23 {
                    self.records += 1;
                }
                self.first.clear();
                self.head.clear();
            }
            return b;
        }
        self.left -= 1;
        self.first.push(b);
        let target = if tls {
            self.records == 5 && self.first.len() == 1
        } else {
            self.left == 0 && self.first.len() >= 3 && self.first[1..3] == [0x05, 0x03]
        };
        if target {
            self.done = true;
            return b ^ 1;
        }
        b
    }
}

/// A TCP relay between party b and party a on loopback, copying each direction in a
/// thread; with `flip`, one bit of the A→B stream is flipped ([`Flipper`]). Returns
/// the relay's address and, once both directions end, the two transcripts (A→B as
/// A sent it, B→A).
type Transcripts = std::thread::JoinHandle<(Vec<u8>, Vec<u8>)>;

fn relay(target: &str, flip: bool) -> (String, Transcripts) {
    use std::io::{Read, Write};
    use std::net::{Shutdown, TcpListener, TcpStream};
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let target = target.to_string();
    let h = std::thread::spawn(move || {
        let (b, _) = l.accept().unwrap();
        let a = TcpStream::connect(&target).unwrap();
        let (mut b_rd, mut b_wr, mut a_rd, mut a_wr) = (
            b.try_clone().unwrap(),
            b.try_clone().unwrap(),
            a.try_clone().unwrap(),
            a.try_clone().unwrap(),
        );
        let up = std::thread::spawn(move || {
            let mut seen = Vec::new();
            let mut buf = [0u8; 65536];
            loop {
                match b_rd.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        seen.extend_from_slice(&buf[..n]);
                        if a_wr.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                }
            }
            let _ = a_wr.shutdown(Shutdown::Write);
            seen
        });
        let mut seen = Vec::new();
        let mut f = Flipper::default();
        let mut buf = [0u8; 65536];
        loop {
            match a_rd.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    seen.extend_from_slice(&buf[..n]);
                    let out: Vec<u8> = if flip {
                        buf[..n].iter().map(|&x| f.byte(x)).collect()
                    } else {
                        buf[..n].to_vec()
                    };
                    if b_wr.write_all(&out).is_err() {
                        break;
                    }
                }
            }
        }
        let _ = b_wr.shutdown(Shutdown::Write);
        (seen, up.join().unwrap())
    });
    (addr, h)
}

/// AES-128 of the FIPS-197 vector through `relay`, OT triples, default channel.
fn aes_through_relay(flip: bool) -> (Output, Output, Vec<u8>, Vec<u8>) {
    let c = circuit("aes_128");
    let (sa, sb) = (tmp("a.sqlite3"), tmp("b.sqlite3"));
    let key = bits_of_hex("000102030405060708090a0b0c0d0e0f");
    let pt = bits_of_hex("00112233445566778899aabbccddeeff");
    let (pa, addr) = spawn(&[
        "--store",
        sa.to_str().unwrap(),
        "mpc",
        "run",
        "--circuit",
        c.to_str().unwrap(),
        "--party",
        "a",
        "--listen",
        "127.0.0.1:0",
        "--input",
        &key,
    ]);
    let (via, transcripts) = relay(&addr, flip);
    let ob = tacit()
        .args([
            "--store",
            sb.to_str().unwrap(),
            "mpc",
            "run",
            "--circuit",
            c.to_str().unwrap(),
        ])
        .args(["--party", "b", "--connect", &via, "--input", &pt])
        .output()
        .unwrap();
    let oa = pa.wait_with_output().unwrap();
    let (ab, ba) = transcripts.join().unwrap();
    (oa, ob, ab, ba)
}

/// The frames `[u32 length][payload]` a plain observer reads from a transcript (it
/// stops where the bytes stop looking like frames).
fn frames(t: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut at = 0;
    while at + 4 <= t.len() {
        let n = u32::from_be_bytes(t[at..at + 4].try_into().unwrap()) as usize;
        if at + 4 + n > t.len() {
            break;
        }
        out.push(&t[at + 4..at + 4 + n]);
        at += 4 + n;
    }
    out
}

/// Item 3 of issue 27, the passive observer: it XORs the last message of each
/// direction (the two output-share messages) and reads the result, as the issue did
/// on plain TCP. Over the default channel the transcripts are TLS records: no frame
/// of them carries a GMW message, and the XOR reads nothing.
#[test]
fn an_eavesdropper_on_the_path_learns_no_output() {
    let (oa, ob, ab, ba) = aes_through_relay(false);
    assert!(oa.status.success(), "a: {}", err(&oa));
    assert!(ob.status.success(), "b: {}", err(&ob));
    let output = out(&ob).trim().to_string();
    assert_eq!(hex_of_bits(&output), "69c4e0d86a7b0430d8cdb78070b4c55a");
    // The GMW messages start with the wire version and a tag 0x05xx.
    let gmw = |f: &&&[u8]| f.len() >= 3 && f[1] == 0x05;
    let (fa, fb) = (frames(&ab), frames(&ba));
    let read = match (fa.last(), fb.last()) {
        (Some(x), Some(y)) if x.len() == y.len() && x.len() > 7 => {
            let bits: String = x[7..]
                .iter()
                .zip(&y[7..])
                .flat_map(|(p, q)| (0..8).map(move |i| if (p ^ q) >> i & 1 == 1 { '1' } else { '0' }))
                .collect();
            Some(bits)
        }
        _ => None,
    };
    assert_ne!(
        read.as_deref(),
        Some(output.as_str()),
        "the observer XORed the output shares and read the result"
    );
    assert_eq!(
        fa.iter().chain(&fb).filter(gmw).count(),
        0,
        "GMW messages cross the path in the clear"
    );
}

/// Item 3 of issue 27, the man in the middle: it flips one bit of what A sends — on
/// plain TCP a bit of A's output shares, and B printed a wrong ciphertext and exited
/// successfully; over the default channel a bit of a TLS record, which fails its
/// authentication: B stops with an error and prints no output.
#[test]
fn a_flipped_bit_on_the_path_is_an_error_never_a_wrong_output() {
    let (oa, ob, _, _) = aes_through_relay(true);
    // A (whose messages reach B changed) may finish or see B go away; never wrong.
    if oa.status.success() {
        assert_eq!(hex_of_bits(&out(&oa)), "69c4e0d86a7b0430d8cdb78070b4c55a");
    }
    let printed = out(&ob);
    if ob.status.success() {
        assert_eq!(
            hex_of_bits(&printed),
            "69c4e0d86a7b0430d8cdb78070b4c55a",
            "b printed a wrong output after a bit was flipped on the path"
        );
        panic!("b did not notice the flipped bit");
    }
    assert_eq!(printed, "", "b printed something after a failed session");
    assert!(err(&ob).contains("error"), "{}", err(&ob));
}

/// Item 8 of issue 27: a circuit that does not fit in the memory this process may use
/// is refused in one line, before its gates are held. A chain of 2^19 XOR gates
/// (13 MB of text, about 40 MB to hold and layer) against a limit of 32 MiB
/// (`TACIT_MEMORY_LIMIT`; otherwise the least of the available memory, the cgroup's
/// and `ulimit -v`): refused; without the limit it evaluates.
#[test]
fn a_circuit_larger_than_the_memory_it_may_use_is_refused() {
    let g = 1usize << 19;
    let mut text = format!("{g} {}\n1 2\n1 1\n\n", g + 2);
    for i in 0..g {
        text += &format!("2 1 {} {} {} XOR\n", i, i + 1, i + 2);
    }
    let file = write("chain.txt", &text);
    let eval = |limit: Option<&str>| {
        let mut c = tacit();
        c.args(["mpc", "eval", "--circuit", file.to_str().unwrap(), "--input", "01"]);
        if let Some(l) = limit {
            c.env("TACIT_MEMORY_LIMIT", l);
        }
        c.output().unwrap()
    };
    let o = eval(Some("32M"));
    assert!(!o.status.success(), "evaluated within 32 MiB: {}", out(&o));
    assert_eq!(err(&o).trim().lines().count(), 1, "{}", err(&o));
    assert!(err(&o).contains("MiB") && err(&o).contains("may use"), "{}", err(&o));
    let o = eval(None);
    assert!(o.status.success(), "{}", err(&o));
}
