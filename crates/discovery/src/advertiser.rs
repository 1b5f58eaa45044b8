//! The advertiser (the paper's service `S`, §5): serves SIGMA-I / private mutual
//! authentication / 0-RTT on one listener ([`crate::service`]), makes a fresh
//! advertisement every refresh period ([`crate::handshake::zero_rtt::Service`]) and
//! publishes it over mDNS, inline in the TXT record or behind a pointer to an
//! auxiliary service ([`crate::carrier`]). What `tacit discover advertise` runs.
//!
//! ```no_run
//! # async fn f(creds: tacit_discovery::handshake::Credentials,
//! #            prefix: tacit_discovery::handshake::PrefixCredentials) -> Result<(), tacit_discovery::Error> {
//! use tacit_discovery::Advertiser;
//! let advertiser = Advertiser::builder(creds, prefix)
//!     .respond(|client, request| format!("hello {client}, you sent {} bytes", request.len()).into_bytes())
//!     .mdns(tacit_net::mdns::Scope::All)
//!     .bind("0.0.0.0:0")
//!     .await?;
//! println!("serving on {}", advertiser.local_addr());
//! advertiser.serve().await
//! # }
//! ```
//!
//! Safe by default: only private mutual authentication and 0-RTT are answered (a
//! SIGMA-I hello, which would hand the service's name to anyone, gets the connection
//! closed, unless [`AdvertiserBuilder::allow_sigma`]); connections are admitted under
//! [`service::default_limits`] (a cap in all and per address, a deadline each); a
//! failed handshake closes the connection without a reason.

use crate::Error;
use crate::carrier::{self, AuxStore, Budget};
use crate::handshake::server::ServerConfig;
use crate::handshake::zero_rtt::{AdvertSecret, Service};
use crate::handshake::{Credentials, Mode, PrefixCredentials};
use crate::service::{self, Responder, ServerEvent, ServerState};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tacit_crypto::rng::SecureRng;
use tacit_net::guard::ServeLimits;
use tacit_net::mdns::Scope;
use tacit_net::{FramedListener, NetConfig};

/// The shortest refresh period (an advertisement is valid for one period).
pub const MIN_REFRESH: Duration = Duration::from_secs(10);

/// How often a running advertiser re-reads the revocation lists of its store.
pub const RELOAD_EVERY: Duration = Duration::from_secs(5);

/// Something the advertiser reports (the CLI prints these).
#[derive(Debug, Clone)]
pub enum AdvertiserEvent {
    /// A connection ended: a client authenticated, a handshake was refused, or the
    /// accept loop refused or dropped a connection.
    Connection(ServerEvent),
    /// A fresh advertisement is published over mDNS.
    Advertised {
        /// The DNS-SD instance's full name.
        fullname: String,
        /// The advertisement's size.
        bytes: usize,
        /// Whether mDNS carries only a pointer to the auxiliary service.
        via_pointer: bool,
        /// How long it is valid.
        valid_secs: u64,
    },
    /// The advertisement reaches less than was asked for (one line for the user).
    ReachNote(String),
    /// The advertisement could not be announced over mDNS (why); handshakes are
    /// served all the same.
    NotAdvertised(String),
    /// A fresh advertisement was made; mDNS is off.
    AdvertMade {
        /// Its size.
        bytes: usize,
    },
}

type Events = Arc<dyn Fn(AdvertiserEvent) + Send + Sync>;

/// Configures an [`Advertiser`] (see [`Advertiser::builder`]).
pub struct AdvertiserBuilder {
    creds: Credentials,
    prefix: PrefixCredentials,
    respond: Responder,
    allow_sigma: bool,
    limits: ServeLimits,
    refresh: Duration,
    mdns: Option<Scope>,
    service_type: String,
    pointer: bool,
    store: Option<PathBuf>,
    events: Events,
    net: NetConfig,
}

impl core::fmt::Debug for AdvertiserBuilder {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "AdvertiserBuilder({:?})", self.creds)
    }
}

/// A bound advertiser: the handshake listener, the auxiliary advertisement service
/// and the first advertisement are ready; [`Advertiser::serve`] runs it.
pub struct Advertiser {
    listener: FramedListener,
    local: SocketAddr,
    state: Arc<ServerState>,
    prefix: PrefixCredentials,
    aux: AuxStore,
    aux_listener: FramedListener,
    current: Arc<AdvertSecret>,
    made: Instant,
    o: AdvertiserBuilder,
}

impl core::fmt::Debug for Advertiser {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "Advertiser({} on {})",
            self.o.creds.blessing.unverified_name(),
            self.local
        )
    }
}

