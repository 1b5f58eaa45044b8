//! Adversarial review of issue 27 against the built binary: each test plays one
//! attack on the GMW commands and asserts what their docs and `--help` claim.

mod common;
use common::*;

const WINDOW: [&str; 14] = [
    "--from",
    "2025-03-10",
    "--to",
    "2025-03-12",
    "--duration",
    "30m",
    "--step",
    "15m",
    "--hours",
    "08:00-22:00",
    "--tz",
    "Europe/Berlin",
    "--engine",
    "gmw",
];

/// Break (issue 27 item 7, "single-connection servers"; `schedule serve --help`:
/// "--max-clients: most sessions in progress at once; further clients are refused at
/// once"): `tacit schedule serve --engine gmw` serves one connection at a time and
/// ignores --max-clients. Anyone who reaches the port — any client key is admitted
/// without --allow — completes the TLS handshake and says nothing; every other client
/// then waits in the backlog until its own handshake times out (10 s), for as long as
/// the silent one is allowed (--timeout per message, --deadline per session: 60 s and
/// 600 s by default), and again with the next silent connection.
#[test]
fn schedule_serve_gmw_serves_a_client_beside_a_silent_one() {
    let (alice, bob) = (examples().join("alice.ics"), examples().join("bob.ics"));
    let (mut server, addr) = spawn(
        &[
            &[
                "--store",
                tmp("a.sqlite3").to_str().unwrap(),
                "schedule",
                "serve",
                "--calendar",
                bob.to_str().unwrap(),
                "--listen",
                "127.0.0.1:0",
                "--max-clients",
                "4",
                "--timeout",
                "40",
            ][..],
            &WINDOW[..],
        ]
        .concat(),
    );
    // The silent client: a TLS handshake with a key of its own, then nothing.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let silent = rt.block_on(async {
        let me = tacit_net::tls::SelfSigned::generate("silent.invalid").unwrap();
        let client = me.client_config_checking_server(tacit_net::tls::any_key()).unwrap();
        tacit_net::FramedConn::connect_tls(
            addr.as_str(),
            &tacit_net::NetConfig::default(),
            client,
            "tacit-pros.invalid",
        )
        .await
        .unwrap()
    });
    let o = tacit()
        .args(
            [
                &[
                    "--store",
                    tmp("b.sqlite3").to_str().unwrap(),
                    "schedule",
                    "connect",
                    "--calendar",
                    alice.to_str().unwrap(),
                    "--connect",
                    &addr,
                ][..],
                &WINDOW[..],
                &["--json"][..],
            ]
            .concat(),
        )
        .output()
        .unwrap();
    drop(silent);
    let _ = server.kill();
    let _ = server.wait();
    assert!(
        o.status.success(),
        "an honest client was not served while a silent one held the connection: {}",
        err(&o)
    );
}

/// Review of issue 27 (LOW): `mpc psi serve` checks, before it listens, that the
/// circuit of the largest query it admits (`--max-peer`) fits the memory it may use,
/// and says to lower --max-peer in one line when it does not.
#[test]
fn mpc_psi_serve_refuses_a_max_peer_whose_circuit_does_not_fit_its_memory() {
    let set = write("set.txt", "1\n2\n3\n");
    let o = tacit()
        .args(["--store", tmp("a.sqlite3").to_str().unwrap(), "mpc", "psi", "serve"])
        .args(["--set", set.to_str().unwrap(), "--bits", "32", "--max-peer", "4096"])
        .args(["--listen", "127.0.0.1:0", "--semi-honest-peers", "--sessions", "1"])
        .env("TACIT_MEMORY_LIMIT", "64M")
        .output()
        .unwrap();
    assert!(!o.status.success(), "{}", err(&o));
    assert_eq!(err(&o).trim().lines().count(), 1, "{}", err(&o));
    assert!(
        err(&o).contains("--max-peer 4096") && err(&o).contains("MiB") && err(&o).contains("lower --max-peer"),
        "{}",
        err(&o)
    );
}

