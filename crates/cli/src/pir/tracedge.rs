//! `tacit pir server …`, `tacit pir client …`, `tacit pir verify-proof`: TracEdge
//! (Algorithm 1) over TLS, with table management in the store (§3.5).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use clap::{Args, Subcommand};
use curve25519_dalek::scalar::Scalar;
use tacit_crypto::rng::SecureRng;
use tacit_crypto::sign::{SigningKey, VerifyingKey};
use tacit_net::{FramedConn, FramedListener, NetConfig};
use tacit_pir::lwe::LweHint;
use tacit_pir::tracedge::*;
use tacit_pir::{LweAnyServer, LweBackend};
use tacit_store::Store;
use tacit_wire::{Decode, Encode, Envelope, ErrorMessage};
use tokio::sync::{mpsc, oneshot};

use crate::util::{now_unix, sanitize};

/// The TLS server name (certificates are pinned, not named).
const TLS_NAME: &str = "tracedge.tacit.invalid";

/// `tacit pir server …`.
#[derive(Debug, Subcommand)]
pub enum ServerCommand {
    /// Create the server's keys (Ed25519 signing key, ristretto255 key for empty rows,
    /// TLS identity) and fix the number of rows.
    #[command(after_help = "Example:\n  tacit pir server init --store op.sqlite3 --rows 100000")]
    Init(InitArgs),
    /// Register a subscriber's public key; prints the row it keeps across tables.
    #[command(after_help = "Example:\n  tacit pir server register --store op.sqlite3 --key 5e3c… --label alice")]
    Register(RegisterArgs),
    /// Remove the subscriber of a row (a running server writes an empty row on the fly
    /// and rekeys).
    Remove(RemoveArgs),
    /// Put a new table key in the pool; a running server builds the table while it
    /// keeps serving, then deprecates the old one.
    Rekey(StoreArg),
    /// Subscribers, tables and their status.
    Status(StatusArgs),
    /// Serve authentications over TLS.
    #[command(after_help = "\
Examples:
  tacit pir server serve --store op.sqlite3 --listen 127.0.0.1:7690 --open-enrollment
  tacit pir server serve --store op.sqlite3 --cheat-rows 3,17   # SIMULATION of a cheating server")]
    Serve(ServeArgs),
}

/// `tacit pir client …`.
#[derive(Debug, Subcommand)]
pub enum ClientCommand {
    /// Make a key pair and register it with a server; writes the identity file.
    #[command(
        after_help = "Example:\n  tacit pir client enroll --connect 127.0.0.1:7690 --pin 3f1c… --server-key 9a0b… --out alice.json"
    )]
    Enroll(EnrollArgs),
    /// Authenticate anonymously (Algorithm 1 with α audits); on misbehaviour, write
    /// the proof.
    #[command(after_help = "Example:\n  tacit pir client auth --id alice.json --proof caught.proof")]
    Auth(AuthArgs),
    /// Authenticate with many audits (16 rows by default) to check the table.
    Audit(AuthArgs),
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
    /// A label.
    #[arg(long, default_value = "")]
    label: String,
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

/// Options of `server serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    store: StoreArg,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:7690")]
    listen: String,
    /// Accept enrolment requests from anyone who connects.
    #[arg(long)]
    open_enrollment: bool,
    /// Most queries answered in one pass over the table.
    #[arg(long, default_value_t = 32)]
    batch: usize,
    /// Stop after this many authentications (0: never).
    #[arg(long, default_value_t = 0)]
    sessions: u64,
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

/// Options of `client enroll`.
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
    /// Where to write the identity (secret key, row, server keys).
    #[arg(long)]
    out: PathBuf,
    /// A label for the operator.
    #[arg(long, default_value = "")]
    label: String,
}

