//! The HTTPS shell around the PrivateDrop state machines (paper §5.3, Fig. 5):
//! mutual TLS with the account certificates, then `POST /StartPSI`, `/FinishPSI`,
//! `/Ask` and `/Upload` on one connection; `/Discover` for the legacy flow.
//!
//! The shell holds no cryptography of its own: it moves bodies between the socket and
//! the [`crate::protocol`] state machines, enforces request-size limits and timeouts,
//! and streams uploads to disk (temporary file, SHA-256 check, no-overwrite rename).

use crate::ca::DropIdentity;
use crate::legacy::{self, DiscoverRequest};
use crate::protocol::{
    AddressBook, Ask, Context, Discoverability, DropReceiver, DropSender, FileOffer, Peer, ReceiverAwaitingAsk,
    ReceiverAwaitingM2, ReceiverOutcome, SenderOutcome,
};
use crate::records::CaPublicKey;
use crate::revocation::Revocations;
pub use crate::supply::BookSupply;
use crate::x509::{TLS_SERVER_NAME, account_of_certificate};
use crate::{AccountId, Error, Result};
use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Frame, Incoming, SizeHint};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use sha2::{Digest, Sha256};
use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::{Duration, Instant};
use tacit_crypto::PrimeGroup;
use tacit_crypto::rng::SecureRng;
use tacit_net::guard::{self, Guard, ServeEvent, ServeLimits};
use tacit_net::tls::{MutualTls, TlsAcceptor, TlsConnector, server_name};
use tacit_psi::{Response as PsiResponse, Sender};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

/// Limits and timeouts of the HTTPS shell.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// TCP connect and TLS handshake.
    pub handshake_timeout: Duration,
    /// Reading a request's headers, or any chunk of a body.
    pub read_timeout: Duration,
    /// Largest `Ask` body.
    pub max_ask: usize,
    /// Compute the DO3 answer as soon as `StartPSI` arrives (while the sender
    /// computes DO2) instead of after M2. Faster; but a sender that never sends M2
    /// then costs the receiver one DO3 answer (it must still hold an enrolled account
    /// for mutual TLS and present valid certified inputs). `false` = work-first.
    pub prepare_answer: bool,
    /// Largest file a receiver accepts (an offer naming a larger one is refused).
    pub max_file: u64,
    /// Largest total of one offer.
    pub max_offer: u64,
    /// Free space a receiver keeps on the disk of its folder: an offer that would
    /// leave less is refused.
    pub keep_free: u64,
    /// Deadline of a whole sender exchange (authentication and every upload): a
    /// receiver that stalls cannot hold the sender longer.
    pub exchange_deadline: Duration,
    /// The receiver's admission of connections ([`tacit_net::guard`]): at most 256 at
    /// once (fitted below the descriptor limit, two descriptors each: an upload
    /// writes a file), 16 per address, each within the exchange deadline.
    pub connections: ServeLimits,
    /// `StartPSI` requests one account may make per minute (a burst of as many,
    /// refilled evenly); further ones get 429 without any PSI work. 0: no limit.
    pub start_psi_per_minute: u32,
    /// Longest a `StartPSI` waits for an address-book precomputation before it is
    /// refused as busy (503).
    pub supply_wait: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        let exchange_deadline = Duration::from_secs(3600);
        Limits {
            handshake_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(15),
            max_ask: 1 << 20,
            prepare_answer: true,
            max_file: 4 << 30,
            max_offer: 16 << 30,
            keep_free: 256 << 20,
            exchange_deadline,
            connections: ServeLimits {
                fds_per_connection: 2,
                ..ServeLimits::new(256, exchange_deadline)
            },
            start_psi_per_minute: 10,
            supply_wait: Duration::from_secs(10),
        }
    }
}

/// Tokens per account for `StartPSI` (a token bucket: `per_minute` at most, refilled
/// at `per_minute` a minute). Accounts whose bucket is full again are forgotten once
/// many are held, so the map stays bounded.
struct StartRate {
    per_minute: u32,
    buckets: Mutex<std::collections::HashMap<AccountId, (f64, Instant)>>,
}

impl StartRate {
    const MAX_ACCOUNTS: usize = 4096;

    fn new(per_minute: u32) -> Self {
        StartRate {
            per_minute,
            buckets: Mutex::new(std::collections::HashMap::new()),
        }
    }

