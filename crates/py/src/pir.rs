//! `tacit.pir`: the `lwe` PIR backend of `tacit-pir` as sans-I/O objects (server,
//! hint, client, query, answer, decode — what `tacit pir query --backend lwe` runs in
//! one process), and the TracEdge subscriber (`enroll`, `authenticate`) against
//! `tacit pir server serve`.
//!
//! Messages are the wire encodings of `docs/wire.md` (tags `0x0601`–`0x0604`): a hint
//! carries the table's parameters, a query and an answer carry the table id, so a
//! query made for another table (or after an update the client has not applied) is
//! refused with the CLI's one-line message.

use crate::blocking::{block_on, runtime};
use crate::err;
use pyo3::create_exception;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use rand_core::RngCore;
use std::path::PathBuf;
use std::sync::Mutex;
use tacit_crypto::rng::SecureRng;
use tacit_pir::lwe::{LweAnswer, LweClient, LweHint, LweHintUpdate, LweParams, LweQuery, LweQueryState, LweServer};
use tacit_pir::tracedge::service::{ServiceError, client};
use tacit_pir::{PirClient, PirServer, Selection, Table};
use tacit_wire::{Decode, Encode};
use zeroize::Zeroizing;

create_exception!(
    tacit.pir,
    NotEnrolled,
    crate::TacitError,
    "The server's signed table log removed this subscriber's key from its row."
);
create_exception!(
    tacit.pir,
    Refused,
    crate::TacitError,
    "The TracEdge server refused the session (`code`: \"TableChanged\", \"Busy\" or \"Other\")."
);
create_exception!(
    tacit.pir,
    ServerCaught,
    crate::TacitError,
    "The TracEdge server was caught misbehaving: `proof` holds the proof (bytes) anyone can check with `tacit pir verify-proof`, `finding` says what it proves."
);

/// The largest table file read (the PIR layer's own row limit decides the rest).
const MAX_TABLE_FILE: u64 = 1 << 40;

fn seed_of(seed: Option<&[u8]>) -> PyResult<[u8; 16]> {
    match seed {
        None => {
            let mut s = [0u8; 16];
            SecureRng::from_os().fill_bytes(&mut s);
            Ok(s)
        }
        Some(b) => b
            .try_into()
            .map_err(|_| PyValueError::new_err(format!("seed must be 16 bytes, not {}", b.len()))),
    }
}

/// A message that does not decode, in the words of `tacit_pir::Error::Wire`.
fn malformed(e: tacit_wire::Error) -> String {
    tacit_pir::Error::Wire(e).to_string()
}

fn hex8(id: &[u8; 32]) -> String {
    hex::encode(&id[..8])
}

/// The `lwe` PIR server over a table of equal-length rows: computes the hint once
/// (`H = D·A`, on all cores, GIL released) and answers queries, one or a batch in one
/// pass over the table.
#[pyclass(module = "tacit.pir", name = "Server")]
pub struct PyServer {
    inner: LweServer,
}

impl PyServer {
    fn setup(py: Python<'_>, table: Table, seed: Option<&[u8]>) -> PyResult<Self> {
        let seed = seed_of(seed)?;
        let inner = py
            .detach(|| LweParams::new(table.shape(), seed).and_then(|p| LweServer::setup(&table, p)))
            .map_err(err)?;
        Ok(PyServer { inner })
    }
}

