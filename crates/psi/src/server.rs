//! The PSI sender as a server a product embeds: what `tacit psi serve` runs, as a
//! builder.
//!
//! ```no_run
//! # async fn demo() -> Result<(), tacit_psi::ServiceError> {
//! let book = ["alice@example.com", "15551230000"];
//! let server = tacit_psi::Server::builder().set(book).bind("0.0.0.0:7878").await?;
//! println!("clients pin {:02x?}", server.fingerprint());
//! server.serve().await?;
//! # Ok(()) }
//! ```
//!
//! [`ServerBuilder::bind`] checks the set against the bound `n`, binds the address
//! (early clients queue), makes the key and precomputation (reported through
//! [`ServerBuilder::on_event`]) and returns the ready [`Server`];
//! [`Server::serve`] answers sessions until [`ServerBuilder::sessions`] were
//! accepted, or forever.
//!
//! The protections of `tacit psi serve` are the defaults here:
//!
//! * **TLS 1.3** with a self-signed Ed25519 key that clients pin (the key of
//!   [`ServerBuilder::tls`], or a fresh one per server); responses are bound to the
//!   TLS session ([`crate::Sender::respond_bound`]). Plain TCP only with the
//!   explicitly named [`ServerBuilder::plain_tcp`].
//! * **Concurrency with limits**: at most [`ServerBuilder::max_clients`] sessions at
//!   once (64) and [`ServerBuilder::max_per_address`] per address (16); a client
//!   beyond is refused at once with a one-line reason, and one slow client never
//!   delays another.
//! * **Deadlines**: every session runs under [`ServerBuilder::deadline`] (30 s) and
//!   every message under [`ServerBuilder::timeout`] (10 s); a frame larger than the
//!   parameters' largest message is refused before it is read.
//! * **The greeting** (`docs/wire.md`): a client of another protocol or version is
//!   refused with a line that names both.
//! * **Precomputation**: a fresh key per session by default, made ahead of the
//!   sessions ([`ServerBuilder::ahead`]); or one per epoch
//!   ([`ServerBuilder::reuse`] with [`Reuse::WithinEpoch`]), kept in the store with
//!   [`ServerBuilder::address_book`] and reused until the address book changes —
//!   one process at a time makes it (a lock file beside the store).

use crate::service::{self, Event, SenderPool, ServiceConfig, Supply};
use crate::{PsiParams, Result as PsiResult, Reuse, Sender, SenderKey, SenderPrecomputation, ServiceError, TLS_NAME};
use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tacit_crypto::rng::SecureRng;
use tacit_crypto::{GroupId, P256, PrimeGroup, Ristretto255};
use tacit_net::tls::SelfSigned;
use tacit_net::{FramedListener, NetConfig};
use tacit_store::Store;

type Result<T> = core::result::Result<T, ServiceError>;

/// How far the precomputation is (for a progress bar).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// Elements done.
    pub done: u64,
    /// Elements in all.
    pub total: u64,
}

/// Something the server reports, in the order it happens (`tacit psi serve` prints
/// each as a line on standard error).
#[derive(Debug, Clone)]
pub enum ServerEvent {
    /// The address is bound; the precomputation starts (clients that come now wait
    /// for it).
    Precomputing {
        /// The bound `n`: elements the answer covers, padding included.
        elements: u32,
        /// Distinct real elements.
        distinct: usize,
    },
    /// Another process holds the store's precomputation lock; this one waits for it
    /// (and then reuses what the other stored).
    WaitingForStore {
        /// The store.
        store: PathBuf,
        /// The other process, as it wrote in the lock file (`?` when unknown).
        pid: String,
    },
    /// Precomputation progress (from many threads: `done` only grows in total, two
    /// reports may arrive out of order).
    Progress(Progress),
    /// The key and precomputation kept in the store were reused.
    ReusedStored {
        /// The key's epoch.
        key_epoch: u64,
        /// The address book's version they were made for.
        contacts_version: u64,
    },
    /// A key and precomputation were made and kept in the store.
    Stored {
        /// The key's epoch.
        key_epoch: u64,
        /// The address book's version they were made for.
        contacts_version: u64,
    },
    /// What happened to one connection. `why` of [`Event::Failed`] may hold words
    /// the peer chose: escape it before printing it to a terminal.
    Session(Event),
}

type Events = Arc<dyn Fn(ServerEvent) + Send + Sync>;

enum SetSource {
    Items(Vec<Vec<u8>>),
    AddressBook(Box<Store>),
}

