//! The PSI sender as a network service, and the receiver's side of one query: the
//! async shell around [`crate::Sender`] and [`crate::Receiver`] (no cryptography of
//! its own).
//!
//! One task per connection, at most [`ServiceConfig::max_clients`] at once; a client
//! beyond that gets a one-line refusal (an [`ErrorMessage`]) instead of waiting, so
//! one slow or hostile client never delays another. Every connection runs under a
//! deadline and every message under a timeout ([`NetConfig`]). The sender's
//! precomputation comes from a [`Supply`]: one shared per epoch, or a fresh one per
//! session made ahead of time by a background thread into a bounded queue (memory
//! stays bounded under load: at most `ahead` precomputations wait).
//!
//! Over TLS ([`ServiceConfig::tls`]) the response's proof is bound to the session's
//! channel binding ([`crate::Sender::respond_bound`]), so a response can neither be
//! substituted by someone on the path nor relayed from another session.

use crate::{Error, Intersection, Receiver, ReceiverPrecomputation, Result, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tacit_crypto::PrimeGroup;
use tacit_crypto::rng::SecureRng;
use tacit_net::{FramedConn, FramedListener, NetConfig, Protocol};
use tacit_wire::{Encode, ErrorMessage};

/// Where the service's PSI senders come from.
pub enum Supply<G: PrimeGroup> {
    /// One key and precomputation for every session ([`crate::Reuse::WithinEpoch`]).
    Epoch(Arc<Sender<G>>),
    /// A fresh key and precomputation per session, made ahead of time.
    Fresh(SenderPool<G>),
}

/// Fresh senders made by a background thread into a bounded queue.
pub struct SenderPool<G: PrimeGroup> {
    rx: tokio::sync::Mutex<tokio::sync::mpsc::Receiver<Result<Sender<G>>>>,
}

impl<G: PrimeGroup> SenderPool<G> {
    /// Starts a thread that keeps up to `ahead` senders ready, each made by `make`
    /// (which may use every core). The thread ends when the pool is dropped.
    pub fn start(ahead: usize, make: impl Fn() -> Result<Sender<G>> + Send + 'static) -> Self {
        let (tx, rx) = tokio::sync::mpsc::channel(ahead.max(1));
        std::thread::spawn(move || {
            loop {
                let next = make();
                let failed = next.is_err();
                if tx.blocking_send(next).is_err() || failed {
                    return;
                }
            }
        });
        SenderPool {
            rx: tokio::sync::Mutex::new(rx),
        }
    }

    async fn take(&self) -> Result<Sender<G>> {
        match self.rx.lock().await.recv().await {
            Some(s) => s,
            None => Err(Error::InvalidParams("the precomputation thread stopped".into())),
        }
    }
}

impl<G: PrimeGroup> Supply<G> {
    async fn get(&self) -> Result<Arc<Sender<G>>> {
        match self {
            Supply::Epoch(s) => Ok(s.clone()),
            Supply::Fresh(pool) => Ok(Arc::new(pool.take().await?)),
        }
    }
}

/// How the service runs.
#[derive(Clone)]
pub struct ServiceConfig {
    /// Most sessions in progress at once; clients beyond are refused at once (see
    /// `tacit_net::guard`: a newcomer from a less busy address takes the slot of the
    /// busiest address's oldest connection instead).
    pub max_clients: usize,
    /// Most sessions one address (IPv4 address or IPv6 /64) holds at once.
    pub max_per_address: usize,
    /// Frame limit, per-message timeout and per-connection deadline. The frame
    /// limit must fit the parameters' messages ([`crate::PsiParams::max_message_len`]).
    pub net: NetConfig,
    /// Serve over TLS with this configuration (and bind responses to the session).
    pub tls: Option<Arc<tacit_net::tls::ServerConfig>>,
}

impl core::fmt::Debug for ServiceConfig {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ServiceConfig")
            .field("max_clients", &self.max_clients)
            .field("max_per_address", &self.max_per_address)
            .field("net", &self.net)
            .field("tls", &self.tls.is_some())
            .finish()
    }
}

