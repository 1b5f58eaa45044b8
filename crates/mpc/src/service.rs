//! What the crate's servers and clients share ([`crate::Session`],
//! [`crate::token::Token`], [`crate::apps::psi::Server`],
//! [`crate::apps::schedule::Server`]): the channel between the parties, where the
//! triples come from, the events they report, and the listening party's accept loop.
//!
//! **The channel.** Every builder runs over TLS 1.3 with self-signed keys that the
//! other side pins ([`Channel::tls`]), the project's channel (`docs/wire.md`). Plain
//! TCP, with nothing encrypted or authenticated, is there only for latency
//! measurements and only by name ([`Channel::plain_tcp_unauthenticated`]); a builder
//! given neither refuses to start.

use crate::driver::TripleSource;
use crate::messages::TripleKind;
use crate::triples::TripleShares;
use crate::triples::ot::OtSource;
use crate::triples::token::TokenTrust;
use crate::triples::token::holder::{TcpTokenLink, TokenHolder, TokenPeer};
use crate::{Error, Party};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tacit_crypto::rng::SecureRng;
use tacit_net::tls::{CertificateCheck, ClientConfig, SelfSigned, ServerConfig};
use tacit_net::{FramedConn, FramedListener, NetConfig, Protocol};

/// The TLS server name the parties use (certificates are pinned, not named).
pub const PEER_TLS_NAME: &str = "tacit-mpc.invalid";

/// Handshakes a listening [`crate::Session`] runs at once; further connections are
/// closed.
pub const HANDSHAKES_AT_ONCE: usize = 16;

/// How long a listening [`crate::Session`] waits for one connection's handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

/// How the parties' connection is protected: TLS 1.3 (this party's configuration as
/// a server, as a client, or both) or, by name only, plain TCP.
#[derive(Clone, Default)]
pub struct Channel {
    server: Option<Arc<ServerConfig>>,
    client: Option<Arc<ClientConfig>>,
    plain: bool,
}

impl std::fmt::Debug for Channel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Channel")
            .field("tls_server", &self.server.is_some())
            .field("tls_client", &self.client.is_some())
            .field("plain", &self.plain)
            .finish()
    }
}

impl Channel {
    /// TLS 1.3 with `identity`, admitting a peer whose certificate passes `peer`
    /// (e.g. [`tacit_net::tls::pinned`] with the peer's fingerprint): as the listening
    /// party the peer must present such a key (mutual TLS), as the connecting party
    /// the listener must.
    pub fn tls(identity: &SelfSigned, peer: CertificateCheck) -> Result<Self, Error> {
        let tls = |e: tacit_net::tls::TlsConfigError| Error::Config(format!("the TLS configuration: {e}"));
        Ok(Channel {
            server: Some(identity.server_config_checking_clients(peer.clone()).map_err(tls)?),
            client: Some(identity.client_config_checking_server(peer).map_err(tls)?),
            plain: false,
        })
    }

    /// TLS 1.3 as the listening party, with a server configuration of the caller's
    /// (its own check of the clients' keys).
    pub fn tls_server(config: Arc<ServerConfig>) -> Self {
        Channel {
            server: Some(config),
            client: None,
            plain: false,
        }
    }

    /// TLS 1.3 as the connecting party, with a client configuration of the caller's
    /// (its own check of the server's key: pinned, or recorded on first use).
    pub fn tls_client(config: Arc<ClientConfig>) -> Self {
        Channel {
            server: None,
            client: Some(config),
            plain: false,
        }
    }

    /// **Plain TCP: nothing encrypted or authenticated** (an observer of the path
    /// reads every message; one who changes a bit changes the result). For latency
    /// measurements only; both parties must choose it.
    pub fn plain_tcp_unauthenticated() -> Self {
        Channel {
            server: None,
            client: None,
            plain: true,
        }
    }

    /// Whether this is plain TCP.
    pub fn is_plain(&self) -> bool {
        self.plain
    }

    /// The server configuration (TLS, as the listening party).
    pub(crate) fn accept_config(&self) -> Option<&Arc<ServerConfig>> {
        self.server.as_ref()
    }

    pub(crate) fn unset_error() -> Error {
        Error::Config(
            "no channel: give the builder a TLS identity (Channel::tls) or choose plain TCP by name \
             (Channel::plain_tcp_unauthenticated)"
                .into(),
        )
    }