enum Channel {
    /// A fresh self-signed key for this server.
    Fresh,
    Tls(SelfSigned),
    Plain,
}

/// Configures a PSI [`Server`]; see the [module documentation](self) for the
/// defaults.
pub struct ServerBuilder {
    params: PsiParams,
    set: Option<SetSource>,
    reuse: Reuse,
    max_clients: usize,
    max_per_address: usize,
    deadline: Duration,
    timeout: Duration,
    ahead: usize,
    sessions: Option<u64>,
    channel: Channel,
    events: Events,
}

impl core::fmt::Debug for ServerBuilder {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ServerBuilder")
            .field("params", &self.params)
            .field("reuse", &self.reuse)
            .field("max_clients", &self.max_clients)
            .field("max_per_address", &self.max_per_address)
            .field("deadline", &self.deadline)
            .field("timeout", &self.timeout)
            .field("sessions", &self.sessions)
            .finish_non_exhaustive()
    }
}

/// A bound PSI server with its precomputation made: [`Server::serve`] answers.
pub struct Server {
    addr: SocketAddr,
    fingerprint: Option<[u8; 32]>,
    params: PsiParams,
    distinct: usize,
    precompute_time: Duration,
    serving: Pin<Box<dyn Future<Output = PsiResult<()>> + Send>>,
}

impl core::fmt::Debug for Server {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Server")
            .field("addr", &self.addr)
            .field("tls", &self.fingerprint.is_some())
            .field("params", &self.params)
            .field("distinct", &self.distinct)
            .finish_non_exhaustive()
    }
}

impl Server {
    /// A builder with `tacit psi serve`'s defaults: [`PsiParams::default`]
    /// (ristretto255, malicious-secure, m = 10, n = 10 000, λ = 40), a fresh key per
    /// session, TLS with a fresh key, 64 clients (16 per address), 30 s per session,
    /// 10 s per message, serving forever.
    pub fn builder() -> ServerBuilder {
        ServerBuilder {
            params: PsiParams::default(),
            set: None,
            reuse: Reuse::FreshPerSession,
            max_clients: 64,
            max_per_address: service::DEFAULT_MAX_PER_ADDRESS,
            deadline: Duration::from_secs(30),
            timeout: Duration::from_secs(10),
            ahead: 2,
            sessions: None,
            channel: Channel::Fresh,
            events: Arc::new(|_| {}),
        }
    }

    /// The bound address (port 0 asked for a free one).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The SHA-256 fingerprint of the server's TLS key, which clients pin
    /// ([`crate::ClientBuilder::pin`]); `None` on plain TCP.
    pub fn fingerprint(&self) -> Option<[u8; 32]> {
        self.fingerprint
    }

    /// The protocol parameters (clients must use the same).
    pub fn params(&self) -> &PsiParams {
        &self.params
    }

    /// Distinct real elements served (the rest of the `n` is padding).
    pub fn distinct(&self) -> usize {
        self.distinct
    }

    /// How long the first precomputation took (after the address was bound).
    pub fn precompute_time(&self) -> Duration {
        self.precompute_time
    }

    /// Answers sessions until [`ServerBuilder::sessions`] were accepted (then waits
    /// for those in progress), or forever. A failed session is reported through
    /// [`ServerBuilder::on_event`] and serving goes on; this returns an error only
    /// when no further session can be answered (the fresh-key thread failed).
    pub async fn serve(self) -> Result<()> {
        Ok(self.serving.await?)
    }
}

impl ServerBuilder {
    /// The protocol parameters (default [`PsiParams::default`]); clients must use the
    /// same.
    pub fn params(mut self, params: PsiParams) -> Self {
        self.params = params;
        self
    }

    /// The sender's set (duplicates count once; at most `n` distinct elements).
    pub fn set<I>(mut self, items: I) -> Self
    where
        I: IntoIterator,
        I::Item: AsRef<[u8]>,
    {
        self.set = Some(SetSource::Items(
            items.into_iter().map(|i| i.as_ref().to_vec()).collect(),
        ));
        self
    }

    /// Serves the address book of `store` (`tacit contacts import`). With
    /// [`Reuse::WithinEpoch`] the key and precomputation are kept in the store and
    /// reused by later servers until the address book changes; one process at a time
    /// makes them (the others wait and reuse).
    pub fn address_book(mut self, store: Store) -> Self {
        self.set = Some(SetSource::AddressBook(Box::new(store)));
        self
    }

