//! PIR on a table file in one process: what `tacit pir table gen` and `tacit pir query`
//! run, for a product (or a researcher) that wants to try a backend on its own table
//! before TracEdge serves it over the network ([`crate::tracedge::service`]).
//!
//! A table file is raw bytes, row `i` at offset `i·B` for rows of `B` bytes.
//! [`write_random_table`] writes one of random rows, [`read_table`] reads one back
//! (bounded by a memory budget, refusing a file that is not a whole number of rows),
//! and [`query`] runs client and server of a backend side by side and returns the row
//! with the message sizes and the time of each step.
//!
//! ```
//! use tacit_crypto::rng::SecureRng;
//! use tacit_pir::TableShape;
//! use tacit_pir::local::{self, LocalBackend};
//!
//! let path = std::env::temp_dir().join(format!("tacit-local-doc-{}.tbl", std::process::id()));
//! local::write_random_table(&path, TableShape::new(300, 8).unwrap(), |_written, _total| {}).unwrap();
//! let table = local::read_table(&path, 8, None).unwrap();
//! let run = local::query(&table, 42, &LocalBackend::default(), &mut SecureRng::from_os()).unwrap();
//! assert_eq!(run.row, table.row(42).unwrap());
//! println!("query {} bytes, answer {} bytes", run.sizes.query_bytes, run.sizes.answer_bytes);
//! # std::fs::remove_file(&path).unwrap();
//! ```

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rand_core::{CryptoRng, RngCore};
use tacit_crypto::rng::SecureRng;

use crate::lwe::{LweClient, LweParams};
use crate::ntru::{NtruClient, NtruLayout, NtruServer};
use crate::{
    LweAnyServer, LweBackend, MAX_ROW_BYTES, MAX_ROWS, PirClient, PirServer, Selection, Sizes, Table, TableShape,
};

/// The warning to show whenever `ntru-paper` runs.
pub const NTRU_WARNING: &str = "warning: ntru-paper is INSECURE: a server recovers the queried row from the query alone (see docs/pir.md); use it only to reproduce the paper";

/// The largest transformed table `ntru-paper` builds in memory (8 GiB).
pub const NTRU_MAX_TRANSFORMED: u64 = 8 << 30;

/// Bytes of the transformed `ntru-paper` table for a layout.
pub fn ntru_transformed_bytes(layout: &NtruLayout) -> u64 {
    layout.regions() as u64 * layout.columns() as u64 * 1024 * 8
}

/// What can go wrong writing, reading or querying a table file. The messages are the
/// ones `tacit pir table gen` and `tacit pir query` print.
#[derive(Debug, thiserror::Error)]
pub enum LocalError {
    /// A PIR error (an invalid shape, a row outside the table, …).
    #[error(transparent)]
    Pir(#[from] crate::Error),
    /// The table file cannot be read, or is over the memory budget.
    #[error(transparent)]
    File(#[from] tacit_wire::file::FileError),
    /// The table file cannot be created.
    #[error("cannot create {}: {source}", path.display())]
    Create {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The table file cannot be written.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The table file holds no byte.
    #[error("the table {} is empty", path.display())]
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// The table file is not a whole number of rows (truncated, or the wrong row size).
    #[error("the table {} has {len} bytes, not a whole number of {row_bytes}-byte rows", path.display())]
    NotWholeRows {
        /// The file.
        path: PathBuf,
        /// Its length in bytes.
        len: usize,
        /// The row size asked for.
        row_bytes: u32,
    },
    /// The table is too large for `ntru-paper`, which keeps it transformed in memory.
    #[error(
        "ntru-paper keeps the table in transformed form: {} GiB for this table, over the {} GiB limit; use the lwe backend",
        need >> 30,
        limit >> 30
    )]
    NtruTooLarge {
        /// Bytes of the transformed table.
        need: u64,
        /// The limit, [`NTRU_MAX_TRANSFORMED`].
        limit: u64,
    },
}

/// Writes a table of `shape` random rows (from the operating system's randomness) to
/// `path`, creating or truncating it. `progress(written, total)` is called after each
/// MiB with the bytes written so far. Returns the bytes written.
pub fn write_random_table(
    path: &Path,
    shape: TableShape,
    mut progress: impl FnMut(u64, u64),
) -> Result<u64, LocalError> {
    let file = std::fs::File::create(path).map_err(|source| LocalError::Create {
        path: path.to_owned(),
        source,
    })?;
    let write_err = |source| LocalError::Write {
        path: path.to_owned(),
        source,
    };
    let mut w = std::io::BufWriter::with_capacity(1 << 20, file);
    let mut rng = SecureRng::from_os();
    let total = shape.table_bytes();
    let mut buf = vec![0u8; 1 << 20];
    let mut left = total;
    while left > 0 {
        let n = left.min(buf.len() as u64) as usize;
        rng.fill_bytes(&mut buf[..n]);
        w.write_all(&buf[..n]).map_err(write_err)?;
        left -= n as u64;
        progress(total - left, total);
    }
    w.flush().map_err(write_err)?;
    Ok(total)
}

/// Reads a table file of `row_bytes`-byte rows, reading at most `memory_budget` bytes
/// (and at most [`MAX_ROWS`] rows): a larger file is refused, as is an empty one or
/// one that is not a whole number of rows.
pub fn read_table(path: &Path, row_bytes: u32, memory_budget: Option<u64>) -> Result<Table, LocalError> {
    if row_bytes == 0 {
        return Err(crate::Error::InvalidParams(format!("a row has 1 to {MAX_ROW_BYTES} bytes, not 0")).into());
    }
    let limit = MAX_ROWS
        .saturating_mul(u64::from(row_bytes))
        .min(memory_budget.unwrap_or(u64::MAX));
    let data = tacit_wire::file::read_bounded(path, "the table", limit)?;
    if data.is_empty() {
        return Err(LocalError::Empty { path: path.to_owned() });
    }
    if !data.len().is_multiple_of(row_bytes as usize) {
        return Err(LocalError::NotWholeRows {
            path: path.to_owned(),
            len: data.len(),
            row_bytes,
        });
    }
    Ok(Table::from_bytes(data, row_bytes)?)
}

/// The backend [`query`] runs.
#[derive(Debug, Clone)]
pub enum LocalBackend {
    /// `lwe` (the default), on the CPU or the GPUs.
    Lwe(LweBackend),
    /// `ntru-paper`. **Insecure** (see [`NTRU_WARNING`]); for reproducing the paper.
    NtruPaper,
}

impl Default for LocalBackend {
    fn default() -> Self {
        LocalBackend::Lwe(LweBackend::Cpu)
    }
}

/// The time of each step of a [`query`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timings {
    /// Server setup (layout and, for `lwe`, the hint).
    pub setup: Duration,
    /// The client's query.
    pub query: Duration,
    /// The server's answer.
    pub answer: Duration,
    /// The client's decoding.
    pub decode: Duration,
}

