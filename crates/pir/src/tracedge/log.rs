//! The **table log**: a signed, hash-chained record of every directory change and of
//! every table the server serves, in the spirit of Certificate Transparency and Key
//! Transparency, and the **enrolment receipt** each subscriber keeps.
//!
//! The paper assumes that "the server and clients know 𝒰, the set of subscriber's
//! public keys" through "a simple, integrity protected public key directory" (§3.2,
//! §5.3). tacit makes that directory a log the server signs:
//!
//! ```text
//! entry_s = Sig(seq s ‖ time ‖ H(entry_{s−1}) ‖ n ‖ empty-row key ‖ directory root
//!               ‖ H(changes_s) ‖ headers of the tables served after entry s)
//! changes_s = [(row, key)]   the directory rows this entry sets
//! ```
//!
//! A client keeps every entry it has verified (a [`ClientView`]) and the directory
//! they define, and accepts a newer entry only as the continuation of the chain it
//! holds. So:
//!
//! * it never asks the server for a public key: its own row, and every row it audits,
//!   come from its copy of the directory — the server cannot withhold a bucket, and
//!   learns nothing of which rows are audited;
//! * "this subscriber was removed" is a signed change of its row in the log, never an
//!   inference from a failed check;
//! * every table a session runs on must be listed in the log entry that the server's
//!   signed `Commit` names, so a table shown to some sessions and not others (a
//!   *variant*) is a second entry for the same position: two signed entries that do
//!   not extend each other are a [proof of equivocation](super::ProofKind::Equivocation),
//!   and two subscribers compare their views offline ([`ClientView::compare`]).
//!
//! [`EnrolmentReceipt`]: the server's signature over (row, key, `n`, the entry that
//! registers it), given at enrolment and kept in the identity file, so that
//! own-row evidence never depends on what the server chooses to send later.

use std::collections::BTreeMap;
use std::sync::Arc;

use curve25519_dalek::ristretto::RistrettoPoint;
use curve25519_dalek::scalar::Scalar;
use rand_core::{CryptoRng, RngCore};
use sha2::{Digest, Sha256, Sha512};
use tacit_crypto::sign::{SigningKey, VerifyingKey};
use tacit_wire::{Decode, Encode, Reader, Writer};

use super::keytable::{BUCKET_ROWS, DirEntry, Directory, decode_public};
use super::messages::{TAG_LOG_REQUEST, TAG_LOG_SEGMENT, TableHeader};
use crate::{Error, Result};

/// The most directory changes one entry carries (a bigger change is split over
/// several entries).
pub const MAX_CHANGES_PER_ENTRY: usize = 1 << 16;
/// The most tables one entry lists (the current one and the deprecated ones whose
/// keys have not expired).
pub const MAX_TABLES_PER_ENTRY: usize = 16;
/// The most entries one [`LogSegment`] carries.
pub const MAX_SEGMENT_ENTRIES: usize = 256;
/// The most bytes of changes one [`LogSegment`] carries (a single entry may exceed
/// it: a segment always carries at least one entry).
pub const SEGMENT_CHANGE_BYTES: usize = 4 << 20;
/// Clients ask for the last `SYNC_WINDOW · 2^k` entries before the commit's head, for
/// the smallest `k` that reaches their copy: what a request tells the server is `k`
/// (how far behind the client is, in doublings of the window), not where its copy
/// ends (second review, F1: the hour of the copy's end, by the server's signed times,
/// let a server that appends an entry per session link a client's sessions).
pub const SYNC_WINDOW: u64 = 128;
/// The most log positions a client accepts a commit to name (2⁴⁰: a server appending
/// an entry a microsecond would take 12 days to reach it); larger ones are refused
/// (third review, G3: `u64::MAX` overflowed).
pub const MAX_LOG_ENTRIES: u64 = 1 << 40;
/// The most rows of a TracEdge table (2²⁶: a client's copy of the directory is then
/// at most 2 GiB; the paper's tables have 10⁷).
pub const MAX_TABLE_ROWS: u64 = 1 << 26;

/// A directory change: row `row` now holds public key `key` (the server's own key
/// for an emptied row).
pub type Change = (u64, [u8; 32]);

/// One signed entry of the table log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogEntry {
    /// Position in the log (the genesis entry is 0).
    pub seq: u64,
    /// The server's clock when it signed (unix ms).
    pub time_ms: u64,
    /// [`LogEntry::hash`] of the previous entry (zeros for the genesis entry).
    pub prev: [u8; 32],
    /// Rows `n` of every table (fixed at genesis).
    pub rows: u64,
    /// The server's own ristretto255 key: empty rows encrypt to it (fixed at genesis).
    pub empty_key: [u8; 32],
    /// The directory root after this entry's changes.
    pub dir_root: [u8; 32],
    /// [`changes_hash`] of this entry's changes.
    pub changes_hash: [u8; 32],
    /// How many changes.
    pub n_changes: u32,
    /// The tables served after this entry, each over this entry's directory.
    pub tables: Vec<TableHeader>,
    /// Ed25519 signature by the server over [`LogEntry::signed_bytes`].
    pub sig: [u8; 64],
}

impl LogEntry {
    /// The bytes the server signs.
    pub fn signed_bytes(&self) -> Vec<u8> {
        let mut w = Writer::with_capacity(256 + 300 * self.tables.len());
        w.put_fixed(b"tacit/tracedge/v3/log\0");
        self.put_unsigned(&mut w);
        w.into_bytes()
    }

    fn put_unsigned(&self, w: &mut Writer) {
        w.put_u64(self.seq);
        w.put_u64(self.time_ms);
        w.put_fixed(&self.prev);
        w.put_u64(self.rows);
        w.put_fixed(&self.empty_key);
        w.put_fixed(&self.dir_root);
        w.put_fixed(&self.changes_hash);
        w.put_u32(self.n_changes);
        w.put_count(self.tables.len());
        for t in &self.tables {
            t.put(w);
        }
    }

    /// The entry's hash, which the next entry names as `prev` and a `Commit` names as
    /// the log head.
    pub fn hash(&self) -> [u8; 32] {
        let mut h = Sha256::new();
        h.update(b"tacit/tracedge/v3/log-hash\0");
        h.update(self.signed_bytes());
        h.update(self.sig);
        h.finalize().into()
    }

    /// Checks the server's signature.
    pub fn verify(&self, server: &VerifyingKey) -> Result<()> {
        server
            .verify(&self.signed_bytes(), &self.sig)
            .map_err(|_| Error::Signature("a table log entry"))
    }

    /// The table of `epoch` listed in this entry.
    pub fn table(&self, epoch: u64) -> Option<&TableHeader> {
        self.tables.iter().find(|t| t.epoch == epoch)
    }

    pub(crate) fn put(&self, w: &mut Writer) {
        self.put_unsigned(w);
        w.put_fixed(&self.sig);
    }

