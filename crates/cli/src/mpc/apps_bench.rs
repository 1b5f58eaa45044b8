//! `tacit bench mpc apps`: the paper's Table 2 (availability and location-aware
//! scheduling per window: init, setup, online, ad-hoc) and Table 3 (SCS-WN set
//! intersection per σ and n: ad-hoc), two processes over loopback, with token and
//! OT-extension triples; |f| and d(f) beside the paper's; tacit's DH-PSI on the same
//! sets in the same run for context; a PNG in the style of the paper's Fig. 10.
//!
//! This process is party a (it listens and, with the token, holds the token link);
//! each session's party b is a child process (`tacit bench mpc app-peer`, hidden)
//! with its own random inputs.

use super::triples::{Source, TripleOpts};
use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use rand_core::RngCore;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tacit_crypto::rng::SecureRng;
use tacit_crypto::{PrimeGroup, Ristretto255};
use tacit_mpc::Party;
use tacit_mpc::apps::location::{self, LocationParams, Origin, SlotInput};
use tacit_mpc::apps::psi::{self, PreparedSet, PsiParams};
use tacit_mpc::apps::schedule::{Geo, Kind, ScheduleHello, ScheduleInput, Window, run_session};
use tacit_mpc::apps::{Size, paper};
use tacit_mpc::driver::RunReport;
use tacit_net::{FramedConn, FramedListener, NetConfig};

/// Options of `bench mpc apps`.
#[derive(Debug, Args)]
pub struct AppsArgs {
    /// Triple sources to measure.
    #[arg(long, value_enum, value_delimiter = ',', default_values = ["token", "ot"])]
    triples: Vec<SourceArg>,
    /// Element lengths σ of Table 3.
    #[arg(long, value_delimiter = ',', default_values_t = paper::PSI_BITS)]
    sigmas: Vec<usize>,
    /// Largest set size n of Table 3 (the paper's: 32 … 1 024).
    #[arg(long, default_value_t = 1024)]
    max_n: usize,
    /// Skip Table 2 (scheduling).
    #[arg(long)]
    no_schedule: bool,
    /// Skip Table 3 (set intersection).
    #[arg(long)]
    no_psi: bool,
    /// The PNG plot (Fig. 10 style: ad-hoc time of set intersection against n).
    #[arg(long, value_name = "FILE", default_value = "mpc-apps.png")]
    plot: PathBuf,
    /// Run the sessions over plain TCP instead of TLS 1.3 (to compare).
    #[arg(long)]
    plain_tcp: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// A triple source of the bench.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SourceArg {
    /// The token process.
    Token,
    /// OT extension.
    Ot,
}

impl SourceArg {
    fn name(self) -> &'static str {
        match self {
            SourceArg::Token => "token",
            SourceArg::Ot => "ot",
        }
    }
}

/// The application a peer runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AppArg {
    /// Availability scheduling.
    Availability,
    /// Location-aware scheduling.
    Location,
    /// SCS-WN set intersection.
    Psi,
}

/// Options of the hidden peer.
#[derive(Debug, Args)]
pub struct AppPeerArgs {
    #[arg(long)]
    connect: String,
    #[arg(long, value_enum)]
    app: AppArg,
    /// Slots (scheduling) or elements (set intersection).
    #[arg(long)]
    n: usize,
    #[arg(long, default_value_t = 32)]
    sigma: usize,
    /// Seed of the set (set intersection: both sides derive overlapping sets).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Party a's key (TLS; this peer uses a fresh key of its own).
    #[arg(long)]
    pin: Option<String>,
    /// Plain TCP.
    #[arg(long)]
    plain_tcp: bool,
    #[command(flatten)]
    triples: TripleOpts,
}

/// The common window of `n` slots (15-minute grid; the days are public).
fn window(n: usize) -> Window {
    let t0 = 1_767_000_000i64;
    let starts: Vec<i64> = (0..n as i64).map(|j| t0 + 900 * j).collect();
    let days = starts
        .iter()
        .map(|&s| (s - s.rem_euclid(86_400), s - s.rem_euclid(86_400) + 86_400))
        .collect();
    Window {
        starts,
        duration: 1800,
        days,
    }
}

fn geo(n: usize) -> Geo {
    Geo {
        params: LocationParams::new(n),
        origin: (52.52, 13.405),
        unit_m: 250.0,
    }
}

fn hello(app: AppArg, n: usize) -> ScheduleHello {
    let kind = match app {
        AppArg::Location => Kind::Location(geo(n)),
        _ => Kind::Availability,
    };
    ScheduleHello::new(kind, &window(n))
}

