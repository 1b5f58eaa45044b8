//! `tacit.mpc`: Boolean circuits (Bristol Fashion, or built with `tacit-mpc`'s
//! builder and gadgets), evaluated in the clear or under two-party GMW between two
//! processes, with multiplication triples from OT extension (default) or from a
//! trusted token served by `tacit mpc token serve`.
//!
//! The channel is the project's (`tacit_net::channel`, opened as `tacit mpc run`
//! opens it): TLS 1.3 with each party's self-signed Ed25519 key from its store
//! (purpose `mpc-tls-identity`, the key `tacit mpc key` prints), the listening
//! party's key pinned by the connecting one (`pin=`) or recorded on first use under
//! `mpc/ADDRESS`; the listening party admits the keys given with `pin=`, or any key.
//! Plain TCP only with `plain_tcp=True`.

use crate::blocking::{block_on, runtime};
use crate::err;
use num_bigint::BigUint;
use pyo3::exceptions::{PyIndexError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyList, PySlice, PyString, PyTuple};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tacit_crypto::rng::SecureRng;
use tacit_crypto::sign::VerifyingKey;
use tacit_mpc::bits::{bits_from_be_bytes, parse_bit_string, to_bit_string};
use tacit_mpc::circuit::{Bit, Builder, Circuit, LayeredCircuit, Word, bristol};
use tacit_mpc::driver::{RunReport, SessionConfig, TripleSource};
use tacit_mpc::gmw::{PartyInputs, default_owners};
use tacit_mpc::messages::TripleKind;
use tacit_mpc::triples::TripleShares;
use tacit_mpc::triples::ot::OtSource;
use tacit_mpc::triples::token::TokenTrust;
use tacit_mpc::triples::token::card::LINK_NAME;
use tacit_mpc::triples::token::holder::{Pool, TcpTokenLink, TokenHolder, TokenPeer};
use tacit_mpc::{Party, circuit_digest};
use tacit_net::channel::{self, Acceptor, Channel, PeerKey, Trust};
use tacit_net::tls::SelfSigned;
use tacit_net::{FramedConn, FramedListener, NetConfig, Protocol};
use tacit_store::Store;

// ---------------------------------------------------------------------------------
// Circuits
// ---------------------------------------------------------------------------------

/// A Boolean circuit: numbered wires, gates in topological order, input and output
/// values of given bit widths. Immutable.
#[pyclass(module = "tacit.mpc", name = "Circuit", frozen)]
pub struct PyCircuit {
    inner: Arc<Circuit>,
}

fn parse_text(py: Python<'_>, text: &str, origin: Option<&Path>) -> PyResult<Circuit> {
    let limits = bristol::ParseLimits {
        held_bytes: text.len() as u64,
        ..Default::default()
    };
    py.detach(|| bristol::parse_with(text, &limits))
        .map_err(|e| match origin {
            Some(p) => err(format!("{}: {e}", p.display())),
            None => err(e),
        })
}

/// The largest circuit file read (as `tacit mpc run` reads at most 2 GiB).
const MAX_CIRCUIT_FILE: u64 = 1 << 31;

fn read_circuit_file(py: Python<'_>, path: &Path) -> PyResult<Circuit> {
    let text = py
        .detach(|| tacit_wire::file::read_text_bounded(path, "circuit", MAX_CIRCUIT_FILE))
        .map_err(err)?;
    parse_text(py, &text, Some(path))
}

/// One input value as bits in wire order, from an `int` (wire `k` = bit `k`), a `str`
/// of `0`/`1` (first character = first wire, as `tacit mpc run --input`), `bytes` (a
/// big-endian integer: wire 0 is the low bit of the last byte, the convention of the
/// Bristol AES and SHA-256 circuits) or a sequence of bits.
/// The widest word a builder makes (an input or a constant): 2^24 bits.
const MAX_WIDTH: usize = 1 << 24;

fn check_width(what: &str, width: usize) -> PyResult<()> {
    if width == 0 || width > MAX_WIDTH {
        return Err(err(format!("{what} is 1 to {MAX_WIDTH} bits wide, not {width}")));
    }
    Ok(())
}

fn value_bits(v: &Bound<'_, PyAny>, width: usize, what: &str) -> PyResult<Vec<bool>> {
    let bits = if let Ok(s) = v.cast::<PyString>() {
        parse_bit_string(s.to_cow()?.trim()).map_err(|e| err(format!("{what}: {e}")))?
    } else if let Ok(b) = v.cast::<PyBytes>() {
        bits_from_be_bytes(b.as_bytes())
    } else if v.cast::<PyBool>().is_err() && (v.cast::<PyList>().is_ok() || v.cast::<PyTuple>().is_ok()) {
        let mut out = Vec::new();
        for (k, x) in v.try_iter()?.enumerate() {
            let x = x?;
            let b: i64 = x
                .extract()
                .map_err(|_| PyTypeError::new_err(format!("{what}: bit {k} is not 0, 1, False or True")))?;
            match b {
                0 => out.push(false),
                1 => out.push(true),
                _ => return Err(err(format!("{what}: bit {k} is {b}; only 0 and 1 are bits"))),
            }
        }
        out
    } else if let Ok(n) = v.extract::<BigUint>() {
        if n.bits() > width as u64 {
            return Err(err(format!("{what} is {width} bits wide; {n} needs {} bits", n.bits())));
        }
        return Ok((0..width as u64).map(|k| n.bit(k)).collect());
    } else if v.extract::<num_bigint::BigInt>().is_ok() {
        return Err(err(format!("{what} is negative; values are unsigned")));
    } else {
        return Err(PyTypeError::new_err(format!(
            "{what} must be an int, a str of 0/1, bytes or a list of bits, not {}",
            v.get_type().name()?
        )));
    };
    if bits.len() != width {
        return Err(err(format!(
            "{what} is {width} bits wide; {} bits were given",
            bits.len()
        )));
    }
    Ok(bits)
}

fn bits_int<'py>(py: Python<'py>, bits: &[bool]) -> PyResult<Bound<'py, PyAny>> {
    let mut bytes = vec![0u8; bits.len().div_ceil(8).max(1)];
    for (k, &b) in bits.iter().enumerate() {
        if b {
            bytes[k / 8] |= 1 << (k % 8);
        }
    }
    BigUint::from_bytes_le(&bytes).into_pyobject(py).map(|o| o.into_any())
}

fn outputs_py<'py>(py: Python<'py>, out: &[Vec<bool>], bits: bool) -> PyResult<Bound<'py, PyList>> {
    let items: Vec<Bound<'py, PyAny>> = out
        .iter()
        .map(|o| {
            if bits {
                Ok(PyList::new(py, o)?.into_any())
            } else {
                bits_int(py, o)
            }
        })
        .collect::<PyResult<_>>()?;
    PyList::new(py, items)
}

