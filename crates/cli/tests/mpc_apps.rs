//! End-to-end tests of the GMW applications as commands: `tacit schedule
//! serve|connect --engine gmw` (with and without locations) and `tacit mpc psi
//! serve|query`, two processes over loopback, each compared with a plaintext
//! computation.

mod common;
use common::*;
use std::path::PathBuf;

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

#[test]
fn availability_from_the_example_calendars_matches_the_plain_intersection() {
    use tacit_calendar::{Calendar, SlotSpec, free_slots, parse_hours, parse_span, parse_time};
    let (alice, bob) = (examples().join("alice.ics"), examples().join("bob.ics"));
    let (server, addr) = spawn(
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
                "--sessions",
                "1",
            ][..],
            &WINDOW[..],
        ]
        .concat(),
    );
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
    assert!(o.status.success(), "{}", err(&o));
    let v: serde_json::Value = serde_json::from_str(&out(&o)).unwrap();
    let s = server.wait_with_output().unwrap();
    assert!(s.status.success(), "{}", err(&s));

    // The plaintext computation: the grid slots free in both calendars.
    let tz = chrono_tz::Europe::Berlin;
    let (from, to) = (
        parse_time("2025-03-10", tz).unwrap(),
        parse_time("2025-03-12", tz).unwrap(),
    );
    let mut spec = SlotSpec::new(from, to, parse_span("30m").unwrap(), parse_span("15m").unwrap());
    spec.tz = tz;
    spec.working_hours = Some(parse_hours("08:00-22:00").unwrap());
    let free = |p: &PathBuf| free_slots(Calendar::load(p, from, to, tz).unwrap().busy(), &spec);
    let fb = free(&bob);
    let want: Vec<String> = free(&alice)
        .into_iter()
        .filter(|s| fb.contains(s))
        .map(|s| s.start.with_timezone(&tz).to_rfc3339())
        .collect();
    assert!(!want.is_empty());
    let got: Vec<String> = v["slots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["start"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(got, want);
    assert_eq!(v["start"].as_str().unwrap(), want[0]);
    assert_eq!(v["window_slots"], 2 * 55);
    assert_eq!((v["and_gates"].as_u64(), v["depth"].as_u64()), (Some(110), Some(1)));
    // The server printed the same slots, one per line.
    assert_eq!(out(&s).lines().count(), want.len(), "{}", out(&s));
}

fn ics(name: &str, events: &[(&str, &str, &str)]) -> PathBuf {
    let mut t = String::from("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//tacit//test//EN\r\n");
    for (i, (start, end, geo)) in events.iter().enumerate() {
        t += &format!(
            "BEGIN:VEVENT\r\nUID:{name}-{i}@test\r\nSUMMARY:event {i}\r\nDTSTART;TZID=Europe/Berlin:{start}\r\nDTEND;TZID=Europe/Berlin:{end}\r\nGEO:{geo}\r\nEND:VEVENT\r\n"
        );
    }
    t += "END:VCALENDAR\r\n";
    write(&format!("{name}.ics"), &t)
}

#[test]
fn location_aware_scheduling_picks_the_reachable_slot() {
    // Both have a meeting 10:00–11:00 about 1 km apart; their homes are 50 km apart in
    // opposite directions (no pair involving a home is feasible). Every slot before
    // 10:00 lets both go on to their next meeting with the same travel, so the
    // earliest, 08:00, is chosen, both leaving from (towards) the next appointment.
    let alice = ics("alice", &[("20250310T100000", "20250310T110000", "52.5200;13.4050")]);
    let bob = ics("bob", &[("20250310T100000", "20250310T110000", "52.5290;13.4050")]);
    let w = [
        "--from",
        "2025-03-10",
        "--to",
        "2025-03-11",
        "--duration",
        "30m",
        "--step",
        "30m",
        "--hours",
        "08:00-14:00",
        "--tz",
        "Europe/Berlin",
        "--engine",
        "gmw",
        "--locations",
        "--center",
        "52.52,13.405",
        "--speed",
        "30",
    ];
    let (server, addr) = spawn(
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
                "--sessions",
                "1",
                "--home",
                "52.07,13.405",
            ][..],
            &w[..],
        ]
        .concat(),
    );
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
                    "--home",
                    "52.97,13.405",
                    "--json",
                ][..],
                &w[..],
            ]
            .concat(),
        )
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    let v: serde_json::Value = serde_json::from_str(&out(&o)).unwrap();
    assert_eq!(v["function"], "location");
    assert_eq!(v["start"].as_str().unwrap(), "2025-03-10T08:00:00+01:00");
    assert_eq!(v["leave_from"], "next");
    let s = server.wait_with_output().unwrap();
    assert!(s.status.success(), "{}", err(&s));
    assert!(out(&s).contains("08:00") && out(&s).contains("next"), "{}", out(&s));
}

#[test]
fn different_windows_are_one_line_errors() {
    let (alice, bob) = (examples().join("alice.ics"), examples().join("bob.ics"));
    let (server, addr) = spawn(
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
                "--sessions",
                "1",
            ][..],
            &WINDOW[..],
        ]
        .concat(),
    );
    let mut w = WINDOW;
    w[9] = "09:00-22:00";
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
                &w[..],
            ]
            .concat(),
        )
        .output()
        .unwrap();
    assert!(!o.status.success());
    let e = err(&o);
    // One error line (beside the line that names the peer's key, recorded on first use).
    assert_eq!(e.lines().filter(|l| l.contains("error")).count(), 1, "{e}");
    assert!(e.lines().any(|l| l.starts_with("tacit: error:")), "{e}");
    assert!(e.contains("slots"), "{e}");
    // The server reports the session's failure on stderr and exits cleanly after it.
    let s = server.wait_with_output().unwrap();
    assert!(s.status.success());
    assert_eq!(out(&s), "");
}

