//! Servers and clients of PROS as a library: what `tacit pros psi|reconcile` and
//! `tacit schedule` run, configured by builders, over the project's channel
//! ([`tacit_net::channel`]: TLS 1.3 with self-signed keys, both ways).
//!
//! * A server ([`ServerBuilder`], made by [`crate::reconcile::serve`],
//!   [`crate::psi::serve`] or [`crate::schedule::Server::builder`]) presents this
//!   store's `pros-tls-identity` key, requires a key from every client (any key, or
//!   one of [`ServerBuilder::allow`]), and keeps its ring-Pedersen parameters in the
//!   store (made on first use, [`make_ring_pedersen`]). Sessions run concurrently up
//!   to [`ServerBuilder::max_clients`], each under a deadline and a per-message
//!   timeout ([`crate::service`]); peer keys below
//!   [`crate::facproof::MIN_PEER_KEY_BITS`] are refused unless
//!   [`ServerBuilder::insecure_small_keys`] is called by name.
//! * A client ([`ClientBuilder`], made by [`crate::reconcile::connect`],
//!   [`crate::psi::query`] or [`crate::schedule::connect_to`]) pins the server's key
//!   ([`ClientBuilder::pin`]) or records it on first use in the store (the default),
//!   presents its own key, makes its Paillier key while the connection opens, and
//!   sends keep-alives while it computes.
//! * Plain TCP only through the explicitly named `insecure_plain_tcp` on both sides.
//!
//! Progress is reported through a callback ([`crate::net::Step`]); nothing here
//! prints.

use crate::facproof::{MIN_PEER_KEY_BITS, RingPedersen};
use crate::net::{ProgressHook, Step};
use crate::paillier::{DEFAULT_KEY_BITS, MAX_KEY_BITS, PrivateKey, RnPool};
use crate::service::{Event, ServiceConfig};
use rand_chacha::ChaCha20Rng;
use rand_core::{OsRng, SeedableRng};
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tacit_net::channel::{Trust, hex, pinned_any_with, tls_identity};
use tacit_net::tls::ServerConfig;
use tacit_net::{FramedConn, FramedListener, NetConfig, Protocol};
use tacit_store::Store;

/// The store purpose of the pros TLS key (server and client).
pub const TLS_PURPOSE: &str = "pros-tls-identity";
/// The TLS server name of a pros service (certificates are pinned, not named).
pub const TLS_NAME: &str = "tacit-pros.invalid";
/// Store purpose of the serving side's ring-Pedersen parameters (Π^fac's verifier
/// parameters: `N̂` of two safe primes, `s`, `t`, `λ`, Π^prm).
pub const RING_PEDERSEN_PURPOSE: &str = "pros-ring-pedersen";

/// The store's name for the key recorded on first use for the server at `addr`.
pub fn known_name(addr: &str) -> String {
    format!("pros/{addr}")
}

