//! `tacit pir server …`, `tacit pir client …`, `tacit pir verify-proof`: TracEdge
//! (Algorithm 1 with the table log) over TLS. The servers and clients are
//! `tacit_pir::tracedge::service`; this file parses, calls and prints.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use clap::{Args, Subcommand};
use tacit_pir::LweBackend;
use tacit_pir::tracedge::service::{client, operator, server};
use tacit_pir::tracedge::*;
use tacit_wire::{Decode, Encode};

use crate::util::sanitize;

/// `tacit pir server …`.
#[derive(Debug, Subcommand)]
pub enum ServerCommand {
    /// Create the server's keys (Ed25519 signing key, ristretto255 key for empty rows,
    /// TLS identity), fix the number of rows and start the table log.
    #[command(after_help = "Example:\n  tacit pir server init --store op.sqlite3 --rows 100000")]
    Init(InitArgs),
    /// Register a subscriber's public key (from `tacit pir client keygen`); prints the
    /// row it keeps across tables and writes the signed enrolment receipt to hand back.
    #[command(after_help = "\
With no server running, the command signs the log entry and the receipt itself; with
`pir server serve` running on the store it waits for the server to do it (--wait).
Example:
  tacit pir server register --store op.sqlite3 --key 5e3c… --label alice --receipt-out alice.receipt")]
    Register(RegisterArgs),
    /// Remove the subscriber of a row: a signed log entry empties it and a rekey
    /// follows (the row is not handed out again before that rekey).
    #[command(after_help = "Example:\n  tacit pir server remove --store op.sqlite3 --row 17")]
    Remove(RemoveArgs),
    /// Put a new table key in the pool; a running server builds the table while it
    /// keeps serving, then deprecates the old one.
    #[command(after_help = "Example:\n  tacit pir server rekey --store op.sqlite3")]
    Rekey(StoreArg),
    /// Subscribers, tables, the table log and their status.
    #[command(after_help = "Example:\n  tacit pir server status --store op.sqlite3 --json")]
    Status(StatusArgs),
    /// Write the enrolment receipt of a row (to hand to its subscriber).
    #[command(after_help = "Example:\n  tacit pir server receipt --store op.sqlite3 --row 3 --out alice.receipt")]
    Receipt(ReceiptArgs),
    /// Serve authentications over TLS (one serving process per store).
    #[command(after_help = "\
Examples:
  tacit pir server serve --store op.sqlite3 --listen 127.0.0.1:7690 --open-enrollment
  tacit pir server serve --store op.sqlite3 --cheat-rows 3,17   # SIMULATION of a cheating server")]
    Serve(ServeArgs),
}

/// `tacit pir client …`.
#[derive(Debug, Subcommand)]
pub enum ClientCommand {
    /// Make a key pair and register it with an open-enrolment server (with a proof of
    /// possession); writes the identity file with the signed receipt.
    #[command(
        after_help = "Example:\n  tacit pir client enroll --connect 127.0.0.1:7690 --pin 3f1c… --server-key 9a0b… --out alice.json"
    )]
    Enroll(EnrollArgs),
    /// Make a key pair for closed enrolment: writes the identity file and prints the
    /// public key for `tacit pir server register --key`.
    #[command(
        after_help = "Example:\n  tacit pir client keygen --connect hotspot.example:7690 --pin 3f1c… --server-key 9a0b… --out alice.json"
    )]
    Keygen(EnrollArgs),
    /// Put the receipt the operator gave you into your identity file.
    #[command(after_help = "Example:\n  tacit pir client import-receipt --id alice.json --receipt alice.receipt")]
    ImportReceipt(ImportArgs),
    /// Authenticate anonymously (Algorithm 1 with α audits); on misbehaviour, write
    /// the proof (exit status 3).
    #[command(after_help = "Example:\n  tacit pir client auth --id alice.json --proof caught.proof")]
    Auth(AuthArgs),
    /// Authenticate with many audits (16 rows by default) to check the table.
    #[command(after_help = "Example:\n  tacit pir client audit --id alice.json --audits 32")]
    Audit(AuthArgs),
    /// Compare two subscribers' copies of the server's table log (identity or .view
    /// files): a server that showed them different tables is proven (exit status 3).
    #[command(after_help = "Example:\n  tacit pir client compare alice.json bob.json --proof equivocation.proof")]
    Compare(CompareArgs),
}

