//! `tacit discover`: identities with hierarchical names, the IBE root authority,
//! private advertisements over mDNS, and the private handshakes.
//!
//! A principal's state lives in the store (`--store`, as for every other command),
//! versioned in its `keys` table: `discover-principal` (signing key and blessings,
//! secret), `discover-roots` (trusted roots), `discover-prefix-key` (secret) and
//! `discover-ibe-mpk`. The IBE root authority keeps its files in its own directory,
//! as `tacit ca` does.

use crate::util::MdnsArg;
use anyhow::{Context, Result, anyhow, bail, ensure};
use clap::{Args, Subcommand};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tacit_crypto::rng::SecureRng;
use tacit_crypto::sign::VerifyingKey;
use tacit_discovery::authority::{self, AuthorityEvent};
use tacit_discovery::blessing::{
    Applied, Blessing, CertificateId, Policy, Principal, SignedRevocationList, TrustedRoot, TrustedRoots,
};
use tacit_discovery::handshake::{Credentials, Mode, PrefixCredentials};
use tacit_discovery::ibe::{MasterPublicKey, MasterSecretKey};
use tacit_discovery::prefix::{Prefix, PrefixAuthority, PrefixKey};
use tacit_discovery::root_service::{self, RootEvent};
use tacit_discovery::service::{self, ServerEvent};
use tacit_discovery::stored::{adopt, keep, next_revocation_list};
use tacit_discovery::{Advertiser, AdvertiserEvent, Authority, BrowseEvent, Browser};
use tacit_net::NetConfig;
use tacit_store::Store;
use tacit_wire::{Decode, Encode};
use zeroize::Zeroizing;

const DAY: u64 = 24 * 3600;

/// `tacit discover ...`
#[derive(Debug, Subcommand)]
pub enum DiscoverCommand {
    /// This principal: its key, its blessings (names), the roots it trusts.
    #[command(subcommand)]
    Id(IdCommand),
    /// The IBE root authority that issues prefix-encryption keys.
    #[command(subcommand)]
    Root(RootCommand),
    /// Serve the private handshakes and broadcast an advertisement only `--policy` can read.
    #[command(after_help = "\
Examples:
  tacit discover advertise --policy 'Home/*' --mdns all
  tacit discover advertise --policy 'Home/*' --listen 127.0.0.1:7900 --mdns loopback --refresh 600
  tacit discover advertise --policy 'Home/*' --pointer      # only a 25-byte pointer record in mDNS")]
    Advertise(AdvertiseArgs),
    /// List the services this identity may see, then talk to them with 0-RTT.
    #[command(after_help = "\
Examples:
  tacit discover browse --policy 'Home/Devices/*' --mdns all --message 'status?'
  tacit discover browse --policy 'Home/*' --mdns loopback --wait 2 --json")]
    Browse(BrowseArgs),
    /// The private mutual authentication (or SIGMA-I) with a known address, no discovery.
    #[command(after_help = "\
Examples:
  tacit discover connect 192.168.1.20:7900 --policy 'Home/Devices/*' --message 'status?'
  tacit discover connect 127.0.0.1:7900 --policy 'Home/*' --sigma")]
    Connect(ConnectArgs),
}

/// `tacit discover id ...`
#[derive(Debug, Subcommand)]
pub enum IdCommand {
    /// Create this principal's signing key; with --root, also a self-signed root name.
    #[command(
        after_help = "Examples:\n  tacit discover id new --root Home\n  tacit discover id new --store ./phone.sqlite3"
    )]
    New {
        /// Make this principal the root NAME (one name component).
        #[arg(long, value_name = "NAME")]
        root: Option<String>,
        /// Validity of the root blessing in days.
        #[arg(long, default_value_t = 365)]
        days: u64,
    },
    /// Bless another principal's key with NAME = our name + "/" + EXTENSION.
    #[command(
        after_help = "Example:\n  tacit discover id bless --key 3b6a…(64 hex) --extension Phone --out phone.blessing"
    )]
    Bless {
        /// The other principal's public key (hex, from its `id show`).
        #[arg(long)]
        key: String,
        /// The name component to add.
        #[arg(long)]
        extension: String,
        /// Which of our names to extend (default: the first).
        #[arg(long)]
        name: Option<String>,
        /// Validity in days (never beyond our own blessing).
        #[arg(long, default_value_t = 365)]
        days: u64,
        /// Where to write the blessing.
        #[arg(long)]
        out: PathBuf,
    },
    /// Keep a blessing another principal made for our key.
    #[command(after_help = "Example:\n  tacit discover id add-blessing phone.blessing")]
    AddBlessing {
        /// The blessing file.
        file: PathBuf,
    },
    /// Trust a root: chains must start at one of the trusted roots.
    #[command(after_help = "Example:\n  tacit discover id trust Home 3b6a…(64 hex)")]
    Trust {
        /// The root name.
        name: String,
        /// Its public key (hex).
        key: String,
    },
    /// Ask the IBE root service for our prefix key, proving a blessing for the name.
    #[command(after_help = "\
