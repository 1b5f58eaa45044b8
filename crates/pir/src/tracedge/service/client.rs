//! The subscriber's side over TLS 1.3: enrolment (a key, a proof of possession, the
//! signed receipt), the client's copy of the table log (`ID.view`, beside the
//! identity file), the hint cache (`ID.hints/`), and authentication, which retries
//! only on the server's *typed* refusals and never more often than asked.
//!
//! Files:
//!
//! * the **identity** (JSON, mode 0600): the server's address, TLS pin and Ed25519
//!   key, the subscriber's secret, its row and its enrolment receipt;
//! * the **view** (`ID.view`): every log entry verified and the directory they lead
//!   to — two subscribers compare theirs with [`compare`];
//! * the **hint cache** (`ID.hints/`): the public hint of the current table.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tacit_crypto::rng::SecureRng;
use tacit_crypto::sign::VerifyingKey;
use tacit_net::{FramedConn, NetConfig, Protocol};
use tacit_wire::{Decode, Encode, Envelope};
use zeroize::Zeroizing;

use super::{Result, ServiceError, TLS_NAME, file_err, hex32, now_ms};
use crate::lwe::LweHint;
use crate::tracedge::*;

/// The identity file of a subscriber.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Identity {
    /// The server's address.
    pub connect: String,
    /// SHA-256 fingerprint of the server's TLS key (hex).
    pub pin: String,
    /// The server's Ed25519 key (hex).
    pub server_key: String,
    /// The row (also in the receipt).
    pub row: Option<u64>,
    /// The subscriber's secret key (hex).
    pub secret: String,
    /// The enrolment receipt (hex of its encoding), once registered.
    #[serde(default)]
    pub receipt: Option<String>,
}

/// An identity file read and checked.
pub struct LoadedIdentity {
    /// The file's content.
    pub file: Identity,
    /// The subscriber's key pair.
    pub secret: SubscriberSecret,
    /// The server's key.
    pub server: VerifyingKey,
    /// The TLS pin.
    pub pin: [u8; 32],
    /// The receipt, checked against the server key and the subscriber's key.
    pub receipt: Option<EnrolmentReceipt>,
}

impl core::fmt::Debug for LoadedIdentity {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("LoadedIdentity")
            .field("connect", &self.file.connect)
            .field("row", &self.file.row)
            .finish_non_exhaustive()
    }
}

/// The largest identity file read.
const MAX_IDENTITY_FILE: u64 = 64 << 10;

impl Identity {
    /// Reads and checks an identity file.
    pub fn load(path: &Path) -> Result<LoadedIdentity> {
        let text =
            tacit_wire::file::read_text_bounded(path, "identity file", MAX_IDENTITY_FILE).map_err(|e| match e {
                tacit_wire::file::FileError::Io { source, .. } => file_err(path)(source),
                other => ServiceError::Config(other.to_string()),
            })?;
        let file: Identity = serde_json::from_str(&text)
            .map_err(|e| ServiceError::Config(format!("{} is not an identity file: {e}", path.display())))?;
        let secret = SubscriberSecret::from_bytes(&hex32(&file.secret, "the secret key")?)?;
        let server = VerifyingKey::from_bytes(&hex32(&file.server_key, "the server key")?)
            .map_err(|_| ServiceError::Config("the server key is not an Ed25519 key".into()))?;
        let pin = hex32(&file.pin, "the pin")?;
        let receipt = match &file.receipt {
            None => None,
            Some(h) => {
                let b = hex::decode(h).map_err(|_| ServiceError::Config("the receipt is not hex".into()))?;
                let r = EnrolmentReceipt::from_wire(&b)?;
                r.verify(&server)?;
                if r.subscriber_key != secret.public_bytes() {
                    return Err(ServiceError::Config("the receipt is for another key".into()));
                }
                Some(r)
            }
        };
        Ok(LoadedIdentity {
            file,
            secret,
            server,
            pin,
            receipt,
        })
    }

