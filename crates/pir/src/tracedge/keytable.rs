//! The key table (TracEdge §3.3, §5.4): row `i` holds the table key `K` encrypted to
//! the public key `Yᵢ` of the subscriber assigned to row `i` (or to the server's own
//! key for an empty row, §3.5), with *deterministic* randomness `r = H(K)` shared by
//! every row, so that anyone who holds `K` can recompute any row and audit it.
//!
//! tacit uses hashed ElGamal on ristretto255: with `R = r·B` published once for the
//! table (signed in the [`super::TableHeader`]), a row is
//!
//! ```text
//! rowᵢ = K ⊕ SHA-256("tacit/tracedge/v1/row\0" ‖ epoch ‖ i ‖ enc(r·Yᵢ))[..16]
//! ```
//!
//! 16 bytes instead of the paper's two points (§5.4 "halves the number of EC scalar
//! multiplications"; sharing `R` halves the row again). The subscriber with secret `x`
//! decrypts with `x·R = r·Yᵢ`. Building a table is one variable-base scalar
//! multiplication per row; the encodings are produced in batches with one field
//! inversion per batch (`double_and_compress_batch` on `(r/2)·Yᵢ`).

use curve25519_dalek::constants::RISTRETTO_BASEPOINT_TABLE;
use curve25519_dalek::ristretto::{CompressedRistretto, RistrettoPoint};
use curve25519_dalek::scalar::Scalar;
use rand_core::{CryptoRng, RngCore};
use rayon::prelude::*;
use sha2::{Digest, Sha256, Sha512};
use subtle::ConstantTimeEq;
use zeroize::{Zeroize, ZeroizeOnDrop};

use crate::{Error, Result};

/// Bytes of the table key `K` (128 bits, as in the paper's Table 2).
pub const KEY_LEN: usize = 16;
/// Bytes of one row of the key table.
pub const ROW_BYTES: u32 = KEY_LEN as u32;

/// The table key `K` (secret; zeroized on drop, never printed).
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub struct TableKey([u8; KEY_LEN]);

impl core::fmt::Debug for TableKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("TableKey(<secret>)")
    }
}

impl PartialEq for TableKey {
    fn eq(&self, other: &Self) -> bool {
        self.0.ct_eq(&other.0).into()
    }
}
impl Eq for TableKey {}

impl TableKey {
    /// A fresh uniformly random key.
    pub fn random<R: RngCore + CryptoRng>(rng: &mut R) -> Self {
        let mut k = [0u8; KEY_LEN];
        rng.fill_bytes(&mut k);
        TableKey(k)
    }

    /// A key from its bytes.
    pub fn from_bytes(bytes: [u8; KEY_LEN]) -> Self {
        TableKey(bytes)
    }

    /// The key's bytes (for storage, and for a proof of misbehaviour, which reveals
    /// the key of a table shown to be bad).
    pub fn as_bytes(&self) -> &[u8; KEY_LEN] {
        &self.0
    }

    /// The table's deterministic ElGamal randomness `r = H(K)` (§3.3, §5.4).
    pub fn ephemeral_scalar(&self) -> Scalar {
        hash_scalar(b"tacit/tracedge/v1/ephemeral\0", &self.0)
    }

    /// `R = H(K)·B`, published in the table header.
    pub fn ephemeral_point(&self) -> RistrettoPoint {
        RISTRETTO_BASEPOINT_TABLE * &self.ephemeral_scalar()
    }

    /// Derives the mutual-authentication key for `label` (`"client"` or `"server"`,
    /// §5.1) from `K` and the session transcript.
    pub fn session_mac_key(&self, label: &str, transcript: &[u8; 32]) -> [u8; 32] {
        let mut h = Sha256::new();
        h.update(b"tacit/tracedge/v1/session\0");
        h.update(label.as_bytes());
        h.update([0]);
        h.update(self.0);
        h.update(transcript);
        h.finalize().into()
    }
}

pub(crate) fn hash_scalar(label: &[u8], data: &[u8]) -> Scalar {
    let mut h = Sha512::new();
    h.update(label);
    h.update(data);
    Scalar::from_hash(h)
}

