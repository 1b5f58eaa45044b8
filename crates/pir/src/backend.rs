//! The interface every PIR backend implements (TracEdge §4.1: query generation,
//! response generation, decoding), with the pieces they share: the table, the
//! selection of rows, the decoded result and the message sizes.

use rand_core::{CryptoRng, RngCore};

use crate::{Error, Result};

/// The largest table this crate accepts: 2³⁴ rows (far above TracEdge's 10⁷).
pub const MAX_ROWS: u64 = 1 << 34;
/// The widest row this crate accepts, in bytes.
pub const MAX_ROW_BYTES: u32 = 1 << 16;

/// The shape of a table: `rows` rows of `row_bytes` bytes (TracEdge §4.1: `n` rows of
/// `ℓ` bits; ℓ is rounded up to whole bytes, so the paper's 326-bit rows are 41 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TableShape {
    /// Number of rows `n`.
    pub rows: u64,
    /// Bytes per row.
    pub row_bytes: u32,
}

impl TableShape {
    /// A shape, checked against [`MAX_ROWS`] and [`MAX_ROW_BYTES`].
    pub fn new(rows: u64, row_bytes: u32) -> Result<Self> {
        if rows == 0 || rows > MAX_ROWS {
            return Err(Error::InvalidParams(format!(
                "a table has 1 to {MAX_ROWS} rows, not {rows}"
            )));
        }
        if row_bytes == 0 || row_bytes > MAX_ROW_BYTES {
            return Err(Error::InvalidParams(format!(
                "a row has 1 to {MAX_ROW_BYTES} bytes, not {row_bytes}"
            )));
        }
        Ok(TableShape { rows, row_bytes })
    }

    /// Size of the table in bytes.
    pub fn table_bytes(&self) -> u64 {
        self.rows * self.row_bytes as u64
    }

    /// Checks that `row` is inside the table.
    pub fn check_row(&self, row: u64) -> Result<()> {
        if row >= self.rows {
            return Err(Error::RowOutOfRange { row, rows: self.rows });
        }
        Ok(())
    }
}

/// A table held in memory: raw bytes, row `i` at offset `i·row_bytes` — the same
/// layout as the table files of `tacit pir table`, so users can bring their own.
#[derive(Clone, PartialEq, Eq)]
pub struct Table {
    shape: TableShape,
    data: Vec<u8>,
}

impl core::fmt::Debug for Table {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Table")
            .field("shape", &self.shape)
            .finish_non_exhaustive()
    }
}

impl Table {
    /// A table over `data`, which must hold a whole number of rows of `row_bytes`.
    pub fn from_bytes(data: Vec<u8>, row_bytes: u32) -> Result<Self> {
        if row_bytes == 0 || row_bytes > MAX_ROW_BYTES {
            return Err(Error::InvalidParams(format!(
                "a row has 1 to {MAX_ROW_BYTES} bytes, not {row_bytes}"
            )));
        }
        if data.is_empty() || !data.len().is_multiple_of(row_bytes as usize) {
            return Err(Error::InvalidParams(format!(
                "a table of {} bytes is not a whole number of {row_bytes}-byte rows",
                data.len()
            )));
        }
        let shape = TableShape::new((data.len() / row_bytes as usize) as u64, row_bytes)?;
        Ok(Table { shape, data })
    }

    /// A table of random rows.
    pub fn random(shape: TableShape, rng: &mut impl RngCore) -> Self {
        let mut data = vec![0u8; shape.table_bytes() as usize];
        rng.fill_bytes(&mut data);
        Table { shape, data }
    }

    /// The shape.
    pub fn shape(&self) -> TableShape {
        self.shape
    }

    /// All rows, row `i` at offset `i·row_bytes`.
    pub fn as_bytes(&self) -> &[u8] {
        &self.data
    }

    /// Row `i`.
    pub fn row(&self, i: u64) -> Result<&[u8]> {
        self.shape.check_row(i)?;
        let b = self.shape.row_bytes as usize;
        let at = i as usize * b;
        Ok(&self.data[at..at + b])
    }

