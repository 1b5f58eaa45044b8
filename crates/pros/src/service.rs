//! The serving side of PROS as a network service: the async shell around the
//! drivers of [`crate::net`] (no cryptography of its own), shared by
//! `tacit pros psi serve`, `tacit pros reconcile serve` and `tacit schedule serve`.
//!
//! * One task per connection, at most [`ServiceConfig::max_clients`] at once; a
//!   client beyond that gets a one-line refusal at once instead of waiting, so one
//!   idle or slow peer never holds another out (issue 26, item 5).
//! * Every session runs under a deadline ([`NetConfig::deadline`], also enforced
//!   around the whole session) and every message under a timeout
//!   ([`NetConfig::read_timeout`]); the TLS handshake under
//!   [`NetConfig::connect_timeout`].
//! * The first message is bounded by [`NetConfig::max_frame`], which the caller sizes
//!   from the protocol's bounds; the drivers bound every later message exactly.
//! * Over TLS ([`ServiceConfig::tls`]) the client's key, when the configuration asks
//!   for one, is reported with the session ([`Event::Done::client`]).
//!
//! * Connections are admitted by the project's shared admission guard
//!   ([`tacit_net::guard`]): at most `max_clients` connections, per-address fairness
//!   (when full, a newcomer from a less busy address takes the busiest address's
//!   oldest connection), a hard deadline per connection, `accept` errors reported and
//!   never fatal.
//! * **Compute slots.** A session's blocking work ([`crate::net::blocking`], which
//!   every driver uses for its heavy steps) holds one of `max_clients` compute slots
//!   until it *returns*, not until the session's future is dropped: a session dropped
//!   at its deadline (or evicted) leaves its current step running with its slot, and
//!   a new session is refused as busy while `max_clients` computations run. So
//!   `max_clients` bounds concurrent computations, not only connections (test
//!   `work_past_the_deadline_is_counted_against_max_clients`).
//!
//! What one session may compute is bounded by the engines (for 3PR,
//! [`crate::threepr::Limits`]); a session that runs past its deadline is dropped at
//! once, and the step it was computing finishes on its compute slot.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tacit_net::guard::{self, Guard, Refusal, ServeEvent, ServeLimits};
use tacit_net::{FramedConn, FramedListener, NetConfig};
use tacit_wire::{Encode, ErrorMessage};

/// How the service runs.
#[derive(Clone)]
pub struct ServiceConfig {
    /// Most sessions in progress at once, and most sessions' computations running at
    /// once (a dropped session's last step counts until it returns); clients beyond
    /// are refused at once.
    pub max_clients: usize,
    /// Frame limit of the first message, per-message timeout, per-session deadline
    /// (a session without one gets [`DEFAULT_DEADLINE`]).
    pub net: NetConfig,
    /// Serve over TLS with this configuration.
    pub tls: Option<Arc<tacit_net::tls::ServerConfig>>,
}

/// The deadline of a session when the configuration names none.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(600);

/// How long after its deadline the admission guard drops a connection whose session
/// has not ended (the session's own deadline normally ends it first).
const GUARD_GRACE: Duration = Duration::from_secs(5);

impl core::fmt::Debug for ServiceConfig {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ServiceConfig")
            .field("max_clients", &self.max_clients)
            .field("net", &self.net)
            .field("tls", &self.tls.is_some())
            .finish()
    }
}

/// What happened to one connection.
#[derive(Debug)]
pub enum Event<T> {
    /// A session ended (with the handler's result, or why it failed).
    Done {
        /// Its number, counting accepted sessions from 1.
        session: u64,
        /// The client's address.
        peer: String,
        /// SHA-256 of the client's TLS key, where it presented one.
        client: Option<[u8; 32]>,
        /// Time from accept to the end.
        elapsed: Duration,
        /// The handler's result, or why the session failed.
        result: Result<T, String>,
    },
    /// A client was turned away because `max_clients` sessions were in progress (or
    /// `max_clients` computations still running).
    Busy {
        /// The client's address.
        peer: String,
    },
}

/// One compute slot, held by a session and by every blocking step it started.
pub(crate) type ComputeSlot = Arc<tokio::sync::OwnedSemaphorePermit>;

tokio::task_local! {
    /// The compute slot of the session running on this task (set by [`serve`]).
    pub(crate) static COMPUTE_SLOT: ComputeSlot;
}

