//! `tacit pros …`: Paillier keys and ciphertexts in python-paillier's JSON, FNP PSI
//! and 3PR reconciliation between two processes, over the project's channel (TLS 1.3
//! with pinned keys by default; see [`crate::pros::channel`]).

use crate::pros::channel::{ConnectChannel, ServeChannel, announce, client, client_label, known_name, server};
use crate::util::{read_set, sanitize};
use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand, ValueEnum};
use rand_core::SeedableRng;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tacit_crypto::rng::SecureRng;
use tacit_net::NetConfig;
use tacit_pros::element::ElementEncoding;
use tacit_pros::facproof::MIN_PEER_KEY_BITS;
use tacit_pros::fnp::PsiParams;
use tacit_pros::paillier::{DEFAULT_KEY_BITS, MAX_KEY_BITS, PrivateKey, RnPool};
use tacit_pros::service::Event;
use tacit_pros::threepr::{Limits, MAX_ORDERED_SET, ReconcileParams, Reconciled, Scheme, Variant};
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
        /// `--key-bits` is accepted too.
        #[arg(long, alias = "key-bits", default_value_t = DEFAULT_KEY_BITS)]
        bits: u32,
        /// Where to write the private key.
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
        /// Overwrite existing key files.
        #[arg(long)]
        force: bool,
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
    /// Add two ciphertexts homomorphically; prints the sum's JSON. Ciphertexts made
    /// by tacit carry the key's fingerprint ("key_fp"); one made under another key is
    /// refused.
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
    /// Print this store's pros TLS key fingerprint (made on first use): what a server
    /// prints for clients to --pin, and what a client gives a server for --allow.
    #[command(after_help = "Example:\n  tacit pros fingerprint")]
    Fingerprint,
    /// Forget the server key recorded on first use for ADDR (after the server changed
    /// its key on purpose).
    #[command(after_help = "Example:\n  tacit pros forget --connect host:7980")]
    Forget {
        /// The server's address, as given to --connect.
        #[arg(long, value_name = "ADDR")]
        connect: String,
    },
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
    #[command(after_help = "\
Example:
  tacit pros psi serve --set book.txt --listen 127.0.0.1:7979 --sessions 1

Runs over TLS 1.3 with this store's key (printed; clients pin it or record it on first
use). A querier learns which of its elements the set holds; a deviating one can test
up to two candidates per root slot of its query (printed at start: 2·B·M), see
docs/pros.md. Sessions run concurrently up to --max-clients, each under --deadline.
The first serve on a store makes its ring-Pedersen parameters (two 1536-bit safe
primes, seconds to a minute, shown with a spinner) and keeps them there: clients prove
their Paillier key's factors large against them (docs/pros.md, \"The modulus proof\").")]
    Serve {
        /// The set file (one element per line).
        #[arg(long, value_name = "FILE")]
        set: PathBuf,
        /// Address to listen on.
        #[arg(long, value_name = "ADDR")]
        listen: String,
        /// Exit after this many sessions: a number (0: exit once ready) or `forever`
        /// (the default).
        #[arg(long, value_name = "N", value_parser = crate::util::parse_sessions)]
        sessions: Option<u64>,
        /// Smallest querier key accepted (1024 at the least, unless --insecure-small-keys).
        #[arg(long, default_value_t = 2048)]
        min_key_bits: u32,
        #[command(flatten)]
        small_keys: SmallKeysArg,
        /// Refuse to start if a deviating querier could test more candidates than this
        /// (`2·B·M`; use --no-bucketing or a smaller --max-chooser to lower it).
        #[arg(long, value_name = "N")]
        max_tests: Option<usize>,
        #[command(flatten)]
        fnp: FnpArgs,
        #[command(flatten)]
        channel: ServeChannel,
    },
    /// Query a server; prints the intersection, one element per line.
    #[command(after_help = "\
