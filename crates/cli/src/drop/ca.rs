//! `tacit ca …` and `tacit id …`: the certification authority PrivateDrop's inputs
//! rely on, and a device's enrolment with it.

use crate::util::store_path;
use anyhow::{Context, Result, anyhow, bail, ensure};
use clap::{Args, Subcommand};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tacit_crypto::rng::SecureRng;
use tacit_crypto::sign::VerifyingKey;
use tacit_crypto::{GroupId, P256, PrimeGroup, Ristretto255};
use tacit_drop::AccountId;
use tacit_drop::DropParams;
use tacit_drop::ca::{CertificateAuthority, DeviceEnrollment, DropIdentity, EnrollmentRequest, Issued};
use tacit_drop::records::CaPublicKey;
use tacit_drop::revocation::{
    DEFAULT_LIST_LIFETIME_SECS, RevocationListRequest, Revocations, SignedRevocationList, StalePolicy,
    VerifiedRevocationList,
};
use tacit_drop::x509::TlsRoot;
use tacit_net::guard::{Guard, ServeLimits};
use tacit_net::{FramedConn, FramedListener, NetConfig};
use tacit_store::{NormalizeOptions, Store};
use tacit_wire::{Encode, ErrorMessage};

/// Store key purposes.
pub const CA_PUBLIC: &str = "drop-ca-public";
/// Where the CA was reached last (`tacit id enroll --ca`, `renew`, `refresh`): where
/// `drop receive` and `drop send` refresh a stale revocation list.
pub const CA_ADDRESS: &str = "drop-ca-address";
fn identity_purpose(g: GroupId) -> String {
    format!("drop-identity/{g}")
}
fn pending_purpose(g: GroupId) -> String {
    format!("drop-pending/{g}")
}

/// PrivateDrop parameters shared by enrolment and the protocol.
#[derive(Debug, Clone, Args)]
pub struct DropParamArgs {
    /// The group: ristretto255 (default) or p256 (the paper's curve).
    #[arg(long, default_value = "ristretto255", value_parser = |s: &str| s.parse::<GroupId>())]
    pub group: GroupId,
    /// m: identifiers per account (the certified vector is padded to m).
    #[arg(long, default_value_t = 10)]
    pub max_ids: u32,
    /// n: address-book entries (padded to n in the PSI).
    #[arg(long, default_value_t = 10_000)]
    pub max_contacts: u32,
}

impl DropParamArgs {
    pub fn params(&self) -> Result<DropParams> {
        let p = DropParams::default()
            .with_group(self.group)
            .with_bounds(self.max_ids, self.max_contacts);
        p.psi.validate()?;
        Ok(p)
    }
}

/// CA commands.
#[derive(Debug, Subcommand)]
pub enum CaCommand {
    /// Create a certification authority (an Ed25519 signing key) in DIR.
    #[command(after_help = "Example:\n  tacit ca init --dir ./ca\n  tacit ca init --dir ./ca --force")]
    Init {
        /// Where the CA keeps its key (created with mode 0700).
        #[arg(long, default_value = "tacit-ca")]
        dir: PathBuf,
        /// Replace an existing CA (its certificates stop verifying).
        #[arg(long)]
        force: bool,
    },
    /// Print the CA's public key (give it to devices: `tacit id enroll --ca-key`).
    Show {
        /// The CA directory.
        #[arg(long, default_value = "tacit-ca")]
        dir: PathBuf,
    },
    /// Certify an enrolment request file offline, writing the issued certificates.
    #[command(after_help = "\
Ownership of each identifier must be confirmed by the operator: real SMS or e-mail
verification is out of scope, --confirm (or answering y at the prompt) stands in.
Example:
  tacit ca enroll request.bin --out issued.bin --dir ./ca")]
    Enroll {
        /// The request (from `tacit id enroll --offline`).
        request: PathBuf,
        /// Where to write the issued certificates.
        #[arg(long)]
        out: PathBuf,
        /// The CA directory.
        #[arg(long, default_value = "tacit-ca")]
        dir: PathBuf,
        /// Confirm ownership of every identifier without asking.
        #[arg(long)]
        confirm: bool,
        #[command(flatten)]
        params: DropParamArgs,
    },
    /// Serve enrolment requests over TLS (the endpoint's key is endorsed by the CA key,
    /// which devices pin with --ca-key).
    #[command(after_help = "\
The CA remembers every account it certified (registry.sqlite3 in DIR): a UUID that
is registered is certified again only for `tacit id renew`, which signs the request
with the key of the account's current certificate; a revoked one never.
The same endpoint serves the signed revocation list (`tacit id refresh`), re-signed
with the next sequence number once half of its lifetime has passed (and written to
DIR/revocations.bin). Connections are served concurrently (at most --max-connections,
--max-per-address from one address, each within 120 s); enrolments wait for the
operator's confirmations one at a time, revocation-list requests never wait for them.
Example:
  tacit ca serve --listen 127.0.0.1:7700 --dir ./ca
  tacit ca serve --listen 127.0.0.1:0 --confirm --sessions 1")]
    Serve {
        /// Address to listen on (port 0 picks one; the address is printed).
        #[arg(long)]
        listen: String,
        /// The CA directory.
        #[arg(long, default_value = "tacit-ca")]
        dir: PathBuf,
        /// Confirm ownership of every identifier without asking.
        #[arg(long)]
        confirm: bool,
        /// Exit after this many connections (enrolments and revocation-list fetches): a
        /// number (0: exit once ready) or `forever` (the default).
        #[arg(long, value_name = "N", value_parser = crate::util::parse_sessions)]
        sessions: Option<u64>,
        /// Lifetime of a revocation list in hours (its next-update time).
        #[arg(long, default_value_t = DEFAULT_LIST_LIFETIME_SECS / 3600)]
        list_hours: u64,
        #[command(flatten)]
        serve_limits: crate::util::ServeLimitArgs,
        #[command(flatten)]
        params: DropParamArgs,
    },
    /// Write the current signed revocation list to a file, to publish it anywhere (a
    /// web server, a file share): it is signed, so where it is served from does not
    /// matter.
    #[command(after_help = "\
The list is re-signed with the next sequence number once half of its lifetime has
passed, so run this more often than that (from cron, say) and copy the file where
devices fetch it: `tacit id refresh --url https://…/revocations.bin`.
Example:
  tacit ca publish --dir ./ca --out /var/www/tacit/revocations.bin")]
    Publish {
        /// The CA directory.
        #[arg(long, default_value = "tacit-ca")]
        dir: PathBuf,
        /// Where to write the list (default DIR/revocations.bin).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Lifetime of a new list in hours (its next-update time).
        #[arg(long, default_value_t = DEFAULT_LIST_LIFETIME_SECS / 3600)]
        list_hours: u64,
    },
    /// Revoke an account (a lost or departed device): it is never certified again, and
    /// the signed revocation list that devices fetch names it.
    #[command(after_help = "\
Writes the new list to DIR/revocations.bin (to hand out as a file) and keeps it in
the registry, from where `tacit ca serve` serves it; devices fetch it with
`tacit id refresh`, and `tacit drop receive` / `send` refresh a list past its next
update on start. Peers refuse a revoked account in every handshake.
Example:
  tacit ca revoke 0b6c8d5e-2f4a-4e1b-9c3d-7a8b9c0d1e2f --dir ./ca")]
    Revoke {
        /// The account UUID (from `tacit id show` on the device, or the CA's log).
        account: String,
        /// The CA directory.
        #[arg(long, default_value = "tacit-ca")]
        dir: PathBuf,
        /// Lifetime of the new list in hours (its next-update time).
        #[arg(long, default_value_t = DEFAULT_LIST_LIFETIME_SECS / 3600)]
        list_hours: u64,
    },
}