/// A subscriber's ElGamal key pair on ristretto255 (the secret is zeroized on drop).
#[derive(Clone)]
pub struct SubscriberSecret {
    secret: Scalar,
    public: RistrettoPoint,
}

impl Drop for SubscriberSecret {
    fn drop(&mut self) {
        self.secret.zeroize();
    }
}

impl core::fmt::Debug for SubscriberSecret {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "SubscriberSecret(<secret>, public {})", hex(&self.public_bytes()))
    }
}

impl SubscriberSecret {
    /// A fresh key pair.
    pub fn random<R: RngCore + CryptoRng>(rng: &mut R) -> Self {
        Self::from_scalar(Scalar::random(rng))
    }

    /// The key pair of a secret scalar.
    pub fn from_scalar(secret: Scalar) -> Self {
        SubscriberSecret {
            public: RISTRETTO_BASEPOINT_TABLE * &secret,
            secret,
        }
    }

    /// Decodes a secret from its 32 canonical bytes.
    pub fn from_bytes(bytes: &[u8; 32]) -> Result<Self> {
        let s: Option<Scalar> = Scalar::from_canonical_bytes(*bytes).into();
        match s {
            Some(s) if s != Scalar::ZERO => Ok(Self::from_scalar(s)),
            _ => Err(Error::InvalidKey("a secret key is a non-zero canonical scalar".into())),
        }
    }

    /// The secret's bytes (for the key file).
    pub fn to_bytes(&self) -> zeroize::Zeroizing<[u8; 32]> {
        zeroize::Zeroizing::new(self.secret.to_bytes())
    }

    pub(crate) fn scalar(&self) -> &Scalar {
        &self.secret
    }

    /// The public key `Y = x·B`.
    pub fn public(&self) -> RistrettoPoint {
        self.public
    }

    /// The public key's encoding.
    pub fn public_bytes(&self) -> [u8; 32] {
        self.public.compress().to_bytes()
    }

    /// Decrypts row `row` of table `epoch` with ephemeral point `R`: returns `K` and the
    /// Diffie–Hellman value `x·R` it used.
    pub fn decrypt_row(
        &self,
        ephemeral: &RistrettoPoint,
        epoch: u64,
        row: u64,
        ct: &[u8],
    ) -> Result<(TableKey, CompressedRistretto)> {
        let shared = (self.secret * ephemeral).compress();
        Ok((unmask(&shared, epoch, row, ct)?, shared))
    }
}

/// Decodes a public key (canonical, non-identity).
pub fn decode_public(bytes: &[u8; 32]) -> Result<RistrettoPoint> {
    let p = CompressedRistretto(*bytes)
        .decompress()
        .ok_or_else(|| Error::InvalidKey("not the canonical encoding of a ristretto255 point".into()))?;
    if p == RistrettoPoint::default() {
        return Err(Error::InvalidKey("the identity is not a public key".into()));
    }
    Ok(p)
}

/// The one-time pad of row `row` of table `epoch` for the shared point `r·Yᵢ`.
pub fn row_pad(shared: &CompressedRistretto, epoch: u64, row: u64) -> [u8; KEY_LEN] {
    let mut h = Sha256::new();
    h.update(b"tacit/tracedge/v1/row\0");
    h.update(epoch.to_be_bytes());
    h.update(row.to_be_bytes());
    h.update(shared.as_bytes());
    let d = h.finalize();
    let mut out = [0u8; KEY_LEN];
    out.copy_from_slice(&d[..KEY_LEN]);
    out
}

pub(crate) fn unmask(shared: &CompressedRistretto, epoch: u64, row: u64, ct: &[u8]) -> Result<TableKey> {
    if ct.len() != KEY_LEN {
        return Err(Error::WrongSize {
            what: "a key-table row",
            got: ct.len(),
            expected: KEY_LEN,
        });
    }
    let pad = row_pad(shared, epoch, row);
    let mut k = [0u8; KEY_LEN];
    for (o, (a, b)) in k.iter_mut().zip(pad.iter().zip(ct)) {
        *o = a ^ b;
    }
    Ok(TableKey(k))
}

