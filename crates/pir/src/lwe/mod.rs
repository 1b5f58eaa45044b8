//! `lwe`, the default backend: a SimplePIR-style scheme (Henzinger, Hong,
//! Corrigan-Gibbs, Meiklejohn, Vaikuntanathan, USENIX Security 2023) that replaces the
//! paper's NTRU PIR (see `docs/pir.md` for the parameters, the security estimate and
//! the departures).
//!
//! **Database as a matrix.** Rows of the table are cut into `d` symbols of `b = log₂ p`
//! bits. Row `i` is stored in column `c = i div S` of an `m × ℓ` matrix `D` over
//! `Z_p`, in the `d` consecutive matrix rows of its *slot* `s = i mod S`
//! (`m = S·d`, `ℓ = ⌈n/S⌉`). Entries are centred: `D[r][c] = x − p/2 ∈ [−p/2, p/2)`.
//!
//! **LWE.** Dimension `n = 1024`, modulus `q = 2³²`, secret uniform in `Z_q^n`, error
//! from the discrete Gaussian with `σ = 58` (129 bits classical core-SVP, [`security`];
//! SimplePIR's `σ = 6.4` gives about 95); `Δ = q/p`. The public matrix
//! `A ∈ Z_q^{ℓ×n}` is expanded from a seed (`prg`).
//!
//! * hint (once per table, identical for every client): `H = D·A ∈ Z_q^{m×n}`;
//! * query for the weights `u ∈ Z_p^ℓ` (one 1 for one row): `qry = A·s + e + Δ·u`;
//! * answer: `ans = D·qry ∈ Z_q^m` (`kernel`, one pass over `D` per batch);
//! * decode slot `s`: for its `d` matrix rows, `ans_r − H_r·s = D_r·e + Δ·(D_r·u)`;
//!   rounding to the nearest multiple of `Δ` gives `D_r·u mod p`, and adding
//!   `(p/2)·Σu` undoes the centring.
//!
//! Correctness: `|D_r·e| < Δ/2` except with probability `2·exp(−(Δ/2)² / (2σ²(p/2)²ℓ))`,
//! which [`LweParams`] keeps below 2⁻⁴⁰ per symbol by its choice of `p`.
//!
//! **Weighted queries.** `u` may carry any weights: the answer then decodes, for every
//! slot, to `Σ_c u_c · row(c, slot)`. A [`Selection`] of rows that share one slot
//! (row indices equal modulo `S`) therefore decodes to exactly the weighted sum of
//! those rows (TracEdge §4.2's Multiple Row Selection, for audits).

pub(crate) mod gauss;
pub(crate) mod kernel;
mod messages;
pub(crate) mod prg;
pub mod security;

use std::sync::Arc;

use rand_chacha::rand_core::SeedableRng;
use rand_core::{CryptoRng, RngCore};
use rayon::prelude::*;
use sha2::{Digest, Sha256};
use zeroize::{Zeroize, Zeroizing};

pub use messages::{
    LweAnswer, LweHint, LweHintUpdate, LweQuery, TAG_ANSWER, TAG_HINT, TAG_HINT_UPDATE, TAG_QUERY, be_bytes_to_u32s,
    read_query_raw,
};

use crate::backend::{Decoded, PirClient, PirServer, Selection, Sizes, SymbolLayout, Table, TableShape};
use crate::{Error, Result};
use kernel::{PreparedQuery, TiledMatrix};
use prg::MatrixA;

/// The LWE dimension.
pub const LWE_N: usize = 1024;
/// `log₂ q`.
pub const LOG_Q: u32 = 32;
/// The largest symbol width (entries are stored as signed bytes).
pub const MAX_LOG_P: u32 = 8;
/// The correctness target: per decoded symbol, failure probability below 2^-40.
pub const CORRECTNESS_BITS: f64 = 40.0;
/// The widest matrix accepted (columns `ℓ`, i.e. query elements).
pub const MAX_COLS: u32 = 1 << 24;
/// The tallest matrix accepted (rows `m`, i.e. answer elements).
pub const MAX_MATRIX_ROWS: u32 = 1 << 24;
/// The largest hint accepted, in elements (4 GiB).
pub const MAX_HINT_ELEMS: u64 = 1 << 30;