impl Advertiser {
    /// An advertiser presenting `creds` (its blessing and its policy: who may read
    /// its advertisements and authenticate it), encrypting its advertisements under
    /// the IBE root's public key in `prefix` (the service needs no prefix key of its
    /// own to advertise; with one it also answers private mutual authentication as
    /// the paper's server).
    ///
    /// Defaults: private mutual authentication and 0-RTT only, an empty response,
    /// [`service::default_limits`], a refresh every hour, mDNS off, the service type
    /// [`tacit_net::mdns::DISCOVERY_SERVICE`], the advertisement inline when it fits.
    pub fn builder(creds: Credentials, prefix: PrefixCredentials) -> AdvertiserBuilder {
        AdvertiserBuilder {
            creds,
            prefix,
            respond: Arc::new(|_: &str, _: &[u8]| Vec::new()),
            allow_sigma: false,
            limits: service::default_limits(),
            refresh: Duration::from_secs(3600),
            mdns: None,
            service_type: tacit_net::mdns::DISCOVERY_SERVICE.to_string(),
            pointer: false,
            store: None,
            events: Arc::new(|_| {}),
            net: NetConfig::default(),
        }
    }
}

impl AdvertiserBuilder {
    /// The application: `(client's validated name, request) → response`, called once
    /// per authenticated connection (with the early data of a 0-RTT flight).
    pub fn respond(mut self, f: impl Fn(&str, &[u8]) -> Vec<u8> + Send + Sync + 'static) -> Self {
        self.respond = Arc::new(f);
        self
    }

    /// **Unsafe for privacy**: also answer SIGMA-I hellos, which hands this service's
    /// name and key to anyone who connects (the CLI's `--allow-sigma`).
    pub fn allow_sigma(mut self, on: bool) -> Self {
        self.allow_sigma = on;
        self
    }

    /// Admission limits (default [`service::default_limits`]).
    pub fn limits(mut self, limits: ServeLimits) -> Self {
        self.limits = limits;
        self
    }

    /// How often a fresh advertisement (new broadcast id, new semi-static key) is
    /// made; each is valid for one period (at least [`MIN_REFRESH`]; default 1 h).
    pub fn refresh(mut self, every: Duration) -> Self {
        self.refresh = every;
        self
    }

    /// Publish the advertisements over mDNS in `scope` (default: not published;
    /// hand [`Advertiser::advert`] to browsers another way).
    pub fn mdns(mut self, scope: Scope) -> Self {
        self.mdns = Some(scope);
        self
    }

    /// The DNS-SD service type (default [`tacit_net::mdns::DISCOVERY_SERVICE`]).
    pub fn service_type(mut self, service_type: impl Into<String>) -> Self {
        self.service_type = service_type.into();
        self
    }

    /// Always publish a pointer to the auxiliary service instead of the
    /// advertisement (as a BLE-sized broadcast would).
    pub fn pointer(mut self, on: bool) -> Self {
        self.pointer = on;
        self
    }

    /// Re-read the naming roots' revocation lists kept in the store at `path` every
    /// [`RELOAD_EVERY`] while serving (`tacit discover id refresh` writes them there):
    /// a revoked client is refused within seconds.
    pub fn revocations_from_store(mut self, path: impl AsRef<Path>) -> Self {
        self.store = Some(path.as_ref().to_owned());
        self
    }

    /// Called for everything the advertiser reports.
    pub fn on_event(mut self, f: impl Fn(AdvertiserEvent) + Send + Sync + 'static) -> Self {
        self.events = Arc::new(f);
        self
    }

    /// Network settings of the listeners (default [`NetConfig::default`]).
    pub fn net(mut self, net: NetConfig) -> Self {
        self.net = net;
        self
    }

    /// Binds the handshake listener at `addr` (port 0 picks one) and the auxiliary
    /// advertisement service next to it, and makes the first advertisement.
    pub async fn bind(self, addr: &str) -> Result<Advertiser, Error> {
        if self.refresh < MIN_REFRESH {
            return Err(Error::RefreshTooShort);
        }
        let listener = FramedListener::bind(addr, &self.net).await?;
        let local = listener.local_addr()?;
        let config = ServerConfig::new(self.creds.clone(), Some(self.prefix.clone()), true);
        let config = if self.allow_sigma {
            config.with_modes(&[Mode::Private, Mode::Sigma])
        } else {
            config
        };
        let events = self.events.clone();
        let state = Arc::new(ServerState {
            config,
            service: Service::new(self.creds.clone()),
            respond: self.respond.clone(),
            events: Arc::new(move |e| events(AdvertiserEvent::Connection(e))),
        });
        let aux_net = NetConfig {
            max_frame: carrier::AUX_MAX_FRAME,
            ..self.net
        };
        let aux_listener = FramedListener::bind(SocketAddr::new(local.ip(), 0), &aux_net).await?;
        let t = now();
        let current = state.service.refresh(
            &self.prefix.mpk,
            t,
            t + self.refresh.as_secs(),
            &mut SecureRng::from_os(),
        )?;
        Ok(Advertiser {
            listener,
            local,
            state,
            prefix: self.prefix.clone(),
            aux: AuxStore::new(),
            aux_listener,
            current,
            made: Instant::now(),
            o: self,
        })
    }
}

