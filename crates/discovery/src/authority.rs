//! The IBE root authority online (the paper's `IBE.Extract` run as a service, §3.1):
//! gives the prefix key of a name only to a requester that proves a valid blessing
//! for it over a fresh challenge ([`crate::key_request`]), and serves the naming
//! roots' revocation lists ([`crate::root_service`]). What
//! `tacit discover root serve` runs; [`fetch_prefix_key`] and [`fetch_revocations`]
//! are its clients (`tacit discover id fetch-prefix-key`, `id refresh`).
//!
//! ```no_run
//! # async fn f(msk: tacit_discovery::ibe::MasterSecretKey,
//! #            roots: tacit_discovery::blessing::TrustedRoots) -> Result<(), tacit_discovery::Error> {
//! use tacit_discovery::Authority;
//! let authority = Authority::builder(msk, roots)
//!     .revocations_from_store("ibe-root/root.sqlite3")
//!     .bind("0.0.0.0:7910")
//!     .await?;
//! authority.serve().await
//! # }
//! ```
//!
//! Safe by default: one key per trusted root name unless marked as a rollover
//! ([`AuthorityBuilder::rollover`]; prefix keys name only names), admission under
//! [`root_service::default_limits`], revoked or expired blessings refused.

use crate::Error;
use crate::blessing::TrustedRoots;
use crate::ibe::MasterSecretKey;
use crate::key_request::KeyAuthority;
use crate::prefix::PrefixAuthority;
use crate::root_service::{self, RootEvent, RootState};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tacit_net::guard::ServeLimits;
use tacit_net::{FramedListener, NetConfig};

pub use crate::root_service::{fetch_prefix_key, fetch_revocations};

/// Something the authority reports (the CLI prints these).
#[derive(Debug, Clone)]
pub enum AuthorityEvent {
    /// A connection ended: a key granted, lists served, or a refusal.
    Connection(RootEvent),
    /// A revocation list kept in the store does not verify and is not in force.
    StoredListIgnored {
        /// The list's issuer name in the store.
        issuer: String,
        /// Why.
        why: String,
    },
}

type Events = Arc<dyn Fn(AuthorityEvent) + Send + Sync>;

/// Configures an [`Authority`] (see [`Authority::builder`]).
pub struct AuthorityBuilder {
    authority: Arc<PrefixAuthority>,
    roots: TrustedRoots,
    rollover: Vec<String>,
    limits: ServeLimits,
    sessions: Option<u64>,
    store: Option<PathBuf>,
    events: Events,
    net: NetConfig,
}

impl core::fmt::Debug for AuthorityBuilder {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "AuthorityBuilder({} roots)", self.roots.iter().count())
    }
}

/// A bound IBE root authority; [`Authority::serve`] runs it.
pub struct Authority {
    listener: FramedListener,
    local: SocketAddr,
    state: Arc<RootState>,
    limits: ServeLimits,
    sessions: Option<u64>,
}

impl core::fmt::Debug for Authority {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Authority(on {})", self.local)
    }
}

impl Authority {
    /// The authority holding `msk`, honouring blessings under `roots` (the naming
    /// roots whose members may ask for their names' keys). Defaults:
    /// [`root_service::default_limits`], serve forever, no store.
    pub fn builder(msk: MasterSecretKey, roots: TrustedRoots) -> AuthorityBuilder {
        Self::builder_for(Arc::new(PrefixAuthority::from_master_secret_key(msk)), roots)
    }

    /// [`Authority::builder`] for an authority already in memory.
    pub fn builder_for(authority: Arc<PrefixAuthority>, roots: TrustedRoots) -> AuthorityBuilder {
        AuthorityBuilder {
            authority,
            roots,
            rollover: Vec::new(),
            limits: root_service::default_limits(),
            sessions: None,
            store: None,
            events: Arc::new(|_| {}),
            net: NetConfig::default(),
        }
    }
}

impl AuthorityBuilder {
    /// `name`'s trusted keys are one root's old and new keys (a key rollover):
    /// members under either get `name`'s prefix keys.
    pub fn rollover(mut self, name: impl Into<String>) -> Self {
        self.rollover.push(name.into());
        self
    }

    /// Admission limits (default [`root_service::default_limits`]).
    pub fn limits(mut self, limits: ServeLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Stop after this many connections (0: as soon as it is bound); default: never.
    pub fn sessions(mut self, n: Option<u64>) -> Self {
        self.sessions = n;
        self
    }

    /// The naming roots' revocation lists kept in the store at `path` (`tacit
    /// discover root revoke --dir`, `root import-revocations`): applied when bound,
    /// re-read at each connection (lists of roots not trusted are not in force) and
    /// served to `fetch_revocations`.
    pub fn revocations_from_store(mut self, path: impl AsRef<Path>) -> Self {
        self.store = Some(path.as_ref().to_owned());
        self
    }

    /// Called for everything the authority reports.
    pub fn on_event(mut self, f: impl Fn(AuthorityEvent) + Send + Sync + 'static) -> Self {
        self.events = Arc::new(f);
        self
    }

    /// Network settings of the listener.
    pub fn net(mut self, net: NetConfig) -> Self {
        self.net = net;
        self
    }

    /// Applies the stored revocation lists, refuses an ambiguous set of roots
    /// ([`Error::AmbiguousRootName`]) and binds the listener at `addr` (port 0 picks
    /// one).
    pub async fn bind(self, addr: &str) -> Result<Authority, Error> {
        if let Some(path) = &self.store {
            let st = crate::stored::open(path)?;
            for (issuer, e) in crate::stored::apply_stored_lists(&st, &self.roots) {
                (self.events)(AuthorityEvent::StoredListIgnored {
                    issuer,
                    why: e.to_string(),
                });
            }
        }
        let reload_roots = self.roots.clone();
        let mut authority = KeyAuthority::new(self.authority, self.roots);
        for name in &self.rollover {
            authority = authority.with_rollover(name);
        }
        // Issue 32: one root name, one root (unless marked as a rollover).
        if let Some((name, keys)) = authority.ambiguous_root_names().into_iter().next() {
            return Err(Error::AmbiguousRootName {
                name: name.to_string(),
                keys,
            });
        }
        let listener = FramedListener::bind(addr, &self.net).await?;
        let local = listener.local_addr()?;
        let reload: Option<Arc<dyn Fn() + Send + Sync>> = self.store.map(|path| {
            Arc::new(move || {
                if let Ok(st) = crate::stored::open(&path) {
                    let _ = crate::stored::apply_stored_lists(&st, &reload_roots);
                }
            }) as Arc<dyn Fn() + Send + Sync>
        });
        let events = self.events;
        Ok(Authority {
            listener,
            local,
            state: Arc::new(RootState {
                authority,
                reload,
                events: Arc::new(move |e| events(AuthorityEvent::Connection(e))),
            }),
            limits: self.limits,
            sessions: self.sessions,
        })
    }
}

impl Authority {
    /// The listener's address.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Serves key requests and revocation lists until the session count is reached
    /// (forever by default).
    pub async fn serve(self) -> Result<(), Error> {
        Ok(root_service::serve_with(self.listener, self.state, self.sessions, self.limits).await?)
    }
}
