//! Wire encodings of the TracEdge messages (tags `0x0620`–`0x062f`, `docs/wire.md`).
//!
//! ```text
//! Header     = u64 epoch || u8 scheme || u64 rows || table_id (32) || dir_root (32)
//!              || R (32) || Γ (32) || c (32) || server_dh_key (32) || u64 expires_ms (0: current)
//! Hello      = 01 0620 || u64 t_s (the client's clock, rounded down to the minute) || nonce (32)
//! Commit     = 01 0621 || Header || u64 t_s || server_nonce (32) || u64 log_seq || log_hash (32) || sig (64)
//! Queries    = 01 0622 || u64 epoch || LweQuery || u32 n (≤ 16) || n × LweQuery
//! Response   = 01 0623 || u64 epoch || u32 n (≤ 17) || n × LweAnswer || sig (64)
//! ClientAuth = 01 0626 || mac (32)
//! ServerAuth = 01 0627 || mac (32)
//! HintReq    = 01 0628 || u64 epoch
//! EnrollReq  = 01 062a || key (32) || str label (≤ 64) || u64 time_ms || pop (64)
//! EnrollRep  = 01 062b || Receipt
//! LogReq     = 01 062c || u64 from || u64 to
//! LogSeg     = 01 062d || u32 n (≤ 256) || n × (LogEntry || u32 c || c × (u64 row || key (32)))
//! Refusal    = 01 062e || u8 code || str reason (≤ 512)
//! Receipt    = 01 062f || server_key (32) || u64 row || key (32) || u64 rows || u64 seq || u64 time_ms || sig (64)
//! ```
//!
//! (`0x0624`/`0x0625`, the directory lookup of v2, are retired: clients hold the
//! directory, see [`super::log`].) Signatures are Ed25519 by the server over a
//! domain-separated string ([`commit_signed_bytes`], [`response_signed_bytes`],
//! [`super::LogEntry::signed_bytes`], [`super::EnrolmentReceipt::signed_bytes`]).
//! Decoders bound every count before allocating and reject trailing bytes.

use sha2::{Digest, Sha256};
use tacit_wire::{Decode, Encode, Reader, Writer};

use super::commit::{CommitScheme, Commitment};
use super::keytable::DirEntry;
use crate::lwe::{LweAnswer, LweQuery, TableId};

/// Tag of [`Hello`].
pub const TAG_HELLO: u16 = 0x0620;
/// Tag of [`Commit`].
pub const TAG_COMMIT: u16 = 0x0621;
/// Tag of [`Queries`].
pub const TAG_QUERIES: u16 = 0x0622;
/// Tag of [`Response`].
pub const TAG_RESPONSE: u16 = 0x0623;
/// Tag of [`ClientAuth`].
pub const TAG_CLIENT_AUTH: u16 = 0x0626;
/// Tag of [`ServerAuth`].
pub const TAG_SERVER_AUTH: u16 = 0x0627;
/// Tag of [`HintRequest`].
pub const TAG_HINT_REQUEST: u16 = 0x0628;
/// Tag of a proof of misbehaviour ([`super::MisbehaviourProof`]).
pub const TAG_PROOF: u16 = 0x0629;

/// Tag of [`EnrollRequest`].
pub const TAG_ENROLL_REQUEST: u16 = 0x062a;
/// Tag of [`EnrollReply`].
pub const TAG_ENROLL_REPLY: u16 = 0x062b;
/// Tag of [`super::LogRequest`].
pub const TAG_LOG_REQUEST: u16 = 0x062c;
/// Tag of [`super::LogSegment`].
pub const TAG_LOG_SEGMENT: u16 = 0x062d;
/// Tag of [`Refusal`].
pub const TAG_REFUSAL: u16 = 0x062e;
/// Tag of [`super::EnrolmentReceipt`].
pub const TAG_RECEIPT: u16 = 0x062f;

/// Why the server refused, as a code a client may act on (it never acts on the
/// server's words).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefusalCode {
    /// The table changed during the session (a row written on the fly): a new
    /// session may succeed.
    TableChanged,
    /// The server sheds load (too many sessions, from this address or in all): a
    /// later session may succeed.
    Busy,
    /// Anything else: the session is over.
    Other,
}