/// Options of `client auth` / `client audit`.
#[derive(Debug, Args)]
pub struct AuthArgs {
    /// The identity file from `client enroll`.
    #[arg(long)]
    id: PathBuf,
    /// Rows audited in one weighted query (auth: 4, audit: 16).
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

fn open_store(a: &StoreArg) -> Result<Store> {
    let p = crate::util::store_path(a.store.as_deref())?;
    Ok(Store::open(&p)?)
}

fn hex32(s: &str, what: &str) -> Result<[u8; 32]> {
    let v = hex::decode(s.trim()).with_context(|| format!("{what} is not hex"))?;
    v.try_into()
        .map_err(|_| anyhow!("{what} must be 32 bytes (64 hex digits)"))
}

/// The server's settings from the store.
struct ServerKeys {
    signing: SigningKey,
    dh: Scalar,
    rows: u64,
    scheme: CommitScheme,
    grace_secs: u64,
    tls: tacit_net::tls::SelfSigned,
}

fn get(store: &Store, name: &str) -> Result<zeroize::Zeroizing<Vec<u8>>> {
    store
        .pir_config_get(name)?
        .ok_or_else(|| anyhow!("the store has no TracEdge server; run `tacit pir server init` first"))
}

fn u64_of(b: &[u8]) -> Result<u64> {
    Ok(u64::from_be_bytes(
        b.try_into().map_err(|_| anyhow!("damaged setting"))?,
    ))
}

fn load_keys(store: &Store) -> Result<ServerKeys> {
    let seed: [u8; 32] = get(store, "signing_seed")?[..]
        .try_into()
        .map_err(|_| anyhow!("damaged key"))?;
    let dh: [u8; 32] = get(store, "dh_secret")?[..]
        .try_into()
        .map_err(|_| anyhow!("damaged key"))?;
    let dh: Scalar = Option::from(Scalar::from_canonical_bytes(dh)).ok_or_else(|| anyhow!("damaged key"))?;
    let scheme = CommitScheme::from_code(get(store, "scheme")?[0]).ok_or_else(|| anyhow!("damaged setting"))?;
    Ok(ServerKeys {
        signing: SigningKey::from_seed(&seed),
        dh,
        rows: u64_of(&get(store, "rows")?)?,
        scheme,
        grace_secs: u64_of(&get(store, "grace_secs")?)?,
        tls: tacit_net::tls::SelfSigned::from_parts(&get(store, "tls_cert")?, &get(store, "tls_key")?)?,
    })
}

/// Runs `tacit pir server …`.
pub fn run_server(cmd: ServerCommand) -> Result<()> {
    match cmd {
        ServerCommand::Init(a) => {
            let mut store = open_store(&a.store)?;
            if store.pir_config_get("signing_seed")?.is_some() {
                bail!("this store already holds a TracEdge server");
            }
            tacit_pir::TableShape::new(a.rows, 16)?;
            let mut rng = SecureRng::from_os();
            let signing = SigningKey::generate(&mut rng);
            let dh = Scalar::random(&mut rng);
            let tls = tacit_net::tls::SelfSigned::generate(TLS_NAME)?;
            store.pir_config_put("signing_seed", &signing.to_seed()[..])?;
            store.pir_config_put("dh_secret", dh.as_bytes())?;
            store.pir_config_put("rows", &a.rows.to_be_bytes())?;
            store.pir_config_put("scheme", &[a.commitment.code()])?;
            store.pir_config_put("grace_secs", &a.grace_secs.to_be_bytes())?;
            store.pir_config_put("tls_cert", tls.cert_der())?;
            store.pir_config_put("tls_key", tls.key_pkcs8_der())?;
            if a.commitment == CommitScheme::PaperEquivocable {
                eprintln!(
                    "warning: the paper-equivocable commitment lets this server open it to any key; clients refuse it unless --accept-paper-commitment"
                );
            }
            println!("rows        {}", a.rows);
            println!("commitment  {}", a.commitment.name());
            println!("server-key  {}", hex::encode(signing.verifying_key().to_bytes()));
            println!("pin         {}", hex::encode(tls.fingerprint()?));
            Ok(())
        }
        ServerCommand::Register(a) => {
            let mut store = open_store(&a.store)?;
            let k = load_keys(&store)?;
            let key = hex32(&a.key, "--key")?;
            tacit_pir::tracedge::keytable::decode_public(&key)?;
            match store.pir_register(&key, &a.label, k.rows, now_unix())? {
                Some(row) => println!("{row}"),
                None => match store.pir_row_of(&key)? {
                    Some(row) => bail!("this key is already registered at row {row}"),
                    None => bail!("the table is full ({} rows)", k.rows),
                },
            }
            Ok(())
        }
        ServerCommand::Remove(a) => {
            let mut store = open_store(&a.store)?;
            if !store.pir_remove(a.row)? {
                bail!("row {} has no subscriber", a.row);
            }
            eprintln!(
                "row {} removed; a running server writes an empty row now and rekeys",
                a.row
            );
            Ok(())
        }
        ServerCommand::Rekey(a) => {
            let mut store = open_store(&a)?;
            load_keys(&store)?;
            let epoch = store.pir_tables()?.iter().map(|t| t.epoch).max().unwrap_or(0) + 1;
            let mut rng = SecureRng::from_os();
            store.pir_put_table(epoch, TableKey::random(&mut rng).as_bytes(), "pool", now_unix())?;
            eprintln!("table {epoch} is in the pool; a running server builds it and deprecates the current one");
            Ok(())
        }
        ServerCommand::Status(a) => {
            let store = open_store(&a.store)?;
            let k = load_keys(&store)?;
            let subs = store.pir_subscribers()?;
            let tables = store.pir_tables()?;
            if a.json {
                let t: Vec<_> = tables
                    .iter()
                    .map(|t| serde_json::json!({"epoch": t.epoch, "status": t.status, "created_unix": t.created_unix, "expires_unix": t.expires_unix}))
                    .collect();
                println!(
                    "{}",
                    serde_json::json!({"rows": k.rows, "subscribers": subs.len(), "commitment": k.scheme.name(),
                        "server_key": hex::encode(k.signing.verifying_key().to_bytes()),
                        "pin": hex::encode(k.tls.fingerprint()?), "tables": t})
                );
            } else {
                println!(
                    "rows {} · subscribers {} · commitment {}",
                    k.rows,
                    subs.len(),
                    k.scheme.name()
                );
                println!("server-key {}", hex::encode(k.signing.verifying_key().to_bytes()));
                println!("pin        {}", hex::encode(k.tls.fingerprint()?));
                for t in tables {
                    println!(
                        "table {:>4}  {:<10}  created {}{}",
                        t.epoch,
                        t.status,
                        t.created_unix,
                        t.expires_unix.map(|e| format!("  keys expire {e}")).unwrap_or_default()
                    );
                }
            }
            Ok(())
        }
        ServerCommand::Serve(a) => serve(a),
    }
}

fn directory_keys(store: &Store, rows: u64, server_key: [u8; 32]) -> Result<Vec<[u8; 32]>> {
    let mut keys = vec![server_key; rows as usize];
    for s in store.pir_subscribers()? {
        if s.row < rows {
            keys[s.row as usize] = s.public_key;
        }
    }
    Ok(keys)
}

type Shared = Arc<RwLock<TracEdgeServer<LweAnyServer>>>;

#[allow(clippy::too_many_arguments)]
fn build_table(
    k: &ServerKeys,
    epoch: u64,
    key: TableKey,
    keys: Vec<[u8; 32]>,
    cheat: &[u64],
    equivocate: bool,
    dh_public: &curve25519_dalek::ristretto::RistrettoPoint,
    backend: &LweBackend,
) -> Result<LiveTable<LweAnyServer>> {
    let mut rng = SecureRng::from_os();
    let pb = crate::util::progress(keys.len() as u64, "table rows");
    let t0 = Instant::now();
    let second = TableKey::random(&mut rng);
    let flagged = (!cheat.is_empty()).then_some(Flagged {
        key: &second,
        rows: cheat,
    });
    let mut table = build_lwe_table_on(
        epoch,
        key.clone(),
        k.scheme,
        dh_public,
        keys,
        flagged,
        &|n| pb.set_position(n),
        backend,
        &mut rng,
    )?;
    pb.finish_and_clear();
    if !cheat.is_empty() {
        table.add_second_key(second.clone());
        if equivocate {
            if k.scheme != CommitScheme::PaperEquivocable {
                bail!(
                    "--cheat-equivocate needs a paper-equivocable table: the binding commitment cannot be equivocated"
                );
            }
            table.set_commitment(commit::equivocate(&k.dh, &key, &second)?);
        }
    }
    eprintln!(
        "tacit pir serve: table {epoch} built in {:.2} s ({} rows)",
        t0.elapsed().as_secs_f64(),
        table.directory().rows()
    );
    Ok(table)
}

fn serve(a: ServeArgs) -> Result<()> {
    let store_path = crate::util::store_path(a.store.store.as_deref())?;
    let mut store = Store::open(&store_path)?;
    let k = load_keys(&store)?;
    let mut cheat = a.cheat_rows.clone();
    cheat.sort_unstable();
    cheat.dedup();
    if !cheat.is_empty() {
        eprintln!(
            "tacit pir serve: SIMULATION — this server cheats: rows {:?} get a second key",
            cheat
        );
    }
    let backend = LweBackend::from_names(&a.backend, &a.gpus)?;
    if a.backend == "lwe-gpu" {
        tacit_pir::gpu::available()?;
    }
    let server = TracEdgeServer::<LweAnyServer>::new(
        SigningKey::from_seed(&k.signing.to_seed()),
        k.dh,
        ServerConfig {
            skew_ms: 120_000,
            grace_ms: k.grace_secs * 1000,
        },
    );
    let dh_public = server.dh_public();
    let server_key = dh_public.compress().to_bytes();
    // Tables of an earlier run are not served after a restart.
    let mut epoch = 0;
    let mut pool = None;
    for t in store.pir_tables()? {
        epoch = epoch.max(t.epoch);
        if t.status == "pool" && pool.is_none() {
            pool = Some(t);
        } else if t.status != "expired" {
            store.pir_set_table_status(t.epoch, "expired", t.expires_unix)?;
        }
    }
    let (epoch, key) = match pool {
        Some(t) => (
            t.epoch,
            TableKey::from_bytes(t.key[..].try_into().map_err(|_| anyhow!("damaged table key"))?),
        ),
        None => {
            let key = TableKey::random(&mut SecureRng::from_os());
            store.pir_put_table(epoch + 1, key.as_bytes(), "pool", now_unix())?;
            (epoch + 1, key)
        }
    };
    let keys = directory_keys(&store, k.rows, server_key)?;
    let version = store.pir_subscribers_version()?;
    let table = build_table(&k, epoch, key, keys, &cheat, a.cheat_equivocate, &dh_public, &backend)?;
    store.pir_set_table_status(epoch, "current", None)?;
    let hint_bytes = table.hint().to_wire().len();
    let shared: Shared = Arc::new(RwLock::new(server));
    shared
        .write()
        .map_err(|_| anyhow!("lock poisoned"))?
        .install(table, now_ms());
    let store = Arc::new(Mutex::new(store));

    // Table management in the background: on-the-fly rows, rekeying, expiry.
    {
        let shared = shared.clone();
        let store = store.clone();
        let k2 = load_keys(&*store.lock().map_err(|_| anyhow!("lock poisoned"))?)?;
        let cheat = cheat.clone();
        let equiv = a.cheat_equivocate;
        let backend = backend.clone();
        std::thread::spawn(move || manage(shared, store, k2, version, cheat, equiv, server_key, dh_public, backend));
    }

    let net = NetConfig::default()
        .with_max_frame_at_least(hint_bytes + (1 << 20))
        .with_deadline(Duration::from_secs(120));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let listener = FramedListener::bind(&a.listen, &net).await?;
        let tls = k.tls.server_config()?;
        eprintln!(
            "tacit pir serve: listening on {} (TLS 1.3, pin {}); server key {}",
            listener.local_addr()?,
            hex::encode(k.tls.fingerprint()?),
            hex::encode(k.signing.verifying_key().to_bytes())
        );
        let (tx, rx) = mpsc::channel::<BatchItem>(1024);
        tokio::spawn(batcher(shared.clone(), rx, a.batch.max(1)));
        let done = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let (stop_tx, mut stop_rx) = mpsc::channel::<()>(1);
        loop {
            let conn = tokio::select! {
                c = listener.accept() => c,
                _ = stop_rx.recv() => break,
            };
            let conn = match conn {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("tacit pir serve: accept: {e}");
                    continue;
                }
            };
            let (tls, shared, tx, store, done, stop_tx) = (
                tls.clone(),
                shared.clone(),
                tx.clone(),
                store.clone(),
                done.clone(),
                stop_tx.clone(),
            );
            let (open, limit, rows) = (a.open_enrollment, a.sessions, k.rows);
            tokio::spawn(async move {
                let peer = conn.peer_addr().map(|p| p.to_string()).unwrap_or_default();
                let mut conn = match conn.accept_tls(tls).await {
                    Ok(c) => c,
                    Err(e) => {
                        eprintln!("tacit pir serve: {peer}: TLS: {e}");
                        return;
                    }
                };
                match handle(&mut conn, shared, tx, store, open, rows).await {
                    Ok(Some(outcome)) => {
                        let n = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                        eprintln!("tacit pir serve: {outcome}");
                        if limit > 0 && n >= limit {
                            let _ = stop_tx.send(()).await;
                        }
                    }
                    Ok(None) => {}
                    Err(e) => {
                        let n = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                        eprintln!("tacit pir serve: {peer}: {}", sanitize(&crate::util::one_line(&e)));
                        if limit > 0 && n >= limit {
                            let _ = stop_tx.send(()).await;
                        }
                    }
                }
                let _ = conn.shutdown().await;
            });
        }
        anyhow::Ok(())
    })
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

