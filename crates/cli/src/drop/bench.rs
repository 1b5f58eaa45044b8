//! `tacit bench drop`: PrivateDrop's authentication delay against the legacy AirDrop
//! flow (paper §6, Table 3, Fig. 6), precomputation against n (Fig. 10), and a load
//! mode. Receivers run in separate processes (`tacit bench drop-peer`) and are reached
//! over loopback HTTPS with mutual TLS.

use crate::util::plot;
use anyhow::{Context, Result, bail};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tacit_crypto::rng::SecureRng;
use tacit_crypto::{GroupId, P256, PrimeGroup, Ristretto255};
use tacit_drop::DropParams;
use tacit_drop::ca::{CertificateAuthority, DeviceEnrollment, DropIdentity, MemoryRegistry};
use tacit_drop::protocol::{AddressBook, Discoverability, Peer};
use tacit_drop::records::CaPublicKey;
use tacit_drop::transport::{self, Limits, ReceiverConfig, SenderConfig, Timings};
use tacit_psi::{Reuse, Sender, SenderKey, SenderPrecomputation};

/// Options of `bench drop`.
#[derive(Debug, Args)]
pub struct DropBenchArgs {
    /// m values (identifiers per account), comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = [1u32, 10, 20])]
    ids: Vec<u32>,
    /// n values (address-book entries), comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = [100u32, 1000, 5000, 10_000, 15_000])]
    contacts: Vec<u32>,
    /// Runs per grid point, scheduled round-robin over the points (paper §6.2); in
    /// load mode, the number of concurrent senders.
    #[arg(long, default_value_t = 20)]
    runs: usize,
    /// Load mode: RUNS senders authenticate concurrently against one receiver (first
    /// --ids and --contacts value).
    #[arg(long)]
    load: bool,
    /// The group.
    #[arg(long, default_value = "ristretto255", value_parser = |s: &str| s.parse::<GroupId>())]
    group: GroupId,
    /// Where the JSON and the PNG plots go.
    #[arg(long, default_value = "tacit-bench-drop")]
    out: PathBuf,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Receivers compute their DO3 answer only after M2 (`drop receive --work-first`)
    /// instead of while the sender computes DO2.
    #[arg(long)]
    work_first: bool,
}

/// The receiver process of the benchmark (internal).
#[derive(Debug, Args)]
pub struct DropPeerArgs {
    /// The receiver's identity (stored encoding).
    #[arg(long)]
    identity: PathBuf,
    /// Its address book, one entry per line.
    #[arg(long)]
    book: PathBuf,
    /// The CA public key, hex.
    #[arg(long)]
    ca_key: String,
    /// The group.
    #[arg(long, value_parser = |s: &str| s.parse::<GroupId>())]
    group: GroupId,
    /// Compute the DO3 answer only after M2.
    #[arg(long)]
    work_first: bool,
}

use crate::util::now_unix as now;

/// A PSI sender over `book` that may answer any number of sessions: one key and
/// precomputation per process (the bench measures the online delay; the paper also
/// precomputes). Cloning costs one copy of the precomputed list.
fn epoch_supply<G: PrimeGroup>(
    params: &DropParams,
    book: &AddressBook,
) -> Result<impl Fn() -> tacit_drop::Result<Sender<G>> + Send + Sync + 'static> {
    let mut rng = SecureRng::from_os();
    let key = SenderKey::<G>::generate(&mut rng, 1);
    let pre = SenderPrecomputation::compute(&params.psi, &key, book.entries(), Reuse::WithinEpoch, &mut rng)?;
    let psi = params.psi;
    Ok(move || {
        let shared = pre
            .share()
            .ok_or_else(|| tacit_drop::Error::InvalidParams("a fresh-per-session precomputation".into()))?;
        Ok(Sender::new(&psi, key.clone(), shared)?)
    })
}

pub fn run_peer(a: DropPeerArgs) -> Result<()> {
    match a.group {
        GroupId::Ristretto255 => peer::<Ristretto255>(a),
        GroupId::P256 => peer::<P256>(a),
    }
}

