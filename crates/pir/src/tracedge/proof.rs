//! Proofs of misbehaviour (§3.4: "it can detect and prove to any third party when a
//! server has sent a key different from the committed one").
//!
//! A proof is the signed transcript plus what makes it checkable offline:
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
//! What a proof reveals: the row of the subscriber for an own-row proof, and `K` for
//! an audit proof (the table is then known to be bad; it must be retired).

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

/// What the client shows.
#[derive(Debug, Clone)]
pub enum ProofKind {
    /// The client's own row does not hold the committed key.
    OwnRow {
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
        /// Seed and selection of the audit query.
        opening: QueryOpening,
        /// The committed key.
        key: [u8; keytable::KEY_LEN],
        /// Directory buckets of the audited rows.
        entries: Vec<DirEntry>,
    },
}

/// A proof that a server cheated, checkable offline by anyone ([`MisbehaviourProof::verify`]).
#[derive(Debug, Clone)]
pub struct MisbehaviourProof {
    /// The server's Ed25519 key (compare it with the server's published identity).
    pub server_key: [u8; 32],
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
    /// What it shows.
    pub kind: ProofKind,
}

/// What a valid proof establishes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The server's Ed25519 key, hex.
    pub server_key: String,
    /// The table's epoch.
    pub epoch: u64,
    /// The finding in words.
    pub what: String,
}

impl MisbehaviourProof {
    /// Checks the proof: signatures, the regenerated queries, the decoding of the
    /// signed answers and the claim. `Ok` means the server signed something an honest
    /// server never signs.
    pub fn verify(&self) -> Result<Finding> {
        let vk = VerifyingKey::from_bytes(&self.server_key)
            .map_err(|_| Error::InvalidProof("the server key is not an Ed25519 key".into()))?;
        verify_commit(&vk, &self.hello, &self.commit)?;
        verify_response(&vk, &self.hello, &self.commit, &self.queries, &self.response)?;
        let header = self.commit.header;
        let lwe = LweClient::new(self.hint.clone())?;
        if lwe.table_id() != header.table_id {
            return Err(Error::InvalidProof("the hint is not the signed table's".into()));
        }
        let server_dh = decode_public(&header.server_dh_key)?;
        let ephemeral = decode_public(&header.ephemeral)?;
        let what = match &self.kind {
            ProofKind::OwnRow {
                row,
                opening,
                subscriber_key,
                shared,
                dleq,
                entry,
            } => {
                if opening.selection() != &Selection::row(*row) {
                    return Err(Error::InvalidProof("the own query is not for the row".into()));
                }
                let state = opening.check(&lwe, &self.queries.own)?;
                entry.verify(header.rows, &header.dir_root)?;
                if entry.key(*row) != Some(*subscriber_key) {
                    return Err(Error::InvalidProof(
                        "the directory holds another key for the row".into(),
                    ));
                }
                let y = decode_public(subscriber_key)?;
                let z = decode_public(shared)?;
                dleq_verify(&y, &ephemeral, &z, dleq, &header, *row)?;
                let decoded = lwe.decode(&state, &self.response.answers[0])?;
                let k = keytable::unmask(
                    &CompressedRistretto(*shared),
                    header.epoch,
                    *row,
                    &decoded.to_row_bytes(keytable::ROW_BYTES),
                )?;
                if key_matches(&header, &server_dh, &k) {
                    return Err(Error::InvalidProof("the row holds the committed key".into()));
                }
                format!(
                    "row {row} of the signed table (epoch {}) holds a key that does not open the signed commitment",
                    header.epoch
                )
            }
            ProofKind::Audit { opening, key, entries } => {
                let k = TableKey::from_bytes(*key);
                if !key_matches(&header, &server_dh, &k) {
                    return Err(Error::InvalidProof("the revealed key is not the committed one".into()));
                }
                let q = self
                    .queries
                    .audits
                    .first()
                    .ok_or_else(|| Error::InvalidProof("the transcript has no audit query".into()))?;
                let state = opening.check(&lwe, q)?;
                for e in entries {
                    e.verify(header.rows, &header.dir_root)?;
                }
                let expected = expected_audit(&k, &header, opening.selection(), entries, lwe.symbols())?;
                let decoded = lwe.decode(&state, &self.response.answers[1])?;
                if decoded.symbols == expected {
                    return Err(Error::InvalidProof("the audited rows hold the committed key".into()));
                }
                let rows: Vec<String> = opening
                    .selection()
                    .entries()
                    .iter()
                    .map(|(r, _)| r.to_string())
                    .collect();
                format!(
                    "the signed answer for rows {} of table epoch {} is not the sum of rows encrypting the committed key",
                    rows.join(","),
                    header.epoch
                )
            }
        };
        Ok(Finding {
            server_key: keytable::hex(&self.server_key),
            epoch: header.epoch,
            what,
        })
    }
}

impl Encode for MisbehaviourProof {
    fn encode(&self, w: &mut Writer) {
        w.put_envelope(TAG_PROOF);
        w.put_fixed(&self.server_key);
        self.hello.encode(w);
        self.commit.encode(w);
        self.queries.encode(w);
        self.response.encode(w);
        self.hint.encode(w);
        match &self.kind {
            ProofKind::OwnRow {
                row,
                opening,
                subscriber_key,
                shared,
                dleq,
                entry,
            } => {
                w.put_u8(1);
                w.put_u64(*row);
                opening.put(w);
                w.put_fixed(subscriber_key);
                w.put_fixed(shared);
                w.put_fixed(dleq);
                put_dir_entry(w, entry);
            }
            ProofKind::Audit { opening, key, entries } => {
                w.put_u8(2);
                opening.put(w);
                w.put_fixed(key);
                w.put_count(entries.len());
                for e in entries {
                    put_dir_entry(w, e);
                }
            }
        }
    }
}

impl Decode for MisbehaviourProof {
    fn decode(r: &mut Reader<'_>) -> tacit_wire::Result<Self> {
        r.envelope(TAG_PROOF, "tracedge proof of misbehaviour")?;
        let server_key = r.array("server key")?;
        let hello = Hello::decode(r)?;
        let commit = Commit::decode(r)?;
        let queries = Queries::decode(r)?;
        let response = Response::decode(r)?;
        let hint = LweHint::decode(r)?;
        let kind = match r.u8()? {
            1 => ProofKind::OwnRow {
                row: r.u64()?,
                opening: QueryOpening::read(r)?,
                subscriber_key: r.array("subscriber key")?,
                shared: r.array("shared point")?,
                dleq: r.array("dleq proof")?,
                entry: read_dir_entry(r)?,
            },
            2 => {
                let opening = QueryOpening::read(r)?;
                let key = r.array("table key")?;
                let n = r.count("directory entries", MAX_LOOKUP_BUCKETS, 16)?;
                let entries = (0..n)
                    .map(|_| read_dir_entry(r))
                    .collect::<tacit_wire::Result<Vec<_>>>()?;
                ProofKind::Audit { opening, key, entries }
            }
            _ => return Err(tacit_wire::Error::invalid("proof", "unknown kind")),
        };
        if response.answers.is_empty() {
            return Err(tacit_wire::Error::invalid("proof", "a response without answers"));
        }
        Ok(MisbehaviourProof {
            server_key,
            hello,
            commit,
            queries,
            response,
            hint,
            kind,
        })
    }
}