#[allow(clippy::too_many_arguments)]
fn manage(
    shared: Shared,
    store: Arc<Mutex<Store>>,
    k: ServerKeys,
    mut version: u64,
    cheat: Vec<u64>,
    equiv: bool,
    server_key: [u8; 32],
    dh_public: curve25519_dalek::ristretto::RistrettoPoint,
    backend: LweBackend,
) {
    loop {
        std::thread::sleep(Duration::from_millis(500));
        let mut step = || -> Result<()> {
            let (v, keys, pool) = {
                let st = store.lock().map_err(|_| anyhow!("lock poisoned"))?;
                let v = st.pir_subscribers_version()?;
                let pool = st.pir_tables()?.into_iter().find(|t| t.status == "pool");
                (v, directory_keys(&st, k.rows, server_key)?, pool)
            };
            let mut rekey = false;
            if v != version {
                // Write the changed rows into every served table, on the fly.
                let mut srv = shared.write().map_err(|_| anyhow!("lock poisoned"))?;
                let epochs: Vec<u64> = srv.tables().map(|t| t.header().epoch).collect();
                for e in epochs {
                    let Some(t) = srv.table_mut(e) else { continue };
                    let changed: Vec<u64> = (0..k.rows)
                        .filter(|&r| t.directory().key(r).ok() != Some(keys[r as usize]))
                        .collect();
                    for r in changed {
                        if keys[r as usize] == server_key {
                            rekey = true;
                        }
                        t.set_row(r, &keys[r as usize])?;
                        eprintln!("tacit pir serve: table {e}: row {r} rewritten on the fly");
                    }
                }
                version = v;
            }
            let pool = match (pool, rekey) {
                (Some(p), _) => Some((
                    p.epoch,
                    TableKey::from_bytes(p.key[..].try_into().map_err(|_| anyhow!("damaged key"))?),
                )),
                (None, true) => {
                    let mut st = store.lock().map_err(|_| anyhow!("lock poisoned"))?;
                    let e = st.pir_tables()?.iter().map(|t| t.epoch).max().unwrap_or(0) + 1;
                    let key = TableKey::random(&mut SecureRng::from_os());
                    st.pir_put_table(e, key.as_bytes(), "pool", now_unix())?;
                    eprintln!("tacit pir serve: a subscriber left: rekeying to table {e}");
                    Some((e, key))
                }
                _ => None,
            };
            if let Some((e, key)) = pool {
                // Built without holding the lock: the server keeps answering.
                let table = build_table(&k, e, key, keys, &cheat, equiv, &dh_public, &backend)?;
                let now = now_ms();
                let old = {
                    let mut srv = shared.write().map_err(|_| anyhow!("lock poisoned"))?;
                    let old = srv.current().map(|t| t.header().epoch);
                    srv.install(table, now);
                    old
                };
                let mut st = store.lock().map_err(|_| anyhow!("lock poisoned"))?;
                st.pir_set_table_status(e, "current", None)?;
                if let Some(o) = old {
                    st.pir_set_table_status(o, "deprecated", Some(now_unix() + k.grace_secs))?;
                }
                eprintln!("tacit pir serve: table {e} is current; the previous one is deprecated");
            }
            let now = now_ms();
            let mut srv = shared.write().map_err(|_| anyhow!("lock poisoned"))?;
            let before: Vec<u64> = srv.tables().map(|t| t.header().epoch).collect();
            srv.expire(now);
            let after: Vec<u64> = srv.tables().map(|t| t.header().epoch).collect();
            drop(srv);
            for e in before.into_iter().filter(|e| !after.contains(e)) {
                let mut st = store.lock().map_err(|_| anyhow!("lock poisoned"))?;
                st.pir_set_table_status(e, "expired", None)?;
                eprintln!("tacit pir serve: the keys of table {e} expired");
            }
            Ok(())
        };
        if let Err(e) = step() {
            eprintln!("tacit pir serve: table management: {}", crate::util::one_line(&e));
        }
    }
}