    /// The server side of the handshake on an accepted connection, and the greeting
    /// of `protocol`; returns the connection and the peer's key (TLS).
    pub async fn accept(&self, conn: FramedConn, protocol: Protocol) -> Result<(FramedConn, Option<[u8; 32]>), Error> {
        let mut conn = conn.speaking(protocol);
        if self.plain {
            conn.greet().await?;
            return Ok((conn, None));
        }
        let Some(cfg) = &self.server else {
            return Err(Self::unset_error());
        };
        let conn = conn.accept_tls(cfg.clone()).await.map_err(|err| match err {
            // A refused greeting names the peer and both sides: it stands alone.
            e @ tacit_net::Error::Greeting(_) => Error::Net(e),
            err => Error::Connect {
                what: "TLS handshake with the peer (a peer that runs with --plain-tcp is refused)".into(),
                err,
            },
        })?;
        let fp = peer_key(&conn)?;
        Ok((conn, Some(fp)))
    }

    /// Connects to `addr` as the client, with the greeting of `protocol`; returns the
    /// connection and the server's key (TLS).
    pub async fn connect(
        &self,
        addr: &str,
        cfg: &NetConfig,
        protocol: Protocol,
    ) -> Result<(FramedConn, Option<[u8; 32]>), Error> {
        let cfg = cfg.speaking(protocol);
        if self.plain {
            let conn = FramedConn::connect(addr, &cfg).await.map_err(|err| Error::Connect {
                what: format!("cannot connect to {addr}"),
                err,
            })?;
            return Ok((conn, None));
        }
        let Some(client) = &self.client else {
            return Err(Self::unset_error());
        };
        let conn = FramedConn::connect_tls(addr, &cfg, client.clone(), PEER_TLS_NAME)
            .await
            .map_err(|err| match err {
                e @ tacit_net::Error::Greeting(_) => Error::Net(e),
                err => Error::Connect {
                    what: format!("cannot connect to {addr} over TLS (a peer on plain TCP needs plain TCP here too)"),
                    err,
                },
            })?;
        let fp = peer_key(&conn)?;
        Ok((conn, Some(fp)))
    }
}

fn peer_key(conn: &FramedConn) -> Result<[u8; 32], Error> {
    let cert = conn
        .peer_certificate()
        .ok_or_else(|| Error::Peer("presented no key".into()))?;
    tacit_net::tls::spki_fingerprint(cert).map_err(|e| Error::Peer(format!("presented a key that does not parse: {e}")))
}

/// What a server or client of this crate reports while it works (the CLI prints
/// these lines and draws the progress bars).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Event {
    /// The listener is bound.
    Listening {
        /// Where.
        addr: SocketAddr,
    },
    /// Accepting a connection failed (the listener keeps listening).
    AcceptFailed {
        /// Why.
        why: String,
    },
    /// A connection was refused before it became the session's (a failed or late
    /// handshake, a key that is not admitted, too many handshakes at once).
    Refused {
        /// The address it came from.
        from: String,
        /// Why.
        why: String,
    },
    /// The peer is connected (its key on TLS).
    Connected {
        /// The peer's key fingerprint (`None` on plain TCP).
        peer_key: Option<[u8; 32]>,
    },
    /// OT extension made `done` of `total` triples.
    OtTriples {
        /// Triples made.
        done: u64,
        /// Triples wanted.
        total: u64,
    },
    /// The token streamed `done` of `total` bytes of `c_A` into the pool (8 triples
    /// a byte; the token makes whole sequences, so the total can exceed the need).
    TokenFill {
        /// Bytes done.
        done: u64,
        /// Bytes in all.
        total: u64,
    },
    /// A line from the admission control of a server (a refused, evicted or
    /// timed-out connection).
    Admission(String),
}

/// Where a builder sends its [`Event`]s.
pub type Events = Arc<dyn Fn(Event) + Send + Sync>;

pub(crate) fn no_events() -> Events {
    Arc::new(|_| {})
}

/// A hook run on the token's certificate after the TLS handshake of the token link
/// (the CLI records the token's key there on first use); an error ends the link.
pub type LinkHook = Arc<dyn Fn(Option<&[u8]>) -> Result<(), String> + Send + Sync>;

/// How party a reaches its token: the address, the TLS client configuration (the
/// host's key the token is paired with, and the check of the token's link key), and
/// the folder of stored `c_A` sequences.
#[derive(Clone)]
pub struct TokenAccess {
    pub(crate) addr: String,
    pub(crate) tls: Arc<ClientConfig>,
    pub(crate) pool: Option<PathBuf>,
    pub(crate) hook: Option<LinkHook>,
}

impl std::fmt::Debug for TokenAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenAccess")
            .field("addr", &self.addr)
            .field("pool", &self.pool)
            .finish_non_exhaustive()
    }
}