    pub(crate) fn read(r: &mut Reader<'_>) -> tacit_wire::Result<Self> {
        let seq = r.u64()?;
        let time_ms = r.u64()?;
        let prev = r.array("previous entry hash")?;
        let rows = r.u64()?;
        if rows == 0 || rows > MAX_TABLE_ROWS {
            return Err(tacit_wire::Error::invalid("table log entry", "row count out of range"));
        }
        let empty_key = r.array("empty-row key")?;
        let dir_root = r.array("directory root")?;
        let changes_hash = r.array("changes hash")?;
        let n_changes = r.u32()?;
        if n_changes as usize > MAX_CHANGES_PER_ENTRY {
            return Err(tacit_wire::Error::invalid("table log entry", "too many changes"));
        }
        let t = r.count("tables", MAX_TABLES_PER_ENTRY, 200)?;
        let tables = (0..t)
            .map(|_| TableHeader::read(r))
            .collect::<tacit_wire::Result<Vec<_>>>()?;
        Ok(LogEntry {
            seq,
            time_ms,
            prev,
            rows,
            empty_key,
            dir_root,
            changes_hash,
            n_changes,
            tables,
            sig: r.array("signature")?,
        })
    }
}

/// SHA-256 of a list of changes.
pub fn changes_hash(changes: &[Change]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"tacit/tracedge/v3/changes\0");
    h.update((changes.len() as u64).to_be_bytes());
    for (r, k) in changes {
        h.update(r.to_be_bytes());
        h.update(k);
    }
    h.finalize().into()
}

/// An entry with its changes (what a [`LogSegment`] carries and the server stores).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRecord {
    /// The signed entry.
    pub entry: LogEntry,
    /// Its changes (their hash is signed in the entry).
    pub changes: Vec<Change>,
}

impl LogRecord {
    pub(crate) fn put(&self, w: &mut Writer) {
        self.entry.put(w);
        w.put_count(self.changes.len());
        for (r, k) in &self.changes {
            w.put_u64(*r);
            w.put_fixed(k);
        }
    }

    pub(crate) fn read(r: &mut Reader<'_>) -> tacit_wire::Result<Self> {
        let entry = LogEntry::read(r)?;
        let n = r.count("changes", MAX_CHANGES_PER_ENTRY, 40)?;
        let changes = (0..n)
            .map(|_| Ok((r.u64()?, r.array("key")?)))
            .collect::<tacit_wire::Result<Vec<_>>>()?;
        Ok(LogRecord { entry, changes })
    }

    /// Checks that the changes are the ones the entry signs.
    fn check_changes(&self) -> Result<()> {
        if self.changes.len() != self.entry.n_changes as usize || changes_hash(&self.changes) != self.entry.changes_hash
        {
            return Err(Error::Refused(format!(
                "the changes sent with log entry {} are not the ones it signs",
                self.entry.seq
            )));
        }
        Ok(())
    }
}

impl Encode for LogRecord {
    fn encode(&self, w: &mut Writer) {
        self.put(w);
    }
}
impl Decode for LogRecord {
    fn decode(r: &mut Reader<'_>) -> tacit_wire::Result<Self> {
        Self::read(r)
    }
}

/// `C → S`: the log from entry `from` up to entry `to` (inclusive).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogRequest {
    /// First entry wanted.
    pub from: u64,
    /// Last entry wanted.
    pub to: u64,
}

/// `C ← S`: consecutive log records starting at the requested one (at most
/// [`MAX_SEGMENT_ENTRIES`]; the client asks again from where it ends).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogSegment {
    /// The records, in order.
    pub records: Vec<LogRecord>,
}

impl Encode for LogRequest {
    fn encode(&self, w: &mut Writer) {
        w.put_envelope(TAG_LOG_REQUEST);
        w.put_u64(self.from);
        w.put_u64(self.to);
    }
}
impl Decode for LogRequest {
    fn decode(r: &mut Reader<'_>) -> tacit_wire::Result<Self> {
        r.envelope(TAG_LOG_REQUEST, "tracedge log request")?;
        Ok(LogRequest {
            from: r.u64()?,
            to: r.u64()?,
        })
    }
}
impl Encode for LogSegment {
    fn encode(&self, w: &mut Writer) {
        w.put_envelope(TAG_LOG_SEGMENT);
        w.put_count(self.records.len());
        for rec in &self.records {
            rec.put(w);
        }
    }
}
impl Decode for LogSegment {
    fn decode(r: &mut Reader<'_>) -> tacit_wire::Result<Self> {
        r.envelope(TAG_LOG_SEGMENT, "tracedge log segment")?;
        let n = r.count("log records", MAX_SEGMENT_ENTRIES, 200)?;
        let records = (0..n)
            .map(|_| LogRecord::read(r))
            .collect::<tacit_wire::Result<Vec<_>>>()?;
        Ok(LogSegment { records })
    }
}

/// The server's signature that row `row` holds `subscriber_key` from log entry `seq`
/// on, in tables of `rows` rows: the subscriber keeps it in its identity file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnrolmentReceipt {
    /// The server's Ed25519 key.
    pub server_key: [u8; 32],
    /// The row.
    pub row: u64,
    /// The subscriber's public key.
    pub subscriber_key: [u8; 32],
    /// Rows `n` of the tables.
    pub rows: u64,
    /// The server's own ristretto255 key (empty rows encrypt to it).
    pub empty_key: [u8; 32],
    /// The log entry whose changes register the key.
    pub seq: u64,
    /// When it was issued (unix ms, the server's clock).
    pub time_ms: u64,
    /// Ed25519 signature over [`EnrolmentReceipt::signed_bytes`].
    pub sig: [u8; 64],
}

impl EnrolmentReceipt {
    /// Issues a receipt.
    pub fn issue(
        signing: &SigningKey,
        row: u64,
        subscriber_key: [u8; 32],
        rows: u64,
        empty_key: [u8; 32],
        seq: u64,
        time_ms: u64,
    ) -> Self {
        let mut r = EnrolmentReceipt {
            server_key: signing.verifying_key().to_bytes(),
            row,
            subscriber_key,
            rows,
            empty_key,
            seq,
            time_ms,
            sig: [0; 64],
        };
        r.sig = signing.sign(&r.signed_bytes());
        r
    }

    /// The bytes the server signs.
    pub fn signed_bytes(&self) -> Vec<u8> {
        let mut w = Writer::with_capacity(160);
        w.put_fixed(b"tacit/tracedge/v3/receipt\0");
        w.put_fixed(&self.server_key);
        w.put_u64(self.row);
        w.put_fixed(&self.subscriber_key);
        w.put_u64(self.rows);
        w.put_fixed(&self.empty_key);
        w.put_u64(self.seq);
        w.put_u64(self.time_ms);
        w.into_bytes()
    }

    /// Checks the signature (by `server`, which must be the key the receipt names).
    pub fn verify(&self, server: &VerifyingKey) -> Result<()> {
        if server.to_bytes() != self.server_key {
            return Err(Error::Refused("the receipt is from another server".into()));
        }
        server
            .verify(&self.signed_bytes(), &self.sig)
            .map_err(|_| Error::Signature("the enrolment receipt"))
    }

    pub(crate) fn put(&self, w: &mut Writer) {
        w.put_fixed(&self.server_key);
        w.put_u64(self.row);
        w.put_fixed(&self.subscriber_key);
        w.put_u64(self.rows);
        w.put_fixed(&self.empty_key);
        w.put_u64(self.seq);
        w.put_u64(self.time_ms);
        w.put_fixed(&self.sig);
    }