struct BatchItem {
    session: ServerSession,
    queries: Queries,
    reply: oneshot::Sender<(ServerSession, tacit_pir::Result<Response>)>,
}

/// Collects the queries of concurrent sessions and answers them in one pass.
async fn batcher(shared: Shared, mut rx: mpsc::Receiver<BatchItem>, max: usize) {
    while let Some(first) = rx.recv().await {
        let mut items = vec![first];
        // Whatever arrived meanwhile joins the pass.
        while items.len() < max {
            match rx.try_recv() {
                Ok(i) => items.push(i),
                Err(_) => break,
            }
        }
        let shared = shared.clone();
        let done = tokio::task::spawn_blocking(move || {
            let srv = match shared.read() {
                Ok(s) => s,
                Err(_) => return,
            };
            let mut sessions: Vec<ServerSession> = Vec::with_capacity(items.len());
            let mut rest = Vec::with_capacity(items.len());
            for i in items {
                sessions.push(i.session);
                rest.push((i.queries, i.reply));
            }
            let results = {
                let mut refs: Vec<(&mut ServerSession, &Queries)> =
                    sessions.iter_mut().zip(rest.iter().map(|(q, _)| q)).collect();
                srv.respond_batch(&mut refs)
            };
            for ((s, (_, reply)), r) in sessions.into_iter().zip(rest).zip(results) {
                let _ = reply.send((s, r));
            }
        })
        .await;
        if done.is_err() {
            eprintln!("tacit pir serve: a batch failed");
        }
    }
}