The IBE root (`tacit discover root serve`) sends a fresh challenge; this principal
answers with its blessing for NAME, an ephemeral key and a signature over both; the
root checks the blessing against the naming roots it trusts (and their revocation
lists) and returns the key of that name, encrypted to the ephemeral key. The key is
checked against the IBE root's public key before it is installed.
Examples:
  tacit discover id fetch-prefix-key --root 192.168.1.2:7910 --mpk ibe.mpk
  tacit discover id fetch-prefix-key --root 127.0.0.1:7910 --name Home/Camera")]
    FetchPrefixKey {
        /// The IBE root service's address.
        #[arg(long)]
        root: String,
        /// The IBE root's public key file (default: the one installed already).
        #[arg(long)]
        mpk: Option<PathBuf>,
        /// Which of our names (default: the first).
        #[arg(long)]
        name: Option<String>,
    },
    /// Fetch the naming roots' revocation lists from the IBE root service.
    #[command(after_help = "\
Lists are accepted only for roots this principal trusts, signed by that root's key,
and never older than the one held. A chain with a revoked link fails every
handshake from then on.
Example:
  tacit discover id refresh --root 127.0.0.1:7910")]
    Refresh {
        /// The IBE root service's address.
        #[arg(long)]
        root: String,
    },
    /// Import a naming root's revocation list from a file.
    #[command(after_help = "Example:\n  tacit discover id import-revocations home.revocations")]
    ImportRevocations {
        /// The list (from `tacit discover root revoke --out`).
        file: PathBuf,
    },
    /// Install our prefix-encryption key and the IBE root's public key.
    #[command(after_help = "Example:\n  tacit discover id use-prefix-key phone.prefix-key --mpk ibe.mpk")]
    UsePrefixKey {
        /// The key file from `tacit discover root extract`.
        file: PathBuf,
        /// The IBE root's public key file.
        #[arg(long)]
        mpk: PathBuf,
    },
    /// Print the key, names, trusted roots and prefix key.
    #[command(after_help = "Example:\n  tacit discover id show --json")]
    Show {
        /// JSON output.
        #[arg(long)]
        json: bool,
    },
}

