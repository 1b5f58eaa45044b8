//! `tacit bench pir backends`: both PIR backends, the peer crates and the memory
//! floor, measured in one run so that the ratios hold on a noisy machine; and the
//! paper's Tables 3, 6, 7 and 8 for `ntru-paper`.

use crate::util::median;
use std::time::Instant;

use anyhow::{Result, bail};
use clap::{Args, Subcommand};
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use rayon::prelude::*;
use serde_json::{Value, json};
use tacit_pir::lwe::{LweClient, LweParams, LweServer};
use tacit_pir::ntru::{NtruClient, NtruKeys, NtruLayout, NtruParams, NtruServer};
use tacit_pir::{PirClient, PirServer, Selection, Table, TableShape};

use super::peers;
use tacit_pir::local::{NTRU_MAX_TRANSFORMED, NTRU_WARNING, ntru_transformed_bytes};

/// `tacit bench pir …`.
#[derive(Debug, Subcommand)]
pub enum PirBenchCommand {
    /// Both PIR backends side by side with the peer crates and a plain read of the
    /// table; the paper's Tables 3, 6, 7, 8 for ntru-paper.
    #[command(after_help = "\
Examples:
  tacit bench pir backends                       # 10^6 and 10^7 rows of 41 and 16 bytes
  tacit bench pir backends --rows 1000000 --bytes 41 --json
  tacit bench pir backends --rows 10000000 --peers none
  tacit bench pir backends --backend lwe-gpu --rows 10000000 --json   # on an NVIDIA GPU")]
    Backends(BackendsArgs),
    /// TracEdge: table creation against n with the scalar-multiplication floor
    /// (Table 5), one authentication split into its parts (Table 7), and
    /// authentications per second with concurrent sessions batched into one pass.
    #[command(after_help = "\
Examples:
  tacit bench pir auth --rows 100000,1000000
  tacit bench pir auth --rows 10000000 --json")]
    Auth(super::bench_tracedge::AuthBenchArgs),
    /// TracEdge: a cheating server that gives m rows a second key, caught over many
    /// real authentications, against p_nd = Π_{i<a} (1 − m/(n − i)) and Table 1.
    #[command(
        after_help = "Example:\n  tacit bench pir detection --rows 256 --flagged 1,4,16,64 --auths 8 --trials 100"
    )]
    Detection(super::bench_tracedge::DetectionArgs),
}

/// Options of `bench pir backends`.
#[derive(Debug, Args)]
pub struct BackendsArgs {
    /// Table rows (a comma-separated list).
    #[arg(long, value_delimiter = ',', default_values_t = [1_000_000u64, 10_000_000])]
    pub(crate) rows: Vec<u64>,
    /// Bytes per row (a comma-separated list; 41 holds the paper's 326-bit rows, 16 is 128 bits).
    #[arg(long, value_delimiter = ',', default_values_t = [41u32, 16])]
    pub(crate) bytes: Vec<u32>,
    /// Batch sizes for the lwe server.
    #[arg(long, value_delimiter = ',', default_values_t = [4usize, 8, 16, 32])]
    batch: Vec<usize>,
    /// Repetitions of each single-query measurement (the median is reported).
    #[arg(long, default_value_t = 9)]
    pub(crate) runs: usize,
    /// Rows of the ntru-paper table measured end to end (its transformed table takes
    /// about 6 KB per 41-byte row, so 10^7 rows do not fit in memory).
    #[arg(long, default_value_t = 100_000)]
    ntru_rows: u64,
    /// Peers: all, none, or a list of simplepir, spiral-rs, chalamet_pir.
    #[arg(long, default_value = "all")]
    peers: String,
    /// Rows for chalamet_pir (its setup takes minutes beyond this) and lwe beside it.
    #[arg(long, default_value_t = 65_536)]
    chalamet_rows: u64,
    /// Additions per modulus for Table 3 before giving up.
    #[arg(long, default_value_t = 20_000)]
    table3_budget: u64,
    /// Skip the ntru-paper part.
    #[arg(long)]
    no_ntru: bool,
    /// Print JSON instead of tables.
    #[arg(long)]
    pub(crate) json: bool,
    /// Measure one backend only: lwe-gpu runs the GPU server beside its two floors
    /// (a read of the table and the same-shaped cuBLASLt int8 product);
    /// ntru-paper-gpu times the paper's per-column GPU kernel against its block
    /// parameter β (Fig. 4) at the paper's 22 780 regions, beside the CPU's column in
    /// the same run; without it, the CPU backends and the peers.
    #[arg(long, value_parser = ["lwe-gpu", "ntru-paper-gpu"])]
    pub(crate) backend: Option<String>,
    /// GPUs for lwe-gpu: all, or ordinals like 0,1 (0,0 splits the table in two parts on GPU 0).
    #[arg(long, default_value = "all")]
    pub(crate) gpus: String,
    /// With lwe-gpu: measure 1, 2, … of the GPUs in --gpus in one run (latency,
    /// throughput, and each GPU's own floors over the whole table).
    #[arg(long)]
    pub(crate) gpu_scaling: bool,
    /// Batch sizes for lwe-gpu.
    #[arg(long, value_delimiter = ',', default_values_t = [1usize, 8, 64, 256, 1024, 2048, 4096])]
    pub(crate) gpu_batch: Vec<usize>,
}

