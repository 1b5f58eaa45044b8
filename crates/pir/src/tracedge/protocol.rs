//! The sans-I/O server and client of Algorithm 1.
//!
//! ```text
//! C → S  Hello{nonce}  (t_s sent as 0: the client sends no clock)
//! C ← S  Commit{header(epoch, Γ, c, R, dir_root, table_id), t_s, nonce_S,
//!               log head (seq, hash), Sig}
//! C → S  LogRequest{from, to}     C ← S  LogSegment     (until the client's copy of
//!                                                        the log reaches the head)
//! C → S  Queries{own row, audit = one weighted query over α other rows}
//! C ← S  Response{answers, Sig(t_s ‖ nonces ‖ epoch ‖ H(queries) ‖ H(answers))}
//! C → S  ClientAuth{MAC(k_client, transcript)}       (random MAC if a check failed)
//! C ← S  ServerAuth{MAC(k_server, transcript)}  or a refusal
//! ```
//!
//! The client checks the header against the log entry the `Commit` names (its
//! [`ClientView`]), its own row against its enrolment receipt and the log, and the
//! audited rows against its copy of the directory: it never asks the server for a
//! public key, so the server neither learns which rows are audited nor can it
//! withhold one (v2 asked for directory buckets after the response).
//!
//! `k_label = SHA-256("tacit/tracedge/v1/session" ‖ label ‖ K ‖ transcript)` where the
//! transcript is SHA-256 over Hello, Commit, H(Queries) and the response's epoch,
//! H(answers) and signature, H being BLAKE3 (§5.1: keys from `t_s`, `K` and the labels
//! `"server"`/`"client"`). The two large messages enter as their hashes, so the
//! per-session hashing is one pass over each.

use std::collections::{BTreeMap, HashSet, VecDeque};

use curve25519_dalek::ristretto::RistrettoPoint;
use curve25519_dalek::scalar::Scalar;
use rand_core::{CryptoRng, RngCore};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use tacit_crypto::sign::{SigningKey, VerifyingKey};
use tacit_wire::Encode;
use zeroize::Zeroizing;

use super::commit::{self, CommitScheme};
use super::keytable::{self, BUCKET_ROWS, DirEntry, Directory, Flagged, SubscriberSecret, TableKey, decode_public};
use super::log::{Change, ClientView, EnrolmentReceipt, LogRecord, LogRequest, LogSegment, TableLog};
use super::messages::*;
use super::proof::{Evidence, MisbehaviourProof, ProofKind, QueryOpening, ROLLBACK_MARGIN_MS, Transcript};
use super::respond::Responder;
use crate::stream::PipelinedLwe;
use rayon::prelude::*;

use crate::lwe::{LweClient, LweHint, LweParams, LweQuery, LweServer};
use crate::{Error, PirClient, PirServer, Result, Selection, Table};

/// One table the server serves: its key, its PIR server, its directory and header.
pub struct LiveTable<S> {
    key: TableKey,
    pir: S,
    hint: LweHint,
    dir: Directory,
    header: TableHeader,
    second_keys: Vec<TableKey>,
}

impl<S> core::fmt::Debug for LiveTable<S> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("LiveTable")
            .field("header", &self.header)
            .finish_non_exhaustive()
    }
}

impl<S: PirServer<Query = LweQuery, Answer = crate::lwe::LweAnswer>> LiveTable<S> {
    /// A table from its parts: the PIR server `pir` must hold `rows` built with
    /// `key` for `epoch` over `dir`, and `hint` is its hint.
    #[allow(clippy::too_many_arguments)]
    pub fn new<R: RngCore + CryptoRng>(
        epoch: u64,
        key: TableKey,
        scheme: CommitScheme,
        server_dh: &RistrettoPoint,
        pir: S,
        hint: LweHint,
        dir: Directory,
        commitment: Option<commit::Commitment>,
        rng: &mut R,
    ) -> Result<Self> {
        let client = LweClient::new(hint.clone())?;
        let header = TableHeader {
            epoch,
            scheme,
            rows: dir.rows(),
            table_id: client.table_id(),
            dir_root: dir.root(),
            ephemeral: key.ephemeral_point().compress().to_bytes(),
            commitment: commitment.unwrap_or_else(|| commit::commit(scheme, server_dh, &key, rng)),
            server_dh_key: server_dh.compress().to_bytes(),
            expires_ms: 0,
        };
        Ok(LiveTable {
            key,
            pir,
            hint,
            dir,
            header,
            second_keys: Vec::new(),
        })
    }

    /// **Cheating-server simulation** (§3.4): the server also accepts MACs under
    /// `key`, the second key it gave to flagged rows, and reports which key a client
    /// used ([`ServerOutcome::key_index`]) — the information it tries to learn.
    pub fn add_second_key(&mut self, key: TableKey) {
        self.second_keys.push(key);
    }

    /// **Cheating-server simulation**: replaces the commitment (e.g. with one
    /// equivocated to open to both keys, [`commit::equivocate`]).
    pub fn set_commitment(&mut self, c: commit::Commitment) {
        self.header.commitment = c;
    }

    /// The header (unsigned).
    pub fn header(&self) -> &TableHeader {
        &self.header
    }

    /// The hint clients download.
    pub fn hint(&self) -> &LweHint {
        &self.hint
    }

    /// The table's PIR server (for benches that time the PIR pass alone).
    pub fn pir(&self) -> &S {
        &self.pir
    }

    /// The directory.
    pub fn directory(&self) -> &Directory {
        &self.dir
    }

    /// The table key (the server's secret).
    pub fn key(&self) -> &TableKey {
        &self.key
    }
}

impl<S: PirServer<Query = LweQuery, Answer = crate::lwe::LweAnswer> + HintSource> LiveTable<S> {
    /// Writes rows on the fly for their new public keys (registrations into empty
    /// rows, or removals: the server's own key), updating the PIR table, the hint,
    /// the directory and the header.
    pub fn set_rows(&mut self, changes: &[Change]) -> Result<()> {
        if changes.is_empty() {
            return Ok(());
        }
        for &(row, public) in changes {
            let y = decode_public(&public)?;
            let bytes = keytable::encrypt_row(&self.key, &self.key, self.header.epoch, row, &y);
            self.pir.update_row(row, &bytes)?;
        }
        self.dir.set_many(changes)?;
        self.hint = self.pir.current_hint();
        self.header.dir_root = self.dir.root();
        self.header.table_id = LweClient::new(self.hint.clone())?.table_id();
        Ok(())
    }
}

/// A PIR server that can hand out its current hint (every `lwe`-message backend).
pub trait HintSource {
    /// The current hint.
    fn current_hint(&self) -> LweHint;
}

impl HintSource for LweServer {
    fn current_hint(&self) -> LweHint {
        self.hint()
    }
}

impl HintSource for crate::LweAnyServer {
    fn current_hint(&self) -> LweHint {
        self.hint()
    }
}

/// [`build_lwe_table`] with the `lwe` server on `backend` (the CPU, or the GPUs with
/// `lwe-gpu`, which also do the rows' scalar multiplications): the same rows, hint
/// and table id either way.
#[allow(clippy::too_many_arguments)]
pub fn build_lwe_table_on<R: RngCore + CryptoRng>(
    epoch: u64,
    key: TableKey,
    scheme: CommitScheme,
    server_dh: &RistrettoPoint,
    keys: Vec<[u8; 32]>,
    flagged: Option<Flagged<'_>>,
    progress: &(dyn Fn(u64) + Sync),
    backend: &crate::LweBackend,
    rng: &mut R,
) -> Result<LiveTable<crate::LweAnyServer>> {
    let rows = keytable::build_rows_on(backend, &key, epoch, &keys, flagged, progress)?;
    let table = Table::from_bytes(rows, keytable::ROW_BYTES)?;
    let seed = lwe_seed(server_dh, epoch, &key);
    let pir = crate::LweAnyServer::setup(&table, LweParams::new(table.shape(), seed)?, backend)?;
    drop(table);
    let hint = pir.hint();
    let dir = Directory::build(keys)?;
    LiveTable::new(epoch, key, scheme, server_dh, pir, hint, dir, None, rng)
}

/// The seed of the `lwe` matrix `A` of table `epoch` of the server with ElGamal key
/// `server_dh` and table key `key`: `SHA-256("tacit/tracedge/v3/lwe-seed" ‖ server key
/// ‖ epoch ‖ R)[..16]`. Derived, not drawn, so that one epoch has one `A`: a server
/// cannot mint tables that differ only in `A` (and so in their table id) to tell
/// which client has which hint cached. Clients check it ([`TracEdgeClient::on_commit`]).
pub fn lwe_seed(server_dh: &RistrettoPoint, epoch: u64, key: &TableKey) -> [u8; 16] {
    lwe_seed_of(
        &server_dh.compress().to_bytes(),
        epoch,
        &key.ephemeral_point().compress().to_bytes(),
    )
}