/// `tacit discover root ...`
#[derive(Debug, Subcommand)]
pub enum RootCommand {
    /// Create an IBE root authority (master secret key and public key).
    #[command(after_help = "Example:\n  tacit discover root init --dir ./ibe-root")]
    Init {
        /// Directory for ibe.msk (secret) and ibe.mpk.
        #[arg(long)]
        dir: PathBuf,
    },
    /// Serve prefix keys to principals that prove a blessing for their name, and the
    /// naming roots' revocation lists.
    #[command(after_help = "\
A requester gets the key of a name only by proving, over a fresh challenge, that it
holds a valid blessing for that name under one of the --trust roots (not expired,
not revoked); everyone else gets a one-line refusal and nothing else. Revocation
lists stored in DIR (`root revoke --dir`, `root import-revocations`) are picked up
at each connection and served to `tacit discover id refresh`.
Each root name may be trusted with one key only (prefix keys name only names), unless
its keys are one root's rollover (--rollover NAME).
Examples:
  tacit discover root serve --dir ./ibe-root --listen 0.0.0.0:7910 --trust Home=3b6a…(64 hex)
  tacit discover root serve --dir ./ibe-root --listen 127.0.0.1:0 --trust Home=<key> --trust Office=<key>
  tacit discover root serve --dir ./ibe-root --listen 127.0.0.1:0 --trust Home=<old> --trust Home=<new> --rollover Home")]
    Serve {
        /// The authority's directory.
        #[arg(long)]
        dir: PathBuf,
        /// Address to listen on (port 0 picks one; the address is printed).
        #[arg(long)]
        listen: String,
        /// A naming root whose blessings this authority honours: NAME=KEY (hex); repeat.
        /// One NAME takes one KEY: prefix keys name only names, so two roots of one
        /// name would read each other's advertisements (see --rollover).
        #[arg(long = "trust", value_name = "NAME=KEY", required = true)]
        trust: Vec<String>,
        /// NAME's keys given with --trust are one root's old and new keys (a key
        /// rollover): members under either get NAME's prefix keys; repeat.
        #[arg(long = "rollover", value_name = "NAME")]
        rollover: Vec<String>,
        /// Exit after this many connections: a number (0: exit once ready) or
        /// `forever` (the default).
        #[arg(long, value_name = "N", value_parser = crate::util::parse_sessions)]
        sessions: Option<u64>,
        #[command(flatten)]
        serve_limits: crate::util::ServeLimitArgs,
    },
    /// Revoke a blessing: sign a new revocation list of this naming root (the
    /// principal in --store) that names it.
    #[command(after_help = "\
WHAT is a certificate identifier (64 hex digits, from `tacit discover id show` or
`id bless`) or a blessing file. Revoking a link revokes every chain that contains
it: revoking Home/Devices revokes Home/Devices/Camera too. The list is kept in
--store (the root's own principals apply it at once), and with --dir also in the
IBE root's directory, from where `root serve` serves it and stops granting keys to
the revoked blessing; --out writes it for `tacit discover id import-revocations`.
Examples:
  tacit discover root revoke cam.blessing --store home.sqlite3 --dir ./ibe-root
  tacit discover root revoke 9f3c…(64 hex) --store home.sqlite3 --out home.revocations")]
    Revoke {
        /// The certificate identifier, or a blessing file.
        what: String,
        /// Which root of this principal signs (default: its only root).
        #[arg(long)]
        root: Option<String>,
        /// Also store the list in this IBE root directory (served by `root serve`).
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Also write the list to FILE.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
        /// Days until the next list is due.
        #[arg(long, default_value_t = 7)]
        days: u64,
    },
    /// Store a naming root's revocation list in the IBE root's directory (for
    /// `root serve`, which checks it against its --trust roots).
    #[command(after_help = "Example:\n  tacit discover root import-revocations home.revocations --dir ./ibe-root")]
    ImportRevocations {
        /// The list file.
        file: PathBuf,
        /// The authority's directory.
        #[arg(long)]
        dir: PathBuf,
    },
    /// Issue the prefix key of NAME without any proof (the operator's override; prefer
    /// `root serve`, which checks a blessing over a fresh challenge).
    #[command(after_help = "\
Whoever holds the key of NAME reads everything encrypted to the prefixes of NAME,
so this command refuses unless --operator-checked says that the operator verified,
out of band, that the requester holds a valid blessing for NAME.
Example:
  tacit discover root extract Home/Owner/Phone --dir ./ibe-root --out phone.prefix-key --operator-checked")]
    Extract {
        /// The name.
        name: String,
        /// The authority's directory.
        #[arg(long)]
        dir: PathBuf,
        /// Where to write the key (secret).
        #[arg(long)]
        out: PathBuf,
        /// The operator checked, out of band, that the requester holds a valid
        /// blessing for NAME.
        #[arg(long)]
        operator_checked: bool,
    },
}

/// Options of `advertise`.
#[derive(Debug, Args)]
pub struct AdvertiseArgs {
    /// Who may discover and connect: prefix patterns, comma-separated.
    #[arg(long)]
    policy: String,
    /// Which of our names to present (default: the first).
    #[arg(long)]
    name: Option<String>,
    /// Address for the handshakes.
    #[arg(long, default_value = "0.0.0.0:0")]
    listen: String,
    /// Seconds between fresh advertisements (new broadcast id, new semi-static key).
    #[arg(long, default_value_t = 3600)]
    refresh: u64,
    /// Where mDNS runs (off: serve handshakes only).
    #[arg(long, value_enum, default_value = "all")]
    mdns: MdnsArg,
    /// The DNS-SD service type.
    #[arg(long, default_value = tacit_net::mdns::DISCOVERY_SERVICE)]
    service: String,
    /// Always publish a pointer to an auxiliary service instead of the advertisement
    /// (as a BLE-sized broadcast would).
    #[arg(long)]
    pointer: bool,
    /// Reply to each client's message with this text.
    #[arg(long, default_value = "hello from the service")]
    reply: String,
    /// Stop after this many seconds (default: run until interrupted).
    #[arg(long)]
    for_secs: Option<u64>,
    /// Also answer SIGMA-I hellos. This makes the service public: anyone who
    /// connects receives its name and key. Off by default.
    #[arg(long)]
    allow_sigma: bool,
    #[command(flatten)]
    serve_limits: crate::util::ServeLimitArgs,
}

/// Options of `browse`.
#[derive(Debug, Args)]
pub struct BrowseArgs {
    /// Which services we accept (prefix patterns, comma-separated).
    #[arg(long)]
    policy: String,
    /// Which of our names to present (default: the first).
    #[arg(long)]
    name: Option<String>,
    /// Where mDNS runs.
    #[arg(long, value_enum, default_value = "all")]
    mdns: MdnsArg,
    /// The DNS-SD service type.
    #[arg(long, default_value = tacit_net::mdns::DISCOVERY_SERVICE)]
    service: String,
    /// Seconds to listen for advertisements.
    #[arg(long, default_value_t = 3)]
    wait: u64,
    /// Send this as 0-RTT early data to each service we may see (omit to only list).
    #[arg(long)]
    message: Option<String>,
    /// JSON output.
    #[arg(long)]
    json: bool,
}

/// Options of `connect`.
#[derive(Debug, Args)]
pub struct ConnectArgs {
    /// The service's address.
    addr: String,
    /// Which servers we accept (prefix patterns, comma-separated).
    #[arg(long)]
    policy: String,
    /// Which of our names to present (default: the first).
    #[arg(long)]
    name: Option<String>,
    /// Use SIGMA-I (the server's identity is not private) instead.
    #[arg(long)]
    sigma: bool,
    /// The message to send once authenticated.
    #[arg(long, default_value = "hello")]
    message: String,
}

/// Writes `bytes` to `path` atomically (temporary file + rename), owner-only when
/// `secret`.
fn write_file(path: &Path, bytes: &[u8], secret: bool) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let tmp = path.with_extension("tmp");
    {
        use std::io::Write;
        let mut o = std::fs::OpenOptions::new();
        o.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            o.mode(if secret { 0o600 } else { 0o644 });
        }
        let mut f = o.open(&tmp).with_context(|| format!("writing {}", tmp.display()))?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

fn read(path: &Path, what: &'static str) -> Result<Vec<u8>> {
    crate::util::read_file(path, what, crate::util::MAX_SMALL_FILE)
}

fn parse_key(hex_key: &str) -> Result<VerifyingKey> {
    let b = hex::decode(hex_key.trim()).map_err(|_| anyhow!("the key must be 64 hex digits"))?;
    VerifyingKey::from_bytes(&b).map_err(|e| anyhow!("invalid public key: {e}"))
}

const PRINCIPAL: &str = "discover-principal";
const ROOTS: &str = "discover-roots";
const PREFIX_KEY: &str = "discover-prefix-key";
const IBE_MPK: &str = "discover-ibe-mpk";

/// This principal's state in the store.
struct Home {
    path: PathBuf,
    st: Store,
}

impl Home {
    fn open(store: Option<&Path>) -> Result<Self> {
        let path = crate::util::store_path(store)?;
        let st = crate::util::open_store(&path)?;
        Ok(Home { path, st })
    }
    /// The current version of `purpose` (zeroized when dropped: some are secret).
    fn get(&self, purpose: &str) -> Result<Option<Zeroizing<Vec<u8>>>> {
        Ok(self.st.current_key(purpose)?.map(|k| k.secret))
    }
    /// Stores a new version of `purpose`.
    fn put(&mut self, purpose: &str, bytes: &[u8]) -> Result<()> {
        let epoch = self.st.current_key(purpose)?.map_or(1, |k| k.epoch + 1);
        self.st.put_key(purpose, epoch, bytes, now())?;
        Ok(())
    }
    fn has_principal(&self) -> Result<bool> {
        Ok(self.get(PRINCIPAL)?.is_some())
    }
    fn principal(&self) -> Result<Principal> {
        let b = self.get(PRINCIPAL)?.ok_or_else(|| {
            anyhow!(
                "no discovery principal in {} (run `tacit discover id new` first)",
                self.path.display()
            )
        })?;
        Ok(Principal::from_file_bytes(&b)?)
    }
    fn save_principal(&mut self, p: &Principal) -> Result<()> {
        self.put(PRINCIPAL, &p.to_file_bytes())
    }
    /// The trusted roots, with the revocation lists kept in the store in force.
    fn roots(&self) -> Result<TrustedRoots> {
        let roots = match self.get(ROOTS)? {
            Some(b) => TrustedRoots::from_file_bytes(&b)?,
            None => TrustedRoots::new(),
        };
        warn_stored_lists(&self.st, &roots);
        Ok(roots)
    }
    fn save_roots(&mut self, r: &TrustedRoots) -> Result<()> {
        self.put(ROOTS, &r.to_file_bytes())
    }
    fn prefix(&self) -> Result<Option<PrefixCredentials>> {
        let Some(mpk) = self.get(IBE_MPK)? else { return Ok(None) };
        let mpk = MasterPublicKey::from_wire(&mpk)?;
        let key = match self.get(PREFIX_KEY)? {
            Some(k) => Some(Arc::new(PrefixKey::from_bytes(&mpk, &k)?)),
            None => None,
        };
        Ok(Some(PrefixCredentials {
            mpk: Arc::new(mpk),
            key,
        }))
    }
    /// Credentials presenting `name` (default: our first blessing) with `policy`.
    fn credentials(&self, name: Option<&str>, policy: &str) -> Result<Credentials> {
        let principal = self.principal()?;
        let blessing = pick(&principal, name)?;
        let roots = self.roots()?;
        ensure!(
            !roots.is_empty(),
            "no trusted roots in {} (run `tacit discover id trust`)",
            self.path.display()
        );
        Ok(Credentials {
            principal: Arc::new(principal),
            blessing,
            roots,
            policy: policy.parse::<Policy>().map_err(|e| anyhow!("--policy: {e}"))?,
        })
    }
}

/// Applies the revocation lists kept in `st` to `roots` (those of roots `roots`
/// trusts), warning about each that does not verify.
fn warn_stored_lists(st: &Store, roots: &TrustedRoots) {
    for (who, e) in tacit_discovery::stored::apply_stored_lists(st, roots) {
        eprintln!("tacit: warning: stored revocation list {who}: {e}");
    }
}

fn describe_list(list: &SignedRevocationList, applied: Applied) -> String {
    let l = list.unverified();
    format!(
        "revocation list {} of root {}: {} certificates revoked, next update {}{}",
        l.sequence(),
        l.root().name(),
        l.len(),
        l.next_update(),
        if applied == Applied::Unchanged {
            " (already held)"
        } else {
            ""
        }
    )
}

fn pick(p: &Principal, name: Option<&str>) -> Result<Blessing> {
    let all = p.blessings();
    ensure!(
        !all.is_empty(),
        "this principal has no name yet (get a blessing: `tacit discover id add-blessing FILE`)"
    );
    match name {
        None => Ok(all[0].clone()),
        Some(n) => all
            .iter()
            .find(|b| b.unverified_name().as_str() == n)
            .cloned()
            .ok_or_else(|| anyhow!("this principal holds no blessing named {n}")),
    }
}

use crate::util::now_unix as now;

pub fn run(cmd: DiscoverCommand, store: Option<&Path>) -> Result<()> {
    match cmd {
        DiscoverCommand::Id(c) => run_id(c, store),
        DiscoverCommand::Root(c) => run_root(c, store),
        DiscoverCommand::Advertise(a) => {
            runtime()?.block_on(crate::util::shutdown::serving(advertise(a, Home::open(store)?)))
        }
        DiscoverCommand::Browse(a) => runtime()?.block_on(browse(a, Home::open(store)?)),
        DiscoverCommand::Connect(a) => runtime()?.block_on(connect(a, Home::open(store)?)),
    }
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?)
}