impl RefusalCode {
    fn code(self) -> u8 {
        match self {
            RefusalCode::TableChanged => 1,
            RefusalCode::Busy => 2,
            RefusalCode::Other => 3,
        }
    }

    fn from_code(c: u8) -> Self {
        match c {
            1 => RefusalCode::TableChanged,
            2 => RefusalCode::Busy,
            _ => RefusalCode::Other,
        }
    }
}

/// A typed refusal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// What the client may do about it.
    pub code: RefusalCode,
    /// The server's words (shown to the user, never interpreted).
    pub reason: String,
}

impl Encode for Refusal {
    fn encode(&self, w: &mut Writer) {
        w.put_envelope(TAG_REFUSAL);
        w.put_u8(self.code.code());
        let mut r = self.reason.as_str();
        while r.len() > 512 {
            let mut end = 512;
            while !r.is_char_boundary(end) {
                end -= 1;
            }
            r = &r[..end];
        }
        w.put_str(r);
    }
}
impl Decode for Refusal {
    fn decode(r: &mut Reader<'_>) -> tacit_wire::Result<Self> {
        r.envelope(TAG_REFUSAL, "tracedge refusal")?;
        Ok(Refusal {
            code: RefusalCode::from_code(r.u8()?),
            reason: r.str("reason", 512)?.to_owned(),
        })
    }
}

/// A subscriber asks to be registered with its public key (the server decides
/// whether it accepts enrolment on this channel), proving that it holds the key's
/// secret ([`super::proof_of_possession`], bound to the server's key and the time).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnrollRequest {
    /// The subscriber's ristretto255 public key.
    pub public_key: [u8; 32],
    /// A label for the operator (at most 64 bytes).
    pub label: String,
    /// The client's clock (unix ms); the server refuses one far from its own.
    pub time_ms: u64,
    /// The proof of possession.
    pub pop: [u8; 64],
}

/// The server's answer to an enrolment: the signed receipt (row kept across tables,
/// §3.5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnrollReply {
    /// The receipt.
    pub receipt: super::EnrolmentReceipt,
}

impl Encode for EnrollRequest {
    fn encode(&self, w: &mut Writer) {
        w.put_envelope(TAG_ENROLL_REQUEST);
        w.put_fixed(&self.public_key);
        w.put_str(&self.label);
        w.put_u64(self.time_ms);
        w.put_fixed(&self.pop);
    }
}
impl Decode for EnrollRequest {
    fn decode(r: &mut Reader<'_>) -> tacit_wire::Result<Self> {
        r.envelope(TAG_ENROLL_REQUEST, "tracedge enrol request")?;
        Ok(EnrollRequest {
            public_key: r.array("public key")?,
            label: r.str("label", 64)?.to_owned(),
            time_ms: r.u64()?,
            pop: r.array("proof of possession")?,
        })
    }
}
impl Encode for EnrollReply {
    fn encode(&self, w: &mut Writer) {
        w.put_envelope(TAG_ENROLL_REPLY);
        self.receipt.put(w);
    }
}
impl Decode for EnrollReply {
    fn decode(r: &mut Reader<'_>) -> tacit_wire::Result<Self> {
        r.envelope(TAG_ENROLL_REPLY, "tracedge enrol reply")?;
        Ok(EnrollReply {
            receipt: super::EnrolmentReceipt::read(r)?,
        })
    }
}

/// The most audit queries one authentication may carry.
pub const MAX_AUDIT_QUERIES: usize = 16;
/// The most directory buckets a proof carries.
pub const MAX_PROOF_BUCKETS: usize = super::log::MAX_CHANGES_PER_ENTRY;
const MAX_PATH: usize = 64;

/// What the server signs about a table, in every [`Commit`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableHeader {
    /// The table's epoch (increases with every rekey).
    pub epoch: u64,
    /// Which commitment `Γ` is.
    pub scheme: CommitScheme,
    /// Rows `n`.
    pub rows: u64,
    /// The PIR table id (hash of the `lwe` hint, which changes with every row update).
    pub table_id: TableId,
    /// Root of the directory of public keys the rows encrypt to.
    pub dir_root: [u8; 32],
    /// `R = H(K)·B`, the table's shared ElGamal ephemeral point.
    pub ephemeral: [u8; 32],
    /// `Γ` and `c = K{r}`.
    pub commitment: Commitment,
    /// The server's ristretto255 key (empty rows encrypt to it; `h` of the paper's
    /// commitment).
    pub server_dh_key: [u8; 32],
    /// 0 for the current table; for a deprecated one, when its keys expire (unix ms).
    pub expires_ms: u64,
}