#[pymethods]
impl PyCircuit {
    /// Parses Bristol Fashion text (as the Bristol Fashion set and `to_bristol` write
    /// it; MAND gates are split into AND gates).
    #[staticmethod]
    fn from_bristol(py: Python<'_>, text: &str) -> PyResult<Self> {
        Ok(PyCircuit {
            inner: Arc::new(parse_text(py, text, None)?),
        })
    }

    /// Reads a Bristol Fashion file (as `tacit mpc run --circuit` does).
    #[staticmethod]
    fn from_file(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        Ok(PyCircuit {
            inner: Arc::new(read_circuit_file(py, &path)?),
        })
    }

    /// The circuit in Bristol Fashion.
    fn to_bristol(&self, py: Python<'_>) -> String {
        py.detach(|| bristol::write(&self.inner))
    }

    /// Bit widths of the input values, in order.
    #[getter]
    fn input_widths(&self) -> Vec<u32> {
        self.inner.input_widths().to_vec()
    }

    /// Bit widths of the output values, in order.
    #[getter]
    fn output_widths(&self) -> Vec<u32> {
        self.inner.output_widths().to_vec()
    }

    /// `gates`, `and_gates`, `xor_gates`, `inv_gates`, `other_gates`, `and_depth`,
    /// `wires`. GMW's cost is `and_gates` triples and `and_depth` round trips.
    #[getter]
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.inner.stats();
        let d = PyDict::new(py);
        d.set_item("gates", s.gates)?;
        d.set_item("and_gates", s.and_gates)?;
        d.set_item("xor_gates", s.xor_gates)?;
        d.set_item("inv_gates", s.inv_gates)?;
        d.set_item("other_gates", s.other_gates)?;
        d.set_item("and_depth", s.and_depth)?;
        d.set_item("wires", s.wires)?;
        Ok(d)
    }

    /// SHA-256 of the circuit's canonical encoding (hex): what two parties compare
    /// before computing.
    #[getter]
    fn digest(&self) -> String {
        hex::encode(circuit_digest(&self.inner))
    }

    /// Evaluates the circuit in the clear (as `tacit mpc eval`). `inputs` holds one
    /// value per input: an `int` (wire `k` = bit `k`), a `str` of `0`/`1` (first
    /// character = first wire), `bytes` (big-endian) or a list of bits. Returns one
    /// `int` per output value, or lists of `bool` in wire order with `bits=True`.
    #[pyo3(signature = (inputs, *, bits=false))]
    fn eval<'py>(&self, py: Python<'py>, inputs: Vec<Bound<'py, PyAny>>, bits: bool) -> PyResult<Bound<'py, PyList>> {
        let widths = self.inner.input_widths();
        if inputs.len() != widths.len() {
            return Err(err(format!(
                "the circuit takes {} input values; {} were given",
                widths.len(),
                inputs.len()
            )));
        }
        let vals = inputs
            .iter()
            .enumerate()
            .map(|(i, v)| value_bits(v, widths[i] as usize, &format!("input {i}")))
            .collect::<PyResult<Vec<_>>>()?;
        let out = py.detach(|| self.inner.eval(&vals)).map_err(err)?;
        outputs_py(py, &out, bits)
    }

    fn __repr__(&self) -> String {
        let s = self.inner.stats();
        format!(
            "<tacit.mpc.Circuit inputs {:?} -> outputs {:?}: {} AND gates, AND depth {}>",
            self.inner.input_widths(),
            self.inner.output_widths(),
            s.and_gates,
            s.and_depth
        )
    }
}

/// A circuit shipped with tacit (from the Bristol Fashion set): `"aes_128"` (input 0
/// the key, input 1 the plaintext, as big-endian integers), `"sha256"` (one
/// compression: the padded block, the chaining value) or `"adder64"`.
#[pyfunction]
fn shipped(py: Python<'_>, name: &str) -> PyResult<PyCircuit> {
    let text = match name {
        "aes_128" | "aes128" => tacit_mpc::shipped::AES_128,
        "sha256" => tacit_mpc::shipped::SHA256,
        "adder64" => tacit_mpc::shipped::ADDER64,
        other => {
            return Err(err(format!(
                "no shipped circuit {other:?}; choose \"aes_128\", \"sha256\" or \"adder64\""
            )));
        }
    };
    PyCircuit::from_bristol(py, text)
}

// ---------------------------------------------------------------------------------
// The builder
// ---------------------------------------------------------------------------------

static BUILDERS: AtomicU64 = AtomicU64::new(1);

/// A word of a circuit under construction: little-endian bits (bit 0 = least
/// significant), each a wire of its builder or a constant. `len(w)`, `w[i]` (a
/// 1-bit word), `w[a:b]` (a slice) and `Word.concat` rearrange bits for free.
#[pyclass(module = "tacit.mpc", name = "Word", frozen)]
#[derive(Clone)]
pub struct PyWord {
    builder: u64,
    bits: Word,
}

#[pymethods]
impl PyWord {
    fn __len__(&self) -> usize {
        self.bits.len()
    }

    fn __getitem__(&self, idx: &Bound<'_, PyAny>) -> PyResult<PyWord> {
        if let Ok(s) = idx.cast::<PySlice>() {
            let ind = s.indices(self.bits.len() as isize)?;
            let mut bits = Vec::new();
            let mut i = ind.start;
            for _ in 0..ind.slicelength {
                bits.push(self.bits[i as usize]);
                i += ind.step;
            }
            return Ok(PyWord {
                builder: self.builder,
                bits,
            });
        }
        let i: isize = idx.extract()?;
        let n = self.bits.len() as isize;
        let j = if i < 0 { i + n } else { i };
        if j < 0 || j >= n {
            return Err(PyIndexError::new_err(format!("bit {i} of a {n}-bit word")));
        }
        Ok(PyWord {
            builder: self.builder,
            bits: vec![self.bits[j as usize]],
        })
    }

    /// The words' bits one after the other (`words[0]` lowest).
    #[staticmethod]
    #[pyo3(signature = (*words))]
    fn concat(words: Vec<PyRef<'_, PyWord>>) -> PyResult<PyWord> {
        let builder = words.first().map(|w| w.builder).unwrap_or(0);
        let mut bits = Vec::new();
        for w in &words {
            if w.builder != builder {
                return Err(err("these words belong to different builders"));
            }
            bits.extend_from_slice(&w.bits);
        }
        Ok(PyWord { builder, bits })
    }

    fn __repr__(&self) -> String {
        let consts = self.bits.iter().filter(|b| b.as_const().is_some()).count();
        format!("<tacit.mpc.Word {} bits ({} constant)>", self.bits.len(), consts)
    }
}