/// Device identity commands.
#[derive(Debug, Subcommand)]
pub enum IdCommand {
    /// Enrol this device's identifiers with a CA (online with --ca, or --offline).
    #[command(after_help = "\
Examples:
  tacit id enroll --ca 127.0.0.1:7700 --ca-key <hex> --id +14155550100 --id ann@example.com
  tacit id enroll --offline request.bin --ca-key <hex> --id ann@example.com
  tacit id finish issued.bin")]
    Enroll {
        /// The CA's address.
        #[arg(long, conflicts_with = "offline", required_unless_present = "offline")]
        ca: Option<String>,
        /// Write the request to FILE instead; finish with `tacit id finish`.
        #[arg(long, value_name = "FILE")]
        offline: Option<PathBuf>,
        /// The CA's public key (hex, from `tacit ca show`): the trust root.
        #[arg(long)]
        ca_key: String,
        /// An own identifier (phone number or e-mail); repeat for several.
        #[arg(long = "id", required = true)]
        ids: Vec<String>,
        /// Default region for phone numbers without a country code (US, DE, …).
        #[arg(long)]
        region: Option<String>,
        #[command(flatten)]
        params: DropParamArgs,
    },
    /// Enrol this device's account again (new keys and certificates, same UUID), with
    /// a request signed by the key of its current certificate.
    #[command(after_help = "\
Example:
  tacit id renew --ca 127.0.0.1:7700
  tacit id renew --ca 127.0.0.1:7700 --id +14155550100 --id ann@example.com")]
    Renew {
        /// The CA's address.
        #[arg(long)]
        ca: String,
        /// The identifiers to certify (default: the ones certified now).
        #[arg(long = "id")]
        ids: Vec<String>,
        /// Default region for phone numbers without a country code (US, DE, …).
        #[arg(long)]
        region: Option<String>,
        /// The group.
        #[arg(long, default_value = "ristretto255", value_parser = |s: &str| s.parse::<GroupId>())]
        group: GroupId,
    },
    /// Fetch the CA's signed revocation list (or import it from a file) and keep it.
    #[command(after_help = "\
The list is verified with the CA key this device was enrolled with, wherever it
came from; an older list never replaces a newer one. Without --ca, --url or --file,
the address used at enrolment is used. A --url is remembered: when the list falls
due, `drop send`/`drop receive` ask it and the CA at once and keep the newest
current list (a stale answer never hides the other's). http:// works (the list is
signed) but anyone on the path can serve an older list; prefer https://.
Examples:
  tacit id refresh
  tacit id refresh --ca 127.0.0.1:7700
  tacit id refresh --url https://example.org/tacit/revocations.bin
  tacit id refresh --file revocations.bin")]
    Refresh {
        /// The CA's address.
        #[arg(long, conflicts_with_all = ["file", "url"])]
        ca: Option<String>,
        /// Fetch the list from a URL (http:// or https://) where the CA's operator
        /// publishes it (`tacit ca publish`).
        #[arg(long, conflicts_with = "file")]
        url: Option<String>,
        /// Import the list from FILE (`revocations.bin` of `tacit ca revoke` or
        /// `tacit ca publish`).
        #[arg(long, value_name = "FILE")]
        file: Option<PathBuf>,
    },
    /// Complete an offline enrolment with the CA's answer.
    Finish {
        /// The issued certificates (from `tacit ca enroll`).
        issued: PathBuf,
        /// The group of the pending enrolment.
        #[arg(long, default_value = "ristretto255", value_parser = |s: &str| s.parse::<GroupId>())]
        group: GroupId,
    },
    /// Show this device's identity and what it holds.
    Show {
        /// The group.
        #[arg(long, default_value = "ristretto255", value_parser = |s: &str| s.parse::<GroupId>())]
        group: GroupId,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

use crate::util::now_unix as now;

fn hex(b: &[u8]) -> String {
    hex::encode(b)
}

/// Hex digits only (the `hex` crate refuses signs and other characters).
fn unhex(s: &str) -> Result<Vec<u8>> {
    hex::decode(s.trim()).map_err(|e| match e {
        hex::FromHexError::OddLength => anyhow!("not a hex string of whole bytes"),
        _ => anyhow!("not a hex string"),
    })
}

pub fn parse_ca_key(s: &str) -> Result<CaPublicKey> {
    Ok(CaPublicKey(
        VerifyingKey::from_bytes(&unhex(s).context("--ca-key")?).context("--ca-key is not an Ed25519 public key")?,
    ))
}

fn load_ca(dir: &Path) -> Result<CertificateAuthority> {
    let path = dir.join("ca.key");
    let text = crate::util::read_text(&path, "CA key", 4096).with_context(|| {
        format!(
            "no CA in {} (create one with `tacit ca init --dir {}`)",
            dir.display(),
            dir.display()
        )
    })?;
    let seed: [u8; 32] = unhex(&text)?
        .try_into()
        .map_err(|_| anyhow!("{} is corrupt: expected a 32-byte key", path.display()))?;
    let key_pem = crate::util::read_text(&dir.join("tls-root.key"), "TLS root key", 1 << 16)
        .with_context(|| format!("{} has no tls-root.key", dir.display()))?;
    let cert = crate::util::read_file(&dir.join("tls-root.der"), "TLS root certificate", 1 << 16)
        .with_context(|| format!("{} has no tls-root.der", dir.display()))?;
    let root = TlsRoot::from_parts(&key_pem, &cert)
        .with_context(|| format!("the TLS root in {} is corrupt", dir.display()))?;
    Ok(CertificateAuthority::from_parts(&seed, root))
}

/// The CA's account registry (issue 9: a UUID is bound to the key that first
/// registered it), kept beside its keys.
fn open_registry(dir: &Path) -> Result<Store> {
    let path = dir.join("registry.sqlite3");
    Store::open(&path).with_context(|| format!("cannot open the CA registry {}", path.display()))
}

/// Writes a public file atomically (a temporary file renamed over it), readable by
/// everyone (a revocation list is meant to be published).
fn write_public(path: &Path, data: &[u8]) -> Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, data).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

fn write_private(path: &Path, data: &[u8]) -> Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .with_context(|| format!("cannot write {}", tmp.display()))?;
    f.write_all(data)?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)?;
    Ok(())
}

