//! `tacit mpc psi serve|query`: set intersection by sort–compare–shuffle with a
//! Waksman network under GMW (paper §6.3, `tacit_mpc::apps::psi`). The server (party
//! a) chooses the shuffle and learns nothing; the querier (party b) prints the
//! intersection, one element per line, as `tacit psi` does.
//!
//! GMW is secure only against a querier that follows the protocol: one that flips its
//! share bits on the selection ANDs reads the server's elements (docs/mpc.md, the test
//! `a_deviating_querier_reads_the_servers_set`). The server therefore serves only
//! with `--semi-honest-peers`, and its help points untrusted queriers to `tacit psi`.

use super::triples::TripleOpts;
use crate::util::channel::ChannelArgs;
use crate::util::{read_set, sanitize};
use anyhow::{Result, bail};
use clap::{Args, Subcommand};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tacit_mpc::Party;
use tacit_mpc::apps::psi::{self, MAX_SET, PreparedSet, PsiReport, ServerEvent};
use tacit_net::NetConfig;

/// `tacit mpc psi …`
#[derive(Debug, Subcommand)]
pub enum PsiCommand {
    /// Serve a set to queriers that follow the protocol (party a: chooses the shuffle, learns nothing but the querier's set size).
    #[command(after_help = "\
GMW here is secure only against queriers that follow the protocol (semi-honest): a
querier that deviates — flips its share bits on the circuit's selection gates — reads
the server's whole set in two queries. Serve only queriers you trust to run tacit
unmodified, and say so with --semi-honest-peers. For untrusted queriers use
`tacit psi serve` (DH-PSI, secure against a deviating querier).

Each session runs over TLS 1.3 (the querier pins the printed key or records it on first
use), at most --max-sessions at once, each within --session-timeout.

A querier chooses its set size (up to --max-peer) and with it the circuit this server
builds (about 280 MiB for 1 000 × 1 000 elements of 32 bits). The server refuses to
start when the largest it admits does not fit the memory it may use (available memory,
cgroup, ulimit -v, TACIT_MEMORY_LIMIT). That memory, measured at the start, is one
budget for all sessions: each query reserves its circuit from it until its session ends,
and a query whose circuit does not fit what the sessions in progress left is refused
before anything is built.

Example:
  tacit mpc psi serve --set server.txt --bits 32 --listen 127.0.0.1:7920 --semi-honest-peers --sessions 1")]
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
    /// The largest peer set accepted (a server's querier chooses its size, and with
    /// it the size of the circuit the server builds).
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
    /// Exit after this many sessions: a number (0: exit once ready) or `forever` (the
    /// default).
    #[arg(long, value_name = "N", value_parser = crate::util::parse_sessions)]
    sessions: Option<u64>,
    /// Acknowledge that GMW protects the set only from queriers that follow the
    /// protocol; a deviating querier reads the whole set (use `tacit psi` for
    /// untrusted queriers). Required.
    #[arg(long)]
    semi_honest_peers: bool,
    /// Sessions served at once; more connections are closed at once.
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u64).range(1..=256))]
    max_sessions: u64,
    /// Seconds a session may last, from accept to the last message.
    #[arg(long, value_name = "SECONDS", default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..=86400))]
    session_timeout: u64,
    #[command(flatten)]
    channel: ChannelArgs,
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
    channel: ChannelArgs,
    #[command(flatten)]
    set: SetArgs,
}