    /// Takes a token of `account`; `false` when it has none left.
    fn allow(&self, account: AccountId) -> bool {
        if self.per_minute == 0 {
            return true;
        }
        let cap = f64::from(self.per_minute);
        let per_sec = cap / 60.0;
        let now = Instant::now();
        let mut b = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        if b.len() >= Self::MAX_ACCOUNTS && !b.contains_key(&account) {
            b.retain(|_, (tokens, at)| *tokens + now.duration_since(*at).as_secs_f64() * per_sec < cap);
            if b.len() >= Self::MAX_ACCOUNTS {
                // Every held account is still rate-limited: refuse newcomers too
                // rather than forget one (which would refill it).
                return false;
            }
        }
        let (tokens, at) = b.entry(account).or_insert((cap, now));
        *tokens = (*tokens + now.duration_since(*at).as_secs_f64() * per_sec).min(cap);
        *at = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// Bytes free for an unprivileged user on the file system of `dir`.
pub fn free_space(dir: &Path) -> std::io::Result<u64> {
    let st = rustix::fs::statvfs(dir).map_err(std::io::Error::from)?;
    Ok(st.f_bavail.saturating_mul(st.f_frsize))
}

/// Whether the receiver can take `files` into `dir` under `limits`; the reason if
/// not (sent to the sender as the refusal).
pub fn check_offer(files: &[FileOffer], limits: &Limits, dir: &Path) -> core::result::Result<(), String> {
    check_offer_limits(files, limits)?;
    let total = files.iter().fold(0u64, |a, f| a.saturating_add(f.size));
    let free = free_space(dir).map_err(|e| format!("cannot check free space: {e}"))?;
    if total.saturating_add(limits.keep_free) > free {
        return Err(format!(
            "an offer of {total} bytes does not fit in the receiver's free space"
        ));
    }
    Ok(())
}

/// The part of [`check_offer`] that depends on the offer and the configured limits
/// alone (not on the disk): what `/Ask` checks before it identifies the sender, so
/// that no sender, contact or not, learns the receiver's free space from it.
pub fn check_offer_limits(files: &[FileOffer], limits: &Limits) -> core::result::Result<(), String> {
    if let Some(f) = files.iter().find(|f| f.size > limits.max_file) {
        return Err(format!(
            "a file of {} bytes; this receiver takes files up to {} bytes",
            f.size, limits.max_file
        ));
    }
    let total = files.iter().fold(0u64, |a, f| a.saturating_add(f.size));
    if total > limits.max_offer {
        return Err(format!(
            "an offer of {total} bytes; this receiver takes up to {} bytes at once",
            limits.max_offer
        ));
    }
    Ok(())
}

/// Largest `FinishPSI` body for the parameters: one response.
fn max_finish_psi<G: PrimeGroup>(id: &DropIdentity<G>) -> usize {
    PsiResponse::<G>::encoded_len(&id.params.psi) + 1024
}

/// Largest `StartPSI` body: the parameters and the certified vector.
fn max_start_psi<G: PrimeGroup>(id: &DropIdentity<G>) -> usize {
    id.params.max_ids() * G::ELEMENT_LEN + 1024
}

fn tls_of<G: PrimeGroup>(id: &DropIdentity<G>) -> Result<MutualTls> {
    MutualTls::new(&id.account_cert, id.tls_key.pkcs8_der(), &id.root_cert)
        .map_err(|e| Error::InvalidParams(e.to_string()))
}

fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn io_err(what: &str, e: impl core::fmt::Display) -> Error {
    Error::Transport(format!("{what}: {e}"))
}

/// What the receiver does with an authenticated offer.
pub type Decide = dyn Fn(&ReceiverOutcome) -> bool + Send + Sync;
/// Receives progress and events (for logs and progress bars).
pub type Events = dyn Fn(Event) + Send + Sync;

/// Something that happened, for logs and progress bars.
#[derive(Debug, Clone)]
pub enum Event {
    /// A peer connected (its account from the TLS certificate).
    Connected(AccountId),
    /// A peer was authenticated (or not).
    Authenticated(Peer),
    /// Bytes of a file moved.
    Progress {
        /// The file.
        name: String,
        /// Bytes so far.
        done: u64,
        /// Total.
        total: u64,
    },
    /// A file arrived, verified, under this path.
    Received(PathBuf),
    /// A session ended with an error.
    Failed(String),
    /// The receiver's accept loop refused or dropped a connection, or `accept`
    /// failed (and serving went on).
    Admission(ServeEvent),
}

/// The AirDrop receiver's configuration.
pub struct ReceiverConfig<G: PrimeGroup> {
    /// Our identity.
    pub identity: Arc<DropIdentity<G>>,
    /// Our address book.
    pub book: Arc<AddressBook>,
    /// The trusted CA.
    pub ca: CaPublicKey,
    /// The CA's revocation list in force: a sender whose account is on it is
    /// refused right after the TLS handshake, before any request is read.
    pub revocations: Revocations,
    /// Who may authenticate.
    pub mode: Discoverability,
    /// Our device name.
    pub name: String,
    /// Where files go.
    pub dir: PathBuf,
    /// Whether `/Discover` (the legacy flow) is served.
    pub legacy: bool,
    /// Limits.
    pub limits: Limits,
    /// The PSI senders over our address book, one per session, computed ahead by
    /// one worker (never inline).
    pub supply: Arc<BookSupply<G>>,
    /// Accept or decline an offer.
    pub decide: Arc<Decide>,
    /// Events.
    pub events: Arc<Events>,
    /// If set, every request body is appended here as a frame (what a malicious
    /// receiver would record; see [`crate::attack`]).
    pub capture: Option<Arc<Mutex<std::fs::File>>>,
}

enum ConnState<G: PrimeGroup> {
    Fresh,
    AwaitingM2(Box<ReceiverAwaitingM2<G>>),
    /// The DO3 answer is being computed on a blocking thread.
    Preparing(tokio::task::JoinHandle<ReceiverAwaitingM2<G>>),
    AwaitingAsk(Box<ReceiverAwaitingAsk<G>>),
    /// The accepted offer; a file's slot is emptied when its upload starts, so each
    /// offered file is received at most once.
    Accepted(Vec<Option<FileOffer>>),
    Done,
}

type HttpResponse = Response<Full<Bytes>>;

fn reply(status: StatusCode, body: impl Into<Bytes>) -> HttpResponse {
    let mut r = Response::new(Full::new(body.into()));
    *r.status_mut() = status;
    r
}

fn refuse(status: StatusCode, why: impl core::fmt::Display) -> HttpResponse {
    reply(status, format!("{why}\n"))
}

/// Adds a `Server-Timing` header with the receiver's computation time, so a client
/// can split its waiting time into transmission and the receiver's work (the paper's
/// `T4 − T1 − (T3 − T2)`, §6.4).
fn timed(mut r: HttpResponse, since: Instant) -> HttpResponse {
    // Fixed width (issue 32): the header's length must not vary with the time.
    let ms = (since.elapsed().as_secs_f64() * 1e3).min(99_999.999);
    if let Ok(v) = hyper::header::HeaderValue::from_str(&format!("compute;dur={ms:09.3}")) {
        r.headers_mut().insert("server-timing", v);
    }
    r
}

fn server_compute(headers: &hyper::HeaderMap) -> Duration {
    headers
        .get("server-timing")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("compute;dur="))
        .and_then(|v| v.parse::<f64>().ok())
        .map(|ms| Duration::from_secs_f64(ms.max(0.0) / 1e3))
        .unwrap_or_default()
}

/// Serves PrivateDrop on `listener` until `sessions` connections were handled (or
/// forever).
pub async fn serve<G: PrimeGroup>(
    listener: TcpListener,
    cfg: Arc<ReceiverConfig<G>>,
    sessions: Option<u64>,
) -> Result<()> {
    let tls = tls_of(&cfg.identity)?;
    let acceptor = TlsAcceptor::from(tls.server_config().map_err(|e| Error::InvalidParams(e.to_string()))?);
    let events = cfg.events.clone();
    // Issue 32: every connection under the shared guard (a cap fitted below the
    // descriptor limit, a share per address, a deadline; accept errors never end the
    // receiver).
    let guard = Guard::new(cfg.limits.connections).on_event(Arc::new(move |e| events(Event::Admission(e))));
    let rate = Arc::new(StartRate::new(cfg.limits.start_psi_per_minute));
    guard::serve(&listener, &guard, sessions, |tcp, _peer| {
        let (cfg, acceptor, rate) = (cfg.clone(), acceptor.clone(), rate.clone());
        async move {
            if let Err(e) = connection(tcp, acceptor, cfg.clone(), rate).await {
                (cfg.events)(Event::Failed(e.to_string()));
            }
        }
    })
    .await;
    Ok(())
}

async fn connection<G: PrimeGroup>(
    mut tcp: TcpStream,
    acceptor: TlsAcceptor,
    cfg: Arc<ReceiverConfig<G>>,
    rate: Arc<StartRate>,
) -> Result<()> {
    tcp.set_nodelay(true).map_err(|e| io_err("socket", e))?;
    // A plain tacit client (`discover connect`, `psi query` without TLS, …) opens with
    // the tacit greeting instead of a ClientHello: it is answered with ours, flagged
    // "TLS required", so that it names what it reached (`docs/wire.md`, "The
    // greeting"); anything else goes on to the TLS handshake.
    if let Some(why) =
        tacit_net::refuse_plain_tacit(&mut tcp, tacit_net::Protocol::Drop, cfg.limits.handshake_timeout).await
    {
        return Err(Error::Transport(why));
    }
    let tls = tokio::time::timeout(cfg.limits.handshake_timeout, acceptor.accept(tcp))
        .await
        .map_err(|_| Error::Transport("TLS handshake timed out".into()))?
        .map_err(|e| io_err("TLS handshake", e))?;
    let peer_cert = tls
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|c| c.first())
        .ok_or_else(|| Error::Transport("the peer presented no certificate".into()))?;
    let peer = account_of_certificate(peer_cert)?;
    // A revoked account gets nothing: the connection closes before any request (nor
    // does anyone, under the refuse policy, while our list is not current).
    cfg.revocations.check_at(&peer, now_unix())?;
    (cfg.events)(Event::Connected(peer));
    let state = Arc::new(tokio::sync::Mutex::new(ConnState::Fresh));
    let header_timeout = cfg.limits.read_timeout;
    let service = hyper::service::service_fn(move |req: Request<Incoming>| {
        let cfg = cfg.clone();
        let state = state.clone();
        let rate = rate.clone();
        async move { Ok::<_, Infallible>(handle(req, &cfg, &state, peer, &rate).await) }
    });
    hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout)
        .keep_alive(true)
        .serve_connection(TokioIo::new(tls), service)
        .await
        .map_err(|e| io_err("HTTP", e))
}

