//! Helpers shared by every subsystem's commands, benches and demos: set files, the
//! store path, progress bars, clocks, quantiles and timings, and (in [`plot`]) PNG
//! plots.

pub mod channel;
pub mod plot;
pub mod progress;
pub mod shutdown;

use anyhow::{Context, Result, bail};
use indicatif::{ProgressBar, ProgressStyle};
use std::path::{Path, PathBuf};
use tacit_wire::text::escape_for_display;

/// A scratch folder `tacit-<what>-<pid>` under the temp directory, removed with
/// everything in it when dropped, so that a bench that stops on an error leaves
/// nothing behind.
#[derive(Debug)]
pub struct ScratchDir(PathBuf);

impl ScratchDir {
    /// Creates the folder.
    pub fn new(what: &str) -> Result<Self> {
        let dir = std::env::temp_dir().join(format!("tacit-{what}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
        Ok(ScratchDir(dir))
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.0
    }

    /// A path inside it.
    pub fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The longest element accepted in a set file.
pub const MAX_ELEMENT_LEN: usize = 1024;

/// Reads a set file: one element per line (UTF-8), surrounding whitespace trimmed,
/// empty lines skipped, duplicates removed (the first occurrence is kept, so order
/// is kept). Reading stops at the first element past `max` distinct ones, with a
/// one-line error that names `bound` (the flag or limit that sets `max`): memory
/// stays proportional to `max`, whatever the size of the file
/// ([`tacit_wire::file::BoundedLines`]).
pub fn read_set(path: &Path, max: usize, bound: &str) -> Result<Vec<String>> {
    let mut lines = tacit_wire::file::BoundedLines::open(path, "set file", MAX_ELEMENT_LEN + 2 * 64)?;
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    while let Some((n, line)) = lines.next_line()? {
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        if t.len() > MAX_ELEMENT_LEN {
            bail!(
                "{}:{n}: element is {} bytes; the limit is {MAX_ELEMENT_LEN}",
                path.display(),
                t.len()
            );
        }
        if seen.contains(t) {
            continue;
        }
        if out.len() == max {
            bail!(
                "set file {} has more than {max} elements (line {n}); the limit is {max} ({bound})",
                path.display()
            );
        }
        seen.insert(t.to_string());
        out.push(t.to_string());
    }
    Ok(out)
}

/// Reads a user file of at most `limit` bytes, refused while reading past the limit
/// ([`tacit_wire::file::read_bounded`]); `what` names it in errors.
pub fn read_file(path: &Path, what: &'static str, limit: u64) -> Result<Vec<u8>> {
    Ok(tacit_wire::file::read_bounded(path, what, limit)?)
}

/// [`read_file`] as UTF-8 text.
pub fn read_text(path: &Path, what: &'static str, limit: u64) -> Result<String> {
    Ok(tacit_wire::file::read_text_bounded(path, what, limit)?)
}

/// The limit on small files a person names: keys, blessings, receipts, requests
/// (the largest of them, a discovery blessing chain or a revocation list, is far
/// below this).
pub const MAX_SMALL_FILE: u64 = 16 << 20;

/// The store path: `--store`, else `$TACIT_STORE`, else the user's data directory.
pub fn store_path(arg: Option<&Path>) -> Result<PathBuf> {
    if let Some(p) = arg {
        return Ok(p.to_path_buf());
    }
    if let Some(p) = std::env::var_os("TACIT_STORE") {
        return Ok(PathBuf::from(p));
    }
    if let Some(d) = std::env::var_os("XDG_DATA_HOME") {
        return Ok(PathBuf::from(d).join("tacit").join("tacit.sqlite3"));
    }
    match std::env::var_os("HOME") {
        Some(h) => Ok(PathBuf::from(h).join(".local/share/tacit/tacit.sqlite3")),
        None => bail!("no --store given and neither TACIT_STORE, XDG_DATA_HOME nor HOME is set"),
    }
}

/// A store this process created, with the folders it created for it (innermost
/// first).
struct NewStore {
    path: PathBuf,
    dirs: Vec<PathBuf>,
}

static NEW_STORES: std::sync::Mutex<Vec<NewStore>> = std::sync::Mutex::new(Vec::new());

/// Opens the store at `path`, creating it (and its folders) if needed, for a command
/// that writes. A store this call created is removed again by
/// [`remove_blank_new_stores`] when the command fails before writing anything to it.
pub fn open_store(path: &Path) -> Result<tacit_store::Store> {
    let mut dirs = Vec::new();
    let mut p = path.parent();
    while let Some(d) = p.filter(|d| !d.as_os_str().is_empty() && !d.exists()) {
        dirs.push(d.to_owned());
        p = d.parent();
    }
    let existed = path.exists();
    let st = tacit_store::Store::open(path).with_context(|| format!("cannot open store {}", path.display()))?;
    if !existed && let Ok(mut v) = NEW_STORES.lock() {
        v.push(NewStore {
            path: path.to_owned(),
            dirs,
        });
    }
    Ok(st)
}

/// After a failed command: removes every store this process created that is still
/// blank ([`tacit_store::Store::is_blank`]), with the folders made for it, so that a
/// command that fails leaves nothing behind. A store something was written to stays.
pub fn remove_blank_new_stores() {
    let Ok(mut v) = NEW_STORES.lock() else { return };
    for s in v.drain(..) {
        let blank = tacit_store::Store::open_existing(&s.path)
            .and_then(|st| st.is_blank())
            .unwrap_or(false);
        if !blank {
            continue;
        }
        let _ = std::fs::remove_file(&s.path);
        for ext in ["-wal", "-shm", "-journal"] {
            let mut p = s.path.as_os_str().to_owned();
            p.push(ext);
            let _ = std::fs::remove_file(PathBuf::from(p));
        }
        for d in &s.dirs {
            let _ = std::fs::remove_dir(d); // only if empty
        }
    }
}

/// Opens the store for a command that only reads it: never creates the store or its
/// folders. A missing store is a one-line error naming `creator`, the command that
/// creates it.
pub fn open_store_existing(arg: Option<&Path>, creator: &str) -> Result<tacit_store::Store> {
    let path = store_path(arg)?;
    match tacit_store::Store::open_existing(&path) {
        Err(tacit_store::Error::Missing { .. }) => {
            bail!("there is no store at {}; `{creator}` creates it", path.display())
        }
        r => r.with_context(|| format!("cannot open store {}", path.display())),
    }
}

/// The memory (bytes) this process may still use (one copy, in the library:
/// [`tacit_net::memory::memory_budget`]).
pub use tacit_net::memory::memory_budget;

/// A byte count for a message about memory: MiB with one decimal below 100 MiB
/// (so that 1 MiB less 13 KiB reads `1.0 MiB`, not `0 MiB`), whole MiB above.
pub fn mib(bytes: u64) -> String {
    let m = bytes as f64 / (1u64 << 20) as f64;
    if m < 100.0 {
        format!("{m:.1} MiB")
    } else {
        format!("{} MiB", bytes >> 20)
    }
}

/// A progress bar on stderr for `len` items (hidden when stderr is not a terminal or
/// the work is small).
pub fn progress(len: u64, msg: &'static str) -> ProgressBar {
    let pb = if len < 2000 {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(len)
    };
    pb.set_style(
        ProgressStyle::with_template("{msg:>14} [{bar:30}] {pos}/{len} ({eta})")
            .expect("static template")
            .progress_chars("=> "),
    );
    pb.set_message(msg);
    pb
}

/// The current Unix time in seconds (0 if the clock is before 1970).
pub fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Milliseconds, unrounded (for statistics).
pub fn millis(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The upper median (`v[len / 2]` after sorting) of floats or durations.
///
/// # Panics
/// If `v` is empty.
pub fn median<T: PartialOrd + Copy>(mut v: Vec<T>) -> T {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(core::cmp::Ordering::Equal));
    v[v.len() / 2]
}

/// Nearest-rank quantile of sorted values (NaN when empty).
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

/// Milliseconds with two decimals.
pub fn ms(d: std::time::Duration) -> f64 {
    (d.as_secs_f64() * 1e5).round() / 100.0
}

/// A serving command's admission limits (issue 32, `tacit_net::guard`), the same
/// flags on every server.
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct ServeLimitArgs {
    /// Most connections served at once (default: the server's own; always fitted
    /// below the process's file-descriptor limit).
    #[arg(long, value_name = "N")]
    pub max_connections: Option<usize>,
    /// Most connections one address (an IPv4 address, or an IPv6 /64) may hold at
    /// once; when the server is full, a less busy address takes the slot of the
    /// busiest address's oldest connection.
    #[arg(long, value_name = "N")]
    pub max_per_address: Option<usize>,
}

impl ServeLimitArgs {
    /// `defaults` with the flags given applied.
    pub fn apply(&self, defaults: tacit_net::guard::ServeLimits) -> Result<tacit_net::guard::ServeLimits> {
        let mut l = defaults;
        if let Some(n) = self.max_connections {
            anyhow::ensure!(n >= 1, "--max-connections must be at least 1");
            l.max_connections = n;
        }
        if let Some(n) = self.max_per_address {
            anyhow::ensure!(n >= 1, "--max-per-address must be at least 1");
            l.max_per_address = n;
        }
        Ok(l)
    }
}

/// Where mDNS runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum MdnsArg {
    /// All interfaces (the local network).
    All,
    /// Loopback only (for a single machine or a loopback-only network namespace).
    Loopback,
    /// No mDNS (senders need --peer).
    Off,
}

impl MdnsArg {
    pub(crate) fn scope(self) -> Option<tacit_net::mdns::Scope> {
        match self {
            MdnsArg::All => Some(tacit_net::mdns::Scope::All),
            MdnsArg::Loopback => Some(tacit_net::mdns::Scope::Loopback),
            MdnsArg::Off => None,
        }
    }
}

/// The error and its causes on one line, skipping a cause whose text the line
/// already holds (error types that print their source as part of their message).
pub fn one_line(e: &anyhow::Error) -> String {
    // A refused greeting names the peer and both sides already ("127.0.0.1:7900 is a
    // tacit discovery root, not a pros PSI server"): it stands alone.
    for cause in e.chain() {
        if let Some(g @ tacit_net::Error::Greeting(_)) = cause.downcast_ref::<tacit_net::Error>() {
            return escape_for_display(&g.to_string()).into_owned();
        }
    }
    let mut out = String::new();
    for cause in e.chain() {
        let s = cause.to_string();
        if out.contains(&s) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&s);
    }
    escape_for_display(&out.replace('\n', " ")).into_owned()
}

/// A peer-chosen string made safe to print (see [`tacit_wire::text`]).
pub fn sanitize(s: &str) -> String {
    escape_for_display(s).into_owned()
}

/// A Unix time in seconds as local ISO 8601 with the offset
/// ("2026-11-26T04:05:06+01:00"), for human output (issue 28, item 9); JSON keeps the
/// raw seconds and adds this string beside them. A time outside chrono's range is
/// printed as the raw seconds.
pub fn iso_local(unix: u64) -> String {
    i64::try_from(unix)
        .ok()
        .and_then(|s| chrono::DateTime::from_timestamp(s, 0))
        .map(|t| {
            t.with_timezone(&chrono::Local)
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, false)
        })
        .unwrap_or_else(|| format!("{unix} (Unix time)"))
}

