//! `tacit pros …`: Paillier keys and ciphertexts in python-paillier's JSON, FNP PSI
//! and 3PR reconciliation between two processes.

use crate::util::{read_set, sanitize};
use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand, ValueEnum};
use rand_core::SeedableRng;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tacit_crypto::rng::SecureRng;
use tacit_net::{FramedConn, FramedListener, NetConfig};
use tacit_pros::element::ElementEncoding;
use tacit_pros::fnp::{PsiParams, Sender};
use tacit_pros::paillier::{DEFAULT_KEY_BITS, MAX_KEY_BITS, PrivateKey, RnPool};
use tacit_pros::threepr::{ReconcileParams, Reconciled, Responder, Scheme, Variant};
use tacit_pros::{net, phe};

/// `tacit pros` subcommands.
#[derive(Debug, Subcommand)]
pub enum ProsCommand {
    /// Generate a Paillier key pair in python-paillier's JSON (KEY and KEY with
    /// .pub.json for the public half).
    #[command(
        after_help = "Example:\n  tacit pros keygen --out key.json            # writes key.json and key.pub.json"
    )]
    Keygen {
        /// Modulus size in bits (32–4096, even; below 2048 only to reproduce the paper).
        #[arg(long, default_value_t = DEFAULT_KEY_BITS)]
        bits: u32,
        /// Where to write the private key.
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
    },
    /// Encrypt a number (integer or decimal) under a python-paillier public key;
    /// prints {"v": …, "e": …}.
    #[command(
        after_help = "Example:\n  tacit pros encrypt --key key.pub.json 42 > a.json\n  tacit pros encrypt --key key.pub.json -- -2.5 > b.json"
    )]
    Encrypt {
        /// The public key (JSON; a private key file works too).
        #[arg(long, value_name = "FILE")]
        key: PathBuf,
        /// The number.
        #[arg(allow_hyphen_values = true)]
        value: String,
    },
    /// Decrypt a python-paillier ciphertext (JSON file); prints the number.
    #[command(after_help = "Example:\n  tacit pros decrypt --key key.json a.json")]
    Decrypt {
        /// The private key (JSON: p and q, or lambda and mu).
        #[arg(long, value_name = "FILE")]
        key: PathBuf,
        /// The ciphertext file.
        ciphertext: PathBuf,
    },
    /// Add two ciphertexts homomorphically; prints the sum's JSON.
    #[command(after_help = "Example:\n  tacit pros add --key key.pub.json a.json b.json > sum.json")]
    Add {
        /// The public key both were encrypted under.
        #[arg(long, value_name = "FILE")]
        key: PathBuf,
        /// First ciphertext file.
        a: PathBuf,
        /// Second ciphertext file.
        b: PathBuf,
    },
    /// FNP private set intersection (the querier learns the intersection).
    #[command(subcommand)]
    Psi(PsiCommand),
    /// 3PR fair reconciliation of two ordered sets (best first, one per line).
    #[command(subcommand)]
    Reconcile(ReconcileCommand),
}

/// How elements become integers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EncodingArg {
    /// Any text, hashed to 127 bits.
    Hash,
    /// The paper's 32-bit decimal integers.
    Int32,
}

impl EncodingArg {
    fn get(self) -> ElementEncoding {
        match self {
            EncodingArg::Hash => ElementEncoding::Hash127,
            EncodingArg::Int32 => ElementEncoding::Integer32,
        }
    }
}

/// FNP parameters both sides must give alike.
#[derive(Debug, Clone, Args)]
pub struct FnpArgs {
    /// The querier's set bound.
    #[arg(long, default_value_t = 100, value_name = "M")]
    pub max_chooser: u32,
    /// The server's set bound.
    #[arg(long, default_value_t = 1000, value_name = "N")]
    pub max_sender: u32,
    /// One polynomial of degree M instead of balanced-allocation bins.
    #[arg(long)]
    pub no_bucketing: bool,
    /// Element encoding.
    #[arg(long, value_enum, default_value = "hash")]
    pub encoding: EncodingArg,
}