    pub(crate) fn read(r: &mut Reader<'_>) -> tacit_wire::Result<Self> {
        let server_key = r.array("server key")?;
        let row = r.u64()?;
        let subscriber_key = r.array("subscriber key")?;
        let rows = r.u64()?;
        if rows == 0 || rows > MAX_TABLE_ROWS || row >= rows {
            return Err(tacit_wire::Error::invalid(
                "enrolment receipt",
                "row count out of range",
            ));
        }
        Ok(EnrolmentReceipt {
            server_key,
            row,
            subscriber_key,
            rows,
            empty_key: r.array("empty-row key")?,
            seq: r.u64()?,
            time_ms: r.u64()?,
            sig: r.array("signature")?,
        })
    }
}

impl Encode for EnrolmentReceipt {
    fn encode(&self, w: &mut Writer) {
        w.put_envelope(super::messages::TAG_RECEIPT);
        self.put(w);
    }
}
impl Decode for EnrolmentReceipt {
    fn decode(r: &mut Reader<'_>) -> tacit_wire::Result<Self> {
        r.envelope(super::messages::TAG_RECEIPT, "tracedge enrolment receipt")?;
        Self::read(r)
    }
}

/// A proof that the enrolling party holds the secret of the key it registers: a
/// Schnorr signature with that key over the server's key, the time and the label
/// (so it cannot be replayed to another server or much later).
pub fn proof_of_possession<R: RngCore + CryptoRng>(
    secret: &super::SubscriberSecret,
    server_key: &[u8; 32],
    time_ms: u64,
    label: &str,
    rng: &mut R,
) -> [u8; 64] {
    let x = secret.scalar();
    let y = secret.public();
    let k = Scalar::random(rng);
    let a = curve25519_dalek::constants::RISTRETTO_BASEPOINT_TABLE * &k;
    let c = pop_challenge(&y, &a, server_key, time_ms, label);
    let s = k + c * x;
    let mut out = [0u8; 64];
    out[..32].copy_from_slice(a.compress().as_bytes());
    out[32..].copy_from_slice(s.as_bytes());
    out
}

fn pop_challenge(y: &RistrettoPoint, a: &RistrettoPoint, server_key: &[u8; 32], time_ms: u64, label: &str) -> Scalar {
    let mut h = Sha512::new();
    h.update(b"tacit/tracedge/v3/enrol-pop\0");
    h.update(y.compress().as_bytes());
    h.update(a.compress().as_bytes());
    h.update(server_key);
    h.update(time_ms.to_be_bytes());
    h.update((label.len() as u64).to_be_bytes());
    h.update(label.as_bytes());
    Scalar::from_hash(h)
}

/// Checks a [`proof_of_possession`] for `public` (the encoding of `Y`).
pub fn verify_possession(
    public: &[u8; 32],
    pop: &[u8; 64],
    server_key: &[u8; 32],
    time_ms: u64,
    label: &str,
) -> Result<()> {
    let bad = || Error::Refused("the enrolment request does not prove possession of the key's secret".into());
    let y = decode_public(public)?;
    let mut ab = [0u8; 32];
    ab.copy_from_slice(&pop[..32]);
    let a = curve25519_dalek::ristretto::CompressedRistretto(ab)
        .decompress()
        .ok_or_else(bad)?;
    let mut sb = [0u8; 32];
    sb.copy_from_slice(&pop[32..]);
    let s: Scalar = Option::from(Scalar::from_canonical_bytes(sb)).ok_or_else(bad)?;
    let c = pop_challenge(&y, &a, server_key, time_ms, label);
    if curve25519_dalek::constants::RISTRETTO_BASEPOINT_TABLE * &s != a + c * y {
        return Err(bad());
    }
    Ok(())
}

/// The server's side of the log: every record, and the directory after the last.
#[derive(Clone)]
pub struct TableLog {
    records: Vec<LogRecord>,
    dir: Directory,
}

impl core::fmt::Debug for TableLog {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("TableLog")
            .field("entries", &self.records.len())
            .field("dir", &self.dir)
            .finish()
    }
}

impl TableLog {
    /// A new log: the genesis entry for tables of `rows` rows whose empty rows
    /// encrypt to `empty_key` (no subscriber, no table).
    pub fn genesis(signing: &SigningKey, rows: u64, empty_key: [u8; 32], time_ms: u64) -> Result<Self> {
        crate::TableShape::new(rows, super::keytable::ROW_BYTES)?;
        if rows > MAX_TABLE_ROWS {
            return Err(Error::InvalidParams(format!("at most {MAX_TABLE_ROWS} rows")));
        }
        let dir = Directory::filled(rows, empty_key)?;
        let mut entry = LogEntry {
            seq: 0,
            time_ms,
            prev: [0; 32],
            rows,
            empty_key,
            dir_root: dir.root(),
            changes_hash: changes_hash(&[]),
            n_changes: 0,
            tables: Vec::new(),
            sig: [0; 64],
        };
        entry.sig = signing.sign(&entry.signed_bytes());
        Ok(TableLog {
            records: vec![LogRecord {
                entry,
                changes: Vec::new(),
            }],
            dir,
        })
    }

    /// A log from its stored records (checked: signatures, chain, changes, roots).
    pub fn from_records(server: &VerifyingKey, records: Vec<LogRecord>) -> Result<Self> {
        let first = records
            .first()
            .ok_or_else(|| Error::InvalidParams("a table log has a genesis entry".into()))?;
        let mut view = ClientView::new(*server, first.entry.rows, first.entry.empty_key)?;
        let mut from = 0;
        while from < records.len() {
            let to = (from + MAX_SEGMENT_ENTRIES).min(records.len());
            view.apply(
                &LogSegment {
                    records: records[from..to].to_vec(),
                },
                u64::MAX,
            )
            .map_err(|e| match e {
                ViewError::Invalid(e) => e,
                ViewError::Caught(p) => Error::InvalidParams(format!("the stored table log is inconsistent: {p:?}")),
            })?;
            from = to;
        }
        let dir = Arc::try_unwrap(view.dir).unwrap_or_else(|d| (*d).clone());
        Ok(TableLog { records, dir })
    }

    /// The newest entry.
    pub fn head(&self) -> &LogEntry {
        // A log always has its genesis entry.
        &self.records[self.records.len() - 1].entry
    }

    /// Every record.
    pub fn records(&self) -> &[LogRecord] {
        &self.records
    }

    /// The directory after the newest entry.
    pub fn directory(&self) -> &Directory {
        &self.dir
    }

    /// The genesis entry.
    pub fn genesis_entry(&self) -> &LogEntry {
        &self.records[0].entry
    }

