//! The sans-I/O server and client of Algorithm 1.
//!
//! ```text
//! C → S  Hello{t_s, nonce}
//! C ← S  Commit{header(epoch, Γ, c, R, dir_root, table_id), t_s, nonce_S, Sig}
//! C → S  Queries{own row, audit = one weighted query over α other rows}
//! C ← S  Response{answers, Sig(t_s ‖ nonces ‖ epoch ‖ H(queries) ‖ H(answers))}
//! C → S  DirLookup{buckets of the audited rows}      (optional)
//! C ← S  DirEntries{keys + Merkle paths to dir_root}
//! C → S  ClientAuth{MAC(k_client, transcript)}       (random MAC if a check failed)
//! C ← S  ServerAuth{MAC(k_server, transcript)}  or a refusal
//! ```
//!
//! `k_label = SHA-256("tacit/tracedge/v1/session" ‖ label ‖ K ‖ transcript)` where the
//! transcript is SHA-256 over Hello, Commit, H(Queries) and the response's epoch,
//! H(answers) and signature, H being BLAKE3 (§5.1: keys from `t_s`, `K` and the labels
//! `"server"`/`"client"`). The two large messages enter as their hashes, so the
//! per-session hashing is one pass over each.

use std::collections::{BTreeMap, HashSet};

use curve25519_dalek::ristretto::RistrettoPoint;
use curve25519_dalek::scalar::Scalar;
use rand_core::{CryptoRng, RngCore};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use tacit_crypto::sign::{SigningKey, VerifyingKey};
use tacit_wire::Encode;
use zeroize::Zeroizing;

use super::commit::{self, CommitScheme};
use super::keytable::{self, BUCKET_ROWS, Directory, Flagged, SubscriberSecret, TableKey, decode_public};
use super::messages::*;
use super::proof::{MisbehaviourProof, ProofKind, QueryOpening};
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
    /// Writes row `row` on the fly for public key `public` (registration into an
    /// empty row, or removal: the server's own key), updating the PIR table, the
    /// hint, the directory and the header.
    pub fn set_row(&mut self, row: u64, public: &[u8; 32]) -> Result<()> {
        let y = decode_public(public)?;
        let bytes = keytable::encrypt_row(&self.key, &self.key, self.header.epoch, row, &y);
        self.pir.update_row(row, &bytes)?;
        self.hint = self.pir.current_hint();
        self.dir.set(row, *public)?;
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
    let mut seed = [0u8; 16];
    rng.fill_bytes(&mut seed);
    let pir = crate::LweAnyServer::setup(&table, LweParams::new(table.shape(), seed)?, backend)?;
    drop(table);
    let hint = pir.hint();
    let dir = Directory::build(keys)?;
    LiveTable::new(epoch, key, scheme, server_dh, pir, hint, dir, None, rng)
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
    let mut seed = [0u8; 16];
    rng.fill_bytes(&mut seed);
    let pir = LweServer::setup(&table, LweParams::new(table.shape(), seed)?)?;
    let hint = pir.hint();
    let dir = Directory::build(keys)?;
    LiveTable::new(epoch, key, scheme, server_dh, pir, hint, dir, None, rng)
}

/// Server settings.
#[derive(Debug, Clone, Copy)]
pub struct ServerConfig {
    /// Largest accepted distance between the client's `t_s` and the server's clock.
    pub skew_ms: u64,
    /// How long keys of a deprecated table stay valid (§3.5).
    pub grace_ms: u64,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            skew_ms: 120_000,
            grace_ms: 3_600_000,
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

/// The TracEdge server: signing key, its own ElGamal key, the current table and the
/// deprecated ones still served (§3.5), and the replay cache.
pub struct TracEdgeServer<S> {
    signing: SigningKey,
    dh_secret: Scalar,
    dh_public: RistrettoPoint,
    tables: BTreeMap<u64, LiveTable<S>>,
    current: Option<u64>,
    seen: HashSet<(u64, [u8; 32])>,
    config: ServerConfig,
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
            .finish_non_exhaustive()
    }
}