/// Runs a `bench pir` experiment.
pub fn run(cmd: PirBenchCommand) -> Result<()> {
    match cmd {
        PirBenchCommand::Backends(a) => backends(&a),
        PirBenchCommand::Auth(a) => super::bench_tracedge::auth(&a),
        PirBenchCommand::Detection(a) => super::bench_tracedge::detection(&a),
    }
}

fn ms_since(t: Instant) -> f64 {
    crate::util::millis(t.elapsed())
}

/// The memory-bandwidth floor: one multi-threaded sequential read of the table
/// (every 8-byte word summed), median of `runs`.
pub fn scan_floor_ms(data: &[u8], runs: usize) -> f64 {
    let times = (0..runs.max(3))
        .map(|_| {
            let t = Instant::now();
            let s: u64 = data
                .par_chunks(1 << 20)
                .map(|c| {
                    let mut acc = [0u64; 4];
                    let mut it = c.chunks_exact(32);
                    for w in &mut it {
                        for (k, a) in acc.iter_mut().enumerate() {
                            *a = a.wrapping_add(u64::from_le_bytes(w[8 * k..8 * k + 8].try_into().unwrap_or([0; 8])));
                        }
                    }
                    let tail: u64 = it.remainder().iter().map(|&b| b as u64).sum();
                    acc.iter().fold(tail, |x, y| x.wrapping_add(*y))
                })
                .reduce(|| 0, |a, b| a.wrapping_add(b));
            std::hint::black_box(s);
            ms_since(t)
        })
        .collect();
    median(times)
}

fn wanted_peers(spec: &str) -> Result<Vec<&'static str>> {
    let all = ["simplepir", "spiral-rs", "chalamet_pir"];
    match spec {
        "all" => Ok(all.to_vec()),
        "none" => Ok(Vec::new()),
        list => list
            .split(',')
            .map(|p| {
                all.iter().find(|a| **a == p.trim()).copied().ok_or_else(|| {
                    anyhow::anyhow!("unknown peer {p:?}; the peers are simplepir, spiral-rs, chalamet_pir")
                })
            })
            .collect(),
    }
}