#[pymethods]
impl PyServer {
    /// A server over `rows` (a sequence of `bytes`, all of one length). `seed` (16
    /// bytes) fixes the public matrix `A`; by default it is random.
    #[new]
    #[pyo3(signature = (rows, *, seed=None))]
    fn py_new(py: Python<'_>, rows: Vec<Bound<'_, PyAny>>, seed: Option<Vec<u8>>) -> PyResult<Self> {
        if rows.is_empty() {
            return Err(err("the table is empty"));
        }
        let mut data = Vec::new();
        let mut width = None;
        for (i, r) in rows.iter().enumerate() {
            let b = r.cast::<PyBytes>().map_err(|_| {
                PyTypeError::new_err(format!(
                    "PIR rows must be bytes, not {}",
                    r.get_type().name().map(|n| n.to_string()).unwrap_or_default()
                ))
            })?;
            let b = b.as_bytes();
            match width {
                None => width = Some(b.len()),
                Some(w) if w != b.len() => {
                    return Err(err(format!(
                        "row {i} has {} bytes; row 0 has {w} (every row of a table has the same length)",
                        b.len()
                    )));
                }
                _ => {}
            }
            data.extend_from_slice(b);
        }
        let w = width.unwrap_or(0);
        if w == 0 {
            return Err(err("rows must have at least 1 byte"));
        }
        let w = u32::try_from(w).map_err(|_| err(format!("a row of {w} bytes is over the limit")))?;
        let table = Table::from_bytes(data, w).map_err(err)?;
        Self::setup(py, table, seed.as_deref())
    }

    /// A server over `data`: rows of `row_bytes` bytes, row `i` at offset
    /// `i·row_bytes`.
    #[staticmethod]
    #[pyo3(signature = (data, row_bytes, *, seed=None))]
    fn from_bytes(py: Python<'_>, data: Vec<u8>, row_bytes: u32, seed: Option<Vec<u8>>) -> PyResult<Self> {
        if row_bytes == 0 {
            return Err(err("row_bytes must be at least 1"));
        }
        if data.is_empty() {
            return Err(err("the table is empty"));
        }
        let table = Table::from_bytes(data, row_bytes).map_err(err)?;
        Self::setup(py, table, seed.as_deref())
    }

    /// A server over a table file in the format of `tacit pir table gen` (raw bytes,
    /// row `i` at offset `i·row_bytes`), read as `tacit pir query --table` reads it.
    #[staticmethod]
    #[pyo3(signature = (path, row_bytes, *, seed=None))]
    fn from_file(py: Python<'_>, path: PathBuf, row_bytes: u32, seed: Option<Vec<u8>>) -> PyResult<Self> {
        if row_bytes == 0 {
            return Err(err("row_bytes must be at least 1"));
        }
        let limit = (tacit_pir::MAX_ROWS * u64::from(row_bytes)).min(MAX_TABLE_FILE);
        let data = py
            .detach(|| tacit_wire::file::read_bounded(&path, "the table", limit))
            .map_err(err)?;
        if data.is_empty() {
            return Err(err(format!("the table {} is empty", path.display())));
        }
        if !data.len().is_multiple_of(row_bytes as usize) {
            return Err(err(format!(
                "the table {} has {} bytes, not a whole number of {row_bytes}-byte rows",
                path.display(),
                data.len()
            )));
        }
        let table = Table::from_bytes(data, row_bytes).map_err(err)?;
        Self::setup(py, table, seed.as_deref())
    }