    /// Writes a new identity file (mode 0600; never over an existing file).
    pub fn create(&self, path: &Path) -> Result<()> {
        let text = serde_json::to_string_pretty(self).map_err(|e| ServiceError::Config(e.to_string()))?;
        write_private(path, text.as_bytes(), false)
    }

    /// Replaces an identity file (through a temporary file and a rename).
    pub fn replace(&self, path: &Path) -> Result<()> {
        let text = serde_json::to_string_pretty(self).map_err(|e| ServiceError::Config(e.to_string()))?;
        write_private(path, text.as_bytes(), true)
    }
}

fn write_private(path: &Path, bytes: &[u8], replace: bool) -> Result<()> {
    use std::io::Write;
    let target = if replace {
        let mut p = path.as_os_str().to_owned();
        p.push(format!(".tmp{}", std::process::id()));
        PathBuf::from(p)
    } else {
        path.to_owned()
    };
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600);
    }
    let mut f = o.open(&target).map_err(|e| match e.kind() {
        std::io::ErrorKind::AlreadyExists => {
            ServiceError::Config(format!("{} exists; choose another path", target.display()))
        }
        _ => file_err(&target)(e),
    })?;
    f.write_all(bytes).map_err(file_err(&target))?;
    f.sync_all().map_err(file_err(&target))?;
    if replace {
        std::fs::rename(&target, path).map_err(file_err(path))?;
    }
    Ok(())
}

/// Refuses a receipt signed in the future of this client's clock (its time is what
/// a rollback proof compares with, so the server must not choose it freely).
fn check_receipt_time(r: &EnrolmentReceipt) -> Result<()> {
    let now = now_ms();
    if r.time_ms > now.saturating_add(crate::tracedge::MAX_SKEW_MS) {
        return Err(ServiceError::Config(format!(
            "the receipt is signed {} s in the future of this computer's clock; refused",
            (r.time_ms - now) / 1000
        )));
    }
    Ok(())
}

/// The view file of an identity: `ID.view`.
pub fn view_path(identity: &Path) -> PathBuf {
    let mut p = identity.as_os_str().to_owned();
    p.push(".view");
    PathBuf::from(p)
}

/// The default hint cache of an identity: `ID.hints/`.
pub fn default_hint_cache(identity: &Path) -> PathBuf {
    let mut p = identity.as_os_str().to_owned();
    p.push(".hints");
    PathBuf::from(p)
}

/// Reads a view file (or, given an identity file, its view).
pub fn load_view(path: &Path) -> Result<ClientView> {
    let p = if path.extension().is_some_and(|e| e == "view") {
        path.to_owned()
    } else {
        view_path(path)
    };
    let bytes = std::fs::read(&p).map_err(file_err(&p))?;
    Ok(ClientView::from_bytes(&bytes)?)
}

fn save_view(identity: &Path, view: &ClientView) -> Result<()> {
    let path = view_path(identity);
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, view.to_bytes()).map_err(file_err(&tmp))?;
    std::fs::rename(&tmp, &path).map_err(file_err(&path))?;
    Ok(())
}

/// The view of a loaded identity: its file if there is one (checked: same server,
/// same receipt), else a new one from the receipt.
fn view_of(identity: &Path, id: &LoadedIdentity) -> Result<ClientView> {
    let receipt = id.receipt.clone().ok_or_else(|| {
        ServiceError::Config(format!(
            "{} has no enrolment receipt: enrol with `tacit pir client enroll`, or import the one the operator gives you with `tacit pir client import-receipt`",
            identity.display()
        ))
    })?;
    let p = view_path(identity);
    if p.exists() {
        let v = load_view(&p)?;
        if v.server().to_bytes() != id.server.to_bytes() || v.own().map(|o| &o.receipt) != Some(&receipt) {
            return Err(ServiceError::Config(format!(
                "{} is for another server or receipt; move it away to start a new copy of the log",
                p.display()
            )));
        }
        return Ok(v);
    }
    Ok(ClientView::for_receipt(receipt, now_ms())?)
}