/// lwe on one table: setup, sizes, client times, single and batched server times.
fn bench_lwe(table: &Table, a: &BackendsArgs, rng: &mut ChaCha20Rng) -> Result<Value> {
    let shape = table.shape();
    let mut seed = [0u8; 16];
    rng.fill_bytes(&mut seed);
    let params = LweParams::new(shape, seed)?;
    let t = Instant::now();
    let server = LweServer::setup(table, params)?;
    let setup_s = t.elapsed().as_secs_f64();
    let client = LweClient::new(server.hint())?;
    let target = shape.rows / 3;
    // Client: the full query, its offline and online halves, and decoding.
    let mut q_times = Vec::new();
    let mut prep_times = Vec::new();
    let mut online_times = Vec::new();
    let mut last = None;
    for _ in 0..a.runs.clamp(3, 5) {
        let t = Instant::now();
        let r = client.query(&Selection::row(target), rng)?;
        q_times.push(ms_since(t));
        let t = Instant::now();
        let prepared = client.prepare(rng);
        prep_times.push(ms_since(t));
        let t = Instant::now();
        let r2 = client.finish(prepared, &Selection::row(target))?;
        online_times.push(ms_since(t));
        std::hint::black_box(&r2);
        last = Some(r);
    }
    let (state, query) = last.ok_or_else(|| anyhow::anyhow!("no query"))?;
    // Server, one query.
    let mut times = Vec::new();
    let mut answer = None;
    for _ in 0..a.runs.max(1) {
        let t = Instant::now();
        answer = Some(server.answer(&query)?);
        times.push(ms_since(t));
    }
    let answer = answer.ok_or_else(|| anyhow::anyhow!("no answer"))?;
    let mut dec_times = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let d = client.decode(&state, &answer)?;
        dec_times.push(ms_since(t));
        if d.to_row_bytes(shape.row_bytes) != table.row(target)? {
            bail!("lwe decoded a wrong row at {} rows", shape.rows);
        }
    }
    // Batches: distinct rows, one pass over the table each.
    let mut batches = Vec::new();
    let mut best = 0.0f64;
    for &b in &a.batch {
        let rows: Vec<u64> = (0..b as u64).map(|k| (k * 7_919_993 + 11) % shape.rows).collect();
        let (states, queries): (Vec<_>, Vec<_>) = rows
            .iter()
            .map(|&i| client.query(&Selection::row(i), rng))
            .collect::<tacit_pir::Result<Vec<_>>>()?
            .into_iter()
            .unzip();
        let mut bt = Vec::new();
        let mut answers = Vec::new();
        for _ in 0..a.runs.clamp(3, 5) {
            let t = Instant::now();
            answers = server.answer_batch(&queries)?;
            bt.push(ms_since(t));
        }
        for ((i, st), ans) in rows.iter().zip(&states).zip(&answers) {
            if client.decode(st, ans)?.to_row_bytes(shape.row_bytes) != table.row(*i)? {
                bail!("lwe decoded a wrong row in a batch of {b}");
            }
        }
        let ms = median(bt);
        let qps = b as f64 / ms * 1e3;
        best = best.max(qps);
        batches.push(json!({"batch": b, "ms": ms, "queries_per_s": qps}));
    }
    let sizes = server.sizes();
    Ok(json!({
        "log_p": params.log_p(),
        "matrix_rows": params.matrix_rows(),
        "matrix_cols": params.cols(),
        "failure_log2": params.failure_log2(),
        "setup_s": setup_s,
        "hint_bytes": sizes.hint_bytes,
        "double_pir_hint_bytes": params.double_pir_hint_bytes(),
        "query_bytes": sizes.query_bytes,
        "answer_bytes": sizes.answer_bytes,
        "server_ms_per_query": median(times),
        "batches": batches,
        "batch_queries_per_s": best,
        "client_query_ms": median(q_times),
        "client_prepare_ms": median(prep_times),
        "client_online_ms": median(online_times),
        "decode_ms": median(dec_times),
    }))
}

fn run_peer(name: &str, rows: u64, bytes: u32, runs: usize) -> Value {
    let r = match name {
        "simplepir" => peers::simplepir(rows, bytes, runs),
        "spiral-rs" => peers::spiral(rows, bytes, runs.min(2)),
        _ => peers::chalamet(rows, bytes, runs),
    };
    match r {
        Ok(p) => serde_json::to_value(p).unwrap_or(Value::Null),
        Err(e) => json!({"name": name, "rows": rows, "row_bytes": bytes, "error": e.to_string()}),
    }
}