fn peer<G: PrimeGroup>(a: DropPeerArgs) -> Result<()> {
    let identity = Arc::new(DropIdentity::<G>::from_bytes(&std::fs::read(&a.identity)?)?);
    let entries: Vec<String> = std::fs::read_to_string(&a.book)?.lines().map(str::to_string).collect();
    let book = Arc::new(AddressBook::new(&entries));
    let ca = crate::drop::ca::parse_ca_key(&a.ca_key)?;
    let supply = tacit_drop::supply::BookSupply::spawn(epoch_supply::<G>(&identity.params, &book)?, 2);
    let cfg = Arc::new(ReceiverConfig {
        identity,
        book,
        ca,
        revocations: tacit_drop::revocation::Revocations::new(),
        mode: Discoverability::Everyone,
        name: "bench receiver".into(),
        dir: std::env::temp_dir(),
        legacy: true,
        limits: Limits {
            prepare_answer: !a.work_first,
            // Load mode: hundreds of senders from one address and one account.
            start_psi_per_minute: 0,
            connections: tacit_net::guard::ServeLimits {
                max_connections: 4096,
                max_per_address: 4096,
                ..Limits::default().connections
            },
            ..Limits::default()
        },
        supply,
        decide: Arc::new(|_| false),
        events: Arc::new(|e| {
            if let transport::Event::Failed(why) = e {
                eprintln!("session failed: {why}");
            }
        }),
        capture: None,
    });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        eprintln!("listening on {}", l.local_addr()?);
        transport::serve(l, cfg, None).await?;
        anyhow::Ok(())
    })
}

/// A receiver process; killed on drop.
struct PeerProcess {
    child: Child,
    addr: String,
}

impl PeerProcess {
    fn spawn(identity: &Path, book: &Path, ca: &CaPublicKey, group: GroupId, work_first: bool) -> Result<Self> {
        let key: String = ca.0.to_bytes().iter().map(|b| format!("{b:02x}")).collect();
        let mut child = Command::new(std::env::current_exe()?)
            .args(["bench", "drop-peer", "--identity"])
            .arg(identity)
            .arg("--book")
            .arg(book)
            .args(["--ca-key", &key, "--group", group.name()])
            .args(work_first.then_some("--work-first"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .context("starting a receiver process")?;
        let mut lines = BufReader::new(child.stderr.take().context("receiver stderr")?).lines();
        let addr = loop {
            match lines.next() {
                Some(Ok(line)) => {
                    if let Some(a) = line.strip_prefix("listening on ") {
                        break a.trim().to_string();
                    }
                }
                _ => bail!("the receiver process exited before listening"),
            }
        };
        std::thread::spawn(move || {
            for line in lines.map_while(|l| l.ok()) {
                eprintln!("[receiver process] {line}");
            }
        });
        Ok(PeerProcess { child, addr })
    }

    /// The process's peak resident memory (VmHWM), in KiB.
    fn peak_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).ok()?;
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
    }
}

impl Drop for PeerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One grid point: a receiver process and the sender's state.
struct Point<G: PrimeGroup> {
    m: u32,
    n: u32,
    peer: PeerProcess,
    sender: Arc<SenderConfig<G>>,
    supply: Box<dyn Fn() -> tacit_drop::Result<Sender<G>> + Send + Sync>,
    private: Vec<Timings>,
    legacy: Vec<Timings>,
}

fn ids(prefix: &str, k: u32) -> Vec<String> {
    (0..k).map(|i| format!("{prefix}{i}@example.org")).collect()
}

fn book(n: u32, contact: &str) -> Vec<String> {
    let mut b: Vec<String> = (0..n.saturating_sub(1))
        .map(|j| format!("c{j}@contacts.example.org"))
        .collect();
    b.push(contact.to_string());
    b
}

fn enrol<G: PrimeGroup>(ca: &CertificateAuthority, params: &DropParams, ids: &[String]) -> Result<DropIdentity<G>> {
    let mut rng = SecureRng::from_os();
    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    let e = DeviceEnrollment::<G>::new(params, &refs, &mut rng)?;
    let issued = ca.enroll(e.request(), &|_| true, &mut MemoryRegistry::new(), now() - 5, &mut rng)?;
    Ok(e.finish(issued, &ca.public_key(), now())?)
}