impl TableHeader {
    pub(crate) fn put(&self, w: &mut Writer) {
        w.put_u64(self.epoch);
        w.put_u8(self.scheme.code());
        w.put_u64(self.rows);
        w.put_fixed(&self.table_id);
        w.put_fixed(&self.dir_root);
        w.put_fixed(&self.ephemeral);
        w.put_fixed(&self.commitment.point);
        w.put_fixed(&self.commitment.opening);
        w.put_fixed(&self.server_dh_key);
        w.put_u64(self.expires_ms);
    }

    pub(crate) fn read(r: &mut Reader<'_>) -> tacit_wire::Result<Self> {
        let epoch = r.u64()?;
        let scheme = CommitScheme::from_code(r.u8()?)
            .ok_or_else(|| tacit_wire::Error::invalid("table header", "unknown commitment scheme"))?;
        let rows = r.u64()?;
        if rows == 0 || rows > crate::MAX_ROWS {
            return Err(tacit_wire::Error::invalid("table header", "row count out of range"));
        }
        Ok(TableHeader {
            epoch,
            scheme,
            rows,
            table_id: r.array("table id")?,
            dir_root: r.array("directory root")?,
            ephemeral: r.array("ephemeral point")?,
            commitment: Commitment {
                point: r.array("commitment")?,
                opening: r.array("commitment opening")?,
            },
            server_dh_key: r.array("server key")?,
            expires_ms: r.u64()?,
        })
    }
}

/// `C → S: t_s` (with a nonce, the client's challenge for the mutual authentication).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hello {
    /// Sent as 0 and ignored: the client sends no clock (its offset, even rounded
    /// to the minute, linked its sessions). The server signs its own time in the
    /// [`Commit`] and the client checks it against its clock. The field stays for
    /// the wire format.
    pub t_s: u64,
    /// A fresh random nonce.
    pub nonce: [u8; 32],
}

/// `C ← S: Sig(Γ ‖ t_s)`: the signed table header for this session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commit {
    /// The table the session runs on.
    pub header: TableHeader,
    /// The client's timestamp, echoed.
    pub t_s: u64,
    /// The server's nonce (its challenge).
    pub server_nonce: [u8; 32],
    /// The newest entry of the server's table log when it signed (its position) …
    pub log_seq: u64,
    /// … and its hash: the header must be one of the tables that entry lists.
    pub log_hash: [u8; 32],
    /// Ed25519 signature over [`commit_signed_bytes`].
    pub sig: [u8; 64],
}

/// `C → S: PIR_Q(A)` and the audit queries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Queries {
    /// The epoch the queries are for.
    pub epoch: u64,
    /// The query for the client's own row.
    pub own: LweQuery,
    /// Audit queries (weighted sums of other rows), at most [`MAX_AUDIT_QUERIES`].
    pub audits: Vec<LweQuery>,
}

impl Queries {
    /// Every query, own first then the audits (the order of the answers).
    pub fn all(&self) -> impl Iterator<Item = &LweQuery> {
        core::iter::once(&self.own).chain(&self.audits)
    }
}

/// `C ← S: PIR_Resp, Sig(PIR_Resp ‖ t_s)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The epoch.
    pub epoch: u64,
    /// One answer per query, own first.
    pub answers: Vec<LweAnswer>,
    /// Ed25519 signature over [`response_signed_bytes`].
    pub sig: [u8; 64],
}

/// The client's half of the challenge–response: `MAC(k_client, transcript)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientAuth {
    /// The MAC.
    pub mac: [u8; 32],
}

/// The server's half: `MAC(k_server, transcript)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerAuth {
    /// The MAC.
    pub mac: [u8; 32],
}

/// A request for the `lwe` hint of an epoch's table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HintRequest {
    /// The epoch.
    pub epoch: u64,
}

