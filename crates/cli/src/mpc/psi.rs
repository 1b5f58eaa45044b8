//! `tacit mpc psi serve|query`: set intersection by sort–compare–shuffle with a
//! Waksman network under GMW (paper §6.3, `tacit_mpc::apps::psi`). The server (party
//! a) chooses the shuffle and learns nothing; the querier (party b) prints the
//! intersection, one element per line, as `tacit psi` does.

use super::triples::TripleOpts;
use crate::util::{read_set, sanitize};
use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use std::path::PathBuf;
use tacit_crypto::rng::SecureRng;
use tacit_mpc::Party;
use tacit_mpc::apps::psi::{self, MAX_SET, PreparedSet, PsiReport};
use tacit_net::{FramedConn, FramedListener, NetConfig};

/// `tacit mpc psi …`
#[derive(Debug, Subcommand)]
pub enum PsiCommand {
    /// Serve a set (party a: chooses the shuffle, learns nothing but the querier's set size).
    #[command(after_help = "\
Example:
  tacit mpc psi serve --set server.txt --bits 32 --listen 127.0.0.1:7920 --sessions 1")]
    Serve(Box<ServeArgs>),
    /// Query a server (party b: learns the intersection and the server's set size).
    #[command(after_help = "\
Example:
  tacit mpc psi query --set mine.txt --bits 32 --connect 127.0.0.1:7920")]
    Query(Box<QueryArgs>),
}

/// Options both sides give.
#[derive(Debug, Args)]
pub struct SetArgs {
    /// The set: one element per line. A decimal number below 2^σ is compared as it is;
    /// anything else is hashed to σ bits (false positives then possible; the bound is
    /// printed).
    #[arg(long, value_name = "FILE")]
    set: PathBuf,
    /// Bits per element σ (must match the peer's).
    #[arg(long, value_name = "σ", default_value_t = 32)]
    bits: usize,
    /// The largest peer set accepted.
    #[arg(long, default_value_t = 4096)]
    max_peer: usize,
    /// JSON output (sizes and timings).
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    triples: TripleOpts,
}

/// Options of `serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Where to listen.
    #[arg(long, value_name = "ADDR")]
    listen: String,
    /// Exit after this many sessions (default: serve forever).
    #[arg(long, value_name = "N")]
    sessions: Option<u64>,
    #[command(flatten)]
    set: SetArgs,
}

/// Options of `query`.
#[derive(Debug, Args)]
pub struct QueryArgs {
    /// The server.
    #[arg(long, value_name = "ADDR")]
    connect: String,
    #[command(flatten)]
    set: SetArgs,
}

fn prepare(a: &SetArgs) -> Result<PreparedSet> {
    if a.max_peer == 0 || a.max_peer > MAX_SET {
        anyhow::bail!("--max-peer must be from 1 to {MAX_SET}");
    }
    let elements = read_set(&a.set)?;
    Ok(PreparedSet::new(&elements, a.bits)?)
}

fn stats_json(r: &PsiReport) -> serde_json::Value {
    let s = psi::size(&r.params).ok();
    serde_json::json!({
        "sigma": r.params.sigma,
        "n_server": r.params.n_a,
        "n_query": r.params.n_b,
        "and_gates": s.map(|s| s.and_gates),
        "depth": s.map(|s| s.depth),
        "build_ms": r.build.as_secs_f64() * 1e3,
        "setup_ms": r.run.setup.time.as_secs_f64() * 1e3,
        "hello_wait_ms": r.run.hello_wait.as_secs_f64() * 1e3,
        "online_ms": r.run.online.time.as_secs_f64() * 1e3,
        "online_rounds": r.run.online.rounds,
        "false_positive_bound": r.false_positive_bound,
    })
}

fn stats_line(r: &PsiReport) -> String {
    let s = psi::size(&r.params).ok();
    format!(
        "{} × {} elements of {} bits; {} AND gates, depth {}; setup {:.1} ms, online {:.1} ms; false-positive bound {:.3e}",
        r.params.n_a,
        r.params.n_b,
        r.params.sigma,
        s.map_or(0, |s| s.and_gates),
        s.map_or(0, |s| s.depth),
        r.run.setup.time.as_secs_f64() * 1e3,
        r.run.online.time.as_secs_f64() * 1e3,
        r.false_positive_bound
    )
}

/// Runs a `tacit mpc psi` command.
pub fn run(cmd: PsiCommand) -> Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    match cmd {
        PsiCommand::Serve(a) => {
            let set = prepare(&a.set)?;
            rt.block_on(async {
                let l = FramedListener::bind(&a.listen, &NetConfig::default())
                    .await
                    .with_context(|| format!("cannot listen on {}", a.listen))?;
                eprintln!(
                    "tacit mpc psi serve: {} distinct elements of {} bits; listening on {}",
                    set.values.len(),
                    set.sigma,
                    l.local_addr()?
                );
                let mut served = 0u64;
                while a.sessions.is_none_or(|m| served < m) {
                    let mut c = match l.accept().await {
                        Ok(c) => c,
                        Err(e) => {
                            eprintln!("tacit mpc psi serve: accept failed: {e}");
                            continue;
                        }
                    };
                    served += 1;
                    let r = async {
                        let mut src = a.set.triples.source(Party::A).await?;
                        let mut rng = SecureRng::from_os();
                        Ok::<_, anyhow::Error>(psi::serve(&mut c, &set, a.set.max_peer, &mut src, &mut rng).await?)
                    }
                    .await;
                    match r {
                        Ok(r) if a.set.json => println!("{}", stats_json(&r)),
                        Ok(r) => eprintln!("tacit mpc psi serve: session {served}: {}", stats_line(&r)),
                        Err(e) => eprintln!("tacit mpc psi serve: session {served}: {}", sanitize(&format!("{e:#}"))),
                    }
                }
                Ok(())
            })
        }
        PsiCommand::Query(a) => {
            let set = prepare(&a.set)?;
            let r = rt.block_on(async {
                let mut c = FramedConn::connect(a.connect.as_str(), &NetConfig::default())
                    .await
                    .with_context(|| format!("cannot connect to {}", a.connect))?;
                let mut src = a.set.triples.source(Party::B).await?;
                let mut rng = SecureRng::from_os();
                Ok::<_, anyhow::Error>(psi::query(&mut c, &set, a.set.max_peer, &mut src, &mut rng).await?)
            })?;
            if a.set.json {
                let mut v = stats_json(&r.report);
                v["intersection"] = serde_json::json!(r.elements);
                println!("{v}");
            } else {
                for e in &r.elements {
                    println!("{}", sanitize(e));
                }
                eprintln!("tacit mpc psi: {} common; {}", r.elements.len(), stats_line(&r.report));
            }
            Ok(())
        }
    }
}
