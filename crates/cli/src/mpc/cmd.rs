//! `tacit mpc eval | run | token`.

use crate::util::channel::{Channel, ChannelArgs, PeerKey, Trust, client_config, parse_fingerprint, tls_identity};
use crate::util::{sanitize, store_path};
use anyhow::{Context, Result, anyhow, bail};
use clap::{Args, Subcommand, ValueEnum};
use rand_core::RngCore;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tacit_crypto::rng::SecureRng;
use tacit_crypto::sign::SigningKey;
use tacit_mpc::bits::{parse_bit_string, to_bit_string};
use tacit_mpc::circuit::{Circuit, LayeredCircuit, bristol};
use tacit_mpc::driver::RunReport;
use tacit_mpc::gmw::PartyInputs;
use tacit_mpc::service::{Event, TokenAccess};
use tacit_mpc::token::card::{FileEeprom, SealKey, TokenSpec, TokenState};
use tacit_mpc::token::{SOFTWARE_POLICY, TcpTokenLink, Token, TokenHolder, TokenKind};
use tacit_mpc::{Party, Session, gmw};
use tacit_net::Protocol;

/// `tacit mpc …`
#[derive(Debug, Subcommand)]
pub enum MpcCommand {
    /// Evaluate a Bristol Fashion circuit in the clear.
    #[command(after_help = "\
Example:
  tacit mpc eval --circuit adder64.txt --input 1101000000000000000000000000000000000000000000000000000000000000 \\
                 --input 0000000000000000000000000000000000000000000000000000000000000001")]
    Eval(EvalArgs),
    /// Evaluate a circuit under GMW with a peer process (party a listens, party b connects).
    #[command(after_help = "\
The two parties talk over TLS 1.3 with their stores' keys: party a prints its key's
fingerprint, party b pins it (--pin) or records it on first use; party a admits the keys
given with --pin, or any key (and prints it). GMW is secure against a peer that follows
the protocol (semi-honest): a peer that deviates can change the result and, in some
circuits, learn more (docs/mpc.md). --plain-tcp removes the encryption (latency
measurements only).

Examples (two terminals):
  tacit mpc run --circuit aes_128.txt --party a --listen 127.0.0.1:7900 --input <128 bits>
  tacit mpc run --circuit aes_128.txt --party b --connect 127.0.0.1:7900 --pin <a's key> --input <128 bits>
With the token (see `tacit mpc token --help`):
  tacit mpc run ... --party a --triples token --token 10.0.0.5:7901 --token-pin <link key> --pool ./pool
  tacit mpc run ... --party b --triples token --trust-ca <manufacturer CA key> [--accept-software-token]")]
    Run(RunArgs),
    /// Print this store's key for GMW sessions (its fingerprint, for a peer to pin with --pin).
    #[command(
        after_help = "Example:\n  tacit mpc key    # give the fingerprint to the peer; it runs with --pin <fingerprint>"
    )]
    Key,
    /// The triple token: its CA, manufacture, serve (ISO 7816-4 APDUs over TLS), fill A's pool.
    #[command(subcommand)]
    Token(TokenCommand),
    /// Set intersection by sort–compare–shuffle under GMW (paper §6.3), for peers that follow the protocol.
    #[command(subcommand)]
    Psi(super::psi::PsiCommand),
}

/// `tacit mpc token …`
#[derive(Debug, Subcommand)]
#[command(after_help = "\
A software token is only as trustworthy as the machine it runs on: whoever controls that
host can read every seed it holds (and so every triple of both parties) or rewind it. Run
it on a host that is neither party; B accepts one only with --accept-software-token.

