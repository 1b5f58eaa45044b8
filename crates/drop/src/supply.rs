//! The receiver's supply of address-book precomputations (issue 32, item 4).
//!
//! Each session of a receiver needs a PSI sender over its address book with a fresh
//! key (`docs/drop.md`: reusing one leaks changes of the book between sessions),
//! whose precomputation costs `n` hash-to-group and scalar multiplications (about
//! 0.3 s at n = 10 000 on this machine's two cores). PrivateDrop computes it ahead,
//! off the online path (§4.4). [`BookSupply`] does that with **one** worker thread
//! that keeps a few ready; a session takes one and never computes inline: when none
//! is ready it waits for the worker, at most a bounded time, then is refused as busy.
//! So however many peers ask, the receiver spends at most one core on
//! precomputations, and a session waits behind at most the ones before it.
//!
//! ```
//! use std::time::Duration;
//! use tacit_crypto::Ristretto255;
//! use tacit_drop::DropParams;
//! use tacit_drop::protocol::AddressBook;
//! use tacit_drop::supply::BookSupply;
//!
//! let params = DropParams::default().with_bounds(3, 20);
//! let book = AddressBook::new(&["bob@example.com"]);
//! let supply = BookSupply::spawn(move || book.fresh_sender::<Ristretto255>(&params), 2);
//! let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
//! let sender = rt.block_on(supply.take(Duration::from_secs(10))).unwrap();
//! # let _ = sender;
//! ```

use crate::{Error, Result};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};
use tacit_crypto::PrimeGroup;
use tacit_psi::Sender;

/// Makes the PSI sender of one session (a fresh key and precomputation).
pub type MakeSender<G> = dyn Fn() -> Result<Sender<G>> + Send + Sync;

struct State<G: PrimeGroup> {
    ready: VecDeque<Sender<G>>,
    /// The last failure of the worker, reported to takers until it succeeds again.
    failure: Option<String>,
    stop: bool,
}

struct Inner<G: PrimeGroup> {
    state: Mutex<State<G>>,
    /// Wakes the worker when a sender was taken (or to stop).
    worker: Condvar,
    /// Wakes takers when a sender is ready (or the worker failed).
    takers: tokio::sync::Notify,
    made: AtomicU64,
    keep: usize,
}

impl<G: PrimeGroup> Inner<G> {
    fn lock(&self) -> std::sync::MutexGuard<'_, State<G>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Keeps `keep` PSI senders ready, computed by one background thread; see the
/// [module](self). Dropping the last handle stops the worker.
pub struct BookSupply<G: PrimeGroup> {
    inner: Arc<Inner<G>>,
}

impl<G: PrimeGroup> core::fmt::Debug for BookSupply<G> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "BookSupply(keeps {}, {} ready, {} made)",
            self.inner.keep,
            self.ready(),
            self.made()
        )
    }
}

impl<G: PrimeGroup> BookSupply<G> {
    /// Starts the worker, which keeps `keep` (at least 1) senders made by `make`
    /// ready.
    pub fn spawn(make: impl Fn() -> Result<Sender<G>> + Send + Sync + 'static, keep: usize) -> Arc<Self> {
        let inner = Arc::new(Inner {
            state: Mutex::new(State {
                ready: VecDeque::new(),
                failure: None,
                stop: false,
            }),
            worker: Condvar::new(),
            takers: tokio::sync::Notify::new(),
            made: AtomicU64::new(0),
            keep: keep.max(1),
        });
        let w = inner.clone();
        std::thread::Builder::new()
            .name("tacit-drop-book".into())
            .spawn(move || worker(&w, &make))
            .map(|_| ())
            .unwrap_or_else(|e| inner.lock().failure = Some(format!("cannot start the precomputation thread: {e}")));
        Arc::new(BookSupply { inner })
    }

    /// The next sender: a ready one at once, or the worker's next one within `wait`;
    /// never computed on the caller's thread. Refused as busy after `wait`, and with
    /// the worker's error if it fails.
    pub async fn take(&self, wait: Duration) -> Result<Sender<G>> {
        let until = Instant::now() + wait;
        loop {
            let notified = self.inner.takers.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut st = self.inner.lock();
                if let Some(s) = st.ready.pop_front() {
                    self.inner.worker.notify_one();
                    if !st.ready.is_empty() {
                        // Pass the wake-up on to the next taker.
                        self.inner.takers.notify_one();
                    }
                    return Ok(s);
                }
                if let Some(why) = &st.failure {
                    return Err(Error::InvalidParams(format!(
                        "precomputing the address book failed: {why}"
                    )));
                }
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() || tokio::time::timeout(left, notified).await.is_err() {
                return Err(Error::Busy(format!(
                    "no address-book precomputation ready within {:.0} s; try again",
                    wait.as_secs_f64()
                )));
            }
        }
    }