/// Parses `--sessions`, one meaning for every serving command (issue 28, item 9): a
/// count N exits after N sessions, 0 exits as soon as the server is ready (after any
/// precomputation or table build: useful to precompute and store, or to check a
/// configuration), and `forever` (or omitting the flag) never stops. `forever` is
/// `Some(u64::MAX)`, a count no server reaches.
pub fn parse_sessions(s: &str) -> Result<u64, String> {
    match s.trim() {
        "forever" | "never-stop" => Ok(u64::MAX),
        t => t
            .parse()
            .map_err(|_| format!("{s:?} is neither a number of sessions nor `forever`")),
    }
}

/// Parses a size in bytes with an optional K, M, G or T suffix (powers of 1024;
/// `KiB`, `MB` and the like are read the same way).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(digits);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a size (examples: 500M, 4G)"))?;
    let shift = match unit
        .trim()
        .to_ascii_uppercase()
        .trim_end_matches('B')
        .trim_end_matches('I')
    {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        "T" => 40,
        _ => return Err(format!("{s:?} has an unknown unit (use K, M, G or T)")),
    };
    n.checked_mul(1u64 << shift)
        .ok_or_else(|| format!("{s:?} is too large"))
}

/// A random US-style phone number for the demo scenes' generated address books.
pub fn phone(rng: &mut tacit_crypto::rng::SecureRng) -> String {
    use rand_core::RngCore;
    format!("1555{:07}", rng.next_u32() % 10_000_000)
}