    /// When a new key and precomputation are made: for every session
    /// ([`Reuse::FreshPerSession`], the default: nothing links two sessions) or once
    /// per server or stored epoch ([`Reuse::WithinEpoch`]: faster; a client that
    /// queries twice learns how the set changed in between, see `docs/psi.md`).
    pub fn reuse(mut self, reuse: Reuse) -> Self {
        self.reuse = reuse;
        self
    }

    /// Most sessions in progress at once (default 64); further clients are refused at
    /// once (a client from a less busy address takes the slot of the busiest
    /// address's oldest connection instead).
    pub fn max_clients(mut self, n: usize) -> Self {
        self.max_clients = n;
        self
    }

    /// Most sessions one address (IPv4 address or IPv6 /64) holds at once (default
    /// 16).
    pub fn max_per_address(mut self, n: usize) -> Self {
        self.max_per_address = n;
        self
    }

    /// How long a whole session may take (default 30 s).
    pub fn deadline(mut self, d: Duration) -> Self {
        self.deadline = d;
        self
    }

    /// How long to wait for each message (default 10 s).
    pub fn timeout(mut self, d: Duration) -> Self {
        self.timeout = d;
        self
    }

    /// With [`Reuse::FreshPerSession`]: precomputations kept ready ahead of the
    /// sessions (default 2; memory stays bounded by this).
    pub fn ahead(mut self, n: usize) -> Self {
        self.ahead = n;
        self
    }

    /// Stop after this many sessions were accepted (0: as soon as the precomputation
    /// is ready); the default serves forever.
    pub fn sessions(mut self, n: u64) -> Self {
        self.sessions = Some(n);
        self
    }

    /// Serve over TLS 1.3 with this key (keep it, for example in a store, so that
    /// clients' pins stay valid across restarts). Without this call the server
    /// makes a fresh key.
    pub fn tls(mut self, identity: SelfSigned) -> Self {
        self.channel = Channel::Tls(identity);
        self
    }

    /// **Unsafe on a network**: serve over plain TCP. Anyone on the path sees the
    /// sizes and can replace the whole response with one computed over another set
    /// (the client then learns a wrong intersection). For latency measurements and
    /// clients that cannot run TLS.
    pub fn plain_tcp(mut self) -> Self {
        self.channel = Channel::Plain;
        self
    }

    /// Receives the server's [`ServerEvent`]s (from several threads).
    pub fn on_event(mut self, f: impl Fn(ServerEvent) + Send + Sync + 'static) -> Self {
        self.events = Arc::new(f);
        self
    }

    /// Binds `addr` (port 0 picks a free port), makes the key and precomputation and
    /// returns the ready server. Refuses a set over the bound `n` before binding.
    pub async fn bind(self, addr: impl tokio::net::ToSocketAddrs + std::fmt::Display) -> Result<Server> {
        self.params.validate()?;
        if self.max_clients == 0 {
            return Err(ServiceError::Config("max_clients must be at least 1".into()));
        }
        if self.max_per_address == 0 {
            return Err(ServiceError::Config("max_per_address must be at least 1".into()));
        }
        if self.deadline.is_zero() || self.timeout.is_zero() {
            return Err(ServiceError::Config(
                "the deadline and timeout must be longer than zero".into(),
            ));
        }
        match self.params.group {
            GroupId::Ristretto255 => self.bind_in::<Ristretto255>(addr).await,
            GroupId::P256 => self.bind_in::<P256>(addr).await,
        }
    }