/// The name of this backend.
pub const BACKEND: &str = "lwe";

/// Public parameters of an `lwe` table: the table's shape, the plaintext modulus, the
/// matrix shape and the seed of `A`. Sent to clients with the hint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LweParams {
    shape: TableShape,
    log_p: u32,
    slots: u32,
    cols: u32,
    seed: [u8; 16],
}

/// The server kernel this CPU runs (`avx512-vnni`, `avx2` or `scalar`; chosen at run
/// time; `docs/pir.md`, "The server kernel").
pub fn kernel_name() -> &'static str {
    kernel::Isa::detect().name()
}

/// The failure probability exponent for one symbol: `log₂ P[|D_r·e| ≥ Δ/2]` bound.
pub fn failure_log2(log_p: u32, cols: u64) -> f64 {
    let p = (1u64 << log_p) as f64;
    let half_delta = 2f64.powi(LOG_Q as i32 - 1) / p;
    let bound = gauss::SIGMA * (p / 2.0) * (cols as f64).sqrt();
    // 2·exp(−t²/2), t = (Δ/2)/bound, in log₂.
    1.0 - (half_delta / bound).powi(2) / 2.0 / std::f64::consts::LN_2
}

impl LweParams {
    /// Parameters for `shape` with the default matrix shape (slots chosen so that
    /// `m ≈ ℓ`, which balances query and answer) and the largest plaintext modulus
    /// `p = 2^b ≤ 2⁸` that keeps decoding failures below 2⁻⁴⁰ per symbol.
    pub fn new(shape: TableShape, seed: [u8; 16]) -> Result<Self> {
        Self::build(shape, None, seed)
    }

    /// Parameters with `slots` rows per column (a taller matrix makes a bigger hint
    /// and answer and a smaller query).
    pub fn with_slots(shape: TableShape, slots: u32, seed: [u8; 16]) -> Result<Self> {
        Self::build(shape, Some(slots), seed)
    }

    fn build(shape: TableShape, slots: Option<u32>, seed: [u8; 16]) -> Result<Self> {
        for log_p in (1..=MAX_LOG_P).rev() {
            let d = symbols_per_row(shape.row_bytes, log_p) as u64;
            let s = match slots {
                Some(s) => s as u64,
                None => (((shape.rows as f64 / d as f64).sqrt()).round() as u64).clamp(1, shape.rows),
            };
            if s == 0 || s > shape.rows {
                return Err(Error::InvalidParams(format!(
                    "{s} slots per column for a table of {} rows",
                    shape.rows
                )));
            }
            let cols = shape.rows.div_ceil(s);
            let p = LweParams {
                shape,
                log_p,
                slots: u32::try_from(s).map_err(|_| Error::InvalidParams("too many slots".into()))?,
                cols: u32::try_from(cols).map_err(|_| Error::InvalidParams("too many columns".into()))?,
                seed,
            };
            if p.check().is_ok() {
                return Ok(p);
            }
            if failure_log2(log_p, cols) <= -CORRECTNESS_BITS {
                // The modulus is fine but the shape is not (too big): say why.
                return p.check().map(|_| p);
            }
        }
        Err(Error::InvalidParams(format!(
            "no plaintext modulus keeps decoding failures below 2^-{CORRECTNESS_BITS} for {} rows of {} bytes",
            shape.rows, shape.row_bytes
        )))
    }

    /// Checks that the parameters are consistent and correct (used on decode too).
    pub fn check(&self) -> Result<()> {
        if !(1..=MAX_LOG_P).contains(&self.log_p) {
            return Err(Error::InvalidParams(format!(
                "log2 p = {} is outside 1..=8",
                self.log_p
            )));
        }
        TableShape::new(self.shape.rows, self.shape.row_bytes)?;
        if self.slots == 0 || self.slots as u64 > self.shape.rows {
            return Err(Error::InvalidParams(format!(
                "{} slots for {} rows",
                self.slots, self.shape.rows
            )));
        }
        if self.cols as u64 != self.shape.rows.div_ceil(self.slots as u64) {
            return Err(Error::InvalidParams(format!(
                "{} columns do not match {} rows in {} slots",
                self.cols, self.shape.rows, self.slots
            )));
        }
        if self.cols > MAX_COLS {
            return Err(Error::InvalidParams(format!(
                "{} columns; the limit is {MAX_COLS}",
                self.cols
            )));
        }
        let m = self.slots as u64 * self.d() as u64;
        if m > MAX_MATRIX_ROWS as u64 || m * LWE_N as u64 > MAX_HINT_ELEMS {
            return Err(Error::InvalidParams(format!(
                "a {m}-row matrix makes a hint over the limit of {MAX_HINT_ELEMS} elements"
            )));
        }
        let f = failure_log2(self.log_p, self.cols as u64);
        if f > -CORRECTNESS_BITS {
            return Err(Error::InvalidParams(format!(
                "p = 2^{} over {} columns fails to decode with probability 2^{f:.1}",
                self.log_p, self.cols
            )));
        }
        Ok(())
    }

