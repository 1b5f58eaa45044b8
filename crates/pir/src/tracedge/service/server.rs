//! The TracEdge server over TLS 1.3: one process per store ([`operator::ServeLock`]),
//! the listener bound before anything is built or recorded, concurrent sessions'
//! queries answered in one pass over the table, the table log kept and published,
//! registrations and removals written on the fly, rekeys built while serving.
//!
//! Per message from a peer, what it can make the server do:
//!
//! * `Hello` → a signed `Commit` (a replay-set entry; the set is bounded, beyond it
//!   the server answers "busy");
//! * `LogRequest` → public log records;
//! * `HintRequest` → the public hint, **once per connection**;
//! * `Queries` → one PIR pass for the session, after the session's queries passed
//!   their own checks (a bad one fails alone, never its batch);
//! * `ClientAuth` → a MAC check;
//! * `EnrollRequest` (open enrolment only) → a registration, after a proof that the
//!   requester holds the key's secret, rate-limited per address.
//!
//! Every frame a peer sends is bounded by what the protocol allows at that step
//! (queries by the table's size, everything else by a few KB), connections are capped
//! in all and per address, and each has a deadline.

use std::collections::HashMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use tacit_crypto::rng::SecureRng;
use tacit_crypto::sign::SigningKey;
use tacit_net::guard::{self, Guard, ServeLimits};
use tacit_net::{FramedConn, FramedListener, NetConfig};
use tacit_store::Store;
use tacit_wire::{Decode, Encode, Envelope};
use tokio::sync::{mpsc, oneshot};

use super::operator::{self, ServeLock, ServerKeys};
use super::{Result, ServiceError, now_ms};
use crate::tracedge::*;
use crate::{LweAnyServer, LweBackend};

/// Something the server reports (the CLI prints these).
#[derive(Debug, Clone)]
pub enum ServerEvent {
    /// The listener is bound.
    Listening {
        /// Where.
        addr: std::net::SocketAddr,
        /// The TLS pin.
        pin: [u8; 32],
        /// The Ed25519 key.
        server_key: [u8; 32],
    },
    /// Rows of a table being built (done, total).
    BuildProgress {
        /// The epoch.
        epoch: u64,
        /// Rows done.
        done: u64,
        /// Rows in all.
        total: u64,
    },
    /// A table is built.
    TableBuilt {
        /// The epoch.
        epoch: u64,
        /// Seconds it took.
        secs: f64,
        /// Rows.
        rows: u64,
    },
    /// A table is current (the previous one deprecated).
    TableCurrent {
        /// The epoch.
        epoch: u64,
    },
    /// Rows written on the fly (registrations and removals), as log entry `seq`.
    RowsApplied {
        /// The rows.
        rows: Vec<u64>,
        /// The log entry.
        seq: u64,
    },
    /// A subscriber left (or a row's key changed): a rekey starts.
    Rekeying {
        /// The new epoch.
        epoch: u64,
    },
    /// The keys of a deprecated table expired.
    KeysExpired {
        /// The epoch.
        epoch: u64,
    },
    /// A session ended.
    Session {
        /// The peer.
        peer: String,
        /// What happened.
        what: String,
    },
    /// Table management failed (the server keeps serving).
    Management(String),
}

/// Server options (see [`ServerBuilder`]).
#[derive(Clone)]
struct Options {
    listen: String,
    open_enrollment: bool,
    batch: usize,
    sessions: Option<u64>,
    backend: LweBackend,
    cheat_rows: Vec<u64>,
    cheat_equivocate: bool,
    max_connections: usize,
    max_per_address: usize,
    session_deadline: Duration,
    events: Arc<dyn Fn(ServerEvent) + Send + Sync>,
}

/// Configures a [`Server`].
pub struct ServerBuilder {
    store: PathBuf,
    o: Options,
}

/// The TracEdge server of a store.
pub struct Server;

impl Server {
    /// A server for the store at `store` (made by [`operator::init`]).
    pub fn builder(store: impl AsRef<Path>) -> ServerBuilder {
        ServerBuilder {
            store: store.as_ref().to_owned(),
            o: Options {
                listen: "127.0.0.1:7690".into(),
                open_enrollment: false,
                batch: 32,
                sessions: None,
                backend: LweBackend::Cpu,
                cheat_rows: Vec::new(),
                cheat_equivocate: false,
                max_connections: 512,
                max_per_address: 32,
                session_deadline: Duration::from_secs(120),
                events: Arc::new(|_| {}),
            },
        }
    }
}

impl ServerBuilder {
    /// The address to listen on (default `127.0.0.1:7690`; port 0 picks one).
    pub fn listen(mut self, addr: impl Into<String>) -> Self {
        self.o.listen = addr.into();
        self
    }

