//! `tacit mpc eval | run | token`.

use anyhow::{Context, Result, anyhow, bail};
use clap::{Args, Subcommand, ValueEnum};
use rand_core::RngCore;
use serde_json::json;
use std::path::{Path, PathBuf};
use tacit_crypto::rng::SecureRng;
use tacit_crypto::sign::{SigningKey, VerifyingKey};
use tacit_mpc::bits::{parse_bit_string, to_bit_string};
use tacit_mpc::circuit::{Circuit, LayeredCircuit, bristol};
use tacit_mpc::driver::{RunReport, SessionConfig, run};
use tacit_mpc::gmw::PartyInputs;
use tacit_mpc::triples::ot::OtSource;
use tacit_mpc::triples::token::card::{Card, Eeprom, FileEeprom, TokenState};
use tacit_mpc::triples::token::holder::{Pool, TcpTokenLink, TokenHolder, TokenPeer, serve_connection};
use tacit_mpc::{Party, gmw};
use tacit_net::{FramedConn, FramedListener, NetConfig};
use tacit_wire::Encode;

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
Examples (two terminals):
  tacit mpc run --circuit aes_128.txt --party a --listen 127.0.0.1:7900 --input <128 bits>
  tacit mpc run --circuit aes_128.txt --party b --connect 127.0.0.1:7900 --input <128 bits>
With the token (start it with `tacit mpc token serve`):
  tacit mpc run ... --party a --triples token --token 127.0.0.1:7901 --pool ./pool
  tacit mpc run ... --party b --triples token --trust-ca <manufacturer CA key, hex>")]
    Run(RunArgs),
    /// The triple token: manufacture one, serve it over TCP (ISO 7816-4 APDUs), fill A's pool.
    #[command(subcommand)]
    Token(TokenCommand),
    /// Set intersection by sort–compare–shuffle under GMW (paper §6.3).
    #[command(subcommand)]
    Psi(super::psi::PsiCommand),
}

/// `tacit mpc token …`
#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Manufacture a token: master keys, static key, certificate by the manufacturer CA.
    #[command(after_help = "\
Example:
  tacit mpc token init --state token.state --ca-key manufacturer.key
  (creates manufacturer.key if it does not exist; prints the CA key B must trust)")]
    Init(TokenInitArgs),
    /// Serve the token on a TCP port, one host connection at a time.
    #[command(after_help = "Example:\n  tacit mpc token serve --state token.state --listen 127.0.0.1:7901")]
    Serve(TokenServeArgs),
    /// Init phase: have the token generate sequences covering N triples into A's pool.
    #[command(after_help = "Example:\n  tacit mpc token fill --token 127.0.0.1:7901 --pool ./pool --triples 1000000")]
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
    /// Triple source.
    #[arg(long, value_enum, default_value = "ot")]
    triples: TriplesArg,
    /// Party a with --triples token: the token's address.
    #[arg(long, value_name = "ADDR")]
    token: Option<String>,
    /// Party a with --triples token: the folder of stored c_A sequences (default: in memory).
    #[arg(long, value_name = "DIR")]
    pool: Option<PathBuf>,
    /// Party b with --triples token: the manufacturer CA key to trust (hex).
    #[arg(long, value_name = "HEX")]
    trust_ca: Option<String>,
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

/// Options of `mpc token init`.
#[derive(Debug, Args)]
pub struct TokenInitArgs {
    /// Where the token keeps its state (its "EEPROM").
    #[arg(long, value_name = "FILE")]
    state: PathBuf,
    /// The manufacturer CA's signing key (created if missing).
    #[arg(long, value_name = "FILE")]
    ca_key: PathBuf,
    /// Manufacturer name written in the certificate.
    #[arg(long, default_value = "tacit software token")]
    manufacturer: String,
}

/// Options of `mpc token serve`.
#[derive(Debug, Args)]
pub struct TokenServeArgs {
    /// The token's state file.
    #[arg(long, value_name = "FILE")]
    state: PathBuf,
    /// Where to listen.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:7901")]
    listen: String,
    /// Stop after this many host connections (default: serve forever).
    #[arg(long)]
    connections: Option<u64>,
}

/// Options of `mpc token fill`.
#[derive(Debug, Args)]
pub struct TokenFillArgs {
    /// The token's address.
    #[arg(long, value_name = "ADDR")]
    token: String,
    /// A's pool folder.
    #[arg(long, value_name = "DIR")]
    pool: PathBuf,
    /// Triples to cover.
    #[arg(long)]
    triples: usize,
}

pub fn run_cmd(cmd: MpcCommand) -> Result<()> {
    match cmd {
        MpcCommand::Eval(a) => eval(a),
        MpcCommand::Run(a) => {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            rt.block_on(run_party(a))
        }
        MpcCommand::Token(t) => {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            rt.block_on(token(t))
        }
        MpcCommand::Psi(p) => super::psi::run(p),
    }
}