    /// The table's shape.
    pub fn shape(&self) -> TableShape {
        self.shape
    }
    /// `log₂ p`.
    pub fn log_p(&self) -> u32 {
        self.log_p
    }
    /// Slots per column `S`.
    pub fn slots(&self) -> u32 {
        self.slots
    }
    /// Matrix columns `ℓ` (query length).
    pub fn cols(&self) -> usize {
        self.cols as usize
    }
    /// Symbols per row `d`.
    pub fn d(&self) -> usize {
        symbols_per_row(self.shape.row_bytes, self.log_p)
    }
    /// Matrix rows `m = S·d` (answer length).
    pub fn matrix_rows(&self) -> usize {
        self.slots as usize * self.d()
    }
    /// The seed of `A`.
    pub fn seed(&self) -> [u8; 16] {
        self.seed
    }
    /// `log₂` of the per-symbol decoding failure probability bound.
    pub fn failure_log2(&self) -> f64 {
        failure_log2(self.log_p, self.cols as u64)
    }
    /// How rows are cut into symbols.
    pub fn symbols(&self) -> SymbolLayout {
        SymbolLayout {
            bits: self.log_p,
            modulus: 1 << self.log_p,
        }
    }
    /// Column and slot of row `i`.
    pub fn position(&self, i: u64) -> (usize, usize) {
        ((i / self.slots as u64) as usize, (i % self.slots as u64) as usize)
    }
    /// The hint a client would keep under DoublePIR-style compression (a second PIR
    /// level over `H` and the answer, Henzinger et al. §5): `H₂ = Decomp(H)ᵀ·A₂` has
    /// `d·κ·n` rows of `n` elements, `κ = ⌈32/b⌉` base-`p` digits per element — in
    /// bytes. It is smaller than [`Sizes::hint_bytes`] only when `m > d·κ·n`, which
    /// TracEdge's rows never reach (`docs/pir.md`), so tacit reports it and keeps the
    /// SimplePIR hint.
    pub fn double_pir_hint_bytes(&self) -> u64 {
        let kappa = LOG_Q.div_ceil(self.log_p) as u64;
        self.d() as u64 * kappa * (LWE_N as u64) * (LWE_N as u64) * 4
    }

    /// Sizes of hint, query and answer on the wire.
    pub fn sizes(&self) -> Sizes {
        Sizes {
            hint_bytes: messages::hint_len(self) as u64,
            query_bytes: messages::query_len(self.cols()) as u64,
            answer_bytes: messages::query_len(self.matrix_rows()) as u64,
        }
    }
}

fn symbols_per_row(row_bytes: u32, log_p: u32) -> usize {
    (row_bytes as usize * 8).div_ceil(log_p as usize)
}

/// A table's identity: SHA-256 over a label and the encoded hint (which contains the
/// parameters). It changes whenever a row does.
pub type TableId = [u8; 32];

fn table_id(params: &LweParams, h: &[u32]) -> TableId {
    let mut hasher = Sha256::new();
    hasher.update(b"tacit-pir/lwe/v1/table\0");
    messages::hash_hint(&mut hasher, params, h);
    hasher.finalize().into()
}

