//! `tacit bench pros`: the PROS paper's figures on this machine, with the ratios the
//! issue asks for, each measured against its floor in the same run.
//!
//! * Fig. 5 / 14 — encryption (fresh and online from the rⁿ pool) and CRT decryption
//!   against the key size and against the plaintext size;
//! * Fig. 6 — round-trip time against the payload over tacit's framed TCP;
//! * Fig. 8 — FNP with schoolbook and Karatsuba product trees (one polynomial) and
//!   with balanced-allocation bins;
//! * Fig. 9 / 15 — 3PR worst case (one match, last in both lists), SOR and MOR, all
//!   three variants, wall and CPU time;
//! * Fig. 12 / 13 — average case (one match at random positions; 5 % common elements
//!   over the long range n = 19 … 2019);
//! * backends — one 3072-bit modular exponentiation in OpenSSL (the default),
//!   crypto-bigint and GMP (with `--features gmp`);
//! * modproof — the Paillier–Blum modulus proof (prove, verify) at 3072 bits beside a
//!   default scheduling session (the README's example: `examples/alice.ics` and
//!   `examples/bob.ics`, 3072-bit key, over TLS), `modproof_vs_session`.

use crate::pros::cmd::{net_config, seeded};
use crate::util::plot;
use anyhow::{Context, Result};
use clap::Args;
use rand_core::RngCore;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tacit_crypto::rng::SecureRng;
use tacit_net::{FramedConn, FramedListener};
use tacit_pros::backends::{self, Backend};
use tacit_pros::bn;
use tacit_pros::element::ElementEncoding;
use tacit_pros::fnp::{self, Chooser, PsiParams, Sender};
use tacit_pros::paillier::{PrivateKey, RnPool};
use tacit_pros::poly::{Multiplier, Poly};
use tacit_pros::threepr::{ReconcileParams, Responder, Scheme, Variant};

/// Options of `tacit bench pros`.
#[derive(Debug, Args)]
pub struct ProsBenchArgs {
    /// The paper's full grids (every step; 500 sets per long-range point). Takes hours.
    #[arg(long)]
    pub full: bool,
    /// A short run (fewer points), for a quick look.
    #[arg(long, conflicts_with = "full")]
    pub quick: bool,
    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Folder for the PNG plots and the JSON file.
    #[arg(long, default_value = "bench/out/pros")]
    pub out: PathBuf,
    /// Seed for the generated sets.
    #[arg(long, default_value_t = 2011)]
    pub seed: u64,
    /// Run only these parts: backends, crypto, rtt, fnp, worst, floor (the
    /// `threepr_vs_floor` measurement alone), average, modproof (comma list).
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
}

fn cpu_seconds() -> f64 {
    // utime + stime of this process, in clock ticks (USER_HZ = 100 on Linux)
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            let rest = s.rsplit_once(')')?.1;
            let f: Vec<&str> = rest.split_whitespace().collect();
            Some((f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?) / 100.0)
        })
        .unwrap_or(f64::NAN)
}

/// Times `f` repeatedly for at least `min` and `reps` runs; seconds per run.
fn per_op(reps: usize, min: Duration, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    f()?;
    let t = Instant::now();
    let mut n = 0;
    while n < reps || t.elapsed() < min {
        f()?;
        n += 1;
        if n >= 100_000 {
            break;
        }
    }
    Ok(t.elapsed().as_secs_f64() / n as f64)
}

fn say(json: bool, s: String) {
    if !json {
        println!("{s}");
    } else {
        eprintln!("{s}");
    }
}

struct Ctx {
    json: bool,
    full: bool,
    quick: bool,
    out: PathBuf,
    seed: u64,
}

pub fn run(a: ProsBenchArgs) -> Result<()> {
    std::fs::create_dir_all(&a.out).with_context(|| format!("cannot create {}", a.out.display()))?;
    let c = Ctx {
        json: a.json,
        full: a.full,
        quick: a.quick,
        out: a.out.clone(),
        seed: a.seed,
    };
    let rt = crate::pros::cmd::runtime()?;
    let want = |part: &str| a.only.is_empty() || a.only.iter().any(|p| p == part);
    let mut report = serde_json::Map::new();
    report.insert("cores".into(), json!(rayon::current_num_threads()));
    report.insert("gmp_built".into(), json!(cfg!(feature = "gmp")));

    if want("backends") {
        let (backends, modexp_vs_best) = bench_backends(&c)?;
        report.insert("backends".into(), backends);
        report.insert("modexp_vs_best".into(), json!(modexp_vs_best));
    }
    if want("crypto") {
        let (crypto, ratios) = bench_crypto(&c)?;
        report.insert("fig5_fig14".into(), crypto);
        for (k, v) in ratios {
            report.insert(k.into(), json!(v));
        }
    }
    if want("rtt") {
        report.insert("fig6_rtt".into(), rt.block_on(bench_rtt(&c))?);
    }
    if want("fnp") {
        let (fig8, k_vs_s, poly_ratio) = bench_fnp(&c)?;
        report.insert("fig8_fnp".into(), fig8);
        report.insert("fnp_karatsuba_vs_schoolbook".into(), json!(k_vs_s));
        report.insert("poly_karatsuba_vs_schoolbook".into(), json!(poly_ratio));
    }
    if want("worst") {
        let (fig9, floor) = rt.block_on(bench_worst(&c))?;
        report.insert("fig9_fig15_worst_case".into(), fig9);
        report.insert("threepr_vs_floor".into(), floor["ratio"].clone());
        report.insert("threepr_vs_floor_tls".into(), floor["ratio_tls"].clone());
        report.insert("threepr_floor_detail".into(), floor);
    } else if a.only.iter().any(|p| p == "floor") {
        let key = PrivateKey::generate(256)?;
        let floor = rt.block_on(floor_100(&c, &key))?;
        report.insert("threepr_vs_floor".into(), floor["ratio"].clone());
        report.insert("threepr_vs_floor_tls".into(), floor["ratio_tls"].clone());
        report.insert("threepr_floor_detail".into(), floor);
    }
    if want("modproof") {
        let m = rt.block_on(bench_modproof(&c))?;
        report.insert("modproof_vs_session".into(), m["ratio"].clone());
        report.insert("modproof_detail".into(), m);
    }
    if want("average") {
        let (avg, exponent) = rt.block_on(bench_average(&c))?;
        report.insert("fig12_fig13_average_case".into(), avg);
        report.insert("average_case_exponent".into(), json!(exponent));
    }

    let out = Value::Object(report);
    let path = c.out.join(if a.only.is_empty() {
        "pros.json".to_string()
    } else {
        format!("pros-{}.json", a.only.join("-"))
    });
    std::fs::write(&path, serde_json::to_string_pretty(&out)?)?;
    if c.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        println!();
        println!("ratios (goal in brackets):");
        for (k, goal) in [
            ("decrypt_vs_floor", "≤ 1.1"),
            ("modexp_vs_best", "≤ 1.3"),
            ("encrypt_online_vs_fresh", "≤ 0.02"),
            ("threepr_vs_floor", "≤ 1.2"),
            ("threepr_vs_floor_tls", "over TLS"),
            ("modproof_vs_session", "≤ 0.10"),
            ("average_case_exponent", "≤ 1.2"),
            ("fnp_karatsuba_vs_schoolbook", "≤ 0.05"),
            ("poly_karatsuba_vs_schoolbook", "construction only"),
        ] {
            println!("  {k:<30} {:>8.4}   [{goal}]", out[k].as_f64().unwrap_or(f64::NAN));
        }
        println!("JSON and plots in {}", c.out.display());
    }
    Ok(())
}

