//! `tacit psi serve | query`: the PSI sender and receiver as two processes over TCP.

use crate::util::{progress, read_set, store_path};
use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand, ValueEnum};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tacit_crypto::rng::SecureRng;
use tacit_crypto::{GroupId, P256, PrimeGroup, Ristretto255};
use tacit_net::{FramedConn, FramedListener, NetConfig};
use tacit_psi::{
    PsiParams, Receiver, ReceiverPrecomputation, Reuse, Security, Sender, SenderKey, SenderPrecomputation,
};
use tacit_store::Store;
use tacit_wire::{Encode, ErrorMessage};

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
  tacit psi serve --from-contacts --reuse epoch --listen 127.0.0.1:7878")]
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
        /// Exit after answering this many sessions (default: serve forever).
        #[arg(long, value_name = "N")]
        sessions: Option<u64>,
        /// Key and precomputation policy.
        #[arg(long, value_enum, default_value = "fresh")]
        reuse: ReuseArg,
        #[command(flatten)]
        proto: ProtoArgs,
    },
    /// Be the PSI receiver: learn which elements of FILE the server also holds.
    #[command(after_help = "\
Prints the common elements, one per line, in the order of FILE.
Example:
  tacit psi query --set ids.txt --connect 127.0.0.1:7878
  tacit psi query --set ids.txt --connect 127.0.0.1:7878 --json")]
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
        #[command(flatten)]
        proto: ProtoArgs,
    },
}

pub fn run(cmd: PsiCommand, store: Option<&Path>) -> Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    match cmd {
        PsiCommand::Serve {
            set,
            from_contacts,
            listen,
            sessions,
            reuse,
            proto,
        } => {
            let params = proto.params()?;
            let (elements, store) = match (set, from_contacts) {
                (Some(path), _) => (read_set(&path)?, None),
                (None, _) => {
                    let path = store_path(store)?;
                    let st = Store::open(&path).with_context(|| format!("cannot open store {}", path.display()))?;
                    let book = st.address_book()?;
                    anyhow::ensure!(
                        !book.is_empty(),
                        "the address book in {} is empty; import contacts with `tacit contacts import FILE.vcf`",
                        path.display()
                    );
                    (book, Some(st))
                }
            };
            match params.group {
                GroupId::Ristretto255 => {
                    rt.block_on(serve::<Ristretto255>(params, elements, store, &listen, sessions, reuse))
                }
                GroupId::P256 => rt.block_on(serve::<P256>(params, elements, store, &listen, sessions, reuse)),
            }
        }
        PsiCommand::Query {
            set,
            connect,
            json,
            proto,
        } => {
            let params = proto.params()?;
            let elements = read_set(&set)?;
            match params.group {
                GroupId::Ristretto255 => rt.block_on(query::<Ristretto255>(params, elements, &connect, json)),
                GroupId::P256 => rt.block_on(query::<P256>(params, elements, &connect, json)),
            }
        }
    }
}

/// Makes a key and precomputation for `epoch`, with a progress bar for large sets.
pub fn make_sender<G: PrimeGroup>(
    params: &PsiParams,
    set: &[String],
    epoch: u64,
    reuse: Reuse,
    rng: &mut SecureRng,
) -> Result<Sender<G>> {
    let key = SenderKey::<G>::generate(rng, epoch);
    let pb = progress(set.len() as u64, "precomputing");
    let pre = SenderPrecomputation::compute_with_progress(params, &key, set, reuse, rng, &|k| pb.inc(k as u64))?;
    pb.finish_and_clear();
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
    if let Some(blob) = st.get_precomputation(&kind, key.epoch(), version)? {
        if let Ok(pre) = SenderPrecomputation::<G>::from_bytes(&blob) {
            if let Ok(sender) = Sender::new(params, key.clone(), pre) {
                eprintln!(
                    "tacit psi serve: reusing the stored precomputation (key epoch {}, address book version {version})",
                    key.epoch()
                );
                return Ok(sender);
            }
        }
    }
    let pb = progress(set.len() as u64, "precomputing");
    let pre =
        SenderPrecomputation::compute_with_progress(params, &key, set, Reuse::WithinEpoch, rng, &|k| pb.inc(k as u64))?;
    pb.finish_and_clear();
    st.put_precomputation(&kind, key.epoch(), version, &pre.to_bytes())?;
    eprintln!(
        "tacit psi serve: precomputed and stored (key epoch {}, address book version {version})",
        key.epoch()
    );
    Ok(Sender::new(params, key, pre)?)
}

