//! `tacit ca …` and `tacit id …`: the certification authority PrivateDrop's inputs
//! rely on, and a device's enrolment with it.

use crate::util::store_path;
use anyhow::{Context, Result, anyhow, ensure};
use clap::{Args, Subcommand};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use tacit_crypto::rng::SecureRng;
use tacit_crypto::sign::VerifyingKey;
use tacit_crypto::{GroupId, P256, PrimeGroup, Ristretto255};
use tacit_drop::AccountId;
use tacit_drop::DropParams;
use tacit_drop::ca::{DeviceEnrollment, DropIdentity, Issued};
use tacit_drop::records::CaPublicKey;
use tacit_drop::revocation::{DEFAULT_LIST_LIFETIME_SECS, Revocations, SignedRevocationList, StalePolicy};
use tacit_drop::service;
use tacit_drop::service::ca::{CaEvent, unhex};
use tacit_drop::service::device::{self, RefreshNote};
use tacit_net::guard::ServeLimits;
use tacit_store::{NormalizeOptions, Store};

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

pub fn parse_ca_key(s: &str) -> Result<CaPublicKey> {
    Ok(CaPublicKey(
        VerifyingKey::from_bytes(&unhex(s).context("--ca-key")?).context("--ca-key is not an Ed25519 public key")?,
    ))
}

/// Asks the operator to confirm ownership of `id` (or confirms when `all`).
fn confirm(all: bool, account: &AccountId, id: &str) -> bool {
    let id = crate::util::sanitize(id);
    if all {
        eprintln!("tacit ca: account {account}: ownership of {id} confirmed (--confirm)");
        return true;
    }
    eprint!("tacit ca: account {account} claims {id}. Ownership verified? [y/N] ");
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line).is_ok() && matches!(line.trim(), "y" | "Y" | "yes")
}

fn certified(c: &service::ca::Certified) {
    eprintln!(
        "tacit ca: certified {} identifiers of account {}",
        c.identifiers, c.account
    );
}

