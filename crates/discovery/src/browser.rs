//! The browser (the paper's client `C`, §4–5): finds advertisements over mDNS, opens
//! those its prefix key can read and its policy accepts, and talks to a service with
//! 0-RTT (§5) or with private mutual authentication / SIGMA-I at a known address
//! (§4). What `tacit discover browse` and `tacit discover connect` run.
//!
//! ```no_run
//! # async fn f(creds: tacit_discovery::handshake::Credentials,
//! #            prefix: tacit_discovery::handshake::PrefixCredentials) -> Result<(), tacit_discovery::Error> {
//! use tacit_discovery::Browser;
//! let browser = Browser::builder(creds).prefix(prefix).build();
//! let found = browser.browse().await?;
//! for s in &found.services {
//!     let reply = browser.zero_rtt(s, b"status?").await?;
//!     println!("{}: {}", s.name(), String::from_utf8_lossy(&reply.response));
//! }
//! println!("{} advertisement(s) this identity cannot read", found.unreadable);
//! # Ok(()) }
//! ```
//!
//! An advertisement or a service outside this identity's policy, or whose policy
//! this identity does not satisfy, is refused before this side reveals anything:
//! the browser counts it as unreadable; a handshake stops before our identity is
//! sent.

use crate::Error;
use crate::carrier::{self, MAX_DISCOVERED};
use crate::handshake::zero_rtt::{DiscoveredService, open_advert};
use crate::handshake::{Credentials, DecryptionCache, Mode, PrefixCredentials};
use crate::service::{self, ClientOutcome};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tacit_net::NetConfig;
use tacit_net::mdns::Scope;

/// What a browse left out (counted and said, never dropped silently: issue 28).
#[derive(Debug, Clone)]
pub enum BrowseEvent {
    /// Instances whose TXT record is malformed.
    Malformed {
        /// How many.
        count: usize,
        /// The first one's instance name.
        first: String,
        /// Why it was refused.
        why: String,
    },
    /// Instances whose advertisement could not be fetched.
    Unfetched {
        /// How many.
        count: usize,
        /// The first one's instance name.
        first: String,
        /// Why.
        why: String,
    },
    /// Instances past the first [`MAX_DISCOVERED`], not looked at.
    OverLimit {
        /// How many.
        count: usize,
        /// The limit.
        limit: usize,
    },
}

/// A service this identity may see: its advertisement opened with our prefix key,
/// its name validated and accepted by our policy.
#[derive(Debug, Clone)]
pub struct Visible {
    /// The opened advertisement (the service's validated name, its expiry).
    pub service: DiscoveredService,
    /// Where its handshakes are served (`None`: the record carried no address).
    pub address: Option<SocketAddr>,
    /// The advertisement's size.
    pub advert_bytes: usize,
    /// Whether the advertisement was fetched through a pointer.
    pub via_pointer: bool,
}

impl Visible {
    /// The service's validated name.
    pub fn name(&self) -> String {
        self.service.server.name().to_string()
    }

    /// When its advertisement expires (Unix seconds).
    pub fn expires_at(&self) -> u64 {
        self.service.expiry
    }
}

/// What [`Browser::browse`] found.
#[derive(Debug, Clone, Default)]
pub struct Browsed {
    /// The services this identity may see, in the order they were resolved.
    pub services: Vec<Visible>,
    /// Advertisements this identity cannot read (another policy, another IBE root).
    pub unreadable: usize,
    /// Instances left out for a malformed record.
    pub malformed: usize,
    /// Instances left out because their advertisement could not be fetched.
    pub unfetched: usize,
    /// Instances past the first [`MAX_DISCOVERED`].
    pub over_limit: usize,
}

type Events = Arc<dyn Fn(BrowseEvent) + Send + Sync>;

/// Configures a [`Browser`] (see [`Browser::builder`]).
pub struct BrowserBuilder {
    b: Browser,
}

impl core::fmt::Debug for BrowserBuilder {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "BrowserBuilder({:?})", self.b.creds)
    }
}

/// A client: browses for advertisements and connects to services.
#[derive(Clone)]
pub struct Browser {
    creds: Credentials,
    prefix: Option<PrefixCredentials>,
    cache: Option<Arc<DecryptionCache>>,
    service_type: String,
    scope: Scope,
    wait: Duration,
    net: NetConfig,
    events: Events,
}

impl core::fmt::Debug for Browser {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Browser({:?}, {:?})", self.creds, self.prefix)
    }
}

impl Browser {
    /// A client presenting `creds` (its blessing, and its policy: which services it
    /// accepts). Defaults: no prefix key (SIGMA-I only, until
    /// [`BrowserBuilder::prefix`]), mDNS on every interface, the service type
    /// [`tacit_net::mdns::DISCOVERY_SERVICE`], 3 s of listening, [`NetConfig::default`].
    pub fn builder(creds: Credentials) -> BrowserBuilder {
        BrowserBuilder {
            b: Browser {
                creds,
                prefix: None,
                cache: None,
                service_type: tacit_net::mdns::DISCOVERY_SERVICE.to_string(),
                scope: Scope::All,
                wait: Duration::from_secs(3),
                net: NetConfig::default(),
                events: Arc::new(|_| {}),
            },
        }
    }
}