/// Reads a whole body of at most `limit` bytes within the read timeout.
async fn read_body(
    req: Request<Incoming>,
    limit: usize,
    timeout: Duration,
) -> core::result::Result<Bytes, HttpResponse> {
    if let Some(len) = req.headers().get(hyper::header::CONTENT_LENGTH)
        && len
            .to_str()
            .ok()
            .and_then(|l| l.parse::<usize>().ok())
            .is_some_and(|l| l > limit)
    {
        return Err(refuse(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("request body over {limit} bytes"),
        ));
    }
    match tokio::time::timeout(timeout, Limited::new(req.into_body(), limit).collect()).await {
        Err(_) => Err(refuse(StatusCode::REQUEST_TIMEOUT, "request body too slow")),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => Err(refuse(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("request body over {limit} bytes"),
        )),
        Ok(Err(e)) => Err(refuse(StatusCode::BAD_REQUEST, format!("reading the body: {e}"))),
        Ok(Ok(c)) => Ok(c.to_bytes()),
    }
}

fn status_of(e: &Error) -> StatusCode {
    match e {
        Error::Busy(_) => StatusCode::SERVICE_UNAVAILABLE,
        Error::NotDiscoverable(_) => StatusCode::FORBIDDEN,
        Error::BadCertificate(_) | Error::AccountMismatch(_) | Error::Expired { .. } | Error::UncertifiedInput => {
            StatusCode::FORBIDDEN
        }
        _ => StatusCode::BAD_REQUEST,
    }
}

fn record(cfg: &ReceiverConfig<impl PrimeGroup>, body: &[u8]) {
    if let Some(c) = &cfg.capture
        && let Ok(mut f) = c.lock()
    {
        use std::io::Write;
        let _ = f.write_all(&(body.len() as u32).to_be_bytes());
        let _ = f.write_all(body);
    }
}

/// The `/Ask` answers, all of one length (issue 32): a non-contact refused in
/// contacts-only mode gets the same bytes as a contact the user declined, so the
/// answer's size does not say whether the receiver holds the sender. (Whether the
/// offer was accepted shows anyway: an upload follows or not.)
const ASK_ACCEPTED: &str = "accepted";
const ASK_DECLINED: &str = "declined";

fn ask_answer(status: StatusCode, word: &str) -> HttpResponse {
    // Both answers padded to one length; the status lines differ ("200 OK",
    // "403 Forbidden"), which says accepted or not, never why.
    reply(status, format!("{word:<16}\n"))
}

/// Length of the body of a 413 answer to `/Ask`: the reason, cut or padded with
/// spaces to this many bytes and a newline (review of issue 32: its length must not
/// vary with anything but the offer).
pub const ASK_REFUSAL_LEN: usize = 160;

fn ask_too_large(why: &str) -> HttpResponse {
    let mut cut = why.len().min(ASK_REFUSAL_LEN);
    while !why.is_char_boundary(cut) {
        cut -= 1;
    }
    let mut body = String::with_capacity(ASK_REFUSAL_LEN + 1);
    body.push_str(&why[..cut]);
    while body.len() < ASK_REFUSAL_LEN {
        body.push(' ');
    }
    body.push('\n');
    reply(StatusCode::PAYLOAD_TOO_LARGE, body)
}

