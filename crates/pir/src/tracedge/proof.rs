//! Proofs of misbehaviour (§3.4: "it can detect and prove to any third party when a
//! server has sent a key different from the committed one").
//!
//! A proof is what the server signed plus what makes it checkable offline. Two
//! families:
//!
//! **Session proofs** ([`ProofKind::OwnRow`], [`ProofKind::Audit`]) carry the session
//! ([`Transcript`]):
//!
//! * the server's Ed25519 key, the `Hello`, the signed `Commit` and the signed
//!   `Response`, and the `Queries` (whose hash the response signature covers);
//! * the `lwe` hint of the table (its hash is the table id in the signed header);
//! * the **seed** each checked query was generated from, with its selection: the
//!   verifier regenerates the query bit for bit (so a client cannot frame an honest
//!   server with a crafted query; the error is the honest Gaussian one) and decodes
//!   the signed answer;
//! * either **own row**: the subscriber's public key with the directory bucket that
//!   holds it (Merkle path to the signed root), the Diffie–Hellman value `x·R` and a
//!   Chaum–Pedersen proof that it is formed with the secret of that key; the verifier
//!   decrypts the row to `K'` and checks that `K'` does not open `Γ` (or, for a binding
//!   table, that `H(K')·B ≠ R`);
//! * or **audit**: the committed key `K` (it opens `Γ`), the directory buckets of the
//!   audited rows; the verifier recomputes the honest rows from `K` and finds that
//!   the signed answer decodes to another weighted sum.
//!
//! The directory buckets come from the client's own copy of the directory (its
//! [`super::ClientView`] of the table log), never from the server in the session.
//!
//! **Log proofs** need no session: two signed log entries that do not extend each
//! other ([`ProofKind::Equivocation`]); an entry that contradicts the log's genesis
//! ([`ProofKind::BadEntry`]) or whose changes do not lead to the root it signs
//! ([`ProofKind::Replay`]); an enrolment receipt that the entry it names does not
//! honour ([`ProofKind::Receipt`]); a signed `Commit` whose table is not in the log
//! entry it names ([`ProofKind::CommitNotInLog`]); a `Commit` naming an older log
//! head than one the server had signed well before ([`ProofKind::Rollback`]).
//!
//! What a proof reveals: the row of the subscriber for an own-row or receipt proof,
//! and `K` for an audit proof (the table is then known to be bad; it must be
//! retired). Log proofs reveal nothing but public log entries.

use std::sync::Arc;

use curve25519_dalek::constants::{RISTRETTO_BASEPOINT_POINT, RISTRETTO_BASEPOINT_TABLE};
use curve25519_dalek::ristretto::{CompressedRistretto, RistrettoPoint};
use curve25519_dalek::scalar::Scalar;
use rand_chacha::ChaCha20Rng;
use rand_core::{CryptoRng, RngCore, SeedableRng};
use sha2::{Digest, Sha512};
use tacit_crypto::sign::VerifyingKey;
use tacit_wire::{Decode, Encode, Reader, Writer};
use zeroize::Zeroizing;

use super::keytable::{self, DirEntry, TableKey, decode_public};
use super::log::{Change, EnrolmentReceipt, LogEntry};
use super::messages::*;
use super::protocol::{expected_audit, key_matches, verify_commit, verify_response};
use crate::lwe::{LweClient, LweHint, LweQuery, LweQueryState};
use crate::{Decoded, Error, MAX_SELECTED_ROWS, PirClient, Result, Selection};

/// A query with the seed it was generated from: anyone with the hint regenerates it.
#[derive(Clone)]
pub struct QueryOpening {
    seed: Zeroizing<[u8; 32]>,
    sel: Selection,
    state: Option<Arc<LweQueryState>>,
}

impl core::fmt::Debug for QueryOpening {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("QueryOpening")
            .field("rows", &self.sel.entries().len())
            .finish_non_exhaustive()
    }
}

