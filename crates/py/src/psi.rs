//! `tacit.psi`: the DH-PSI of `tacit-psi` as sans-I/O objects, in the spirit of
//! OpenMined PSI's Python API, and a client of `tacit psi serve`.
//!
//! The receiver (the party that learns the intersection) sends blinded hashes of its
//! items; the sender answers them with its OPRF key — with one batched DLEQ proof in
//! the malicious-secure protocol (the default) — and its own items' OPRF values,
//! truncated and shuffled; the receiver verifies, unblinds and compares. Both sides pad
//! to the bounds `max_receiver` (m) and `max_sender` (n), so message sizes reveal only
//! the bounds; both must use the same bounds, group and security.

use crate::err;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tacit_crypto::rng::SecureRng;
use tacit_crypto::{GroupId, P256, PrimeGroup, Ristretto255};
use tacit_psi::{
    PsiParams, Receiver, ReceiverAwaitingResponse, ReceiverPrecomputation, Reuse, Security, Sender, SenderKey,
    SenderPrecomputation,
};

/// Items given as `str` (UTF-8) or `bytes`; the objects are kept to hand back the
/// common ones as they were given.
fn items_bytes(items: &[Bound<'_, PyAny>]) -> PyResult<Vec<Vec<u8>>> {
    items
        .iter()
        .map(|it| {
            if let Ok(s) = it.cast::<PyString>() {
                Ok(s.to_cow()?.as_bytes().to_vec())
            } else if let Ok(b) = it.cast::<PyBytes>() {
                Ok(b.as_bytes().to_vec())
            } else {
                Err(pyo3::exceptions::PyTypeError::new_err(format!(
                    "PSI items must be str or bytes, not {}",
                    it.get_type().name()?
                )))
            }
        })
        .collect()
}

fn params(group: &str, semi_honest: bool, max_receiver: u32, max_sender: u32, lambda: u16) -> PyResult<PsiParams> {
    let group: GroupId = group.parse().map_err(err)?;
    let p = PsiParams {
        group,
        security: if semi_honest {
            Security::SemiHonest
        } else {
            Security::Malicious
        },
        max_receiver,
        max_sender,
        lambda,
    };
    p.validate().map_err(err)?;
    Ok(p)
}

enum SenderAny {
    R(Sender<Ristretto255>),
    P(Sender<P256>),
}

fn make_sender<G: PrimeGroup>(p: &PsiParams, items: &[Vec<u8>], reuse: Reuse) -> tacit_psi::Result<Sender<G>> {
    let mut rng = SecureRng::from_os();
    let key = SenderKey::<G>::generate(&mut rng, 1);
    let pre = SenderPrecomputation::compute(p, &key, items, reuse, &mut rng)?;
    Sender::new(p, key, pre)
}

/// The PSI sender: holds a set and answers receivers' requests; learns nothing about
/// the receiver's items (beyond the bound m).
///
/// The constructor makes the OPRF key and evaluates it on every item (on all cores,
/// GIL released). With `reuse="fresh"` (default) the sender answers one request; with
/// `reuse="epoch"` it answers any number with the same key and precomputation (a
/// receiver that asks twice then learns how many items changed in between).
#[pyclass(module = "tacit.psi", name = "Sender", frozen)]
pub struct PySender {
    inner: SenderAny,
    params: PsiParams,
}

#[pymethods]
impl PySender {
    #[new]
    #[pyo3(signature = (items, *, max_receiver=10, max_sender=10_000, group="ristretto255", semi_honest=false, reuse="fresh", lambda_=40))]
    #[allow(clippy::too_many_arguments)]
    fn py_new(
        py: Python<'_>,
        items: Vec<Bound<'_, PyAny>>,
        max_receiver: u32,
        max_sender: u32,
        group: &str,
        semi_honest: bool,
        reuse: &str,
        lambda_: u16,
    ) -> PyResult<Self> {
        let p = params(group, semi_honest, max_receiver, max_sender, lambda_)?;
        let reuse = match reuse {
            "fresh" => Reuse::FreshPerSession,
            "epoch" => Reuse::WithinEpoch,
            other => return Err(err(format!("unknown reuse {other:?}; choose \"fresh\" or \"epoch\""))),
        };
        let items = items_bytes(&items)?;
        let inner = py
            .detach(|| -> tacit_psi::Result<SenderAny> {
                Ok(match p.group {
                    GroupId::Ristretto255 => SenderAny::R(make_sender(&p, &items, reuse)?),
                    GroupId::P256 => SenderAny::P(make_sender(&p, &items, reuse)?),
                })
            })
            .map_err(err)?;
        Ok(PySender { inner, params: p })
    }

    /// Answers a receiver's request (bytes in, bytes out; GIL released).
    fn respond<'py>(&self, py: Python<'py>, request: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
        let out = py
            .detach(|| {
                let mut rng = SecureRng::from_os();
                match &self.inner {
                    SenderAny::R(s) => s.respond(request, &mut rng),
                    SenderAny::P(s) => s.respond(request, &mut rng),
                }
            })
            .map_err(err)?;
        Ok(PyBytes::new(py, &out))
    }

    fn __repr__(&self) -> String {
        format!("<tacit.psi.Sender {}>", self.params)
    }
}

