//! The IBE root authority online (issue 10): key requests
//! ([`crate::key_request`]) and the naming roots' revocation lists, over TLS 1.3
//! (`tacit_net`; the greeting, then the handshake, then the frames below). The async
//! shell only; no cryptography of its own.
//!
//! TLS keeps a key request's name and blessing chain from a **passive** observer of
//! the path. The root's TLS key is a fresh self-signed one each time it serves, and
//! the clients here accept any key ([`tacit_net::tls::any_key`]): a member has
//! nothing to pin it to (its blessing and the MPK name no TLS key), so an **active**
//! attacker who answers in the root's place still reads the `KeyRequest` (the member's
//! name and blessing chain); it cannot forge a grant, which is checked against the
//! MPK, nor replay the request to the real root, which challenges every connection.
//!
//! The first frame of a connection says what the client wants:
//!
//! ```text
//! key:          KeyHello → KeyChallenge → KeyRequest → KeyGrant | ErrorMessage
//! revocations:  RevocationsQuery (01 034a) → RevocationLists (01 034b || u32 count (≤ 1024)
//!                                            || count × (u32 len || revocation list file form))
//! ```
//!
//! Connections are admitted by the shared guard (`tacit_net::guard`, issue 32): at
//! most [`MAX_CONNECTIONS`] at once and [`MAX_PER_ADDRESS`] from one address (when
//! full, a newcomer from a less busy address takes the slot of the busiest address's
//! oldest connection), each within [`CONNECTION_DEADLINE`]; `accept` errors never end
//! the service. A refused key request gets a one-line reason.

use crate::blessing::{self, Blessing, Principal, SignedRevocationList};
use crate::ibe::MasterPublicKey;
use crate::key_request::{self, KeyAuthority, Requester, refusal};
use crate::prefix::PrefixKey;
use std::sync::Arc;
use std::time::Duration;
use tacit_crypto::rng::SecureRng;
use tacit_net::guard::{Guard, ServeEvent, ServeLimits};
use tacit_net::{FramedConn, FramedListener, NetConfig, Protocol};
use tacit_wire::{Encode, Envelope, ErrorMessage, Reader, Writer};

/// Message-type tags of the revocation-list exchange (registered in `docs/wire.md`).
pub mod tags {
    /// A request for every revocation list the root service holds (no body).
    pub const REVOCATIONS_QUERY: u16 = 0x034a;
    /// The lists.
    pub const REVOCATIONS: u16 = 0x034b;
}

/// Most lists one answer carries.
pub const MAX_LISTS: usize = 1024;
/// Most connections served at once.
pub const MAX_CONNECTIONS: usize = 64;
/// Most connections served at once from one address.
pub const MAX_PER_ADDRESS: usize = 16;
/// Longest a connection may take.
pub const CONNECTION_DEADLINE: Duration = Duration::from_secs(10);
/// The TLS server name of the root's self-signed certificate (keys are not named).
pub const TLS_NAME: &str = "discovery-root.invalid";

/// A client connection to the root at `addr`: the greeting, then TLS 1.3 accepting
/// any server key (see the module docs for what that protects).
async fn connect(addr: &str, net: &NetConfig) -> Result<FramedConn, Error> {
    let client = tacit_net::tls::checked_server_client(tacit_net::tls::any_key()).map_err(tls_error)?;
    Ok(FramedConn::connect_tls(addr, &net.speaking(Protocol::DiscoveryRoot), client, TLS_NAME).await?)
}

fn tls_error(e: tacit_net::tls::TlsConfigError) -> Error {
    Error::Tls(e.to_string())
}

/// Errors of the networked exchanges.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The key request failed (see the variant for why).
    #[error(transparent)]
    KeyRequest(#[from] key_request::Error),
    /// A revocation list is unusable.
    #[error("{0}")]
    Blessing(#[from] blessing::Error),
    /// A malformed message.
    #[error("malformed message: {0}")]
    Wire(#[from] tacit_wire::Error),
    /// The network failed.
    #[error("{0}")]
    Net(#[from] tacit_net::Error),
    /// The service refused and said why.
    #[error("the IBE root refused: {0}")]
    Refused(String),
    /// A TLS key or configuration could not be made.
    #[error("the TLS configuration: {0}")]
    Tls(String),
}

/// What one connection did (for the root's log).
#[derive(Debug, Clone)]
pub enum RootEvent {
    /// A prefix key was granted.
    Granted {
        /// The requester's validated name.
        name: String,
        /// The identifier of the blessing it proved.
        blessing_id: String,
    },
    /// Revocation lists were sent.
    ListsServed(usize),
    /// A request was refused (the reason was sent to the requester too).
    Refused(String),
}

/// Everything the root service needs.
pub struct RootState {
    /// The key authority (master secret key, trusted naming roots and their
    /// revocation lists).
    pub authority: KeyAuthority,
    /// Called when a connection starts, before anything is checked: a CLI reloads
    /// the revocation lists another process stored.
    pub reload: Option<Arc<dyn Fn() + Send + Sync>>,
    /// Called after each connection.
    pub events: Arc<dyn Fn(RootEvent) + Send + Sync>,
}

impl core::fmt::Debug for RootState {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "RootState({:?})", self.authority)
    }
}

fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Encodes lists as a [`tags::REVOCATIONS`] message.
pub fn encode_lists(lists: &[SignedRevocationList]) -> Vec<u8> {
    let mut w = Writer::new();
    w.put_envelope(tags::REVOCATIONS);
    let lists = &lists[..lists.len().min(MAX_LISTS)];
    w.put_count(lists.len());
    for l in lists {
        w.put_var_bytes(&l.to_file_bytes());
    }
    w.into_bytes()
}

/// Decodes a [`tags::REVOCATIONS`] message (the lists are not verified here:
/// `TrustedRoots::apply_revocations` does that).
pub fn decode_lists(msg: &[u8]) -> Result<Vec<SignedRevocationList>, Error> {
    if let Ok(env) = Envelope::peek(msg)
        && env.tag == tacit_wire::tags::ERROR
    {
        let m = <ErrorMessage as tacit_wire::Decode>::from_wire(msg)?;
        return Err(Error::Refused(m.reason));
    }
    let mut r = Reader::new(msg);
    r.envelope(tags::REVOCATIONS, "revocation lists")?;
    let n = r.count("revocation lists", MAX_LISTS, 4)?;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(SignedRevocationList::from_file_bytes(
            r.var_bytes("revocation list", 4 << 20)?,
        )?);
    }
    r.finish()?;
    Ok(out)
}