impl TokenAccess {
    /// The token at `addr`, reached with `host` (the key the token was paired with,
    /// `tacit mpc token init --pair`), its link key pinned to `link_key` (the
    /// fingerprint [`crate::token::Token`] reports).
    pub fn pinned(addr: impl Into<String>, host: &SelfSigned, link_key: [u8; 32]) -> Result<Self, Error> {
        let tls = host
            .client_config_checking_server(tacit_net::tls::pinned(link_key))
            .map_err(|e| Error::Config(format!("the token link's TLS configuration: {e}")))?;
        Ok(Self::with_client_config(addr, tls))
    }

    /// The token at `addr` with a client configuration of the caller's (it must
    /// present the paired host's key; its check of the token's key is the caller's,
    /// e.g. trust on first use with [`TokenAccess::after_handshake`] recording it).
    pub fn with_client_config(addr: impl Into<String>, tls: Arc<ClientConfig>) -> Self {
        TokenAccess {
            addr: addr.into(),
            tls,
            pool: None,
            hook: None,
        }
    }

    /// Keep the `c_A` sequences in this folder (default: in memory). The folder is
    /// created mode 0700; one that is not this user's or that others may write is
    /// refused ([`crate::triples::token::holder::Pool::open`]). Sessions of this
    /// process or others may share it.
    pub fn pool(mut self, dir: impl Into<PathBuf>) -> Self {
        self.pool = Some(dir.into());
        self
    }

    /// Runs `hook` on the token's certificate after each handshake of the link.
    pub fn after_handshake(mut self, hook: LinkHook) -> Self {
        self.hook = Some(hook);
        self
    }

    /// The token's address.
    pub fn addr(&self) -> &str {
        &self.addr
    }
}

/// Where a party's multiplication triples come from (both parties must choose the
/// same kind).
#[derive(Debug, Clone, Default)]
pub enum Triples {
    /// IKNP OT extension between the two parties (the default).
    #[default]
    Ot,
    /// Party a: the trusted token, reached as [`TokenAccess`] says.
    Token(TokenAccess),
    /// Party b: the trusted token that party a holds, its certificate checked
    /// against this trust (the manufacturer's CA, software tokens or not).
    TokenPeer(TokenTrust),
}

impl Triples {
    /// The triple source of `party` (a: the listening side): for a token, its link
    /// (connected now; closed when a session's setup is over, so that a session's
    /// online phase holds none of the token's connections).
    pub async fn source(&self, party: Party, events: &Events) -> Result<Source, Error> {
        Ok(match (self, party) {
            (Triples::Ot, _) => {
                let ev = events.clone();
                Source::Ot(
                    OtSource::new(SecureRng::from_os())
                        .with_progress(move |done, total| ev(Event::OtTriples { done, total })),
                )
            }
            (Triples::Token(access), Party::A) => {
                let mut h = crate::token::connect(access).await?;
                h.close_after_setup = true;
                Source::Holder(Box::new(h))
            }
            (Triples::TokenPeer(trust), Party::B) => Source::Peer(TokenPeer::new(trust.clone(), SecureRng::from_os())),
            (Triples::Token(_), Party::B) => {
                return Err(Error::Config(
                    "party b does not hold the token: it checks party a's (Triples::TokenPeer)".into(),
                ));
            }
            (Triples::TokenPeer(_), Party::A) => {
                return Err(Error::Config(
                    "party a holds the token: it needs its address (Triples::Token)".into(),
                ));
            }
        })
    }
}

/// A triple source of any kind, as [`Triples::source`] makes it.
#[derive(Debug)]
pub enum Source {
    /// OT extension.
    Ot(OtSource<SecureRng>),
    /// Party a's token link.
    Holder(Box<TokenHolder<TcpTokenLink>>),
    /// Party b's side of the token.
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

    async fn triples(&mut self, conn: &mut FramedConn, party: Party, count: usize) -> Result<TripleShares, Error> {
        match self {
            Source::Ot(s) => s.triples(conn, party, count).await,
            Source::Holder(s) => s.triples(conn, party, count).await,
            Source::Peer(s) => s.triples(conn, party, count).await,
        }
    }
}