Setup (the manufacturer, party a, and the token's host):
  tacit mpc token ca --out manufacturer.key                 # once; prints the CA key for B
  tacit mpc token host-key                                  # on party a: its link key
  tacit mpc token init --state token.state --ca-key manufacturer.key \\
                       --seal-key /secure/token.seal --pair <party a's link key>
  tacit mpc token serve --state token.state --seal-key /secure/token.seal --listen 0.0.0.0:7901
  tacit mpc token fill --token tokenhost:7901 --token-pin <token link key> --pool ./pool --triples 1000000")]
pub enum TokenCommand {
    /// Create the manufacturer CA's signing key (its public key is what party b trusts).
    #[command(after_help = "Example:\n  tacit mpc token ca --out manufacturer.key")]
    Ca(TokenCaArgs),
    /// Print this store's token link key (party a's; a token is paired with it at `token init --pair`).
    #[command(after_help = "Example:\n  tacit mpc token host-key")]
    HostKey,
    /// Manufacture a software token paired with one host: master keys, token key, link key, certificate.
    #[command(after_help = "\
Example:
  tacit mpc token init --state token.state --ca-key manufacturer.key --seal-key /secure/token.seal \\
                       --pair 3f1c…   # party a's key, from `tacit mpc token host-key`
The state is sealed with the seal key (created here if the file does not exist; keep it
apart from the state, where neither party can read or write it) and the rollback guard
(--guard, default: beside the seal key) records each commit, so that an earlier copy of
the state put back is refused.")]
    Init(TokenInitArgs),
    /// Serve the token over TLS 1.3 to its paired host (several connections at once).
    #[command(after_help = "\
Example:
  tacit mpc token serve --state token.state --seal-key /secure/token.seal --listen 0.0.0.0:7901
Only the paired host's key completes the handshake; the token's link key fingerprint is
printed for the host to pin (--token-pin).")]
    Serve(TokenServeArgs),
    /// Init phase: have the token generate sequences covering N triples into A's pool.
    #[command(
        after_help = "Example:\n  tacit mpc token fill --token 10.0.0.5:7901 --token-pin <link key> --pool ./pool --triples 1000000"
    )]
    Fill(TokenFillArgs),
}

/// Options of `mpc eval`.
#[derive(Debug, Args)]
pub struct EvalArgs {
    /// The circuit (Bristol Fashion).
    #[arg(long, value_name = "FILE")]
    circuit: PathBuf,
    /// One input value as 0/1 characters, first character = first wire; once per input.
    #[arg(long, value_name = "BITS")]
    input: Vec<String>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Where triples come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TriplesArg {
    /// The trusted token (party a needs --token, party b --trust-ca).
    Token,
    /// OT extension between the parties.
    Ot,
}

/// A party.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PartyArg {
    /// Party a (input 0; listens; holds the token).
    A,
    /// Party b (input 1; connects).
    B,
}

/// Options of `mpc run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The circuit (Bristol Fashion).
    #[arg(long, value_name = "FILE")]
    circuit: PathBuf,
    /// Which party this process plays.
    #[arg(long, value_enum)]
    party: PartyArg,
    /// Party a: where to listen.
    #[arg(long, value_name = "ADDR")]
    listen: Option<String>,
    /// Party b: where party a listens.
    #[arg(long, value_name = "ADDR")]
    connect: Option<String>,
    /// This party's input values as 0/1 strings (first character = first wire), in input
    /// order; party a supplies input 0 and party b input 1 unless --owners says otherwise.
    #[arg(long, value_name = "BITS")]
    input: Vec<String>,
    /// Who supplies each input value, e.g. `abb` (default: a then b for the rest).
    #[arg(long)]
    owners: Option<String>,
    #[command(flatten)]
    triples: super::triples::TripleOpts,
    #[command(flatten)]
    channel: ChannelArgs,
    /// Parallel instances (all with the same inputs unless --random-inputs).
    #[arg(long, default_value_t = 1, hide = true)]
    instances: usize,
    /// Use random inputs (benchmarks).
    #[arg(long, hide = true)]
    random_inputs: bool,
    /// Microseconds the online phase polls the socket for the peer's layer message
    /// before it sleeps until the message arrives (0: sleep at once; polling saves the
    /// scheduler's wake-up on every AND layer and costs at most this much CPU per layer).
    #[arg(long, value_name = "µS", default_value_t = 200, value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    spin_us: u64,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Options of `mpc token ca`.
#[derive(Debug, Args)]
pub struct TokenCaArgs {
    /// Where to write the CA's signing key (must not exist; mode 0600).
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
}