/// Connects to the server over TLS with its key pinned.
pub async fn connect(addr: &str, pin: [u8; 32], deadline: Duration) -> Result<FramedConn> {
    let net = NetConfig::default()
        .with_deadline(deadline)
        .speaking(Protocol::TracEdge);
    let tls = tacit_net::tls::checked_server_client(tacit_net::tls::pinned(pin))?;
    FramedConn::connect_tls(addr, &net, tls, TLS_NAME)
        .await
        .map_err(ServiceError::from)
}

/// The largest frames the client accepts from the server, per message.
mod limits {
    /// A hint: the `lwe` hint of the largest table the PIR layer allows.
    pub const HINT: usize = 1 << 30;
    /// A log segment.
    pub const SEGMENT: usize = 64 << 20;
    /// A response: 17 answers of at most ~50 k matrix rows.
    pub const RESPONSE: usize = 16 << 20;
    /// Everything else.
    pub const SMALL: usize = 64 << 10;
}

async fn recv_expect<T: Decode>(conn: &mut FramedConn, tag: u16, limit: usize) -> Result<T> {
    conn.set_max_frame(limit);
    let msg = conn.recv().await?;
    let t = Envelope::peek(&msg)?.tag;
    if t == TAG_REFUSAL {
        let r = Refusal::from_wire(&msg)?;
        return Err(ServiceError::Refused {
            code: r.code,
            reason: r.reason,
        });
    }
    if t == tacit_wire::tags::ERROR {
        let e = tacit_wire::ErrorMessage::from_wire(&msg)?;
        return Err(ServiceError::Refused {
            code: RefusalCode::Other,
            reason: e.reason,
        });
    }
    if t != tag {
        return Err(ServiceError::Protocol(format!(
            "unexpected message 0x{t:04x} from the server"
        )));
    }
    Ok(T::from_wire(&msg)?)
}

/// Brings `view` up to what `req` asks for, segment by segment.
async fn sync(
    conn: &mut FramedConn,
    view: &mut ClientView,
    mut req: LogRequest,
) -> core::result::Result<u64, SyncStop> {
    let mut fetched = 0u64;
    loop {
        conn.send(&req.to_wire()).await.map_err(|e| SyncStop::Error(e.into()))?;
        let seg: LogSegment = recv_expect(conn, TAG_LOG_SEGMENT, limits::SEGMENT)
            .await
            .map_err(SyncStop::Error)?;
        // The segment must be exactly a run of what was asked: from its start,
        // consecutive, within it, not empty — checked before it is applied, so that
        // a segment that skips entries stops every client alike (third review, G1).
        let n = seg.records.len() as u64;
        let exact = n > 0
            && seg
                .records
                .iter()
                .enumerate()
                .all(|(i, r)| req.from.checked_add(i as u64) == Some(r.entry.seq))
            && req.from + n - 1 <= req.to;
        if !exact {
            return Err(SyncStop::Error(ServiceError::Protocol(
                "the server's log segment is not the run of entries asked for".into(),
            )));
        }
        view.apply(&seg, now_ms()).map_err(SyncStop::View)?;
        fetched += n;
        if view.head_seq().is_some_and(|h| h >= req.to) {
            return Ok(fetched);
        }
        // Go on from where the server's segment ended (never from the client's own
        // head, which would tell the server where the client's copy ended).
        req.from += n;
    }
}

enum SyncStop {
    View(ViewError),
    Error(ServiceError),
}

/// What enrolment made.
#[derive(Debug, Clone)]
pub struct EnrollReport {
    /// The row.
    pub row: u64,
    /// Rows of the table.
    pub rows: u64,
    /// Log entries fetched to start the subscriber's copy of the log.
    pub log_entries: u64,
}

