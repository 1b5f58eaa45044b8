//! The PSI circuit as a server and a querier over the network (`tacit mpc psi serve |
//! query`): [`Server::builder`] serves a set to queriers that follow the protocol,
//! sessions side by side under the project's admission control; [`Query`] asks one.
//!
//! What the server protects by default: it refuses to start unless told that every
//! querier follows the protocol ([`ServerBuilder::semi_honest_peers`]: a deviating
//! querier reads the whole set, see the module above); it runs over TLS 1.3
//! ([`Channel`]); at most [`ServerBuilder::max_sessions`] sessions at once, each
//! within [`ServerBuilder::session_timeout`], a handshake within 5 s; a querier's
//! set size is bounded by [`ServerBuilder::max_peer`]; the circuits of the sessions
//! in progress share one memory budget (by default what this process may use when
//! it binds, [`tacit_net::memory::memory_budget`]; [`ServerBuilder::memory_budget`]
//! sets another, [`ServerBuilder::no_memory_bound`] none): the server refuses to
//! bind when the largest query it admits does not fit, and a query that does not
//! fit what is left is refused before anything is built.

use super::{MAX_SET, MemoryBudget, PreparedSet, PsiParams, PsiReport, PsiResult, footprint, serve_reserving};
use crate::service::{Channel, Event, Events, MemoryBound, Triples, no_events};
use crate::{Error, Party};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tacit_crypto::rng::SecureRng;
use tacit_net::{FramedConn, FramedListener, NetConfig, Protocol};

/// The refusal of a server not told that its queriers follow the protocol.
pub const NEEDS_SEMI_HONEST: &str = "the GMW PSI server protects the set only from queriers that follow the \
protocol (semi-honest GMW): a querier that deviates reads the whole set. Call semi_honest_peers() if every \
querier runs tacit unmodified; for untrusted queriers use tacit-psi's server";

/// What a [`Server`] reports.
#[derive(Debug)]
#[non_exhaustive]
pub enum ServerEvent {
    /// Session `n` (counted from 1) ended.
    Session {
        /// Its number.
        n: u64,
        /// What it did, or why it failed.
        result: Result<PsiReport, Error>,
    },
    /// A line from the admission control (a refused, evicted or timed-out connection).
    Admission(String),
}

/// The PSI server (see [`Server::builder`]).
pub struct Server;

impl Server {
    /// A server of `set`.
    pub fn builder(set: Arc<PreparedSet>) -> ServerBuilder {
        ServerBuilder {
            set,
            listen: "127.0.0.1:7920".into(),
            max_peer: 4096,
            sessions: None,
            max_sessions: 4,
            session_timeout: Duration::from_secs(300),
            channel: Channel::default(),
            triples: Triples::Ot,
            budget: MemoryBound::Available,
            semi_honest: false,
            events: Arc::new(|_| {}),
        }
    }
}

/// Configures a PSI [`Server`].
pub struct ServerBuilder {
    set: Arc<PreparedSet>,
    listen: String,
    max_peer: usize,
    sessions: Option<u64>,
    max_sessions: usize,
    session_timeout: Duration,
    channel: Channel,
    triples: Triples,
    budget: MemoryBound,
    semi_honest: bool,
    events: Arc<dyn Fn(ServerEvent) + Send + Sync>,
}

impl std::fmt::Debug for ServerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerBuilder")
            .field("listen", &self.listen)
            .field("max_peer", &self.max_peer)
            .field("sessions", &self.sessions)
            .field("max_sessions", &self.max_sessions)
            .finish_non_exhaustive()
    }
}

impl ServerBuilder {
    /// Where to listen (default `127.0.0.1:7920`; port 0 picks one).
    pub fn listen(mut self, addr: impl Into<String>) -> Self {
        self.listen = addr.into();
        self
    }

    /// The largest querier set accepted (default 4096; from 1 to [`MAX_SET`]): the
    /// querier chooses its size, and with it the circuit this server builds.
    pub fn max_peer(mut self, n: usize) -> Self {
        self.max_peer = n;
        self
    }