impl FnpArgs {
    fn params(&self) -> PsiParams {
        let mut p = PsiParams::new(self.max_chooser, self.max_sender);
        p.bucketing = !self.no_bucketing;
        p.encoding = self.encoding.get();
        p
    }
}

/// `tacit pros psi`.
#[derive(Debug, Subcommand)]
pub enum PsiCommand {
    /// Answer FNP queries with a set (learns nothing).
    #[command(after_help = "Example:\n  tacit pros psi serve --set book.txt --listen 127.0.0.1:7979 --sessions 1")]
    Serve {
        /// The set file (one element per line).
        #[arg(long, value_name = "FILE")]
        set: PathBuf,
        /// Address to listen on.
        #[arg(long, value_name = "ADDR")]
        listen: String,
        /// Exit after this many sessions (default: serve forever).
        #[arg(long, value_name = "N")]
        sessions: Option<u64>,
        /// Smallest querier key accepted.
        #[arg(long, default_value_t = 2048)]
        min_key_bits: u32,
        #[command(flatten)]
        fnp: FnpArgs,
    },
    /// Query a server; prints the intersection, one element per line.
    #[command(after_help = "Example:\n  tacit pros psi query --set mine.txt --connect 127.0.0.1:7979")]
    Query {
        /// The set file.
        #[arg(long, value_name = "FILE")]
        set: PathBuf,
        /// The server.
        #[arg(long, value_name = "ADDR")]
        connect: String,
        /// Key size.
        #[arg(long, default_value_t = DEFAULT_KEY_BITS)]
        key_bits: u32,
        /// JSON output.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        fnp: FnpArgs,
    },
}

/// 3PR options both sides must give alike.
#[derive(Debug, Clone, Args)]
pub struct ReconcileArgs {
    /// Preference composition: sum or minimum of ranks.
    #[arg(long, value_enum, default_value = "sor")]
    pub scheme: SchemeArg,
    /// Protocol variant.
    #[arg(long, value_enum, default_value = "implicit")]
    pub variant: VariantArg,
    /// Element encoding.
    #[arg(long, value_enum, default_value = "hash")]
    pub encoding: EncodingArg,
}

/// `--scheme`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SchemeArg {
    /// Sum of ranks.
    Sor,
    /// Minimum of ranks.
    Mor,
}

/// `--variant`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum VariantArg {
    /// 3PR-FNP-implicit.
    Implicit,
    /// 3PR-PSI-explicit, non-cached.
    Explicit,
    /// 3PR-PSI-explicit, cached.
    ExplicitCached,
}

impl SchemeArg {
    pub(crate) fn get(self) -> Scheme {
        match self {
            SchemeArg::Sor => Scheme::Sor,
            SchemeArg::Mor => Scheme::Mor,
        }
    }
}

impl VariantArg {
    pub(crate) fn get(self) -> Variant {
        match self {
            VariantArg::Implicit => Variant::Implicit,
            VariantArg::Explicit => Variant::Explicit,
            VariantArg::ExplicitCached => Variant::ExplicitCached,
        }
    }
}

impl ReconcileArgs {
    fn params(&self) -> ReconcileParams {
        ReconcileParams {
            scheme: self.scheme.get(),
            variant: self.variant.get(),
            encoding: self.encoding.get(),
        }
    }
}

