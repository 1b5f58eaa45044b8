//! `tacit psi serve | query`: the PSI sender and receiver as two processes over TCP.

use crate::util::channel::{Trust, client_config, parse_fingerprint, tls_identity};
use crate::util::{read_set, sanitize, store_path};
use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand, ValueEnum};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tacit_crypto::rng::SecureRng;
use tacit_crypto::{GroupId, P256, PrimeGroup, Ristretto255};
use tacit_net::{FramedListener, NetConfig};
use tacit_psi::service::{Event, QueryError, SenderPool, ServiceConfig, Supply};
use tacit_psi::{PsiParams, ReceiverPrecomputation, Reuse, Security, Sender, SenderKey, SenderPrecomputation};
use tacit_store::Store;

/// Protocol options shared by both roles (both sides must use the same values).
#[derive(Debug, Clone, Args)]
pub struct ProtoArgs {
    /// The group: ristretto255 (default) or p256 (the PrivateDrop paper's curve).
    #[arg(long, default_value = "ristretto255", value_parser = parse_group)]
    pub group: GroupId,
    /// Run the semi-honest protocol (plain OPRF, no proof) instead of the
    /// malicious-secure one.
    #[arg(long)]
    pub semi_honest: bool,
    /// m: the receiver's set is padded to exactly this many elements.
    #[arg(long, default_value_t = 10, value_name = "M")]
    pub max_receiver: u32,
    /// n: the sender's set is padded to exactly this many elements.
    #[arg(long, default_value_t = 10_000, value_name = "N")]
    pub max_sender: u32,
    /// λ: statistical security parameter (false matches have probability ≈ 2^-λ).
    #[arg(long, default_value_t = 40)]
    pub lambda: u16,
}

fn parse_group(s: &str) -> Result<GroupId, String> {
    s.parse()
}

impl ProtoArgs {
    pub fn params(&self) -> Result<PsiParams> {
        let p = PsiParams {
            group: self.group,
            security: if self.semi_honest {
                Security::SemiHonest
            } else {
                Security::Malicious
            },
            max_receiver: self.max_receiver,
            max_sender: self.max_sender,
            lambda: self.lambda,
        };
        p.validate()?;
        Ok(p)
    }
}

/// When the sender makes a new key and precomputation.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ReuseArg {
    /// A new key and precomputation for every session (nothing links two sessions).
    Fresh,
    /// One key and precomputation for all sessions of this process (faster; a peer
    /// querying twice learns how the set changed in between, see docs/psi.md).
    Epoch,
}

/// PSI subcommands.
#[derive(Debug, Subcommand)]
pub enum PsiCommand {
    /// Be the PSI sender: answer queries against the set in FILE; learns nothing.
    #[command(after_help = "\
Example:
  tacit psi serve --set book.txt --listen 127.0.0.1:7878
  tacit psi serve --set book.txt --listen 127.0.0.1:0 --sessions 1 --reuse epoch
  tacit psi serve --from-contacts --reuse epoch --listen 127.0.0.1:7878
  tacit psi serve --set book.txt --listen 0.0.0.0:7878 --tls    # prints the key to pin

Sessions run concurrently (up to --max-clients; more are refused with a one-line
reason), each under --deadline seconds. Without --tls the exchange is plain TCP:
anyone on the path sees the sizes and can replace the whole response with one computed
over another set (the receiver then learns a wrong intersection). With --tls it runs
over TLS 1.3 with this server's key, which clients pin (--pin) or record on first use
(--tofu), and the response's proof is bound to the TLS session.")]
    Serve {
        /// The sender's set: one element per line.
        #[arg(
            long,
            value_name = "FILE",
            required_unless_present = "from_contacts",
            conflicts_with = "from_contacts"
        )]
        set: Option<PathBuf>,
        /// Use the address book in the store (`tacit contacts import`) as the set. With
        /// `--reuse epoch` the key and precomputation are kept in the store and reused
        /// until the address book changes.
        #[arg(long)]
        from_contacts: bool,
        /// Address to listen on (port 0 picks a free port; the address is printed).
        #[arg(long, value_name = "ADDR")]
        listen: String,
        /// Exit after answering this many sessions: a number (0: exit as soon as the
        /// set is ready, after any precomputation) or `forever` (the default).
        #[arg(long, value_name = "N", value_parser = crate::util::parse_sessions)]
        sessions: Option<u64>,
        /// Key and precomputation policy.
        #[arg(long, value_enum, default_value = "fresh")]
        reuse: ReuseArg,
        /// Most sessions in progress at once; further clients are refused at once
        /// (a client from a less busy address takes the slot of the busiest
        /// address's oldest connection instead).
        #[arg(long, default_value_t = 64, value_name = "K")]
        max_clients: usize,
        /// Most sessions one address (IPv4 address or IPv6 /64) holds at once.
        #[arg(long, default_value_t = tacit_psi::service::DEFAULT_MAX_PER_ADDRESS, value_name = "K")]
        max_per_address: usize,
        /// Seconds a whole session may take.
        #[arg(long, default_value_t = 30.0, value_name = "SECS")]
        deadline: f64,
        /// Seconds to wait for each message.
        #[arg(long, default_value_t = 10.0, value_name = "SECS")]
        timeout: f64,
        /// With --reuse fresh: precomputations kept ready ahead of the sessions.
        #[arg(long, default_value_t = 2, value_name = "N")]
        ahead: usize,
        /// Serve over TLS 1.3 with this store's PSI server key (made on first use;
        /// its fingerprint is printed for clients to pin).
        #[arg(long)]
        tls: bool,
        /// Threads for sessions and precomputation (default: every core).
        #[arg(long, value_name = "N")]
        threads: Option<usize>,
        #[command(flatten)]
        proto: ProtoArgs,
    },
    /// Be the PSI receiver: learn which elements of FILE the server also holds.
    #[command(after_help = "\