/// Asks the operator to confirm ownership of `id` (or confirms when `all`).
fn confirm(all: bool, account: &str, id: &str) -> bool {
    if all {
        eprintln!("tacit ca: account {account}: ownership of {id} confirmed (--confirm)");
        return true;
    }
    eprint!("tacit ca: account {account} claims {id}. Ownership verified? [y/N] ");
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line).is_ok() && matches!(line.trim(), "y" | "Y" | "yes")
}

pub fn run_ca(cmd: CaCommand) -> Result<()> {
    match cmd {
        CaCommand::Init { dir, force } => {
            let path = dir.join("ca.key");
            if path.exists() && !force {
                bail!("{} already holds a CA (use --force to replace it)", dir.display());
            }
            std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
            let ca = CertificateAuthority::generate(&mut SecureRng::from_os())?;
            write_private(&dir.join("tls-root.key"), ca.tls_root().key_pem().as_bytes())?;
            std::fs::write(dir.join("tls-root.der"), ca.tls_root().cert_der())?;
            write_private(&path, hex(ca.to_seed().as_slice()).as_bytes())?;
            println!("created a CA in {}", dir.display());
            println!("public key: {}", hex(&ca.public_key().0.to_bytes()));
            Ok(())
        }
        CaCommand::Show { dir } => {
            println!("{}", hex(&load_ca(&dir)?.public_key().0.to_bytes()));
            Ok(())
        }
        CaCommand::Enroll {
            request,
            out,
            dir,
            confirm: all,
            params,
        } => {
            let ca = load_ca(&dir)?;
            let mut registry = open_registry(&dir)?;
            let bytes = crate::util::read_file(&request, "enrolment request", crate::util::MAX_SMALL_FILE)?;
            let issued = match params.group {
                GroupId::Ristretto255 => certify::<Ristretto255>(&ca, &mut registry, &bytes, all)?,
                GroupId::P256 => certify::<P256>(&ca, &mut registry, &bytes, all)?,
            };
            std::fs::write(&out, issued).with_context(|| format!("cannot write {}", out.display()))?;
            println!("wrote the issued certificates to {}", out.display());
            Ok(())
        }
        CaCommand::Revoke {
            account,
            dir,
            list_hours,
        } => {
            let ca = load_ca(&dir)?;
            let mut registry = open_registry(&dir)?;
            let a = AccountId::parse(&account)
                .ok_or_else(|| anyhow!("{account:?} is not an account UUID (8-4-4-4-12 hex digits)"))?;
            let before = registry.ca_account(&a.0)?.ok_or_else(|| {
                anyhow!("account {a} is not registered with this CA (see its log for the UUIDs it certified)")
            })?;
            let t = now();
            registry.ca_revoke(&a.0, t)?;
            let list = publish(&ca, &mut registry, t, hours(list_hours)?, Some(&dir))?;
            let path = dir.join("revocations.bin");
            let l = list.unverified();
            match before.revoked_unix {
                Some(at) => println!("account {a} was already revoked (at {at})"),
                None => println!("revoked account {a}"),
            }
            println!(
                "revocation list {} ({} accounts, next update {}) written to {} and served by `tacit ca serve`",
                l.sequence(),
                l.accounts().len(),
                l.next_update(),
                path.display()
            );
            Ok(())
        }
        CaCommand::Serve {
            listen,
            dir,
            confirm: all,
            sessions,
            list_hours,
            serve_limits,
            params,
        } => {
            let _ = params.params()?;
            let server = Arc::new(CaServer {
                ca: load_ca(&dir)?,
                enrolments: std::sync::Mutex::new(open_registry(&dir)?),
                lists: std::sync::Mutex::new(open_registry(&dir)?),
                dir: dir.clone(),
                group: params.group,
                confirm_all: all,
                lifetime: hours(list_hours)?,
            });
            let limits = serve_limits.apply(ServeLimits::new(256, CA_CONNECTION_DEADLINE))?;
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()?;
            rt.block_on(crate::util::shutdown::serving(serve_ca(
                server, &listen, limits, sessions,
            )))
        }
        CaCommand::Publish { dir, out, list_hours } => {
            let ca = load_ca(&dir)?;
            let mut registry = open_registry(&dir)?;
            let list = publish(&ca, &mut registry, now(), hours(list_hours)?, Some(&dir))?;
            let path = out.unwrap_or_else(|| dir.join("revocations.bin"));
            write_public(&path, &list.to_bytes())?;
            let l = list.unverified();
            println!(
                "revocation list {} ({} accounts, next update {}) written to {}; publish it before {} (half its lifetime), \
                 when the next run re-signs it",
                l.sequence(),
                l.accounts().len(),
                l.next_update(),
                path.display(),
                l.issued_at() + (l.next_update() - l.issued_at()) / 2
            );
            Ok(())
        }
    }
}

