//! The trusted token as a service: [`Token`] serves a card (its sealed state, paper
//! §4) over TLS 1.3 to its paired host — what `tacit mpc token serve` runs — and
//! [`connect`] is the host's link to it (party a's triple source and the init phase,
//! `tacit mpc token fill`). The protocol itself is [`crate::triples::token`].
//!
//! ```no_run
//! # async fn f(card: tacit_mpc::token::card::Card<tacit_mpc::token::card::FileEeprom>) -> Result<(), tacit_mpc::Error> {
//! use tacit_mpc::token::Token;
//! let token = Token::builder(card).listen("0.0.0.0:7901").bind().await?;
//! println!("token link key {}", hex(token.link_fingerprint()));
//! token.serve().await?;
//! # Ok(()) }
//! # fn hex(_: [u8; 32]) -> String { String::new() }
//! ```
//!
//! What a connection can make the token do: only the paired host's key completes the
//! TLS handshake (mutual pinning); below the TLS shell a link that is not the paired
//! host's is refused RELEASE A, RELEASE B and DELETE (`card.rs`); connections are
//! capped in all and per address, each within a deadline ([`tacit_net::guard`]); a
//! stream a connection leaves unfinished is erased when it ends.

pub use crate::service::{LinkHook, TokenAccess};
pub use crate::triples::token::holder::{Pool, TcpTokenLink, TokenHolder, TokenServer};
pub use crate::triples::token::{SOFTWARE_POLICY, TokenKind, TokenTrust, card};

use crate::Error;
use crate::triples::token::card::{Card, Eeprom, FileEeprom, LINK_NAME, SealKey};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tacit_net::guard::ServeLimits;
use tacit_net::{FramedConn, FramedListener, NetConfig, Protocol};

/// The token server (see [`Token::builder`]).
pub struct Token;

impl Token {
    /// A server for `card` (made from a sealed state file with [`open_card`], or in
    /// memory).
    pub fn builder<E: Eeprom + Send + 'static>(card: Card<E>) -> TokenBuilder<E> {
        TokenBuilder {
            card,
            listen: "127.0.0.1:7901".into(),
            connections: None,
            max_connections: 8,
            session_timeout: Duration::from_secs(600),
            handshake_timeout: Duration::from_secs(5),
            events: Arc::new(|_| {}),
        }
    }
}

/// Configures a [`Token`] server.
pub struct TokenBuilder<E: Eeprom> {
    card: Card<E>,
    listen: String,
    connections: Option<u64>,
    max_connections: usize,
    session_timeout: Duration,
    handshake_timeout: Duration,
    events: Arc<dyn Fn(String) + Send + Sync>,
}

impl<E: Eeprom> std::fmt::Debug for TokenBuilder<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenBuilder")
            .field("listen", &self.listen)
            .field("connections", &self.connections)
            .field("max_connections", &self.max_connections)
            .field("session_timeout", &self.session_timeout)
            .finish_non_exhaustive()
    }
}