/// `tacit pros reconcile`.
#[derive(Debug, Subcommand)]
pub enum ReconcileCommand {
    /// Party B: wait for a peer and reconcile (prints the agreed element(s)).
    #[command(
        after_help = "Example:\n  tacit pros reconcile serve --set prefs.txt --listen 127.0.0.1:7980 --scheme mor --sessions 1"
    )]
    Serve {
        /// The ordered set: one element per line, best first.
        #[arg(long, value_name = "FILE")]
        set: PathBuf,
        /// Address to listen on.
        #[arg(long, value_name = "ADDR")]
        listen: String,
        /// Exit after this many sessions (default: serve forever).
        #[arg(long, value_name = "N")]
        sessions: Option<u64>,
        /// Smallest peer key accepted.
        #[arg(long, default_value_t = 2048)]
        min_key_bits: u32,
        /// JSON output.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        opts: ReconcileArgs,
    },
    /// Party A (key holder): connect and reconcile (prints the agreed element(s)).
    #[command(
        after_help = "Example:\n  tacit pros reconcile connect --set prefs.txt --connect 127.0.0.1:7980 --scheme mor"
    )]
    Connect {
        /// The ordered set: one element per line, best first.
        #[arg(long, value_name = "FILE")]
        set: PathBuf,
        /// The peer.
        #[arg(long, value_name = "ADDR")]
        connect: String,
        /// Key size.
        #[arg(long, default_value_t = DEFAULT_KEY_BITS)]
        key_bits: u32,
        /// JSON output.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        opts: ReconcileArgs,
    },
}

fn read_json(path: &Path) -> Result<serde_json::Value> {
    let meta = std::fs::metadata(path).with_context(|| format!("cannot read {}", path.display()))?;
    if meta.len() > 1 << 20 {
        bail!(
            "{} is {} bytes; a key or ciphertext is far smaller",
            path.display(),
            meta.len()
        );
    }
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))
}

fn public_of(v: &serde_json::Value) -> &serde_json::Value {
    if v.get("pub").is_some() { &v["pub"] } else { v }
}

pub(crate) fn runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?)
}

pub(crate) fn net_config() -> NetConfig {
    NetConfig {
        max_frame: net::MAX_FRAME,
        read_timeout: std::time::Duration::from_secs(120),
        ..NetConfig::default()
    }
}

fn check_key_bits(bits: u32) -> Result<()> {
    if bits > MAX_KEY_BITS {
        bail!("--key-bits {bits}: the largest supported modulus is {MAX_KEY_BITS} bits");
    }
    if bits < 2048 {
        eprintln!("tacit: warning: a {bits}-bit Paillier key is for reproducing the paper only; it protects nothing");
    }
    Ok(())
}

/// Generates a key and a pool of `pool` precomputed rⁿ (on all cores).
pub(crate) fn key_and_pool(bits: u32, pool: usize) -> Result<(PrivateKey, Arc<RnPool>)> {
    let key = PrivateKey::generate(bits)?;
    let p = Arc::new(RnPool::new(key.public())?);
    p.fill(key.public(), pool, &mut SecureRng::from_os())?;
    Ok((key, p))
}