/// The bytes the server signs in a [`Commit`].
pub fn commit_signed_bytes(
    header: &TableHeader,
    t_s: u64,
    client_nonce: &[u8; 32],
    server_nonce: &[u8; 32],
    log_seq: u64,
    log_hash: &[u8; 32],
) -> Vec<u8> {
    let mut w = Writer::new();
    w.put_fixed(b"tacit/tracedge/v3/commit\0");
    header.put(&mut w);
    w.put_u64(t_s);
    w.put_fixed(client_nonce);
    w.put_fixed(server_nonce);
    w.put_u64(log_seq);
    w.put_fixed(log_hash);
    w.into_bytes()
}

/// The bytes the server signs in a [`Response`]: the session (t_s and both nonces),
/// the epoch, the hash of the queries as received, and the hash of the answers
/// ([`answers_hash`]). The signature covers digests, not the ~100 KB of queries and
/// answers themselves, so that signing costs the same at every table size (v2; v1
/// signed the answers' encodings whole).
pub fn response_signed_bytes(
    t_s: u64,
    client_nonce: &[u8; 32],
    server_nonce: &[u8; 32],
    epoch: u64,
    queries_hash: &[u8; 32],
    answers_hash: &[u8; 32],
) -> Vec<u8> {
    let mut w = Writer::with_capacity(160);
    w.put_fixed(b"tacit/tracedge/v2/response\0");
    w.put_u64(t_s);
    w.put_fixed(client_nonce);
    w.put_fixed(server_nonce);
    w.put_u64(epoch);
    w.put_fixed(queries_hash);
    w.put_fixed(answers_hash);
    w.into_bytes()
}

/// BLAKE3 of `u32 n ‖ n × LweAnswer` (the answers as a [`Response`] carries them),
/// computed without building that encoding. BLAKE3 rather than SHA-256 because
/// this and [`wire_hash`] of the queries are the server's main per-session cost
/// (~100 KB each at 10⁷ rows): about 5× faster on one core with AVX-512.
pub fn answers_hash(answers: &[LweAnswer]) -> [u8; 32] {
    let mut h = blake3::Hasher::new();
    h.update(&u32::try_from(answers.len()).unwrap_or(u32::MAX).to_be_bytes());
    for a in answers {
        a.with_wire(|b| h.update(b));
    }
    h.finalize().into()
}

/// BLAKE3 of a message's encoding, computed in a per-thread buffer (no allocation
/// for large public messages such as [`Queries`]).
pub fn wire_hash<T: Encode>(m: &T) -> [u8; 32] {
    m.with_wire(|b| blake3::hash(b).into())
}

/// What a [`Response`] adds to the session transcript: its epoch, the hash of its
/// answers and its signature (which binds that hash), rather than its encoding.
pub fn response_transcript_bytes(epoch: u64, answers_hash: &[u8; 32], sig: &[u8; 64]) -> [u8; 106] {
    let mut out = [0u8; 106];
    out[..2].copy_from_slice(&TAG_RESPONSE.to_be_bytes());
    out[2..10].copy_from_slice(&epoch.to_be_bytes());
    out[10..42].copy_from_slice(answers_hash);
    out[42..].copy_from_slice(sig);
    out
}

/// SHA-256 of an encoded message.
pub fn hash_bytes(b: &[u8]) -> [u8; 32] {
    Sha256::digest(b).into()
}

impl Encode for Hello {
    fn encode(&self, w: &mut Writer) {
        w.put_envelope(TAG_HELLO);
        w.put_u64(self.t_s);
        w.put_fixed(&self.nonce);
    }
}
impl Decode for Hello {
    fn decode(r: &mut Reader<'_>) -> tacit_wire::Result<Self> {
        r.envelope(TAG_HELLO, "tracedge hello")?;
        Ok(Hello {
            t_s: r.u64()?,
            nonce: r.array("nonce")?,
        })
    }
}

