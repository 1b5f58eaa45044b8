//! Multiplication triples from a trusted hardware token (paper §4).
//!
//! * **Init phase** (§4.1, Fig. 4), A ↔ T only: the token derives per-sequence seeds
//!   `s_A = G_{k_A}(d)` and `s_B = G_{k_B}(d)` from its master keys and a counter `d`,
//!   expands `(a_A, b_A) = G_{s_A}(·)` and `(a_B, b_B, c_B) = G_{s_B}(·)`, and streams
//!   `c_A = (a_A ⊕ a_B) ∧ (b_A ⊕ b_B) ⊕ c_B` to A block by block. A stores it.
//! * **Setup phase** (§4.2, Fig. 5): T gives `s_A` to A and `s_B` to B, sealed under a
//!   key agreed with B's fresh ephemeral key and T's certified static key, relayed by
//!   A. Each `s_B` is released once: T records the release in its persistent state
//!   before it answers, so no crash or replay gets it twice.
//! * **Composition** (§4.3): sequences hold `2^i` triples; `n` triples take the
//!   sequences of the binary digits of `n` (rounded up to the smallest sequence).
//!
//! [`card`] is the token (sans-I/O, APDUs in and out), [`apdu`] the ISO 7816-4 codec,
//! [`holder`] the parties' side.

pub mod apdu;
pub mod card;
pub mod holder;

use crate::Error;
use crate::messages::tags;
use crate::prg::{Prg, Seed};
use crate::triples::TripleShares;
use curve25519_dalek::ristretto::{CompressedRistretto, RistrettoPoint};
use curve25519_dalek::scalar::Scalar;
use curve25519_dalek::traits::Identity;
use tacit_crypto::aead::AeadKey;
use tacit_crypto::kdf::hkdf_sha256;
use tacit_crypto::sign::{SigningKey, VerifyingKey};
use tacit_wire::{Decode, Encode, Reader, Writer};

/// Class byte of the token's proprietary instructions.
pub const CLA: u8 = 0x80;
/// Instruction: read the token's certificate.
pub const INS_GET_CERTIFICATE: u8 = 0x10;
/// Instruction: generate a sequence of `2^P1` triples; the response starts `c_A`.
pub const INS_GENERATE: u8 = 0x20;
/// Instruction: release `s_A` of a sequence.
pub const INS_RELEASE_A: u8 = 0x30;
/// Instruction: release sealed `s_B` seeds to B.
pub const INS_RELEASE_B: u8 = 0x32;
/// Instruction: erase a sequence A no longer wants (nothing of it is released).
pub const INS_DELETE: u8 = 0x34;
/// Instruction: take back a sequence whose `s_A` this session released and whose `s_B`
/// never left (its setup was abandoned before RELEASE B): it is free again.
pub const INS_GIVE_BACK: u8 = 0x36;
/// ISO GET RESPONSE (class 00).
pub const INS_GET_RESPONSE: u8 = 0xc0;

/// Smallest sequence: `2^MIN_LOG` triples (one AES block per share vector).
pub const MIN_LOG: u8 = 7;
/// Largest sequence: `2^MAX_LOG` triples.
pub const MAX_LOG: u8 = 32;
/// The most sequences one setup may use (`⌈log₂ n⌉` for `n ≤ 2^32`).
pub const MAX_SEQUENCES: usize = 40;

/// One sequence of `2^log` triples, by counter value `d`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SequenceId {
    /// The token's state value `d`.
    pub d: u64,
    /// `log₂` of the number of triples.
    pub log: u8,
}

impl SequenceId {
    /// Triples in the sequence.
    pub fn len(&self) -> usize {
        1usize << self.log
    }

    /// Always false (a sequence holds at least `2^MIN_LOG` triples).
    pub fn is_empty(&self) -> bool {
        false
    }
}