fn run_id(c: IdCommand, store: Option<&Path>) -> Result<()> {
    let mut rng = SecureRng::from_os();
    let mut h = Home::open(store)?;
    match c {
        IdCommand::New { root, days } => {
            ensure!(
                !h.has_principal()?,
                "{} already holds a discovery principal; use another --store",
                h.path.display()
            );
            let mut p = Principal::generate(&mut rng);
            if let Some(r) = &root {
                p.bless_self(r, now() + days * DAY)?;
                let mut roots = h.roots()?;
                roots.add(r, p.public_key())?;
                h.save_roots(&roots)?;
            }
            h.save_principal(&p)?;
            println!("public key: {}", hex::encode(p.public_key().to_bytes()));
            if let Some(r) = root {
                println!("root name:  {r} (trusted by this principal; others run `tacit discover id trust {r} <key>`)");
            }
            println!("stored in {}", h.path.display());
        }
        IdCommand::Bless {
            key,
            extension,
            name,
            days,
            out,
        } => {
            let p = h.principal()?;
            let mine = pick(&p, name.as_deref())?;
            let child = parse_key(&key)?;
            let b = p.bless(&mine, &child, &extension, now() + days * DAY, vec![])?;
            write_file(&out, &b.to_file_bytes(), false)?;
            println!("blessed {} as {} → {}", key, b.unverified_name(), out.display());
            println!("certificate id {} (to revoke it: `tacit discover root revoke`)", b.id());
        }
        IdCommand::AddBlessing { file } => {
            let mut p = h.principal()?;
            let b = Blessing::from_file_bytes(&read(&file, "blessing")?)?;
            let name = b.unverified_name();
            ensure!(
                b.public_key() == p.public_key(),
                "{} blesses another key, not this principal's",
                file.display()
            );
            p.add_blessing(b)?;
            h.save_principal(&p)?;
            println!("this principal is now also {name}");
        }
        IdCommand::Trust { name, key } => {
            let mut roots = h.roots()?;
            let added = roots.add(&name, parse_key(&key)?)?;
            h.save_roots(&roots)?;
            println!("{} root {name}", if added { "trusting" } else { "already trusted:" });
        }
        IdCommand::FetchPrefixKey { root, mpk, name } => {
            let principal = h.principal()?;
            let blessing = pick(&principal, name.as_deref())?;
            let (mpk_bytes, m) = match &mpk {
                Some(f) => {
                    let b = read(f, "IBE public key")?;
                    let m = MasterPublicKey::from_wire(&b)?;
                    (b, m)
                }
                None => {
                    let b = h
                        .get(IBE_MPK)?
                        .ok_or_else(|| anyhow!("give --mpk (the IBE root's ibe.mpk): the key is checked against it"))?;
                    let m = MasterPublicKey::from_wire(&b)?;
                    (b.to_vec(), m)
                }
            };
            let wanted = blessing.unverified_name();
            let key = runtime()?.block_on(authority::fetch_prefix_key(
                &root,
                Arc::new(principal),
                blessing,
                Arc::new(m),
                &NetConfig::default().with_deadline(Duration::from_secs(30)),
            ))?;
            h.put(IBE_MPK, &mpk_bytes)?;
            h.put(PREFIX_KEY, &key.to_bytes())?;
            println!("installed the prefix key of {wanted} from the IBE root at {root}");
        }
        IdCommand::Refresh { root } => {
            let roots = h.roots()?;
            let lists = runtime()?.block_on(authority::fetch_revocations(
                &root,
                &NetConfig::default().with_deadline(Duration::from_secs(30)),
            ))?;
            if lists.is_empty() {
                println!("the IBE root at {root} holds no revocation lists");
            }
            for l in &lists {
                match adopt(&mut h.st, &roots, l) {
                    Ok(a) => println!("{}", describe_list(l, a)),
                    Err(e) => println!(
                        "ignored the revocation list of root {}: {}",
                        crate::util::sanitize(l.unverified().root().name()),
                        crate::util::one_line(&e.into())
                    ),
                }
            }
        }
        IdCommand::ImportRevocations { file } => {
            let roots = h.roots()?;
            let l = SignedRevocationList::from_file_bytes(&read(&file, "revocation list")?)?;
            let a = adopt(&mut h.st, &roots, &l)?;
            println!("{}", describe_list(&l, a));
        }
        IdCommand::UsePrefixKey { file, mpk } => {
            let mpk_bytes = read(&mpk, "IBE public key")?;
            let m = MasterPublicKey::from_wire(&mpk_bytes)?;
            let kb = read(&file, "prefix key")?;
            let k = PrefixKey::from_bytes(&m, &kb).context("the prefix key does not belong to this IBE root")?;
            h.put(IBE_MPK, &mpk_bytes)?;
            h.put(PREFIX_KEY, &kb)?;
            println!("installed the prefix key of {}", k.name());
        }
        IdCommand::Show { json } => {
            let p = h.principal()?;
            let roots = h.roots()?;
            let prefix = h.prefix()?;
            let t = now();
            let names: Vec<serde_json::Value> = p
                .blessings()
                .iter()
                .map(|b| {
                    let valid = b.validate(&roots, t);
                    serde_json::json!({
                        "name": b.unverified_name().to_string(),
                        "id": b.id().to_string(),
                        "links": b.depth(),
                        "bytes": b.encoded_len(),
                        "expires_at": b.expires_at(),
                        "expires_at_iso": crate::util::iso_local(b.expires_at()),
                        "valid": valid.is_ok(),
                        "problem": valid.err().map(|e| e.to_string()),
                    })
                })
                .collect();
            let out = serde_json::json!({
                "store": h.path.display().to_string(),
                "public_key": hex::encode(p.public_key().to_bytes()),
                "names": names,
                "trusted_roots": roots.iter().map(|r| serde_json::json!({"name": r.name(), "key": hex::encode(r.public_key().to_bytes())})).collect::<Vec<_>>(),
                "prefix_key": prefix.as_ref().and_then(|p| p.key.as_ref()).map(|k| k.name().to_string()),
                "ibe_root": prefix.is_some(),
                "revocation_lists": roots.revocation_lists().iter().map(|l| {
                    let l = l.unverified();
                    serde_json::json!({
                        "root": l.root().name(),
                        "sequence": l.sequence(),
                        "next_update": l.next_update(),
                        "next_update_iso": crate::util::iso_local(l.next_update()),
                        "revoked": l.revoked().map(|i| i.to_string()).collect::<Vec<_>>(),
                        "stale": l.is_stale(t),
                    })
                }).collect::<Vec<_>>(),
            });
            if json {
                println!("{}", serde_json::to_string_pretty(&out)?);
            } else {
                println!("store:       {}", h.path.display());
                println!("public key:  {}", out["public_key"].as_str().unwrap_or(""));
                for n in &names {
                    println!(
                        "name:        {} ({} links, {} bytes, expires {}){}",
                        n["name"].as_str().unwrap_or(""),
                        n["links"],
                        n["bytes"],
                        n["expires_at_iso"].as_str().unwrap_or(""),
                        match n["problem"].as_str() {
                            Some(p) => format!(" — not valid here: {p}"),
                            None => String::new(),
                        }
                    );
                    println!("  id:        {}", n["id"].as_str().unwrap_or(""));
                }
                if names.is_empty() {
                    println!("name:        (none yet)");
                }
                for r in roots.iter() {
                    println!("trusts root: {} {}", r.name(), hex::encode(r.public_key().to_bytes()));
                }
                match out["prefix_key"].as_str() {
                    Some(k) => println!("prefix key:  {k}"),
                    None => println!("prefix key:  (none: cannot read private services)"),
                }
                for l in roots.revocation_lists() {
                    let l = l.unverified();
                    println!(
                        "revocations: root {} list {}: {} certificates revoked, next update {}{}",
                        l.root().name(),
                        l.sequence(),
                        l.len(),
                        crate::util::iso_local(l.next_update()),
                        if l.is_stale(t) { " (past due)" } else { "" }
                    );
                }
            }
        }
    }
    Ok(())
}