impl Encode for Commit {
    fn encode(&self, w: &mut Writer) {
        w.put_envelope(TAG_COMMIT);
        self.header.put(w);
        w.put_u64(self.t_s);
        w.put_fixed(&self.server_nonce);
        w.put_u64(self.log_seq);
        w.put_fixed(&self.log_hash);
        w.put_fixed(&self.sig);
    }
}
impl Decode for Commit {
    fn decode(r: &mut Reader<'_>) -> tacit_wire::Result<Self> {
        r.envelope(TAG_COMMIT, "tracedge commit")?;
        Ok(Commit {
            header: TableHeader::read(r)?,
            t_s: r.u64()?,
            server_nonce: r.array("server nonce")?,
            log_seq: r.u64()?,
            log_hash: r.array("log hash")?,
            sig: r.array("signature")?,
        })
    }
}

impl Encode for Queries {
    fn encode(&self, w: &mut Writer) {
        w.put_envelope(TAG_QUERIES);
        w.put_u64(self.epoch);
        self.own.encode(w);
        w.put_count(self.audits.len());
        for q in &self.audits {
            q.encode(w);
        }
    }
}
impl Decode for Queries {
    fn decode(r: &mut Reader<'_>) -> tacit_wire::Result<Self> {
        let mut all = Vec::new();
        let epoch = walk_queries(r, &mut |id, bytes| {
            all.push(LweQuery {
                table_id: id,
                values: bytes
                    .chunks_exact(4)
                    .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]))
                    .collect(),
            })
        })?;
        let mut it = all.into_iter();
        let own = it
            .next()
            .ok_or_else(|| tacit_wire::Error::invalid("tracedge queries", "no own query"))?;
        Ok(Queries {
            epoch,
            own,
            audits: it.collect(),
        })
    }
}

/// Reads the structure of a [`Queries`] message, handing each query's table id and
/// the big-endian bytes of its values to `each` (own query first); returns the
/// epoch. [`Queries::decode`] and [`QueriesFrame::parse`] are both built on it, so
/// they accept exactly the same messages.
fn walk_queries<'a>(r: &mut Reader<'a>, each: &mut dyn FnMut([u8; 32], &'a [u8])) -> tacit_wire::Result<u64> {
    r.envelope(TAG_QUERIES, "tracedge queries")?;
    let epoch = r.u64()?;
    let (id, bytes) = crate::lwe::read_query_raw(r)?;
    each(id, bytes);
    let n = r.count("audit queries", MAX_AUDIT_QUERIES, 39)?;
    for _ in 0..n {
        let (id, bytes) = crate::lwe::read_query_raw(r)?;
        each(id, bytes);
    }
    Ok(epoch)
}

/// A [`Queries`] message as it arrived, checked exactly as [`Queries::from_wire`]
/// checks it but not decoded: the server hashes these bytes (they are the canonical
/// encoding, so their hash is [`wire_hash`] of the decoded message) and copies each
/// query's values from them straight into the memory it answers from.
#[derive(Clone, PartialEq, Eq)]
pub struct QueriesFrame {
    bytes: Vec<u8>,
    epoch: u64,
    /// Per query, own first: table id, offset of the values, number of values.
    queries: Vec<([u8; 32], usize, usize)>,
}

impl core::fmt::Debug for QueriesFrame {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("QueriesFrame")
            .field("epoch", &self.epoch)
            .field("queries", &self.queries.len())
            .field("bytes", &self.bytes.len())
            .finish()
    }
}

/// Bytes hashed and copied at a time by [`QueriesFrame::hash_and_write`] (they stay
/// in the core's cache between the two).
const FRAME_BLOCK: usize = 32 << 10;

impl QueriesFrame {
    /// Checks a received message; refuses whatever [`Queries::from_wire`] refuses.
    pub fn parse(bytes: Vec<u8>) -> tacit_wire::Result<Self> {
        let mut queries = Vec::new();
        let base = bytes.as_ptr() as usize;
        let mut r = Reader::new(&bytes);
        let epoch = walk_queries(&mut r, &mut |id, v| {
            queries.push((id, v.as_ptr() as usize - base, v.len() / 4))
        })?;
        r.finish()?;
        Ok(QueriesFrame { bytes, epoch, queries })
    }

    /// The frame of an encoded message (what a client sends).
    pub fn of(q: &Queries) -> Self {
        // An encoding always parses back.
        Self::parse(q.to_wire()).unwrap_or_else(|_| QueriesFrame {
            bytes: Vec::new(),
            epoch: q.epoch,
            queries: Vec::new(),
        })
    }