/// The sequence sizes (`log₂`) that cover `n` triples: the binary digits of `n`
/// rounded up to a multiple of `2^MIN_LOG` (paper §4.3).
pub fn decompose(n: usize) -> Vec<u8> {
    if n == 0 {
        return Vec::new();
    }
    let unit = 1usize << MIN_LOG;
    let m = n.div_ceil(unit) * unit;
    (MIN_LOG..=MAX_LOG).rev().filter(|&k| m >> k & 1 == 1).collect()
}

/// Derives a sequence seed `G_k(d)`: one AES-128 block of the master key over `d`.
pub fn derive_seed(master: &[u8; 16], d: u64) -> Seed {
    Seed(crate::prg::aes_block(master, d as u128))
}

/// Keystream state value for A's expansion.
const D_A: u64 = 0x41;
/// Keystream state value for B's expansion.
const D_B: u64 = 0x42;

/// A's part of a sequence: `(a_A, b_A)` from `s_A`. Block `2g` of the keystream holds
/// `a_A` of triples `128g..128g+128`, block `2g+1` their `b_A`.
pub fn expand_a(s_a: &Seed, log: u8, c_a: Vec<u64>) -> TripleShares {
    let n = 1usize << log;
    let w = n / 64;
    let mut ks = vec![0u64; 2 * w];
    Prg::new(s_a, D_A).fill_words(&mut ks);
    let mut a = Vec::with_capacity(w);
    let mut b = Vec::with_capacity(w);
    for g in ks.chunks_exact(4) {
        a.extend_from_slice(&g[..2]);
        b.extend_from_slice(&g[2..]);
    }
    zeroize::Zeroize::zeroize(&mut ks);
    TripleShares::from_words(n, a, b, c_a)
}

/// B's part of a sequence: `(a_B, b_B, c_B)` from `s_B`, blocks `3g, 3g+1, 3g+2`.
pub fn expand_b(s_b: &Seed, log: u8) -> TripleShares {
    let n = 1usize << log;
    let w = n / 64;
    let mut ks = vec![0u64; 3 * w];
    Prg::new(s_b, D_B).fill_words(&mut ks);
    let (mut a, mut b, mut c) = (Vec::with_capacity(w), Vec::with_capacity(w), Vec::with_capacity(w));
    for g in ks.chunks_exact(6) {
        a.extend_from_slice(&g[..2]);
        b.extend_from_slice(&g[2..4]);
        c.extend_from_slice(&g[4..]);
    }
    zeroize::Zeroize::zeroize(&mut ks);
    TripleShares::from_words(n, a, b, c)
}

/// Words of keystream per step of [`expand_a_onto`] and [`expand_b_onto`] (a fixed
/// buffer instead of one the size of the sequence).
const EXPAND_STEP: usize = 96;

/// [`expand_a`] appended straight onto `out`: `out` grows by the sequence's `2^log`
/// triples, with no intermediate vectors (the keystream is drawn a few blocks at a
/// time). `out` must hold a multiple of 64 triples (sequences of at least 2^7 appended
/// in turn do); otherwise this appends an [`expand_a`].
pub fn expand_a_onto(out: &mut TripleShares, s_a: &Seed, log: u8, c_a: &[u64]) {
    let n = 1usize << log;
    let w = n / 64;
    if !out.len.is_multiple_of(64) || c_a.len() != w {
        out.append(&expand_a(s_a, log, c_a.to_vec()));
        return;
    }
    let mut prg = Prg::new(s_a, D_A);
    let mut ks = [0u64; EXPAND_STEP];
    let mut left = 2 * w;
    while left > 0 {
        let m = left.min(EXPAND_STEP);
        prg.fill_words(&mut ks[..m]);
        for g in ks[..m].chunks_exact(4) {
            out.a.extend_from_slice(&g[..2]);
            out.b.extend_from_slice(&g[2..]);
        }
        left -= m;
    }
    zeroize::Zeroize::zeroize(&mut ks);
    out.c.extend_from_slice(c_a);
    out.len += n;
}