fn lwe_seed_of(server_dh: &[u8; 32], epoch: u64, ephemeral: &[u8; 32]) -> [u8; 16] {
    let mut h = Sha256::new();
    h.update(b"tacit/tracedge/v3/lwe-seed\0");
    h.update(server_dh);
    h.update(epoch.to_be_bytes());
    h.update(ephemeral);
    let d = h.finalize();
    let mut out = [0u8; 16];
    out.copy_from_slice(&d[..16]);
    out
}

/// Builds an `lwe` key table for `epoch`: the rows (one variable-base scalar
/// multiplication each, on all cores), the PIR matrix and hint, and the directory.
/// `keys[i]` is the public key of row `i` (the server's own key for an empty row).
#[allow(clippy::too_many_arguments)]
pub fn build_lwe_table<R: RngCore + CryptoRng>(
    epoch: u64,
    key: TableKey,
    scheme: CommitScheme,
    server_dh: &RistrettoPoint,
    keys: Vec<[u8; 32]>,
    flagged: Option<Flagged<'_>>,
    progress: &(dyn Fn(u64) + Sync),
    rng: &mut R,
) -> Result<LiveTable<LweServer>> {
    let rows = keytable::build_rows(&key, epoch, &keys, flagged, progress)?;
    let table = Table::from_bytes(rows, keytable::ROW_BYTES)?;
    let seed = lwe_seed(server_dh, epoch, &key);
    let pir = LweServer::setup(&table, LweParams::new(table.shape(), seed)?)?;
    let hint = pir.hint();
    let dir = Directory::build(keys)?;
    LiveTable::new(epoch, key, scheme, server_dh, pir, hint, dir, None, rng)
}

/// The most a server's clock may differ from a client's `t_s` ([`ServerConfig::skew_ms`]
/// is capped at this; [`ROLLBACK_MARGIN_MS`] relies on it).
pub const MAX_SKEW_MS: u64 = 300_000;

/// The resolution of the client's clock in a [`Hello`]: `t_s` is rounded down to it,
/// so that the offset of a client's clock (which is stable and differs between
/// devices) does not link its sessions.
pub const CLOCK_RESOLUTION_MS: u64 = 60_000;

/// `now_ms` rounded down to [`CLOCK_RESOLUTION_MS`].
pub fn coarse_time(now_ms: u64) -> u64 {
    now_ms - now_ms % CLOCK_RESOLUTION_MS
}

/// Server settings.
#[derive(Debug, Clone, Copy)]
pub struct ServerConfig {
    /// Largest accepted distance between the client's `t_s` and the server's clock
    /// (at most [`MAX_SKEW_MS`]; `t_s` is rounded down to the minute, so keep it
    /// above [`CLOCK_RESOLUTION_MS`]).
    pub skew_ms: u64,
    /// How long keys of a deprecated table stay valid (§3.5).
    pub grace_ms: u64,
    /// The most client nonces remembered against replay; beyond it the server
    /// refuses new sessions as busy until old ones leave the skew window.
    pub max_replay_entries: usize,
    /// The most audit queries one session may send (the client sends one weighted
    /// query; each more is another full PIR pass of work for the server).
    pub max_audit_queries: usize,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            skew_ms: 120_000,
            grace_ms: 3_600_000,
            max_replay_entries: 1 << 20,
            max_audit_queries: 1,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ServerStep {
    AwaitQueries,
    AwaitAuth,
    Done,
}

/// The server's view of one authentication.
#[derive(Debug)]
pub struct ServerSession {
    t_s: u64,
    client_nonce: [u8; 32],
    server_nonce: [u8; 32],
    epoch: u64,
    transcript: Sha256,
    step: ServerStep,
}

impl ServerSession {
    /// The epoch the session runs on.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }
}

/// A successful authentication on the server: the session key (the server never
/// learns which subscriber it was).
#[derive(Debug)]
pub struct ServerOutcome {
    /// A session key both sides derive (`"session"` label).
    pub session_key: Zeroizing<[u8; 32]>,
    /// The epoch.
    pub epoch: u64,
    /// Which key the client proved: 0 for the committed key; `i > 0` only on a
    /// cheating server, for its `i`-th second key (the client is then tagged).
    pub key_index: usize,
}

/// The TracEdge server: signing key, its own ElGamal key, the table log (and the
/// directory it defines), the current table and the deprecated ones still served
/// (§3.5), and the replay cache.
pub struct TracEdgeServer<S> {
    signing: SigningKey,
    dh_secret: Scalar,
    dh_public: RistrettoPoint,
    tables: BTreeMap<u64, LiveTable<S>>,
    current: Option<u64>,
    /// Client nonces seen, and when (the server's clock), oldest first.
    seen: HashSet<[u8; 32]>,
    seen_order: VecDeque<(u64, [u8; 32])>,
    config: ServerConfig,
    log: TableLog,
}

impl<S> Drop for TracEdgeServer<S> {
    fn drop(&mut self) {
        use zeroize::Zeroize;
        self.dh_secret.zeroize();
    }
}

impl<S> core::fmt::Debug for TracEdgeServer<S> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("TracEdgeServer")
            .field("current", &self.current)
            .field("tables", &self.tables.keys().collect::<Vec<_>>())
            .field("log", &self.log)
            .finish_non_exhaustive()
    }
}

/// Stores new log records before a change of the server becomes final (returns why
/// it could not).
pub type Persist<'a> = &'a mut dyn FnMut(&[LogRecord]) -> core::result::Result<(), String>;

/// A registration the server applied: its log records and the receipts of the keys
/// it registered.
#[derive(Debug, Clone)]
pub struct Applied {
    /// The new log records (to store and to publish).
    pub records: Vec<LogRecord>,
    /// One receipt per registered key (changes to the empty-row key have none).
    pub receipts: Vec<EnrolmentReceipt>,
}

impl<S: PirServer<Query = LweQuery, Answer = crate::lwe::LweAnswer> + HintSource + PipelinedLwe> TracEdgeServer<S> {
    /// A server with tables of `rows` rows, no subscriber and no table yet: its log
    /// starts with the genesis entry.
    pub fn new(signing: SigningKey, dh_secret: Scalar, config: ServerConfig, rows: u64, now_ms: u64) -> Result<Self> {
        let dh_public = curve25519_dalek::constants::RISTRETTO_BASEPOINT_TABLE * &dh_secret;
        let log = TableLog::genesis(&signing, rows, dh_public.compress().to_bytes(), now_ms)?;
        Self::with_log(signing, dh_secret, config, log)
    }

    /// A server that continues `log` (read back from its store).
    pub fn with_log(signing: SigningKey, dh_secret: Scalar, mut config: ServerConfig, log: TableLog) -> Result<Self> {
        let dh_public = curve25519_dalek::constants::RISTRETTO_BASEPOINT_TABLE * &dh_secret;
        if log.genesis_entry().empty_key != dh_public.compress().to_bytes() {
            return Err(Error::InvalidParams("the table log is for another server key".into()));
        }
        log.genesis_entry().verify(&signing.verifying_key())?;
        config.skew_ms = config.skew_ms.min(MAX_SKEW_MS);
        Ok(TracEdgeServer {
            signing,
            dh_public,
            dh_secret,
            tables: BTreeMap::new(),
            current: None,
            seen: HashSet::new(),
            seen_order: VecDeque::new(),
            config,
            log,
        })
    }

    /// The server's signature key.
    pub fn verifying_key(&self) -> VerifyingKey {
        self.signing.verifying_key()
    }

    /// The server's ElGamal key (empty rows encrypt to it).
    pub fn dh_public(&self) -> RistrettoPoint {
        self.dh_public
    }

    /// The server's ElGamal secret (for the equivocation experiment only).
    pub fn dh_secret(&self) -> &Scalar {
        &self.dh_secret
    }

    /// The table log.
    pub fn log(&self) -> &TableLog {
        &self.log
    }

    /// The directory (after the log's newest entry).
    pub fn directory(&self) -> &Directory {
        self.log.directory()
    }

    /// Rows `n`.
    pub fn rows(&self) -> u64 {
        self.log.head().rows
    }

    /// Answers a [`LogRequest`].
    pub fn log_segment(&self, req: &LogRequest) -> LogSegment {
        self.log.segment(req)
    }

