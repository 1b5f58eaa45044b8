//! `tacit psi serve | query`: the PSI sender and receiver as two processes over TCP.

use crate::util::channel::{parse_fingerprint, tls_identity};
use crate::util::{read_set, sanitize, store_path};
use anyhow::{Result, bail};
use clap::{Args, Subcommand, ValueEnum};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use tacit_crypto::GroupId;
use tacit_psi::service::Event;
use tacit_psi::{
    Client, PsiParams, QueryResult, Reuse, Security, Server, ServerBuilder, ServerEvent, ServiceError, TLS_NAME,
};

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
            let mut builder = Server::builder()
                .params(params)
                .max_clients(max_clients)
                .max_per_address(max_per_address)
                .deadline(secs("--deadline", deadline)?)
                .timeout(secs("--timeout", timeout)?)
                .ahead(ahead)
                .reuse(match reuse {
                    ReuseArg::Fresh => Reuse::FreshPerSession,
                    ReuseArg::Epoch => Reuse::WithinEpoch,
                });
            if let Some(n) = sessions {
                builder = builder.sessions(n);
            }
            let mut st = if from_contacts {
                // only read: a missing store is an error, not a new empty one
                let st = crate::util::open_store_existing(store, "tacit contacts import FILE.vcf")?;
                anyhow::ensure!(
                    !st.address_book()?.is_empty(),
                    "the address book in the store is empty; import contacts with `tacit contacts import FILE.vcf`"
                );
                Some(st)
            } else if tls {
                Some(crate::util::open_store(&store_path(store)?)?)
            } else {
                None
            };
            let elements = match set {
                Some(path) => Some(read_set(&path, params.max_sender as usize, "--max-sender")?),
                None if from_contacts => None,
                None => bail!("give --set FILE or --from-contacts"),
            };
            builder = match (tls, st.as_mut()) {
                (true, Some(st)) => builder.tls(tls_identity(st, TLS_PURPOSE, TLS_NAME)?),
                _ => builder.plain_tcp(),
            };
            builder = match (elements, st) {
                (Some(elements), _) => builder.set(elements),
                (None, Some(st)) => builder.address_book(st),
                (None, None) => bail!("give --set FILE or --from-contacts"),
            };
            let threads = threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()));
            anyhow::ensure!((1..=256).contains(&threads), "--threads must be 1..=256");
            let _ = rayon::ThreadPoolBuilder::new().num_threads(threads).build_global();
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(threads)
                .enable_all()
                .build()?;
            rt.block_on(crate::util::shutdown::serving(serve(
                builder,
                listen,
                max_clients,
                max_per_address,
            )))
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
            let builder = Client::builder().params(params).deadline(secs("--deadline", deadline)?);
            let builder = match (pin, tofu) {
                (Some(p), _) => builder.pin(parse_fingerprint(&p)?),
                (None, true) => builder.tofu(crate::util::open_store(&store_path(store)?)?),
                (None, false) => builder.plain_tcp(),
            };
            let mut client = builder.build()?;
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            let out = rt.block_on(client.query(&connect, &elements)).map_err(|e| match e {
                e @ ServiceError::KeyChanged { .. } => anyhow::anyhow!(
                    "{e}; if the server changed its key on purpose, run `tacit psi forget --connect {connect}`"
                ),
                e => e.into(),
            })?;
            if let Some(fp) = out.recorded_now {
                eprintln!(
                    "tacit psi query: recorded the key of {connect} on first use: {}",
                    hex::encode(fp)
                );
            }
            print_found(&params, &out, json)
        }
        PsiCommand::Forget { connect } => {
            let mut st = crate::util::open_store_existing(store, "tacit psi query --tofu")?;
            if st.forget_peer(&tacit_psi::known_peer_name(&connect))? {
                println!("forgot the key recorded for {connect}");
                Ok(())
            } else {
                bail!("no key is recorded for {connect}")
            }
        }
    }
}

/// The store's purpose of the PSI server's TLS key.
const TLS_PURPOSE: &str = "psi-tls-identity";

/// The precomputation's progress: a bar on a terminal, lines otherwise, from 2000
/// elements on (issue 28, item 10).
pub fn precompute_progress(n: usize, who: &str) -> crate::util::progress::Progress {
    use crate::util::progress::{Progress, Unit};
    Progress::new(n as u64, "precomputing", who, Unit::Items, 2000)
}

