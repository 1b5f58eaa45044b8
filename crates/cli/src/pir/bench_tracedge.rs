//! `tacit bench pir auth` (the paper's Tables 5 and 7 and the load figure) and
//! `tacit bench pir detection` (Table 1 and `p_nd` against the measured rate).

use std::time::Instant;

use anyhow::{Result, bail};
use clap::Args;
use curve25519_dalek::constants::RISTRETTO_BASEPOINT_POINT;
use curve25519_dalek::ristretto::RistrettoPoint;
use curve25519_dalek::scalar::Scalar;
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use rayon::prelude::*;
use tacit_crypto::sign::SigningKey;
use tacit_pir::lwe::{LweAnswer, LweParams, LweQuery, LweServer};
use tacit_pir::tracedge::keytable::{self, Directory};
use tacit_pir::tracedge::*;
use tacit_pir::{LweAnyServer, LweBackend};
use tacit_pir::{PirServer, Table};
use tacit_wire::{Decode, Encode};

use crate::util::millis;

/// Options of `bench pir auth`.
#[derive(Debug, Args)]
pub struct AuthBenchArgs {
    /// Table sizes (Table 5 is one line per size; latency and load use the last).
    #[arg(long, value_delimiter = ',', default_values_t = [100_000u64, 1_000_000])]
    rows: Vec<u64>,
    /// Rows audited per authentication (one weighted query).
    #[arg(long, default_value_t = 4)]
    audits: usize,
    /// Authentications timed one at a time (Table 7).
    #[arg(long, default_value_t = 9)]
    samples: usize,
    /// Concurrent sessions answered in one pass (the load figure; one line each).
    #[arg(long, value_delimiter = ',', default_values_t = [1usize, 8, 16, 32])]
    batch: Vec<usize>,
    /// Passes timed per batch size (the median is reported; at least 1).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u16).range(1..=100))]
    passes: u16,
    /// Where the PIR server runs: lwe (CPU cores) or lwe-gpu (NVIDIA GPUs).
    #[arg(long, default_value = "lwe", value_parser = ["lwe", "lwe-gpu"])]
    backend: String,
    /// GPUs for --backend lwe-gpu: all, or ordinals like 0,1.
    #[arg(long, default_value = "all")]
    gpus: String,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Options of `bench pir detection`.
#[derive(Debug, Args)]
pub struct DetectionArgs {
    /// Rows n (all subscribers).
    #[arg(long, default_value_t = 256)]
    rows: u64,
    /// Flagged rows m (one line each).
    #[arg(long, value_delimiter = ',', default_values_t = [1u64, 4, 16, 64])]
    flagged: Vec<u64>,
    /// Authentications a per trial (distinct random subscribers).
    #[arg(long, default_value_t = 8)]
    auths: u64,
    /// Trials per line.
    #[arg(long, default_value_t = 100)]
    trials: u64,
    /// Rows audited per authentication (0: the paper's formula exactly).
    #[arg(long, default_value_t = 0)]
    audits: usize,
    /// Seed.
    #[arg(long, default_value_t = 2026)]
    seed: u64,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

const NOW: u64 = 1_800_000_000_000;

fn stop(s: ClientStop) -> anyhow::Error {
    anyhow::anyhow!("an honest session stopped: {s}")
}

/// `n` distinct public keys, quickly: `2·(P₀ + i·Q)` by additions and batched
/// compressions (their generation is not what is measured).
fn fast_keys(n: u64, rng: &mut ChaCha20Rng) -> Vec<[u8; 32]> {
    let p0 = RISTRETTO_BASEPOINT_POINT * Scalar::random(rng);
    let q = RISTRETTO_BASEPOINT_POINT * Scalar::random(rng);
    const CH: u64 = 4096;
    (0..n.div_ceil(CH))
        .into_par_iter()
        .flat_map_iter(|c| {
            let start = c * CH;
            let end = (start + CH).min(n);
            let mut p = p0 + q * Scalar::from(start);
            let mut pts = Vec::with_capacity((end - start) as usize);
            for _ in start..end {
                pts.push(p);
                p += q;
            }
            RistrettoPoint::double_and_compress_batch(&pts)
                .into_iter()
                .map(|c| c.to_bytes())
                .collect::<Vec<_>>()
        })
        .collect()
}

struct Built {
    server: TracEdgeServer<LweAnyServer>,
    /// A view of the log synced to its head (subscribers' views are copies).
    view: ClientView,
    line: serde_json::Value,
}

fn build(n: u64, rng: &mut ChaCha20Rng, subs: &[(u64, SubscriberSecret)], backend: &LweBackend) -> Result<Built> {
    let mut server = TracEdgeServer::<LweAnyServer>::new(
        SigningKey::generate(rng),
        Scalar::random(rng),
        ServerConfig::default(),
        n,
        NOW,
    )?;
    let mut keys = fast_keys(n, rng);
    for (row, s) in subs {
        keys[*row as usize] = s.public_bytes();
    }
    // Every row is a subscriber: the table log registers them all (in entries of
    // at most 65 536 changes), and the directory follows.
    let changes: Vec<Change> = keys.iter().enumerate().map(|(i, k)| (i as u64, *k)).collect();
    let t = Instant::now();
    server.apply_changes_unreceipted(&changes, NOW)?;
    let log_s = t.elapsed().as_secs_f64();
    drop(changes);
    let key = TableKey::random(rng);
    // The floor: one variable-base scalar multiplication per row, on all cores.
    let points: Vec<RistrettoPoint> = keys
        .par_iter()
        .map(|k| keytable::decode_public(k).map_err(|e| anyhow::anyhow!("{e}")))
        .collect::<Result<_>>()?;
    let r = key.ephemeral_scalar();
    let t = Instant::now();
    let check = keytable::scalar_mul_floor(&r, &points);
    let floor_s = t.elapsed().as_secs_f64();
    drop(points);
    std::hint::black_box(check);

    let pb = crate::util::progress(n, "table rows");
    let t = Instant::now();
    let (rows, gpu) = match backend {
        LweBackend::Cpu => (
            keytable::build_rows(&key, 1, &keys, None, &|k| pb.set_position(k))?,
            None,
        ),
        LweBackend::Gpu(c) => {
            let (rows, stats) = keytable::build_rows_gpu(&c.gpus, &key, 1, &keys, None, &|k| pb.set_position(k))?;
            (rows, Some(stats))
        }
    };
    let rows_s = t.elapsed().as_secs_f64();
    pb.finish_and_clear();
    let t = Instant::now();
    let table = Table::from_bytes(rows, keytable::ROW_BYTES)?;
    let seed = lwe_seed(&server.dh_public(), 1, &key);
    let pir = LweAnyServer::setup(&table, LweParams::new(table.shape(), seed)?, backend)?;
    let hint_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let dir = Directory::build(keys)?;
    let dir_s = t.elapsed().as_secs_f64();
    let hint = pir.hint();
    let sizes = pir.sizes();
    let live = LiveTable::new(
        1,
        key,
        CommitScheme::Binding,
        &server.dh_public(),
        pir,
        hint,
        dir,
        None,
        rng,
    )?;
    server.install(live, NOW)?;
    // A subscriber's first sync: the whole log into an empty view.
    let t = Instant::now();
    let mut view = ClientView::new(server.verifying_key(), n, server.dh_public().compress().to_bytes())?;
    let head = server.log().head().seq;
    while view.head_seq() != Some(head) {
        let from = view.head_seq().map_or(0, |h| h + 1);
        let seg = server.log_segment(&LogRequest { from, to: head });
        view.apply(&seg, NOW)
            .map_err(|e| anyhow::anyhow!("the bench's own log does not verify: {e:?}"))?;
    }
    let sync_s = t.elapsed().as_secs_f64();
    let total = rows_s + hint_s + dir_s;
    let line = serde_json::json!({
        "rows": n, "table_create_s": total, "rows_s": rows_s, "hint_s": hint_s, "directory_s": dir_s,
        "scalar_mul_floor_s": floor_s, "rows_vs_floor": rows_s / floor_s, "create_vs_floor": total / floor_s,
        "rows_on": if gpu.is_some() { "gpu" } else { "cpu" },
        "rows_gpu_s": gpu.map(|g| g.gpu_s), "rows_gpu_compile_s": gpu.map(|g| g.compile_s),
        "rows_gpu_regs": gpu.map(|g| g.regs), "rows_gpu_local_bytes": gpu.map(|g| g.local_bytes),
        "hint_bytes": sizes.hint_bytes, "query_bytes": sizes.query_bytes, "answer_bytes": sizes.answer_bytes,
        "log_entries": head + 1, "log_append_s": log_s, "client_log_sync_s": sync_s,
    });
    Ok(Built { server, view, line })
}

/// Runs `bench pir auth`.
pub fn auth(a: &AuthBenchArgs) -> Result<()> {
    let backend = LweBackend::from_names(&a.backend, &a.gpus)?;
    if a.backend == "lwe-gpu" {
        tacit_pir::gpu::available()?;
    }
    if a.rows.is_empty() || a.rows.iter().any(|&n| n < 64) {
        bail!("--rows: at least 64 rows");
    }
    let mut rng = ChaCha20Rng::seed_from_u64(2026);
    let mut table5 = Vec::new();
    let last = *a.rows.last().unwrap_or(&64);
    let maxb = a.batch.iter().copied().max().unwrap_or(1).max(a.samples);
    let mut built = None;
    for &n in &a.rows {
        // Subscribers with known secrets at random rows (the rest are keys we do not
        // hold; the server cannot tell).
        let subs: Vec<(u64, SubscriberSecret)> = if n == last {
            let mut rows: Vec<u64> = (0..maxb as u64).map(|i| (i * 7919 + 13) % n).collect();
            rows.sort_unstable();
            rows.dedup();
            rows.into_iter()
                .map(|r| (r, SubscriberSecret::random(&mut rng)))
                .collect()
        } else {
            Vec::new()
        };
        let b = build(n, &mut rng, &subs, &backend)?;
        if !a.json {
            let l = &b.line;
            eprintln!(
                "n = {n}: table {:.2} s (rows {:.2} s = {:.2}× the scalar-mult floor {:.2} s; hint {:.2} s; directory {:.2} s)",
                l["table_create_s"].as_f64().unwrap_or(0.0),
                l["rows_s"].as_f64().unwrap_or(0.0),
                l["rows_vs_floor"].as_f64().unwrap_or(0.0),
                l["scalar_mul_floor_s"].as_f64().unwrap_or(0.0),
                l["hint_s"].as_f64().unwrap_or(0.0),
                l["directory_s"].as_f64().unwrap_or(0.0)
            );
        }
        table5.push(b.line.clone());
        if n == last {
            built = Some((b, subs));
        }
    }
    let Some((mut b, subs)) = built else { bail!("no table") };
    let server = &mut b.server;
    let hint = server
        .current()
        .map(|t| t.hint().clone())
        .ok_or_else(|| anyhow::anyhow!("no table"))?;
    let vk = server.verifying_key();
    let config = ClientConfig {
        audits: a.audits,
        accept_paper_commitment: false,
    };
    let clients: Vec<TracEdgeClient> = subs
        .iter()
        .map(|(r, s)| TracEdgeClient::new(vk, *r, s.clone(), config))
        .collect();
    // Each subscriber's copy of the log (sharing the directory) with its receipt,
    // on all cores: each copy checks the log records from its receipt's entry on
    // (up to 10^7 changes at 10^7 rows), which one core took minutes for 2 048
    // subscribers.
    let wanted: std::collections::HashSet<u64> = subs.iter().map(|(r, _)| *r).collect();
    let mut seq_of: std::collections::HashMap<u64, u64> = std::collections::HashMap::new();
    for rec in server.log().records() {
        for &(row, _) in &rec.changes {
            if wanted.contains(&row) {
                seq_of.entry(row).or_insert(rec.entry.seq);
            }
        }
    }
    let srv_ref = &*server;
    let views: Vec<ClientView> = subs
        .par_iter()
        .map(|(r, s)| {
            let server = srv_ref;
            let seq = *seq_of
                .get(r)
                .ok_or_else(|| anyhow::anyhow!("row {r} is not in the log"))?;
            let receipt = server.receipt(*r, s.public_bytes(), seq, NOW);
            let mut v = b.view.clone();
            v.set_own_from(receipt, server.log().records())
                .map_err(|e| anyhow::anyhow!("{e:?}"))?;
            Ok(v)
        })
        .collect::<Result<_>>()?;

    // Table 7: one authentication at a time, split into its parts.
    let mut parts: Vec<[f64; 5]> = Vec::new();
    let mut t_s = NOW;
    for (c, v) in clients.iter().zip(&views).take(a.samples) {
        t_s += 1;
        let t0 = Instant::now();
        let (mut cs, hello) = c.start(t_s, &mut rng);
        let (mut ss, commit) = server.hello(&hello, NOW, &mut rng)?;
        let queries = c.on_commit(&mut cs, commit, hint.clone(), v, &mut rng).map_err(stop)?;
        let t_query = t0.elapsed();
        let t1 = Instant::now();
        let resp = server.respond(&mut ss, &queries)?;
        let t_answer = t1.elapsed();
        let t2 = Instant::now();
        let auth = c.on_response(&mut cs, resp, &mut rng).map_err(stop)?;
        let (reply, _) = server.finish(&mut ss, &auth)?;
        let out = c.on_server_auth(&mut cs, Ok(reply));
        let t_check = t2.elapsed();
        if !matches!(out, ClientOutcome::Authenticated { .. }) {
            bail!("an honest authentication failed: {out:?}");
        }
        parts.push([
            millis(t_query),
            millis(t_answer),
            millis(t_check),
            millis(t0.elapsed()),
            (queries.to_wire().len()) as f64,
        ]);
    }
    let med = |k: usize| {
        let mut v: Vec<f64> = parts.iter().map(|p| p[k]).collect();
        v.sort_by(|x, y| x.total_cmp(y));
        v.get(v.len() / 2).copied().unwrap_or(0.0)
    };
    let latency = serde_json::json!({
        "client_query_ms": med(0), "server_answer_ms": med(1), "client_check_and_auth_ms": med(2),
        "total_ms": med(3), "queries_bytes": med(4),
    });

    // Load: B sessions whose queries arrive together, --passes times in a row,
    // answered through the server's pipeline from the queries as they arrive (their
    // encodings) to the responses as they leave (theirs); clients' work is done
    // beforehand (they are other devices).
    let mut load = Vec::new();
    let mut best = 0.0f64;
    let mut profile = serde_json::Value::Null;
    for &bsz in &a.batch {
        let bsz = bsz.min(clients.len()).max(1);
        let mut started = Vec::new();
        let mut ss_all = Vec::new();
        for (c, v) in clients.iter().zip(&views).take(bsz) {
            t_s += 1;
            let (cs, hello) = c.start(t_s, &mut rng);
            let (ss, commit) = server.hello(&hello, NOW, &mut rng)?;
            started.push((c, v, cs, commit, rng.next_u64()));
            ss_all.push(ss);
        }
        // The clients' query generation (other devices in reality) on all cores.
        let prepared: Vec<(_, Queries)> = started
            .into_par_iter()
            .map(|(c, v, mut cs, commit, seed)| {
                let mut crng = ChaCha20Rng::seed_from_u64(seed);
                let q = c.on_commit(&mut cs, commit, hint.clone(), v, &mut crng).map_err(stop)?;
                Ok((cs, q))
            })
            .collect::<Result<_>>()?;
        let (mut cs_all, qs): (Vec<_>, Vec<_>) = prepared.into_iter().unzip();
        let flat: Vec<&LweQuery> = qs.iter().flat_map(Queries::all).collect();
        let pir = server.current().ok_or_else(|| anyhow::anyhow!("no table"))?.pir();
        // Warm-up: a server in steady state has its staging buffers (page-locked
        // memory on a GPU) allocated; the first batch pays for them, which is not
        // per-authentication work.
        std::hint::black_box(pir.answer_batch_refs(&flat)?);
        // The same queries through the PIR backend alone (median of --passes): what
        // the pass spends outside it is TracEdge's own per-session work.
        let mut pir_times = Vec::new();
        for _ in 0..a.passes {
            let t = Instant::now();
            std::hint::black_box(pir.answer_batch_refs(&flat)?);
            pir_times.push(t.elapsed());
        }
        drop(flat);
        // What the clients send (their encodings), once per pass.
        let wire: Vec<Vec<u8>> = qs.par_iter().map(|q| q.to_wire()).collect();
        let passes = a.passes as usize;
        // Extra passes over the same queries in fresh server sessions (the server
        // cannot tell), then the real one whose answers the clients check.
        let mut sessions: Vec<ServerSession> = Vec::with_capacity(passes * bsz);
        for _ in 1..passes {
            for c in clients.iter().take(bsz) {
                t_s += 1;
                let (_, hello) = c.start(t_s, &mut rng);
                sessions.push(server.hello(&hello, NOW, &mut rng)?.0);
            }
        }
        sessions.extend(ss_all);
        let frames: Vec<Vec<u8>> = (0..passes).flat_map(|_| wire.iter().cloned()).collect();
        if bsz == *a.batch.iter().max().unwrap_or(&bsz) {
            profile = profile_sessions(server, &qs, &wire)?;
        }
        // Timed: every pass arrives, is checked, staged, answered and encoded; the
        // pipeline stages pass k+1 while the GPU answers pass k.
        let srv = &*server;
        let t0 = Instant::now();
        let mut responder: Responder<usize> = Responder::new(usize::MAX);
        let mut done: Vec<Option<Result<Vec<u8>, tacit_pir::Error>>> = (0..passes * bsz).map(|_| None).collect();
        let mut real_sessions: Vec<Option<ServerSession>> = (0..bsz).map(|_| None).collect();
        // A server sends each response and frees it; only the real pass's are kept
        // (for the clients).
        let mut deliver = |d: Responded<usize>, real: &mut Vec<Option<ServerSession>>| {
            if d.tag >= (passes - 1) * bsz {
                real[d.tag - (passes - 1) * bsz] = Some(d.session);
                done[d.tag] = Some(d.response);
            } else {
                done[d.tag] = Some(d.response.map(|_| Vec::new()));
            }
        };
        // Each frame is parsed where it arrived (a server parses on each
        // connection's task, all at once), then joins the pipeline.
        let parse_ns = std::sync::atomic::AtomicU64::new(0);
        let parsed: Vec<QueriesFrame> = frames
            .into_par_iter()
            .map(|bytes| {
                let t = Instant::now();
                let f = QueriesFrame::parse(bytes);
                parse_ns.fetch_add(t.elapsed().as_nanos() as u64, std::sync::atomic::Ordering::Relaxed);
                f
            })
            .collect::<core::result::Result<_, _>>()?;
        for (i, (sess, frame)) in sessions.into_iter().zip(parsed).enumerate() {
            if let Some(d) = responder.push(srv, sess, frame, i) {
                deliver(d, &mut real_sessions);
            }
        }
        for d in responder.drain(srv) {
            deliver(d, &mut real_sessions);
        }
        let t_all = t0.elapsed();
        let stats = responder.stats();
        let t_pass = t_all / passes as u32;
        let t_pir = crate::util::median(pir_times);
        // The real pass's responses, as the clients receive them.
        let responses: Vec<Response> = done[(passes - 1) * bsz..]
            .iter_mut()
            .map(|r| match r.take() {
                Some(Ok(bytes)) => Ok(Response::from_wire(&bytes)?),
                Some(Err(e)) => Err(anyhow::anyhow!("an honest session was refused: {e}")),
                None => Err(anyhow::anyhow!("a session got no response")),
            })
            .collect::<Result<_>>()?;
        if let Some(Some(Err(e))) = done.iter().find(|r| matches!(r, Some(Err(_)))) {
            bail!("an honest session was refused: {e}");
        }
        let mut ss_all: Vec<ServerSession> = real_sessions
            .into_iter()
            .collect::<Option<_>>()
            .ok_or_else(|| anyhow::anyhow!("a session was lost"))?;
        // The rest of the server's work per session (the MAC), timed on all cores as
        // a server runs its connections; the clients' steps in between are not
        // timed.
        let seeds: Vec<u64> = (0..bsz).map(|_| rng.next_u64()).collect();
        let auths: Vec<ClientAuth> = clients
            .par_iter()
            .zip(cs_all.par_iter_mut())
            .zip(responses.into_par_iter().zip(seeds.into_par_iter()))
            .map(|((c, cs), (r, seed))| {
                c.on_response(cs, r, &mut ChaCha20Rng::seed_from_u64(seed))
                    .map_err(stop)
            })
            .collect::<Result<_>>()?;
        let mac_ns = std::sync::atomic::AtomicU64::new(0);
        let t = Instant::now();
        let replies: Vec<ServerAuth> = ss_all
            .par_iter_mut()
            .zip(auths.par_iter())
            .map(|(ss, au)| {
                let t = Instant::now();
                let r = srv.finish(ss, au).map(|(reply, _)| reply);
                mac_ns.fetch_add(t.elapsed().as_nanos() as u64, std::sync::atomic::Ordering::Relaxed);
                r
            })
            .collect::<core::result::Result<_, _>>()?;
        let t_rest = t.elapsed();
        for ((c, cs), reply) in clients.iter().zip(cs_all.iter_mut()).zip(replies) {
            if !matches!(c.on_server_auth(cs, Ok(reply)), ClientOutcome::Authenticated { .. }) {
                bail!("an authentication under load failed");
            }
        }
        let secs = (t_pass + t_rest).as_secs_f64();
        let per_s = bsz as f64 / secs;
        best = best.max(per_s);
        // CPU per session on the host (summed over threads): parsing the frame,
        // staging (query hash and copy), finishing (encoding, answer hash,
        // signature) and the MAC.
        let n_sess = stats.sessions.max(1) as f64;
        let parse_us = parse_ns.into_inner() as f64 / n_sess / 1e3;
        let cpu_us = parse_us
            + (stats.stage_cpu_ns + stats.finish_cpu_ns) as f64 / n_sess / 1e3
            + mac_ns.into_inner() as f64 / bsz as f64 / 1e3;
        let threads = rayon::current_num_threads() as f64;
        let host_bound = threads * 1e6 / cpu_us;
        if !a.json {
            eprintln!(
                "batch {bsz:>4}: {:.1} ms a pass of {} queries ({} passes pipelined; the PIR backend alone: {:.1} ms) + {:.2} ms MAC → {per_s:.1} authentications/s; {cpu_us:.1} µs CPU per session: host bound {host_bound:.0}/s ({:.2}x of it)",
                millis(t_pass),
                2 * bsz,
                passes,
                millis(t_pir),
                millis(t_rest),
                per_s / host_bound
            );
        }
        load.push(serde_json::json!({
            "batch": bsz, "passes": a.passes, "pass_ms": millis(t_pass), "pir_ms": millis(t_pir),
            "other_ms": millis(t_rest), "auth_per_s": per_s,
            "chunks": stats.chunks, "queries": stats.queries,
            "stage_cpu_us_per_session": stats.stage_cpu_ns as f64 / n_sess / 1e3,
            "finish_cpu_us_per_session": stats.finish_cpu_ns as f64 / n_sess / 1e3,
            "parse_cpu_us_per_session": parse_us,
            "mac_cpu_us_per_session": cpu_us - parse_us - (stats.stage_cpu_ns + stats.finish_cpu_ns) as f64 / n_sess / 1e3,
            "cpu_us_per_session": cpu_us,
            "host_bound_auth_per_s": host_bound,
            "auth_per_s_vs_host_bound": per_s / host_bound,
            "wait_ms_per_pass": stats.wait_ns as f64 / 1e6 / passes as f64,
        }));
    }
    let out = serde_json::json!({
        "backend": a.backend, "gpus": a.gpus,
        "rows": last,
        "audits": a.audits,
        "threads": rayon::current_num_threads(),
        "table_create_s": table5.last().and_then(|l| l.get("table_create_s")).cloned(),
        "scalar_mul_floor_s": table5.last().and_then(|l| l.get("scalar_mul_floor_s")).cloned(),
        "auth_latency_ms": med(3),
        "auth_per_s": best,
        "table5": table5,
        "table7": latency,
        "load": load,
        "per_session_us": profile,
    });
    if a.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        println!("Table 5 — table creation (one variable-base scalar multiplication per row is the floor)");
        println!(
            "{:>10} {:>10} {:>9} {:>9} {:>9} {:>9} {:>8}",
            "rows", "total s", "rows s", "floor s", "rows/fl", "hint s", "dir s"
        );
        for l in out["table5"].as_array().into_iter().flatten() {
            println!(
                "{:>10} {:>10.2} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>8.2}",
                l["rows"],
                l["table_create_s"].as_f64().unwrap_or(0.0),
                l["rows_s"].as_f64().unwrap_or(0.0),
                l["scalar_mul_floor_s"].as_f64().unwrap_or(0.0),
                l["rows_vs_floor"].as_f64().unwrap_or(0.0),
                l["hint_s"].as_f64().unwrap_or(0.0),
                l["directory_s"].as_f64().unwrap_or(0.0)
            );
        }
        println!(
            "Table 7 — one authentication at n = {last} (median of {}, in process):",
            parts.len()
        );
        println!(
            "  client queries {:.1} ms · server answer {:.1} ms · client check + MACs {:.1} ms · total {:.1} ms",
            med(0),
            med(1),
            med(2),
            med(3)
        );
        println!(
            "Load — best {best:.1} authentications/s (α = {} audits, own + audit query per session)",
            a.audits
        );
    }
    Ok(())
}

/// Item by item, the server's CPU per session on one core (median over a sample of
/// the pass's sessions, µs): what the pipeline does, and what the path before it did
/// with the same messages.
fn profile_sessions(
    server: &TracEdgeServer<LweAnyServer>,
    qs: &[Queries],
    wire: &[Vec<u8>],
) -> Result<serde_json::Value> {
    let sample = qs.len().min(64);
    let table = server.current().ok_or_else(|| anyhow::anyhow!("no table"))?;
    let (epoch, table_id) = (table.header().epoch, table.header().table_id);
    let (m, l) = (table.hint().params.matrix_rows(), table.hint().params.cols());
    let answers: Vec<LweAnswer> = (0..2)
        .map(|k| LweAnswer {
            table_id,
            values: (0..m as u32).map(|i| i.wrapping_mul(2_654_435_761) ^ k).collect(),
        })
        .collect();
    let key = server.signing_key();
    let mut rows = vec![0u32; 2 * l];
    let mut times: std::collections::BTreeMap<&str, Vec<f64>> = Default::default();
    let mut time = |name: &'static str, f: &mut dyn FnMut()| {
        let t = Instant::now();
        f();
        times.entry(name).or_default().push(t.elapsed().as_secs_f64() * 1e6);
    };
    for i in 0..sample {
        let bytes = wire[i].clone();
        let mut frame = None;
        time("parse_frame", &mut || frame = QueriesFrame::parse(bytes.clone()).ok());
        let frame = frame.ok_or_else(|| anyhow::anyhow!("a client's queries do not parse"))?;
        time("query_digest", &mut || {
            std::hint::black_box(frame.hash());
        });
        time("stage_copy", &mut || {
            for k in 0..frame.len() {
                frame.write_values(k, &mut rows[k * l..(k + 1) * l]);
            }
        });
        {
            let mut st = tacit_pir::stream::Staging::new(&mut rows, l, l)?;
            time("query_digest_and_stage", &mut || {
                std::hint::black_box(frame.hash_and_write(&mut st));
            });
        }
        let views: Vec<&[u32]> = answers.iter().map(|a| a.values.as_slice()).collect();
        time("encode_and_answer_digest", &mut || {
            std::hint::black_box(encode_response(epoch, &table_id, &views, |_| [0u8; 64]));
        });
        time("signature", &mut || {
            std::hint::black_box(key.sign(&[i as u8; 152]));
        });
        time("before_query_digest", &mut || {
            std::hint::black_box(wire_hash(&qs[i]));
        });
        time("before_stage_copy", &mut || {
            for (k, q) in qs[i].all().enumerate() {
                rows[k * l..(k + 1) * l].copy_from_slice(&q.values);
            }
        });
        let mut out = Vec::new();
        time("before_answer_copy_out", &mut || {
            out = views.iter().map(|v| v.to_vec()).collect::<Vec<Vec<u32>>>();
        });
        std::hint::black_box(&out);
        time("before_answer_digest", &mut || {
            std::hint::black_box(answers_hash(&answers));
        });
    }
    let med: serde_json::Map<String, serde_json::Value> = times
        .into_iter()
        .map(|(k, v)| (k.to_string(), serde_json::json!(crate::util::median(v))))
        .collect();
    Ok(
        serde_json::json!({"sessions": sample, "queries_per_session": qs.first().map_or(0, |q| 1 + q.audits.len()), "median_us": med}),
    )
}

