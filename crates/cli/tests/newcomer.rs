//! Issue 28: what a newcomer meets — bounded inputs, nothing left behind, signals,
//! two processes on one store, errors in each side's own words, consistent output.

mod common;
use common::*;
use common::{err as stderr, out as stdout};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A FIFO at a fresh path, and a thread writing `lines` numbered lines into it (until
/// the reader closes it); the thread returns how many bytes the reader took.
fn endless_set(lines: u64) -> (PathBuf, std::thread::JoinHandle<u64>) {
    let p = tmp("set.fifo");
    assert!(Command::new("mkfifo").arg(&p).status().unwrap().success());
    let p2 = p.clone();
    let h = std::thread::spawn(move || {
        let mut f = std::fs::OpenOptions::new().write(true).open(&p2).unwrap();
        let mut written = 0u64;
        let mut chunk = String::new();
        for i in 0..lines {
            chunk.push_str(&format!("element-{i:012}\n"));
            if chunk.len() >= 4096 {
                match f.write_all(chunk.as_bytes()) {
                    Ok(()) => written += chunk.len() as u64,
                    Err(_) => return written, // the reader stopped
                }
                chunk.clear();
            }
        }
        let _ = f.write_all(chunk.as_bytes());
        written + chunk.len() as u64
    });
    (p, h)
}

/// Runs `tacit args…` with the set file replaced by a 3.5 M-line (~75 MB) FIFO and
/// checks that it refuses the set in one line after reading a little of it.
fn refuses_while_reading(args: &[&str], bound: &str) {
    let (fifo, writer) = endless_set(3_500_000);
    let args: Vec<&str> = args
        .iter()
        .map(|a| if *a == "SET" { fifo.to_str().unwrap() } else { a })
        .collect();
    let out = tacit().args(&args).output().unwrap();
    let took = writer.join().unwrap();
    let e = stderr(&out);
    assert!(!out.status.success(), "{args:?}: {e}");
    assert_eq!(e.lines().count(), 1, "{args:?}: {e}");
    assert!(e.contains("has more than") && e.contains(bound), "{args:?}: {e}");
    // memory proportional to the bound: the reader stopped long before the end
    assert!(
        took < 8 << 20,
        "{args:?}: read {took} bytes of the set before refusing it"
    );
}

#[test]
fn a_set_file_past_its_bound_is_refused_while_it_is_read() {
    refuses_while_reading(
        &[
            "psi",
            "query",
            "--set",
            "SET",
            "--connect",
            "127.0.0.1:9",
            "--max-receiver",
            "10",
        ],
        "--max-receiver",
    );
    refuses_while_reading(
        &[
            "psi",
            "serve",
            "--set",
            "SET",
            "--listen",
            "127.0.0.1:0",
            "--max-sender",
            "10000",
        ],
        "--max-sender",
    );
    refuses_while_reading(
        &[
            "mpc",
            "psi",
            "query",
            "--set",
            "SET",
            "--connect",
            "127.0.0.1:9",
            "--bits",
            "32",
        ],
        "mpc psi",
    );
}

#[test]
fn a_set_with_duplicates_counts_distinct_elements() {
    let set = write("ids.txt", "a\nb\na\n\n  b \na\n");
    // two distinct elements fit --max-receiver 2; the query then fails on the network
    let out = tacit()
        .args([
            "psi",
            "query",
            "--set",
            set.to_str().unwrap(),
            "--connect",
            "127.0.0.1:9",
        ])
        .args(["--max-receiver", "2"])
        .output()
        .unwrap();
    assert!(!stderr(&out).contains("has more than"), "{}", stderr(&out));
}

#[test]
fn an_endless_file_is_refused_at_its_bound() {
    // /dev/zero reports size 0 and never ends: only a bound on the bytes read stops it
    for args in [
        &["psi", "query", "--set", "/dev/zero", "--connect", "127.0.0.1:9"][..],
        &["pros", "encrypt", "--key", "/dev/zero", "1"][..],
        &[
            "schedule",
            "connect",
            "--calendar",
            "/dev/zero",
            "--connect",
            "127.0.0.1:9",
            "--from",
            "2025-01-06",
            "--to",
            "2025-01-11",
        ][..],
    ] {
        let out = tacit().args(args).output().unwrap();
        let e = stderr(&out);
        assert!(!out.status.success(), "{args:?}: {e}");
        assert_eq!(e.lines().count(), 1, "{args:?}: {e}");
        assert!(e.contains("limit"), "{args:?}: {e}");
    }
    let _ = (stdout, Path::new("."));
}

/// Every file under `dir`, for "nothing left behind" checks.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            out.push(e.path());
            out.extend(files_under(&e.path()));
        }
    }
    out
}

