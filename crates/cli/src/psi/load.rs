//! `tacit bench psi --load`: a `tacit psi serve` process under K concurrent clients.
//!
//! The server runs as its own process (`--threads 1`, then `--threads 2`), the clients
//! as tasks of this process. Each client sends a request precomputed once and reads
//! the whole response; it verifies the first response of each run in full (proof,
//! unblinding, matching) and then only reads, so that on this 2-core machine the
//! load generator does not compete with the server for the cores it measures. The
//! configurations alternate round-robin, and a run with one client stalled (connected,
//! one byte sent, then silent) measures what a staller costs the others. The server's
//! peak memory is its `VmHWM` from `/proc`.

use crate::util::quantile;
use anyhow::{Context, Result, bail};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tacit_crypto::PrimeGroup;
use tacit_crypto::rng::SecureRng;
use tacit_net::{FramedConn, NetConfig};
use tacit_psi::{PsiParams, Receiver, ReceiverPrecomputation};

/// One configuration's measurement.
#[derive(Debug, Clone, serde::Serialize)]
pub struct LoadPoint {
    /// Server threads.
    pub threads: usize,
    /// Whether one client was stalled during the run.
    pub stalled: bool,
    /// Concurrent clients.
    pub clients: usize,
    /// Queries answered.
    pub queries: usize,
    /// Queries per second.
    pub throughput_qps: f64,
    /// Latency quantiles, milliseconds.
    pub p50_ms: f64,
    /// 95th percentile.
    pub p95_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// The server's peak resident memory, MiB.
    pub server_peak_mib: f64,
}

