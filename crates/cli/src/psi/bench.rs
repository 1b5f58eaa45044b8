//! `tacit bench psi`: the PSI engine's costs next to the raw primitives they are made
//! of, measured in one run so the ratios hold on a noisy machine.

use crate::util::median;
use crate::util::ms;
use anyhow::Result;
use clap::Args;
use rand_core::RngCore;
use rayon::prelude::*;
use std::time::{Duration, Instant};
use tacit_crypto::oprf::Oprf;
use tacit_crypto::rng::SecureRng;
use tacit_crypto::{GroupId, P256, PrimeGroup, Ristretto255};
use tacit_psi::{
    PsiParams, Receiver, ReceiverPrecomputation, Reuse, Security, Sender, SenderKey, SenderPrecomputation,
};

/// Options of `bench psi`.
#[derive(Debug, Args)]
pub struct PsiBenchArgs {
    /// M: receiver elements (the bound m; the set holds M elements).
    #[arg(long, default_value_t = 10)]
    ids: u32,
    /// N: sender elements (the bound n; the set holds N elements).
    #[arg(long, default_value_t = 10_000)]
    contacts: u32,
    /// The group.
    #[arg(long, default_value = "ristretto255", value_parser = |s: &str| s.parse::<GroupId>())]
    group: GroupId,
    /// Measure the semi-honest protocol instead.
    #[arg(long)]
    semi_honest: bool,
    /// Repetitions of each online measurement (the median is reported).
    #[arg(long, default_value_t = 31)]
    runs: usize,
    /// Repetitions of the precomputation and primitive measurements (median).
    #[arg(long, default_value_t = 3)]
    precompute_runs: usize,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Measure a `tacit psi serve` process under concurrent clients instead: throughput,
    /// latency quantiles and the server's peak memory with one and two server
    /// threads, and with one client stalled.
    #[arg(long)]
    load: bool,
    /// With --load: concurrent clients.
    #[arg(long, default_value_t = 8, value_name = "K")]
    clients: usize,
    /// With --load: queries per configuration and round.
    #[arg(long, default_value_t = 400, value_name = "N")]
    queries: usize,
    /// With --load: rounds (configurations alternate within each).
    #[arg(long, default_value_t = 3, value_name = "R")]
    rounds: usize,
    /// With --load: leave the processes unpinned. By default the server runs under
    /// `taskset` on one CPU (one thread) or two (two threads), and with four or more
    /// CPUs the clients run on the others.
    #[arg(long)]
    no_pin: bool,
}

/// `tacit bench psi`.
pub fn run(a: PsiBenchArgs) -> Result<()> {
    if a.load {
        anyhow::ensure!(
            a.clients >= 1 && a.queries >= 1 && a.rounds >= 1,
            "--clients, --queries and --rounds must be at least 1"
        );
        let security = if a.semi_honest {
            Security::SemiHonest
        } else {
            Security::Malicious
        };
        let params = PsiParams::new(security)
            .with_group(a.group)
            .with_bounds(a.ids, a.contacts);
        params.validate()?;
        let v = match a.group {
            GroupId::Ristretto255 => {
                super::load::run::<Ristretto255>(&params, a.clients, a.queries, a.rounds, !a.no_pin)?
            }
            GroupId::P256 => super::load::run::<P256>(&params, a.clients, a.queries, a.rounds, !a.no_pin)?,
        };
        if a.json {
            println!("{}", serde_json::to_string_pretty(&v)?);
        } else {
            super::load::print(&v);
        }
        return Ok(());
    }
    match a.group {
        GroupId::Ristretto255 => bench_psi::<Ristretto255>(&a),
        GroupId::P256 => bench_psi::<P256>(&a),
    }
}

fn per(d: Duration, n: usize) -> f64 {
    d.as_secs_f64() * 1e6 / n.max(1) as f64
}

/// Raw primitives of one sender element: hash to the group, multiply by the key,
/// encode. `parallel` spreads them over all cores like the precomputation does.
fn primitives<G: PrimeGroup>(oprf: &Oprf<G>, k: &G::Scalar, set: &[String], parallel: bool) -> Duration {
    let one = |x: &String| {
        let p = oprf
            .hash_to_group(x.as_bytes())
            .expect("hashes to a non-identity element");
        let e = G::mul(&p, k);
        std::hint::black_box(G::element_bytes(&e));
    };
    let t = Instant::now();
    if parallel {
        set.par_chunks(64).for_each(|c| c.iter().for_each(one));
    } else {
        set.iter().for_each(one);
    }
    t.elapsed()
}

