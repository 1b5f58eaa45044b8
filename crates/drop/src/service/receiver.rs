//! A PrivateDrop receiver as a service ([`Receiver::builder`]): mutual TLS with the
//! account certificates of one CA, the mutual-contact check (two interleaved PSI runs
//! on certified inputs), offers checked against size limits and free space, files
//! streamed to a temporary file, hash-checked and placed without overwriting.

use super::{Result, ServiceError};
use crate::ca::DropIdentity;
use crate::protocol::{AddressBook, Discoverability, Peer, ReceiverOutcome};
use crate::records::CaPublicKey;
use crate::revocation::Revocations;
use crate::transport::{self, BookSupply, Event, Limits, ReceiverConfig};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tacit_crypto::PrimeGroup;
use tacit_crypto::rng::SecureRng;

/// A PrivateDrop receiver ([`Receiver::builder`]).
pub struct Receiver;

impl Receiver {
    /// A receiver with `identity` (enrolled with the CA whose key is `ca`) and the
    /// address book `book`. Defaults: discoverable by contacts only, every offer
    /// declined until [`ReceiverBuilder::accept`] says otherwise, files into the
    /// current folder, the limits of [`Limits::default`] (256 connections, 16 per
    /// address, 10 `StartPSI` per account and minute, files up to 4 GiB, 256 MiB kept
    /// free), every sender refused until the CA's revocation list is in force
    /// ([`ReceiverBuilder::revocations`]; [`ReceiverBuilder::insecure_no_revocations`]
    /// names the opposite), the legacy
    /// AirDrop flow off, nothing recorded, served forever.
    pub fn builder<G: PrimeGroup>(
        identity: Arc<DropIdentity<G>>,
        book: Arc<AddressBook>,
        ca: CaPublicKey,
    ) -> ReceiverBuilder<G> {
        ReceiverBuilder {
            identity,
            book,
            ca,
            revocations: Revocations::required(),
            mode: Discoverability::ContactsOnly,
            name: "tacit receiver".into(),
            dir: PathBuf::from("."),
            legacy: false,
            limits: Limits::default(),
            decide: Arc::new(|_| false),
            events: Arc::new(|_| {}),
            capture: None,
            sessions: None,
            ready: 2,
        }
    }
}

/// Configures a receiver ([`Receiver::builder`]).
pub struct ReceiverBuilder<G: PrimeGroup> {
    identity: Arc<DropIdentity<G>>,
    book: Arc<AddressBook>,
    ca: CaPublicKey,
    revocations: Revocations,
    mode: Discoverability,
    name: String,
    dir: PathBuf,
    legacy: bool,
    limits: Limits,
    decide: Arc<transport::Decide>,
    events: Arc<transport::Events>,
    capture: Option<PathBuf>,
    sessions: Option<u64>,
    ready: usize,
}

impl<G: PrimeGroup> ReceiverBuilder<G> {
    /// The CA's revocation list in force (shared: updating it reaches the running
    /// receiver); a sender whose account it names is refused right after the TLS
    /// handshake. See [`super::device::revocations_on_start`].
    pub fn revocations(mut self, r: Revocations) -> Self {
        self.revocations = r;
        self
    }

    /// Checks no revocation list: a sender whose account the CA revoked (a stolen
    /// phone) is still served. Without this or [`ReceiverBuilder::revocations`],
    /// every sender is refused with [`crate::Error::NoRevocationList`].
    pub fn insecure_no_revocations(mut self) -> Self {
        self.revocations = Revocations::new();
        self
    }

    /// Who may authenticate.
    pub fn mode(mut self, mode: Discoverability) -> Self {
        self.mode = mode;
        self
    }