fn setup_point<G: PrimeGroup>(
    ca: &CertificateAuthority,
    dir: &Path,
    m: u32,
    n: u32,
    work_first: bool,
) -> Result<Point<G>> {
    let params = DropParams::default().with_group(G::ID).with_bounds(m, n);
    let (s_ids, r_ids) = (ids("s", m), ids("r", m));
    let sender = enrol::<G>(ca, &params, &s_ids)?;
    let receiver = enrol::<G>(ca, &params, &r_ids)?;
    let s_book = AddressBook::new(&book(n, &r_ids[0]));
    let r_book = book(n, &s_ids[0]);
    let id_path = dir.join(format!("receiver-{m}-{n}.identity"));
    let book_path = dir.join(format!("receiver-{m}-{n}.book"));
    std::fs::write(&id_path, receiver.to_bytes().as_slice())?;
    std::fs::write(&book_path, r_book.join("\n"))?;
    let peer = PeerProcess::spawn(&id_path, &book_path, &ca.public_key(), G::ID, work_first)?;
    let supply = Box::new(epoch_supply::<G>(&params, &s_book)?);
    Ok(Point {
        m,
        n,
        peer,
        sender: Arc::new(SenderConfig {
            identity: Arc::new(sender),
            book: Arc::new(s_book),
            ca: ca.public_key(),
            revocations: tacit_drop::revocation::Revocations::new(),
            name: "bench sender".into(),
            limits: Limits::default(),
            events: Arc::new(|_| {}),
        }),
        supply,
        private: Vec::new(),
        legacy: Vec::new(),
    })
}

async fn one_private<G: PrimeGroup>(p: &Point<G>) -> Result<Timings> {
    let s = transport::authenticate(&p.peer.addr, p.sender.clone(), (p.supply)()?).await?;
    anyhow::ensure!(
        matches!(s.outcome.receiver, Peer::Contact { .. }) && !s.outcome.known_by_receiver.is_empty(),
        "the bench peers must authenticate as mutual contacts"
    );
    Ok(s.timings)
}

async fn one_legacy<G: PrimeGroup>(p: &Point<G>) -> Result<Timings> {
    let (peer, _, t) = transport::legacy_discover(&p.peer.addr, p.sender.clone()).await?;
    anyhow::ensure!(
        matches!(peer, Peer::Contact { .. }),
        "legacy bench peers must be contacts"
    );
    Ok(t)
}

use crate::util::quantile;

fn ms_sorted(ts: &[Timings], f: impl Fn(&Timings) -> Duration) -> Vec<f64> {
    let mut v: Vec<f64> = ts.iter().map(|t| f(t).as_secs_f64() * 1e3).collect();
    v.sort_by(|a, b| a.total_cmp(b));
    v
}

fn summary(ts: &[Timings]) -> serde_json::Value {
    let total = ms_sorted(ts, |t| t.total);
    serde_json::json!({
        "median_ms": quantile(&total, 0.5),
        "p5_ms": quantile(&total, 0.05),
        "p95_ms": quantile(&total, 0.95),
        "computation_ms": quantile(&ms_sorted(ts, |t| t.compute + t.peer_compute), 0.5),
        "transmission_ms": quantile(&ms_sorted(ts, |t| t.transmission), 0.5),
        "tls_ms": quantile(&ms_sorted(ts, |t| t.tls), 0.5),
        "runs": ts.len(),
    })
}

pub fn run(a: DropBenchArgs) -> Result<()> {
    anyhow::ensure!(a.runs >= 1, "--runs must be at least 1");
    anyhow::ensure!(
        !a.ids.is_empty() && !a.contacts.is_empty(),
        "--ids and --contacts need values"
    );
    // The senders run as `tacit drop send` does: one thread for the grid (a sender
    // talks to one receiver at a time; keeping hyper's connection task on the same
    // thread avoids cross-thread wake-ups, measured 0.3–0.8 ms less per
    // authentication here, mostly in transmission); two workers for the load mode's
    // many concurrent senders.
    let rt = if a.load {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()?
    } else {
        tokio::runtime::Builder::new_current_thread().enable_all().build()?
    };
    match a.group {
        GroupId::Ristretto255 => rt.block_on(bench::<Ristretto255>(&a)),
        GroupId::P256 => rt.block_on(bench::<P256>(&a)),
    }
}

fn bar(len: u64, msg: &'static str) -> ProgressBar {
    let pb = ProgressBar::new(len);
    pb.set_style(
        ProgressStyle::with_template("{msg:>16} [{bar:30}] {pos}/{len} ({eta})")
            .expect("static template")
            .progress_chars("=> "),
    );
    pb.set_message(msg);
    pb
}

async fn bench<G: PrimeGroup>(a: &DropBenchArgs) -> Result<()> {
    let dir = crate::util::ScratchDir::new("bench-drop")?;
    std::fs::create_dir_all(&a.out).with_context(|| format!("cannot create {}", a.out.display()))?;
    let ca = CertificateAuthority::generate(&mut SecureRng::from_os())?;
    let result = if a.load {
        load::<G>(a, &ca, dir.path()).await
    } else {
        grid::<G>(a, &ca, dir.path()).await
    };
    drop(dir);
    result
}