    /// Accept enrolment requests (with a proof of possession) from anyone.
    pub fn open_enrollment(mut self, on: bool) -> Self {
        self.o.open_enrollment = on;
        self
    }

    /// Most queries answered in one pass over the table (default 32).
    pub fn batch(mut self, n: usize) -> Self {
        self.o.batch = n.max(1);
        self
    }

    /// Stop after this many sessions; 0 stops as soon as the table is built and
    /// committed, before serving any (the default: never stop). One meaning for every
    /// tacit server (issue 28, item 9).
    pub fn sessions(mut self, n: u64) -> Self {
        self.o.sessions = Some(n);
        self
    }

    /// Where the PIR server runs (CPU, or GPUs).
    pub fn backend(mut self, b: LweBackend) -> Self {
        self.o.backend = b;
        self
    }

    /// **Simulation of a cheating server** (§3.4): these rows get a second key.
    pub fn cheat_rows(mut self, rows: Vec<u64>) -> Self {
        self.o.cheat_rows = rows;
        self
    }

    /// **Simulation**: with cheat rows on a paper-equivocable table, equivocate the
    /// commitment so that flagged clients' checks pass.
    pub fn cheat_equivocate(mut self, on: bool) -> Self {
        self.o.cheat_equivocate = on;
        self
    }

    /// Connections at once (default 512) and per client address (default 32).
    pub fn max_connections(mut self, total: usize, per_address: usize) -> Self {
        self.o.max_connections = total.max(1);
        self.o.max_per_address = per_address.max(1);
        self
    }

    /// How long one connection may last (default 120 s).
    pub fn session_deadline(mut self, d: Duration) -> Self {
        self.o.session_deadline = d;
        self
    }

    /// Where events go.
    pub fn events(mut self, f: impl Fn(ServerEvent) + Send + Sync + 'static) -> Self {
        self.o.events = Arc::new(f);
        self
    }

    /// Takes the store's serve lock, binds the listener (so that a port in use fails
    /// before anything is built or recorded), builds the first table, appends its log
    /// entry and records it as current.
    pub async fn bind(self) -> Result<RunningServer> {
        let ServerBuilder { store: path, o } = self;
        let lock = ServeLock::acquire(&path)?;
        let mut store = operator::open_existing(&path)?;
        let keys = operator::load_keys(&store)?;
        if keys.scheme != CommitScheme::PaperEquivocable && o.cheat_equivocate {
            return Err(ServiceError::Config(
                "--cheat-equivocate needs a paper-equivocable table: the binding commitment cannot be equivocated"
                    .into(),
            ));
        }
        if let Some(&r) = o.cheat_rows.iter().find(|&&r| r >= keys.rows) {
            return Err(ServiceError::Config(format!(
                "cheat row {r} is outside the table of {} rows",
                keys.rows
            )));
        }
        let listener = FramedListener::bind(&o.listen, &NetConfig::default())
            .await
            .map_err(|e| ServiceError::Config(format!("cannot listen on {}: {e}", o.listen)))?;
        let addr = listener.local_addr()?;
        let log = operator::load_log(&store, &keys)?;
        let mut server = TracEdgeServer::<LweAnyServer>::with_log(
            SigningKey::from_seed(&keys.signing.to_seed()),
            keys.dh,
            ServerConfig {
                grace_ms: keys.grace_secs.saturating_mul(1000),
                ..ServerConfig::default()
            },
            log,
        )?;
        // Registrations recorded while no server ran (or by an older version).
        let desired = operator::desired_directory(&store, &keys)?;
        let changes = operator::directory_diff(server.directory().keys(), &desired);
        if !changes.is_empty() {
            let applied = server.apply_changes_durable(&changes, now_ms(), &mut |r| {
                operator::persist(&mut store, r).map_err(|e| e.to_string())
            })?;
            operator::persist_receipts(&mut store, &applied.receipts)?;
        }
        // Tables of an earlier run are not served after a restart: take the pool's
        // key or a new one.
        let mut epoch = 0;
        let mut pool = None;
        for t in store.pir_tables()? {
            epoch = epoch.max(t.epoch);
            if t.status == "pool" && pool.is_none() {
                pool = Some(t);
            } else if t.status != "expired" {
                store.pir_set_table_status(t.epoch, "expired", t.expires_unix)?;
            }
        }
        let (epoch, key) = match pool {
            Some(t) => (
                t.epoch,
                TableKey::from_bytes(
                    t.key[..]
                        .try_into()
                        .map_err(|_| ServiceError::Config("a damaged table key".into()))?,
                ),
            ),
            None => {
                let key = TableKey::random(&mut SecureRng::from_os());
                store.pir_put_table(epoch + 1, key.as_bytes(), "pool", now_ms() / 1000)?;
                (epoch + 1, key)
            }
        };
        let dir_keys = server.directory().keys().to_vec();
        let dh_public = server.dh_public();
        let table = build_table(&keys, &o, epoch, key, dir_keys, &dh_public)?;
        server.install_durable(table, now_ms(), &mut |r| {
            operator::persist(&mut store, r).map_err(|e| e.to_string())
        })?;
        // Every row freed before this table was built is retired by it.
        let freed = store.pir_freed()?;
        store.pir_release_freed(&freed)?;
        store.pir_set_table_status(epoch, "current", None)?;
        (o.events)(ServerEvent::TableCurrent { epoch });
        let version = store.pir_subscribers_version()?;
        Ok(RunningServer {
            lock,
            path,
            listener,
            addr,
            keys,
            shared: Arc::new(RwLock::new(server)),
            store: Arc::new(Mutex::new(store)),
            version,
            o,
        })
    }
}

