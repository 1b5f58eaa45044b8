//! The certification authority as a service: its folder (keys, registry,
//! revocation list), its TLS endpoint for enrolments and revocation lists, and a
//! device's requests to it.
//!
//! A folder holds `ca.key` (the Ed25519 seed, mode 0600), `tls-root.key` /
//! `tls-root.der` (the TLS root that certifies account keys), `registry.sqlite3`
//! (every account certified, and the revocation list in force) and
//! `revocations.bin` (the list, to publish anywhere).
//!
//! ```no_run
//! # async fn run() -> tacit_drop::service::Result<()> {
//! use tacit_drop::service::ca::{self, Ca};
//! let authority = ca::init("./ca".as_ref(), false)?;
//! let server = Ca::builder(authority, "./ca")
//!     .confirm(|account, id| id.ends_with("@example.com")) // the operator's check
//!     .bind("127.0.0.1:7700")
//!     .await?;
//! println!("CA on {}", server.local_addr());
//! server.serve().await
//! # }
//! ```

use super::{Ctx, Result, ServiceError, now};
use crate::AccountId;
use crate::DropParams;
use crate::ca::{CertificateAuthority, DeviceEnrollment, DropIdentity, EnrollmentRequest, Issued};
use crate::records::CaPublicKey;
use crate::revocation::{
    DEFAULT_LIST_LIFETIME_SECS, RevocationListRequest, SignedRevocationList, VerifiedRevocationList,
};
use crate::x509::TlsRoot;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tacit_crypto::rng::SecureRng;
use tacit_crypto::{GroupId, P256, PrimeGroup, Ristretto255};
use tacit_net::guard::{Guard, ServeEvent, ServeLimits};
use tacit_net::{FramedConn, FramedListener, NetConfig};
use tacit_store::Store;
use tacit_wire::{Encode, ErrorMessage};

/// Longest a connection to the CA may last (an enrolment may wait for the operator).
pub const CONNECTION_DEADLINE: Duration = Duration::from_secs(120);

/// How long a device waits for the CA's answer to an enrolment (the operator may
/// confirm by hand).
pub const ENROLMENT_DEADLINE: Duration = Duration::from_secs(120);

/// How long a device waits for a revocation list from the CA's endpoint.
pub const LIST_DEADLINE: Duration = Duration::from_secs(15);

/// How long a device waits for a revocation list from a URL.
pub const URL_DEADLINE: Duration = Duration::from_secs(20);

/// Largest revocation list fetched from a URL.
pub const MAX_LIST_BYTES: usize = 4 << 20;

/// Largest key file read from a CA folder.
const MAX_KEY_FILE: u64 = 1 << 16;

fn hex(b: &[u8]) -> String {
    hex::encode(b)
}

/// Hex digits only (the `hex` crate refuses signs and other characters).
pub fn unhex(s: &str) -> Result<Vec<u8>> {
    hex::decode(s.trim()).map_err(|e| {
        ServiceError::Invalid(match e {
            hex::FromHexError::OddLength => "not a hex string of whole bytes".into(),
            _ => "not a hex string".into(),
        })
    })
}

/// Writes a public file atomically (a temporary file renamed over it), readable by
/// everyone (a revocation list is meant to be published).
pub fn write_public(path: &Path, data: &[u8]) -> Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, data).map_err(|e| ServiceError::io(format!("cannot write {}", tmp.display()), e))?;
    std::fs::rename(&tmp, path).map_err(|e| ServiceError::io(format!("cannot write {}", path.display()), e))?;
    Ok(())
}

/// Writes a private file atomically, mode 0600.
fn write_private(path: &Path, data: &[u8]) -> Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(|e| ServiceError::io(format!("cannot write {}", tmp.display()), e))?;
    let bad = |e| ServiceError::io(format!("cannot write {}", path.display()), e);
    f.write_all(data).map_err(bad)?;
    f.sync_all().map_err(bad)?;
    std::fs::rename(&tmp, path).map_err(bad)?;
    Ok(())
}