    /// Senders ready now.
    pub fn ready(&self) -> usize {
        self.inner.lock().ready.len()
    }

    /// Senders the worker made so far.
    pub fn made(&self) -> u64 {
        self.inner.made.load(Ordering::SeqCst)
    }
}

impl<G: PrimeGroup> Drop for BookSupply<G> {
    fn drop(&mut self) {
        self.inner.lock().stop = true;
        self.inner.worker.notify_all();
    }
}

fn worker<G: PrimeGroup>(inner: &Inner<G>, make: &MakeSender<G>) {
    loop {
        {
            let mut st = inner.lock();
            while !st.stop && st.ready.len() >= inner.keep {
                st = inner.worker.wait(st).unwrap_or_else(|p| p.into_inner());
            }
            if st.stop {
                return;
            }
        }
        let made = make();
        let mut st = inner.lock();
        match made {
            Ok(s) => {
                st.ready.push_back(s);
                st.failure = None;
                inner.made.fetch_add(1, Ordering::SeqCst);
                drop(st);
                inner.takers.notify_one();
            }
            Err(e) => {
                st.failure = Some(e.to_string());
                drop(st);
                inner.takers.notify_waiters();
                // Try again later, not in a tight loop.
                std::thread::sleep(Duration::from_secs(1));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DropParams;
    use crate::protocol::AddressBook;
    use std::sync::atomic::AtomicUsize;
    use tacit_crypto::Ristretto255;

    type G = Ristretto255;

    fn counting(
        delay: Duration,
    ) -> (
        impl Fn() -> Result<Sender<G>> + Send + Sync + 'static,
        Arc<AtomicUsize>,
        Arc<AtomicUsize>,
    ) {
        let params = DropParams::default().with_bounds(2, 8);
        let book = AddressBook::new(&["a@example.com"]);
        let (now, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let (n, m) = (now.clone(), most.clone());
        let make = move || {
            let c = n.fetch_add(1, Ordering::SeqCst) + 1;
            m.fetch_max(c, Ordering::SeqCst);
            std::thread::sleep(delay);
            let s = book.fresh_sender::<G>(&params);
            n.fetch_sub(1, Ordering::SeqCst);
            s
        };
        (make, now, most)
    }

    /// Many sessions at once: one precomputation at a time, none on a taker's thread,
    /// everyone served in turn.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn one_worker_serves_many_takers_one_precomputation_at_a_time() {
        let (make, _, most) = counting(Duration::from_millis(5));
        let supply = BookSupply::spawn(make, 2);
        let mut tasks = Vec::new();
        for _ in 0..20 {
            let s = supply.clone();
            tasks.push(tokio::spawn(
                async move { s.take(Duration::from_secs(10)).await.is_ok() },
            ));
        }
        for t in tasks {
            assert!(t.await.unwrap());
        }
        assert_eq!(most.load(Ordering::SeqCst), 1);
        assert!(supply.made() >= 20);
        // The worker refills up to `keep` and then rests.
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(supply.ready(), 2);
        let made = supply.made();
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(supply.made(), made);
    }

    #[tokio::test]
    async fn a_taker_is_refused_as_busy_after_its_wait() {
        let (make, _, _) = counting(Duration::from_millis(400));
        let supply = BookSupply::spawn(make, 1);
        let e = supply.take(Duration::from_millis(50)).await.unwrap_err();
        assert!(matches!(e, Error::Busy(_)), "{e}");
        assert!(supply.take(Duration::from_secs(5)).await.is_ok());
    }

    #[tokio::test]
    async fn a_failing_worker_is_reported() {
        let supply = BookSupply::<G>::spawn(|| Err(Error::InvalidParams("no book".into())), 1);
        let e = supply.take(Duration::from_secs(5)).await.unwrap_err();
        assert!(e.to_string().contains("no book"), "{e}");
    }
}