pub fn run_ca(cmd: CaCommand) -> Result<()> {
    match cmd {
        CaCommand::Init { dir, force } => {
            let ca = service::ca::init(&dir, force)?;
            println!("created a CA in {}", dir.display());
            println!("public key: {}", hex(&ca.public_key().0.to_bytes()));
            Ok(())
        }
        CaCommand::Show { dir } => {
            println!("{}", hex(&service::ca::load(&dir)?.public_key().0.to_bytes()));
            Ok(())
        }
        CaCommand::Enroll {
            request,
            out,
            dir,
            confirm: all,
            params,
        } => {
            let ca = service::ca::load(&dir)?;
            let mut registry = service::ca::open_registry(&dir)?;
            let bytes = crate::util::read_file(&request, "enrolment request", crate::util::MAX_SMALL_FILE)?;
            let c = service::ca::certify(&ca, &mut registry, params.group, &bytes, &|a, id| confirm(all, a, id))?;
            certified(&c);
            std::fs::write(&out, c.issued).with_context(|| format!("cannot write {}", out.display()))?;
            println!("wrote the issued certificates to {}", out.display());
            Ok(())
        }
        CaCommand::Revoke {
            account,
            dir,
            list_hours,
        } => {
            let ca = service::ca::load(&dir)?;
            let a = AccountId::parse(&account)
                .ok_or_else(|| anyhow!("{account:?} is not an account UUID (8-4-4-4-12 hex digits)"))?;
            let r = service::ca::revoke(&ca, &dir, &a, hours(list_hours)?)?;
            let path = dir.join("revocations.bin");
            let l = r.list.unverified();
            match r.already_at {
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
            let ca = service::ca::load(&dir)?;
            let lifetime = hours(list_hours)?;
            let limits = serve_limits.apply(ServeLimits::new(256, service::ca::CONNECTION_DEADLINE))?;
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()?;
            rt.block_on(crate::util::shutdown::serving(async move {
                let server = service::ca::Ca::builder(ca, dir)
                    .group(params.group)
                    .confirm(move |a, id| confirm(all, a, id))
                    .list_lifetime(lifetime)
                    .limits(limits)
                    .sessions(sessions)
                    .events(|e| match e {
                        CaEvent::Admission(e) => eprintln!("tacit ca serve: {e}"),
                        CaEvent::Certified { account, identifiers } => {
                            eprintln!("tacit ca: certified {identifiers} identifiers of account {account}")
                        }
                        CaEvent::SentList { sequence, accounts } => {
                            eprintln!("tacit ca serve: sent revocation list {sequence} ({accounts} accounts)")
                        }
                        CaEvent::Refused(why) => eprintln!("tacit ca serve: refused: {why}"),
                        CaEvent::Failed(e) => {
                            eprintln!("tacit ca serve: {}", crate::util::one_line(&anyhow::Error::from(e)))
                        }
                    })
                    .bind(&listen)
                    .await?;
                eprintln!("tacit ca serve: listening on {}", server.local_addr());
                eprintln!("tacit ca serve: TLS 1.3, endpoint key endorsed by the CA key");
                server.serve().await?;
                Ok(())
            }))
        }
        CaCommand::Publish { dir, out, list_hours } => {
            let ca = service::ca::load(&dir)?;
            let mut registry = service::ca::open_registry(&dir)?;
            let list = service::ca::publish(&ca, &mut registry, now(), hours(list_hours)?, Some(&dir))?;
            let path = out.unwrap_or_else(|| dir.join("revocations.bin"));
            service::ca::write_public(&path, &list.to_bytes())?;
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

fn hours(h: u64) -> Result<u64> {
    ensure!(
        (1..=24 * 366).contains(&h),
        "--list-hours must be between 1 and 8784 (a year)"
    );
    Ok(h * 3600)
}

/// Prints what refreshing the revocation list did (`who`: the command).
pub fn print_refresh_note(who: &str, n: &RefreshNote) {
    match n {
        RefreshNote::SourceFailed(f) => eprintln!("tacit {who}: warning: revocation list {f}"),
        RefreshNote::NotKept(e) => eprintln!("tacit {who}: warning: {e}"),
        RefreshNote::InForce {
            sequence,
            from,
            accounts,
        } => eprintln!("tacit {who}: revocation list {sequence} from {from} ({accounts} accounts revoked)"),
        RefreshNote::Unusable { from, why } => eprintln!("tacit {who}: {from} sent an unusable revocation list: {why}"),
    }
}

/// For `drop receive` and `drop send` on start: the stored list, refreshed first when
/// it is missing or past its next update; under `policy` Warn a line when it is still
/// not current, under Refuse an error.
pub async fn revocations_on_start(
    st: &mut Store,
    ca: &CaPublicKey,
    who: &str,
    policy: StalePolicy,
) -> Result<Revocations> {
    let on = device::revocations_on_start(st, ca, policy, &mut |n| print_refresh_note(who, n)).await?;
    if let Some(why) = on.stale {
        eprintln!(
            "tacit {who}: warning: the revocation list {why}: accounts the CA revoked since are still trusted \
             (refresh it with `tacit id refresh`; --stale-revocations refuse refuses peers meanwhile)"
        );
    }
    Ok(on.revocations)
}

fn normalise(ids: &[String], region: Option<&str>) -> Result<Vec<String>> {
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
        .collect()
}

fn block_on<T>(f: impl std::future::Future<Output = T>) -> Result<T> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(f))
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
            let normalised = normalise(&ids, region.as_deref())?;
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
            let ca_pub = device::ca_public(&st)?;
            let (list, from) = match (file, url) {
                (None, Some(url)) => {
                    if let Some(w) = service::ca::plain_http_warning(&url) {
                        eprintln!("tacit id refresh: {w}");
                    }
                    let list = block_on(service::ca::fetch_revocations_url(&url, ca_pub))??;
                    device::remember_revocation_url(&mut st, &url)?;
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
                        None => device::ca_address(&st)?
                            .ok_or_else(|| anyhow!("no CA address is known: give --ca HOST:PORT (or --file)"))?,
                    };
                    let list = block_on(service::ca::fetch_revocations(&addr, ca_pub))??;
                    device::remember_ca_address(&mut st, &addr)?;
                    (list, format!("the CA at {addr}"))
                }
            };
            let stored = device::keep_revocations(&mut st, &list)?;
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

fn enroll<G: PrimeGroup>(
    st: &mut Store,
    params: &DropParams,
    ids: &[String],
    ca_pub: CaPublicKey,
    ca: Option<String>,
    offline: Option<PathBuf>,
) -> Result<()> {
    if let Some(file) = offline {
        let refs: Vec<&str> = ids.iter().map(|s| s.as_str()).collect();
        let pending = DeviceEnrollment::<G>::new(params, &refs, &mut SecureRng::from_os())?;
        device::remember_ca(st, &ca_pub)?;
        std::fs::write(&file, pending.request().to_bytes())
            .with_context(|| format!("cannot write {}", file.display()))?;
        device::store_pending(st, &pending)?;
        println!(
            "wrote the enrolment request for account {} to {}; have the CA certify it, then run `tacit id finish`",
            pending.request().account,
            file.display()
        );
        return Ok(());
    }
    let addr = ca.ok_or_else(|| anyhow!("give --ca HOST:PORT or --offline FILE"))?;
    let identity = block_on(service::ca::enroll::<G>(&addr, ca_pub, params, ids))??;
    device::remember_ca(st, &ca_pub)?;
    device::remember_ca_address(st, &addr)?;
    store_identity(st, &identity)
}

fn renew<G: PrimeGroup>(st: &mut Store, addr: &str, ids: &[String], region: Option<&str>) -> Result<()> {
    let current = device::identity::<G>(st)?;
    let ca_pub = device::ca_public(st)?;
    let ids: Vec<String> = if ids.is_empty() {
        current.identifiers().to_vec()
    } else {
        normalise(ids, region)?
    };
    let identity = block_on(service::ca::renew::<G>(addr, ca_pub, &current, &ids))??;
    device::remember_ca_address(st, addr)?;
    store_identity(st, &identity)
}

fn store_identity<G: PrimeGroup>(st: &mut Store, identity: &DropIdentity<G>) -> Result<()> {
    device::store_identity(st, identity)?;
    println!(
        "enrolled account {} with {} identifiers ({} certified slots)",
        identity.account,
        identity.identifiers().len(),
        identity.blinded_ids.elements.len()
    );
    Ok(())
}

fn finish<G: PrimeGroup>(st: &mut Store, issued: &[u8]) -> Result<()> {
    let pending = device::pending::<G>(st)?;
    let ca = device::ca_public(st)?;
    let issued = Issued::<G>::from_bytes(issued, &pending.request().params)?;
    store_identity(st, &pending.finish(issued, &ca, now())?)
}

fn show<G: PrimeGroup>(st: &Store, json: bool) -> Result<()> {
    let id = device::identity::<G>(st)?;
    let ca = device::ca_public(st)?;
    let v = &id.blinded_ids.validity;
    let list = device::stored_revocations(st, &ca)?;
    let t = now();
    let addr = device::ca_address(st)?;
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