/// Makes a key pair, registers it with an open-enrolment server (with a proof of
/// possession), checks the receipt, writes the identity file `out` and starts its
/// copy of the log.
pub async fn enroll(addr: &str, pin: [u8; 32], server_key: [u8; 32], label: &str, out: &Path) -> Result<EnrollReport> {
    if out.exists() {
        return Err(ServiceError::Config(format!(
            "{} exists; choose another path",
            out.display()
        )));
    }
    if label.len() > 64 {
        return Err(ServiceError::Config("a label has at most 64 bytes".into()));
    }
    let server = VerifyingKey::from_bytes(&server_key)
        .map_err(|_| ServiceError::Config("the server key is not an Ed25519 key".into()))?;
    let mut rng = SecureRng::from_os();
    let secret = SubscriberSecret::random(&mut rng);
    let mut conn = connect(addr, pin, Duration::from_secs(120)).await?;
    let time_ms = now_ms();
    let pop = proof_of_possession(&secret, &server_key, time_ms, label, &mut rng);
    conn.send(
        &EnrollRequest {
            public_key: secret.public_bytes(),
            label: label.to_owned(),
            time_ms,
            pop,
        }
        .to_wire(),
    )
    .await?;
    let reply: EnrollReply = recv_expect(&mut conn, TAG_ENROLL_REPLY, limits::SMALL).await?;
    let receipt = reply.receipt;
    receipt.verify(&server)?;
    if receipt.subscriber_key != secret.public_bytes() {
        return Err(ServiceError::Protocol("the receipt is for another key".into()));
    }
    check_receipt_time(&receipt)?;
    // The log up to the receipt's entry, in this connection: the receipt is checked
    // against it now, before any session.
    let mut view = ClientView::for_receipt(receipt.clone(), now_ms())?;
    let fetched = match sync(
        &mut conn,
        &mut view,
        LogRequest {
            from: 0,
            to: receipt.seq,
        },
    )
    .await
    {
        Ok(n) => n,
        Err(SyncStop::View(ViewError::Caught(p))) => return Err(ServiceError::Caught(p)),
        Err(SyncStop::View(ViewError::Invalid(e))) => return Err(e.into()),
        Err(SyncStop::Error(e)) => return Err(e),
    };
    let id = Identity {
        connect: addr.to_owned(),
        pin: hex::encode(pin),
        server_key: hex::encode(server_key),
        row: Some(receipt.row),
        secret: hex::encode(&secret.to_bytes()[..]),
        receipt: Some(hex::encode(receipt.to_wire())),
    };
    id.create(out)?;
    save_view(out, &view)?;
    let _ = conn.shutdown().await;
    Ok(EnrollReport {
        row: receipt.row,
        rows: receipt.rows,
        log_entries: fetched,
    })
}

/// Makes a key pair for closed enrolment: writes an identity file without a row; the
/// operator registers the printed public key (`tacit pir server register --key`) and
/// hands back the receipt ([`import_receipt`]).
pub fn keygen(addr: &str, pin: [u8; 32], server_key: [u8; 32], out: &Path) -> Result<[u8; 32]> {
    VerifyingKey::from_bytes(&server_key)
        .map_err(|_| ServiceError::Config("the server key is not an Ed25519 key".into()))?;
    let secret = SubscriberSecret::random(&mut SecureRng::from_os());
    let id = Identity {
        connect: addr.to_owned(),
        pin: hex::encode(pin),
        server_key: hex::encode(server_key),
        row: None,
        secret: hex::encode(&secret.to_bytes()[..]),
        receipt: None,
    };
    id.create(out)?;
    Ok(secret.public_bytes())
}

/// Puts the operator's receipt into an identity file (checked: this server, this
/// key).
pub fn import_receipt(identity: &Path, receipt: &[u8]) -> Result<EnrolmentReceipt> {
    let id = Identity::load(identity)?;
    let r = EnrolmentReceipt::from_wire(receipt)?;
    r.verify(&id.server)?;
    check_receipt_time(&r)?;
    if r.subscriber_key != id.secret.public_bytes() {
        return Err(ServiceError::Config(
            "the receipt is for another key than this identity's".into(),
        ));
    }
    let mut file = id.file.clone();
    file.row = Some(r.row);
    file.receipt = Some(hex::encode(r.to_wire()));
    file.replace(identity)?;
    Ok(r)
}

