//! Python bindings of tacit (PyO3): the native half of the `tacit` Python package
//! (`python/`), built by maturin as the extension module `tacit._native`.
//!
//! * [`paillier`] — python-paillier's API (`phe`) on tacit's Paillier
//!   (`tacit-pros`): CRT decryption, CRT encryption when the private key is known,
//!   batch operations on all cores with the GIL released;
//! * [`psi`] — the malicious-secure DH-PSI of `tacit-psi` as sans-I/O objects, and a
//!   client of `tacit psi serve`;
//! * [`pir`] — the `lwe` PIR client and server of `tacit-pir` as sans-I/O objects,
//!   and the TracEdge subscriber against `tacit pir server serve`;
//! * [`mpc`] — Bristol circuits, a circuit builder, clear evaluation, and GMW between
//!   two processes (`tacit-mpc`) over the CLI's TLS channel.
//!
//! Errors become Python exceptions carrying the library's one-line messages:
//! [`TacitError`] (a `ValueError`) for bad input and deviating peers, and Python's
//! own `TypeError` / `OverflowError` where python-paillier raises those.

use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

mod blocking;
mod ifma;
mod mont;
pub mod mpc;
pub mod paillier;
pub mod pir;
pub mod psi;

create_exception!(
    tacit,
    TacitError,
    PyValueError,
    "An error of tacit: bad input, a peer that deviated from the protocol, a network failure. The message is the one the `tacit` command prints."
);

/// Turns any displayable error into a [`TacitError`] with its one-line message.
pub(crate) fn err(e: impl std::fmt::Display) -> PyErr {
    TacitError::new_err(e.to_string())
}

/// The longest `timeout=` a call accepts: a year (a finite but larger number of
/// seconds overflowed `Duration` and panicked into Python).
const MAX_TIMEOUT_SECS: f64 = 365.0 * 24.0 * 3600.0;

/// A `timeout=` argument as a duration: a positive number of seconds, at most a year.
pub(crate) fn timeout_secs(timeout: f64) -> PyResult<std::time::Duration> {
    if !(timeout > 0.0 && timeout <= MAX_TIMEOUT_SECS) {
        return Err(PyValueError::new_err(
            "timeout must be a positive number of seconds, at most a year (31536000)",
        ));
    }
    Ok(std::time::Duration::from_secs_f64(timeout))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("TacitError", py.get_type::<TacitError>())?;
    let p = PyModule::new(py, "paillier")?;
    paillier::register(&p)?;
    m.add_submodule(&p)?;
    let s = PyModule::new(py, "psi")?;
    psi::register(&s)?;
    m.add_submodule(&s)?;
    let r = PyModule::new(py, "pir")?;
    pir::register(&r)?;
    m.add_submodule(&r)?;
    let g = PyModule::new(py, "mpc")?;
    mpc::register(&g)?;
    m.add_submodule(&g)?;
    Ok(())
}