fn ntru_part(a: &BackendsArgs, rng: &mut ChaCha20Rng) -> Result<Value> {
    eprintln!("{NTRU_WARNING}");
    let bytes = a.bytes.first().copied().unwrap_or(41);
    // End to end at ntru_rows.
    let shape = TableShape::new(a.ntru_rows, bytes)?;
    let layout = NtruLayout::square(shape);
    if ntru_transformed_bytes(&layout) > NTRU_MAX_TRANSFORMED {
        bail!(
            "--ntru-rows {} needs a {} GiB transformed table",
            a.ntru_rows,
            ntru_transformed_bytes(&layout) >> 30
        );
    }
    let table = Table::random(shape, rng);
    let scan = scan_floor_ms(table.as_bytes(), a.runs);
    let t = Instant::now();
    let server = NtruServer::setup(&table, layout)?;
    let setup_s = t.elapsed().as_secs_f64();
    let client = NtruClient::new(layout, rng);
    let target = shape.rows / 2;
    let (state, q) = client.query(&Selection::row(target), rng)?;
    let mut times = Vec::new();
    let mut ans = None;
    for _ in 0..a.runs.clamp(1, 3) {
        let t = Instant::now();
        ans = Some(server.answer(&q)?);
        times.push(ms_since(t));
    }
    let ans = ans.ok_or_else(|| anyhow::anyhow!("no answer"))?;
    if client.decode(&state, &ans)?.to_row_bytes(bytes) != table.row(target)? {
        bail!("ntru-paper decoded a wrong row");
    }
    let batch: Vec<_> = (0..4).map(|_| q.clone()).collect();
    let t = Instant::now();
    server.answer_batch(&batch)?;
    let batch_qps = 4.0 / ms_since(t) * 1e3;
    let sizes = server.sizes();
    drop(server);
    // Table 6 and the query size at the paper's 10^7 rows (client side only).
    let paper_shape = TableShape::new(10_000_000, bytes)?;
    let mut t6 = Vec::new();
    for (name, layout) in [
        ("flat", NtruLayout::new(paper_shape, 1)?),
        ("square", NtruLayout::square(paper_shape)),
    ] {
        let c = NtruClient::new(layout, rng);
        let t = Instant::now();
        let (_, q) = c.query(&Selection::row(12_345), rng)?;
        let total = ms_since(t);
        t6.push(json!({
            "layout": name, "rows_per_group": layout.group(), "encryptions": q.cts.len(),
            "total_ms": total, "avg_encryption_us": total * 1e3 / q.cts.len() as f64,
            "query_bytes": layout.sizes().query_bytes, "answer_bytes": layout.sizes().answer_bytes,
            "transformed_table_bytes": ntru_transformed_bytes(&layout),
        }));
    }
    // Table 7: extraction = one decryption per bit of the row.
    let keys = NtruKeys::generate(NtruParams::PAPER, rng);
    let ct = keys.encrypt(&vec![0u32; NtruParams::PAPER.n], rng);
    let bits = 8 * bytes as usize;
    let t = Instant::now();
    for _ in 0..bits {
        std::hint::black_box(keys.decrypt(&ct));
    }
    let dec_total = ms_since(t);
    // Table 8: per-column operations with the paper's 10^7 rows (flat: 22 780 regions).
    let regions = NtruLayout::new(paper_shape, 1)?.regions();
    let pt = tacit_pir::ntru::poly_timings(regions, 200, rng);
    // Table 3: additions of E(0) to E(1) before decryption fails.
    let mut t3 = Vec::new();
    for log_q in 11..=21u32 {
        let t = Instant::now();
        let (k, failed) = tacit_pir::ntru::additions_until_failure(log_q, a.table3_budget, rng);
        t3.push(json!({"log_q": log_q, "additions": k, "failed": failed, "s": t.elapsed().as_secs_f64()}));
    }
    Ok(json!({
        "insecure": true,
        "rows": shape.rows, "row_bytes": bytes, "rows_per_group": layout.group(),
        "regions": layout.regions(), "columns": layout.columns(),
        "transformed_table_bytes": ntru_transformed_bytes(&layout),
        "setup_s": setup_s, "scan_floor_ms": scan,
        "server_ms_per_query": median(times.clone()),
        "server_vs_scan_floor": median(times) / scan,
        "batch_queries_per_s": batch_qps,
        "hint_bytes": sizes.hint_bytes, "query_bytes": sizes.query_bytes, "answer_bytes": sizes.answer_bytes,
        "table3": t3,
        "table6": t6,
        "table7": {"decryptions": bits, "avg_decryption_us": dec_total * 1e3 / bits as f64, "total_ms": dec_total},
        "table8": {"regions": pt.regions, "add_us": pt.add_us, "schoolbook_mul_us": pt.schoolbook_mul_us,
                   "ntt_mul_us": pt.ntt_mul_us, "column_ms": pt.column_us / 1e3,
                   "columns_at_paper_shape": 8 * bytes,
                   "one_thread_ms_for_all_columns": pt.column_us / 1e3 * (8 * bytes) as f64},
    }))
}

