//! End-to-end tests of `tacit pros` and `tacit schedule`: two processes over loopback,
//! python-paillier JSON through the commands, and one-line errors.

mod common;
use common::*;

#[test]
fn paillier_json_commands() {
    let key = tmp("k.json");
    let k = key.to_str().unwrap();
    let o = tacit()
        .args(["pros", "keygen", "--bits", "512", "--out", k])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    let pubk = key.with_file_name("k.pub.json");
    let p = pubk.to_str().unwrap();
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&pubk).unwrap()).unwrap();
    assert_eq!(v["kty"], "DAJ");
    assert_eq!(v["alg"], "PAI-GN1");
    let enc = |x: &str| {
        let o = tacit().args(["pros", "encrypt", "--key", p, "--", x]).output().unwrap();
        assert!(o.status.success(), "{}", err(&o));
        write("c.json", &out(&o))
    };
    let a = enc("41.25");
    let b = enc("-100");
    let o = tacit()
        .args(["pros", "add", "--key", p, a.to_str().unwrap(), b.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    let s = write("s.json", &out(&o));
    let o = tacit()
        .args(["pros", "decrypt", "--key", k, s.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out(&o).trim(), "-58.75");
    // the public key cannot decrypt; garbage is one line
    let o = tacit()
        .args(["pros", "decrypt", "--key", p, s.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert_eq!(err(&o).trim().lines().count(), 1, "{}", err(&o));
    let g = write("g.json", "{\"v\": \"12\"");
    let o = tacit()
        .args(["pros", "decrypt", "--key", k, g.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!o.status.success() && err(&o).trim().lines().count() == 1);
}

#[test]
fn reconcile_between_two_processes() {
    let a = write("a.txt", "tue\nmon\nwed\nfri\n");
    let b = write("b.txt", "wed\nthu\nmon\n");
    let (srv, cli) = (tmp("srv.sqlite3"), tmp("cli.sqlite3"));
    for scheme in ["sor", "mor"] {
        for variant in ["implicit", "explicit", "explicit-cached"] {
            let (server, addr) = spawn(&[
                "--store",
                srv.to_str().unwrap(),
                "pros",
                "reconcile",
                "serve",
                "--set",
                b.to_str().unwrap(),
                "--listen",
                "127.0.0.1:0",
                "--sessions",
                "1",
                "--min-key-bits",
                "1024",
                "--scheme",
                scheme,
                "--variant",
                variant,
            ]);
            let o = tacit()
                .args([
                    "--store",
                    cli.to_str().unwrap(),
                    "pros",
                    "reconcile",
                    "connect",
                    "--set",
                    a.to_str().unwrap(),
                    "--connect",
                    &addr,
                    "--key-bits",
                    "1024",
                    "--scheme",
                    scheme,
                    "--variant",
                    variant,
                ])
                .output()
                .unwrap();
            assert!(o.status.success(), "{}", err(&o));
            let s = server.wait_with_output().unwrap();
            // SOR: mon 1+2 = 3, wed 2+0 = 2 → wed; MOR: max(1,2) = 2, max(2,0) = 2 → mon and wed
            let want = if scheme == "sor" { "wed\n" } else { "mon\nwed\n" };
            assert_eq!(out(&o), want, "{scheme} {variant}");
            assert_eq!(out(&s), want, "{scheme} {variant}");
        }
    }
    // no common element: nothing on stdout, a note on stderr
    let c = write("c.txt", "x\ny\n");
    let (server, addr) = spawn(&[
        "pros",
        "reconcile",
        "serve",
        "--set",
        c.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
        "--sessions",
        "1",
        "--min-key-bits",
        "1024",
        "--plain-tcp",
    ]);
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
    assert!(o.status.success());
    assert_eq!(out(&o), "");
    assert!(err(&o).contains("no common element"));
    server.wait_with_output().unwrap();
}

#[test]
fn psi_between_two_processes() {
    let s = write("s.txt", "1\n2\n3\n40\n");
    let c = write("c.txt", "3\n40\n50\n");
    let (srv, cli) = (tmp("srv.sqlite3"), tmp("cli.sqlite3"));
    let (server, addr) = spawn(&[
        "--store",
        srv.to_str().unwrap(),
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
        "1024",
        "--max-chooser",
        "20",
        "--max-sender",
        "20",
        "--encoding",
        "int32",
    ]);
    let o = tacit()
        .args([
            "--store",
            cli.to_str().unwrap(),
            "pros",
            "psi",
            "query",
            "--set",
            c.to_str().unwrap(),
            "--connect",
            &addr,
            "--key-bits",
            "1024",
            "--max-chooser",
            "20",
            "--max-sender",
            "20",
            "--encoding",
            "int32",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    let text = out(&o);
    let mut got: Vec<&str> = text.lines().collect();
    got.sort();
    assert_eq!(got, vec!["3", "40"]);
    server.wait_with_output().unwrap();
}

#[test]
fn schedule_from_the_example_calendars() {
    let w = [
        "--from",
        "2025-03-10T00:00:00+01:00",
        "--to",
        "2025-03-15T00:00:00+01:00",
        "--duration",
        "30m",
        "--step",
        "30m",
    ];
    let bob = examples().join("bob.ics");
    let alice = examples().join("alice.ics");
    let invite = tmp("meeting.ics");
    let (srv, cli) = (tmp("srv.sqlite3"), tmp("cli.sqlite3"));
    let (server, addr) = spawn(
        &[
            &[
                "--store",
                srv.to_str().unwrap(),
                "schedule",
                "serve",
                "--calendar",
                bob.to_str().unwrap(),
                "--listen",
                "127.0.0.1:0",
                "--sessions",
                "1",
            ][..],
            &w[..],
            &[
                "--tz",
                "Europe/London",
                "--hours",
                "08:00-16:00",
                "--prefer",
                "afternoon",
                "--min-key-bits",
                "1024",
                "--max-slots",
                "32",
            ][..],
        ]
        .concat(),
    );
    let o = tacit()
        .args(
            [
                &[
                    "--store",
                    cli.to_str().unwrap(),
                    "schedule",
                    "connect",
                    "--calendar",
                    alice.to_str().unwrap(),
                    "--connect",
                    &addr,
                ][..],
                &w[..],
                &[
                    "--tz",
                    "Europe/Berlin",
                    "--hours",
                    "09:00-17:00",
                    "--prefer",
                    "morning",
                    "--avoid",
                    "friday",
                    "--key-bits",
                    "1024",
                    "--max-slots",
                    "32",
                    "--json",
                    "--out",
                    invite.to_str().unwrap(),
                ][..],
            ]
            .concat(),
        )
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    let v: serde_json::Value = serde_json::from_str(&out(&o)).unwrap();
    let start = v["start"].as_str().unwrap();
    assert!(start.ends_with("+01:00"), "{start}");
    let s = server.wait_with_output().unwrap();
    assert!(s.status.success());
    // Bob prints the same slot in London time
    assert!(out(&s).contains("GMT"), "{}", out(&s));
    let ics = std::fs::read_to_string(&invite).unwrap();
    assert!(
        ics.contains("BEGIN:VEVENT") && ics.contains("DTSTART:20250310T"),
        "{ics}"
    );
}

#[test]
fn bad_schedule_input_is_one_line() {
    let bad = write(
        "bad.ics",
        "BEGIN:VCALENDAR\nBEGIN:VEVENT\nDTSTART;TZID=Mars/Base:20250101T100000\nEND:VEVENT\nEND:VCALENDAR\n",
    );
    for args in [
        vec![
            "schedule",
            "connect",
            "--calendar",
            bad.to_str().unwrap(),
            "--connect",
            "127.0.0.1:9",
            "--from",
            "2025-01-01",
            "--to",
            "2025-01-02",
        ],
        vec![
            "schedule",
            "connect",
            "--calendar",
            "/nonexistent.ics",
            "--connect",
            "127.0.0.1:9",
            "--from",
            "2025-01-01",
            "--to",
            "2025-01-02",
        ],
        vec![
            "schedule",
            "connect",
            "--calendar",
            bad.to_str().unwrap(),
            "--connect",
            "127.0.0.1:9",
            "--from",
            "2025-01-02",
            "--to",
            "2025-01-01",
        ],
        vec![
            "schedule",
            "connect",
            "--calendar",
            bad.to_str().unwrap(),
            "--connect",
            "127.0.0.1:9",
            "--from",
            "2025-01-01",
            "--to",
            "2025-01-02",
            "--duration",
            "5x",
        ],
    ] {
        let o = tacit().args(&args).output().unwrap();
        assert!(!o.status.success());
        assert_eq!(err(&o).trim().lines().count(), 1, "{}", err(&o));
        assert!(err(&o).starts_with("tacit: error:"), "{}", err(&o));
    }
}
