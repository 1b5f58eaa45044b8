//! Issue 28, item 11: every walk-through in the README and `docs/` runs as written, so
//! it cannot rot. A walk-through is a fenced block opened with ```` ```sh walk-through ````
//! (GitHub shows it as an ordinary `sh` block). The blocks of one page are joined in
//! order and run by `bash -euo pipefail` in a fresh folder where `tacit` is the binary
//! under test and `crates/` and `examples/` are the repository's (as in the root of a
//! clone); the first command that fails fails the test, with the script's trace.
//!
//! Where network namespaces can be made (root and iproute2, as in CI), each page runs
//! in a loopback-only namespace of its own, so the fixed ports the pages use
//! (127.0.0.1:7700, :7690, …) cannot meet another test's, and mDNS stays inside.
//! Elsewhere it runs as is. Background servers a page starts (`… &`) run in the
//! script's process group, which is killed when the script ends, whatever happened.

mod common;
use common::{err as stderr, out as stdout};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The opening line of a walk-through block.
const OPENING: &str = "```sh walk-through";

/// Longest a page's walk-through may run before it is stopped and fails.
const LIMIT: Duration = Duration::from_secs(240);

fn repo() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| env!("CARGO_MANIFEST_DIR").into())
        .join("../..")
}

/// The walk-through blocks of `markdown`, joined in order.
fn walkthrough(markdown: &str) -> String {
    let mut out = String::new();
    let mut inside = false;
    for line in markdown.lines() {
        if !inside && line.trim_end() == OPENING {
            inside = true;
        } else if inside && line.trim_end() == "```" {
            inside = false;
            out.push('\n');
        } else if inside {
            out.push_str(line);
            out.push('\n');
        }
    }
    assert!(!inside, "a walk-through block is not closed");
    out
}

/// A loopback-only network namespace with multicast on its loopback (deleted on
/// drop), or `None` where none can be made.
struct Netns(String);

impl Netns {
    fn new() -> Option<Netns> {
        static N: AtomicUsize = AtomicUsize::new(0);
        let name = format!("tacit-walk-{}-{}", std::process::id(), N.fetch_add(1, Ordering::SeqCst));
        let ok = |args: &[&str]| Command::new("ip").args(args).output().is_ok_and(|o| o.status.success());
        if !ok(&["netns", "add", &name]) {
            return None;
        }
        let ns = Netns(name);
        for args in [
            vec!["-n", &ns.0, "link", "set", "lo", "up"],
            vec!["-n", &ns.0, "link", "set", "lo", "multicast", "on"],
            vec!["-n", &ns.0, "route", "add", "224.0.0.0/4", "dev", "lo"],
        ] {
            if !ok(&args) {
                return None;
            }
        }
        Some(ns)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).output();
    }
}

/// Runs `script` as a page's walk-through; `Err` holds the trace of a failure.
fn run_script(page: &str, script: &str) -> Result<String, String> {
    let dir = common::tmp("walk");
    std::fs::create_dir_all(&dir).unwrap();
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_tacit"), bin.join("tacit")).unwrap();
    for sub in ["crates", "examples"] {
        std::os::unix::fs::symlink(repo().join(sub), dir.join(sub)).unwrap();
    }
    std::fs::write(dir.join("walkthrough.sh"), script).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let ns = Netns::new();
    let mut cmd = match &ns {
        Some(ns) => {
            let mut c = Command::new("ip");
            c.args(["netns", "exec", &ns.0, "bash"]);
            c
        }
        None => Command::new("bash"),
    };
    cmd.args(["-xeuo", "pipefail", "walkthrough.sh"])
        .current_dir(&dir)
        .env("PATH", path)
        // nothing reaches the user's own store
        .env("TACIT_STORE", dir.join("default-store.sqlite3"))
        .env("HOME", &dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = cmd.spawn().unwrap();
    let group = child.id();
    let (out, err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let read = |mut r: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut s = Vec::new();
            let _ = r.read_to_end(&mut s);
            String::from_utf8_lossy(&s).into_owned()
        })
    };
    let (out, err) = (read(Box::new(out)), read(Box::new(err)));
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if start.elapsed() > LIMIT {
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    // the servers the page left running (and the script itself, on a timeout)
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{group}")])
        .output();
    let _ = child.wait();
    let (out, err) = (out.join().unwrap(), err.join().unwrap());
    let trace = format!(
        "{page}'s walk-through, in {}:\n--- stdout\n{out}\n--- stderr (trace)\n{err}",
        dir.display()
    );
    match status {
        Some(s) if s.success() => Ok(out),
        Some(s) => Err(format!("failed ({s}); {trace}")),
        None => Err(format!("still running after {} s; {trace}", LIMIT.as_secs())),
    }
}

/// Runs the walk-through of `page` (relative to the repository) and returns its
/// standard output.
fn run_page(page: &str) -> String {
    let text = std::fs::read_to_string(repo().join(page)).unwrap();
    let script = walkthrough(&text);
    assert!(!script.trim().is_empty(), "{page} has no `{OPENING}` block");
    run_script(page, &script).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn the_drop_walkthrough_runs_as_written() {
    let out = run_page("docs/drop.md");
    assert!(out.contains("hello Bob"), "{out}");
}

#[test]
fn the_discovery_walkthrough_runs_as_written() {
    let out = run_page("docs/discovery.md");
    assert!(out.contains("0-RTT reply: hello from the service"), "{out}");
    assert!(out.contains("private mutual authentication"), "{out}");
}

#[test]
fn the_mpc_walkthrough_runs_as_written() {
    let out = run_page("docs/mpc.md");
    let sum = format!("0001{}", "0".repeat(60));
    // in the clear, then each party of two GMW runs (OT extension, token)
    assert_eq!(out.lines().filter(|l| l.trim() == sum).count(), 5, "{out}");
}

#[test]
fn the_pir_walkthrough_runs_as_written() {
    let out = run_page("docs/pir.md");
    assert_eq!(out.matches("authenticated anonymously").count(), 2, "{out}");
}

#[test]
fn the_readme_walkthrough_runs_as_written() {
    let out = run_page("README.md");
    assert_eq!(out.trim(), "bob@example.com", "{out}");
}

/// The harness itself: a walk-through whose command fails fails its test, and the
/// servers it started do not outlive it.
#[test]
fn a_failing_walkthrough_command_fails_the_run() {
    let script = walkthrough(
        "text\n```sh walk-through\nsleep 30 &\necho $! > server.pid\ntacit ca show --dir ./no-such-ca\necho unreachable\n```\n",
    );
    let e = run_script("a broken page", &script).unwrap_err();
    assert!(e.contains("failed") && !e.contains("\nunreachable"), "{e}");
    let dir = e.split(" in ").nth(1).unwrap().split(":\n").next().unwrap();
    let pid = std::fs::read_to_string(Path::new(dir).join("server.pid")).unwrap();
    // gone, or a zombie waiting to be reaped by whoever inherited it
    let alive = || {
        std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).is_ok_and(|st| {
            st.rsplit(')')
                .next()
                .is_some_and(|rest| !rest.trim_start().starts_with('Z'))
        })
    };
    let start = Instant::now();
    while alive() && start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!alive(), "the background job outlived the walk-through");
    let _ = (stdout, stderr);
}