impl QueryOpening {
    /// A fresh seed for `sel`.
    pub fn new<R: RngCore + CryptoRng>(sel: Selection, rng: &mut R) -> Self {
        let mut seed = Zeroizing::new([0u8; 32]);
        rng.fill_bytes(&mut seed[..]);
        QueryOpening { seed, sel, state: None }
    }

    /// The selection.
    pub fn selection(&self) -> &Selection {
        &self.sel
    }

    fn regenerate(&self, lwe: &LweClient) -> Result<(LweQueryState, LweQuery)> {
        let prepared = lwe.prepare(&mut ChaCha20Rng::from_seed(*self.seed));
        lwe.finish(prepared, &self.sel)
    }

    /// Makes the query (and keeps the state to decode its answer).
    pub fn query(&mut self, lwe: &LweClient) -> Result<LweQuery> {
        let (state, q) = self.regenerate(lwe)?;
        self.state = Some(Arc::new(state));
        Ok(q)
    }

    /// Decodes the answer to the query.
    pub fn decode(&self, lwe: &LweClient, answer: &crate::lwe::LweAnswer) -> Result<Decoded> {
        match &self.state {
            Some(s) => lwe.decode(s, answer),
            None => {
                let (s, _) = self.regenerate(lwe)?;
                lwe.decode(&s, answer)
            }
        }
    }

    /// Regenerates the query and checks it is `expected` bit for bit.
    fn check(&self, lwe: &LweClient, expected: &LweQuery) -> Result<LweQueryState> {
        let (state, q) = self.regenerate(lwe)?;
        if &q != expected {
            return Err(Error::InvalidProof(
                "the query in the transcript is not the one its seed makes".into(),
            ));
        }
        Ok(state)
    }

    fn put(&self, w: &mut Writer) {
        w.put_fixed(&self.seed[..]);
        w.put_count(self.sel.entries().len());
        for &(r, wt) in self.sel.entries() {
            w.put_u64(r);
            w.put_u32(wt);
        }
    }

    fn read(r: &mut Reader<'_>) -> tacit_wire::Result<Self> {
        let seed = Zeroizing::new(r.array::<32>("query seed")?);
        let n = r.count("selected rows", MAX_SELECTED_ROWS, 12)?;
        let entries = (0..n)
            .map(|_| Ok((r.u64()?, r.u32()?)))
            .collect::<tacit_wire::Result<Vec<_>>>()?;
        let sel = Selection::weighted(&entries).map_err(|e| tacit_wire::Error::invalid("selection", e.to_string()))?;
        Ok(QueryOpening { seed, sel, state: None })
    }
}

fn dleq_challenge(
    y: &RistrettoPoint,
    r: &RistrettoPoint,
    z: &RistrettoPoint,
    a1: &RistrettoPoint,
    a2: &RistrettoPoint,
    ctx: &[u8],
) -> Scalar {
    let mut h = Sha512::new();
    h.update(b"tacit/tracedge/v1/dleq\0");
    for p in [y, r, z, a1, a2] {
        h.update(p.compress().as_bytes());
    }
    h.update(ctx);
    Scalar::from_hash(h)
}

fn dleq_context(header: &TableHeader, row: u64) -> Vec<u8> {
    let mut c = Vec::with_capacity(48);
    c.extend_from_slice(&header.epoch.to_be_bytes());
    c.extend_from_slice(&row.to_be_bytes());
    c.extend_from_slice(&header.dir_root);
    c
}