    /// The device name senders see (unauthenticated, as every device name).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Where accepted files go (created if missing; partial files an interrupted
    /// receiver left there are removed on [`ReceiverBuilder::bind`]).
    pub fn dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.dir = dir.into();
        self
    }

    /// Limits and timeouts.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Decides on an authenticated offer (the sender as identified, its device name
    /// and files). Called on the session's task: a prompt blocks only that session.
    pub fn accept(mut self, decide: impl Fn(&ReceiverOutcome) -> bool + Send + Sync + 'static) -> Self {
        self.decide = Arc::new(decide);
        self
    }

    /// Accepts offers from senders that proved to be contacts, declines the rest.
    pub fn accept_contacts(self) -> Self {
        self.accept(|o| matches!(o.sender, Peer::Contact { .. }))
    }

    /// Where connections, authentications, progress and received files are reported.
    pub fn events(mut self, events: impl Fn(Event) + Send + Sync + 'static) -> Self {
        self.events = Arc::new(events);
        self
    }

    /// Stop after `n` connections (`None`: serve forever; 0: return once ready).
    pub fn sessions(mut self, n: Option<u64>) -> Self {
        self.sessions = n;
        self
    }

    /// Also serves the legacy AirDrop `/Discover` flow, which leaks the sender's and
    /// the receiver's identifier hashes to anyone (the paper's attack).
    pub fn serve_legacy_discover(mut self) -> Self {
        self.legacy = true;
        self
    }

    /// Appends every request body received to `file` (what a malicious receiver
    /// would record; [`crate::attack`] reads it).
    pub fn record_requests_to(mut self, file: impl Into<PathBuf>) -> Self {
        self.capture = Some(file.into());
        self
    }

    /// Prepares the folder, starts the address-book precomputations (waiting for the
    /// first), and binds `addr` (port 0 picks one).
    pub async fn bind(self, addr: &str) -> Result<RunningReceiver<G>> {
        let dir = self.dir;
        std::fs::create_dir_all(&dir).map_err(|e| ServiceError::io(format!("cannot create {}", dir.display()), e))?;
        // partial files an interrupted receiver (killed, or a crash) left behind
        let swept = transport::sweep_partial_files(&dir).map_err(|e| e.to_string());
        let params = self.identity.params;
        // One worker thread keeps the next sessions' precomputations ready; a session
        // never computes one itself.
        let t = Instant::now();
        let supply_book = self.book.clone();
        let supply = BookSupply::spawn(move || supply_book.fresh_sender::<G>(&params), self.ready);
        let first = supply.clone();
        tokio::task::spawn_blocking(move || {
            while first.ready() == 0 && first.made() == 0 {
                std::thread::sleep(Duration::from_millis(5));
            }
        })
        .await
        .map_err(|e| ServiceError::Invalid(format!("address-book precomputation: {e}")))?;
        let precomputed_in = t.elapsed();
        let capture = match self.capture {
            Some(p) => Some(Arc::new(Mutex::new(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&p)
                    .map_err(|e| ServiceError::io(format!("cannot open {}", p.display()), e))?,
            ))),
            None => None,
        };
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| ServiceError::io(format!("cannot listen on {addr}"), e))?;
        let local = listener
            .local_addr()
            .map_err(|e| ServiceError::io("cannot read the listening address", e))?;
        let book_len = self.book.len();
        Ok(RunningReceiver {
            listener,
            local,
            sessions: self.sessions,
            swept,
            precomputed_in,
            book_len,
            cfg: Arc::new(ReceiverConfig {
                identity: self.identity,
                book: self.book,
                ca: self.ca,
                revocations: self.revocations,
                mode: self.mode,
                name: self.name,
                dir,
                legacy: self.legacy,
                limits: self.limits,
                supply,
                decide: self.decide,
                events: self.events,
                capture,
            }),
        })
    }
}

/// A receiver, bound and precomputed ([`ReceiverBuilder::bind`]).
pub struct RunningReceiver<G: PrimeGroup> {
    listener: tokio::net::TcpListener,
    local: SocketAddr,
    sessions: Option<u64>,
    swept: core::result::Result<usize, String>,
    precomputed_in: Duration,
    book_len: usize,
    cfg: Arc<ReceiverConfig<G>>,
}

/// What advertising a receiver over mDNS did ([`RunningReceiver::advertise`]).
pub enum Advertised {
    /// Announced; dropping the advertisement withdraws it.
    Announced {
        /// The advertisement (its instance name: `fullname()`).
        advertisement: tacit_net::mdns::Advertisement,
        /// One line when the advert reaches less than was asked for.
        note: Option<String>,
    },
    /// Not announced: no advert would help (one line says why).
    Unreachable(String),
}

impl<G: PrimeGroup> RunningReceiver<G> {
    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// How many partial files of an interrupted receive were removed from the folder
    /// (or why the folder could not be looked at).
    pub fn swept(&self) -> core::result::Result<usize, &str> {
        self.swept.as_ref().map(|n| *n).map_err(|e| e.as_str())
    }

    /// How long the first address-book precomputation took.
    pub fn precomputed_in(&self) -> Duration {
        self.precomputed_in
    }

    /// Entries in the address book (padded to `n` in the PSI).
    pub fn book_len(&self) -> usize {
        self.book_len
    }

    /// `n`: the address book is padded to this many entries.
    pub fn max_contacts(&self) -> usize {
        self.cfg.identity.params.max_contacts()
    }

    /// The folder files go to.
    pub fn dir(&self) -> &Path {
        &self.cfg.dir
    }

    /// Advertises the receiver on mDNS/DNS-SD (`_tacit-drop._tcp`, a random instance
    /// name, `v=1` and no identifier in the TXT record), only on addresses others can
    /// connect to ([`tacit_net::mdns::reach`]).
    pub fn advertise(&self, scope: tacit_net::mdns::Scope) -> Result<Advertised> {
        match tacit_net::mdns::reach(self.local, scope) {
            Err(why) => Ok(Advertised::Unreachable(why)),
            Ok(reach) => {
                let mut random = [0u8; 8];
                rand_core::RngCore::fill_bytes(&mut SecureRng::from_os(), &mut random);
                let advertisement = tacit_net::mdns::advertise(
                    tacit_net::mdns::DROP_SERVICE,
                    self.local.port(),
                    &reach.addrs,
                    reach.scope,
                    random,
                )?;
                Ok(Advertised::Announced {
                    advertisement,
                    note: reach.note,
                })
            }
        }
    }

    /// Serves senders concurrently under the limits until the configured number of
    /// connections was handled (or forever).
    pub async fn serve(self) -> Result<()> {
        Ok(transport::serve(self.listener, self.cfg, self.sessions).await?)
    }
}