/// [`expand_b`] appended straight onto `out` (as [`expand_a_onto`]).
pub fn expand_b_onto(out: &mut TripleShares, s_b: &Seed, log: u8) {
    let n = 1usize << log;
    let w = n / 64;
    if !out.len.is_multiple_of(64) {
        out.append(&expand_b(s_b, log));
        return;
    }
    let mut prg = Prg::new(s_b, D_B);
    let mut ks = [0u64; EXPAND_STEP];
    let mut left = 3 * w;
    while left > 0 {
        let m = left.min(EXPAND_STEP);
        prg.fill_words(&mut ks[..m]);
        for g in ks[..m].chunks_exact(6) {
            out.a.extend_from_slice(&g[..2]);
            out.b.extend_from_slice(&g[2..4]);
            out.c.extend_from_slice(&g[4..]);
        }
        left -= m;
    }
    zeroize::Zeroize::zeroize(&mut ks);
    out.len += n;
}

/// The token's computation of `c_A` for triples `128·g0 .. 128·(g0 + out.len()/2)`
/// of a sequence: `c_A = (a_A ⊕ a_B) ∧ (b_A ⊕ b_B) ⊕ c_B`, block by block, in a fixed
/// amount of memory.
pub fn compute_c_a(s_a: &Seed, s_b: &Seed, g0: u64, out: &mut [u64]) {
    compute_c_a_with(s_a, s_b, g0, out.len(), |i, w| out[i] = w);
}

/// [`compute_c_a`] written straight into little-endian bytes (`out.len() = 8 ·
/// words`): the GET RESPONSE data, without a word buffer in between.
pub fn compute_c_a_le(s_a: &Seed, s_b: &Seed, g0: u64, out: &mut [u8]) {
    let words = out.len() / 8;
    let mut chunks = out.chunks_exact_mut(8);
    compute_c_a_with(s_a, s_b, g0, words, |_, w| {
        if let Some(c) = chunks.next() {
            c.copy_from_slice(&w.to_le_bytes());
        }
    });
}

/// The `c_A` words `g0·2 ..` in order, `words` of them (even), each handed to `put`.
fn compute_c_a_with(s_a: &Seed, s_b: &Seed, g0: u64, words: usize, mut put: impl FnMut(usize, u64)) {
    const G: usize = 64; // groups of 128 triples per pass
    let mut pa = Prg::new(s_a, D_A);
    let mut pb = Prg::new(s_b, D_B);
    pa.seek_block(2 * g0);
    pb.seek_block(3 * g0);
    let mut ka = [0u64; 4 * G];
    let mut kb = [0u64; 6 * G];
    let mut at = 0;
    while at < words {
        let groups = ((words - at) / 2).min(G);
        pa.fill_words(&mut ka[..4 * groups]);
        pb.fill_words(&mut kb[..6 * groups]);
        for g in 0..groups {
            for h in 0..2 {
                let (aa, ba) = (ka[4 * g + h], ka[4 * g + 2 + h]);
                let (ab, bb, cb) = (kb[6 * g + h], kb[6 * g + 2 + h], kb[6 * g + 4 + h]);
                put(at, (aa ^ ab) & (ba ^ bb) ^ cb);
                at += 1;
            }
        }
        if groups == 0 {
            break;
        }
    }
    zeroize::Zeroize::zeroize(&mut ka);
    zeroize::Zeroize::zeroize(&mut kb);
}

/// What kind of token a certificate speaks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TokenKind {
    /// A process on a general-purpose host (`tacit mpc token serve`): its secrets are
    /// on the host's disk (sealed with a key the host provides), so it is exactly as
    /// trustworthy as its host, which must be neither party.
    Software,
    /// A tamper-resistant device (a smartcard, paper §3.2) whose manufacturer vouches
    /// that its secrets do not leave it.
    Hardware,
}

impl TokenKind {
    fn code(self) -> u8 {
        match self {
            TokenKind::Software => 1,
            TokenKind::Hardware => 2,
        }
    }