/// Chaum–Pedersen proof that `log_B(x·B) = log_R(Z)`, encoded `challenge ‖ response`.
pub(crate) fn dleq_prove(
    x: &Scalar,
    r: &RistrettoPoint,
    z: &CompressedRistretto,
    header: &TableHeader,
    row: u64,
) -> [u8; 64] {
    let ctx = dleq_context(header, row);
    let y = RISTRETTO_BASEPOINT_TABLE * x;
    let zp = x * r;
    debug_assert_eq!(zp.compress(), *z);
    // Deterministic nonce from the secret and the statement.
    let mut h = Sha512::new();
    h.update(b"tacit/tracedge/v1/dleq-nonce\0");
    h.update(x.as_bytes());
    h.update(r.compress().as_bytes());
    h.update(&ctx);
    let mut k = Scalar::from_hash(h);
    let (a1, a2) = (RISTRETTO_BASEPOINT_TABLE * &k, k * r);
    let c = dleq_challenge(&y, r, &zp, &a1, &a2, &ctx);
    let s = k + c * x;
    zeroize::Zeroize::zeroize(&mut k);
    let mut out = [0u8; 64];
    out[..32].copy_from_slice(c.as_bytes());
    out[32..].copy_from_slice(s.as_bytes());
    out
}

fn dleq_verify(
    y: &RistrettoPoint,
    r: &RistrettoPoint,
    z: &RistrettoPoint,
    proof: &[u8; 64],
    header: &TableHeader,
    row: u64,
) -> Result<()> {
    let bad = || Error::InvalidProof("the Diffie–Hellman value is not proven".into());
    let mut cb = [0u8; 32];
    cb.copy_from_slice(&proof[..32]);
    let mut sb = [0u8; 32];
    sb.copy_from_slice(&proof[32..]);
    let c: Scalar = Option::from(Scalar::from_canonical_bytes(cb)).ok_or_else(bad)?;
    let s: Scalar = Option::from(Scalar::from_canonical_bytes(sb)).ok_or_else(bad)?;
    let a1 = s * RISTRETTO_BASEPOINT_POINT - c * y;
    let a2 = s * r - c * z;
    if dleq_challenge(y, r, z, &a1, &a2, &dleq_context(header, row)) != c {
        return Err(bad());
    }
    Ok(())
}

/// The signed session a session proof is about.
#[derive(Debug, Clone)]
pub struct Transcript {
    /// The client's hello.
    pub hello: Hello,
    /// The signed commit.
    pub commit: Commit,
    /// The queries.
    pub queries: Queries,
    /// The signed response.
    pub response: Response,
    /// The table's hint.
    pub hint: LweHint,
}

/// How far apart (ms) the server's clock may be from a `Commit`'s `t_s` for a
/// [`ProofKind::Rollback`]: the server accepts at most
/// [`super::MAX_SKEW_MS`] of skew, so an entry signed more than this before
/// `t_s` was signed before the `Commit`.
pub const ROLLBACK_MARGIN_MS: u64 = 2 * super::protocol::MAX_SKEW_MS + 60_000;

