//! The project's channel, shared by every two-party session (PSI, PROS, GMW, …): TLS
//! 1.3 (rustls) with self-signed Ed25519 keys that the other side pins or records on
//! first use (as SSH does), and the greeting of the session's [`Protocol`]. Keys live
//! in a [`tacit_store::Store`], one per purpose (`psi-tls-identity`, …); recorded
//! peer keys under a name per subsystem and address (`psi/HOST:PORT`, …). See
//! `docs/wire.md` ("The channel").
//!
//! * [`Trust`] — how a client decides whether to trust the server's key: pinned,
//!   first use (recorded in the store), or plain TCP (only when asked for by name);
//! * [`tls_identity`] — this store's TLS key for a purpose, made on first use;
//! * [`Channel`] / [`Acceptor`] — both sides of a mutually authenticated session,
//!   reporting what the peer proved as a [`PeerKey`].
//!
//! Why TLS and not Noise: rustls is already in the tree for PrivateDrop's mutual
//! TLS, its channel-binding exporter is what protocols bind their transcripts to,
//! and one TLS stack is less to audit than two.
//!
//! ```
//! use tacit_net::channel::{Channel, Trust};
//! use tacit_net::{NetConfig, Protocol};
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let server_store = tacit_store::Store::open_in_memory().unwrap();
//! let mut server = Channel::tls(server_store, "demo-tls", &[], "demo", "demo.invalid", Protocol::ProsReconcile).unwrap();
//! let client_store = tacit_store::Store::open_in_memory().unwrap();
//! let mut client = Channel::tls(client_store, "demo-tls", &[], "demo", "demo.invalid", Protocol::ProsReconcile).unwrap();
//! let listener = tacit_net::FramedListener::bind("127.0.0.1:0", &NetConfig::default()).await.unwrap();
//! let addr = listener.local_addr().unwrap().to_string();
//! let acceptor = server.acceptor().unwrap();
//! let srv = tokio::spawn(async move {
//!     let conn = listener.accept().await.unwrap();
//!     let (mut conn, peer) = acceptor.accept(conn).await.unwrap();
//!     conn.send(b"hello").await.unwrap();
//!     peer
//! });
//! // first use: the server's key is recorded in the client's store
//! let (mut conn, peer) = client.connect(&addr, &NetConfig::default()).await.unwrap();
//! assert_eq!(conn.recv().await.unwrap(), b"hello");
//! assert_eq!(peer.how, "recorded on first use");
//! assert_eq!(peer.fingerprint, server.fingerprint().unwrap());
//! assert_eq!(srv.await.unwrap().fingerprint, client.fingerprint().unwrap());
//! # });
//! ```

use crate::tls::{CertificateCheck, ClientConfig, SelfSigned, ServerConfig, TlsConfigError};
use crate::{FramedConn, NetConfig, Protocol};
use std::sync::Arc;
use tacit_store::Store;

/// Why a channel could not be set up. The messages are the ones `tacit` prints.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] tacit_store::Error),
    /// A network or greeting error (the greeting names what the peer is).
    #[error(transparent)]
    Net(#[from] crate::Error),
    /// A certificate or TLS configuration could not be made or read.
    #[error(transparent)]
    Tls(#[from] TlsConfigError),
    /// A stored record is malformed.
    #[error(transparent)]
    Wire(#[from] tacit_wire::Error),
    /// The stored TLS key of a purpose does not load.
    #[error("the stored {purpose} key is corrupt")]
    CorruptKey {
        /// The store purpose.
        purpose: String,
        /// Why.
        #[source]
        source: TlsConfigError,
    },
    /// TCP connect failed (plain TCP).
    #[error("cannot connect to {addr}")]
    Connect {
        /// Where to.
        addr: String,
        /// Why.
        #[source]
        source: crate::Error,
    },
    /// TCP connect or the TLS handshake failed.
    #[error("cannot connect to {addr} over TLS: {why} (a peer that runs with --plain-tcp needs --plain-tcp here too)")]
    ConnectTls {
        /// Where to.
        addr: String,
        /// Why (the network error's message).
        why: String,
    },
    /// A client was given more than one pinned key.
    #[error("--pin names the one party to connect to; it was given {0} times")]
    TooManyPins(usize),
    /// Trust on first use without a store.
    #[error("no store to record the peer's key in")]
    NoStore,
    /// TLS was asked for without a key check.
    #[error("no TLS configuration")]
    NoTlsConfiguration,
    /// The peer completed TLS without a certificate.
    #[error("the peer presented no key")]
    NoPeerKey,
    /// A channel without a TLS key of its own (plain TCP) that still pins keys or
    /// holds a store: its fields say TLS and its identity says plain TCP.
    #[error(
        "this channel pins keys or records them in a store but has no TLS key of its own, so it would run \
         over plain TCP; build it with Channel::tls (or Channel::insecure_plain_tcp for plain TCP)"
    )]
    PlainWithTrust,
    /// The server side of the handshake failed.
    #[error("TLS handshake with the peer (a peer that runs with --plain-tcp is refused)")]
    Handshake(#[source] crate::Error),
}

/// Result alias of this module.
pub type Result<T, E = Error> = core::result::Result<T, E>;

fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Lower-case hex of a fingerprint.
pub fn hex(fp: &[u8; 32]) -> String {
    fp.iter().map(|b| format!("{b:02x}")).collect()
}

/// How a client decides whether to trust the peer's key.
pub enum Trust {
    /// Plain TCP: nothing authenticated (only under an explicit flag).
    Plain,
    /// TLS, exactly this key (SHA-256 of its SubjectPublicKeyInfo).
    Pinned([u8; 32]),
    /// TLS, the key recorded the first time under `name` in this store; a later
    /// different key is refused.
    FirstUse {
        /// The store that keeps recorded keys.
        store: Store,
        /// The name the key is recorded under (`<subsystem>/<address>`).
        name: String,
    },
}

impl core::fmt::Debug for Trust {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Trust::Plain => f.write_str("Plain"),
            Trust::Pinned(fp) => write!(f, "Pinned({})", hex(fp)),
            Trust::FirstUse { name, .. } => f.debug_struct("FirstUse").field("name", name).finish_non_exhaustive(),
        }
    }
}