    fn headers(&self) -> Vec<TableHeader> {
        self.tables.values().map(|t| t.header).collect()
    }

    /// Sets directory rows (registrations, and removals: the server's own key) in
    /// the log and in every served table at once (§3.5), and returns the log records
    /// and one receipt per registered key.
    pub fn apply_changes(&mut self, changes: &[Change], now_ms: u64) -> Result<Applied> {
        self.apply_changes_durable(changes, now_ms, &mut |_| Ok(()))
    }

    /// [`TracEdgeServer::apply_changes`], all or nothing: the new log records are
    /// handed to `persist` (to be stored) before anything changes for good; if it
    /// fails, the log, the directory and every table are put back as they were and
    /// the error is [`Error::Storage`].
    pub fn apply_changes_durable(&mut self, changes: &[Change], now_ms: u64, persist: Persist<'_>) -> Result<Applied> {
        let records = self.apply_changes_durable_unreceipted(changes, now_ms, persist)?;
        let receipts = self.receipts_for(&records, now_ms);
        Ok(Applied { records, receipts })
    }

    /// [`TracEdgeServer::apply_changes`] without receipts (a bulk load whose
    /// subscribers get theirs later, [`TracEdgeServer::receipts_for`]).
    pub fn apply_changes_unreceipted(&mut self, changes: &[Change], now_ms: u64) -> Result<Vec<LogRecord>> {
        self.apply_changes_durable_unreceipted(changes, now_ms, &mut |_| Ok(()))
    }

    fn apply_changes_durable_unreceipted(
        &mut self,
        changes: &[Change],
        now_ms: u64,
        persist: Persist<'_>,
    ) -> Result<Vec<LogRecord>> {
        if let Some(why) = super::log::changes_defect(self.rows(), changes) {
            return Err(Error::InvalidParams(format!("directory changes refused: {why}")));
        }
        // The served tables are all over the log's directory: its keys undo them.
        let undo: Vec<Change> = changes
            .iter()
            .rev()
            .map(|&(r, _)| (r, self.log.directory().keys()[r as usize]))
            .collect();
        let epochs: Vec<u64> = self.tables.keys().copied().collect();
        let mut done: Vec<u64> = Vec::new();
        let mut result = Ok(());
        for e in &epochs {
            if let Some(t) = self.tables.get_mut(e) {
                match t.set_rows(changes) {
                    Ok(()) => done.push(*e),
                    Err(err) => {
                        result = Err(err);
                        break;
                    }
                }
            }
        }
        let kept = self.log.records().len();
        let outcome = result
            .and_then(|()| self.log.append(&self.signing, changes, self.headers(), now_ms))
            .and_then(|records| persist(&records).map(|()| records).map_err(Error::Storage));
        match outcome {
            Ok(records) => Ok(records),
            Err(err) => {
                for e in done {
                    if let Some(t) = self.tables.get_mut(&e) {
                        // Undoing restores the exact previous content.
                        let _ = t.set_rows(&undo);
                    }
                }
                self.log.rollback(kept, &undo)?;
                Err(err)
            }
        }
    }

    /// The receipts of the keys `records` register (not of emptied rows).
    pub fn receipts_for(&self, records: &[LogRecord], now_ms: u64) -> Vec<EnrolmentReceipt> {
        let empty = self.dh_public.compress().to_bytes();
        records
            .iter()
            .flat_map(|rec| {
                rec.changes
                    .iter()
                    .filter(move |&&(_, key)| key != empty)
                    .map(move |&(row, key)| (row, key, rec.entry.seq))
            })
            .map(|(row, key, seq)| self.receipt(row, key, seq, now_ms))
            .collect()
    }

    /// The receipt that `row` holds `key` from log entry `seq` on.
    pub fn receipt(&self, row: u64, key: [u8; 32], seq: u64, now_ms: u64) -> EnrolmentReceipt {
        EnrolmentReceipt::issue(
            &self.signing,
            row,
            key,
            self.rows(),
            self.dh_public.compress().to_bytes(),
            seq,
            now_ms,
        )
    }

    /// Makes `table` current (brought up to the log's directory first, if it was
    /// built from an older one); the previous current table is deprecated and its
    /// keys expire `grace_ms` after `now_ms` (§3.5 rekeying). When as many tables as
    /// one log entry lists are already served, the deprecated ones that expire first
    /// are retired early. Returns the log record.
    pub fn install(&mut self, table: LiveTable<S>, now_ms: u64) -> Result<Vec<LogRecord>> {
        self.install_durable(table, now_ms, &mut |_| Ok(()))
    }

    /// [`TracEdgeServer::install`], all or nothing (see
    /// [`TracEdgeServer::apply_changes_durable`]).
    pub fn install_durable(
        &mut self,
        mut table: LiveTable<S>,
        now_ms: u64,
        persist: Persist<'_>,
    ) -> Result<Vec<LogRecord>> {
        if table.header.rows != self.rows() {
            return Err(Error::InvalidParams(format!(
                "the table has {} rows; the log's tables have {}",
                table.header.rows,
                self.rows()
            )));
        }
        if self.tables.contains_key(&table.header.epoch) {
            return Err(Error::InvalidParams(format!(
                "a table of epoch {} is already served",
                table.header.epoch
            )));
        }
        if table.dir.root() != self.log.directory().root() {
            let dir = self.log.directory();
            let behind: Vec<Change> = (0..dir.rows())
                .filter(|&r| table.dir.keys()[r as usize] != dir.keys()[r as usize])
                .map(|r| (r, dir.keys()[r as usize]))
                .collect();
            table.set_rows(&behind)?;
        }
        // Room for the new table in one entry: retire the deprecated tables that
        // expire first.
        let mut retired = Vec::new();
        while self.tables.len() + 1 > super::log::MAX_TABLES_PER_ENTRY {
            let oldest = self
                .tables
                .iter()
                .filter(|(e, _)| Some(**e) != self.current)
                .min_by_key(|(_, t)| t.header.expires_ms)
                .map(|(e, _)| *e);
            match oldest.and_then(|e| self.tables.remove(&e)) {
                Some(t) => retired.push(t),
                None => break,
            }
        }
        let previous = self.current;
        let previous_expiry = previous.and_then(|c| self.tables.get(&c)).map(|t| t.header.expires_ms);
        if let Some(cur) = previous
            && let Some(t) = self.tables.get_mut(&cur)
        {
            t.header.expires_ms = now_ms.saturating_add(self.config.grace_ms);
        }
        let e = table.header.epoch;
        self.tables.insert(e, table);
        self.current = Some(e);
        let kept = self.log.records().len();
        let outcome = self
            .log
            .append(&self.signing, &[], self.headers(), now_ms)
            .and_then(|records| persist(&records).map(|()| records).map_err(Error::Storage));
        match outcome {
            Ok(records) => Ok(records),
            Err(err) => {
                self.tables.remove(&e);
                self.current = previous;
                if let (Some(cur), Some(x)) = (previous, previous_expiry)
                    && let Some(t) = self.tables.get_mut(&cur)
                {
                    t.header.expires_ms = x;
                }
                for t in retired {
                    self.tables.insert(t.header.epoch, t);
                }
                self.log.rollback(kept, &[])?;
                Err(err)
            }
        }
    }

    /// Drops deprecated tables whose keys have expired (a log record when any did)
    /// and forgets replay entries outside the skew window.
    pub fn expire(&mut self, now_ms: u64) -> Result<Vec<LogRecord>> {
        self.expire_durable(now_ms, &mut |_| Ok(()))
    }

    /// [`TracEdgeServer::expire`], all or nothing (see
    /// [`TracEdgeServer::apply_changes_durable`]).
    pub fn expire_durable(&mut self, now_ms: u64, persist: Persist<'_>) -> Result<Vec<LogRecord>> {
        let horizon = now_ms.saturating_sub(2 * self.config.skew_ms + CLOCK_RESOLUTION_MS);
        while let Some(&(t, n)) = self.seen_order.front() {
            if t >= horizon {
                break;
            }
            self.seen_order.pop_front();
            self.seen.remove(&n);
        }
        let gone: Vec<u64> = self
            .tables
            .iter()
            .filter(|(_, t)| t.header.expires_ms != 0 && t.header.expires_ms <= now_ms)
            .map(|(e, _)| *e)
            .collect();
        if gone.is_empty() {
            return Ok(Vec::new());
        }
        let after: Vec<TableHeader> = self
            .tables
            .iter()
            .filter(|(e, _)| !gone.contains(e))
            .map(|(_, t)| t.header)
            .collect();
        let kept = self.log.records().len();
        let records = self.log.append(&self.signing, &[], after, now_ms)?;
        if let Err(why) = persist(&records) {
            self.log.rollback(kept, &[])?;
            return Err(Error::Storage(why));
        }
        for e in gone {
            self.tables.remove(&e);
        }
        Ok(records)
    }

