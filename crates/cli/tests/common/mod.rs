//! Helpers shared by the CLI's end-to-end tests (each test file is its own crate and
//! includes this module with `mod common;`; not every file uses every helper).
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The `tacit` binary under test.
pub fn tacit() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_tacit"));
    // small ring-Pedersen parameters for the serving commands' fresh test stores
    // (two 512-bit safe primes instead of 1536-bit ones)
    c.env("TACIT_PROS_RING_BITS", "1024");
    c
}

/// A path named `name` in a fresh directory of its own under the temp directory.
pub fn tmp(name: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "tacit-{}-test-{}-{}",
        env!("CARGO_CRATE_NAME"),
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    // a folder of an earlier run whose process had the same id is left-over, not ours
    // (a CA folder left there made `ca init` refuse: "already holds a CA")
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// Writes `text` to a fresh [`tmp`] path.
pub fn write(name: &str, text: &str) -> PathBuf {
    let p = tmp(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// A new CA (`tacit ca init`) in a fresh folder named after `name`, and its key as
/// `tacit ca show` prints it.
pub fn new_ca(name: &str) -> (PathBuf, String) {
    let dir = tmp(name);
    let d = dir.to_str().unwrap();
    let o = tacit().args(["ca", "init", "--dir", d]).output().unwrap();
    assert!(o.status.success(), "ca init: {}", err(&o));
    let key = out(&tacit().args(["ca", "show", "--dir", d]).output().unwrap())
        .trim()
        .to_string();
    (dir, key)
}

pub fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A run's standard error.
pub fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The repository's `examples/` folder.
pub fn examples() -> PathBuf {
    // The manifest folder as cargo gives it at run time (not the one compiled in: a
    // test binary may be reused from another checkout sharing the target folder).
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| env!("CARGO_MANIFEST_DIR").into())
        .join("../../examples")
}

/// The standard-error lines a server printed after its address, collected as it runs.
pub type Log = std::sync::Arc<std::sync::Mutex<Vec<String>>>;

/// Waits (up to 10 s) until a line of `log` contains `needle`: a server may print why
/// it closed a connection after the client has already reported the close.
pub fn wait_logged(log: &Log, needle: &str) -> bool {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::time::Instant::now() < until {
        if log.lock().unwrap().iter().any(|l| l.contains(needle)) {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    false
}

fn start(args: &[&str], stdout: Stdio) -> (Child, String, Log) {
    let mut child = tacit()
        .args(args)
        .stdout(stdout)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let addr = loop {
        let line = lines.next().expect("printed its address").unwrap();
        if let Some(i) = line.find("listening on ") {
            break line[i + "listening on ".len()..].trim().to_string();
        }
    };
    let log = Log::default();
    let l2 = log.clone();
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            l2.lock().unwrap().push(line);
        }
    });
    (child, addr, log)
}

/// Starts a server with its standard output captured; returns it and the address it
/// printed ("listening on ADDR" on standard error, which is then drained).
pub fn spawn(args: &[&str]) -> (Child, String) {
    let (child, addr, _) = start(args, Stdio::piped());
    (child, addr)
}

/// [`spawn`] with standard output discarded.
pub fn spawn_listening(args: &[&str]) -> (Child, String) {
    let (child, addr, _) = start(args, Stdio::null());
    (child, addr)
}

/// [`spawn`], also returning what the server prints on standard error.
pub fn spawn_logged(args: &[&str]) -> (Child, String, Log) {
    start(args, Stdio::piped())
}

/// [`spawn_listening`], also returning what the server prints on standard error.
pub fn spawn_listening_logged(args: &[&str]) -> (Child, String, Log) {
    start(args, Stdio::null())
}