/// Why a PROS server or client failed. The messages are the ones `tacit` prints.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The protocol engines refused (a peer's deviation, a bound, bad input).
    #[error(transparent)]
    Pros(#[from] crate::Error),
    /// The channel could not be set up.
    #[error(transparent)]
    Channel(#[from] tacit_net::channel::Error),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] tacit_store::Error),
    /// A network error.
    #[error(transparent)]
    Net(#[from] tacit_net::Error),
    /// A TLS configuration could not be made.
    #[error(transparent)]
    Tls(#[from] tacit_net::tls::TlsConfigError),
    /// The stored ring-Pedersen parameters do not load.
    #[error("the stored {RING_PEDERSEN_PURPOSE} parameters are corrupt")]
    CorruptRingPedersen(#[source] crate::Error),
    /// The listening address could not be bound.
    #[error("cannot listen on {addr}")]
    Listen {
        /// The address.
        addr: String,
        /// Why.
        #[source]
        source: tacit_net::Error,
    },
    /// Connecting failed (not in the TLS handshake).
    #[error("cannot connect to {addr}")]
    Connect {
        /// The address.
        addr: String,
        /// Why.
        #[source]
        source: tacit_net::Error,
    },
    /// The TLS handshake failed against the key recorded on first use.
    #[error(
        "cannot connect to {addr}: {why} — if the server's key differs from the one recorded on first use \
         and it changed its key on purpose, run `tacit pros forget --connect {addr}`"
    )]
    RecordedKeyRefused {
        /// The address.
        addr: String,
        /// The handshake's error.
        why: String,
    },
    /// The TLS handshake failed against a pinned key.
    #[error("cannot connect to {addr}: {why}")]
    PinnedKeyRefused {
        /// The address.
        addr: String,
        /// The handshake's error.
        why: String,
    },
    /// The TLS handshake failed on first use.
    #[error("cannot connect to {addr}: {why} (does the server run --plain-tcp, or refuse our key?)")]
    HandshakeFailed {
        /// The address.
        addr: String,
        /// The handshake's error.
        why: String,
    },
    /// A session failed; `what` names it (`reconciliation with HOST:PORT`).
    #[error("{what}")]
    Session {
        /// The session.
        what: String,
        /// Why.
        #[source]
        source: crate::Error,
    },
    /// A setting of the builder is out of range or contradicts another.
    #[error("{0}")]
    Config(String),
}

/// Result alias of this module.
pub type Result<T, E = Error> = core::result::Result<T, E>;

fn os_rng() -> Result<ChaCha20Rng> {
    ChaCha20Rng::from_rng(OsRng).map_err(|e| Error::Config(format!("the operating system's RNG failed: {e}")))
}

/// A generator seeded from the operating system, for one session.
pub(crate) fn session_rng() -> crate::Result<ChaCha20Rng> {
    ChaCha20Rng::from_rng(OsRng).map_err(|e| crate::Error::Backend(format!("the operating system's RNG failed: {e}")))
}

fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// The ring-Pedersen parameters kept in `store`, if it has any.
pub fn stored_ring_pedersen(store: &Store) -> Result<Option<Arc<RingPedersen>>> {
    let Some(k) = store.current_key(RING_PEDERSEN_PURPOSE)? else {
        return Ok(None);
    };
    let rp = RingPedersen::from_secret_bytes(&k.secret).map_err(Error::CorruptRingPedersen)?;
    Ok(Some(Arc::new(rp)))
}

/// Makes ring-Pedersen parameters of `bits` (two safe primes of `bits / 2`: seconds
/// to a minute at 3072) and keeps them in `store`, so that every later session and
/// restart reuses them.
pub fn make_ring_pedersen(store: &mut Store, bits: u32) -> Result<Arc<RingPedersen>> {
    let rp = RingPedersen::generate(bits, &mut os_rng()?)?;
    store.put_key(
        RING_PEDERSEN_PURPOSE,
        1,
        &zeroize::Zeroizing::new(rp.to_secret_bytes()),
        now_unix(),
    )?;
    Ok(Arc::new(rp))
}

/// This store's pros TLS key (made on first use).
pub fn identity(store: &mut Store) -> Result<tacit_net::tls::SelfSigned> {
    Ok(tls_identity(store, TLS_PURPOSE, TLS_NAME)?)
}

/// The server's TLS configuration: this store's key, requiring a client key that is
/// one of `allow` (any key when empty). Returns it with the server key's
/// fingerprint.
pub fn server_tls(store: &mut Store, allow: &[[u8; 32]]) -> Result<(Arc<ServerConfig>, [u8; 32])> {
    let id = identity(store)?;
    let fp = id.fingerprint()?;
    let check = if allow.is_empty() {
        tacit_net::tls::any_key()
    } else {
        pinned_any_with(allow.to_vec(), "the client key", "is not one of the --allow keys")
    };
    Ok((id.server_config_checking_clients(check)?, fp))
}

/// How a client trusts the server's key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerTrust {
    /// Record the key on first use in the store, require it later (the default).
    FirstUse,
    /// Exactly this key (SHA-256 of its SubjectPublicKeyInfo).
    Pinned([u8; 32]),
    /// Plain TCP: nothing authenticated or encrypted (measurements only).
    InsecurePlainTcp,
}

/// A connection as [`connect_channel`] opened it.
#[derive(Debug)]
pub struct Connected {
    /// The connection (greetings exchanged).
    pub conn: FramedConn,
    /// The server key's fingerprint (`None` on plain TCP).
    pub server_key: Option<[u8; 32]>,
    /// The key recorded now, on first use.
    pub recorded: Option<[u8; 32]>,
}

/// Opens a connection to `addr` as `trust` says: TLS with this store's key, the
/// server's key pinned or recorded on first use (under [`known_name`]), or plain
/// TCP. The greetings of `protocol` are exchanged and checked before this returns, so
/// a wrong server is named at once, before any long computation.
pub async fn connect_channel(
    mut store: Store,
    trust: ServerTrust,
    addr: &str,
    net: &NetConfig,
    protocol: Protocol,
) -> Result<Connected> {
    let net = net.speaking(protocol);
    let pin = match trust {
        ServerTrust::InsecurePlainTcp => {
            let conn = FramedConn::connect(addr, &net).await.map_err(|source| Error::Connect {
                addr: addr.to_string(),
                source,
            })?;
            return Ok(Connected {
                conn,
                server_key: None,
                recorded: None,
            });
        }
        ServerTrust::Pinned(p) => Some(p),
        ServerTrust::FirstUse => None,
    };
    let id = identity(&mut store)?;
    let mut trust = match pin {
        Some(p) => Trust::Pinned(p),
        None => Trust::FirstUse {
            store,
            name: known_name(addr),
        },
    };
    let recorded = trust.recorded()?;
    let Some(check) = trust.check()? else {
        return Err(Error::Config("internal: no certificate check for TLS".into()));
    };
    let client = id.client_config_checking_server(check)?;
    let conn = match FramedConn::connect_tls(addr, &net, client, TLS_NAME).await {
        Ok(c) => c,
        Err(e @ tacit_net::Error::Tls(_)) => {
            let (addr, why) = (addr.to_string(), e.to_string());
            return Err(if recorded.is_some() && pin.is_none() {
                Error::RecordedKeyRefused { addr, why }
            } else if pin.is_some() {
                Error::PinnedKeyRefused { addr, why }
            } else {
                Error::HandshakeFailed { addr, why }
            });
        }
        Err(source) => {
            return Err(Error::Connect {
                addr: addr.to_string(),
                source,
            });
        }
    };
    let server_key = conn
        .peer_certificate()
        .map(tacit_net::tls::spki_fingerprint)
        .transpose()?;
    let recorded = trust.record(conn.peer_certificate())?;
    Ok(Connected {
        conn,
        server_key,
        recorded,
    })
}

/// Generates a key, its modulus proof and a pool of `pool` precomputed rⁿ (on all
/// cores).
pub fn key_and_pool(bits: u32, pool: usize) -> Result<(PrivateKey, Arc<RnPool>)> {
    let key = PrivateKey::generate(bits)?;
    let p = Arc::new(RnPool::new(key.public())?);
    let mut rng = os_rng()?;
    let (proof, filled) = rayon::join(|| key.modulus_proof(), || p.fill(key.public(), pool, &mut rng));
    proof?;
    filled?;
    Ok((key, p))
}

/// What a server's sessions need to know about peer keys.
#[derive(Debug, Clone)]
pub struct KeyPolicy {
    /// Smallest peer key, in bits.
    pub min_key_bits: u32,
    /// Largest peer key, in bits.
    pub max_key_bits: u32,
    /// Peer keys below [`MIN_PEER_KEY_BITS`] accepted (only by
    /// [`ServerBuilder::insecure_small_keys`]).
    pub insecure_small_keys: bool,
    /// The server's ring-Pedersen parameters.
    pub ring_pedersen: Arc<RingPedersen>,
}

/// A boxed session future.
pub type SessionFuture<T> = Pin<Box<dyn Future<Output = crate::Result<T>> + Send>>;

/// One protocol a server runs ([`crate::reconcile::Service`], [`crate::psi::Service`],
/// [`crate::schedule::Service`]).
pub trait Service: Send + Sync + 'static {
    /// What a session yields.
    type Output: Send + 'static;
    /// The greeting's protocol.
    const PROTOCOL: Protocol;
    /// Checks the service against the key policy before the server binds, and
    /// returns the largest first message a client may send.
    fn prepare(&mut self, policy: &KeyPolicy) -> Result<usize>;
    /// Runs one session on an open connection.
    fn session(self: Arc<Self>, conn: FramedConn) -> SessionFuture<Self::Output>;
}