    /// Appends entries for `changes` (split over several entries if there are more
    /// than [`MAX_CHANGES_PER_ENTRY`]) with `tables` served after the last of them;
    /// the entries before the last list no table (none is servable mid-way). With no
    /// change, one entry with the new table list. Returns the new records.
    ///
    /// Every table in `tables` must be built over the directory the changes lead to.
    pub fn append(
        &mut self,
        signing: &SigningKey,
        changes: &[Change],
        tables: Vec<TableHeader>,
        time_ms: u64,
    ) -> Result<Vec<LogRecord>> {
        if tables.len() > MAX_TABLES_PER_ENTRY {
            return Err(Error::InvalidParams(format!(
                "{} tables served at once; at most {MAX_TABLES_PER_ENTRY}",
                tables.len()
            )));
        }
        {
            use rayon::prelude::*;
            changes.par_iter().try_for_each(|(_, k)| decode_public(k).map(|_| ()))?;
        }
        let mut chunks: Vec<&[Change]> = changes.chunks(MAX_CHANGES_PER_ENTRY).collect();
        if chunks.is_empty() {
            chunks.push(&[]);
        }
        let last = chunks.len() - 1;
        let mut out = Vec::with_capacity(chunks.len());
        for (i, chunk) in chunks.into_iter().enumerate() {
            self.dir.set_many(chunk)?;
            let head = self.head();
            let listed = if i == last { tables.clone() } else { Vec::new() };
            for t in &listed {
                if t.dir_root != self.dir.root() || t.rows != head.rows || t.server_dh_key != head.empty_key {
                    return Err(Error::InvalidParams(format!(
                        "table {} is not built over the log's directory",
                        t.epoch
                    )));
                }
            }
            let mut entry = LogEntry {
                seq: head.seq + 1,
                time_ms: time_ms.max(head.time_ms),
                prev: head.hash(),
                rows: head.rows,
                empty_key: head.empty_key,
                dir_root: self.dir.root(),
                changes_hash: changes_hash(chunk),
                n_changes: chunk.len() as u32,
                tables: listed,
                sig: [0; 64],
            };
            entry.sig = signing.sign(&entry.signed_bytes());
            let rec = LogRecord {
                entry,
                changes: chunk.to_vec(),
            };
            self.records.push(rec.clone());
            out.push(rec);
        }
        Ok(out)
    }

    /// Takes back the records after the first `keep` (a change that could not be
    /// stored), undoing their directory changes with `undo` (the previous keys of the
    /// rows they changed, newest change first).
    pub(crate) fn rollback(&mut self, keep: usize, undo: &[Change]) -> Result<()> {
        if keep == 0 || keep > self.records.len() {
            return Err(Error::InvalidParams("a rollback past the genesis entry".into()));
        }
        self.records.truncate(keep);
        self.dir.set_many(undo)?;
        Ok(())
    }

    /// The records `from..=to` (clamped to the log), at most [`MAX_SEGMENT_ENTRIES`]
    /// and about [`SEGMENT_CHANGE_BYTES`] of changes (always at least one record when
    /// `from` is in the log).
    pub fn segment(&self, req: &LogRequest) -> LogSegment {
        let mut records = Vec::new();
        let mut bytes = 0usize;
        let to = req.to.min(self.head().seq);
        let mut s = req.from;
        while s <= to && records.len() < MAX_SEGMENT_ENTRIES {
            let rec = &self.records[s as usize];
            let b = rec.changes.len() * 40;
            if !records.is_empty() && bytes + b > SEGMENT_CHANGE_BYTES {
                break;
            }
            bytes += b;
            records.push(rec.clone());
            s += 1;
        }
        LogSegment { records }
    }
}

/// What the client learned about its own row from the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnRow {
    /// The row.
    pub row: u64,
    /// The client's key.
    pub key: [u8; 32],
    /// The receipt that registered it.
    pub receipt: EnrolmentReceipt,
    /// The first log entry after which the row no longer holds the client's key
    /// (a removal), while it does not hold it again.
    pub removed_at: Option<u64>,
}

/// A client's copy of the log: every entry it verified (without their changes) and
/// the directory they lead to.
///
/// Clones share the entries and the directory until one of them takes a segment
/// (copy on write), so a process holding many subscribers' views of one log (a
/// bench, a load generator) holds the directory once.
#[derive(Clone)]
pub struct ClientView {
    server: VerifyingKey,
    rows: u64,
    empty_key: [u8; 32],
    entries: Arc<Vec<LogEntry>>,
    dir: Arc<Directory>,
    own: Option<OwnRow>,
    /// The shape of the segment passed to [`ClientView::apply`] last (first and last
    /// position, whether consecutive; `None` for an empty one). Not saved with the
    /// view: a session checks it against its own request.
    last_segment: Option<(u64, u64, bool)>,
}

impl core::fmt::Debug for ClientView {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ClientView")
            .field("entries", &self.entries.len())
            .field("rows", &self.rows)
            .finish_non_exhaustive()
    }
}

/// Why a [`ClientView`] did not take a segment.
#[derive(Debug)]
pub enum ViewError {
    /// The server signed something that contradicts what the view holds: here is the
    /// proof.
    Caught(Box<super::MisbehaviourProof>),
    /// The segment is unusable (a bad signature, a gap, changes that are not the
    /// signed ones, an entry from the future): not provable, the session stops.
    Invalid(Error),
}

impl From<Error> for ViewError {
    fn from(e: Error) -> Self {
        ViewError::Invalid(e)
    }
}

/// What is wrong with an entry's changes on their own, if anything: a row twice, a
/// row outside the table, a key that is not a point. The changes are bound to the
/// entry by its signed hash, so this is provable ([`super::ProofKind::BadChanges`]).
pub(crate) fn changes_defect(rows: u64, changes: &[Change]) -> Option<String> {
    use rayon::prelude::*;
    if let Some(&(r, _)) = changes.iter().find(|(r, _)| *r >= rows) {
        return Some(format!("it changes row {r}, outside the table of {rows} rows"));
    }
    let mut seen: Vec<u64> = changes.iter().map(|c| c.0).collect();
    seen.sort_unstable();
    if let Some(w) = seen.windows(2).find(|w| w[0] == w[1]) {
        return Some(format!("it changes row {} twice", w[0]));
    }
    changes
        .par_iter()
        .find_any(|(_, k)| decode_public(k).is_err())
        .map(|(r, _)| format!("it gives row {r} a key that is not a valid public key"))
}

impl ClientView {
    /// The view of a subscriber from its receipt (which names the server, `n` and
    /// the empty-row key), empty, to be filled from the genesis entry on. A receipt
    /// signed more than the skew after `now_ms` is refused: every later `Commit`
    /// would name an "older" head than it and stop the subscriber's sessions, and
    /// only this subscriber would stop — a tag (review H1).
    pub fn for_receipt(receipt: EnrolmentReceipt, now_ms: u64) -> Result<Self> {
        if receipt.time_ms > now_ms.saturating_add(super::protocol::MAX_SKEW_MS) {
            return Err(Error::Refused(format!(
                "the receipt is signed {} s after this computer's clock; refused",
                (receipt.time_ms - now_ms) / 1000
            )));
        }
        let server = VerifyingKey::from_bytes(&receipt.server_key)
            .map_err(|_| Error::InvalidKey("the receipt's server key is not an Ed25519 key".into()))?;
        let mut v = ClientView::new(server, receipt.rows, receipt.empty_key)?;
        v.set_own(receipt)?;
        Ok(v)
    }