/// Builds a circuit from words: inputs, bitwise gates, arithmetic and comparison
/// gadgets (`tacit-mpc`'s builder: constants are folded, gates no output depends on
/// are dropped). `finish(outputs)` returns the `Circuit`.
///
/// ```python
/// b = Builder()
/// x, y = b.input(32), b.input(32)
/// c = b.finish([b.lt(x, y), b.add(x, y)])   # x < y, and x + y (33 bits)
/// ```
#[pyclass(module = "tacit.mpc", name = "Builder")]
pub struct PyBuilder {
    id: u64,
    inner: Option<Builder>,
}

impl PyBuilder {
    fn b(&mut self) -> PyResult<&mut Builder> {
        self.inner
            .as_mut()
            .ok_or_else(|| err("this builder is finished; start a new Builder"))
    }

    fn own<'a>(&self, w: &'a PyWord) -> PyResult<&'a [Bit]> {
        if w.builder != self.id && w.bits.iter().any(|b| b.as_const().is_none()) {
            return Err(err("the word belongs to another builder"));
        }
        Ok(&w.bits)
    }

    fn word(&self, bits: Word) -> PyWord {
        PyWord { builder: self.id, bits }
    }

    fn bit(&self, w: &PyWord, what: &str) -> PyResult<Bit> {
        let b = self.own(w)?;
        if b.len() != 1 {
            return Err(err(format!("{what} must be a 1-bit word, not {} bits", b.len())));
        }
        Ok(b[0])
    }

    fn same_width(a: &[Bit], b: &[Bit], op: &str) -> PyResult<()> {
        if a.len() != b.len() {
            return Err(err(format!(
                "{op} takes words of equal width, not {} and {} bits",
                a.len(),
                b.len()
            )));
        }
        Ok(())
    }

    fn bitwise(&mut self, a: &PyWord, b: &PyWord, op: &str, f: fn(&mut Builder, Bit, Bit) -> Bit) -> PyResult<PyWord> {
        let (x, y) = (self.own(a)?.to_vec(), self.own(b)?.to_vec());
        Self::same_width(&x, &y, op)?;
        let bld = self.b()?;
        let out = x.iter().zip(&y).map(|(&p, &q)| f(bld, p, q)).collect();
        Ok(self.word(out))
    }
}

#[pymethods]
impl PyBuilder {
    #[new]
    fn py_new() -> Self {
        PyBuilder {
            id: BUILDERS.fetch_add(1, Ordering::Relaxed),
            inner: Some(Builder::new()),
        }
    }

    /// Declares the next input value, `width` bits wide (inputs are numbered in
    /// declaration order).
    fn input(&mut self, width: usize) -> PyResult<PyWord> {
        check_width("an input", width)?;
        let w = self.b()?.input(width);
        Ok(self.word(w))
    }

    /// The constant `value` as a `width`-bit word (costs no gates).
    #[pyo3(name = "const")]
    fn constant(&self, value: &Bound<'_, PyAny>, width: usize) -> PyResult<PyWord> {
        // before value_bits, which makes `width` bits (2^62 of them aborted the process)
        check_width("a constant", width)?;
        let bits = value_bits(value, width, "the constant")?;
        Ok(self.word(bits.into_iter().map(Bit::Const).collect()))
    }

    /// Bitwise XOR (free in GMW).
    fn xor(&mut self, a: PyRef<'_, PyWord>, b: PyRef<'_, PyWord>) -> PyResult<PyWord> {
        self.bitwise(&a, &b, "xor", Builder::xor)
    }

    /// Bitwise AND (one AND gate per bit).
    fn and_(&mut self, a: PyRef<'_, PyWord>, b: PyRef<'_, PyWord>) -> PyResult<PyWord> {
        self.bitwise(&a, &b, "and_", Builder::and)
    }

    /// Bitwise OR (one AND gate per bit).
    fn or_(&mut self, a: PyRef<'_, PyWord>, b: PyRef<'_, PyWord>) -> PyResult<PyWord> {
        self.bitwise(&a, &b, "or_", Builder::or)
    }

    /// Bitwise NOT (free).
    fn not_(&mut self, a: PyRef<'_, PyWord>) -> PyResult<PyWord> {
        let x = self.own(&a)?.to_vec();
        let out = self.b()?.not_word(&x);
        Ok(self.word(out))
    }

    /// `a + b` (unsigned), one bit wider than the wider operand.
    fn add(&mut self, a: PyRef<'_, PyWord>, b: PyRef<'_, PyWord>) -> PyResult<PyWord> {
        let (x, y) = (self.own(&a)?.to_vec(), self.own(&b)?.to_vec());
        let out = self.b()?.add(&x, &y);
        Ok(self.word(out))
    }

    /// `a + b mod 2^n`, `n` the wider operand's width.
    fn add_mod(&mut self, a: PyRef<'_, PyWord>, b: PyRef<'_, PyWord>) -> PyResult<PyWord> {
        let (x, y) = (self.own(&a)?.to_vec(), self.own(&b)?.to_vec());
        let out = self.b()?.add_mod(&x, &y);
        Ok(self.word(out))
    }

    /// `(a − b mod 2^n, borrow)`: the difference and a 1-bit word that is 1 when
    /// `a < b`.
    fn sub(&mut self, a: PyRef<'_, PyWord>, b: PyRef<'_, PyWord>) -> PyResult<(PyWord, PyWord)> {
        let (x, y) = (self.own(&a)?.to_vec(), self.own(&b)?.to_vec());
        let (d, borrow) = self.b()?.sub(&x, &y);
        Ok((self.word(d), self.word(vec![borrow])))
    }

    /// `a · b` (unsigned), `len(a) + len(b)` bits.
    fn mul(&mut self, a: PyRef<'_, PyWord>, b: PyRef<'_, PyWord>) -> PyResult<PyWord> {
        let (x, y) = (self.own(&a)?.to_vec(), self.own(&b)?.to_vec());
        let out = self.b()?.mul(&x, &y);
        Ok(self.word(out))
    }

    /// `a < b` (unsigned; the shorter word zero-extended): a 1-bit word.
    fn lt(&mut self, a: PyRef<'_, PyWord>, b: PyRef<'_, PyWord>) -> PyResult<PyWord> {
        let (x, y) = (self.own(&a)?.to_vec(), self.own(&b)?.to_vec());
        let out = self.b()?.lt(&x, &y);
        Ok(self.word(vec![out]))
    }

    /// `a ≤ b` (unsigned): a 1-bit word.
    fn le(&mut self, a: PyRef<'_, PyWord>, b: PyRef<'_, PyWord>) -> PyResult<PyWord> {
        let (x, y) = (self.own(&a)?.to_vec(), self.own(&b)?.to_vec());
        let out = self.b()?.le(&x, &y);
        Ok(self.word(vec![out]))
    }

    /// `a > b` (unsigned): a 1-bit word.
    fn gt(&mut self, a: PyRef<'_, PyWord>, b: PyRef<'_, PyWord>) -> PyResult<PyWord> {
        let (x, y) = (self.own(&a)?.to_vec(), self.own(&b)?.to_vec());
        let out = self.b()?.lt(&y, &x);
        Ok(self.word(vec![out]))
    }