/// The IBE root's own store (revocation lists it serves), in its directory.
fn open_root_store(dir: &Path) -> Result<Store> {
    let path = dir.join("root.sqlite3");
    Store::open(&path).with_context(|| format!("cannot open {}", path.display()))
}

fn parse_trust(spec: &str) -> Result<(String, VerifyingKey)> {
    let (name, key) = spec
        .split_once('=')
        .ok_or_else(|| anyhow!("--trust {spec:?}: write it as NAME=KEY (the root's name and its 64-hex-digit key)"))?;
    Ok((
        name.to_string(),
        parse_key(key).with_context(|| format!("--trust {name}"))?,
    ))
}

fn run_root(c: RootCommand, store: Option<&Path>) -> Result<()> {
    let mut rng = SecureRng::from_os();
    match c {
        RootCommand::Serve {
            dir,
            listen,
            trust,
            rollover,
            sessions,
            serve_limits,
        } => {
            let limits = serve_limits.apply(root_service::default_limits())?;
            let msk = MasterSecretKey::from_bytes(&read(&dir.join("ibe.msk"), "IBE master secret key")?)?;
            let mut roots = TrustedRoots::new();
            for t in &trust {
                let (name, key) = parse_trust(t)?;
                roots.add(&name, key).with_context(|| format!("--trust {name}"))?;
            }
            let mut builder = Authority::builder(msk, roots)
                .limits(limits)
                .sessions(sessions)
                .revocations_from_store(dir.join("root.sqlite3"))
                .on_event(|e| match e {
                    AuthorityEvent::StoredListIgnored { issuer, why } => {
                        eprintln!("tacit: warning: stored revocation list {issuer}: {why}")
                    }
                    AuthorityEvent::Connection(RootEvent::Granted { name, blessing_id }) => {
                        eprintln!(
                            "tacit discover root serve: granted the prefix key of {name} (blessing {blessing_id})"
                        )
                    }
                    AuthorityEvent::Connection(RootEvent::ListsServed(n)) => {
                        eprintln!("tacit discover root serve: sent {n} revocation lists")
                    }
                    AuthorityEvent::Connection(RootEvent::Refused(why)) => {
                        eprintln!("tacit discover root serve: refused: {}", crate::util::sanitize(&why))
                    }
                });
            for name in &rollover {
                builder = builder.rollover(name);
            }
            runtime()?.block_on(crate::util::shutdown::serving(async {
                let authority = match builder.bind(&listen).await {
                    Ok(a) => a,
                    // Issue 32: one root name, one root (unless marked as a rollover).
                    Err(tacit_discovery::Error::AmbiguousRootName { name, keys: n }) => bail!(
                        "--trust gives the root name {name} {n} keys; prefix keys name only names, so members under one \
                         would read what is encrypted for the others. Trust one key per name, or pass --rollover {name} \
                         if the keys are one root's old and new keys"
                    ),
                    Err(e @ (tacit_discovery::Error::StoreOpen { .. } | tacit_discovery::Error::Store(_))) => {
                        return Err(e.into());
                    }
                    Err(e) => return Err(anyhow::Error::from(e).context(format!("cannot listen on {listen}"))),
                };
                eprintln!("tacit discover root serve: listening on {}", authority.local_addr());
                authority.serve().await?;
                anyhow::Ok(())
            }))?;
        }
        RootCommand::Revoke {
            what,
            root,
            dir,
            out,
            days,
        } => {
            ensure!((1..=3650).contains(&days), "--days must be between 1 and 3650");
            let mut h = Home::open(store)?;
            let p = h.principal()?;
            let own_roots: Vec<&Blessing> = p.blessings().iter().filter(|b| b.depth() == 1).collect();
            let root_b = match (&root, own_roots.as_slice()) {
                (None, [one]) => (*one).clone(),
                (None, []) => anyhow::bail!(
                    "the principal in {} is not a naming root (it was not made with `discover id new --root`)",
                    h.path.display()
                ),
                (None, _) => anyhow::bail!("this principal is several roots; choose one with --root NAME"),
                (Some(n), all) => all
                    .iter()
                    .find(|b| b.root_name() == n)
                    .map(|b| (*b).clone())
                    .ok_or_else(|| anyhow!("this principal is not the root {n}"))?,
            };
            let me = TrustedRoot::of(&root_b);
            let id = match what.parse::<CertificateId>() {
                Ok(id) => id,
                Err(_) => {
                    let b = Blessing::from_file_bytes(&read(Path::new(&what), "blessing").with_context(|| {
                        format!("{what:?} is neither a certificate id (64 hex digits) nor a blessing file")
                    })?)?;
                    ensure!(
                        b.root_name() == me.name() && b.root_key() == me.public_key(),
                        "{what} is a blessing under root {}, not under this root {}",
                        crate::util::sanitize(b.root_name()),
                        me.name()
                    );
                    b.id()
                }
            };
            let t = now();
            let (list, already) = next_revocation_list(&h.st, &p, &root_b, id, t, t + days * DAY)?;
            let roots = h.roots()?;
            adopt(&mut h.st, &roots, &list)?;
            if let Some(d) = &dir {
                keep(&mut open_root_store(d)?, &list)?;
            }
            if let Some(o) = &out {
                write_file(o, &list.to_file_bytes(), false)?;
            }
            println!(
                "{} certificate {id} under root {}",
                if already { "already revoked:" } else { "revoked" },
                me.name()
            );
            println!(
                "{}{}{}",
                describe_list(&list, Applied::Installed),
                match &dir {
                    Some(d) => format!("; served by `root serve --dir {}`", d.display()),
                    None => String::new(),
                },
                match &out {
                    Some(o) => format!("; written to {}", o.display()),
                    None => String::new(),
                }
            );
        }
        RootCommand::ImportRevocations { file, dir } => {
            let l = SignedRevocationList::from_file_bytes(&read(&file, "revocation list")?)?;
            let u = l.unverified();
            let stored = keep(&mut open_root_store(&dir)?, &l)?;
            println!(
                "{} revocation list {} of root {} in {} (checked against the --trust roots when served)",
                if stored { "stored" } else { "kept the newer" },
                u.sequence(),
                crate::util::sanitize(u.root().name()),
                dir.display()
            );
        }
        RootCommand::Init { dir } => {
            let msk_path = dir.join("ibe.msk");
            ensure!(!msk_path.exists(), "{} already exists", msk_path.display());
            let msk = MasterSecretKey::generate(&mut rng);
            write_file(&msk_path, &msk.to_bytes(), true)?;
            write_file(&dir.join("ibe.mpk"), &msk.public().to_wire(), false)?;
            println!(
                "IBE root authority in {} (ibe.msk is secret; give ibe.mpk to every principal)",
                dir.display()
            );
        }
        RootCommand::Extract {
            name,
            dir,
            out,
            operator_checked,
        } => {
            ensure!(
                operator_checked,
                "extracting without a proof gives the key of {name} to whoever receives the file; run `tacit discover root serve` (the requester proves a blessing for its name), or pass --operator-checked if you verified out of band that the requester holds a valid blessing for {name}"
            );
            let msk = MasterSecretKey::from_bytes(&read(&dir.join("ibe.msk"), "IBE master secret key")?)?;
            let auth = PrefixAuthority::from_master_secret_key(msk);
            let prefix = Prefix::parse(&name).map_err(|e| anyhow!("name {name:?}: {e}"))?;
            let key = auth.extract(&prefix, &mut rng)?;
            write_file(&out, &key.to_bytes(), true)?;
            println!("prefix key of {name} ({} IBE keys) → {}", prefix.len(), out.display());
        }
    }
    Ok(())
}