fn bench_backends(c: &Ctx) -> Result<(Value, f64)> {
    say(
        c.json,
        "== big-integer backends: one modular exponentiation, secret exponent ==".into(),
    );
    let mut rng = seeded(c.seed);
    let mut rows = Vec::new();
    let mut ratio = f64::NAN;
    for (mbits, ebits) in [(3072u32, 3072u32), (3072, 1536), (6144, 3072)] {
        let mut top = bn::from_u64(0)?;
        top.set_bit(mbits as i32 - 1)?;
        let mut m = bn::add(&top, &*bn::random_below(&mut rng, &top)?)?;
        if !m.is_odd() {
            m.add_word(1)?;
        }
        let mut eb = bn::from_u64(0)?;
        eb.set_bit(ebits as i32 - 1)?;
        let e = bn::add(&eb, &*bn::random_below(&mut rng, &eb)?)?;
        let b = bn::random_below(&mut rng, &m)?;
        let mut times = serde_json::Map::new();
        let mut line = format!("  mod {mbits:>4} / exp {ebits:>4}:");
        for be in Backend::available() {
            if let Some(p) = backends::prepare(be, &b, &e, &m)? {
                let reps = if mbits > 4000 { 3 } else { 10 };
                let t = per_op(reps, Duration::from_millis(300), || {
                    backends::run(&p).map(|_| ()).map_err(Into::into)
                })?;
                line.push_str(&format!("  {} {:.2} ms", be.name(), t * 1e3));
                times.insert(be.name().into(), json!(t * 1e3));
            }
        }
        if !cfg!(feature = "gmp") {
            line.push_str("  (gmp: build with --features gmp)");
        }
        say(c.json, line);
        if (mbits, ebits) == (3072, 3072) {
            let def = times["openssl"].as_f64().unwrap_or(f64::NAN);
            let best = ["openssl", "gmp"]
                .iter()
                .filter_map(|k| times.get(*k).and_then(Value::as_f64))
                .fold(f64::INFINITY, f64::min);
            ratio = def / best;
        }
        rows.push(json!({"modulus_bits": mbits, "exponent_bits": ebits, "ms": times}));
    }
    Ok((json!(rows), ratio))
}

