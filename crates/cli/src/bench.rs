//! `tacit bench <experiment>`: the clap tree of every benchmark; each experiment
//! lives in its subsystem's folder (`psi/bench.rs`, `drop/bench.rs`,
//! `discovery/bench.rs`).

use anyhow::Result;
use clap::Subcommand;

/// Benchmarks.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// PSI: precomputation vs raw primitives, online compute vs 6·M scalar
    /// multiplications, message sizes.
    #[command(after_help = "\
Example:
  tacit bench psi --ids 10 --contacts 10000
  tacit bench psi --ids 10 --contacts 10000 --group p256 --json
  tacit bench psi --load --clients 8            # a psi serve process under concurrent clients")]
    Psi(crate::psi::bench::PsiBenchArgs),
    /// PrivateDrop vs legacy AirDrop: the paper's Table 3 grid (Fig. 6), precomputation
    /// against n (Fig. 10), PNG plots; --load for concurrent senders.
    #[command(after_help = "\
Examples:
  tacit bench drop                                   # the paper's grid, 20 runs per point
  tacit bench drop --ids 10 --contacts 1000,10000 --runs 10
  tacit bench drop --load --runs 200 --ids 10 --contacts 10000")]
    Drop(crate::drop::bench::DropBenchArgs),
    /// Private discovery (Wu et al. Table 1): SIGMA-I vs private mutual authentication,
    /// 0-RTT, advertisement size and processing, IBE microbenchmarks.
    #[command(after_help = "\
Examples:
  tacit bench discovery
  tacit bench discovery --runs 500 --json")]
    Discovery(crate::discovery::bench::DiscoveryBenchArgs),
    /// GMW engine: token and OT-extension triples against their floors, online time of
    /// aes_128 and sha256 ×1024 between two processes against its floor.
    #[command(subcommand)]
    Mpc(crate::mpc::bench::MpcBenchCommand),
    /// PIR backends (TracEdge §4–6): lwe and ntru-paper, the peer crates, the scan floor.
    #[command(subcommand)]
    Pir(crate::pir::bench::PirBenchCommand),
    /// PROS: Paillier vs key and plaintext size (Fig. 5, 14), framed-TCP round trips
    /// (Fig. 6), FNP schoolbook / Karatsuba / bucketed (Fig. 8), 3PR worst and average
    /// case (Fig. 9, 12, 13, 15), big-integer backends; ratios against their floors.
    #[command(after_help = "\
Examples:
  tacit bench pros                 # a few minutes
  tacit bench pros --quick --json
  tacit bench pros --full          # the paper's grids (hours)")]
    Pros(crate::pros::bench::ProsBenchArgs),
    /// Every table and figure of the five papers that tacit reproduces, in one go:
    /// runs the benches above with --json, keeps their JSON, and writes the tables and
    /// SVG plots of docs/REPRODUCE.md beside the papers' numbers (bench/paper-numbers.json).
    #[command(after_help = "\
Run it from the repository's root.

Examples:
  tacit bench reproduce --quick        # a few minutes on two cores; bench/results/reproduce-<date>-quick/
  tacit bench reproduce                # the full sizes: much longer (the TracEdge table at 10^7 rows alone takes minutes)
  tacit bench reproduce --only drop,psi --out bench/results/reproduce-2026-11-26
  tacit bench reproduce --render-only bench/results/reproduce-2026-11-26-quick   # re-render, run nothing")]
    Reproduce(crate::reproduce::ReproduceArgs),
    /// The receiver process of `bench drop` (internal).
    #[command(hide = true)]
    DropPeer(crate::drop::bench::DropPeerArgs),
}

/// Runs one benchmark.
pub fn run(cmd: BenchCommand) -> Result<()> {
    match cmd {
        BenchCommand::Psi(a) => crate::psi::bench::run(a),
        BenchCommand::Drop(a) => crate::drop::bench::run(a),
        BenchCommand::DropPeer(a) => crate::drop::bench::run_peer(a),
        BenchCommand::Discovery(a) => crate::discovery::bench::run(a),
        BenchCommand::Mpc(c) => crate::mpc::bench::run_cmd(c),
        BenchCommand::Pir(c) => crate::pir::bench::run(c),
        BenchCommand::Pros(a) => crate::pros::bench::run(a),
        BenchCommand::Reproduce(a) => crate::reproduce::run(a),
    }
}