async fn refuse(conn: &mut FramedConn, why: &str) -> Result<()> {
    conn.send(&ErrorMessage::new(why).to_wire()).await?;
    bail!("refused: {why}")
}

async fn handle(
    conn: &mut FramedConn,
    shared: Shared,
    tx: mpsc::Sender<BatchItem>,
    store: Arc<Mutex<Store>>,
    open_enrollment: bool,
    rows: u64,
) -> Result<Option<String>> {
    let mut session: Option<ServerSession> = None;
    loop {
        let msg = match conn.recv().await {
            Ok(m) => m,
            Err(tacit_net::Error::Closed) if session.is_none() => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let tag = Envelope::peek(&msg)?.tag;
        match tag {
            TAG_HINT_REQUEST => {
                let req = HintRequest::from_wire(&msg)?;
                let hint = shared.read().map_err(|_| anyhow!("lock poisoned"))?.hint(&req);
                match hint {
                    Ok(h) => conn.send(&h.to_wire()).await?,
                    Err(e) => return refuse(conn, &e.to_string()).await.map(|_| None),
                }
            }
            TAG_ENROLL_REQUEST => {
                let req = EnrollRequest::from_wire(&msg)?;
                if !open_enrollment {
                    return refuse(
                        conn,
                        "enrolment is closed on this server; ask the operator to register your key",
                    )
                    .await
                    .map(|_| None);
                }
                if let Err(e) = tacit_pir::tracedge::keytable::decode_public(&req.public_key) {
                    return refuse(conn, &e.to_string()).await.map(|_| None);
                }
                let row = store.lock().map_err(|_| anyhow!("lock poisoned"))?.pir_register(
                    &req.public_key,
                    &req.label,
                    rows,
                    now_unix(),
                )?;
                match row {
                    Some(row) => {
                        // Written into the served tables at once (§3.5 client ID assignment).
                        {
                            let mut srv = shared.write().map_err(|_| anyhow!("lock poisoned"))?;
                            let epochs: Vec<u64> = srv.tables().map(|t| t.header().epoch).collect();
                            for e in epochs {
                                if let Some(t) = srv.table_mut(e) {
                                    t.set_row(row, &req.public_key)?;
                                }
                            }
                        }
                        conn.send(&EnrollReply { row, rows }.to_wire()).await?;
                        return Ok(Some(format!("enrolled a subscriber at row {row}")));
                    }
                    None => {
                        return refuse(conn, "the key is already registered or the table is full")
                            .await
                            .map(|_| None);
                    }
                }
            }
            TAG_HELLO => {
                let hello = Hello::from_wire(&msg)?;
                let r = shared.write().map_err(|_| anyhow!("lock poisoned"))?.hello(
                    &hello,
                    now_ms(),
                    &mut SecureRng::from_os(),
                );
                match r {
                    Ok((s, commit)) => {
                        session = Some(s);
                        conn.send(&commit.to_wire()).await?;
                    }
                    Err(e) => return refuse(conn, &e.to_string()).await.map(|_| None),
                }
            }
            TAG_QUERIES => {
                let q = Queries::from_wire(&msg)?;
                let Some(s) = session.take() else {
                    return refuse(conn, "queries before hello").await.map(|_| None);
                };
                let (rtx, rrx) = oneshot::channel();
                tx.send(BatchItem {
                    session: s,
                    queries: q,
                    reply: rtx,
                })
                .await
                .map_err(|_| anyhow!("the server is stopping"))?;
                let (s, r) = rrx.await.map_err(|_| anyhow!("the batch was dropped"))?;
                session = Some(s);
                match r {
                    Ok(resp) => conn.send(&resp.to_wire()).await?,
                    Err(e) => return refuse(conn, &e.to_string()).await.map(|_| None),
                }
            }
            TAG_DIR_LOOKUP => {
                let l = DirLookup::from_wire(&msg)?;
                let Some(s) = &session else {
                    return refuse(conn, "lookup before hello").await.map(|_| None);
                };
                let r = shared.read().map_err(|_| anyhow!("lock poisoned"))?.directory(s, &l);
                match r {
                    Ok(e) => conn.send(&e.to_wire()).await?,
                    Err(e) => return refuse(conn, &e.to_string()).await.map(|_| None),
                }
            }
            TAG_CLIENT_AUTH => {
                let auth = ClientAuth::from_wire(&msg)?;
                let Some(mut s) = session.take() else {
                    return refuse(conn, "authentication before hello").await.map(|_| None);
                };
                let r = shared
                    .read()
                    .map_err(|_| anyhow!("lock poisoned"))?
                    .finish(&mut s, &auth);
                return match r {
                    Ok((reply, out)) => {
                        conn.send(&reply.to_wire()).await?;
                        Ok(Some(if out.key_index == 0 {
                            format!("authenticated a subscriber (table {})", out.epoch)
                        } else {
                            format!(
                                "authenticated a subscriber with SECOND KEY {} (table {}): tagged (simulation)",
                                out.key_index, out.epoch
                            )
                        }))
                    }
                    Err(e) => {
                        conn.send(&ErrorMessage::new(e.to_string()).to_wire()).await?;
                        Ok(Some(format!("refused a client: {e}")))
                    }
                };
            }
            other => {
                return refuse(conn, &format!("unexpected message 0x{other:04x}"))
                    .await
                    .map(|_| None);
            }
        }
    }
}

/// The identity file of a subscriber.
#[derive(serde::Serialize, serde::Deserialize)]
struct Identity {
    connect: String,
    pin: String,
    server_key: String,
    row: u64,
    secret: String,
}

fn read_identity(path: &Path) -> Result<(Identity, SubscriberSecret, VerifyingKey, [u8; 32])> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let id: Identity =
        serde_json::from_str(&text).with_context(|| format!("{} is not an identity file", path.display()))?;
    let secret = SubscriberSecret::from_bytes(&hex32(&id.secret, "the secret key")?)?;
    let server = VerifyingKey::from_bytes(&hex32(&id.server_key, "the server key")?)?;
    let pin = hex32(&id.pin, "the pin")?;
    Ok((id, secret, server, pin))
}