fn bench_crypto(c: &Ctx) -> Result<(Value, Vec<(&'static str, f64)>)> {
    say(
        c.json,
        "== Fig. 5: Paillier vs key size (32-bit plaintexts), ms per operation ==".into(),
    );
    let sizes: Vec<u32> = if c.full {
        (1..=64).map(|i| i * 32).chain([3072]).collect()
    } else if c.quick {
        vec![32, 256, 1024, 2048, 3072]
    } else {
        vec![32, 64, 128, 256, 512, 768, 1024, 1536, 2048, 3072]
    };
    let mut rng = seeded(c.seed + 1);
    let mut rows = Vec::new();
    let mut ratios = Vec::new();
    let mut s_enc = Vec::new();
    let mut s_on = Vec::new();
    let mut s_dec = Vec::new();
    say(
        c.json,
        format!(
            "  {:>5} {:>12} {:>12} {:>12} {:>12}",
            "bits", "enc fresh", "enc online", "dec CRT", "dec floor"
        ),
    );
    for bits in sizes {
        let key = PrivateKey::generate(bits)?;
        let pk = key.public();
        let min = Duration::from_millis(if bits >= 2048 { 600 } else { 150 });
        let m = bn::from_u64(rng.next_u32() as u64)?;
        let fresh = per_op(5, min, || {
            pk.encrypt_raw(&m, &mut rng)?;
            Ok(())
        })?;
        // exactly as many online encryptions as the pool holds (never a fresh fallback)
        let k = if bits >= 2048 { 64 } else { 512 };
        let pool = RnPool::new(pk)?;
        pool.fill(pk, k, &mut rng)?;
        let mut r2 = seeded(c.seed + 2);
        let t = Instant::now();
        for _ in 0..k {
            pk.encrypt_pooled(&m, &pool, &mut r2)?;
        }
        let online = t.elapsed().as_secs_f64() / k as f64;
        let ct = pk.encrypt_raw(&m, &mut rng)?;
        let dec = per_op(5, min, || {
            key.decrypt_raw(&ct)?;
            Ok(())
        })?;
        let (cp, cq) = key.crt_inputs(&ct)?;
        let floor = per_op(5, min, || {
            key.decrypt_floor(&cp, &cq)?;
            Ok(())
        })?;
        say(
            c.json,
            format!(
                "  {bits:>5} {:>12.4} {:>12.4} {:>12.4} {:>12.4}",
                fresh * 1e3,
                online * 1e3,
                dec * 1e3,
                floor * 1e3
            ),
        );
        s_enc.push((bits as f64, fresh * 1e3));
        s_on.push((bits as f64, online * 1e3));
        s_dec.push((bits as f64, dec * 1e3));
        if bits == 3072 {
            ratios.push(("decrypt_vs_floor", dec / floor));
            ratios.push(("encrypt_online_vs_fresh", online / fresh));
        }
        rows.push(json!({"key_bits": bits, "encrypt_fresh_ms": fresh * 1e3, "encrypt_online_ms": online * 1e3, "decrypt_ms": dec * 1e3, "decrypt_floor_ms": floor * 1e3}));
    }
    plot::lines(
        &c.out.join("fig5_key_size.png"),
        "Fig. 5: Paillier, 32-bit plaintexts",
        "key size [bits]",
        "time per operation [ms]",
        &[
            ("encrypt (fresh rⁿ)".into(), s_enc),
            ("encrypt (online, pooled rⁿ)".into(), s_on),
            ("decrypt (CRT)".into(), s_dec),
        ],
        true,
    )?;

    say(
        c.json,
        "== Fig. 14: Paillier vs plaintext size (1024-bit key), ms per operation ==".into(),
    );
    let key = PrivateKey::generate(1024)?;
    let pk = key.public();
    let step = if c.full { 8 } else { 32 };
    let mut rows14 = Vec::new();
    let (mut e14, mut d14) = (Vec::new(), Vec::new());
    for pbits in (1..=256 / step).map(|i| i * step) {
        let mut top = bn::from_u64(0)?;
        top.set_bit(pbits - 1)?;
        let m = bn::add(&top, &*bn::random_below(&mut rng, &top)?)?;
        let enc = per_op(20, Duration::from_millis(150), || {
            pk.encrypt_raw(&m, &mut rng)?;
            Ok(())
        })?;
        let ct = pk.encrypt_raw(&m, &mut rng)?;
        let dec = per_op(20, Duration::from_millis(150), || {
            key.decrypt_raw(&ct)?;
            Ok(())
        })?;
        say(
            c.json,
            format!(
                "  {pbits:>4}-bit plaintext: encrypt {:.4} ms, decrypt {:.4} ms",
                enc * 1e3,
                dec * 1e3
            ),
        );
        e14.push((pbits as f64, enc * 1e3));
        d14.push((pbits as f64, dec * 1e3));
        rows14.push(json!({"plaintext_bits": pbits, "encrypt_ms": enc * 1e3, "decrypt_ms": dec * 1e3}));
    }
    plot::lines(
        &c.out.join("fig14_plaintext_size.png"),
        "Fig. 14: Paillier, 1024-bit key",
        "plaintext size [bits]",
        "time per operation [ms]",
        &[("encrypt".into(), e14), ("decrypt (CRT)".into(), d14)],
        false,
    )?;
    Ok((json!({"key_size": rows, "plaintext_size": rows14}), ratios))
}

async fn bench_rtt(c: &Ctx) -> Result<Value> {
    say(
        c.json,
        "== Fig. 6: round trip over framed TCP (loopback, TCP_NODELAY) ==".into(),
    );
    let l = FramedListener::bind("127.0.0.1:0", &net_config()).await?;
    let addr = l.local_addr()?;
    let echo = tokio::spawn(async move {
        let mut s = l.accept().await?;
        while let Ok(m) = s.recv().await {
            s.send(&m).await?;
        }
        Ok::<_, tacit_net::Error>(())
    });
    let mut conn = FramedConn::connect(addr, &net_config()).await?;
    let mut rows = Vec::new();
    let mut pts = Vec::new();
    let step = if c.full { 8 } else { 256 };
    let trips = if c.full { 20_000 } else { 2_000 };
    let mut bits = step;
    while bits <= 2048 {
        let payload = vec![0xa5u8; bits / 8];
        let t = Instant::now();
        for _ in 0..trips {
            conn.send(&payload).await?;
            conn.recv().await?;
        }
        let us = t.elapsed().as_secs_f64() / trips as f64 * 1e6;
        say(c.json, format!("  {bits:>5} bits: {us:.1} µs per round trip"));
        pts.push((bits as f64, us));
        rows.push(json!({"payload_bits": bits, "rtt_us": us}));
        bits += step;
    }
    drop(conn);
    let _ = echo.await;
    plot::lines(
        &c.out.join("fig6_rtt.png"),
        "Fig. 6: round trip over tacit's framed TCP (loopback)",
        "payload [bits]",
        "time per round trip [µs]",
        &[("framed TCP".into(), pts)],
        false,
    )?;
    Ok(json!(rows))
}

fn int_set(base: u32, n: usize) -> Vec<String> {
    (0..n as u32).map(|i| (base + i).to_string()).collect()
}

/// The ring-Pedersen parameters every bench session's verifier uses: made once per
/// process at the default size (as `tacit` makes them once per store), timed.
fn bench_rp() -> Result<Arc<tacit_pros::facproof::RingPedersen>> {
    static RP: std::sync::OnceLock<(Arc<tacit_pros::facproof::RingPedersen>, f64)> = std::sync::OnceLock::new();
    if let Some((rp, _)) = RP.get() {
        return Ok(rp.clone());
    }
    let t = Instant::now();
    let rp = Arc::new(tacit_pros::facproof::RingPedersen::generate(
        tacit_pros::facproof::DEFAULT_RING_BITS,
        &mut SecureRng::from_os(),
    )?);
    let secs = t.elapsed().as_secs_f64();
    eprintln!("bench pros: ring-Pedersen parameters (3072-bit N̂, two safe primes, Π^prm) made in {secs:.2} s");
    Ok(RP.get_or_init(|| (rp, secs)).0.clone())
}

/// One FNP run in process (chooser and sender), returns seconds.
fn fnp_once(p: &PsiParams, key: &PrivateKey, a: &[String], b: &[String], seed: u64) -> Result<f64> {
    let mut rng = seeded(seed);
    let pool = RnPool::new(key.public())?;
    let t = Instant::now();
    // the paper's tables run at 256 bits: Π^fac bounds nothing there (docs/pros.md)
    let s = Sender::new(p, b, 0, 4096, bench_rp()?)?.accept_insecure_small_keys();
    let (opening, setup) = s.open(&mut rng);
    let nb = tacit_pros::NO_CHANNEL_BINDING;
    let (w, q) = Chooser::start(p, key.clone(), a, &setup, &nb, &pool, &mut rng)?;
    let (ans, pk) = s.respond(&opening, &q.to_bytes(), &nb, &mut rng)?;
    let found = w.on_answer(&ans.to_bytes(&pk), &tacit_pros::NO_CHANNEL_BINDING)?;
    anyhow::ensure!(
        found.len() == a.len().min(b.len()) / 10,
        "FNP found {} common elements",
        found.len()
    );
    Ok(t.elapsed().as_secs_f64())
}

fn bench_fnp(c: &Ctx) -> Result<(Value, f64, f64)> {
    say(
        c.json,
        "== Fig. 8: symmetric FNP (both directions), 256-bit key, 32-bit elements ==".into(),
    );
    let ns: Vec<usize> = if c.full {
        (0..20).map(|i| 50 + 100 * i).chain([1850]).collect()
    } else if c.quick {
        vec![50, 200, 500]
    } else {
        vec![50, 200, 500, 1000, 1850]
    };
    let key = PrivateKey::generate(256)?;
    let mut rows = Vec::new();
    let (mut s_school, mut s_kara, mut s_bucket) = (Vec::new(), Vec::new(), Vec::new());
    let mut ratio = f64::NAN;
    let mut poly_ratio = f64::NAN;
    let mut rng = seeded(c.seed + 3);
    for &n in &ns {
        // 10 % common elements
        let common = int_set(3_000_000_000, n / 10);
        let mut a = int_set(1_000_000, n - n / 10);
        a.extend(common.iter().cloned());
        let mut b = int_set(2_000_000, n - n / 10);
        b.extend(common.iter().cloned());
        let mut p = PsiParams::new(n as u32, n as u32);
        p.encoding = ElementEncoding::Integer32;
        p.bucketing = false;
        p.multiplier = Multiplier::Schoolbook;
        let school = fnp_once(&p, &key, &a, &b, 1)? + fnp_once(&p, &key, &b, &a, 2)?;
        p.multiplier = Multiplier::Karatsuba;
        let kara = fnp_once(&p, &key, &a, &b, 3)? + fnp_once(&p, &key, &b, &a, 4)?;
        p.bucketing = true;
        let bucket = fnp_once(&p, &key, &a, &b, 5)? + fnp_once(&p, &key, &b, &a, 6)?;
        // the polynomial construction alone
        let roots: Vec<bn::Nat> = (0..n)
            .map(|_| bn::random_below(&mut rng, key.public().n()))
            .collect::<tacit_pros::Result<_>>()?;
        let t = Instant::now();
        Poly::from_roots(&roots, key.public().n(), Multiplier::Schoolbook)?;
        let ps = t.elapsed().as_secs_f64();
        let t = Instant::now();
        Poly::from_roots(&roots, key.public().n(), Multiplier::Karatsuba)?;
        let pk_ = t.elapsed().as_secs_f64();
        say(
            c.json,
            format!(
                "  n = {n:>4}: schoolbook {school:>8.3} s, Karatsuba {kara:>8.3} s, bucketed ({} bins of {}) {bucket:>7.3} s; polynomial alone: schoolbook {:.1} ms, Karatsuba {:.1} ms",
                p.bins(),
                p.load(),
                ps * 1e3,
                pk_ * 1e3
            ),
        );
        if n == 1850 || (c.quick && n == *ns.last().unwrap_or(&0)) {
            ratio = kara / school;
            poly_ratio = pk_ / ps;
        }
        s_school.push((n as f64, school));
        s_kara.push((n as f64, kara));
        s_bucket.push((n as f64, bucket));
        rows.push(json!({"n": n, "schoolbook_s": school, "karatsuba_s": kara, "bucketed_s": bucket, "bins": p.bins(), "load": p.load(),
            "poly_schoolbook_ms": ps * 1e3, "poly_karatsuba_ms": pk_ * 1e3}));
    }
    // at 3072 bits: bucketed FNP and the polynomial construction
    let big = PrivateKey::generate(3072)?;
    let mut rows_big = Vec::new();
    for &n in if c.quick { &[50usize][..] } else { &[50usize, 200][..] } {
        let common = int_set(3_000_000_000, n / 10);
        let mut a = int_set(1_000_000, n - n / 10);
        a.extend(common.iter().cloned());
        let mut b = int_set(2_000_000, n - n / 10);
        b.extend(common.iter().cloned());
        let mut p = PsiParams::new(n as u32, n as u32);
        p.encoding = ElementEncoding::Integer32;
        let t = fnp_once(&p, &big, &a, &b, 7)?;
        say(
            c.json,
            format!("  3072-bit key, bucketed, one direction, n = {n}: {t:.2} s"),
        );
        rows_big.push(json!({"n": n, "bucketed_one_direction_s": t}));
    }
    plot::lines(
        &c.out.join("fig8_fnp.png"),
        "Fig. 8: symmetric FNP, 256-bit key, 32-bit elements",
        "set size n",
        "wall time [s]",
        &[
            ("schoolbook".into(), s_school),
            ("Karatsuba".into(), s_kara),
            ("bucketed (Karatsuba)".into(), s_bucket),
        ],
        true,
    )?;
    let _ = fnp::MAX_SET_BOUND;
    Ok((json!({"key_256": rows, "key_3072": rows_big}), ratio, poly_ratio))
}

/// Runs 3PR over loopback TCP (both parties in this process); wall, CPU seconds and
/// comparisons. A's pool is filled with `prefill` rⁿ before the clock starts (the
/// offline phase); B computes its ρⁿ online.
async fn reconcile_tcp(
    p: ReconcileParams,
    key: &PrivateKey,
    a: Vec<String>,
    b: Vec<String>,
    seed: u64,
    prefill: usize,
) -> Result<(f64, f64, u64, usize)> {
    reconcile_over(p, key, a, b, seed, prefill, false).await
}

/// [`reconcile_tcp`] over plain TCP or over loopback TLS with both keys pinned (the
/// handshake inside the timed part).
async fn reconcile_over(
    p: ReconcileParams,
    key: &PrivateKey,
    a: Vec<String>,
    b: Vec<String>,
    seed: u64,
    prefill: usize,
    tls: bool,
) -> Result<(f64, f64, u64, usize)> {
    let pair = crate::pros::demo::TlsPair::new(&net_config()).await?;
    let (l, server_cfg, client_cfg) = (pair.listener, pair.server, pair.client);
    let addr = l.local_addr()?;
    let bits = key.public().bits();
    let rp = bench_rp()?;
    let server = tokio::spawn(async move {
        let mut c = if tls {
            crate::pros::demo::TlsPair::accept(&l, server_cfg).await?
        } else {
            l.accept().await?
        };
        // the paper's tables run at 256 bits: Π^fac bounds nothing there (docs/pros.md)
        let r = Responder::new(p, &b, 0, 4096, rp)?.accept_insecure_small_keys();
        Ok::<_, anyhow::Error>(tacit_pros::net::reconcile_responder(&mut c, r, &mut seeded(seed)).await?)
    });
    let pool = Arc::new(RnPool::new(key.public())?);
    pool.fill(key.public(), prefill, &mut seeded(seed + 2))?;
    key.modulus_proof()?;
    let cpu0 = cpu_seconds();
    let t = Instant::now();
    let mut c = if tls {
        crate::pros::demo::TlsPair::connect(addr, &net_config(), client_cfg).await?
    } else {
        FramedConn::connect(addr, &net_config()).await?
    };
    let ra = tacit_pros::net::reconcile_initiator(&mut c, p, key.clone(), &a, pool, &mut seeded(seed + 1)).await?;
    let rb = server.await??;
    let wall = t.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu0;
    anyhow::ensure!(ra.elements == rb.elements, "the parties disagree");
    let _ = bits;
    Ok((wall, cpu, ra.comparisons, ra.elements.len()))
}

fn worst_sets(n: usize) -> (Vec<String>, Vec<String>) {
    let mut a = int_set(1_000_000, n - 1);
    a.push("4000000000".into());
    let mut b = int_set(2_000_000, n - 1);
    b.push("4000000000".into());
    (a, b)
}

async fn bench_worst(c: &Ctx) -> Result<(Value, Value)> {
    say(
        c.json,
        "== Fig. 9 / 15: 3PR worst case (one match, last in both lists), 32-bit elements ==".into(),
    );
    let enc = ElementEncoding::Integer32;
    let mut rows = Vec::new();
    let mut floor_detail = json!({});
    for bits in [256u32, 3072] {
        let key = PrivateKey::generate(bits)?;
        let ns: Vec<usize> = match (bits, c.full, c.quick) {
            (256, true, _) => (1..=40).map(|i| i * 5).collect(),
            (256, _, true) => vec![5, 25, 50, 100],
            (256, _, _) => vec![5, 25, 50, 75, 100, 150, 200],
            (_, true, _) => vec![2, 5, 10, 15, 20],
            (_, _, true) => vec![2, 4],
            _ => vec![2, 5, 8],
        };
        let mut series = Vec::new();
        for scheme in [Scheme::Sor, Scheme::Mor] {
            for variant in [Variant::Implicit, Variant::Explicit, Variant::ExplicitCached] {
                if scheme == Scheme::Mor && variant != Variant::Implicit && !c.full {
                    continue; // the paper's Fig. 15 shows MOR implicit
                }
                let p = ReconcileParams {
                    scheme,
                    variant,
                    encoding: enc,
                };
                let mut wall_pts = Vec::new();
                let mut cpu_pts = Vec::new();
                for &n in &ns {
                    let (a, b) = worst_sets(n);
                    let sent = if variant == Variant::ExplicitCached { n } else { n * n };
                    let (wall, cpu, comps, found) = reconcile_tcp(p, &key, a, b, c.seed + n as u64, sent).await?;
                    anyhow::ensure!(
                        found == 1 && comps == (n * n) as u64,
                        "worst case ran {comps} comparisons"
                    );
                    say(
                        c.json,
                        format!(
                            "  {bits:>4} bits {scheme} {variant:<15} n = {n:>3}: wall {wall:>8.3} s, CPU {cpu:>8.2} s, {comps} comparisons"
                        ),
                    );
                    wall_pts.push((n as f64, wall));
                    cpu_pts.push((n as f64, cpu));
                    rows.push(json!({"key_bits": bits, "scheme": scheme.to_string(), "variant": variant.to_string(), "n": n, "wall_s": wall, "cpu_s": cpu, "comparisons": comps}));
                }
                series.push((format!("{scheme} {variant} wall"), wall_pts));
                series.push((format!("{scheme} {variant} CPU"), cpu_pts));
            }
        }
        plot::lines(
            &c.out.join(format!("fig9_worst_case_{bits}.png")),
            &format!("Fig. 9/15: 3PR worst case, {bits}-bit key, 32-bit elements"),
            "set size n",
            "time [s]",
            &series,
            false,
        )?;
        if bits == 256 {
            floor_detail = floor_100(c, &key).await?;
        }
    }
    Ok((json!(rows), floor_detail))
}

/// `threepr_vs_floor`: SOR implicit worst case at n = 100 against the Paillier
/// operations it must perform, each timed alone on one core in this run.
async fn floor_100(c: &Ctx, key: &PrivateKey) -> Result<Value> {
    let n = 100usize;
    let pk = key.public();
    let mut rng = seeded(c.seed + 9);
    let min = Duration::from_millis(300);
    let m = bn::from_u64(12345)?;
    let y = bn::from_u64(4_000_000_000)?;
    let k = 20_000;
    let pool = RnPool::new(pk)?;
    pool.fill(pk, k, &mut rng)?;
    let t = Instant::now();
    for _ in 0..k {
        pk.encrypt_pooled(&m, &pool, &mut rng)?;
    }
    let enc_online = t.elapsed().as_secs_f64() / k as f64;
    let ct = pk.encrypt_raw(&m, &mut rng)?;
    let empty = RnPool::new(pk)?;
    // B's evaluation: the match tag, Horner step, blinding exponentiation r, fresh ρⁿ,
    // products
    let sid = [7u8; 32];
    let eval = per_op(50, min, || {
        let h = tacit_pros::element::match_tag(tacit_pros::threepr::MATCH_DOMAIN, &sid, 0, 0, &y, pk.n())?;
        fnp::evaluate(pk, std::slice::from_ref(&ct), &y, &h, &empty, &mut rng)?;
        Ok(())
    })?;
    let dec = per_op(50, min, || {
        key.decrypt_raw(&ct)?;
        Ok(())
    })?;
    // B verifies A's modulus proof once per session (A's proof is made with its key,
    // offline, like its pool)
    let proof = key.modulus_proof()?;
    let verify = per_op(5, min, || {
        proof.verify(pk)?;
        Ok(())
    })?;
    let comps = (n * n) as f64;
    // implicit SOR sends one ciphertext per pair: n² encryptions (rⁿ from the pool
    // filled offline), n² evaluations by B (match tag and fresh ρⁿ included), n²
    // decryptions by A, and one proof verification
    let floor = comps * (enc_online + eval + dec) + verify;
    let p = ReconcileParams {
        scheme: Scheme::Sor,
        variant: Variant::Implicit,
        encoding: ElementEncoding::Integer32,
    };
    let (a, b) = worst_sets(n);
    let (wall, cpu, _, _) = reconcile_over(p, key, a.clone(), b.clone(), c.seed + 77, n * n, false).await?;
    let (wall_tls, cpu_tls, _, _) = reconcile_over(p, key, a, b, c.seed + 78, n * n, true).await?;
    let ratio = wall / floor;
    say(
        c.json,
        format!(
            "  threepr_vs_floor (SOR implicit, n = 100, 256 bits): protocol {wall:.3} s wall ({cpu:.2} s CPU) / floor {floor:.3} s (n² × [online encryption {:.1} µs + evaluation {:.1} µs + CRT decryption {:.1} µs] + proof verification {:.1} ms, one core) = {ratio:.3}; over TLS {wall_tls:.3} s ({cpu_tls:.2} s CPU) = {:.3}",
            enc_online * 1e6,
            eval * 1e6,
            dec * 1e6,
            verify * 1e3,
            wall_tls / floor
        ),
    );
    Ok(
        json!({"ratio": ratio, "ratio_tls": wall_tls / floor, "wall_s": wall, "cpu_s": cpu, "wall_tls_s": wall_tls, "cpu_tls_s": cpu_tls,
        "floor_s": floor, "cpu_vs_floor": cpu / floor,
        "encrypt_online_us": enc_online * 1e6, "evaluate_us": eval * 1e6, "decrypt_us": dec * 1e6, "verify_ms": verify * 1e3, "n": n}),
    )
}

fn shuffle(v: &mut [String], rng: &mut impl RngCore) {
    for i in (1..v.len()).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        v.swap(i, j);
    }
}

