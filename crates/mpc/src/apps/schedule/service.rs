//! Scheduling under GMW as a server and a client over the network (`tacit schedule
//! serve | connect --engine gmw`): [`Server::builder`] runs sessions side by side
//! under the project's admission control, [`Client`] connects to one.
//!
//! What the server protects by default: TLS 1.3 ([`Channel`]; plain TCP only by
//! name); at most [`ServerBuilder::max_sessions`] sessions at once (a newcomer from a
//! less busy address takes the busiest address's oldest slot), each dropped at
//! [`ServerBuilder::deadline`], each message awaited at most the read timeout of
//! [`ServerBuilder::net_config`], so that a client who connects and falls silent
//! holds one slot, not the server; the hellos compare the window before any circuit
//! is built.

use super::{Outcome, ScheduleHello, ScheduleInput, run_session};
use crate::driver::RunReport;
use crate::service::{Channel, Event, Events, Triples, no_events};
use crate::{Error, Party};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tacit_crypto::rng::SecureRng;
use tacit_net::{FramedConn, FramedListener, NetConfig, Protocol};

/// The largest frame either side reads before the hellos agree (64 KiB, as the
/// CLI): a hello is a few hundred bytes, and a peer must not make us buffer
/// megabytes before it is parsed. The session raises the limit to what the
/// circuit needs once the windows agree.
pub const HELLO_MAX_FRAME: usize = 1 << 16;

/// A [`Client`]'s default overall deadline (2 hours, as `tacit schedule connect`).
pub const CLIENT_DEADLINE: Duration = Duration::from_secs(7200);

fn hello_config() -> NetConfig {
    NetConfig {
        max_frame: HELLO_MAX_FRAME,
        ..NetConfig::default()
    }
}

/// What a scheduling [`Server`] reports.
#[derive(Debug)]
#[non_exhaustive]
pub enum ServerEvent {
    /// Session `n` (counted from 1) completed its handshake with this key.
    PeerKey {
        /// The session.
        n: u64,
        /// The client's key fingerprint.
        key: [u8; 32],
    },
    /// Session `n` ended.
    Session {
        /// The session.
        n: u64,
        /// What both learned, or why it failed.
        result: Result<(Outcome, RunReport), Error>,
    },
    /// A line from the admission control (a refused, evicted or timed-out connection).
    Admission(String),
}

/// The scheduling server (party a; see [`Server::builder`]).
pub struct Server;

impl Server {
    /// A server of one calendar: the window and kind in `hello`, its inputs.
    pub fn builder(hello: ScheduleHello, input: ScheduleInput) -> ServerBuilder {
        ServerBuilder {
            hello,
            input,
            listen: "127.0.0.1:7800".into(),
            sessions: None,
            max_sessions: 4,
            deadline: Duration::from_secs(120),
            net: hello_config(),
            channel: Channel::default(),
            triples: Triples::Ot,
            events: Arc::new(|_| {}),
        }
    }
}

/// Configures a scheduling [`Server`].
pub struct ServerBuilder {
    hello: ScheduleHello,
    input: ScheduleInput,
    listen: String,
    sessions: Option<u64>,
    max_sessions: usize,
    deadline: Duration,
    net: NetConfig,
    channel: Channel,
    triples: Triples,
    events: Arc<dyn Fn(ServerEvent) + Send + Sync>,
}

impl std::fmt::Debug for ServerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerBuilder")
            .field("listen", &self.listen)
            .field("sessions", &self.sessions)
            .field("max_sessions", &self.max_sessions)
            .finish_non_exhaustive()
    }
}

impl ServerBuilder {
    /// Where to listen (port 0 picks one).
    pub fn listen(mut self, addr: impl Into<String>) -> Self {
        self.listen = addr.into();
        self
    }

    /// Stop after this many sessions (0: as soon as the listener is bound; default:
    /// never).
    pub fn sessions(mut self, n: u64) -> Self {
        self.sessions = Some(n);
        self
    }

    /// Sessions at once (default 4, as `tacit schedule serve --max-clients`; a GMW
    /// session is CPU work).
    pub fn max_sessions(mut self, n: usize) -> Self {
        self.max_sessions = n.max(1);
        self
    }

    /// How long a session may last (default 120 s).
    pub fn deadline(mut self, d: Duration) -> Self {
        self.deadline = d;
        self
    }

    /// Transport settings (the per-message timeout, the first frame's limit); the
    /// greeting is the scheduler's and the deadline [`ServerBuilder::deadline`].
    /// Default: [`NetConfig::default`] with frames up to [`HELLO_MAX_FRAME`] until
    /// the hellos agree (the session then raises the limit to what its circuit
    /// needs).
    pub fn net_config(mut self, cfg: NetConfig) -> Self {
        self.net = cfg;
        self
    }