    /// An empty view of server `server`'s log (tables of `rows` rows, empty rows to
    /// `empty_key`), to be filled from the genesis entry on.
    pub fn new(server: VerifyingKey, rows: u64, empty_key: [u8; 32]) -> Result<Self> {
        crate::TableShape::new(rows, super::keytable::ROW_BYTES)?;
        if rows > MAX_TABLE_ROWS {
            return Err(Error::InvalidParams(format!(
                "tables of {rows} rows; TracEdge allows at most {MAX_TABLE_ROWS}"
            )));
        }
        decode_public(&empty_key)?;
        Ok(ClientView {
            server,
            rows,
            empty_key,
            entries: Arc::new(Vec::new()),
            dir: Arc::new(Directory::filled(rows, empty_key)?),
            own: None,
            last_segment: None,
        })
    }

    /// Records which row is ours (from the receipt, checked): applying the log then
    /// checks that the receipt's entry registers it and notes a later removal.
    pub fn set_own(&mut self, receipt: EnrolmentReceipt) -> Result<()> {
        receipt.verify(&self.server)?;
        if receipt.rows != self.rows || receipt.empty_key != self.empty_key {
            return Err(Error::Refused(format!(
                "the receipt is for tables of {} rows; the view's have {}",
                receipt.rows, self.rows
            )));
        }
        if !self.entries.is_empty() && receipt.seq <= self.head_seq().unwrap_or(0) {
            return Err(Error::InvalidParams(
                "the receipt must be set before the log reaches its entry".into(),
            ));
        }
        self.own = Some(OwnRow {
            row: receipt.row,
            key: receipt.subscriber_key,
            receipt,
            removed_at: None,
        });
        Ok(())
    }

    /// What the log says of our row.
    pub fn own(&self) -> Option<&OwnRow> {
        self.own.as_ref()
    }

    /// The server's key.
    pub fn server(&self) -> &VerifyingKey {
        &self.server
    }

    /// Rows `n`.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// The server's own key (empty rows).
    pub fn empty_key(&self) -> [u8; 32] {
        self.empty_key
    }

    /// The newest entry held, if any.
    pub fn head(&self) -> Option<&LogEntry> {
        self.entries.last()
    }

    /// Its position.
    pub fn head_seq(&self) -> Option<u64> {
        self.head().map(|e| e.seq)
    }

    /// Every entry held, genesis first.
    pub fn entries(&self) -> &[LogEntry] {
        &self.entries
    }

    /// Entry `seq`, if held.
    pub fn entry(&self, seq: u64) -> Option<&LogEntry> {
        self.entries.get(seq as usize)
    }

    /// The first log position of the run of entries that ends at `seq` and lists
    /// `table_id` as their current table (`None` when entry `seq` does not). A hint
    /// cached under (table id, this position) is not reused when the same table id
    /// comes back as current after another table: the server could otherwise show a
    /// table id to chosen sessions, make it current again later and tell those
    /// sessions by their missing hint download (review 2, F2).
    pub fn current_since(&self, seq: u64, table_id: &[u8; 32]) -> Option<u64> {
        let is_current = |e: &LogEntry| e.tables.iter().any(|t| t.expires_ms == 0 && &t.table_id == table_id);
        if !is_current(self.entry(seq)?) {
            return None;
        }
        let mut first = seq;
        while first > 0 && self.entry(first - 1).is_some_and(is_current) {
            first -= 1;
        }
        Some(first)
    }

    /// The directory after the newest entry.
    pub fn directory(&self) -> &Directory {
        &self.dir
    }

    /// Where a session's first log request starts, for a commit whose head is
    /// `head`: `head + 1 − SYNC_WINDOW · 2^k` (at least 0) for the smallest `k` that
    /// reaches the first entry the client lacks. It depends on the client's copy only
    /// through `k`; the entries it already holds come again and are checked equal.
    pub fn sync_from(&self, head: u64) -> u64 {
        let need = self.head_seq().map_or(0, |h| h.saturating_add(1));
        let mut window = SYNC_WINDOW;
        loop {
            let from = head.saturating_add(1).saturating_sub(window);
            if from <= need {
                return from;
            }
            window = window.saturating_mul(2);
        }
    }

    /// The first and last positions of the segment passed to [`ClientView::apply`]
    /// last, and whether its positions are consecutive (`None`: empty, or none yet).
    pub fn last_segment(&self) -> Option<(u64, u64, bool)> {
        self.last_segment
    }

    /// Takes a segment of the log at the client's time `now_ms`. Entries already held
    /// must be identical (else: equivocation); the next one must be signed, extend
    /// the newest by its hash, keep `n` and the empty-row key, not be signed later
    /// than `now_ms` plus the allowed skew nor before its predecessor, carry the
    /// changes it signs (each row once, in the table, a valid key), lead to the
    /// directory root it signs, and list tables over that root with exactly one
    /// current table.
    pub fn apply(&mut self, seg: &LogSegment, now_ms: u64) -> core::result::Result<(), ViewError> {
        let horizon = now_ms.saturating_add(super::protocol::MAX_SKEW_MS);
        self.last_segment = match (seg.records.first(), seg.records.last()) {
            (Some(a), Some(b)) => Some((
                a.entry.seq,
                b.entry.seq,
                seg.records
                    .windows(2)
                    .all(|w| w[0].entry.seq.checked_add(1) == Some(w[1].entry.seq)),
            )),
            _ => None,
        };
        for rec in &seg.records {
            let e = &rec.entry;
            e.verify(&self.server)?;
            if let Some(held) = self.entries.get(e.seq as usize) {
                if held != e {
                    return Err(caught(
                        &self.server,
                        super::ProofKind::Equivocation {
                            a: held.clone(),
                            b: e.clone(),
                        },
                    ));
                }
                continue;
            }
            let expected = self.entries.len() as u64;
            if e.seq != expected {
                return Err(ViewError::Invalid(Error::Refused(format!(
                    "the server sent log entry {} where entry {expected} was next",
                    e.seq
                ))));
            }
            if e.time_ms > horizon {
                return Err(ViewError::Invalid(Error::Refused(format!(
                    "log entry {} is signed {} s in the future of this client's clock",
                    e.seq,
                    (e.time_ms - now_ms) / 1000
                ))));
            }
            match self.entries.last() {
                Some(prev) => {
                    if e.prev != prev.hash() {
                        return Err(caught(
                            &self.server,
                            super::ProofKind::Equivocation {
                                a: prev.clone(),
                                b: e.clone(),
                            },
                        ));
                    }
                    if e.time_ms < prev.time_ms {
                        return Err(ViewError::Invalid(Error::Refused(format!(
                            "log entry {} is signed before entry {}",
                            e.seq, prev.seq
                        ))));
                    }
                }
                None => {
                    if e.rows != self.rows || e.empty_key != self.empty_key {
                        // The genesis fixes n and the empty-row key; a receipt that
                        // names others is the server's contradiction.
                        return Err(match &self.own {
                            Some(o) => caught(
                                &self.server,
                                super::ProofKind::Receipt {
                                    receipt: o.receipt.clone(),
                                    entry: e.clone(),
                                    changes: rec.changes.clone(),
                                },
                            ),
                            None => ViewError::Invalid(Error::Refused(
                                "the log is for another table size than this view's".into(),
                            )),
                        });
                    }
                }
            }
            if entry_defect(e, self.rows, &self.empty_key).is_some() {
                let genesis = self.entries.first().unwrap_or(e).clone();
                return Err(caught(
                    &self.server,
                    super::ProofKind::BadEntry {
                        genesis,
                        entry: e.clone(),
                    },
                ));
            }
            rec.check_changes()?;
            if changes_defect(self.rows, &rec.changes).is_some() {
                return Err(caught(
                    &self.server,
                    super::ProofKind::BadChanges {
                        entry: e.clone(),
                        changes: rec.changes.clone(),
                    },
                ));
            }
            let before: Vec<Change> = rec
                .changes
                .iter()
                .map(|&(r, _)| (r, self.dir.keys()[r as usize]))
                .collect();
            let dir = Arc::make_mut(&mut self.dir);
            dir.set_many(&rec.changes)?;
            if dir.root() != e.dir_root {
                // Undo, then build the proof change by change.
                let undo: Vec<Change> = before.iter().rev().copied().collect();
                dir.set_many(&undo)?;
                let proof = replay_proof(dir, self.entries.last(), e, &rec.changes)?;
                return Err(caught(&self.server, proof));
            }
            if let Some(own) = &mut self.own {
                let holds = dir.keys()[own.row as usize] == own.key;
                if e.seq == own.receipt.seq && !rec.changes.iter().any(|&(r, k)| r == own.row && k == own.key) && !holds
                {
                    let proof = super::ProofKind::Receipt {
                        receipt: own.receipt.clone(),
                        entry: e.clone(),
                        changes: rec.changes.clone(),
                    };
                    // Leave the view as it was.
                    let undo: Vec<Change> = before.iter().rev().copied().collect();
                    dir.set_many(&undo)?;
                    return Err(caught(&self.server, proof));
                }
                if e.seq > own.receipt.seq {
                    own.removed_at = if holds { None } else { own.removed_at.or(Some(e.seq)) };
                }
            }
            Arc::make_mut(&mut self.entries).push(e.clone());
        }
        Ok(())
    }