/// Two ordered sets of `n` with `k` common elements at random positions (§6.3.1).
fn average_sets(n: usize, k: usize, rng: &mut impl RngCore, tag: u32) -> (Vec<String>, Vec<String>) {
    let common = int_set(3_000_000_000 + tag * 10_000, k);
    let mut a = int_set(1_000_000 + tag * 10_000, n - k);
    a.extend(common.iter().cloned());
    let mut b = int_set(2_000_000 + tag * 10_000, n - k);
    b.extend(common);
    shuffle(&mut a, rng);
    shuffle(&mut b, rng);
    (a, b)
}

async fn bench_average(c: &Ctx) -> Result<(Value, f64)> {
    say(
        c.json,
        "== Fig. 12: SOR implicit, average case with one match, 256-bit key ==".into(),
    );
    let key = PrivateKey::generate(256)?;
    let p = ReconcileParams {
        scheme: Scheme::Sor,
        variant: Variant::Implicit,
        encoding: ElementEncoding::Integer32,
    };
    let mut rng = seeded(c.seed + 11);
    let (ns12, sets12): (Vec<usize>, usize) = if c.full {
        ((1..=20).map(|i| i * 5).collect(), 100)
    } else if c.quick {
        (vec![5, 50, 100], 3)
    } else {
        (vec![5, 25, 50, 75, 100], 10)
    };
    let mut rows12 = Vec::new();
    let mut pts12 = Vec::new();
    for &n in &ns12 {
        let mut wall = 0.0;
        for s in 0..sets12 {
            let (a, b) = average_sets(n, 1, &mut rng, s as u32);
            wall += reconcile_tcp(p, &key, a, b, c.seed + s as u64, n).await?.0;
        }
        let w = wall / sets12 as f64;
        say(c.json, format!("  n = {n:>3}: {w:.3} s mean wall over {sets12} sets"));
        pts12.push((n as f64, w));
        rows12.push(json!({"n": n, "sets": sets12, "mean_wall_s": w}));
    }
    plot::lines(
        &c.out.join("fig12_average_one_match.png"),
        "Fig. 12: SOR implicit, one match at random positions",
        "set size n",
        "mean wall time [s]",
        &[("wall".into(), pts12)],
        false,
    )?;

    say(
        c.json,
        "== Fig. 13(b,c): long range, 5 % common elements, n = 19 … 2019 ==".into(),
    );
    // a set costs time ∝ n, and the spread of one set's time is about its mean (the
    // first match is nearly geometric), so small n get more sets
    let (step, sets_for): (usize, Box<dyn Fn(usize, Variant) -> usize>) = if c.full {
        (20, Box::new(|_, _| 500))
    } else if c.quick {
        (500, Box::new(|_, _| 2))
    } else {
        (
            400,
            Box::new(|n, v| if v == Variant::Implicit { (12_000 / n).max(6) } else { 3 }),
        )
    };
    let mut rows13 = Vec::new();
    let mut series: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    let mut fit_pts = Vec::new();
    for variant in [Variant::Implicit, Variant::ExplicitCached] {
        let p = ReconcileParams {
            scheme: Scheme::Sor,
            variant,
            encoding: ElementEncoding::Integer32,
        };
        let mut pts = Vec::new();
        let mut n = 19usize;
        while n <= 2019 {
            let k = n / 20; // 5 %: floor(0.05·n)
            let sets = sets_for(n, variant);
            let (mut wall, mut comps) = (0.0, 0.0);
            for s in 0..sets {
                let (a, b) = average_sets(n, k, &mut rng, s as u32);
                let r = reconcile_tcp(p, &key, a, b, c.seed + (n * 1000 + s) as u64, n).await?;
                wall += r.0;
                comps += r.2 as f64;
            }
            let (w, cm) = (wall / sets as f64, comps / sets as f64);
            say(
                c.json,
                format!("  {variant:<15} n = {n:>4} ({k} common): {w:.3} s mean wall, {cm:.0} comparisons"),
            );
            pts.push((n as f64, w));
            if variant == Variant::Implicit && k > 0 {
                fit_pts.push((n as f64, w));
            }
            rows13.push(json!({"variant": variant.to_string(), "n": n, "common": k, "sets": sets, "mean_wall_s": w, "mean_comparisons": cm}));
            n += step;
        }
        series.push((format!("SOR {variant}"), pts));
    }
    // least-squares slope of log(time) on log(n), points with at least one match
    let k = fit_pts.len() as f64;
    let (sx, sy) = fit_pts
        .iter()
        .fold((0.0, 0.0), |(a, b), (x, y)| (a + x.ln(), b + y.ln()));
    let (mx, my) = (sx / k, sy / k);
    let (num, den) = fit_pts.iter().fold((0.0, 0.0), |(a, b), (x, y)| {
        (a + (x.ln() - mx) * (y.ln() - my), b + (x.ln() - mx).powi(2))
    });
    let exponent = num / den;
    say(
        c.json,
        format!("  fitted exponent (time ∝ n^e, implicit, n ≥ 39): e = {exponent:.3}"),
    );
    plot::lines(
        &c.out.join("fig13_average_long_range.png"),
        "Fig. 13: SOR average case, 5 % common elements, 256-bit key",
        "set size n",
        "mean wall time [s]",
        &series,
        false,
    )?;
    Ok((json!({"fig12": rows12, "fig13": rows13}), exponent))
}