    /// `a ≥ b` (unsigned): a 1-bit word.
    fn ge(&mut self, a: PyRef<'_, PyWord>, b: PyRef<'_, PyWord>) -> PyResult<PyWord> {
        let (x, y) = (self.own(&a)?.to_vec(), self.own(&b)?.to_vec());
        let out = self.b()?.le(&y, &x);
        Ok(self.word(vec![out]))
    }

    /// `a = b`: a 1-bit word.
    fn eq(&mut self, a: PyRef<'_, PyWord>, b: PyRef<'_, PyWord>) -> PyResult<PyWord> {
        let (x, y) = (self.own(&a)?.to_vec(), self.own(&b)?.to_vec());
        let out = self.b()?.eq(&x, &y);
        Ok(self.word(vec![out]))
    }

    /// `one if s else zero`, bit by bit (`s` a 1-bit word; `zero` and `one` of equal
    /// width).
    fn mux(&mut self, s: PyRef<'_, PyWord>, zero: PyRef<'_, PyWord>, one: PyRef<'_, PyWord>) -> PyResult<PyWord> {
        let s = self.bit(&s, "the selector")?;
        let (z, o) = (self.own(&zero)?.to_vec(), self.own(&one)?.to_vec());
        Self::same_width(&z, &o, "mux")?;
        let out = self.b()?.mux_word(s, &z, &o);
        Ok(self.word(out))
    }

    /// Finishes the circuit: `outputs[i]` is output value `i`. The builder cannot be
    /// used afterwards. The circuit is numbered as Bristol Fashion numbers it, so
    /// `Circuit.from_bristol(c.to_bristol())` (what a peer process loads) has the same
    /// digest.
    fn finish(&mut self, py: Python<'_>, outputs: Vec<PyRef<'_, PyWord>>) -> PyResult<PyCircuit> {
        let outs = outputs
            .iter()
            .map(|w| self.own(w).map(<[Bit]>::to_vec))
            .collect::<PyResult<Vec<_>>>()?;
        let b = self
            .inner
            .take()
            .ok_or_else(|| err("this builder is finished; start a new Builder"))?;
        if outs.iter().any(Vec::is_empty) {
            self.inner = Some(b);
            return Err(err("an output value has no bits"));
        }
        // In Bristol Fashion's wire order (inputs, gates, outputs last): the circuit
        // `to_bristol` writes, so a peer that loads that text computes the same digest.
        let c = py
            .detach(|| b.finish(&outs).and_then(|c| bristol::parse(&bristol::write(&c))))
            .map_err(err)?;
        Ok(PyCircuit { inner: Arc::new(c) })
    }

    fn __repr__(&self) -> String {
        match &self.inner {
            Some(b) => format!("<tacit.mpc.Builder {} wires>", b.wires()),
            None => "<tacit.mpc.Builder finished>".into(),
        }
    }
}

// ---------------------------------------------------------------------------------
// The channel: the project's (`tacit_net::channel`), as `tacit mpc run` opens it
// ---------------------------------------------------------------------------------

/// The store's key for sessions between the parties (as the CLI's).
const PEER_PURPOSE: &str = "mpc-tls-identity";
/// The store's key for party a's link to its token (as the CLI's).
const HOST_PURPOSE: &str = "mpc-token-host";
/// The TLS server name of a party (certificates are pinned, not named).
const PEER_TLS_NAME: &str = "tacit-mpc.invalid";
/// The TLS name of party a's key towards its token (as the CLI's).
const HOST_TLS_NAME: &str = "tacit-host.invalid";
/// The prefix of recorded peer keys (`mpc/HOST:PORT`, as the CLI's).
const PEER_PREFIX: &str = "mpc";
/// Handshakes a listening party runs at once.
const HANDSHAKES_AT_ONCE: usize = 16;
/// How long a listening party waits for one connection's handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// An error and its causes on one line (as the CLI prints them).
fn one_line(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let m = c.to_string();
        if !s.contains(&m) {
            s.push_str(": ");
            s.push_str(&m);
        }
        cur = c.source();
    }
    s
}

/// The store path as the CLI chooses it: `store`, else `$TACIT_STORE`, else
/// `$XDG_DATA_HOME/tacit/tacit.sqlite3`, else `~/.local/share/tacit/tacit.sqlite3`.
fn store_path(store: Option<&Path>) -> Result<PathBuf, String> {
    if let Some(p) = store {
        return Ok(p.to_path_buf());
    }
    if let Some(p) = std::env::var_os("TACIT_STORE") {
        return Ok(PathBuf::from(p));
    }
    if let Some(d) = std::env::var_os("XDG_DATA_HOME") {
        return Ok(PathBuf::from(d).join("tacit").join("tacit.sqlite3"));
    }
    match std::env::var_os("HOME") {
        Some(h) => Ok(PathBuf::from(h).join(".local/share/tacit/tacit.sqlite3")),
        None => Err("no store= given and neither TACIT_STORE, XDG_DATA_HOME nor HOME is set".into()),
    }
}

fn open_store(store: Option<&Path>) -> PyResult<Store> {
    let path = store_path(store).map_err(err)?;
    if let Some(d) = path.parent().filter(|d| !d.as_os_str().is_empty() && !d.exists()) {
        std::fs::create_dir_all(d).map_err(|e| err(format!("cannot create {}: {e}", d.display())))?;
    }
    Store::open(&path).map_err(|e| err(format!("cannot open store {}: {e}", path.display())))
}

/// The store's key for `purpose` (made on first use, in the CLI's encoding, so
/// `tacit mpc key` prints the key a Python party uses).
fn identity(store: Option<&Path>, purpose: &str, name: &str) -> PyResult<SelfSigned> {
    let mut st = open_store(store)?;
    channel::tls_identity(&mut st, purpose, name).map_err(|e| err(one_line(&e)))
}

/// Parses a fingerprint (64 hex digits; `:` and spaces allowed between them).
fn parse_fingerprint(s: &str, what: &str) -> PyResult<[u8; 32]> {
    let s: String = s.chars().filter(|c| !matches!(c, ':' | ' ')).collect();
    let b = hex::decode(&s).map_err(|_| err(format!("{what} is not hex")))?;
    b.try_into()
        .map_err(|_| err(format!("{what} must be a SHA-256 fingerprint (64 hex digits)")))
}