fn backends(a: &BackendsArgs) -> Result<()> {
    match a.backend.as_deref() {
        Some("lwe-gpu") => return super::gpu_bench::run(a),
        Some("ntru-paper-gpu") => return super::gpu_bench::run_ntru(a),
        _ => {}
    }
    let peers = wanted_peers(&a.peers)?;
    let mut rng = ChaCha20Rng::from_entropy();
    let threads = rayon::current_num_threads();
    let mut shapes = Vec::new();
    for &rows in &a.rows {
        for &bytes in &a.bytes {
            let shape = TableShape::new(rows, bytes)?;
            if !a.json {
                eprintln!("measuring {rows} rows of {bytes} bytes …");
            }
            let table = Table::random(shape, &mut rng);
            let scan = scan_floor_ms(table.as_bytes(), a.runs);
            let mut lwe = bench_lwe(&table, a, &mut rng)?;
            let server_ms = lwe["server_ms_per_query"].as_f64().unwrap_or(f64::NAN);
            lwe["server_vs_scan_floor"] = json!(server_ms / scan);
            drop(table);
            let mut peer_results = Vec::new();
            for p in peers.iter().filter(|p| **p != "chalamet_pir") {
                let mut r = run_peer(p, rows, bytes, 3);
                if let Some(ms) = r["peer_server_ms"].as_f64() {
                    r["peer_vs_lwe"] = json!(ms / server_ms);
                    r["peer_vs_scan_floor"] = json!(ms / scan);
                }
                peer_results.push(r);
            }
            shapes.push(json!({
                "rows": rows, "row_bytes": bytes, "table_bytes": shape.table_bytes(),
                "scan_floor_ms": scan, "server_ms_per_query": server_ms,
                "server_vs_scan_floor": server_ms / scan,
                "batch_queries_per_s": lwe["batch_queries_per_s"].clone(),
                "lwe": lwe, "peers": peer_results,
            }));
        }
    }
    // chalamet_pir at its own (smaller) shape, with lwe and the floor beside it.
    let mut small = Vec::new();
    if peers.contains(&"chalamet_pir") {
        for &bytes in &a.bytes {
            let shape = TableShape::new(a.chalamet_rows, bytes)?;
            if !a.json {
                eprintln!("measuring chalamet_pir at {} rows of {bytes} bytes …", a.chalamet_rows);
            }
            let table = Table::random(shape, &mut rng);
            let scan = scan_floor_ms(table.as_bytes(), a.runs);
            let lwe = bench_lwe(&table, a, &mut rng)?;
            let server_ms = lwe["server_ms_per_query"].as_f64().unwrap_or(f64::NAN);
            let mut r = run_peer("chalamet_pir", a.chalamet_rows, bytes, 3);
            if let Some(ms) = r["peer_server_ms"].as_f64() {
                r["peer_vs_lwe"] = json!(ms / server_ms);
                r["peer_vs_scan_floor"] = json!(ms / scan);
            }
            small.push(json!({
                "rows": a.chalamet_rows, "row_bytes": bytes, "scan_floor_ms": scan,
                "server_ms_per_query": server_ms, "server_vs_scan_floor": server_ms / scan,
                "lwe": lwe, "peers": [r],
            }));
        }
    }
    let ntru = if a.no_ntru {
        Value::Null
    } else {
        ntru_part(a, &mut rng)?
    };
    let out = json!({
        "threads": threads,
        "avx2": std::is_x86_feature_detected!("avx2"),
        "avx512_vnni": std::is_x86_feature_detected!("avx512vnni"),
        "lwe_kernel": tacit_pir::lwe::kernel_name(),
        "shapes": shapes,
        "small_shapes": small,
        "ntru_paper": ntru,
    });
    if a.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        print_text(&out);
    }
    Ok(())
}

fn f(v: &Value) -> String {
    match v.as_f64() {
        Some(x) if x.abs() >= 100.0 => format!("{x:.0}"),
        Some(x) if x.abs() >= 10.0 => format!("{x:.1}"),
        Some(x) => format!("{x:.2}"),
        None => "-".into(),
    }
}