    /// Stop after this many sessions (0: as soon as the listener is bound; default:
    /// never).
    pub fn sessions(mut self, n: u64) -> Self {
        self.sessions = Some(n);
        self
    }

    /// Sessions at once (default 4); more connections are closed at once.
    pub fn max_sessions(mut self, n: usize) -> Self {
        self.max_sessions = n.max(1);
        self
    }

    /// How long a session may last, from accept to the last message (default 300 s).
    pub fn session_timeout(mut self, d: Duration) -> Self {
        self.session_timeout = d;
        self
    }

    /// The channel (required: TLS, or plain TCP by name).
    pub fn channel(mut self, ch: Channel) -> Self {
        self.channel = ch;
        self
    }

    /// Where the triples come from (default OT extension; a token link is opened
    /// per session).
    pub fn triples(mut self, t: Triples) -> Self {
        self.triples = t;
        self
    }

    /// The memory the sessions' circuits may take together (bytes): the largest
    /// query admitted must fit it, and each query reserves its circuit from it until
    /// its session ends (default: what this process may use when it binds,
    /// [`tacit_net::memory::memory_budget`], as `tacit mpc psi serve`).
    pub fn memory_budget(mut self, bytes: u64) -> Self {
        self.budget = MemoryBound::Bytes(bytes);
        self
    }

    /// No memory bound: queries up to [`ServerBuilder::max_peer`] are built whatever
    /// memory is left, [`ServerBuilder::max_sessions`] of them at once (a querier can
    /// then make the process run out of memory).
    pub fn no_memory_bound(mut self) -> Self {
        self.budget = MemoryBound::Unbounded;
        self
    }

    /// Acknowledge that GMW protects the set only from queriers that follow the
    /// protocol (a deviating querier reads the whole set). Required.
    pub fn semi_honest_peers(mut self) -> Self {
        self.semi_honest = true;
        self
    }

    /// Where the server's events go.
    pub fn on_event(mut self, f: impl Fn(ServerEvent) + Send + Sync + 'static) -> Self {
        self.events = Arc::new(f);
        self
    }

    /// Checks the configuration and binds the listener.
    pub async fn bind(self) -> Result<BoundServer, Error> {
        if !self.semi_honest {
            return Err(Error::Config(NEEDS_SEMI_HONEST.into()));
        }
        if self.max_peer == 0 || self.max_peer > MAX_SET {
            return Err(Error::Params(format!("max_peer must be from 1 to {MAX_SET}")));
        }
        if !self.channel.is_plain() && self.channel.accept_config().is_none() {
            return Err(Channel::unset_error());
        }
        let worst = PsiParams {
            sigma: self.set.sigma,
            n_a: self.set.values.len(),
            n_b: self.max_peer,
        };
        let worst_bytes = footprint(&worst)?;
        let budget = self.budget.bytes();
        if let Some(b) = budget
            && worst_bytes > b
        {
            return Err(Error::Params(format!(
                "a query of {} elements makes this server build a circuit of about {} MiB; this process may use {}",
                self.max_peer,
                worst_bytes.div_ceil(1 << 20),
                super::human_bytes(b)
            )));
        }
        // A connection that has not finished its handshake in 5 s is closed; it
        // holds one of the session slots meanwhile.
        let cfg = NetConfig {
            connect_timeout: Duration::from_secs(5),
            ..NetConfig::default()
        };
        let l = FramedListener::bind(self.listen.as_str(), &cfg)
            .await
            .map_err(|err| Error::Connect {
                what: format!("cannot listen on {}", self.listen),
                err,
            })?;
        let addr = l.local_addr()?;
        Ok(BoundServer {
            b: self,
            listener: l,
            addr,
            worst_bytes,
            budget,
        })
    }
}

/// A PSI server with its listener bound.
pub struct BoundServer {
    b: ServerBuilder,
    listener: FramedListener,
    addr: SocketAddr,
    worst_bytes: u64,
    budget: Option<u64>,
}