impl BrowserBuilder {
    /// The IBE root's public key and our prefix key: needed to read advertisements
    /// and for private mutual authentication.
    pub fn prefix(mut self, prefix: PrefixCredentials) -> Self {
        self.b.prefix = Some(prefix);
        self
    }

    /// Cache decrypted server identities across private handshakes (§6.2).
    pub fn cache(mut self, cache: Arc<DecryptionCache>) -> Self {
        self.b.cache = Some(cache);
        self
    }

    /// The DNS-SD service type to browse.
    pub fn service_type(mut self, service_type: impl Into<String>) -> Self {
        self.b.service_type = service_type.into();
        self
    }

    /// Where mDNS runs.
    pub fn scope(mut self, scope: Scope) -> Self {
        self.b.scope = scope;
        self
    }

    /// How long to listen for advertisements.
    pub fn wait(mut self, wait: Duration) -> Self {
        self.b.wait = wait;
        self
    }

    /// Network settings (frame size, deadlines).
    pub fn net(mut self, net: NetConfig) -> Self {
        self.b.net = net;
        self
    }

    /// Called for what a browse leaves out.
    pub fn on_event(mut self, f: impl Fn(BrowseEvent) + Send + Sync + 'static) -> Self {
        self.b.events = Arc::new(f);
        self
    }

    /// The browser.
    pub fn build(self) -> Browser {
        self.b
    }
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl Browser {
    /// The IBE material (an advertisement that needs a key we lack stays unreadable).
    fn prefix(&self) -> Result<&PrefixCredentials, Error> {
        self.prefix.as_ref().ok_or(Error::NoPrefixKey)
    }

    /// Listens for advertisements and opens those this identity may read; reports
    /// what it left out through [`BrowserBuilder::on_event`].
    pub async fn browse(&self) -> Result<Browsed, Error> {
        let prefix = self.prefix()?;
        let found = carrier::discover_all(&self.service_type, self.scope, self.wait, &self.net).await?;
        let mut out = Browsed {
            malformed: found.malformed.len(),
            unfetched: found.unfetched.len(),
            over_limit: found.over_limit,
            ..Browsed::default()
        };
        if let Some((first, why)) = found.malformed.first() {
            (self.events)(BrowseEvent::Malformed {
                count: out.malformed,
                first: first.clone(),
                why: why.to_string(),
            });
        }
        if let Some((first, why)) = found.unfetched.first() {
            (self.events)(BrowseEvent::Unfetched {
                count: out.unfetched,
                first: first.clone(),
                why: why.to_string(),
            });
        }
        if found.over_limit > 0 {
            (self.events)(BrowseEvent::OverLimit {
                count: found.over_limit,
                limit: MAX_DISCOVERED,
            });
        }
        for d in found.adverts {
            let address = d.addrs.first().map(|ip| SocketAddr::new(*ip, d.handshake_port));
            match open_advert(&d.advert, &self.creds, prefix, now()) {
                Ok(service) => out.services.push(Visible {
                    service,
                    address,
                    advert_bytes: d.advert.len(),
                    via_pointer: d.pointer.is_some(),
                }),
                Err(_) => out.unreadable += 1,
            }
        }
        Ok(out)
    }

    /// Opens an advertisement received some other way (BLE, a QR code, a file) of a
    /// service at `address`: the same checks as [`Browser::browse`]'s (a handshake
    /// error, e.g. [`crate::handshake::Error::NotAuthorizedByPeer`], when this
    /// identity may not read it).
    pub fn open(&self, advert: &[u8], address: Option<SocketAddr>) -> Result<Visible, Error> {
        let service = open_advert(advert, &self.creds, self.prefix()?, now())?;
        Ok(Visible {
            service,
            address,
            advert_bytes: advert.len(),
            via_pointer: false,
        })
    }

    /// 0-RTT with a visible service: `early` travels in the first flight, the
    /// service's response comes back in its only reply.
    pub async fn zero_rtt(&self, service: &Visible, early: &[u8]) -> Result<ClientOutcome, Error> {
        let addr = service.address.ok_or_else(|| Error::NoAddress(service.name()))?;
        Ok(service::connect_zero_rtt(
            &addr.to_string(),
            service.service.clone(),
            &self.creds,
            early,
            &self.net,
        )
        .await?)
    }

    /// Private mutual authentication ([`Mode::Private`], needs the prefix key) or
    /// SIGMA-I with the service at `addr`, then one request and its response.
    pub async fn connect(&self, addr: &str, mode: Mode, request: &[u8]) -> Result<ClientOutcome, Error> {
        let prefix = match mode {
            Mode::Private => Some(
                self.prefix
                    .as_ref()
                    .filter(|p| p.key.is_some())
                    .ok_or(Error::NoPrefixKey)?,
            ),
            Mode::Sigma => self.prefix.as_ref(),
        };
        Ok(service::connect(addr, mode, &self.creds, prefix, self.cache.clone(), request, &self.net).await?)
    }
}