/// What a proof shows.
#[derive(Debug, Clone)]
pub enum ProofKind {
    /// The client's own row does not hold the committed key.
    OwnRow {
        /// The session.
        session: Box<Transcript>,
        /// The row.
        row: u64,
        /// Seed of the own-row query.
        opening: QueryOpening,
        /// The subscriber's public key.
        subscriber_key: [u8; 32],
        /// `x·R`.
        shared: [u8; 32],
        /// Chaum–Pedersen proof for `shared`.
        dleq: [u8; 64],
        /// The directory bucket holding the row's key.
        entry: DirEntry,
    },
    /// An audited weighted sum is not the sum of the honest rows.
    Audit {
        /// The session.
        session: Box<Transcript>,
        /// Seed and selection of the audit query.
        opening: QueryOpening,
        /// The committed key.
        key: [u8; keytable::KEY_LEN],
        /// Directory buckets of the audited rows.
        entries: Vec<DirEntry>,
    },
    /// Two signed log entries for one position, or two consecutive ones that are not
    /// linked by hash: the server showed different logs (different tables) to
    /// different people.
    Equivocation {
        /// One entry.
        a: LogEntry,
        /// The other.
        b: LogEntry,
    },
    /// A signed entry that contradicts the log's fixed values or lists a table that
    /// is not over its directory.
    BadEntry {
        /// The log's genesis entry (fixes `n` and the empty-row key).
        genesis: LogEntry,
        /// The entry.
        entry: LogEntry,
    },
    /// An entry whose changes, applied to the previous entry's directory, do not lead
    /// to the directory root it signs.
    Replay {
        /// The previous entry.
        prev: LogEntry,
        /// The entry.
        entry: LogEntry,
        /// Its changes.
        changes: Vec<Change>,
        /// For each change, its bucket with the path under the root before it.
        buckets: Vec<DirEntry>,
    },
    /// A signed response with an answer of the wrong shape (another table id, or
    /// another length than the signed table's), which no honest server signs and a
    /// client cannot decode (review 2, F3).
    MalformedAnswer {
        /// The session.
        session: Box<Transcript>,
        /// Which answer.
        index: u32,
    },
    /// A signed entry whose changes (bound by their signed hash) change a row twice,
    /// a row outside the table, or give a row a key that is not a valid point.
    BadChanges {
        /// The entry.
        entry: LogEntry,
        /// Its changes.
        changes: Vec<Change>,
    },
    /// A receipt whose log entry does not register the key at the row, or that names
    /// another table size or empty-row key than the log's genesis entry.
    Receipt {
        /// The receipt.
        receipt: EnrolmentReceipt,
        /// The entry it names.
        entry: LogEntry,
        /// Its changes.
        changes: Vec<Change>,
    },
    /// A signed `Commit` for a table that the log entry it names does not list, or
    /// naming another entry for that position than the one the server signed (the
    /// client holds it): a variant log shown to this session.
    CommitNotInLog {
        /// The client's hello.
        hello: Hello,
        /// The commit.
        commit: Commit,
        /// The entry it names.
        entry: LogEntry,
    },
    /// A `Commit` that names log entry `s` as the newest, while the server had signed
    /// a later entry (or a receipt naming one) more than [`ROLLBACK_MARGIN_MS`]
    /// before the `Commit`'s time.
    Rollback {
        /// The client's hello.
        hello: Hello,
        /// The commit.
        commit: Commit,
        /// What the server had signed before.
        evidence: Evidence,
    },
}

/// Something the server signed that shows it knew a later log position.
#[derive(Debug, Clone)]
pub enum Evidence {
    /// A log entry.
    Entry(LogEntry),
    /// An enrolment receipt.
    Receipt(EnrolmentReceipt),
}

impl Evidence {
    fn seq_and_time(&self) -> (u64, u64) {
        match self {
            Evidence::Entry(e) => (e.seq, e.time_ms),
            Evidence::Receipt(r) => (r.seq, r.time_ms),
        }
    }

    fn verify(&self, vk: &VerifyingKey) -> Result<()> {
        match self {
            Evidence::Entry(e) => e.verify(vk),
            Evidence::Receipt(r) => r.verify(vk),
        }
    }
}

/// A proof that a server cheated, checkable offline by anyone ([`MisbehaviourProof::verify`]).
#[derive(Debug, Clone)]
pub struct MisbehaviourProof {
    /// The server's Ed25519 key (compare it with the server's published identity).
    pub server_key: [u8; 32],
    /// What it shows.
    pub kind: ProofKind,
}

/// What a valid proof establishes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The server's Ed25519 key, hex.
    pub server_key: String,
    /// The table's epoch (for a session proof) or the log position it is about.
    pub epoch: u64,
    /// The finding in words.
    pub what: String,
}

fn bad(why: &str) -> Error {
    Error::InvalidProof(why.to_string())
}