/// The listening party's wait for its one peer on `l`: the handshakes of the
/// connections that arrive run side by side (at most [`HANDSHAKES_AT_ONCE`], each
/// within [`HANDSHAKE_TIMEOUT`]), and the first to complete with an admitted key is
/// the peer. A connection that says nothing, or fails the handshake (a port scan, a
/// key that is not pinned, a client of another protocol), does not make the peer
/// wait behind it; each is reported as [`Event::Refused`]. When all the handshake
/// slots are taken a newcomer is not refused: it takes the slot of the oldest
/// handshake of the address holding the most (as `tacit_net::guard` does for
/// servers), so that silent connections from one address evict each other, and the
/// peer's handshake is evicted only after [`HANDSHAKES_AT_ONCE`] newer connections
/// from addresses holding at least as many slots as its own.
pub(crate) async fn accept_one(
    l: &FramedListener,
    ch: &Channel,
    protocol: Protocol,
    events: &Events,
) -> Result<(FramedConn, Option<[u8; 32]>), Error> {
    if !ch.plain && ch.server.is_none() {
        return Err(Channel::unset_error());
    }
    let mut pending = tokio::task::JoinSet::new();
    // The handshakes in progress: task → (address, arrival, its abort handle).
    let mut slots: std::collections::HashMap<
        tokio::task::Id,
        (Option<std::net::IpAddr>, u64, tokio::task::AbortHandle),
    > = std::collections::HashMap::new();
    let mut arrivals = 0u64;
    loop {
        tokio::select! {
            conn = l.accept() => {
                let conn = match conn {
                    Ok(c) => c,
                    Err(e) => {
                        events(Event::AcceptFailed { why: e.to_string() });
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let addr = conn.peer_addr().ok();
                let from = addr.map(|a| a.to_string()).unwrap_or_default();
                if slots.len() >= HANDSHAKES_AT_ONCE
                    && let Some(victim) = eviction_victim(&slots)
                    && let Some((ip, _, handle)) = slots.remove(&victim)
                {
                    handle.abort();
                    let who = ip.map(|i| i.to_string()).unwrap_or_default();
                    events(Event::Refused {
                        from: who,
                        why: format!("{HANDSHAKES_AT_ONCE} handshakes in progress: the oldest of the busiest address closed for a newcomer"),
                    });
                }
                let ch = ch.clone();
                let handle = pending.spawn(async move {
                    let r = tokio::time::timeout(HANDSHAKE_TIMEOUT, ch.accept(conn, protocol)).await;
                    (from, r)
                });
                arrivals += 1;
                slots.insert(handle.id(), (addr.map(|a| a.ip()), arrivals, handle));
            }
            Some(done) = pending.join_next_with_id(), if !pending.is_empty() => {
                // (Dropping `pending` on return aborts the other handshakes.)
                let (id, (from, r)) = match done {
                    Ok(d) => d,
                    Err(e) => {
                        slots.remove(&e.id());
                        continue;
                    }
                };
                slots.remove(&id);
                match r {
                    Ok(Ok((conn, peer_key))) => {
                        events(Event::Connected { peer_key });
                        return Ok((conn, peer_key));
                    }
                    Ok(Err(e)) => events(Event::Refused { from, why: e.to_string() }),
                    Err(_) => events(Event::Refused {
                        from,
                        why: format!("no handshake within {} s", HANDSHAKE_TIMEOUT.as_secs()),
                    }),
                }
            }
        }
    }
}

/// The handshake to close for a newcomer when all slots are taken: the oldest of
/// the address holding the most slots (ties: the oldest of all those addresses).
fn eviction_victim(
    slots: &std::collections::HashMap<tokio::task::Id, (Option<std::net::IpAddr>, u64, tokio::task::AbortHandle)>,
) -> Option<tokio::task::Id> {
    let mut count: std::collections::HashMap<Option<std::net::IpAddr>, usize> = std::collections::HashMap::new();
    for (ip, _, _) in slots.values() {
        *count.entry(*ip).or_default() += 1;
    }
    let most = count.values().copied().max()?;
    slots
        .iter()
        .filter(|(_, (ip, _, _))| count.get(ip) == Some(&most))
        .min_by_key(|(_, (_, seq, _))| *seq)
        .map(|(id, _)| *id)
}

/// Where a builder's memory bound comes from (default: what this process may use,
/// [`tacit_net::memory::memory_budget`], read when the work is checked).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) enum MemoryBound {
    /// What this process may use when checked.
    #[default]
    Available,
    /// As many bytes.
    Bytes(u64),
    /// None.
    Unbounded,
}

impl MemoryBound {
    /// The bound in bytes, if any.
    pub(crate) fn bytes(self) -> Option<u64> {
        match self {
            MemoryBound::Available => tacit_net::memory::memory_budget(),
            MemoryBound::Bytes(b) => Some(b),
            MemoryBound::Unbounded => None,
        }
    }
}