/// A bound server, ready to serve.
pub struct RunningServer {
    lock: ServeLock,
    path: PathBuf,
    listener: FramedListener,
    addr: std::net::SocketAddr,
    keys: ServerKeys,
    shared: Shared,
    store: Arc<Mutex<Store>>,
    version: u64,
    o: Options,
}

impl core::fmt::Debug for RunningServer {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RunningServer")
            .field("addr", &self.addr)
            .field("store", &self.path)
            .finish_non_exhaustive()
    }
}

type Shared = Arc<RwLock<TracEdgeServer<LweAnyServer>>>;

fn build_table(
    keys: &ServerKeys,
    o: &Options,
    epoch: u64,
    key: TableKey,
    dir_keys: Vec<[u8; 32]>,
    dh_public: &curve25519_dalek::ristretto::RistrettoPoint,
) -> Result<LiveTable<LweAnyServer>> {
    let mut rng = SecureRng::from_os();
    let t0 = Instant::now();
    let total = dir_keys.len() as u64;
    let second = TableKey::random(&mut rng);
    let flagged = (!o.cheat_rows.is_empty()).then_some(Flagged {
        key: &second,
        rows: &o.cheat_rows,
    });
    let events = o.events.clone();
    let last = AtomicU64::new(0);
    let mut table = build_lwe_table_on(
        epoch,
        key.clone(),
        keys.scheme,
        dh_public,
        dir_keys,
        flagged,
        &|n| {
            // At most about a hundred progress events per build.
            let step = (total / 100).max(1);
            if n / step != last.swap(n, Ordering::Relaxed) / step || n == total {
                events(ServerEvent::BuildProgress { epoch, done: n, total });
            }
        },
        &o.backend,
        &mut rng,
    )?;
    if !o.cheat_rows.is_empty() {
        table.add_second_key(second.clone());
        if o.cheat_equivocate {
            table.set_commitment(commit::equivocate(&keys.dh, &key, &second)?);
        }
    }
    (o.events)(ServerEvent::TableBuilt {
        epoch,
        secs: t0.elapsed().as_secs_f64(),
        rows: total,
    });
    Ok(table)
}

impl RunningServer {
    /// The bound address.
    pub fn local_addr(&self) -> std::net::SocketAddr {
        self.addr
    }

    /// The TLS pin clients need.
    pub fn pin(&self) -> Result<[u8; 32]> {
        Ok(self.keys.tls.fingerprint()?)
    }

    /// The Ed25519 key clients need.
    pub fn server_key(&self) -> [u8; 32] {
        self.keys.verifying_key().to_bytes()
    }