async fn recv_expect<T: Decode>(conn: &mut FramedConn, tag: u16) -> Result<T> {
    let msg = conn.recv().await?;
    let t = Envelope::peek(&msg)?.tag;
    if t == tacit_wire::tags::ERROR {
        let e = ErrorMessage::from_wire(&msg)?;
        bail!("the server refused: {}", sanitize(&e.reason));
    }
    if t != tag {
        bail!("unexpected message 0x{t:04x} from the server");
    }
    Ok(T::from_wire(&msg)?)
}

async fn connect(addr: &str, pin: [u8; 32]) -> Result<FramedConn> {
    let net = NetConfig::default()
        .with_max_frame_at_least(1 << 29)
        .with_deadline(Duration::from_secs(120));
    let tls = tacit_net::tls::checked_server_client(tacit_net::tls::pinned(pin))?;
    FramedConn::connect_tls(addr, &net, tls, TLS_NAME)
        .await
        .with_context(|| format!("cannot reach {addr}"))
}

/// Runs `tacit pir client …`.
pub fn run_client(cmd: ClientCommand) -> Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    match cmd {
        ClientCommand::Enroll(a) => rt.block_on(enroll(a)),
        ClientCommand::Auth(a) => rt.block_on(auth(a, 4)),
        ClientCommand::Audit(a) => rt.block_on(auth(a, 16)),
    }
}