/// `modproof_vs_session`: everything a session spends on proving the key holder's
/// modulus — Π^mod (prove, verify), Π^prm (the key holder verifies the verifier's
/// ring-Pedersen parameters) and Π^fac (prove, verify) — against a default scheduling
/// session (the README's example), all measured in this run (3072-bit key, 3072-bit
/// `N̂`). The session is timed as `tacit schedule connect` spends it: key generation,
/// the modulus proof and the pool, then the protocol over loopback TLS against a
/// serving B (which verifies both proofs; the session's time includes them). Making
/// the ring-Pedersen parameters (once per store) is reported beside, not in the ratio.
async fn bench_modproof(c: &Ctx) -> Result<Value> {
    say(
        c.json,
        "== modulus proofs (Π^mod: 128 + 10 challenges; Π^fac with Π^prm) beside a default scheduling session, 3072 bits =="
            .into(),
    );
    let reps = if c.quick { 1 } else { 3 };
    let rp = bench_rp()?;
    let (mut keygen, mut prove, mut verify) = (Vec::new(), Vec::new(), Vec::new());
    let (mut prm_verify, mut fac_prove, mut fac_verify, mut prm_prove) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut fac_bytes = 0;
    for r in 0..reps {
        let t = Instant::now();
        let key = PrivateKey::generate(3072)?;
        keygen.push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        let proof = key.modulus_proof()?;
        prove.push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        proof.verify(key.public())?;
        verify.push(t.elapsed().as_secs_f64());
        // Π^prm as the key holder receives it
        let mut w = tacit_wire::Writer::new();
        rp.encode_offer(&mut w);
        let bytes = w.into_bytes();
        let t = Instant::now();
        let mut rd = tacit_wire::Reader::new(&bytes);
        let offer = tacit_pros::facproof::Offer::decode(&mut rd)?;
        rd.finish()?;
        let verified = offer.verify()?;
        prm_verify.push(t.elapsed().as_secs_f64());
        let ctx = [r as u8; 32];
        let t = Instant::now();
        let fac = tacit_pros::facproof::FacProof::prove(&key, &verified, &ctx, &mut seeded(c.seed + r as u64))?;
        fac_prove.push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        fac.verify(key.public(), &rp, &ctx)?;
        fac_verify.push(t.elapsed().as_secs_f64());
        fac_bytes = tacit_pros::facproof::FacProof::encoded_len(3072, rp.public().bits());
        // the verifier's Π^prm, made once per store with its parameters
        let t = Instant::now();
        tacit_pros::facproof::RingPedersen::from_secret_bytes(&rp.to_secret_bytes())?;
        prm_prove.push(t.elapsed().as_secs_f64());
    }
    let mut sessions = Vec::new();
    let mut protocol = Vec::new();
    let mut details = Vec::new();
    for s in 0..reps {
        let (total, proto, rounds, comparisons, slots) = readme_session(c.seed + 100 + s as u64).await?;
        sessions.push(total);
        protocol.push(proto);
        details.push(json!({"session_s": total, "protocol_s": proto, "rounds": rounds, "comparisons": comparisons, "offered_slots": slots}));
    }
    let med = |v: &mut Vec<f64>| {
        v.sort_by(|a, b| a.total_cmp(b));
        v[v.len() / 2]
    };
    let (kg, pr, ve, se, po) = (
        med(&mut keygen),
        med(&mut prove),
        med(&mut verify),
        med(&mut sessions),
        med(&mut protocol),
    );
    let (pv, fp, fv, load) = (
        med(&mut prm_verify),
        med(&mut fac_prove),
        med(&mut fac_verify),
        med(&mut prm_prove),
    );
    let all = pr + ve + pv + fp + fv;
    let ratio = all / se;
    say(
        c.json,
        format!(
            "  medians of {reps}: key generation {:.0} ms; Π^mod prove {:.0} ms, verify {:.0} ms; Π^prm verify {:.0} ms; \
             Π^fac prove {:.0} ms, verify {:.0} ms; default session {:.2} s (protocol part {:.2} s): \
             modproof_vs_session = {ratio:.3} (Π^mod alone {:.3}; vs the protocol part {:.3})",
            kg * 1e3,
            pr * 1e3,
            ve * 1e3,
            pv * 1e3,
            fp * 1e3,
            fv * 1e3,
            se,
            po,
            (pr + ve) / se,
            all / po
        ),
    );
    say(
        c.json,
        format!(
            "  once per store: ring-Pedersen parameters made (safe primes + Π^prm) at the start of this run; reading them back with Π^prm checked {:.0} ms",
            load * 1e3
        ),
    );
    Ok(
        json!({"ratio": ratio, "ratio_pi_mod": (pr + ve) / se, "ratio_vs_protocol": all / po, "keygen_ms": kg * 1e3,
        "prove_ms": pr * 1e3, "verify_ms": ve * 1e3, "prm_verify_ms": pv * 1e3, "fac_prove_ms": fp * 1e3, "fac_verify_ms": fv * 1e3,
        "ring_pedersen_load_ms": load * 1e3,
        "session_s": se, "protocol_s": po, "sessions": details, "proof_bytes": tacit_pros::modproof::ModulusProof::encoded_len(384),
        "fac_proof_bytes": fac_bytes, "ring_pedersen_offer_bytes": tacit_pros::facproof::RingPedersen::offer_len(3072)}),
    )
}