impl<S: PirServer<Query = LweQuery, Answer = crate::lwe::LweAnswer>> TracEdgeServer<S> {
    /// A server with no table yet.
    pub fn new(signing: SigningKey, dh_secret: Scalar, config: ServerConfig) -> Self {
        TracEdgeServer {
            signing,
            dh_public: curve25519_dalek::constants::RISTRETTO_BASEPOINT_TABLE * &dh_secret,
            dh_secret,
            tables: BTreeMap::new(),
            current: None,
            seen: HashSet::new(),
            config,
        }
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

    /// Makes `table` current; the previous current table is deprecated and its keys
    /// expire `grace_ms` after `now_ms` (§3.5 rekeying).
    pub fn install(&mut self, table: LiveTable<S>, now_ms: u64) {
        if let Some(cur) = self.current
            && let Some(t) = self.tables.get_mut(&cur)
        {
            t.header.expires_ms = now_ms.saturating_add(self.config.grace_ms);
        }
        let e = table.header.epoch;
        self.tables.insert(e, table);
        self.current = Some(e);
    }

    /// Drops deprecated tables whose keys have expired.
    pub fn expire(&mut self, now_ms: u64) {
        self.tables
            .retain(|_, t| t.header.expires_ms == 0 || t.header.expires_ms > now_ms);
        let horizon = now_ms.saturating_sub(self.config.skew_ms);
        self.seen.retain(|(t, _)| *t + self.config.skew_ms >= horizon);
    }

    /// The current table.
    pub fn current(&self) -> Option<&LiveTable<S>> {
        self.current.and_then(|e| self.tables.get(&e))
    }

    /// All tables served (current and deprecated).
    pub fn tables(&self) -> impl Iterator<Item = &LiveTable<S>> {
        self.tables.values()
    }

    /// A table by epoch, for on-the-fly row updates.
    pub fn table_mut(&mut self, epoch: u64) -> Option<&mut LiveTable<S>> {
        self.tables.get_mut(&epoch)
    }

    /// The hint of an epoch's table.
    pub fn hint(&self, req: &HintRequest) -> Result<LweHint> {
        self.tables
            .get(&req.epoch)
            .map(|t| t.hint.clone())
            .ok_or_else(|| Error::Refused(format!("no table of epoch {} is served", req.epoch)))
    }

    /// Step 1: answers `t_s` with the signed commitment of the current table. Refuses
    /// a timestamp outside the allowed skew and a replayed `(t_s, nonce)`.
    pub fn hello<R: RngCore + CryptoRng>(
        &mut self,
        hello: &Hello,
        now_ms: u64,
        rng: &mut R,
    ) -> Result<(ServerSession, Commit)> {
        if hello.t_s.abs_diff(now_ms) > self.config.skew_ms {
            return Err(Error::Refused(format!(
                "timestamp {} is {} ms from the server's clock; at most {} ms is accepted",
                hello.t_s,
                hello.t_s.abs_diff(now_ms),
                self.config.skew_ms
            )));
        }
        if !self.seen.insert((hello.t_s, hello.nonce)) {
            return Err(Error::Refused("replayed timestamp and nonce".into()));
        }
        let table = self
            .current()
            .ok_or_else(|| Error::Refused("the server has no table yet".into()))?;
        let mut server_nonce = [0u8; 32];
        rng.fill_bytes(&mut server_nonce);
        let header = table.header;
        let sig = self
            .signing
            .sign(&commit_signed_bytes(&header, hello.t_s, &hello.nonce, &server_nonce));
        let commit = Commit {
            header,
            t_s: hello.t_s,
            server_nonce,
            sig,
        };
        let mut transcript = Sha256::new();
        transcript.update(hello.to_wire());
        transcript.update(commit.to_wire());
        Ok((
            ServerSession {
                t_s: hello.t_s,
                client_nonce: hello.nonce,
                server_nonce,
                epoch: header.epoch,
                transcript,
                step: ServerStep::AwaitQueries,
            },
            commit,
        ))
    }

    fn check_queries(&self, sess: &ServerSession, q: &Queries) -> Result<()> {
        if sess.step != ServerStep::AwaitQueries {
            return Err(Error::Refused("queries out of order".into()));
        }
        if q.epoch != sess.epoch {
            return Err(Error::Refused(format!(
                "queries for epoch {}; the session runs on epoch {}",
                q.epoch, sess.epoch
            )));
        }
        if !self.tables.contains_key(&q.epoch) {
            return Err(Error::Refused(format!("the table of epoch {} has expired", q.epoch)));
        }
        Ok(())
    }

    /// Step 2: answers one session's queries.
    pub fn respond(&self, sess: &mut ServerSession, q: &Queries) -> Result<Response> {
        let mut out = self.respond_batch(&mut [(sess, q)]);
        out.pop().unwrap_or(Err(Error::Unsupported("an empty batch")))
    }

    /// Step 2 for many sessions at once: all their queries (own and audits) that are
    /// for one table go through the PIR backend in **one pass** over that table.
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
                            let sig = self.signing.sign(&response_signed_bytes(
                                sess.t_s,
                                &sess.client_nonce,
                                &sess.server_nonce,
                                epoch,
                                &qhash,
                                &ahash,
                            ));
                            sess.transcript.update(qhash);
                            sess.transcript.update(response_transcript_bytes(epoch, &ahash, &sig));
                            let resp = Response { epoch, answers, sig };
                            sess.step = ServerStep::AwaitAuth;
                            *res = Some(Ok(resp));
                        });
                }
            }
        }
        results
            .into_iter()
            .map(|r| r.unwrap_or(Err(Error::Unsupported("an unanswered query"))))
            .collect()
    }

    /// Directory buckets with Merkle paths (allowed after the response).
    pub fn directory(&self, sess: &ServerSession, lookup: &DirLookup) -> Result<DirEntries> {
        if sess.step != ServerStep::AwaitAuth {
            return Err(Error::Refused("directory lookup out of order".into()));
        }
        let t = self
            .tables
            .get(&sess.epoch)
            .ok_or_else(|| Error::Refused(format!("the table of epoch {} has expired", sess.epoch)))?;
        let entries = lookup
            .buckets
            .iter()
            .map(|&b| t.dir.entry(b))
            .collect::<Result<Vec<_>>>()?;
        Ok(DirEntries { entries })
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
}