/// What happened to one connection (for logs and the load bench).
#[derive(Debug, Clone)]
pub enum Event {
    /// A session was answered.
    Answered {
        /// The client's address.
        peer: String,
        /// Request and response sizes.
        bytes: (usize, usize),
        /// Time from accept to the response sent.
        elapsed: Duration,
    },
    /// A session failed or was refused; the reason stays on this side (the client
    /// got a one-line refusal where one could be sent).
    Failed {
        /// The client's address.
        peer: String,
        /// Why.
        why: String,
    },
    /// A client was turned away because `max_clients` sessions were in progress, or
    /// its address held its share.
    Busy {
        /// The client's address.
        peer: String,
    },
    /// The accept loop dropped a connection (its deadline, or to make room for a
    /// less busy address), or `accept` failed and serving went on.
    Admission(String),
}

/// Default per-address share of [`ServiceConfig::max_per_address`].
pub const DEFAULT_MAX_PER_ADDRESS: usize = 16;

/// Serves PSI on `listener` until `sessions` sessions were accepted (or forever),
/// then waits for the sessions in progress.
pub async fn serve<G: PrimeGroup>(
    listener: FramedListener,
    supply: Arc<Supply<G>>,
    cfg: ServiceConfig,
    sessions: Option<u64>,
    events: Arc<dyn Fn(Event) + Send + Sync>,
) -> Result<()> {
    let deadline = cfg.net.deadline.unwrap_or(Duration::from_secs(60));
    let limits = tacit_net::guard::ServeLimits::new(cfg.max_clients.max(1), deadline)
        .with_per_address(cfg.max_per_address.max(1));
    // Issue 32: the shared guard admits connections (a cap, a share per address, a
    // deadline, accept errors never fatal); a refused client reads a one-line reason.
    let ev = events.clone();
    let tls = cfg.tls.clone();
    let net = cfg.net.speaking(Protocol::Psi);
    let guard = tacit_net::guard::Guard::new(limits)
        .on_event(Arc::new(move |e| match e {
            tacit_net::guard::ServeEvent::Refused { peer, .. } => ev(Event::Busy { peer: peer.to_string() }),
            other => ev(Event::Admission(other.to_string())),
        }))
        .refuse_with(Arc::new(move |stream, why| {
            let tls = tls.clone();
            Box::pin(async move {
                let Ok(conn) = FramedConn::from_stream(stream, &net) else {
                    return;
                };
                // A TLS client reads the refusal inside TLS (a bounded handshake).
                let mut conn = match tls {
                    Some(tls) => match tokio::time::timeout(Duration::from_secs(1), conn.accept_tls(tls)).await {
                        Ok(Ok(c)) => c,
                        _ => return,
                    },
                    None => conn,
                };
                let msg = ErrorMessage::new(match why {
                    tacit_net::guard::Refusal::Full { limit } => {
                        format!("the server is busy ({limit} sessions in progress); try again")
                    }
                    tacit_net::guard::Refusal::AddressFull { limit } => {
                        format!("the server is busy for this address ({limit} sessions in progress from it); try again")
                    }
                });
                // Send the refusal, close our side, and take the client's request if it
                // comes, so the client reads the refusal instead of a reset connection.
                let _ = async {
                    conn.send(&msg.to_wire()).await?;
                    conn.shutdown().await?;
                    conn.recv().await
                }
                .await;
            })
        }));
    listener
        .speaking(Protocol::Psi)
        .serve(&guard, sessions, |conn| {
            let (supply, cfg, events) = (supply.clone(), cfg.clone(), events.clone());
            let peer = conn.peer_addr().map(|a| a.to_string()).unwrap_or_else(|_| "?".into());
            async move {
                let t = Instant::now();
                let ev = match session(conn, &supply, &cfg).await {
                    Ok(bytes) => Event::Answered {
                        peer,
                        bytes,
                        elapsed: t.elapsed(),
                    },
                    Err(why) => Event::Failed { peer, why },
                };
                events(ev);
            }
        })
        .await;
    Ok(())
}