/// Longest a connection to the CA may last (an enrolment may wait for the operator).
const CA_CONNECTION_DEADLINE: std::time::Duration = std::time::Duration::from_secs(120);

/// The CA's endpoint: enrolments (one operator confirmation at a time) and revocation
/// lists (never behind a confirmation), each on its own registry connection.
struct CaServer {
    ca: CertificateAuthority,
    enrolments: std::sync::Mutex<Store>,
    lists: std::sync::Mutex<Store>,
    dir: PathBuf,
    group: GroupId,
    confirm_all: bool,
    lifetime: u64,
}

/// Set when the connection that asked for an enrolment is gone (its deadline passed,
/// or it was dropped), so that a request still queued for the operator is not asked
/// about.
struct Abandoned(Arc<std::sync::atomic::AtomicBool>);

impl Drop for Abandoned {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Serves the CA's endpoint (issue 32: concurrently under the shared guard, so idle
/// connections cannot stall enrolment or revocation).
async fn serve_ca(server: Arc<CaServer>, listen: &str, limits: ServeLimits, sessions: Option<u64>) -> Result<()> {
    let tls = server.ca.enrolment_tls_identity()?.server_config()?;
    let net = NetConfig::default().with_deadline(CA_CONNECTION_DEADLINE);
    let l = FramedListener::bind(listen, &net)
        .await
        .with_context(|| format!("cannot listen on {listen}"))?;
    eprintln!("tacit ca serve: listening on {}", l.local_addr()?);
    eprintln!("tacit ca serve: TLS 1.3, endpoint key endorsed by the CA key");
    let guard = Guard::new(limits).on_event(Arc::new(|e| eprintln!("tacit ca serve: {e}")));
    l.serve(&guard, sessions, |c| {
        let (server, tls) = (server.clone(), tls.clone());
        async move {
            if let Err(e) = ca_connection(c, &server, tls).await {
                eprintln!("tacit ca serve: {}", crate::util::one_line(&e));
            }
        }
    })
    .await;
    Ok(())
}

async fn ca_connection(c: FramedConn, server: &Arc<CaServer>, tls: Arc<tacit_net::tls::ServerConfig>) -> Result<()> {
    let mut c = c.accept_tls(tls).await?;
    let req = c.recv().await?;
    let reply = if tacit_wire::Envelope::peek(&req)
        .is_ok_and(|e| e.tag == tacit_drop::revocation::tags::REVOCATION_LIST_REQUEST)
    {
        let s = server.clone();
        let answer = tokio::task::spawn_blocking(move || {
            RevocationListRequest::from_bytes(&req)?;
            let mut registry = s.lists.lock().map_err(|_| anyhow!("the registry lock is poisoned"))?;
            publish(&s.ca, &mut registry, now(), s.lifetime, Some(&s.dir))
        })
        .await?;
        match answer {
            Ok(list) => {
                let l = list.unverified();
                eprintln!(
                    "tacit ca serve: sent revocation list {} ({} accounts)",
                    l.sequence(),
                    l.accounts().len()
                );
                list.to_bytes()
            }
            Err(e) => {
                eprintln!("tacit ca serve: refused: {}", crate::util::one_line(&e));
                ErrorMessage::new(crate::util::one_line(&e)).to_wire()
            }
        }
    } else {
        let flag = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let _abandoned = Abandoned(flag.clone());
        let s = server.clone();
        let answer = tokio::task::spawn_blocking(move || {
            // One enrolment at a time: the operator confirms each at the prompt.
            let mut registry = s
                .enrolments
                .lock()
                .map_err(|_| anyhow!("the registry lock is poisoned"))?;
            if flag.load(std::sync::atomic::Ordering::SeqCst) {
                bail!("the device left before its enrolment was looked at");
            }
            match s.group {
                GroupId::Ristretto255 => certify::<Ristretto255>(&s.ca, &mut registry, &req, s.confirm_all),
                GroupId::P256 => certify::<P256>(&s.ca, &mut registry, &req, s.confirm_all),
            }
        })
        .await?;
        answer.unwrap_or_else(|e| {
            eprintln!("tacit ca serve: refused: {}", crate::util::one_line(&e));
            ErrorMessage::new(crate::util::one_line(&e)).to_wire()
        })
    };
    c.send(&reply).await?;
    Ok(())
}

fn hours(h: u64) -> Result<u64> {
    ensure!(
        (1..=24 * 366).contains(&h),
        "--list-hours must be between 1 and 8784 (a year)"
    );
    Ok(h * 3600)
}

/// The revocation-list issuer name of a CA key in a store.
pub fn ca_issuer(ca: &CaPublicKey) -> String {
    format!("drop-ca/{}", hex(&ca.0.to_bytes()))
}

/// The list the CA publishes now: the one in its registry while it is current and
/// lists exactly the revoked accounts, else a new one (kept before it is returned,
/// and written to `dir`/revocations.bin when a directory is given, so that a copy
/// published from there stays current).
fn publish(
    ca: &CertificateAuthority,
    registry: &mut Store,
    now: u64,
    lifetime: u64,
    dir: Option<&Path>,
) -> Result<SignedRevocationList> {
    let issuer = ca_issuer(&ca.public_key());
    let current = match registry.revocation_list(&issuer)? {
        Some(s) => Some(SignedRevocationList::from_bytes(&s.list).context("the CA's stored revocation list")?),
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

/// The revocation list kept in the device's store for `ca`, verified.
pub fn stored_revocations(st: &Store, ca: &CaPublicKey) -> Result<Option<VerifiedRevocationList>> {
    match st.revocation_list(&ca_issuer(ca))? {
        None => Ok(None),
        Some(s) => Ok(Some(
            SignedRevocationList::from_bytes(&s.list)?
                .verify(ca)
                .context("the stored revocation list")?,
        )),
    }
}

/// Keeps `list` unless the store holds a newer one; whether it was stored.
pub fn keep_revocations(st: &mut Store, list: &VerifiedRevocationList) -> Result<bool> {
    let l = list.list();
    if let Some(cur) = stored_revocations(st, list.ca())?
        && cur.list().sequence() > l.sequence()
    {
        bail!(
            "revocation list {} is older than list {} already held",
            l.sequence(),
            cur.list().sequence()
        );
    }
    Ok(st.put_revocation_list(
        &ca_issuer(list.ca()),
        l.sequence(),
        l.next_update(),
        &list.signed().to_bytes(),
    )?)
}

/// Where this device last fetched a revocation list over HTTP(S) (`tacit id refresh
/// --url`), tried first when a list falls due.
pub const REVOCATION_URL: &str = "drop-revocation-url";

/// The revocation-list URL this device last used, if any.
pub fn revocation_url(st: &Store) -> Result<Option<String>> {
    Ok(st
        .current_key(REVOCATION_URL)?
        .map(|k| String::from_utf8_lossy(&k.secret).into_owned()))
}

fn remember_revocation_url(st: &mut Store, url: &str) -> Result<()> {
    if revocation_url(st)?.as_deref() == Some(url) {
        return Ok(());
    }
    let epoch = next_epoch(st, REVOCATION_URL)?;
    st.put_key(REVOCATION_URL, epoch, url.as_bytes(), now())?;
    Ok(())
}

/// The CA address this device last used, if any.
pub fn ca_address(st: &Store) -> Result<Option<String>> {
    Ok(st
        .current_key(CA_ADDRESS)?
        .map(|k| String::from_utf8_lossy(&k.secret).into_owned()))
}

fn remember_ca_address(st: &mut Store, addr: &str) -> Result<()> {
    if ca_address(st)?.as_deref() == Some(addr) {
        return Ok(());
    }
    let epoch = next_epoch(st, CA_ADDRESS)?;
    st.put_key(CA_ADDRESS, epoch, addr.as_bytes(), now())?;
    Ok(())
}

/// Fetches the CA's current revocation list from its enrolment endpoint and verifies
/// it under `ca`.
pub async fn fetch_revocations(addr: &str, ca: CaPublicKey) -> Result<VerifiedRevocationList> {
    let answer = exchange_with_ca(
        addr,
        ca,
        &RevocationListRequest.to_bytes(),
        std::time::Duration::from_secs(15),
    )
    .await?;
    Ok(SignedRevocationList::from_bytes(&answer)?.verify(&ca)?)
}

/// Where the device fetches revocation lists: the URL it last refreshed from
/// (`tacit id refresh --url`) and the CA's endpoint.
#[derive(Debug, Clone, Default)]
pub struct ListSources {
    url: Option<String>,
    ca: Option<String>,
}

/// What [`ListSources::fetch`] found.
#[derive(Debug, Default)]
pub struct Fetched {
    /// The newest list a source gave that is newer than the one held, and where it
    /// came from: a current one if any source had one (else the newest stale one,
    /// which still revokes more than the list held).
    pub list: Option<(VerifiedRevocationList, String)>,
    /// Why each other source gave nothing usable: unreachable, a list that does not
    /// verify, one past its next update, or one not newer than the list held.
    pub failures: Vec<String>,
}

impl Fetched {
    /// Whether a current list was found.
    pub fn is_current(&self, now: u64) -> bool {
        self.list.as_ref().is_some_and(|(l, _)| !l.list().is_stale(now))
    }
}

impl ListSources {
    /// The sources this device knows.
    pub fn of(st: &Store) -> Result<Self> {
        Ok(ListSources {
            url: revocation_url(st)?,
            ca: ca_address(st)?,
        })
    }

    /// Whether the device knows any source.
    pub fn is_empty(&self) -> bool {
        self.url.is_none() && self.ca.is_none()
    }

    /// Asks every source at once and keeps the newest current list of all (review of
    /// issue 32: the first list that verified used to end the search, so a mirror
    /// that kept serving an old list, or anyone replaying one on the path of an
    /// `http://` URL, hid the CA's current list). A list past its next update at
    /// `now`, or not newer than `held`, is a failure of its source.
    pub async fn fetch(&self, ca: CaPublicKey, held: Option<&VerifiedRevocationList>, now: u64) -> Fetched {
        let from_url = async {
            match &self.url {
                Some(url) => Some((url.clone(), fetch_revocations_url(url, ca).await)),
                None => None,
            }
        };
        let from_ca = async {
            match &self.ca {
                Some(addr) => Some((format!("the CA at {addr}"), fetch_revocations(addr, ca).await)),
                None => None,
            }
        };
        let (a, b) = tokio::join!(from_url, from_ca);
        let mut out = Fetched::default();
        let mut stale: Option<(VerifiedRevocationList, String)> = None;
        for (from, got) in [a, b].into_iter().flatten() {
            let list = match got {
                Ok(l) => l,
                Err(e) => {
                    out.failures.push(format!("{from}: {}", crate::util::one_line(&e)));
                    continue;
                }
            };
            let (seq, next) = (list.list().sequence(), list.list().next_update());
            if let Some(h) = held
                && seq <= h.list().sequence()
            {
                out.failures.push(format!(
                    "{from}: served list {seq}, not newer than list {} already held",
                    h.list().sequence()
                ));
                continue;
            }
            let newer = |best: &Option<(VerifiedRevocationList, String)>| {
                best.as_ref().is_none_or(|(b, _)| b.list().sequence() < seq)
            };
            if list.list().is_stale(now) {
                out.failures.push(format!(
                    "{from}: served list {seq}, past its next update by {} s",
                    now - next
                ));
                if newer(&stale) {
                    stale = Some((list, from));
                }
            } else if newer(&out.list) {
                out.list = Some((list, from));
            }
        }
        if out.list.is_none() {
            out.list = stale;
        }
        out
    }
}

/// Fetches the list the CA's operator publishes at `url` (`tacit ca publish`) and
/// verifies it under `ca`.
pub async fn fetch_revocations_url(url: &str, ca: CaPublicKey) -> Result<VerifiedRevocationList> {
    let bytes = tacit_drop::transport::fetch_url(url, 4 << 20, std::time::Duration::from_secs(20)).await?;
    Ok(SignedRevocationList::from_bytes(&bytes)
        .with_context(|| format!("{url} does not hold a revocation list"))?
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

/// Fetches from every source the device knows and puts the newest list in force in
/// `revocations` and the store at `store`; what it did, for the log (`who`), and
/// whether a current list is in force afterwards. Used on start and by a running
/// receiver's refresher alike.
pub async fn refresh_from_sources(
    st: &mut Store,
    revocations: &Revocations,
    ca: CaPublicKey,
    who: &str,
) -> Result<Option<bool>> {
    let sources = ListSources::of(st)?;
    if sources.is_empty() {
        return Ok(None);
    }
    let now = now();
    let held = revocations.current();
    let fetched = sources.fetch(ca, held.as_ref(), now).await;
    let current = fetched.is_current(now);
    for f in &fetched.failures {
        eprintln!("tacit {who}: warning: revocation list {f}");
    }
    if let Some((list, from)) = fetched.list {
        match revocations.update(list.clone()) {
            Ok(_) => {
                if let Err(e) = keep_revocations(st, &list) {
                    eprintln!("tacit {who}: warning: {}", crate::util::one_line(&e));
                }
                eprintln!(
                    "tacit {who}: revocation list {} from {from} ({} accounts revoked)",
                    list.list().sequence(),
                    list.list().accounts().len()
                );
            }
            Err(e) => eprintln!("tacit {who}: {from} sent an unusable revocation list: {e}"),
        }
    }
    Ok(Some(current))
}

/// For `drop receive` and `drop send` on start: the stored list, refreshed first when
/// it is missing or past its next update (from the URL or CA the device knows). If
/// it is still not current, `policy` decides (issue 32): warn and go on, or refuse to
/// run.
pub async fn revocations_on_start(
    st: &mut Store,
    ca: &CaPublicKey,
    who: &str,
    policy: StalePolicy,
) -> Result<Revocations> {
    let revocations = Revocations::new().with_stale_policy(policy);
    if let Some(l) = stored_revocations(st, ca)? {
        revocations.update(l)?;
    }
    if revocations.staleness(now()).is_some() {
        refresh_from_sources(st, &revocations, *ca, who).await?;
    }
    if let Some(why) = revocations.staleness(now()) {
        match policy {
            StalePolicy::Warn => eprintln!(
                "tacit {who}: warning: the revocation list {why}: accounts the CA revoked since are still trusted \
                 (refresh it with `tacit id refresh`; --stale-revocations refuse refuses peers meanwhile)"
            ),
            StalePolicy::Refuse => bail!(
                "the revocation list {why} and could not be refreshed; with --stale-revocations refuse this device \
                 talks to no peer until it has a current one (`tacit id refresh --ca ADDR`, `--url URL` or `--file FILE`)"
            ),
        }
    }
    Ok(revocations)
}

fn certify<G: PrimeGroup>(
    ca: &CertificateAuthority,
    registry: &mut Store,
    request: &[u8],
    all: bool,
) -> Result<Vec<u8>> {
    let req = EnrollmentRequest::<G>::from_bytes(request).context("enrolment request")?;
    let account = req.account.to_string();
    let issued = ca.enroll(
        &req,
        &|id| confirm(all, &account, &crate::util::sanitize(id)),
        registry,
        now(),
        &mut SecureRng::from_os(),
    )?;
    eprintln!(
        "tacit ca: certified {} identifiers of account {account}",
        req.entries.len()
    );
    Ok(issued.to_bytes())
}

pub fn run_id(cmd: IdCommand, store: Option<&Path>) -> Result<()> {
    let path = store_path(store)?;
    // enrolment makes the store; every other `id` command needs one
    let mut st = match cmd {
        IdCommand::Enroll { .. } => crate::util::open_store(&path)?,
        _ => crate::util::open_store_existing(store, "tacit id enroll")?,
    };
    match cmd {
        IdCommand::Enroll {
            ca,
            offline,
            ca_key,
            ids,
            region,
            params,
        } => {
            let ca_pub = parse_ca_key(&ca_key)?;
            let opts = match &region {
                Some(r) => NormalizeOptions::with_default_region(r)?,
                None => NormalizeOptions::new(),
            };
            let mut normalised = Vec::new();
            for raw in &ids {
                let id = tacit_store::Identifier::parse(raw, &opts).with_context(|| format!("--id {raw}"))?;
                normalised.push(id.value);
            }
            let p = params.params()?;
            match p.psi.group {
                GroupId::Ristretto255 => enroll::<Ristretto255>(&mut st, &p, &normalised, ca_pub, ca, offline),
                GroupId::P256 => enroll::<P256>(&mut st, &p, &normalised, ca_pub, ca, offline),
            }
        }
        IdCommand::Renew { ca, ids, region, group } => match group {
            GroupId::Ristretto255 => renew::<Ristretto255>(&mut st, &ca, &ids, region.as_deref()),
            GroupId::P256 => renew::<P256>(&mut st, &ca, &ids, region.as_deref()),
        },
        IdCommand::Refresh { ca, url, file } => {
            let ca_pub = load_ca_public(&st)?;
            let (list, from) = match (file, url) {
                (None, Some(url)) => {
                    if let Some(w) = plain_http_warning(&url) {
                        eprintln!("tacit id refresh: {w}");
                    }
                    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
                    let list = rt.block_on(fetch_revocations_url(&url, ca_pub))?;
                    remember_revocation_url(&mut st, &url)?;
                    (list, url)
                }
                (Some(f), _) => {
                    let b = crate::util::read_file(&f, "revocation list", crate::util::MAX_SMALL_FILE)?;
                    (
                        SignedRevocationList::from_bytes(&b)
                            .with_context(|| format!("{}", f.display()))?
                            .verify(&ca_pub)
                            .with_context(|| format!("{}", f.display()))?,
                        f.display().to_string(),
                    )
                }
                (None, None) => {
                    let addr = match ca {
                        Some(a) => a,
                        None => ca_address(&st)?
                            .ok_or_else(|| anyhow!("no CA address is known: give --ca HOST:PORT (or --file)"))?,
                    };
                    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
                    let list = rt.block_on(fetch_revocations(&addr, ca_pub))?;
                    remember_ca_address(&mut st, &addr)?;
                    (list, format!("the CA at {addr}"))
                }
            };
            let stored = keep_revocations(&mut st, &list)?;
            let l = list.list();
            if l.is_stale(now()) {
                eprintln!(
                    "tacit id refresh: warning: list {} is past its next update by {} s: accounts the CA revoked since \
                     are still trusted; ask the CA (--ca) or a current mirror",
                    l.sequence(),
                    now() - l.next_update()
                );
            }
            println!(
                "revocation list {} from {from}: {} accounts revoked, next update {}{}",
                l.sequence(),
                l.accounts().len(),
                l.next_update(),
                if stored { "" } else { " (already held)" }
            );
            Ok(())
        }
        IdCommand::Finish { issued, group } => {
            let bytes = crate::util::read_file(&issued, "issued certificate", crate::util::MAX_SMALL_FILE)?;
            match group {
                GroupId::Ristretto255 => finish::<Ristretto255>(&mut st, &bytes),
                GroupId::P256 => finish::<P256>(&mut st, &bytes),
            }
        }
        IdCommand::Show { group, json } => match group {
            GroupId::Ristretto255 => show::<Ristretto255>(&st, json),
            GroupId::P256 => show::<P256>(&st, json),
        },
    }
}

fn next_epoch(st: &Store, purpose: &str) -> Result<u64> {
    Ok(st.current_key(purpose)?.map_or(1, |k| k.epoch + 1))
}

fn enroll<G: PrimeGroup>(
    st: &mut Store,
    params: &DropParams,
    ids: &[String],
    ca_pub: CaPublicKey,
    ca: Option<String>,
    offline: Option<PathBuf>,
) -> Result<()> {
    let refs: Vec<&str> = ids.iter().map(|s| s.as_str()).collect();
    let mut rng = SecureRng::from_os();
    let pending = DeviceEnrollment::<G>::new(params, &refs, &mut rng)?;
    if let Some(file) = offline {
        remember_ca(st, &ca_pub)?;
        std::fs::write(&file, pending.request().to_bytes())
            .with_context(|| format!("cannot write {}", file.display()))?;
        let purpose = pending_purpose(G::ID);
        let e = next_epoch(st, &purpose)?;
        st.put_key(&purpose, e, &pending.to_bytes(), now())?;
        println!(
            "wrote the enrolment request for account {} to {}; have the CA certify it, then run `tacit id finish`",
            pending.request().account,
            file.display()
        );
        return Ok(());
    }
    let addr = ca.ok_or_else(|| anyhow!("give --ca HOST:PORT or --offline FILE"))?;
    let answer = request_from_ca(&addr, ca_pub, &pending.request().to_bytes())?;
    let issued = Issued::<G>::from_bytes(&answer, params)?;
    let identity = pending.finish(issued, &ca_pub, now())?;
    remember_ca(st, &ca_pub)?;
    remember_ca_address(st, &addr)?;
    store_identity(st, identity)
}

/// Sends an enrolment request to the CA at `addr` over TLS authenticated by `ca_pub`
/// and returns its answer (or its refusal as an error).
fn request_from_ca(addr: &str, ca_pub: CaPublicKey, request: &[u8]) -> Result<Vec<u8>> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    rt.block_on(exchange_with_ca(
        addr,
        ca_pub,
        request,
        std::time::Duration::from_secs(120),
    ))
}

/// One request and its answer on the CA's endpoint (TLS with the key the CA endorses),
/// within `deadline`; a refusal becomes an error.
async fn exchange_with_ca(
    addr: &str,
    ca_pub: CaPublicKey,
    request: &[u8],
    deadline: std::time::Duration,
) -> Result<Vec<u8>> {
    let net = NetConfig::default().with_deadline(deadline);
    let tls = tacit_drop::enrolment::client_config(ca_pub)?;
    let mut c = FramedConn::connect_tls(addr, &net, tls, tacit_drop::enrolment::SERVER_NAME)
        .await
        .with_context(|| format!("cannot reach the CA at {addr}"))?;
    c.send(request).await?;
    let answer = c.recv().await?;
    if let Ok(env) = tacit_wire::Envelope::peek(&answer)
        && env.tag == tacit_wire::tags::ERROR
    {
        let m = <ErrorMessage as tacit_wire::Decode>::from_wire(&answer)?;
        bail!("the CA refused: {}", crate::util::sanitize(&m.reason));
    }
    Ok(answer)
}

fn renew<G: PrimeGroup>(st: &mut Store, addr: &str, ids: &[String], region: Option<&str>) -> Result<()> {
    let current = load_identity::<G>(st)?;
    let ca_pub = load_ca_public(st)?;
    let ids: Vec<String> = if ids.is_empty() {
        current.identifiers().to_vec()
    } else {
        let opts = match region {
            Some(r) => NormalizeOptions::with_default_region(r)?,
            None => NormalizeOptions::new(),
        };
        ids.iter()
            .map(|raw| {
                tacit_store::Identifier::parse(raw, &opts)
                    .map(|i| i.value)
                    .with_context(|| format!("--id {raw}"))
            })
            .collect::<Result<_>>()?
    };
    let refs: Vec<&str> = ids.iter().map(|s| s.as_str()).collect();
    let pending = DeviceEnrollment::<G>::renew(&current, &current.params, &refs, &mut SecureRng::from_os())?;
    let answer = request_from_ca(addr, ca_pub, &pending.request().to_bytes())?;
    let issued = Issued::<G>::from_bytes(&answer, &current.params)?;
    remember_ca_address(st, addr)?;
    store_identity(st, pending.finish(issued, &ca_pub, now())?)
}

/// Keeps the CA's public key (the trust root) in the store.
fn remember_ca(st: &mut Store, ca: &CaPublicKey) -> Result<()> {
    if st
        .current_key(CA_PUBLIC)?
        .is_some_and(|k| k.secret.as_slice() == ca.0.to_bytes())
    {
        return Ok(());
    }
    let epoch = next_epoch(st, CA_PUBLIC)?;
    st.put_key(CA_PUBLIC, epoch, &ca.0.to_bytes(), now())?;
    Ok(())
}

fn store_identity<G: PrimeGroup>(st: &mut Store, identity: DropIdentity<G>) -> Result<()> {
    let purpose = identity_purpose(G::ID);
    let e = next_epoch(st, &purpose)?;
    st.put_key(&purpose, e, &identity.to_bytes(), now())?;
    println!(
        "enrolled account {} with {} identifiers ({} certified slots)",
        identity.account,
        identity.identifiers().len(),
        identity.blinded_ids.elements.len()
    );
    Ok(())
}

fn finish<G: PrimeGroup>(st: &mut Store, issued: &[u8]) -> Result<()> {
    let pending = st.current_key(&pending_purpose(G::ID))?.ok_or_else(|| {
        anyhow!(
            "no pending enrolment for {} (run `tacit id enroll --offline` first)",
            G::ID
        )
    })?;
    let pending = DeviceEnrollment::<G>::from_bytes(&pending.secret)?;
    let ca = load_ca_public(st)?;
    let issued = Issued::<G>::from_bytes(issued, &pending.request().params)?;
    store_identity(st, pending.finish(issued, &ca, now())?)
}

pub fn load_ca_public(st: &Store) -> Result<CaPublicKey> {
    let k = st
        .current_key(CA_PUBLIC)?
        .ok_or_else(|| anyhow!("no CA public key in the store (enrol with `tacit id enroll --ca-key …`)"))?;
    Ok(CaPublicKey(VerifyingKey::from_bytes(&k.secret)?))
}

pub fn load_identity<G: PrimeGroup>(st: &Store) -> Result<DropIdentity<G>> {
    let k = st
        .current_key(&identity_purpose(G::ID))?
        .ok_or_else(|| anyhow!("this device is not enrolled for {} (run `tacit id enroll`)", G::ID))?;
    Ok(DropIdentity::<G>::from_bytes(&k.secret)?)
}

fn show<G: PrimeGroup>(st: &Store, json: bool) -> Result<()> {
    let id = load_identity::<G>(st)?;
    let ca = load_ca_public(st)?;
    let v = &id.blinded_ids.validity;
    let list = stored_revocations(st, &ca)?;
    let t = now();
    let addr = ca_address(st)?;
    if json {
        let out = serde_json::json!({
            "account": id.account.to_string(),
            "group": G::ID.name(),
            "identifiers": id.identifiers(),
            "certified_slots": id.blinded_ids.elements.len(),
            "validation_records": id.records.len(),
            "valid_from": v.not_before,
            "valid_until": v.not_after,
            "valid_from_iso": crate::util::iso_local(v.not_before),
            "valid_until_iso": crate::util::iso_local(v.not_after),
            "ca_public_key": hex(&ca.0.to_bytes()),
            "ca_address": addr,
            "max_contacts": id.params.max_contacts(),
            "revocation_list": list.as_ref().map(|l| serde_json::json!({
                "sequence": l.list().sequence(),
                "issued_at": l.list().issued_at(),
                "next_update": l.list().next_update(),
                "issued_at_iso": crate::util::iso_local(l.list().issued_at()),
                "next_update_iso": crate::util::iso_local(l.list().next_update()),
                "revoked_accounts": l.list().accounts().iter().map(|a| a.to_string()).collect::<Vec<_>>(),
                "stale": l.list().is_stale(t),
                "this_account_revoked": l.list().contains(&id.account),
            })),
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        println!("account      {}", id.account);
        println!("group        {}", G::ID);
        println!("identifiers  {}", id.identifiers().join(", "));
        println!(
            "certified    {} blinded slots ({} real, the rest CA-chosen padding), {} validation records",
            id.blinded_ids.elements.len(),
            id.identifiers().len(),
            id.records.len()
        );
        println!(
            "valid        {} .. {}",
            crate::util::iso_local(v.not_before),
            crate::util::iso_local(v.not_after)
        );
        println!("CA key       {}", hex(&ca.0.to_bytes()));
        if let Some(a) = &addr {
            println!("CA address   {a}");
        }
        match &list {
            None => println!("revocations  no list yet (`tacit id refresh`)"),
            Some(l) => {
                let l = l.list();
                println!(
                    "revocations  list {}: {} accounts revoked, next update {}{}{}",
                    l.sequence(),
                    l.accounts().len(),
                    crate::util::iso_local(l.next_update()),
                    if l.is_stale(t) {
                        " (past due: `tacit id refresh`)"
                    } else {
                        ""
                    },
                    if l.contains(&id.account) {
                        "; THIS ACCOUNT IS REVOKED"
                    } else {
                        ""
                    }
                );
            }
        }
    }
    Ok(())
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