/// Makes the progress hook of a session from its peer's address.
pub type SessionProgress = Arc<dyn Fn(Option<SocketAddr>) -> ProgressHook + Send + Sync>;

/// Configures a PROS server: safe defaults (TLS, any client key, 4 clients at once,
/// 600 s per session, 60 s per message, peer keys of 2048 bits and more).
pub struct ServerBuilder<S: Service> {
    service: S,
    store: Store,
    allow: Vec<[u8; 32]>,
    plain_tcp: bool,
    max_clients: usize,
    deadline: Duration,
    timeout: Duration,
    ring_bits: u32,
    ring_pedersen: Option<Arc<RingPedersen>>,
    min_key_bits: u32,
    insecure_small_keys: bool,
    sessions: Option<u64>,
    progress: Option<SessionProgress>,
}

impl<S: Service> core::fmt::Debug for ServerBuilder<S> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ServerBuilder")
            .field("allow", &self.allow.iter().map(hex).collect::<Vec<_>>())
            .field("plain_tcp", &self.plain_tcp)
            .field("max_clients", &self.max_clients)
            .field("deadline", &self.deadline)
            .field("timeout", &self.timeout)
            .field("min_key_bits", &self.min_key_bits)
            .field("insecure_small_keys", &self.insecure_small_keys)
            .field("sessions", &self.sessions)
            .finish_non_exhaustive()
    }
}