    /// Serves until the session limit (if any) is reached.
    pub async fn serve(self) -> Result<()> {
        let RunningServer {
            lock,
            path: _,
            listener,
            addr,
            keys,
            shared,
            store,
            version,
            o,
        } = self;
        (o.events)(ServerEvent::Listening {
            addr,
            pin: keys.tls.fingerprint()?,
            server_key: keys.verifying_key().to_bytes(),
        });
        let stop_manage = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let fatal: Fatal = Arc::new(Mutex::new(None));
        let (stop_tx, mut stop_rx) = mpsc::channel::<()>(2);
        let manager = {
            let (shared, store, stop) = (shared.clone(), store.clone(), stop_manage.clone());
            let k2 = operator::load_keys(&*store.lock().map_err(|_| poisoned())?)?;
            let (o2, fatal2, stop_tx2) = (o.clone(), fatal.clone(), stop_tx.clone());
            std::thread::spawn(move || manage(shared, store, k2, version, o2, stop, fatal2, stop_tx2))
        };
        let tls = keys.tls.server_config()?;
        let (tx, rx) = mpsc::channel::<BatchItem>(4096);
        {
            let (shared, max) = (shared.clone(), o.batch);
            std::thread::Builder::new()
                .name("tracedge-batcher".into())
                .spawn(move || batcher(shared, rx, max))
                .map_err(|e| ServiceError::Protocol(format!("starting the batcher: {e}")))?;
        }
        let done = Arc::new(AtomicU64::new(0));
        let ctx = Arc::new(Ctx {
            fatal: fatal.clone(),
            stop: stop_tx.clone(),
            shared,
            store,
            keys,
            o: o.clone(),
            enrol_rate: Mutex::new(HashMap::new()),
            hint_slots: tokio::sync::Semaphore::new(HINTS_AT_ONCE),
        });
        // The project's admission guard: a cap on connections (fitted below the
        // descriptor limit), per-address fairness, a deadline per connection, accept
        // errors reported and never fatal.
        let events = o.events.clone();
        let guard =
            Guard::new(ServeLimits::new(o.max_connections, o.session_deadline).with_per_address(o.max_per_address))
                .on_event(Arc::new(move |e| events(ServerEvent::Management(e.to_string()))));
        let net = NetConfig::default();
        let accept = guard::serve(listener.tcp(), &guard, None, |stream, peer| {
            let (tls, tx, done, stop_tx, ctx) = (tls.clone(), tx.clone(), done.clone(), stop_tx.clone(), ctx.clone());
            let conn = FramedConn::from_stream(stream, &net);
            async move {
                let peer = peer.to_string();
                let run = async {
                    let mut conn = conn?.accept_tls(tls).await?;
                    let r = handle(&mut conn, &ctx, tx).await;
                    let _ = conn.shutdown().await;
                    r
                };
                let counted = match run.await {
                    Ok(Some(what)) => {
                        (ctx.o.events)(ServerEvent::Session { peer, what });
                        true
                    }
                    Ok(None) => false,
                    Err(e) => {
                        (ctx.o.events)(ServerEvent::Session {
                            peer,
                            what: e.to_string(),
                        });
                        true
                    }
                };
                if counted {
                    let n = done.fetch_add(1, Ordering::Relaxed) + 1;
                    if ctx.o.sessions.is_some_and(|s| n >= s) {
                        let _ = stop_tx.send(()).await;
                    }
                }
            }
        });
        if ctx.o.sessions != Some(0) {
            tokio::select! {
                () = accept => {}
                _ = stop_rx.recv() => {}
            }
        }
        stop_manage.store(true, Ordering::Relaxed);
        let _ = manager.join();
        drop(lock);
        if let Some(why) = fatal.lock().map_err(|_| poisoned())?.take() {
            return Err(ServiceError::Protocol(format!(
                "the table log could not be stored ({why}); the server stopped rather than serve entries it may not keep"
            )));
        }
        Ok(())
    }
}

fn poisoned() -> ServiceError {
    ServiceError::Protocol("an internal lock was poisoned".into())
}

/// Set when a log record could not be stored: the server stops rather than serve
/// entries it may not keep (a restart would then sign other entries for the same
/// positions, which clients rightly take for equivocation).
type Fatal = Arc<Mutex<Option<String>>>;

/// Stores log records in `st`; a failure is remembered in `fatal` (the server then
/// stops: the change was taken back, but a store that cannot keep the log should
/// not serve).
fn persist_or_stop<'a>(
    st: &'a mut Store,
    fatal: &'a Fatal,
) -> impl FnMut(&[LogRecord]) -> core::result::Result<(), String> + 'a {
    move |records| {
        operator::persist(st, records).map_err(|e| {
            if let Ok(mut f) = fatal.lock() {
                f.get_or_insert_with(|| e.to_string());
            }
            e.to_string()
        })
    }
}

struct Ctx {
    fatal: Fatal,
    stop: mpsc::Sender<()>,
    shared: Shared,
    store: Arc<Mutex<Store>>,
    keys: ServerKeys,
    o: Options,
    /// Last enrolment per address (open enrolment: one per address per second).
    enrol_rate: Mutex<HashMap<IpAddr, Instant>>,
    /// Hints being encoded and sent at once (each holds about twice the hint's
    /// size: 104 MB at 10⁷ rows); further requests wait their turn.
    hint_slots: tokio::sync::Semaphore,
}

/// How many hints a server encodes and sends at once.
const HINTS_AT_ONCE: usize = 4;

/// Where a session's response goes back to its connection.
type ReplyTo = oneshot::Sender<(ServerSession, crate::Result<Vec<u8>>)>;

struct BatchItem {
    session: ServerSession,
    queries: QueriesFrame,
    reply: ReplyTo,
}