enum RecvState<G: PrimeGroup> {
    Ready(ReceiverPrecomputation<G>),
    Waiting(ReceiverAwaitingResponse<G>),
    Done,
}

enum ReceiverAny {
    R(RecvState<Ristretto255>),
    P(RecvState<P256>),
}

fn start<G: PrimeGroup>(st: &mut RecvState<G>) -> PyResult<Vec<u8>> {
    let RecvState::Ready(pre) = &*st else {
        return Err(err(
            "request() was already called; a Receiver runs one session (make a new one)",
        ));
    };
    let (waiting, req) = Receiver::start(pre);
    *st = RecvState::Waiting(waiting);
    Ok(req)
}

fn finish<G: PrimeGroup>(st: &mut RecvState<G>, resp: &[u8]) -> PyResult<tacit_psi::Result<Vec<Vec<u8>>>> {
    match std::mem::replace(st, RecvState::Done) {
        RecvState::Waiting(w) => Ok(w.on_response(resp).map(|i| i.items().to_vec())),
        RecvState::Ready(pre) => {
            *st = RecvState::Ready(pre);
            Err(err("call request() first and send its bytes to the sender"))
        }
        RecvState::Done => Err(err("this Receiver's session is over; make a new one")),
    }
}

/// The PSI receiver: learns which of its items the sender holds, and nothing else
/// about the sender's set (beyond the bound n). One session per object:
/// `request()`, then `intersection(response)`.
#[pyclass(module = "tacit.psi", name = "Receiver")]
pub struct PyReceiver {
    state: Arc<Mutex<ReceiverAny>>,
    params: PsiParams,
    by_bytes: HashMap<Vec<u8>, Py<PyAny>>,
}

fn make_receiver(p: &PsiParams, items: &[Vec<u8>]) -> tacit_psi::Result<ReceiverAny> {
    let mut rng = SecureRng::from_os();
    Ok(match p.group {
        GroupId::Ristretto255 => ReceiverAny::R(RecvState::Ready(ReceiverPrecomputation::compute(p, items, &mut rng)?)),
        GroupId::P256 => ReceiverAny::P(RecvState::Ready(ReceiverPrecomputation::compute(p, items, &mut rng)?)),
    })
}

fn map_back(py: Python<'_>, by_bytes: &HashMap<Vec<u8>, Py<PyAny>>, found: Vec<Vec<u8>>) -> Vec<Py<PyAny>> {
    found
        .into_iter()
        .map(|b| match by_bytes.get(&b) {
            Some(o) => o.clone_ref(py),
            None => PyBytes::new(py, &b).into_any().unbind(),
        })
        .collect()
}

#[pymethods]
impl PyReceiver {
    #[new]
    #[pyo3(signature = (items, *, max_receiver=10, max_sender=10_000, group="ristretto255", semi_honest=false, lambda_=40))]
    fn py_new(
        py: Python<'_>,
        items: Vec<Bound<'_, PyAny>>,
        max_receiver: u32,
        max_sender: u32,
        group: &str,
        semi_honest: bool,
        lambda_: u16,
    ) -> PyResult<Self> {
        let p = params(group, semi_honest, max_receiver, max_sender, lambda_)?;
        let bytes = items_bytes(&items)?;
        let mut by_bytes = HashMap::with_capacity(items.len());
        for (b, o) in bytes.iter().zip(&items) {
            by_bytes.entry(b.clone()).or_insert_with(|| o.clone().unbind());
        }
        let st = py.detach(|| make_receiver(&p, &bytes)).map_err(err)?;
        Ok(PyReceiver {
            state: Arc::new(Mutex::new(st)),
            params: p,
            by_bytes,
        })
    }