fn pins_of(pin: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<[u8; 32]>> {
    let Some(p) = pin else { return Ok(Vec::new()) };
    if p.is_none() {
        return Ok(Vec::new());
    }
    if let Ok(s) = p.extract::<String>() {
        return Ok(vec![parse_fingerprint(&s, "pin")?]);
    }
    let v: Vec<String> = p
        .extract()
        .map_err(|_| PyTypeError::new_err("pin must be a fingerprint (str) or a list of them"))?;
    v.iter().map(|s| parse_fingerprint(s, "pin")).collect()
}

/// The channel of one party: TLS with the store's `mpc-tls-identity` key checking
/// `pins`, or plain TCP when asked for by name.
fn peer_channel(store: Option<&Path>, pins: &[[u8; 32]], plain_tcp: bool) -> PyResult<Channel> {
    if plain_tcp {
        if !pins.is_empty() {
            return Err(err("pin and plain_tcp=True exclude each other"));
        }
        return Ok(Channel::insecure_plain_tcp(
            PEER_PREFIX,
            PEER_TLS_NAME,
            Protocol::MpcRun,
        ));
    }
    Channel::tls(
        open_store(store)?,
        PEER_PURPOSE,
        pins,
        PEER_PREFIX,
        PEER_TLS_NAME,
        Protocol::MpcRun,
    )
    .map_err(|e| err(one_line(&e)))
}

/// A listening party a: its bound socket and the server side of its channel.
struct ListenState {
    listener: FramedListener,
    acceptor: Acceptor,
}

/// Party a's listening socket, bound now: `address` is where party b connects (the
/// port the system chose for `":0"`), `fingerprint` the key party b pins. One
/// listener serves any number of `run(..., party="a", listen=listener)` calls, one
/// session each.
#[pyclass(module = "tacit.mpc", name = "Listener", frozen)]
pub struct PyListener {
    rt: tokio::runtime::Runtime,
    state: Mutex<ListenState>,
    address: String,
    fingerprint: Option<String>,
}

fn make_listener(
    py: Python<'_>,
    address: &str,
    store: Option<&Path>,
    pins: Vec<[u8; 32]>,
    plain_tcp: bool,
) -> PyResult<PyListener> {
    let ch = peer_channel(store, &pins, plain_tcp)?;
    let acceptor = ch.acceptor().map_err(|e| err(one_line(&e)))?;
    let fingerprint = ch
        .fingerprint()
        .map_err(|e| err(one_line(&e)))?
        .map(|fp| channel::hex(&fp));
    let rt = runtime()?;
    let cfg = NetConfig::default();
    let listener = block_on(py, &rt, FramedListener::bind(address.to_string(), &cfg))?
        .map_err(|e| err(format!("listening on {address}: {e}")))?;
    let bound = listener.local_addr().map_err(err)?.to_string();
    Ok(PyListener {
        rt,
        state: Mutex::new(ListenState { listener, acceptor }),
        address: bound,
        fingerprint,
    })
}

#[pymethods]
impl PyListener {
    /// Binds `address` ("host:port"; port 0 lets the system choose) for party a.
    /// Over TLS (default) with the store's `mpc-tls-identity` key, admitting the keys
    /// in `pin` (a fingerprint or a list) or any key when none is given; plain TCP
    /// only with `plain_tcp=True`.
    #[new]
    #[pyo3(signature = (address, *, store=None, pin=None, plain_tcp=false))]
    fn py_new(
        py: Python<'_>,
        address: &str,
        store: Option<PathBuf>,
        pin: Option<Bound<'_, PyAny>>,
        plain_tcp: bool,
    ) -> PyResult<Self> {
        let pins = pins_of(pin.as_ref())?;
        make_listener(py, address, store.as_deref(), pins, plain_tcp)
    }

    /// The bound address ("host:port").
    #[getter]
    fn address(&self) -> &str {
        &self.address
    }

    /// This party's key fingerprint (hex) for party b's `pin=`; `None` on plain TCP.
    #[getter]
    fn fingerprint(&self) -> Option<&str> {
        self.fingerprint.as_deref()
    }

    fn __repr__(&self) -> String {
        match &self.fingerprint {
            Some(fp) => format!("<tacit.mpc.Listener {} TLS, key {fp}>", self.address),
            None => format!("<tacit.mpc.Listener {} plain TCP>", self.address),
        }
    }
}

/// Accepts connections until one completes its handshake with an admitted key (the
/// handshakes of connections that arrive run side by side, each within
/// [`HANDSHAKE_TIMEOUT`]): a port scan or a key that is not pinned does not end the
/// wait, as with `tacit mpc run --party a`. Why the latest refused connection was
/// refused goes to `refused` (a run that times out says it).
async fn accept_peer(st: &ListenState, refused: &Mutex<Option<String>>) -> Result<(FramedConn, PeerKey), String> {
    let mut pending = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            conn = st.listener.accept() => {
                let Ok(conn) = conn else {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                };
                if pending.len() >= HANDSHAKES_AT_ONCE {
                    continue;
                }
                let acceptor = st.acceptor.clone();
                pending.spawn(async move {
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(conn)).await {
                        Ok(r) => r.map_err(|e| one_line(&e)),
                        Err(_) => Err(format!("no handshake within {} s", HANDSHAKE_TIMEOUT.as_secs())),
                    }
                });
            }
            Some(done) = pending.join_next(), if !pending.is_empty() => {
                match done {
                    Ok(Ok(c)) => return Ok(c),
                    Ok(Err(e)) => {
                        if let Ok(mut r) = refused.lock() {
                            *r = Some(e);
                        }
                    }
                    Err(_) => {}
                }
            }
        }
    }
}

/// Party a's link to its token at `addr`: TLS with the store's `mpc-token-host` key
/// (the one the token is paired with), the token's link key pinned or recorded on
/// first use under `mpc-token/ADDRESS`, as `tacit mpc run --triples token` does.
async fn connect_token(
    addr: &str,
    token_pin: Option<[u8; 32]>,
    store: Store,
    identity: &SelfSigned,
    pool: Option<&Path>,
) -> Result<TokenHolder<TcpTokenLink>, String> {
    let mut trust = match token_pin {
        Some(p) => Trust::Pinned(p),
        None => Trust::FirstUse {
            store,
            name: format!("mpc-token/{addr}"),
        },
    };
    let client = channel::client_config(&trust, Some(identity))
        .map_err(|e| one_line(&e))?
        .ok_or_else(|| "the token link runs over TLS".to_string())?;
    let net = NetConfig::default().speaking(Protocol::MpcToken);
    let conn = FramedConn::connect_tls(addr.to_string(), &net, client, LINK_NAME)
        .await
        .map_err(|e| {
            format!(
                "connecting to the token at {addr}: {e} (is this store's key the one the token was paired with? `tacit mpc token host-key`)"
            )
        })?;
    trust.record(conn.peer_certificate()).map_err(|e| one_line(&e))?;
    let pool = match pool {
        Some(p) => Pool::open(p).map_err(|e| e.to_string())?,
        None => Pool::in_memory(),
    };
    let mut h = TokenHolder::new(TcpTokenLink::new(conn), pool)
        .await
        .map_err(|e| e.to_string())?;
    h.close_after_setup = true;
    Ok(h)
}

