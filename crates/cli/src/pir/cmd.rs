//! `tacit pir table gen` and `tacit pir query`: a quick check of the PIR backends on a
//! user's own table before the TracEdge protocol runs over the network.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use clap::{Args, Subcommand, ValueEnum};
use tacit_crypto::rng::SecureRng;
use tacit_pir::local::{self, LocalBackend, NTRU_MAX_TRANSFORMED, NTRU_WARNING};
use tacit_pir::ntru::NtruLayout;
use tacit_pir::{LweBackend, Table, TableShape};

/// PIR backends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Backend {
    /// SimplePIR-style LWE, n = 1024, q = 2^32 (default, ≥ 128-bit security).
    Lwe,
    /// The paper's NTRU PIR (N = 439, q = 2^21, X^N − 1). INSECURE: the server
    /// recovers the queried row from the query; for reproducing the paper only.
    NtruPaper,
    /// The lwe server on NVIDIA GPUs (CUDA loaded at run time, answers identical to
    /// lwe); without a GPU it stops with a one-line reason.
    LweGpu,
}

/// `tacit pir …`.
#[derive(Debug, Subcommand)]
pub enum PirCommand {
    /// Key tables as files: raw bytes, row i at offset i·B.
    #[command(subcommand)]
    Table(TableCommand),
    /// Run client and server in one process and print the row in hex.
    #[command(after_help = "\
Examples:
  tacit pir table gen --rows 1000000 --bytes 41 --out keys.tbl
  tacit pir query --table keys.tbl --bytes 41 --row 123456
  tacit pir query --table keys.tbl --bytes 41 --row 123456 --json
  tacit pir query --table keys.tbl --bytes 41 --row 7 --backend ntru-paper")]
    Query(QueryArgs),
    /// TracEdge server: keys, subscribers, tables, serving (§3.5).
    #[command(subcommand)]
    Server(super::tracedge::ServerCommand),
    /// TracEdge subscriber: enrol, authenticate, audit.
    #[command(subcommand)]
    Client(super::tracedge::ClientCommand),
    /// Check a proof of misbehaviour offline (anyone can).
    #[command(after_help = "Example:\n  tacit pir verify-proof caught.proof --server-key 9a0b…")]
    VerifyProof(super::tracedge::VerifyArgs),
}

/// `tacit pir table …`.
#[derive(Debug, Subcommand)]
pub enum TableCommand {
    /// Write a table of random rows.
    #[command(after_help = "Example:\n  tacit pir table gen --rows 10000000 --bytes 41 --out keys.tbl")]
    Gen(GenArgs),
}

/// Options of `pir table gen`.
#[derive(Debug, Args)]
pub struct GenArgs {
    /// Number of rows.
    #[arg(long)]
    rows: u64,
    /// Bytes per row.
    #[arg(long)]
    bytes: u32,
    /// The file to write.
    #[arg(long)]
    out: PathBuf,
}

/// Options of `pir query`.
#[derive(Debug, Args)]
pub struct QueryArgs {
    /// The table file (raw bytes, row i at offset i·B).
    #[arg(long)]
    table: PathBuf,
    /// Bytes per row B.
    #[arg(long)]
    bytes: u32,
    /// The row to retrieve.
    #[arg(long)]
    row: u64,
    /// The backend.
    #[arg(long, value_enum, default_value_t = Backend::Lwe)]
    backend: Backend,
    /// GPUs for --backend lwe-gpu: all, or ordinals like 0,1 (the table is split by
    /// rows across them).
    #[arg(long, default_value = "all")]
    gpus: String,
    /// Print JSON: {"row": hex, sizes, times}.
    #[arg(long)]
    json: bool,
}

/// Runs `tacit pir …`.
pub fn run(cmd: PirCommand) -> Result<()> {
    match cmd {
        PirCommand::Table(TableCommand::Gen(a)) => gen_table(&a),
        PirCommand::Query(a) => query(&a),
        PirCommand::Server(c) => super::tracedge::run_server(c),
        PirCommand::Client(c) => super::tracedge::run_client(c),
        PirCommand::VerifyProof(a) => super::tracedge::verify_proof(a),
    }
}