    fn from_code(c: u8) -> tacit_wire::Result<Self> {
        match c {
            1 => Ok(TokenKind::Software),
            2 => Ok(TokenKind::Hardware),
            _ => Err(tacit_wire::Error::invalid("token kind", format!("unknown kind {c}"))),
        }
    }
}

impl std::fmt::Display for TokenKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TokenKind::Software => "software",
            TokenKind::Hardware => "hardware",
        })
    }
}

/// The longest issuer policy a certificate carries.
pub const MAX_POLICY: usize = 512;

/// The policy `tacit mpc token init` writes into a software token's certificate.
pub const SOFTWARE_POLICY: &str = "tacit software token v1: a process on a general-purpose host; \
master keys, token key and counter in a file sealed with a key the host provides; no tamper \
resistance, so whoever controls the host controls the token; the host must be neither party";

/// The token's certificate: its identifier, static key-agreement key `T = t·G`, what
/// kind of token it is, its validity and its issuer's policy, signed by the
/// manufacturer's CA (paper §3.2: "the public key is certified by a known trusted
/// third party").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenCertificate {
    /// Token identifier.
    pub token_id: [u8; 16],
    /// Static ristretto255 key `T`.
    pub public: [u8; 32],
    /// Manufacturer's name (informational).
    pub manufacturer: String,
    /// Software or hardware.
    pub kind: TokenKind,
    /// Valid from (Unix seconds).
    pub not_before: u64,
    /// Valid until (Unix seconds).
    pub not_after: u64,
    /// The issuer's policy: what the CA vouches for when it signs.
    pub policy: String,
    /// Ed25519 signature of the CA over [`TokenCertificate::signed_bytes`].
    pub signature: [u8; 64],
}

const CERT_DST: &[u8] = b"tacit-mpc token certificate v2";

/// What B requires of a token before it trusts one ([`TokenCertificate::check`]).
#[derive(Debug, Clone)]
pub struct TokenTrust {
    /// The manufacturer CA whose signature B accepts.
    pub ca: VerifyingKey,
    /// Whether B accepts software tokens (`--accept-software-token`): their holder's
    /// host can read every seed, so only a host that is neither party makes one safe.
    pub accept_software: bool,
    /// The time of the check (Unix seconds).
    pub now: u64,
}

impl TokenTrust {
    /// Hardware tokens of `ca` only, checked at `now`.
    pub fn new(ca: VerifyingKey, now: u64) -> Self {
        TokenTrust {
            ca,
            accept_software: false,
            now,
        }
    }

    /// Also accepts software tokens.
    pub fn accepting_software(mut self) -> Self {
        self.accept_software = true;
        self
    }
}

/// The fields a CA certifies (everything but the signature).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertificateFields {
    /// Token identifier.
    pub token_id: [u8; 16],
    /// Static key `T`.
    pub public: [u8; 32],
    /// Manufacturer's name.
    pub manufacturer: String,
    /// Software or hardware.
    pub kind: TokenKind,
    /// Valid from (Unix seconds).
    pub not_before: u64,
    /// Valid until (Unix seconds).
    pub not_after: u64,
    /// The issuer's policy.
    pub policy: String,
}

impl TokenCertificate {
    /// The bytes the CA signs.
    pub fn signed_bytes(f: &CertificateFields) -> Vec<u8> {
        let mut w = Writer::new();
        w.put_fixed(CERT_DST);
        w.put_fixed(&f.token_id);
        w.put_fixed(&f.public);
        w.put_str(&f.manufacturer);
        w.put_u8(f.kind.code());
        w.put_u64(f.not_before);
        w.put_u64(f.not_after);
        w.put_str(&f.policy);
        w.into_bytes()
    }

    /// The certified fields.
    pub fn fields(&self) -> CertificateFields {
        CertificateFields {
            token_id: self.token_id,
            public: self.public,
            manufacturer: self.manufacturer.clone(),
            kind: self.kind,
            not_before: self.not_before,
            not_after: self.not_after,
            policy: self.policy.clone(),
        }
    }