Prints the common elements, one per line, in the order of FILE (none: stdout stays
empty and stderr says \"no common elements\"). A set FILE with more than --max-receiver
distinct elements is refused while it is read.
Without --pin or --tofu the query runs over plain TCP, which protects nothing against
someone on the path (see `tacit psi serve --help`).
Example:
  tacit psi query --set ids.txt --connect 127.0.0.1:7878
  tacit psi query --set ids.txt --connect 127.0.0.1:7878 --json
  tacit psi query --set ids.txt --connect host:7878 --pin 3f1c…   # TLS, key pinned
  tacit psi query --set ids.txt --connect host:7878 --tofu        # TLS, key recorded on first use")]
    Query {
        /// The receiver's set: one element per line.
        #[arg(long, value_name = "FILE")]
        set: PathBuf,
        /// The server's address.
        #[arg(long, value_name = "ADDR")]
        connect: String,
        /// Print a JSON object instead of lines.
        #[arg(long)]
        json: bool,
        /// Run over TLS and accept only the server key with this SHA-256 fingerprint
        /// (hex, as `tacit psi serve --tls` prints it).
        #[arg(long, value_name = "SHA256", conflicts_with = "tofu")]
        pin: Option<String>,
        /// Run over TLS and trust the server's key on first use: it is recorded in the
        /// store, and a later different key is refused (as SSH does).
        #[arg(long)]
        tofu: bool,
        /// Seconds the whole query may take.
        #[arg(long, default_value_t = 60.0, value_name = "SECS")]
        deadline: f64,
        #[command(flatten)]
        proto: ProtoArgs,
    },
    /// Forget the server key recorded on first use for ADDR (after the server changed
    /// its key on purpose).
    #[command(after_help = "Example:\n  tacit psi forget --connect host:7878")]
    Forget {
        /// The server's address, as given to `tacit psi query --connect`.
        #[arg(long, value_name = "ADDR")]
        connect: String,
    },
}

/// Options of `psi serve` past the set and the protocol.
struct ServeOpts {
    listen: String,
    sessions: Option<u64>,
    reuse: ReuseArg,
    max_clients: usize,
    max_per_address: usize,
    net: NetConfig,
    ahead: usize,
    tls: Option<tacit_net::tls::SelfSigned>,
}

fn secs(what: &str, s: f64) -> Result<std::time::Duration> {
    anyhow::ensure!(
        s.is_finite() && s > 0.0 && s <= 86_400.0,
        "{what} must be between 0 and 86400 seconds"
    );
    Ok(std::time::Duration::from_secs_f64(s))
}

