//! Helpers shared by every subsystem's commands, benches and demos: set files, the
//! store path, progress bars, clocks, quantiles and timings, and (in [`plot`]) PNG
//! plots.

pub mod channel;
pub mod plot;

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
/// The largest set file accepted.
pub const MAX_SET_FILE: u64 = 256 << 20;

/// Reads a set file: one element per line (UTF-8), surrounding whitespace trimmed,
/// empty lines skipped. Order is kept (duplicates are removed by the engines).
pub fn read_set(path: &Path) -> Result<Vec<String>> {
    let meta = std::fs::metadata(path).with_context(|| format!("cannot read set file {}", path.display()))?;
    if meta.len() > MAX_SET_FILE {
        bail!(
            "set file {} is {} bytes; the limit is {MAX_SET_FILE}",
            path.display(),
            meta.len()
        );
    }
    let bytes = std::fs::read(path).with_context(|| format!("cannot read set file {}", path.display()))?;
    let text = String::from_utf8(bytes).map_err(|e| {
        anyhow::anyhow!(
            "set file {} is not UTF-8 (first bad byte at offset {})",
            path.display(),
            e.utf8_error().valid_up_to()
        )
    })?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        if t.len() > MAX_ELEMENT_LEN {
            bail!(
                "{}:{}: element is {} bytes; the limit is {MAX_ELEMENT_LEN}",
                path.display(),
                i + 1,
                t.len()
            );
        }
        out.push(t.to_string());
    }
    Ok(out)
}

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

/// The memory (bytes) this process may still use: the least of the memory the
/// system has available (`MemAvailable`), what is left under its cgroup's limit, what
/// is left under its address-space limit (`ulimit -v`), and `TACIT_MEMORY_LIMIT` when
/// set (bytes, or with a K/M/G suffix). `None` where none of these is known.
pub fn memory_budget() -> Option<u64> {
    let read = |p: &str| std::fs::read_to_string(p).ok();
    let mut budget: Option<u64> = None;
    let mut cap = |v: Option<u64>| {
        if let Some(v) = v {
            budget = Some(budget.map_or(v, |b| b.min(v)));
        }
    };
    let kib_field = |text: &str, key: &str| {
        text.lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
            .map(|k| k * 1024)
    };
    if let Some(m) = read("/proc/meminfo") {
        cap(kib_field(&m, "MemAvailable:"));
    }
    if let (Some(max), Some(cur)) = (read("/sys/fs/cgroup/memory.max"), read("/sys/fs/cgroup/memory.current"))
        && let (Ok(max), Ok(cur)) = (max.trim().parse::<u64>(), cur.trim().parse::<u64>())
    {
        cap(Some(max.saturating_sub(cur)));
    }
    if let (Some(limits), Some(status)) = (read("/proc/self/limits"), read("/proc/self/status")) {
        let soft = limits
            .lines()
            .find(|l| l.starts_with("Max address space"))
            .and_then(|l| l.split_whitespace().nth(3))
            .and_then(|v| v.parse::<u64>().ok());
        if let (Some(soft), Some(used)) = (soft, kib_field(&status, "VmSize:")) {
            cap(Some(soft.saturating_sub(used)));
        }
    }
    if let Ok(v) = std::env::var("TACIT_MEMORY_LIMIT") {
        cap(parse_bytes(&v));
    }
    budget
}

/// `123`, `64K`, `512M`, `2G` as bytes.
fn parse_bytes(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mul) = match s.chars().last()? {
        'k' | 'K' => (&s[..s.len() - 1], 1u64 << 10),
        'm' | 'M' => (&s[..s.len() - 1], 1 << 20),
        'g' | 'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.trim().parse::<u64>().ok()?.checked_mul(mul)
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
