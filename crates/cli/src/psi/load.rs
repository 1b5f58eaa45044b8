//! `tacit bench psi --load`: a `tacit psi serve` process under K concurrent clients.
//!
//! The server runs as its own process (`--threads 1`, then `--threads 2`), the clients
//! as tasks of this process. Each client sends a request precomputed once and reads
//! the whole response; it verifies the first response of each run in full (proof,
//! unblinding, matching) and then only reads, so that on this 2-core machine the
//! load generator does not compete with the server for the cores it measures. The
//! configurations alternate round-robin, and a run with one client stalled (connected,
//! the first byte of a greeting sent, then silent) measures what a staller costs the
//! others. The server's peak memory is its `VmHWM` from `/proc`.
//!
//! The CPU time of both processes is read from `/proc/PID/stat` around every run, so
//! the report says what each query costs the server and what it costs the load
//! generator. On a machine whose cores the clients share with the server, the
//! end-to-end two-threads ratio is bounded by that split; the bench therefore also
//! measures the server's protocol work alone (the same requests answered in this
//! process by a pool of one and then two threads, no sockets), which is what a second
//! server core can speed up.

use crate::util::quantile;
use anyhow::{Context, Result, bail};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tacit_crypto::PrimeGroup;
use tacit_crypto::rng::SecureRng;
use tacit_net::{FramedConn, NetConfig};
use tacit_psi::{PsiParams, Receiver, ReceiverPrecomputation, Reuse, Sender, SenderKey, SenderPrecomputation};

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
    /// CPU time the server process spent per query, milliseconds.
    pub server_cpu_ms_per_query: f64,
    /// CPU time the load generator (all clients) spent per query, milliseconds.
    pub clients_cpu_ms_per_query: f64,
}

/// Seconds of CPU time (user + system, all threads) that process `pid` has used, from
/// `/proc/PID/stat` (fields 14 and 15, in USER_HZ = 100 ticks per second on Linux).
fn cpu_s(pid: &str) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            // The command name (field 2) may hold spaces; count fields after its ')'.
            let rest = &s[s.rfind(')')? + 1..];
            let f: Vec<&str> = rest.split_whitespace().collect();
            let ticks = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
            Some(ticks / 100.0)
        })
        .unwrap_or(f64::NAN)
}

/// The server's protocol work alone: `sessions` answers to `request` by a pool of
/// `threads` threads, in this process, without sockets or TLS. Sessions per second.
fn server_work<G: PrimeGroup>(sender: &Sender<G>, request: &[u8], sessions: usize, threads: usize) -> Result<f64> {
    use rayon::prelude::*;
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build()?;
    let t = Instant::now();
    pool.install(|| {
        (0..sessions).into_par_iter().try_for_each(|_| {
            let r = sender.respond(request, &mut SecureRng::from_os())?;
            anyhow::ensure!(r.len() > 64, "the sender refused the request");
            std::hint::black_box(r);
            anyhow::Ok(())
        })
    })?;
    Ok(sessions as f64 / t.elapsed().as_secs_f64())
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
    cpus: Option<&[usize]>,
) -> Result<Server> {
    // With `cpus`, the server process runs under `taskset` on exactly those CPUs, so
    // that "one thread" also means one core.
    let mut cmd = match cpus {
        Some(c) => {
            let mut cmd = Command::new("taskset");
            cmd.arg("-c").arg(cpu_list(c)).arg(exe);
            cmd
        }
        None => Command::new(exe),
    };
    let mut child = cmd
        .args(["psi", "serve", "--listen", "127.0.0.1:0", "--reuse", "epoch"])
        .arg("--set")
        .arg(set)
        .args(["--threads", &threads.to_string()])
        .args(["--max-clients", &(clients + 2).to_string()])
        // Every client comes from loopback: one address.
        .args(["--max-per-address", &(clients + 2).to_string()])
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

/// The CPUs this process may run on (`Cpus_allowed_list` in `/proc/self/status`).
fn allowed_cpus() -> Option<Vec<usize>> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?
        .trim();
    let mut cpus = Vec::new();
    for part in list.split(',') {
        match part.split_once('-') {
            Some((a, b)) => cpus.extend(a.parse::<usize>().ok()?..=b.parse::<usize>().ok()?),
            None => cpus.push(part.parse().ok()?),
        }
    }
    Some(cpus)
}