/// Creates a CA in `dir` (made if missing); refuses a folder that holds one unless
/// `force` (whose certificates then stop verifying).
pub fn init(dir: &Path, force: bool) -> Result<CertificateAuthority> {
    let path = dir.join("ca.key");
    if path.exists() && !force {
        return Err(ServiceError::Invalid(format!(
            "{} already holds a CA (use --force to replace it)",
            dir.display()
        )));
    }
    std::fs::create_dir_all(dir).map_err(|e| ServiceError::io(format!("cannot create {}", dir.display()), e))?;
    let ca = CertificateAuthority::generate(&mut SecureRng::from_os())?;
    write_private(&dir.join("tls-root.key"), ca.tls_root().key_pem().as_bytes())?;
    let der = dir.join("tls-root.der");
    std::fs::write(&der, ca.tls_root().cert_der())
        .map_err(|e| ServiceError::io(format!("cannot write {}", der.display()), e))?;
    write_private(&path, hex(ca.to_seed().as_slice()).as_bytes())?;
    Ok(ca)
}

/// The CA kept in `dir` (files read without following a link, bounded).
pub fn load(dir: &Path) -> Result<CertificateAuthority> {
    let path = dir.join("ca.key");
    let text = tacit_wire::file::read_text_bounded(&path, "CA key", 4096).ctx(|| {
        format!(
            "no CA in {} (create one with `tacit ca init --dir {}`)",
            dir.display(),
            dir.display()
        )
    })?;
    let seed: [u8; 32] = unhex(&text)?
        .try_into()
        .map_err(|_| ServiceError::Invalid(format!("{} is corrupt: expected a 32-byte key", path.display())))?;
    let key_pem = tacit_wire::file::read_text_bounded(&dir.join("tls-root.key"), "TLS root key", MAX_KEY_FILE)
        .ctx(|| format!("{} has no tls-root.key", dir.display()))?;
    let cert = tacit_wire::file::read_bounded(&dir.join("tls-root.der"), "TLS root certificate", MAX_KEY_FILE)
        .ctx(|| format!("{} has no tls-root.der", dir.display()))?;
    let root = TlsRoot::from_parts(&key_pem, &cert).ctx(|| format!("the TLS root in {} is corrupt", dir.display()))?;
    Ok(CertificateAuthority::from_parts(&seed, root))
}

/// The CA's account registry (a UUID is bound to the key that first registered it),
/// kept beside its keys.
pub fn open_registry(dir: &Path) -> Result<Store> {
    let path = dir.join("registry.sqlite3");
    Store::open(&path).ctx(|| format!("cannot open the CA registry {}", path.display()))
}

/// The revocation-list issuer name of a CA key in a store.
pub fn issuer(ca: &CaPublicKey) -> String {
    format!("drop-ca/{}", hex(&ca.0.to_bytes()))
}

/// The list the CA publishes now: the one in its registry while it is current and
/// lists exactly the revoked accounts, else a new one with the next sequence number
/// and `lifetime` seconds to its next update (kept before it is returned, and
/// written to `dir`/revocations.bin when a folder is given, so that a copy published
/// from there stays current).
pub fn publish(
    ca: &CertificateAuthority,
    registry: &mut Store,
    now: u64,
    lifetime: u64,
    dir: Option<&Path>,
) -> Result<SignedRevocationList> {
    let issuer = issuer(&ca.public_key());
    let current = match registry.revocation_list(&issuer)? {
        Some(s) => Some(SignedRevocationList::from_bytes(&s.list).ctx(|| "the CA's stored revocation list")?),
        None => None,
    };
    let revoked: Vec<AccountId> = registry
        .ca_accounts()?
        .into_iter()
        .filter(|(_, a)| a.revoked_unix.is_some())
        .map(|(id, _)| AccountId(id))
        .collect();
    let (list, new) = ca.publish_revocations(current.as_ref(), &revoked, now, lifetime)?;
    if new {
        let l = list.unverified();
        registry.put_revocation_list(&issuer, l.sequence(), l.next_update(), &list.to_bytes())?;
        if let Some(dir) = dir {
            write_public(&dir.join("revocations.bin"), &list.to_bytes())?;
        }
    }
    Ok(list)
}