Example:
  tacit pros psi query --set mine.txt --connect 127.0.0.1:7979            # key recorded on first use
  tacit pros psi query --set mine.txt --connect host:7979 --pin 3f1c…     # key pinned")]
    Query {
        /// The set file.
        #[arg(long, value_name = "FILE")]
        set: PathBuf,
        /// The server.
        #[arg(long, value_name = "ADDR")]
        connect: String,
        /// Paillier key size in bits (`--bits` is accepted too; 1024 at the least, unless
        /// --insecure-small-keys).
        #[arg(long, alias = "bits", default_value_t = DEFAULT_KEY_BITS)]
        key_bits: u32,
        #[command(flatten)]
        small_keys: SmallKeysArg,
        /// JSON output.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        fnp: FnpArgs,
        #[command(flatten)]
        channel: ConnectChannel,
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
    #[command(after_help = "\
Example:
  tacit pros reconcile serve --set prefs.txt --listen 127.0.0.1:7980 --scheme mor --sessions 1
  tacit pros reconcile serve --set prefs.txt --listen 0.0.0.0:7980 --allow 9a0e…   # only this client

Runs over TLS 1.3 with this store's key (printed for clients to pin); each client
presents its own key, which is printed with the result (--allow restricts who may
connect). Both parties learn the agreed element(s) and the number of rounds. A
client holds the Paillier key and so can test guesses against this list (docs/pros.md):
--max-peer-set and --max-comparisons bound what one session may cost.
The first serve on a store makes its ring-Pedersen parameters (two 1536-bit safe
primes, seconds to a minute, shown with a spinner) and keeps them there: clients prove
their Paillier key's factors large against them (docs/pros.md, \"The modulus proof\").")]
    Serve {
        /// The ordered set: one element per line, best first.
        #[arg(long, value_name = "FILE")]
        set: PathBuf,
        /// Address to listen on.
        #[arg(long, value_name = "ADDR")]
        listen: String,
        /// Exit after this many sessions: a number (0: exit once ready) or `forever`
        /// (the default).
        #[arg(long, value_name = "N", value_parser = crate::util::parse_sessions)]
        sessions: Option<u64>,
        /// Smallest peer key accepted (1024 at the least, unless --insecure-small-keys).
        #[arg(long, default_value_t = 2048)]
        min_key_bits: u32,
        #[command(flatten)]
        small_keys: SmallKeysArg,
        /// The longest list a peer may bring (its n; the session costs up to n²
        /// comparisons with n the longer list).
        #[arg(long, default_value_t = 256, value_name = "N")]
        max_peer_set: u32,
        /// The most comparisons one session may need (refused at the hello if n²
        /// exceeds it).
        #[arg(long, default_value_t = 65_536, value_name = "N")]
        max_comparisons: u64,
        /// JSON output.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        opts: ReconcileArgs,
        #[command(flatten)]
        channel: ServeChannel,
    },
    /// Party A (key holder): connect and reconcile (prints the agreed element(s)).
    #[command(after_help = "\
Example:
  tacit pros reconcile connect --set prefs.txt --connect 127.0.0.1:7980 --scheme mor
  tacit pros reconcile connect --set prefs.txt --connect host:7980 --pin 3f1c…")]
    Connect {
        /// The ordered set: one element per line, best first.
        #[arg(long, value_name = "FILE")]
        set: PathBuf,
        /// The peer.
        #[arg(long, value_name = "ADDR")]
        connect: String,
        /// Paillier key size in bits (`--bits` is accepted too; 1024 at the least, unless
        /// --insecure-small-keys).
        #[arg(long, alias = "bits", default_value_t = DEFAULT_KEY_BITS)]
        key_bits: u32,
        #[command(flatten)]
        small_keys: SmallKeysArg,
        /// The longest list the server may bring (refused above max(yours, this)): a
        /// hostile server gets one guess per element of the session against each of
        /// your elements, n guesses each (docs/pros.md).
        #[arg(long, default_value_t = tacit_pros::threepr::DEFAULT_MAX_PEER_SET, value_name = "N")]
        max_peer_set: u32,
        /// JSON output.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        opts: ReconcileArgs,
        #[command(flatten)]
        channel: ConnectChannel,
    },
}

fn read_json(path: &Path) -> Result<serde_json::Value> {
    // a key or ciphertext is far smaller
    let text = crate::util::read_text(path, "key or ciphertext file", 1 << 20)?;
    serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))
}

fn public_of(v: &serde_json::Value) -> &serde_json::Value {
    if v.get("pub").is_some() { &v["pub"] } else { v }
}

/// "WHO: session from PEER", the prefix of a serving session's progress lines.
pub(crate) fn session_label(who: &str, peer: Option<std::net::SocketAddr>) -> String {
    match peer {
        Some(a) => format!("{who}: session from {a}"),
        None => format!("{who}: session"),
    }
}