/// The column of centred entries of matrix column `c`, for rows given by `row_of`.
fn fill_column(params: &LweParams, layout: &SymbolLayout, table: &Table, c: usize, col: &mut [i8]) {
    let half = 1i32 << (params.log_p - 1);
    let d = params.d();
    for s in 0..params.slots as usize {
        let i = c as u64 * params.slots as u64 + s as u64;
        let base = s * d;
        if i < table.shape().rows {
            let row = table.row(i).unwrap_or(&[]);
            for (k, v) in layout.split(row).into_iter().enumerate() {
                col[base + k] = (v as i32 - half) as i8;
            }
        } else {
            for k in 0..d {
                col[base + k] = (-half) as i8;
            }
        }
    }
}

/// The pieces another implementation of the `lwe` server (the GPU backend) needs to
/// give bit-identical hints, table ids and answers: the centred matrix, the rows of
/// `A`, the table id, and the exact answer.
pub mod reference {
    use super::*;

    /// The centred matrix `D` (`m × ℓ`, row-major, entries `x − p/2`).
    pub fn centred_matrix(params: &LweParams, table: &Table) -> Result<Vec<i8>> {
        if table.shape() != params.shape {
            return Err(Error::InvalidParams(
                "the parameters are for another table shape".into(),
            ));
        }
        let (m, l) = (params.matrix_rows(), params.cols());
        let layout = params.symbols();
        let mut out = vec![0i8; m * l];
        let mut col = vec![0i8; m];
        for c in 0..l {
            fill_column(params, &layout, table, c, &mut col);
            for (r, v) in col.iter().enumerate() {
                out[r * l + c] = *v;
            }
        }
        Ok(out)
    }

    /// Row `c` of `A` (1024 elements) from the seed.
    pub fn a_row(seed: &[u8; 16], c: usize, out: &mut [u32]) {
        MatrixA::new(seed, LWE_N).row(c, out)
    }

    /// The table id of a hint `H` (row-major `m × 1024`).
    pub fn table_id(params: &LweParams, h: &[u32]) -> TableId {
        super::table_id(params, h)
    }

    /// The exact answer `Σ_c D[r][c]·q[c] mod 2³²` for a row-major `D`.
    pub fn answer(d: &[i8], cols: usize, query: &[u32]) -> Vec<u32> {
        d.chunks(cols)
            .map(|row| {
                row.iter()
                    .zip(query)
                    .fold(0u32, |a, (&x, &y)| a.wrapping_add((x as i32 as u32).wrapping_mul(y)))
            })
            .collect()
    }
}

/// The `lwe` server: the matrix in the kernel's tiled layout, the hint, and the table
/// id.
pub struct LweServer {
    params: LweParams,
    matrix: TiledMatrix,
    hint: Arc<Vec<u32>>,
    id: TableId,
}

impl core::fmt::Debug for LweServer {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("LweServer")
            .field("params", &self.params)
            .finish_non_exhaustive()
    }
}

impl LweServer {
    /// Lays out `table` and computes the hint `H = D·A` (once per table).
    pub fn setup(table: &Table, params: LweParams) -> Result<Self> {
        params.check()?;
        if table.shape() != params.shape {
            return Err(Error::InvalidParams(format!(
                "the parameters are for {:?}; the table is {:?}",
                params.shape,
                table.shape()
            )));
        }
        let (m, l) = (params.matrix_rows(), params.cols());
        let layout = params.symbols();
        let mut matrix = TiledMatrix::zeros(m, l);
        matrix.fill_columns(|c, col| fill_column(&params, &layout, table, c, col));
        let hint = compute_hint(&params, &matrix);
        let id = table_id(&params, &hint);
        Ok(LweServer {
            params,
            matrix,
            hint: Arc::new(hint),
            id,
        })
    }

    /// The parameters.
    pub fn params(&self) -> &LweParams {
        &self.params
    }

    /// The table id (changes with every update).
    pub fn table_id(&self) -> TableId {
        self.id
    }

    /// The hint for clients.
    pub fn hint(&self) -> LweHint {
        LweHint {
            params: self.params,
            h: self.hint.clone(),
        }
    }

    /// Bytes of the server's matrix in memory (padding included).
    pub fn matrix_bytes(&self) -> usize {
        self.matrix.bytes()
    }

    fn check_query(&self, q: &LweQuery) -> Result<()> {
        if q.table_id != self.id {
            return Err(Error::WrongTable {
                ours: hex8(&self.id),
                theirs: hex8(&q.table_id),
            });
        }
        if q.values.len() != self.params.cols() {
            return Err(Error::WrongLength {
                what: "the query",
                got: q.values.len(),
                expected: self.params.cols(),
            });
        }
        Ok(())
    }
}