/// Binds, precomputes and serves, printing what the server reports.
async fn serve(builder: ServerBuilder, listen: String, max_clients: usize, max_per_address: usize) -> Result<()> {
    // The bar of the first precomputation (the only one that reports progress).
    let bar: Mutex<(Option<crate::util::progress::Progress>, u64)> = Mutex::new((None, 0));
    let served = AtomicU64::new(0);
    let events = move |e: ServerEvent| match e {
        // Issue 28, item 10: say what the wait before "ready" is for (the address is
        // bound, so early clients queue; the first is answered once this is done).
        ServerEvent::Precomputing { elements, distinct } => eprintln!(
            "tacit psi serve: precomputing the answer to {elements} elements ({distinct} real, the rest padding) before accepting sessions…"
        ),
        ServerEvent::WaitingForStore { store, pid } => eprintln!(
            "tacit: the store {} is in use by PID {pid} (its PSI precomputation); waiting",
            store.display()
        ),
        ServerEvent::Progress(p) => {
            // Reports come from many threads: count only what is new.
            if let Ok(mut guard) = bar.lock()
                && p.done > guard.1
            {
                let (b, seen) = &mut *guard;
                let b = b.get_or_insert_with(|| precompute_progress(p.total as usize, "tacit psi serve"));
                b.inc(p.done - *seen);
                if p.done >= p.total {
                    b.finish();
                }
                *seen = p.done;
            }
        }
        ServerEvent::ReusedStored {
            key_epoch,
            contacts_version,
        } => eprintln!(
            "tacit psi serve: reusing the stored precomputation (key epoch {key_epoch}, address book version {contacts_version})"
        ),
        ServerEvent::Stored {
            key_epoch,
            contacts_version,
        } => eprintln!(
            "tacit psi serve: precomputed and stored (key epoch {key_epoch}, address book version {contacts_version})"
        ),
        ServerEvent::Session(Event::Answered { peer, bytes, elapsed }) => {
            let n = served.fetch_add(1, Ordering::Relaxed) + 1;
            eprintln!(
                "tacit psi serve: session {n} from {peer}: answered ({} B in, {} B out, {:.1} ms)",
                bytes.0,
                bytes.1,
                elapsed.as_secs_f64() * 1e3
            );
        }
        ServerEvent::Session(Event::Failed { peer, why }) => {
            eprintln!("tacit psi serve: session from {peer}: {}", sanitize(&why))
        }
        ServerEvent::Session(Event::Busy { peer }) => eprintln!(
            "tacit psi serve: refused {peer}: {max_clients} sessions in progress, or {max_per_address} from its address"
        ),
        ServerEvent::Session(Event::Admission(what)) => eprintln!("tacit psi serve: {what}"),
    };
    let server = builder.on_event(events).bind(listen.as_str()).await.map_err(|e| match e {
        ServiceError::SetTooLarge { distinct, max } => anyhow::anyhow!(
            "the set has {distinct} distinct elements; the limit is {max} (raise --max-sender; the receiver must use the same value)"
        ),
        e => e.into(),
    })?;
    let params = server.params();
    eprintln!(
        "tacit psi serve: ready after {:.1} s: {params}; {} elements padded to {}; listening on {}",
        server.precompute_time().as_secs_f64(),
        server.distinct(),
        params.max_sender,
        server.local_addr()
    );
    match server.fingerprint() {
        Some(fp) => {
            let fp = hex::encode(fp);
            eprintln!("tacit psi serve: TLS 1.3; server key fingerprint {fp} (clients: --pin {fp}, or --tofu)");
        }
        None => eprintln!("tacit psi serve: plain TCP (no --tls): responses are not protected on the path"),
    }
    Ok(server.serve().await?)
}

/// Prints a query's result: JSON, or the common elements one per line.
fn print_found(params: &PsiParams, out: &QueryResult, json: bool) -> Result<()> {
    let items = out.strings();
    if json {
        let v = serde_json::json!({
            "intersection": items,
            "group": params.group.name(),
            "security": params.security.name(),
            "max_receiver": params.max_receiver,
            "max_sender": params.max_sender,
            "lambda": params.lambda,
            "request_bytes": out.request_bytes,
            "response_bytes": out.response_bytes,
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