impl<S: Service> ServerBuilder<S> {
    /// A server of `service` keeping its keys in `store`.
    pub fn new(store: Store, service: S) -> Self {
        ServerBuilder {
            service,
            store,
            allow: Vec::new(),
            plain_tcp: false,
            max_clients: 4,
            deadline: Duration::from_secs(600),
            timeout: Duration::from_secs(60),
            ring_bits: crate::facproof::DEFAULT_RING_BITS,
            ring_pedersen: None,
            min_key_bits: 2048,
            insecure_small_keys: false,
            sessions: None,
            progress: None,
        }
    }

    /// Changes the service's own settings (for the protocol modules' builder methods).
    pub(crate) fn map_service(mut self, f: impl FnOnce(&mut S)) -> Self {
        f(&mut self.service);
        self
    }

    /// Admits a client whose key has this fingerprint (repeatable; without any, every
    /// client key is admitted and reported with its session).
    pub fn allow(mut self, fingerprint: [u8; 32]) -> Self {
        self.allow.push(fingerprint);
        self
    }

    /// **Insecure**: plain TCP, nothing authenticated or encrypted (for measurements
    /// only; clients must ask for it too).
    pub fn insecure_plain_tcp(mut self) -> Self {
        self.plain_tcp = true;
        self
    }

    /// Most sessions in progress (and computing) at once, 1 to 1024 (default 4);
    /// further clients are refused at once.
    pub fn max_clients(mut self, n: usize) -> Self {
        self.max_clients = n;
        self
    }

    /// How long a whole session may take (default 600 s).
    pub fn deadline(mut self, d: Duration) -> Self {
        self.deadline = d;
        self
    }

    /// How long to wait for each message from a client (default 60 s).
    pub fn timeout(mut self, d: Duration) -> Self {
        self.timeout = d;
        self
    }

    /// Size of the ring-Pedersen modulus made when the store has none (default 3072).
    pub fn ring_bits(mut self, bits: u32) -> Self {
        self.ring_bits = bits;
        self
    }

    /// These ring-Pedersen parameters instead of the store's.
    pub fn ring_pedersen(mut self, rp: Arc<RingPedersen>) -> Self {
        self.ring_pedersen = Some(rp);
        self
    }

    /// Smallest peer key accepted, in bits (default 2048; at least
    /// [`MIN_PEER_KEY_BITS`] unless [`Self::insecure_small_keys`]).
    pub fn min_key_bits(mut self, bits: u32) -> Self {
        self.min_key_bits = bits;
        self
    }