pub(crate) fn hex8(id: &[u8]) -> String {
    id.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// `H = D·A`: the columns of `A` are run through the batch kernel as queries.
fn compute_hint(params: &LweParams, matrix: &TiledMatrix) -> Vec<u32> {
    let (m, l) = (params.matrix_rows(), params.cols());
    let a = MatrixA::new(&params.seed, LWE_N);
    // A row by row (ℓ × n), then its columns as queries, in groups to bound memory.
    let mut a_rows = vec![0u32; l * LWE_N];
    a_rows
        .par_chunks_mut(LWE_N)
        .enumerate()
        .for_each(|(c, row)| a.row(c, row));
    let mut h = vec![0u32; m * LWE_N];
    const GROUP: usize = 256;
    for j0 in (0..LWE_N).step_by(GROUP) {
        let queries: Vec<PreparedQuery> = (j0..j0 + GROUP)
            .into_par_iter()
            .map(|j| {
                let col: Vec<u32> = (0..l).map(|c| a_rows[c * LWE_N + j]).collect();
                PreparedQuery::new(&col, matrix)
            })
            .collect();
        let cols = matrix.mul_batch(&queries);
        h.par_chunks_mut(LWE_N).enumerate().for_each(|(r, hr)| {
            for (k, col) in cols.iter().enumerate() {
                hr[j0 + k] = col[r];
            }
        });
    }
    h
}

impl PirServer for LweServer {
    type Query = LweQuery;
    type Answer = LweAnswer;
    type Update = LweHintUpdate;

    fn backend(&self) -> &'static str {
        BACKEND
    }

    fn shape(&self) -> TableShape {
        self.params.shape
    }

    fn sizes(&self) -> Sizes {
        self.params.sizes()
    }

    fn answer_batch(&self, queries: &[LweQuery]) -> Result<Vec<LweAnswer>> {
        self.answer_batch_refs(&queries.iter().collect::<Vec<_>>())
    }

    fn answer_batch_refs(&self, queries: &[&LweQuery]) -> Result<Vec<LweAnswer>> {
        for q in queries {
            self.check_query(q)?;
        }
        let prepared: Vec<PreparedQuery> = queries
            .par_iter()
            .map(|q| PreparedQuery::new(&q.values, &self.matrix))
            .collect();
        Ok(self
            .matrix
            .mul_batch(&prepared)
            .into_iter()
            .map(|values| LweAnswer {
                table_id: self.id,
                values,
            })
            .collect())
    }

    /// Writes the new row into the matrix and the hint: `H_r += (x'_r − x_r)·A_c` for
    /// the `d` matrix rows of the row's slot (O(d·n) work); clients apply the returned
    /// [`LweHintUpdate`].
    fn update_row(&mut self, row: u64, bytes: &[u8]) -> Result<LweHintUpdate> {
        self.params.shape.check_row(row)?;
        if bytes.len() != self.params.shape.row_bytes as usize {
            return Err(Error::WrongSize {
                what: "the new row",
                got: bytes.len(),
                expected: self.params.shape.row_bytes as usize,
            });
        }
        let (c, s) = self.params.position(row);
        let d = self.params.d();
        let half = 1i32 << (self.params.log_p - 1);
        let mut a_c = vec![0u32; LWE_N];
        MatrixA::new(&self.params.seed, LWE_N).row(c, &mut a_c);
        let hint = Arc::make_mut(&mut self.hint);
        for (k, v) in self.params.symbols().split(bytes).into_iter().enumerate() {
            let r = s * d + k;
            let new = (v as i32 - half) as i8;
            let old = self.matrix.get(r, c);
            if new == old {
                continue;
            }
            self.matrix.set(r, c, new);
            let delta = (new as i32 - old as i32) as u32;
            for (h, a) in hint[r * LWE_N..(r + 1) * LWE_N].iter_mut().zip(&a_c) {
                *h = h.wrapping_add(delta.wrapping_mul(*a));
            }
        }
        let old_id = self.id;
        self.id = table_id(&self.params, &self.hint);
        Ok(LweHintUpdate {
            old_id,
            new_id: self.id,
            first_row: (s * d) as u32,
            rows: self.hint[s * d * LWE_N..(s + 1) * d * LWE_N].to_vec(),
        })
    }
}