pub fn run(cmd: PsiCommand, store: Option<&Path>) -> Result<()> {
    match cmd {
        PsiCommand::Serve {
            set,
            from_contacts,
            listen,
            sessions,
            reuse,
            max_clients,
            max_per_address,
            deadline,
            timeout,
            ahead,
            tls,
            threads,
            proto,
        } => {
            let params = proto.params()?;
            anyhow::ensure!(max_clients >= 1, "--max-clients must be at least 1");
            anyhow::ensure!(max_per_address >= 1, "--max-per-address must be at least 1");
            let net = NetConfig::default()
                .with_max_frame_at_least(params.max_message_len())
                .with_deadline(secs("--deadline", deadline)?)
                .with_read_timeout(secs("--timeout", timeout)?);
            let needs_store = from_contacts || tls;
            let mut st = if from_contacts {
                // only read: a missing store is an error, not a new empty one
                Some(crate::util::open_store_existing(
                    store,
                    "tacit contacts import FILE.vcf",
                )?)
            } else if needs_store {
                let path = store_path(store)?;
                Some(crate::util::open_store(&path)?)
            } else {
                None
            };
            let elements = match (set, st.as_ref()) {
                (Some(path), _) => read_set(&path, params.max_sender as usize, "--max-sender")?,
                (None, Some(st)) => {
                    let book = st.address_book()?;
                    anyhow::ensure!(
                        !book.is_empty(),
                        "the address book in the store is empty; import contacts with `tacit contacts import FILE.vcf`"
                    );
                    book
                }
                (None, None) => bail!("give --set FILE or --from-contacts"),
            };
            let tls = match (tls, st.as_mut()) {
                (true, Some(st)) => Some(server_identity(st)?),
                _ => None,
            };
            let epoch_store = if from_contacts { st } else { None };
            let threads = threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()));
            anyhow::ensure!((1..=256).contains(&threads), "--threads must be 1..=256");
            let _ = rayon::ThreadPoolBuilder::new().num_threads(threads).build_global();
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(threads)
                .enable_all()
                .build()?;
            let opts = ServeOpts {
                listen,
                sessions,
                reuse,
                max_clients,
                max_per_address,
                net,
                ahead,
                tls,
            };
            match params.group {
                GroupId::Ristretto255 => rt.block_on(crate::util::shutdown::serving(serve::<Ristretto255>(
                    params,
                    elements,
                    epoch_store,
                    opts,
                ))),
                GroupId::P256 => rt.block_on(crate::util::shutdown::serving(serve::<P256>(
                    params,
                    elements,
                    epoch_store,
                    opts,
                ))),
            }
        }
        PsiCommand::Query {
            set,
            connect,
            json,
            pin,
            tofu,
            deadline,
            proto,
        } => {
            let params = proto.params()?;
            let elements = read_set(&set, params.max_receiver as usize, "--max-receiver")?;
            let net = NetConfig::default()
                .with_max_frame_at_least(params.max_message_len())
                .with_deadline(secs("--deadline", deadline)?);
            let trust = match (pin, tofu) {
                (Some(p), _) => Trust::Pinned(parse_fingerprint(&p)?),
                (None, true) => Trust::FirstUse {
                    store: crate::util::open_store(&store_path(store)?)?,
                    name: known_name(&connect),
                },
                (None, false) => Trust::Plain,
            };
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            match params.group {
                GroupId::Ristretto255 => {
                    rt.block_on(query::<Ristretto255>(params, elements, &connect, json, trust, net))
                }
                GroupId::P256 => rt.block_on(query::<P256>(params, elements, &connect, json, trust, net)),
            }
        }
        PsiCommand::Forget { connect } => {
            let mut st = crate::util::open_store_existing(store, "tacit psi query --tofu")?;
            if st.forget_peer(&known_name(&connect))? {
                println!("forgot the key recorded for {connect}");
                Ok(())
            } else {
                bail!("no key is recorded for {connect}")
            }
        }
    }
}

/// The store's name for the key of the PSI server at `addr`.
fn known_name(addr: &str) -> String {
    format!("psi/{addr}")
}

const TLS_PURPOSE: &str = "psi-tls-identity";
/// The TLS server name of a PSI service (certificates are pinned, not named).
const TLS_NAME: &str = "tacit-psi.invalid";

/// This store's PSI server TLS identity, made and stored on first use.
fn server_identity(st: &mut Store) -> Result<tacit_net::tls::SelfSigned> {
    tls_identity(st, TLS_PURPOSE, TLS_NAME)
}