    /// **Insecure**: accept peer keys below [`MIN_PEER_KEY_BITS`] (down to
    /// [`Self::min_key_bits`]), whose factors the no-small-factor proof does not
    /// bound: such a peer tests many candidates per comparison. For reproducing the
    /// paper's tables only.
    pub fn insecure_small_keys(mut self) -> Self {
        self.insecure_small_keys = true;
        self
    }

    /// Stop after this many sessions were accepted (0: return once bound; default:
    /// serve forever).
    pub fn sessions(mut self, n: u64) -> Self {
        self.sessions = Some(n);
        self
    }

    /// Reports each session's progress to the hook this makes from the peer's address.
    pub fn progress(mut self, f: impl Fn(Option<SocketAddr>) -> ProgressHook + Send + Sync + 'static) -> Self {
        self.progress = Some(Arc::new(f));
        self
    }

    /// Checks the settings, loads or makes the ring-Pedersen parameters and the TLS
    /// key, and binds `addr`.
    pub async fn bind(mut self, addr: &str) -> Result<Server<S>> {
        if !(1..=1024).contains(&self.max_clients) {
            return Err(Error::Config("max_clients must be from 1 to 1024".into()));
        }
        for (what, d) in [("deadline", self.deadline), ("timeout", self.timeout)] {
            if d.is_zero() || d > Duration::from_secs(86_400) {
                return Err(Error::Config(format!("the {what} must be between 0 and 86400 seconds")));
            }
        }
        if self.min_key_bits < MIN_PEER_KEY_BITS && !self.insecure_small_keys {
            return Err(Error::Config(format!(
                "min_key_bits {} is below {MIN_PEER_KEY_BITS} bits, the smallest key whose factors the \
                 no-small-factor proof bounds; call insecure_small_keys to accept smaller keys",
                self.min_key_bits
            )));
        }
        if self.plain_tcp && !self.allow.is_empty() {
            return Err(Error::Config("--allow needs TLS; it cannot go with --plain-tcp".into()));
        }
        let ring_pedersen = match self.ring_pedersen.take() {
            Some(rp) => rp,
            None => match stored_ring_pedersen(&self.store)? {
                Some(rp) => rp,
                None => make_ring_pedersen(&mut self.store, self.ring_bits)?,
            },
        };
        let policy = KeyPolicy {
            min_key_bits: self.min_key_bits,
            max_key_bits: MAX_KEY_BITS,
            insecure_small_keys: self.insecure_small_keys,
            ring_pedersen,
        };
        let first_frame = self.service.prepare(&policy)?;
        let net = NetConfig {
            max_frame: first_frame,
            read_timeout: self.timeout,
            deadline: Some(self.deadline),
            ..NetConfig::default().speaking(S::PROTOCOL)
        };
        let (tls, fingerprint) = if self.plain_tcp {
            (None, None)
        } else {
            let (cfg, fp) = server_tls(&mut self.store, &self.allow)?;
            (Some(cfg), Some(fp))
        };
        let listener = FramedListener::bind(addr, &net).await.map_err(|source| Error::Listen {
            addr: addr.to_string(),
            source,
        })?;
        Ok(Server {
            listener,
            cfg: ServiceConfig {
                max_clients: self.max_clients,
                net,
                tls,
            },
            service: Arc::new(self.service),
            fingerprint,
            allowed: self.allow.len(),
            sessions: self.sessions,
            progress: self.progress,
        })
    }
}

/// A bound PROS server ([`ServerBuilder::bind`]).
pub struct Server<S: Service> {
    listener: FramedListener,
    cfg: ServiceConfig,
    service: Arc<S>,
    fingerprint: Option<[u8; 32]>,
    allowed: usize,
    sessions: Option<u64>,
    progress: Option<SessionProgress>,
}

impl<S: Service> core::fmt::Debug for Server<S> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Server")
            .field("cfg", &self.cfg)
            .field("fingerprint", &self.fingerprint.as_ref().map(hex))
            .finish_non_exhaustive()
    }
}