impl<E: Eeprom + Send + 'static> TokenBuilder<E> {
    /// Where to listen (default `127.0.0.1:7901`; port 0 picks one).
    pub fn listen(mut self, addr: impl Into<String>) -> Self {
        self.listen = addr.into();
        self
    }

    /// Stop after this many host connections were admitted (default: serve for ever).
    pub fn connections(mut self, n: u64) -> Self {
        self.connections = Some(n);
        self
    }

    /// Connections served at once (default 8; at least 1); more are closed at once,
    /// except that a newcomer from a less busy address takes the busiest address's
    /// oldest connection, so that a flood from elsewhere cannot keep the host out.
    pub fn max_connections(mut self, n: usize) -> Self {
        self.max_connections = n.max(1);
        self
    }

    /// How long a connection may last (default 600 s; a fill of 2^28 triples takes
    /// about a second).
    pub fn session_timeout(mut self, d: Duration) -> Self {
        self.session_timeout = d;
        self
    }

    /// One line per refused, evicted, failed or timed-out connection.
    pub fn on_event(mut self, f: impl Fn(String) + Send + Sync + 'static) -> Self {
        self.events = Arc::new(f);
        self
    }

    /// Binds the listener (a connection that has not finished its handshake in 5 s
    /// is closed).
    pub async fn bind(self) -> Result<BoundToken<E>, Error> {
        let limits = ServeLimits::new(self.max_connections, self.session_timeout);
        let server = TokenServer::new(self.card, limits)?;
        let cfg = NetConfig {
            connect_timeout: self.handshake_timeout,
            ..NetConfig::default()
        };
        let l = FramedListener::bind(self.listen.as_str(), &cfg)
            .await
            .map_err(|err| Error::Connect {
                what: format!("listening on {}", self.listen),
                err,
            })?;
        let addr = l.local_addr()?;
        Ok(BoundToken {
            server,
            listener: l,
            addr,
            connections: self.connections,
            events: self.events,
        })
    }
}

/// A token server with its listener bound.
pub struct BoundToken<E: Eeprom> {
    server: TokenServer<E>,
    listener: FramedListener,
    addr: SocketAddr,
    connections: Option<u64>,
    events: Arc<dyn Fn(String) + Send + Sync>,
}

impl<E: Eeprom> std::fmt::Debug for BoundToken<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BoundToken")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl<E: Eeprom + Send + 'static> BoundToken<E> {
    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The fingerprint of the token's link key (the host pins it).
    pub fn link_fingerprint(&self) -> [u8; 32] {
        self.server.link_fingerprint()
    }

    /// The card (its state, for tests and tools).
    pub fn card(&self) -> Arc<std::sync::Mutex<Card<E>>> {
        self.server.card()
    }

    /// Serves until the configured number of connections was admitted (for ever
    /// without one), then waits for them to end.
    pub async fn serve(self) -> Result<(), Error> {
        let events = self.events.clone();
        self.server
            .serve(self.listener, self.connections, move |line| events(line))
            .await
    }
}

/// The card of a sealed state file (`tacit mpc token init` writes one): opened with
/// `seal_key`, checked against the rollback guard at `guard`.
pub fn open_card(state: &Path, seal_key: SealKey, guard: &Path) -> Result<Card<FileEeprom>, Error> {
    let mut eeprom = FileEeprom::new(state, seal_key, guard);
    let st = eeprom.load()?;
    Card::new(st, eeprom)
}

/// Party a's link to its token: TLS 1.3 with the paired host's key, the token's link
/// key checked as `access` says; reads the token's certificate and opens the pool.
pub async fn connect(access: &TokenAccess) -> Result<TokenHolder<TcpTokenLink>, Error> {
    let addr = access.addr.as_str();
    let net = NetConfig::default().speaking(Protocol::MpcToken);
    let conn = FramedConn::connect_tls(addr, &net, access.tls.clone(), LINK_NAME)
        .await
        .map_err(|err| Error::Connect {
            what: format!(
                "connecting to the token at {addr} (is this store's key the one the token was paired with? `tacit mpc token host-key`)"
            ),
            err,
        })?;
    if let Some(hook) = &access.hook {
        hook(conn.peer_certificate()).map_err(Error::Caller)?;
    }
    let pool = match &access.pool {
        Some(p) => Pool::open(p)?,
        None => Pool::in_memory(),
    };
    TokenHolder::new(TcpTokenLink::new(conn), pool).await
}

/// The init phase: has the token generate sequences covering `n` triples into the
/// holder's pool, reporting `(bytes of c_A done, bytes in all)`.
pub async fn fill(
    holder: &mut TokenHolder<TcpTokenLink>,
    n: usize,
    mut progress: impl FnMut(u64, u64) + Send,
) -> Result<(), Error> {
    holder.fill(n, &mut progress).await?;
    Ok(())
}