/// Answers the queries of concurrent sessions on a thread of its own, in a pipeline
/// ([`Responder`]): whatever arrived while the PIR backend was busy joins the next
/// chunk (at most `max` sessions), a chunk is staged while the ones before it are on
/// the GPU, and each response goes back, encoded, as soon as its chunk is done. The
/// server's lock is held for one step at a time, so hellos and table management go
/// on between steps.
fn batcher(shared: Shared, mut rx: mpsc::Receiver<BatchItem>, max: usize) {
    let mut r: Responder<ReplyTo> = Responder::new(max);
    let reply = |done: Vec<Responded<ReplyTo>>| {
        for d in done {
            let _ = d.tag.send((d.session, d.response));
        }
    };
    loop {
        let mut arrived = Vec::new();
        if r.is_idle() {
            match rx.blocking_recv() {
                Some(i) => arrived.push(i),
                None => return,
            }
        }
        // Whatever arrived meanwhile joins (bounded, so that chunks in flight are
        // finished in time).
        while arrived.len() < max.saturating_mul(2) {
            match rx.try_recv() {
                Ok(i) => arrived.push(i),
                Err(_) => break,
            }
        }
        let Ok(srv) = shared.read() else { return };
        for i in arrived {
            if let Some(d) = r.push(&srv, i.session, i.queries, i.reply) {
                reply(vec![d]);
            }
        }
        reply(r.step(&srv));
    }
}

/// The typed refusal for an error of the protocol core. Its words name the roles
/// ("the server holds …"), never "this side" or "we", so that the client shows them
/// as they are meant (issue 28, item 8: the server's "this side holds table …" read
/// as the client's own table on the client).
pub fn refusal_of(e: &crate::Error) -> Refusal {
    let (code, reason) = match e {
        crate::Error::WrongTable { ours, theirs } => (
            RefusalCode::TableChanged,
            format!("the query is for table {theirs}; the server holds table {ours}"),
        ),
        crate::Error::WrongBackend { ours, theirs } => (
            RefusalCode::Other,
            format!("the query is for the {theirs} backend; the server runs {ours}"),
        ),
        crate::Error::Busy(_) => (RefusalCode::Busy, e.to_string()),
        _ => (RefusalCode::Other, e.to_string()),
    };
    Refusal { code, reason }
}

async fn refuse(conn: &mut FramedConn, r: Refusal) -> Result<Option<String>> {
    Err(refused(conn, r).await)
}

/// Sends a typed refusal; the error that ends the connection.
async fn refused(conn: &mut FramedConn, r: Refusal) -> ServiceError {
    conn.set_max_frame(4096);
    if let Err(e) = conn.send(&r.to_wire()).await {
        return e.into();
    }
    ServiceError::Refused {
        code: r.code,
        reason: r.reason,
    }
}

/// Log records one connection may fetch beyond the log's length (a client asks from
/// the start of an hour it already holds part of).
const LOG_OVERLAP: u64 = 4096;

/// The largest frame a client may send at each step.
const SMALL_FRAME: usize = 4096;

fn queries_frame(srv: &TracEdgeServer<LweAnyServer>) -> usize {
    let cols = srv.current().map_or(0, |t| t.hint().params.cols());
    // Envelope, epoch, own query and up to MAX_AUDIT_QUERIES audits of
    // (table id, count, cols × u32) each.
    64 + (1 + MAX_AUDIT_QUERIES) * (40 + 4 * cols)
}