impl<S: Service> Server<S> {
    /// The address it listens on.
    pub fn local_addr(&self) -> Result<SocketAddr> {
        Ok(self.listener.local_addr()?)
    }

    /// The server key's fingerprint, for clients to pin (`None` on plain TCP).
    pub fn fingerprint(&self) -> Option<[u8; 32]> {
        self.fingerprint
    }

    /// How many client keys are admitted (0: any).
    pub fn allowed_keys(&self) -> usize {
        self.allowed
    }

    /// The service it runs.
    pub fn service(&self) -> &S {
        &self.service
    }

    /// Serves until the configured number of sessions was accepted (or forever),
    /// reporting each session's end (and each refused client) to `events`.
    pub async fn serve(self, events: impl Fn(Event<S::Output>) + Send + Sync + 'static) -> Result<()> {
        let (service, progress) = (self.service, self.progress);
        let handler = move |conn: FramedConn| {
            let service = service.clone();
            let hook = progress.as_ref().map(|p| p(conn.peer_addr().ok()));
            async move {
                match hook {
                    Some(h) => crate::net::with_progress(h, service.session(conn)).await,
                    None => service.session(conn).await,
                }
            }
        };
        crate::service::serve(self.listener, self.cfg, self.sessions, handler, Arc::new(events)).await?;
        Ok(())
    }
}

/// One protocol a client runs ([`crate::reconcile::Reconcile`], [`crate::psi::Query`],
/// [`crate::schedule::Schedule`]).
pub trait Session: Send + 'static {
    /// What the session yields.
    type Output: Send + 'static;
    /// The greeting's protocol.
    const PROTOCOL: Protocol;
    /// How many `rⁿ` to precompute with the key.
    fn pool_size(&self) -> usize;
    /// Checks the settings before connecting.
    fn check(&self) -> Result<()> {
        Ok(())
    }
    /// Names a failed session with the server at `addr` (`reconciliation with …`).
    fn describe(&self, addr: &str) -> String;
    /// Runs the session on an open connection.
    fn run(
        self,
        conn: FramedConn,
        key: PrivateKey,
        pool: Arc<RnPool>,
        rng: ChaCha20Rng,
    ) -> Pin<Box<dyn Future<Output = crate::Result<Self::Output>> + Send>>;
}

/// What a client session yields.
#[derive(Debug, Clone)]
pub struct Outcome<T> {
    /// The protocol's result.
    pub result: T,
    /// The server key's fingerprint (`None` on plain TCP).
    pub server_key: Option<[u8; 32]>,
}

/// Called once a client's channel is open ([`ClientBuilder::on_connected`]).
pub type OnConnected = Box<dyn FnOnce(&Connected) + Send>;

/// Configures a PROS client: safe defaults (TLS, the server's key recorded on first
/// use, a 3072-bit key, 600 s per message, 7200 s per session).
pub struct ClientBuilder<C: Session> {
    session: C,
    store: Store,
    trust: ServerTrust,
    timeout: Duration,
    deadline: Duration,
    key_bits: u32,
    insecure_small_keys: bool,
    key: Option<(PrivateKey, Arc<RnPool>)>,
    progress: Option<ProgressHook>,
    on_connected: Option<OnConnected>,
}

impl<C: Session> core::fmt::Debug for ClientBuilder<C> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("trust", &self.trust)
            .field("timeout", &self.timeout)
            .field("deadline", &self.deadline)
            .field("key_bits", &self.key_bits)
            .field("insecure_small_keys", &self.insecure_small_keys)
            .finish_non_exhaustive()
    }
}

impl<C: Session> ClientBuilder<C> {
    /// A client of `session` keeping its keys in `store`.
    pub fn new(store: Store, session: C) -> Self {
        ClientBuilder {
            session,
            store,
            trust: ServerTrust::FirstUse,
            timeout: Duration::from_secs(600),
            deadline: Duration::from_secs(7200),
            key_bits: DEFAULT_KEY_BITS,
            insecure_small_keys: false,
            key: None,
            progress: None,
            on_connected: None,
        }
    }

    /// Changes the session's own settings (for the protocol modules' builder methods).
    pub(crate) fn map_session(mut self, f: impl FnOnce(&mut C)) -> Self {
        f(&mut self.session);
        self
    }