/// Options of `mpc token init`.
#[derive(Debug, Args)]
pub struct TokenInitArgs {
    /// Where the token keeps its state (its "EEPROM"), sealed.
    #[arg(long, value_name = "FILE")]
    state: PathBuf,
    /// The manufacturer CA's signing key (made by `tacit mpc token ca`).
    #[arg(long, value_name = "FILE")]
    ca_key: PathBuf,
    /// The key the state is sealed with (32 bytes, hex); created if the file does not
    /// exist. Keep it apart from the state: a copy of the state alone opens to nothing.
    #[arg(long, value_name = "FILE")]
    seal_key: PathBuf,
    /// The rollback guard (default: the seal key's path with `.guard` added).
    #[arg(long, value_name = "FILE")]
    guard: Option<PathBuf>,
    /// The paired host: the fingerprint `tacit mpc token host-key` prints on party a.
    /// Only that key may connect, and only it gets s_A.
    #[arg(long, value_name = "SHA256")]
    pair: String,
    /// Manufacturer name written in the certificate.
    #[arg(long, default_value = "tacit software token")]
    manufacturer: String,
    /// Days the certificate is valid.
    #[arg(long, default_value_t = 365, value_parser = clap::value_parser!(u64).range(1..=36500))]
    valid_days: u64,
    /// The issuer's policy written in the certificate (default: what a software token is).
    #[arg(long)]
    policy: Option<String>,
}

/// Options of `mpc token serve`.
#[derive(Debug, Args)]
pub struct TokenServeArgs {
    /// The token's state file.
    #[arg(long, value_name = "FILE")]
    state: PathBuf,
    /// The key the state is sealed with.
    #[arg(long, value_name = "FILE")]
    seal_key: PathBuf,
    /// The rollback guard (default: the seal key's path with `.guard` added).
    #[arg(long, value_name = "FILE")]
    guard: Option<PathBuf>,
    /// Where to listen.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:7901")]
    listen: String,
    /// Stop after this many host connections (default: serve forever).
    #[arg(long)]
    connections: Option<u64>,
    /// Connections served at once; more are closed at once.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u64).range(1..=1024))]
    max_connections: u64,
    /// Seconds a connection may last (a fill of 2^28 triples takes about a second).
    #[arg(long, value_name = "SECONDS", default_value_t = 600, value_parser = clap::value_parser!(u64).range(1..=86400))]
    session_timeout: u64,
}

/// How party a reaches its token.
#[derive(Debug, Clone, Args)]
pub struct TokenLinkArgs {
    /// The token's address.
    #[arg(long, value_name = "ADDR")]
    pub token: Option<String>,
    /// The token's link key (the fingerprint `tacit mpc token serve` prints); without
    /// it the key is recorded on first use.
    #[arg(long, value_name = "SHA256")]
    pub token_pin: Option<String>,
}

/// Options of `mpc token fill`.
#[derive(Debug, Args)]
pub struct TokenFillArgs {
    #[command(flatten)]
    link: TokenLinkArgs,
    /// A's pool folder.
    #[arg(long, value_name = "DIR")]
    pool: PathBuf,
    /// Triples to cover.
    #[arg(long)]
    triples: usize,
}

pub fn run_cmd(cmd: MpcCommand, store: Option<&Path>) -> Result<()> {
    match cmd {
        MpcCommand::Eval(a) => eval(a),
        MpcCommand::Run(a) => {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            rt.block_on(run_party(a, store))
        }
        MpcCommand::Token(t) => {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            rt.block_on(token(t, store))
        }
        MpcCommand::Psi(p) => super::psi::run(p, store),
        MpcCommand::Key => {
            let ch = peer_channel(&ChannelArgs::default(), store, Protocol::MpcRun)?;
            let fp = ch.fingerprint()?.ok_or_else(|| anyhow!("no key"))?;
            println!("{}", hex::encode(fp));
            Ok(())
        }
    }
}

/// Bytes one instance of `c` takes to run beyond the circuit itself: its triples
/// (3 bits per AND gate, twice while they are made) and at most one word per wire.
fn lc_need(c: &Circuit) -> u64 {
    let s = c.stats();
    (s.and_gates as u64 * 6).div_ceil(8) + s.wires as u64 / 8
}