/// Serves on `listener` until `sessions` sessions were accepted (or forever), running
/// `handler` on each connection (after the TLS handshake, when configured), then
/// waits for the sessions in progress.
pub async fn serve<T, F, Fut>(
    listener: FramedListener,
    cfg: ServiceConfig,
    sessions: Option<u64>,
    handler: F,
    events: Arc<dyn Fn(Event<T>) + Send + Sync>,
) -> crate::Result<()>
where
    T: Send + 'static,
    F: Fn(FramedConn) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = crate::Result<T>> + Send + 'static,
{
    let handler = Arc::new(handler);
    let max = cfg.max_clients.max(1);
    let deadline = cfg.net.deadline.unwrap_or(DEFAULT_DEADLINE);
    let compute = Arc::new(tokio::sync::Semaphore::new(max));
    let limits = ServeLimits::new(max, deadline + GUARD_GRACE).with_per_address(max);
    let ev = events.clone();
    let (tls, first, net) = (cfg.tls.clone(), cfg.net.max_frame, cfg.net);
    let guard = Guard::new(limits)
        .on_event(Arc::new(move |e| {
            if let ServeEvent::Refused { peer, .. } = e {
                ev(Event::Busy { peer: peer.to_string() });
            }
        }))
        .refuse_with(Arc::new(move |stream, why| {
            let tls = tls.clone();
            Box::pin(async move {
                if let Ok(conn) = FramedConn::from_stream(stream, &net) {
                    refuse_busy(conn, tls, busy_line(why), first).await;
                }
            })
        }));
    let accepted = Arc::new(std::sync::atomic::AtomicU64::new(0));
    guard::serve(listener.tcp(), &guard, sessions, |stream, peer| {
        let (cfg, events, handler, compute) = (cfg.clone(), events.clone(), handler.clone(), compute.clone());
        let session = accepted.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        async move {
            let peer = peer.to_string();
            let Ok(conn) = FramedConn::from_stream(stream, &cfg.net) else {
                return;
            };
            let Ok(slot) = compute.try_acquire_owned() else {
                events(Event::Busy { peer });
                let why = format!("the server is busy ({max} sessions computing)");
                let _ = tokio::time::timeout(
                    guard::REFUSAL_DEADLINE,
                    refuse_busy(conn, cfg.tls.clone(), why, cfg.net.max_frame),
                )
                .await;
                return;
            };
            let t = Instant::now();
            let mut client = None;
            let run = async {
                let mut conn = match cfg.tls {
                    Some(tls) => conn.accept_tls(tls).await.map_err(|e| e.to_string())?,
                    None => conn,
                };
                // The greeting (when the caller's configuration sets one) before the
                // handler's setup, so that the client is not kept waiting for it.
                conn.greet().await.map_err(|e| e.to_string())?;
                client = conn
                    .peer_certificate()
                    .and_then(|c| tacit_net::tls::spki_fingerprint(c).ok());
                handler(conn).await.map_err(|e| e.to_string())
            };
            let run = COMPUTE_SLOT.scope(Arc::new(slot), run);
            let result = match tokio::time::timeout(deadline, run).await {
                Ok(r) => r,
                Err(_) => Err(format!(
                    "the session ran past its {:.0} s deadline",
                    deadline.as_secs_f64()
                )),
            };
            events(Event::Done {
                session,
                peer,
                client,
                elapsed: t.elapsed(),
                result,
            });
        }
    })
    .await;
    Ok(())
}

/// The one line a refused client reads.
fn busy_line(why: Refusal) -> String {
    match why {
        Refusal::Full { limit } => format!("the server is busy ({limit} sessions in progress)"),
        Refusal::AddressFull { limit } => {
            format!("the server is busy (your address holds {limit} sessions, the most one address may)")
        }
    }
}

/// Refuses a client at once with a one-line reason (inside TLS for a TLS client).
async fn refuse_busy(conn: FramedConn, tls: Option<Arc<tacit_net::tls::ServerConfig>>, why: String, first: usize) {
    let mut conn = match tls {
        Some(tls) => match tokio::time::timeout(Duration::from_secs(1), conn.accept_tls(tls)).await {
            Ok(Ok(c)) => c,
            _ => return,
        },
        None => conn,
    };
    let msg = ErrorMessage::new(format!("{why}; try again later"));
    // Send the refusal, close our side, and take the client's first message if it
    // comes within a second, so the client reads the refusal, not a reset.
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        conn.set_max_frame(first.max(crate::net::REFUSAL_ROOM));
        conn.send(&msg.to_wire()).await?;
        conn.shutdown().await?;
        conn.recv().await
    })
    .await;
}