    /// Accept only the server key with this fingerprint (default: record it on first
    /// use and require it later).
    pub fn pin(mut self, fingerprint: [u8; 32]) -> Self {
        self.trust = ServerTrust::Pinned(fingerprint);
        self
    }

    /// **Insecure**: plain TCP, nothing authenticated or encrypted (for measurements
    /// only; the server must ask for it too).
    pub fn insecure_plain_tcp(mut self) -> Self {
        self.trust = ServerTrust::InsecurePlainTcp;
        self
    }

    /// How long to wait for each message from the server (default 600 s).
    pub fn timeout(mut self, d: Duration) -> Self {
        self.timeout = d;
        self
    }

    /// How long the whole session may take (default 7200 s).
    pub fn deadline(mut self, d: Duration) -> Self {
        self.deadline = d;
        self
    }

    /// The size of the Paillier key made for the session (default 3072; at least
    /// [`MIN_PEER_KEY_BITS`] unless [`Self::insecure_small_keys`]).
    pub fn key_bits(mut self, bits: u32) -> Self {
        self.key_bits = bits;
        self
    }

    /// **Insecure**: allow a key below [`MIN_PEER_KEY_BITS`] (servers refuse it
    /// unless they opted in too). For reproducing the paper's tables only.
    pub fn insecure_small_keys(mut self) -> Self {
        self.insecure_small_keys = true;
        self
    }

    /// Use this key and pool of `rⁿ` instead of making one (the pool is refilled as
    /// needed).
    pub fn key(mut self, key: PrivateKey, pool: Arc<RnPool>) -> Self {
        self.key = Some((key, pool));
        self
    }

    /// Reports the session's progress to `hook`.
    pub fn progress(mut self, hook: impl Fn(Step) + Send + Sync + 'static) -> Self {
        self.progress = Some(Arc::new(hook));
        self
    }

    /// Called once the channel is open, before the protocol runs (e.g. to say that
    /// the server's key was recorded on first use).
    pub fn on_connected(mut self, f: impl FnOnce(&Connected) + Send + 'static) -> Self {
        self.on_connected = Some(Box::new(f));
        self
    }

    /// Connects to `addr` and runs the session; the key is made while the connection
    /// opens, so a wrong server is named within a round trip.
    pub async fn run(self, addr: &str) -> Result<Outcome<C::Output>> {
        let bits = match &self.key {
            Some((k, _)) => k.public().bits(),
            None => self.key_bits,
        };
        if bits < MIN_PEER_KEY_BITS && !self.insecure_small_keys {
            return Err(Error::Config(format!(
                "key_bits {bits} is below {MIN_PEER_KEY_BITS} bits, the smallest key whose factors the \
                 no-small-factor proof bounds (servers refuse it); call insecure_small_keys on both sides"
            )));
        }
        if bits > MAX_KEY_BITS {
            return Err(Error::Config(format!(
                "key_bits {bits}: the largest supported modulus is {MAX_KEY_BITS} bits"
            )));
        }
        self.session.check()?;
        let net = NetConfig {
            read_timeout: self.timeout,
            deadline: Some(self.deadline),
            ..NetConfig::default()
        };
        let pool_size = self.session.pool_size();
        let key = async {
            match self.key {
                Some(k) => Ok(k),
                None => tokio::task::spawn_blocking(move || key_and_pool(bits, pool_size))
                    .await
                    .map_err(|_| Error::Config("the key generation task failed".into()))?,
            }
        };
        let (connected, (key, pool)) =
            tokio::try_join!(connect_channel(self.store, self.trust, addr, &net, C::PROTOCOL), key)?;
        if let Some(f) = self.on_connected {
            f(&connected);
        }
        let what = self.session.describe(addr);
        let server_key = connected.server_key;
        let run = self.session.run(connected.conn, key, pool, os_rng()?);
        let result = match self.progress {
            Some(h) => crate::net::with_progress(h, run).await,
            None => run.await,
        };
        let result = result.map_err(|source| Error::Session { what, source })?;
        Ok(Outcome { result, server_key })
    }
}
