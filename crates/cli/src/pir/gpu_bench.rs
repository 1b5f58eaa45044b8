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

/// Queries per second for a batch of `n` queries from their wire encodings to
/// their answers' wire encodings through the server's pipeline (median of three
/// after one warm-up), and the milliseconds per batch.
fn wire_throughput(server: &GpuLweServer, n: usize) -> Result<(f64, f64)> {
    use tacit_pir::stream::PipelinedLwe;
    use tacit_wire::{Decode, Encode};
    let queries = random_queries(server, n, 11);
    let encoded: Vec<Vec<u8>> = queries.par_iter().map(|q| q.to_wire()).collect();
    // Where each query's values start in its encoding (checked like a decoder).
    let raw: Vec<&[u8]> = encoded
        .iter()
        .map(|e| {
            let mut r = tacit_wire::Reader::new(e);
            tacit_pir::lwe::read_query_raw(&mut r).map(|(_, v)| v)
        })
        .collect::<core::result::Result<_, _>>()?;
    let id = server.pipeline_table_id();
    let m = server.params().matrix_rows();
    let mut times = Vec::new();
    let mut sent = 0usize;
    let mut first_frame = Vec::new();
    for i in 0..4 {
        let t = Instant::now();
        let fill = |j: usize, dst: &mut [u32]| tacit_pir::lwe::be_bytes_to_u32s(raw[j], dst);
        tacit_pir::stream::answer_all(server, n, &fill, &mut |first, a| {
            let frames: Vec<Vec<u8>> = (0..a.len())
                .into_par_iter()
                .map(|j| {
                    let mut w = tacit_wire::Writer::with_capacity(39 + 4 * m);
                    w.put_envelope(tacit_pir::lwe::TAG_ANSWER);
                    w.put_fixed(&id);
                    w.put_count(m);
                    w.put_u32s_be(a.get(j));
                    w.into_bytes()
                })
                .collect();
            sent += frames.len();
            if first == 0 {
                first_frame = frames[0].clone();
            }
            std::hint::black_box(frames);
        })?;
        if i >= 1 {
            times.push(t.elapsed().as_secs_f64() * 1e3);
        }
    }
    if sent != 4 * n {
        bail!("the wire pipeline answered {sent} of {} queries", 4 * n);
    }
    // The encodings are the answers: the first decodes to the plain path's answer.
    if tacit_pir::lwe::LweAnswer::from_wire(&first_frame)? != server.answer(&queries[0])? {
        bail!("the wire pipeline's first answer differs from the server's answer");
    }
    let ms = median(times);
    Ok((n as f64 / ms * 1e3, ms))
}