/// Row `row` of table `epoch`: `key` encrypted to `public` with the randomness of
/// `ephemeral_key` (the key whose `H(·)` is the table's `r`; for an honest row it is
/// `key` itself). What an auditor recomputes.
pub fn encrypt_row(
    ephemeral_key: &TableKey,
    key: &TableKey,
    epoch: u64,
    row: u64,
    public: &RistrettoPoint,
) -> [u8; KEY_LEN] {
    let shared = (ephemeral_key.ephemeral_scalar() * public).compress();
    let pad = row_pad(&shared, epoch, row);
    let mut out = [0u8; KEY_LEN];
    for (o, (a, b)) in out.iter_mut().zip(pad.iter().zip(key.as_bytes())) {
        *o = a ^ b;
    }
    out
}

/// A second key given to some rows by a cheating server (the simulation of §3.4).
#[derive(Debug, Clone)]
pub struct Flagged<'a> {
    /// The second key.
    pub key: &'a TableKey,
    /// The rows that get it (sorted).
    pub rows: &'a [u64],
}

/// Rows per batch of [`build_rows`] (one inversion per batch).
const BATCH: usize = 512;

/// Builds all rows of table `epoch` for the public keys `keys` (row `i` encrypts to
/// `keys[i]`; empty rows carry the server's key), on all cores. `progress` is called
/// with the number of rows finished so far, from any thread.
///
/// With `flagged`, the listed rows encrypt the second key instead (with the same
/// `R`): the cheating server of the detection experiment.
pub fn build_rows(
    key: &TableKey,
    epoch: u64,
    keys: &[[u8; 32]],
    flagged: Option<Flagged<'_>>,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Vec<u8>> {
    let half_r = key.ephemeral_scalar() * Scalar::from(2u8).invert();
    let done = std::sync::atomic::AtomicU64::new(0);
    let mut out = vec![0u8; keys.len() * KEY_LEN];
    out.par_chunks_mut(BATCH * KEY_LEN)
        .zip(keys.par_chunks(BATCH))
        .enumerate()
        .try_for_each(|(b, (out, keys))| -> Result<()> {
            let mut pts = Vec::with_capacity(keys.len());
            for (k, enc) in keys.iter().enumerate() {
                let y = decode_public(enc).map_err(|e| Error::InvalidKey(format!("row {}: {e}", b * BATCH + k)))?;
                pts.push(half_r * y);
            }
            let shared = RistrettoPoint::double_and_compress_batch(&pts);
            for (k, (o, s)) in out.chunks_exact_mut(KEY_LEN).zip(&shared).enumerate() {
                fill_row(o, key, epoch, (b * BATCH + k) as u64, s, flagged.as_ref());
            }
            let n = done.fetch_add(keys.len() as u64, std::sync::atomic::Ordering::Relaxed) + keys.len() as u64;
            progress(n);
            Ok(())
        })?;
    Ok(out)
}

/// Row `row`: the key (or the flagged second key) under the pad of `shared` = `r·Yᵢ`.
fn fill_row(
    o: &mut [u8],
    key: &TableKey,
    epoch: u64,
    row: u64,
    shared: &CompressedRistretto,
    flagged: Option<&Flagged<'_>>,
) {
    let pad = row_pad(shared, epoch, row);
    let kk = match flagged {
        Some(f) if f.rows.binary_search(&row).is_ok() => f.key.as_bytes(),
        _ => key.as_bytes(),
    };
    for (x, (a, c)) in o.iter_mut().zip(pad.iter().zip(kk)) {
        *x = a ^ c;
    }
}