    /// The current table.
    pub fn current(&self) -> Option<&LiveTable<S>> {
        self.current.and_then(|e| self.tables.get(&e))
    }

    /// All tables served (current and deprecated).
    pub fn tables(&self) -> impl Iterator<Item = &LiveTable<S>> {
        self.tables.values()
    }

    /// The hint of an epoch's table.
    pub fn hint(&self, req: &HintRequest) -> Result<LweHint> {
        self.tables
            .get(&req.epoch)
            .map(|t| t.hint.clone())
            .ok_or_else(|| Error::Refused(format!("no table of epoch {} is served", req.epoch)))
    }

    /// The size of the largest hint served (frame limits are sized from it).
    pub fn hint_bytes(&self) -> usize {
        self.tables.values().map(|t| t.hint.to_wire().len()).max().unwrap_or(0)
    }

    /// Step 1: answers a `Hello` with the signed commitment of the current table,
    /// the log head and the server's own time `t_s` (the client sends no clock).
    /// Refuses a replayed nonce; refuses as busy when the replay set is full.
    pub fn hello<R: RngCore + CryptoRng>(
        &mut self,
        hello: &Hello,
        now_ms: u64,
        rng: &mut R,
    ) -> Result<(ServerSession, Commit)> {
        if self.seen.contains(&hello.nonce) {
            return Err(Error::Refused("replayed nonce".into()));
        }
        if self.seen.len() >= self.config.max_replay_entries {
            return Err(Error::Busy("too many sessions in the replay window".into()));
        }
        let table = self
            .current()
            .ok_or_else(|| Error::Refused("the server has no table yet".into()))?;
        let header = table.header;
        self.seen.insert(hello.nonce);
        self.seen_order.push_back((now_ms, hello.nonce));
        let mut server_nonce = [0u8; 32];
        rng.fill_bytes(&mut server_nonce);
        let head = self.log.head();
        let (log_seq, log_hash) = (head.seq, head.hash());
        let t_s = now_ms;
        let sig = self.signing.sign(&commit_signed_bytes(
            &header,
            t_s,
            &hello.nonce,
            &server_nonce,
            log_seq,
            &log_hash,
        ));
        let commit = Commit {
            header,
            t_s,
            server_nonce,
            log_seq,
            log_hash,
            sig,
        };
        let mut transcript = Sha256::new();
        transcript.update(hello.to_wire());
        transcript.update(commit.to_wire());
        Ok((
            ServerSession {
                t_s,
                client_nonce: hello.nonce,
                server_nonce,
                epoch: header.epoch,
                transcript,
                step: ServerStep::AwaitQueries,
            },
            commit,
        ))
    }

    /// Checks one session's queries on their own: order, epoch, and each query's
    /// table id and length against the table (so that one bad session never fails a
    /// batch it would have joined).
    pub fn check_queries(&self, sess: &ServerSession, q: &Queries) -> Result<()> {
        self.check_session_queries(sess, q.epoch, &mut q.all().map(|x| (&x.table_id, x.values.len())))
    }

    /// [`TracEdgeServer::check_queries`] of a message as received: the same checks,
    /// on the frame the server answers from.
    pub fn check_frame(&self, sess: &ServerSession, q: &QueriesFrame) -> Result<()> {
        self.check_session_queries(
            sess,
            q.epoch(),
            &mut (0..q.len()).map(|i| (q.table_id(i), q.values_len(i))),
        )
    }

    fn check_session_queries(
        &self,
        sess: &ServerSession,
        epoch: u64,
        queries: &mut dyn Iterator<Item = (&[u8; 32], usize)>,
    ) -> Result<()> {
        if sess.step != ServerStep::AwaitQueries {
            return Err(Error::Refused("queries out of order".into()));
        }
        if epoch != sess.epoch {
            return Err(Error::Refused(format!(
                "queries for epoch {epoch}; the session runs on epoch {}",
                sess.epoch
            )));
        }
        let t = self
            .tables
            .get(&epoch)
            .ok_or_else(|| Error::Refused(format!("the table of epoch {epoch} has expired")))?;
        let queries: Vec<(&[u8; 32], usize)> = queries.collect();
        let audits = queries.len().saturating_sub(1);
        if audits > self.config.max_audit_queries {
            return Err(Error::Refused(format!(
                "{audits} audit queries; this server answers at most {} per session",
                self.config.max_audit_queries
            )));
        }
        let cols = t.hint.params.cols();
        for &(table_id, len) in &queries {
            if *table_id != t.header.table_id {
                return Err(Error::WrongTable {
                    ours: keytable::hex(&t.header.table_id[..8]),
                    theirs: keytable::hex(&table_id[..8]),
                });
            }
            if len != cols {
                return Err(Error::WrongLength {
                    what: "a query",
                    got: len,
                    expected: cols,
                });
            }
        }
        Ok(())
    }

    /// The table of `epoch`, if it is still served.
    pub(crate) fn table(&self, epoch: u64) -> Option<&LiveTable<S>> {
        self.tables.get(&epoch)
    }

    /// Signs a session's response (over the hashes of its queries and answers),
    /// enters it into the session's transcript and moves the session on.
    pub(crate) fn seal_response(
        &self,
        sess: &mut ServerSession,
        epoch: u64,
        qhash: &[u8; 32],
        ahash: &[u8; 32],
    ) -> [u8; 64] {
        let sig = self.signing.sign(&response_signed_bytes(
            sess.t_s,
            &sess.client_nonce,
            &sess.server_nonce,
            epoch,
            qhash,
            ahash,
        ));
        sess.transcript.update(qhash);
        sess.transcript.update(response_transcript_bytes(epoch, ahash, &sig));
        sess.step = ServerStep::AwaitAuth;
        sig
    }

    /// Step 2 for sessions whose queries arrived as frames, through the PIR
    /// backend's pipeline ([`Responder`]): each session's [`Response`] encoded,
    /// ready to send, in the order given. A session whose queries fail their checks
    /// gets its error alone.
    pub fn respond_frames(&self, items: Vec<(ServerSession, QueriesFrame)>) -> Vec<(ServerSession, Result<Vec<u8>>)> {
        let n = items.len();
        let mut r = Responder::new(usize::MAX);
        let mut out: Vec<Option<(ServerSession, Result<Vec<u8>>)>> = (0..n).map(|_| None).collect();
        for (i, (sess, frame)) in items.into_iter().enumerate() {
            if let Some(d) = r.push(self, sess, frame, i) {
                out[d.tag] = Some((d.session, d.response));
            }
        }
        for d in r.drain(self) {
            out[d.tag] = Some((d.session, d.response));
        }
        out.into_iter().flatten().collect()
    }

    /// Step 2: answers one session's queries.
    pub fn respond(&self, sess: &mut ServerSession, q: &Queries) -> Result<Response> {
        let mut out = self.respond_batch(&mut [(sess, q)]);
        out.pop().unwrap_or(Err(Error::Unsupported("an empty batch")))
    }

    /// Step 2 for many sessions at once: every session is checked on its own
    /// ([`TracEdgeServer::check_queries`]; a bad one fails alone), then all queries
    /// (own and audits) that are for one table go through the PIR backend in **one
    /// pass** over that table.
    pub fn respond_batch(&self, items: &mut [(&mut ServerSession, &Queries)]) -> Vec<Result<Response>> {
        let mut results: Vec<Option<Result<Response>>> = (0..items.len()).map(|_| None).collect();
        let mut by_epoch: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
        for (i, (sess, q)) in items.iter().enumerate() {
            match self.check_queries(sess, q) {
                Ok(()) => by_epoch.entry(q.epoch).or_default().push(i),
                Err(e) => results[i] = Some(Err(e)),
            }
        }
        for (epoch, idx) in by_epoch {
            let Some(table) = self.tables.get(&epoch) else { continue };
            // The backend reads the sessions' queries in place.
            let flat: Vec<&LweQuery> = idx.iter().flat_map(|&i| items[i].1.all()).collect();
            match table.pir.answer_batch_refs(&flat) {
                Err(e) => {
                    for &i in &idx {
                        results[i] = Some(Err(e.clone()));
                    }
                }
                Ok(answers) => {
                    // Each session's answers, then the per-session work (encoding,
                    // signature, transcript) on all cores.
                    let mut per: Vec<Option<Vec<crate::lwe::LweAnswer>>> = (0..items.len()).map(|_| None).collect();
                    let mut it = answers.into_iter();
                    for &i in &idx {
                        let n = 1 + items[i].1.audits.len();
                        per[i] = Some(it.by_ref().take(n).collect());
                    }
                    items
                        .par_iter_mut()
                        .zip(per.par_iter_mut())
                        .zip(results.par_iter_mut())
                        .for_each(|(((sess, q), ans), res)| {
                            let Some(answers) = ans.take() else { return };
                            let qhash = wire_hash(*q);
                            let ahash = answers_hash(&answers);
                            let sig = self.seal_response(sess, epoch, &qhash, &ahash);
                            *res = Some(Ok(Response { epoch, answers, sig }));
                        });
                }
            }
        }
        results
            .into_iter()
            .map(|r| r.unwrap_or(Err(Error::Unsupported("an unanswered query"))))
            .collect()
    }