async fn handle<G: PrimeGroup>(
    req: Request<Incoming>,
    cfg: &ReceiverConfig<G>,
    state: &tokio::sync::Mutex<ConnState<G>>,
    peer: AccountId,
    rate: &StartRate,
) -> HttpResponse {
    if req.method() != hyper::Method::POST {
        return refuse(StatusCode::METHOD_NOT_ALLOWED, "only POST is served");
    }
    let path = req.uri().path().to_string();
    let query = req.uri().query().unwrap_or("").to_string();
    let mut st = state.lock().await;
    let ctx = Context {
        identity: cfg.identity.clone(),
        book: cfg.book.clone(),
        ca: cfg.ca,
        peer,
        now: now_unix(),
        device_name: cfg.name.clone(),
    };
    let t = cfg.limits.read_timeout;
    let mut rng = SecureRng::from_os();
    match (path.as_str(), std::mem::replace(&mut *st, ConnState::Done)) {
        ("/StartPSI", ConnState::Fresh) => {
            let body = match read_body(req, max_start_psi(&cfg.identity), t).await {
                Ok(b) => b,
                Err(r) => return r,
            };
            record(cfg, &body);
            let since = Instant::now();
            // Issue 32, item 4: the cheapest checks first, and a precomputation of the
            // address book only for a request that passed them all.
            if !rate.allow(peer) {
                return refuse(
                    StatusCode::TOO_MANY_REQUESTS,
                    format!(
                        "more than {} StartPSI requests from this account in a minute; try again later",
                        cfg.limits.start_psi_per_minute
                    ),
                );
            }
            let checked = match DropReceiver::check_start(ctx, cfg.mode, &body) {
                Ok(c) => c,
                Err(e) => return refuse(status_of(&e), e),
            };
            let sender = match cfg.supply.take(cfg.limits.supply_wait).await {
                Ok(s) => s,
                Err(e) => return refuse(StatusCode::SERVICE_UNAVAILABLE, e),
            };
            match checked.respond(sender) {
                Ok((mut next, m1)) => {
                    *st = if cfg.limits.prepare_answer {
                        ConnState::Preparing(tokio::task::spawn_blocking(move || {
                            // A failure here (the sender supply's key, say) surfaces
                            // again when M2 asks for the answer.
                            let _ = next.prepare_answer(&mut SecureRng::from_os());
                            next
                        }))
                    } else {
                        ConnState::AwaitingM2(Box::new(next))
                    };
                    timed(reply(StatusCode::OK, m1), since)
                }
                Err(e) => refuse(status_of(&e), e),
            }
        }
        ("/FinishPSI", prior @ (ConnState::AwaitingM2(_) | ConnState::Preparing(_))) => {
            let body = match read_body(req, max_finish_psi(&cfg.identity), t).await {
                Ok(b) => b,
                Err(r) => return r,
            };
            record(cfg, &body);
            let since = Instant::now();
            let w = match prior {
                ConnState::AwaitingM2(w) => *w,
                ConnState::Preparing(h) => match h.await {
                    Ok(w) => w,
                    Err(e) => return refuse(StatusCode::INTERNAL_SERVER_ERROR, e),
                },
                _ => unreachable!("matched above"),
            };
            match w.on_m2(&body, &mut rng) {
                Ok((next, m3)) => {
                    *st = ConnState::AwaitingAsk(Box::new(next));
                    timed(reply(StatusCode::OK, m3), since)
                }
                Err(e) => refuse(status_of(&e), e),
            }
        }
        ("/Ask", ConnState::AwaitingAsk(w)) => {
            let body = match read_body(req, cfg.limits.max_ask, t).await {
                Ok(b) => b,
                Err(r) => return r,
            };
            record(cfg, &body);
            // The offer is checked against our limits before the sender is identified
            // (review of issue 32): the answer to an offer over them depends on the
            // offer alone, the same for a contact and a non-contact, so its size does
            // not say whether we hold the sender.
            let over = match Ask::from_bytes(&body) {
                Ok(ask) => check_offer_limits(&ask.files, &cfg.limits).err(),
                Err(e) => return refuse(status_of(&e), e),
            };
            let outcome = w.on_ask(&body);
            if let Some(why) = over {
                match &outcome {
                    Ok(o) => (cfg.events)(Event::Authenticated(o.sender.clone())),
                    Err(e) => (cfg.events)(Event::Failed(e.to_string())),
                }
                (cfg.events)(Event::Failed(format!("offer refused: {why}")));
                return ask_too_large(&why);
            }
            match outcome {
                Ok(outcome) => {
                    (cfg.events)(Event::Authenticated(outcome.sender.clone()));
                    if (cfg.decide)(&outcome) {
                        // Free space only now, for a sender we identified and accepted
                        // (before, any sender could search the receiver's free space).
                        if let Err(e) = free_space(&cfg.dir) {
                            let names: Vec<String> =
                                outcome.ask.files.iter().map(|f| safe_file_name(&f.name)).collect();
                            return could_not_store(cfg, &names.join(", "), &format!("cannot check free space: {e}"));
                        }
                        if let Err(why) = check_offer(&outcome.ask.files, &cfg.limits, &cfg.dir) {
                            (cfg.events)(Event::Failed(format!("offer refused: {why}")));
                            return ask_too_large(&why);
                        }
                        *st = ConnState::Accepted(outcome.ask.files.into_iter().map(Some).collect());
                        ask_answer(StatusCode::OK, ASK_ACCEPTED)
                    } else {
                        ask_answer(StatusCode::FORBIDDEN, ASK_DECLINED)
                    }
                }
                // Contacts-only mode and a sender we cannot identify: the same answer
                // as a decline (the reason stays in our log).
                Err(e @ Error::NotDiscoverable(_)) => {
                    (cfg.events)(Event::Failed(e.to_string()));
                    ask_answer(StatusCode::FORBIDDEN, ASK_DECLINED)
                }
                Err(e) => refuse(status_of(&e), e),
            }
        }
        ("/Upload", ConnState::Accepted(mut files)) => {
            let index = query.strip_prefix("file=").and_then(|i| i.parse::<usize>().ok());
            let Some(slot) = index.and_then(|i| files.get_mut(i)) else {
                *st = ConnState::Accepted(files);
                return refuse(StatusCode::BAD_REQUEST, "Upload needs ?file=N naming an offered file");
            };
            let Some(offer) = slot.take() else {
                *st = ConnState::Accepted(files);
                return refuse(StatusCode::CONFLICT, "this file was already uploaded");
            };
            *st = ConnState::Accepted(files);
            if let Err(e) = free_space(&cfg.dir) {
                return could_not_store(
                    cfg,
                    &safe_file_name(&offer.name),
                    &format!("cannot check free space: {e}"),
                );
            }
            if let Err(why) = check_offer(std::slice::from_ref(&offer), &cfg.limits, &cfg.dir) {
                return refuse(StatusCode::PAYLOAD_TOO_LARGE, why);
            }
            match receive_file(req, &offer, cfg).await {
                Ok(path) => {
                    (cfg.events)(Event::Received(path.clone()));
                    reply(
                        StatusCode::OK,
                        path.file_name()
                            .map(|n| n.to_string_lossy().into_owned())
                            .unwrap_or_default(),
                    )
                }
                // A local failure (the folder is read-only, the disk failed): the
                // receiver's log says why; the sender learns only that it failed,
                // never the receiver's paths (issue 28).
                Err((StatusCode::INTERNAL_SERVER_ERROR, why)) => {
                    (cfg.events)(Event::Failed(format!(
                        "could not store {}: {why}",
                        safe_file_name(&offer.name)
                    )));
                    refuse(StatusCode::INTERNAL_SERVER_ERROR, COULD_NOT_STORE)
                }
                Err((status, why)) => refuse(status, why),
            }
        }
        ("/Discover", ConnState::Fresh) if cfg.legacy => {
            let body = match read_body(req, 1 << 20, t).await {
                Ok(b) => b,
                Err(r) => return r,
            };
            record(cfg, &body);
            let since = Instant::now();
            match legacy::receiver_on_discover(
                &cfg.identity.legacy,
                &cfg.name,
                &cfg.book,
                &cfg.ca,
                &peer,
                ctx.now,
                cfg.mode,
                &body,
            ) {
                Ok((sender, resp)) => {
                    (cfg.events)(Event::Authenticated(sender));
                    timed(reply(StatusCode::OK, resp), since)
                }
                Err(e) => refuse(status_of(&e), e),
            }
        }
        (p @ ("/StartPSI" | "/FinishPSI" | "/Ask" | "/Upload" | "/Discover"), _) => refuse(
            StatusCode::CONFLICT,
            format!("{p} is not expected at this point of the exchange"),
        ),
        (p, _) => refuse(StatusCode::NOT_FOUND, format!("no endpoint {p}")),
    }
}