/// A triple source of any kind.
enum Source {
    Ot(OtSource<SecureRng>),
    Holder(Box<TokenHolder<TcpTokenLink>>),
    Peer(TokenPeer<SecureRng>),
}

impl TripleSource for Source {
    fn kind(&self) -> TripleKind {
        match self {
            Source::Ot(s) => s.kind(),
            Source::Holder(s) => s.kind(),
            Source::Peer(s) => s.kind(),
        }
    }

    async fn triples(
        &mut self,
        conn: &mut FramedConn,
        party: Party,
        count: usize,
    ) -> Result<TripleShares, tacit_mpc::Error> {
        match self {
            Source::Ot(s) => s.triples(conn, party, count).await,
            Source::Holder(s) => s.triples(conn, party, count).await,
            Source::Peer(s) => s.triples(conn, party, count).await,
        }
    }
}

/// The result of a GMW run, as this party saw it.
#[pyclass(module = "tacit.mpc", name = "RunResult", frozen)]
pub struct PyRunResult {
    outputs: Vec<Vec<bool>>,
    /// `"a"` or `"b"`.
    #[pyo3(get)]
    party: &'static str,
    /// `"ot"` or `"token"`.
    #[pyo3(get)]
    triples_source: &'static str,
    /// `"tls"` or `"plain"`.
    #[pyo3(get)]
    channel: &'static str,
    /// The peer's key fingerprint (hex; `None` on plain TCP).
    #[pyo3(get)]
    peer_key: Option<String>,
    /// How the peer's key was accepted: `pinned`, `recorded on first use`, `as
    /// recorded before`, `any key admitted`, `plain`.
    #[pyo3(get)]
    peer_key_how: &'static str,
    report: RunReport,
    and_gates: usize,
    and_depth: usize,
}

#[pymethods]
impl PyRunResult {
    /// The output values as ints (wire `k` = bit `k`).
    #[getter]
    fn outputs<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        outputs_py(py, &self.outputs, false)
    }

    /// The output values as lists of bools in wire order.
    #[getter]
    fn output_bits<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        outputs_py(py, &self.outputs, true)
    }

    /// The output values as 0/1 strings (first character = first wire), as `tacit
    /// mpc run` prints them.
    #[getter]
    fn output_strings(&self) -> Vec<String> {
        self.outputs.iter().map(|o| to_bit_string(o)).collect()
    }

    /// Sizes, rounds, bytes and times (the keys of `tacit mpc run --json`):
    /// `and_gates`, `and_depth`, `triples`, `setup_ms`, `hello_wait_ms`,
    /// `setup_bytes_sent`, `setup_bytes_received`, `online_ms`, `online_compute_ms`,
    /// `online_rounds`, `online_bytes_sent`, `online_bytes_received`.
    #[getter]
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let r = &self.report;
        let d = PyDict::new(py);
        d.set_item("and_gates", self.and_gates)?;
        d.set_item("and_depth", self.and_depth)?;
        d.set_item("triples", r.triples)?;
        d.set_item("setup_ms", r.setup.time.as_secs_f64() * 1e3)?;
        d.set_item("hello_wait_ms", r.hello_wait.as_secs_f64() * 1e3)?;
        d.set_item("setup_bytes_sent", r.setup.bytes_sent)?;
        d.set_item("setup_bytes_received", r.setup.bytes_received)?;
        d.set_item("online_ms", r.online.time.as_secs_f64() * 1e3)?;
        d.set_item("online_compute_ms", r.online_compute.as_secs_f64() * 1e3)?;
        d.set_item("online_rounds", r.online.rounds)?;
        d.set_item("online_bytes_sent", r.online.bytes_sent)?;
        d.set_item("online_bytes_received", r.online.bytes_received)?;
        Ok(d)
    }

    fn __repr__(&self) -> String {
        format!(
            "<tacit.mpc.RunResult party {} ({} triples, {}): outputs {:?}>",
            self.party,
            self.triples_source,
            self.channel,
            self.output_strings()
        )
    }
}

fn parse_owners(c: &Circuit, owners: Option<&str>) -> PyResult<Vec<Party>> {
    let k = c.input_widths().len();
    match owners {
        None => Ok(default_owners(k)),
        Some(s) => {
            if s.chars().count() != k {
                return Err(err(format!(
                    "owners names {} inputs; the circuit has {k}",
                    s.chars().count()
                )));
            }
            s.chars()
                .map(|ch| match ch {
                    'a' | 'A' => Ok(Party::A),
                    'b' | 'B' => Ok(Party::B),
                    _ => Err(err(format!("owners takes only a and b, not {ch:?}"))),
                })
                .collect()
        }
    }
}

fn circuit_of(py: Python<'_>, circuit: &Bound<'_, PyAny>) -> PyResult<Arc<Circuit>> {
    if let Ok(c) = circuit.cast::<PyCircuit>() {
        return Ok(c.get().inner.clone());
    }
    Ok(load(py, circuit)?.inner)
}

/// What one party's session needs besides its connection.
struct Ctx<'a> {
    lc: &'a LayeredCircuit,
    party: Party,
    session: SessionConfig,
    inputs: PartyInputs,
    kind: &'static str,
    token: Option<String>,
    token_pin: Option<[u8; 32]>,
    pool: Option<PathBuf>,
    host_identity: Option<SelfSigned>,
}

/// The triple source, then the GMW session (`tacit_mpc::driver::run`) over `conn`.
async fn session(
    ctx: &Ctx<'_>,
    mut conn: FramedConn,
    mut st: Option<Store>,
    trust: Option<TokenTrust>,
) -> Result<RunReport, String> {
    let mut src = match (ctx.kind, ctx.party) {
        ("ot", _) => Source::Ot(OtSource::new(SecureRng::from_os())),
        (_, Party::A) => {
            let (Some(addr), Some(s), Some(id)) = (ctx.token.as_deref(), st.take(), ctx.host_identity.as_ref()) else {
                return Err("the token link needs token= and the store's host key".into());
            };
            let mut h = connect_token(addr, ctx.token_pin, s, id, ctx.pool.as_deref()).await?;
            h.fill(ctx.lc.and_gates(), &mut |_, _| {})
                .await
                .map_err(|e| e.to_string())?;
            Source::Holder(Box::new(h))
        }
        (_, Party::B) => match trust {
            Some(t) => Source::Peer(TokenPeer::new(t, SecureRng::from_os())),
            None => return Err("the connecting party with triples=\"token\" needs trust_ca=".into()),
        },
    };
    let mut rng = SecureRng::from_os();
    let report = tacit_mpc::driver::run(
        &mut conn,
        ctx.lc,
        ctx.party,
        &ctx.session,
        &ctx.inputs,
        &mut src,
        &mut rng,
    )
    .await
    .map_err(|e| e.to_string())?;
    let _ = conn.shutdown().await;
    Ok(report)
}

