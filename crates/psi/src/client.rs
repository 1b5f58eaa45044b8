//! The PSI receiver as a client a product embeds: what `tacit psi query` runs.
//!
//! ```no_run
//! # async fn demo(pin: [u8; 32]) -> Result<(), tacit_psi::ServiceError> {
//! // TLS 1.3, the server's key pinned (the fingerprint `tacit psi serve --tls` prints):
//! let found = tacit_psi::query("host:7878", pin, &["15551230000", "bob@example.com"]).await?;
//! for id in found.strings() {
//!     println!("{id}");
//! }
//! # Ok(()) }
//! ```
//!
//! A [`Client`] ([`Client::builder`]) chooses how the server's key is trusted —
//! pinned ([`ClientBuilder::pin`]), or recorded in a store on first use and required
//! from then on ([`ClientBuilder::tofu`], as SSH does) — or, explicitly, plain TCP
//! ([`ClientBuilder::plain_tcp`]); there is no default, because there is no safe
//! one without a key to expect. Over TLS the response's proof must be bound to the
//! session, so a response relayed from another session or replaced on the path is
//! refused. The whole query runs under [`ClientBuilder::deadline`] (60 s) and frames
//! are bounded by the parameters' largest message.

use crate::service::{self, QueryError};
use crate::{PsiParams, ReceiverPrecomputation, ServiceError, TLS_NAME};
use std::time::Duration;
use tacit_crypto::rng::SecureRng;
use tacit_crypto::{GroupId, P256, PrimeGroup, Ristretto255};
use tacit_net::NetConfig;
use tacit_net::tls::CertificateCheck;
use tacit_store::Store;

type Result<T> = core::result::Result<T, ServiceError>;

/// The name under which [`ClientBuilder::tofu`] records the key of the PSI server at
/// `addr` in the store (`psi/<addr>`; `tacit psi forget` removes it).
pub fn known_peer_name(addr: &str) -> String {
    format!("psi/{addr}")
}

enum Trust {
    Unset,
    Plain,
    Pinned([u8; 32]),
    FirstUse(Box<Store>),
}

/// What one query learned, and what it cost.
#[derive(Debug, Clone)]
pub struct QueryResult {
    /// The common elements, in the order of the client's set.
    pub intersection: Vec<Vec<u8>>,
    /// Request size in bytes.
    pub request_bytes: usize,
    /// Response size in bytes.
    pub response_bytes: usize,
    /// Whether the session ran over TLS (and the response was bound to it).
    pub tls: bool,
    /// The fingerprint of the server's key (TLS).
    pub server_key: Option<[u8; 32]>,
    /// With trust on first use: the server's key when it was recorded by this query
    /// (its first); `None` when it was known already, or without trust on first use.
    pub recorded_now: Option<[u8; 32]>,
}

impl QueryResult {
    /// The common elements as text (invalid UTF-8 replaced by `�`).
    pub fn strings(&self) -> Vec<String> {
        self.intersection
            .iter()
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .collect()
    }
}

/// Configures a [`Client`].
pub struct ClientBuilder {
    params: PsiParams,
    trust: Trust,
    deadline: Duration,
    timeout: Option<Duration>,
}

impl core::fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("params", &self.params)
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}

/// A PSI receiver that queries servers ([`Client::query`]).
pub struct Client {
    params: PsiParams,
    trust: Trust,
    net: NetConfig,
}

impl core::fmt::Debug for Client {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Client")
            .field("params", &self.params)
            .field("net", &self.net)
            .finish_non_exhaustive()
    }
}

/// One query over TLS 1.3 to the server at `addr` whose key has the SHA-256
/// fingerprint `pin`, with the default parameters ([`PsiParams::default`], as
/// `tacit psi serve` without options): the elements of `ids` the server also holds.
pub async fn query<T: AsRef<[u8]>>(addr: &str, pin: [u8; 32], ids: &[T]) -> Result<QueryResult> {
    Client::builder().pin(pin).build()?.query(addr, ids).await
}

impl Client {
    /// A builder with `tacit psi query`'s defaults ([`PsiParams::default`], 60 s for
    /// the whole query); choose the trust with [`ClientBuilder::pin`],
    /// [`ClientBuilder::tofu`] or [`ClientBuilder::plain_tcp`].
    pub fn builder() -> ClientBuilder {
        ClientBuilder {
            params: PsiParams::default(),
            trust: Trust::Unset,
            deadline: Duration::from_secs(60),
            timeout: None,
        }
    }

    /// The protocol parameters.
    pub fn params(&self) -> &PsiParams {
        &self.params
    }

    /// The key recorded on first use for `addr`, if any (trust on first use only).
    pub fn recorded_key(&self, addr: &str) -> Result<Option<[u8; 32]>> {
        match &self.trust {
            Trust::FirstUse(st) => Ok(st.known_peer(&known_peer_name(addr))?),
            _ => Ok(None),
        }
    }