    /// The hint every client downloads once per table (bytes; it carries the
    /// parameters). Public.
    fn hint<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        let h = py.detach(|| self.inner.hint().to_wire());
        PyBytes::new(py, &h)
    }

    /// Answers one query (bytes in, bytes out; GIL released).
    fn answer<'py>(&self, py: Python<'py>, query: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
        let out = py
            .detach(|| -> Result<Vec<u8>, String> {
                let q = LweQuery::from_wire(query).map_err(malformed)?;
                Ok(self.inner.answer(&q).map_err(|e| e.to_string())?.to_wire())
            })
            .map_err(err)?;
        Ok(PyBytes::new(py, &out))
    }

    /// Answers many queries in one pass over the table (the server's batch; GIL
    /// released). Returns the answers in order.
    fn answer_many<'py>(&self, py: Python<'py>, queries: Vec<Vec<u8>>) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        let out = py
            .detach(|| -> Result<Vec<Vec<u8>>, String> {
                let qs = queries
                    .iter()
                    .enumerate()
                    .map(|(i, q)| LweQuery::from_wire(q).map_err(|e| format!("query {i}: {}", malformed(e))))
                    .collect::<Result<Vec<_>, _>>()?;
                let ans = self.inner.answer_batch(&qs).map_err(|e| e.to_string())?;
                Ok(ans.iter().map(Encode::to_wire).collect())
            })
            .map_err(err)?;
        Ok(out.iter().map(|a| PyBytes::new(py, a)).collect())
    }

    /// Replaces row `index` and returns the hint update (bytes) clients apply with
    /// `Client.apply_update`; the table id changes, so queries made before are
    /// refused.
    fn update_row<'py>(&mut self, py: Python<'py>, index: u64, row: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
        let up = self.inner.update_row(index, row).map_err(err)?;
        Ok(PyBytes::new(py, &up.to_wire()))
    }

    /// Rows in the table.
    #[getter]
    fn rows(&self) -> u64 {
        self.inner.params().shape().rows
    }

    /// Bytes per row.
    #[getter]
    fn row_bytes(&self) -> u32 {
        self.inner.params().shape().row_bytes
    }

    /// The table id (hex; SHA-256 over the hint): changes with every update.
    #[getter]
    fn table_id(&self) -> String {
        hex::encode(self.inner.table_id())
    }

    /// Parameters and message sizes: `rows`, `row_bytes`, `log_p`, `slots`, `cols`,
    /// `matrix_rows`, `hint_bytes`, `query_bytes`, `answer_bytes`, `failure_log2`.
    fn params<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        params_dict(py, self.inner.params())
    }

    fn __repr__(&self) -> String {
        let s = self.inner.params().shape();
        format!(
            "<tacit.pir.Server lwe, {} rows of {} bytes, table {}…>",
            s.rows,
            s.row_bytes,
            hex8(&self.inner.table_id())
        )
    }
}

fn params_dict<'py>(py: Python<'py>, p: &LweParams) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let sizes = p.sizes();
    d.set_item("backend", "lwe")?;
    d.set_item("rows", p.shape().rows)?;
    d.set_item("row_bytes", p.shape().row_bytes)?;
    d.set_item("log_p", p.log_p())?;
    d.set_item("slots", p.slots())?;
    d.set_item("cols", p.cols())?;
    d.set_item("matrix_rows", p.matrix_rows())?;
    d.set_item("hint_bytes", sizes.hint_bytes)?;
    d.set_item("query_bytes", sizes.query_bytes)?;
    d.set_item("answer_bytes", sizes.answer_bytes)?;
    d.set_item("failure_log2", p.failure_log2())?;
    Ok(d)
}

/// What a client keeps between a query and its answer: the LWE secret (zeroized when
/// the object goes, never printed) and the slot asked for. Opaque.
#[pyclass(module = "tacit.pir", name = "QueryState", frozen)]
pub struct PyQueryState {
    inner: LweQueryState,
    /// The single row asked for (`None` for a weighted query).
    row: Option<u64>,
}

#[pymethods]
impl PyQueryState {
    /// The row asked for (`None` for a weighted query). Known only to the client.
    #[getter]
    fn row(&self) -> Option<u64> {
        self.row
    }

    fn __repr__(&self) -> String {
        "<tacit.pir.QueryState (secret)>".into()
    }
}

/// The `lwe` PIR client of one table: made from the server's hint; asks for a row
/// without the server learning which.
#[pyclass(module = "tacit.pir", name = "Client")]
pub struct PyClient {
    inner: LweClient,
    last: Mutex<Option<Py<PyQueryState>>>,
}