    /// Replaces row `i`.
    pub fn set_row(&mut self, i: u64, bytes: &[u8]) -> Result<()> {
        self.shape.check_row(i)?;
        let b = self.shape.row_bytes as usize;
        if bytes.len() != b {
            return Err(Error::WrongSize {
                what: "the new row",
                got: bytes.len(),
                expected: b,
            });
        }
        let at = i as usize * b;
        self.data[at..at + b].copy_from_slice(bytes);
        Ok(())
    }
}

/// The most rows one weighted query may combine.
pub const MAX_SELECTED_ROWS: usize = 1 << 16;

/// What a query asks for: one row, or a weighted sum of rows (TracEdge §4.2, Multiple
/// Row Selection, which §3.3 uses for audits).
///
/// The result of a selection `{(iₖ, wₖ)}` is, symbol by symbol,
/// `Σₖ wₖ · symbol(row iₖ) mod P`, where the backend fixes the symbol width and the
/// plaintext modulus `P` ([`PirClient::symbols`]). A single row with weight 1 is the
/// row itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    entries: Vec<(u64, u32)>,
}

impl Selection {
    /// One row.
    pub fn row(i: u64) -> Self {
        Selection { entries: vec![(i, 1)] }
    }

    /// A weighted sum of rows; rows must be distinct and weights non-zero.
    pub fn weighted(entries: &[(u64, u32)]) -> Result<Self> {
        if entries.is_empty() || entries.len() > MAX_SELECTED_ROWS {
            return Err(Error::InvalidSelection(format!(
                "a selection has 1 to {MAX_SELECTED_ROWS} rows, not {}",
                entries.len()
            )));
        }
        let mut seen = std::collections::HashSet::with_capacity(entries.len());
        for &(row, w) in entries {
            if w == 0 {
                return Err(Error::InvalidSelection(format!("row {row} has weight 0")));
            }
            if !seen.insert(row) {
                return Err(Error::InvalidSelection(format!("row {row} is selected twice")));
            }
        }
        Ok(Selection {
            entries: entries.to_vec(),
        })
    }

    /// The selected rows and their weights.
    pub fn entries(&self) -> &[(u64, u32)] {
        &self.entries
    }

    /// Whether this selects exactly one row with weight 1.
    pub fn single_row(&self) -> Option<u64> {
        match self.entries.as_slice() {
            [(i, 1)] => Some(*i),
            _ => None,
        }
    }
}

/// How a backend cuts rows into plaintext symbols.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SymbolLayout {
    /// Bits per symbol (row bit `k` is bit `k mod 8` of byte `k / 8`; symbol `j` is
    /// bits `j·bits .. j·bits + bits`, least significant first).
    pub bits: u32,
    /// The plaintext modulus `P` that weighted sums are reduced by.
    pub modulus: u32,
}

impl SymbolLayout {
    /// Symbols per row of `row_bytes` bytes.
    pub fn per_row(&self, row_bytes: u32) -> usize {
        (row_bytes as usize * 8).div_ceil(self.bits as usize)
    }

    /// Cuts a row into symbols.
    pub fn split(&self, row: &[u8]) -> Vec<u32> {
        let n = self.per_row(row.len() as u32);
        let b = self.bits as usize;
        (0..n)
            .map(|j| {
                let mut v = 0u32;
                for k in 0..b {
                    let bit = j * b + k;
                    if bit < row.len() * 8 && (row[bit / 8] >> (bit % 8)) & 1 == 1 {
                        v |= 1 << k;
                    }
                }
                v
            })
            .collect()
    }

    /// Joins symbols back into a row of `row_bytes` bytes; symbols must be
    /// `< 2^bits`.
    pub fn join(&self, symbols: &[u32], row_bytes: u32) -> Vec<u8> {
        let mut out = vec![0u8; row_bytes as usize];
        let b = self.bits as usize;
        for (j, &s) in symbols.iter().enumerate() {
            for k in 0..b {
                let bit = j * b + k;
                if bit < out.len() * 8 && (s >> k) & 1 == 1 {
                    out[bit / 8] |= 1 << (bit % 8);
                }
            }
        }
        out
    }

