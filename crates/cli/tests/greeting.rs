//! The wrong kind of server (issue 28, item 7): every tacit connection opens with a
//! greeting (`docs/wire.md`, "The greeting"), so that a client that reaches the wrong
//! server, or speaks TLS where the server does not (or the reverse), is told so in
//! one line at once. One test per pair the issue names; each printed "the peer
//! announced a 352518912-byte message; the limit is …" (or, for `pros psi query`,
//! "unexpected message type 0x0410" after 34.5 s) before the greeting.

mod common;
use common::*;
use std::process::Output;

/// The one line a failed command printed.
fn one_line(o: &Output) -> String {
    assert!(!o.status.success(), "succeeded: {}", out(o));
    let e = err(o);
    assert_eq!(e.trim().lines().count(), 1, "{e}");
    e.trim().to_string()
}

#[test]
fn psi_query_without_tls_against_psi_serve_tls() {
    let book = write("book.txt", "alice@example.com\nbob@example.com\n");
    let ids = write("ids.txt", "bob@example.com\n");
    let store = tmp("server.sqlite3");
    let (mut server, addr, log) = spawn_listening_logged(&[
        "--store",
        store.to_str().unwrap(),
        "psi",
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--tls",
        "--sessions",
        "1",
        "--set",
        book.to_str().unwrap(),
        "--max-sender",
        "100",
    ]);
    let o = tacit()
        .args(["psi", "query", "--set", ids.to_str().unwrap(), "--connect", &addr])
        .args(["--max-sender", "100"])
        .output()
        .unwrap();
    assert_eq!(
        one_line(&o),
        format!(
            "tacit: error: {addr} is a tacit PSI server that requires TLS and this connection is plain TCP; \
             connect with TLS (--pin or --tofu, without --plain-tcp)"
        )
    );
    // The server says why too (it may print it just after the client has reported).
    let said = wait_logged(&log, "speaks plain TCP and this PSI server requires TLS");
    let _ = server.kill();
    let _ = server.wait();
    let log = log.lock().unwrap().join("\n");
    assert!(said, "{log}");

    // And the reverse: `psi query --tofu` against a plain `psi serve`.
    let (mut server, addr) = spawn_listening(&[
        "psi",
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--sessions",
        "1",
        "--set",
        book.to_str().unwrap(),
        "--max-sender",
        "100",
    ]);
    let client = tmp("client.sqlite3");
    let o = tacit()
        .args(["--store", client.to_str().unwrap()])
        .args(["psi", "query", "--set", ids.to_str().unwrap(), "--connect", &addr])
        .args(["--max-sender", "100", "--tofu"])
        .output()
        .unwrap();
    assert_eq!(
        one_line(&o),
        format!(
            "tacit: error: {addr} answered in the clear as a tacit PSI server on plain TCP and this connection is TLS \
             (the answer is not authenticated); if you expect that server to run plain TCP, connect with --plain-tcp; \
             otherwise serve it with TLS"
        )
    );
    let _ = server.kill();
    let _ = server.wait();
}