/// Random calendar inputs: three quarters of the slots free; origins within 10 km of
/// the centre, reaches of up to 7.5 km.
fn schedule_input(app: AppArg, n: usize, rng: &mut SecureRng) -> ScheduleInput {
    match app {
        AppArg::Location => {
            let p = LocationParams::new(n);
            let mid = 1u32 << (p.coord_bits - 1);
            let origin = |rng: &mut SecureRng| {
                (!rng.next_u32().is_multiple_of(4)).then(|| Origin {
                    x: mid - 20 + rng.next_u32() % 40,
                    y: mid - 20 + rng.next_u32() % 40,
                    reach: rng.next_u32() % (1 << p.reach_bits),
                })
            };
            ScheduleInput::Located(
                (0..n)
                    .map(|_| SlotInput {
                        prev: origin(rng),
                        next: origin(rng),
                    })
                    .collect(),
            )
        }
        _ => ScheduleInput::Free((0..n).map(|_| !rng.next_u32().is_multiple_of(4)).collect()),
    }
}

/// The two sets of a Table 3 point: `n` distinct values below `2^min(σ, 63)` each,
/// half of them common, as decimal strings (compared as they are, no hashing).
fn psi_sets(n: usize, sigma: usize, seed: u64) -> (Vec<String>, Vec<String>) {
    let mut rng = SecureRng::from_seed([seed as u8; 32]);
    let bound = if sigma >= 63 { u64::MAX >> 1 } else { 1u64 << sigma };
    let mut seen = std::collections::HashSet::new();
    let mut draw = |rng: &mut SecureRng| loop {
        let v = rng.next_u64() % bound;
        if seen.insert(v) {
            return v.to_string();
        }
    };
    let a: Vec<String> = (0..n).map(|_| draw(&mut rng)).collect();
    let b: Vec<String> = (0..n)
        .map(|i| if i % 2 == 0 { a[i].clone() } else { draw(&mut rng) })
        .collect();
    (a, b)
}

/// `tacit bench mpc app-peer`: party b of one session.
pub async fn peer(a: AppPeerArgs) -> Result<()> {
    let cfg = NetConfig::default().speaking(tacit_net::Protocol::Bench);
    let mut c = match (&a.pin, a.plain_tcp) {
        (_, true) => FramedConn::connect(a.connect.as_str(), &cfg).await?,
        (Some(pin), false) => {
            let me = tacit_net::tls::SelfSigned::generate(super::cmd::PEER_TLS_NAME)?;
            let pin = crate::util::channel::parse_fingerprint(pin)?;
            let client = me.client_config_checking_server(tacit_net::tls::pinned(pin))?;
            FramedConn::connect_tls(a.connect.as_str(), &cfg, client, super::cmd::PEER_TLS_NAME).await?
        }
        (None, false) => bail!("app-peer needs --pin or --plain-tcp"),
    };
    let mut src = a.triples.source(Party::B, None).await?;
    let mut rng = SecureRng::from_os();
    match a.app {
        AppArg::Psi => {
            let (_, b) = psi_sets(a.n, a.sigma, a.seed);
            let set = PreparedSet::new(&b, a.sigma)?;
            let r = psi::query(&mut c, &set, psi::MAX_SET, &mut src, &mut rng).await?;
            println!("{}", json!({"common": r.elements.len()}));
        }
        app => {
            let input = schedule_input(app, a.n, &mut rng);
            run_session(&mut c, Party::B, &hello(app, a.n), &input, &mut src, &mut rng).await?;
            println!("{}", json!({}));
        }
    }
    Ok(())
}

struct Point {
    init: Duration,
    /// Building the circuit and its layers (set intersection: after the hellos).
    build: Option<Duration>,
    report: RunReport,
}

fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

struct Env {
    exe: PathBuf,
    token: super::bench::BenchToken,
    ch: super::bench::BenchChannel,
    tls: bool,
}