    /// The channel (required: TLS, or plain TCP by name).
    pub fn channel(mut self, ch: Channel) -> Self {
        self.channel = ch;
        self
    }

    /// Where the triples come from (default OT extension; a token link per session).
    pub fn triples(mut self, t: Triples) -> Self {
        self.triples = t;
        self
    }

    /// Where the server's events go.
    pub fn on_event(mut self, f: impl Fn(ServerEvent) + Send + Sync + 'static) -> Self {
        self.events = Arc::new(f);
        self
    }

    /// Binds the listener.
    pub async fn bind(self) -> Result<BoundServer, Error> {
        if !self.channel.is_plain() && self.channel.accept_config().is_none() {
            return Err(Channel::unset_error());
        }
        let mut net = self.net.speaking(Protocol::MpcSchedule);
        net.deadline = Some(self.deadline);
        let l = FramedListener::bind(self.listen.as_str(), &net)
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
        })
    }
}

/// A scheduling server with its listener bound.
pub struct BoundServer {
    b: ServerBuilder,
    listener: FramedListener,
    addr: SocketAddr,
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

    /// Serves sessions side by side until the configured number was admitted (for
    /// ever without one), then waits for them to end.
    pub async fn serve(self) -> Result<(), Error> {
        let b = Arc::new(self.b);
        let limits = tacit_net::guard::ServeLimits::new(b.max_sessions, b.deadline);
        let ev = b.events.clone();
        let guard =
            tacit_net::guard::Guard::new(limits).on_event(Arc::new(move |e| ev(ServerEvent::Admission(e.to_string()))));
        let n = Arc::new(AtomicU64::new(0));
        let sessions = b.sessions;
        self.listener
            .serve(&guard, sessions, move |c| {
                let b = b.clone();
                let n = n.fetch_add(1, Ordering::Relaxed) + 1;
                async move {
                    let result = async {
                        // The handshake and the greeting before the triple source is
                        // set up (which may take a while): the client is told at once
                        // what it reached.
                        let (mut c, key) = b.channel.accept(c, Protocol::MpcSchedule).await?;
                        if let Some(key) = key {
                            (b.events)(ServerEvent::PeerKey { n, key });
                        }
                        let mut src = b.triples.source(Party::A, &no_events()).await?;
                        let mut rng = SecureRng::from_os();
                        run_session(&mut c, Party::A, &b.hello, &b.input, &mut src, &mut rng).await
                    }
                    .await;
                    (b.events)(ServerEvent::Session { n, result });
                }
            })
            .await;
        Ok(())
    }
}

/// A scheduling client (party b).
#[derive(Clone)]
pub struct Client {
    hello: ScheduleHello,
    input: ScheduleInput,
    channel: Channel,
    triples: Triples,
    net: NetConfig,
    events: Events,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("channel", &self.channel)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A client of one calendar: the window and kind in `hello`, its inputs.
    pub fn builder(hello: ScheduleHello, input: ScheduleInput) -> Self {
        Client {
            hello,
            input,
            channel: Channel::default(),
            triples: Triples::Ot,
            net: NetConfig {
                deadline: Some(CLIENT_DEADLINE),
                ..hello_config()
            },
            events: no_events(),
        }
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

    /// Transport settings (timeouts, a deadline). Default: [`NetConfig::default`]
    /// with frames up to [`HELLO_MAX_FRAME`] until the hellos agree and an overall
    /// deadline of [`CLIENT_DEADLINE`] (as `tacit schedule connect`).
    pub fn net_config(mut self, cfg: NetConfig) -> Self {
        self.net = cfg;
        self
    }

    /// Where progress events go.
    pub fn on_event(mut self, f: impl Fn(Event) + Send + Sync + 'static) -> Self {
        self.events = Arc::new(f);
        self
    }

    /// Connects to the server at `addr` and runs the session.
    pub async fn connect(&self, addr: &str) -> Result<(Outcome, RunReport), Error> {
        let (mut conn, peer_key) = self.channel.connect(addr, &self.net, Protocol::MpcSchedule).await?;
        (self.events)(Event::Connected { peer_key });
        self.run(&mut conn).await
    }

    /// Runs the session on a connection the caller made (greeting and handshake
    /// done).
    pub async fn run(&self, conn: &mut FramedConn) -> Result<(Outcome, RunReport), Error> {
        let mut src = self.triples.source(Party::B, &self.events).await?;
        let mut rng = SecureRng::from_os();
        run_session(conn, Party::B, &self.hello, &self.input, &mut src, &mut rng).await
    }
}