/// What [`revoke`] did.
#[derive(Debug)]
pub struct Revoked {
    /// When the account was revoked before, if it was.
    pub already_at: Option<u64>,
    /// The list in force now (naming the account).
    pub list: SignedRevocationList,
}

/// Revokes `account` in the registry of the CA in `dir` and publishes the new list
/// (kept in the registry and written to `dir`/revocations.bin).
pub fn revoke(ca: &CertificateAuthority, dir: &Path, account: &AccountId, lifetime: u64) -> Result<Revoked> {
    let mut registry = open_registry(dir)?;
    let before = registry.ca_account(&account.0)?.ok_or_else(|| {
        ServiceError::Invalid(format!(
            "account {account} is not registered with this CA (see its log for the UUIDs it certified)"
        ))
    })?;
    let t = now();
    registry.ca_revoke(&account.0, t)?;
    let list = publish(ca, &mut registry, t, lifetime, Some(dir))?;
    Ok(Revoked {
        already_at: before.revoked_unix,
        list,
    })
}

/// Decides whether the operator confirmed that `account` owns `identifier` (real SMS
/// or e-mail verification stands behind it in a product).
pub type Confirm = dyn Fn(&AccountId, &str) -> bool + Send + Sync;

/// What [`certify`] issued.
#[derive(Debug)]
pub struct Certified {
    /// The account.
    pub account: AccountId,
    /// How many identifiers the request carried.
    pub identifiers: usize,
    /// The issued certificates, encoded for the device.
    pub issued: Vec<u8>,
}

