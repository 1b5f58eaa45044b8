/// What can go wrong in a PIR exchange. Every variant says what the peer (or the
/// caller) did, in words a user understands; none carries secret data.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A message from the peer is malformed (truncated, extended, wrong type, over a
    /// bound, …).
    #[error("malformed PIR message: {0}")]
    Wire(#[from] tacit_wire::Error),
    /// The message was made for another backend than the one decoding it.
    #[error("the message is for the {theirs} backend; this side runs {ours}")]
    WrongBackend {
        /// Ours.
        ours: &'static str,
        /// The peer's.
        theirs: String,
    },
    /// The message was made for another table (another key table, another epoch of
    /// the same table, or other parameters).
    #[error("the message is for table {theirs}; this side holds table {ours}")]
    WrongTable {
        /// Our table id (hex prefix).
        ours: String,
        /// The peer's table id (hex prefix).
        theirs: String,
    },
    /// A message carries the wrong number of elements for the parameters.
    #[error("{what} has {got} elements; the parameters require exactly {expected}")]
    WrongLength {
        /// Which field.
        what: &'static str,
        /// What arrived.
        got: usize,
        /// What the parameters require.
        expected: usize,
    },
    /// A row index outside the table.
    #[error("row {row} is outside the table of {rows} rows")]
    RowOutOfRange {
        /// The index asked for.
        row: u64,
        /// The number of rows.
        rows: u64,
    },
    /// The rows of a weighted query cannot be combined in one query of this backend.
    #[error("rows {a} and {b} cannot be combined in one weighted query: {why}")]
    NotCombinable {
        /// One row.
        a: u64,
        /// Another row.
        b: u64,
        /// Why (the backend's layout rule).
        why: &'static str,
    },
    /// A selection with no row, or with more rows than the backend can combine.
    #[error("invalid selection: {0}")]
    InvalidSelection(String),
    /// Invalid table shape or parameters.
    #[error("invalid parameters: {0}")]
    InvalidParams(String),
    /// A row given for an update or a table given for setup has the wrong size.
    #[error("{what} is {got} bytes; the table needs {expected}")]
    WrongSize {
        /// Which input.
        what: &'static str,
        /// Its size.
        got: usize,
        /// The size the table needs.
        expected: usize,
    },
    /// Decryption of an answer failed (the answer is not what the query asked for,
    /// or the noise bound was exceeded).
    #[error("the answer does not decode: {0}")]
    Decode(String),
    /// The operation is not available in this backend.
    #[error("{0} is not supported by this backend")]
    Unsupported(&'static str),
    /// A GPU backend or kernel cannot run here, or a CUDA call failed (one line: what
    /// and why).
    #[error("GPU: {0}")]
    Gpu(String),
    /// The peer refused a message or a message is out of place (a replayed
    /// timestamp, a stale table epoch, a message out of order).
    #[error("refused: {0}")]
    Refused(String),
    /// A change could not be stored (and was not made).
    #[error("the table log could not be stored: {0}")]
    Storage(String),
    /// The peer sheds load (too many sessions): a later attempt may succeed.
    #[error("busy: {0}")]
    Busy(String),
    /// A signature by the server does not verify.
    #[error("the server's signature over {0} does not verify")]
    Signature(&'static str),
    /// An invalid group element or key.
    #[error("invalid key: {0}")]
    InvalidKey(String),
    /// A proof of misbehaviour that does not show misbehaviour.
    #[error("the proof does not hold: {0}")]
    InvalidProof(String),
}