pub fn run(cmd: ProsCommand) -> Result<()> {
    let mut rng = SecureRng::from_os();
    match cmd {
        ProsCommand::Keygen { bits, out } => {
            check_key_bits(bits)?;
            let key = PrivateKey::generate(bits)?;
            let stamp = crate::util::now_unix();
            let pub_kid = format!("Paillier public key generated by tacit at Unix time {stamp}");
            let priv_kid = format!("Paillier private key generated by tacit at Unix time {stamp}");
            let pub_path = pub_path(&out);
            write_private(
                &out,
                &serde_json::to_string(&phe::private_key_json(&key, &priv_kid, &pub_kid))?,
            )?;
            std::fs::write(
                &pub_path,
                serde_json::to_string(&phe::public_key_json(key.public(), &pub_kid))? + "\n",
            )
            .with_context(|| format!("cannot write {}", pub_path.display()))?;
            eprintln!(
                "tacit pros keygen: {bits}-bit key written to {} (public half: {})",
                out.display(),
                pub_path.display()
            );
        }
        ProsCommand::Encrypt { key, value } => {
            let pk = phe::read_public_key(public_of(&read_json(&key)?))?;
            let c = phe::encrypt_number(&pk, &value, &mut rng)?;
            println!("{}", serde_json::to_string(&phe::encrypted_json(&c)?)?);
        }
        ProsCommand::Decrypt { key, ciphertext } => {
            let sk = phe::read_private_key(&read_json(&key)?, &mut rng)?;
            let c = phe::read_encrypted(sk.public(), &read_json(&ciphertext)?)
                .with_context(|| format!("{}", ciphertext.display()))?;
            let d = phe::decrypt_number(&sk, &c)?;
            println!("{}", phe::decimal(&d.mantissa, d.exponent)?);
        }
        ProsCommand::Add { key, a, b } => {
            let pk = phe::read_public_key(public_of(&read_json(&key)?))?;
            let ca = phe::read_encrypted(&pk, &read_json(&a)?).with_context(|| format!("{}", a.display()))?;
            let cb = phe::read_encrypted(&pk, &read_json(&b)?).with_context(|| format!("{}", b.display()))?;
            println!(
                "{}",
                serde_json::to_string(&phe::encrypted_json(&phe::add(&pk, &ca, &cb)?)?)?
            );
        }
        ProsCommand::Psi(PsiCommand::Serve {
            set,
            listen,
            sessions,
            min_key_bits,
            fnp,
        }) => {
            let params = fnp.params();
            let elements = read_set(&set)?;
            let sender = Arc::new(Sender::new(&params, &elements, min_key_bits, MAX_KEY_BITS)?);
            runtime()?.block_on(async {
                let mut cfg = net_config();
                cfg.max_frame = params.query_len(MAX_KEY_BITS).min(net::MAX_FRAME);
                let l = FramedListener::bind(&listen, &cfg)
                    .await
                    .with_context(|| format!("cannot listen on {listen}"))?;
                eprintln!(
                    "tacit pros psi serve: FNP, bounds ({}, {}), {} bins of {} roots; listening on {}",
                    params.chooser_bound,
                    params.sender_bound,
                    params.bins(),
                    params.load(),
                    l.local_addr()?
                );
                let mut served = 0u64;
                while sessions.is_none_or(|m| served < m) {
                    let mut c = match l.accept().await {
                        Ok(c) => c,
                        Err(e) => {
                            eprintln!("tacit pros psi serve: accept failed: {e}");
                            continue;
                        }
                    };
                    served += 1;
                    let peer = c.peer_addr().map(|a| a.to_string()).unwrap_or_else(|_| "?".into());
                    match net::psi_serve(&mut c, sender.clone(), &mut rng).await {
                        Ok(()) => eprintln!("tacit pros psi serve: session {served} from {peer}: answered"),
                        Err(e) => eprintln!(
                            "tacit pros psi serve: session {served} from {peer}: {}",
                            sanitize(&e.to_string())
                        ),
                    }
                }
                Ok::<_, anyhow::Error>(())
            })?;
        }
        ProsCommand::Psi(PsiCommand::Query {
            set,
            connect,
            key_bits,
            json,
            fnp,
        }) => {
            check_key_bits(key_bits)?;
            let params = fnp.params();
            let elements = read_set(&set)?;
            let (key, pool) = key_and_pool(key_bits, (params.bins() * params.load()) as usize)?;
            let found = runtime()?.block_on(async {
                let mut c = FramedConn::connect(connect.as_str(), &net_config())
                    .await
                    .with_context(|| format!("cannot connect to {connect}"))?;
                Ok::<_, anyhow::Error>(net::psi_query(&mut c, &params, key, &elements, &pool, &mut rng).await?)
            })?;
            let items: Vec<String> = found.iter().map(|b| String::from_utf8_lossy(b).into_owned()).collect();
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&serde_json::json!({
                        "intersection": items,
                        "key_bits": key_bits,
                        "bins": params.bins(),
                        "load": params.load(),
                        "max_chooser": params.chooser_bound,
                        "max_sender": params.sender_bound,
                    }))?
                );
            } else {
                for i in items {
                    println!("{i}");
                }
            }
        }
        ProsCommand::Reconcile(ReconcileCommand::Serve {
            set,
            listen,
            sessions,
            min_key_bits,
            json,
            opts,
        }) => {
            let params = opts.params();
            let elements = read_set(&set)?;
            Responder::new(params, &elements, min_key_bits, MAX_KEY_BITS)?;
            runtime()?.block_on(async {
                let l = FramedListener::bind(&listen, &net_config())
                    .await
                    .with_context(|| format!("cannot listen on {listen}"))?;
                eprintln!(
                    "tacit pros reconcile serve: 3PR {} / {}, {} elements; listening on {}",
                    params.scheme,
                    params.variant,
                    elements.len(),
                    l.local_addr()?
                );
                let mut served = 0u64;
                while sessions.is_none_or(|m| served < m) {
                    let mut c = match l.accept().await {
                        Ok(c) => c,
                        Err(e) => {
                            eprintln!("tacit pros reconcile serve: accept failed: {e}");
                            continue;
                        }
                    };
                    served += 1;
                    let responder = Responder::new(params, &elements, min_key_bits, MAX_KEY_BITS)?;
                    match net::reconcile_responder(&mut c, responder, &mut rng).await {
                        Ok(r) => print_reconciled(&r, json)?,
                        Err(e) => eprintln!(
                            "tacit pros reconcile serve: session {served}: {}",
                            sanitize(&e.to_string())
                        ),
                    }
                }
                Ok::<_, anyhow::Error>(())
            })?;
        }
        ProsCommand::Reconcile(ReconcileCommand::Connect {
            set,
            connect,
            key_bits,
            json,
            opts,
        }) => {
            check_key_bits(key_bits)?;
            let params = opts.params();
            let elements = read_set(&set)?;
            let (key, pool) = key_and_pool(key_bits, elements.len())?;
            let r = runtime()?.block_on(async {
                let mut c = FramedConn::connect(connect.as_str(), &net_config())
                    .await
                    .with_context(|| format!("cannot connect to {connect}"))?;
                Ok::<_, anyhow::Error>(net::reconcile_initiator(&mut c, params, key, &elements, pool, &mut rng).await?)
            })?;
            print_reconciled(&r, json)?;
        }
    }
    Ok(())
}