/// `--store`.
#[derive(Debug, Args)]
pub struct StoreArg {
    /// The store (default: $TACIT_STORE or ~/.local/share/tacit/tacit.sqlite3).
    #[arg(long)]
    store: Option<PathBuf>,
}

/// Options of `server init`.
#[derive(Debug, Args)]
pub struct InitArgs {
    #[command(flatten)]
    store: StoreArg,
    /// Rows of the table (subscribers it can hold).
    #[arg(long)]
    rows: u64,
    /// The commitment: binding (default) or paper-equivocable (the paper's, which the
    /// server can open to any key; for reproduction only).
    #[arg(long, default_value = "binding")]
    commitment: CommitScheme,
    /// Seconds the keys of a deprecated table stay valid.
    #[arg(long, default_value_t = 3600)]
    grace_secs: u64,
}

/// Options of `server register`.
#[derive(Debug, Args)]
pub struct RegisterArgs {
    #[command(flatten)]
    store: StoreArg,
    /// The subscriber's public key (hex, 32 bytes).
    #[arg(long)]
    key: String,
    /// A label (at most 64 bytes).
    #[arg(long, default_value = "")]
    label: String,
    /// Write the receipt (hex) to this file (default: print it).
    #[arg(long)]
    receipt_out: Option<PathBuf>,
    /// With a server running: seconds to wait for it to sign the receipt.
    #[arg(long, default_value_t = 30)]
    wait: u64,
}

/// Options of `server remove`.
#[derive(Debug, Args)]
pub struct RemoveArgs {
    #[command(flatten)]
    store: StoreArg,
    /// The row.
    #[arg(long)]
    row: u64,
}

/// Options of `server status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    store: StoreArg,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Options of `server receipt`.
#[derive(Debug, Args)]
pub struct ReceiptArgs {
    #[command(flatten)]
    store: StoreArg,
    /// The row.
    #[arg(long)]
    row: u64,
    /// Write it (hex) to this file (default: print it).
    #[arg(long)]
    out: Option<PathBuf>,
}

/// Options of `server serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    store: StoreArg,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:7690")]
    listen: String,
    /// Accept enrolment requests (with a proof of possession) from anyone who
    /// connects, at most one per second per address.
    #[arg(long)]
    open_enrollment: bool,
    /// Most queries answered in one pass over the table.
    #[arg(long, default_value_t = 32)]
    batch: usize,
    /// Stop after this many sessions: a number (0: stop once the table is built and
    /// committed, before serving any) or `forever` (the default). Before issue 28, 0
    /// meant "never" here and "at once" elsewhere; `forever` is that spelling now.
    #[arg(long, value_name = "N", value_parser = crate::util::parse_sessions)]
    sessions: Option<u64>,
    /// Connections at once, in all.
    #[arg(long, default_value_t = 512)]
    max_connections: usize,
    /// Connections at once from one address.
    #[arg(long, default_value_t = 32)]
    max_per_address: usize,
    /// Where the PIR server runs: lwe (all CPU cores) or lwe-gpu (NVIDIA GPUs, which
    /// also build the table's rows; the same answers and rows; without a GPU it stops
    /// with a one-line reason).
    #[arg(long, default_value = "lwe", value_parser = ["lwe", "lwe-gpu"])]
    backend: String,
    /// GPUs for --backend lwe-gpu: all, or ordinals like 0,1 (the table is split by rows).
    #[arg(long, default_value = "all")]
    gpus: String,
    /// SIMULATION: give these rows a second key (a cheating server, §3.4).
    #[arg(long, value_delimiter = ',')]
    cheat_rows: Vec<u64>,
    /// SIMULATION: with --cheat-rows on a paper-equivocable table, equivocate the
    /// commitment so that flagged clients' checks pass.
    #[arg(long)]
    cheat_equivocate: bool,
}