    /// The request to send to the sender (bytes).
    fn request<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let mut st = self.state.lock().map_err(|_| err("receiver state poisoned"))?;
        let req = match &mut *st {
            ReceiverAny::R(s) => start(s)?,
            ReceiverAny::P(s) => start(s)?,
        };
        Ok(PyBytes::new(py, &req))
    }

    /// Verifies the sender's response (its proof, in the malicious-secure protocol)
    /// and returns the common items, as given to the constructor, in input order.
    /// Raises `TacitError` when the proof fails or the response is malformed.
    fn intersection(&self, py: Python<'_>, response: &[u8]) -> PyResult<Vec<Py<PyAny>>> {
        let state = self.state.clone();
        let found = py
            .detach(move || -> PyResult<tacit_psi::Result<Vec<Vec<u8>>>> {
                let mut st = state.lock().map_err(|_| err("receiver state poisoned"))?;
                match &mut *st {
                    ReceiverAny::R(s) => finish(s, response),
                    ReceiverAny::P(s) => finish(s, response),
                }
            })?
            .map_err(err)?;
        Ok(map_back(py, &self.by_bytes, found))
    }

    fn __repr__(&self) -> String {
        format!("<tacit.psi.Receiver {}>", self.params)
    }
}

/// Queries a running `tacit psi serve` with `items` and returns the common ones.
///
/// Over TLS 1.3 with the server's key pinned (`pin`: the 64 hex digits `tacit psi
/// serve --tls` prints), or over plain TCP only when `plain_tcp=True` is given (a
/// server without `--tls`; nothing is then protected on the path). The parameters
/// must be the server's (the defaults are the CLI's).
#[pyfunction]
#[pyo3(signature = (address, items, *, pin=None, plain_tcp=false, max_receiver=10, max_sender=10_000, group="ristretto255", semi_honest=false, lambda_=40, timeout=30.0))]
#[allow(clippy::too_many_arguments)]
fn query(
    py: Python<'_>,
    address: &str,
    items: Vec<Bound<'_, PyAny>>,
    pin: Option<&str>,
    plain_tcp: bool,
    max_receiver: u32,
    max_sender: u32,
    group: &str,
    semi_honest: bool,
    lambda_: u16,
    timeout: f64,
) -> PyResult<Vec<Py<PyAny>>> {
    let p = params(group, semi_honest, max_receiver, max_sender, lambda_)?;
    let tls = match (pin, plain_tcp) {
        (Some(_), true) => return Err(PyValueError::new_err("give pin= or plain_tcp=True, not both")),
        (None, false) => {
            return Err(PyValueError::new_err(
                "give pin= (the key `tacit psi serve --tls` prints) for TLS, or plain_tcp=True for a server without --tls",
            ));
        }
        (Some(pin), false) => {
            let hex: String = pin.chars().filter(|c| !matches!(c, ':' | ' ')).collect();
            let bytes = hex::decode(&hex).map_err(|_| err("the pin must be 64 hex digits"))?;
            let fp: [u8; 32] = bytes.try_into().map_err(|_| err("the pin must be 64 hex digits"))?;
            Some(tacit_net::tls::checked_server_client(tacit_net::tls::pinned(fp)).map_err(err)?)
        }
        (None, true) => None,
    };
    let timeout = crate::timeout_secs(timeout)?;
    let bytes = items_bytes(&items)?;
    let mut by_bytes = HashMap::with_capacity(items.len());
    for (b, o) in bytes.iter().zip(&items) {
        by_bytes.entry(b.clone()).or_insert_with(|| o.clone().unbind());
    }
    let mut net = tacit_net::NetConfig::default().with_max_frame_at_least(p.max_message_len());
    net.connect_timeout = timeout;
    net.read_timeout = timeout;
    let address = address.to_string();
    let rt = crate::blocking::runtime()?;
    // block_on: the GIL released, and Ctrl-C still interrupts a query that waits
    let found: Result<Vec<Vec<u8>>, String> = crate::blocking::block_on(py, &rt, async move {
        let mut rng = SecureRng::from_os();
        {
            let out = match p.group {
                GroupId::Ristretto255 => {
                    let pre = ReceiverPrecomputation::<Ristretto255>::compute(&p, &bytes, &mut rng)
                        .map_err(|e| e.to_string())?;
                    tacit_psi::service::query(&address, &pre, tls.map(|c| (c, TLS_NAME)), &net).await
                }
                GroupId::P256 => {
                    let pre =
                        ReceiverPrecomputation::<P256>::compute(&p, &bytes, &mut rng).map_err(|e| e.to_string())?;
                    tacit_psi::service::query(&address, &pre, tls.map(|c| (c, TLS_NAME)), &net).await
                }
            };
            out.map(|o| o.intersection.items().to_vec())
                .map_err(|e| format!("query to {address}: {e}"))
        }
    })?;
    Ok(map_back(py, &by_bytes, found.map_err(err)?))
}

/// The TLS server name `tacit psi serve --tls` answers to (its certificate is
/// self-signed and checked by its pinned key, not by name).
const TLS_NAME: &str = "tacit-psi.invalid";

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PySender>()?;
    m.add_class::<PyReceiver>()?;
    m.add_function(wrap_pyfunction!(query, m)?)?;
    Ok(())
}