async fn grid<G: PrimeGroup>(a: &DropBenchArgs, ca: &CertificateAuthority, dir: &Path) -> Result<()> {
    let mut points = Vec::new();
    let pb = bar((a.ids.len() * a.contacts.len()) as u64, "setting up");
    for &m in &a.ids {
        for &n in &a.contacts {
            points.push(setup_point::<G>(ca, dir, m, n, a.work_first)?);
            pb.inc(1);
        }
    }
    pb.finish_and_clear();
    // One warm-up exchange per point and flow, not recorded.
    for p in &points {
        one_private(p).await?;
        one_legacy(p).await?;
    }
    let pb = bar((a.runs * points.len()) as u64, "measuring");
    for _ in 0..a.runs {
        for p in points.iter_mut() {
            let t = one_private(p).await?;
            p.private.push(t);
            let t = one_legacy(p).await?;
            p.legacy.push(t);
            pb.inc(1);
        }
    }
    pb.finish_and_clear();

    // Precomputation against n (Fig. 10): the address book of a sender with m = 10.
    let mut pre = Vec::new();
    let pb = bar(a.contacts.len() as u64, "precomputing");
    for &n in &a.contacts {
        let params = DropParams::default().with_group(G::ID).with_bounds(10, n);
        let entries = book(n, "x@example.org");
        let mut times = Vec::new();
        for _ in 0..3 {
            let mut rng = SecureRng::from_os();
            let key = SenderKey::<G>::generate(&mut rng, 1);
            let t = Instant::now();
            SenderPrecomputation::compute(&params.psi, &key, &entries, Reuse::FreshPerSession, &mut rng)?;
            times.push(t.elapsed().as_secs_f64() * 1e3);
        }
        times.sort_by(|x, y| x.total_cmp(y));
        pre.push((n, times[1]));
        pb.inc(1);
    }
    pb.finish_and_clear();
    // Least-squares slope through the points: ms per entry.
    let k = pre.len() as f64;
    let (sx, sy) = pre.iter().fold((0.0, 0.0), |(x, y), (n, t)| (x + *n as f64, y + t));
    let (mx, my) = (sx / k, sy / k);
    let (num, den) = pre.iter().fold((0.0, 0.0), |(nu, de), (n, t)| {
        let dx = *n as f64 - mx;
        (nu + dx * (t - my), de + dx * dx)
    });
    let slope = if den > 0.0 { num / den } else { f64::NAN };

    let rows: Vec<serde_json::Value> = points
        .iter()
        .map(|p| {
            let pd = summary(&p.private);
            let lg = summary(&p.legacy);
            let ratio = pd["median_ms"].as_f64().unwrap_or(f64::NAN) / lg["median_ms"].as_f64().unwrap_or(f64::NAN);
            serde_json::json!({"m": p.m, "n": p.n, "privatedrop": pd, "legacy": lg, "ratio_vs_legacy": ratio})
        })
        .collect();
    let out = serde_json::json!({
        "experiment": "drop",
        "group": G::ID.name(),
        "runs_per_point": a.runs,
        "schedule": "round-robin over grid points; PrivateDrop and legacy alternate",
        "points": rows,
        "precomputation": pre.iter().map(|(n, ms)| serde_json::json!({"n": n, "ms": ms})).collect::<Vec<_>>(),
        "precomputation_ms_per_entry": slope,
        "threads": rayon::current_num_threads(),
    });
    let json_path = a.out.join("drop.json");
    std::fs::write(&json_path, serde_json::to_string_pretty(&out)?)?;
    let fig6 = a.out.join("fig6_authentication_delay.png");
    let fig10 = a.out.join("fig10_precomputation.png");
    plot::auth_delay(&fig6, &rows)?;
    plot::precomputation(&fig10, &pre, slope)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    println!(
        "tacit bench drop — {} PrivateDrop vs legacy AirDrop over loopback HTTPS (mutual TLS), receivers in separate processes",
        G::ID
    );
    println!(
        "{} runs per point, round-robin; authentication delay = first request to authenticated result",
        a.runs
    );
    println!();
    println!(
        "{:>3} {:>6} | {:>27} | {:>7} {:>7} {:>6} | {:>27} | {:>6}",
        "m", "n", "PrivateDrop median [p5, p95]", "compute", "transm.", "TLS", "legacy median [p5, p95]", "ratio"
    );
    for r in &rows {
        let (pd, lg) = (&r["privatedrop"], &r["legacy"]);
        let f = |v: &serde_json::Value, k: &str| v[k].as_f64().unwrap_or(f64::NAN);
        println!(
            "{:>3} {:>6} | {:>8.2} ms [{:>6.2}, {:>6.2}] | {:>7.2} {:>7.2} {:>6.2} | {:>8.2} ms [{:>6.2}, {:>6.2}] | {:>5.2}×",
            r["m"].as_u64().unwrap_or(0),
            r["n"].as_u64().unwrap_or(0),
            f(pd, "median_ms"),
            f(pd, "p5_ms"),
            f(pd, "p95_ms"),
            f(pd, "computation_ms"),
            f(pd, "transmission_ms"),
            f(pd, "tls_ms"),
            f(lg, "median_ms"),
            f(lg, "p5_ms"),
            f(lg, "p95_ms"),
            r["ratio_vs_legacy"].as_f64().unwrap_or(f64::NAN)
        );
    }
    println!();
    println!("precomputation of the address book (m = 10, all cores):");
    for (n, ms) in &pre {
        println!("  n = {n:>6}: {ms:>8.1} ms");
    }
    println!(
        "  slope: {:.4} ms per entry (paper: 0.331 ms on an iPhone 12, single-threaded)",
        slope
    );
    println!();
    println!(
        "wrote {}, {} and {}",
        json_path.display(),
        fig6.display(),
        fig10.display()
    );
    Ok(())
}