/// The precomputation's progress: a bar on a terminal, lines otherwise, from 2000
/// elements on (issue 28, item 10).
fn precompute_progress(n: usize, who: &str) -> crate::util::progress::Progress {
    use crate::util::progress::{Progress, Unit};
    Progress::new(n as u64, "precomputing", who, Unit::Items, 2000)
}

/// Makes a key and precomputation for `epoch`, with a progress bar for large sets.
pub fn make_sender<G: PrimeGroup>(
    params: &PsiParams,
    set: &[String],
    epoch: u64,
    reuse: Reuse,
    rng: &mut SecureRng,
    who: &str,
) -> Result<Sender<G>> {
    let key = SenderKey::<G>::generate(rng, epoch);
    let pb = precompute_progress(set.len(), who);
    let pre = SenderPrecomputation::compute_with_progress(params, &key, set, reuse, rng, &|k| pb.inc(k as u64))?;
    pb.finish();
    Ok(Sender::new(params, key, pre)?)
}

/// The key and precomputation for `--reuse epoch --from-contacts`: loaded from the
/// store when one was made for the current address-book version, else made and stored.
fn stored_epoch_sender<G: PrimeGroup>(
    st: &mut Store,
    params: &PsiParams,
    set: &[String],
    rng: &mut SecureRng,
) -> Result<Sender<G>> {
    // One process at a time makes (or loads) the key and precomputation: a second
    // `psi serve --reuse epoch` on this store waits for the first and reuses what it
    // stored (issue 28), instead of both computing and both storing.
    let _lock = match st.path() {
        Some(p) => Some(crate::util::store_lock(p, "psi-epoch", "its PSI precomputation")?),
        None => None,
    };
    let purpose = format!("psi-sender/{}", G::ID.name());
    let version = st.contacts_version()?;
    let key = match st.current_key(&purpose)? {
        Some(k) => SenderKey::<G>::from_bytes(&k.secret).context("stored PSI key is corrupt")?,
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
        eprintln!(
            "tacit psi serve: reusing the stored precomputation (key epoch {}, address book version {version})",
            key.epoch()
        );
        return Ok(sender);
    }
    let pb = precompute_progress(set.len(), "tacit psi serve");
    let pre =
        SenderPrecomputation::compute_with_progress(params, &key, set, Reuse::WithinEpoch, rng, &|k| pb.inc(k as u64))?;
    pb.finish();
    st.put_precomputation(&kind, key.epoch(), version, &pre.to_bytes())?;
    eprintln!(
        "tacit psi serve: precomputed and stored (key epoch {}, address book version {version})",
        key.epoch()
    );
    Ok(Sender::new(params, key, pre)?)
}