/// Authentication options.
#[derive(Debug, Clone)]
pub struct AuthOptions {
    /// Rows audited in one weighted query (α).
    pub audits: usize,
    /// Accept the paper's equivocable commitment.
    pub accept_paper_commitment: bool,
    /// Where the hint is cached (`None`: download it every time).
    pub hint_cache: Option<PathBuf>,
    /// Use the identity's default hint cache (`ID.hints/`) when `hint_cache` is
    /// `None`.
    pub default_hint_cache: bool,
    /// New sessions after a typed "table changed" or "busy" refusal (the only ones
    /// that are retried).
    pub retries: u32,
    /// Deadline of each session.
    pub deadline: Duration,
}

impl Default for AuthOptions {
    fn default() -> Self {
        AuthOptions {
            audits: 4,
            accept_paper_commitment: false,
            hint_cache: None,
            default_hint_cache: true,
            retries: 1,
            deadline: Duration::from_secs(120),
        }
    }
}

/// How an authentication ended.
#[derive(Debug)]
pub enum AuthOutcome {
    /// Authenticated: both sides hold `K` and the session key.
    Authenticated {
        /// The session key.
        session_key: Zeroizing<[u8; 32]>,
        /// The epoch.
        epoch: u64,
        /// When the table's keys expire (0: current).
        expires_ms: u64,
    },
    /// The server was caught: the proof.
    Caught(Box<MisbehaviourProof>),
    /// The server's signed log removed this subscriber's key from its row.
    NotEnrolled {
        /// The row.
        row: u64,
        /// The log entry.
        since: u64,
    },
    /// The server refused.
    Refused {
        /// The refusal's code.
        code: RefusalCode,
        /// Why (the server's words, or the client's).
        reason: String,
    },
}

/// Timings of one authentication (ms).
#[derive(Debug, Clone, Default)]
pub struct Times {
    /// TCP and TLS.
    pub connect_ms: f64,
    /// Log sync.
    pub log_ms: f64,
    /// Reading or downloading the hint.
    pub hint_ms: f64,
    /// Making the queries.
    pub query_ms: f64,
    /// Waiting for the answers.
    pub answer_ms: f64,
    /// Checks and MACs.
    pub check_and_auth_ms: f64,
    /// All of it.
    pub total_ms: f64,
}

/// What one authentication did.
#[derive(Debug)]
pub struct AuthReport {
    /// How it ended.
    pub outcome: AuthOutcome,
    /// The rows the audit covered.
    pub audited_rows: Vec<u64>,
    /// Whether the hint came from the cache.
    pub hint_cached: bool,
    /// Log records fetched.
    pub log_entries_fetched: u64,
    /// Sessions run (1 + retries used).
    pub sessions: u32,
    /// Timings of the last session.
    pub times: Times,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// A cached hint's file: the table id and the log position from which that id has
/// been current without a break ([`ClientView::current_since`]).
fn cached_hint_path(dir: &Path, table_id: &[u8; 32], since: u64) -> PathBuf {
    dir.join(format!("{}-{since}.hint", hex::encode(table_id)))
}

fn read_cached_hint(dir: &Path, table_id: &[u8; 32], since: u64) -> Option<LweHint> {
    let bytes = std::fs::read(cached_hint_path(dir, table_id, since)).ok()?;
    LweHint::from_wire(&bytes).ok()
}

/// Writes the hint of `table_id` (temporary file and rename) and removes others.
fn write_cached_hint(dir: &Path, table_id: &[u8; 32], since: u64, hint: &LweHint) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(file_err(dir))?;
    let path = cached_hint_path(dir, table_id, since);
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, hint.to_wire()).map_err(file_err(&tmp))?;
    std::fs::rename(&tmp, &path).map_err(file_err(&path))?;
    for e in std::fs::read_dir(dir).map_err(file_err(dir))?.flatten() {
        let p = e.path();
        if p != path && p.extension().is_some_and(|x| x == "hint") {
            let _ = std::fs::remove_file(p);
        }
    }
    Ok(())
}