    async fn bind_in<G: PrimeGroup>(self, addr: impl tokio::net::ToSocketAddrs + std::fmt::Display) -> Result<Server> {
        let ServerBuilder {
            params,
            set,
            reuse,
            max_clients,
            max_per_address,
            deadline,
            timeout,
            ahead,
            sessions,
            channel,
            events,
        } = self;
        let (set, store) = match set {
            Some(SetSource::Items(items)) => (items, None),
            Some(SetSource::AddressBook(st)) => {
                let book: Vec<Vec<u8>> = st.address_book()?.into_iter().map(String::into_bytes).collect();
                if book.is_empty() {
                    return Err(ServiceError::EmptyAddressBook);
                }
                (book, Some(st))
            }
            None => {
                return Err(ServiceError::Config(
                    "no set to serve: give Server::builder().set(..) or .address_book(..)".into(),
                ));
            }
        };
        let distinct = set.iter().collect::<std::collections::HashSet<_>>().len();
        if distinct > params.max_sender as usize {
            return Err(ServiceError::SetTooLarge {
                distinct,
                max: params.max_sender,
            });
        }
        let net = NetConfig::default()
            .with_max_frame_at_least(params.max_message_len())
            .with_deadline(deadline)
            .with_read_timeout(timeout);
        let listener = FramedListener::bind(&addr, &net)
            .await
            .map_err(|source| ServiceError::Listen {
                addr: addr.to_string(),
                source,
            })?;
        let local = listener.local_addr()?;
        events(ServerEvent::Precomputing {
            elements: params.max_sender,
            distinct,
        });
        let started = Instant::now();
        let ev = events.clone();
        // On a thread of its own (the work itself runs on rayon's pool), not tokio's
        // blocking pool: that pool keeps its threads for a while and grows without
        // regard to the caller's thread budget (`psi serve --threads`).
        let (tx, rx) = tokio::sync::oneshot::channel();
        std::thread::Builder::new()
            .name("tacit-psi-precompute".into())
            .spawn(move || {
                let _ = tx.send(supply::<G>(params, set, store, reuse, ahead, &ev));
            })
            .map_err(|e| ServiceError::Config(format!("cannot start the precomputation thread: {e}")))?;
        let supply = rx.await.map_err(|_| ServiceError::Precomputation)??;
        let precompute_time = started.elapsed();
        let identity = match channel {
            Channel::Fresh => Some(SelfSigned::generate(TLS_NAME)?),
            Channel::Tls(id) => Some(id),
            Channel::Plain => None,
        };
        let (fingerprint, tls) = match &identity {
            Some(id) => (Some(id.fingerprint()?), Some(id.server_config()?)),
            None => (None, None),
        };
        let cfg = ServiceConfig {
            max_clients,
            max_per_address,
            net,
            tls,
        };
        let ev = events.clone();
        let serving = Box::pin(service::serve(
            listener,
            Arc::new(supply),
            cfg,
            sessions,
            Arc::new(move |e| ev(ServerEvent::Session(e))),
        ));
        Ok(Server {
            addr: local,
            fingerprint,
            params,
            distinct,
            precompute_time,
            serving,
        })
    }
}

/// The senders of a server: one per epoch (kept in the store when there is one), or
/// fresh ones made ahead by a thread. Runs on a blocking thread.
fn supply<G: PrimeGroup>(
    params: PsiParams,
    set: Vec<Vec<u8>>,
    store: Option<Box<Store>>,
    reuse: Reuse,
    ahead: usize,
    events: &Events,
) -> Result<Supply<G>> {
    let mut rng = SecureRng::from_os();
    Ok(match (store, reuse) {
        (Some(mut st), Reuse::WithinEpoch) => Supply::Epoch(Arc::new(stored_epoch_sender::<G>(
            &mut st, &params, &set, &mut rng, events,
        )?)),
        (None, Reuse::WithinEpoch) => Supply::Epoch(Arc::new(make_sender::<G>(
            &params,
            &set,
            1,
            Reuse::WithinEpoch,
            &mut rng,
            &progress_to(events),
        )?)),
        (_, Reuse::FreshPerSession) => {
            // The first one with progress reports, the rest in the background.
            let first = make_sender::<G>(&params, &set, 1, Reuse::FreshPerSession, &mut rng, &progress_to(events))?;
            let first = std::sync::Mutex::new(Some(first));
            let epoch = AtomicU64::new(1);
            Supply::Fresh(SenderPool::start(ahead, move || {
                if let Some(s) = first.lock().ok().and_then(|mut f| f.take()) {
                    return Ok(s);
                }
                let e = epoch.fetch_add(1, Ordering::Relaxed) + 1;
                let mut rng = SecureRng::from_os();
                let key = SenderKey::<G>::generate(&mut rng, e);
                let pre = SenderPrecomputation::compute(&params, &key, &set, Reuse::FreshPerSession, &mut rng)?;
                Sender::new(&params, key, pre)
            }))
        }
    })
}

fn progress_to(events: &Events) -> impl Fn(Progress) + Sync + '_ {
    move |p| events(ServerEvent::Progress(p))
}