    /// Sets the receipt on a view that is already past the receipt's entry, given
    /// the log records from that entry to the view's newest (each checked against
    /// the entries the view holds): the registration and any later removal are
    /// found in them. For a process that synced one view and hands copies of it to
    /// many subscribers.
    pub fn set_own_from(
        &mut self,
        receipt: EnrolmentReceipt,
        records: &[LogRecord],
    ) -> core::result::Result<(), ViewError> {
        receipt.verify(&self.server)?;
        let head = self
            .head_seq()
            .ok_or_else(|| Error::Refused("the view holds no log".into()))?;
        if receipt.seq > head {
            self.set_own(receipt)?;
            return Ok(());
        }
        if receipt.rows != self.rows || receipt.empty_key != self.empty_key {
            return Err(ViewError::Invalid(Error::Refused(
                "the receipt is for another table size than this view's".into(),
            )));
        }
        let mut own = OwnRow {
            row: receipt.row,
            key: receipt.subscriber_key,
            receipt: receipt.clone(),
            removed_at: None,
        };
        // The row's key after each entry, from the records (last write wins).
        let mut key_now: Option<[u8; 32]> = None;
        let mut seen = 0u64;
        for rec in records
            .iter()
            .filter(|r| r.entry.seq >= receipt.seq && r.entry.seq <= head)
        {
            if self.entries.get(rec.entry.seq as usize) != Some(&rec.entry) {
                return Err(ViewError::Invalid(Error::Refused(format!(
                    "record {} is not the entry the view holds",
                    rec.entry.seq
                ))));
            }
            rec.check_changes()?;
            if let Some(&(_, k)) = rec.changes.iter().rev().find(|&&(r, _)| r == own.row) {
                key_now = Some(k);
            }
            if rec.entry.seq == receipt.seq && key_now != Some(own.key) {
                return Err(caught(
                    &self.server,
                    super::ProofKind::Receipt {
                        receipt,
                        entry: rec.entry.clone(),
                        changes: rec.changes.clone(),
                    },
                ));
            }
            if rec.entry.seq > receipt.seq {
                own.removed_at = if key_now == Some(own.key) {
                    None
                } else {
                    own.removed_at.or(Some(rec.entry.seq))
                };
            }
            seen += 1;
        }
        if seen != head - receipt.seq + 1 {
            return Err(ViewError::Invalid(Error::Refused(
                "the records do not cover the log from the receipt's entry".into(),
            )));
        }
        self.own = Some(own);
        Ok(())
    }

    /// Checks another subscriber's view against this one: every entry both hold must
    /// be the same. Returns a proof of equivocation on the first difference.
    pub fn compare(&self, other: &ClientView) -> Result<Option<Box<super::MisbehaviourProof>>> {
        compare_entries(&self.server, &self.entries, &other.server, &other.entries)
    }

    /// The directory bucket holding `row`, with its path to the newest entry's root.
    pub fn bucket_of(&self, row: u64) -> Result<DirEntry> {
        self.dir.entry(row / BUCKET_ROWS)
    }

    /// Encodes the view for a state file (sparse: rows that hold the empty-row key
    /// are not written).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.put_fixed(VIEW_MAGIC);
        w.put_fixed(&self.server.to_bytes());
        w.put_u64(self.rows);
        w.put_fixed(&self.empty_key);
        match &self.own {
            None => w.put_u8(0),
            Some(o) => {
                w.put_u8(1);
                o.receipt.put(&mut w);
                w.put_u64(o.removed_at.map_or(u64::MAX, |s| s));
            }
        }
        w.put_u64(self.entries.len() as u64);
        for e in self.entries.iter() {
            e.put(&mut w);
        }
        let set: Vec<(u64, &[u8; 32])> = self
            .dir
            .keys()
            .iter()
            .enumerate()
            .filter(|(_, k)| **k != self.empty_key)
            .map(|(i, k)| (i as u64, k))
            .collect();
        w.put_u64(set.len() as u64);
        for (i, k) in set {
            w.put_u64(i);
            w.put_fixed(k);
        }
        w.into_bytes()
    }

    /// Decodes a state file written by [`ClientView::to_bytes`]: the entries must
    /// form a hash chain whose newest entry the server signed (entries were each
    /// checked when they were taken; the chain binds them to the newest), and the
    /// directory must lead to the newest entry's root. Nothing is allocated for the
    /// directory beyond what the file's size allows.
    pub fn from_bytes(b: &[u8]) -> Result<Self> {
        let (mut view, mut r, own) = read_view_header(b)?;
        let entries = read_chain(&mut r, &view.server)?;
        view.own = own;
        view.entries = Arc::new(entries);
        let k = r.u64()?;
        if k > view.rows || k > (r.remaining() / 40) as u64 {
            return Err(Error::InvalidParams("a damaged view file".into()));
        }
        let mut set = Vec::with_capacity(k as usize);
        for _ in 0..k {
            let i = r.u64()?;
            let key: [u8; 32] = r.array("key")?;
            if i >= view.rows {
                return Err(Error::InvalidParams("a damaged view file".into()));
            }
            set.push((i, key));
        }
        r.finish()?;
        let dir = Arc::make_mut(&mut view.dir);
        dir.set_many(&set)?;
        if let Some(h) = view.head()
            && h.dir_root != view.dir.root()
        {
            return Err(Error::InvalidParams(
                "the view file's directory does not match its newest entry".into(),
            ));
        }
        Ok(view)
    }

    /// The server key and the entries of a view file, without its directory (to
    /// compare two subscribers' views: no memory beyond the file's entries).
    pub fn entries_from_bytes(b: &[u8]) -> Result<(VerifyingKey, Vec<LogEntry>)> {
        let mut r = Reader::new(b);
        let (server, _, _) = read_view_fields(&mut r)?;
        // The subscriber's own row (skipped: only the entries are compared).
        match r.u8()? {
            0 => {}
            1 => {
                EnrolmentReceipt::read(&mut r)?;
                r.u64()?;
            }
            _ => return Err(Error::InvalidParams("a damaged view file".into())),
        }
        let entries = read_chain(&mut r, &server)?;
        Ok((server, entries))
    }
}