async fn handle(conn: &mut FramedConn, ctx: &Ctx, tx: mpsc::Sender<BatchItem>) -> Result<Option<String>> {
    let mut session: Option<ServerSession> = None;
    let mut hint_sent = false;
    // The log is served inside a session (up to its commit's head) or after an
    // enrolment (up to the receipt's entry), within a budget per connection.
    let mut log_limit: Option<u64> = None;
    let mut log_budget = 0u64;
    let mut outcome: Option<String> = None;
    let queries_limit = queries_frame(&*ctx.shared.read().map_err(|_| poisoned())?);
    loop {
        let expecting_queries = session.is_some();
        conn.set_max_frame(if expecting_queries { queries_limit } else { SMALL_FRAME });
        let msg = match conn.recv().await {
            Ok(m) => m,
            Err(tacit_net::Error::Closed) if session.is_none() => return Ok(outcome),
            Err(e) => return Err(e.into()),
        };
        let tag = Envelope::peek(&msg)?.tag;
        match tag {
            TAG_HINT_REQUEST => {
                let req = HintRequest::from_wire(&msg)?;
                if session.is_none() {
                    return refuse(conn, other("the hint is served inside a session (after a Hello)")).await;
                }
                if hint_sent {
                    return refuse(
                        conn,
                        Refusal {
                            code: RefusalCode::Other,
                            reason: "one hint per connection".into(),
                        },
                    )
                    .await;
                }
                let _slot = ctx
                    .hint_slots
                    .acquire()
                    .await
                    .map_err(|_| ServiceError::Protocol("the server is stopping".into()))?;
                let hint = ctx.shared.read().map_err(|_| poisoned())?.hint(&req);
                match hint {
                    Ok(h) => {
                        let bytes = h.to_wire();
                        drop(h);
                        conn.set_max_frame(bytes.len());
                        conn.send(&bytes).await?;
                        hint_sent = true;
                    }
                    Err(e) => return refuse(conn, refusal_of(&e)).await,
                }
            }
            TAG_LOG_REQUEST => {
                let req = LogRequest::from_wire(&msg)?;
                let Some(limit) = log_limit else {
                    return refuse(conn, other("the log is served inside a session or an enrolment")).await;
                };
                if log_budget == 0 {
                    return refuse(conn, other("this connection has fetched its share of the log")).await;
                }
                let req = LogRequest {
                    from: req.from,
                    to: req.to.min(limit),
                };
                let seg = ctx.shared.read().map_err(|_| poisoned())?.log_segment(&req);
                log_budget = log_budget.saturating_sub(seg.records.len().max(1) as u64);
                let bytes = seg.to_wire();
                conn.set_max_frame(bytes.len());
                conn.send(&bytes).await?;
            }
            TAG_ENROLL_REQUEST => {
                if session.is_some() || outcome.is_some() {
                    return refuse(conn, other("one enrolment per connection, outside a session")).await;
                }
                let req = EnrollRequest::from_wire(&msg)?;
                let (what, seq) = enroll(conn, ctx, &req).await?;
                outcome = Some(what);
                log_limit = Some(seq);
                log_budget = seq + 1 + LOG_OVERLAP;
            }
            TAG_HELLO => {
                if session.is_some() {
                    return refuse(
                        conn,
                        Refusal {
                            code: RefusalCode::Other,
                            reason: "one session per connection".into(),
                        },
                    )
                    .await;
                }
                let hello = Hello::from_wire(&msg)?;
                let r = ctx
                    .shared
                    .write()
                    .map_err(|_| poisoned())?
                    .hello(&hello, now_ms(), &mut SecureRng::from_os());
                match r {
                    Ok((s, commit)) => {
                        session = Some(s);
                        log_limit = Some(commit.log_seq);
                        log_budget = commit.log_seq + 1 + LOG_OVERLAP;
                        conn.send(&commit.to_wire()).await?;
                    }
                    Err(e) => return refuse(conn, refusal_of(&e)).await,
                }
            }
            TAG_QUERIES => {
                // Checked but not decoded: the batcher copies the values from this
                // frame straight into the backend's staging memory.
                let q = QueriesFrame::parse(msg)?;
                let Some(s) = session.take() else {
                    return refuse(conn, other("queries before hello")).await;
                };
                // Checked on its own before it joins a batch.
                let checked = ctx.shared.read().map_err(|_| poisoned())?.check_frame(&s, &q);
                if let Err(e) = checked {
                    return refuse(conn, refusal_of(&e)).await;
                }
                let (rtx, rrx) = oneshot::channel();
                tx.send(BatchItem {
                    session: s,
                    queries: q,
                    reply: rtx,
                })
                .await
                .map_err(|_| ServiceError::Protocol("the server is stopping".into()))?;
                let (s, r) = rrx
                    .await
                    .map_err(|_| ServiceError::Protocol("the batch was dropped".into()))?;
                session = Some(s);
                match r {
                    Ok(bytes) => {
                        conn.set_max_frame(bytes.len());
                        conn.send(&bytes).await?;
                    }
                    Err(e) => return refuse(conn, refusal_of(&e)).await,
                }
            }
            TAG_CLIENT_AUTH => {
                let auth = ClientAuth::from_wire(&msg)?;
                let Some(mut s) = session.take() else {
                    return refuse(conn, other("authentication before hello")).await;
                };
                let r = ctx.shared.read().map_err(|_| poisoned())?.finish(&mut s, &auth);
                return match r {
                    Ok((reply, out)) => {
                        conn.send(&reply.to_wire()).await?;
                        Ok(Some(if out.key_index == 0 {
                            format!("authenticated a subscriber (table {})", out.epoch)
                        } else {
                            format!(
                                "authenticated a subscriber with SECOND KEY {} (table {}): tagged (simulation)",
                                out.key_index, out.epoch
                            )
                        }))
                    }
                    Err(e) => {
                        conn.send(&refusal_of(&e).to_wire()).await?;
                        Ok(Some(format!("refused a client: {e}")))
                    }
                };
            }
            other_tag => {
                return refuse(conn, other(&format!("unexpected message 0x{other_tag:04x}"))).await;
            }
        }
    }
}