impl MisbehaviourProof {
    /// Checks the proof: signatures, the regenerated queries, the decoding of the
    /// signed answers and the claim. `Ok` means the server signed something an honest
    /// server never signs.
    pub fn verify(&self) -> Result<Finding> {
        let vk = VerifyingKey::from_bytes(&self.server_key).map_err(|_| bad("the server key is not an Ed25519 key"))?;
        let (epoch, what) = match &self.kind {
            ProofKind::OwnRow {
                session,
                row,
                opening,
                subscriber_key,
                shared,
                dleq,
                entry,
            } => {
                let (header, lwe) = session.check(&vk)?;
                let ephemeral = decode_public(&header.ephemeral)?;
                let server_dh = decode_public(&header.server_dh_key)?;
                if opening.selection() != &Selection::row(*row) {
                    return Err(bad("the own query is not for the row"));
                }
                let state = opening.check(&lwe, &session.queries.own)?;
                entry.verify(header.rows, &header.dir_root)?;
                if entry.key(*row) != Some(*subscriber_key) {
                    return Err(bad("the directory holds another key for the row"));
                }
                let y = decode_public(subscriber_key)?;
                let z = decode_public(shared)?;
                dleq_verify(&y, &ephemeral, &z, dleq, &header, *row)?;
                let decoded = lwe.decode(&state, &session.response.answers[0])?;
                let k = keytable::unmask(
                    &CompressedRistretto(*shared),
                    header.epoch,
                    *row,
                    &decoded.to_row_bytes(keytable::ROW_BYTES),
                )?;
                if key_matches(&header, &server_dh, &k) {
                    return Err(bad("the row holds the committed key"));
                }
                (
                    header.epoch,
                    format!(
                        "row {row} of the signed table (epoch {}) holds a key that does not open the signed commitment",
                        header.epoch
                    ),
                )
            }
            ProofKind::Audit {
                session,
                opening,
                key,
                entries,
            } => {
                let (header, lwe) = session.check(&vk)?;
                let server_dh = decode_public(&header.server_dh_key)?;
                let k = TableKey::from_bytes(*key);
                if !key_matches(&header, &server_dh, &k) {
                    return Err(bad("the revealed key is not the committed one"));
                }
                let q = session
                    .queries
                    .audits
                    .first()
                    .ok_or_else(|| bad("the transcript has no audit query"))?;
                let state = opening.check(&lwe, q)?;
                for e in entries {
                    e.verify(header.rows, &header.dir_root)?;
                }
                let expected = expected_audit(&k, &header, opening.selection(), entries, lwe.symbols())?;
                let decoded = lwe.decode(&state, &session.response.answers[1])?;
                if decoded.symbols == expected {
                    return Err(bad("the audited rows hold the committed key"));
                }
                let rows: Vec<String> = opening
                    .selection()
                    .entries()
                    .iter()
                    .map(|(r, _)| r.to_string())
                    .collect();
                (
                    header.epoch,
                    format!(
                        "the signed answer for rows {} of table epoch {} is not the sum of rows encrypting the committed key",
                        rows.join(","),
                        header.epoch
                    ),
                )
            }
            ProofKind::MalformedAnswer { session, index } => {
                let (header, lwe) = session.check(&vk)?;
                let why = super::protocol::answer_shape_defect(&lwe, &header, &session.response.answers)
                    .filter(|(i, _)| *i == *index as usize)
                    .map(|(_, why)| why)
                    .ok_or_else(|| bad("the answer has the signed table's shape"))?;
                (
                    header.epoch,
                    format!(
                        "the server signed a malformed answer on table epoch {}: {why}",
                        header.epoch
                    ),
                )
            }
            ProofKind::Equivocation { a, b } => {
                a.verify(&vk)?;
                b.verify(&vk)?;
                let (a, b) = if a.seq <= b.seq { (a, b) } else { (b, a) };
                if a.seq == b.seq {
                    if a == b {
                        return Err(bad("the two entries are the same"));
                    }
                    (
                        a.seq,
                        format!(
                            "the server signed two different table log entries for position {}: it shows different tables to different subscribers",
                            a.seq
                        ),
                    )
                } else if b.seq == a.seq + 1 && b.prev != a.hash() {
                    (
                        b.seq,
                        format!(
                            "the server signed table log entry {} on top of another entry {} than the one it signed: it shows different tables to different subscribers",
                            b.seq, a.seq
                        ),
                    )
                } else {
                    return Err(bad("the two entries neither share a position nor follow each other"));
                }
            }
            ProofKind::BadEntry { genesis, entry } => {
                genesis.verify(&vk)?;
                entry.verify(&vk)?;
                if genesis.seq != 0 {
                    return Err(bad("the first entry is not the log's genesis"));
                }
                let why = super::log::entry_defect(entry, genesis.rows, &genesis.empty_key)
                    .ok_or_else(|| bad("the entry is consistent with the genesis entry"))?;
                (
                    entry.seq,
                    format!("the server signed table log entry {}, where {why}", entry.seq),
                )
            }
            ProofKind::Replay {
                prev,
                entry,
                changes,
                buckets,
            } => {
                prev.verify(&vk)?;
                entry.verify(&vk)?;
                super::log::check_replay(prev, entry, changes, buckets)?;
                (
                    entry.seq,
                    format!(
                        "the server signed table log entry {} whose directory changes do not lead to the directory root it signs",
                        entry.seq
                    ),
                )
            }
            ProofKind::BadChanges { entry, changes } => {
                entry.verify(&vk)?;
                if changes.len() != entry.n_changes as usize || super::log::changes_hash(changes) != entry.changes_hash
                {
                    return Err(bad("the changes are not the ones the entry signs"));
                }
                let why = super::log::changes_defect(entry.rows, changes)
                    .ok_or_else(|| bad("the entry's changes are well formed"))?;
                (
                    entry.seq,
                    format!("the server signed table log entry {}, where {why}", entry.seq),
                )
            }
            ProofKind::Receipt {
                receipt,
                entry,
                changes,
            } => {
                receipt.verify(&vk)?;
                entry.verify(&vk)?;
                if changes.len() != entry.n_changes as usize || super::log::changes_hash(changes) != entry.changes_hash
                {
                    return Err(bad("the changes are not the ones the entry signs"));
                }
                if entry.seq == 0 && (entry.rows != receipt.rows || entry.empty_key != receipt.empty_key) {
                    (
                        0,
                        format!(
                            "the server's enrolment receipt names tables of {} rows (or another empty-row key); its table log's genesis entry fixes {}",
                            receipt.rows, entry.rows
                        ),
                    )
                } else {
                    if entry.seq != receipt.seq {
                        return Err(bad("the entry is not the one the receipt names"));
                    }
                    if receipt.rows == entry.rows
                        && changes
                            .iter()
                            .any(|&(r, k)| r == receipt.row && k == receipt.subscriber_key)
                    {
                        return Err(bad("the entry registers the key as the receipt says"));
                    }
                    (
                        entry.seq,
                        format!(
                            "the server's enrolment receipt puts a key at row {} in table log entry {}, which does not register it",
                            receipt.row, entry.seq
                        ),
                    )
                }
            }
            ProofKind::CommitNotInLog { hello, commit, entry } => {
                verify_commit(&vk, hello, commit)?;
                entry.verify(&vk)?;
                if entry.seq != commit.log_seq {
                    return Err(bad("the entry is not at the position the commit names"));
                }
                if entry.hash() != commit.log_hash {
                    (
                        entry.seq,
                        format!(
                            "the server signed a session naming another table log entry {} than the one it signed for that position: it shows different tables to different subscribers",
                            entry.seq
                        ),
                    )
                } else if entry.tables.iter().find(|t| t.expires_ms == 0) == Some(&commit.header) {
                    return Err(bad("the commit's table is the entry's current table"));
                } else {
                    (
                        commit.header.epoch,
                        format!(
                            "the server ran a session on a table (epoch {}) that is not the current table of its signed log entry {}",
                            commit.header.epoch, entry.seq
                        ),
                    )
                }
            }
            ProofKind::Rollback {
                hello,
                commit,
                evidence,
            } => {
                verify_commit(&vk, hello, commit)?;
                evidence.verify(&vk)?;
                let (seq, time) = evidence.seq_and_time();
                if seq <= commit.log_seq {
                    return Err(bad("the evidence is not later than the commit's log head"));
                }
                if time.saturating_add(ROLLBACK_MARGIN_MS) >= commit.t_s {
                    return Err(bad("the evidence is not older than the commit by the margin"));
                }
                (
                    commit.log_seq,
                    format!(
                        "the server named table log entry {} as its newest although it had signed entry {seq} {} s before",
                        commit.log_seq,
                        (commit.t_s - time) / 1000
                    ),
                )
            }
        };
        Ok(Finding {
            server_key: keytable::hex(&self.server_key),
            epoch,
            what,
        })
    }
}