impl Advertiser {
    /// The handshake listener's address.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// The current advertisement (for a carrier of one's own: BLE, a QR code).
    pub fn advert(&self) -> Vec<u8> {
        self.current.advert().to_vec()
    }

    /// Serves until the task is dropped or an advertisement cannot be made or
    /// published.
    pub async fn serve(self) -> Result<(), Error> {
        self.run(None).await
    }

    /// Serves for `period`, then stops (the CLI's `--for-secs`).
    pub async fn serve_for(self, period: Duration) -> Result<(), Error> {
        self.run(Some(Instant::now() + period)).await
    }

    async fn run(self, deadline: Option<Instant>) -> Result<(), Error> {
        let Advertiser {
            listener,
            local,
            state,
            prefix,
            aux,
            aux_listener,
            mut current,
            made,
            o,
        } = self;
        let aux_port = aux_listener.local_addr()?.port();
        let server_state = state.clone();
        let limits = o.limits;
        let mut tasks = Tasks(vec![
            tokio::spawn(async move {
                let _ = service::serve_with(listener, server_state, limits).await;
            }),
            tokio::spawn(carrier::serve_aux(aux_listener, aux.clone())),
        ]);
        // Revocation lists imported into the store while the service runs take effect
        // within seconds: the credentials share the trusted roots' revocation state.
        if let Some(path) = o.store.clone() {
            let roots = o.creds.roots.clone();
            tasks.0.push(tokio::spawn(async move {
                loop {
                    tokio::time::sleep(RELOAD_EVERY).await;
                    if let Ok(st) = crate::stored::open(&path) {
                        let _ = crate::stored::apply_stored_lists(&st, &roots);
                    }
                }
            }));
        }
        let refresh = o.refresh.as_secs();
        let mut rng = SecureRng::from_os();
        // The advertisement made by `bind` serves the first period unless it is
        // already half spent.
        let mut fresh = made.elapsed() < o.refresh / 2;
        loop {
            if !fresh {
                let t = now();
                current = state.service.refresh(&prefix.mpk, t, t + refresh, &mut rng)?;
            }
            fresh = false;
            let advert = current.advert();
            // Only addresses others can connect to are announced (issue 28).
            let _publication = match o.mdns.map(|scope| tacit_net::mdns::reach(local, scope)) {
                Some(Ok(reach)) => {
                    let budget = if o.pointer { Budget::Ble } else { Budget::Mdns };
                    let p = carrier::publish_at(
                        advert,
                        budget,
                        reach.scope,
                        &o.service_type,
                        &reach.addrs,
                        local.port(),
                        Some((&aux, aux_port)),
                    )
                    .await?;
                    (o.events)(AdvertiserEvent::Advertised {
                        fullname: p.fullname().to_string(),
                        bytes: advert.len(),
                        via_pointer: p.pointer().is_some(),
                        valid_secs: refresh,
                    });
                    if let Some(note) = reach.note {
                        (o.events)(AdvertiserEvent::ReachNote(note));
                    }
                    Some(p)
                }
                Some(Err(why)) => {
                    (o.events)(AdvertiserEvent::NotAdvertised(why));
                    None
                }
                None => {
                    (o.events)(AdvertiserEvent::AdvertMade { bytes: advert.len() });
                    None
                }
            };
            let wait = Duration::from_secs(refresh.saturating_sub(5).max(5));
            let sleep = match deadline {
                Some(d) => {
                    let left = d.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        break;
                    }
                    wait.min(left)
                }
                None => wait,
            };
            tokio::time::sleep(sleep).await;
            if deadline.is_some_and(|d| Instant::now() >= d) {
                break;
            }
        }
        drop(tasks);
        Ok(())
    }
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Aborts the advertiser's tasks when serving ends (or its future is dropped).
struct Tasks(Vec<tokio::task::JoinHandle<()>>);

impl Drop for Tasks {
    fn drop(&mut self) {
        for t in &self.0 {
            t.abort();
        }
    }
}