fn other(why: &str) -> Refusal {
    Refusal {
        code: RefusalCode::Other,
        reason: why.into(),
    }
}

/// How far an enrolment request's time may be from the server's clock.
const ENROL_SKEW_MS: u64 = 600_000;

async fn enroll(conn: &mut FramedConn, ctx: &Ctx, req: &EnrollRequest) -> Result<(String, u64)> {
    if !ctx.o.open_enrollment {
        return Err(refused(
            conn,
            other("enrolment is closed on this server; ask the operator to register your key"),
        )
        .await);
    }
    if let Ok(ip) = conn.peer_addr().map(|a| a.ip()) {
        let too_soon = {
            let mut m = ctx.enrol_rate.lock().map_err(|_| poisoned())?;
            let now = Instant::now();
            if m.get(&ip)
                .is_some_and(|t| now.duration_since(*t) < Duration::from_secs(1))
            {
                true
            } else {
                if m.len() > 100_000 {
                    m.retain(|_, t| now.duration_since(*t) < Duration::from_secs(1));
                }
                m.insert(ip, now);
                false
            }
        };
        if too_soon {
            return Err(refused(
                conn,
                Refusal {
                    code: RefusalCode::Busy,
                    reason: "one enrolment per second per address".into(),
                },
            )
            .await);
        }
    }
    let now = now_ms();
    if req.time_ms.abs_diff(now) > ENROL_SKEW_MS {
        return Err(refused(
            conn,
            other("the enrolment request's time is too far from the server's clock"),
        )
        .await);
    }
    if let Err(e) = decode_public_checked(&req.public_key).and_then(|_| {
        verify_possession(
            &req.public_key,
            &req.pop,
            &ctx.keys.verifying_key().to_bytes(),
            req.time_ms,
            &req.label,
        )
    }) {
        return Err(refused(conn, refusal_of(&e)).await);
    }
    if req.public_key == ctx.keys.empty_key() {
        return Err(refused(conn, other("that is the server's own key")).await);
    }
    // Register, write the row into every served table, sign the log entry and the
    // receipt, store both — in that order, before anyone sees the entry.
    let receipt = {
        let mut st = ctx.store.lock().map_err(|_| poisoned())?;
        match st.pir_register(&req.public_key, &req.label, ctx.keys.rows, now / 1000)? {
            None => None,
            Some(row) => {
                let mut srv = ctx.shared.write().map_err(|_| poisoned())?;
                let applied = match srv.apply_changes_durable(
                    &[(row, req.public_key)],
                    now,
                    &mut persist_or_stop(&mut st, &ctx.fatal),
                ) {
                    Ok(a) => a,
                    Err(e) => {
                        let _ = ctx.stop.try_send(());
                        return Err(e.into());
                    }
                };
                operator::persist_receipts(&mut st, &applied.receipts)?;
                (ctx.o.events)(ServerEvent::RowsApplied {
                    rows: vec![row],
                    seq: applied.records.last().map_or(0, |r| r.entry.seq),
                });
                Some(
                    applied
                        .receipts
                        .into_iter()
                        .next()
                        .ok_or_else(|| ServiceError::Protocol("no receipt was issued".into()))?,
                )
            }
        }
    };
    let Some(receipt) = receipt else {
        return Err(refused(conn, other("the key is already registered or the table is full")).await);
    };
    let (row, seq) = (receipt.row, receipt.seq);
    conn.send(&EnrollReply { receipt }.to_wire()).await?;
    Ok((format!("enrolled a subscriber at row {row}"), seq))
}

fn decode_public_checked(k: &[u8; 32]) -> crate::Result<()> {
    keytable::decode_public(k).map(|_| ())
}