/// Authenticates anonymously with the identity at `identity` (Algorithm 1 with α
/// audits and the table log). The client's copy of the log is kept in `ID.view`; a
/// proof of misbehaviour is returned in the outcome for the caller to keep.
pub async fn authenticate(identity: &Path, opts: &AuthOptions) -> Result<AuthReport> {
    let mut sessions = 0;
    loop {
        sessions += 1;
        match authenticate_once(identity, opts).await {
            Ok(mut r) => {
                if let AuthOutcome::Refused { code, .. } = &r.outcome
                    && matches!(code, RefusalCode::TableChanged | RefusalCode::Busy)
                    && sessions <= opts.retries
                {
                    continue;
                }
                r.sessions = sessions;
                return Ok(r);
            }
            Err(e) => return Err(e),
        }
    }
}

async fn authenticate_once(identity: &Path, opts: &AuthOptions) -> Result<AuthReport> {
    let id = Identity::load(identity)?;
    let mut view = view_of(identity, &id)?;
    let receipt = id
        .receipt
        .clone()
        .ok_or_else(|| ServiceError::Config("no receipt".into()))?;
    let config = ClientConfig {
        audits: opts.audits,
        accept_paper_commitment: opts.accept_paper_commitment,
    };
    let client = TracEdgeClient::new(id.server, receipt.row, id.secret.clone(), config);
    let mut rng = SecureRng::from_os();
    let mut times = Times::default();
    let t0 = Instant::now();
    let mut conn = connect(&id.file.connect, id.pin, opts.deadline).await?;
    times.connect_ms = ms(t0.elapsed());
    let mut report = AuthReport {
        outcome: AuthOutcome::Refused {
            code: RefusalCode::Other,
            reason: String::new(),
        },
        audited_rows: Vec::new(),
        hint_cached: false,
        log_entries_fetched: 0,
        sessions: 1,
        times: Times::default(),
    };
    let stop = |report: &mut AuthReport, s: ClientStop| match s {
        ClientStop::Caught(p) => {
            report.outcome = AuthOutcome::Caught(p);
            Ok(())
        }
        ClientStop::NotEnrolled { row, since } => {
            report.outcome = AuthOutcome::NotEnrolled { row, since };
            Ok(())
        }
        ClientStop::Error(e) => Err(ServiceError::Pir(e)),
    };
    let refused = |report: &mut AuthReport, e: ServiceError| match e {
        ServiceError::Refused { code, reason } => {
            report.outcome = AuthOutcome::Refused { code, reason };
            Ok(())
        }
        e => Err(e),
    };

    let (mut cs, hello) = client.start(now_ms(), &mut rng);
    conn.send(&hello.to_wire()).await?;
    let commit: Commit = match recv_expect(&mut conn, TAG_COMMIT, limits::SMALL).await {
        Ok(c) => c,
        Err(e) => {
            refused(&mut report, e)?;
            return Ok(report);
        }
    };
    // The log, up to the commit's head.
    let t1 = Instant::now();
    match client.commit_needs(&cs, &commit, &view) {
        Err(s) => {
            stop(&mut report, s)?;
            return Ok(report);
        }
        Ok(CommitNeeds::Ready) => {}
        Ok(CommitNeeds::Log(req)) => match sync(&mut conn, &mut view, req).await {
            Ok(n) => report.log_entries_fetched = n,
            Err(SyncStop::View(e)) => {
                stop(&mut report, e.into())?;
                return Ok(report);
            }
            Err(SyncStop::Error(e)) => {
                refused(&mut report, e)?;
                return Ok(report);
            }
        },
    }
    save_view(identity, &view)?;
    times.log_ms = ms(t1.elapsed());
    let header = match client.check_commit(&cs, &commit, &view) {
        Ok(h) => h,
        Err(s) => {
            stop(&mut report, s)?;
            return Ok(report);
        }
    };
    // The hint: from the cache when its table id is the one the server just signed
    // (`on_commit` recomputes the id from the hint and refuses another), else
    // downloaded and cached.
    let cache = opts
        .hint_cache
        .clone()
        .or_else(|| opts.default_hint_cache.then(|| default_hint_cache(identity)));
    let t2 = Instant::now();
    // The cache is keyed by the table id and where its current run began in the log
    // (a table id that comes back after another is downloaded again).
    let since = view.current_since(commit.log_seq, &header.table_id);
    let cached = match (cache.as_deref(), since) {
        (Some(d), Some(since)) => read_cached_hint(d, &header.table_id, since),
        _ => None,
    };
    let hint = match cached {
        Some(h) if crate::lwe::LweClient::new(h.clone()).is_ok_and(|c| c.table_id() == header.table_id) => {
            report.hint_cached = true;
            h
        }
        _ => {
            conn.send(&HintRequest { epoch: header.epoch }.to_wire()).await?;
            let h: LweHint = match recv_expect(&mut conn, crate::lwe::TAG_HINT, limits::HINT).await {
                Ok(h) => h,
                Err(e) => {
                    refused(&mut report, e)?;
                    return Ok(report);
                }
            };
            h
        }
    };
    times.hint_ms = ms(t2.elapsed());
    let t3 = Instant::now();
    let queries = match client.on_commit(&mut cs, commit, hint.clone(), &view, &mut rng) {
        Ok(q) => q,
        Err(s) => {
            stop(&mut report, s)?;
            return Ok(report);
        }
    };
    if !report.hint_cached
        && let (Some(d), Some(since)) = (cache.as_deref(), since)
    {
        // Only a hint whose id the server signed in this session gets here.
        let _ = write_cached_hint(d, &header.table_id, since, &hint);
    }
    report.audited_rows = cs.audited_rows();
    times.query_ms = ms(t3.elapsed());
    let t4 = Instant::now();
    conn.send(&queries.to_wire()).await?;
    let resp: Response = match recv_expect(&mut conn, TAG_RESPONSE, limits::RESPONSE).await {
        Ok(r) => r,
        Err(e) => {
            refused(&mut report, e)?;
            return Ok(report);
        }
    };
    times.answer_ms = ms(t4.elapsed());
    let t5 = Instant::now();
    let auth = match client.on_response(&mut cs, resp, &mut rng) {
        Ok(a) => a,
        Err(s) => {
            stop(&mut report, s)?;
            return Ok(report);
        }
    };
    conn.send(&auth.to_wire()).await?;
    let reply = match recv_expect::<ServerAuth>(&mut conn, TAG_SERVER_AUTH, limits::SMALL).await {
        Ok(r) => Ok(r),
        Err(e) => Err(e.to_string()),
    };
    let outcome = client.on_server_auth(&mut cs, reply);
    times.check_and_auth_ms = ms(t5.elapsed());
    times.total_ms = ms(t0.elapsed());
    let _ = conn.shutdown().await;
    report.times = times;
    report.outcome = match outcome {
        ClientOutcome::Authenticated {
            session_key,
            epoch,
            expires_ms,
        } => AuthOutcome::Authenticated {
            session_key,
            epoch,
            expires_ms,
        },
        ClientOutcome::Caught(p) => AuthOutcome::Caught(p),
        ClientOutcome::NotEnrolled { row, since } => AuthOutcome::NotEnrolled { row, since },
        ClientOutcome::Refused(reason) => AuthOutcome::Refused {
            code: RefusalCode::Other,
            reason,
        },
    };
    Ok(report)
}

/// Compares two subscribers' views of one server's log (identity files or view
/// files): `Some(proof)` if the server showed them different logs.
pub fn compare(a: &Path, b: &Path) -> Result<Option<Box<MisbehaviourProof>>> {
    let read = |p: &Path| -> Result<(VerifyingKey, Vec<LogEntry>)> {
        let p = if p.extension().is_some_and(|e| e == "view") {
            p.to_owned()
        } else {
            view_path(p)
        };
        let bytes = std::fs::read(&p).map_err(file_err(&p))?;
        Ok(ClientView::entries_from_bytes(&bytes)?)
    };
    let (ka, ea) = read(a)?;
    let (kb, eb) = read(b)?;
    Ok(tacit_pir_compare(&ka, &ea, &kb, &eb)?)
}

fn tacit_pir_compare(
    ka: &VerifyingKey,
    ea: &[LogEntry],
    kb: &VerifyingKey,
    eb: &[LogEntry],
) -> crate::Result<Option<Box<MisbehaviourProof>>> {
    crate::tracedge::log::compare_entries(ka, ea, kb, eb)
}