async fn advertise(a: AdvertiseArgs, h: Home) -> Result<()> {
    let creds = h.credentials(a.name.as_deref(), &a.policy)?;
    let prefix = h
        .prefix()?
        .ok_or_else(|| anyhow!("no IBE public key (run `tacit discover id use-prefix-key`)"))?;
    ensure!(a.refresh >= 10, "--refresh must be at least 10 seconds");
    let limits = a.serve_limits.apply(service::default_limits())?;
    let (name, policy) = (creds.blessing.unverified_name(), creds.policy.clone());
    let reply = a.reply.clone();
    let mut builder = Advertiser::builder(creds, prefix)
        .respond(move |_who: &str, _req: &[u8]| reply.clone().into_bytes())
        .allow_sigma(a.allow_sigma)
        .limits(limits)
        .refresh(Duration::from_secs(a.refresh))
        .service_type(a.service.clone())
        .pointer(a.pointer)
        // Revocation lists imported into the store while the service runs
        // (`discover id refresh`, `id import-revocations`) take effect within seconds.
        .revocations_from_store(&h.path)
        .on_event(|e| match e {
            AdvertiserEvent::Connection(ServerEvent::Authenticated { handshake, client }) => {
                println!("{handshake}: {client}")
            }
            AdvertiserEvent::Connection(ServerEvent::Refused(why)) => println!("refused a connection: {why}"),
            AdvertiserEvent::Connection(ServerEvent::Admission(e)) => eprintln!("tacit discover advertise: {e}"),
            AdvertiserEvent::Advertised {
                fullname,
                bytes,
                via_pointer,
                valid_secs,
            } => println!(
                "advertised {fullname} ({bytes} bytes, {}), valid {valid_secs} s",
                if via_pointer { "via pointer" } else { "inline in TXT" },
            ),
            AdvertiserEvent::ReachNote(note) | AdvertiserEvent::NotAdvertised(note) => {
                eprintln!("tacit discover advertise: {note}")
            }
            AdvertiserEvent::AdvertMade { bytes } => println!("advertisement made ({bytes} bytes); mDNS is off"),
        });
    if let Some(scope) = a.mdns.scope() {
        builder = builder.mdns(scope);
    }
    let advertiser = builder
        .bind(&a.listen)
        .await
        .with_context(|| format!("listening on {}", a.listen))?;
    println!(
        "serving private handshakes on {} as {name} for {policy}",
        advertiser.local_addr()
    );
    match a.for_secs {
        Some(s) => advertiser.serve_for(Duration::from_secs(s)).await?,
        None => advertiser.serve().await?,
    }
    Ok(())
}