impl std::fmt::Debug for BoundServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BoundServer")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl BoundServer {
    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The circuit of the largest query admitted, in bytes.
    pub fn worst_case_bytes(&self) -> u64 {
        self.worst_bytes
    }

    /// Serves sessions side by side until the configured number was admitted (for
    /// ever without one), then waits for them to end.
    pub async fn serve(self) -> Result<(), Error> {
        let b = Arc::new(self.b);
        // The project's admission control (tacit_net::guard): the cap, a deadline per
        // session, and fairness between addresses (a newcomer from a less busy
        // address takes the busiest one's oldest connection when the server is full).
        let limits = tacit_net::guard::ServeLimits::new(b.max_sessions, b.session_timeout);
        let ev = b.events.clone();
        let guard =
            tacit_net::guard::Guard::new(limits).on_event(Arc::new(move |e| ev(ServerEvent::Admission(e.to_string()))));
        // One budget for all sessions: each query reserves its circuit from it
        // before anything is built, so queriers arriving at once cannot each pass
        // against the same free memory.
        let budget = self.budget.map(MemoryBudget::new);
        let n = Arc::new(AtomicU64::new(0));
        let sessions = b.sessions;
        self.listener
            .serve(&guard, sessions, move |c| {
                let (b, budget) = (b.clone(), budget.clone());
                let n = n.fetch_add(1, Ordering::Relaxed) + 1;
                async move {
                    let result = async {
                        let (mut c, _) = b.channel.accept(c, Protocol::MpcPsi).await?;
                        let mut src = b.triples.source(Party::A, &no_events()).await?;
                        let mut rng = SecureRng::from_os();
                        serve_reserving(&mut c, &b.set, b.max_peer, budget.as_ref(), &mut src, &mut rng).await
                    }
                    .await;
                    (b.events)(ServerEvent::Session { n, result });
                }
            })
            .await;
        Ok(())
    }
}

/// A querier of a PSI [`Server`] (party b: learns the intersection and the server's
/// set size).
#[derive(Clone)]
pub struct Query {
    set: Arc<PreparedSet>,
    max_peer: usize,
    channel: Channel,
    triples: Triples,
    net: NetConfig,
    events: Events,
}

impl std::fmt::Debug for Query {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Query")
            .field("max_peer", &self.max_peer)
            .field("channel", &self.channel)
            .finish_non_exhaustive()
    }
}

impl Query {
    /// A query of `set`.
    pub fn builder(set: Arc<PreparedSet>) -> Self {
        Query {
            set,
            max_peer: 4096,
            channel: Channel::default(),
            triples: Triples::Ot,
            net: NetConfig::default(),
            events: no_events(),
        }
    }

    /// The largest server set accepted (default 4096).
    pub fn max_peer(mut self, n: usize) -> Self {
        self.max_peer = n;
        self
    }

    /// The channel (required: TLS, or plain TCP by name).
    pub fn channel(mut self, ch: Channel) -> Self {
        self.channel = ch;
        self
    }

    /// Where the triples come from (default OT extension; the server must agree).
    pub fn triples(mut self, t: Triples) -> Self {
        self.triples = t;
        self
    }

    /// Transport settings (timeouts, a deadline).
    pub fn net_config(mut self, cfg: NetConfig) -> Self {
        self.net = cfg;
        self
    }

    /// Where progress events go.
    pub fn on_event(mut self, f: impl Fn(Event) + Send + Sync + 'static) -> Self {
        self.events = Arc::new(f);
        self
    }

    /// Connects to the server at `addr` and runs the query.
    pub async fn connect(&self, addr: &str) -> Result<PsiResult, Error> {
        let (mut conn, peer_key) = self.channel.connect(addr, &self.net, Protocol::MpcPsi).await?;
        (self.events)(Event::Connected { peer_key });
        self.run(&mut conn).await
    }

    /// Runs the query on a connection the caller made (greeting and handshake done).
    pub async fn run(&self, conn: &mut FramedConn) -> Result<PsiResult, Error> {
        if self.max_peer == 0 || self.max_peer > MAX_SET {
            return Err(Error::Params(format!("max_peer must be from 1 to {MAX_SET}")));
        }
        let mut src = self.triples.source(Party::B, &self.events).await?;
        let mut rng = SecureRng::from_os();
        super::query(conn, &self.set, self.max_peer, &mut src, &mut rng).await
    }
}
