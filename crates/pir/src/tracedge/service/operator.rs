//! What the operator does to the store (§3.5): create the server's keys, register
//! and remove subscribers (each a signed table log entry and, for a registration, an
//! enrolment receipt), put a new table key in the pool, read the status.
//!
//! **One writer of the log.** The log is appended by whoever holds the store's serve
//! lock ([`ServeLock`]): the serving process, or — when none runs — the command
//! itself. So `register` with no server running signs the entry and the receipt at
//! once; with a server running it records the subscriber and waits for the server to
//! apply it and issue the receipt.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use curve25519_dalek::scalar::Scalar;
use tacit_crypto::rng::SecureRng;
use tacit_crypto::sign::{SigningKey, VerifyingKey};
use tacit_net::tls::SelfSigned;
use tacit_store::Store;
use tacit_wire::{Decode, Encode};

use super::{Result, ServiceError, TLS_NAME, file_err, now_ms};
use crate::lwe::LweServer;
use crate::tracedge::{
    Change, CommitScheme, EnrolmentReceipt, LogRecord, ServerConfig, TableKey, TableLog, TracEdgeServer,
};

/// The server's keys and settings, from the store.
pub struct ServerKeys {
    /// The Ed25519 signing key (commits, responses, log entries, receipts).
    pub signing: SigningKey,
    /// The ristretto255 secret (empty rows encrypt to its public key).
    pub dh: Scalar,
    /// Rows `n`.
    pub rows: u64,
    /// The commitment scheme.
    pub scheme: CommitScheme,
    /// Seconds a deprecated table's keys stay valid.
    pub grace_secs: u64,
    /// The TLS identity clients pin.
    pub tls: SelfSigned,
}

impl core::fmt::Debug for ServerKeys {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ServerKeys")
            .field("rows", &self.rows)
            .field("scheme", &self.scheme)
            .finish_non_exhaustive()
    }
}

impl ServerKeys {
    /// The empty-row key (the ristretto255 public key).
    pub fn empty_key(&self) -> [u8; 32] {
        (curve25519_dalek::constants::RISTRETTO_BASEPOINT_TABLE * &self.dh)
            .compress()
            .to_bytes()
    }

    /// The server's Ed25519 key.
    pub fn verifying_key(&self) -> VerifyingKey {
        self.signing.verifying_key()
    }
}

/// What `init` made: what clients need to reach and trust the server.
#[derive(Debug, Clone, Copy)]
pub struct InitReport {
    /// Rows.
    pub rows: u64,
    /// The commitment scheme.
    pub scheme: CommitScheme,
    /// The Ed25519 key clients check signatures with.
    pub server_key: [u8; 32],
    /// The SHA-256 fingerprint of the TLS key clients pin.
    pub pin: [u8; 32],
}

/// Opens an existing store (never creates one: a missing store is an error naming
/// the command that makes it).
pub fn open_existing(path: &Path) -> Result<Store> {
    if !path.exists() {
        return Err(ServiceError::Config(format!(
            "no store at {}; create the TracEdge server with `tacit pir server init --store {}`",
            path.display(),
            path.display()
        )));
    }
    Ok(Store::open(path)?)
}

fn get(store: &Store, name: &str) -> Result<zeroize::Zeroizing<Vec<u8>>> {
    store.pir_config_get(name)?.ok_or_else(|| {
        ServiceError::Config("the store has no TracEdge server; run `tacit pir server init` first".into())
    })
}

fn damaged(what: &str) -> ServiceError {
    ServiceError::Config(format!("the store's TracEdge {what} is damaged"))
}

fn u64_of(b: &[u8], what: &str) -> Result<u64> {
    Ok(u64::from_be_bytes(b.try_into().map_err(|_| damaged(what))?))
}