async fn browse(a: BrowseArgs, h: Home) -> Result<()> {
    let creds = h.credentials(a.name.as_deref(), &a.policy)?;
    let prefix = h
        .prefix()?
        .ok_or_else(|| anyhow!("no prefix key: this identity cannot read private advertisements"))?;
    let scope = a
        .mdns
        .scope()
        .ok_or_else(|| anyhow!("browse needs mDNS (--mdns all or loopback)"))?;
    let browser = Browser::builder(creds)
        .prefix(prefix)
        .service_type(a.service.clone())
        .scope(scope)
        .wait(Duration::from_secs(a.wait))
        // What was left out is counted and said (issue 28), never dropped silently.
        .on_event(|e| match e {
            BrowseEvent::Malformed { count, first, why } => {
                eprintln!("tacit discover browse: left out {count} malformed advert(s) (first: {first}: {why})")
            }
            BrowseEvent::Unfetched { count, first, why } => eprintln!(
                "tacit discover browse: left out {count} advert(s) that could not be fetched (first: {first}: {why})"
            ),
            BrowseEvent::OverLimit { count, limit } => {
                eprintln!("tacit discover browse: left out {count} advert(s) past the first {limit}")
            }
        })
        .build();
    let found = browser.browse().await?;
    let hidden = found.unreadable;
    let mut out = Vec::new();
    for svc in &found.services {
        let addr = svc.address.map(|a| a.to_string()).unwrap_or_default();
        let mut entry = serde_json::json!({
            "service": svc.name(),
            "address": addr,
            "expires_at": svc.expires_at(),
            "advert_bytes": svc.advert_bytes,
            "via_pointer": svc.via_pointer,
        });
        if let Some(m) = &a.message {
            match browser.zero_rtt(svc, m.as_bytes()).await {
                Ok(o) => {
                    entry["reply"] = serde_json::json!(String::from_utf8_lossy(&o.response));
                    entry["zero_rtt_ms"] = serde_json::json!(o.timings.total.as_secs_f64() * 1e3);
                }
                Err(e) => entry["error"] = serde_json::json!(e.to_string()),
            }
        }
        out.push(entry);
    }
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "services": out,
                "unreadable_adverts": hidden,
                "malformed_adverts": found.malformed,
                "unfetched_adverts": found.unfetched,
                "adverts_over_limit": found.over_limit,
            }))?
        );
        return Ok(());
    }

    if out.is_empty() {
        println!("no service visible to this identity ({hidden} advertisement(s) it cannot read)");
    }
    for e in &out {
        println!(
            "{} at {}{}",
            e["service"].as_str().unwrap_or(""),
            e["address"].as_str().unwrap_or(""),
            if e["via_pointer"].as_bool() == Some(true) {
                " (advert fetched via pointer)"
            } else {
                ""
            }
        );
        if let Some(r) = e["reply"].as_str() {
            println!(
                "  0-RTT reply: {r} ({:.2} ms)",
                e["zero_rtt_ms"].as_f64().unwrap_or(f64::NAN)
            );
        }
        if let Some(err) = e["error"].as_str() {
            println!("  0-RTT failed: {err}");
        }
    }
    if hidden > 0 && !out.is_empty() {
        println!("({hidden} other advertisement(s) not readable by this identity)");
    }
    Ok(())
}

async fn connect(a: ConnectArgs, h: Home) -> Result<()> {
    let creds = h.credentials(a.name.as_deref(), &a.policy)?;
    let prefix = h.prefix()?;
    let mode = if a.sigma { Mode::Sigma } else { Mode::Private };
    if mode == Mode::Private {
        ensure!(
            prefix.as_ref().and_then(|p| p.key.as_ref()).is_some(),
            "private mutual authentication needs a prefix key (`tacit discover id use-prefix-key`), or use --sigma"
        );
    }
    let mut browser = Browser::builder(creds);
    if let Some(p) = prefix {
        browser = browser.prefix(p);
    }
    let o = browser.build().connect(&a.addr, mode, a.message.as_bytes()).await?;
    println!(
        "authenticated {} ({}) in {:.2} ms",
        o.session.peer.name(),
        if a.sigma {
            "SIGMA-I"
        } else {
            "private mutual authentication"
        },
        o.timings.total.as_secs_f64() * 1e3
    );
    println!("reply: {}", String::from_utf8_lossy(&o.response));
    Ok(())
}