struct Server {
    child: Child,
    addr: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_server(
    exe: &std::path::Path,
    set: &std::path::Path,
    p: &PsiParams,
    threads: usize,
    clients: usize,
) -> Result<Server> {
    let mut child = Command::new(exe)
        .args(["psi", "serve", "--listen", "127.0.0.1:0", "--reuse", "epoch"])
        .arg("--set")
        .arg(set)
        .args(["--threads", &threads.to_string()])
        .args(["--max-clients", &(clients + 2).to_string()])
        .args(["--group", p.group.name()])
        .args(["--max-receiver", &p.max_receiver.to_string()])
        .args(["--max-sender", &p.max_sender.to_string()])
        .args(if p.security == tacit_psi::Security::SemiHonest {
            &["--semi-honest"][..]
        } else {
            &[][..]
        })
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .context("starting the server process")?;
    let mut lines = BufReader::new(child.stderr.take().context("server stderr")?).lines();
    let addr = loop {
        let Some(line) = lines.next() else {
            bail!("the server process exited before listening");
        };
        let line = line?;
        if let Some(i) = line.find("listening on ") {
            break line[i + "listening on ".len()..].trim().to_string();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    Ok(Server { child, addr })
}

fn peak_mib(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// Runs `queries` queries from `clients` concurrent clients; latencies in ms.
async fn drive<G: PrimeGroup>(
    addr: &str,
    pre: Arc<ReceiverPrecomputation<G>>,
    request: Arc<Vec<u8>>,
    net: NetConfig,
    clients: usize,
    queries: usize,
) -> Result<(Vec<f64>, Duration)> {
    // First, one full, verified query: the server answers correctly.
    let mut conn = FramedConn::connect(addr, &net).await?;
    let (waiting, req) = Receiver::start(&pre);
    conn.send(&req).await?;
    waiting
        .on_response(&conn.recv().await?)
        .context("the server's answer does not verify")?;
    let per = queries.div_ceil(clients.max(1));
    let t = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..clients {
        let (addr, request) = (addr.to_string(), request.clone());
        tasks.spawn(async move {
            let mut lat = Vec::with_capacity(per);
            for _ in 0..per {
                let t = Instant::now();
                let mut c = FramedConn::connect(addr.as_str(), &net).await?;
                c.send(&request).await?;
                let resp = c.recv().await?;
                anyhow::ensure!(resp.len() > 64, "the server refused a query");
                lat.push(t.elapsed().as_secs_f64() * 1e3);
            }
            anyhow::Ok(lat)
        });
    }
    let mut all = Vec::with_capacity(per * clients);
    while let Some(r) = tasks.join_next().await {
        all.extend(r??);
    }
    Ok((all, t.elapsed()))
}

/// The load benchmark: returns the points and prints a table unless `json`.
pub fn run<G: PrimeGroup>(
    params: &PsiParams,
    clients: usize,
    queries: usize,
    rounds: usize,
) -> Result<serde_json::Value> {
    anyhow::ensure!(params.group == G::ID, "group mismatch");
    let exe = std::env::current_exe()?;
    let dir = std::env::temp_dir().join(format!("tacit-psi-load-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let set_path = dir.join("book.txt");
    let book: Vec<String> = (0..params.max_sender).map(|i| format!("1555{i:07}")).collect();
    std::fs::write(&set_path, book.join("\n"))?;
    let ids: Vec<String> = (0..params.max_receiver).map(|i| format!("1555{:07}", i * 7)).collect();
    let pre = Arc::new(ReceiverPrecomputation::<G>::compute(
        params,
        &ids,
        &mut SecureRng::from_os(),
    )?);
    let request = Arc::new(Receiver::start(&pre).1);
    let net = NetConfig::default().with_max_frame_at_least(params.max_message_len());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let configs = [(1usize, false), (2, false), (2, true)];
    let mut lat: Vec<Vec<f64>> = vec![Vec::new(); configs.len()];
    let mut wall: Vec<Duration> = vec![Duration::ZERO; configs.len()];
    let mut peak = vec![0f64; configs.len()];
    let pb = crate::util::progress((rounds * configs.len()) as u64, "load runs");
    for _ in 0..rounds {
        for (i, &(threads, stalled)) in configs.iter().enumerate() {
            let server = start_server(&exe, &set_path, params, threads, clients)?;
            let (l, w) = rt.block_on(async {
                let _staller = if stalled {
                    let mut s = tokio::net::TcpStream::connect(server.addr.as_str()).await?;
                    tokio::io::AsyncWriteExt::write_all(&mut s, &[0]).await?;
                    Some(s)
                } else {
                    None
                };
                drive(&server.addr, pre.clone(), request.clone(), net, clients, queries).await
            })?;
            peak[i] = peak[i].max(peak_mib(server.child.id()));
            lat[i].extend(l);
            wall[i] += w;
            drop(server);
            pb.inc(1);
        }
    }
    pb.finish_and_clear();
    let _ = std::fs::remove_dir_all(&dir);
    let points: Vec<LoadPoint> = configs
        .iter()
        .enumerate()
        .map(|(i, &(threads, stalled))| {
            let mut v = lat[i].clone();
            v.sort_by(f64::total_cmp);
            LoadPoint {
                threads,
                stalled,
                clients,
                queries: v.len(),
                throughput_qps: v.len() as f64 / wall[i].as_secs_f64(),
                p50_ms: quantile(&v, 0.5),
                p95_ms: quantile(&v, 0.95),
                p99_ms: quantile(&v, 0.99),
                server_peak_mib: peak[i],
            }
        })
        .collect();
    let scaling = points[1].throughput_qps / points[0].throughput_qps;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let stall = points[2].p50_ms / points[1].p50_ms;
    Ok(serde_json::json!({
        "params": params.to_string(),
        "clients": clients,
        "rounds": rounds,
        "points": points,
        "two_cores_vs_one_core": scaling,
        "stalled_vs_clean_p50": stall,
        "goals": {"two_cores_vs_one_core": ">= 1.7", "stalled_vs_clean_p50": "<= 1.2"},
        "note": "server in its own process (--reuse epoch); clients verify their first answer and then only read",
        "cores": cores,
        "clients_share_the_server_cores": cores <= 2,
    }))
}

/// Prints the load table.
pub fn print(v: &serde_json::Value) {
    println!(
        "tacit bench psi --load: {}, {} concurrent clients, {} rounds (round-robin), server in its own process",
        v["params"].as_str().unwrap_or(""),
        v["clients"],
        v["rounds"]
    );
    println!(" threads  staller  queries  queries/s   p50 ms   p95 ms   p99 ms  server peak MiB");
    for p in v["points"].as_array().into_iter().flatten() {
        println!(
            " {:>7}  {:>7}  {:>7}  {:>9.1}  {:>7.2}  {:>7.2}  {:>7.2}  {:>15.1}",
            p["threads"],
            if p["stalled"].as_bool().unwrap_or(false) {
                "yes"
            } else {
                "no"
            },
            p["queries"],
            p["throughput_qps"].as_f64().unwrap_or(f64::NAN),
            p["p50_ms"].as_f64().unwrap_or(f64::NAN),
            p["p95_ms"].as_f64().unwrap_or(f64::NAN),
            p["p99_ms"].as_f64().unwrap_or(f64::NAN),
            p["server_peak_mib"].as_f64().unwrap_or(f64::NAN),
        );
    }
    println!(
        " two cores / one core: {:.2}x (goal >= 1.7); p50 with a stalled client / without: {:.2}x (goal <= 1.2)",
        v["two_cores_vs_one_core"].as_f64().unwrap_or(f64::NAN),
        v["stalled_vs_clean_p50"].as_f64().unwrap_or(f64::NAN)
    );
    if v["clients_share_the_server_cores"].as_bool().unwrap_or(false) {
        println!(
            " note: this machine has {} cores, which the clients share with the server; the two-core ratio then shows the clients' load, not the server's scaling",
            v["cores"]
        );
    }
}