    /// Issues a certificate with the CA's key.
    pub fn issue(ca: &SigningKey, f: CertificateFields) -> Self {
        let signature = ca.sign(&Self::signed_bytes(&f));
        TokenCertificate {
            token_id: f.token_id,
            public: f.public,
            manufacturer: f.manufacturer,
            kind: f.kind,
            not_before: f.not_before,
            not_after: f.not_after,
            policy: f.policy,
            signature,
        }
    }

    /// Checks the CA's signature alone and returns the token's key.
    pub fn verify(&self, ca: &VerifyingKey) -> Result<RistrettoPoint, Error> {
        ca.verify(&Self::signed_bytes(&self.fields()), &self.signature)
            .map_err(|_| Error::Untrusted("its certificate is not signed by the trusted manufacturer CA".into()))?;
        decode_point(&self.public)
            .map_err(|_| Error::Untrusted("its certified key is not a valid ristretto255 element".into()))
    }

    /// What B does before it trusts a token: the CA's signature, the validity period
    /// at `trust.now`, and the kind (a software token only with
    /// [`TokenTrust::accept_software`]). Returns the token's key.
    pub fn check(&self, trust: &TokenTrust) -> Result<RistrettoPoint, Error> {
        let t = self.verify(&trust.ca)?;
        if trust.now < self.not_before {
            return Err(Error::Untrusted(format!(
                "its certificate is valid only from {} (Unix time; it is now {})",
                self.not_before, trust.now
            )));
        }
        if trust.now > self.not_after {
            return Err(Error::Untrusted(format!(
                "its certificate expired at {} (Unix time; it is now {})",
                self.not_after, trust.now
            )));
        }
        if self.kind == TokenKind::Software && !trust.accept_software {
            return Err(Error::Untrusted(
                "it is a software token, which is only as trustworthy as the host it runs on; \
                 accept one only if that host is neither party (--accept-software-token)"
                    .into(),
            ));
        }
        Ok(t)
    }
}

impl Encode for TokenCertificate {
    fn encode(&self, w: &mut Writer) {
        w.put_envelope(tags::TOKEN_CERTIFICATE);
        w.put_fixed(&self.token_id);
        w.put_fixed(&self.public);
        w.put_str(&self.manufacturer);
        w.put_u8(self.kind.code());
        w.put_u64(self.not_before);
        w.put_u64(self.not_after);
        w.put_str(&self.policy);
        w.put_fixed(&self.signature);
    }
}

impl Decode for TokenCertificate {
    fn decode(r: &mut Reader<'_>) -> tacit_wire::Result<Self> {
        r.envelope(tags::TOKEN_CERTIFICATE, "token certificate")?;
        Ok(TokenCertificate {
            token_id: r.array("token id")?,
            public: r.array("token key")?,
            manufacturer: r.str("manufacturer", 128)?.to_string(),
            kind: TokenKind::from_code(r.u8()?)?,
            not_before: r.u64()?,
            not_after: r.u64()?,
            policy: r.str("policy", MAX_POLICY)?.to_string(),
            signature: r.array("signature")?,
        })
    }
}

pub(crate) fn decode_point(b: &[u8]) -> Result<RistrettoPoint, Error> {
    let p = CompressedRistretto::from_slice(b)
        .ok()
        .and_then(|c| c.decompress())
        .ok_or_else(|| Error::Peer("sent an invalid ristretto255 element".into()))?;
    if p == RistrettoPoint::identity() {
        return Err(Error::Peer("sent the identity element".into()));
    }
    Ok(p)
}

/// B's request for its seeds, relayed by A to the token: the sequences, B's ephemeral
/// key `E = e·G` and a fresh nonce.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeedRequest {
    /// The sequences whose `s_B` B asks for, in order.
    pub sequences: Vec<SequenceId>,
    /// B's ephemeral key.
    pub ephemeral: [u8; 32],
    /// B's nonce.
    pub nonce: [u8; 32],
}