fn print_text(out: &Value) {
    println!(
        "threads {}, avx2 {}, avx512-vnni {}, lwe kernel {}",
        out["threads"], out["avx2"], out["avx512_vnni"], out["lwe_kernel"]
    );
    for group in ["shapes", "small_shapes"] {
        for s in out[group].as_array().into_iter().flatten() {
            let l = &s["lwe"];
            println!(
                "\n{} rows x {} bytes: scan floor {} ms | lwe one query {} ms ({}x floor), batch best {} q/s, setup {} s",
                s["rows"],
                s["row_bytes"],
                f(&s["scan_floor_ms"]),
                f(&s["server_ms_per_query"]),
                f(&s["server_vs_scan_floor"]),
                f(&l["batch_queries_per_s"]),
                f(&l["setup_s"])
            );
            println!(
                "  lwe sizes: hint {} B (DoublePIR-compressed would be {} B), query {} B, answer {} B; client query {} ms (offline {} + online {}), decode {} ms",
                l["hint_bytes"],
                l["double_pir_hint_bytes"],
                l["query_bytes"],
                l["answer_bytes"],
                f(&l["client_query_ms"]),
                f(&l["client_prepare_ms"]),
                f(&l["client_online_ms"]),
                f(&l["decode_ms"])
            );
            for b in l["batches"].as_array().into_iter().flatten() {
                println!(
                    "  lwe batch {:>3}: {} ms, {} q/s",
                    b["batch"],
                    f(&b["ms"]),
                    f(&b["queries_per_s"])
                );
            }
            for p in s["peers"].as_array().into_iter().flatten() {
                if let Some(e) = p["error"].as_str() {
                    println!("  peer {}: did not run: {e}", p["name"]);
                } else {
                    println!(
                        "  peer {:<14} {} ms per answer ({}x lwe, {}x floor), db {} B",
                        p["name"].as_str().unwrap_or("?"),
                        f(&p["peer_server_ms"]),
                        f(&p["peer_vs_lwe"]),
                        f(&p["peer_vs_scan_floor"]),
                        p["db_bytes"]
                    );
                }
            }
        }
    }
    let n = &out["ntru_paper"];
    if n.is_null() {
        return;
    }
    println!(
        "\nntru-paper (INSECURE) at {} rows x {} bytes, {} rows per group: one query {} ms ({}x floor {} ms), batch {} q/s; query {} B, answer {} B; transformed table {} B",
        n["rows"],
        n["row_bytes"],
        n["rows_per_group"],
        f(&n["server_ms_per_query"]),
        f(&n["server_vs_scan_floor"]),
        f(&n["scan_floor_ms"]),
        f(&n["batch_queries_per_s"]),
        n["query_bytes"],
        n["answer_bytes"],
        n["transformed_table_bytes"]
    );
    println!("Table 3 (q vs additions of E(0) before a decryption failure):");
    for r in n["table3"].as_array().into_iter().flatten() {
        let failed = r["failed"].as_bool().unwrap_or(false);
        println!(
            "  q = 2^{:<2} {}{}",
            r["log_q"],
            if failed { "" } else { "> " },
            r["additions"]
        );
    }
    println!("Table 6 (query generation at 10^7 rows):");
    for r in n["table6"].as_array().into_iter().flatten() {
        println!(
            "  {:<6} {} encryptions, {} us each, total {} ms, query {} B, answer {} B",
            r["layout"].as_str().unwrap_or("?"),
            r["encryptions"],
            f(&r["avg_encryption_us"]),
            f(&r["total_ms"]),
            r["query_bytes"],
            r["answer_bytes"]
        );
    }
    let t7 = &n["table7"];
    println!(
        "Table 7 (extraction): {} decryptions, {} us each, total {} ms",
        t7["decryptions"],
        f(&t7["avg_decryption_us"]),
        f(&t7["total_ms"])
    );
    let t8 = &n["table8"];
    println!(
        "Table 8 (per column, N = 439): add {} us, schoolbook mult {} us, NTT mult {} us; one column of {} regions {} ms; all {} columns on one thread {} ms",
        f(&t8["add_us"]),
        f(&t8["schoolbook_mul_us"]),
        f(&t8["ntt_mul_us"]),
        t8["regions"],
        f(&t8["column_ms"]),
        t8["columns_at_paper_shape"],
        f(&t8["one_thread_ms_for_all_columns"])
    );
}