#[pymethods]
impl PyClient {
    /// A client for the table behind `hint` (the bytes `Server.hint()` returned; they
    /// carry the parameters, which are checked).
    #[new]
    fn py_new(py: Python<'_>, hint: &[u8]) -> PyResult<Self> {
        let inner = py
            .detach(|| -> Result<LweClient, String> {
                let h = LweHint::from_wire(hint).map_err(malformed)?;
                LweClient::new(h).map_err(|e| e.to_string())
            })
            .map_err(err)?;
        Ok(PyClient {
            inner,
            last: Mutex::new(None),
        })
    }

    /// A query for row `index`: returns `(query, state)`; send `query` (bytes) to the
    /// server and keep `state` for `decode`. A fresh LWE secret every time (GIL
    /// released).
    fn query<'py>(&self, py: Python<'py>, index: u64) -> PyResult<(Bound<'py, PyBytes>, Py<PyQueryState>)> {
        self.make(py, Selection::row(index), Some(index))
    }

    /// A weighted query (TracEdge's Multiple Row Selection): `entries` is a list of
    /// `(row, weight)`; rows must share one slot (equal modulo `params()["slots"]`).
    /// Decode it with `decode_symbols`.
    fn query_weighted<'py>(
        &self,
        py: Python<'py>,
        entries: Vec<(u64, u32)>,
    ) -> PyResult<(Bound<'py, PyBytes>, Py<PyQueryState>)> {
        let sel = Selection::weighted(&entries).map_err(err)?;
        self.make(py, sel, None)
    }

    /// The row (bytes) from the server's answer. `state` is what `query` returned; by
    /// default the state of this client's latest query.
    #[pyo3(signature = (answer, state=None))]
    fn decode<'py>(
        &self,
        py: Python<'py>,
        answer: &[u8],
        state: Option<Py<PyQueryState>>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let state = self.state(py, state)?;
        let st = state.get();
        let d = self.decode_any(py, st, answer)?;
        Ok(PyBytes::new(py, &d.to_row_bytes(self.inner.params().shape().row_bytes)))
    }

    /// The decoded symbols (each `< 2^params()["log_p"]`): for a weighted query, the
    /// weighted sum of the selected rows' symbols modulo `2^log_p`.
    #[pyo3(signature = (answer, state=None))]
    fn decode_symbols(&self, py: Python<'_>, answer: &[u8], state: Option<Py<PyQueryState>>) -> PyResult<Vec<u32>> {
        let state = self.state(py, state)?;
        Ok(self.decode_any(py, state.get(), answer)?.symbols)
    }

    /// Applies a hint update made by `Server.update_row` (refused when made for
    /// another table state; the resulting table id is checked).
    fn apply_update(&mut self, update: &[u8]) -> PyResult<()> {
        let up = LweHintUpdate::from_wire(update).map_err(|e| err(malformed(e)))?;
        self.inner.apply_update(&up).map_err(err)
    }

    /// The table id the client's hint belongs to (hex).
    #[getter]
    fn table_id(&self) -> String {
        hex::encode(self.inner.table_id())
    }

    /// Rows in the table.
    #[getter]
    fn rows(&self) -> u64 {
        self.inner.params().shape().rows
    }

    /// Bytes per row.
    #[getter]
    fn row_bytes(&self) -> u32 {
        self.inner.params().shape().row_bytes
    }

    /// Parameters and message sizes (as `Server.params()`).
    fn params<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        params_dict(py, self.inner.params())
    }

    fn __repr__(&self) -> String {
        let s = self.inner.params().shape();
        format!(
            "<tacit.pir.Client lwe, {} rows of {} bytes, table {}…>",
            s.rows,
            s.row_bytes,
            hex8(&self.inner.table_id())
        )
    }
}