fn put_sequences(w: &mut Writer, s: &[SequenceId]) {
    w.put_count(s.len());
    for q in s {
        w.put_u64(q.d);
        w.put_u8(q.log);
    }
}

fn get_sequences(r: &mut Reader<'_>) -> tacit_wire::Result<Vec<SequenceId>> {
    let n = r.count("sequences", MAX_SEQUENCES, 9)?;
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        let d = r.u64()?;
        let log = r.u8()?;
        if !(MIN_LOG..=MAX_LOG).contains(&log) {
            return Err(tacit_wire::Error::invalid(
                "sequence size",
                format!("2^{log} triples is out of range"),
            ));
        }
        v.push(SequenceId { d, log });
    }
    let mut seen = std::collections::HashSet::new();
    if !v.iter().all(|s| seen.insert(s.d)) {
        return Err(tacit_wire::Error::invalid("sequences", "a sequence is named twice"));
    }
    Ok(v)
}

impl Encode for SeedRequest {
    fn encode(&self, w: &mut Writer) {
        w.put_envelope(tags::TOKEN_SEED_REQUEST);
        put_sequences(w, &self.sequences);
        w.put_fixed(&self.ephemeral);
        w.put_fixed(&self.nonce);
    }
}

impl Decode for SeedRequest {
    fn decode(r: &mut Reader<'_>) -> tacit_wire::Result<Self> {
        r.envelope(tags::TOKEN_SEED_REQUEST, "token seed request")?;
        Ok(SeedRequest {
            sequences: get_sequences(r)?,
            ephemeral: r.array("ephemeral key")?,
            nonce: r.array("nonce")?,
        })
    }
}

/// The largest encoded certificate.
pub const MAX_CERTIFICATE: usize = 1024;

/// A → B: the token's certificate and the sequences A will use, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenOffer {
    /// The token's certificate.
    pub certificate: TokenCertificate,
    /// The sequences.
    pub sequences: Vec<SequenceId>,
}

impl Encode for TokenOffer {
    fn encode(&self, w: &mut Writer) {
        w.put_envelope(tags::TOKEN_OFFER);
        let c = self.certificate.to_wire();
        w.put_var_bytes(&c);
        put_sequences(w, &self.sequences);
    }
}

impl Decode for TokenOffer {
    fn decode(r: &mut Reader<'_>) -> tacit_wire::Result<Self> {
        r.envelope(tags::TOKEN_OFFER, "token offer")?;
        let c = r.var_bytes("certificate", MAX_CERTIFICATE)?;
        Ok(TokenOffer {
            certificate: TokenCertificate::from_wire(c)?,
            sequences: get_sequences(r)?,
        })
    }
}

/// Token → (A) → B: the `s_B` seeds sealed to B.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeedRelease {
    /// ChaCha20-Poly1305 ciphertext of the concatenated 16-byte seeds.
    pub sealed: Vec<u8>,
}

impl Encode for SeedRelease {
    fn encode(&self, w: &mut Writer) {
        w.put_envelope(tags::TOKEN_SEED_RELEASE);
        w.put_var_bytes(&self.sealed);
    }
}

impl Decode for SeedRelease {
    fn decode(r: &mut Reader<'_>) -> tacit_wire::Result<Self> {
        r.envelope(tags::TOKEN_SEED_RELEASE, "token seed release")?;
        Ok(SeedRelease {
            sealed: r.var_bytes("sealed seeds", 16 * MAX_SEQUENCES + 16)?.to_vec(),
        })
    }
}