/// The server's keys from the store.
pub fn load_keys(store: &Store) -> Result<ServerKeys> {
    let seed: [u8; 32] = get(store, "signing_seed")?[..]
        .try_into()
        .map_err(|_| damaged("signing key"))?;
    let dh: [u8; 32] = get(store, "dh_secret")?[..].try_into().map_err(|_| damaged("key"))?;
    let dh: Scalar = Option::from(Scalar::from_canonical_bytes(dh)).ok_or_else(|| damaged("key"))?;
    let scheme = CommitScheme::from_code(get(store, "scheme")?[0]).ok_or_else(|| damaged("setting"))?;
    Ok(ServerKeys {
        signing: SigningKey::from_seed(&seed),
        dh,
        rows: u64_of(&get(store, "rows")?, "row count")?,
        scheme,
        grace_secs: u64_of(&get(store, "grace_secs")?, "grace setting")?,
        tls: SelfSigned::from_parts(&get(store, "tls_cert")?, &get(store, "tls_key")?)?,
    })
}

/// Creates the server's keys (Ed25519 signing key, ristretto255 key for empty rows,
/// TLS identity) and the genesis entry of its table log, in a new or empty store.
pub fn init(path: &Path, rows: u64, scheme: CommitScheme, grace_secs: u64) -> Result<InitReport> {
    crate::TableShape::new(rows, crate::tracedge::keytable::ROW_BYTES)?;
    let mut store = Store::open(path)?;
    if store.pir_config_get("signing_seed")?.is_some() {
        return Err(ServiceError::Config(
            "this store already holds a TracEdge server".into(),
        ));
    }
    let mut rng = SecureRng::from_os();
    let signing = SigningKey::generate(&mut rng);
    let dh = Scalar::random(&mut rng);
    let tls = SelfSigned::generate(TLS_NAME)?;
    let empty = (curve25519_dalek::constants::RISTRETTO_BASEPOINT_TABLE * &dh)
        .compress()
        .to_bytes();
    let log = TableLog::genesis(&signing, rows, empty, now_ms())?;
    store.pir_config_put("signing_seed", &signing.to_seed()[..])?;
    store.pir_config_put("dh_secret", dh.as_bytes())?;
    store.pir_config_put("rows", &rows.to_be_bytes())?;
    store.pir_config_put("scheme", &[scheme.code()])?;
    store.pir_config_put("grace_secs", &grace_secs.to_be_bytes())?;
    store.pir_config_put("tls_cert", tls.cert_der())?;
    store.pir_config_put("tls_key", tls.key_pkcs8_der())?;
    persist(&mut store, log.records())?;
    Ok(InitReport {
        rows,
        scheme,
        server_key: signing.verifying_key().to_bytes(),
        pin: tls.fingerprint()?,
    })
}

/// Writes log records to the store (in one transaction).
pub(crate) fn persist(store: &mut Store, records: &[LogRecord]) -> Result<()> {
    let rows: Vec<(u64, Vec<u8>)> = records.iter().map(|r| (r.entry.seq, r.to_wire())).collect();
    store.pir_log_append(&rows)?;
    Ok(())
}

/// Writes receipts to the store.
pub(crate) fn persist_receipts(store: &mut Store, receipts: &[EnrolmentReceipt]) -> Result<()> {
    for r in receipts {
        store.pir_put_receipt(r.row, &r.to_wire())?;
    }
    Ok(())
}

/// The table log from the store, checked (signatures, chain, roots).
pub fn load_log(store: &Store, keys: &ServerKeys) -> Result<TableLog> {
    let raw = store.pir_log()?;
    if raw.is_empty() {
        return Err(damaged("table log (it has no genesis entry)"));
    }
    let records = raw
        .iter()
        .map(|b| LogRecord::from_wire(b))
        .collect::<tacit_wire::Result<Vec<_>>>()?;
    let log = TableLog::from_records(&keys.verifying_key(), records)?;
    if log.genesis_entry().rows != keys.rows || log.genesis_entry().empty_key != keys.empty_key() {
        return Err(damaged("table log (it is another server's)"));
    }
    Ok(log)
}

/// The directory the store's subscribers define (row → key; empty rows hold the
/// server's key).
pub fn desired_directory(store: &Store, keys: &ServerKeys) -> Result<Vec<[u8; 32]>> {
    let mut out = vec![keys.empty_key(); keys.rows as usize];
    for s in store.pir_subscribers()? {
        if s.row < keys.rows {
            out[s.row as usize] = s.public_key;
        }
    }
    Ok(out)
}

/// The changes that bring `current` to `desired`.
pub fn directory_diff(current: &[[u8; 32]], desired: &[[u8; 32]]) -> Vec<Change> {
    current
        .iter()
        .zip(desired)
        .enumerate()
        .filter(|(_, (a, b))| a != b)
        .map(|(i, (_, b))| (i as u64, *b))
        .collect()
}

