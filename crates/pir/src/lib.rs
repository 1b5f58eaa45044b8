//! PIR backends for TracEdge (Cassola, Blass, Noubir: *Authenticating Privately over
//! Public Wi-Fi Hotspots*, §4–6).
//!
//! Every backend implements [`PirServer`] and [`PirClient`]: setup over a table of
//! `n` rows of `ℓ` bits, a query for one row or for a weighted sum of rows (the paper's
//! Multiple Row Selection, used for audits), the server's answer (one query, or a
//! batch in one pass over the table), the client's decoding, the sizes of hint, query
//! and answer, and single-row updates.
//!
//! * [`lwe`] — the default: a SimplePIR-style LWE scheme (n = 1024, q = 2³², σ = 58)
//!   at ≥ 128-bit security, with a hint computed once per table.
//! * [`ntru`] — `ntru-paper`: the paper's NTRU PIR (N = 439, q = 2²¹, X^N − 1) with
//!   Multiple Row Selection. **Insecure**: a server recovers the queried row from the
//!   query alone ([`ntru::attack`]); kept for reproducing the paper's tables.
//!
//! [`local`] runs a backend on a table file in one process (`tacit pir query`);
//! [`tracedge::service`] serves TracEdge over the network (`tacit pir server serve`).
//!
//! ```
//! use tacit_pir::{PirClient, PirServer, Selection, Table, TableShape};
//! use tacit_pir::lwe::{LweClient, LweParams, LweServer};
//! use rand_chacha::ChaCha20Rng;
//! use rand_core::SeedableRng;
//!
//! let mut rng = ChaCha20Rng::seed_from_u64(1);
//! let table = Table::random(TableShape::new(500, 16).unwrap(), &mut rng);
//! let server = LweServer::setup(&table, LweParams::new(table.shape(), [7; 16]).unwrap()).unwrap();
//! let client = LweClient::new(server.hint()).unwrap();
//! let (state, query) = client.query(&Selection::row(123), &mut rng).unwrap();
//! let answer = server.answer(&query).unwrap();
//! let row = client.decode(&state, &answer).unwrap().to_row_bytes(16);
//! assert_eq!(row, table.row(123).unwrap());
//! ```
#![deny(missing_docs)]
#![deny(unsafe_code)]

mod any;
mod backend;
mod error;
#[cfg(feature = "gpu")]
#[allow(unsafe_code)]
pub mod gpu;
pub mod local;
pub mod lwe;
pub mod ntru;
pub mod stream;
pub mod tracedge;

pub use any::{LweAnyServer, LweBackend};
pub use backend::{
    Decoded, MAX_ROW_BYTES, MAX_ROWS, MAX_SELECTED_ROWS, PirClient, PirServer, Selection, Sizes, SymbolLayout, Table,
    TableShape,
};
pub use error::Error;

/// Result alias of this crate.
pub type Result<T> = core::result::Result<T, Error>;