    /// Step 3: checks the client's MAC under `K`; on success answers with the server's
    /// MAC. A client that does not know `K` gets a refusal.
    pub fn finish(&self, sess: &mut ServerSession, auth: &ClientAuth) -> Result<(ServerAuth, ServerOutcome)> {
        if sess.step != ServerStep::AwaitAuth {
            return Err(Error::Refused("authentication out of order".into()));
        }
        sess.step = ServerStep::Done;
        let t = self
            .tables
            .get(&sess.epoch)
            .ok_or_else(|| Error::Refused(format!("the table of epoch {} has expired", sess.epoch)))?;
        let transcript: [u8; 32] = sess.transcript.clone().finalize().into();
        for (key_index, key) in core::iter::once(&t.key).chain(&t.second_keys).enumerate() {
            let expected = key.session_mac_key("client", &transcript);
            if bool::from(expected.ct_eq(&auth.mac)) {
                return Ok((
                    ServerAuth {
                        mac: key.session_mac_key("server", &transcript),
                    },
                    ServerOutcome {
                        session_key: Zeroizing::new(key.session_mac_key("session", &transcript)),
                        epoch: sess.epoch,
                        key_index,
                    },
                ));
            }
        }
        Err(Error::Refused("not a subscriber".into()))
    }

    /// **For deviating-server tests and the cheating simulation only**: the server's
    /// signing key, to re-sign messages of its choosing.
    pub fn signing_key(&self) -> &SigningKey {
        &self.signing
    }
}

/// Client settings.
#[derive(Debug, Clone, Copy)]
pub struct ClientConfig {
    /// Rows audited per authentication (α, §3.3), in one weighted query. The rows of
    /// one weighted query share a slot of the `lwe` layout, so a table allows at most
    /// [`max_audits`] of them; more is an error, never a silent cut.
    pub audits: usize,
    /// Whether to accept tables committed with the paper's equivocable commitment.
    pub accept_paper_commitment: bool,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            audits: 4,
            accept_paper_commitment: false,
        }
    }
}

/// The most rows one audit query can cover in a table of these parameters (the rows
/// of one slot, less the client's own).
pub fn max_audits(params: &LweParams) -> usize {
    let rows = params.shape().rows;
    let slots = params.slots() as u64;
    // The fullest slot holds ⌈rows/slots⌉ rows (the client's own may be one of them:
    // it is audited like any other, so that an audit proof does not point at it).
    (rows.div_ceil(slots) as usize).max(1)
}

/// A subscriber: its row, its key pair, the server's signature key.
#[derive(Debug, Clone)]
pub struct TracEdgeClient {
    server: VerifyingKey,
    row: u64,
    secret: SubscriberSecret,
    config: ClientConfig,
}

#[derive(Debug)]
enum ClientStep {
    AwaitCommit,
    AwaitResponse,
    AwaitServerAuth,
    Done,
}

/// The client's view of one authentication (holds the per-query seeds: secret).
pub struct ClientSession {
    hello: Hello,
    /// The client's clock when the session started.
    now_ms: u64,
    commit: Option<Commit>,
    queries: Option<Queries>,
    /// `wire_hash` of `queries`, taken once when they were sent.
    queries_hash: [u8; 32],
    hint: Option<LweHint>,
    lwe: Option<LweClient>,
    own: Option<QueryOpening>,
    audit: Option<QueryOpening>,
    own_entry: Option<DirEntry>,
    audit_entries: Vec<DirEntry>,
    key: Option<TableKey>,
    /// The signed response, kept for the audit check that runs after `ClientAuth`.
    response: Option<Response>,
    proof: Option<Box<MisbehaviourProof>>,
    transcript: Sha256,
    step: ClientStep,
    /// This session's last log request (from, to); none before the first.
    log_req: core::cell::Cell<Option<(u64, u64)>>,
}

impl core::fmt::Debug for ClientSession {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ClientSession")
            .field("step", &self.step)
            .finish_non_exhaustive()
    }
}

/// The end of an authentication, on the client.
#[derive(Debug)]
pub enum ClientOutcome {
    /// Authenticated: both sides hold `K` and the session key.
    Authenticated {
        /// The session key.
        session_key: Zeroizing<[u8; 32]>,
        /// The epoch.
        epoch: u64,
        /// When the key expires (0: the table is current).
        expires_ms: u64,
    },
    /// The server was caught: here is the proof anyone can check.
    Caught(Box<MisbehaviourProof>),
    /// The server's signed log removed this subscriber's key from its row.
    NotEnrolled {
        /// The row.
        row: u64,
        /// The log entry that changed it.
        since: u64,
    },
    /// The server refused (or answered with a wrong MAC) and no misbehaviour was seen.
    Refused(String),
}

/// Why a client step stopped the session before the end.
#[derive(Debug)]
pub enum ClientStop {
    /// The server was caught: the proof.
    Caught(Box<MisbehaviourProof>),
    /// The signed log removed this subscriber's key from its row (at `since`).
    NotEnrolled {
        /// The row.
        row: u64,
        /// The log entry.
        since: u64,
    },
    /// A message is malformed, out of place or refused (not provable misbehaviour).
    Error(Error),
}

impl From<Error> for ClientStop {
    fn from(e: Error) -> Self {
        ClientStop::Error(e)
    }
}

impl From<super::log::ViewError> for ClientStop {
    fn from(e: super::log::ViewError) -> Self {
        match e {
            super::log::ViewError::Caught(p) => ClientStop::Caught(p),
            super::log::ViewError::Invalid(e) => ClientStop::Error(e),
        }
    }
}

impl core::fmt::Display for ClientStop {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ClientStop::Caught(_) => f.write_str("the server was caught misbehaving"),
            ClientStop::NotEnrolled { row, since } => write!(
                f,
                "the server's signed log removed this subscriber's key from row {row} (log entry {since})"
            ),
            ClientStop::Error(e) => write!(f, "{e}"),
        }
    }
}

/// What the client needs before it can answer a `Commit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommitNeeds {
    /// The log up to the `Commit`'s head: apply the segments to the view
    /// ([`ClientView::apply`]) and ask again from where they end.
    Log(LogRequest),
    /// Nothing: call [`TracEdgeClient::on_commit`].
    Ready,
}

impl TracEdgeClient {
    /// A subscriber of row `row` with key `secret` for the server `server`.
    pub fn new(server: VerifyingKey, row: u64, secret: SubscriberSecret, config: ClientConfig) -> Self {
        TracEdgeClient {
            server,
            row,
            secret,
            config,
        }
    }

    /// The row.
    pub fn row(&self) -> u64 {
        self.row
    }

    /// The subscriber's key pair.
    pub fn secret(&self) -> &SubscriberSecret {
        &self.secret
    }

    /// Step 1: a nonce (and no clock). `now_ms` is the client's clock, against which
    /// the server's signed time and the log's entries are checked.
    pub fn start<R: RngCore + CryptoRng>(&self, now_ms: u64, rng: &mut R) -> (ClientSession, Hello) {
        let mut nonce = [0u8; 32];
        rng.fill_bytes(&mut nonce);
        // No clock: the server signs its own time in the commit (the offset of a
        // device's clock would link its sessions).
        let hello = Hello { t_s: 0, nonce };
        let mut transcript = Sha256::new();
        transcript.update(hello.to_wire());
        (
            ClientSession {
                hello,
                now_ms,
                commit: None,
                queries: None,
                queries_hash: [0; 32],
                hint: None,
                lwe: None,
                own: None,
                audit: None,
                own_entry: None,
                audit_entries: Vec::new(),
                key: None,
                response: None,
                log_req: core::cell::Cell::new(None),
                proof: None,
                transcript,
                step: ClientStep::AwaitCommit,
            },
            hello,
        )
    }