const VIEW_MAGIC: &[u8; 23] = b"tacit-tracedge-view-v2\0";

fn read_view_fields(r: &mut Reader<'_>) -> Result<(VerifyingKey, u64, [u8; 32])> {
    let magic: [u8; 23] = r.array("view magic")?;
    if &magic != VIEW_MAGIC {
        return Err(Error::InvalidParams(
            "not a TracEdge view file (or one of an older version)".into(),
        ));
    }
    let server = VerifyingKey::from_bytes(&r.array::<32>("server key")?)
        .map_err(|_| Error::InvalidKey("the view's server key is not an Ed25519 key".into()))?;
    let rows = r.u64()?;
    if rows == 0 || rows > MAX_TABLE_ROWS {
        return Err(Error::InvalidParams("a damaged view file (row count)".into()));
    }
    let empty_key = r.array("empty-row key")?;
    Ok((server, rows, empty_key))
}

fn read_view_header(b: &[u8]) -> Result<(ClientView, Reader<'_>, Option<OwnRow>)> {
    let mut r = Reader::new(b);
    let (server, rows, empty_key) = read_view_fields(&mut r)?;
    let view = ClientView::new(server, rows, empty_key)?;
    let own = match r.u8()? {
        0 => None,
        1 => {
            let receipt = EnrolmentReceipt::read(&mut r)?;
            let removed = r.u64()?;
            receipt.verify(&view.server)?;
            Some(OwnRow {
                row: receipt.row,
                key: receipt.subscriber_key,
                receipt,
                removed_at: (removed != u64::MAX).then_some(removed),
            })
        }
        _ => return Err(Error::InvalidParams("a damaged view file".into())),
    };
    Ok((view, r, own))
}

/// Reads a chain of entries: positions 0.., each linked by hash to the one before,
/// the newest signed by `server`.
fn read_chain(r: &mut Reader<'_>, server: &VerifyingKey) -> Result<Vec<LogEntry>> {
    let n = r.u64()?;
    if n > (r.remaining() / 200) as u64 + 1 {
        return Err(Error::InvalidParams("a damaged view file".into()));
    }
    let mut entries: Vec<LogEntry> = Vec::with_capacity(n as usize);
    for i in 0..n {
        let e = LogEntry::read(r)?;
        if e.seq != i {
            return Err(Error::InvalidParams("a damaged view file".into()));
        }
        if let Some(p) = entries.last()
            && e.prev != p.hash()
        {
            return Err(Error::InvalidParams("a damaged view file (broken chain)".into()));
        }
        entries.push(e);
    }
    if let Some(h) = entries.last() {
        h.verify(server)?;
    }
    Ok(entries)
}

/// Every entry two views both hold must be the same; the first difference is a
/// proof of equivocation.
pub fn compare_entries(
    a_server: &VerifyingKey,
    a: &[LogEntry],
    b_server: &VerifyingKey,
    b: &[LogEntry],
) -> Result<Option<Box<super::MisbehaviourProof>>> {
    if a_server.to_bytes() != b_server.to_bytes() {
        return Err(Error::Refused("the two views are of different servers".into()));
    }
    for (x, y) in a.iter().zip(b) {
        if x != y {
            let p = Box::new(super::MisbehaviourProof {
                server_key: a_server.to_bytes(),
                kind: super::ProofKind::Equivocation {
                    a: x.clone(),
                    b: y.clone(),
                },
            });
            // Entries in a file were bound by the chain, not checked one by one:
            // only a proof whose signatures verify is one.
            return Ok(p.verify().is_ok().then_some(p));
        }
    }
    Ok(None)
}

fn caught(server: &VerifyingKey, kind: super::ProofKind) -> ViewError {
    ViewError::Caught(Box::new(super::MisbehaviourProof {
        server_key: server.to_bytes(),
        kind,
    }))
}

/// What is wrong with an entry on its own (given the genesis values), if anything.
pub(crate) fn entry_defect(e: &LogEntry, rows: u64, empty_key: &[u8; 32]) -> Option<String> {
    if e.rows != rows {
        return Some(format!("it claims tables of {} rows; the log's have {rows}", e.rows));
    }
    if &e.empty_key != empty_key {
        return Some("it changes the server's empty-row key".into());
    }
    if !e.tables.is_empty() && e.tables.iter().filter(|t| t.expires_ms == 0).count() != 1 {
        return Some("it does not list exactly one current table".into());
    }
    let mut epochs = BTreeMap::new();
    for t in &e.tables {
        if t.rows != e.rows {
            return Some(format!(
                "table {} has {} rows; the log's have {}",
                t.epoch, t.rows, e.rows
            ));
        }
        if t.dir_root != e.dir_root {
            return Some(format!("table {} is not over the entry's directory", t.epoch));
        }
        if &t.server_dh_key != empty_key {
            return Some(format!("table {} names another server key", t.epoch));
        }
        if epochs.insert(t.epoch, ()).is_some() {
            return Some(format!("table {} is listed twice", t.epoch));
        }
    }
    None
}

/// A proof that `entry`'s changes, applied to the directory of `prev` (which `dir`
/// holds), do not lead to the root `entry` signs: the bucket of each change with its
/// path under the root before that change.
fn replay_proof(
    dir: &Directory,
    prev: Option<&LogEntry>,
    entry: &LogEntry,
    changes: &[Change],
) -> core::result::Result<super::ProofKind, ViewError> {
    let prev = prev.ok_or_else(|| {
        ViewError::Invalid(Error::Refused(
            "the genesis entry's directory is not the empty one".into(),
        ))
    })?;
    let mut d = dir.clone();
    let mut buckets = Vec::with_capacity(changes.len());
    for &(r, k) in changes {
        buckets.push(d.entry(r / BUCKET_ROWS)?);
        d.set(r, k)?;
    }
    Ok(super::ProofKind::Replay {
        prev: prev.clone(),
        entry: entry.clone(),
        changes: changes.to_vec(),
        buckets,
    })
}