/// The store's key for sessions between the parties.
pub const PEER_PURPOSE: &str = "mpc-tls-identity";
/// The store's key for party a's link to its token.
pub const HOST_PURPOSE: &str = "mpc-token-host";
/// The TLS server name of a party (certificates are pinned, not named).
pub const PEER_TLS_NAME: &str = "tacit-mpc.invalid";

/// The channel between the two parties (`--plain-tcp`, `--pin`; keys in the store),
/// greeting with `protocol`.
pub fn peer_channel(args: &ChannelArgs, store: Option<&Path>, protocol: Protocol) -> Result<Channel> {
    Channel::new(args, store, PEER_PURPOSE, "mpc", PEER_TLS_NAME, protocol)
}

/// The library channel of a listening party: TLS with the store's key, admitting
/// the pinned keys (or any key); plain TCP with `--plain-tcp`.
pub fn listening_channel(ch: &Channel) -> Result<tacit_mpc::Channel> {
    Ok(match ch.server_config()? {
        Some(cfg) => tacit_mpc::Channel::tls_server(cfg),
        None => tacit_mpc::Channel::plain_tcp_unauthenticated(),
    })
}

/// The lines a listening party prints for the library's events (`who` names it):
/// how it can be reached, refused connections, its peer, progress on `bar`.
pub fn listener_events(
    ch: &Channel,
    who: &'static str,
    bar: Option<indicatif::ProgressBar>,
) -> Result<impl Fn(Event) + Send + Sync + 'static> {
    let fp = ch.fingerprint()?;
    let pinned = !ch.pins.is_empty();
    Ok(move |e: Event| match e {
        Event::Listening { addr } => {
            announce_key(fp, who);
            eprintln!("{who} listening on {addr}");
        }
        Event::AcceptFailed { why } => eprintln!("{who}: accept failed: {}", sanitize(&why)),
        Event::Refused { from, why } => eprintln!("{who}: refused {from}: {}", sanitize(&why)),
        Event::Connected { peer_key } => {
            let how = match (peer_key, pinned) {
                (None, _) => "plain",
                (Some(_), true) => "pinned",
                (Some(_), false) => "any key admitted",
            };
            eprintln!(
                "{who}: {}",
                PeerKey {
                    fingerprint: peer_key,
                    how
                }
                .describe()
            );
        }
        e => progress(bar.as_ref(), &e),
    })
}

/// Moves `bar` for a progress event (OT extension: triples; the token: bytes of
/// c_A, 8 triples each).
pub fn progress(bar: Option<&indicatif::ProgressBar>, e: &Event) {
    match (bar, e) {
        (Some(b), Event::OtTriples { done, .. }) => b.set_position(*done),
        (Some(b), Event::TokenFill { done, total }) => {
            b.set_length(8 * total);
            b.set_position(8 * done);
        }
        _ => {}
    }
}

/// Prints how a listening party can be reached: its key, or that it runs plain TCP.
pub fn announce(ch: &Channel, who: &str) -> Result<()> {
    announce_key(ch.fingerprint()?, who);
    Ok(())
}

fn announce_key(fp: Option<[u8; 32]>, who: &str) {
    match fp {
        Some(fp) => eprintln!(
            "{who}: TLS 1.3; this party's key {} (the peer pins it with --pin {})",
            hex::encode(fp),
            hex::encode(fp)
        ),
        None => eprintln!("{who}: plain TCP (--plain-tcp): the messages are neither encrypted nor authenticated"),
    }
}

/// Reads a Bristol Fashion file, refusing one whose text, or whose gates and wires
/// (from its header), would not fit in the memory this process may use
/// ([`crate::util::memory_budget`]).
pub fn load_circuit(path: &Path) -> Result<Circuit> {
    let budget = crate::util::memory_budget();
    // circuits up to 2 GiB are read, and no more than this process may hold
    let text = crate::util::read_text(path, "circuit", budget.map_or(1 << 31, |b| b.min(1 << 31)))?;
    let limits = bristol::ParseLimits {
        max_bytes: budget,
        held_bytes: text.len() as u64,
        ..Default::default()
    };
    bristol::parse_with(&text, &limits).with_context(|| format!("{}", path.display()))
}