impl Transcript {
    /// Checks the signatures and the hint; returns the header and the hint's client.
    fn check(&self, vk: &VerifyingKey) -> Result<(TableHeader, LweClient)> {
        verify_commit(vk, &self.hello, &self.commit)?;
        verify_response(vk, &self.hello, &self.commit, &self.queries, &self.response)?;
        let header = self.commit.header;
        let lwe = LweClient::new(self.hint.clone())?;
        if lwe.table_id() != header.table_id {
            return Err(bad("the hint is not the signed table's"));
        }
        Ok((header, lwe))
    }

    fn put(&self, w: &mut Writer) {
        self.hello.encode(w);
        self.commit.encode(w);
        self.queries.encode(w);
        self.response.encode(w);
        self.hint.encode(w);
    }

    fn read(r: &mut Reader<'_>) -> tacit_wire::Result<Self> {
        let t = Transcript {
            hello: Hello::decode(r)?,
            commit: Commit::decode(r)?,
            queries: Queries::decode(r)?,
            response: Response::decode(r)?,
            hint: LweHint::decode(r)?,
        };
        if t.response.answers.is_empty() {
            return Err(tacit_wire::Error::invalid("proof", "a response without answers"));
        }
        Ok(t)
    }
}

fn put_entries(w: &mut Writer, entries: &[DirEntry]) {
    w.put_count(entries.len());
    for e in entries {
        put_dir_entry(w, e);
    }
}

