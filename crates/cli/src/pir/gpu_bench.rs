//! `tacit bench pir backends --backend lwe-gpu`: the GPU server beside its two floors
//! measured in the same run on the same device — one read of the table (a kernel
//! that only loads it) and the same-shaped int8 tensor-core product through cuBLASLt
//! with no limb split or recombination — plus the table build and correctness
//! checks by a real client.

use crate::util::median;
use std::time::Instant;

use anyhow::{Result, bail};
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use rayon::prelude::*;
use serde_json::{Value, json};
use tacit_pir::gpu::{GpuConfig, GpuLweServer, GpuSelection};
use tacit_pir::lwe::{LweClient, LweParams, LweQuery};
use tacit_pir::{PirClient, PirServer, Selection, Table, TableShape};

use super::bench::BackendsArgs;

/// Milliseconds for one batch end to end (median of three, after one warm-up).
fn end_to_end_ms(server: &GpuLweServer, qs: &[LweQuery]) -> Result<f64> {
    let mut times = Vec::new();
    for i in 0..4 {
        let t = Instant::now();
        std::hint::black_box(server.answer_batch(qs)?);
        if i >= 1 {
            times.push(t.elapsed().as_secs_f64() * 1e3);
        }
    }
    Ok(median(times))
}

/// `n` queries of random elements for `server`'s table: the server's work does not
/// depend on what the elements are.
fn random_queries(server: &GpuLweServer, n: usize, seed: u64) -> Vec<LweQuery> {
    let cols = server.params().cols();
    let id = server.table_id();
    (0..n)
        .into_par_iter()
        .map(|i| {
            let mut rng = ChaCha20Rng::seed_from_u64(seed ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
            LweQuery {
                table_id: id,
                values: (0..cols).map(|_| rng.next_u32()).collect(),
            }
        })
        .collect()
}

fn shape_run(a: &BackendsArgs, rows: u64, bytes: u32, rng: &mut ChaCha20Rng) -> Result<Value> {
    let shape = TableShape::new(rows, bytes)?;
    if !a.json {
        eprintln!("lwe-gpu: {rows} rows of {bytes} bytes: making the table …");
    }
    let table = Table::random(shape, rng);
    let mut seed = [0u8; 16];
    rng.fill_bytes(&mut seed);
    let params = LweParams::new(shape, seed)?;
    let config = GpuConfig {
        gpus: a.gpus.parse()?,
        ..Default::default()
    };
    if !a.json {
        eprintln!("lwe-gpu: building the table and the hint on the GPU …");
    }
    let t = Instant::now();
    let server = GpuLweServer::setup(&table, params, config)?;
    let build_s = t.elapsed().as_secs_f64();
    // A real client decodes single and batched answers.
    let client = LweClient::new(server.hint())?;
    let rows_checked: Vec<u64> = vec![0, rows / 3, rows - 1];
    let mut states = Vec::new();
    let mut queries = Vec::new();
    for &r in &rows_checked {
        let (st, q) = client.query(&Selection::row(r), rng)?;
        states.push(st);
        queries.push(q);
    }
    let mut batch = queries.clone();
    batch.extend(random_queries(&server, 61, 5));
    let answers = server.answer_batch(&batch)?;
    for (i, &r) in rows_checked.iter().enumerate() {
        let single = server.answer(&queries[i])?;
        for ans in [&single, &answers[i]] {
            if client.decode(&states[i], ans)?.to_row_bytes(bytes) != table.row(r)? {
                bail!("lwe-gpu decoded a wrong row {r} at {rows} rows");
            }
        }
    }
    drop(table);
    if !a.json {
        eprintln!("lwe-gpu: timing …");
    }
    // Latency of one query, end to end (copy in, kernel, copy out).
    let one = random_queries(&server, 1, 7);
    let mut lat = Vec::new();
    for i in 0..a.runs.max(5) + 2 {
        let t = Instant::now();
        std::hint::black_box(server.answer(&one[0])?);
        if i >= 2 {
            lat.push(t.elapsed().as_secs_f64() * 1e3);
        }
    }
    let latency_ms = median(lat);
    let latency_device_ms = server.time_device_batch(1, a.runs.max(5), false)?;
    let mut batches = Vec::new();
    let (mut best, mut best_b, mut best_dev) = (0.0f64, 1usize, 0.0f64);
    for &b in &a.gpu_batch {
        let qs = random_queries(&server, b, b as u64);
        let ms = end_to_end_ms(&server, &qs)?;
        let dev_ms = server.time_device_batch(b, 3, false)?;
        let qps = b as f64 / ms * 1e3;
        let dev_qps = b as f64 / dev_ms * 1e3;
        if qps > best {
            best = qps;
            best_b = b;
        }
        best_dev = best_dev.max(dev_qps);
        batches.push(
            json!({"batch": b, "ms": ms, "queries_per_s": qps, "device_ms": dev_ms, "device_queries_per_s": dev_qps}),
        );
    }
    let floor_b = *a.gpu_batch.iter().max().unwrap_or(&4096);
    let (scan_ms, gemm_ms) = server.floors(floor_b.max(1), 5)?;
    let gemm_qps = floor_b as f64 / gemm_ms * 1e3;
    // The tensor-core path alone at batch 1 (for comparison with the direct kernel).
    let latency_gemm_path_ms = server.time_device_batch(1, 5, true)?;
    Ok(json!({
        "rows": rows,
        "row_bytes": bytes,
        "table_bytes": shape.table_bytes(),
        "matrix_rows": params.matrix_rows(),
        "matrix_cols": params.cols(),
        "matrix_bytes_on_gpus": server.matrix_bytes(),
        "parts": server.parts().iter().map(|(d, r0, n)| json!({"gpu": d, "first_row": r0, "rows": n})).collect::<Vec<_>>(),
        "devices": server.devices(),
        "decoded_ok": true,
        "gpu_table_build_s": build_s,
        "gpu_latency_ms": latency_ms,
        "gpu_latency_device_ms": latency_device_ms,
        "gpu_latency_tensor_core_path_ms": latency_gemm_path_ms,
        "gpu_scan_floor_ms": scan_ms,
        "latency_vs_scan_floor": latency_ms / scan_ms,
        "latency_device_vs_scan_floor": latency_device_ms / scan_ms,
        "gpu_queries_per_s": best,
        "gpu_best_batch": best_b,
        "gpu_device_queries_per_s": best_dev,
        "gpu_gemm_floor_batch": floor_b,
        "gpu_gemm_floor_ms": gemm_ms,
        "gpu_gemm_floor_queries_per_s": gemm_qps,
        "throughput_vs_gemm_floor": best / gemm_qps,
        "device_throughput_vs_gemm_floor": best_dev / gemm_qps,
        "batches": batches,
    }))
}

/// `--gpu-scaling`: each GPU alone over the whole table (its floors, latency and
/// throughput), then the first k GPUs together for k = 2, 3, …
fn scaling(a: &BackendsArgs, rows: u64, bytes: u32, rng: &mut ChaCha20Rng) -> Result<Value> {
    let count = tacit_pir::gpu::available()?;
    let list: Vec<usize> = match a.gpus.parse()? {
        GpuSelection::All => (0..count).collect(),
        GpuSelection::List(l) => l,
    };
    let shape = TableShape::new(rows, bytes)?;
    let table = Table::random(shape, rng);
    let mut seed = [0u8; 16];
    rng.fill_bytes(&mut seed);
    let params = LweParams::new(shape, seed)?;
    let batch = *a.gpu_batch.iter().max().unwrap_or(&4096);
    let measure = |gpus: &[usize]| -> Result<Value> {
        let spec = gpus.iter().map(|g| g.to_string()).collect::<Vec<_>>().join(",");
        if !a.json {
            eprintln!("lwe-gpu scaling: GPUs {spec} …");
        }
        let config = GpuConfig {
            gpus: spec.parse()?,
            ..Default::default()
        };
        let t = Instant::now();
        let server = GpuLweServer::setup(&table, params, config)?;
        let build_s = t.elapsed().as_secs_f64();
        let one = random_queries(&server, 1, 3);
        let mut lat = Vec::new();
        for i in 0..a.runs.max(5) + 2 {
            let t = Instant::now();
            std::hint::black_box(server.answer(&one[0])?);
            if i >= 2 {
                lat.push(t.elapsed().as_secs_f64() * 1e3);
            }
        }
        let qs = random_queries(&server, batch, 4);
        let ms = end_to_end_ms(&server, &qs)?;
        let dev_ms = server.time_device_all(batch, 3)?;
        let mut v = json!({
            "gpus": spec, "table_build_s": build_s, "latency_ms": median(lat),
            "batch": batch, "queries_per_s": batch as f64 / ms * 1e3,
            "device_queries_per_s": batch as f64 / dev_ms * 1e3,
            "devices": server.devices(),
        });
        if gpus.len() == 1 {
            let (scan, gemm) = server.floors(batch, 5)?;
            v["scan_floor_ms"] = json!(scan);
            v["gemm_floor_queries_per_s"] = json!(batch as f64 / gemm * 1e3);
        }
        Ok(v)
    };
    let mut single = Vec::new();
    for &g in &list {
        single.push(measure(&[g])?);
    }
    let mut together = Vec::new();
    for k in 2..=list.len() {
        let mut v = measure(&list[..k])?;
        let base = &single[0];
        for key in ["queries_per_s", "device_queries_per_s"] {
            let r = v[key].as_f64().unwrap_or(f64::NAN) / base[key].as_f64().unwrap_or(f64::NAN);
            v[format!("{key}_vs_one_gpu")] = json!(r);
        }
        together.push(v);
    }
    Ok(json!({"rows": rows, "row_bytes": bytes, "split": "row blocks", "each_gpu": single, "together": together}))
}

/// Runs the lwe-gpu part of `bench pir backends`.
pub fn run(a: &BackendsArgs) -> Result<()> {
    tacit_pir::gpu::available()?;
    if a.gpu_scaling {
        let mut rng = ChaCha20Rng::from_entropy();
        let mut out = Vec::new();
        for &rows in &a.rows {
            for &bytes in &a.bytes {
                out.push(scaling(a, rows, bytes, &mut rng)?);
            }
        }
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({"backend": "lwe-gpu", "scaling": out}))?
        );
        return Ok(());
    }
    let mut rng = ChaCha20Rng::from_entropy();
    let mut shapes = Vec::new();
    for &rows in &a.rows {
        for &bytes in &a.bytes {
            shapes.push(shape_run(a, rows, bytes, &mut rng)?);
        }
    }
    let out = json!({"backend": "lwe-gpu", "gpus": a.gpus, "shapes": shapes});
    if a.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    for s in &shapes {
        let f = |k: &str| s[k].as_f64().unwrap_or(f64::NAN);
        println!("lwe-gpu {} rows x {} B on {}", s["rows"], s["row_bytes"], s["devices"]);
        println!("  table build (layout, upload, hint): {:.2} s", f("gpu_table_build_s"));
        println!(
            "  one query: {:.3} ms end to end ({:.3} ms on the device); one read of the table {:.3} ms: {:.2}x",
            f("gpu_latency_ms"),
            f("gpu_latency_device_ms"),
            f("gpu_scan_floor_ms"),
            f("latency_vs_scan_floor")
        );
        println!(
            "  throughput: {:.0} queries/s end to end at batch {} ({:.0} on the device); cuBLASLt int8 floor {:.0}/s: {:.2}x",
            f("gpu_queries_per_s"),
            s["gpu_best_batch"],
            f("gpu_device_queries_per_s"),
            f("gpu_gemm_floor_queries_per_s"),
            f("throughput_vs_gemm_floor")
        );
        println!(
            "  {:>6} {:>10} {:>12} {:>10} {:>12}",
            "batch", "ms", "queries/s", "device ms", "device q/s"
        );
        for b in s["batches"].as_array().into_iter().flatten() {
            let g = |k: &str| b[k].as_f64().unwrap_or(f64::NAN);
            println!(
                "  {:>6} {:>10.3} {:>12.0} {:>10.3} {:>12.0}",
                b["batch"],
                g("ms"),
                g("queries_per_s"),
                g("device_ms"),
                g("device_queries_per_s")
            );
        }
    }
    Ok(())
}