fn bench_psi<G: PrimeGroup>(a: &PsiBenchArgs) -> Result<()> {
    let security = if a.semi_honest {
        Security::SemiHonest
    } else {
        Security::Malicious
    };
    let params = PsiParams::new(security)
        .with_group(G::ID)
        .with_bounds(a.ids, a.contacts);
    params.validate()?;
    anyhow::ensure!(
        a.runs >= 1 && a.precompute_runs >= 1,
        "--runs and --precompute-runs must be at least 1"
    );
    let (m, n) = (a.ids as usize, a.contacts as usize);
    let mut rng = SecureRng::from_os();
    let sender_set: Vec<String> = (0..n).map(|i| format!("1555{i:07}")).collect();
    let receiver_set: Vec<String> = (0..m)
        .map(|i| {
            if i % 2 == 0 {
                format!("1555{:07}", i * 7 % n.max(1))
            } else {
                format!("other-{i}@example.org")
            }
        })
        .collect();
    let threads = rayon::current_num_threads();
    let oprf = Oprf::<G>::new(security.mode());
    let k = G::random_scalar(&mut rng);

    eprintln!(
        "bench psi: {params}; {threads} threads; measuring precomputation ({} rounds)…",
        a.precompute_runs
    );
    // Precomputation and primitives, round-robin.
    let (mut pre_t, mut prim_par, mut prim_one) = (Vec::new(), Vec::new(), Vec::new());
    let key = SenderKey::<G>::generate(&mut rng, 1);
    let mut pre = None;
    for _ in 0..a.precompute_runs {
        prim_one.push(primitives(&oprf, &k, &sender_set, false));
        prim_par.push(primitives(&oprf, &k, &sender_set, true));
        let t = Instant::now();
        let p = SenderPrecomputation::compute(&params, &key, &sender_set, Reuse::WithinEpoch, &mut rng)?;
        pre_t.push(t.elapsed());
        pre = Some(p);
    }
    let (pre_t, prim_par, prim_one) = (median(pre_t), median(prim_par), median(prim_one));
    let sender = Sender::new(&params, key, pre.expect("at least one round"))?;

    eprintln!("bench psi: measuring online phase ({} runs)…", a.runs);
    let t = Instant::now();
    let rpre = ReceiverPrecomputation::<G>::compute(&params, &receiver_set, &mut rng)?;
    let receiver_pre_t = t.elapsed();
    let (mut s_t, mut r_t, mut smul_t) = (Vec::new(), Vec::new(), Vec::new());
    let (mut req_len, mut resp_len, mut found) = (0, 0, 0);
    let points: Vec<G::Element> = (0..6 * m).map(|_| G::mul_base(&G::random_scalar(&mut rng))).collect();
    let scalars: Vec<G::Scalar> = (0..6 * m).map(|_| G::random_scalar(&mut rng)).collect();
    for _ in 0..a.runs {
        let (waiting, req) = Receiver::start(&rpre);
        let t = Instant::now();
        let resp = sender.respond(&req, &mut rng)?;
        s_t.push(t.elapsed());
        let t = Instant::now();
        let got = waiting.on_response(&resp)?;
        r_t.push(t.elapsed());
        (req_len, resp_len, found) = (req.len(), resp.len(), got.len());
        // Baseline in the same loop: 6·M variable-base scalar multiplications.
        let t = Instant::now();
        for (p, s) in points.iter().zip(&scalars) {
            std::hint::black_box(G::mul(p, s));
        }
        smul_t.push(t.elapsed());
        rng.next_u32();
    }
    let (s_t, r_t, smul_t) = (median(s_t), median(r_t), median(smul_t));
    let online = s_t + r_t;
    let whole = pre_t + receiver_pre_t + online;

    let pre_per = per(pre_t, n);
    let prim_par_per = per(prim_par, n);
    let prim_one_per = per(prim_one, n);
    let out = serde_json::json!({
        "experiment": "psi",
        "group": G::ID.name(),
        "security": security.name(),
        "m": m, "n": n, "lambda": params.lambda,
        "truncation_bits": params.truncation_bits(),
        "threads": threads,
        "precompute_ms": ms(pre_t),
        "precompute_us_per_element": pre_per,
        "primitives_us_per_element_parallel": prim_par_per,
        "primitives_us_per_element_single_thread": prim_one_per,
        "precompute_vs_primitives": pre_per / prim_par_per,
        "precompute_vs_primitives_single_thread": pre_per / prim_one_per,
        "receiver_precompute_ms": ms(receiver_pre_t),
        "online_sender_ms": ms(s_t),
        "online_receiver_ms": ms(r_t),
        "online_total_ms": ms(online),
        "six_m_scalar_mults_ms": ms(smul_t),
        "online_vs_6m_scalar_mults": online.as_secs_f64() / smul_t.as_secs_f64(),
        "whole_run_ms": ms(whole),
        "request_bytes": req_len,
        "response_bytes": resp_len,
        "intersection_size": found,
        "runs": a.runs,
        "precompute_runs": a.precompute_runs,
    });
    if a.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    println!("tacit bench psi — {params}, {threads} threads (medians; baselines measured in the same run)");
    println!();
    println!(
        "  sender precomputation        {:>10.2} ms  = {:>7.2} µs/element",
        ms(pre_t),
        pre_per
    );
    println!(
        "  raw primitives, all cores    {:>10.2} ms  = {:>7.2} µs/element",
        prim_par.as_secs_f64() * 1e3,
        prim_par_per
    );
    println!(
        "  raw primitives, one core     {:>10.2} ms  = {:>7.2} µs/element",
        prim_one.as_secs_f64() * 1e3,
        prim_one_per
    );
    println!(
        "  precompute / primitives      {:>10.3}×  (one core: {:.3}×)",
        pre_per / prim_par_per,
        pre_per / prim_one_per
    );
    println!();
    println!(
        "  receiver precomputation      {:>10.3} ms",
        receiver_pre_t.as_secs_f64() * 1e3
    );
    println!("  online sender                {:>10.3} ms", s_t.as_secs_f64() * 1e3);
    println!("  online receiver              {:>10.3} ms", r_t.as_secs_f64() * 1e3);
    println!("  online total                 {:>10.3} ms", online.as_secs_f64() * 1e3);
    println!(
        "  6·M = {:<4} scalar mults      {:>10.3} ms",
        6 * m,
        smul_t.as_secs_f64() * 1e3
    );
    println!(
        "  online / 6·M scalar mults    {:>10.3}×",
        online.as_secs_f64() / smul_t.as_secs_f64()
    );
    println!("  whole run (precomp + online) {:>10.2} ms", ms(whole));
    println!();
    println!("  request  (receiver → sender) {req_len:>10} B");
    println!("  response (sender → receiver) {resp_len:>10} B");
    println!("  intersection found           {found:>10} elements");
    Ok(())
}