fn gen_table(a: &GenArgs) -> Result<()> {
    let shape = TableShape::new(a.rows, a.bytes)?;
    let total = shape.table_bytes();
    let pb = crate::util::progress(total.div_ceil(1 << 20), "writing MiB");
    local::write_random_table(&a.out, shape, |written, _| pb.set_position(written.div_ceil(1 << 20)))?;
    pb.finish_and_clear();
    eprintln!(
        "wrote {} rows of {} bytes ({} bytes) to {}",
        a.rows,
        a.bytes,
        total,
        a.out.display()
    );
    Ok(())
}

/// Reads a table file of `row_bytes`-byte rows within this machine's memory budget.
pub fn read_table(path: &Path, row_bytes: u32) -> Result<Table> {
    if row_bytes == 0 {
        bail!("--bytes must be at least 1");
    }
    Ok(local::read_table(path, row_bytes, crate::util::memory_budget())?)
}

#[derive(serde::Serialize)]
struct QueryOut {
    row: String,
    backend: &'static str,
    index: u64,
    rows: u64,
    row_bytes: u32,
    hint_bytes: u64,
    query_bytes: u64,
    answer_bytes: u64,
    setup_ms: f64,
    query_ms: f64,
    answer_ms: f64,
    decode_ms: f64,
    insecure: bool,
}

fn query(a: &QueryArgs) -> Result<()> {
    let table = read_table(&a.table, a.bytes)?;
    table.shape().check_row(a.row)?;
    let backend = match a.backend {
        Backend::Lwe => LocalBackend::Lwe(LweBackend::from_names("lwe", &a.gpus)?),
        Backend::LweGpu => LocalBackend::Lwe(LweBackend::from_names("lwe-gpu", &a.gpus)?),
        Backend::NtruPaper => {
            eprintln!("{NTRU_WARNING}");
            let need = local::ntru_transformed_bytes(&NtruLayout::square(table.shape()));
            if need > NTRU_MAX_TRANSFORMED {
                bail!(
                    "ntru-paper keeps the table in transformed form: {} GiB for this table, over the {} GiB limit; use --backend lwe",
                    need >> 30,
                    NTRU_MAX_TRANSFORMED >> 30
                );
            }
            LocalBackend::NtruPaper
        }
    };
    let run = local::query(&table, a.row, &backend, &mut SecureRng::from_os())?;
    let (row, sizes) = (run.row, run.sizes);
    let setup_ms = crate::util::millis(run.timings.setup);
    let query_ms = crate::util::millis(run.timings.query);
    let answer_ms = crate::util::millis(run.timings.answer);
    let decode_ms = crate::util::millis(run.timings.decode);
    if a.json {
        let out = QueryOut {
            row: hex::encode(&row),
            backend: match a.backend {
                Backend::Lwe => "lwe",
                Backend::NtruPaper => "ntru-paper",
                Backend::LweGpu => "lwe-gpu",
            },
            index: a.row,
            rows: table.shape().rows,
            row_bytes: a.bytes,
            hint_bytes: sizes.hint_bytes,
            query_bytes: sizes.query_bytes,
            answer_bytes: sizes.answer_bytes,
            setup_ms,
            query_ms,
            answer_ms,
            decode_ms,
            insecure: a.backend == Backend::NtruPaper,
        };
        println!("{}", serde_json::to_string(&out)?);
    } else {
        println!("{}", hex::encode(&row));
        eprintln!(
            "row {} of {}: setup {setup_ms:.1} ms, query {query_ms:.1} ms ({} bytes), answer {answer_ms:.1} ms ({} bytes), decode {decode_ms:.2} ms; hint {} bytes",
            a.row,
            table.shape().rows,
            sizes.query_bytes,
            sizes.answer_bytes,
            sizes.hint_bytes
        );
    }
    Ok(())
}