/// Client settings.
#[derive(Debug, Clone, Copy)]
pub struct ClientConfig {
    /// Rows audited per authentication (α, §3.3), in one weighted query.
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
    AwaitDirectory,
    AwaitServerAuth,
    Done,
}

/// The client's view of one authentication (holds the per-query seeds: secret).
pub struct ClientSession {
    hello: Hello,
    commit: Option<Commit>,
    queries: Option<Queries>,
    /// `wire_hash` of `queries`, taken once when they were sent.
    queries_hash: [u8; 32],
    response: Option<Response>,
    hint: Option<LweHint>,
    lwe: Option<LweClient>,
    own: Option<QueryOpening>,
    audit: Option<QueryOpening>,
    key: Option<TableKey>,
    verdict: Option<Verdict>,
    proof: Option<Box<MisbehaviourProof>>,
    not_enrolled: bool,
    transcript: Sha256,
    step: ClientStep,
}

impl core::fmt::Debug for ClientSession {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ClientSession")
            .field("step", &self.step)
            .finish_non_exhaustive()
    }
}

/// What went wrong, found by the client.
#[derive(Debug, Clone)]
enum Verdict {
    OwnRow { shared: [u8; 32], dleq: [u8; 64] },
    Audit,
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
    /// The server refused (or answered with a wrong MAC) and no misbehaviour was seen.
    Refused(String),
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

    /// Step 1: `t_s` and a nonce.
    pub fn start<R: RngCore + CryptoRng>(&self, now_ms: u64, rng: &mut R) -> (ClientSession, Hello) {
        let mut nonce = [0u8; 32];
        rng.fill_bytes(&mut nonce);
        let hello = Hello { t_s: now_ms, nonce };
        let mut transcript = Sha256::new();
        transcript.update(hello.to_wire());
        (
            ClientSession {
                hello,
                commit: None,
                queries: None,
                queries_hash: [0; 32],
                response: None,
                hint: None,
                lwe: None,
                own: None,
                audit: None,
                key: None,
                verdict: None,
                proof: None,
                not_enrolled: false,
                transcript,
                step: ClientStep::AwaitCommit,
            },
            hello,
        )
    }

    /// Checks the commit's signature and freshness; returns its header so that the
    /// caller can fetch the hint of `header.table_id` if it has not got it.
    pub fn check_commit(&self, sess: &ClientSession, commit: &Commit) -> Result<TableHeader> {
        if !matches!(sess.step, ClientStep::AwaitCommit) {
            return Err(Error::Refused("commit out of order".into()));
        }
        verify_commit(&self.server, &sess.hello, commit)?;
        if commit.header.scheme == CommitScheme::PaperEquivocable && !self.config.accept_paper_commitment {
            return Err(Error::Refused(
                "the server uses the paper's equivocable commitment; refusing (binding required)".into(),
            ));
        }
        if self.row >= commit.header.rows {
            return Err(Error::RowOutOfRange {
                row: self.row,
                rows: commit.header.rows,
            });
        }
        Ok(commit.header)
    }