/// A progress hook for a PROS session (issue 28, item 10): what it computes, what it
/// waits for, and the 3PR round, as a spinner on a terminal (`spinner`, a client) or
/// as lines on stderr (the first after 10 s, then at most one per 10 s).
pub(crate) fn progress_hook(who: String, spinner: bool) -> net::ProgressHook {
    use crate::util::progress::Activity;
    use tacit_pros::net::Step;
    let act = Activity::new(&who, spinner);
    let round = std::sync::Mutex::new(None::<(u32, u32)>);
    Arc::new(move |s: Step| {
        let Ok(mut cur) = round.lock() else {
            return;
        };
        let at = |cur: &Option<(u32, u32)>| {
            cur.map(|(r, n)| format!("round {r} of at most {n}: "))
                .unwrap_or_default()
        };
        match s {
            Step::Round { round, rounds } => {
                *cur = Some((round, rounds));
                act.say(&format!("round {round} of at most {rounds}"), false);
            }
            Step::Computing(w) => act.say(&format!("{}computing {w}", at(&cur)), false),
            Step::Waiting(w) => act.say(&format!("{}waiting for {w}", at(&cur)), false),
        }
    })
}

pub(crate) fn runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?)
}

/// Plain framed TCP for benches and the demo (both ends in this process).
pub(crate) fn net_config() -> NetConfig {
    NetConfig {
        max_frame: net::MAX_FRAME,
        read_timeout: std::time::Duration::from_secs(600),
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

/// `--insecure-small-keys`, on every pros and schedule session command.
#[derive(Debug, Clone, Copy, Args)]
pub struct SmallKeysArg {
    /// INSECURE: allow Paillier keys below 1024 bits (the paper's 256–768), whose factors
    /// the no-small-factor proof does not bound: a key holder with a small factor then
    /// tests many candidates per comparison. For reproducing the paper's tables on your
    /// own machines only; each side must give it, the peer cannot ask for it.
    #[arg(long)]
    pub insecure_small_keys: bool,
}

impl SmallKeysArg {
    /// The key size a session command uses for its own key (`--key-bits`): below
    /// [`MIN_PEER_KEY_BITS`] only with `--insecure-small-keys`.
    pub(crate) fn check_own(self, bits: u32) -> Result<()> {
        if bits < MIN_PEER_KEY_BITS && !self.insecure_small_keys {
            bail!(
                "--key-bits {bits} is below {MIN_PEER_KEY_BITS} bits, the smallest key whose factors the \
                 no-small-factor proof bounds (servers refuse it); give --insecure-small-keys on both sides to \
                 reproduce the paper's sizes"
            );
        }
        check_key_bits(bits)
    }

    /// The builder with `--insecure-small-keys` passed on.
    pub(crate) fn apply<C: tacit_pros::endpoint::Session>(
        self,
        b: tacit_pros::endpoint::ClientBuilder<C>,
    ) -> tacit_pros::endpoint::ClientBuilder<C> {
        if self.insecure_small_keys {
            b.insecure_small_keys()
        } else {
            b
        }
    }

    /// A serving command's `--min-key-bits`: below [`MIN_PEER_KEY_BITS`] only with
    /// `--insecure-small-keys` (then with a warning); whether the engines may take
    /// peer keys below the floor.
    pub(crate) fn check_serve(self, min_key_bits: u32, who: &str) -> Result<bool> {
        if min_key_bits >= MIN_PEER_KEY_BITS {
            return Ok(false);
        }
        if !self.insecure_small_keys {
            bail!(
                "--min-key-bits {min_key_bits} is below {MIN_PEER_KEY_BITS} bits, the smallest key whose factors the \
                 no-small-factor proof bounds; give --insecure-small-keys to accept smaller keys (for reproducing \
                 the paper only)"
            );
        }
        eprintln!(
            "{who}: warning: --insecure-small-keys: peer keys down to {min_key_bits} bits are accepted; below \
             {MIN_PEER_KEY_BITS} bits a peer can test many candidates of your set per comparison"
        );
        Ok(true)
    }
}

/// Generates a key, its modulus proof and a pool of `pool` precomputed rⁿ (on all
/// cores).
pub(crate) fn key_and_pool(bits: u32, pool: usize) -> Result<(PrivateKey, Arc<RnPool>)> {
    Ok(tacit_pros::endpoint::key_and_pool(bits, pool)?)
}

/// Prints a session's end as a serving command does.
fn report_event<T>(who: &str, e: Event<T>, ok: impl Fn(u64, &str, T)) {
    match e {
        Event::Done {
            session,
            peer,
            client,
            result,
            ..
        } => match result {
            Ok(v) => ok(session, &format!("{peer} ({})", client_label(&client)), v),
            Err(why) => eprintln!(
                "{who}: session {session} from {peer} ({}): {}",
                client_label(&client),
                sanitize(&why)
            ),
        },
        Event::Busy { peer } => eprintln!("{who}: refused {peer}: the server is busy (--max-clients)"),
    }
}

pub fn run(cmd: ProsCommand, store: Option<&Path>) -> Result<()> {
    let mut rng = SecureRng::from_os();
    match cmd {
        ProsCommand::Keygen { bits, out, force } => {
            check_key_bits(bits)?;
            let pub_path = pub_path(&out);
            if !force {
                for p in [&out, &pub_path] {
                    if p.exists() {
                        bail!("{} exists; give --force to overwrite it", p.display());
                    }
                }
            }
            let key = PrivateKey::generate(bits)?;
            let stamp = crate::util::now_unix();
            let pub_kid = format!("Paillier public key generated by tacit at Unix time {stamp}");
            let priv_kid = format!("Paillier private key generated by tacit at Unix time {stamp}");
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
            println!("{}", serde_json::to_string(&phe::encrypted_json_for(&pk, &c)?)?);
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
                serde_json::to_string(&phe::encrypted_json_for(&pk, &phe::add(&pk, &ca, &cb)?)?)?
            );
        }
        ProsCommand::Fingerprint => {
            let (_, fp) = crate::pros::channel::identity(store)?;
            println!("{fp}");
        }
        ProsCommand::Forget { connect } => {
            let mut st = crate::util::open_store_existing(store, "tacit pros psi query --tofu")?;
            if st.forget_peer(&known_name(&connect))? {
                println!("forgot the key recorded for {connect}");
            } else {
                bail!("no key is recorded for {connect}")
            }
        }
        ProsCommand::Psi(PsiCommand::Serve {
            set,
            listen,
            sessions,
            min_key_bits,
            small_keys,
            max_tests,
            fnp,
            channel,
        }) => {
            let who = "tacit pros psi serve";
            let insecure = small_keys.check_serve(min_key_bits, who)?;
            let params = fnp.params();
            let elements = read_set(&set, params.sender_bound as usize, "--max-sender")?;
            let make = |st| tacit_pros::psi::serve(st, params, &elements);
            let mut b = server(store, &channel, who, make, min_key_bits, insecure, sessions)?;
            if let Some(t) = max_tests {
                b = b.max_tests(t);
            }
            let b = b.progress(move |peer| progress_hook(session_label(who, peer), false));
            runtime()?.block_on(crate::util::shutdown::serving(async {
                let server = b.bind(&listen).await?;
                announce(&server, who);
                eprintln!(
                    "{who}: FNP, bounds ({}, {}), {} bins of {} roots (a querier tests at most {} candidates); listening on {}",
                    params.chooser_bound,
                    params.sender_bound,
                    params.bins(),
                    params.load(),
                    params.chooser_tests(),
                    server.local_addr()?
                );
                server
                    .serve(move |e: Event<()>| {
                        report_event(who, e, |n, from, ()| eprintln!("{who}: session {n} from {from}: answered"))
                    })
                    .await?;
                Ok::<_, anyhow::Error>(())
            }))?;
        }
        ProsCommand::Psi(PsiCommand::Query {
            set,
            connect: addr,
            key_bits,
            small_keys,
            json,
            fnp,
            channel,
        }) => {
            small_keys.check_own(key_bits)?;
            let params = fnp.params();
            let elements = read_set(&set, params.chooser_bound as usize, "--max-chooser")?;
            let who = "tacit pros psi query";
            let make = |st| tacit_pros::psi::query(st, params, &elements);
            let b = small_keys.apply(client(store, &channel, &addr, who, make)?.key_bits(key_bits));
            let hook = progress_hook(who.to_string(), true);
            let out = runtime()?.block_on(b.progress(move |s| hook(s)).run(&addr))?;
            let server_key = out.server_key.map(|fp| tacit_net::channel::hex(&fp));
            let items: Vec<String> = out
                .result
                .iter()
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .collect();
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
                        "chooser_tests": params.chooser_tests(),
                        "tls": server_key.is_some(),
                        "server_key": server_key,
                    }))?
                );
            } else if items.is_empty() {
                // stdout stays empty for scripts (issue 28)
                eprintln!("tacit pros psi query: no common elements");
            } else {
                for i in items {
                    println!("{}", sanitize(&i));
                }
            }
        }
        ProsCommand::Reconcile(ReconcileCommand::Serve {
            set,
            listen,
            sessions,
            min_key_bits,
            small_keys,
            max_peer_set,
            max_comparisons,
            json,
            opts,
            channel,
        }) => {
            let who = "tacit pros reconcile serve";
            let insecure = small_keys.check_serve(min_key_bits, who)?;
            let params = opts.params();
            let elements = read_set(&set, MAX_ORDERED_SET as usize, "the most 3PR supports")?;
            let limits = limits(max_peer_set, max_comparisons)?;
            let make = |st| tacit_pros::reconcile::serve(st, params, &elements).limits(limits);
            let b = server(store, &channel, who, make, min_key_bits, insecure, sessions)?
                .progress(move |peer| progress_hook(session_label(who, peer), false));
            runtime()?.block_on(crate::util::shutdown::serving(async {
                let server = b.bind(&listen).await?;
                announce(&server, who);
                eprintln!(
                    "{who}: 3PR {} / {}, {} elements (peers: up to {max_peer_set} elements, {max_comparisons} comparisons); listening on {}",
                    params.scheme,
                    params.variant,
                    server.service().set_len(),
                    server.local_addr()?
                );
                server
                    .serve(move |e: Event<Reconciled>| {
                        report_event(who, e, |n, from, r| {
                            if let Err(e) = print_reconciled(&r, json, Some(&format!("session {n} with {from}"))) {
                                eprintln!("{who}: {e}");
                            }
                        })
                    })
                    .await?;
                Ok::<_, anyhow::Error>(())
            }))?;
        }
        ProsCommand::Reconcile(ReconcileCommand::Connect {
            set,
            connect: addr,
            key_bits,
            small_keys,
            max_peer_set,
            json,
            opts,
            channel,
        }) => {
            small_keys.check_own(key_bits)?;
            if max_peer_set == 0 || max_peer_set > MAX_ORDERED_SET {
                bail!("--max-peer-set must be from 1 to {MAX_ORDERED_SET}");
            }
            let params = opts.params();
            let elements = read_set(&set, MAX_ORDERED_SET as usize, "the most 3PR supports")?;
            let who = "tacit pros reconcile connect";
            let make = |st| tacit_pros::reconcile::connect(st, params, &elements).max_peer_set(max_peer_set);
            let b = small_keys.apply(client(store, &channel, &addr, who, make)?.key_bits(key_bits));
            let hook = progress_hook(who.to_string(), true);
            let out = runtime()?.block_on(b.progress(move |s| hook(s)).run(&addr))?;
            let with = match out.server_key {
                Some(fp) => format!("{addr} (key {})", tacit_net::channel::hex(&fp)),
                None => format!("{addr} (plain TCP)"),
            };
            print_reconciled(&out.result, json, Some(&with))?;
        }
    }
    Ok(())
}

/// The responder limits from the serve flags.
pub(crate) fn limits(max_peer_set: u32, max_comparisons: u64) -> Result<Limits> {
    if max_peer_set == 0 || max_peer_set > MAX_ORDERED_SET {
        bail!("--max-peer-set must be from 1 to {MAX_ORDERED_SET}");
    }
    if max_comparisons == 0 {
        bail!("--max-comparisons must be at least 1");
    }
    Ok(Limits {
        max_peer_set,
        max_comparisons,
    })
}

fn print_reconciled(r: &Reconciled, json: bool, with: Option<&str>) -> Result<()> {
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
                "peer": with,
            }))?
        );
    } else {
        for i in &items {
            println!("{}", sanitize(i));
        }
    }
    let with = with.map(|w| format!(" with {}", sanitize(w))).unwrap_or_default();
    if items.is_empty() {
        eprintln!("tacit pros reconcile: no common element{with} ({} rounds)", r.rounds);
    } else {
        eprintln!(
            "tacit pros reconcile: agreed{with} after {} rounds (n = {})",
            r.rounds, r.n
        );
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