#[test]
fn commands_that_only_read_never_create_a_store() {
    let dir = tmp("scratch");
    std::fs::create_dir_all(&dir).unwrap();
    let store = dir.join("nonexistent/dir/x.sqlite3");
    let s = store.to_str().unwrap();
    for (args, creator) in [
        (&["contacts", "list"][..], "tacit contacts import"),
        (&["id", "show"][..], "tacit id enroll"),
        (
            &["psi", "forget", "--connect", "127.0.0.1:9"][..],
            "tacit psi query --tofu",
        ),
        (
            &["drop", "receive", "--listen", "127.0.0.1:0", "--mdns", "off"][..],
            "tacit id enroll",
        ),
        (
            &["psi", "serve", "--from-contacts", "--listen", "127.0.0.1:0"][..],
            "tacit contacts import",
        ),
    ] {
        let out = tacit().args(["--store", s]).args(args).output().unwrap();
        let e = stderr(&out);
        assert!(!out.status.success(), "{args:?}: {e}");
        assert_eq!(e.lines().count(), 1, "{args:?}: {e}");
        assert!(
            e.contains("there is no store at") && e.contains(creator),
            "{args:?}: {e}"
        );
        assert_eq!(files_under(&dir), Vec::<PathBuf>::new(), "{args:?} left files behind");
    }
    // the TracEdge server's own store
    let out = tacit()
        .args([
            "pir",
            "server",
            "serve",
            "--store",
            dir.join("nothere.sqlite3").to_str().unwrap(),
        ])
        .args(["--listen", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    assert_eq!(files_under(&dir), Vec::<PathBuf>::new());
}

#[test]
fn a_command_that_fails_leaves_no_blank_store_behind() {
    let dir = tmp("scratch");
    std::fs::create_dir_all(&dir).unwrap();
    let store = dir.join("new/tacit.sqlite3");
    // `contacts import` of a file with no card that imports: fails, and the store it
    // would have created is not left behind
    let vcf = write("bad.vcf", "BEGIN:VCARD\nVERSION:3.0\nEND:VCARD\n");
    let out = tacit()
        .args([
            "--store",
            store.to_str().unwrap(),
            "contacts",
            "import",
            vcf.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(!out.status.success(), "{}", stderr(&out));
    assert_eq!(files_under(&dir), Vec::<PathBuf>::new());
    // `id enroll` against no CA: creates the store, then fails before writing to it
    let out = tacit()
        .args([
            "--store",
            store.to_str().unwrap(),
            "id",
            "enroll",
            "--ca",
            "127.0.0.1:9",
        ])
        .args(["--ca-key", &"11".repeat(32), "--id", "+14155550142"])
        .output()
        .unwrap();
    assert!(!out.status.success(), "{}", stderr(&out));
    assert_eq!(files_under(&dir), Vec::<PathBuf>::new(), "{}", stderr(&out));
    // a store that holds something stays
    let good = common::examples().join("contacts.vcf");
    let out = tacit()
        .args([
            "--store",
            store.to_str().unwrap(),
            "contacts",
            "import",
            good.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let out = tacit()
        .args([
            "--store",
            store.to_str().unwrap(),
            "contacts",
            "import",
            vcf.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(store.exists());
}

#[test]
fn psi_serve_stops_cleanly_on_sigint_and_sigterm() {
    let book = write("book.txt", "a\nb\n");
    for sig in ["-INT", "-TERM"] {
        let (mut server, _addr, log) = spawn_listening_logged(&[
            "psi",
            "serve",
            "--set",
            book.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
        ]);
        assert!(
            Command::new("kill")
                .args([sig, &server.id().to_string()])
                .status()
                .unwrap()
                .success()
        );
        let status = server.wait().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(100));
        let log = log.lock().unwrap().clone();
        assert!(status.success(), "{sig}: {status:?} {log:?}");
        assert!(log.iter().any(|l| l.contains(": stopping")), "{sig}: {log:?}");
    }
}

/// Issue 28, item 4: two `psi serve --from-contacts --reuse epoch` started together
/// on one store: one computes and stores the precomputation, the other waits for it
/// (saying for whom) and reuses it — not both computing, both storing, with two
/// keys.
#[test]
fn two_epoch_servers_on_one_store_precompute_once() {
    let store = tmp("store.sqlite3");
    let s = store.to_str().unwrap();
    let mut vcf = String::new();
    for i in 0..3000 {
        vcf.push_str(&format!(
            "BEGIN:VCARD\nVERSION:3.0\nFN:C{i}\nEMAIL:c{i}@example.com\nEND:VCARD\n"
        ));
    }
    let vcf = write("book.vcf", &vcf);
    let out = tacit()
        .args(["--store", s, "contacts", "import", vcf.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let serve = || {
        tacit()
            .args(["--store", s, "psi", "serve", "--from-contacts", "--reuse", "epoch"])
            .args(["--listen", "127.0.0.1:0", "--sessions", "0", "--semi-honest"])
            .output()
            .unwrap()
    };
    let (x, y) = std::thread::scope(|sc| {
        let a = sc.spawn(serve);
        let b = sc.spawn(serve);
        (a.join().unwrap(), b.join().unwrap())
    });
    let logs = format!("{}\n----\n{}", stderr(&x), stderr(&y));
    assert!(x.status.success() && y.status.success(), "{logs}");
    assert_eq!(logs.matches("precomputed and stored").count(), 1, "{logs}");
    assert_eq!(logs.matches("reusing the stored precomputation").count(), 1, "{logs}");
}

/// Issue 28, item 9: an empty PSI result keeps stdout empty (for scripts) and says
/// "no common elements" on stderr.
#[test]
fn an_empty_psi_result_says_so_on_stderr_only() {
    let book = write("book.txt", "a\nb\n");
    let ids = write("ids.txt", "x\ny\n");
    let (mut server, addr) = spawn_listening(&[
        "psi",
        "serve",
        "--set",
        book.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
        "--sessions",
        "1",
        "--max-sender",
        "8",
        "--max-receiver",
        "4",
    ]);
    let out = tacit()
        .args(["psi", "query", "--set", ids.to_str().unwrap(), "--connect", &addr])
        .args(["--max-sender", "8", "--max-receiver", "4"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "");
    assert!(stderr(&out).contains("no common elements"), "{}", stderr(&out));
    assert!(server.wait().unwrap().success());
}

/// `tacit … | head -1` (a reader that goes away) ends tacit quietly with SIGPIPE's
/// status, not with a panic about printing to stdout.
#[test]
fn a_reader_that_goes_away_ends_tacit_quietly() {
    let circuit = Path::new(env!("CARGO_MANIFEST_DIR")).join("../mpc/testdata/circuits/adder64.txt");
    let input = format!("{:064}", 0);
    // A pipe whose reader is gone before tacit starts.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_tacit"))
        .args(["mpc", "eval", "--circuit"])
        .arg(&circuit)
        .args(["--input", &input, "--input", &input])
        .stdout(writer)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(out.status.code(), Some(141), "{err}");
}
