//! End-to-end tests of TracEdge over TLS: `tacit pir server init|serve`, `tacit pir
//! client enroll|auth`, a cheating server caught and `tacit pir verify-proof`.

use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

fn tacit() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tacit"))
}

fn dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("tacit-tracedge-test-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn run(args: &[&str]) -> Output {
    tacit().args(args).output().unwrap()
}

fn ok(o: &Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).to_string()
}

struct Server(Child);
impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn serve(store: &str, port: u16, extra: &[&str]) -> Server {
    let addr = format!("127.0.0.1:{port}");
    let mut args = vec!["pir", "server", "serve", "--store", store, "--listen", &addr];
    args.extend_from_slice(extra);
    let child = tacit()
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait until it accepts connections.
    for _ in 0..200 {
        if std::net::TcpStream::connect(&addr).is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Server(child)
}

/// A fresh 300-row server store `name` in `d`, and the `pin` and `server-key` that
/// `pir server init` printed.
fn init_store(d: &std::path::Path, name: &str) -> (String, String, String) {
    let store = d.join(name).to_str().unwrap().to_string();
    let init = ok(&run(&["pir", "server", "init", "--store", &store, "--rows", "300"]));
    let field = |name: &str| {
        init.lines()
            .find_map(|l| l.strip_prefix(name).map(|v| v.trim().to_string()))
            .unwrap()
    };
    let (pin, key) = (field("pin"), field("server-key"));
    (store, pin, key)
}

/// A TCP port free at the time of asking.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn enrol_authenticate_catch_and_verify_over_tls() {
    let d = dir();
    let (store, pin, key) = init_store(&d, "op.sqlite3");
    let store = store.as_str();
    let port = 20000 + (std::process::id() % 20000) as u16;
    let addr = format!("127.0.0.1:{port}");
    let alice = d.join("alice.json");
    let alice = alice.to_str().unwrap();
    {
        let _s = serve(store, port, &["--open-enrollment"]);
        let out = ok(&run(&[
            "pir",
            "client",
            "enroll",
            "--connect",
            &addr,
            "--pin",
            &pin,
            "--server-key",
            &key,
            "--out",
            alice,
        ]));
        assert!(out.contains("enrolled at row 0"), "{out}");
        let out = ok(&run(&["pir", "client", "auth", "--id", alice, "--json"]));
        let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
        assert_eq!(v["outcome"], "authenticated");
        assert_eq!(v["times"]["hint_cached"], false);
        // The second authentication takes the hint from the cache beside the identity.
        let out = ok(&run(&["pir", "client", "auth", "--id", alice, "--json"]));
        let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
        assert_eq!(
            (&v["outcome"], &v["times"]["hint_cached"]),
            (&"authenticated".into(), &true.into())
        );
        // A damaged cached hint is not used: the client downloads it again.
        let hints = std::path::PathBuf::from(format!("{alice}.hints"));
        let cached: Vec<_> = std::fs::read_dir(&hints).unwrap().flatten().map(|e| e.path()).collect();
        assert_eq!(cached.len(), 1, "{cached:?}");
        let mut bytes = std::fs::read(&cached[0]).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        std::fs::write(&cached[0], bytes).unwrap();
        let out = ok(&run(&["pir", "client", "auth", "--id", alice, "--json"]));
        let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
        assert_eq!(
            (&v["outcome"], &v["times"]["hint_cached"]),
            (&"authenticated".into(), &false.into())
        );
        // A wrong pin is refused by TLS, in one line.
        let bob = d.join("bob.json");
        let o = run(&[
            "pir",
            "client",
            "enroll",
            "--connect",
            &addr,
            "--pin",
            &"00".repeat(32),
            "--server-key",
            &key,
            "--out",
            bob.to_str().unwrap(),
        ]);
        assert!(!o.status.success());
    }
    // The same operator, cheating on row 0.
    let proof = d.join("caught.proof");
    let proof = proof.to_str().unwrap();
    {
        let _s = serve(store, port + 1, &["--cheat-rows", "0"]);
        // Point the identity at the cheating server's port.
        let text = std::fs::read_to_string(alice)
            .unwrap()
            .replace(&addr, &format!("127.0.0.1:{}", port + 1));
        let alice2 = d.join("alice2.json");
        std::fs::write(&alice2, text).unwrap();
        let o = run(&[
            "pir",
            "client",
            "auth",
            "--id",
            alice2.to_str().unwrap(),
            "--proof",
            proof,
        ]);
        assert_eq!(o.status.code(), Some(3), "{}", String::from_utf8_lossy(&o.stderr));
        assert!(String::from_utf8_lossy(&o.stdout).contains("SERVER CAUGHT"));
    }
    let out = ok(&run(&["pir", "verify-proof", proof, "--server-key", &key, "--json"]));
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["valid"], true);
    // A damaged proof does not verify, with a one-line error.
    let mut bytes = std::fs::read(proof).unwrap();
    let n = bytes.len();
    bytes[n / 2] ^= 1;
    let bad = d.join("bad.proof");
    std::fs::write(&bad, &bytes).unwrap();
    let o = run(&["pir", "verify-proof", bad.to_str().unwrap()]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        err.lines().filter(|l| l.starts_with("tacit: error:")).count(),
        1,
        "{err}"
    );
    // Status shows the tables.
    let out = ok(&run(&["pir", "server", "status", "--store", store, "--json"]));
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["subscribers"], 1);
}