/// One session of the README's scheduling example (3072-bit key, TLS loopback, both
/// keys pinned): A's time from key generation to its result, the time of the protocol
/// part alone, rounds, comparisons, A's offered slots.
async fn readme_session(seed: u64) -> Result<(f64, f64, u32, u64, usize)> {
    use tacit_calendar::{Calendar, Pref, Preferences, SlotSpec, free_slots, parse_hours, parse_time, rank_slots};
    use tacit_pros::schedule::{self, SlotEncoding, Window};
    let berlin = chrono_tz::Europe::Berlin;
    let london = chrono_tz::Europe::London;
    let from = parse_time("2025-03-10T00:00:00+01:00", berlin)?;
    let to = parse_time("2025-03-15T00:00:00+01:00", berlin)?;
    let (duration, step) = (chrono::Duration::minutes(30), chrono::Duration::minutes(30));
    let slots = |ics: &str, tz: chrono_tz::Tz, hours: &str, prefs: Preferences| -> Result<Vec<tacit_calendar::Slot>> {
        let cal = Calendar::parse(ics, from, to, tz)?;
        let mut spec = SlotSpec::new(from, to, duration, step);
        spec.tz = tz;
        spec.working_hours = Some(parse_hours(hours)?);
        let mut r = rank_slots(&free_slots(cal.busy(), &spec), &prefs, tz);
        r.truncate(32);
        Ok(r)
    };
    let a_slots = slots(
        include_str!("../../../../examples/alice.ics"),
        berlin,
        "09:00-17:00",
        Preferences {
            prefer: vec![Pref::Morning],
            avoid: vec![Pref::Day(chrono::Weekday::Fri)],
        },
    )?;
    let b_slots = slots(
        include_str!("../../../../examples/bob.ics"),
        london,
        "08:00-16:00",
        Preferences::default(),
    )?;
    let window = Window {
        from,
        to,
        duration,
        step,
        encoding: SlotEncoding::Default,
    };
    let net = net_config();
    let pair = crate::pros::demo::TlsPair::new(&net).await?;
    let addr = pair.listener.local_addr()?;
    let (l, server_cfg) = (pair.listener, pair.server);
    let bob = tokio::spawn(async move {
        let mut c = crate::pros::demo::TlsPair::accept(&l, server_cfg).await?;
        let policy = schedule::Policy {
            ring_pedersen: bench_rp()?,
            min_key_bits: 2048,
            max_key_bits: 4096,
            limits: tacit_pros::threepr::Limits {
                max_peer_set: 128,
                max_comparisons: 16_384,
            },
            insecure_small_keys: false,
        };
        Ok::<_, anyhow::Error>(
            schedule::serve(
                &mut c,
                &window,
                Scheme::Sor,
                Variant::Implicit,
                &b_slots,
                &policy,
                &mut seeded(seed),
            )
            .await?,
        )
    });
    let t = Instant::now();
    let n_a = a_slots.len();
    let (key, pool) = tokio::task::spawn_blocking(move || crate::pros::cmd::key_and_pool(3072, n_a)).await??;
    let t_proto = Instant::now();
    let mut conn = crate::pros::demo::TlsPair::connect(addr, &net, pair.client).await?;
    let a = schedule::connect(
        &mut conn,
        &window,
        Scheme::Sor,
        Variant::Implicit,
        key,
        &a_slots,
        pool,
        &mut seeded(seed + 1),
    )
    .await?;
    let total = t.elapsed().as_secs_f64();
    let proto = t_proto.elapsed().as_secs_f64();
    let b = bob.await??;
    anyhow::ensure!(
        a.slots == b.slots && !a.slots.is_empty(),
        "the README example agreed on nothing"
    );
    Ok((total, proto, a.reconciled.rounds, a.reconciled.comparisons, n_a))
}