fn parse_inputs(c: &Circuit, given: &[String], which: &[usize]) -> Result<Vec<Vec<bool>>> {
    if given.len() != which.len() {
        bail!(
            "{} input value(s) given; this party supplies {} (inputs {:?})",
            given.len(),
            which.len(),
            which
        );
    }
    let mut out = Vec::new();
    for (s, &i) in given.iter().zip(which) {
        let bits = parse_bit_string(s.trim()).map_err(|e| anyhow!("input {i}: {e}"))?;
        let w = c.input_widths()[i] as usize;
        if bits.len() != w {
            bail!("input {i} is {w} bits wide; {} bits were given", bits.len());
        }
        out.push(bits);
    }
    Ok(out)
}

fn eval(a: EvalArgs) -> Result<()> {
    let c = load_circuit(&a.circuit)?;
    let all: Vec<usize> = (0..c.input_widths().len()).collect();
    let inputs = parse_inputs(&c, &a.input, &all)?;
    let out = c.eval(&inputs)?;
    let s = c.stats();
    if a.json {
        println!(
            "{}",
            json!({
                "outputs": out.iter().map(|o| to_bit_string(o)).collect::<Vec<_>>(),
                "gates": s.gates, "and_gates": s.and_gates, "and_depth": s.and_depth,
            })
        );
    } else {
        for o in &out {
            println!("{}", to_bit_string(o));
        }
        eprintln!("{s}");
    }
    Ok(())
}

fn owners(c: &Circuit, s: Option<&str>) -> Result<Vec<Party>> {
    let k = c.input_widths().len();
    match s {
        None => Ok(gmw::default_owners(k)),
        Some(s) => {
            if s.chars().count() != k {
                bail!("--owners names {} inputs; the circuit has {k}", s.chars().count());
            }
            s.chars()
                .map(|ch| match ch {
                    'a' | 'A' => Ok(Party::A),
                    'b' | 'B' => Ok(Party::B),
                    _ => Err(anyhow!("--owners takes only a and b, not {ch:?}")),
                })
                .collect()
        }
    }
}

pub fn report_json(c: &Circuit, r: &RunReport, party: Party, triples: TriplesArg) -> serde_json::Value {
    let s = c.stats();
    json!({
        "party": party.to_string(),
        "triples_source": format!("{triples:?}").to_lowercase(),
        "outputs": r.outputs.values[0].iter().map(|o| to_bit_string(o)).collect::<Vec<_>>(),
        "instances": r.outputs.values.len(),
        "and_gates": s.and_gates, "and_depth": s.and_depth, "gates": s.gates,
        "triples": r.triples,
        "setup_ms": r.setup.time.as_secs_f64() * 1e3,
        "hello_wait_ms": r.hello_wait.as_secs_f64() * 1e3,
        "setup_bytes_sent": r.setup.bytes_sent, "setup_bytes_received": r.setup.bytes_received,
        "online_ms": r.online.time.as_secs_f64() * 1e3,
        "online_compute_ms": r.online_compute.as_secs_f64() * 1e3,
        "online_rounds": r.online.rounds,
        "online_bytes_sent": r.online.bytes_sent, "online_bytes_received": r.online.bytes_received,
    })
}