    /// Runs one query: the elements of `ids` (at most `m` distinct) the server at
    /// `addr` also holds, in the order of `ids`. The server learns nothing but the
    /// bound `m`.
    pub async fn query<T: AsRef<[u8]>>(&mut self, addr: &str, ids: &[T]) -> Result<QueryResult> {
        match self.params.group {
            GroupId::Ristretto255 => self.query_in::<Ristretto255, T>(addr, ids).await,
            GroupId::P256 => self.query_in::<P256, T>(addr, ids).await,
        }
    }

    async fn query_in<G: PrimeGroup, T: AsRef<[u8]>>(&mut self, addr: &str, ids: &[T]) -> Result<QueryResult> {
        let pre = ReceiverPrecomputation::<G>::compute(&self.params, ids, &mut SecureRng::from_os())?;
        let recorded = self.recorded_key(addr)?;
        let check: Option<CertificateCheck> = match &self.trust {
            Trust::Unset | Trust::Plain => None,
            Trust::Pinned(fp) => Some(tacit_net::tls::pinned(*fp)),
            // On first use any key is accepted (the handshake still proves its holder
            // is on the other end) and recorded below.
            Trust::FirstUse(_) => Some(match recorded {
                Some(fp) => tacit_net::tls::pinned(fp),
                None => tacit_net::tls::any_key(),
            }),
        };
        let client = match check {
            Some(c) => Some(tacit_net::tls::checked_server_client(c)?),
            None => None,
        };
        let out = service::query(addr, &pre, client.map(|c| (c, TLS_NAME)), &self.net)
            .await
            .map_err(|e| match (&e, recorded) {
                (QueryError::Net(tacit_net::Error::Tls(_)), Some(_)) => ServiceError::KeyChanged {
                    addr: addr.to_string(),
                    source: e,
                },
                _ => ServiceError::Query {
                    addr: addr.to_string(),
                    source: e,
                },
            })?;
        let server_key = match &out.server_certificate {
            Some(c) => Some(tacit_net::tls::spki_fingerprint(c)?),
            None => None,
        };
        let mut recorded_now = None;
        if let (Trust::FirstUse(st), None, Some(fp)) = (&mut self.trust, recorded, server_key) {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0);
            st.remember_peer(&known_peer_name(addr), &fp, now)?;
            recorded_now = Some(fp);
        }
        Ok(QueryResult {
            intersection: out.intersection.items().to_vec(),
            request_bytes: out.bytes.0,
            response_bytes: out.bytes.1,
            tls: out.tls,
            server_key,
            recorded_now,
        })
    }
}

impl ClientBuilder {
    /// The protocol parameters (default [`PsiParams::default`]); they must be the
    /// server's.
    pub fn params(mut self, params: PsiParams) -> Self {
        self.params = params;
        self
    }

    /// TLS 1.3, accepting only the server key with this SHA-256 fingerprint (of its
    /// SubjectPublicKeyInfo, as [`crate::Server::fingerprint`] and `tacit psi serve
    /// --tls` give it).
    pub fn pin(mut self, fingerprint: [u8; 32]) -> Self {
        self.trust = Trust::Pinned(fingerprint);
        self
    }

    /// TLS 1.3, trusting the server's key on first use: it is recorded in `store`
    /// under [`known_peer_name`] of the address, and a later different key is
    /// refused ([`ServiceError::KeyChanged`]), as SSH does.
    pub fn tofu(mut self, store: Store) -> Self {
        self.trust = Trust::FirstUse(Box::new(store));
        self
    }

    /// **Unsafe on a network**: plain TCP, for a server run with
    /// [`crate::ServerBuilder::plain_tcp`]. Nothing is authenticated: someone on the
    /// path can answer with a response computed over any set, and the client then
    /// learns a wrong intersection.
    pub fn plain_tcp(mut self) -> Self {
        self.trust = Trust::Plain;
        self
    }

    /// How long the whole query may take (default 60 s).
    pub fn deadline(mut self, d: Duration) -> Self {
        self.deadline = d;
        self
    }

    /// How long to connect and to wait for each message (default 10 s to connect,
    /// 30 s per message).
    pub fn timeout(mut self, d: Duration) -> Self {
        self.timeout = Some(d);
        self
    }

    /// The client. Fails when no trust was chosen or a setting is unusable.
    pub fn build(self) -> Result<Client> {
        self.params.validate()?;
        if matches!(self.trust, Trust::Unset) {
            return Err(ServiceError::Config(
                "choose how to trust the server's key: pin(fingerprint), tofu(store), or plain_tcp() (unsafe)".into(),
            ));
        }
        if self.deadline.is_zero() || self.timeout.is_some_and(|t| t.is_zero()) {
            return Err(ServiceError::Config(
                "the deadline and timeout must be longer than zero".into(),
            ));
        }
        let mut net = NetConfig::default()
            .with_max_frame_at_least(self.params.max_message_len())
            .with_deadline(self.deadline);
        if let Some(t) = self.timeout {
            net.connect_timeout = t;
            net.read_timeout = t;
        }
        Ok(Client {
            params: self.params,
            trust: self.trust,
            net,
        })
    }
}