    /// The epoch the queries are for.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Queries in the message (own and audits).
    pub fn len(&self) -> usize {
        self.queries.len()
    }

    /// Whether there is none (never, for a parsed frame).
    pub fn is_empty(&self) -> bool {
        self.queries.is_empty()
    }

    /// The table id query `i` names.
    pub fn table_id(&self, i: usize) -> &[u8; 32] {
        &self.queries[i].0
    }

    /// How many values query `i` has.
    pub fn values_len(&self, i: usize) -> usize {
        self.queries[i].2
    }

    /// The message's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// BLAKE3 of the message (equal to [`wire_hash`] of the decoded [`Queries`]).
    pub fn hash(&self) -> [u8; 32] {
        blake3::hash(&self.bytes).into()
    }

    /// Writes query `i`'s values into `dst` (`dst.len()` values at most).
    pub fn write_values(&self, i: usize, dst: &mut [u32]) {
        let (_, off, n) = self.queries[i];
        crate::lwe::be_bytes_to_u32s(&self.bytes[off..off + 4 * n], dst);
    }

    /// [`QueriesFrame::hash`] and [`QueriesFrame::write_values`] of every query in
    /// one pass over the message: each block is hashed and then copied while it is
    /// in the cache. Query `i` goes to row `i` of `rows`.
    pub fn hash_and_write(&self, rows: &mut crate::stream::Staging<'_>) -> [u8; 32] {
        let mut h = blake3::Hasher::new();
        let mut pos = 0;
        for (i, &(_, off, n)) in self.queries.iter().enumerate() {
            h.update(&self.bytes[pos..off]);
            let out = rows.row(i);
            let mut v = 0;
            while v < n {
                let k = (FRAME_BLOCK / 4).min(n - v);
                let block = &self.bytes[off + 4 * v..off + 4 * (v + k)];
                h.update(block);
                if v < out.len() {
                    let e = (v + k).min(out.len());
                    crate::lwe::be_bytes_to_u32s(block, &mut out[v..e]);
                }
                v += k;
            }
            pos = off + 4 * n;
        }
        h.update(&self.bytes[pos..]);
        h.finalize().into()
    }

    /// The decoded message.
    pub fn to_queries(&self) -> Queries {
        // Parsed frames always decode.
        Queries::from_wire(&self.bytes).unwrap_or_else(|_| Queries {
            epoch: self.epoch,
            own: LweQuery {
                table_id: [0; 32],
                values: Vec::new(),
            },
            audits: Vec::new(),
        })
    }
}

/// The encoding of `Response{epoch, answers (each with `table_id`), sig}` built
/// straight from the answers' values, with the hash the signature covers
/// ([`answers_hash`], taken of each answer while it is in the cache); `sign` gets
/// that hash and returns the signature. The bytes equal [`Response::to_wire`].
pub fn encode_response(
    epoch: u64,
    table_id: &TableId,
    answers: &[&[u32]],
    sign: impl FnOnce(&[u8; 32]) -> [u8; 64],
) -> (Vec<u8>, [u8; 32]) {
    let len = 3 + 8 + 4 + answers.iter().map(|a| 39 + 4 * a.len()).sum::<usize>() + 64;
    let mut w = Writer::with_capacity(len);
    w.put_envelope(TAG_RESPONSE);
    w.put_u64(epoch);
    let start = w.len();
    w.put_count(answers.len());
    let mut h = blake3::Hasher::new();
    let mut hashed = start;
    for a in answers {
        w.put_envelope(crate::lwe::TAG_ANSWER);
        w.put_fixed(table_id);
        w.put_count(a.len());
        w.put_u32s_be(a);
        h.update(&w.as_bytes()[hashed..]);
        hashed = w.len();
    }
    let ahash: [u8; 32] = h.finalize().into();
    let sig = sign(&ahash);
    w.put_fixed(&sig);
    (w.into_bytes(), ahash)
}