impl Trust {
    /// The key recorded on first use, if any.
    pub fn recorded(&self) -> Result<Option<[u8; 32]>> {
        match self {
            Trust::FirstUse { store, name } => Ok(store.known_peer(name)?),
            _ => Ok(None),
        }
    }

    /// The certificate check for the TLS handshake; `None` for plain TCP. On first
    /// use any key is accepted (the handshake still proves its holder is on the
    /// other end) and [`Trust::record`] keeps it.
    pub fn check(&self) -> Result<Option<CertificateCheck>> {
        Ok(match self {
            Trust::Plain => None,
            Trust::Pinned(fp) => Some(crate::tls::pinned(*fp)),
            Trust::FirstUse { .. } => Some(match self.recorded()? {
                Some(fp) => crate::tls::pinned(fp),
                None => crate::tls::any_key(),
            }),
        })
    }

    /// After a handshake: records the peer's key on first use and returns its
    /// fingerprint when it was recorded now.
    pub fn record(&mut self, peer_certificate: Option<&[u8]>) -> Result<Option<[u8; 32]>> {
        let recorded = self.recorded()?;
        if let (Trust::FirstUse { store, name }, None, Some(cert)) = (self, recorded, peer_certificate) {
            let fp = crate::tls::spki_fingerprint(cert)?;
            store.remember_peer(name, &fp, now_unix())?;
            return Ok(Some(fp));
        }
        Ok(None)
    }
}

/// This store's TLS identity for `purpose`, made and stored on first use; `name`
/// is the DNS name in a new certificate (certificates are pinned, not named).
pub fn tls_identity(st: &mut Store, purpose: &str, name: &str) -> Result<SelfSigned> {
    if let Some(k) = st.current_key(purpose)? {
        let mut r = tacit_wire::Reader::new(&k.secret);
        let cert = r.var_bytes("certificate", 1 << 16)?;
        let key = r.var_bytes("key", 1 << 16)?;
        r.finish()?;
        return SelfSigned::from_parts(cert, key).map_err(|source| Error::CorruptKey {
            purpose: purpose.to_string(),
            source,
        });
    }
    let id = SelfSigned::generate(name)?;
    let mut w = tacit_wire::Writer::new();
    w.put_var_bytes(id.cert_der());
    w.put_var_bytes(id.key_pkcs8_der());
    st.put_key(purpose, 1, &zeroize::Zeroizing::new(w.into_bytes()), now_unix())?;
    Ok(id)
}

/// A client configuration for `trust` (`None` for plain TCP), presenting `identity`
/// when given (mutual pinning).
pub fn client_config(trust: &Trust, identity: Option<&SelfSigned>) -> Result<Option<Arc<ClientConfig>>> {
    let Some(check) = trust.check()? else {
        return Ok(None);
    };
    Ok(Some(match identity {
        Some(id) => id.client_config_checking_server(check)?,
        None => crate::tls::checked_server_client(check)?,
    }))
}

