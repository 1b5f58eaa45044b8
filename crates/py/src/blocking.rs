//! Running a network future from Python: on a tokio runtime, with the GIL released,
//! while Python's signal handlers still run (Ctrl-C interrupts a party that waits for
//! its peer instead of leaving it stuck until the peer comes).

use pyo3::prelude::*;
use std::future::Future;
use std::time::Duration;

/// How often a blocked call looks at Python's pending signals.
const SIGNAL_POLL: Duration = Duration::from_millis(100);

/// A current-thread tokio runtime with I/O and timers.
pub(crate) fn runtime() -> PyResult<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| crate::err(format!("cannot start the I/O runtime: {e}")))
}

/// Runs `fut` on `rt` with the GIL released. Every [`SIGNAL_POLL`] the GIL is taken
/// back for a moment to run Python's signal handlers; a handler that raises (Ctrl-C's
/// `KeyboardInterrupt`) drops the future — closing its connections — and the
/// exception is returned.
pub(crate) fn block_on<T: Send, F: Future<Output = T> + Send>(
    py: Python<'_>,
    rt: &tokio::runtime::Runtime,
    fut: F,
) -> PyResult<T> {
    py.detach(|| {
        rt.block_on(async {
            tokio::select! {
                v = fut => Ok(v),
                e = signals() => Err(e),
            }
        })
    })
}

async fn signals() -> PyErr {
    loop {
        tokio::time::sleep(SIGNAL_POLL).await;
        if let Err(e) = Python::attach(|py| py.check_signals()) {
            return e;
        }
    }
}