    fn caught(&self, kind: ProofKind) -> ClientStop {
        ClientStop::Caught(Box::new(MisbehaviourProof {
            server_key: self.server.to_bytes(),
            kind,
        }))
    }

    /// Checks the commit's signature and freshness, and that it does not name an
    /// older log head than the client already holds (a rollback: with a proof when
    /// the held entry, or the receipt, is older than the commit by
    /// [`ROLLBACK_MARGIN_MS`]). Then says whether the client's view must first be
    /// brought up to the commit's log head.
    pub fn commit_needs(
        &self,
        sess: &ClientSession,
        commit: &Commit,
        view: &ClientView,
    ) -> core::result::Result<CommitNeeds, ClientStop> {
        if !matches!(sess.step, ClientStep::AwaitCommit) {
            return Err(Error::Refused("commit out of order".into()).into());
        }
        verify_commit(&self.server, &sess.hello, commit)?;
        if view.server().to_bytes() != self.server.to_bytes() {
            return Err(Error::Refused("the view is of another server's log".into()).into());
        }
        if commit.t_s.abs_diff(sess.now_ms) > MAX_SKEW_MS {
            return Err(Error::Refused(format!(
                "the server's clock is {} s from this client's; at most {} s is accepted",
                commit.t_s.abs_diff(sess.now_ms) / 1000,
                MAX_SKEW_MS / 1000
            ))
            .into());
        }
        // A commit must not name an older log head than one the client holds, nor
        // one before its receipt's entry. The oldest such evidence is the likeliest
        // to be older than the commit by the margin that makes it a proof (entry and
        // receipt times are never later than the client's clock plus the skew: they
        // are refused otherwise).
        if commit.log_seq >= super::log::MAX_LOG_ENTRIES {
            return Err(Error::Refused(format!(
                "the commit names log entry {}; a log has fewer",
                commit.log_seq
            ))
            .into());
        }
        let evidence = view
            .entry(commit.log_seq + 1)
            .map(|e| Evidence::Entry(e.clone()))
            .or_else(|| {
                view.own()
                    .filter(|o| o.receipt.seq > commit.log_seq)
                    .map(|o| Evidence::Receipt(o.receipt.clone()))
            });
        if let Some(ev) = evidence {
            let (seq, time) = match &ev {
                Evidence::Entry(e) => (e.seq, e.time_ms),
                Evidence::Receipt(r) => (r.seq, r.time_ms),
            };
            if time.saturating_add(ROLLBACK_MARGIN_MS) < commit.t_s {
                return Err(self.caught(ProofKind::Rollback {
                    hello: sess.hello,
                    commit: commit.clone(),
                    evidence: ev,
                }));
            }
            return Err(Error::Refused(format!(
                "the server names log entry {} as its newest; this client already holds entry {seq} (signed less than {} min before: not yet a proof)",
                commit.log_seq,
                ROLLBACK_MARGIN_MS / 60_000
            ))
            .into());
        }
        // The segment that answered this session's last request must be exactly a
        // run of it: from its start, consecutive, within it, not empty. Checked
        // before anything else, so that a segment that skips entries (which a client
        // accepts only if it held them) stops every client alike (third review, G1).
        let next = match sess.log_req.get() {
            None => None,
            Some((from, to)) => match view.last_segment() {
                Some((first, last, true)) if first == from && last <= to => Some(last + 1),
                _ => {
                    return Err(
                        Error::Refused("the server's log segment is not the run of entries asked for".into()).into(),
                    );
                }
            },
        };
        match view.head_seq() {
            Some(h) if h >= commit.log_seq => Ok(CommitNeeds::Ready),
            _ => {
                // The first request of a session names a window that depends on the
                // client's copy only through its size class; later ones go on from
                // the end of the server's last segment (which it knows), never from
                // the client's own head.
                let from = next.unwrap_or_else(|| view.sync_from(commit.log_seq));
                sess.log_req.set(Some((from, commit.log_seq)));
                Ok(CommitNeeds::Log(LogRequest {
                    from,
                    to: commit.log_seq,
                }))
            }
        }
    }

    /// Checks the commit against the client's view (which must hold exactly the log
    /// up to the commit's head): the header is a table of that entry, the client's
    /// own row holds its key there, the commitment scheme is acceptable. Returns the
    /// header.
    pub fn check_commit(
        &self,
        sess: &ClientSession,
        commit: &Commit,
        view: &ClientView,
    ) -> core::result::Result<TableHeader, ClientStop> {
        if let CommitNeeds::Log(_) = self.commit_needs(sess, commit, view)? {
            return Err(Error::Refused("the client's log does not reach the commit's log head".into()).into());
        }
        if view.head_seq() != Some(commit.log_seq) {
            return Err(Error::Refused("the client's log is past the commit's log head".into()).into());
        }
        let entry = view
            .entry(commit.log_seq)
            .ok_or_else(|| Error::Refused("the client's log does not reach the commit's log head".into()))?;
        // The session must run on the entry's current table (a deprecated one that
        // the entry still lists is not offered: the server would choose per session).
        let current = entry.tables.iter().find(|t| t.expires_ms == 0);
        if entry.hash() != commit.log_hash || current != Some(&commit.header) {
            return Err(self.caught(ProofKind::CommitNotInLog {
                hello: sess.hello,
                commit: commit.clone(),
                entry: entry.clone(),
            }));
        }
        let header = commit.header;
        if header.scheme == CommitScheme::PaperEquivocable && !self.config.accept_paper_commitment {
            return Err(Error::Refused(
                "the server uses the paper's equivocable commitment; refusing (binding required)".into(),
            )
            .into());
        }
        let own = view
            .own()
            .ok_or_else(|| Error::Refused("the view has no enrolment receipt: own-row checks need one".into()))?;
        if own.row != self.row || own.key != self.secret.public_bytes() {
            return Err(Error::Refused("the view's receipt is for another subscriber".into()).into());
        }
        if let Some(since) = own.removed_at {
            return Err(ClientStop::NotEnrolled { row: self.row, since });
        }
        // The log registered our key at the receipt's entry (checked when it was
        // applied) and has not changed the row since.
        if view.directory().key(self.row)? != own.key {
            return Err(Error::Refused("the view's directory disagrees with its receipt".into()).into());
        }
        Ok(header)
    }

    /// Step 2: the query for the client's row and one weighted audit query over
    /// `audits` other rows of a random slot. `hint` must be the hint of
    /// `commit.header.table_id`, with the derived `A` ([`lwe_seed`]).
    pub fn on_commit<R: RngCore + CryptoRng>(
        &self,
        sess: &mut ClientSession,
        commit: Commit,
        hint: LweHint,
        view: &ClientView,
        rng: &mut R,
    ) -> core::result::Result<Queries, ClientStop> {
        let header = self.check_commit(sess, &commit, view)?;
        let lwe = LweClient::new(hint.clone())?;
        if lwe.table_id() != header.table_id {
            return Err(Error::WrongTable {
                ours: keytable::hex(&lwe.table_id()[..8]),
                theirs: keytable::hex(&header.table_id[..8]),
            }
            .into());
        }
        if lwe.params().seed() != lwe_seed_of(&header.server_dh_key, header.epoch, &header.ephemeral) {
            return Err(Error::Refused("the table's LWE matrix is not the one its epoch derives".into()).into());
        }
        let params = *lwe.params();
        // The layout is the one n derives (a server that chose few slots would cap
        // the audits).
        let canonical = LweParams::new(crate::TableShape::new(header.rows, keytable::ROW_BYTES)?, params.seed())?;
        if params != canonical {
            return Err(Error::Refused("the hint's layout is not the one the table size derives".into()).into());
        }
        let cap = max_audits(&params);
        if self.config.audits > cap {
            return Err(Error::InvalidSelection(format!(
                "{} audited rows asked for; one audit query of this table ({} rows, {} slots) covers at most {cap}",
                self.config.audits,
                header.rows,
                params.slots()
            ))
            .into());
        }
        let mut own = QueryOpening::new(Selection::row(self.row), rng);
        let own_q = own.query(&lwe)?;
        let mut audits = Vec::new();
        let mut audit = None;
        let mut audit_entries = Vec::new();
        if self.config.audits > 0
            && let Some(sel) = audit_selection(&params, self.row, self.config.audits, rng)
        {
            let mut opening = QueryOpening::new(sel, rng);
            audits.push(opening.query(&lwe)?);
            let mut buckets: Vec<u64> = opening
                .selection()
                .entries()
                .iter()
                .map(|&(r, _)| r / BUCKET_ROWS)
                .collect();
            buckets.sort_unstable();
            buckets.dedup();
            for b in buckets {
                audit_entries.push(view.directory().entry(b)?);
            }
            audit = Some(opening);
        }
        let queries = Queries {
            epoch: header.epoch,
            own: own_q,
            audits,
        };
        sess.transcript.update(commit.to_wire());
        sess.queries_hash = wire_hash(&queries);
        sess.transcript.update(sess.queries_hash);
        sess.own_entry = Some(view.bucket_of(self.row)?);
        sess.audit_entries = audit_entries;
        sess.commit = Some(commit);
        sess.queries = Some(queries.clone());
        sess.hint = Some(hint);
        sess.lwe = Some(lwe);
        sess.own = Some(own);
        sess.audit = audit;
        sess.step = ClientStep::AwaitResponse;
        Ok(queries)
    }