/// A file name without directories, control characters, or invisible and
/// bidirectional format characters (a name like `report\u{202E}fdp.exe` would show
/// as `reportexe.pdf`).
pub fn safe_file_name(name: &str) -> String {
    let base = name.rsplit(['/', '\\']).next().unwrap_or("");
    let cleaned = tacit_wire::text::strip_unsafe(base);
    let cleaned = cleaned.trim().trim_start_matches('.').to_string();
    if cleaned.is_empty() {
        "received-file".to_string()
    } else {
        cleaned
    }
}

/// Links `tmp` to a free name in `dir` (never overwriting), then removes `tmp`.
fn place(tmp: &Path, dir: &Path, name: &str) -> std::io::Result<PathBuf> {
    let (stem, ext) = match name.rfind('.') {
        Some(i) if i > 0 => (&name[..i], &name[i..]),
        _ => (name, ""),
    };
    for n in 0..10_000 {
        let candidate = if n == 0 {
            dir.join(name)
        } else {
            dir.join(format!("{stem} ({n}){ext}"))
        };
        match std::fs::hard_link(tmp, &candidate) {
            Ok(()) => {
                std::fs::remove_file(tmp)?;
                return Ok(candidate);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other("no free file name"))
}

/// What the sender is told when the receiver fails to store a file (its own
/// reasons, which name its paths, go to its log only).
pub const COULD_NOT_STORE: &str = "the receiver could not store the file";

/// A local failure of the receiver (its folder gone or unreadable, the disk failed):
/// the receiver's log says why; the sender learns only that it failed, never the
/// receiver's paths or errors (issue 28).
fn could_not_store(cfg: &ReceiverConfig<impl PrimeGroup>, names: &str, why: &str) -> HttpResponse {
    (cfg.events)(Event::Failed(format!(
        "could not store {names} in {}: {why}",
        cfg.dir.display()
    )));
    refuse(StatusCode::INTERNAL_SERVER_ERROR, COULD_NOT_STORE)
}

/// Whether `name` is the name of a partial file (`.tacit-<16 hex>.part`).
fn is_partial_name(name: &str) -> bool {
    name.strip_prefix(".tacit-")
        .and_then(|r| r.strip_suffix(".part"))
        .is_some_and(|h| h.len() == 16 && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Removes the partial files (`.tacit-<hex>.part`) an interrupted receiver left in
/// `dir` — those no running receiver holds: each is locked (`flock`) while it is
/// written. Returns how many were removed. Called when `drop receive` starts.
pub fn sweep_partial_files(dir: &Path) -> std::io::Result<usize> {
    let mut removed = 0;
    for e in std::fs::read_dir(dir)? {
        let Ok(e) = e else { continue };
        let name = e.file_name();
        if !name.to_str().is_some_and(is_partial_name) || !e.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        let p = e.path();
        let Ok(f) = std::fs::OpenOptions::new().read(true).open(&p) else {
            continue;
        };
        if f.try_lock().is_ok() && std::fs::remove_file(&p).is_ok() {
            removed += 1;
        }
    }
    Ok(removed)
}

/// Removes the temporary file unless disarmed.
struct TempFile(Option<PathBuf>);

impl Drop for TempFile {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = std::fs::remove_file(p);
        }
    }
}

async fn receive_file<G: PrimeGroup>(
    req: Request<Incoming>,
    offer: &FileOffer,
    cfg: &ReceiverConfig<G>,
) -> core::result::Result<PathBuf, (StatusCode, String)> {
    let declared = req
        .headers()
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|d| d != offer.size) {
        return Err((
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("upload length differs from the offered {} bytes", offer.size),
        ));
    }
    let name = safe_file_name(&offer.name);
    let mut nonce = [0u8; 8];
    rand_core::RngCore::fill_bytes(&mut SecureRng::from_os(), &mut nonce);
    let tmp_path = cfg.dir.join(format!(
        ".tacit-{}.part",
        nonce.iter().map(|b| format!("{b:02x}")).collect::<String>()
    ));
    let guard = TempFile(Some(tmp_path.clone()));
    let cannot_write = |e: std::io::Error| {
        (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot write to {}: {e}", cfg.dir.display()),
        )
    };
    let std_file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp_path)
        .map_err(cannot_write)?;
    // Held while the file is written, so that a receiver starting meanwhile on the
    // same folder does not sweep it away (`sweep_partial_files`).
    std_file
        .try_lock()
        .map_err(|e| cannot_write(std::io::Error::other(e.to_string())))?;
    let mut file = tokio::fs::File::from_std(std_file);
    let mut body = req.into_body();
    let mut hasher = Sha256::new();
    let mut got = 0u64;
    let mut last_event = 0u64;
    loop {
        let frame = match tokio::time::timeout(cfg.limits.read_timeout, body.frame()).await {
            Err(_) => return Err((StatusCode::REQUEST_TIMEOUT, "upload stalled".into())),
            Ok(None) => break,
            Ok(Some(Err(e))) => return Err((StatusCode::BAD_REQUEST, format!("upload interrupted: {e}"))),
            Ok(Some(Ok(f))) => f,
        };
        if let Ok(data) = frame.into_data() {
            got += data.len() as u64;
            if got > offer.size {
                return Err((
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!("upload exceeds the offered {} bytes", offer.size),
                ));
            }
            hasher.update(&data);
            file.write_all(&data)
                .await
                .map_err(|e| (StatusCode::INTERNAL_SERVER_ERROR, format!("writing: {e}")))?;
            if got - last_event >= 1 << 20 || got == offer.size {
                last_event = got;
                (cfg.events)(Event::Progress {
                    name: name.clone(),
                    done: got,
                    total: offer.size,
                });
            }
        }
    }
    if got != offer.size {
        return Err((
            StatusCode::BAD_REQUEST,
            format!("upload truncated: {got} of {} bytes", offer.size),
        ));
    }
    let digest: [u8; 32] = hasher.finalize().into();
    if digest != offer.sha256 {
        return Err((
            StatusCode::UNPROCESSABLE_ENTITY,
            "upload does not match the offered SHA-256".into(),
        ));
    }
    file.sync_all()
        .await
        .map_err(|e| (StatusCode::INTERNAL_SERVER_ERROR, format!("writing: {e}")))?;
    drop(file);
    let dir = cfg.dir.clone();
    let tmp = tmp_path.clone();
    let placed = tokio::task::spawn_blocking(move || place(&tmp, &dir, &name))
        .await
        .map_err(|e| (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?
        .map_err(|e| (StatusCode::INTERNAL_SERVER_ERROR, format!("placing the file: {e}")))?;
    let mut guard = guard;
    guard.0 = None;
    Ok(placed)
}

// ---------------------------------------------------------------------------
// The AirDrop sender (HTTPS client)

/// The AirDrop sender's configuration.
pub struct SenderConfig<G: PrimeGroup> {
    /// Our identity.
    pub identity: Arc<DropIdentity<G>>,
    /// Our address book.
    pub book: Arc<AddressBook>,
    /// The trusted CA.
    pub ca: CaPublicKey,
    /// The CA's revocation list in force: a receiver whose account is on it is
    /// refused right after the TLS handshake, before anything is sent.
    pub revocations: Revocations,
    /// Our device name.
    pub name: String,
    /// Limits.
    pub limits: Limits,
    /// Events.
    pub events: Arc<Events>,
}

/// Time spent in each part of authentication (for `tacit bench drop`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Timings {
    /// TCP connect and TLS handshake.
    pub tls: Duration,
    /// Our own computation.
    pub compute: Duration,
    /// The receiver's computation, as its `Server-Timing` headers report it.
    pub peer_compute: Duration,
    /// Waiting for the peer's answers minus its computation: transmission.
    pub transmission: Duration,
    /// From the first request to the authenticated result, TLS set-up included.
    pub total: Duration,
}

/// An authenticated HTTPS connection to a receiver, ready for `Ask`.
pub struct Session<G: PrimeGroup> {
    http: hyper::client::conn::http1::SendRequest<BoxBody<Bytes, std::io::Error>>,
    /// The receiver's account (from its TLS certificate).
    pub peer: AccountId,
    /// What authentication established.
    pub outcome: SenderOutcome,
    /// Where the time went.
    pub timings: Timings,
    cfg: Arc<SenderConfig<G>>,
    /// The end of the whole exchange ([`Limits::exchange_deadline`] after connect).
    deadline: Instant,
}

fn full(b: impl Into<Bytes>) -> BoxBody<Bytes, std::io::Error> {
    Full::new(b.into()).map_err(|never: Infallible| match never {}).boxed()
}

async fn post(
    http: &mut hyper::client::conn::http1::SendRequest<BoxBody<Bytes, std::io::Error>>,
    path: &str,
    body: BoxBody<Bytes, std::io::Error>,
    len: u64,
    limit: Duration,
) -> Result<(StatusCode, Bytes)> {
    let (status, body, _) = post_timed(http, path, body, len, limit).await?;
    Ok((status, body))
}

/// One request and its whole answer within `limit` (the receiver cannot stall the
/// sender: every request runs under a deadline).
async fn post_timed(
    http: &mut hyper::client::conn::http1::SendRequest<BoxBody<Bytes, std::io::Error>>,
    path: &str,
    body: BoxBody<Bytes, std::io::Error>,
    len: u64,
    limit: Duration,
) -> Result<(StatusCode, Bytes, Duration)> {
    let req = Request::post(path)
        .header(hyper::header::HOST, TLS_SERVER_NAME)
        .header(hyper::header::CONTENT_LENGTH, len)
        .body(body)
        .map_err(|e| io_err("request", e))?;
    let exchange = async {
        // The connection accepts the next request only once it is idle again.
        http.ready().await.map_err(|e| io_err(path, e))?;
        let resp = http.send_request(req).await.map_err(|e| io_err(path, e))?;
        let status = resp.status();
        let remote = server_compute(resp.headers());
        let body = Limited::new(resp.into_body(), 64 << 20)
            .collect()
            .await
            .map_err(|e| io_err(path, e))?
            .to_bytes();
        Ok((status, body, remote))
    };
    tokio::time::timeout(limit, exchange).await.map_err(|_| {
        Error::Transport(format!(
            "{path}: the receiver did not answer within {:.0} s",
            limit.as_secs_f64()
        ))
    })?
}

fn expect_ok(path: &str, (status, body): (StatusCode, Bytes)) -> Result<Bytes> {
    if status == StatusCode::OK {
        Ok(body)
    } else {
        Err(Error::Refused(format!(
            "{path}: {} {}",
            status.as_u16(),
            String::from_utf8_lossy(&body).trim()
        )))
    }
}

async fn connect<G: PrimeGroup>(
    addr: &str,
    cfg: &SenderConfig<G>,
) -> Result<(
    hyper::client::conn::http1::SendRequest<BoxBody<Bytes, std::io::Error>>,
    AccountId,
)> {
    let tls = tls_of(&cfg.identity)?;
    let connector = TlsConnector::from(tls.client_config().map_err(|e| Error::InvalidParams(e.to_string()))?);
    let name = server_name(TLS_SERVER_NAME).map_err(|e| Error::InvalidParams(e.to_string()))?;
    let stream = tokio::time::timeout(cfg.limits.handshake_timeout, async {
        let tcp = TcpStream::connect(addr)
            .await
            .map_err(|e| io_err(&format!("connecting to {addr}"), e))?;
        tcp.set_nodelay(true).map_err(|e| io_err("socket", e))?;
        // A plain tacit server answers our ClientHello with its greeting: its first
        // bytes name it (`docs/wire.md`, "The greeting").
        match connector
            .connect(name, tacit_net::FirstBytes::new(tcp))
            .into_fallible()
            .await
        {
            Ok(s) => Ok(s),
            Err((e, io)) => Err(
                match tacit_net::name_plain_answer(addr, tacit_net::Protocol::Drop, io.seen()) {
                    Some(line) => Error::Transport(line),
                    None => io_err("TLS handshake", e),
                },
            ),
        }
    })
    .await
    .map_err(|_| Error::Transport(format!("connecting to {addr} timed out")))??;
    let cert = stream
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|c| c.first())
        .ok_or_else(|| Error::Transport("the receiver presented no certificate".into()))?;
    let peer = account_of_certificate(cert)?;
    // A revoked receiver is sent nothing, not even our certified inputs.
    cfg.revocations.check_at(&peer, now_unix())?;
    let (http, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| io_err("HTTP", e))?;
    tokio::spawn(conn);
    Ok((http, peer))
}