async fn run_party(a: RunArgs, store: Option<&Path>) -> Result<()> {
    let c = load_circuit(&a.circuit)?;
    let party = match a.party {
        PartyArg::A => Party::A,
        PartyArg::B => Party::B,
    };
    let owners = owners(&c, a.owners.as_deref())?;
    let mine: Vec<usize> = (0..owners.len()).filter(|&i| owners[i] == party).collect();
    let n = a.instances.max(1);
    let mut rng = SecureRng::from_os();
    let values: Vec<Vec<Vec<bool>>> = if a.random_inputs {
        mine.iter()
            .map(|&i| {
                (0..n)
                    .map(|_| (0..c.input_widths()[i]).map(|_| rng.next_u32() & 1 == 1).collect())
                    .collect()
            })
            .collect()
    } else {
        parse_inputs(&c, &a.input, &mine)?
            .into_iter()
            .map(|v| vec![v; n])
            .collect()
    };
    let mut it = values.into_iter();
    let inputs = PartyInputs {
        values: owners
            .iter()
            .map(|&o| if o == party { it.next() } else { None })
            .collect(),
    };
    // The run's own memory: the triples (three bits per AND and instance, twice while
    // they are made) and a row of words per slot.
    let need = (lc_need(&c) as u128) * n as u128;
    if let Some(b) = crate::util::memory_budget()
        && need > b as u128
    {
        bail!(
            "{n} instances of this circuit need about {}; this process may use {}",
            crate::util::mib(need as u64),
            crate::util::mib(b)
        );
    }
    let lc = Arc::new(LayeredCircuit::new(c.clone()));
    let mut channel = peer_channel(&a.channel, store, Protocol::MpcRun)?;
    let triples = a.triples.triples(party, store)?;
    let need = lc.and_gates() * n;
    let bar = match (a.triples.triples, party) {
        (TriplesArg::Ot, _) => triples_bar(need, "OT extension"),
        (TriplesArg::Token, Party::A) => triples_bar(need, "token: c_A"),
        (TriplesArg::Token, Party::B) => indicatif::ProgressBar::hidden(),
    };
    let session = Session::builder(lc.clone())
        .owners(owners)
        .instances(n)
        .party_inputs(inputs)
        .triples(triples)
        .spin(Duration::from_micros(a.spin_us));
    let out = match party {
        Party::A => {
            let addr = a
                .listen
                .as_deref()
                .ok_or_else(|| anyhow!("party a needs --listen ADDR"))?;
            session
                .channel(listening_channel(&channel)?)
                .on_event(listener_events(&channel, "party a", Some(bar.clone()))?)
                .listen(addr)
                .await
        }
        Party::B => {
            let addr = a
                .connect
                .as_deref()
                .ok_or_else(|| anyhow!("party b needs --connect ADDR"))?;
            let (mut conn, peer) = channel.connect(addr, &tacit_net::NetConfig::default()).await?;
            eprintln!("party b: {}", peer.describe());
            let b = bar.clone();
            session
                .on_event(move |e| progress(Some(&b), &e))
                .run(&mut conn, Party::B, peer.fingerprint)
                .await
        }
    };
    bar.finish_and_clear();
    let out = out?;
    let report = out.report;
    if a.json {
        let mut v = report_json(&c, &report, party, a.triples.triples);
        v["channel"] = json!(if out.peer_key.is_some() { "tls" } else { "plain" });
        v["peer_key"] = json!(out.peer_key.map(hex::encode));
        println!("{v}");
    } else {
        for o in &report.outputs.values[0] {
            println!("{}", to_bit_string(o));
        }
        eprintln!(
            "{} AND gates, depth {}; setup {:.1} ms, online {:.1} ms ({} rounds, {} bytes sent)",
            lc.and_gates(),
            lc.and_depth(),
            report.setup.time.as_secs_f64() * 1e3,
            report.online.time.as_secs_f64() * 1e3,
            report.online.rounds,
            report.online.bytes_sent
        );
    }
    Ok(())
}

/// Party a's access to its token at `addr`: TLS with the store's token link key (the
/// key the token is paired with), the token's link key pinned (`pin`) or recorded on
/// first use under `mpc-token/ADDR` (and required from then on).
pub fn token_access(store: Option<&Path>, addr: &str, pin: Option<&str>) -> Result<TokenAccess> {
    let path = store_path(store)?;
    let mut st = crate::util::open_store(&path)?;
    let id = tls_identity(&mut st, HOST_PURPOSE, "tacit-host.invalid")?;
    let trust = match pin {
        Some(p) => Trust::Pinned(parse_fingerprint(p).context("--token-pin")?),
        None => Trust::FirstUse {
            store: st,
            name: format!("mpc-token/{addr}"),
        },
    };
    let client = client_config(&trust, Some(&id))?.ok_or_else(|| anyhow!("the token link runs over TLS"))?;
    let access = TokenAccess::with_client_config(addr, client);
    if !matches!(trust, Trust::FirstUse { .. }) {
        return Ok(access);
    }
    // Trust on first use: the key is recorded after the first handshake; a later
    // link (the sessions of a server) must present the same key.
    let trust = Arc::new(Mutex::new(trust));
    Ok(access.after_handshake(Arc::new(move |cert: Option<&[u8]>| {
        let mut trust = trust.lock().unwrap_or_else(|e| e.into_inner());
        let fail = |e: tacit_net::channel::Error| e.to_string();
        if let (Some(known), Some(cert)) = (trust.recorded().map_err(fail)?, cert) {
            let got = tacit_net::tls::spki_fingerprint(cert).map_err(|e| e.to_string())?;
            if got != known {
                return Err(format!(
                    "the token's link key {} is not the one recorded on first use ({})",
                    hex::encode(got),
                    hex::encode(known)
                ));
            }
        }
        if let Some(fp) = trust.record(cert).map_err(fail)? {
            eprintln!("token link key {} recorded on first use", hex::encode(fp));
        }
        Ok(())
    })))
}