/// The sealing key of a seed release: `K = HKDF(Z, T ‖ E ‖ nonce ‖ sequences)` with
/// `Z = t·E = e·T` — a one-pass Diffie–Hellman key agreement in which only the holder
/// of the certified `t` can compute `K` (the elliptic-curve analogue of the paper's
/// KAS1-basic: B is sure only the token reads and writes under `K`).
pub fn seal_key(z: &RistrettoPoint, token_public: &[u8; 32], req: &SeedRequest) -> Result<AeadKey, Error> {
    let mut info = Writer::new();
    info.put_fixed(b"tacit-mpc token seal v1");
    info.put_fixed(token_public);
    info.put_fixed(&req.ephemeral);
    info.put_fixed(&req.nonce);
    put_sequences(&mut info, &req.sequences);
    let k = hkdf_sha256(b"tacit-mpc token seal", z.compress().as_bytes(), &info.into_bytes(), 32)?;
    let mut key = [0u8; 32];
    key.copy_from_slice(&k);
    Ok(AeadKey::new(key))
}

/// The additional data sealed with the seeds.
pub(crate) fn seal_aad(req: &SeedRequest) -> Vec<u8> {
    req.to_wire()
}

/// The token's static secret `t` (zeroized on drop).
#[derive(Clone)]
pub struct TokenKey(pub(crate) Scalar);

impl std::fmt::Debug for TokenKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokenKey(..)")
    }
}

impl Drop for TokenKey {
    fn drop(&mut self) {
        zeroize::Zeroize::zeroize(&mut self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Expanding onto one preallocated set of vectors gives the same shares as
    /// expanding each sequence and appending it (the paper's §4.3 merge).
    #[test]
    fn expanding_onto_equals_expanding_and_appending() {
        let logs = [13u8, 9, 8, 7];
        let total: usize = logs.iter().map(|&l| 1usize << l).sum();
        let (mut a1, mut a2) = (TripleShares::default(), TripleShares::with_capacity(total));
        let (mut b1, mut b2) = (TripleShares::default(), TripleShares::with_capacity(total));
        for (i, &log) in logs.iter().enumerate() {
            let s = Seed([i as u8 + 1; 16]);
            let c_a: Vec<u64> = (0..(1u64 << log) / 64)
                .map(|j| j.wrapping_mul(0x9e37_79b9_7f4a_7c15))
                .collect();
            a1.append(&expand_a(&s, log, c_a.clone()));
            expand_a_onto(&mut a2, &s, log, &c_a);
            b1.append(&expand_b(&s, log));
            expand_b_onto(&mut b2, &s, log);
        }
        assert!(a1 == a2 && b1 == b2);
        assert_eq!(a2.a().len(), total / 64);
    }

    #[test]
    fn decomposition_uses_binary_digits() {
        assert_eq!(decompose(1), vec![7]);
        assert_eq!(decompose(128), vec![7]);
        assert_eq!(decompose(129), vec![8]);
        assert_eq!(decompose(6400), vec![12, 11, 8]);
        let n = 22573 * 1024;
        let d = decompose(n);
        assert!(d.iter().map(|&k| 1usize << k).sum::<usize>() >= n);
        assert!(d.len() <= 25);
        assert!(decompose(0).is_empty());
    }

    #[test]
    fn token_expansion_gives_valid_triples() {
        let sa = Seed([1; 16]);
        let sb = Seed([2; 16]);
        let log = 10;
        let mut ca = vec![0u64; (1 << log) / 64];
        compute_c_a(&sa, &sb, 0, &mut ca);
        let a = expand_a(&sa, log, ca.clone());
        let b = expand_b(&sb, log);
        assert!(a.consistent_with(&b));
        // block-by-block from an offset gives the same c_A
        let mut tail = vec![0u64; 4];
        compute_c_a(&sa, &sb, 3, &mut tail);
        assert_eq!(&tail[..], &ca[6..10]);
        // The byte form the token sends is the words in little-endian order.
        let mut bytes = vec![0u8; 8 * ca.len()];
        compute_c_a_le(&sa, &sb, 0, &mut bytes);
        let words: Vec<u64> = bytes
            .chunks(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(words, ca);
    }
}