/// Connects to a receiver and runs PrivateDrop's authentication with an address-book
/// precomputation made beforehand.
pub async fn authenticate<G: PrimeGroup>(
    addr: &str,
    cfg: Arc<SenderConfig<G>>,
    book_sender: Sender<G>,
) -> Result<Session<G>> {
    authenticate_with(addr, cfg, move || Ok(book_sender)).await
}

/// Connects to a receiver and runs PrivateDrop's authentication, making the
/// address-book precomputation with `precompute` (on a blocking thread) only once TLS
/// succeeded with an unrevoked account certificate of our CA (review of issue 32:
/// `drop send` made one for every address mDNS offered, before connecting, so anyone
/// on the network could make it compute one per fake advertisement).
pub async fn authenticate_with<G: PrimeGroup>(
    addr: &str,
    cfg: Arc<SenderConfig<G>>,
    precompute: impl FnOnce() -> Result<Sender<G>> + Send + 'static,
) -> Result<Session<G>> {
    let t0 = Instant::now();
    let (mut http, peer) = connect(addr, &cfg).await?;
    (cfg.events)(Event::Connected(peer));
    let tls = t0.elapsed();
    let book_sender = tokio::task::spawn_blocking(precompute)
        .await
        .map_err(|e| Error::Transport(format!("address-book precomputation: {e}")))??;
    let t_auth = Instant::now();
    let mut rng = SecureRng::from_os();
    let ctx = Context {
        identity: cfg.identity.clone(),
        book: cfg.book.clone(),
        ca: cfg.ca,
        peer,
        now: now_unix(),
        device_name: cfg.name.clone(),
    };
    let rt = cfg.limits.read_timeout;
    let mut compute = Duration::ZERO;
    let t = Instant::now();
    let (w, start) = DropSender::start(ctx, book_sender)?;
    compute += t.elapsed();
    let len = start.len() as u64;
    let (status, m1, remote1) = post_timed(&mut http, "/StartPSI", full(start), len, rt).await?;
    let m1 = expect_ok("/StartPSI", (status, m1))?;
    let t = Instant::now();
    let (w, m2) = w.on_m1(&m1, &mut rng)?;
    compute += t.elapsed();
    let len = m2.len() as u64;
    let (status, m3, remote2) = post_timed(&mut http, "/FinishPSI", full(m2), len, rt).await?;
    let m3 = expect_ok("/FinishPSI", (status, m3))?;
    let t = Instant::now();
    let outcome = w.on_m3(&m3, &mut rng)?;
    compute += t.elapsed();
    let total = t_auth.elapsed();
    (cfg.events)(Event::Authenticated(outcome.receiver.clone()));
    Ok(Session {
        http,
        peer,
        outcome,
        timings: Timings {
            tls,
            compute,
            peer_compute: remote1 + remote2,
            transmission: total.saturating_sub(compute).saturating_sub(remote1 + remote2),
            total: total + tls,
        },
        deadline: t0 + cfg.limits.exchange_deadline,
        cfg,
    })
}