/// The paper's block parameters and per-column time (§6, Fig. 4): β = 96 on the
/// GTX 780 (1.077 ms per column, FFT multiplication and both addition steps), β = 64
/// on the Amazon instance.
const PAPER_GTX780_COLUMN_MS: f64 = 1.077;

/// Runs `bench pir backends --backend ntru-paper-gpu`: the per-column kernel of
/// `ntru-paper` on one GPU at the paper's 22 780 regions, swept over β, checked
/// against the CPU's sum and timed beside one CPU thread's column in the same run.
pub fn run_ntru(a: &BackendsArgs) -> Result<()> {
    tacit_pir::gpu::available()?;
    let sel: GpuSelection = a.gpus.parse()?;
    let device = sel.devices()?[0];
    let regions = tacit_pir::ntru::NtruLayout::new(TableShape::new(10_000_000, 41)?, 1)?.regions();
    let mut rng = ChaCha20Rng::from_entropy();
    if !a.json {
        eprintln!("transforming a column and a query of {regions} regions …");
    }
    let (col, q) = tacit_pir::ntru::random_transformed(regions, &mut rng);
    let mut cpu = Vec::new();
    let mut want = Vec::new();
    for _ in 0..3 {
        let t = Instant::now();
        want = tacit_pir::ntru::column_accumulate(&col, &q);
        cpu.push(crate::util::millis(t.elapsed()));
    }
    let cpu_ms = median(cpu);
    let mut g = tacit_pir::gpu::ntru::GpuColumn::new(device, &col, &q)?;
    let betas = [
        8u32, 16, 32, 64, 96, 128, 192, 256, 384, 528, 768, 1056, 1584, 2112, 4224,
    ];
    for &beta in &betas {
        if g.accumulate(beta)? != want {
            bail!("the GPU's column sum with β = {beta} differs from the CPU's");
        }
    }
    let reps = a.runs.max(20);
    let mut sweep = Vec::new();
    for &beta in &betas {
        sweep.push((beta, g.time_ms(beta, reps)?));
    }
    let (best_beta, best_ms) = sweep
        .iter()
        .copied()
        .min_by(|x, y| x.1.total_cmp(&y.1))
        .unwrap_or((0, f64::NAN));
    let column_bytes = 2 * regions * 1024 * 8;
    let out = json!({
        "backend": "ntru-paper-gpu",
        "insecure": true,
        "device": g.device_name(),
        "regions": regions,
        "column_and_query_bytes": column_bytes,
        "equal_to_cpu": true,
        "cpu_one_thread_column_ms": cpu_ms,
        "ntru_gpu_column_ms": best_ms,
        "ntru_gpu_best_beta": best_beta,
        "ntru_gpu_column_gb_per_s": column_bytes as f64 / best_ms / 1e6,
        "ntru_gpu_sweep": sweep.iter().map(|(b, ms)| json!({"beta": b, "column_ms": ms})).collect::<Vec<_>>(),
        "paper_gtx780_column_ms": PAPER_GTX780_COLUMN_MS,
        "paper_gtx780_beta": 96,
        "paper_amazon_beta": 64,
        "reps": reps,
    });
    if a.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    println!(
        "ntru-paper (INSECURE) per-column kernel on {} — one column of {regions} regions, one query",
        g.device_name()
    );
    println!("  equal to the CPU's sum for every β: yes");
    println!("  {:>6}  {:>12}", "β", "column ms");
    for (b, ms) in &sweep {
        println!("  {b:>6}  {ms:>12.4}");
    }
    println!(
        "  best: β = {best_beta}, {best_ms:.4} ms per column ({:.0} GB/s of column and query); one CPU thread {cpu_ms:.1} ms; the paper's GTX 780 {PAPER_GTX780_COLUMN_MS} ms at β = 96",
        column_bytes as f64 / best_ms / 1e6
    );
    Ok(())
}