/// Options of `client enroll` and `client keygen`.
#[derive(Debug, Args)]
pub struct EnrollArgs {
    /// The server.
    #[arg(long)]
    connect: String,
    /// SHA-256 fingerprint of the server's TLS key (hex), from `server init`.
    #[arg(long)]
    pin: String,
    /// The server's Ed25519 signature key (hex), from `server init`.
    #[arg(long)]
    server_key: String,
    /// Where to write the identity (secret key, row, receipt, server keys).
    #[arg(long)]
    out: PathBuf,
    /// A label for the operator (at most 64 bytes).
    #[arg(long, default_value = "")]
    label: String,
}

/// Options of `client import-receipt`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The identity file from `client keygen`.
    #[arg(long)]
    id: PathBuf,
    /// The receipt file from `server register --receipt-out` (hex).
    #[arg(long)]
    receipt: PathBuf,
}

/// Options of `client auth` / `client audit`.
#[derive(Debug, Args)]
pub struct AuthArgs {
    /// The identity file from `client enroll` (its copy of the table log is kept
    /// beside it, in ID.view).
    #[arg(long)]
    id: PathBuf,
    /// Rows audited in one weighted query (auth: 4, audit: 16); at most the rows of
    /// one slot of the table (the command says how many when asked for more).
    #[arg(long)]
    audits: Option<usize>,
    /// Where to write a proof of misbehaviour if the server is caught.
    #[arg(long, default_value = "tracedge.proof")]
    proof: PathBuf,
    /// Accept the paper's equivocable commitment.
    #[arg(long)]
    accept_paper_commitment: bool,
    /// Folder for the table's hint, kept between authentications and used again
    /// while the server's signed table id matches it (default: the identity file's
    /// path with `.hints` appended). The hint is public.
    #[arg(long)]
    hint_cache: Option<PathBuf>,
    /// Download the hint every time and keep nothing.
    #[arg(long, conflicts_with = "hint_cache")]
    no_hint_cache: bool,
    /// New sessions after the server's typed "table changed" or "busy" refusal (no
    /// other refusal is retried).
    #[arg(long, default_value_t = 1)]
    retries: u32,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Options of `client compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// One subscriber's identity (or .view) file.
    a: PathBuf,
    /// The other's.
    b: PathBuf,
    /// Where to write the proof if the views differ.
    #[arg(long, default_value = "equivocation.proof")]
    proof: PathBuf,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Options of `verify-proof`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The proof file.
    file: PathBuf,
    /// The server's published Ed25519 key (hex) to compare with the proof's.
    #[arg(long)]
    server_key: Option<String>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

fn store_of(a: &StoreArg) -> Result<PathBuf> {
    crate::util::store_path(a.store.as_deref())
}

fn hex32(s: &str, what: &str) -> Result<[u8; 32]> {
    let v = hex::decode(s.trim()).with_context(|| format!("{what} is not hex"))?;
    v.try_into()
        .map_err(|_| anyhow!("{what} must be 32 bytes (64 hex digits)"))
}

fn write_receipt(r: &EnrolmentReceipt, out: Option<&PathBuf>) -> Result<()> {
    let text = format!("{}\n", hex::encode(r.to_wire()));
    match out {
        Some(p) => {
            std::fs::write(p, text).with_context(|| format!("cannot write {}", p.display()))?;
            println!("receipt   {}", p.display());
        }
        None => print!("receipt   {text}"),
    }
    Ok(())
}

/// Runs `tacit pir server …`.
pub fn run_server(cmd: ServerCommand) -> Result<()> {
    match cmd {
        ServerCommand::Init(a) => {
            let r = operator::init(&store_of(&a.store)?, a.rows, a.commitment, a.grace_secs)?;
            if a.commitment == CommitScheme::PaperEquivocable {
                eprintln!(
                    "warning: the paper-equivocable commitment lets this server open it to any key; clients refuse it unless --accept-paper-commitment"
                );
            }
            println!("rows        {}", r.rows);
            println!("commitment  {}", r.scheme.name());
            println!("server-key  {}", hex::encode(r.server_key));
            println!("pin         {}", hex::encode(r.pin));
            Ok(())
        }
        ServerCommand::Register(a) => {
            let key = hex32(&a.key, "--key")?;
            let r = operator::register(&store_of(&a.store)?, &key, &a.label, Duration::from_secs(a.wait))?;
            println!("row       {}", r.row);
            match &r.receipt {
                Some(rc) => write_receipt(rc, a.receipt_out.as_ref())?,
                None => eprintln!(
                    "the running server has not signed the receipt yet; get it later with `tacit pir server receipt --row {}`",
                    r.row
                ),
            }
            Ok(())
        }
        ServerCommand::Remove(a) => {
            operator::remove(&store_of(&a.store)?, a.row)?;
            eprintln!(
                "row {} removed: a signed log entry empties it, a rekey follows, and the row is not handed out again before that rekey",
                a.row
            );
            Ok(())
        }
        ServerCommand::Rekey(a) => {
            let epoch = operator::rekey(&store_of(&a)?)?;
            eprintln!("table {epoch} is in the pool; a running server builds it and deprecates the current one");
            Ok(())
        }
        ServerCommand::Receipt(a) => {
            let store = operator::open_existing(&store_of(&a.store)?)?;
            let r = operator::receipt(&store, a.row)?.ok_or_else(|| {
                anyhow!(
                    "row {} has no receipt (not registered, or not yet applied to the log)",
                    a.row
                )
            })?;
            write_receipt(&r, a.out.as_ref())
        }
        ServerCommand::Status(a) => {
            let s = operator::status(&store_of(&a.store)?)?;
            if a.json {
                let t: Vec<_> = s
                    .tables
                    .iter()
                    .map(|t| {
                        serde_json::json!({"epoch": t.epoch, "status": t.status, "created_unix": t.created_unix, "expires_unix": t.expires_unix,
                            "created": crate::util::iso_local(t.created_unix), "expires": t.expires_unix.map(crate::util::iso_local)})
                    })
                    .collect();
                println!(
                    "{}",
                    serde_json::json!({"rows": s.rows, "subscribers": s.subscribers, "freed_rows": s.freed_rows,
                        "commitment": s.scheme.name(), "server_key": hex::encode(s.server_key), "pin": hex::encode(s.pin),
                        "log_entries": s.log_entries, "log_head": hex::encode(s.log_head), "tables": t})
                );
            } else {
                println!(
                    "rows {} · subscribers {} · rows waiting for a rekey {} · commitment {}",
                    s.rows,
                    s.subscribers,
                    s.freed_rows,
                    s.scheme.name()
                );
                println!("server-key {}", hex::encode(s.server_key));
                println!("pin        {}", hex::encode(s.pin));
                println!("log        {} entries, head {}", s.log_entries, hex::encode(s.log_head));
                for t in s.tables {
                    println!(
                        "table {:>4}  {:<10}  created {}{}",
                        t.epoch,
                        t.status,
                        crate::util::iso_local(t.created_unix),
                        t.expires_unix
                            .map(|e| format!("  keys expire {}", crate::util::iso_local(e)))
                            .unwrap_or_default()
                    );
                }
            }
            Ok(())
        }
        ServerCommand::Serve(a) => serve(a),
    }
}

fn serve(a: ServeArgs) -> Result<()> {
    let store = store_of(&a.store)?;
    let backend = LweBackend::from_names(&a.backend, &a.gpus)?;
    if a.backend == "lwe-gpu" {
        tacit_pir::gpu::available()?;
    }
    let mut cheat = a.cheat_rows.clone();
    cheat.sort_unstable();
    cheat.dedup();
    if !cheat.is_empty() {
        eprintln!("tacit pir serve: SIMULATION — this server cheats: rows {cheat:?} get a second key");
    }
    // A bar on a terminal, else a line at each tenth of the rows and at least every
    // 10 s (issue 28, item 10), on stderr.
    let bars: std::sync::Mutex<Option<crate::util::progress::Progress>> = std::sync::Mutex::new(None);
    let events = move |e: server::ServerEvent| {
        use server::ServerEvent as E;
        match e {
            E::Listening { addr, pin, server_key } => eprintln!(
                "tacit pir serve: listening on {addr} (TLS 1.3, pin {}); server key {}",
                hex::encode(pin),
                hex::encode(server_key)
            ),
            E::BuildProgress { epoch, done, total } => {
                if let Ok(mut b) = bars.lock() {
                    let pb = b.get_or_insert_with(|| {
                        crate::util::progress::Progress::new(
                            total,
                            &format!("table {epoch}: rows"),
                            "tacit pir serve",
                            crate::util::progress::Unit::Items,
                            1,
                        )
                    });
                    pb.set_position(done);
                    if done >= total {
                        pb.finish();
                        *b = None;
                    }
                }
            }
            E::TableBuilt { epoch, secs, rows } => {
                eprintln!("tacit pir serve: table {epoch} built in {secs:.2} s ({rows} rows)")
            }
            E::TableCurrent { epoch } => eprintln!("tacit pir serve: table {epoch} is current"),
            E::RowsApplied { rows, seq } => {
                eprintln!("tacit pir serve: rows {rows:?} written on the fly (table log entry {seq})")
            }
            E::Rekeying { epoch } => eprintln!("tacit pir serve: a registered row changed: rekeying to table {epoch}"),
            E::KeysExpired { epoch } => eprintln!("tacit pir serve: the keys of table {epoch} expired"),
            E::Session { peer, what } => eprintln!("tacit pir serve: {peer}: {}", sanitize(&what)),
            E::Management(m) => eprintln!("tacit pir serve: table management: {}", sanitize(&m)),
        }
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(crate::util::shutdown::serving(async move {
        let running = server::Server::builder(&store)
            .listen(a.listen)
            .open_enrollment(a.open_enrollment)
            .batch(a.batch)
            .sessions(a.sessions.unwrap_or(u64::MAX))
            .backend(backend)
            .cheat_rows(cheat)
            .cheat_equivocate(a.cheat_equivocate)
            .max_connections(a.max_connections, a.max_per_address)
            .events(events)
            .bind()
            .await?;
        running.serve().await?;
        anyhow::Ok(())
    }))
}

/// Runs `tacit pir client …`.
pub fn run_client(cmd: ClientCommand) -> Result<()> {
    match cmd {
        ClientCommand::Keygen(a) => {
            let key = client::keygen(
                &a.connect,
                hex32(&a.pin, "--pin")?,
                hex32(&a.server_key, "--server-key")?,
                &a.out,
            )?;
            println!("public-key  {}", hex::encode(key));
            eprintln!(
                "identity written to {}; give the public key to the operator (`tacit pir server register --key …`) and import the receipt you get back (`tacit pir client import-receipt`)",
                a.out.display()
            );
            Ok(())
        }
        ClientCommand::ImportReceipt(a) => {
            let text = crate::util::read_file(&a.receipt, "receipt", 4097)?;
            if text.len() > 4096 {
                bail!("{} is not a receipt (too long)", a.receipt.display());
            }
            let bytes = match std::str::from_utf8(&text).ok().and_then(|t| hex::decode(t.trim()).ok()) {
                Some(b) => b,
                None => text,
            };
            let r = client::import_receipt(&a.id, &bytes)?;
            println!("row {} of {}; receipt stored in {}", r.row, r.rows, a.id.display());
            Ok(())
        }
        ClientCommand::Compare(a) => {
            let proof = client::compare(&a.a, &a.b)?;
            match proof {
                None => {
                    if a.json {
                        println!("{}", serde_json::json!({"consistent": true}));
                    } else {
                        println!("consistent: every table log entry both views hold is the same");
                    }
                    Ok(())
                }
                Some(p) => {
                    let f = p.verify()?;
                    std::fs::write(&a.proof, p.to_wire())
                        .with_context(|| format!("cannot write {}", a.proof.display()))?;
                    if a.json {
                        println!(
                            "{}",
                            serde_json::json!({"consistent": false, "finding": f.what, "proof": a.proof.display().to_string()})
                        );
                    } else {
                        println!("SERVER CAUGHT: {}", f.what);
                        println!(
                            "proof written to {} (check it: tacit pir verify-proof {})",
                            a.proof.display(),
                            a.proof.display()
                        );
                    }
                    std::process::exit(3);
                }
            }
        }
        other => {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            match other {
                ClientCommand::Enroll(a) => rt.block_on(enroll(a)),
                ClientCommand::Auth(a) => rt.block_on(auth(a, 4)),
                ClientCommand::Audit(a) => rt.block_on(auth(a, 16)),
                _ => Ok(()),
            }
        }
    }
}

async fn enroll(a: EnrollArgs) -> Result<()> {
    let r = match client::enroll(
        &a.connect,
        hex32(&a.pin, "--pin")?,
        hex32(&a.server_key, "--server-key")?,
        &a.label,
        &a.out,
    )
    .await
    {
        Ok(r) => r,
        // The log the server sent to honour the receipt contradicts it (or itself).
        Err(tacit_pir::tracedge::service::ServiceError::Caught(proof)) => {
            let finding = proof.verify()?;
            let mut path = a.out.clone().into_os_string();
            path.push(".proof");
            let path = PathBuf::from(path);
            std::fs::write(&path, proof.to_wire()).with_context(|| format!("cannot write {}", path.display()))?;
            println!("SERVER CAUGHT CHEATING at enrolment: {}", finding.what);
            println!(
                "proof written to {} (check it: tacit pir verify-proof {} --server-key {})",
                path.display(),
                path.display(),
                a.server_key
            );
            std::process::exit(3);
        }
        Err(e) => return Err(e.into()),
    };
    println!(
        "enrolled at row {} of {}; identity (with the signed receipt) written to {}",
        r.row,
        r.rows,
        a.out.display()
    );
    Ok(())
}

async fn auth(a: AuthArgs, default_audits: usize) -> Result<()> {
    let opts = client::AuthOptions {
        audits: a.audits.unwrap_or(default_audits),
        accept_paper_commitment: a.accept_paper_commitment,
        hint_cache: a.hint_cache.clone(),
        default_hint_cache: !a.no_hint_cache,
        retries: a.retries,
        ..Default::default()
    };
    let r = client::authenticate(&a.id, &opts).await?;
    let t = &r.times;
    let times = serde_json::json!({
        "connect_ms": t.connect_ms, "log_ms": t.log_ms, "hint_ms": t.hint_ms, "hint_cached": r.hint_cached,
        "query_ms": t.query_ms, "answer_ms": t.answer_ms, "check_and_auth_ms": t.check_and_auth_ms, "total_ms": t.total_ms});
    let audited = r.audited_rows.len();
    match r.outcome {
        client::AuthOutcome::Authenticated {
            session_key,
            epoch,
            expires_ms,
        } => {
            let fp = hex::encode(&tacit_pir::tracedge::hash_bytes(&session_key[..])[..8]);
            if a.json {
                println!(
                    "{}",
                    serde_json::json!({"outcome": "authenticated", "epoch": epoch, "expires_ms": expires_ms,
                    "audits": audited, "audited_rows": r.audited_rows, "session_key_fingerprint": fp,
                    "log_entries_fetched": r.log_entries_fetched, "sessions": r.sessions, "times": times})
                );
            } else {
                println!("authenticated anonymously (table {epoch}, {audited} rows audited); session key {fp}…");
            }
            Ok(())
        }
        client::AuthOutcome::NotEnrolled { row, since } => {
            let why =
                format!("the server's signed table log removed this subscriber's key from row {row} (entry {since})");
            if a.json {
                println!(
                    "{}",
                    serde_json::json!({"outcome": "not_enrolled", "row": row, "log_entry": since, "reason": why})
                );
            }
            bail!("not enrolled: {why}")
        }
        client::AuthOutcome::Refused { code, reason } => {
            let reason = sanitize(&reason);
            if a.json {
                println!(
                    "{}",
                    serde_json::json!({"outcome": "refused", "code": format!("{code:?}"), "reason": reason, "sessions": r.sessions, "times": times})
                );
            }
            bail!("refused: {reason}")
        }
        client::AuthOutcome::Caught(proof) => {
            let finding = proof.verify()?;
            std::fs::write(&a.proof, proof.to_wire()).with_context(|| format!("cannot write {}", a.proof.display()))?;
            if a.json {
                println!(
                    "{}",
                    serde_json::json!({"outcome": "caught", "finding": finding.what,
                    "proof": a.proof.display().to_string(), "times": times})
                );
            } else {
                println!("SERVER CAUGHT CHEATING: {}", finding.what);
                println!(
                    "proof written to {} (check it: tacit pir verify-proof {})",
                    a.proof.display(),
                    a.proof.display()
                );
            }
            std::process::exit(3);
        }
    }
}

/// The largest proof file read (the hint of the largest table, and then some).
const MAX_PROOF_FILE: u64 = 1 << 31;

/// Runs `tacit pir verify-proof`.
pub fn verify_proof(a: VerifyArgs) -> Result<()> {
    let bytes = crate::util::read_file(&a.file, "proof", MAX_PROOF_FILE)?;
    let proof = MisbehaviourProof::from_wire(&bytes)
        .with_context(|| format!("{} is not a TracEdge proof", a.file.display()))?;
    if let Some(k) = &a.server_key
        && hex32(k, "--server-key")? != proof.server_key
    {
        bail!(
            "the proof is about server key {}, not {k}",
            hex::encode(proof.server_key)
        );
    }
    let finding = proof.verify().map_err(proof_failure)?;
    if a.server_key.is_none() {
        // Review L7: a proof signed by a key nobody runs proves nothing about anyone.
        eprintln!(
            "warning: no --server-key given: this proves misbehaviour by whoever holds key {}; \
             check that it is the operator's key (from its receipt or `pir server status`)",
            finding.server_key
        );
    }
    if a.json {
        println!(
            "{}",
            serde_json::json!({"valid": true, "server_key": finding.server_key, "epoch": finding.epoch, "finding": finding.what})
        );
    } else {
        println!("VALID proof of misbehaviour by server {}", finding.server_key);
        println!("{}", finding.what);
    }
    Ok(())
}

/// The one line `verify-proof` prints for a proof that fails: "the proof does not
/// hold: WHY", said once however deep the reason was wrapped (issue 28, item 8).
fn proof_failure(e: tacit_pir::Error) -> anyhow::Error {
    const HEAD: &str = "the proof does not hold: ";
    let mut why = match e {
        tacit_pir::Error::InvalidProof(why) => why,
        e => e.to_string(),
    };
    while let Some(rest) = why.strip_prefix(HEAD) {
        why = rest.to_string();
    }
    anyhow!("{HEAD}{why}")
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_failed_proof_says_so_once() {
        for e in [
            tacit_pir::Error::InvalidProof("the entry is not signed".into()),
            tacit_pir::Error::InvalidProof("the proof does not hold: the entry is not signed".into()),
        ] {
            assert_eq!(
                super::proof_failure(e).to_string(),
                "the proof does not hold: the entry is not signed"
            );
        }
        let wrapped = super::proof_failure(tacit_pir::Error::InvalidProof("x".into()));
        assert_eq!(crate::util::one_line(&wrapped).matches("does not hold").count(), 1);
    }
}