/// Runs `bench pir detection`.
pub fn detection(a: &DetectionArgs) -> Result<()> {
    if a.rows < 8 || a.auths == 0 || a.auths > a.rows {
        bail!("need 8 ≤ rows and 1 ≤ auths ≤ rows");
    }
    let n = a.rows;
    let mut rng = ChaCha20Rng::seed_from_u64(a.seed);
    let subs: Vec<SubscriberSecret> = (0..n).map(|_| SubscriberSecret::random(&mut rng)).collect();
    let keys: Vec<[u8; 32]> = subs.iter().map(|s| s.public_bytes()).collect();
    let mut lines = Vec::new();
    for &m in &a.flagged {
        if m == 0 || m >= n {
            bail!("--flagged: 1 ≤ m < rows");
        }
        let mut server = TracEdgeServer::<LweServer>::new(
            SigningKey::generate(&mut rng),
            Scalar::random(&mut rng),
            ServerConfig::default(),
            n,
            NOW,
        )?;
        let changes: Vec<Change> = keys.iter().enumerate().map(|(i, k)| (i as u64, *k)).collect();
        let receipts = server.apply_changes(&changes, NOW)?.receipts;
        let mut rows: Vec<u64> = (0..n).collect();
        tacit_crypto::rng::shuffle(&mut rng, &mut rows);
        let mut flagged: Vec<u64> = rows[..m as usize].to_vec();
        flagged.sort_unstable();
        let key = TableKey::random(&mut rng);
        let second = TableKey::random(&mut rng);
        let mut table = build_lwe_table(
            1,
            key,
            CommitScheme::Binding,
            &server.dh_public(),
            keys.clone(),
            Some(Flagged {
                key: &second,
                rows: &flagged,
            }),
            &|_| {},
            &mut rng,
        )?;
        table.add_second_key(second);
        let hint = table.hint().clone();
        server.install(table, NOW)?;
        let vk = server.verifying_key();
        let config = ClientConfig {
            audits: a.audits,
            accept_paper_commitment: false,
        };
        // Each subscriber's copy of the log, synced once (the rest of its sessions
        // find it up to date).
        let mut views: Vec<Option<ClientView>> = (0..n).map(|_| None).collect();
        let mut undetected = 0u64;
        let mut caught_auths = 0u64;
        let mut tagged = 0u64;
        let mut t_s = NOW;
        let t0 = Instant::now();
        for _ in 0..a.trials {
            let mut order: Vec<u64> = (0..n).collect();
            tacit_crypto::rng::shuffle(&mut rng, &mut order);
            let mut detected = false;
            for &row in order.iter().take(a.auths as usize) {
                let c = TracEdgeClient::new(vk, row, subs[row as usize].clone(), config);
                let view = match &mut views[row as usize] {
                    Some(v) => v,
                    slot => slot.insert(ClientView::for_receipt(receipts[row as usize].clone(), u64::MAX / 2)?),
                };
                t_s += 1;
                let run = authenticate_in_process(&mut server, &c, view, hint.clone(), t_s, &mut rng);
                if run.key_index.is_some_and(|k| k > 0) {
                    tagged += 1;
                }
                match run.client {
                    Ok(ClientOutcome::Caught(p)) | Err(ClientStop::Caught(p)) => {
                        p.verify()?;
                        detected = true;
                        caught_auths += 1;
                    }
                    Ok(_) => {}
                    Err(s) => bail!("a session stopped: {s}"),
                }
            }
            if !detected {
                undetected += 1;
            }
        }
        let elapsed = t0.elapsed().as_secs_f64();
        // The paper's formula over the rows checked: a own rows, plus α audited rows
        // per authentication (then an approximation: audited rows may repeat and
        // share a slot).
        let checked = (a.auths * (1 + a.audits as u64)).min(n - m);
        let p_nd: f64 = (0..checked).map(|i| 1.0 - m as f64 / (n - i) as f64).product();
        let measured = undetected as f64 / a.trials as f64;
        let total = a.trials * a.auths;
        let line = serde_json::json!({
            "m": m, "n": n, "auths_per_trial": a.auths, "rows_checked_per_trial": checked, "audits": a.audits, "trials": a.trials,
            "p_nd_formula": p_nd, "p_nd_measured": measured,
            "detection_formula": 1.0 - p_nd, "detection_measured": 1.0 - measured,
            "per_auth_exposure_formula": m as f64 / n as f64,
            "per_auth_exposure_measured": caught_auths as f64 / total as f64,
            "bits_if_commitment_matches": (n as f64 / (n - m) as f64).log2(),
            "bits_if_no_match": (n as f64 / m as f64).log2(),
            "tagged_without_detection": tagged, "seconds": elapsed,
        });
        if !a.json {
            println!(
                "m = {m:>3}: p_nd formula {p_nd:.4}, measured {measured:.4} over {} trials of {} authentications (α = {}); per authentication exposed {:.4} (m/n = {:.4}); server learns {:.3} bits (commitment matches) or {:.3} bits (no match); {:.1} s",
                a.trials,
                a.auths,
                a.audits,
                caught_auths as f64 / total as f64,
                m as f64 / n as f64,
                (n as f64 / (n - m) as f64).log2(),
                (n as f64 / m as f64).log2(),
                elapsed
            );
        }
        lines.push(line);
    }
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({"rows": n, "lines": lines}))?
        );
    }
    Ok(())
}