/// One session: spawns party b, plays party a; with the token, the init phase (the
/// token generating `c_A` for `and_gates` triples) runs first and is timed apart.
async fn session(env: &Env, app: AppArg, n: usize, sigma: usize, src: SourceArg, and_gates: usize) -> Result<Point> {
    let addr = format!("127.0.0.1:{}", free_port()?);
    let l = FramedListener::bind(
        addr.as_str(),
        &NetConfig::default().speaking(tacit_net::Protocol::Bench),
    )
    .await?;
    let seed = 7;
    let mut args: Vec<String> = vec![
        "bench".into(),
        "mpc".into(),
        "app-peer".into(),
        "--connect".into(),
        addr.clone(),
        "--app".into(),
        format!("{app:?}").to_lowercase(),
        "--n".into(),
        n.to_string(),
        "--sigma".into(),
        sigma.to_string(),
        "--seed".into(),
        seed.to_string(),
        "--triples".into(),
        src.name().into(),
    ];
    if src == SourceArg::Token {
        args.push("--trust-ca".into());
        args.push(env.token.ca_hex.clone());
        // The bench's token runs on this machine, beside the party a it serves: fine
        // for timing, and what a real deployment must not do (docs/mpc.md).
        args.push("--accept-software-token".into());
    }
    if env.tls {
        args.push("--pin".into());
        args.push(hex::encode(env.ch.id.fingerprint()?));
    } else {
        args.push("--plain-tcp".into());
    }
    let child = Command::new(&env.exe)
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let conn = l.accept().await?;
    let mut conn = env.ch.accept(conn, env.tls).await?;
    let mut rng = SecureRng::from_os();
    let (mut source, init) = match src {
        SourceArg::Token => {
            let mut h = env.token.holder().await?;
            let t = Instant::now();
            h.fill(and_gates, &mut |_, _| {}).await?;
            (Source::Holder(Box::new(h)), t.elapsed())
        }
        SourceArg::Ot => (
            Source::Ot(tacit_mpc::triples::ot::OtSource::new(SecureRng::from_os())),
            Duration::ZERO,
        ),
    };
    let (report, build) = match app {
        AppArg::Psi => {
            let (a, _) = psi_sets(n, sigma, seed);
            let set = PreparedSet::new(&a, sigma)?;
            let r = psi::serve(&mut conn, &set, psi::MAX_SET, &mut source, &mut rng).await?;
            (r.run, Some(r.build))
        }
        app => {
            let input = schedule_input(app, n, &mut rng);
            let r = run_session(&mut conn, Party::A, &hello(app, n), &input, &mut source, &mut rng).await?;
            (r.1, None)
        }
    };
    drop(conn);
    let out = child.wait_with_output()?;
    if !out.status.success() {
        bail!("peer failed: {}", String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(Point { init, build, report })
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// tacit's DH-PSI (semi-honest, ristretto255) on the same sets, in one process:
/// both precomputations and the online exchange.
fn dh_psi_ms(a: &[String], b: &[String]) -> Result<f64> {
    use tacit_psi::{
        PsiParams as DhParams, Receiver, ReceiverPrecomputation, Reuse, Security, Sender, SenderKey,
        SenderPrecomputation,
    };
    let mut rng = SecureRng::from_os();
    let params = DhParams::new(Security::SemiHonest)
        .with_group(Ristretto255::ID)
        .with_bounds(b.len() as u32, a.len() as u32);
    let t = Instant::now();
    let key = SenderKey::<Ristretto255>::generate(&mut rng, 1);
    let pre = SenderPrecomputation::compute(&params, &key, a, Reuse::WithinEpoch, &mut rng)?;
    let sender = Sender::new(&params, key, pre)?;
    let rpre = ReceiverPrecomputation::<Ristretto255>::compute(&params, b, &mut rng)?;
    let (waiting, req) = Receiver::start(&rpre);
    let resp = sender.respond(&req, &mut rng)?;
    let got = waiting.on_response(&resp)?;
    std::hint::black_box(got);
    Ok(ms(t.elapsed()))
}

fn row(
    kind: &str,
    label: &str,
    src: SourceArg,
    size: Size,
    paper_gates: Option<usize>,
    paper_depth: Option<usize>,
    p: &Point,
) -> Value {
    let setup = ms(p.report.setup.time);
    let online = ms(p.report.online.time);
    json!({
        "app": kind,
        "point": label,
        "triples": src.name(),
        "and_gates": size.and_gates,
        "paper_and_gates": paper_gates,
        "depth": size.depth,
        "paper_depth": paper_depth,
        "init_ms": ms(p.init),
        "build_ms": p.build.map(ms),
        "setup_ms": setup,
        "hello_wait_ms": ms(p.report.hello_wait),
        "online_ms": online,
        "adhoc_ms": setup + online,
        "online_rounds": p.report.online.rounds,
        "setup_bytes": p.report.setup.bytes_sent + p.report.setup.bytes_received,
        "online_bytes": p.report.online.bytes_sent + p.report.online.bytes_received,
    })
}

/// `tacit bench mpc apps`.
pub async fn apps(a: AppsArgs) -> Result<()> {
    let exe = std::env::current_exe()?;
    let dir = crate::util::ScratchDir::new("bench-mpc-apps")?;
    let token = super::bench::BenchToken::start(&exe, &dir).await?;
    let env = Env {
        exe,
        token,
        ch: super::bench::BenchChannel::new(&dir)?,
        tls: !a.plain_tcp,
    };
    let r = measure(&a, &env).await;
    drop(env);
    drop(dir);
    let (t2, t3) = r?;
    report(&a, &t2, &t3)
}

async fn measure(a: &AppsArgs, env: &Env) -> Result<(Vec<Value>, Vec<Value>)> {
    let mut t2 = Vec::new();
    if !a.no_schedule {
        for (label, n) in paper::WINDOWS {
            for (app, kind) in [(AppArg::Availability, "availability"), (AppArg::Location, "location")] {
                let (size, pg, pd) = match app {
                    AppArg::Availability => (
                        Size { and_gates: n, depth: 1 },
                        paper::availability(n).map(|s| s.and_gates),
                        Some(1),
                    ),
                    _ => {
                        let p = paper::location(n);
                        (
                            location::size(&LocationParams::new(n))?,
                            p.map(|s| s.and_gates),
                            p.map(|s| s.depth),
                        )
                    }
                };
                for &src in &a.triples {
                    if !a.json {
                        eprintln!("bench mpc apps: {kind} {label} ({n} slots), {} triples…", src.name());
                    }
                    let p = session(env, app, n, 0, src, size.and_gates)
                        .await
                        .with_context(|| format!("{kind} {label} with {} triples", src.name()))?;
                    let mut v = row(kind, label, src, size, pg, pd, &p);
                    if let Some((i, s, o, h)) = paper::scheduling_times_s(app == AppArg::Location, n) {
                        v["paper_s"] = json!({"init": i, "setup": s, "online": o, "adhoc": h});
                    }
                    t2.push(v);
                }
            }
        }
    }
    let mut t3 = Vec::new();
    if !a.no_psi {
        for &sigma in &a.sigmas {
            for n in paper::PSI_SIZES.into_iter().filter(|&n| n <= a.max_n) {
                let size = psi::size(&PsiParams { sigma, n_a: n, n_b: n })?;
                let (sa, sb) = psi_sets(n, sigma, 7);
                let dh = dh_psi_ms(&sa, &sb)?;
                for &src in &a.triples {
                    if !a.json {
                        eprintln!(
                            "bench mpc apps: set intersection σ = {sigma}, n = {n}, {} triples…",
                            src.name()
                        );
                    }
                    let p = session(env, AppArg::Psi, n, sigma, src, size.and_gates)
                        .await
                        .with_context(|| format!("set intersection σ = {sigma}, n = {n}"))?;
                    let mut v = row(
                        "psi",
                        &format!("sigma{sigma}_n{n}"),
                        src,
                        size,
                        paper::psi(sigma, n),
                        None,
                        &p,
                    );
                    v["sigma"] = json!(sigma);
                    v["n"] = json!(n);
                    v["paper_adhoc_s"] = json!(paper::psi_adhoc_s(sigma, n));
                    v["dh_psi_ms"] = json!(dh);
                    t3.push(v);
                }
            }
        }
    }
    Ok((t2, t3))
}

fn f(v: &Value, k: &str) -> f64 {
    v[k].as_f64().unwrap_or(f64::NAN)
}

fn report(a: &AppsArgs, t2: &[Value], t3: &[Value]) -> Result<()> {
    let le_paper = t2.iter().chain(t3).all(|v| {
        v["paper_and_gates"]
            .as_u64()
            .is_none_or(|p| v["and_gates"].as_u64().unwrap_or(u64::MAX) <= p)
    });
    if !t3.is_empty() {
        let mut series: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
        // One curve per σ (token triples when measured; the plot has five colours),
        // then the paper's two σ = 32 curves.
        let shown = if a.triples.contains(&SourceArg::Token) {
            "token"
        } else {
            "ot"
        };
        for v in t3.iter().filter(|v| v["triples"] == shown) {
            let name = format!("σ = {}, {}", v["sigma"], v["triples"].as_str().unwrap_or("?"));
            let pt = (f(v, "n"), f(v, "adhoc_ms") / 1e3);
            match series.iter_mut().find(|s| s.0 == name) {
                Some(s) => s.1.push(pt),
                None => series.push((name, vec![pt])),
            }
        }
        // The paper's Fig. 10 curves for σ = 32, for comparison.
        if t3.iter().any(|v| v["sigma"] == 32) {
            let max_n = t3.iter().map(|v| f(v, "n")).fold(0.0, f64::max);
            let ours: Vec<(f64, f64)> = paper::PSI_SIZES
                .iter()
                .filter(|&&n| n as f64 <= max_n)
                .filter_map(|&n| paper::psi_adhoc_s(32, n).map(|t| (n as f64, t)))
                .collect();
            let hek: Vec<(f64, f64)> = [(128.0, 1.0), (256.0, 2.2), (512.0, 4.95), (1024.0, 10.5)]
                .into_iter()
                .filter(|p| p.0 <= max_n)
                .collect();
            series.push(("paper σ = 32, token (phones)".into(), ours));
            if !hek.is_empty() {
                series.push(("HEK12 σ = 32 (desktop PCs)".into(), hek));
            }
        }
        crate::util::plot::lines(
            &a.plot,
            "SCS-WN set intersection, ad-hoc time (setup + online), two processes over loopback",
            "elements per party n",
            "seconds",
            &series,
            true,
        )?;
    }
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({
                "experiment": "mpc_apps",
                "channel": if a.plain_tcp { "plain" } else { "tls" },
                "table2": t2,
                "table3": t3,
                "and_gates_le_paper": le_paper,
                "plot": a.plot.display().to_string(),
            }))?
        );
        return Ok(());
    }
    println!(
        "tacit bench mpc apps — two processes over loopback ({}); paper figures (phones) in brackets",
        if a.plain_tcp { "plain TCP" } else { "TLS 1.3" }
    );
    if !t2.is_empty() {
        println!();
        println!("Table 2: scheduling");
        println!(
            "{:<13} {:<6} {:<6} {:>10} {:>11} {:>6} {:>6} {:>10} {:>10} {:>10} {:>10} {:>9}",
            "function",
            "window",
            "triples",
            "|f|",
            "paper |f|",
            "d(f)",
            "paper",
            "init ms",
            "setup ms",
            "online ms",
            "ad-hoc ms",
            "paper s"
        );
        for v in t2 {
            println!(
                "{:<13} {:<6} {:<6} {:>10} {:>11} {:>6} {:>6} {:>10.1} {:>10.1} {:>10.1} {:>10.1} {:>9}",
                v["app"].as_str().unwrap_or(""),
                v["point"].as_str().unwrap_or(""),
                v["triples"].as_str().unwrap_or(""),
                v["and_gates"].to_string(),
                v["paper_and_gates"].to_string(),
                v["depth"].to_string(),
                v["paper_depth"].to_string(),
                f(v, "init_ms"),
                f(v, "setup_ms"),
                f(v, "online_ms"),
                f(v, "adhoc_ms"),
                v["paper_s"]["adhoc"].to_string(),
            );
        }
    }
    if !t3.is_empty() {
        println!();
        println!("Table 3: set intersection (SCS-WN), ad-hoc = setup + online; DH-PSI = tacit psi, one process");
        println!(
            "{:>4} {:>5} {:<6} {:>10} {:>11} {:>5} {:>10} {:>10} {:>10} {:>10} {:>8} {:>10}",
            "σ",
            "n",
            "triples",
            "|f|",
            "paper |f|",
            "d(f)",
            "init ms",
            "setup ms",
            "online ms",
            "ad-hoc ms",
            "paper s",
            "DH-PSI ms"
        );
        for v in t3 {
            println!(
                "{:>4} {:>5} {:<6} {:>10} {:>11} {:>5} {:>10.1} {:>10.1} {:>10.1} {:>10.1} {:>8} {:>10.1}",
                v["sigma"].to_string(),
                v["n"].to_string(),
                v["triples"].as_str().unwrap_or(""),
                v["and_gates"].to_string(),
                v["paper_and_gates"].to_string(),
                v["depth"].to_string(),
                f(v, "init_ms"),
                f(v, "setup_ms"),
                f(v, "online_ms"),
                f(v, "adhoc_ms"),
                v["paper_adhoc_s"].to_string(),
                f(v, "dh_psi_ms"),
            );
        }
        println!();
        println!("plot: {}", a.plot.display());
    }
    println!("every |f| ≤ the paper's: {}", if le_paper { "yes" } else { "NO" });
    Ok(())
}