fn prepare(a: &SetArgs) -> Result<PreparedSet> {
    if a.max_peer == 0 || a.max_peer > MAX_SET {
        anyhow::bail!("--max-peer must be from 1 to {MAX_SET}");
    }
    let elements = read_set(&a.set, psi::MAX_SET, "the most `tacit mpc psi` supports")?;
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

/// The refusal of `serve` without `--semi-honest-peers`.
pub const NEEDS_ACK: &str = "tacit mpc psi serve protects the set only from queriers that follow the protocol \
(semi-honest GMW): a querier that deviates reads the whole set. Pass --semi-honest-peers if every querier \
runs tacit unmodified; for untrusted queriers use `tacit psi serve`";

/// Runs a `tacit mpc psi` command.
pub fn run(cmd: PsiCommand, store: Option<&Path>) -> Result<()> {
    match cmd {
        PsiCommand::Serve(a) => {
            if !a.semi_honest_peers {
                bail!("{NEEDS_ACK}");
            }
            let set = Arc::new(prepare(&a.set)?);
            // Sessions run side by side on all cores (building a circuit is CPU work).
            let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
            rt.block_on(crate::util::shutdown::serving(serve(
                *a,
                set,
                store.map(Path::to_path_buf),
            )))
        }
        PsiCommand::Query(a) => {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            let set = prepare(&a.set)?;
            let r = rt.block_on(async {
                let mut ch = super::cmd::peer_channel(&a.channel, store, tacit_net::Protocol::MpcPsi)?;
                let (mut c, peer) = ch.connect(&a.connect, &NetConfig::default()).await?;
                eprintln!("tacit mpc psi: {}", peer.describe());
                let query = psi::Query::builder(Arc::new(set))
                    .max_peer(a.set.max_peer)
                    .triples(a.set.triples.triples(Party::B, store)?);
                Ok::<_, anyhow::Error>(query.run(&mut c).await?)
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

async fn serve(a: ServeArgs, set: Arc<PreparedSet>, store: Option<PathBuf>) -> Result<()> {
    let ch = super::cmd::peer_channel(&a.channel, store.as_deref(), tacit_net::Protocol::MpcPsi)?;
    // The querier chooses its set size, up to --max-peer, and with it the circuit
    // this server builds: the largest must fit the memory this process may use.
    let worst = psi::PsiParams {
        sigma: set.sigma,
        n_a: set.values.len(),
        n_b: a.set.max_peer,
    };
    let worst_bytes = psi::footprint(&worst)?;
    let budget = crate::util::memory_budget();
    if let Some(b) = budget
        && worst_bytes > b
    {
        bail!(
            "a query of --max-peer {} elements makes this server build a circuit of about {} MiB; this process may use {}: lower --max-peer",
            a.set.max_peer,
            worst_bytes.div_ceil(1 << 20),
            crate::util::mib(b)
        );
    }
    let json = a.set.json;
    let mut server = psi::Server::builder(set.clone())
        .listen(a.listen.as_str())
        .max_peer(a.set.max_peer)
        .max_sessions(a.max_sessions as usize)
        .session_timeout(Duration::from_secs(a.session_timeout))
        .channel(super::cmd::listening_channel(&ch)?)
        .triples(a.set.triples.triples(Party::A, store.as_deref())?)
        .semi_honest_peers()
        .on_event(move |e| match e {
            ServerEvent::Session { result: Ok(r), .. } if json => println!("{}", stats_json(&r)),
            ServerEvent::Session { n, result: Ok(r) } => {
                eprintln!("tacit mpc psi serve: session {n}: {}", stats_line(&r))
            }
            ServerEvent::Session { n, result: Err(e) } => {
                eprintln!(
                    "tacit mpc psi serve: session {n}: {}",
                    sanitize(&crate::util::one_line(&e.into()))
                )
            }
            ServerEvent::Admission(line) => eprintln!("tacit mpc psi serve: {}", sanitize(&line)),
            _ => {}
        });
    // One budget for all sessions (what this process may use now, as checked above):
    // each query reserves its circuit from it before anything is built, so queriers
    // arriving at once cannot each pass against the same free memory.
    if let Some(b) = budget {
        server = server.memory_budget(b);
    }
    if let Some(n) = a.sessions {
        server = server.sessions(n);
    }
    let server = server.bind().await?;
    super::cmd::announce(&ch, "tacit mpc psi serve")?;
    eprintln!(
        "tacit mpc psi serve: {} distinct elements of {} bits; queries of up to {} elements (a circuit of up to {} MiB each); at most {} sessions at once; listening on {}",
        set.values.len(),
        set.sigma,
        a.set.max_peer,
        worst_bytes.div_ceil(1 << 20),
        a.max_sessions,
        server.local_addr()
    );
    Ok(server.serve().await?)
}
