//! The project's channel, shared by every command that talks to a peer: TLS 1.3
//! (rustls) with self-signed Ed25519 keys that the other side pins (`--pin`) or
//! records on first use (`--tofu`, as SSH does). Keys live in the store, one per
//! purpose (`psi-tls-identity`, …); recorded peer keys under a name per subsystem
//! and address (`psi/HOST:PORT`, …). See `docs/wire.md` ("The channel").
//!
//! Why TLS and not Noise: rustls is already in the tree for PrivateDrop's mutual
//! TLS, its channel-binding exporter is what protocols bind their transcripts to,
//! and one TLS stack is less to audit than two.

use anyhow::{Context, Result};
use std::sync::Arc;
use tacit_net::tls::{CertificateCheck, SelfSigned};
use tacit_net::{FramedConn, Protocol};
use tacit_store::Store;

/// How a client decides whether to trust the peer's key.
pub enum Trust {
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
            Trust::Pinned(fp) => Some(tacit_net::tls::pinned(*fp)),
            Trust::FirstUse { .. } => Some(match self.recorded()? {
                Some(fp) => tacit_net::tls::pinned(fp),
                None => tacit_net::tls::any_key(),
            }),
        })
    }

    /// After a handshake: records the peer's key on first use and returns its
    /// fingerprint when it was recorded now.
    pub fn record(&mut self, peer_certificate: Option<&[u8]>) -> Result<Option<[u8; 32]>> {
        let recorded = self.recorded()?;
        if let (Trust::FirstUse { store, name }, None, Some(cert)) = (self, recorded, peer_certificate) {
            let fp = tacit_net::tls::spki_fingerprint(cert)?;
            store.remember_peer(name, &fp, crate::util::now_unix())?;
            return Ok(Some(fp));
        }
        Ok(None)
    }
}

/// Parses a fingerprint given on the command line (64 hex digits; `:` and spaces
/// allowed between them).
pub fn parse_fingerprint(s: &str) -> Result<[u8; 32]> {
    let s: String = s.chars().filter(|c| !matches!(c, ':' | ' ')).collect();
    let b = hex::decode(&s).map_err(|_| anyhow::anyhow!("--pin is not hex"))?;
    b.try_into()
        .map_err(|_| anyhow::anyhow!("--pin must be a SHA-256 fingerprint (64 hex digits)"))
}

/// This store's TLS identity for `purpose`, made and stored on first use; `name`
/// is the DNS name in a new certificate (certificates are pinned, not named).
pub fn tls_identity(st: &mut Store, purpose: &str, name: &str) -> Result<SelfSigned> {
    if let Some(k) = st.current_key(purpose)? {
        let mut r = tacit_wire::Reader::new(&k.secret);
        let cert = r.var_bytes("certificate", 1 << 16)?;
        let key = r.var_bytes("key", 1 << 16)?;
        r.finish()?;
        return SelfSigned::from_parts(cert, key).with_context(|| format!("the stored {purpose} key is corrupt"));
    }
    let id = SelfSigned::generate(name)?;
    let mut w = tacit_wire::Writer::new();
    w.put_var_bytes(id.cert_der());
    w.put_var_bytes(id.key_pkcs8_der());
    st.put_key(
        purpose,
        1,
        &zeroize::Zeroizing::new(w.into_bytes()),
        crate::util::now_unix(),
    )?;
    Ok(id)
}

/// A client configuration for `trust` (`None` for plain TCP), presenting `identity`
/// when given (mutual pinning).
pub fn client_config(
    trust: &Trust,
    identity: Option<&SelfSigned>,
) -> Result<Option<Arc<tacit_net::tls::ClientConfig>>> {
    let Some(check) = trust.check()? else {
        return Ok(None);
    };
    Ok(Some(match identity {
        Some(id) => id.client_config_checking_server(check)?,
        None => tacit_net::tls::checked_server_client(check)?,
    }))
}

/// A check that accepts a certificate whose key is one of `pins` (a server that
/// admits only the clients it knows).
pub fn pinned_any(pins: Vec<[u8; 32]>) -> CertificateCheck {
    Arc::new(move |cert: &[u8]| {
        let got = tacit_net::tls::spki_fingerprint(cert).map_err(|e| e.to_string())?;
        let mut hit = 0u8;
        for p in &pins {
            // Constant time per comparison; the pins are not secret, the loop is.
            hit |= got.iter().zip(p).fold(0u8, |acc, (x, y)| acc | (x ^ y)).eq(&0) as u8;
        }
        if hit == 1 {
            Ok(())
        } else {
            Err(format!(
                "the peer's key {} is not one of the pinned keys",
                hex::encode(got)
            ))
        }
    })
}

/// The channel options of a command between two parties: TLS 1.3 by default,
/// plain TCP only with `--plain-tcp`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ChannelArgs {
    /// Run over plain TCP instead of TLS 1.3: nothing is encrypted or authenticated
    /// (an observer of the path reads every message; one who changes a bit changes
    /// the result). For latency measurements only; both parties must give it.
    #[arg(long)]
    pub plain_tcp: bool,
    /// The peer's key (SHA-256 fingerprint, 64 hex digits, as the peer prints it).
    /// Connecting: the listening party's key; without it the key is recorded on first
    /// use and required from then on (as SSH does). Listening: the keys of the
    /// parties admitted (repeat the flag); without it any key is admitted and its
    /// fingerprint printed.
    #[arg(long = "pin", value_name = "SHA256", conflicts_with = "plain_tcp")]
    pub pin: Vec<String>,
}