async fn session<G: PrimeGroup>(
    conn: FramedConn,
    supply: &Supply<G>,
    cfg: &ServiceConfig,
) -> core::result::Result<(usize, usize), String> {
    let mut conn = match &cfg.tls {
        Some(tls) => conn.accept_tls(tls.clone()).await.map_err(|e| e.to_string())?,
        None => conn,
    };
    let request = conn.recv().await.map_err(|e| e.to_string())?;
    let sender = supply.get().await.map_err(|e| e.to_string())?;
    let binding = conn.channel_binding().copied();
    let req = request.clone();
    // The answer runs on rayon's pool, which the caller sizes (`psi serve --threads`):
    // tokio's blocking pool would grow to hundreds of threads and so ignore that bound.
    let (tx, rx) = tokio::sync::oneshot::channel();
    rayon::spawn(move || {
        let answer = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let binding = binding.as_ref().map_or(&[][..], |b| &b[..]);
            sender.respond_bound(&req, binding, &mut SecureRng::from_os())
        }));
        let _ = tx.send(answer);
    });
    let answer = rx
        .await
        .map_err(|_| "the answer task ended without an answer".to_string())?
        .map_err(|_| "the answer task failed (panic)".to_string())?;
    match answer {
        Ok(response) => {
            conn.send(&response).await.map_err(|e| e.to_string())?;
            Ok((request.len(), response.len()))
        }
        Err(e) => {
            let _ = conn.send(&e.to_refusal()).await;
            Err(format!("refused: {e}"))
        }
    }
}

/// What one query learned, and what it cost.
#[derive(Debug)]
pub struct QueryOutcome {
    /// The common elements.
    pub intersection: Intersection,
    /// Request and response sizes.
    pub bytes: (usize, usize),
    /// Whether the session ran over TLS (and the response was bound to it).
    pub tls: bool,
    /// The server's certificate, on TLS.
    pub server_certificate: Option<Vec<u8>>,
}

/// Runs one query against a PSI service: over TLS with `tls` (a client
/// configuration that decides which server keys to accept, and the server name), in
/// the clear otherwise. Over TLS the response must be bound to this session.
pub async fn query<G: PrimeGroup>(
    addr: &str,
    pre: &ReceiverPrecomputation<G>,
    tls: Option<(Arc<tacit_net::tls::ClientConfig>, &str)>,
    net: &NetConfig,
) -> core::result::Result<QueryOutcome, QueryError> {
    let net = &net.speaking(Protocol::Psi);
    // On plain TCP the request leaves with the greeting; the first receive checks the
    // server's (`docs/wire.md`, "The greeting").
    let mut conn = match tls {
        Some((client, name)) => FramedConn::connect_tls(addr, net, client, name).await?,
        None => FramedConn::connect_early(addr, net).await?,
    };
    let (waiting, request) = Receiver::start(pre);
    conn.send(&request).await?;
    let response = conn.recv().await?;
    if let Some(refusal) = tacit_wire::Refusal::peek(&response) {
        return Err(match refusal.map_err(Error::from)? {
            tacit_wire::Refusal::Words(w) => QueryError::Refused(w),
            tacit_wire::Refusal::Mismatch(m) => QueryError::Psi(Error::PeerMismatch(m)),
        });
    }
    let binding = conn.channel_binding().copied();
    let intersection = waiting.on_response_bound(&response, binding.as_ref().map_or(&[][..], |b| &b[..]))?;
    Ok(QueryOutcome {
        intersection,
        bytes: (request.len(), response.len()),
        tls: binding.is_some(),
        server_certificate: conn.peer_certificate().map(|c| c.to_vec()),
    })
}

/// Why a query failed.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    /// The network or TLS failed.
    #[error("{0}")]
    Net(#[from] tacit_net::Error),
    /// The protocol failed (a bad response, a proof that does not verify, …).
    #[error("{0}")]
    Psi(#[from] Error),
    /// The server refused and said why.
    #[error("the peer refused: {0}")]
    Refused(String),
}