/// [`build_rows`] with the multiplications `r·Yᵢ` on the GPUs of `gpus` (the pads and
/// the rest on all cores): the same rows, byte for byte. A key that is no public key
/// is refused with the CPU's message. Also returns how the kernel ran.
#[cfg(feature = "gpu")]
pub fn build_rows_gpu(
    gpus: &crate::gpu::GpuSelection,
    key: &TableKey,
    epoch: u64,
    keys: &[[u8; 32]],
    flagged: Option<Flagged<'_>>,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<(Vec<u8>, crate::gpu::ristretto::MulStats)> {
    let m = crate::gpu::ristretto::mul_encode(gpus, &key.ephemeral_scalar(), keys, progress)?;
    if let Some(&i) = m.refused.first() {
        return Err(match decode_public(&keys[i]) {
            Err(e) => Error::InvalidKey(format!("row {i}: {e}")),
            Ok(_) => Error::Gpu(format!("the GPU refused the key of row {i}, which the CPU accepts")),
        });
    }
    let mut out = vec![0u8; keys.len() * KEY_LEN];
    out.par_chunks_mut(BATCH * KEY_LEN)
        .zip(m.points.par_chunks(BATCH))
        .enumerate()
        .for_each(|(b, (out, pts))| {
            for (k, (o, s)) in out.chunks_exact_mut(KEY_LEN).zip(pts).enumerate() {
                fill_row(
                    o,
                    key,
                    epoch,
                    (b * BATCH + k) as u64,
                    &CompressedRistretto(*s),
                    flagged.as_ref(),
                );
            }
        });
    Ok((out, m.stats))
}

/// [`build_rows`] on `backend`: the CPU, or the GPUs of `lwe-gpu`
/// ([`build_rows_gpu`]).
pub fn build_rows_on(
    backend: &crate::LweBackend,
    key: &TableKey,
    epoch: u64,
    keys: &[[u8; 32]],
    flagged: Option<Flagged<'_>>,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Vec<u8>> {
    match backend {
        crate::LweBackend::Cpu => build_rows(key, epoch, keys, flagged, progress),
        #[cfg(feature = "gpu")]
        crate::LweBackend::Gpu(c) => Ok(build_rows_gpu(&c.gpus, key, epoch, keys, flagged, progress)?.0),
    }
}

/// The floor that [`build_rows`] is measured against: one variable-base scalar
/// multiplication per point, on all cores, nothing else (the products are summed,
/// one addition each, and the sum is compressed once so that the work cannot be
/// optimised away).
pub fn scalar_mul_floor(scalar: &Scalar, points: &[RistrettoPoint]) -> [u8; 32] {
    points
        .par_chunks(BATCH)
        .map(|c| c.iter().fold(RistrettoPoint::default(), |acc, p| acc + scalar * p))
        .reduce(RistrettoPoint::default, |a, b| a + b)
        .compress()
        .to_bytes()
}

pub(crate) fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Rows per directory bucket: a directory lookup returns the keys of a whole bucket
/// with its Merkle path.
pub const BUCKET_ROWS: u64 = 64;

/// The directory of public keys a table was built from, as a Merkle tree over
/// buckets of [`BUCKET_ROWS`] keys. Its root is signed in the table header, so that a
/// key a client audits against (or shows in a proof) is the key the server used.
#[derive(Clone)]
pub struct Directory {
    rows: u64,
    keys: Vec<[u8; 32]>,
    levels: Vec<Vec<[u8; 32]>>,
}

impl core::fmt::Debug for Directory {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Directory")
            .field("rows", &self.rows)
            .field("root", &hex(&self.root()))
            .finish()
    }
}

fn bucket_hash(bucket: u64, keys: &[[u8; 32]]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"tacit/tracedge/v1/dir-bucket\0");
    h.update(bucket.to_be_bytes());
    h.update((keys.len() as u64).to_be_bytes());
    for k in keys {
        h.update(k);
    }
    h.finalize().into()
}

fn node_hash(l: &[u8; 32], r: &[u8; 32]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"tacit/tracedge/v1/dir-node\0");
    h.update(l);
    h.update(r);
    h.finalize().into()
}

fn root_hash(rows: u64, top: &[u8; 32]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"tacit/tracedge/v1/dir-root\0");
    h.update(rows.to_be_bytes());
    h.update(top);
    h.finalize().into()
}

impl Directory {
    /// A directory of `rows` rows that all hold `key` (memory is reserved first: a
    /// size that does not fit is an error, not an abort).
    pub fn filled(rows: u64, key: [u8; 32]) -> Result<Self> {
        let n = usize::try_from(rows).map_err(|_| Error::InvalidParams("too many rows".into()))?;
        let mut keys: Vec<[u8; 32]> = Vec::new();
        keys.try_reserve_exact(n).map_err(|_| {
            Error::InvalidParams(format!(
                "a directory of {rows} rows does not fit in this process's memory"
            ))
        })?;
        keys.resize(n, key);
        Self::build(keys)
    }