impl PyClient {
    fn make<'py>(
        &self,
        py: Python<'py>,
        sel: Selection,
        row: Option<u64>,
    ) -> PyResult<(Bound<'py, PyBytes>, Py<PyQueryState>)> {
        let (state, q) = py
            .detach(|| {
                let mut rng = SecureRng::from_os();
                self.inner.query(&sel, &mut rng)
            })
            .map_err(err)?;
        let st = Py::new(py, PyQueryState { inner: state, row })?;
        if let Ok(mut l) = self.last.lock() {
            *l = Some(st.clone_ref(py));
        }
        let bytes = py.detach(|| q.to_wire());
        Ok((PyBytes::new(py, &bytes), st))
    }

    fn state(&self, py: Python<'_>, state: Option<Py<PyQueryState>>) -> PyResult<Py<PyQueryState>> {
        match state {
            Some(s) => Ok(s),
            None => self
                .last
                .lock()
                .ok()
                .and_then(|l| l.as_ref().map(|s| s.clone_ref(py)))
                .ok_or_else(|| err("no query to decode an answer for: call query() first, or pass its state")),
        }
    }

    fn decode_any(&self, py: Python<'_>, st: &PyQueryState, answer: &[u8]) -> PyResult<tacit_pir::Decoded> {
        py.detach(|| -> Result<tacit_pir::Decoded, String> {
            let a = LweAnswer::from_wire(answer).map_err(malformed)?;
            self.inner.decode(&st.inner, &a).map_err(|e| e.to_string())
        })
        .map_err(err)
    }
}

/// The result of a successful TracEdge authentication.
#[pyclass(module = "tacit.pir", name = "AuthResult", frozen)]
pub struct PyAuthResult {
    session_key: Zeroizing<[u8; 32]>,
    /// The table's epoch.
    #[pyo3(get)]
    epoch: u64,
    /// When the table's keys expire (Unix ms; 0: the table is current).
    #[pyo3(get)]
    expires_ms: u64,
    /// The rows the audit covered.
    #[pyo3(get)]
    audited_rows: Vec<u64>,
    /// Whether the hint came from the cache.
    #[pyo3(get)]
    hint_cached: bool,
    /// Log records fetched.
    #[pyo3(get)]
    log_entries_fetched: u64,
    /// Sessions run (1 + retries used).
    #[pyo3(get)]
    sessions: u32,
    times: client::Times,
}

#[pymethods]
impl PyAuthResult {
    /// Always `"authenticated"` (the other outcomes raise).
    #[getter]
    fn outcome(&self) -> &'static str {
        "authenticated"
    }

    /// The session key both sides now hold (32 bytes; secret).
    #[getter]
    fn session_key<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.session_key[..])
    }

    /// The first 8 bytes of SHA-256 of the session key, hex (what the CLI prints).
    #[getter]
    fn session_key_fingerprint(&self) -> String {
        hex::encode(&tacit_pir::tracedge::hash_bytes(&self.session_key[..])[..8])
    }

    /// Timings of the last session (ms): `connect_ms`, `log_ms`, `hint_ms`,
    /// `query_ms`, `answer_ms`, `check_and_auth_ms`, `total_ms`.
    #[getter]
    fn times<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let t = &self.times;
        let d = PyDict::new(py);
        d.set_item("connect_ms", t.connect_ms)?;
        d.set_item("log_ms", t.log_ms)?;
        d.set_item("hint_ms", t.hint_ms)?;
        d.set_item("query_ms", t.query_ms)?;
        d.set_item("answer_ms", t.answer_ms)?;
        d.set_item("check_and_auth_ms", t.check_and_auth_ms)?;
        d.set_item("total_ms", t.total_ms)?;
        Ok(d)
    }

    fn __repr__(&self) -> String {
        format!(
            "<tacit.pir.AuthResult authenticated (table {}, {} rows audited); session key {}…>",
            self.epoch,
            self.audited_rows.len(),
            self.session_key_fingerprint()
        )
    }
}

/// What enrolment gave: the row and the table's size.
#[pyclass(module = "tacit.pir", name = "EnrollResult", frozen)]
pub struct PyEnrollResult {
    /// The subscriber's row.
    #[pyo3(get)]
    row: u64,
    /// Rows of the table.
    #[pyo3(get)]
    rows: u64,
    /// Log entries fetched to start the subscriber's copy of the log.
    #[pyo3(get)]
    log_entries: u64,
}