fn print_reconciled(r: &Reconciled, json: bool) -> Result<()> {
    let items: Vec<String> = r
        .elements
        .iter()
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .collect();
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "agreed": items,
                "rounds": r.rounds,
                "n": r.n,
                "comparisons": r.comparisons,
            }))?
        );
    } else {
        for i in &items {
            println!("{}", sanitize(i));
        }
    }
    if items.is_empty() {
        eprintln!("tacit pros reconcile: no common element ({} rounds)", r.rounds);
    } else {
        eprintln!("tacit pros reconcile: agreed after {} rounds (n = {})", r.rounds, r.n);
    }
    Ok(())
}

fn pub_path(out: &Path) -> PathBuf {
    let s = out.to_string_lossy();
    match s.strip_suffix(".json") {
        Some(stem) => PathBuf::from(format!("{stem}.pub.json")),
        None => PathBuf::from(format!("{s}.pub.json")),
    }
}

fn write_private(path: &Path, text: &str) -> Result<()> {
    use std::io::Write;
    #[cfg(unix)]
    use std::os::unix::fs::OpenOptionsExt;
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create(true).truncate(true);
    #[cfg(unix)]
    o.mode(0o600);
    let mut f = o
        .open(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    f.write_all(text.as_bytes())?;
    f.write_all(b"\n")?;
    Ok(())
}

/// A deterministic RNG for benches (seeded).
pub(crate) fn seeded(seed: u64) -> rand_chacha::ChaCha20Rng {
    rand_chacha::ChaCha20Rng::seed_from_u64(seed)
}