/// A check that accepts a certificate whose key is one of `pins` (a server that
/// admits only the clients it knows); a refused key is named as `what` (`the peer's
/// key …`) followed by `refusal` (`is not one of the pinned keys`).
pub fn pinned_any_with(pins: Vec<[u8; 32]>, what: &'static str, refusal: &'static str) -> CertificateCheck {
    Arc::new(move |cert: &[u8]| {
        let got = crate::tls::spki_fingerprint(cert).map_err(|e| e.to_string())?;
        let mut hit = 0u8;
        for p in &pins {
            // Constant time per comparison; the pins are not secret, the loop is.
            hit |= got.iter().zip(p).fold(0u8, |acc, (x, y)| acc | (x ^ y)).eq(&0) as u8;
        }
        if hit == 1 {
            Ok(())
        } else {
            Err(format!("{what} {} {refusal}", hex(&got)))
        }
    })
}

/// A check that accepts a certificate whose key is one of `pins` (a server that
/// admits only the clients it knows).
pub fn pinned_any(pins: Vec<[u8; 32]>) -> CertificateCheck {
    pinned_any_with(pins, "the peer's key", "is not one of the pinned keys")
}

/// A store's TLS identity and how it checks peers, for one session between two
/// parties: TLS 1.3 by default ([`Channel::tls`]), plain TCP only when asked for by
/// name ([`Channel::insecure_plain_tcp`]). A channel filled in by hand with no
/// `identity` but pins or a store is refused by [`Channel::connect`] and
/// [`Channel::acceptor`] ([`Error::PlainWithTrust`]) rather than run in the clear.
pub struct Channel {
    /// This party's key (`None`: plain TCP).
    pub identity: Option<SelfSigned>,
    /// The pinned peer keys (connecting: at most one, the server's; listening: the
    /// clients admitted, any when empty).
    pub pins: Vec<[u8; 32]>,
    /// The store (trust on first use records keys in it).
    pub store: Option<Store>,
    /// The subsystem's prefix of recorded peer names (`mpc/HOST:PORT`).
    pub prefix: &'static str,
    /// The TLS server name (certificates are pinned, not named).
    pub tls_name: &'static str,
    /// The protocol both sides greet with (`docs/wire.md`, "The greeting").
    pub protocol: Protocol,
}

impl core::fmt::Debug for Channel {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Channel")
            .field("tls", &self.identity.is_some())
            .field("pins", &self.pins.iter().map(hex).collect::<Vec<_>>())
            .field("prefix", &self.prefix)
            .field("protocol", &self.protocol)
            .finish_non_exhaustive()
    }
}

/// What a connection's peer proved.
#[derive(Debug, Clone, Copy)]
pub struct PeerKey {
    /// The peer's key fingerprint (`None` on plain TCP).
    pub fingerprint: Option<[u8; 32]>,
    /// How the key was accepted: `pinned`, `recorded on first use`, `as recorded
    /// before`, `any key admitted` (a listener without pins), `plain`.
    pub how: &'static str,
}

impl PeerKey {
    /// One line for standard error.
    pub fn describe(&self) -> String {
        match self.fingerprint {
            None => "plain TCP: the peer is not authenticated and the traffic is not encrypted".into(),
            Some(fp) => format!("TLS 1.3; the peer's key {} ({})", hex(&fp), self.how),
        }
    }
}

impl Channel {
    /// TLS with this store's key for `purpose` (made on first use), checking peers
    /// against `pins` (none: connecting records the server's key on first use under
    /// `<prefix>/<address>`; listening admits any client key).
    pub fn tls(
        mut store: Store,
        purpose: &str,
        pins: &[[u8; 32]],
        prefix: &'static str,
        tls_name: &'static str,
        protocol: Protocol,
    ) -> Result<Self> {
        let identity = tls_identity(&mut store, purpose, tls_name)?;
        Ok(Channel {
            identity: Some(identity),
            pins: pins.to_vec(),
            store: Some(store),
            prefix,
            tls_name,
            protocol,
        })
    }

    /// Plain TCP: nothing authenticated or encrypted (for latency measurements only;
    /// both parties must ask for it).
    pub fn insecure_plain_tcp(prefix: &'static str, tls_name: &'static str, protocol: Protocol) -> Self {
        Channel {
            identity: None,
            pins: Vec::new(),
            store: None,
            prefix,
            tls_name,
            protocol,
        }
    }

    /// This party's key fingerprint (TLS).
    pub fn fingerprint(&self) -> Result<Option<[u8; 32]>> {
        Ok(match &self.identity {
            Some(id) => Some(id.fingerprint()?),
            None => None,
        })
    }

    /// The server configuration (mutual TLS: the client presents a key that is one of
    /// the pins, or any key without pins); `None` for plain TCP.
    pub fn server_config(&self) -> Result<Option<Arc<ServerConfig>>> {
        let Some(id) = &self.identity else {
            return Ok(None);
        };
        let check = if self.pins.is_empty() {
            crate::tls::any_key()
        } else {
            pinned_any(self.pins.clone())
        };
        Ok(Some(id.server_config_checking_clients(check)?))
    }