/// Runs the legacy `Discover` exchange; returns the receiver as identified and its
/// device name.
pub async fn legacy_discover<G: PrimeGroup>(addr: &str, cfg: Arc<SenderConfig<G>>) -> Result<(Peer, String, Timings)> {
    let t0 = Instant::now();
    let (mut http, peer) = connect(addr, &cfg).await?;
    let tls = t0.elapsed();
    let t = Instant::now();
    let req = DiscoverRequest {
        record: cfg.identity.legacy.clone(),
        sender_name: cfg.name.clone(),
    }
    .to_bytes();
    let len = req.len() as u64;
    let (status, resp, remote) = post_timed(&mut http, "/Discover", full(req), len, cfg.limits.read_timeout).await?;
    let resp = expect_ok("/Discover", (status, resp))?;
    let t_local = Instant::now();
    let (receiver, name) = legacy::sender_on_response(&cfg.book, &cfg.ca, &peer, now_unix(), &resp)?;
    let compute = t_local.elapsed();
    let total = t.elapsed();
    Ok((
        receiver,
        name,
        Timings {
            tls,
            compute,
            peer_compute: remote,
            transmission: total.saturating_sub(compute).saturating_sub(remote),
            total: total + tls,
        },
    ))
}

/// Fetches `url` (`http://` or `https://`, checked against Mozilla's root
/// certificates) with one `GET`: the body of a 200 answer of at most `max` bytes,
/// within `timeout`. For what is signed anyway, wherever it is published (a
/// revocation list: `tacit id refresh --url`); redirects are not followed.
pub async fn fetch_url(url: &str, max: usize, timeout: Duration) -> Result<Vec<u8>> {
    let uri: hyper::Uri = url
        .parse()
        .map_err(|e| Error::InvalidParams(format!("{url:?} is not a URL: {e}")))?;
    let https = match uri.scheme_str() {
        Some("https") => true,
        Some("http") => false,
        _ => {
            return Err(Error::InvalidParams(format!(
                "{url:?}: only http:// and https:// URLs can be fetched"
            )));
        }
    };
    let host = uri
        .host()
        .ok_or_else(|| Error::InvalidParams(format!("{url:?} names no host")))?
        .to_string();
    let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
    let authority = uri.authority().map(|a| a.to_string()).unwrap_or_else(|| host.clone());
    let path = uri
        .path_and_query()
        .map(|p| p.to_string())
        .unwrap_or_else(|| "/".into());
    let bare = host.trim_start_matches('[').trim_end_matches(']').to_string();
    let fetch = async {
        let tcp = TcpStream::connect((bare.as_str(), port))
            .await
            .map_err(|e| io_err(&format!("connecting to {authority}"), e))?;
        let req = Request::get(path)
            .header(hyper::header::HOST, authority.as_str())
            .header(hyper::header::USER_AGENT, "tacit")
            .body(Full::new(Bytes::new()))
            .map_err(|e| io_err("request", e))?;
        let resp = if https {
            let mut roots = tokio_rustls::rustls::RootCertStore::empty();
            roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
            let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
            let config = tokio_rustls::rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map_err(|e| io_err("TLS", e))?
                .with_root_certificates(roots)
                .with_no_client_auth();
            let name = server_name(&bare).map_err(|e| Error::InvalidParams(e.to_string()))?;
            let tls = TlsConnector::from(Arc::new(config))
                .connect(name, tcp)
                .await
                .map_err(|e| io_err(&format!("TLS with {authority}"), e))?;
            send_get(tls, req).await?
        } else {
            send_get(tcp, req).await?
        };
        let status = resp.status();
        if status != StatusCode::OK {
            return Err(Error::Transport(format!("{url}: the server answered {status}")));
        }
        let body = Limited::new(resp.into_body(), max)
            .collect()
            .await
            .map_err(|e| io_err(url, e))?
            .to_bytes();
        Ok(body.to_vec())
    };
    tokio::time::timeout(timeout, fetch).await.map_err(|_| {
        Error::Transport(format!(
            "{url}: no complete answer within {:.0} s",
            timeout.as_secs_f64()
        ))
    })?
}