fn read_entries(r: &mut Reader<'_>) -> tacit_wire::Result<Vec<DirEntry>> {
    let n = r.count("directory entries", MAX_PROOF_BUCKETS, 16)?;
    (0..n).map(|_| read_dir_entry(r)).collect()
}

fn put_changes(w: &mut Writer, changes: &[Change]) {
    w.put_count(changes.len());
    for (r, k) in changes {
        w.put_u64(*r);
        w.put_fixed(k);
    }
}

fn read_changes(r: &mut Reader<'_>) -> tacit_wire::Result<Vec<Change>> {
    let n = r.count("changes", super::log::MAX_CHANGES_PER_ENTRY, 40)?;
    (0..n).map(|_| Ok((r.u64()?, r.array("key")?))).collect()
}

impl Encode for MisbehaviourProof {
    fn encode(&self, w: &mut Writer) {
        w.put_envelope(TAG_PROOF);
        w.put_fixed(&self.server_key);
        match &self.kind {
            ProofKind::OwnRow {
                session,
                row,
                opening,
                subscriber_key,
                shared,
                dleq,
                entry,
            } => {
                w.put_u8(1);
                session.put(w);
                w.put_u64(*row);
                opening.put(w);
                w.put_fixed(subscriber_key);
                w.put_fixed(shared);
                w.put_fixed(dleq);
                put_dir_entry(w, entry);
            }
            ProofKind::Audit {
                session,
                opening,
                key,
                entries,
            } => {
                w.put_u8(2);
                session.put(w);
                opening.put(w);
                w.put_fixed(key);
                put_entries(w, entries);
            }
            ProofKind::Equivocation { a, b } => {
                w.put_u8(3);
                a.put(w);
                b.put(w);
            }
            ProofKind::BadEntry { genesis, entry } => {
                w.put_u8(4);
                genesis.put(w);
                entry.put(w);
            }
            ProofKind::Replay {
                prev,
                entry,
                changes,
                buckets,
            } => {
                w.put_u8(5);
                prev.put(w);
                entry.put(w);
                put_changes(w, changes);
                put_entries(w, buckets);
            }
            ProofKind::Receipt {
                receipt,
                entry,
                changes,
            } => {
                w.put_u8(6);
                receipt.put(w);
                entry.put(w);
                put_changes(w, changes);
            }
            ProofKind::MalformedAnswer { session, index } => {
                w.put_u8(10);
                session.put(w);
                w.put_u32(*index);
            }
            ProofKind::BadChanges { entry, changes } => {
                w.put_u8(9);
                entry.put(w);
                put_changes(w, changes);
            }
            ProofKind::CommitNotInLog { hello, commit, entry } => {
                w.put_u8(7);
                hello.encode(w);
                commit.encode(w);
                entry.put(w);
            }
            ProofKind::Rollback {
                hello,
                commit,
                evidence,
            } => {
                w.put_u8(8);
                hello.encode(w);
                commit.encode(w);
                match evidence {
                    Evidence::Entry(e) => {
                        w.put_u8(1);
                        e.put(w);
                    }
                    Evidence::Receipt(r) => {
                        w.put_u8(2);
                        r.put(w);
                    }
                }
            }
        }
    }
}