/// Certifies an encoded enrolment request in `group`: the Schnorr proofs checked,
/// each identifier confirmed by `confirm`, the account bound in `registry` (a
/// registered UUID only for a renewal signed by its current key; a revoked one
/// never).
pub fn certify(
    ca: &CertificateAuthority,
    registry: &mut Store,
    group: GroupId,
    request: &[u8],
    confirm: &(dyn Fn(&AccountId, &str) -> bool + '_),
) -> Result<Certified> {
    match group {
        GroupId::Ristretto255 => certify_in::<Ristretto255>(ca, registry, request, confirm),
        GroupId::P256 => certify_in::<P256>(ca, registry, request, confirm),
    }
}

fn certify_in<G: PrimeGroup>(
    ca: &CertificateAuthority,
    registry: &mut Store,
    request: &[u8],
    confirm: &(dyn Fn(&AccountId, &str) -> bool + '_),
) -> Result<Certified> {
    let req = EnrollmentRequest::<G>::from_bytes(request).ctx(|| "enrolment request")?;
    let account = req.account;
    let issued = ca.enroll(
        &req,
        &|id| confirm(&account, id),
        registry,
        now(),
        &mut SecureRng::from_os(),
    )?;
    Ok(Certified {
        account,
        identifiers: req.entries.len(),
        issued: issued.to_bytes(),
    })
}

/// What the CA's endpoint did, for its log.
#[derive(Debug)]
pub enum CaEvent {
    /// The accept loop refused or dropped a connection (limits), or `accept` failed.
    Admission(ServeEvent),
    /// An enrolment was certified.
    Certified {
        /// The account.
        account: AccountId,
        /// Its identifiers.
        identifiers: usize,
    },
    /// A revocation list was sent.
    SentList {
        /// Its sequence number.
        sequence: u64,
        /// Accounts it revokes.
        accounts: usize,
    },
    /// A request was refused; the device was sent this reason.
    Refused(String),
    /// A connection failed (TLS, a deadline, a peer that left).
    Failed(ServiceError),
}

/// The CA's endpoint ([`Ca::builder`]).
pub struct Ca;

impl Ca {
    /// An endpoint for `ca`, whose folder `dir` holds its registry (and receives
    /// `revocations.bin`). Defaults: ristretto255, every identifier refused until
    /// [`CaBuilder::confirm`] says how ownership is checked, revocation lists valid
    /// for [`DEFAULT_LIST_LIFETIME_SECS`], at most 256 connections (16 per address)
    /// of at most [`CONNECTION_DEADLINE`] each, served forever.
    pub fn builder(ca: CertificateAuthority, dir: impl Into<PathBuf>) -> CaBuilder {
        CaBuilder {
            ca,
            dir: dir.into(),
            group: GroupId::Ristretto255,
            confirm: Arc::new(|_, _| false),
            lifetime: DEFAULT_LIST_LIFETIME_SECS,
            limits: ServeLimits::new(256, CONNECTION_DEADLINE),
            sessions: None,
            events: Arc::new(|_| {}),
        }
    }
}

/// Configures the CA's endpoint ([`Ca::builder`]).
pub struct CaBuilder {
    ca: CertificateAuthority,
    dir: PathBuf,
    group: GroupId,
    confirm: Arc<Confirm>,
    lifetime: u64,
    limits: ServeLimits,
    sessions: Option<u64>,
    events: Arc<dyn Fn(CaEvent) + Send + Sync>,
}

impl CaBuilder {
    /// The group enrolments are made in.
    pub fn group(mut self, group: GroupId) -> Self {
        self.group = group;
        self
    }

    /// How the operator confirms that an account owns an identifier. Called one
    /// enrolment at a time (a prompt may block), never for a revocation list.
    pub fn confirm(mut self, f: impl Fn(&AccountId, &str) -> bool + Send + Sync + 'static) -> Self {
        self.confirm = Arc::new(f);
        self
    }

    /// Lifetime of a revocation list (seconds to its next update).
    pub fn list_lifetime(mut self, secs: u64) -> Self {
        self.lifetime = secs;
        self
    }

    /// The admission limits (connections at once, per address, deadline).
    pub fn limits(mut self, limits: ServeLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Stop after `n` connections (`None`: serve forever; 0: return once bound).
    pub fn sessions(mut self, n: Option<u64>) -> Self {
        self.sessions = n;
        self
    }

    /// Where the endpoint reports what it does.
    pub fn events(mut self, f: impl Fn(CaEvent) + Send + Sync + 'static) -> Self {
        self.events = Arc::new(f);
        self
    }

    /// Opens the registry and binds the endpoint to `addr` (port 0 picks one).
    pub async fn bind(self, addr: &str) -> Result<RunningCa> {
        if !(3600..=366 * 24 * 3600).contains(&self.lifetime) {
            return Err(ServiceError::Invalid(format!(
                "a revocation list's lifetime must be between 1 hour and 366 days, not {} s",
                self.lifetime
            )));
        }
        let tls = self.ca.enrolment_tls_identity()?.server_config()?;
        let net = NetConfig::default()
            .with_deadline(CONNECTION_DEADLINE)
            .speaking(tacit_net::Protocol::CaEnrolment);
        let enrolments = std::sync::Mutex::new(open_registry(&self.dir)?);
        let lists = std::sync::Mutex::new(open_registry(&self.dir)?);
        let listener = FramedListener::bind(addr, &net)
            .await
            .ctx(|| format!("cannot listen on {addr}"))?;
        let local = listener.local_addr()?;
        Ok(RunningCa {
            listener,
            tls,
            local,
            limits: self.limits,
            sessions: self.sessions,
            server: Arc::new(CaServer {
                ca: self.ca,
                enrolments,
                lists,
                dir: self.dir,
                group: self.group,
                confirm: self.confirm,
                lifetime: self.lifetime,
                events: self.events,
            }),
        })
    }
}

/// The CA's endpoint, bound ([`CaBuilder::bind`]).
pub struct RunningCa {
    listener: FramedListener,
    tls: Arc<tacit_net::tls::ServerConfig>,
    local: SocketAddr,
    limits: ServeLimits,
    sessions: Option<u64>,
    server: Arc<CaServer>,
}

/// Enrolments (one operator confirmation at a time) and revocation lists (never
/// behind a confirmation), each on its own registry connection.
struct CaServer {
    ca: CertificateAuthority,
    enrolments: std::sync::Mutex<Store>,
    lists: std::sync::Mutex<Store>,
    dir: PathBuf,
    group: GroupId,
    confirm: Arc<Confirm>,
    lifetime: u64,
    events: Arc<dyn Fn(CaEvent) + Send + Sync>,
}

/// Set when the connection that asked for an enrolment is gone (its deadline passed,
/// or it was dropped), so that a request still queued for the operator is not asked
/// about.
struct Abandoned(Arc<AtomicBool>);

impl Drop for Abandoned {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

impl RunningCa {
    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// The CA's public key (what devices pin).
    pub fn public_key(&self) -> CaPublicKey {
        self.server.ca.public_key()
    }

    /// Serves connections concurrently under the admission limits until the
    /// configured number of sessions was served (or forever).
    pub async fn serve(self) -> Result<()> {
        let events = self.server.events.clone();
        let guard = Guard::new(self.limits).on_event(Arc::new(move |e| events(CaEvent::Admission(e))));
        let (server, tls) = (self.server, self.tls);
        self.listener
            .serve(&guard, self.sessions, |c| {
                let (server, tls) = (server.clone(), tls.clone());
                async move {
                    if let Err(e) = connection(c, &server, tls).await {
                        (server.events)(CaEvent::Failed(e));
                    }
                }
            })
            .await;
        Ok(())
    }
}

async fn connection(c: FramedConn, server: &Arc<CaServer>, tls: Arc<tacit_net::tls::ServerConfig>) -> Result<()> {
    let mut c = c.accept_tls(tls).await?;
    let req = c.recv().await?;
    let joined = |e: tokio::task::JoinError| ServiceError::Invalid(format!("the CA's worker failed: {e}"));
    let poisoned = || ServiceError::Invalid("the registry lock is poisoned".into());
    let refuse = |e: ServiceError| {
        let why = super::one_line(&e);
        (server.events)(CaEvent::Refused(why.clone()));
        ErrorMessage::new(why).to_wire()
    };
    let reply =
        if tacit_wire::Envelope::peek(&req).is_ok_and(|e| e.tag == crate::revocation::tags::REVOCATION_LIST_REQUEST) {
            let s = server.clone();
            let answer = tokio::task::spawn_blocking(move || {
                RevocationListRequest::from_bytes(&req)?;
                let mut registry = s.lists.lock().map_err(|_| poisoned())?;
                publish(&s.ca, &mut registry, now(), s.lifetime, Some(&s.dir))
            })
            .await
            .map_err(joined)?;
            match answer {
                Ok(list) => {
                    let l = list.unverified();
                    (server.events)(CaEvent::SentList {
                        sequence: l.sequence(),
                        accounts: l.accounts().len(),
                    });
                    list.to_bytes()
                }
                Err(e) => refuse(e),
            }
        } else {
            let flag = Arc::new(AtomicBool::new(false));
            let _abandoned = Abandoned(flag.clone());
            let s = server.clone();
            let answer = tokio::task::spawn_blocking(move || {
                // One enrolment at a time: the operator confirms each.
                let mut registry = s.enrolments.lock().map_err(|_| poisoned())?;
                if flag.load(Ordering::SeqCst) {
                    return Err(ServiceError::Invalid(
                        "the device left before its enrolment was looked at".into(),
                    ));
                }
                certify(&s.ca, &mut registry, s.group, &req, &*s.confirm)
            })
            .await
            .map_err(joined)?;
            match answer {
                Ok(c) => {
                    (server.events)(CaEvent::Certified {
                        account: c.account,
                        identifiers: c.identifiers,
                    });
                    c.issued
                }
                Err(e) => refuse(e),
            }
        };
    c.send(&reply).await?;
    Ok(())
}

// ---------------------------------------------------------------------------
// A device's side

/// One request and its answer on the CA's endpoint at `addr` (TLS with the key the
/// CA endorses, checked against `ca`), within `deadline`; a refusal becomes
/// [`ServiceError::CaRefused`].
pub async fn exchange(addr: &str, ca: CaPublicKey, request: &[u8], deadline: Duration) -> Result<Vec<u8>> {
    let net = NetConfig::default()
        .with_deadline(deadline)
        .speaking(tacit_net::Protocol::CaEnrolment);
    let tls = crate::enrolment::client_config(ca)?;
    let mut c = FramedConn::connect_tls(addr, &net, tls, crate::enrolment::SERVER_NAME)
        .await
        .ctx(|| format!("cannot reach the CA at {addr}"))?;
    c.send(request).await?;
    let answer = c.recv().await?;
    if let Ok(env) = tacit_wire::Envelope::peek(&answer)
        && env.tag == tacit_wire::tags::ERROR
    {
        let m = <ErrorMessage as tacit_wire::Decode>::from_wire(&answer).map_err(crate::Error::from)?;
        return Err(ServiceError::CaRefused(
            tacit_wire::text::escape_for_display(&m.reason).into_owned(),
        ));
    }
    Ok(answer)
}

/// Enrols `identifiers` (normalised) with the CA at `addr`, pinned by its key `ca`:
/// fresh keys, Schnorr proofs, the CA's certificates checked; the identity to keep
/// ([`super::device::store_identity`]).
pub async fn enroll<G: PrimeGroup>(
    addr: &str,
    ca: CaPublicKey,
    params: &DropParams,
    identifiers: &[String],
) -> Result<DropIdentity<G>> {
    let refs: Vec<&str> = identifiers.iter().map(|s| s.as_str()).collect();
    let pending = DeviceEnrollment::<G>::new(params, &refs, &mut SecureRng::from_os())?;
    finish_online(addr, ca, pending, params).await
}

/// Enrols the account of `current` again (new keys and certificates, same UUID) with
/// a request signed by the key of its current certificate.
pub async fn renew<G: PrimeGroup>(
    addr: &str,
    ca: CaPublicKey,
    current: &DropIdentity<G>,
    identifiers: &[String],
) -> Result<DropIdentity<G>> {
    let refs: Vec<&str> = identifiers.iter().map(|s| s.as_str()).collect();
    let pending = DeviceEnrollment::<G>::renew(current, &current.params, &refs, &mut SecureRng::from_os())?;
    finish_online(addr, ca, pending, &current.params).await
}

async fn finish_online<G: PrimeGroup>(
    addr: &str,
    ca: CaPublicKey,
    pending: DeviceEnrollment<G>,
    params: &DropParams,
) -> Result<DropIdentity<G>> {
    let answer = exchange(addr, ca, &pending.request().to_bytes(), ENROLMENT_DEADLINE).await?;
    let issued = Issued::<G>::from_bytes(&answer, params)?;
    Ok(pending.finish(issued, &ca, now())?)
}

/// Fetches the CA's current revocation list from its endpoint and verifies it
/// under `ca`.
pub async fn fetch_revocations(addr: &str, ca: CaPublicKey) -> Result<VerifiedRevocationList> {
    let answer = exchange(addr, ca, &RevocationListRequest.to_bytes(), LIST_DEADLINE).await?;
    Ok(SignedRevocationList::from_bytes(&answer)?.verify(&ca)?)
}

/// Fetches the list the CA's operator publishes at `url` (`tacit ca publish`) and
/// verifies it under `ca`.
pub async fn fetch_revocations_url(url: &str, ca: CaPublicKey) -> Result<VerifiedRevocationList> {
    let bytes = crate::transport::fetch_url(url, MAX_LIST_BYTES, URL_DEADLINE).await?;
    Ok(SignedRevocationList::from_bytes(&bytes)
        .ctx(|| format!("{url} does not hold a revocation list"))?
        .verify(&ca)?)
}

/// The warning for a list URL that is not `https://`: nothing authenticates the
/// server, so anyone on the path can serve an older signed list (which the device
/// detects only once that list is past its next update).
pub fn plain_http_warning(url: &str) -> Option<String> {
    url.get(..7).filter(|s| s.eq_ignore_ascii_case("http://")).map(|_| {
        format!(
            "warning: {url} is plain HTTP: anyone on the path can serve an older signed list in its place \
             (accepted only while it is current, and never in place of a newer one); prefer https://"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::unhex;

    #[test]
    fn unhex_takes_hex_digits_only() {
        assert_eq!(unhex(" 0aFf ").unwrap(), vec![0x0a, 0xff]);
        // A sign was taken by from_str_radix, and a multi-byte character made the
        // byte slicing panic.
        for bad in ["+b", "aé1", "é1", "0g", "abc"] {
            assert!(unhex(bad).is_err(), "{bad}");
        }
    }
}