async fn with_deadline<T>(
    deadline: Option<Duration>,
    fut: impl std::future::Future<Output = Result<T, String>>,
) -> Result<T, String> {
    match deadline {
        Some(d) => tokio::time::timeout(d, fut)
            .await
            .unwrap_or_else(|_| Err(format!("no result within {} s (timeout=)", d.as_secs_f64()))),
        None => fut.await,
    }
}

/// Loads a circuit: a path (`str` or `os.PathLike`) of a Bristol Fashion file, or
/// Bristol Fashion text (a `str` with a line break).
#[pyfunction]
fn load(py: Python<'_>, source: &Bound<'_, PyAny>) -> PyResult<PyCircuit> {
    if let Ok(s) = source.cast::<PyString>() {
        let s = s.to_cow()?;
        if s.contains('\n') {
            return PyCircuit::from_bristol(py, &s);
        }
        return PyCircuit::from_file(py, PathBuf::from(s.as_ref()));
    }
    let p: PathBuf = source
        .extract()
        .map_err(|_| PyTypeError::new_err("a circuit is a tacit.mpc.Circuit, a path, or Bristol Fashion text"))?;
    PyCircuit::from_file(py, p)
}

/// Runs `circuit` under two-party GMW with a peer process, as `tacit mpc run` does,
/// and returns a `RunResult` (both parties learn the outputs).
///
/// * `circuit`: a `Circuit`, a Bristol Fashion file's path, or Bristol text; both
///   parties must run the same circuit (its digest is compared first).
/// * `party`: `"a"` (listens; supplies input 0 by default; talks to the token) or
///   `"b"` (connects; supplies the other inputs by default). `owners="abb"` assigns
///   input values to parties otherwise (both must give the same).
/// * `inputs`: this party's input values in input order — a list, or one value
///   alone; each an `int` (wire `k` = bit `k`), a `str` of 0/1 (first character =
///   first wire), `bytes` (big-endian) or a list of bits.
/// * `listen=` (party a): an address ("host:port") or a `Listener`; `connect=`
///   (party b): party a's address.
/// * The channel: TLS 1.3 with this party's key from its tacit store (`store=`; by
///   default `$TACIT_STORE` or the user's data directory, as the CLI). Party b pins
///   party a's key with `pin=` (`Listener.fingerprint`, or `tacit mpc key` on a's
///   side) or, without it, records the key on first use under `mpc/ADDRESS` and
///   refuses a different one later. Party a admits the keys given with `pin=` (one or
///   a list), or any key. `plain_tcp=True` (both sides) runs without encryption or
///   authentication, for latency measurements only.
/// * Triples: `triples="ot"` (OT extension between the parties; the default) or
///   `"token"` — implied by `token=`/`trust_ca=`. Party a gives `token=` (the address
///   of `tacit mpc token serve`), `token_pin=` (its link key; without it recorded on
///   first use) and optionally `pool=` (a folder of stored sequences); its store's
///   `mpc-token-host` key (`token_host_key()`) must be the one the token was paired
///   with. Party b gives `trust_ca=` (the manufacturer CA key, hex) and
///   `accept_software_token=True` to accept a software token.
/// * `timeout=`: seconds for the whole run (connection included); `None` waits. The
///   GIL is released while the run lasts and Ctrl-C interrupts it.
///
/// GMW protects each party's inputs from a peer that follows the protocol
/// (semi-honest); a deviating peer can change the outputs (`docs/mpc.md`).
#[pyfunction]
#[pyo3(signature = (circuit, party, inputs, *, listen=None, connect=None, pin=None, store=None, plain_tcp=false, owners=None, triples=None, token=None, token_pin=None, pool=None, trust_ca=None, accept_software_token=false, timeout=None))]
#[allow(clippy::too_many_arguments)]
fn run(
    py: Python<'_>,
    circuit: &Bound<'_, PyAny>,
    party: &str,
    inputs: &Bound<'_, PyAny>,
    listen: Option<&Bound<'_, PyAny>>,
    connect: Option<String>,
    pin: Option<Bound<'_, PyAny>>,
    store: Option<PathBuf>,
    plain_tcp: bool,
    owners: Option<String>,
    triples: Option<String>,
    token: Option<String>,
    token_pin: Option<String>,
    pool: Option<PathBuf>,
    trust_ca: Option<String>,
    accept_software_token: bool,
    timeout: Option<f64>,
) -> PyResult<PyRunResult> {
    let c = circuit_of(py, circuit)?;
    let party = match party {
        "a" | "A" => Party::A,
        "b" | "B" => Party::B,
        other => return Err(err(format!("party is \"a\" or \"b\", not {other:?}"))),
    };
    let owners = parse_owners(&c, owners.as_deref())?;
    let mine: Vec<usize> = (0..owners.len()).filter(|&i| owners[i] == party).collect();
    // This party's values, in input order: a list of values, or one value alone.
    let given: Vec<Bound<'_, PyAny>> = if inputs.is_none() {
        Vec::new()
    } else if inputs.cast::<PyList>().is_ok() || inputs.cast::<PyTuple>().is_ok() {
        inputs.try_iter()?.collect::<PyResult<_>>()?
    } else {
        vec![inputs.clone()]
    };
    if given.len() != mine.len() {
        return Err(err(format!(
            "{} input value(s) given; this party supplies {} (inputs {:?})",
            given.len(),
            mine.len(),
            mine
        )));
    }
    let widths = c.input_widths();
    let mut mine_vals = Vec::new();
    for (v, &i) in given.iter().zip(&mine) {
        mine_vals.push(value_bits(v, widths[i] as usize, &format!("input {i}"))?);
    }
    let mut it = mine_vals.into_iter();
    let party_inputs = PartyInputs {
        values: owners
            .iter()
            .map(|&o| if o == party { it.next().map(|v| vec![v]) } else { None })
            .collect(),
    };
    // The triple source.
    let kind = match triples.as_deref() {
        Some("ot") => "ot",
        Some("token") => "token",
        None if token.is_some() || trust_ca.is_some() => "token",
        None => "ot",
        Some(other) => return Err(err(format!("triples is \"ot\" or \"token\", not {other:?}"))),
    };
    if kind == "ot" && (token.is_some() || token_pin.is_some() || pool.is_some() || trust_ca.is_some()) {
        return Err(err("token=, token_pin=, pool= and trust_ca= are for triples=\"token\""));
    }
    let token_pin = token_pin
        .as_deref()
        .map(|p| parse_fingerprint(p, "token_pin"))
        .transpose()?;
    let trust = if kind == "token" && party == Party::B {
        let hexkey = trust_ca.as_deref().ok_or_else(|| {
            err("the connecting party with triples=\"token\" needs trust_ca= (the manufacturer CA key, hex)")
        })?;
        let ca = VerifyingKey::from_bytes(&hex::decode(hexkey.trim()).map_err(|_| err("trust_ca is not hex"))?)
            .map_err(|e| err(format!("trust_ca: {e}")))?;
        let t = TokenTrust::new(ca, now_unix());
        Some(if accept_software_token {
            t.accepting_software()
        } else {
            t
        })
    } else {
        None
    };
    if kind == "token" && party == Party::A && token.is_none() {
        return Err(err(
            "the listening party with triples=\"token\" needs token= (the token's address)",
        ));
    }
    if kind == "token" && party == Party::B && (token.is_some() || pool.is_some()) {
        return Err(err(
            "token= and pool= are party a's (it talks to the token); party b gives trust_ca=",
        ));
    }
    let deadline = timeout.map(crate::timeout_secs).transpose()?;
    let pins = pins_of(pin.as_ref())?;
    if plain_tcp && !pins.is_empty() {
        return Err(err("pin and plain_tcp=True exclude each other"));
    }

    // The connection's side.
    enum Side {
        Listen(Py<PyListener>),
        Connect(String),
    }
    let side = match (party, listen, connect) {
        (Party::A, Some(l), None) => {
            if let Ok(l) = l.cast::<PyListener>() {
                if !pins.is_empty() || plain_tcp {
                    return Err(err("pin= and plain_tcp= of a Listener are given when it is made"));
                }
                Side::Listen(l.clone().unbind())
            } else {
                let addr: String = l.extract().map_err(|_| {
                    PyTypeError::new_err("listen is an address (\"host:port\") or a tacit.mpc.Listener")
                })?;
                let li = make_listener(py, &addr, store.as_deref(), pins.clone(), plain_tcp)?;
                Side::Listen(Py::new(py, li)?)
            }
        }
        (Party::A, None, _) => return Err(err("party a needs listen= (an address or a Listener)")),
        (Party::A, Some(_), Some(_)) => return Err(err("party a listens; connect= is party b's")),
        (Party::B, None, Some(addr)) => Side::Connect(addr),
        (Party::B, _, None) => return Err(err("party b needs connect= (party a's address)")),
        (Party::B, Some(_), Some(_)) => return Err(err("party b connects; listen= is party a's")),
    };
    if party == Party::B && pins.len() > 1 {
        return Err(err(format!(
            "pin names the one party to connect to; it was given {} times",
            pins.len()
        )));
    }

    // Stores and keys (before the GIL is released: all of it is quick and local).
    // Party b's channel (TLS with its store's key, or plain TCP when asked); party a's
    // store when it talks to a token (its link key, first-use records).
    let mut peer_ch = match party {
        Party::B => Some(peer_channel(store.as_deref(), &pins, plain_tcp)?),
        Party::A => None,
    };
    let (st, host_identity) = if kind == "token" && party == Party::A {
        let mut st = open_store(store.as_deref())?;
        let id = channel::tls_identity(&mut st, HOST_PURPOSE, HOST_TLS_NAME).map_err(|e| err(one_line(&e)))?;
        (Some(st), Some(id))
    } else {
        (None, None)
    };

    let lc = py.detach(|| LayeredCircuit::new((*c).clone()));
    let and_gates = lc.and_gates();
    let and_depth = lc.and_depth();
    let ctx = Ctx {
        lc: &lc,
        party,
        session: SessionConfig::new(1, owners),
        inputs: party_inputs,
        kind,
        token,
        token_pin,
        pool,
        host_identity,
    };
    let (report, peer) = match side {
        Side::Listen(l) => {
            let l = l.get();
            // Not `lock`: a second thread waiting here with the GIL would keep the
            // first from ever taking it back (its signal checks).
            let guard = l.state.try_lock().map_err(|e| match e {
                std::sync::TryLockError::WouldBlock => {
                    err("this Listener is running another session; it runs one at a time")
                }
                std::sync::TryLockError::Poisoned(_) => err("the listener is broken (a previous run panicked)"),
            })?;
            let ls: &ListenState = &guard;
            let refused = Mutex::new(None);
            let fut = with_deadline(deadline, async {
                let (conn, peer) = accept_peer(ls, &refused).await?;
                Ok((session(&ctx, conn, st, trust).await?, peer))
            });
            block_on(py, &l.rt, fut)?.map_err(|e| match refused.lock().ok().and_then(|r| r.clone()) {
                Some(why) if e.starts_with("no result within") => err(format!("{e}; a connection was refused: {why}")),
                _ => err(e),
            })?
        }
        Side::Connect(addr) => {
            let rt = runtime()?;
            let ch = peer_ch.as_mut().ok_or_else(|| err("party b has no channel"))?;
            let fut = with_deadline(deadline, async {
                let (conn, peer) = ch
                    .connect(&addr, &NetConfig::default())
                    .await
                    .map_err(|e| one_line(&e))?;
                Ok((session(&ctx, conn, st, trust).await?, peer))
            });
            block_on(py, &rt, fut)?.map_err(err)?
        }
    };
    let outputs = report.outputs.values.first().cloned().unwrap_or_default();
    Ok(PyRunResult {
        outputs,
        party: if party == Party::A { "a" } else { "b" },
        triples_source: kind,
        channel: if peer.fingerprint.is_some() { "tls" } else { "plain" },
        peer_key: peer.fingerprint.map(hex::encode),
        peer_key_how: peer.how,
        report,
        and_gates,
        and_depth,
    })
}

