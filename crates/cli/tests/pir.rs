//! End-to-end tests of `tacit pir`: a generated table, queries through both backends
//! (text and JSON), and one-line errors for bad input.

use std::path::PathBuf;
use std::process::{Command, Output};

fn tacit() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tacit"))
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tacit-pir-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn run(args: &[&str]) -> Output {
    tacit().args(args).output().unwrap()
}

fn one_line_error(o: &Output) -> String {
    assert!(!o.status.success(), "expected a failure");
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("tacit: error:")).collect();
    assert_eq!(lines.len(), 1, "{err}");
    lines[0].to_string()
}

#[test]
fn generate_and_query_both_backends() {
    let table = tmp("keys.tbl");
    let t = table.to_str().unwrap();
    let o = run(&["pir", "table", "gen", "--rows", "900", "--bytes", "7", "--out", t]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let bytes = std::fs::read(&table).unwrap();
    assert_eq!(bytes.len(), 900 * 7);
    let want = |i: usize| {
        bytes[i * 7..i * 7 + 7]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };

    let o = run(&["pir", "query", "--table", t, "--bytes", "7", "--row", "456"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), want(456));

    let o = run(&["pir", "query", "--table", t, "--bytes", "7", "--row", "899", "--json"]);
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["row"], want(899));
    assert_eq!(v["backend"], "lwe");
    assert!(v["hint_bytes"].as_u64().unwrap() > 0 && v["query_bytes"].as_u64().unwrap() > 0);
    assert!(v["answer_ms"].as_f64().is_some());

    let o = run(&[
        "pir",
        "query",
        "--table",
        t,
        "--bytes",
        "7",
        "--row",
        "3",
        "--backend",
        "ntru-paper",
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["row"], want(3));
    assert_eq!(v["insecure"], true);
    assert!(String::from_utf8_lossy(&o.stderr).contains("INSECURE"));
}

#[test]
fn bad_input_gives_one_line_errors() {
    let table = tmp("odd.tbl");
    std::fs::write(&table, [0u8; 10]).unwrap();
    let t = table.to_str().unwrap();
    let e = one_line_error(&run(&["pir", "query", "--table", t, "--bytes", "3", "--row", "0"]));
    assert!(e.contains("not a whole number of 3-byte rows"), "{e}");
    let e = one_line_error(&run(&["pir", "query", "--table", t, "--bytes", "5", "--row", "2"]));
    assert!(e.contains("outside the table of 2 rows"), "{e}");
    let e = one_line_error(&run(&[
        "pir",
        "query",
        "--table",
        "/nonexistent/x.tbl",
        "--bytes",
        "5",
        "--row",
        "0",
    ]));
    assert!(e.contains("cannot read the table"), "{e}");
    let e = one_line_error(&run(&[
        "pir", "table", "gen", "--rows", "0", "--bytes", "5", "--out", t,
    ]));
    assert!(e.contains("1 to"), "{e}");
}