/// The `lwe` client: the parameters, the hint and the table id.
#[derive(Clone)]
pub struct LweClient {
    params: LweParams,
    hint: Arc<Vec<u32>>,
    id: TableId,
}

impl core::fmt::Debug for LweClient {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("LweClient")
            .field("params", &self.params)
            .finish_non_exhaustive()
    }
}

/// What the client keeps between its query and the answer: the LWE secret (zeroized
/// on drop, never printed) and which slot it asked for.
pub struct LweQueryState {
    secret: Zeroizing<Vec<u32>>,
    slot: usize,
    weight_sum: u64,
    table_id: TableId,
}

impl core::fmt::Debug for LweQueryState {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("LweQueryState(<secret>)")
    }
}

/// The index-independent part of a query, computable before the client knows what it
/// will ask for: `A·s + e` and the secret `s` (SimplePIR's offline query phase).
pub struct PreparedLweQuery {
    secret: Zeroizing<Vec<u32>>,
    masked: Zeroizing<Vec<u32>>,
}

impl core::fmt::Debug for PreparedLweQuery {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("PreparedLweQuery(<secret>)")
    }
}

impl LweClient {
    /// A client for the table behind `hint`.
    pub fn new(hint: LweHint) -> Result<Self> {
        hint.params.check()?;
        let expected = hint.params.matrix_rows() * LWE_N;
        if hint.h.len() != expected {
            return Err(Error::WrongLength {
                what: "the hint",
                got: hint.h.len(),
                expected,
            });
        }
        let id = table_id(&hint.params, &hint.h);
        Ok(LweClient {
            params: hint.params,
            hint: hint.h,
            id,
        })
    }

    /// The parameters.
    pub fn params(&self) -> &LweParams {
        &self.params
    }

    /// The table id the client's hint belongs to.
    pub fn table_id(&self) -> TableId {
        self.id
    }

    /// Applies a row update published by the server; refuses one made for another
    /// table state, and checks the resulting table id.
    pub fn apply_update(&mut self, up: &LweHintUpdate) -> Result<()> {
        if up.old_id != self.id {
            return Err(Error::WrongTable {
                ours: hex8(&self.id),
                theirs: hex8(&up.old_id),
            });
        }
        let d = self.params.d();
        let m = self.params.matrix_rows();
        let first = up.first_row as usize;
        if !first.is_multiple_of(d) || first + d > m || up.rows.len() != d * LWE_N {
            return Err(Error::InvalidParams(
                "the update does not cover one slot of the hint".into(),
            ));
        }
        let mut h = (*self.hint).clone();
        h[first * LWE_N..(first + d) * LWE_N].copy_from_slice(&up.rows);
        let id = table_id(&self.params, &h);
        if id != up.new_id {
            return Err(Error::WrongTable {
                ours: hex8(&id),
                theirs: hex8(&up.new_id),
            });
        }
        self.hint = Arc::new(h);
        self.id = id;
        Ok(())
    }

    /// The offline half of a query: `A·s + e` for a fresh secret.
    pub fn prepare<R: RngCore + CryptoRng>(&self, rng: &mut R) -> PreparedLweQuery {
        let l = self.params.cols();
        let mut secret = Zeroizing::new(vec![0u32; LWE_N]);
        for v in secret.iter_mut() {
            *v = rng.next_u32();
        }
        let g = gauss::Gaussian::new();
        let a = MatrixA::new(&self.params.seed, LWE_N);
        let s = &secret;
        // One error generator per chunk, seeded from the caller's RNG, so that the
        // chunks run in parallel.
        const CHUNK: usize = 256;
        let seeds: Vec<Zeroizing<[u8; 32]>> = (0..l.div_ceil(CHUNK))
            .map(|_| {
                let mut seed = Zeroizing::new([0u8; 32]);
                rng.fill_bytes(&mut seed[..]);
                seed
            })
            .collect();
        let mut masked = Zeroizing::new(vec![0u32; l]);
        masked
            .par_chunks_mut(CHUNK)
            .zip(seeds.par_iter())
            .enumerate()
            .for_each(|(chunk, (out, seed))| {
                let mut erng = rand_chacha::ChaCha20Rng::from_seed(**seed);
                let mut row = vec![0u32; LWE_N];
                for (k, v) in out.iter_mut().enumerate() {
                    a.row(chunk * CHUNK + k, &mut row);
                    *v = dot(&row, s).wrapping_add(g.sample(&mut erng) as u32);
                }
                row.zeroize();
            });
        PreparedLweQuery { secret, masked }
    }