async fn serve<G: PrimeGroup>(params: PsiParams, set: Vec<String>, store: Option<Store>, o: ServeOpts) -> Result<()> {
    let distinct: std::collections::HashSet<&String> = set.iter().collect();
    if distinct.len() > params.max_sender as usize {
        bail!(
            "the set has {} distinct elements; the limit is {} (raise --max-sender; the receiver must use the same value)",
            distinct.len(),
            params.max_sender
        );
    }
    let n_distinct = distinct.len();
    let mut rng = SecureRng::from_os();
    let listener = FramedListener::bind(o.listen.as_str(), &o.net)
        .await
        .with_context(|| format!("cannot listen on {}", o.listen))?;
    // Issue 28, item 10: say what the wait before "ready" is for (the address is
    // bound, so early clients queue; the first is answered once this is done).
    eprintln!(
        "tacit psi serve: precomputing the answer to {} elements ({n_distinct} real, the rest padding) before accepting sessions…",
        params.max_sender
    );
    let started = std::time::Instant::now();
    let supply = Arc::new(match (store, o.reuse) {
        (Some(mut st), ReuseArg::Epoch) => {
            Supply::Epoch(Arc::new(stored_epoch_sender::<G>(&mut st, &params, &set, &mut rng)?))
        }
        (None, ReuseArg::Epoch) => Supply::Epoch(Arc::new(make_sender::<G>(
            &params,
            &set,
            1,
            Reuse::WithinEpoch,
            &mut rng,
            "tacit psi serve",
        )?)),
        (_, ReuseArg::Fresh) => {
            // The first one with a progress bar, the rest in the background.
            let first = make_sender::<G>(&params, &set, 1, Reuse::FreshPerSession, &mut rng, "tacit psi serve")?;
            let first = std::sync::Mutex::new(Some(first));
            let epoch = std::sync::atomic::AtomicU64::new(1);
            Supply::Fresh(SenderPool::start(o.ahead, move || {
                if let Some(s) = first.lock().ok().and_then(|mut f| f.take()) {
                    return Ok(s);
                }
                let e = epoch.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                let mut rng = SecureRng::from_os();
                let key = SenderKey::<G>::generate(&mut rng, e);
                let pre = SenderPrecomputation::compute(&params, &key, &set, Reuse::FreshPerSession, &mut rng)?;
                Sender::new(&params, key, pre)
            }))
        }
    });
    eprintln!(
        "tacit psi serve: ready after {:.1} s: {params}; {n_distinct} elements padded to {}; listening on {}",
        started.elapsed().as_secs_f64(),
        params.max_sender,
        listener.local_addr()?
    );
    let tls = match &o.tls {
        Some(id) => {
            let fp = hex::encode(id.fingerprint()?);
            eprintln!("tacit psi serve: TLS 1.3; server key fingerprint {fp} (clients: --pin {fp}, or --tofu)");
            Some(id.server_config()?)
        }
        None => {
            eprintln!("tacit psi serve: plain TCP (no --tls): responses are not protected on the path");
            None
        }
    };
    let served = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let s2 = served.clone();
    let events: Arc<dyn Fn(Event) + Send + Sync> = Arc::new(move |e| match e {
        Event::Answered { peer, bytes, elapsed } => {
            let n = s2.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            eprintln!(
                "tacit psi serve: session {n} from {peer}: answered ({} B in, {} B out, {:.1} ms)",
                bytes.0,
                bytes.1,
                elapsed.as_secs_f64() * 1e3
            );
        }
        Event::Failed { peer, why } => eprintln!("tacit psi serve: session from {peer}: {}", sanitize(&why)),
        Event::Busy { peer } => eprintln!(
            "tacit psi serve: refused {peer}: {} sessions in progress, or {} from its address",
            o.max_clients, o.max_per_address
        ),
        Event::Admission(what) => eprintln!("tacit psi serve: {what}"),
    });
    let cfg = ServiceConfig {
        max_clients: o.max_clients,
        max_per_address: o.max_per_address,
        net: o.net,
        tls,
    };
    tacit_psi::service::serve(listener, supply, cfg, o.sessions, events).await?;
    Ok(())
}

async fn query<G: PrimeGroup>(
    params: PsiParams,
    set: Vec<String>,
    connect: &str,
    json: bool,
    mut trust: Trust,
    net: NetConfig,
) -> Result<()> {
    let mut rng = SecureRng::from_os();
    let pre = ReceiverPrecomputation::<G>::compute(&params, &set, &mut rng)?;
    let recorded = trust.recorded()?;
    let client = client_config(&trust, None)?;
    let out = tacit_psi::service::query(connect, &pre, client.map(|c| (c, TLS_NAME)), &net)
        .await
        .map_err(|e| match (&e, recorded) {
            (QueryError::Net(tacit_net::Error::Tls(_)), Some(_)) => anyhow::anyhow!(
                "{e} — the key of {connect} differs from the one recorded on first use; if the server changed \
                 its key on purpose, run `tacit psi forget --connect {connect}`"
            ),
            _ => anyhow::Error::from(e).context(format!("query to {connect}")),
        })?;
    if let Some(fp) = trust.record(out.server_certificate.as_deref())? {
        eprintln!(
            "tacit psi query: recorded the key of {connect} on first use: {}",
            hex::encode(fp)
        );
    }
    let items: Vec<String> = out
        .intersection
        .items()
        .iter()
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .collect();
    if json {
        let v = serde_json::json!({
            "intersection": items,
            "group": params.group.name(),
            "security": params.security.name(),
            "max_receiver": params.max_receiver,
            "max_sender": params.max_sender,
            "lambda": params.lambda,
            "request_bytes": out.bytes.0,
            "response_bytes": out.bytes.1,
            "tls": out.tls,
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else if items.is_empty() {
        // stdout stays empty for scripts; a person sees why there is nothing
        eprintln!("tacit psi query: no common elements");
    } else {
        for i in items {
            println!("{i}");
        }
    }
    Ok(())
}