    /// Step 2: the query for the client's row and one weighted audit query over
    /// `audits` other rows of a random slot. `hint` must be the hint of
    /// `commit.header.table_id`.
    pub fn on_commit<R: RngCore + CryptoRng>(
        &self,
        sess: &mut ClientSession,
        commit: Commit,
        hint: LweHint,
        rng: &mut R,
    ) -> Result<Queries> {
        let header = self.check_commit(sess, &commit)?;
        let lwe = LweClient::new(hint.clone())?;
        if lwe.table_id() != header.table_id {
            return Err(Error::WrongTable {
                ours: keytable::hex(&lwe.table_id()[..8]),
                theirs: keytable::hex(&header.table_id[..8]),
            });
        }
        let params = *lwe.params();
        let mut own = QueryOpening::new(Selection::row(self.row), rng);
        let own_q = own.query(&lwe)?;
        let mut audits = Vec::new();
        let mut audit = None;
        if self.config.audits > 0
            && let Some(sel) = audit_selection(&params, self.row, self.config.audits, rng)
        {
            let mut opening = QueryOpening::new(sel, rng);
            audits.push(opening.query(&lwe)?);
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
    /// checks it against the commitment (and, for a binding table, against `R`).
    /// Returns the directory lookup for the audited rows (empty if none).
    pub fn on_response(&self, sess: &mut ClientSession, resp: Response) -> Result<DirLookup> {
        if !matches!(sess.step, ClientStep::AwaitResponse) {
            return Err(Error::Refused("response out of order".into()));
        }
        let (Some(commit), Some(queries), Some(lwe), Some(own)) = (&sess.commit, &sess.queries, &sess.lwe, &sess.own)
        else {
            return Err(Error::Refused("response out of order".into()));
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
        let row = own.decode(lwe, &resp.answers[0])?.to_row_bytes(keytable::ROW_BYTES);
        let ephemeral = decode_public(&header.ephemeral)?;
        let server_dh = decode_public(&header.server_dh_key)?;
        let (k, shared) = self.secret.decrypt_row(&ephemeral, header.epoch, self.row, &row)?;
        let ok = key_matches(&header, &server_dh, &k);
        sess.transcript
            .update(response_transcript_bytes(resp.epoch, &ahash, &resp.sig));
        sess.response = Some(resp);
        if ok {
            sess.key = Some(k);
        } else {
            let dleq = super::proof::dleq_prove(self.secret.scalar(), &ephemeral, &shared, &header, self.row);
            sess.verdict = Some(Verdict::OwnRow {
                shared: shared.to_bytes(),
                dleq,
            });
        }
        let mut buckets: Vec<u64> = Vec::new();
        if sess.key.is_some() {
            if let Some(a) = &sess.audit {
                for &(r, _) in a.selection().entries() {
                    let b = r / BUCKET_ROWS;
                    if !buckets.contains(&b) {
                        buckets.push(b);
                    }
                }
            }
        } else {
            buckets.push(self.row / BUCKET_ROWS);
        }
        sess.step = ClientStep::AwaitDirectory;
        Ok(DirLookup { buckets })
    }

    /// Step 4: checks the directory entries and the audits; returns the client's MAC
    /// — a random one if any check failed, so that the exchange looks like an
    /// unauthorised client's.
    pub fn on_directory<R: RngCore + CryptoRng>(
        &self,
        sess: &mut ClientSession,
        entries: DirEntries,
        rng: &mut R,
    ) -> Result<ClientAuth> {
        if !matches!(sess.step, ClientStep::AwaitDirectory) {
            return Err(Error::Refused("directory entries out of order".into()));
        }
        let header = sess
            .commit
            .as_ref()
            .map(|c| c.header)
            .ok_or_else(|| Error::Refused("no commit".into()))?;
        for e in &entries.entries {
            e.verify(header.rows, &header.dir_root)?;
        }
        if matches!(sess.verdict, Some(Verdict::OwnRow { .. })) {
            let mine = entries.entries.iter().find_map(|e| e.key(self.row));
            if mine != Some(self.secret.public_bytes()) {
                // Not misbehaviour: the signed directory does not list this key at
                // this row (not enrolled, or removed). Finish like any outsider.
                sess.verdict = None;
                sess.not_enrolled = true;
            }
        }
        if let (Some(k), Some(a), Some(resp), Some(lwe)) = (&sess.key, &sess.audit, &sess.response, &sess.lwe) {
            let decoded = a.decode(lwe, &resp.answers[1])?;
            let expected = expected_audit(k, &header, a.selection(), &entries.entries, lwe.symbols())?;
            if decoded.symbols != expected {
                sess.verdict = Some(Verdict::Audit);
            }
        }
        sess.step = ClientStep::AwaitServerAuth;
        if let Some(v) = sess.verdict.clone() {
            let proof = self.make_proof(sess, v, entries)?;
            sess.proof = Some(Box::new(proof));
            sess.key = None;
            let mut mac = [0u8; 32];
            rng.fill_bytes(&mut mac);
            return Ok(ClientAuth { mac });
        }
        let transcript: [u8; 32] = sess.transcript.clone().finalize().into();
        match &sess.key {
            Some(k) => Ok(ClientAuth {
                mac: k.session_mac_key("client", &transcript),
            }),
            None => {
                let mut mac = [0u8; 32];
                rng.fill_bytes(&mut mac);
                Ok(ClientAuth { mac })
            }
        }
    }

    /// Step 5: the server's answer to the MAC (`Ok(ServerAuth)`, or `Err(reason)` for a
    /// refusal), and the outcome.
    pub fn on_server_auth(
        &self,
        sess: &mut ClientSession,
        reply: core::result::Result<ServerAuth, String>,
    ) -> ClientOutcome {
        sess.step = ClientStep::Done;
        if let Some(p) = sess.proof.take() {
            return ClientOutcome::Caught(p);
        }
        if sess.not_enrolled {
            return ClientOutcome::Refused(format!(
                "the signed directory does not hold this subscriber's key at row {}",
                self.row
            ));
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

    fn make_proof(&self, sess: &ClientSession, v: Verdict, entries: DirEntries) -> Result<MisbehaviourProof> {
        let (Some(commit), Some(queries), Some(resp), Some(hint), Some(own)) =
            (&sess.commit, &sess.queries, &sess.response, &sess.hint, &sess.own)
        else {
            return Err(Error::Refused("nothing to prove".into()));
        };
        let kind = match v {
            Verdict::OwnRow { shared, dleq } => {
                let entry = entries
                    .entries
                    .into_iter()
                    .find(|e| e.key(self.row).is_some())
                    .ok_or_else(|| Error::Refused("the directory did not return the client's bucket".into()))?;
                ProofKind::OwnRow {
                    row: self.row,
                    opening: own.clone(),
                    subscriber_key: self.secret.public_bytes(),
                    shared,
                    dleq,
                    entry,
                }
            }
            Verdict::Audit => {
                let opening = sess.audit.clone().ok_or_else(|| Error::Refused("no audit".into()))?;
                // The key opened Γ, so it is the committed one: a proof reveals it.
                let key = sess.key.as_ref().ok_or_else(|| Error::Refused("no key".into()))?;
                ProofKind::Audit {
                    opening,
                    key: *key.as_bytes(),
                    entries: entries.entries,
                }
            }
        };
        Ok(MisbehaviourProof {
            server_key: self.server.to_bytes(),
            hello: sess.hello,
            commit: commit.clone(),
            queries: queries.clone(),
            response: resp.clone(),
            hint: hint.clone(),
            kind,
        })
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
    if commit.t_s != hello.t_s {
        return Err(Error::Refused("the commit echoes another timestamp".into()));
    }
    server
        .verify(
            &commit_signed_bytes(&commit.header, commit.t_s, &hello.nonce, &commit.server_nonce),
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
                hello.t_s,
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

/// A weighted selection of `alpha` rows of one random slot, other than `own`, with
/// random odd weights (a row that differs changes the sum: `p` is a power of two).
pub fn audit_selection<R: RngCore + CryptoRng>(
    params: &LweParams,
    own: u64,
    alpha: usize,
    rng: &mut R,
) -> Option<Selection> {
    let rows = params.shape().rows;
    let slots = params.slots() as u64;
    let slot = tacit_crypto::rng::uniform_below(rng, slots);
    let mut candidates: Vec<u64> = (0..params.cols() as u64)
        .map(|c| c * slots + slot)
        .filter(|&r| r < rows && r != own)
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
            .ok_or_else(|| Error::Refused(format!("the directory did not return the key of row {r}")))?;
        let y = decode_public(&key)?;
        let row = keytable::encrypt_row(k, k, header.epoch, r, &y);
        for (a, s) in acc.iter_mut().zip(layout.split(&row)) {
            *a = (*a + (w as u64 % p) * s as u64) % p;
        }
    }
    Ok(acc.into_iter().map(|v| v as u32).collect())
}

impl ClientSession {
    /// The proof of misbehaviour, if the server was caught (also returned by
    /// [`TracEdgeClient::on_server_auth`]).
    pub fn proof(&self) -> Option<&MisbehaviourProof> {
        self.proof.as_deref()
    }
}
