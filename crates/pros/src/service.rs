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
//! What one session may compute is bounded by the engines (for 3PR,
//! [`crate::threepr::Limits`]); a session that runs past its deadline is dropped at
//! its next message, after the round it is computing.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tacit_net::{FramedConn, FramedListener, NetConfig};
use tacit_wire::{Encode, ErrorMessage};

/// How the service runs.
#[derive(Clone)]
pub struct ServiceConfig {
    /// Most sessions in progress at once; clients beyond are refused at once.
    pub max_clients: usize,
    /// Frame limit of the first message, per-message timeout, per-session deadline
    /// (a session without one gets [`DEFAULT_DEADLINE`]).
    pub net: NetConfig,
    /// Serve over TLS with this configuration.
    pub tls: Option<Arc<tacit_net::tls::ServerConfig>>,
}

/// The deadline of a session when the configuration names none.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(600);

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
    /// A client was turned away because `max_clients` sessions were in progress.
    Busy {
        /// The client's address.
        peer: String,
    },
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
    let permits = Arc::new(tokio::sync::Semaphore::new(cfg.max_clients.max(1)));
    // refusals in progress (each lasts at most about two seconds); beyond, a client
    // is dropped without one
    let refusals = Arc::new(tokio::sync::Semaphore::new(64));
    let mut tasks = tokio::task::JoinSet::new();
    let mut accepted = 0u64;
    while sessions.is_none_or(|max| accepted < max) {
        while tasks.try_join_next().is_some() {}
        let conn = match listener.accept().await {
            Ok(c) => c,
            Err(_) => {
                // a connection reset before accept, or out of descriptors: back off
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let peer = conn.peer_addr().map(|a| a.to_string()).unwrap_or_else(|_| "?".into());
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            events(Event::Busy { peer });
            if let Ok(r) = refusals.clone().try_acquire_owned() {
                let (max, tls, first) = (cfg.max_clients, cfg.tls.clone(), cfg.net.max_frame);
                tasks.spawn(async move {
                    refuse_busy(conn, tls, max, first).await;
                    drop(r);
                });
            }
            continue;
        };
        accepted += 1;
        let session = accepted;
        let (cfg, events, handler) = (cfg.clone(), events.clone(), handler.clone());
        tasks.spawn(async move {
            let t = Instant::now();
            let deadline = cfg.net.deadline.unwrap_or(DEFAULT_DEADLINE);
            let mut client = None;
            let run = async {
                let conn = match cfg.tls {
                    Some(tls) => conn.accept_tls(tls).await.map_err(|e| e.to_string())?,
                    None => conn,
                };
                client = conn
                    .peer_certificate()
                    .and_then(|c| tacit_net::tls::spki_fingerprint(c).ok());
                handler(conn).await.map_err(|e| e.to_string())
            };
            let result = match tokio::time::timeout(deadline, run).await {
                Ok(r) => r,
                Err(_) => Err(format!(
                    "the session ran past its {:.0} s deadline",
                    deadline.as_secs_f64()
                )),
            };
            drop(permit);
            events(Event::Done {
                session,
                peer,
                client,
                elapsed: t.elapsed(),
                result,
            });
        });
    }
    while tasks.join_next().await.is_some() {}
    Ok(())
}

/// Refuses a client at once with a one-line reason (inside TLS for a TLS client).
async fn refuse_busy(conn: FramedConn, tls: Option<Arc<tacit_net::tls::ServerConfig>>, max: usize, first: usize) {
    let mut conn = match tls {
        Some(tls) => match tokio::time::timeout(Duration::from_secs(1), conn.accept_tls(tls)).await {
            Ok(Ok(c)) => c,
            _ => return,
        },
        None => conn,
    };
    let msg = ErrorMessage::new(format!(
        "the server is busy ({max} sessions in progress); try again later"
    ));
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