/// Without `--open-enrollment`, an enrolment over TLS (right pin, right server key) is
/// refused in one line and the store registers nothing.
#[test]
fn closed_enrolment_is_refused_and_stores_nothing() {
    let d = dir();
    let (store, pin, key) = init_store(&d, "closed.sqlite3");
    let store = store.as_str();
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let out = d.join("eve.json");
    {
        let _s = serve(store, port, &[]);
        let o = run(&[
            "pir",
            "client",
            "enroll",
            "--connect",
            &addr,
            "--pin",
            &pin,
            "--server-key",
            &key,
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(!o.status.success());
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains("enrolment is closed"), "{err}");
    }
    assert!(!out.exists(), "no identity is written");
    let status = ok(&run(&["pir", "server", "status", "--store", store, "--json"]));
    let v: serde_json::Value = serde_json::from_str(status.trim()).unwrap();
    assert_eq!(v["subscribers"], 0, "{status}");
}

/// An open-enrolment server checks that the key is a point and that the requester
/// holds its secret (issue 25, hole 8: anyone could register a victim's public key,
/// which then refused the victim) before it stores anything: a client that skips
/// `tacit pir client enroll` and sends a non-canonical encoding, the identity, or a
/// real key without a valid proof of possession gets a one-line refusal, and the
/// store keeps no subscriber.
#[test]
fn an_enrol_request_without_a_point_or_possession_is_refused_and_stores_nothing() {
    use tacit_pir::tracedge::{EnrollRequest, Refusal, SubscriberSecret};
    use tacit_wire::{Decode, Encode};
    let d = dir();
    let (store, pin, server_key) = init_store(&d, "nopoint.sqlite3");
    let store = store.as_str();
    let pin: [u8; 32] = hex::decode(&pin).unwrap().try_into().unwrap();
    let server_key: [u8; 32] = hex::decode(&server_key).unwrap().try_into().unwrap();
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let _s = serve(store, port, &["--open-enrollment", "--max-per-address", "64"]);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let victim = SubscriberSecret::random(&mut rand_core::OsRng);
    let mallory = SubscriberSecret::random(&mut rand_core::OsRng);
    // A proof by another key, for the victim's key.
    let stolen_pop =
        tacit_pir::tracedge::proof_of_possession(&mallory, &server_key, now, "mallory", &mut rand_core::OsRng);
    // 0xff…: not a canonical field element; 0…0: the identity; then the victim's key.
    for (key, pop, why) in [
        ([0xffu8; 32], [0u8; 64], "canonical"),
        ([0u8; 32], [0u8; 64], "identity"),
        (victim.public_bytes(), stolen_pop, "possession"),
    ] {
        std::thread::sleep(Duration::from_millis(1100));
        let reply = rt.block_on(async {
            let net = tacit_net::NetConfig::default();
            let tls = tacit_net::tls::checked_server_client(tacit_net::tls::pinned(pin)).unwrap();
            let mut conn = tacit_net::FramedConn::connect_tls(&addr, &net, tls, "tracedge.tacit.invalid")
                .await
                .unwrap();
            let req = EnrollRequest {
                public_key: key,
                label: "mallory".into(),
                time_ms: now,
                pop,
            };
            conn.send(&req.to_wire()).await.unwrap();
            conn.recv().await.unwrap()
        });
        let refusal = Refusal::from_wire(&reply).expect("a refusal, not an enrolment");
        assert!(refusal.reason.contains(why), "{}", refusal.reason);
        assert_eq!(refusal.reason.lines().count(), 1, "{}", refusal.reason);
    }
    drop(_s);
    let status = ok(&run(&["pir", "server", "status", "--store", store, "--json"]));
    let v: serde_json::Value = serde_json::from_str(status.trim()).unwrap();
    assert_eq!(v["subscribers"], 0, "{status}");
}

/// Closed enrolment end to end: the subscriber makes its key (`client keygen`), the
/// operator registers it with no server running (the command signs the log entry and
/// the receipt itself), the subscriber imports the receipt, authenticates, and two
/// subscribers compare their copies of the log.
#[test]
fn closed_enrolment_with_a_receipt_then_authenticate_and_compare() {
    let d = dir();
    let (store, pin, key) = init_store(&d, "receipts.sqlite3");
    let store = store.as_str();
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let mut ids = Vec::new();
    for name in ["carol", "dave"] {
        let id = d.join(format!("{name}.json"));
        let out = ok(&run(&[
            "pir",
            "client",
            "keygen",
            "--connect",
            &addr,
            "--pin",
            &pin,
            "--server-key",
            &key,
            "--out",
            id.to_str().unwrap(),
        ]));
        let public = out
            .lines()
            .find_map(|l| l.strip_prefix("public-key"))
            .unwrap()
            .trim()
            .to_string();
        let receipt = d.join(format!("{name}.receipt"));
        let out = ok(&run(&[
            "pir",
            "server",
            "register",
            "--store",
            store,
            "--key",
            &public,
            "--label",
            name,
            "--receipt-out",
            receipt.to_str().unwrap(),
        ]));
        assert!(out.contains("row"), "{out}");
        // Before the receipt is imported, auth says what to do.
        let o = run(&["pir", "client", "auth", "--id", id.to_str().unwrap()]);
        assert!(!o.status.success());
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("import-receipt"), "{err}");
        ok(&run(&[
            "pir",
            "client",
            "import-receipt",
            "--id",
            id.to_str().unwrap(),
            "--receipt",
            receipt.to_str().unwrap(),
        ]));
        ids.push(id);
    }
    // A receipt for another key is refused.
    let o = run(&[
        "pir",
        "client",
        "import-receipt",
        "--id",
        ids[0].to_str().unwrap(),
        "--receipt",
        d.join("dave.receipt").to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    {
        let _s = serve(store, port, &[]);
        for id in &ids {
            let out = ok(&run(&["pir", "client", "auth", "--id", id.to_str().unwrap(), "--json"]));
            let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
            assert_eq!(v["outcome"], "authenticated", "{out}");
            assert_eq!(v["audits"], v["audited_rows"].as_array().unwrap().len());
        }
        // An audit count the table cannot honour is a one-line error.
        let o = run(&[
            "pir",
            "client",
            "audit",
            "--id",
            ids[0].to_str().unwrap(),
            "--audits",
            "5000",
        ]);
        assert!(!o.status.success());
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("at most"), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
    let out = ok(&run(&[
        "pir",
        "client",
        "compare",
        ids[0].to_str().unwrap(),
        ids[1].to_str().unwrap(),
        "--json",
    ]));
    assert!(out.contains("\"consistent\":true"), "{out}");
}

/// One serving process per store (issue 25, hole 9): a second `serve` on the store
/// fails in one line naming the first; a `serve` whose port is taken fails before it
/// builds or records a table.
#[test]
fn one_serving_process_per_store_and_nothing_recorded_on_failure() {
    let d = dir();
    let (store, _, _) = init_store(&d, "lock.sqlite3");
    let store = store.as_str();
    let port = free_port();
    let tables = || {
        let status = ok(&run(&["pir", "server", "status", "--store", store, "--json"]));
        let v: serde_json::Value = serde_json::from_str(status.trim()).unwrap();
        v["tables"].as_array().unwrap().len()
    };
    {
        let _s = serve(store, port, &[]);
        let before = tables();
        let o = run(&["pir", "server", "serve", "--store", store, "--listen", "127.0.0.1:0"]);
        assert!(!o.status.success());
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("already served by process"), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert_eq!(tables(), before);
    }
    // The port is taken by something else: nothing is built or recorded.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let before = tables();
    let o = run(&["pir", "server", "serve", "--store", store, "--listen", &addr]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("cannot listen"), "{err}");
    assert_eq!(tables(), before);
    // A store that does not exist is not created.
    let missing = d.join("nothere.sqlite3");
    let o = run(&["pir", "server", "serve", "--store", missing.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(!missing.exists());
}

/// Issue 28, items 9 and 10: `pir server serve --sessions 0` means what it means for
/// every serving command (stop once ready: here after the table is built and
/// committed) where it used to mean "never stop"; the build prints progress lines on
/// stderr when stderr is not a terminal, and stdout stays empty. `pir server status`
/// prints times as local ISO 8601 and its JSON keeps the seconds beside the ISO
/// strings.
#[test]
fn sessions_zero_stops_once_ready_with_progress_lines_and_iso_times() {
    let d = dir();
    let (store, _, _) = init_store(&d, "zero.sqlite3");
    let mut child = tacit()
        .args(["pir", "server", "serve", "--store", &store, "--listen", "127.0.0.1:0"])
        .args(["--sessions", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // it stops by itself (the test would hang on the old meaning, "never")
    let t = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("pir server serve --sessions 0 did not stop");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(status.success(), "{err}");
    assert_eq!(String::from_utf8_lossy(&o.stdout), "", "stdout stays clean");
    assert!(err.contains(": rows: 300/300 (100%)"), "{err}");
    assert!(err.contains("built in"), "{err}");
    // `forever` is the explicit spelling of the default; anything else is refused
    let o = run(&["pir", "server", "serve", "--store", &store, "--sessions", "sometimes"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("neither a number of sessions nor `forever`"));
    // times: ISO 8601 for people, seconds and ISO in JSON
    let text = ok(&run(&["pir", "server", "status", "--store", &store]));
    let line = text.lines().find(|l| l.starts_with("table")).unwrap();
    let created = line
        .split("created ")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap();
    chrono::DateTime::parse_from_rfc3339(created).unwrap_or_else(|e| panic!("{created:?}: {e}"));
    let v: serde_json::Value =
        serde_json::from_str(ok(&run(&["pir", "server", "status", "--store", &store, "--json"])).trim()).unwrap();
    let t0 = &v["tables"][0];
    let secs = t0["created_unix"].as_i64().unwrap();
    let iso = chrono::DateTime::parse_from_rfc3339(t0["created"].as_str().unwrap()).unwrap();
    assert_eq!(iso.timestamp(), secs);
}