#[test]
fn psi_prints_the_intersection() {
    let server_set = write(
        "server.txt",
        "alice@example.org\n17\nbob@example.org\n99\ncarol@example.org\n",
    );
    let mine = write("mine.txt", "17\ncarol@example.org\nzed@example.org\n5\n");
    let store_a = tmp("a.sqlite3");
    let (server, addr) = spawn(&[
        "--store",
        store_a.to_str().unwrap(),
        "mpc",
        "psi",
        "serve",
        "--semi-honest-peers",
        "--set",
        server_set.to_str().unwrap(),
        "--bits",
        "40",
        "--listen",
        "127.0.0.1:0",
        "--sessions",
        "2",
    ]);
    let o = tacit()
        .args([
            "--store",
            tmp("b.sqlite3").to_str().unwrap(),
            "mpc",
            "psi",
            "query",
            "--set",
            mine.to_str().unwrap(),
            "--bits",
            "40",
            "--connect",
            &addr,
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(out(&o), "17\ncarol@example.org\n");
    assert!(err(&o).contains("false-positive bound"), "{}", err(&o));
    // Another length: refused, one line, and the server goes on.
    let o = tacit()
        .args([
            "--store",
            tmp("b.sqlite3").to_str().unwrap(),
            "mpc",
            "psi",
            "query",
            "--set",
            mine.to_str().unwrap(),
            "--bits",
            "32",
            "--connect",
            &addr,
        ])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert_eq!(
        err(&o).lines().filter(|l| l.contains("error")).count(),
        1,
        "{}",
        err(&o)
    );
    assert!(err(&o).lines().any(|l| l.starts_with("tacit: error:")), "{}", err(&o));
    assert!(err(&o).contains("40-bit"), "{}", err(&o));
    let s = server.wait_with_output().unwrap();
    assert!(s.status.success());
    // The server learns no output.
    assert_eq!(out(&s), "");
}

/// Item 4 of issue 27: `tacit mpc psi serve` serves only after the acknowledgement
/// that its queriers follow the protocol, and says where untrusted queriers go. (It
/// served at once before: this test then found it still running.)
#[test]
fn psi_serve_needs_the_semi_honest_acknowledgement() {
    let set = write("server.txt", "1\n2\n3\n");
    let mut child = tacit()
        .args(["--store", tmp("a.sqlite3").to_str().unwrap()])
        .args([
            "mpc",
            "psi",
            "serve",
            "--set",
            set.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t0.elapsed() > std::time::Duration::from_secs(10) {
            let _ = child.kill();
            panic!("psi serve runs without --semi-honest-peers");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let o = child.wait_with_output().unwrap();
    assert!(!status.success());
    let e = err(&o);
    assert_eq!(e.trim().lines().count(), 1, "{e}");
    assert!(
        e.contains("--semi-honest-peers") && e.contains("tacit psi serve"),
        "{e}"
    );
    let help = tacit().args(["mpc", "psi", "serve", "--help"]).output().unwrap();
    assert!(out(&help).contains("tacit psi serve") && out(&help).contains("semi-honest"));
}

/// Item 7 of issue 27: one client does not hold `tacit mpc psi serve`. A connection
/// that never speaks takes one session slot; a query still runs beside it (the silent
/// one is still connected when it is done), and the silent one is cut at the session
/// deadline (before: one session at a time and no deadline, so the query waited 30 s
/// behind it).
#[test]
fn psi_serve_runs_sessions_side_by_side_and_cuts_a_silent_one() {
    use std::io::Read;
    let set = write("server.txt", "1\n2\n3\n");
    let mine = write("mine.txt", "2\n4\n");
    let (server, addr) = spawn(&[
        "--store",
        tmp("a.sqlite3").to_str().unwrap(),
        "mpc",
        "psi",
        "serve",
        "--semi-honest-peers",
        "--set",
        set.to_str().unwrap(),
        "--bits",
        "16",
        "--listen",
        "127.0.0.1:0",
        "--max-sessions",
        "2",
        "--session-timeout",
        "3",
        "--sessions",
        "2",
    ]);
    let mut silent = std::net::TcpStream::connect(&addr).unwrap();
    let o = tacit()
        .args(["--store", tmp("b.sqlite3").to_str().unwrap()])
        .args(["mpc", "psi", "query", "--set", mine.to_str().unwrap(), "--bits", "16"])
        .args(["--connect", &addr])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(out(&o), "2\n");
    // The query did not wait for the silent client to go: it is still connected.
    silent.set_nonblocking(true).unwrap();
    let mut b = [0u8; 1];
    match silent.read(&mut b) {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        other => panic!("the silent client was cut before the query ran: {other:?}"),
    }
    // Then the server closes it at its deadline (3 s after accept).
    silent.set_nonblocking(false).unwrap();
    silent
        .set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    let n = silent.read(&mut b).unwrap_or(0);
    assert_eq!(n, 0, "the server sent something to a client that never spoke");
    let s = server.wait_with_output().unwrap();
    assert!(s.status.success());
}
