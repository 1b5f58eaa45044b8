//! `tacit bench mpc engine`: triple rates against their floors, and the online phase
//! of aes_128 (one instance) and sha256 (1 024 instances) between two processes over
//! loopback against `AND depth × RTT + bytes / throughput`, all measured in one run.

use anyhow::{Context, Result, anyhow, bail};
use clap::{Args, Subcommand};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tacit_crypto::rng::SecureRng;
use tacit_crypto::sign::SigningKey;
use tacit_mpc::circuit::{LayeredCircuit, bristol};
use tacit_mpc::driver::{RunReport, SessionConfig, run};
use tacit_mpc::gmw::{PartyInputs, default_owners};
use tacit_mpc::prg::{Prg, Seed};
use tacit_mpc::triples::ot::OtSource;
use tacit_mpc::{Party, shipped};
use tacit_net::tls::SelfSigned;
use tacit_net::{FramedConn, FramedListener, NetConfig};

/// `tacit bench mpc …`
#[derive(Debug, Subcommand)]
pub enum MpcBenchCommand {
    /// Triples/s of the token and of OT extension against their floors; online time of
    /// aes_128 ×1 and sha256 ×1024 between two processes against their floors.
    #[command(after_help = "\
Examples:
  tacit bench mpc engine
  tacit bench mpc engine --json
  tacit bench mpc engine --rot-floor-bin \"$(bench/cryprot-rot.sh)\" --seec seec.json")]
    Engine(EngineArgs),
    /// The echo peer of the RTT and throughput floor (internal).
    #[command(hide = true)]
    Echo(EchoArgs),
    /// Tables 2 and 3 of the paper: scheduling per window and set intersection per σ
    /// and n, with token and OT-extension triples, sizes beside the paper's.
    #[command(after_help = "\
Examples:
  tacit bench mpc apps
  tacit bench mpc apps --json --plot mpc-apps.png
  tacit bench mpc apps --triples token --sigmas 32 --no-schedule")]
    Apps(super::apps_bench::AppsArgs),
    /// Party b of one application session (internal).
    #[command(hide = true)]
    AppPeer(super::apps_bench::AppPeerArgs),
}

/// Options of `bench mpc engine`.
#[derive(Debug, Args)]
pub struct EngineArgs {
    /// log₂ of the triples per token fill for its rate (the median of 3 × --runs
    /// fills, at least nine, after one warm-up fill).
    #[arg(long, default_value_t = 24)]
    token_log: u8,
    /// Instances of aes_128 whose OT-extension setup gives the OT triple rate.
    #[arg(long, default_value_t = 1024)]
    ot_aes_instances: usize,
    /// Instances of sha256.
    #[arg(long, default_value_t = 1024)]
    sha_instances: usize,
    /// Runs of each online measurement (the median is reported).
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// The cryprot-ot random-OT benchmark binary (bench/cryprot-rot.sh builds it); its
    /// rate is the OT floor. Without it the OT ratio is not computed.
    #[arg(long, value_name = "FILE")]
    rot_floor_bin: Option<PathBuf>,
    /// JSON written by bench/seec.sh (SEEC's times in this run's conditions).
    #[arg(long, value_name = "FILE")]
    seec: Option<PathBuf>,
    /// Microseconds both parties poll for a layer message before they sleep (`tacit mpc
    /// run --spin-us`); the loopback floor's round trip is measured the same way, and
    /// one more run of each circuit with 0 (sleep at once) is reported beside it.
    #[arg(long, value_name = "µS", default_value_t = 200)]
    spin_us: u64,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Options of the echo peer.
#[derive(Debug, Args)]
pub struct EchoArgs {
    /// Where the bench listens.
    #[arg(long)]
    connect: String,
    /// Poll for each frame this long before sleeping.
    #[arg(long, default_value_t = 0)]
    spin_us: u64,
}

pub fn run_cmd(c: MpcBenchCommand) -> Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    match c {
        MpcBenchCommand::Engine(a) => rt.block_on(engine(a)),
        MpcBenchCommand::Echo(a) => rt.block_on(echo(a)),
        MpcBenchCommand::Apps(a) => rt.block_on(super::apps_bench::apps(a)),
        MpcBenchCommand::AppPeer(a) => rt.block_on(super::apps_bench::peer(a)),
    }
}