#[pymethods]
impl PyEnrollResult {
    fn __repr__(&self) -> String {
        format!("<tacit.pir.EnrollResult row {} of {}>", self.row, self.rows)
    }
}

fn hex32(s: &str, what: &str) -> PyResult<[u8; 32]> {
    let s: String = s.chars().filter(|c| !matches!(c, ':' | ' ')).collect();
    let v = hex::decode(s.trim()).map_err(|_| err(format!("{what} is not hex")))?;
    v.try_into()
        .map_err(|_| err(format!("{what} must be 32 bytes (64 hex digits)")))
}

/// Control characters in a peer's words are shown escaped (as the CLI does).
fn sanitize(s: &str) -> String {
    s.chars()
        .flat_map(|c| {
            if c.is_control() {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect()
}

fn caught(
    py: Python<'_>,
    proof: &tacit_pir::tracedge::MisbehaviourProof,
    file: Option<&PathBuf>,
    during: &str,
) -> PyErr {
    let finding = match proof.verify() {
        Ok(f) => f.what,
        Err(e) => return err(e),
    };
    let bytes = proof.to_wire();
    let mut msg = format!("SERVER CAUGHT CHEATING{during}: {finding}");
    if let Some(p) = file {
        if let Err(e) = std::fs::write(p, &bytes) {
            return err(format!("cannot write {}: {e}", p.display()));
        }
        msg.push_str(&format!(
            " (proof written to {}; check it: tacit pir verify-proof {})",
            p.display(),
            p.display()
        ));
    }
    let e = ServerCaught::new_err(msg);
    let v = e.value(py);
    let _ = v.setattr("proof", PyBytes::new(py, &bytes));
    let _ = v.setattr("finding", finding);
    e
}

/// Registers a key with an open-enrolment TracEdge server (`tacit pir server serve
/// --open-enrollment`) and writes the identity file `out` (mode 0600; never over an
/// existing file), as `tacit pir client enroll` does. `pin` and `server_key` are the
/// hex strings `tacit pir server init` printed.
#[pyfunction]
#[pyo3(signature = (address, pin, server_key, out, *, label="", proof=None))]
fn enroll(
    py: Python<'_>,
    address: &str,
    pin: &str,
    server_key: &str,
    out: PathBuf,
    label: &str,
    proof: Option<PathBuf>,
) -> PyResult<PyEnrollResult> {
    let pin = hex32(pin, "pin")?;
    let key = hex32(server_key, "server_key")?;
    let rt = runtime()?;
    let r = block_on(py, &rt, client::enroll(address, pin, key, label, &out))?;
    match r {
        Ok(r) => Ok(PyEnrollResult {
            row: r.row,
            rows: r.rows,
            log_entries: r.log_entries,
        }),
        Err(ServiceError::Caught(p)) => Err(caught(py, &p, proof.as_ref(), " at enrolment")),
        Err(e) => Err(err(e)),
    }
}

/// Authenticates anonymously with the identity file from `enroll` (or `tacit pir
/// client enroll`), as `tacit pir client auth` does: TLS 1.3 to the pinned server, the
/// signed table log synced into `ID.view`, the hint from the cache (`ID.hints/`) or
/// downloaded, one PIR query with `audits` audited rows. Returns an `AuthResult`;
/// raises `ServerCaught` (with the proof) when the server misbehaved, `NotEnrolled`
/// when its signed log removed this key, `Refused` when it refused, `TacitError` for
/// everything else. The GIL is released; Ctrl-C interrupts.
#[pyfunction]
#[pyo3(signature = (identity_file, *, audits=4, accept_paper_commitment=false, hint_cache=None, no_hint_cache=false, retries=1, timeout=120.0, proof=None))]
#[allow(clippy::too_many_arguments)]
fn authenticate(
    py: Python<'_>,
    identity_file: PathBuf,
    audits: usize,
    accept_paper_commitment: bool,
    hint_cache: Option<PathBuf>,
    no_hint_cache: bool,
    retries: u32,
    timeout: f64,
    proof: Option<PathBuf>,
) -> PyResult<PyAuthResult> {
    let deadline = crate::timeout_secs(timeout)?;
    if hint_cache.is_some() && no_hint_cache {
        return Err(PyValueError::new_err(
            "hint_cache and no_hint_cache=True exclude each other",
        ));
    }
    let opts = client::AuthOptions {
        audits,
        accept_paper_commitment,
        hint_cache,
        default_hint_cache: !no_hint_cache,
        retries,
        deadline,
    };
    let rt = runtime()?;
    let r = block_on(py, &rt, client::authenticate(&identity_file, &opts))?.map_err(err)?;
    match r.outcome {
        client::AuthOutcome::Authenticated {
            session_key,
            epoch,
            expires_ms,
        } => Ok(PyAuthResult {
            session_key,
            epoch,
            expires_ms,
            audited_rows: r.audited_rows,
            hint_cached: r.hint_cached,
            log_entries_fetched: r.log_entries_fetched,
            sessions: r.sessions,
            times: r.times,
        }),
        client::AuthOutcome::NotEnrolled { row, since } => {
            let e = NotEnrolled::new_err(format!(
                "not enrolled: the server's signed table log removed this subscriber's key from row {row} (entry {since})"
            ));
            let v = e.value(py);
            let _ = v.setattr("row", row);
            let _ = v.setattr("log_entry", since);
            Err(e)
        }
        client::AuthOutcome::Refused { code, reason } => {
            let e = Refused::new_err(format!("refused: {}", sanitize(&reason)));
            let v = e.value(py);
            let _ = v.setattr("code", format!("{code:?}"));
            let _ = v.setattr("reason", sanitize(&reason));
            Err(e)
        }
        client::AuthOutcome::Caught(p) => Err(caught(py, &p, proof.as_ref(), "")),
    }
}

/// Checks a TracEdge proof of misbehaviour (bytes, as `ServerCaught.proof` or a proof
/// file holds) offline, as `tacit pir verify-proof` does; returns the finding in
/// words and raises `TacitError` when it does not verify. With `server_key` (hex),
/// the proof must be about that server.
#[pyfunction]
#[pyo3(signature = (proof, *, server_key=None))]
fn verify_proof(proof: &[u8], server_key: Option<&str>) -> PyResult<String> {
    let p = tacit_pir::tracedge::MisbehaviourProof::from_wire(proof)
        .map_err(|e| err(format!("not a TracEdge proof: {e}")))?;
    let f = p.verify().map_err(|e| err(format!("the proof does not verify: {e}")))?;
    if let Some(k) = server_key {
        let k = hex32(k, "server_key")?;
        if hex::encode(k) != f.server_key {
            return Err(err(format!(
                "the proof is about server key {}, not {}",
                f.server_key,
                hex::encode(k)
            )));
        }
    }
    Ok(f.what)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<PyServer>()?;
    m.add_class::<PyClient>()?;
    m.add_class::<PyQueryState>()?;
    m.add_class::<PyAuthResult>()?;
    m.add_class::<PyEnrollResult>()?;
    m.add_function(wrap_pyfunction!(enroll, m)?)?;
    m.add_function(wrap_pyfunction!(authenticate, m)?)?;
    m.add_function(wrap_pyfunction!(verify_proof, m)?)?;
    m.add("NotEnrolled", py.get_type::<NotEnrolled>())?;
    m.add("Refused", py.get_type::<Refused>())?;
    m.add("ServerCaught", py.get_type::<ServerCaught>())?;
    Ok(())
}