/// Review of issue 27 (LOW, usability): a second token made with the same seal key
/// meets that key's rollback guard; the refusal says to give it a --guard of its own
/// (not that "a token is manufactured once", which it is not: it is another token).
#[test]
fn a_second_token_on_the_same_seal_key_is_pointed_to_guard() {
    let dir = tmp("x").parent().unwrap().to_path_buf();
    let (ca, seal) = (dir.join("ca.key"), dir.join("seal.key"));
    let o = tacit()
        .args(["mpc", "token", "ca", "--out", ca.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    let init = |state: &str, guard: Option<&str>| {
        let mut c = tacit();
        c.args(["mpc", "token", "init", "--state", dir.join(state).to_str().unwrap()])
            .args(["--ca-key", ca.to_str().unwrap(), "--seal-key", seal.to_str().unwrap()])
            .args(["--pair", &"ab".repeat(32)]);
        if let Some(g) = guard {
            c.args(["--guard", dir.join(g).to_str().unwrap()]);
        }
        c.output().unwrap()
    };
    let o = init("one.state", None);
    assert!(o.status.success(), "{}", err(&o));
    let o = init("two.state", None);
    assert!(!o.status.success());
    assert!(err(&o).contains("--guard"), "{}", err(&o));
    assert!(!dir.join("two.state").exists());
    let o = init("two.state", Some("two.guard"));
    assert!(o.status.success(), "{}", err(&o));
    // The same state twice is still refused as one token made once.
    let o = init("one.state", Some("three.guard"));
    assert!(!o.status.success());
    assert!(err(&o).contains("manufactured once"), "{}", err(&o));
}

/// Review of issue 27 (LOW, usability): a circuit file refused under
/// `TACIT_MEMORY_LIMIT=1M` names the limit as given (1.0 MiB) and the file's share,
/// never "this process may use 0 MiB".
#[test]
fn a_refused_circuit_names_the_memory_limit_as_given() {
    let g = 1usize << 14;
    let mut text = format!("{g} {}\n1 2\n1 1\n\n", g + 2);
    for i in 0..g {
        text += &format!("2 1 {} {} {} XOR\n", i, i + 1, i + 2);
    }
    let file = write("chain.txt", &text);
    let o = tacit()
        .args(["mpc", "eval", "--circuit", file.to_str().unwrap(), "--input", "01"])
        .env("TACIT_MEMORY_LIMIT", "1M")
        .output()
        .unwrap();
    assert!(!o.status.success(), "{}", out(&o));
    let e = err(&o);
    assert_eq!(e.trim().lines().count(), 1, "{e}");
    assert!(e.contains("may use 1.0 MiB") && !e.contains(" 0 MiB"), "{e}");
}

/// Review of issue 27 (the `listen_once` loop): party a of `tacit mpc run` ran the
/// handshake of one connection at a time, so a connection that opened and said
/// nothing held it until its handshake timed out (10 s), and party b, whose own
/// handshake had the same timeout, failed. Now the handshakes run side by side and
/// party b is served beside the silent connection.
#[test]
fn mpc_run_serves_its_peer_beside_a_silent_connection() {
    let c = write("and.txt", "1 3\n2 1 1\n1 1\n\n2 1 0 1 2 AND\n");
    let c = c.to_str().unwrap();
    let (sa, sb) = (tmp("a.sqlite3"), tmp("b.sqlite3"));
    let (pa, addr) = spawn(&[
        "--store",
        sa.to_str().unwrap(),
        "mpc",
        "run",
        "--circuit",
        c,
        "--party",
        "a",
        "--listen",
        "127.0.0.1:0",
        "--input",
        "1",
    ]);
    let silent = std::net::TcpStream::connect(&addr).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(200));
    let ob = tacit()
        .args(["--store", sb.to_str().unwrap(), "mpc", "run", "--circuit", c])
        .args(["--party", "b", "--connect", &addr, "--input", "1"])
        .output()
        .unwrap();
    let oa = pa.wait_with_output().unwrap();
    drop(silent);
    assert!(
        ob.status.success(),
        "b was not served beside a silent connection: {}",
        err(&ob)
    );
    assert!(oa.status.success(), "{}", err(&oa));
    assert!(out(&ob).contains('1'), "{}", out(&ob));
}