    /// The tree over `keys` (row `i` → `keys[i]`).
    pub fn build(keys: Vec<[u8; 32]>) -> Result<Self> {
        if keys.is_empty() {
            return Err(Error::InvalidParams("a directory has at least one row".into()));
        }
        let leaves: Vec<[u8; 32]> = keys
            .par_chunks(BUCKET_ROWS as usize)
            .enumerate()
            .map(|(b, ks)| bucket_hash(b as u64, ks))
            .collect();
        let mut levels = vec![leaves];
        while levels.last().map_or(0, |l| l.len()) > 1 {
            let prev = levels.last().map(|l| l.as_slice()).unwrap_or(&[]);
            let next: Vec<[u8; 32]> = prev
                .chunks(2)
                .map(|c| if c.len() == 2 { node_hash(&c[0], &c[1]) } else { c[0] })
                .collect();
            levels.push(next);
        }
        Ok(Directory {
            rows: keys.len() as u64,
            keys,
            levels,
        })
    }

    /// Number of rows.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// The key of row `i`.
    pub fn key(&self, i: u64) -> Result<[u8; 32]> {
        self.keys.get(i as usize).copied().ok_or(Error::RowOutOfRange {
            row: i,
            rows: self.rows,
        })
    }

    /// All keys.
    pub fn keys(&self) -> &[[u8; 32]] {
        &self.keys
    }

    /// The root signed in table headers.
    pub fn root(&self) -> [u8; 32] {
        let top = self.levels.last().and_then(|l| l.first()).copied().unwrap_or([0; 32]);
        root_hash(self.rows, &top)
    }

    /// Replaces the key of row `i` and updates the path to the root (O(log n)).
    pub fn set(&mut self, i: u64, key: [u8; 32]) -> Result<()> {
        if i >= self.rows {
            return Err(Error::RowOutOfRange {
                row: i,
                rows: self.rows,
            });
        }
        self.keys[i as usize] = key;
        let b = i / BUCKET_ROWS;
        let first = (b * BUCKET_ROWS) as usize;
        let last = (first + BUCKET_ROWS as usize).min(self.keys.len());
        let mut idx = b as usize;
        self.levels[0][idx] = bucket_hash(b, &self.keys[first..last]);
        for l in 1..self.levels.len() {
            let parent = idx / 2;
            let (lo, hi) = (parent * 2, parent * 2 + 1);
            let below = &self.levels[l - 1];
            let h = if hi < below.len() {
                node_hash(&below[lo], &below[hi])
            } else {
                below[lo]
            };
            self.levels[l][parent] = h;
            idx = parent;
        }
        Ok(())
    }

    /// Replaces many keys at once (each `(row, key)` in order; a row may repeat, the
    /// last one wins) and recomputes each touched bucket and node once: a table's
    /// worth of changes costs one tree build, a single change O(log n).
    pub fn set_many(&mut self, changes: &[(u64, [u8; 32])]) -> Result<()> {
        if let Some(&(row, _)) = changes.iter().find(|(r, _)| *r >= self.rows) {
            return Err(Error::RowOutOfRange { row, rows: self.rows });
        }
        if changes.len() <= 4 {
            for &(r, k) in changes {
                self.set(r, k)?;
            }
            return Ok(());
        }
        let mut touched: Vec<usize> = Vec::with_capacity(changes.len());
        for &(r, k) in changes {
            self.keys[r as usize] = k;
            touched.push((r / BUCKET_ROWS) as usize);
        }
        touched.sort_unstable();
        touched.dedup();
        let keys = &self.keys;
        let leaves: Vec<(usize, [u8; 32])> = touched
            .par_iter()
            .map(|&b| {
                let first = b * BUCKET_ROWS as usize;
                let last = (first + BUCKET_ROWS as usize).min(keys.len());
                (b, bucket_hash(b as u64, &keys[first..last]))
            })
            .collect();
        for (b, h) in leaves {
            self.levels[0][b] = h;
        }
        for l in 1..self.levels.len() {
            for t in touched.iter_mut() {
                *t /= 2;
            }
            touched.dedup();
            let (below, above) = self.levels.split_at_mut(l);
            let below = &below[l - 1];
            for &parent in &touched {
                let (lo, hi) = (parent * 2, parent * 2 + 1);
                above[0][parent] = if hi < below.len() {
                    node_hash(&below[lo], &below[hi])
                } else {
                    below[lo]
                };
            }
        }
        Ok(())
    }