fn query() -> Vec<u8> {
    let mut w = Writer::new();
    w.put_envelope(tags::REVOCATIONS_QUERY);
    w.into_bytes()
}

/// The service's default admission limits.
pub fn default_limits() -> ServeLimits {
    ServeLimits::new(MAX_CONNECTIONS, CONNECTION_DEADLINE).with_per_address(MAX_PER_ADDRESS)
}

/// Serves key requests and revocation lists (forever, or until `connections`
/// connections were admitted) under [`default_limits`].
pub async fn serve(listener: FramedListener, state: Arc<RootState>, connections: Option<u64>) -> Result<(), Error> {
    serve_with(listener, state, connections, default_limits()).await
}

/// [`serve`] under `limits`.
pub async fn serve_with(
    listener: FramedListener,
    state: Arc<RootState>,
    connections: Option<u64>,
    limits: ServeLimits,
) -> Result<(), Error> {
    let events = state.events.clone();
    // A fresh TLS key for this run (nothing pins it; see the module docs).
    let tls = tacit_net::tls::SelfSigned::generate(TLS_NAME)
        .and_then(|id| id.server_config())
        .map_err(tls_error)?;
    let guard = Guard::new(limits).on_event(Arc::new(move |e| match e {
        ServeEvent::AcceptFailed { .. } | ServeEvent::Evicted { .. } | ServeEvent::Refused { .. } => {
            events(RootEvent::Refused(e.to_string()))
        }
        ServeEvent::DeadlinePassed { .. } => events(RootEvent::Refused(e.to_string())),
    }));
    listener
        .speaking(Protocol::DiscoveryRoot)
        .serve(&guard, connections, |conn| {
            let state = state.clone();
            let tls = tls.clone();
            async move {
                let ev = match async { handle(conn.accept_tls(tls).await?, &state).await }.await {
                    Ok(ev) => ev,
                    Err(e) => RootEvent::Refused(e.to_string()),
                };
                (state.events)(ev);
            }
        })
        .await;
    Ok(())
}

async fn handle(mut conn: FramedConn, state: &RootState) -> Result<RootEvent, Error> {
    if let Some(reload) = &state.reload {
        reload();
    }
    let mut rng = SecureRng::from_os();
    let first = conn.recv().await?;
    match Envelope::peek(&first)?.tag {
        key_request::tags::KEY_HELLO => {
            let (waiting, challenge) = state.authority.on_hello(&first, &mut rng)?;
            conn.send(&challenge).await?;
            let request = conn.recv().await?;
            match waiting.on_request(&request, now_unix(), &mut rng) {
                Ok((granted, grant)) => {
                    conn.send(&grant).await?;
                    Ok(RootEvent::Granted {
                        name: granted.requester.name().to_string(),
                        blessing_id: granted.blessing_id.to_string(),
                    })
                }
                Err(e) => {
                    let _ = conn.send(&refusal(&e)).await;
                    Ok(RootEvent::Refused(e.to_string()))
                }
            }
        }
        tags::REVOCATIONS_QUERY => {
            let mut r = Reader::new(&first);
            r.envelope(tags::REVOCATIONS_QUERY, "revocations query")?;
            r.finish()?;
            let lists = state.authority.roots().revocation_lists();
            conn.send(&encode_lists(&lists)).await?;
            Ok(RootEvent::ListsServed(lists.len()))
        }
        other => {
            let why = format!("unexpected message type {other:#06x}");
            let _ = conn.send(&ErrorMessage::new(why.clone()).to_wire()).await;
            Ok(RootEvent::Refused(why))
        }
    }
}

/// Asks the IBE root at `addr` for the prefix key of `blessing`'s name, proving that
/// `principal` holds it; the key is checked against `mpk` before it is returned.
/// Over TLS 1.3 accepting any root key: hidden from a passive observer, not from an
/// active attacker in the root's place (module docs).
pub async fn fetch_prefix_key(
    addr: &str,
    principal: Arc<Principal>,
    blessing: Blessing,
    mpk: Arc<MasterPublicKey>,
    net: &NetConfig,
) -> Result<PrefixKey, Error> {
    let mut rng = SecureRng::from_os();
    let mut conn = connect(addr, net).await?;
    let (req, hello) = Requester::start(principal, blessing, mpk)?;
    conn.send(&hello).await?;
    let challenge = conn.recv().await?;
    let (req, request) = req.on_challenge(&challenge, &mut rng)?;
    conn.send(&request).await?;
    let grant = conn.recv().await?;
    Ok(req.on_grant(&grant)?)
}

/// Fetches the revocation lists the root service at `addr` holds (unverified: apply
/// them with `TrustedRoots::apply_revocations`).
pub async fn fetch_revocations(addr: &str, net: &NetConfig) -> Result<Vec<SignedRevocationList>, Error> {
    let mut conn = connect(addr, net).await?;
    conn.send(&query()).await?;
    decode_lists(&conn.recv().await?)
}