/// What a [`query`] returns.
#[derive(Debug, Clone)]
pub struct LocalQuery {
    /// The row retrieved.
    pub row: Vec<u8>,
    /// The sizes of hint, query and answer.
    pub sizes: Sizes,
    /// The time of each step.
    pub timings: Timings,
}

fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let t = Instant::now();
    let v = f();
    (v, t.elapsed())
}

/// Sets up a server of `backend` over `table`, and a client that retrieves row `row`
/// through it; returns the row, the sizes and the timings. `ntru-paper` is refused
/// for tables whose transformed form exceeds [`NTRU_MAX_TRANSFORMED`]; showing
/// [`NTRU_WARNING`] is the caller's job.
pub fn query<R: RngCore + CryptoRng>(
    table: &Table,
    row: u64,
    backend: &LocalBackend,
    rng: &mut R,
) -> Result<LocalQuery, LocalError> {
    table.shape().check_row(row)?;
    let row_bytes = table.shape().row_bytes;
    let sel = Selection::row(row);
    let (row, sizes, setup, query, answer, decode) = match backend {
        LocalBackend::Lwe(backend) => {
            let mut seed = [0u8; 16];
            rng.fill_bytes(&mut seed);
            let params = LweParams::new(table.shape(), seed)?;
            let (server, setup) = timed(|| LweAnyServer::setup(table, params, backend));
            let server = server?;
            let client = LweClient::new(server.hint())?;
            let (q, query) = timed(|| client.query(&sel, rng));
            let (state, q) = q?;
            let (ans, answer) = timed(|| server.answer(&q));
            let (d, decode) = timed(|| client.decode(&state, &ans?));
            (d?.to_row_bytes(row_bytes), server.sizes(), setup, query, answer, decode)
        }
        LocalBackend::NtruPaper => {
            let layout = NtruLayout::square(table.shape());
            let need = ntru_transformed_bytes(&layout);
            if need > NTRU_MAX_TRANSFORMED {
                return Err(LocalError::NtruTooLarge {
                    need,
                    limit: NTRU_MAX_TRANSFORMED,
                });
            }
            let (server, setup) = timed(|| NtruServer::setup(table, layout));
            let server = server?;
            let client = NtruClient::new(layout, rng);
            let (q, query) = timed(|| client.query(&sel, rng));
            let (state, q) = q?;
            let (ans, answer) = timed(|| server.answer(&q));
            let (d, decode) = timed(|| client.decode(&state, &ans?));
            (d?.to_row_bytes(row_bytes), server.sizes(), setup, query, answer, decode)
        }
    };
    Ok(LocalQuery {
        row,
        sizes,
        timings: Timings {
            setup,
            query,
            answer,
            decode,
        },
    })
}
