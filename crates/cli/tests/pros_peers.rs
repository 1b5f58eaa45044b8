//! Issue 26 against the built binary: hostile peers (a deviating B speaking the wire
//! format from this test process), the channel (TLS by default, pinning, trust on
//! first use, client keys), the servers' caps and limits, and the small items (key
//! files, ciphertexts under another key, flag spellings).

mod common;
use common::*;
use tacit_net::{FramedListener, NetConfig};
use tacit_pros::testing::{self, InvertingResponder};
use tacit_pros::threepr::{Outcome, ReconcileParams, Responder, Scheme, Variant};

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Lines on standard error other than the small-key warning.
fn error_lines(o: &std::process::Output) -> usize {
    err(o)
        .lines()
        .filter(|l| !l.contains("warning:") && !l.trim().is_empty())
        .count()
}

fn store(name: &str) -> String {
    tmp(name).to_str().unwrap().to_string()
}

type Received = tokio::task::JoinHandle<Result<Vec<Vec<u8>>, tacit_pros::Error>>;

/// A deviating B on plain TCP that answers with the inverse of A's own ciphertexts
/// from the round where all of A's positions occur; returns the bound address and
/// what B received (A's outcome last).
fn inverting_server(rt: &tokio::runtime::Runtime, n: u32, b_set: Vec<String>) -> (String, Received) {
    let cfg = NetConfig::default().speaking(tacit_net::Protocol::ProsReconcile);
    let l = rt.block_on(FramedListener::bind("127.0.0.1:0", &cfg)).unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let h = rt.spawn(async move {
        let mut c = l.accept().await.unwrap();
        let p = ReconcileParams::default();
        let mut bug = InvertingResponder::new(
            Scheme::Sor,
            Variant::Implicit,
            InvertingResponder::all_positions_round(n),
        );
        let r = Responder::new(p, &b_set, 0, 4096, tacit_pros::testing::ring_pedersen()).unwrap();
        testing::respond_over(&mut c, r, &mut |o| bug.act(o), 1).await
    });
    (addr, h)
}