    /// The bucket holding row `i` with its Merkle path.
    pub fn entry(&self, bucket: u64) -> Result<DirEntry> {
        let first = bucket
            .checked_mul(BUCKET_ROWS)
            .filter(|&f| f < self.rows)
            .ok_or_else(|| Error::Refused(format!("bucket {bucket} is outside the directory")))?;
        let last = (first + BUCKET_ROWS).min(self.rows);
        let mut path = Vec::new();
        let mut idx = bucket as usize;
        for level in &self.levels[..self.levels.len() - 1] {
            let sib = idx ^ 1;
            if sib < level.len() {
                path.push(level[sib]);
            }
            idx /= 2;
        }
        Ok(DirEntry {
            bucket,
            keys: self.keys[first as usize..last as usize].to_vec(),
            path,
        })
    }
}

/// A bucket of the directory with its Merkle path (sibling hashes, leaf level first;
/// a node without a sibling is carried up unchanged and contributes nothing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    /// Bucket number (rows `bucket·64 ..`).
    pub bucket: u64,
    /// The keys of the bucket's rows.
    pub keys: Vec<[u8; 32]>,
    /// Sibling hashes from the leaf up.
    pub path: Vec<[u8; 32]>,
}

impl DirEntry {
    /// Checks the entry against a directory of `rows` rows with root `root`.
    pub fn verify(&self, rows: u64, root: &[u8; 32]) -> Result<()> {
        let got = self.root_with(rows, &self.keys).map_err(|e| match e {
            Error::InvalidProof(m) => Error::Refused(m),
            e => e,
        })?;
        if got != *root {
            return Err(Error::Refused(format!(
                "directory bucket {}: does not match the signed directory root",
                self.bucket
            )));
        }
        Ok(())
    }

    /// The root of the directory of `rows` rows that this bucket's path leads to when
    /// the bucket holds `keys` (the path is not checked against anything: compare the
    /// result with a signed root). A proof replays log changes with it.
    pub fn root_with(&self, rows: u64, keys: &[[u8; 32]]) -> Result<[u8; 32]> {
        let bad = |why: &str| Error::InvalidProof(format!("directory bucket {}: {why}", self.bucket));
        let first = self
            .bucket
            .checked_mul(BUCKET_ROWS)
            .filter(|&f| f < rows)
            .ok_or_else(|| bad("outside the directory"))?;
        let expected = ((first + BUCKET_ROWS).min(rows) - first) as usize;
        if keys.len() != expected {
            return Err(bad("wrong number of keys"));
        }
        let mut node = bucket_hash(self.bucket, keys);
        let mut idx = self.bucket;
        let mut width = rows.div_ceil(BUCKET_ROWS);
        let mut path = self.path.iter();
        while width > 1 {
            let sib = idx ^ 1;
            if sib < width {
                let s = path.next().ok_or_else(|| bad("path too short"))?;
                node = if idx & 1 == 0 {
                    node_hash(&node, s)
                } else {
                    node_hash(s, &node)
                };
            }
            idx /= 2;
            width = width.div_ceil(2);
        }
        if path.next().is_some() {
            return Err(bad("path too long"));
        }
        Ok(root_hash(rows, &node))
    }

    /// The key of row `i` if this bucket holds it.
    pub fn key(&self, i: u64) -> Option<[u8; 32]> {
        let first = self.bucket.checked_mul(BUCKET_ROWS)?;
        let off = i.checked_sub(first)?;
        self.keys.get(off as usize).copied()
    }
}