async fn send_get<S>(io: S, req: Request<Full<Bytes>>) -> Result<Response<Incoming>>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut http, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io))
        .await
        .map_err(|e| io_err("HTTP", e))?;
    tokio::spawn(conn);
    http.send_request(req).await.map_err(|e| io_err("HTTP", e))
}

/// The media type of a file name, from its extension (`application/octet-stream` when
/// unknown).
pub fn media_type_of(name: &str) -> &'static str {
    let ext = name
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "txt" | "md" => "text/plain",
        "html" | "htm" => "text/html",
        "csv" => "text/csv",
        "json" => "application/json",
        "pdf" => "application/pdf",
        "zip" => "application/zip",
        "jpg" | "jpeg" => "image/jpeg",
        "png" => "image/png",
        "gif" => "image/gif",
        "heic" => "image/heic",
        "webp" => "image/webp",
        "mp4" => "video/mp4",
        "mov" => "video/quicktime",
        "mp3" => "audio/mpeg",
        "vcf" => "text/vcard",
        _ => "application/octet-stream",
    }
}

/// Hashes a file (streaming) for its offer.
pub async fn offer_for(path: &Path) -> Result<FileOffer> {
    offer_with_progress(path, &|_, _| {}).await
}

/// [`offer_for`] reporting `progress(bytes hashed, total)` about every MiB.
pub async fn offer_with_progress(path: &Path, progress: &(dyn Fn(u64, u64) + Sync)) -> Result<FileOffer> {
    use tokio::io::AsyncReadExt;
    let mut f = tokio::fs::File::open(path)
        .await
        .map_err(|e| io_err(&path.display().to_string(), e))?;
    let size = f
        .metadata()
        .await
        .map_err(|e| io_err(&path.display().to_string(), e))?
        .len();
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    let (mut done, mut last) = (0u64, 0u64);
    loop {
        let n = f
            .read(&mut buf)
            .await
            .map_err(|e| io_err(&path.display().to_string(), e))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
        done += n as u64;
        if done - last >= 1 << 20 {
            last = done;
            progress(done, size);
        }
    }
    progress(done, size);
    Ok(FileOffer {
        name: path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "file".into()),
        size,
        media_type: media_type_of(&path.to_string_lossy()).into(),
        sha256: h.finalize().into(),
    })
}

/// A request body streamed from a channel.
struct ChannelBody {
    rx: tokio::sync::mpsc::Receiver<std::io::Result<Bytes>>,
    len: u64,
}

impl hyper::body::Body for ChannelBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> Poll<Option<core::result::Result<Frame<Bytes>, std::io::Error>>> {
        match self.rx.poll_recv(cx) {
            Poll::Ready(Some(Ok(b))) => Poll::Ready(Some(Ok(Frame::data(b)))),
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(e))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.len)
    }
}

impl<G: PrimeGroup> Session<G> {
    /// Time left before the exchange's deadline, at most `cap`.
    fn left(&self, cap: Duration) -> Result<Duration> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Error::Transport(format!(
                "the exchange ran past its {:.0} s deadline",
                self.cfg.limits.exchange_deadline.as_secs_f64()
            )));
        }
        Ok(left.min(cap))
    }

    /// Sends `Ask` with our validation record (only if the receiver proved it knows us)
    /// and the offer; `Ok(true)` if the receiver accepted.
    pub async fn ask(&mut self, files: &[FileOffer]) -> Result<bool> {
        let ask = Ask {
            record: self.outcome.ask_record.clone(),
            sender_name: self.cfg.name.clone(),
            files: files.to_vec(),
        }
        .to_bytes();
        let len = ask.len() as u64;
        let limit = self.left(self.cfg.limits.read_timeout)?;
        let (status, body) = post(&mut self.http, "/Ask", full(ask), len, limit).await?;
        match status {
            StatusCode::OK => Ok(true),
            StatusCode::FORBIDDEN if String::from_utf8_lossy(&body).trim() == ASK_DECLINED => Ok(false),
            s => Err(Error::Refused(format!(
                "/Ask: {} {}",
                s.as_u16(),
                String::from_utf8_lossy(&body).trim()
            ))),
        }
    }

    /// Streams file `index` of the offer from `path`; returns the name the receiver
    /// stored it under.
    pub async fn upload(&mut self, index: usize, path: &Path, offer: &FileOffer) -> Result<String> {
        use tokio::io::AsyncReadExt;
        let (tx, rx) = tokio::sync::mpsc::channel(8);
        let mut f = tokio::fs::File::open(path)
            .await
            .map_err(|e| io_err(&path.display().to_string(), e))?;
        let events = self.cfg.events.clone();
        let (name, total) = (offer.name.clone(), offer.size);
        let reader = tokio::spawn(async move {
            let mut done = 0u64;
            loop {
                let mut buf = vec![0u8; 1 << 16];
                match f.read(&mut buf).await {
                    Ok(0) => break,
                    Ok(n) => {
                        buf.truncate(n);
                        done += n as u64;
                        if tx.send(Ok(Bytes::from(buf))).await.is_err() {
                            break;
                        }
                        events(Event::Progress {
                            name: name.clone(),
                            done,
                            total,
                        });
                    }
                    Err(e) => {
                        let _ = tx.send(Err(e)).await;
                        break;
                    }
                }
            }
        });
        let body = ChannelBody { rx, len: offer.size }.boxed();
        let path_q = format!("/Upload?file={index}");
        // An upload may take long; the exchange deadline bounds it.
        let limit = self.left(Duration::MAX)?;
        let r = post(&mut self.http, &path_q, body, offer.size, limit).await;
        let _ = reader.await;
        let body = expect_ok("/Upload", r?)?;
        Ok(String::from_utf8_lossy(&body).into_owned())
    }
}