/// Table management in the background: rows written on the fly from the store's
/// subscribers, rekeys (on a pool key, or whenever a registered row's key changes),
/// expiry. Every log record is stored before the write lock is released.
#[allow(clippy::too_many_arguments)]
fn manage(
    shared: Shared,
    store: Arc<Mutex<Store>>,
    keys: ServerKeys,
    mut version: u64,
    o: Options,
    stop: Arc<std::sync::atomic::AtomicBool>,
    fatal: Fatal,
    stop_serving: mpsc::Sender<()>,
) {
    let mut rekey_needed = false;
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(250));
        let mut step = || -> Result<()> {
            let (v, desired, pool, freed) = {
                let st = store.lock().map_err(|_| poisoned())?;
                let v = st.pir_subscribers_version()?;
                let pool = st.pir_tables()?.into_iter().find(|t| t.status == "pool");
                let desired = if v != version {
                    Some(operator::desired_directory(&st, &keys)?)
                } else {
                    None
                };
                (v, desired, pool, st.pir_freed()?)
            };
            if let Some(desired) = desired {
                let mut st = store.lock().map_err(|_| poisoned())?;
                let mut srv = shared.write().map_err(|_| poisoned())?;
                let empty = keys.empty_key();
                let current = srv.directory().keys().to_vec();
                let changes = operator::directory_diff(&current, &desired);
                if !changes.is_empty() {
                    // A registered row whose key changes (a removal, or a removal and a
                    // new registration in between) retires a key: rekey.
                    if changes.iter().any(|&(r, _)| current[r as usize] != empty) {
                        rekey_needed = true;
                    }
                    let applied =
                        srv.apply_changes_durable(&changes, now_ms(), &mut persist_or_stop(&mut st, &fatal))?;
                    operator::persist_receipts(&mut st, &applied.receipts)?;
                    (o.events)(ServerEvent::RowsApplied {
                        rows: changes.iter().map(|c| c.0).collect(),
                        seq: applied.records.last().map_or(0, |r| r.entry.seq),
                    });
                }
                version = v;
            }
            if !freed.is_empty() {
                rekey_needed = true;
            }
            let next = match (pool, rekey_needed) {
                (Some(p), _) => Some((
                    p.epoch,
                    TableKey::from_bytes(
                        p.key[..]
                            .try_into()
                            .map_err(|_| ServiceError::Config("a damaged key".into()))?,
                    ),
                )),
                (None, true) => {
                    let mut st = store.lock().map_err(|_| poisoned())?;
                    let e = st.pir_tables()?.iter().map(|t| t.epoch).max().unwrap_or(0) + 1;
                    let key = TableKey::random(&mut SecureRng::from_os());
                    st.pir_put_table(e, key.as_bytes(), "pool", now_ms() / 1000)?;
                    (o.events)(ServerEvent::Rekeying { epoch: e });
                    Some((e, key))
                }
                _ => None,
            };
            if let Some((e, key)) = next {
                rekey_needed = false;
                // Built without holding the lock: the server keeps answering. Rows
                // changed meanwhile are brought in by `install`.
                let (dir_keys, dh_public) = {
                    let srv = shared.read().map_err(|_| poisoned())?;
                    (srv.directory().keys().to_vec(), srv.dh_public())
                };
                let table = build_table(&keys, &o, e, key, dir_keys, &dh_public)?;
                let mut st = store.lock().map_err(|_| poisoned())?;
                let mut srv = shared.write().map_err(|_| poisoned())?;
                let old = srv.current().map(|t| t.header().epoch);
                srv.install_durable(table, now_ms(), &mut persist_or_stop(&mut st, &fatal))?;
                drop(srv);
                st.pir_set_table_status(e, "current", None)?;
                if let Some(old) = old {
                    st.pir_set_table_status(old, "deprecated", Some(now_ms() / 1000 + keys.grace_secs))?;
                }
                st.pir_release_freed(&freed)?;
                (o.events)(ServerEvent::TableCurrent { epoch: e });
            }
            let now = now_ms();
            let mut st = store.lock().map_err(|_| poisoned())?;
            let mut srv = shared.write().map_err(|_| poisoned())?;
            let before: Vec<u64> = srv.tables().map(|t| t.header().epoch).collect();
            srv.expire_durable(now, &mut persist_or_stop(&mut st, &fatal))?;
            let after: Vec<u64> = srv.tables().map(|t| t.header().epoch).collect();
            drop(srv);
            for e in before.into_iter().filter(|e| !after.contains(e)) {
                st.pir_set_table_status(e, "expired", None)?;
                (o.events)(ServerEvent::KeysExpired { epoch: e });
            }
            Ok(())
        };
        if let Err(e) = step() {
            (o.events)(ServerEvent::Management(e.to_string()));
            if fatal.lock().map(|f| f.is_some()).unwrap_or(true) {
                let _ = stop_serving.blocking_send(());
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 28, item 8: the server's refusal names the roles, so the client shows it
    /// as meant (it read "this side holds table 0011", the server's side).
    #[test]
    fn refusals_name_the_roles() {
        let r = refusal_of(&crate::Error::WrongTable {
            ours: "0011".into(),
            theirs: "00ff".into(),
        });
        assert_eq!(r.code, RefusalCode::TableChanged);
        assert_eq!(r.reason, "the query is for table 00ff; the server holds table 0011");
        let r = refusal_of(&crate::Error::WrongBackend {
            ours: "lwe",
            theirs: "ntru".into(),
        });
        assert_eq!(r.reason, "the query is for the ntru backend; the server runs lwe");
    }
}