/// The serve lock of a store: an advisory lock on the database file itself (so that
/// every path to it — a symbolic or a hard link — meets the same lock), held by the
/// process that writes the table log and released when it ends; beside it,
/// `STORE.serve-lock` (at the store's canonical path) names the holder's process id.
/// SQLite locks with `fcntl` byte ranges, which do not interact with this `flock`.
#[derive(Debug)]
pub struct ServeLock {
    _db: File,
    path: PathBuf,
}

impl ServeLock {
    /// Takes the lock of the (existing) store at `store`, or says who holds it.
    pub fn acquire(store: &Path) -> Result<ServeLock> {
        if !store.exists() {
            return Err(ServiceError::Config(format!(
                "no store at {}; create the TracEdge server with `tacit pir server init --store {}`",
                store.display(),
                store.display()
            )));
        }
        let canonical = std::fs::canonicalize(store).map_err(file_err(store))?;
        let db = std::fs::OpenOptions::new()
            .read(true)
            .open(&canonical)
            .map_err(file_err(&canonical))?;
        let mut p = canonical.as_os_str().to_owned();
        p.push(".serve-lock");
        let path = PathBuf::from(p);
        match db.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let pid = std::fs::read_to_string(&path).unwrap_or_default();
                return Err(ServiceError::InUse {
                    store: store.display().to_string(),
                    pid: if pid.trim().is_empty() {
                        "unknown".into()
                    } else {
                        pid.trim().to_string()
                    },
                });
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(file_err(&canonical)(e)),
        }
        std::fs::write(&path, std::process::id().to_string()).map_err(file_err(&path))?;
        Ok(ServeLock { _db: db, path })
    }

    /// The file naming the holder.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ServeLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Applies the store's directory to the log (when no server runs): signs the entry
/// and the receipts. Needs the serve lock.
fn apply_offline(store: &mut Store, keys: &ServerKeys, _lock: &ServeLock) -> Result<Vec<EnrolmentReceipt>> {
    let log = load_log(store, keys)?;
    let desired = desired_directory(store, keys)?;
    let changes = directory_diff(log.directory().keys(), &desired);
    if changes.is_empty() {
        return Ok(Vec::new());
    }
    let mut server = TracEdgeServer::<LweServer>::with_log(
        SigningKey::from_seed(&keys.signing.to_seed()),
        keys.dh,
        ServerConfig::default(),
        log,
    )?;
    let applied = server.apply_changes_durable(&changes, now_ms(), &mut |records| {
        persist(store, records).map_err(|e| e.to_string())
    })?;
    persist_receipts(store, &applied.receipts)?;
    Ok(applied.receipts)
}

/// What `register` did.
#[derive(Debug, Clone)]
pub struct Registered {
    /// The row the subscriber keeps across tables.
    pub row: u64,
    /// The receipt, if the log already registers it (always when no server runs;
    /// within `wait` when one does).
    pub receipt: Option<EnrolmentReceipt>,
}

/// Registers a subscriber's public key in the lowest free row (rows freed by a
/// removal wait for their rekey). With no server running the command signs the log
/// entry and the receipt itself; with one running it waits up to `wait` for the
/// server to do it.
pub fn register(path: &Path, key: &[u8; 32], label: &str, wait: Duration) -> Result<Registered> {
    crate::tracedge::keytable::decode_public(key)?;
    if label.len() > 64 {
        return Err(ServiceError::Config("a label has at most 64 bytes".into()));
    }
    let mut store = open_existing(path)?;
    let keys = load_keys(&store)?;
    if *key == keys.empty_key() {
        return Err(ServiceError::Config("that is the server's own key".into()));
    }
    let lock = ServeLock::acquire(path);
    let row = match store.pir_register(key, label, keys.rows, crate::tracedge::service::now_ms() / 1000)? {
        Some(row) => row,
        None => {
            return Err(ServiceError::Config(match store.pir_row_of(key)? {
                Some(row) => format!("this key is already registered at row {row}"),
                None => format!(
                    "the table is full ({} rows, freed rows included until their rekey)",
                    keys.rows
                ),
            }));
        }
    };
    let receipt = match lock {
        Ok(lock) => apply_offline(&mut store, &keys, &lock)?
            .into_iter()
            .find(|r| r.row == row && r.subscriber_key == *key),
        Err(ServiceError::InUse { .. }) => wait_for_receipt(&store, row, key, wait)?,
        Err(e) => return Err(e),
    };
    Ok(Registered { row, receipt })
}