/// This store's key for GMW sessions (its SHA-256 fingerprint, hex), as `tacit mpc
/// key` prints it: party b pins party a's with `pin=`. Made on first use.
#[pyfunction]
#[pyo3(signature = (store=None))]
fn key(store: Option<PathBuf>) -> PyResult<String> {
    let id = identity(store.as_deref(), PEER_PURPOSE, PEER_TLS_NAME)?;
    Ok(channel::hex(&id.fingerprint().map_err(err)?))
}

/// This store's token link key (hex), as `tacit mpc token host-key` prints it: a
/// token is paired with it (`tacit mpc token init --pair`). Made on first use.
#[pyfunction]
#[pyo3(signature = (store=None))]
fn token_host_key(store: Option<PathBuf>) -> PyResult<String> {
    let id = identity(store.as_deref(), HOST_PURPOSE, HOST_TLS_NAME)?;
    Ok(channel::hex(&id.fingerprint().map_err(err)?))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyCircuit>()?;
    m.add_class::<PyWord>()?;
    m.add_class::<PyBuilder>()?;
    m.add_class::<PyListener>()?;
    m.add_class::<PyRunResult>()?;
    m.add_function(wrap_pyfunction!(load, m)?)?;
    m.add_function(wrap_pyfunction!(shipped, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(key, m)?)?;
    m.add_function(wrap_pyfunction!(token_host_key, m)?)?;
    Ok(())
}