/// Makes a key of `epoch` and its precomputation over `set` (on every core of
/// rayon's pool), reporting progress: what [`Server`] does before it serves, for a
/// caller that drives [`Sender`] itself.
pub fn make_sender<G: PrimeGroup>(
    params: &PsiParams,
    set: &[impl AsRef<[u8]> + Sync],
    epoch: u64,
    reuse: Reuse,
    rng: &mut SecureRng,
    progress: &(dyn Fn(Progress) + Sync),
) -> PsiResult<Sender<G>> {
    let key = SenderKey::<G>::generate(rng, epoch);
    let pre = precompute(params, &key, set, reuse, rng, progress)?;
    Sender::new(params, key, pre)
}

fn precompute<G: PrimeGroup>(
    params: &PsiParams,
    key: &SenderKey<G>,
    set: &[impl AsRef<[u8]> + Sync],
    reuse: Reuse,
    rng: &mut SecureRng,
    progress: &(dyn Fn(Progress) + Sync),
) -> PsiResult<SenderPrecomputation<G>> {
    let total = set.len() as u64;
    let done = AtomicU64::new(0);
    SenderPrecomputation::compute_with_progress(params, key, set, reuse, rng, &|k| {
        let d = done.fetch_add(k as u64, Ordering::Relaxed) + k as u64;
        progress(Progress { done: d, total });
    })
}

/// The key and precomputation of an address book kept in `st`: loaded when one was
/// made for the book's current version, else made and stored.
fn stored_epoch_sender<G: PrimeGroup>(
    st: &mut Store,
    params: &PsiParams,
    set: &[Vec<u8>],
    rng: &mut SecureRng,
    events: &Events,
) -> Result<Sender<G>> {
    // One process at a time makes (or loads) the key and precomputation: a second
    // server on this store waits for the first and reuses what it stored (issue 28),
    // instead of both computing and both storing.
    let _lock = match st.path() {
        Some(p) => Some(store_lock(p, events)?),
        None => None,
    };
    let purpose = format!("psi-sender/{}", G::ID.name());
    let version = st.contacts_version()?;
    let key = match st.current_key(&purpose)? {
        Some(k) => SenderKey::<G>::from_bytes(&k.secret).map_err(ServiceError::CorruptStoredKey)?,
        None => {
            let k = SenderKey::<G>::generate(rng, 1);
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0);
            st.put_key(&purpose, k.epoch(), &k.to_bytes(), now)?;
            k
        }
    };
    let kind = format!(
        "psi-sender/{}/{}/m{}/n{}/l{}",
        G::ID.name(),
        params.security.name(),
        params.max_receiver,
        params.max_sender,
        params.lambda
    );
    if let Some(blob) = st.get_precomputation(&kind, key.epoch(), version)?
        && let Ok(pre) = SenderPrecomputation::<G>::from_bytes(&blob)
        && let Ok(sender) = Sender::new(params, key.clone(), pre)
    {
        events(ServerEvent::ReusedStored {
            key_epoch: key.epoch(),
            contacts_version: version,
        });
        return Ok(sender);
    }
    let pre = precompute(params, &key, set, Reuse::WithinEpoch, rng, &progress_to(events))?;
    st.put_precomputation(&kind, key.epoch(), version, &pre.to_bytes())?;
    events(ServerEvent::Stored {
        key_epoch: key.epoch(),
        contacts_version: version,
    });
    Ok(Sender::new(params, key, pre)?)
}

/// Takes `<store>.psi-epoch.lock` (waiting, with an event, while another process
/// holds it) and writes this process's id in it; released when the file is dropped.
fn store_lock(store: &Path, events: &Events) -> Result<std::fs::File> {
    use std::io::{Read, Seek, Write};
    let mut p = store.as_os_str().to_owned();
    p.push(".psi-epoch.lock");
    let path = PathBuf::from(p);
    let fail = |action: &'static str, path: &Path| {
        let path = path.to_owned();
        move |source| ServiceError::Lock { action, path, source }
    };
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(fail("open", &path))?;
    match f.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::Error(e)) => return Err(fail("lock", &path)(e)),
        Err(std::fs::TryLockError::WouldBlock) => {
            let mut pid = String::new();
            let _ = f.read_to_string(&mut pid);
            let pid = pid.trim();
            events(ServerEvent::WaitingForStore {
                store: store.to_owned(),
                pid: if pid.is_empty() { "?".into() } else { pid.into() },
            });
            f.lock().map_err(fail("lock", &path))?;
        }
    }
    let write = |f: &mut std::fs::File| -> std::io::Result<()> {
        f.set_len(0)?;
        f.rewind()?;
        write!(f, "{}", std::process::id())?;
        f.flush()
    };
    write(&mut f).map_err(fail("lock", &path))?;
    Ok(f)
}