fn wait_for_receipt(store: &Store, row: u64, key: &[u8; 32], wait: Duration) -> Result<Option<EnrolmentReceipt>> {
    let t0 = Instant::now();
    loop {
        if let Some(r) = receipt(store, row)?
            && r.subscriber_key == *key
        {
            return Ok(Some(r));
        }
        if t0.elapsed() >= wait {
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The latest receipt of `row` in the store.
pub fn receipt(store: &Store, row: u64) -> Result<Option<EnrolmentReceipt>> {
    store
        .pir_receipt(row)?
        .map(|b| EnrolmentReceipt::from_wire(&b))
        .transpose()
        .map_err(ServiceError::from)
}

/// Removes the subscriber of `row`: a signed log entry empties the row (at once when
/// no server runs; a running server does it within a second) and a rekey follows
/// (the next `serve` rekeys in any case); the row is not handed out again until that
/// rekey is installed.
pub fn remove(path: &Path, row: u64) -> Result<()> {
    let mut store = open_existing(path)?;
    let keys = load_keys(&store)?;
    if !store.pir_remove(row, now_ms() / 1000)? {
        return Err(ServiceError::Config(format!("row {row} has no subscriber")));
    }
    if let Ok(lock) = ServeLock::acquire(path) {
        apply_offline(&mut store, &keys, &lock)?;
    }
    Ok(())
}

/// Puts a new table key in the pool; a running server builds the table while it
/// keeps serving, then deprecates the old one. Returns its epoch.
pub fn rekey(path: &Path) -> Result<u64> {
    let mut store = open_existing(path)?;
    load_keys(&store)?;
    let epoch = store.pir_tables()?.iter().map(|t| t.epoch).max().unwrap_or(0) + 1;
    let mut rng = SecureRng::from_os();
    store.pir_put_table(epoch, TableKey::random(&mut rng).as_bytes(), "pool", now_ms() / 1000)?;
    Ok(epoch)
}

/// A table in the status.
#[derive(Debug, Clone)]
pub struct TableStatus {
    /// Its epoch.
    pub epoch: u64,
    /// pool, current, deprecated or expired.
    pub status: String,
    /// When it was created (unix seconds).
    pub created_unix: u64,
    /// When its keys expire (unix seconds), for a deprecated table.
    pub expires_unix: Option<u64>,
}

/// The operator's view of the server.
#[derive(Debug, Clone)]
pub struct Status {
    /// Rows.
    pub rows: u64,
    /// Registered subscribers.
    pub subscribers: usize,
    /// Rows freed by removals waiting for their rekey.
    pub freed_rows: usize,
    /// The commitment scheme.
    pub scheme: CommitScheme,
    /// The Ed25519 key.
    pub server_key: [u8; 32],
    /// The TLS pin.
    pub pin: [u8; 32],
    /// Entries in the table log, and the newest one's hash.
    pub log_entries: u64,
    /// The newest log entry's hash.
    pub log_head: [u8; 32],
    /// The tables.
    pub tables: Vec<TableStatus>,
}

/// The status of the server in the store.
pub fn status(path: &Path) -> Result<Status> {
    let store = open_existing(path)?;
    let keys = load_keys(&store)?;
    let log = load_log(&store, &keys)?;
    Ok(Status {
        rows: keys.rows,
        subscribers: store.pir_subscribers()?.len(),
        freed_rows: store.pir_freed()?.len(),
        scheme: keys.scheme,
        server_key: keys.verifying_key().to_bytes(),
        pin: keys.tls.fingerprint()?,
        log_entries: log.head().seq + 1,
        log_head: log.head().hash(),
        tables: store
            .pir_tables()?
            .into_iter()
            .map(|t| TableStatus {
                epoch: t.epoch,
                status: t.status,
                created_unix: t.created_unix,
                expires_unix: t.expires_unix,
            })
            .collect(),
    })
}