async fn load<G: PrimeGroup>(a: &DropBenchArgs, ca: &CertificateAuthority, dir: &Path) -> Result<()> {
    let (m, n) = (a.ids[0], a.contacts[0]);
    let point = Arc::new(setup_point::<G>(ca, dir, m, n, a.work_first)?);
    one_private(&point).await?;
    let idle_kib = point.peer.peak_kib();
    let t0 = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..a.runs {
        let p = point.clone();
        tasks.spawn(async move {
            let t = Instant::now();
            let r = one_private(&p).await;
            (r, t.elapsed())
        });
    }
    let mut latencies = Vec::new();
    let mut failures = Vec::new();
    while let Some(r) = tasks.join_next().await {
        match r {
            Ok((Ok(_), d)) => latencies.push(d.as_secs_f64() * 1e3),
            Ok((Err(e), _)) => failures.push(e.to_string()),
            Err(e) => failures.push(e.to_string()),
        }
    }
    let wall = t0.elapsed().as_secs_f64();
    latencies.sort_by(|x, y| x.total_cmp(y));
    let peak = point.peer.peak_kib();
    let out = serde_json::json!({
        "experiment": "drop-load",
        "group": G::ID.name(),
        "m": m,
        "n": n,
        "concurrent_senders": a.runs,
        "completed": latencies.len(),
        "failed": failures.len(),
        "wall_s": wall,
        "throughput_per_s": latencies.len() as f64 / wall,
        "latency_ms": {
            "p5": quantile(&latencies, 0.05),
            "median": quantile(&latencies, 0.5),
            "p95": quantile(&latencies, 0.95),
            "max": latencies.last().copied().unwrap_or(f64::NAN),
        },
        "receiver_peak_rss_kib": peak,
        "receiver_rss_after_warmup_kib": idle_kib,
        "first_failures": failures.iter().take(3).collect::<Vec<_>>(),
    });
    std::fs::write(a.out.join("drop-load.json"), serde_json::to_string_pretty(&out)?)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        println!(
            "tacit bench drop --load — {} concurrent senders against one receiver (m = {m}, n = {n})",
            a.runs
        );
        println!(
            "  completed {} / {}, {:.1} authentications/s over {:.2} s",
            latencies.len(),
            a.runs,
            latencies.len() as f64 / wall,
            wall
        );
        println!(
            "  latency p5 {:.1} ms, median {:.1} ms, p95 {:.1} ms",
            quantile(&latencies, 0.05),
            quantile(&latencies, 0.5),
            quantile(&latencies, 0.95)
        );
        println!(
            "  receiver peak memory {} KiB (after warm-up {} KiB)",
            peak.map_or("?".into(), |k| k.to_string()),
            idle_kib.map_or("?".into(), |k| k.to_string())
        );
        for f in failures.iter().take(3) {
            println!("  failure: {f}");
        }
    }
    anyhow::ensure!(failures.is_empty(), "{} of {} sessions failed", failures.len(), a.runs);
    Ok(())
}