/// Checks a replay: starting from `prev`'s root, each change's bucket (verified
/// against the running root) gets the change and gives the next root; the end is
/// not `entry`'s root. Returns Ok(()) when the replay shows a mismatch.
pub(crate) fn check_replay(prev: &LogEntry, entry: &LogEntry, changes: &[Change], buckets: &[DirEntry]) -> Result<()> {
    let bad = |why: &str| Error::InvalidProof(why.to_string());
    if entry.seq != prev.seq + 1 || entry.prev != prev.hash() {
        return Err(bad("the two entries are not consecutive"));
    }
    if changes.len() != entry.n_changes as usize || changes_hash(changes) != entry.changes_hash {
        return Err(bad("the changes are not the ones the entry signs"));
    }
    if buckets.len() != changes.len() {
        return Err(bad("one bucket per change is needed"));
    }
    let mut root = prev.dir_root;
    for (&(r, k), b) in changes.iter().zip(buckets) {
        b.verify(entry.rows, &root)
            .map_err(|_| bad("a bucket does not match the directory before its change"))?;
        let off = r
            .checked_sub(b.bucket * BUCKET_ROWS)
            .filter(|&o| o < b.keys.len() as u64)
            .ok_or_else(|| bad("a bucket does not hold its change's row"))?;
        let mut keys = b.keys.clone();
        keys[off as usize] = k;
        root = b.root_with(entry.rows, &keys)?;
    }
    if root == entry.dir_root {
        return Err(bad("the changes do lead to the signed directory root"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;

    fn key(rng: &mut ChaCha20Rng) -> [u8; 32] {
        super::super::SubscriberSecret::random(rng).public_bytes()
    }

    #[test]
    fn set_many_equals_a_rebuild() {
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        let empty = key(&mut rng);
        let mut d = Directory::build(vec![empty; 1000]).unwrap();
        let changes: Vec<Change> = (0..300u64).map(|i| ((i * 37) % 1000, key(&mut rng))).collect();
        d.set_many(&changes).unwrap();
        let mut keys = vec![empty; 1000];
        for &(r, k) in &changes {
            keys[r as usize] = k;
        }
        assert_eq!(d.root(), Directory::build(keys).unwrap().root());
        // Small batches go one by one.
        let few = [(3u64, key(&mut rng)), (999, key(&mut rng))];
        d.set_many(&few).unwrap();
        assert_eq!(d.key(999).unwrap(), few[1].1);
        assert!(d.set_many(&[(1000, empty)]).is_err());
    }

    #[test]
    fn a_view_follows_the_log_and_catches_forks() {
        let mut rng = ChaCha20Rng::seed_from_u64(2);
        let sk = SigningKey::generate(&mut rng);
        let empty = key(&mut rng);
        let mut log = TableLog::genesis(&sk, 300, empty, 1).unwrap();
        let k1 = key(&mut rng);
        log.append(&sk, &[(5, k1)], vec![], 2).unwrap();
        let mut view = ClientView::new(sk.verifying_key(), 300, empty).unwrap();
        view.apply(&log.segment(&LogRequest { from: 0, to: 10 }), u64::MAX / 2)
            .unwrap();
        assert_eq!(view.head_seq(), Some(1));
        assert_eq!(view.directory().key(5).unwrap(), k1);
        // A fork at entry 2: the view takes one branch, the other is equivocation.
        let mut other = log.clone();
        log.append(&sk, &[(6, key(&mut rng))], vec![], 3).unwrap();
        other.append(&sk, &[(7, key(&mut rng))], vec![], 3).unwrap();
        view.apply(&log.segment(&LogRequest { from: 0, to: 10 }), u64::MAX / 2)
            .unwrap();
        match view.apply(&other.segment(&LogRequest { from: 2, to: 10 }), u64::MAX / 2) {
            Err(ViewError::Caught(p)) => {
                p.verify().unwrap();
            }
            other => panic!("{other:?}"),
        }
        // Two views compare.
        let mut view2 = ClientView::new(sk.verifying_key(), 300, empty).unwrap();
        view2
            .apply(&other.segment(&LogRequest { from: 0, to: 10 }), u64::MAX / 2)
            .unwrap();
        view.compare(&view2).unwrap().unwrap().verify().unwrap();
        // A state file round trip.
        let back = ClientView::from_bytes(&view.to_bytes()).unwrap();
        assert_eq!(back.head(), view.head());
        assert_eq!(back.directory().root(), view.directory().root());
        assert!(view.compare(&back).unwrap().is_none());
    }

    #[test]
    fn a_signed_root_that_the_changes_do_not_give_is_proven() {
        let mut rng = ChaCha20Rng::seed_from_u64(3);
        let sk = SigningKey::generate(&mut rng);
        let empty = key(&mut rng);
        let mut log = TableLog::genesis(&sk, 200, empty, 1).unwrap();
        let (ka, kb) = (key(&mut rng), key(&mut rng));
        log.append(&sk, &[(5, ka), (70, kb)], vec![], 2).unwrap();
        // The server re-signs entry 1 with a root that hides the change of row 70.
        let mut bad = log.records()[1].clone();
        let mut hidden = Directory::build(vec![empty; 200]).unwrap();
        hidden.set(5, ka).unwrap();
        bad.entry.dir_root = hidden.root();
        bad.entry.sig = sk.sign(&bad.entry.signed_bytes());
        let mut view = ClientView::new(sk.verifying_key(), 200, empty).unwrap();
        view.apply(&log.segment(&LogRequest { from: 0, to: 0 }), u64::MAX / 2)
            .unwrap();
        match view.apply(&LogSegment { records: vec![bad] }, u64::MAX / 2) {
            Err(ViewError::Caught(p)) => {
                let f = p.verify().unwrap();
                assert!(f.what.contains("directory root"), "{}", f.what);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn receipts_and_possession() {
        let mut rng = ChaCha20Rng::seed_from_u64(4);
        let sk = SigningKey::generate(&mut rng);
        let sub = super::super::SubscriberSecret::random(&mut rng);
        let vk = sk.verifying_key().to_bytes();
        let pop = proof_of_possession(&sub, &vk, 77, "alice", &mut rng);
        verify_possession(&sub.public_bytes(), &pop, &vk, 77, "alice").unwrap();
        assert!(verify_possession(&sub.public_bytes(), &pop, &vk, 78, "alice").is_err());
        assert!(verify_possession(&sub.public_bytes(), &pop, &[1; 32], 77, "alice").is_err());
        let other = super::super::SubscriberSecret::random(&mut rng);
        assert!(verify_possession(&other.public_bytes(), &pop, &vk, 77, "alice").is_err());
        let r = EnrolmentReceipt::issue(&sk, 3, sub.public_bytes(), 300, [7; 32], 1, 5);
        r.verify(&sk.verifying_key()).unwrap();
        assert_eq!(EnrolmentReceipt::from_wire(&r.to_wire()).unwrap(), r);
        let mut forged = r.clone();
        forged.row = 4;
        assert!(forged.verify(&sk.verifying_key()).is_err());
    }
}