    /// Step 3: checks the signed response, decodes `K'` from the client's row and
    /// checks it against the commitment (and, for a binding table, against `R`), and
    /// checks the audit against the rows the client computes from `K` and its copy
    /// of the directory. Returns the client's MAC — a random one if any check failed,
    /// so that the exchange looks like an unauthorised client's (the proof is then in
    /// the session, and [`TracEdgeClient::on_server_auth`] returns it).
    pub fn on_response<R: RngCore + CryptoRng>(
        &self,
        sess: &mut ClientSession,
        resp: Response,
        rng: &mut R,
    ) -> core::result::Result<ClientAuth, ClientStop> {
        if !matches!(sess.step, ClientStep::AwaitResponse) {
            return Err(Error::Refused("response out of order".into()).into());
        }
        let (Some(commit), Some(queries), Some(lwe), Some(own), Some(hint)) =
            (&sess.commit, &sess.queries, &sess.lwe, &sess.own, &sess.hint)
        else {
            return Err(Error::Refused("response out of order".into()).into());
        };
        let ahash = verify_response_hashed(
            &self.server,
            &sess.hello,
            commit,
            &sess.queries_hash,
            1 + queries.audits.len(),
            &resp,
        )?;
        let header = commit.header;
        // Every signed answer must have the table's shape before anything is
        // decoded or any MAC is sent: a malformed one is provable (review 2, F3).
        if let Some((index, _)) = answer_shape_defect(lwe, &header, &resp.answers) {
            sess.transcript
                .update(response_transcript_bytes(resp.epoch, &ahash, &resp.sig));
            sess.proof = Some(Box::new(MisbehaviourProof {
                server_key: self.server.to_bytes(),
                kind: ProofKind::MalformedAnswer {
                    session: Box::new(Transcript {
                        hello: sess.hello,
                        commit: commit.clone(),
                        queries: queries.clone(),
                        response: resp,
                        hint: hint.clone(),
                    }),
                    index: index as u32,
                },
            }));
            sess.step = ClientStep::AwaitServerAuth;
            let mut mac = [0u8; 32];
            rng.fill_bytes(&mut mac);
            return Ok(ClientAuth { mac });
        }
        let row = own.decode(lwe, &resp.answers[0])?.to_row_bytes(keytable::ROW_BYTES);
        let ephemeral = decode_public(&header.ephemeral)?;
        let server_dh = decode_public(&header.server_dh_key)?;
        let (k, shared) = self.secret.decrypt_row(&ephemeral, header.epoch, self.row, &row)?;
        sess.transcript
            .update(response_transcript_bytes(resp.epoch, &ahash, &resp.sig));
        let session = |resp: &Response| {
            Box::new(Transcript {
                hello: sess.hello,
                commit: commit.clone(),
                queries: queries.clone(),
                response: resp.clone(),
                hint: hint.clone(),
            })
        };
        let mut proof = None;
        if !key_matches(&header, &server_dh, &k) {
            let dleq = super::proof::dleq_prove(self.secret.scalar(), &ephemeral, &shared, &header, self.row);
            let entry = sess
                .own_entry
                .clone()
                .ok_or_else(|| Error::Refused("no own bucket".into()))?;
            proof = Some(ProofKind::OwnRow {
                session: session(&resp),
                row: self.row,
                opening: own.clone(),
                subscriber_key: self.secret.public_bytes(),
                shared: shared.to_bytes(),
                dleq,
                entry,
            });
        }
        // The audit is checked after ClientAuth is sent (in `on_server_auth`): its
        // cost grows with α, and a delay before ClientAuth that grows with α would
        // show the server which clients audit more (review L3). The MAC depends only
        // on the client's own row; the audit's outcome is not the server's to see.
        sess.step = ClientStep::AwaitServerAuth;
        if let Some(kind) = proof {
            sess.proof = Some(Box::new(MisbehaviourProof {
                server_key: self.server.to_bytes(),
                kind,
            }));
            let mut mac = [0u8; 32];
            rng.fill_bytes(&mut mac);
            return Ok(ClientAuth { mac });
        }
        let transcript: [u8; 32] = sess.transcript.clone().finalize().into();
        let mac = k.session_mac_key("client", &transcript);
        sess.key = Some(k);
        sess.response = Some(resp);
        Ok(ClientAuth { mac })
    }

    /// Step 4: the server's answer to the MAC (`Ok(ServerAuth)`, or `Err(reason)` for a
    /// refusal), and the outcome.
    pub fn on_server_auth(
        &self,
        sess: &mut ClientSession,
        reply: core::result::Result<ServerAuth, String>,
    ) -> ClientOutcome {
        sess.step = ClientStep::Done;
        if sess.proof.is_none() {
            match self.check_audit(sess) {
                Ok(Some(kind)) => {
                    sess.proof = Some(Box::new(MisbehaviourProof {
                        server_key: self.server.to_bytes(),
                        kind,
                    }))
                }
                Ok(None) => {}
                Err(e) => return ClientOutcome::Refused(format!("the audit could not be checked: {e}")),
            }
        }
        if let Some(p) = sess.proof.take() {
            return ClientOutcome::Caught(p);
        }
        let reply = match reply {
            Ok(r) => r,
            Err(why) => return ClientOutcome::Refused(why),
        };
        let (Some(k), Some(commit)) = (&sess.key, &sess.commit) else {
            return ClientOutcome::Refused("authentication out of order".into());
        };
        let transcript: [u8; 32] = sess.transcript.clone().finalize().into();
        let expected = k.session_mac_key("server", &transcript);
        if !bool::from(expected.ct_eq(&reply.mac)) {
            return ClientOutcome::Refused("the server's MAC is wrong: it does not hold K".into());
        }
        ClientOutcome::Authenticated {
            session_key: Zeroizing::new(k.session_mac_key("session", &transcript)),
            epoch: commit.header.epoch,
            expires_ms: commit.header.expires_ms,
        }
    }
}

impl TracEdgeClient {
    /// The audit of a session whose own row checked: the weighted sum of the audited
    /// rows against the one the client computes from `K` and its copy of the
    /// directory. `Some(proof)` when they differ.
    fn check_audit(&self, sess: &ClientSession) -> Result<Option<ProofKind>> {
        let (Some(a), Some(k), Some(resp), Some(lwe), Some(commit), Some(queries), Some(hint)) = (
            &sess.audit,
            &sess.key,
            &sess.response,
            &sess.lwe,
            &sess.commit,
            &sess.queries,
            &sess.hint,
        ) else {
            return Ok(None);
        };
        let answer = resp
            .answers
            .get(1)
            .ok_or_else(|| Error::Refused("the response has no audit answer".into()))?;
        let decoded = a.decode(lwe, answer)?;
        let expected = expected_audit(k, &commit.header, a.selection(), &sess.audit_entries, lwe.symbols())?;
        if decoded.symbols == expected {
            return Ok(None);
        }
        Ok(Some(ProofKind::Audit {
            session: Box::new(Transcript {
                hello: sess.hello,
                commit: commit.clone(),
                queries: queries.clone(),
                response: resp.clone(),
                hint: hint.clone(),
            }),
            opening: a.clone(),
            key: *k.as_bytes(),
            entries: sess.audit_entries.clone(),
        }))
    }
}

impl ClientSession {
    /// The proof of misbehaviour, if the server was caught (also returned by
    /// [`TracEdgeClient::on_server_auth`]).
    pub fn proof(&self) -> Option<&MisbehaviourProof> {
        self.proof.as_deref()
    }