#[test]
fn pros_psi_query_against_a_discovery_root() {
    let dir = tmp("ibe");
    let d = dir.to_str().unwrap();
    let o = tacit().args(["discover", "root", "init", "--dir", d]).output().unwrap();
    assert!(o.status.success(), "{}", err(&o));
    let home = tmp("home.sqlite3");
    let h = home.to_str().unwrap();
    let o = tacit()
        .args(["discover", "id", "new", "--store", h, "--root", "Home"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    let shown = out(&tacit()
        .args(["discover", "id", "show", "--store", h, "--json"])
        .output()
        .unwrap());
    let v: serde_json::Value = serde_json::from_str(&shown).unwrap();
    let trust = format!("Home={}", v["public_key"].as_str().unwrap());
    let (mut root, addr) = spawn_listening(&[
        "discover",
        "root",
        "serve",
        "--dir",
        d,
        "--listen",
        "127.0.0.1:0",
        "--trust",
        &trust,
        "--sessions",
        "1",
    ]);
    let set = write("c.txt", "3\n40\n50\n");
    let o = tacit()
        .args(["--store", tmp("cli.sqlite3").to_str().unwrap()])
        .args([
            "pros",
            "psi",
            "query",
            "--set",
            set.to_str().unwrap(),
            "--connect",
            &addr,
        ])
        .args(["--plain-tcp", "--max-chooser", "20", "--max-sender", "20"])
        .output()
        .unwrap();
    assert_eq!(
        one_line(&o),
        format!("tacit: error: {addr} is a tacit discovery root, not a pros PSI server")
    );
    let _ = root.kill();
    let _ = root.wait();
}

#[test]
fn mpc_run_party_b_against_ca_serve() {
    let dir = tmp("ca");
    let d = dir.to_str().unwrap();
    assert!(tacit().args(["ca", "init", "--dir", d]).status().unwrap().success());
    let (mut ca, addr) = spawn_listening(&[
        "ca",
        "serve",
        "--dir",
        d,
        "--listen",
        "127.0.0.1:0",
        "--confirm",
        "--sessions",
        "1",
    ]);
    let circuit = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| env!("CARGO_MANIFEST_DIR").into())
        .join("../mpc/testdata/circuits/adder64.txt");
    let store = tmp("b.sqlite3");
    let o = tacit()
        .args(["--store", store.to_str().unwrap()])
        .args(["mpc", "run", "--circuit", circuit.to_str().unwrap()])
        .args(["--party", "b", "--connect", &addr, "--random-inputs"])
        .output()
        .unwrap();
    assert_eq!(
        one_line(&o),
        format!("tacit: error: {addr} is a tacit certification authority (ca serve), not a GMW party (mpc run)")
    );
    let _ = ca.kill();
    let _ = ca.wait();
}

#[test]
fn discover_connect_against_drop_receive() {
    let (ca, key) = new_ca("ca");
    let ca_dir = ca.to_str().unwrap();
    let bob = tmp("b.sqlite3");
    let b = bob.to_str().unwrap();
    let req = tmp("req.bin");
    let issued = tmp("issued.bin");
    let ok = |c: &mut std::process::Command| {
        let o = c.output().unwrap();
        assert!(o.status.success(), "{:?}: {}", c, err(&o));
    };
    ok(tacit()
        .args(["--store", b, "id", "enroll", "--offline", req.to_str().unwrap()])
        .args(["--ca-key", &key, "--id", "bob@example.com"]));
    ok(tacit()
        .args(["ca", "enroll", req.to_str().unwrap(), "--out", issued.to_str().unwrap()])
        .args(["--dir", ca_dir, "--confirm"]));
    ok(tacit().args(["--store", b, "id", "finish", issued.to_str().unwrap()]));
    let inbox = tmp("inbox");
    let (mut rx, addr, log) = spawn_listening_logged(&[
        "--store",
        b,
        "drop",
        "receive",
        "--mdns",
        "off",
        "--listen",
        "127.0.0.1:0",
        "--dir",
        inbox.to_str().unwrap(),
        "--sessions",
        "1",
    ]);
    let phone = tmp("phone.sqlite3");
    let p = phone.to_str().unwrap();
    ok(tacit().args(["discover", "id", "new", "--store", p, "--root", "Home"]));
    let o = tacit()
        .args([
            "discover", "connect", &addr, "--store", p, "--sigma", "--policy", "Home/*",
        ])
        .output()
        .unwrap();
    assert_eq!(
        one_line(&o),
        format!("tacit: error: {addr} is a tacit PrivateDrop receiver, not a discovery service (discover advertise)")
    );
    let _ = rx.wait();
    let log = log.lock().unwrap().join("\n");
    assert!(
        log.contains("speaks plain TCP and this PrivateDrop receiver requires TLS"),
        "{log}"
    );

    // The reverse: `drop send` (TLS) to a plain tacit server reads its greeting where
    // a ServerHello belongs and names it.
    let book = write("book.txt", "alice@example.com\n");
    let (mut psi, addr) = spawn_listening(&[
        "psi",
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--sessions",
        "1",
        "--set",
        book.to_str().unwrap(),
    ]);
    let file = write("note.txt", "hello");
    let o = tacit()
        .args(["--store", b, "drop", "send", file.to_str().unwrap(), "--peer", &addr])
        .output()
        .unwrap();
    assert!(!o.status.success());
    let e = err(&o);
    assert!(
        e.contains(&format!(
            "{addr} is a tacit PSI server (on plain TCP), not a PrivateDrop receiver"
        )),
        "{e}"
    );
    let _ = psi.kill();
    let _ = psi.wait();
}