async fn enroll(a: EnrollArgs) -> Result<()> {
    if a.out.exists() {
        bail!("{} exists; choose another --out", a.out.display());
    }
    let pin = hex32(&a.pin, "--pin")?;
    VerifyingKey::from_bytes(&hex32(&a.server_key, "--server-key")?)?;
    let secret = SubscriberSecret::random(&mut SecureRng::from_os());
    let mut conn = connect(&a.connect, pin).await?;
    conn.send(
        &EnrollRequest {
            public_key: secret.public_bytes(),
            label: a.label.clone(),
        }
        .to_wire(),
    )
    .await?;
    let reply: EnrollReply = recv_expect(&mut conn, TAG_ENROLL_REPLY).await?;
    let id = Identity {
        connect: a.connect.clone(),
        pin: a.pin.clone(),
        server_key: a.server_key.clone(),
        row: reply.row,
        secret: hex::encode(&secret.to_bytes()[..]),
    };
    let text = serde_json::to_string_pretty(&id)?;
    write_private(&a.out, text.as_bytes())?;
    println!(
        "enrolled at row {} of {}; identity written to {}",
        reply.row,
        reply.rows,
        a.out.display()
    );
    Ok(())
}

fn write_private(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600);
    }
    let mut f = o
        .open(path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    f.write_all(bytes)?;
    Ok(())
}

fn cached_hint_path(dir: &Path, table_id: &[u8; 32]) -> PathBuf {
    dir.join(format!("{}.hint", hex::encode(table_id)))
}

/// The cached hint of `table_id`, if a readable one is there (its id is checked by
/// `on_commit`).
fn read_cached_hint(dir: &Path, table_id: &[u8; 32]) -> Option<LweHint> {
    let bytes = std::fs::read(cached_hint_path(dir, table_id)).ok()?;
    LweHint::from_wire(&bytes).ok()
}

/// Writes the hint of `table_id` (through a temporary file and a rename, so a
/// reader never sees half a file) and removes the hints of older tables.
fn write_cached_hint(dir: &Path, table_id: &[u8; 32], hint: &LweHint) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let path = cached_hint_path(dir, table_id);
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, hint.to_wire()).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, &path).with_context(|| format!("cannot write {}", path.display()))?;
    for e in std::fs::read_dir(dir)?.flatten() {
        let p = e.path();
        if p != path && p.extension().is_some_and(|x| x == "hint") {
            let _ = std::fs::remove_file(p);
        }
    }
    Ok(())
}

async fn auth(a: AuthArgs, default_audits: usize) -> Result<()> {
    // A row written on the fly changes the table id; a session caught in between is
    // refused by the server and run again.
    let mut tries = 0;
    loop {
        match auth_once(&a, default_audits).await {
            Err(e) if tries < 2 && e.to_string().contains("the message is for table") => {
                tries += 1;
                eprintln!("the table changed during the session; again");
            }
            r => return r,
        }
    }
}