impl ChannelArgs {
    /// The pinned fingerprints.
    pub fn pins(&self) -> Result<Vec<[u8; 32]>> {
        self.pin.iter().map(|p| parse_fingerprint(p)).collect()
    }
}

/// A store's TLS identity and how it checks peers, for one command between two
/// parties (see [`ChannelArgs`]).
pub struct Channel {
    /// This party's key (`None`: plain TCP).
    pub identity: Option<SelfSigned>,
    /// The pinned peer keys.
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

/// What a connection's peer proved.
#[derive(Debug, Clone, Copy)]
pub struct PeerKey {
    /// The peer's key fingerprint (`None` on plain TCP).
    pub fingerprint: Option<[u8; 32]>,
    /// How the key was accepted: `pinned`, `recorded` (first use, now recorded),
    /// `known` (recorded earlier), `any` (a listener without pins), `plain`.
    pub how: &'static str,
}

impl PeerKey {
    /// One line for standard error.
    pub fn describe(&self) -> String {
        match self.fingerprint {
            None => "plain TCP: the peer is not authenticated and the traffic is not encrypted".into(),
            Some(fp) => format!("TLS 1.3; the peer's key {} ({})", hex::encode(fp), self.how),
        }
    }
}

impl Channel {
    /// The channel of `args`: opens the store (`store`: the `--store` argument) and
    /// its identity for `purpose` unless plain TCP was asked for.
    pub fn new(
        args: &ChannelArgs,
        store: Option<&std::path::Path>,
        purpose: &str,
        prefix: &'static str,
        tls_name: &'static str,
        protocol: Protocol,
    ) -> Result<Self> {
        if args.plain_tcp {
            return Ok(Channel {
                identity: None,
                pins: Vec::new(),
                store: None,
                prefix,
                tls_name,
                protocol,
            });
        }
        let path = crate::util::store_path(store)?;
        let mut st = crate::util::open_store(&path)?;
        let identity = tls_identity(&mut st, purpose, tls_name)?;
        Ok(Channel {
            identity: Some(identity),
            pins: args.pins()?,
            store: Some(st),
            prefix,
            tls_name,
            protocol,
        })
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
    pub fn server_config(&self) -> Result<Option<Arc<tacit_net::tls::ServerConfig>>> {
        let Some(id) = &self.identity else {
            return Ok(None);
        };
        let check = if self.pins.is_empty() {
            tacit_net::tls::any_key()
        } else {
            pinned_any(self.pins.clone())
        };
        Ok(Some(id.server_config_checking_clients(check)?))
    }

    /// The server side of this channel (shareable between tasks).
    pub fn acceptor(&self) -> Result<Acceptor> {
        Ok(Acceptor {
            server: self.server_config()?,
            pinned: !self.pins.is_empty(),
            protocol: self.protocol,
        })
    }

    /// Connects to `addr`: TLS with this party's key, the server's key pinned or
    /// recorded on first use under `<prefix>/<addr>`; plain TCP with `--plain-tcp`.
    pub async fn connect(&mut self, addr: &str, cfg: &tacit_net::NetConfig) -> Result<(FramedConn, PeerKey)> {
        let cfg = &cfg.speaking(self.protocol);
        let Some(id) = &self.identity else {
            let conn = FramedConn::connect(addr, cfg)
                .await
                .with_context(|| format!("cannot connect to {addr}"))?;
            return Ok((
                conn,
                PeerKey {
                    fingerprint: None,
                    how: "plain",
                },
            ));
        };
        if self.pins.len() > 1 {
            anyhow::bail!(
                "--pin names the one party to connect to; it was given {} times",
                self.pins.len()
            );
        }
        let name = format!("{}/{addr}", self.prefix);
        let mut trust = match (self.pins.first(), self.store.take()) {
            (Some(&p), st) => {
                self.store = st;
                Trust::Pinned(p)
            }
            (None, Some(store)) => Trust::FirstUse { store, name },
            (None, None) => anyhow::bail!("no store to record the peer's key in"),
        };
        let client = client_config(&trust, Some(id))?.ok_or_else(|| anyhow::anyhow!("no TLS configuration"))?;
        let conn = FramedConn::connect_tls(addr, cfg, client, self.tls_name)
            .await
            .map_err(|e| match e {
                // The greeting named what the peer is: that line alone.
                e @ tacit_net::Error::Greeting(_) => anyhow::Error::from(e),
                e => anyhow::anyhow!(
                    "cannot connect to {addr} over TLS: {e} (a peer that runs with --plain-tcp needs --plain-tcp here too)"
                ),
            });
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
            Some(c) => tacit_net::tls::spki_fingerprint(c)?,
            None => anyhow::bail!("the peer presented no key"),
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
    server: Option<Arc<tacit_net::tls::ServerConfig>>,
    pinned: bool,
    protocol: Protocol,
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
        let conn = conn
            .accept_tls(cfg.clone())
            .await
            .context("TLS handshake with the peer (a peer that runs with --plain-tcp is refused)")?;
        let fp = match conn.peer_certificate() {
            Some(c) => tacit_net::tls::spki_fingerprint(c)?,
            None => anyhow::bail!("the peer presented no key"),
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