async fn serve<G: PrimeGroup>(
    params: PsiParams,
    set: Vec<String>,
    store: Option<Store>,
    listen: &str,
    sessions: Option<u64>,
    reuse: ReuseArg,
) -> Result<()> {
    let distinct: std::collections::HashSet<&String> = set.iter().collect();
    if distinct.len() > params.max_sender as usize {
        bail!(
            "the set has {} distinct elements; the limit is {} (raise --max-sender; the receiver must use the same value)",
            distinct.len(),
            params.max_sender
        );
    }
    let mut rng = SecureRng::from_os();
    let cfg = NetConfig::default();
    let listener = FramedListener::bind(listen, &cfg)
        .await
        .with_context(|| format!("cannot listen on {listen}"))?;
    let policy = match reuse {
        ReuseArg::Fresh => Reuse::FreshPerSession,
        ReuseArg::Epoch => Reuse::WithinEpoch,
    };
    let mut epoch = 1u64;
    let mut sender = Arc::new(match (store, policy) {
        (Some(mut st), Reuse::WithinEpoch) => stored_epoch_sender::<G>(&mut st, &params, &set, &mut rng)?,
        _ => make_sender::<G>(&params, &set, epoch, policy, &mut rng)?,
    });
    eprintln!(
        "tacit psi serve: {params}; {} elements padded to {}; listening on {}",
        distinct.len(),
        params.max_sender,
        listener.local_addr()?
    );
    let mut served = 0u64;
    while sessions.is_none_or(|max| served < max) {
        if sender.is_used() && policy == Reuse::FreshPerSession {
            epoch += 1;
            sender = Arc::new(make_sender::<G>(&params, &set, epoch, policy, &mut rng)?);
        }
        let mut conn = match listener.accept().await {
            Ok(c) => c,
            Err(e) => {
                eprintln!("tacit psi serve: accept failed: {e}");
                continue;
            }
        };
        let peer = conn.peer_addr().map(|a| a.to_string()).unwrap_or_else(|_| "?".into());
        served += 1;
        let request = match conn.recv().await {
            Ok(r) => r,
            Err(e) => {
                eprintln!("tacit psi serve: session {served} from {peer}: {e}");
                continue;
            }
        };
        match sender.respond(&request, &mut rng) {
            Ok(response) => {
                if let Err(e) = conn.send(&response).await {
                    eprintln!("tacit psi serve: session {served} from {peer}: {e}");
                } else {
                    eprintln!(
                        "tacit psi serve: session {served} from {peer}: answered ({} B in, {} B out)",
                        request.len(),
                        response.len()
                    );
                }
            }
            Err(e) => {
                eprintln!("tacit psi serve: session {served} from {peer}: refused: {e}");
                let _ = conn.send(&ErrorMessage::new(e.to_string()).to_wire()).await;
            }
        }
    }
    Ok(())
}

async fn query<G: PrimeGroup>(params: PsiParams, set: Vec<String>, connect: &str, json: bool) -> Result<()> {
    let mut rng = SecureRng::from_os();
    let pre = ReceiverPrecomputation::<G>::compute(&params, &set, &mut rng)?;
    let mut conn = FramedConn::connect(connect, &NetConfig::default())
        .await
        .with_context(|| format!("cannot connect to {connect}"))?;
    let (waiting, request) = Receiver::start(&pre);
    conn.send(&request).await?;
    let response = conn.recv().await?;
    let found = waiting.on_response(&response)?;
    let items: Vec<String> = found
        .items()
        .iter()
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .collect();
    if json {
        let out = serde_json::json!({
            "intersection": items,
            "group": params.group.name(),
            "security": params.security.name(),
            "max_receiver": params.max_receiver,
            "max_sender": params.max_sender,
            "lambda": params.lambda,
            "request_bytes": request.len(),
            "response_bytes": response.len(),
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        for i in items {
            println!("{i}");
        }
    }
    Ok(())
}