fn cpu_list(c: &[usize]) -> String {
    c.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(",")
}

/// Whether `taskset` (util-linux) runs here.
fn have_taskset() -> bool {
    Command::new("taskset")
        .args(["-c", "0", "true"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Where the server and the load generator run: the server on the first one or two
/// allowed CPUs; with four or more, the load generator on the rest, so the clients
/// no longer share the server's cores.
struct Placement {
    server: Option<Vec<usize>>,
    clients: Option<Vec<usize>>,
}

fn placement(pin: bool) -> Placement {
    let none = Placement {
        server: None,
        clients: None,
    };
    if !pin || !have_taskset() {
        return none;
    }
    let Some(cpus) = allowed_cpus().filter(|c| c.len() >= 2) else {
        return none;
    };
    let clients = (cpus.len() >= 4).then(|| cpus[2..].to_vec());
    if let Some(c) = &clients {
        // Move every thread of this process (the load generator) off the server's CPUs.
        let moved = Command::new("taskset")
            .args(["-a", "-p", "-c", &cpu_list(c), &std::process::id().to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !moved {
            return none;
        }
    }
    Placement {
        server: Some(cpus[..2].to_vec()),
        clients,
    }
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
    // Queries open as `psi query` does: greeting and request in one flight.
    let net = net.speaking(tacit_net::Protocol::Psi);
    // First, one full, verified query: the server answers correctly.
    let mut conn = FramedConn::connect_early(addr, &net).await?;
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
                let mut c = FramedConn::connect_early(addr.as_str(), &net).await?;
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
    pin: bool,
) -> Result<serde_json::Value> {
    anyhow::ensure!(params.group == G::ID, "group mismatch");
    let exe = std::env::current_exe()?;
    let dir = crate::util::ScratchDir::new("psi-load")?;
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
    // The CPUs this bench may use, counted before placement moves it off the
    // server's (the load generator then sees only the clients' CPUs).
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let place = placement(pin);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(place.clients.as_ref().map_or(1, |c| c.len().min(clients)))
        .enable_all()
        .build()?;
    let configs = [(1usize, false), (2, false), (2, true)];
    let mut lat: Vec<Vec<f64>> = vec![Vec::new(); configs.len()];
    let mut wall: Vec<Duration> = vec![Duration::ZERO; configs.len()];
    let mut peak = vec![0f64; configs.len()];
    let (mut server_cpu, mut clients_cpu) = (vec![0f64; configs.len()], vec![0f64; configs.len()]);
    // The server's protocol work alone, with a sender like the one `psi serve` builds.
    let mut rng = SecureRng::from_os();
    let key = SenderKey::<G>::generate(&mut rng, 1);
    let spre = SenderPrecomputation::compute(params, &key, &book, Reuse::WithinEpoch, &mut rng)?;
    let sender = Sender::new(params, key, spre)?;
    let mut work = [Vec::new(), Vec::new()];
    let pb = crate::util::progress((rounds * (configs.len() + 1)) as u64, "load runs");
    for _ in 0..rounds {
        for (w, threads) in work.iter_mut().zip([1, 2]) {
            w.push(server_work(&sender, &request, queries, threads)?);
        }
        pb.inc(1);
        for (i, &(threads, stalled)) in configs.iter().enumerate() {
            let cpus = place.server.as_ref().map(|c| &c[..threads]);
            let server = start_server(&exe, &set_path, params, threads, clients, cpus)?;
            let pid = server.child.id().to_string();
            let (s0, c0) = (cpu_s(&pid), cpu_s("self"));
            let (l, w) = rt.block_on(async {
                let _staller = if stalled {
                    let mut s = tokio::net::TcpStream::connect(server.addr.as_str()).await?;
                    // The first byte of a greeting, then nothing.
                    tokio::io::AsyncWriteExt::write_all(&mut s, &tacit_net::greeting::MAGIC[..1]).await?;
                    Some(s)
                } else {
                    None
                };
                drive(&server.addr, pre.clone(), request.clone(), net, clients, queries).await
            })?;
            server_cpu[i] += cpu_s(&pid) - s0;
            clients_cpu[i] += cpu_s("self") - c0;
            peak[i] = peak[i].max(peak_mib(server.child.id()));
            lat[i].extend(l);
            wall[i] += w;
            drop(server);
            pb.inc(1);
        }
    }
    pb.finish_and_clear();
    drop(dir);
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
                server_cpu_ms_per_query: server_cpu[i] * 1e3 / v.len().max(1) as f64,
                clients_cpu_ms_per_query: clients_cpu[i] * 1e3 / v.len().max(1) as f64,
            }
        })
        .collect();
    let scaling = points[1].throughput_qps / points[0].throughput_qps;
    let stall = points[2].p50_ms / points[1].p50_ms;
    let work: Vec<f64> = work.iter().map(|w| crate::util::median(w.clone())).collect();
    // With the clients on the same cores, two cores can at best give the server the
    // second core minus what the clients take: (2 cores) / (server + clients CPU per
    // query) queries per second, against what one server core alone allows.
    let p1 = &points[1];
    let two_core_bound_qps = 2e3 / (p1.server_cpu_ms_per_query + p1.clients_cpu_ms_per_query);
    let shared = place.clients.is_none();
    Ok(serde_json::json!({
        "params": params.to_string(),
        "clients": clients,
        "rounds": rounds,
        "points": points,
        "two_cores_vs_one_core": scaling,
        "stalled_vs_clean_p50": stall,
        "server_work_sessions_per_s": {"1": work[0], "2": work[1]},
        "server_work_two_threads_vs_one": work[1] / work[0],
        "two_cores_cpu_bound_qps": if shared { serde_json::json!(two_core_bound_qps) } else { serde_json::Value::Null },
        "goals": {"two_cores_vs_one_core": ">= 1.7", "stalled_vs_clean_p50": "<= 1.2"},
        "note": "server in its own process (--reuse epoch); clients verify their first answer and then only read",
        "cores": cores,
        "server_cpus": place.server.as_ref().map(|c| [cpu_list(&c[..1]), cpu_list(c)]),
        "client_cpus": place.clients.as_ref().map(|c| cpu_list(c)),
        "clients_share_the_server_cores": place.clients.is_none(),
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
    match (v["server_cpus"].as_array(), v["client_cpus"].as_str()) {
        (Some(s), c) => println!(
            " pinned: server on CPU {} (1 thread) or {} (2 threads); clients on {}",
            s[0].as_str().unwrap_or("?"),
            s[1].as_str().unwrap_or("?"),
            c.unwrap_or("any CPU")
        ),
        (None, _) => println!(" not pinned: server and clients on any CPU"),
    }
    println!(
        " threads  staller  queries  queries/s   p50 ms   p95 ms   p99 ms  server peak MiB  CPU ms/query server  clients"
    );
    for p in v["points"].as_array().into_iter().flatten() {
        println!(
            " {:>7}  {:>7}  {:>7}  {:>9.1}  {:>7.2}  {:>7.2}  {:>7.2}  {:>15.1}  {:>19.3}  {:>7.3}",
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
            p["server_cpu_ms_per_query"].as_f64().unwrap_or(f64::NAN),
            p["clients_cpu_ms_per_query"].as_f64().unwrap_or(f64::NAN),
        );
    }
    let w = &v["server_work_sessions_per_s"];
    println!(
        " server protocol work alone (no sockets, no TLS): {:.0} sessions/s on 1 thread, {:.0} on 2: {:.2}x",
        w["1"].as_f64().unwrap_or(f64::NAN),
        w["2"].as_f64().unwrap_or(f64::NAN),
        v["server_work_two_threads_vs_one"].as_f64().unwrap_or(f64::NAN)
    );
    println!(
        " two cores / one core: {:.2}x (goal >= 1.7); p50 with a stalled client / without: {:.2}x (goal <= 1.2)",
        v["two_cores_vs_one_core"].as_f64().unwrap_or(f64::NAN),
        v["stalled_vs_clean_p50"].as_f64().unwrap_or(f64::NAN)
    );
    if v["clients_share_the_server_cores"].as_bool().unwrap_or(false) {
        println!(
            " note: the clients share the server's cores ({} here); the two-core ratio is then bounded by the clients' and the server's I/O share: at the CPU cost per query above, two cores allow at most {:.0} queries/s",
            v["cores"],
            v["two_cores_cpu_bound_qps"].as_f64().unwrap_or(f64::NAN)
        );
    }
}
