//! The async shell around [`crate::handshake`]: handshakes over framed TCP
//! (`tacit_net::FramedConn`), no cryptography of its own.
//!
//! One listener answers all three handshakes; the first frame's tag says which:
//!
//! ```text
//! SIGMA-I / private:  hello → server hello → finish → {request}_atk → {response}_atk
//! 0-RTT:              hello (+ early request) → reply (+ response under atk)
//! ```
//!
//! The application exchange is one request and one response (the CLI's "message");
//! a failed handshake closes the connection without a reason, so a peer outside the
//! policy learns nothing from the refusal.

use crate::handshake::server::{ServerConfig, on_client_hello};
use crate::handshake::zero_rtt::{DiscoveredService, Service, connect as zero_rtt_connect};
use crate::handshake::{
    Credentials, DecryptionCache, Error as HsError, Established, Mode, PrefixCredentials, client::Client, tags,
};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tacit_crypto::rng::SecureRng;
use tacit_net::guard::{Guard, ServeLimits};
use tacit_net::{FramedConn, FramedListener, NetConfig, Protocol};
use tacit_wire::Envelope;

/// Errors of a networked handshake.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The handshake itself failed (see the variant for why).
    #[error(transparent)]
    Handshake(#[from] HsError),
    /// The network failed.
    #[error("{0}")]
    Net(#[from] tacit_net::Error),
    /// The server closed the connection after our finish: it refused our identity
    /// (servers say nothing more), or it failed.
    #[error("the service refused this identity (it closed the connection after the handshake)")]
    Refused,
    /// The server closed the connection without answering our hello: it does not
    /// offer this handshake (a private service answers only private mutual
    /// authentication) or it is not a tacit discovery service.
    #[error("the service did not answer the {0} hello (a private service answers only private mutual authentication)")]
    NoAnswer(&'static str),
}

/// The service's answer to a request: `(client name, request) → response`.
pub type Responder = Arc<dyn Fn(&str, &[u8]) -> Vec<u8> + Send + Sync>;

/// What one accepted connection did (for logs).
#[derive(Debug, Clone)]
pub enum ServerEvent {
    /// A client authenticated.
    Authenticated {
        /// Which handshake.
        handshake: &'static str,
        /// The client's name.
        client: String,
    },
    /// A handshake failed (the reason stays on this side).
    Refused(String),
    /// The accept loop refused or dropped a connection, or `accept` failed and
    /// serving went on (`tacit_net::guard`).
    Admission(tacit_net::guard::ServeEvent),
}

/// Everything a server needs.
pub struct ServerState {
    /// SIGMA-I and private mutual authentication.
    pub config: ServerConfig,
    /// 0-RTT advertisements and their secrets.
    pub service: Service,
    /// The application.
    pub respond: Responder,
    /// Called after each connection.
    pub events: Arc<dyn Fn(ServerEvent) + Send + Sync>,
}

impl core::fmt::Debug for ServerState {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "ServerState({:?})", self.config)
    }
}

fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Most handshakes in progress at once (the same bound as the auxiliary
/// advertisement service's).
pub const MAX_CONNECTIONS: usize = 256;

/// Most handshakes in progress from one address (IPv4 address or IPv6 /64).
pub const MAX_PER_ADDRESS: usize = 16;

/// Longest a connection may take, handshake and application exchange together: a
/// client that trickles bytes cannot hold a connection slot longer.
pub const CONNECTION_DEADLINE: Duration = Duration::from_secs(20);

/// The listener's default admission limits.
pub fn default_limits() -> ServeLimits {
    ServeLimits::new(MAX_CONNECTIONS, CONNECTION_DEADLINE).with_per_address(MAX_PER_ADDRESS)
}

/// Serves connections; each connection on its own task, under [`default_limits`]
/// (see [`serve_with`]).
pub async fn serve(listener: FramedListener, state: Arc<ServerState>) -> Result<(), Error> {
    serve_with(listener, state, default_limits()).await
}

/// [`serve`] with at most `limit` connections in progress at once.
pub async fn serve_with_limit(listener: FramedListener, state: Arc<ServerState>, limit: usize) -> Result<(), Error> {
    serve_with(
        listener,
        state,
        ServeLimits {
            max_connections: limit,
            ..default_limits()
        },
    )
    .await
}

/// Serves connections under `limits` through the shared guard (`tacit_net::guard`,
/// issue 32): a cap on connections, a share per address (when full, a newcomer from
/// a less busy address takes the slot of the busiest address's oldest connection), a
/// deadline per connection; `accept` errors are reported as
/// [`ServerEvent::Admission`] and never end the listener.
pub async fn serve_with(listener: FramedListener, state: Arc<ServerState>, limits: ServeLimits) -> Result<(), Error> {
    let events = state.events.clone();
    let guard = Guard::new(limits).on_event(Arc::new(move |e| events(ServerEvent::Admission(e))));
    let deadline = guard.limits().deadline;
    listener
        .speaking(Protocol::DiscoveryService)
        .serve(&guard, None, |conn| {
            let state = state.clone();
            async move {
                // Within the guard's deadline, so that the refusal is logged with its
                // reason rather than only as an admission event.
                let ev = match tokio::time::timeout(
                    deadline.saturating_sub(Duration::from_millis(50)),
                    handle(conn, &state),
                )
                .await
                {
                    Ok(Ok((handshake, client))) => ServerEvent::Authenticated { handshake, client },
                    Ok(Err(e)) => ServerEvent::Refused(e.to_string()),
                    Err(_) => {
                        ServerEvent::Refused(format!("the connection ran past its {} s deadline", deadline.as_secs()))
                    }
                };
                (state.events)(ev);
            }
        })
        .await;
    Ok(())
}

async fn handle(mut conn: FramedConn, state: &ServerState) -> Result<(&'static str, String), Error> {
    let mut rng = SecureRng::from_os();
    let first = conn.recv().await?;
    let tag = Envelope::peek(&first).map_err(HsError::from)?.tag;
    if tag == tags::ZERO_RTT_HELLO {
        let acc = state.service.on_hello(&first, now_unix())?;
        let client = acc.client.name().to_string();
        let response = (state.respond)(&client, &acc.early_data);
        let (_session, reply) = acc.reply(&response, &mut rng)?;
        conn.send(&reply).await?;
        return Ok(("0-RTT", client));
    }
    let (waiting, server_hello) = on_client_hello(&state.config, &first, &mut rng)?;
    let handshake = crate::handshake::hello_mode(&first)?.name();
    conn.send(&server_hello).await?;
    let finish = conn.recv().await?;
    let mut session = waiting.on_client_finish(&finish, now_unix())?;
    let client = session.peer.name().to_string();
    let request = session.keys.open(&conn.recv().await?)?;
    let response = (state.respond)(&client, &request);
    conn.send(&session.keys.seal(&response)).await?;
    Ok((handshake, client))
}

/// Timings of one client connection.
#[derive(Debug, Clone, Copy, Default)]
pub struct ClientTimings {
    /// TCP connect.
    pub connect: Duration,
    /// From the first handshake byte to an established session.
    pub handshake: Duration,
    /// Connect + handshake + one request/response.
    pub total: Duration,
}

/// The result of a client connection.
#[derive(Debug)]
pub struct ClientOutcome {
    /// The session (the server's authenticated identity and the keys).
    pub session: Established,
    /// The server's response to our request.
    pub response: Vec<u8>,
    /// Timings.
    pub timings: ClientTimings,
}

/// Connects with SIGMA-I or private mutual authentication and sends one request.
pub async fn connect(
    addr: &str,
    mode: Mode,
    creds: &Credentials,
    prefix: Option<&PrefixCredentials>,
    cache: Option<Arc<DecryptionCache>>,
    request: &[u8],
    net: &NetConfig,
) -> Result<ClientOutcome, Error> {
    let mut rng = SecureRng::from_os();
    let t0 = Instant::now();
    // The hello leaves with the greeting (no round trip of its own: the handshake's
    // timings stay those of the paper); a wrong server is named by the first receive.
    let mut conn = FramedConn::connect_early(addr, &net.speaking(Protocol::DiscoveryService)).await?;
    let connect = t0.elapsed();
    let t1 = Instant::now();
    let (c, hello) = Client::start(mode, creds.clone(), prefix.cloned(), cache, &mut rng)?;
    conn.send(&hello).await?;
    let sh = match conn.recv().await {
        Ok(sh) => sh,
        Err(tacit_net::Error::Closed) => return Err(Error::NoAnswer(mode.name())),
        Err(e) => return Err(e.into()),
    };
    let (mut session, finish) = c.on_server_hello(&sh, now_unix())?;
    conn.send(&finish).await?;
    let handshake = t1.elapsed();
    conn.send(&session.keys.seal(request))
        .await
        .map_err(|_| Error::Refused)?;
    let answer = conn.recv().await.map_err(|_| Error::Refused)?;
    let response = session.keys.open(&answer)?;
    Ok(ClientOutcome {
        session,
        response,
        timings: ClientTimings {
            connect,
            handshake,
            total: t0.elapsed(),
        },
    })
}

/// Opens a 0-RTT session to a discovered service with `early` as early data.
pub async fn connect_zero_rtt(
    addr: &str,
    service: DiscoveredService,
    creds: &Credentials,
    early: &[u8],
    net: &NetConfig,
) -> Result<ClientOutcome, Error> {
    let mut rng = SecureRng::from_os();
    let t0 = Instant::now();
    // The hello leaves with the greeting (no round trip of its own: the handshake's
    // timings stay those of the paper); a wrong server is named by the first receive.
    let mut conn = FramedConn::connect_early(addr, &net.speaking(Protocol::DiscoveryService)).await?;
    let connect = t0.elapsed();
    let t1 = Instant::now();
    let (waiting, hello) = zero_rtt_connect(service, creds, early, &mut rng)?;
    conn.send(&hello).await?;
    let reply = conn.recv().await?;
    let done = waiting.on_reply(&reply)?;
    let handshake = t1.elapsed();
    Ok(ClientOutcome {
        session: done.session,
        response: done.data,
        timings: ClientTimings {
            connect,
            handshake,
            total: t0.elapsed(),
        },
    })
}