impl Encode for Response {
    fn encode(&self, w: &mut Writer) {
        w.put_envelope(TAG_RESPONSE);
        w.put_u64(self.epoch);
        w.put_count(self.answers.len());
        for a in &self.answers {
            a.encode(w);
        }
        w.put_fixed(&self.sig);
    }
}
impl Decode for Response {
    fn decode(r: &mut Reader<'_>) -> tacit_wire::Result<Self> {
        r.envelope(TAG_RESPONSE, "tracedge response")?;
        let epoch = r.u64()?;
        let n = r.count("answers", MAX_AUDIT_QUERIES + 1, 39)?;
        let answers = (0..n)
            .map(|_| LweAnswer::decode(r))
            .collect::<tacit_wire::Result<Vec<_>>>()?;
        Ok(Response {
            epoch,
            answers,
            sig: r.array("signature")?,
        })
    }
}

pub(crate) fn put_dir_entry(w: &mut Writer, e: &DirEntry) {
    w.put_u64(e.bucket);
    w.put_count(e.keys.len());
    for k in &e.keys {
        w.put_fixed(k);
    }
    w.put_count(e.path.len());
    for h in &e.path {
        w.put_fixed(h);
    }
}

pub(crate) fn read_dir_entry(r: &mut Reader<'_>) -> tacit_wire::Result<DirEntry> {
    let bucket = r.u64()?;
    let k = r.count("bucket keys", super::keytable::BUCKET_ROWS as usize, 32)?;
    let keys = (0..k)
        .map(|_| r.array("key"))
        .collect::<tacit_wire::Result<Vec<[u8; 32]>>>()?;
    let p = r.count("merkle path", MAX_PATH, 32)?;
    let path = (0..p)
        .map(|_| r.array("hash"))
        .collect::<tacit_wire::Result<Vec<[u8; 32]>>>()?;
    Ok(DirEntry { bucket, keys, path })
}

impl Encode for ClientAuth {
    fn encode(&self, w: &mut Writer) {
        w.put_envelope(TAG_CLIENT_AUTH);
        w.put_fixed(&self.mac);
    }
}
impl Decode for ClientAuth {
    fn decode(r: &mut Reader<'_>) -> tacit_wire::Result<Self> {
        r.envelope(TAG_CLIENT_AUTH, "tracedge client auth")?;
        Ok(ClientAuth { mac: r.array("mac")? })
    }
}

impl Encode for ServerAuth {
    fn encode(&self, w: &mut Writer) {
        w.put_envelope(TAG_SERVER_AUTH);
        w.put_fixed(&self.mac);
    }
}
impl Decode for ServerAuth {
    fn decode(r: &mut Reader<'_>) -> tacit_wire::Result<Self> {
        r.envelope(TAG_SERVER_AUTH, "tracedge server auth")?;
        Ok(ServerAuth { mac: r.array("mac")? })
    }
}

impl Encode for HintRequest {
    fn encode(&self, w: &mut Writer) {
        w.put_envelope(TAG_HINT_REQUEST);
        w.put_u64(self.epoch);
    }
}
impl Decode for HintRequest {
    fn decode(r: &mut Reader<'_>) -> tacit_wire::Result<Self> {
        r.envelope(TAG_HINT_REQUEST, "tracedge hint request")?;
        Ok(HintRequest { epoch: r.u64()? })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_streamed_hashes_are_hashes_of_the_encodings() {
        let a = |v: u32, n: usize| LweAnswer {
            table_id: [v as u8; 32],
            values: (0..n as u32).map(|i| i.wrapping_mul(v)).collect(),
        };
        let answers = vec![a(3, 20_000), a(5, 7)];
        let mut w = Writer::new();
        w.put_count(answers.len());
        for x in &answers {
            x.encode(&mut w);
        }
        assert_eq!(answers_hash(&answers), <[u8; 32]>::from(blake3::hash(&w.into_bytes())));
        let q = Queries {
            epoch: 4,
            own: LweQuery {
                table_id: [1; 32],
                values: vec![9; 30_000],
            },
            audits: vec![LweQuery {
                table_id: [1; 32],
                values: vec![2; 30_000],
            }],
        };
        assert_eq!(wire_hash(&q), <[u8; 32]>::from(blake3::hash(&q.to_wire())));
        // Another answer list (one value changed) hashes differently.
        let mut other = answers.clone();
        other[0].values[19_999] ^= 1;
        assert_ne!(answers_hash(&answers), answers_hash(&other));
    }
}