    /// The plain computation a weighted query replaces: `Σ wₖ·symbol(row iₖ) mod P`.
    pub fn weighted_sum(&self, table: &Table, sel: &Selection) -> Result<Vec<u32>> {
        let n = self.per_row(table.shape().row_bytes);
        let mut acc = vec![0u64; n];
        for &(i, w) in sel.entries() {
            let sym = self.split(table.row(i)?);
            for (a, s) in acc.iter_mut().zip(sym) {
                *a = (*a + (w as u64 % self.modulus as u64) * s as u64) % self.modulus as u64;
            }
        }
        Ok(acc.into_iter().map(|v| v as u32).collect())
    }
}

/// The result of decoding an answer: the selected row, or the weighted sum, as
/// symbols modulo [`SymbolLayout::modulus`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded {
    /// How the symbols are cut.
    pub layout: SymbolLayout,
    /// One value per symbol, `< modulus`.
    pub symbols: Vec<u32>,
}

impl Decoded {
    /// For a single-row query: the row's bytes.
    pub fn to_row_bytes(&self, row_bytes: u32) -> Vec<u8> {
        self.layout.join(&self.symbols, row_bytes)
    }
}

/// Sizes of what travels, in bytes (encoded on the wire).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Sizes {
    /// What a client downloads once per table (and keeps): the hint (0 if none).
    pub hint_bytes: u64,
    /// One query, client to server.
    pub query_bytes: u64,
    /// One answer, server to client.
    pub answer_bytes: u64,
}

/// The server side of a PIR backend: holds the table in the backend's layout and
/// answers queries. A GPU backend implements the same trait over the same message
/// types as its CPU twin, so that both can be compared answer for answer.
pub trait PirServer: Send + Sync {
    /// A client's query.
    type Query;
    /// The server's answer.
    type Answer;
    /// What clients learn when a row is updated (e.g. the changed hint rows).
    type Update;

    /// Name of the backend (`"lwe"`, `"ntru-paper"`, …).
    fn backend(&self) -> &'static str;

    /// The table's shape.
    fn shape(&self) -> TableShape;

    /// Sizes of hint, query and answer.
    fn sizes(&self) -> Sizes;

    /// Answers one query.
    fn answer(&self, query: &Self::Query) -> Result<Self::Answer> {
        let mut out = self.answer_batch(core::slice::from_ref(query))?;
        out.pop().ok_or(Error::Unsupported("an empty batch answer"))
    }

    /// Answers a batch of queries in one pass over the table. The answers are the
    /// same as one [`PirServer::answer`] per query.
    fn answer_batch(&self, queries: &[Self::Query]) -> Result<Vec<Self::Answer>>;

    /// [`PirServer::answer_batch`] over queries held elsewhere (one session's own
    /// and audit queries, say), without copying them into one slice first. The
    /// default copies; the `lwe` backends read the queries in place.
    fn answer_batch_refs(&self, queries: &[&Self::Query]) -> Result<Vec<Self::Answer>>
    where
        Self::Query: Clone,
    {
        let owned: Vec<Self::Query> = queries.iter().map(|q| (*q).clone()).collect();
        self.answer_batch(&owned)
    }

    /// Replaces row `row` without rebuilding the table.
    fn update_row(&mut self, row: u64, bytes: &[u8]) -> Result<Self::Update>;
}

/// The client side of a PIR backend.
pub trait PirClient {
    /// The query it sends.
    type Query;
    /// The answer it decodes.
    type Answer;
    /// What the client keeps between query and answer (secret).
    type State;

    /// The table's shape.
    fn shape(&self) -> TableShape;

    /// How rows are cut into symbols, and the modulus of weighted sums.
    fn symbols(&self) -> SymbolLayout;

    /// Checks that a selection can be asked in one query (rows inside the table, and
    /// combinable under the backend's layout rule).
    fn check_selection(&self, sel: &Selection) -> Result<()>;

    /// Makes a query for `sel`.
    fn query<R: RngCore + CryptoRng>(&self, sel: &Selection, rng: &mut R) -> Result<(Self::State, Self::Query)>;

    /// Decodes the answer to a query made with `state`.
    fn decode(&self, state: &Self::State, answer: &Self::Answer) -> Result<Decoded>;
}