impl Decode for MisbehaviourProof {
    fn decode(r: &mut Reader<'_>) -> tacit_wire::Result<Self> {
        r.envelope(TAG_PROOF, "tracedge proof of misbehaviour")?;
        let server_key = r.array("server key")?;
        let kind = match r.u8()? {
            1 => ProofKind::OwnRow {
                session: Box::new(Transcript::read(r)?),
                row: r.u64()?,
                opening: QueryOpening::read(r)?,
                subscriber_key: r.array("subscriber key")?,
                shared: r.array("shared point")?,
                dleq: r.array("dleq proof")?,
                entry: read_dir_entry(r)?,
            },
            2 => {
                let session = Box::new(Transcript::read(r)?);
                if session.response.answers.len() < 2 {
                    return Err(tacit_wire::Error::invalid(
                        "proof",
                        "an audit proof without an audit answer",
                    ));
                }
                ProofKind::Audit {
                    session,
                    opening: QueryOpening::read(r)?,
                    key: r.array("table key")?,
                    entries: read_entries(r)?,
                }
            }
            3 => ProofKind::Equivocation {
                a: LogEntry::read(r)?,
                b: LogEntry::read(r)?,
            },
            4 => ProofKind::BadEntry {
                genesis: LogEntry::read(r)?,
                entry: LogEntry::read(r)?,
            },
            5 => ProofKind::Replay {
                prev: LogEntry::read(r)?,
                entry: LogEntry::read(r)?,
                changes: read_changes(r)?,
                buckets: read_entries(r)?,
            },
            6 => ProofKind::Receipt {
                receipt: EnrolmentReceipt::read(r)?,
                entry: LogEntry::read(r)?,
                changes: read_changes(r)?,
            },
            7 => ProofKind::CommitNotInLog {
                hello: Hello::decode(r)?,
                commit: Commit::decode(r)?,
                entry: LogEntry::read(r)?,
            },
            8 => ProofKind::Rollback {
                hello: Hello::decode(r)?,
                commit: Commit::decode(r)?,
                evidence: match r.u8()? {
                    1 => Evidence::Entry(LogEntry::read(r)?),
                    2 => Evidence::Receipt(EnrolmentReceipt::read(r)?),
                    _ => return Err(tacit_wire::Error::invalid("proof", "unknown evidence")),
                },
            },
            9 => ProofKind::BadChanges {
                entry: LogEntry::read(r)?,
                changes: read_changes(r)?,
            },
            10 => ProofKind::MalformedAnswer {
                session: Box::new(Transcript::read(r)?),
                index: r.u32()?,
            },
            _ => return Err(tacit_wire::Error::invalid("proof", "unknown kind")),
        };
        Ok(MisbehaviourProof { server_key, kind })
    }
}