/// Issue 26, item 1, end to end: before the fix `tacit pros reconcile connect`
/// printed all six of its elements as agreed and B logged them in A's order.
#[test]
fn a_hostile_reconcile_server_learns_nothing() {
    let rt = rt();
    let (addr, server) = inverting_server(&rt, 6, (0..6).map(|i| format!("b{i}")).collect());
    let a = write("a.txt", "a0\na1\na2\na3\na4\na5\n");
    let o = tacit()
        .args([
            "pros",
            "reconcile",
            "connect",
            "--set",
            a.to_str().unwrap(),
            "--connect",
            &addr,
            "--key-bits",
            "1024",
            "--plain-tcp",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    let v: serde_json::Value = serde_json::from_str(&out(&o)).unwrap();
    assert_eq!(v["agreed"], serde_json::json!([]), "{v}");
    let received = rt.block_on(server).unwrap().unwrap();
    let outcome = Outcome::from_bytes(received.last().unwrap(), 16).unwrap();
    assert!(
        outcome.values.is_empty(),
        "B learned {} of A's elements",
        outcome.values.len()
    );
}

/// Issue 26, item 1, for scheduling: before the fix A agreed to (and wrote an
/// invitation for) slots B never offered, and B logged A's ranked free slots.
#[test]
fn a_hostile_schedule_server_learns_no_slot_and_fixes_none() {
    let rt = rt();
    let cfg = NetConfig::default().speaking(tacit_net::Protocol::ProsSchedule);
    let l = rt.block_on(FramedListener::bind("127.0.0.1:0", &cfg)).unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let server = rt.spawn(async move {
        let mut c = l.accept().await.unwrap();
        // B offers nothing A has: one slot far outside the window
        let far = chrono::DateTime::from_timestamp(4_000_000_000, 0).unwrap();
        let slot = tacit_calendar::Slot {
            start: far,
            end: far + chrono::Duration::minutes(30),
        };
        let mut bug = InvertingResponder::new(Scheme::Sor, Variant::Implicit, 0);
        testing::schedule_respond_over(&mut c, Scheme::Sor, Variant::Implicit, &[slot], &mut |o| bug.act(o), 2).await
    });
    let invite = tmp("meeting.ics");
    let o = tacit()
        .args([
            "schedule",
            "connect",
            "--calendar",
            examples().join("alice.ics").to_str().unwrap(),
            "--connect",
            &addr,
            "--from",
            "2025-03-10T00:00:00+01:00",
            "--to",
            "2025-03-11T00:00:00+01:00",
            "--duration",
            "30m",
            "--step",
            "60m",
            "--hours",
            "09:00-17:00",
            "--tz",
            "Europe/Berlin",
            "--max-slots",
            "6",
            "--key-bits",
            "1024",
            "--plain-tcp",
            "--json",
            "--out",
            invite.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    let v: serde_json::Value = serde_json::from_str(&out(&o)).unwrap();
    assert_eq!(v["slots"], serde_json::json!([]), "{v}");
    assert!(!invite.exists(), "an invitation was written");
    let received = rt.block_on(server).unwrap().unwrap();
    let outcome = Outcome::from_bytes(received.last().unwrap(), 16).unwrap();
    assert!(
        outcome.values.is_empty(),
        "B learned {} of A's slots",
        outcome.values.len()
    );
}

fn fingerprint(store: &str) -> String {
    let o = tacit()
        .args(["--store", store, "pros", "fingerprint"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    out(&o).trim().to_string()
}

fn reconcile_serve(store: &str, set: &str, extra: &[&str]) -> (std::process::Child, String, Log) {
    let listen = extra
        .iter()
        .position(|a| *a == "--listen")
        .map(|i| extra[i + 1])
        .unwrap_or("127.0.0.1:0");
    let mut args = vec![
        "--store",
        store,
        "pros",
        "reconcile",
        "serve",
        "--set",
        set,
        "--min-key-bits",
        "1024",
    ];
    if !extra.contains(&"--listen") {
        args.extend_from_slice(&["--listen", listen]);
    }
    args.extend_from_slice(extra);
    spawn_logged(&args)
}

fn reconcile_connect(store: &str, set: &str, addr: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "--store",
        store,
        "pros",
        "reconcile",
        "connect",
        "--set",
        set,
        "--connect",
        addr,
        "--key-bits",
        "1024",
    ];
    args.extend_from_slice(extra);
    tacit().args(&args).output().unwrap()
}

/// The channel: TLS by default with the server's key recorded on first use, a pinned
/// key, a wrong pin refused, a changed key refused after first use, the client's key
/// printed by the server, and --allow refusing other clients. Every refusal is one
/// line.
#[test]
fn the_channel_is_tls_with_pinned_keys_both_ways() {
    let (srv, cli, other) = (store("srv.sqlite3"), store("cli.sqlite3"), store("other.sqlite3"));
    let a = write("a.txt", "x\ny\n");
    let b = write("b.txt", "y\nz\n");
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let srv_fp = fingerprint(&srv);
    let cli_fp = fingerprint(&cli);
    assert_eq!(srv_fp.len(), 64);
    assert_ne!(srv_fp, cli_fp);

    // first use: recorded; the server prints the client's key with the result
    // four sessions: first use, right pin, wrong pin, plain TCP (each accepted)
    let (mut server, addr, log) = reconcile_serve(&srv, b, &["--sessions", "4"]);
    let o = reconcile_connect(&cli, a, &addr, &[]);
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(out(&o), "y\n");
    assert!(
        err(&o).contains(&format!("recorded the key of {addr} on first use: {srv_fp}")),
        "{}",
        err(&o)
    );
    // pinned: the right key passes, a wrong one is refused in one line
    let o = reconcile_connect(&other, a, &addr, &["--pin", &srv_fp]);
    assert!(o.status.success(), "{}", err(&o));
    let o = reconcile_connect(&other, a, &addr, &["--pin", &cli_fp]);
    assert!(!o.status.success());
    assert_eq!(error_lines(&o), 1, "{}", err(&o));
    // plain TCP against a TLS server: one line
    let o = reconcile_connect(&cli, a, &addr, &["--plain-tcp"]);
    assert!(!o.status.success());
    assert_eq!(error_lines(&o), 1, "{}", err(&o));
    server.wait().unwrap();
    let lines = log.lock().unwrap().join("\n");
    assert!(lines.contains(&format!("key {cli_fp}")), "{lines}");

    // the same address with another server key: refused after first use, accepted
    // again after `tacit pros forget`
    let srv2 = store("srv2.sqlite3");
    let (mut server2, addr2, _) = reconcile_serve(&srv2, b, &["--sessions", "2", "--listen", &addr]);
    assert_eq!(addr2, addr);
    let o = reconcile_connect(&cli, a, &addr, &[]);
    assert!(!o.status.success(), "a changed server key was accepted");
    assert!(err(&o).contains("tacit pros forget"), "{}", err(&o));
    assert_eq!(error_lines(&o), 1, "{}", err(&o));
    let o = tacit()
        .args(["--store", &cli, "pros", "forget", "--connect", &addr])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    let o = reconcile_connect(&cli, a, &addr, &[]);
    assert!(o.status.success(), "{}", err(&o));
    server2.wait().unwrap();

    // --allow: only the named client key
    let (mut server4, addr4, log4) = reconcile_serve(&srv, b, &["--sessions", "2", "--allow", &cli_fp]);
    let o = reconcile_connect(&other, a, &addr4, &["--pin", &srv_fp]);
    assert!(!o.status.success(), "a client not allowed got through");
    assert_eq!(error_lines(&o), 1, "{}", err(&o));
    let o = reconcile_connect(&cli, a, &addr4, &["--pin", &srv_fp]);
    assert!(o.status.success(), "{}", err(&o));
    server4.wait().unwrap();
    let lines = log4.lock().unwrap().join("\n");
    assert!(lines.contains("not one of the --allow keys"), "{lines}");
}

/// Issue 26, item 5: one idle connection held an honest client out for the whole
/// read timeout. Now sessions run side by side: the idle peer holds one slot, the
/// honest client takes another, and with --max-clients 1 a second client is refused
/// at once in one line.
#[test]
fn an_idle_peer_does_not_hold_the_server() {
    let b = write("b.txt", "y\nz\n");
    let a = write("a.txt", "x\ny\n");
    let (mut server, addr, _) = spawn_logged(&[
        "pros",
        "reconcile",
        "serve",
        "--set",
        b.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
        "--min-key-bits",
        "1024",
        "--plain-tcp",
        "--sessions",
        "2",
        "--timeout",
        "300",
    ]);
    let idle = std::net::TcpStream::connect(&addr).unwrap();
    let o = tacit()
        .args([
            "pros",
            "reconcile",
            "connect",
            "--set",
            a.to_str().unwrap(),
            "--connect",
            &addr,
            "--key-bits",
            "1024",
            "--plain-tcp",
            "--timeout",
            "30",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(out(&o), "y\n");
    drop(idle);
    server.wait().unwrap();

    let (mut server, addr, log) = spawn_logged(&[
        "pros",
        "reconcile",
        "serve",
        "--set",
        b.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
        "--min-key-bits",
        "1024",
        "--plain-tcp",
        "--max-clients",
        "1",
        "--sessions",
        "2",
        "--timeout",
        "300",
    ]);
    let idle = std::net::TcpStream::connect(&addr).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let o = tacit()
        .args([
            "pros",
            "reconcile",
            "connect",
            "--set",
            a.to_str().unwrap(),
            "--connect",
            &addr,
            "--key-bits",
            "1024",
            "--plain-tcp",
        ])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(err(&o).contains("busy"), "{}", err(&o));
    assert_eq!(error_lines(&o), 1, "{}", err(&o));
    drop(idle);
    assert!(log.lock().unwrap().iter().any(|l| l.contains("refused")));
    server.kill().unwrap();
    server.wait().unwrap();
}

/// Issue 26, item 5: a peer's list over --max-peer-slots is refused at its hello (one
/// line on both sides), before any comparison.
#[test]
fn schedule_serve_refuses_a_peer_list_over_its_limit() {
    let w = [
        "--from",
        "2025-03-10T00:00:00+01:00",
        "--to",
        "2025-03-11T00:00:00+01:00",
        "--duration",
        "30m",
        "--step",
        "30m",
        "--tz",
        "Europe/Berlin",
        "--plain-tcp",
    ];
    let bob = examples().join("bob.ics");
    let alice = examples().join("alice.ics");
    let (mut server, addr, log) = spawn_logged(
        &[
            &[
                "schedule",
                "serve",
                "--calendar",
                bob.to_str().unwrap(),
                "--listen",
                "127.0.0.1:0",
                "--sessions",
                "1",
                "--min-key-bits",
                "1024",
                "--max-peer-slots",
                "4",
            ][..],
            &w[..],
        ]
        .concat(),
    );
    let o = tacit()
        .args(
            [
                &[
                    "schedule",
                    "connect",
                    "--calendar",
                    alice.to_str().unwrap(),
                    "--connect",
                    &addr,
                    "--key-bits",
                    "1024",
                    "--max-slots",
                    "10",
                ][..],
                &w[..],
            ]
            .concat(),
        )
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(err(&o).contains("the limit is 4"), "{}", err(&o));
    assert_eq!(error_lines(&o), 1, "{}", err(&o));
    server.wait().unwrap();
    assert!(log.lock().unwrap().iter().any(|l| l.contains("the limit is 4")));
}

/// Issue 26, item 4: the server's send limit was the query's size, so an answer
/// larger than the query (here: 2 000 elements against a querier bound of 2) failed
/// on the server's own message after all the work. Now it completes.
#[test]
fn psi_answers_larger_than_the_query_go_through() {
    let s: String = (0..2000).map(|i| format!("{i}\n")).collect();
    let s = write("s.txt", &s);
    let c = write("c.txt", "7\n1999\n");
    let (mut server, addr) = spawn(&[
        "pros",
        "psi",
        "serve",
        "--set",
        s.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
        "--sessions",
        "1",
        "--min-key-bits",
        "256",
        "--insecure-small-keys",
        "--max-chooser",
        "2",
        "--max-sender",
        "2000",
        "--encoding",
        "int32",
        "--plain-tcp",
    ]);
    let o = tacit()
        .args([
            "pros",
            "psi",
            "query",
            "--set",
            c.to_str().unwrap(),
            "--connect",
            &addr,
            "--bits",
            "256",
            "--insecure-small-keys",
            "--max-chooser",
            "2",
            "--max-sender",
            "2000",
            "--encoding",
            "int32",
            "--plain-tcp",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    let v: serde_json::Value = serde_json::from_str(&out(&o)).unwrap();
    let mut got: Vec<String> = v["intersection"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_string())
        .collect();
    got.sort();
    assert_eq!(got, vec!["1999", "7"]);
    assert_eq!(v["chooser_tests"], 4);
    server.wait().unwrap();
}

/// Review rev26, finding 1: Π^fac bounds nothing below 1024-bit keys, so a serving
/// command refuses `--min-key-bits` below 1024 and a connecting one `--key-bits`
/// below 1024, each in one line naming `--insecure-small-keys` (the paper's sizes,
/// which each side must name for itself; `psi_answers_larger_than_the_query_go_through`
/// runs a session at 256 bits with it).
#[test]
fn keys_below_1024_bits_need_insecure_small_keys_on_each_side() {
    let s = write("s.txt", "1\n2\n");
    let serve = |cmd: &[&str]| {
        let mut args = cmd.to_vec();
        args.extend(["--min-key-bits", "512", "--listen", "127.0.0.1:0", "--plain-tcp"]);
        tacit().args(&args).output().unwrap()
    };
    let window = ["--from", "2025-01-06", "--to", "2025-01-07"];
    let cal = write("c.ics", "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nEND:VCALENDAR\r\n");
    let (s, cal) = (s.to_str().unwrap(), cal.to_str().unwrap());
    let serves: [Vec<&str>; 3] = [
        vec!["pros", "psi", "serve", "--set", s],
        vec!["pros", "reconcile", "serve", "--set", s],
        [&["schedule", "serve", "--calendar", cal][..], &window[..]].concat(),
    ];
    for cmd in &serves {
        let o = serve(cmd);
        assert!(!o.status.success(), "{cmd:?}");
        assert!(err(&o).contains("--insecure-small-keys"), "{cmd:?}: {}", err(&o));
        assert!(err(&o).contains("below 1024 bits"), "{cmd:?}: {}", err(&o));
        assert_eq!(error_lines(&o), 1, "{}", err(&o));
    }
    let connects: [Vec<&str>; 3] = [
        vec!["pros", "psi", "query", "--set", s],
        vec!["pros", "reconcile", "connect", "--set", s],
        [&["schedule", "connect", "--calendar", cal][..], &window[..]].concat(),
    ];
    for cmd in &connects {
        let mut args = cmd.clone();
        // nothing listens there: the key size is refused before any connection
        args.extend(["--key-bits", "512", "--connect", "127.0.0.1:9", "--plain-tcp"]);
        let o = tacit().args(&args).output().unwrap();
        assert!(!o.status.success(), "{cmd:?}");
        assert!(
            err(&o).contains("--key-bits 512 is below 1024 bits"),
            "{cmd:?}: {}",
            err(&o)
        );
        assert!(err(&o).contains("--insecure-small-keys"), "{cmd:?}: {}", err(&o));
        assert_eq!(error_lines(&o), 1, "{}", err(&o));
    }
}

/// Issue 26, item 2: `psi serve --max-tests` refuses bounds that let a querier test
/// more candidates, and says how to lower them.
#[test]
fn psi_serve_states_and_limits_what_a_querier_can_test() {
    let s = write("s.txt", "1\n2\n");
    let o = tacit()
        .args([
            "pros",
            "psi",
            "serve",
            "--set",
            s.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
            "--max-chooser",
            "100",
            "--max-tests",
            "300",
            "--plain-tcp",
        ])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(err(&o).contains("924 candidates"), "{}", err(&o));
    assert_eq!(error_lines(&o), 1, "{}", err(&o));
}

/// Issue 26, item 7: keygen does not overwrite a private key without --force; a
/// ciphertext made under another key is refused by `pros add`; `--key-bits` works for
/// keygen and `--bits` for the sessions.
#[test]
fn key_files_and_foreign_ciphertexts() {
    let k1 = tmp("k1.json");
    let k2 = tmp("k2.json");
    for k in [&k1, &k2] {
        let o = tacit()
            .args(["pros", "keygen", "--key-bits", "256", "--out", k.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", err(&o));
    }
    let before = std::fs::read(&k1).unwrap();
    let o = tacit()
        .args(["pros", "keygen", "--bits", "256", "--out", k1.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(err(&o).contains("--force"), "{}", err(&o));
    assert_eq!(std::fs::read(&k1).unwrap(), before, "the key was overwritten");
    let o = tacit()
        .args([
            "pros",
            "keygen",
            "--bits",
            "256",
            "--out",
            k1.to_str().unwrap(),
            "--force",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    assert_ne!(std::fs::read(&k1).unwrap(), before);

    let enc = |k: &std::path::Path, x: &str| {
        let o = tacit()
            .args(["pros", "encrypt", "--key", k.to_str().unwrap(), x])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", err(&o));
        write("c.json", &out(&o))
    };
    let a = enc(&k1, "5");
    let b = enc(&k2, "6");
    let o = tacit()
        .args([
            "pros",
            "add",
            "--key",
            k1.to_str().unwrap(),
            a.to_str().unwrap(),
            b.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(!o.status.success(), "a sum under two keys was written: {}", out(&o));
    assert!(
        err(&o).contains("another key") || err(&o).contains("not this key"),
        "{}",
        err(&o)
    );
    assert_eq!(error_lines(&o), 1, "{}", err(&o));
}