/// A progress bar over `need` triples, shown from 2^20 triples on (a second or more
/// of triple generation) and hidden below.
fn triples_bar(need: usize, msg: &'static str) -> indicatif::ProgressBar {
    if need >= 1 << 20 {
        crate::util::progress(need as u64, msg)
    } else {
        indicatif::ProgressBar::hidden()
    }
}

pub async fn fill_with_progress(holder: &mut TokenHolder<TcpTokenLink>, need: usize) -> Result<()> {
    let bar = triples_bar(need, "token: c_A");
    // `fill` counts bytes of c_A (8 triples each); the token makes whole sequences,
    // so the total can exceed `need`.
    tacit_mpc::token::fill(holder, need, |done, total| {
        progress(Some(&bar), &Event::TokenFill { done, total })
    })
    .await?;
    bar.finish_and_clear();
    Ok(())
}

/// The rollback guard's path: `--guard`, else the seal key's path with `.guard` added.
fn guard_path(seal_key: &Path, guard: Option<&Path>) -> PathBuf {
    guard.map(Path::to_path_buf).unwrap_or_else(|| {
        let mut s = seal_key.as_os_str().to_os_string();
        s.push(".guard");
        PathBuf::from(s)
    })
}

/// Reads a seal key file (64 hex digits).
pub fn read_seal_key(path: &Path) -> Result<SealKey> {
    let text = zeroize::Zeroizing::new(crate::util::read_text(path, "seal key", 256)?);
    let mut b = zeroize::Zeroizing::new([0u8; 32]);
    hex::decode_to_slice(text.trim(), &mut b[..])
        .map_err(|_| anyhow!("{} is not a seal key (64 hex digits)", path.display()))?;
    Ok(SealKey::from_bytes(*b))
}

/// Reads a CA signing key file (32 bytes).
fn read_ca_key(path: &Path) -> Result<SigningKey> {
    let b = zeroize::Zeroizing::new(crate::util::read_file(path, "CA key", 64).with_context(|| {
        format!(
            "reading the CA key {} (made by `tacit mpc token ca --out {}`)",
            path.display(),
            path.display()
        )
    })?);
    let seed: [u8; 32] = b
        .as_slice()
        .try_into()
        .map_err(|_| anyhow!("{} is not a 32-byte CA key", path.display()))?;
    Ok(SigningKey::from_seed(&seed))
}

/// Writes a new token's sealed state and its guard (`tacit mpc token init`, the benches).
pub fn write_token(state_path: &Path, seal_key: &SealKey, guard: &Path, st: &TokenState) -> Result<()> {
    FileEeprom::new(state_path, seal_key.clone(), guard)
        .create(st)
        .with_context(|| format!("writing {}", state_path.display()))
}