/// The host's memory bandwidth for plain copies on all cores (GB/s of bytes
/// copied, 256 MiB, median of three).
fn host_copy_gb_per_s() -> f64 {
    let n = 256 << 20;
    let src = vec![1u8; n];
    let mut dst = vec![0u8; n];
    let mut times = Vec::new();
    for _ in 0..4 {
        let t = Instant::now();
        dst.par_chunks_mut(1 << 20)
            .zip(src.par_chunks(1 << 20))
            .for_each(|(d, s)| d.copy_from_slice(s));
        times.push(t.elapsed().as_secs_f64());
        std::hint::black_box(&dst);
    }
    n as f64 / median(times[1..].to_vec()) / 1e9
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
    // The fixed costs of one query beside the read of the table: a launch, the
    // query's copy in and the answer's copy out.
    let tf = server.transfer_floors(a.runs.max(5))?;
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
    // The largest batch again, from the queries' encodings to the answers'
    // encodings: each query decoded straight into the staging memory, each answer
    // encoded straight from where it arrived (what a server on the network does).
    let (wire_qps, wire_ms) = wire_throughput(&server, floor_b)?;
    let chunk = server.chunk();
    let chunk_dev_ms = server.time_device_batch(chunk, 3, false)?;
    let host_copy = host_copy_gb_per_s();
    let latency_floor_ms = scan_ms + tf.launch_ms + tf.h2d_one_ms + tf.d2h_one_ms;
    // The tensor-core path alone at batch 1 (for comparison with the direct kernel).
    let latency_gemm_path_ms = server.time_device_batch(1, 5, true)?;
    let mut out = json!({
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
    });
    let more = json!({
        "gpu_launch_floor_ms": tf.launch_ms,
        "gpu_h2d_one_query_ms": tf.h2d_one_ms,
        "gpu_d2h_one_answer_ms": tf.d2h_one_ms,
        "gpu_latency_floor_ms": latency_floor_ms,
        "latency_vs_latency_floor": latency_ms / latency_floor_ms,
        "gpu_h2d_gb_per_s": tf.h2d_gb_s,
        "gpu_d2h_gb_per_s": tf.d2h_gb_s,
        "gpu_duplex_gb_per_s": tf.duplex_gb_s,
        "gpu_copy_floor_queries_per_s": tf.duplex_gb_s * 1e9 / (4.0 * (params.cols() + params.matrix_rows()) as f64),
        "host_copy_gb_per_s": host_copy,
        "gpu_chunk": chunk,
        "gpu_device_chunk_queries_per_s": chunk as f64 / chunk_dev_ms * 1e3,
        "gpu_queries_per_s": best,
        "gpu_best_batch": best_b,
        "gpu_device_queries_per_s": best_dev,
        "throughput_vs_device": best / best_dev,
        "gpu_wire_queries_per_s": wire_qps,
        "gpu_wire_ms": wire_ms,
        "gpu_wire_batch": floor_b,
        "wire_throughput_vs_device": wire_qps / best_dev,
        "gpu_gemm_floor_batch": floor_b,
        "gpu_gemm_floor_ms": gemm_ms,
        "gpu_gemm_floor_queries_per_s": gemm_qps,
        "throughput_vs_gemm_floor": best / gemm_qps,
        "device_throughput_vs_gemm_floor": best_dev / gemm_qps,
        "batches": batches,
    });
    if let (Some(o), Value::Object(m)) = (out.as_object_mut(), more) {
        o.extend(m);
    }
    Ok(out)
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
        // From the queries' encodings to the answers' encodings (what a server on
        // the network does), beside `answer_batch`'s owned answers.
        let (wire_qps, _) = wire_throughput(&server, batch)?;
        let mut v = json!({
            "gpus": spec, "table_build_s": build_s, "latency_ms": median(lat),
            "batch": batch, "queries_per_s": batch as f64 / ms * 1e3,
            "wire_queries_per_s": wire_qps,
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
        for key in ["queries_per_s", "wire_queries_per_s", "device_queries_per_s"] {
            let r = v[key].as_f64().unwrap_or(f64::NAN) / base[key].as_f64().unwrap_or(f64::NAN);
            v[format!("{key}_vs_one_gpu")] = json!(r);
        }
        together.push(v);
    }
    // The host's share of every query, whatever the GPUs: the query copied from its
    // message into page-locked memory (read + write) and read by the GPU, the answer
    // written by the GPU and copied out into its response (read + write): three
    // passes over each. Plain copies on all cores bound it.
    let host_copy = host_copy_gb_per_s();
    let traffic = 3.0 * 4.0 * (params.cols() + params.matrix_rows()) as f64;
    let host_bound = 2.0 * host_copy * 1e9 / traffic;
    Ok(json!({
        "rows": rows, "row_bytes": bytes, "split": "row blocks",
        "host_copy_gb_per_s": host_copy,
        "host_bytes_per_query": traffic,
        "host_bound_queries_per_s": host_bound,
        "host_threads": rayon::current_num_threads(),
        "each_gpu": single, "together": together,
    }))
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
            "  launch {:.4} ms, one query in {:.4} ms, one answer out {:.4} ms: latency floor {:.3} ms ({:.2}x of it)",
            f("gpu_launch_floor_ms"),
            f("gpu_h2d_one_query_ms"),
            f("gpu_d2h_one_answer_ms"),
            f("gpu_latency_floor_ms"),
            f("latency_vs_latency_floor")
        );
        println!(
            "  throughput: {:.0} queries/s end to end at batch {} ({:.0} on the device: {:.2}x); cuBLASLt int8 floor {:.0}/s: {:.2}x",
            f("gpu_queries_per_s"),
            s["gpu_best_batch"],
            f("gpu_device_queries_per_s"),
            f("throughput_vs_device"),
            f("gpu_gemm_floor_queries_per_s"),
            f("throughput_vs_gemm_floor")
        );
        println!(
            "  wire to wire at batch {}: {:.0} queries/s ({:.2}x the device); copies {:.1} GB/s in, {:.1} out, {:.1} both ways; host copies {:.1} GB/s",
            s["gpu_wire_batch"],
            f("gpu_wire_queries_per_s"),
            f("wire_throughput_vs_device"),
            f("gpu_h2d_gb_per_s"),
            f("gpu_d2h_gb_per_s"),
            f("gpu_duplex_gb_per_s"),
            f("host_copy_gb_per_s")
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