    /// The online half: adds `Δ·u` for the selection.
    pub fn finish(&self, prepared: PreparedLweQuery, sel: &Selection) -> Result<(LweQueryState, LweQuery)> {
        let slot = self.check(sel)?;
        let delta_shift = LOG_Q - self.params.log_p;
        let modp = (1u64 << self.params.log_p) - 1;
        let mut values = prepared.masked.to_vec();
        let mut weight_sum = 0u64;
        for &(i, w) in sel.entries() {
            let (c, _) = self.params.position(i);
            let w = w as u64 & modp;
            weight_sum += w;
            values[c] = values[c].wrapping_add((w as u32) << delta_shift);
        }
        Ok((
            LweQueryState {
                secret: prepared.secret,
                slot,
                weight_sum,
                table_id: self.id,
            },
            LweQuery {
                table_id: self.id,
                values,
            },
        ))
    }

    fn check(&self, sel: &Selection) -> Result<usize> {
        let mut slot = None;
        for &(i, _) in sel.entries() {
            self.params.shape.check_row(i)?;
            let (_, s) = self.params.position(i);
            match slot {
                None => slot = Some((i, s)),
                Some((j, s0)) if s0 != s => {
                    return Err(Error::NotCombinable {
                        a: j,
                        b: i,
                        why: "lwe combines only rows of one slot (equal modulo the slots per column)",
                    });
                }
                _ => {}
            }
        }
        slot.map(|(_, s)| s)
            .ok_or_else(|| Error::InvalidSelection("no row selected".into()))
    }
}

fn dot(a: &[u32], b: &[u32]) -> u32 {
    a.iter()
        .zip(b)
        .fold(0u32, |acc, (x, y)| acc.wrapping_add(x.wrapping_mul(*y)))
}

impl PirClient for LweClient {
    type Query = LweQuery;
    type Answer = LweAnswer;
    type State = LweQueryState;

    fn shape(&self) -> TableShape {
        self.params.shape
    }

    fn symbols(&self) -> SymbolLayout {
        self.params.symbols()
    }

    fn check_selection(&self, sel: &Selection) -> Result<()> {
        self.check(sel).map(|_| ())
    }

    fn query<R: RngCore + CryptoRng>(&self, sel: &Selection, rng: &mut R) -> Result<(LweQueryState, LweQuery)> {
        self.check(sel)?;
        let prepared = self.prepare(rng);
        self.finish(prepared, sel)
    }

    fn decode(&self, state: &LweQueryState, answer: &LweAnswer) -> Result<Decoded> {
        if answer.table_id != state.table_id {
            return Err(Error::WrongTable {
                ours: hex8(&state.table_id),
                theirs: hex8(&answer.table_id),
            });
        }
        let m = self.params.matrix_rows();
        if answer.values.len() != m {
            return Err(Error::WrongLength {
                what: "the answer",
                got: answer.values.len(),
                expected: m,
            });
        }
        let d = self.params.d();
        let log_p = self.params.log_p;
        let shift = LOG_Q - log_p;
        let mask = (1u32 << log_p) - 1;
        let half = 1u64 << (log_p - 1);
        let uncentre = ((half * state.weight_sum) & mask as u64) as u32;
        let symbols = (0..d)
            .map(|k| {
                let r = state.slot * d + k;
                let noisy = answer.values[r].wrapping_sub(dot(&self.hint[r * LWE_N..(r + 1) * LWE_N], &state.secret));
                let rounded = (noisy.wrapping_add(1 << (shift - 1)) >> shift) & mask;
                rounded.wrapping_add(uncentre) & mask
            })
            .collect();
        Ok(Decoded {
            layout: self.params.symbols(),
            symbols,
        })
    }
}