async fn auth_once(a: &AuthArgs, default_audits: usize) -> Result<()> {
    let (id, secret, server, pin) = read_identity(&a.id)?;
    let config = ClientConfig {
        audits: a.audits.unwrap_or(default_audits),
        accept_paper_commitment: a.accept_paper_commitment,
    };
    let client = TracEdgeClient::new(server, id.row, secret, config);
    let mut rng = SecureRng::from_os();
    let t0 = Instant::now();
    let mut conn = connect(&id.connect, pin).await?;
    let t_connect = t0.elapsed();
    let (mut cs, hello) = client.start(now_ms(), &mut rng);
    conn.send(&hello.to_wire()).await?;
    let commit: Commit = recv_expect(&mut conn, TAG_COMMIT).await?;
    let header = client.check_commit(&cs, &commit)?;
    // The hint: from the cache when its table id is the one the server just signed
    // (`on_commit` recomputes the id from the hint and refuses another), else
    // downloaded and cached.
    let cache = (!a.no_hint_cache).then(|| {
        a.hint_cache.clone().unwrap_or_else(|| {
            let mut p = a.id.clone().into_os_string();
            p.push(".hints");
            PathBuf::from(p)
        })
    });
    let t1 = Instant::now();
    let cached = cache.as_deref().and_then(|d| read_cached_hint(d, &header.table_id));
    let mut t_hint = t1.elapsed();
    let t2 = Instant::now();
    let mut hint_cached = false;
    let mut queries = None;
    if let Some(hint) = cached {
        match client.on_commit(&mut cs, commit.clone(), hint, &mut rng) {
            Ok(q) => {
                queries = Some(q);
                hint_cached = true;
            }
            Err(tacit_pir::Error::WrongTable { .. }) => {
                // A damaged or stale file: drop it and download.
                if let Some(d) = cache.as_deref() {
                    let _ = std::fs::remove_file(cached_hint_path(d, &header.table_id));
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
    let mut t_query = t2.elapsed();
    let queries = match queries {
        Some(q) => q,
        None => {
            let t1 = Instant::now();
            conn.send(&HintRequest { epoch: header.epoch }.to_wire()).await?;
            let hint: LweHint = recv_expect(&mut conn, tacit_pir::lwe::TAG_HINT).await?;
            t_hint = t1.elapsed();
            let t2 = Instant::now();
            let q = client.on_commit(&mut cs, commit, hint.clone(), &mut rng)?;
            t_query = t2.elapsed();
            if let Some(d) = cache.as_deref()
                && let Err(e) = write_cached_hint(d, &header.table_id, &hint)
            {
                eprintln!("tacit: warning: the hint was not cached: {e:#}");
            }
            q
        }
    };
    let t3 = Instant::now();
    conn.send(&queries.to_wire()).await?;
    let resp: Response = recv_expect(&mut conn, TAG_RESPONSE).await?;
    let t_answer = t3.elapsed();
    let t4 = Instant::now();
    let lookup = client.on_response(&mut cs, resp)?;
    conn.send(&lookup.to_wire()).await?;
    let entries: DirEntries = recv_expect(&mut conn, TAG_DIR_ENTRIES).await?;
    let auth = client.on_directory(&mut cs, entries, &mut rng)?;
    conn.send(&auth.to_wire()).await?;
    let reply = match recv_expect::<ServerAuth>(&mut conn, TAG_SERVER_AUTH).await {
        Ok(r) => Ok(r),
        Err(e) => Err(e.to_string()),
    };
    let outcome = client.on_server_auth(&mut cs, reply);
    let t_check = t4.elapsed();
    let _ = conn.shutdown().await;
    let times = serde_json::json!({
        "connect_ms": crate::util::millis(t_connect), "hint_ms": crate::util::millis(t_hint), "hint_cached": hint_cached,
        "query_ms": crate::util::millis(t_query), "answer_ms": crate::util::millis(t_answer),
        "check_and_auth_ms": crate::util::millis(t_check), "total_ms": crate::util::millis(t0.elapsed())});
    match outcome {
        ClientOutcome::Authenticated {
            session_key,
            epoch,
            expires_ms,
        } => {
            let fp = hex::encode(&tacit_pir::tracedge::hash_bytes(&session_key[..])[..8]);
            if a.json {
                println!(
                    "{}",
                    serde_json::json!({"outcome": "authenticated", "epoch": epoch, "expires_ms": expires_ms,
                    "audits": config.audits, "session_key_fingerprint": fp, "times": times})
                );
            } else {
                println!(
                    "authenticated anonymously (table {epoch}, {} rows audited); session key {fp}…",
                    config.audits
                );
            }
            Ok(())
        }
        ClientOutcome::Refused(why) => {
            if a.json {
                println!(
                    "{}",
                    serde_json::json!({"outcome": "refused", "reason": why, "times": times})
                );
            }
            bail!("refused: {why}")
        }
        ClientOutcome::Caught(proof) => {
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

/// Runs `tacit pir verify-proof`.
pub fn verify_proof(a: VerifyArgs) -> Result<()> {
    let bytes = std::fs::read(&a.file).with_context(|| format!("cannot read {}", a.file.display()))?;
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
    let finding = proof.verify().map_err(|e| anyhow!("the proof does not hold: {e}"))?;
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