    /// `Err(Error::PlainWithTrust)` for a plain channel that pins keys or holds a
    /// store (only [`Channel::insecure_plain_tcp`] makes a consistent plain one).
    fn consistent(&self) -> Result<()> {
        if self.identity.is_none() && (!self.pins.is_empty() || self.store.is_some()) {
            return Err(Error::PlainWithTrust);
        }
        Ok(())
    }

    /// The server side of this channel (shareable between tasks).
    pub fn acceptor(&self) -> Result<Acceptor> {
        self.consistent()?;
        Ok(Acceptor {
            server: self.server_config()?,
            pinned: !self.pins.is_empty(),
            protocol: self.protocol,
        })
    }

    /// Connects to `addr`: TLS with this party's key, the server's key pinned or
    /// recorded on first use under `<prefix>/<addr>`; plain TCP for a plain channel.
    /// The greetings are exchanged and checked before this returns.
    pub async fn connect(&mut self, addr: &str, cfg: &NetConfig) -> Result<(FramedConn, PeerKey)> {
        self.consistent()?;
        let cfg = &cfg.speaking(self.protocol);
        let Some(id) = &self.identity else {
            let conn = FramedConn::connect(addr, cfg).await.map_err(|source| Error::Connect {
                addr: addr.to_string(),
                source,
            })?;
            return Ok((
                conn,
                PeerKey {
                    fingerprint: None,
                    how: "plain",
                },
            ));
        };
        if self.pins.len() > 1 {
            return Err(Error::TooManyPins(self.pins.len()));
        }
        let name = format!("{}/{addr}", self.prefix);
        let mut trust = match (self.pins.first(), self.store.take()) {
            (Some(&p), st) => {
                self.store = st;
                Trust::Pinned(p)
            }
            (None, Some(store)) => Trust::FirstUse { store, name },
            (None, None) => return Err(Error::NoStore),
        };
        let client = match client_config(&trust, Some(id)) {
            Ok(Some(c)) => Ok(c),
            Ok(None) => Err(Error::NoTlsConfiguration),
            Err(e) => Err(e),
        };
        let conn = match client {
            Ok(client) => FramedConn::connect_tls(addr, cfg, client, self.tls_name)
                .await
                .map_err(|e| match e {
                    // The greeting named what the peer is: that line alone.
                    e @ crate::Error::Greeting(_) => Error::Net(e),
                    e => Error::ConnectTls {
                        addr: addr.to_string(),
                        why: e.to_string(),
                    },
                }),
            Err(e) => Err(e),
        };
        let known = trust.recorded();
        let recorded = match &conn {
            Ok(c) => trust.record(c.peer_certificate()),
            Err(_) => Ok(None),
        };
        if let Trust::FirstUse { store, .. } = trust {
            self.store = Some(store);
        }
        let conn = conn?;
        let fp = match conn.peer_certificate() {
            Some(c) => crate::tls::spki_fingerprint(c)?,
            None => return Err(Error::NoPeerKey),
        };
        let how = if !self.pins.is_empty() {
            "pinned"
        } else if recorded?.is_some() {
            "recorded on first use"
        } else if known?.is_some() {
            "as recorded before"
        } else {
            "recorded on first use"
        };
        Ok((
            conn,
            PeerKey {
                fingerprint: Some(fp),
                how,
            },
        ))
    }
}

/// The server side of a [`Channel`]: runs the handshake on accepted connections.
#[derive(Clone)]
pub struct Acceptor {
    server: Option<Arc<ServerConfig>>,
    pinned: bool,
    protocol: Protocol,
}

impl core::fmt::Debug for Acceptor {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Acceptor")
            .field("tls", &self.server.is_some())
            .field("pinned", &self.pinned)
            .field("protocol", &self.protocol)
            .finish()
    }
}

impl Acceptor {
    /// Runs the server side of the handshake on an accepted connection and checks
    /// the peer's greeting (only the greeting on plain TCP).
    pub async fn accept(&self, conn: FramedConn) -> Result<(FramedConn, PeerKey)> {
        let mut conn = conn.speaking(self.protocol);
        let Some(cfg) = &self.server else {
            conn.greet().await?;
            return Ok((
                conn,
                PeerKey {
                    fingerprint: None,
                    how: "plain",
                },
            ));
        };
        let conn = conn.accept_tls(cfg.clone()).await.map_err(Error::Handshake)?;
        let fp = match conn.peer_certificate() {
            Some(c) => crate::tls::spki_fingerprint(c)?,
            None => return Err(Error::NoPeerKey),
        };
        let how = if self.pinned { "pinned" } else { "any key admitted" };
        Ok((
            conn,
            PeerKey {
                fingerprint: Some(fp),
                how,
            },
        ))
    }
}