async fn token(t: TokenCommand, store: Option<&Path>) -> Result<()> {
    match t {
        TokenCommand::Ca(a) => {
            let k = SigningKey::generate(&mut SecureRng::from_os());
            write_private(&a.out, &k.to_seed()[..])?;
            println!(
                "manufacturer CA key (give to party b as --trust-ca): {}",
                hex::encode(k.verifying_key().to_bytes())
            );
            Ok(())
        }
        TokenCommand::HostKey => {
            let path = store_path(store)?;
            let mut st = crate::util::open_store(&path)?;
            let id = tls_identity(&mut st, HOST_PURPOSE, "tacit-host.invalid")?;
            println!("{}", hex::encode(id.fingerprint()?));
            eprintln!("(pair a token with this key: tacit mpc token init ... --pair <this fingerprint>)");
            Ok(())
        }
        TokenCommand::Init(a) => {
            let mut rng = SecureRng::from_os();
            let ca = read_ca_key(&a.ca_key)?;
            let host = parse_fingerprint(&a.pair).context("--pair")?;
            let guard = guard_path(&a.seal_key, a.guard.as_deref());
            for p in [&a.state, &guard] {
                if p.exists() {
                    if *p == guard && !a.state.exists() {
                        bail!(
                            "{} exists: it is the rollback guard of another token sealed with {}; \
                             give this token a guard of its own with --guard FILE (or a seal key of its own)",
                            p.display(),
                            a.seal_key.display()
                        );
                    }
                    bail!(
                        "{} exists; a token is manufactured once (choose another --state to make another)",
                        p.display()
                    );
                }
            }
            let seal = if a.seal_key.exists() {
                read_seal_key(&a.seal_key)?
            } else {
                let (k, bytes) = SealKey::generate(&mut rng);
                let text = zeroize::Zeroizing::new(format!("{}\n", hex::encode(*bytes)));
                write_private(&a.seal_key, text.as_bytes())?;
                eprintln!(
                    "seal key written to {} (keep it apart from the state, where neither party can read it)",
                    a.seal_key.display()
                );
                k
            };
            let now = crate::util::now_unix();
            let spec = TokenSpec {
                manufacturer: a.manufacturer.clone(),
                kind: TokenKind::Software,
                not_before: now.saturating_sub(300),
                not_after: now + a.valid_days * 86_400,
                policy: a.policy.clone().unwrap_or_else(|| SOFTWARE_POLICY.to_string()),
                host,
            };
            let st = TokenState::manufacture(&ca, &spec, &mut rng)?;
            write_token(&a.state, &seal, &guard, &st)?;
            let link = st.link_identity()?.fingerprint()?;
            println!(
                "token {} (software; valid {} days)",
                hex::encode(st.certificate.token_id),
                a.valid_days
            );
            println!(
                "token link key (party a pins it with --token-pin): {}",
                hex::encode(link)
            );
            println!(
                "manufacturer CA key (give to party b as --trust-ca): {}",
                hex::encode(ca.verifying_key().to_bytes())
            );
            eprintln!("rollback guard: {}", guard.display());
            Ok(())
        }
        TokenCommand::Serve(a) => {
            let guard = guard_path(&a.seal_key, a.guard.as_deref());
            let card = tacit_mpc::token::open_card(&a.state, read_seal_key(&a.seal_key)?, &guard)?;
            // Connections at once (a host needs one or two), each within the session
            // timeout; when full, a newcomer from a less busy address takes the busiest
            // address's oldest connection, so that a flood from elsewhere cannot keep
            // the host out (tacit_net::guard). A connection that has not finished its
            // handshake in 5 s is closed.
            let mut token = Token::builder(card)
                .listen(a.listen.as_str())
                .max_connections(a.max_connections as usize)
                .session_timeout(Duration::from_secs(a.session_timeout))
                .on_event(|line| eprintln!("token: {}", sanitize(&line)));
            if let Some(n) = a.connections {
                token = token.connections(n);
            }
            let token = token.bind().await?;
            eprintln!(
                "token link key {} (the paired host pins it with --token-pin)",
                hex::encode(token.link_fingerprint())
            );
            eprintln!("token listening on {}", token.local_addr());
            token.serve().await?;
            Ok(())
        }
        TokenCommand::Fill(a) => {
            let addr = a
                .link
                .token
                .as_deref()
                .ok_or_else(|| anyhow!("--token ADDR is required"))?;
            let access = token_access(store, addr, a.link.token_pin.as_deref())?.pool(&a.pool);
            let mut holder = tacit_mpc::token::connect(&access).await?;
            fill_with_progress(&mut holder, a.triples).await?;
            println!(
                "pool holds {} triples of token {}",
                holder.pool.triples(&holder.certificate.token_id),
                hex::encode(holder.certificate.token_id)
            );
            Ok(())
        }
    }
}

fn write_private(p: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600);
    }
    let mut f = o.open(p).with_context(|| format!("creating {}", p.display()))?;
    f.write_all(bytes)?;
    f.sync_all()?;
    Ok(())
}