pub fn load_circuit(path: &Path) -> Result<Circuit> {
    let meta = std::fs::metadata(path).with_context(|| format!("reading {}", path.display()))?;
    if meta.len() > 1 << 31 {
        bail!(
            "{} is {} bytes; circuits up to 2 GiB are read",
            path.display(),
            meta.len()
        );
    }
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    bristol::parse(&text).with_context(|| format!("{}", path.display()))
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

async fn run_party(a: RunArgs) -> Result<()> {
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
    let lc = LayeredCircuit::new(c.clone());
    let cfg = NetConfig::default();
    let mut conn = match party {
        Party::A => {
            let addr = a
                .listen
                .as_deref()
                .ok_or_else(|| anyhow!("party a needs --listen ADDR"))?;
            let l = FramedListener::bind(addr, &cfg)
                .await
                .with_context(|| format!("listening on {addr}"))?;
            eprintln!("party a listening on {}", l.local_addr()?);
            l.accept().await?
        }
        Party::B => {
            let addr = a
                .connect
                .as_deref()
                .ok_or_else(|| anyhow!("party b needs --connect ADDR"))?;
            FramedConn::connect(addr, &cfg)
                .await
                .with_context(|| format!("connecting to {addr}"))?
        }
    };
    let session = SessionConfig::new(n, owners).with_spin(std::time::Duration::from_micros(a.spin_us));
    let report = match (a.triples, party) {
        (TriplesArg::Ot, _) => {
            let bar = triples_bar(lc.and_gates() * n, "OT extension");
            let b = bar.clone();
            let mut src = OtSource::new(SecureRng::from_os()).with_progress(move |done, _| b.set_position(done));
            let r = run(&mut conn, &lc, party, &session, &inputs, &mut src, &mut rng).await;
            bar.finish_and_clear();
            r?
        }
        (TriplesArg::Token, Party::A) => {
            let taddr = a
                .token
                .as_deref()
                .ok_or_else(|| anyhow!("party a with --triples token needs --token ADDR"))?;
            let mut holder = connect_token(taddr, a.pool.as_deref()).await?;
            let need = lc.and_gates() * n;
            fill_with_progress(&mut holder, need).await?;
            run(&mut conn, &lc, party, &session, &inputs, &mut holder, &mut rng).await?
        }
        (TriplesArg::Token, Party::B) => {
            let hexkey = a
                .trust_ca
                .as_deref()
                .ok_or_else(|| anyhow!("party b with --triples token needs --trust-ca HEX"))?;
            let ca = VerifyingKey::from_bytes(&hex::decode(hexkey.trim()).context("--trust-ca is not hex")?)
                .map_err(|e| anyhow!("--trust-ca: {e}"))?;
            let mut src = TokenPeer::new(ca, SecureRng::from_os());
            run(&mut conn, &lc, party, &session, &inputs, &mut src, &mut rng).await?
        }
    };
    if a.json {
        println!("{}", report_json(&c, &report, party, a.triples));
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

pub async fn connect_token(addr: &str, pool: Option<&Path>) -> Result<TokenHolder<TcpTokenLink>> {
    let conn = FramedConn::connect(addr, &NetConfig::default())
        .await
        .with_context(|| format!("connecting to the token at {addr}"))?;
    let pool = match pool {
        Some(p) => Pool::open(p)?,
        None => Pool::in_memory(),
    };
    Ok(TokenHolder::new(TcpTokenLink::new(conn), pool).await?)
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
    holder
        .fill(need, &mut |done, total| {
            bar.set_length(8 * total);
            bar.set_position(8 * done);
        })
        .await?;
    bar.finish_and_clear();
    Ok(())
}

async fn token(t: TokenCommand) -> Result<()> {
    match t {
        TokenCommand::Init(a) => {
            let mut rng = SecureRng::from_os();
            let ca = if a.ca_key.exists() {
                let b = std::fs::read(&a.ca_key).with_context(|| format!("reading {}", a.ca_key.display()))?;
                let seed: [u8; 32] = b
                    .as_slice()
                    .try_into()
                    .map_err(|_| anyhow!("{} is not a 32-byte key", a.ca_key.display()))?;
                SigningKey::from_seed(&seed)
            } else {
                let k = SigningKey::generate(&mut rng);
                write_private(&a.ca_key, &k.to_seed()[..])?;
                k
            };
            if a.state.exists() {
                bail!("{} exists; a token is manufactured once", a.state.display());
            }
            let st = TokenState::manufacture(&ca, &a.manufacturer, &mut rng);
            // The token's EEPROM file (two slots, mode 0600).
            FileEeprom::new(&a.state)
                .commit(&st.to_wire())
                .with_context(|| format!("writing {}", a.state.display()))?;
            println!("token {}", hex::encode(st.certificate.token_id));
            println!(
                "manufacturer CA key (give to party b as --trust-ca): {}",
                hex::encode(ca.verifying_key().to_bytes())
            );
            Ok(())
        }
        TokenCommand::Serve(a) => {
            let st = FileEeprom::load(&a.state)?;
            let mut card = Card::new(st, FileEeprom::new(&a.state))?;
            let l = FramedListener::bind(&a.listen, &NetConfig::default())
                .await
                .with_context(|| format!("listening on {}", a.listen))?;
            eprintln!("token listening on {}", l.local_addr()?);
            let mut served = 0u64;
            loop {
                let c = l.accept().await?;
                if let Err(e) = serve_connection(&mut card, c).await {
                    eprintln!("token: host connection ended: {e}");
                }
                served += 1;
                if a.connections.is_some_and(|n| served >= n) {
                    return Ok(());
                }
            }
        }
        TokenCommand::Fill(a) => {
            let mut holder = connect_token(&a.token, Some(&a.pool)).await?;
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