    /// The rows the audit query of this session covers (empty before `on_commit`, or
    /// with no audit).
    pub fn audited_rows(&self) -> Vec<u64> {
        self.audit
            .as_ref()
            .map(|a| a.selection().entries().iter().map(|&(r, _)| r).collect())
            .unwrap_or_default()
    }

    /// The hello of this session.
    pub fn hello(&self) -> &Hello {
        &self.hello
    }
}

/// Whether `k` is the key the header commits to: it opens `Γ`, and for a binding
/// table also `H(k)·B = R` (the paper's client checks only the commitment).
pub fn key_matches(header: &TableHeader, server_dh: &RistrettoPoint, k: &TableKey) -> bool {
    if !commit::opens(header.scheme, server_dh, k, &header.commitment) {
        return false;
    }
    match header.scheme {
        CommitScheme::Binding => k.ephemeral_point().compress().to_bytes() == header.ephemeral,
        CommitScheme::PaperEquivocable => true,
    }
}

/// Checks the server's signature on a commit and that it answers `hello`.
pub fn verify_commit(server: &VerifyingKey, hello: &Hello, commit: &Commit) -> Result<()> {
    server
        .verify(
            &commit_signed_bytes(
                &commit.header,
                commit.t_s,
                &hello.nonce,
                &commit.server_nonce,
                commit.log_seq,
                &commit.log_hash,
            ),
            &commit.sig,
        )
        .map_err(|_| Error::Signature("the commitment"))
}

/// Checks the server's signature on a response to `queries` in the session of
/// `hello`/`commit`, and its shape. Returns the hash of the answers
/// ([`answers_hash`]), which the transcript takes.
pub fn verify_response(
    server: &VerifyingKey,
    hello: &Hello,
    commit: &Commit,
    queries: &Queries,
    resp: &Response,
) -> Result<[u8; 32]> {
    verify_response_hashed(
        server,
        hello,
        commit,
        &wire_hash(queries),
        1 + queries.audits.len(),
        resp,
    )
}

/// [`verify_response`] with the queries' hash already taken (the client took it when
/// it sent them) and `n_queries` of them.
fn verify_response_hashed(
    server: &VerifyingKey,
    hello: &Hello,
    commit: &Commit,
    queries_hash: &[u8; 32],
    n_queries: usize,
    resp: &Response,
) -> Result<[u8; 32]> {
    if resp.epoch != commit.header.epoch || resp.answers.len() != n_queries {
        return Err(Error::Refused("the response does not match the queries".into()));
    }
    let ahash = answers_hash(&resp.answers);
    server
        .verify(
            &response_signed_bytes(
                commit.t_s,
                &hello.nonce,
                &commit.server_nonce,
                resp.epoch,
                queries_hash,
                &ahash,
            ),
            &resp.sig,
        )
        .map_err(|_| Error::Signature("the PIR response"))?;
    Ok(ahash)
}

/// A weighted selection of `alpha` rows of one random slot with random odd weights
/// (a row that differs changes the sum: `p` is a power of two). The client's own row
/// is a candidate like any other (`_own` is not excluded): excluding it made an audit
/// proof that covered a whole slot point at the prover's row.
pub fn audit_selection<R: RngCore + CryptoRng>(
    params: &LweParams,
    _own: u64,
    alpha: usize,
    rng: &mut R,
) -> Option<Selection> {
    let rows = params.shape().rows;
    let slots = params.slots() as u64;
    let slot = tacit_crypto::rng::uniform_below(rng, slots);
    let mut candidates: Vec<u64> = (0..params.cols() as u64)
        .map(|c| c * slots + slot)
        .filter(|&r| r < rows)
        .collect();
    if candidates.is_empty() {
        return None;
    }
    tacit_crypto::rng::shuffle(rng, &mut candidates);
    candidates.truncate(alpha);
    candidates.sort_unstable();
    let modulus = params.symbols().modulus as u64;
    let entries: Vec<(u64, u32)> = candidates
        .into_iter()
        .map(|r| (r, (tacit_crypto::rng::uniform_below(rng, modulus / 2) * 2 + 1) as u32))
        .collect();
    Selection::weighted(&entries).ok()
}

/// The weighted sum of the honest rows `sel` for key `k` under `header`, with the
/// public keys from `entries`: what an audit must decode to.
pub fn expected_audit(
    k: &TableKey,
    header: &TableHeader,
    sel: &Selection,
    entries: &[keytable::DirEntry],
    layout: crate::SymbolLayout,
) -> Result<Vec<u32>> {
    let n = layout.per_row(keytable::ROW_BYTES);
    let p = layout.modulus as u64;
    let mut acc = vec![0u64; n];
    for &(r, w) in sel.entries() {
        let key = entries
            .iter()
            .find_map(|e| e.key(r))
            .ok_or_else(|| Error::Refused(format!("no directory bucket for row {r}")))?;
        let y = decode_public(&key)?;
        let row = keytable::encrypt_row(k, k, header.epoch, r, &y);
        for (a, s) in acc.iter_mut().zip(layout.split(&row)) {
            *a = (*a + (w as u64 % p) * s as u64) % p;
        }
    }
    Ok(acc.into_iter().map(|v| v as u32).collect())
}

/// The first answer of a signed response whose shape is not the signed table's:
/// another table id, or another length than the table's answers have. Its index and
/// what is wrong.
pub fn answer_shape_defect(
    lwe: &LweClient,
    header: &TableHeader,
    answers: &[crate::lwe::LweAnswer],
) -> Option<(usize, String)> {
    let m = lwe.params().matrix_rows();
    answers.iter().enumerate().find_map(|(i, a)| {
        if a.table_id != header.table_id {
            Some((i, format!("answer {i} is for another table")))
        } else if a.values.len() != m {
            Some((i, format!("answer {i} has {} values, not {m}", a.values.len())))
        } else {
            None
        }
    })
}

/// How an in-process run ended ([`authenticate_in_process`]).
#[derive(Debug)]
pub struct InProcess {
    /// The client's outcome, or why it stopped before the end.
    pub client: core::result::Result<ClientOutcome, ClientStop>,
    /// Which key the server saw (`Some(0)`: the committed one; `Some(i > 0)`: a
    /// cheating server's i-th second key; `None`: no MAC matched, or the run
    /// stopped before).
    pub key_index: Option<usize>,
    /// Log records the client's view took.
    pub log_records: u64,
}

/// One authentication between a server and a client in one process (demos,
/// benches, tests): hello, the log up to the commit's head into `view`, queries,
/// response, MACs.
pub fn authenticate_in_process<S, R>(
    server: &mut TracEdgeServer<S>,
    client: &TracEdgeClient,
    view: &mut ClientView,
    hint: LweHint,
    now_ms: u64,
    rng: &mut R,
) -> InProcess
where
    S: PirServer<Query = LweQuery, Answer = crate::lwe::LweAnswer> + HintSource + PipelinedLwe,
    R: RngCore + CryptoRng,
{
    let mut out = InProcess {
        client: Err(ClientStop::Error(Error::Refused("not started".into()))),
        key_index: None,
        log_records: 0,
    };
    let (mut cs, hello) = client.start(now_ms, rng);
    let (mut ss, commit) = match server.hello(&hello, now_ms, rng) {
        Ok(x) => x,
        Err(e) => {
            out.client = Err(e.into());
            return out;
        }
    };
    loop {
        match client.commit_needs(&cs, &commit, view) {
            Err(s) => {
                out.client = Err(s);
                return out;
            }
            Ok(CommitNeeds::Ready) => break,
            Ok(CommitNeeds::Log(req)) => {
                let seg = server.log_segment(&req);
                if let Err(e) = view.apply(&seg, now_ms) {
                    out.client = Err(e.into());
                    return out;
                }
                out.log_records += seg.records.len() as u64;
            }
        }
    }
    let q = match client.on_commit(&mut cs, commit, hint, view, rng) {
        Ok(q) => q,
        Err(s) => {
            out.client = Err(s);
            return out;
        }
    };
    let resp = match server.respond(&mut ss, &q) {
        Ok(r) => r,
        Err(e) => {
            out.client = Err(e.into());
            return out;
        }
    };
    let auth = match client.on_response(&mut cs, resp, rng) {
        Ok(a) => a,
        Err(s) => {
            out.client = Err(s);
            return out;
        }
    };
    let reply = match server.finish(&mut ss, &auth) {
        Ok((r, o)) => {
            out.key_index = Some(o.key_index);
            Ok(r)
        }
        Err(e) => Err(e.to_string()),
    };
    out.client = Ok(client.on_server_auth(&mut cs, reply));
    out
}