async fn echo(a: EchoArgs) -> Result<()> {
    let cfg = NetConfig::default()
        .with_max_frame_at_least(8 << 20)
        .speaking(tacit_net::Protocol::Bench);
    let mut c = FramedConn::connect(a.connect.as_str(), &cfg).await?;
    let spin = Duration::from_micros(a.spin_us);
    loop {
        let f = match c.recv_spin(spin).await {
            Ok(f) => f,
            Err(tacit_net::Error::Closed) => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        match f.first() {
            Some(0) => c.send(&f).await?,
            _ => c.send(&[1]).await?,
        }
    }
}

struct Floor {
    /// Round trip of a small frame, both ends polling as the online phase does.
    rtt: Duration,
    /// The same with both ends sleeping until the frame arrives.
    rtt_parked: Duration,
    bytes_per_s: f64,
}

/// Median round trip of a 4-byte frame to an echo process, both ends polling for
/// `spin` (zero: sleeping at once).
async fn measure_rtt(exe: &Path, spin: Duration) -> Result<(Duration, FramedConn, Child)> {
    let cfg = NetConfig::default()
        .with_max_frame_at_least(8 << 20)
        .speaking(tacit_net::Protocol::Bench);
    let l = FramedListener::bind("127.0.0.1:0", &cfg).await?;
    let addr = l.local_addr()?;
    let child = Command::new(exe)
        .args(["bench", "mpc", "echo", "--connect", &addr.to_string()])
        .args(["--spin-us", &spin.as_micros().to_string()])
        .stdin(Stdio::null())
        .spawn()?;
    let mut c = l.accept().await?;
    let mut rtts = Vec::new();
    for i in 0..400 {
        let t = Instant::now();
        c.send(&[0, 1, 2, 3]).await?;
        c.recv_spin(spin).await?;
        if i >= 50 {
            rtts.push(t.elapsed());
        }
    }
    rtts.sort();
    Ok((rtts[rtts.len() / 2], c, child))
}

async fn measure_floor(exe: &Path, spin: Duration) -> Result<Floor> {
    let (rtt_parked, c, mut child) = measure_rtt(exe, Duration::ZERO).await?;
    drop(c);
    let _ = child.wait();
    let (rtt, mut c, mut child) = measure_rtt(exe, spin).await?;
    let big = vec![7u8; 4 << 20];
    let t = Instant::now();
    let rounds = 32;
    for _ in 0..rounds {
        c.send(&big).await?;
    }
    for _ in 0..rounds {
        c.recv().await?;
    }
    let bytes_per_s = (rounds * big.len()) as f64 / t.elapsed().as_secs_f64();
    drop(c);
    let _ = child.wait();
    Ok(Floor {
        rtt,
        rtt_parked,
        bytes_per_s,
    })
}

fn aes_ctr_floor() -> f64 {
    // Keystream the token needs: 5 bits per triple (a_A, b_A, a_B, b_B, c_B).
    let s = Seed([3; 16]);
    let mut buf = vec![0u64; 1 << 18];
    let mut best = f64::MAX;
    for _ in 0..5 {
        let mut p = Prg::new(&s, 1);
        let t = Instant::now();
        for _ in 0..16 {
            p.fill_words(&mut buf);
        }
        best = best.min(t.elapsed().as_secs_f64());
    }
    let bits = 16.0 * buf.len() as f64 * 64.0;
    bits / best / 5.0
}

fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

struct Peer {
    child: Child,
}

impl Peer {
    fn spawn(exe: &Path, args: &[String]) -> Result<Peer> {
        let child = Command::new(exe)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        Ok(Peer { child })
    }

    fn finish(self) -> Result<Value> {
        let out = self.child.wait_with_output()?;
        if !out.status.success() {
            bail!("peer failed: {}", String::from_utf8_lossy(&out.stderr).trim());
        }
        Ok(serde_json::from_slice(&out.stdout)?)
    }
}

struct Online {
    report: RunReport,
    peer: Value,
}

/// A token process for a bench, paired with an identity of the bench's own, its state
/// sealed in a scratch folder.
pub struct BenchToken {
    /// Its address.
    pub addr: String,
    /// The host key it is paired with.
    pub host: SelfSigned,
    /// Its link key's fingerprint.
    pub link: [u8; 32],
    /// The CA key party b trusts (hex).
    pub ca_hex: String,
    child: Child,
}

impl BenchToken {
    /// Manufactures a token in `dir` and starts `tacit mpc token serve` on it.
    pub async fn start(exe: &Path, dir: &crate::util::ScratchDir) -> Result<BenchToken> {
        use tacit_mpc::triples::token::card::{SealKey, TokenSpec, TokenState};
        let mut rng = SecureRng::from_os();
        let ca = SigningKey::generate(&mut rng);
        let host = SelfSigned::generate("tacit-host.invalid")?;
        let st = TokenState::manufacture(&ca, &TokenSpec::software("bench", host.fingerprint()?), &mut rng)?;
        let link = st.link_identity()?.fingerprint()?;
        let (seal, bytes) = SealKey::generate(&mut rng);
        let (state, key, guard) = (
            dir.join("token.state"),
            dir.join("token.seal"),
            dir.join("token.seal.guard"),
        );
        std::fs::write(&key, hex::encode(*bytes))?;
        super::cmd::write_token(&state, &seal, &guard, &st)?;
        let addr = format!("127.0.0.1:{}", free_port()?);
        let child = Command::new(exe)
            .args(["mpc", "token", "serve", "--state"])
            .arg(&state)
            .arg("--seal-key")
            .arg(&key)
            .args(["--listen", &addr, "--max-connections", "64"])
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        // Wait until it listens.
        for _ in 0..100 {
            if std::net::TcpStream::connect(&addr).is_ok() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Ok(BenchToken {
            addr,
            host,
            link,
            ca_hex: hex::encode(ca.verifying_key().to_bytes()),
            child,
        })
    }

    /// A link to the token (its key pinned) with an in-memory pool.
    pub async fn holder(
        &self,
    ) -> Result<tacit_mpc::triples::token::holder::TokenHolder<tacit_mpc::triples::token::holder::TcpTokenLink>> {
        let access = tacit_mpc::token::TokenAccess::pinned(self.addr.as_str(), &self.host, self.link)?;
        Ok(tacit_mpc::token::connect(&access).await?)
    }
}

impl Drop for BenchToken {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Party a's side of the channel in the benches: TLS with a fresh key (party b, a
/// child process, pins it), or plain TCP.
pub struct BenchChannel {
    /// Party a's key.
    pub id: SelfSigned,
    /// Party b's store (its own key).
    pub b_store: PathBuf,
}

impl BenchChannel {
    /// A fresh key for party a; party b's store in `dir`.
    pub fn new(dir: &crate::util::ScratchDir) -> Result<Self> {
        Ok(BenchChannel {
            id: SelfSigned::generate(super::cmd::PEER_TLS_NAME)?,
            b_store: dir.join("party-b.sqlite3"),
        })
    }

    /// Party b's channel arguments.
    pub fn peer_args(&self, tls: bool) -> Result<Vec<String>> {
        let mut v = vec!["--store".to_string(), self.b_store.display().to_string()];
        if tls {
            v.push("--pin".into());
            v.push(hex::encode(self.id.fingerprint()?));
        } else {
            v.push("--plain-tcp".into());
        }
        Ok(v)
    }

    /// Party a's handshake on an accepted connection (any key of party b), and the
    /// greeting (before party a's setup, which may take a while).
    pub async fn accept(&self, conn: FramedConn, tls: bool) -> Result<FramedConn> {
        if !tls {
            let mut conn = conn;
            conn.greet().await?;
            return Ok(conn);
        }
        let cfg = self.id.server_config_checking_clients(tacit_net::tls::any_key())?;
        Ok(conn.accept_tls(cfg).await?)
    }
}

/// Which channel a bench session runs over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wire {
    Tls,
    Plain,
}

#[allow(clippy::too_many_arguments)]
async fn session(
    exe: &Path,
    circuit_file: &Path,
    lc: &LayeredCircuit,
    n: usize,
    triples: &str,
    token: Option<&BenchToken>,
    ch: &BenchChannel,
    wire: Wire,
    spin: Duration,
) -> Result<Online> {
    let port = free_port()?;
    let addr = format!("127.0.0.1:{port}");
    // Party b is `tacit mpc run`: this side greets as party a does.
    let cfg = NetConfig::default().speaking(tacit_net::Protocol::MpcRun);
    let l = FramedListener::bind(addr.as_str(), &cfg).await?;
    let mut args: Vec<String> = [
        "mpc",
        "run",
        "--party",
        "b",
        "--connect",
        &addr,
        "--triples",
        triples,
        "--instances",
        &n.to_string(),
        "--random-inputs",
        "--json",
        "--spin-us",
        &spin.as_micros().to_string(),
        "--circuit",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.push(circuit_file.display().to_string());
    args.extend(ch.peer_args(wire == Wire::Tls)?);
    if let Some(t) = token {
        args.push("--trust-ca".into());
        args.push(t.ca_hex.clone());
        // The bench's token runs on this machine, as the party a it serves: fine for
        // timing, and exactly what a real deployment must not do (docs/mpc.md).
        args.push("--accept-software-token".into());
    }
    let peer = Peer::spawn(exe, &args)?;
    let conn = l.accept().await?;
    let mut conn = ch.accept(conn, wire == Wire::Tls).await?;
    let mut rng = SecureRng::from_os();
    let c = lc.circuit();
    let w0 = c.input_widths()[0] as usize;
    let inputs = PartyInputs {
        values: vec![
            Some((0..n).map(|j| (0..w0).map(|k| (j + k) % 3 == 0).collect()).collect()),
            None,
        ],
    };
    let cfg_s = SessionConfig::new(n, default_owners(2)).with_spin(spin);
    let report = match token {
        Some(t) => {
            let mut holder = t.holder().await?;
            // Init phase first (not part of the setup).
            holder.fill(lc.and_gates() * n, &mut |_, _| {}).await?;
            run(&mut conn, lc, Party::A, &cfg_s, &inputs, &mut holder, &mut rng).await?
        }
        None => {
            let mut src = OtSource::new(SecureRng::from_os());
            run(&mut conn, lc, Party::A, &cfg_s, &inputs, &mut src, &mut rng).await?
        }
    };
    drop(conn);
    let peer = peer.finish()?;
    Ok(Online { report, peer })
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

async fn engine(a: EngineArgs) -> Result<()> {
    let exe = std::env::current_exe()?;
    let dir = crate::util::ScratchDir::new("bench-mpc")?;
    let aes_file = dir.join("aes_128.txt");
    let sha_file = dir.join("sha256.txt");
    std::fs::write(&aes_file, shipped::AES_128)?;
    std::fs::write(&sha_file, shipped::SHA256)?;
    let aes = LayeredCircuit::new(bristol::parse(shipped::AES_128)?);
    let sha = LayeredCircuit::new(bristol::parse(shipped::SHA256)?);

    // A token process (TLS link, paired with this process's host key).
    let token = BenchToken::start(&exe, &dir).await?;
    let ch = BenchChannel::new(&dir)?;

    // 1. Token triples/s (init phase, over the TLS link) against the AES-128-CTR floor.
    let floor_aes = aes_ctr_floor();
    let mut holder = token.holder().await?;
    let nt = 1usize << a.token_log;
    // One warm-up fill, then the median of 3 × runs (at least nine; each a fresh
    // sequence; one fill of 2^24 takes a few milliseconds, so single fills scatter).
    holder.fill(nt, &mut |_, _| {}).await?;
    let mut fills = Vec::new();
    for _ in 0..3 * a.runs.max(3) {
        holder.pool = tacit_mpc::triples::token::holder::Pool::in_memory();
        let t = Instant::now();
        holder.fill(nt, &mut |_, _| {}).await?;
        fills.push(t.elapsed());
    }
    fills.sort();
    let token_time = fills[fills.len() / 2];
    let token_rate = nt as f64 / token_time.as_secs_f64();
    drop(holder);

    // 2. Loopback floor.
    let spin = Duration::from_micros(a.spin_us);
    let floor = measure_floor(&exe, spin).await?;

    // 3. Online, token triples, over TLS and over plain TCP alternately (the same
    //    machine state for both); then once each over TLS with both parties sleeping.
    let (mut aes_tls, mut aes_plain, mut sha_tls, mut sha_plain) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let aes_run = |wire, spin| session(&exe, &aes_file, &aes, 1, "token", Some(&token), &ch, wire, spin);
    let sha_run = |wire, spin| {
        session(
            &exe,
            &sha_file,
            &sha,
            a.sha_instances,
            "token",
            Some(&token),
            &ch,
            wire,
            spin,
        )
    };
    for i in 0..a.runs {
        // Alternate which channel goes first.
        let order = if i % 2 == 0 {
            [Wire::Tls, Wire::Plain]
        } else {
            [Wire::Plain, Wire::Tls]
        };
        for w in order {
            let r = aes_run(w, spin).await.context("aes_128 ×1")?;
            if w == Wire::Tls { &mut aes_tls } else { &mut aes_plain }.push(r);
        }
        for w in order {
            let r = sha_run(w, spin).await.context("sha256 ×N")?;
            if w == Wire::Tls { &mut sha_tls } else { &mut sha_plain }.push(r);
        }
    }
    let aes_parked = aes_run(Wire::Tls, Duration::ZERO).await.context("aes_128 ×1, parked")?;
    let sha_parked = sha_run(Wire::Tls, Duration::ZERO).await.context("sha256 ×N, parked")?;
    drop(token);

    // 4. OT triples/s: the setup of aes_128 × ot_aes_instances with OT extension.
    let ot = session(
        &exe,
        &aes_file,
        &aes,
        a.ot_aes_instances,
        "ot",
        None,
        &ch,
        Wire::Tls,
        spin,
    )
    .await
    .context("OT setup")?;
    let ot_triples = ot.report.triples as f64;
    let ot_rate = ot_triples / ot.report.setup.time.as_secs_f64();
    let rot_floor = match &a.rot_floor_bin {
        Some(bin) => Some(cryprot_rate(bin)?),
        None => None,
    };

    let med = |v: &Vec<Online>, f: &dyn Fn(&Online) -> f64| -> f64 {
        let mut x: Vec<f64> = v.iter().map(f).collect();
        x.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
        x[x.len() / 2]
    };
    let fl = |lc: &LayeredCircuit, o: &Online| -> f64 {
        let bytes = o.report.online.bytes_sent.max(o.report.online.bytes_received) as f64;
        lc.and_depth() as f64 * floor.rtt.as_secs_f64() * 1e3 + bytes / floor.bytes_per_s * 1e3
    };
    let online = |o: &Online| ms(o.report.online.time);
    let aes_online = med(&aes_tls, &online);
    let sha_online = med(&sha_tls, &online);
    let aes_online_plain = med(&aes_plain, &online);
    let sha_online_plain = med(&sha_plain, &online);
    let aes_floor = fl(&aes, &aes_tls[0]);
    let sha_floor = fl(&sha, &sha_tls[0]);
    let aes_setup = med(&aes_tls, &|o| ms(o.report.setup.time));
    let sha_setup = med(&sha_tls, &|o| ms(o.report.setup.time));
    let aes_setup_plain = med(&aes_plain, &|o| ms(o.report.setup.time));
    let sha_setup_plain = med(&sha_plain, &|o| ms(o.report.setup.time));
    let seec: Value = match &a.seec {
        Some(p) => serde_json::from_slice(&std::fs::read(p).with_context(|| format!("reading {}", p.display()))?)?,
        None => json!({}),
    };
    let phase = |o: &Online| {
        json!({
            "setup": {"ms": ms(o.report.setup.time), "hello_wait_ms": ms(o.report.hello_wait), "bytes_sent": o.report.setup.bytes_sent, "bytes_received": o.report.setup.bytes_received},
            "online": {"ms": ms(o.report.online.time), "compute_ms": ms(o.report.online_compute), "rounds": o.report.online.rounds, "bytes_sent": o.report.online.bytes_sent, "bytes_received": o.report.online.bytes_received},
            "peer_online_ms": o.peer["online_ms"], "peer_online_compute_ms": o.peer["online_compute_ms"], "peer_setup_ms": o.peer["setup_ms"],
        })
    };
    let all = |v: &Vec<Online>| v.iter().map(online).collect::<Vec<f64>>();
    let mut j = json!({
        "channel": "tls",
        "aes_ctr_floor_triples_per_s": floor_aes,
        "token_triples": nt,
        "token_init_ms": ms(token_time),
        "token_init_bytes": nt / 8,
        "token_triples_per_s": token_rate,
        "token_vs_aes_floor": token_rate / floor_aes,
        "ot_triples": ot_triples,
        "ot_setup_ms": ms(ot.report.setup.time),
        "ot_setup_bytes_sent": ot.report.setup.bytes_sent,
        "ot_triples_per_s": ot_rate,
        "loopback_rtt_us": floor.rtt.as_secs_f64() * 1e6,
        "loopback_rtt_parked_us": floor.rtt_parked.as_secs_f64() * 1e6,
        "spin_us": a.spin_us,
        "aes128_online_parked_ms": ms(aes_parked.report.online.time),
        "sha256_x1024_online_parked_ms": ms(sha_parked.report.online.time),
        "loopback_bytes_per_s": floor.bytes_per_s,
        "aes128_and_gates": aes.and_gates(), "aes128_and_depth": aes.and_depth(),
        "sha256_and_gates": sha.and_gates(), "sha256_and_depth": sha.and_depth(),
        "sha256_instances": a.sha_instances,
        "runs": a.runs,
    });
    let more = json!({
        "aes128_online_ms": aes_online,
        "aes128_online_plain_ms": aes_online_plain,
        "aes128_online_tls_vs_plain": aes_online / aes_online_plain,
        "aes128_online_runs_tls_ms": all(&aes_tls),
        "aes128_online_runs_plain_ms": all(&aes_plain),
        "aes128_setup_ms": aes_setup,
        "aes128_setup_plain_ms": aes_setup_plain,
        "aes128_online_floor_ms": aes_floor,
        "aes128_online_vs_floor": aes_online / aes_floor,
        "sha256_x1024_online_ms": sha_online,
        "sha256_x1024_online_plain_ms": sha_online_plain,
        "sha256_x1024_online_tls_vs_plain": sha_online / sha_online_plain,
        "sha256_x1024_online_runs_tls_ms": all(&sha_tls),
        "sha256_x1024_online_runs_plain_ms": all(&sha_plain),
        "sha256_x1024_setup_ms": sha_setup,
        "sha256_x1024_setup_plain_ms": sha_setup_plain,
        "sha256_x1024_online_floor_ms": sha_floor,
        "sha256_x1024_online_vs_floor": sha_online / sha_floor,
        "aes128_phases": phase(&aes_tls[0]),
        "sha256_x1024_phases": phase(&sha_tls[0]),
    });
    if let (Value::Object(m), Value::Object(more)) = (&mut j, more) {
        m.extend(more);
    }
    if let Some(r) = rot_floor {
        j["cryprot_rot_per_s"] = json!(r);
        j["ot_triples_vs_rot_floor"] = json!(ot_rate / (r / 2.0));
    }
    for k in [
        "seec_aes128_online_ms",
        "seec_aes128_setup_ms",
        "seec_sha256_x1024_online_ms",
        "seec_sha256_x1024_setup_ms",
    ] {
        if let Some(v) = seec.get(k) {
            j[k] = v.clone();
        }
    }
    if let Some(s) = seec.get("seec_aes128_online_ms").and_then(|v| v.as_f64()) {
        j["aes128_online_vs_seec"] = json!(aes_online / s);
        j["aes128_online_plain_vs_seec"] = json!(aes_online_plain / s);
    }
    if let Some(s) = seec.get("seec_sha256_x1024_online_ms").and_then(|v| v.as_f64()) {
        j["sha256_x1024_online_vs_seec"] = json!(sha_online / s);
        j["sha256_x1024_online_plain_vs_seec"] = json!(sha_online_plain / s);
    }
    drop(dir);
    if a.json {
        println!("{}", serde_json::to_string_pretty(&j)?);
        return Ok(());
    }
    println!("mpc engine, one run (ratios against floors measured in this run; the parties over TLS 1.3 unless said)");
    println!(
        "  token triples      {:>10.3} M/s   AES-128-CTR floor {:>8.1} M/s   ratio {:.2}   (2^{} triples in {:.0} ms, TLS link)",
        token_rate / 1e6,
        floor_aes / 1e6,
        token_rate / floor_aes,
        a.token_log,
        ms(token_time)
    );
    match rot_floor {
        Some(r) => println!(
            "  OT triples         {:>10.3} M/s   cryprot ROT/2     {:>8.2} M/s   ratio {:.2}",
            ot_rate / 1e6,
            r / 2e6,
            ot_rate / (r / 2.0)
        ),
        None => println!(
            "  OT triples         {:>10.3} M/s   (no --rot-floor-bin: floor not measured)",
            ot_rate / 1e6
        ),
    }
    println!(
        "  loopback           RTT {:.1} µs polling {} µs ({:.1} µs sleeping), {:.2} GB/s (plain TCP)",
        floor.rtt.as_secs_f64() * 1e6,
        a.spin_us,
        floor.rtt_parked.as_secs_f64() * 1e6,
        floor.bytes_per_s / 1e9
    );
    println!(
        "  aes_128 ×1         {} AND, depth {}: online {:.2} ms TLS, {:.2} ms plain TCP (TLS/plain {:.3}; floor {:.2} ms, TLS ratio {:.2}), setup {:.2} ms",
        aes.and_gates(),
        aes.and_depth(),
        aes_online,
        aes_online_plain,
        aes_online / aes_online_plain,
        aes_floor,
        aes_online / aes_floor,
        aes_setup
    );
    println!(
        "  sha256 ×{}       {} AND, depth {}: online {:.1} ms TLS, {:.1} ms plain TCP (TLS/plain {:.3}; floor {:.1} ms, TLS ratio {:.2}), setup {:.1} ms",
        a.sha_instances,
        sha.and_gates(),
        sha.and_depth(),
        sha_online,
        sha_online_plain,
        sha_online / sha_online_plain,
        sha_floor,
        sha_online / sha_floor,
        sha_setup
    );
    println!(
        "  sleeping at once   aes_128 online {:.2} ms, sha256 online {:.1} ms (one run each, TLS)",
        ms(aes_parked.report.online.time),
        ms(sha_parked.report.online.time)
    );
    if let Some(s) = seec.get("seec_aes128_online_ms").and_then(|v| v.as_f64()) {
        println!(
            "  SEEC aes_128 online {s:.1} ms: ours/SEEC = {:.3} (TLS), {:.3} (plain)",
            aes_online / s,
            aes_online_plain / s
        );
    }
    if let Some(s) = seec.get("seec_sha256_x1024_online_ms").and_then(|v| v.as_f64()) {
        println!(
            "  SEEC sha256 ×1024 online {s:.1} ms: ours/SEEC = {:.3} (TLS), {:.3} (plain)",
            sha_online / s,
            sha_online_plain / s
        );
    }
    Ok(())
}

fn cryprot_rate(bin: &Path) -> Result<f64> {
    let out = Command::new(bin)
        .args(["2", "22"])
        .output()
        .with_context(|| format!("running {}", bin.display()))?;
    if !out.status.success() {
        bail!("{} failed", bin.display());
    }
    let v: Value = serde_json::from_slice(&out.stdout).context("cryprot-rot output")?;
    v["rot_per_s"]
        .as_f64()
        .ok_or_else(|| anyhow!("cryprot-rot printed no rot_per_s"))
}
