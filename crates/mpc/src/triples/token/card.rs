//! The token itself, sans-I/O: command APDUs in, response APDUs out, its persistent
//! state written through an [`Eeprom`] before any answer that depends on it.
//!
//! | command | CLA INS P1 P2 | data | response | who may send it |
//! |---|---|---|---|---|
//! | GET CERTIFICATE | `80 10 00 00` | — | the certificate | any session |
//! | GENERATE | `80 20 log 00` | — | `d` (8 bytes) ‖ `log`, SW `6100`: `c_A` follows | any session |
//! | GET RESPONSE | `00 C0 00 00` | — | the next `≤ Ne` bytes of `c_A`; SW `6100` while more | the session that generates |
//! | RELEASE A | `80 30 00 00` | `d` | `s_A` (16 bytes) | the paired host; not for a sequence released in another live session |
//! | RELEASE B | `80 32 00 00` | seed request | the sealed `s_B` seeds | the paired host's session that released every `s_A` asked for |
//! | DELETE | `80 34 00 00` | `d` | — | the paired host; not for a sequence released in another live session |
//!
//! **Sessions side by side.** A sequence whose `s_A` one session released belongs to
//! that session until its RELEASE B, its DELETE or its end: another session (of the
//! same paired host, on another connection) is answered `6985` to RELEASE A, RELEASE
//! B and DELETE of it, so two setups never share a sequence and one that fails never
//! erases a sequence another one is using.
//!
//! The rules the paper sets (§4.1, §4.4): a sequence's `s_A` only once it is fully
//! generated, its `s_B` only after `s_A` and only once — the sequence is erased from
//! the persistent state, and that state is committed, before the sealed seeds leave.
//!
//! What the paper's card gets from its hardware and a process must do itself:
//! * **Its host.** A card answers only the phone it sits in. The token answers RELEASE
//!   A, RELEASE B and DELETE only in a [`Session`] of the *paired host* — the one
//!   whose key was fixed when the token was made ([`TokenState::host`]); the network
//!   shell ([`super::holder::TokenServer`]) admits no other key to its TLS link.
//! * **Its memory.** A card's EEPROM cannot be read or copied. [`FileEeprom`] seals the
//!   state with a key the host provides (so a copy of the file alone is useless) and
//!   keeps the last committed generation in a *rollback guard* beside that key (so an
//!   older copy of the file put back is refused). Whoever holds the key, the guard and
//!   the file can still read and rewind the token: a software token is only as
//!   trustworthy as its host.
//! * **Its space.** A sequence whose stream is abandoned (another command, or the
//!   session's end, before its last chunk) is erased at once; so is a sequence whose
//!   `s_A` a session released when that session ends without its RELEASE B (the setup
//!   was abandoned: a peer that walked away, a party a that crashed, a connection cut
//!   by its deadline); at a restart no session survives, so both kinds are dropped.
//!   At most [`MAX_LIVE_SEQUENCES`] live, and when full the oldest generated,
//!   unreleased one makes room.

use super::apdu::{self, Command, Response, sw};
use super::{
    CLA, CertificateFields, INS_DELETE, INS_GENERATE, INS_GET_CERTIFICATE, INS_GET_RESPONSE, INS_GIVE_BACK,
    INS_RELEASE_A, INS_RELEASE_B, MAX_CERTIFICATE, MAX_LOG, MIN_LOG, SeedRelease, SeedRequest, TokenCertificate,
    TokenKey, TokenKind, compute_c_a_le, decode_point, derive_seed, seal_aad, seal_key,
};
use crate::messages::tags;
use crate::prg::Seed;
use curve25519_dalek::ristretto::RistrettoPoint;
use curve25519_dalek::scalar::Scalar;
use rand_core::CryptoRngCore;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use tacit_crypto::aead::AeadKey;
use tacit_crypto::sign::SigningKey;
use tacit_wire::{Decode, Encode, Reader, Writer};
use zeroize::{Zeroize, Zeroizing};

/// Where a sequence stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SequenceState {
    /// `d` is allocated and `c_A` is being streamed.
    Generating,
    /// `c_A` was streamed completely.
    Generated,
    /// `s_A` was released; `s_B` may be released once.
    AReleased,
}

/// What a token is made with ([`TokenState::manufacture`]).
#[derive(Debug, Clone)]
pub struct TokenSpec {
    /// Manufacturer name written in the certificate.
    pub manufacturer: String,
    /// Software or hardware (what the certificate says).
    pub kind: TokenKind,
    /// Certificate validity, Unix seconds.
    pub not_before: u64,
    /// Certificate validity, Unix seconds.
    pub not_after: u64,
    /// The issuer's policy written in the certificate.
    pub policy: String,
    /// The paired host: SHA-256 of the key (SubjectPublicKeyInfo) its TLS link
    /// presents. Only that host is answered RELEASE A, RELEASE B and DELETE.
    pub host: [u8; 32],
}

impl TokenSpec {
    /// A software token paired with `host`, valid for ever, with the default policy
    /// (tests and benchmarks).
    pub fn software(manufacturer: &str, host: [u8; 32]) -> Self {
        TokenSpec {
            manufacturer: manufacturer.to_string(),
            kind: TokenKind::Software,
            not_before: 0,
            not_after: u64::MAX,
            policy: super::SOFTWARE_POLICY.to_string(),
            host,
        }
    }
}

/// The token's persistent memory: master keys, static key, certificate, the key of
/// its TLS link and its paired host, the counter and the live sequences (a sequence
/// whose `s_B` was released is erased).
#[derive(Clone, PartialEq, Eq)]
pub struct TokenState {
    /// The certificate (holds the token id and public key).
    pub certificate: TokenCertificate,
    k_a: [u8; 16],
    k_b: [u8; 16],
    secret: [u8; 32],
    /// The link's self-signed certificate (DER) and PKCS#8 key.
    link_cert: Vec<u8>,
    link_key: Zeroizing<Vec<u8>>,
    host: [u8; 32],
    next_d: u64,
    sequences: BTreeMap<u64, (u8, SequenceState)>,
}

impl std::fmt::Debug for TokenState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenState")
            .field("token_id", &hex_id(&self.certificate.token_id))
            .field("next_d", &self.next_d)
            .field("sequences", &self.sequences.len())
            .finish_non_exhaustive()
    }
}

fn hex_id(id: &[u8]) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}

impl Drop for TokenState {
    fn drop(&mut self) {
        self.k_a.zeroize();
        self.k_b.zeroize();
        self.secret.zeroize();
    }
}

/// The TLS server name of the token's link (its certificate is pinned, not named).
pub const LINK_NAME: &str = "tacit-token.invalid";

impl TokenState {
    /// Manufactures a token: fresh master keys, static key and link key, certified by
    /// `ca` as `spec` says, paired with `spec.host`.
    pub fn manufacture(ca: &SigningKey, spec: &TokenSpec, rng: &mut impl CryptoRngCore) -> Result<Self, crate::Error> {
        let mut k_a = [0u8; 16];
        let mut k_b = [0u8; 16];
        let mut token_id = [0u8; 16];
        rng.fill_bytes(&mut k_a);
        rng.fill_bytes(&mut k_b);
        rng.fill_bytes(&mut token_id);
        let t = Scalar::random(rng);
        let public = RistrettoPoint::mul_base(&t).compress().to_bytes();
        if spec.policy.len() > super::MAX_POLICY || spec.manufacturer.len() > 128 {
            return Err(crate::Error::Params(format!(
                "the policy may have {} bytes and the manufacturer's name 128",
                super::MAX_POLICY
            )));
        }
        if spec.not_after < spec.not_before {
            return Err(crate::Error::Params(
                "the certificate would expire before it is valid".into(),
            ));
        }
        let certificate = TokenCertificate::issue(
            ca,
            CertificateFields {
                token_id,
                public,
                manufacturer: spec.manufacturer.clone(),
                kind: spec.kind,
                not_before: spec.not_before,
                not_after: spec.not_after,
                policy: spec.policy.clone(),
            },
        );
        let link = tacit_net::tls::SelfSigned::generate(LINK_NAME)
            .map_err(|e| crate::Error::Params(format!("making the token's link key: {e}")))?;
        Ok(TokenState {
            certificate,
            k_a,
            k_b,
            secret: t.to_bytes(),
            link_cert: link.cert_der().to_vec(),
            link_key: Zeroizing::new(link.key_pkcs8_der().to_vec()),
            host: spec.host,
            next_d: 0,
            sequences: BTreeMap::new(),
        })
    }

    /// The live sequences.
    pub fn sequences(&self) -> impl Iterator<Item = (u64, u8, SequenceState)> + '_ {
        self.sequences.iter().map(|(&d, &(l, s))| (d, l, s))
    }

    /// The next counter value.
    pub fn next_d(&self) -> u64 {
        self.next_d
    }

    /// The paired host's key fingerprint.
    pub fn host(&self) -> &[u8; 32] {
        &self.host
    }

    /// The key the token's TLS link presents.
    pub fn link_identity(&self) -> Result<tacit_net::tls::SelfSigned, crate::Error> {
        tacit_net::tls::SelfSigned::from_parts(&self.link_cert, &self.link_key)
            .map_err(|e| crate::Error::Params(format!("the token's link key is damaged: {e}")))
    }

    /// Drops every sequence of a session that no longer exists (at a restart none
    /// does): one still marked Generating (its stream was cut, so nothing of it was
    /// released and nothing ever will be) and one marked AReleased (its setup was cut
    /// before RELEASE B; erasing it only means its `s_B` never leaves).
    fn drop_unfinished(&mut self) {
        self.sequences.retain(|_, (_, st)| *st == SequenceState::Generated);
    }
}

/// The most live sequences a token keeps (a full pool of a few hundred sessions; the
/// state stays small enough that a commit is one small write).
pub const MAX_LIVE_SEQUENCES: usize = 4096;

/// Version of the state's encoding.
const STATE_VERSION: u8 = 2;

impl Encode for TokenState {
    fn encode(&self, w: &mut Writer) {
        w.put_envelope(tags::TOKEN_STATE);
        w.put_u8(STATE_VERSION);
        w.put_var_bytes(&self.certificate.to_wire());
        w.put_fixed(&self.k_a);
        w.put_fixed(&self.k_b);
        w.put_fixed(&self.secret);
        w.put_var_bytes(&self.link_cert);
        w.put_var_bytes(&self.link_key);
        w.put_fixed(&self.host);
        w.put_u64(self.next_d);
        w.put_count(self.sequences.len());
        for (&d, &(log, st)) in &self.sequences {
            w.put_u64(d);
            w.put_u8(log);
            w.put_u8(match st {
                SequenceState::Generating => 0,
                SequenceState::Generated => 1,
                SequenceState::AReleased => 2,
            });
        }
    }
}

impl Decode for TokenState {
    fn decode(r: &mut Reader<'_>) -> tacit_wire::Result<Self> {
        r.envelope(tags::TOKEN_STATE, "token state")?;
        let v = r.u8()?;
        if v != STATE_VERSION {
            return Err(tacit_wire::Error::invalid(
                "token state",
                format!(
                    "version {v}, made by another version of tacit (this one reads {STATE_VERSION}); make a new token"
                ),
            ));
        }
        let certificate = TokenCertificate::from_wire(r.var_bytes("certificate", MAX_CERTIFICATE)?)?;
        let k_a = r.array("k_A")?;
        let k_b = r.array("k_B")?;
        let secret: [u8; 32] = r.array("token key")?;
        if Option::<Scalar>::from(Scalar::from_canonical_bytes(secret)).is_none() {
            return Err(tacit_wire::Error::invalid("token key", "not a canonical scalar"));
        }
        let link_cert = r.var_bytes("link certificate", 4096)?.to_vec();
        let link_key = Zeroizing::new(r.var_bytes("link key", 4096)?.to_vec());
        let host = r.array("paired host")?;
        let next_d = r.u64()?;
        let n = r.count("sequences", MAX_LIVE_SEQUENCES, 10)?;
        let mut sequences = BTreeMap::new();
        for _ in 0..n {
            let d = r.u64()?;
            let log = r.u8()?;
            let st = match r.u8()? {
                0 => SequenceState::Generating,
                1 => SequenceState::Generated,
                2 => SequenceState::AReleased,
                v => {
                    return Err(tacit_wire::Error::invalid(
                        "sequence state",
                        format!("unknown state {v}"),
                    ));
                }
            };
            if d >= next_d || !(MIN_LOG..=MAX_LOG).contains(&log) || sequences.insert(d, (log, st)).is_some() {
                return Err(tacit_wire::Error::invalid("sequence", "inconsistent sequence record"));
            }
        }
        Ok(TokenState {
            certificate,
            k_a,
            k_b,
            secret,
            link_cert,
            link_key,
            host,
            next_d,
            sequences,
        })
    }
}

/// The token's persistent memory: `commit` must not return before the state is
/// durable.
pub trait Eeprom {
    /// Makes `state` durable.
    fn commit(&mut self, state: &[u8]) -> std::io::Result<()>;
}

/// The key a software token's state is sealed with at rest (ChaCha20-Poly1305),
/// provided by its host: 32 bytes, kept apart from the state file (another volume, a
/// keyring, a credential the service manager hands in), so that a copy of the state
/// file alone opens to nothing.
#[derive(Clone)]
pub struct SealKey(AeadKey);

impl std::fmt::Debug for SealKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SealKey(<redacted>)")
    }
}

impl SealKey {
    /// The key from its 32 bytes.
    pub fn from_bytes(b: [u8; 32]) -> Self {
        SealKey(AeadKey::new(b))
    }

    /// A fresh random key; returns it and its bytes (to be stored by the host).
    pub fn generate(rng: &mut impl CryptoRngCore) -> (Self, Zeroizing<[u8; 32]>) {
        let mut b = Zeroizing::new([0u8; 32]);
        rng.fill_bytes(&mut *b);
        (SealKey::from_bytes(*b), b)
    }
}

/// State in a file of two slots (a card's EEPROM with atomic updates), sealed.
///
/// ```text
/// header (4 KiB): "TACITEE3" ‖ slot size (u32)
/// slot 0, slot 1: generation (u64) ‖ length (u32) ‖ SHA-256(label ‖ generation ‖ length ‖ sealed) ‖ sealed
/// sealed:         nonce (12, random) ‖ ChaCha20-Poly1305_seal-key(label ‖ generation; state)
/// guard file:     "TACITGD1" ‖ generation (u64)
/// ```
///
/// A commit writes the slot that does *not* hold the current state, in place, and
/// `fdatasync`s: one flush of a file whose size does not change; loading takes the
/// valid slot of higher generation, so a crash in the middle of a commit leaves the
/// previous state, whole. The slot digest tells a torn write (digest wrong) from a
/// wrong key (digest right, seal does not open).
///
/// **The rollback guard.** After each commit the generation is written to the guard
/// file (in place, `fdatasync`), and loading refuses a state older than the guard:
/// an earlier copy of the state file put back (to have the token release `s_B` of a
/// sequence it already erased) is refused. Keep the guard with the seal key, where
/// neither party can write; whoever can replace both rewinds the token.
#[derive(Debug)]
pub struct FileEeprom {
    path: PathBuf,
    key: SealKey,
    guard: PathBuf,
    /// The open slotted file, its slot size, the current generation and slot.
    open: Option<(std::fs::File, u64, u64, usize)>,
    /// The open guard file.
    guard_file: Option<std::fs::File>,
}

const EEPROM_MAGIC: &[u8; 8] = b"TACITEE3";
const GUARD_MAGIC: &[u8; 8] = b"TACITGD1";
const EEPROM_HEADER: u64 = 4096;
const SLOT_HEADER: usize = 8 + 4 + 32;
const SLOT_LABEL: &[u8] = b"tacit token eeprom slot v3";
const SEAL_LABEL: &[u8] = b"tacit token eeprom seal v3";

fn slot_digest(generation: u64, sealed: &[u8]) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(SLOT_LABEL);
    h.update(generation.to_be_bytes());
    h.update((sealed.len() as u32).to_be_bytes());
    h.update(sealed);
    h.finalize().into()
}

fn seal_aad_for(generation: u64) -> Vec<u8> {
    let mut a = SEAL_LABEL.to_vec();
    a.extend_from_slice(&generation.to_be_bytes());
    a
}

fn seal_state(key: &SealKey, generation: u64, state: &[u8]) -> Vec<u8> {
    let mut nonce = [0u8; 12];
    rand_core::RngCore::fill_bytes(&mut rand_core::OsRng, &mut nonce);
    let mut out = nonce.to_vec();
    out.extend_from_slice(&key.0.seal(&nonce, &seal_aad_for(generation), state));
    out
}

fn open_state(key: &SealKey, generation: u64, sealed: &[u8]) -> Option<Zeroizing<Vec<u8>>> {
    let (nonce, ct) = sealed.split_first_chunk::<12>()?;
    key.0
        .open(nonce, &seal_aad_for(generation), ct)
        .ok()
        .map(Zeroizing::new)
}

fn slot_record(generation: u64, sealed: &[u8]) -> Vec<u8> {
    let mut r = Vec::with_capacity(SLOT_HEADER + sealed.len());
    r.extend_from_slice(&generation.to_be_bytes());
    r.extend_from_slice(&(sealed.len() as u32).to_be_bytes());
    r.extend_from_slice(&slot_digest(generation, sealed));
    r.extend_from_slice(sealed);
    r
}

/// A slotted file's slot size and its intact slots as `(slot, generation, sealed)`;
/// `None` for a file without the header.
#[allow(clippy::type_complexity)]
fn read_slots(bytes: &[u8]) -> Option<(u64, Vec<(usize, u64, &[u8])>)> {
    if bytes.len() < EEPROM_HEADER as usize || &bytes[..8] != EEPROM_MAGIC {
        return None;
    }
    let slot_size = u32::from_be_bytes(bytes[8..12].try_into().ok()?) as u64;
    let mut valid = Vec::new();
    for slot in 0..2usize {
        let at = (EEPROM_HEADER + slot as u64 * slot_size) as usize;
        let Some(rec) = bytes.get(at..at + slot_size as usize) else {
            continue;
        };
        if rec.len() < SLOT_HEADER {
            continue;
        }
        let generation = u64::from_be_bytes(rec[..8].try_into().ok()?);
        let len = u32::from_be_bytes(rec[8..12].try_into().ok()?) as usize;
        let Some(sealed) = rec.get(SLOT_HEADER..SLOT_HEADER + len) else {
            continue;
        };
        if generation > 0 && rec[12..44] == slot_digest(generation, sealed) {
            valid.push((slot, generation, sealed));
        }
    }
    Some((slot_size, valid))
}

fn io_err(what: String) -> impl FnOnce(std::io::Error) -> crate::Error {
    move |e| crate::Error::io(what, e)
}

impl FileEeprom {
    /// The sealed state at `path`, its rollback guard at `guard`.
    pub fn new(path: impl Into<PathBuf>, key: SealKey, guard: impl Into<PathBuf>) -> Self {
        FileEeprom {
            path: path.into(),
            key,
            guard: guard.into(),
            open: None,
            guard_file: None,
        }
    }

    /// Writes a new token's state and its guard (neither may exist yet).
    pub fn create(&mut self, state: &TokenState) -> Result<(), crate::Error> {
        for p in [&self.path, &self.guard] {
            if p.exists() {
                return Err(crate::Error::Params(format!(
                    "{} exists; a token is made once",
                    p.display()
                )));
            }
        }
        self.format(&state.to_wire(), 1)
            .map_err(io_err(format!("writing {}", self.path.display())))?;
        self.write_guard(1)
            .map_err(io_err(format!("writing {}", self.guard.display())))
    }

    /// Loads the state: the newest slot that opens with the seal key, no older than
    /// the guard. Sequences left Generating (a stream cut by a crash) are dropped.
    pub fn load(&mut self) -> Result<TokenState, crate::Error> {
        let path = self.path.display().to_string();
        let bytes = std::fs::read(&self.path).map_err(io_err(format!("reading {path}")))?;
        let Some((slot_size, valid)) = read_slots(&bytes) else {
            return Err(crate::Error::Token(format!(
                "{path} is not a sealed token state (made by another version of tacit, or not a token's file)"
            )));
        };
        if valid.is_empty() {
            return Err(crate::Error::Token(format!(
                "the state in {path} is damaged (no valid slot)"
            )));
        }
        let mut best: Option<(usize, u64, Zeroizing<Vec<u8>>)> = None;
        for &(slot, generation, sealed) in &valid {
            if let Some(plain) = open_state(&self.key, generation, sealed)
                && best.as_ref().is_none_or(|b| generation > b.1)
            {
                best = Some((slot, generation, plain));
            }
        }
        let Some((slot, generation, plain)) = best else {
            return Err(crate::Error::Untrusted(format!(
                "the state in {path} does not open with this seal key (another token's key, or a copy sealed elsewhere)"
            )));
        };
        let floor = self.read_guard()?;
        if generation < floor {
            return Err(crate::Error::Untrusted(format!(
                "the state in {path} is generation {generation}, older than the {floor} the rollback guard {} \
                 recorded: an earlier copy of the file was put back; refusing to run a rewound token",
                self.guard.display()
            )));
        }
        let mut st = TokenState::from_wire(&plain)?;
        st.drop_unfinished();
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&self.path)
            .map_err(io_err(format!("opening {path}")))?;
        self.open = Some((file, slot_size, generation, slot));
        Ok(st)
    }

    fn read_guard(&self) -> Result<u64, crate::Error> {
        let g = self.guard.display();
        let b = std::fs::read(&self.guard).map_err(|e| {
            crate::Error::io(
                format!("reading the rollback guard {g} (it is made with the token and must stay beside its seal key)"),
                e,
            )
        })?;
        if b.len() != 16 || &b[..8] != GUARD_MAGIC {
            return Err(crate::Error::Token(format!("the rollback guard {g} is damaged")));
        }
        Ok(u64::from_be_bytes(b[8..16].try_into().unwrap_or_default()))
    }

    fn write_guard(&mut self, generation: u64) -> std::io::Result<()> {
        let mut rec = GUARD_MAGIC.to_vec();
        rec.extend_from_slice(&generation.to_be_bytes());
        if self.guard_file.is_none() {
            if !self.guard.exists() {
                return replace_atomically(&self.guard, &rec);
            }
            self.guard_file = Some(std::fs::OpenOptions::new().write(true).open(&self.guard)?);
        }
        let Some(f) = self.guard_file.as_mut() else {
            return Err(std::io::Error::other("the guard file is not open"));
        };
        write_at(f, &rec, 0)?;
        f.sync_data()
    }

    /// Writes a fresh slotted file holding `state` as generation `generation` in slot 0,
    /// by the atomic replace, and keeps it open.
    fn format(&mut self, state: &[u8], generation: u64) -> std::io::Result<()> {
        let sealed = seal_state(&self.key, generation, state);
        let slot_size = ((2 * (SLOT_HEADER + sealed.len())) as u64)
            .next_multiple_of(4096)
            .max(64 << 10);
        let mut bytes = vec![0u8; (EEPROM_HEADER + 2 * slot_size) as usize];
        bytes[..8].copy_from_slice(EEPROM_MAGIC);
        bytes[8..12].copy_from_slice(&(slot_size as u32).to_be_bytes());
        let rec = slot_record(generation, &sealed);
        bytes[EEPROM_HEADER as usize..EEPROM_HEADER as usize + rec.len()].copy_from_slice(&rec);
        replace_atomically(&self.path, &bytes)?;
        let file = std::fs::OpenOptions::new().read(true).write(true).open(&self.path)?;
        self.open = Some((file, slot_size, generation, 0));
        Ok(())
    }
}

fn write_at(f: &mut std::fs::File, bytes: &[u8], at: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        f.write_all_at(bytes, at)
    }
    #[cfg(not(unix))]
    {
        use std::io::{Seek, SeekFrom};
        f.seek(SeekFrom::Start(at))?;
        f.write_all(bytes)
    }
}

/// Replaces `path` by `bytes` atomically: a temporary file (mode 0600), fsync,
/// rename, fsync the folder.
fn replace_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".tmp");
    let tmp = path.with_file_name(name);
    {
        let mut o = std::fs::OpenOptions::new();
        o.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            o.mode(0o600);
        }
        let mut f = o.open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    if let Some(dir) = path.parent() {
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        std::fs::File::open(dir)?.sync_all()?;
    }
    Ok(())
}

impl Eeprom for FileEeprom {
    fn commit(&mut self, state: &[u8]) -> std::io::Result<()> {
        let Some((slot_size, generation)) = self.open.as_ref().map(|o| (o.1, o.2)) else {
            return Err(std::io::Error::other(
                "the token's state file is not open (load or create it first)",
            ));
        };
        let next = generation + 1;
        let sealed = seal_state(&self.key, next, state);
        if (SLOT_HEADER + sealed.len()) as u64 > slot_size {
            self.format(state, next)?;
        } else {
            let Some((file, _, generation, slot)) = &mut self.open else {
                return Err(std::io::Error::other("the EEPROM file is not open"));
            };
            let other = 1 - *slot;
            write_at(
                file,
                &slot_record(next, &sealed),
                EEPROM_HEADER + other as u64 * slot_size,
            )?;
            file.sync_data()?;
            *generation = next;
            *slot = other;
        }
        // The guard follows the state (never ahead of it: a crash between the two
        // leaves a state one generation ahead of its guard, which loads).
        self.write_guard(next)
    }
}

/// State in memory (tests and benchmarks); `fail` makes the next commits fail, as a
/// full or broken EEPROM would.
#[derive(Debug, Clone, Default)]
pub struct MemoryEeprom {
    /// The last committed state.
    pub committed: Vec<u8>,
    /// Whether commits fail.
    pub fail: bool,
}

impl Eeprom for MemoryEeprom {
    fn commit(&mut self, state: &[u8]) -> std::io::Result<()> {
        if self.fail {
            return Err(std::io::Error::other("EEPROM write failed"));
        }
        self.committed = state.to_vec();
        Ok(())
    }
}

/// A `c_A` stream in progress.
struct Stream {
    d: u64,
    s_a: Seed,
    s_b: Seed,
    next_word: usize,
    total_words: usize,
    ready: Option<Vec<u8>>,
    ready_ne: usize,
}

/// One host connection's view of the token: whether it is the paired host, and its
/// `c_A` stream. Each connection of the network shell has its own, so two sessions
/// never cut each other's streams.
pub struct Session {
    paired: bool,
    stream: Option<Stream>,
    /// The sequences whose `s_A` this session released (erased at its end if their
    /// `s_B` has not left by then).
    released: std::collections::BTreeSet<u64>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("paired", &self.paired)
            .field("streaming", &self.stream.is_some())
            .field("released", &self.released.len())
            .finish()
    }
}

impl Session {
    /// A session of the paired host (its link proved the paired key).
    pub fn paired_host() -> Self {
        Session {
            paired: true,
            stream: None,
            released: Default::default(),
        }
    }

    /// A session of anyone else: RELEASE A, RELEASE B and DELETE are refused.
    pub fn stranger() -> Self {
        Session {
            paired: false,
            stream: None,
            released: Default::default(),
        }
    }

    /// Whether this is the paired host.
    pub fn is_paired(&self) -> bool {
        self.paired
    }
}

/// The token.
pub struct Card<E: Eeprom> {
    state: TokenState,
    issued_d: u64,
    eeprom: E,
    key: TokenKey,
    /// The session of [`Card::process`] (the paired host, in process).
    local: Session,
}

impl<E: Eeprom> std::fmt::Debug for Card<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Card")
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

/// Counter values reserved per durable write.
pub const D_RESERVE: u64 = 1024;

/// Bytes of `c_A` per GET RESPONSE when the host asks for the maximum.
pub const CHUNK_BYTES: usize = apdu::MAX_NE;

impl<E: Eeprom> Card<E> {
    /// A token with `state` stored in `eeprom`. Sequences of sessions that ended with
    /// the last process (still Generating or AReleased) are dropped.
    pub fn new(mut state: TokenState, eeprom: E) -> Result<Self, crate::Error> {
        let t = Option::<Scalar>::from(Scalar::from_canonical_bytes(state.secret))
            .ok_or_else(|| crate::Error::Params("token key is not a canonical scalar".into()))?;
        state.drop_unfinished();
        Ok(Card {
            issued_d: state.next_d,
            state,
            eeprom,
            key: TokenKey(t),
            local: Session::paired_host(),
        })
    }

    /// The current state.
    pub fn state(&self) -> &TokenState {
        &self.state
    }

    /// The persistent memory.
    pub fn eeprom(&self) -> &E {
        &self.eeprom
    }

    /// Mutable access to the persistent memory (tests break it on purpose).
    pub fn eeprom_mut(&mut self) -> &mut E {
        &mut self.eeprom
    }

    fn commit(&mut self) -> bool {
        let bytes = Zeroizing::new(self.state.to_wire());
        self.eeprom.commit(&bytes).is_ok()
    }

    /// Processes one encoded command APDU of the paired host in this process and
    /// returns the encoded response.
    pub fn process(&mut self, cmd: &[u8]) -> Vec<u8> {
        let mut s = std::mem::replace(&mut self.local, Session::paired_host());
        let r = self.process_in(&mut s, cmd);
        self.local = s;
        r
    }

    /// Processes one encoded command APDU of `session`.
    pub fn process_in(&mut self, session: &mut Session, cmd: &[u8]) -> Vec<u8> {
        let resp = match Command::decode(cmd) {
            Ok(c) => self.handle(session, &c),
            Err(_) => Response::status(sw::WRONG_LENGTH),
        };
        resp.into_encoded()
    }

    /// Work the token may do while the host is busy: computes the next `c_A` chunk
    /// so that the next GET RESPONSE is answered at once.
    pub fn prefetch(&mut self) {
        prefetch(&mut self.local);
    }

    /// The end of a session: a stream it left unfinished is abandoned, and its
    /// sequence (nothing of which was released) erased; so is every sequence whose
    /// `s_A` it released and whose `s_B` has not left (its setup was abandoned, and
    /// nobody else may finish it). Neither erasure needs a commit: lost in a crash, the
    /// restart drops them anyway.
    pub fn end_session(&mut self, session: &mut Session) {
        if let Some(s) = session.stream.take() {
            self.abandon(s.d);
        }
        for d in std::mem::take(&mut session.released) {
            if let Some((_, SequenceState::AReleased)) = self.state.sequences.get(&d) {
                self.state.sequences.remove(&d);
            }
        }
    }

    fn abandon(&mut self, d: u64) {
        if let Some((_, SequenceState::Generating)) = self.state.sequences.get(&d) {
            self.state.sequences.remove(&d);
        }
    }

    fn handle(&mut self, session: &mut Session, c: &Command) -> Response {
        if c.ins == INS_GET_RESPONSE && c.cla == 0x00 {
            return self.get_response(session, c);
        }
        if c.cla != CLA {
            return Response::status(sw::CLA_NOT_SUPPORTED);
        }
        // Any other command ends the session's running stream: its sequence stays
        // Generating, can never be released, and is erased now.
        if let Some(s) = session.stream.take() {
            self.abandon(s.d);
        }
        match c.ins {
            INS_GET_CERTIFICATE => Response::ok(self.state.certificate.to_wire()),
            INS_GENERATE => self.generate(session, c),
            INS_RELEASE_A | INS_RELEASE_B | INS_DELETE | INS_GIVE_BACK if !session.paired => {
                Response::status(sw::SECURITY)
            }
            INS_RELEASE_A => self.release_a(session, c),
            INS_RELEASE_B => self.release_b(session, c),
            INS_DELETE => self.delete(session, c),
            INS_GIVE_BACK => self.give_back(session, c),
            _ => Response::status(sw::INS_NOT_SUPPORTED),
        }
    }

    /// Makes room for one more sequence: when full, erases the oldest generated
    /// sequence whose `s_A` was never released (a sequence in a setup is kept).
    fn make_room(&mut self) -> bool {
        if self.state.sequences.len() < MAX_LIVE_SEQUENCES {
            return true;
        }
        let victim = self
            .state
            .sequences
            .iter()
            .find(|(_, (_, st))| *st == SequenceState::Generated)
            .map(|(&d, _)| d);
        match victim {
            Some(d) => {
                self.state.sequences.remove(&d);
                true
            }
            None => false,
        }
    }

    fn generate(&mut self, session: &mut Session, c: &Command) -> Response {
        let log = c.p1;
        if !(MIN_LOG..=MAX_LOG).contains(&log) || c.p2 != 0 || !c.data.is_empty() {
            return Response::status(sw::WRONG_P1P2);
        }
        if !self.make_room() {
            return Response::status(sw::NO_MEMORY);
        }
        // Counter values are reserved in blocks: the persisted `next_d` is the end of
        // the block, so after a crash the token continues past every value it may
        // have handed out (d is never reused) without a durable write per sequence.
        // A sequence whose record is lost in a crash is only wasted: its s_A and s_B
        // are never released, since both releases commit before they answer.
        if self.issued_d >= self.state.next_d {
            self.state.next_d = self.issued_d + D_RESERVE;
            if !self.commit() {
                return Response::status(sw::UNKNOWN);
            }
        }
        let d = self.issued_d;
        self.issued_d += 1;
        self.state.sequences.insert(d, (log, SequenceState::Generating));
        let s_a = derive_seed(&self.state.k_a, d);
        let s_b = derive_seed(&self.state.k_b, d);
        session.stream = Some(Stream {
            d,
            s_a,
            s_b,
            next_word: 0,
            total_words: (1usize << log) / 64,
            ready: None,
            ready_ne: CHUNK_BYTES,
        });
        let mut data = d.to_be_bytes().to_vec();
        data.push(log);
        Response {
            data,
            sw: (sw::MORE as u16) << 8,
        }
    }

    fn get_response(&mut self, session: &mut Session, c: &Command) -> Response {
        let Some(s) = session.stream.as_mut() else {
            return Response::status(sw::CONDITIONS);
        };
        let ne = if c.ne == 0 { 256 } else { c.ne };
        if ne % 16 != 0 {
            return Response::status(sw::WRONG_LENGTH);
        }
        let chunk = match s.ready.take() {
            Some(ch) if ch.len() <= ne => ch,
            Some(ch) => {
                // Computed for a larger Ne: recompute at the right size.
                s.next_word -= ch.len() / 8;
                next_chunk(s, ne)
            }
            None => next_chunk(s, ne),
        };
        s.ready_ne = ne;
        if s.next_word < s.total_words {
            return Response {
                data: chunk,
                sw: (sw::MORE as u16) << 8,
            };
        }
        let d = s.d;
        session.stream = None;
        match self.state.sequences.get_mut(&d) {
            Some(e) => {
                e.1 = SequenceState::Generated;
                Response::ok(chunk)
            }
            None => Response::status(sw::NOT_FOUND),
        }
    }

    fn sequence_of(c: &Command) -> Option<u64> {
        <[u8; 8]>::try_from(c.data.as_slice()).ok().map(u64::from_be_bytes)
    }

    fn release_a(&mut self, session: &mut Session, c: &Command) -> Response {
        let Some(d) = Self::sequence_of(c) else {
            return Response::status(sw::WRONG_LENGTH);
        };
        match self.state.sequences.get_mut(&d) {
            None => Response::status(sw::NOT_FOUND),
            Some((_, SequenceState::Generating)) => Response::status(sw::CONDITIONS),
            // Released to another live session, which alone may finish or give it up:
            // answering again would let two setups use one sequence, and the first
            // RELEASE B (or the other's DELETE or end) would erase it under the other.
            Some((_, SequenceState::AReleased)) if !session.released.contains(&d) => Response::status(sw::CONDITIONS),
            Some(e) => {
                // Not committed here: this flag only makes RELEASE B wait for RELEASE
                // A. Lost in a crash, the sequence reads Generated (or is dropped as
                // unfinished) again, A asks for the same s_A once more (or the
                // sequence is wasted), and s_B still leaves at most once, because
                // RELEASE B commits the erasure before answering. The next commit
                // stores it.
                e.1 = SequenceState::AReleased;
                let seed = derive_seed(&self.state.k_a, d).0.to_vec();
                // The session's record stays small: what RELEASE B or DELETE has
                // erased since (in any session) leaves it when it fills.
                if session.released.len() >= MAX_LIVE_SEQUENCES {
                    let live = &self.state.sequences;
                    session
                        .released
                        .retain(|d| matches!(live.get(d), Some((_, SequenceState::AReleased))));
                }
                session.released.insert(d);
                Response::ok(seed)
            }
        }
    }

    fn delete(&mut self, session: &mut Session, c: &Command) -> Response {
        let Some(d) = Self::sequence_of(c) else {
            return Response::status(sw::WRONG_LENGTH);
        };
        match self.state.sequences.get(&d) {
            None => Response::status(sw::NOT_FOUND),
            // Another session is streaming it; it erases it itself if it gives up.
            Some((_, SequenceState::Generating)) => Response::status(sw::CONDITIONS),
            // Another live session's setup holds it; its end erases it if it fails.
            Some((_, SequenceState::AReleased)) if !session.released.contains(&d) => Response::status(sw::CONDITIONS),
            Some(_) => {
                // Nothing of it leaves any more, so the erasure needs no commit of its
                // own (lost in a crash, the sequence is only live again).
                self.state.sequences.remove(&d);
                Response::ok(Vec::new())
            }
        }
    }

    /// GIVE BACK: a sequence whose `s_A` this session released and whose `s_B` never
    /// left is Generated again, free for any session (its setup was abandoned before
    /// RELEASE B: a peer left after the offer). Nothing is released and nothing that
    /// was released comes back: RELEASE B erases a sequence before it answers, so an
    /// AReleased sequence's `s_B` has never left, and `s_A` is the paired host's
    /// anyway. Only the session that released it may give it back (6985 otherwise,
    /// like RELEASE A, RELEASE B and DELETE); a Generated one stays as it is.
    fn give_back(&mut self, session: &mut Session, c: &Command) -> Response {
        let Some(d) = Self::sequence_of(c) else {
            return Response::status(sw::WRONG_LENGTH);
        };
        match self.state.sequences.get_mut(&d) {
            None => Response::status(sw::NOT_FOUND),
            Some((_, SequenceState::Generating)) => Response::status(sw::CONDITIONS),
            Some((_, SequenceState::AReleased)) if !session.released.contains(&d) => Response::status(sw::CONDITIONS),
            Some(e) => {
                // Not committed: AReleased is never committed on its own either (a
                // restart drops AReleased sequences; this one is only live again).
                e.1 = SequenceState::Generated;
                session.released.remove(&d);
                Response::ok(Vec::new())
            }
        }
    }

    fn release_b(&mut self, session: &mut Session, c: &Command) -> Response {
        let Ok(req) = SeedRequest::from_wire(&c.data) else {
            return Response::status(sw::WRONG_DATA);
        };
        let Ok(e) = decode_point(&req.ephemeral) else {
            return Response::status(sw::WRONG_DATA);
        };
        for q in &req.sequences {
            match self.state.sequences.get(&q.d) {
                None => return Response::status(sw::NOT_FOUND),
                // Only the session that released s_A finishes the sequence.
                Some(&(log, st))
                    if log != q.log || st != SequenceState::AReleased || !session.released.contains(&q.d) =>
                {
                    return Response::status(sw::CONDITIONS);
                }
                Some(_) => {}
            }
        }
        if req.sequences.is_empty() {
            return Response::status(sw::WRONG_DATA);
        }
        // Paper §4.1: "delete the state value d as soon as s_B has been sent out" —
        // here before: the erasure is durable before the seeds leave the token.
        for q in &req.sequences {
            self.state.sequences.remove(&q.d);
            session.released.remove(&q.d);
        }
        if !self.commit() {
            return Response::status(sw::UNKNOWN);
        }
        let z = e * self.key.0;
        let Ok(key) = seal_key(&z, &self.state.certificate.public, &req) else {
            return Response::status(sw::UNKNOWN);
        };
        let mut seeds = Vec::with_capacity(16 * req.sequences.len());
        for q in &req.sequences {
            seeds.extend_from_slice(&derive_seed(&self.state.k_b, q.d).0);
        }
        let sealed = key.seal(&[0u8; 12], &seal_aad(&req), &seeds);
        seeds.zeroize();
        Response::ok(SeedRelease { sealed }.to_wire())
    }
}

/// Computes the session's next `c_A` chunk ahead of its GET RESPONSE (needs only the
/// session's stream, not the card).
pub fn prefetch(session: &mut Session) {
    if let Some(s) = session.stream.as_mut()
        && s.ready.is_none()
        && s.next_word < s.total_words
    {
        let ne = s.ready_ne.max(16);
        s.ready = Some(next_chunk(s, ne));
    }
}

fn next_chunk(s: &mut Stream, ne: usize) -> Vec<u8> {
    let words = (ne / 8).min(s.total_words - s.next_word);
    // c_A is computed in groups of 128 triples (two words).
    let words = if words % 2 == 1 && words > 1 {
        words - 1
    } else {
        words.max(2)
    };
    // Two bytes spare for the status word (`Response::into_encoded`).
    let mut out = Vec::with_capacity(words * 8 + 2);
    out.resize(words * 8, 0);
    compute_c_a_le(&s.s_a, &s.s_b, (s.next_word / 2) as u64, &mut out);
    s.next_word += words;
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;

    fn eeprom_dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("tacit-eeprom-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// One token's state with `n` generated sequences (the same token each time: its
    /// link key comes from the system's randomness, so it is made once).
    fn state_with(n: usize) -> TokenState {
        static BASE: std::sync::OnceLock<TokenState> = std::sync::OnceLock::new();
        let mut st = BASE
            .get_or_init(|| {
                let mut rng = ChaCha20Rng::seed_from_u64(3);
                let ca = SigningKey::generate(&mut rng);
                TokenState::manufacture(&ca, &TokenSpec::software("test", [7; 32]), &mut rng).unwrap()
            })
            .clone();
        st.next_d = 10 * n as u64 + 10;
        for k in 0..n as u64 {
            st.sequences.insert(10 * k, (MIN_LOG, SequenceState::Generated));
        }
        st
    }

    fn key() -> SealKey {
        SealKey::from_bytes([5; 32])
    }

    /// A file store for `state_with(1)`, created, in `d`.
    fn created(d: &Path) -> (FileEeprom, PathBuf, PathBuf) {
        let (path, guard) = (d.join("state"), d.join("seal.guard"));
        let mut e = FileEeprom::new(&path, key(), &guard);
        e.create(&state_with(1)).unwrap();
        (e, path, guard)
    }

    fn load(path: &Path, guard: &Path) -> Result<TokenState, crate::Error> {
        FileEeprom::new(path, key(), guard).load()
    }

    /// Every commit is what a later load sees; a state that outgrows its slot makes
    /// the file bigger; the file holds none of the state's secrets in the clear.
    #[test]
    fn file_eeprom_keeps_the_last_commit() {
        let d = eeprom_dir("keeps");
        let (_, path, guard) = created(&d);
        assert_eq!(load(&path, &guard).unwrap().to_wire(), state_with(1).to_wire());
        for n in [2, 3, 4, 5, 4000, 7, 8] {
            let mut e = FileEeprom::new(&path, key(), &guard);
            e.load().unwrap();
            e.commit(&state_with(n).to_wire()).unwrap();
            assert_eq!(load(&path, &guard).unwrap().to_wire(), state_with(n).to_wire(), "{n}");
        }
        let bytes = std::fs::read(&path).unwrap();
        let st = state_with(8);
        for secret in [&st.k_a[..], &st.k_b[..], &st.secret[..]] {
            assert!(
                !bytes.windows(secret.len()).any(|w| w == secret),
                "a secret is in the clear"
            );
        }
        let _ = std::fs::remove_dir_all(&d);
    }

    /// Item 1 of issue 27, "a copied file alone is useless": a copy of the state file
    /// opens to nothing without the host's seal key (the error says so in one line),
    /// and k_B, which gives every s_B, is nowhere in it.
    #[test]
    fn a_copied_state_file_does_not_open_without_the_seal_key() {
        let d = eeprom_dir("copied");
        let (_, path, guard) = created(&d);
        let e = FileEeprom::new(&path, SealKey::from_bytes([6; 32]), &guard)
            .load()
            .unwrap_err()
            .to_string();
        assert!(e.contains("does not open with this seal key"), "{e}");
        assert_eq!(e.lines().count(), 1);
        let bytes = std::fs::read(&path).unwrap();
        let k_b = state_with(1).k_b;
        assert!(!bytes.windows(16).any(|w| w == k_b));
        let _ = std::fs::remove_dir_all(&d);
    }

    /// Item 1 of issue 27, the rollback: an earlier copy of the state file put back
    /// (the sequences it still lists were released and erased since) is refused,
    /// because the guard beside the seal key recorded a later generation.
    #[test]
    fn a_state_file_put_back_is_refused() {
        let d = eeprom_dir("rollback");
        let (mut e, path, guard) = created(&d);
        e.load().unwrap();
        e.commit(&state_with(3).to_wire()).unwrap();
        let old = std::fs::read(&path).unwrap();
        e.commit(&state_with(1).to_wire()).unwrap();
        e.commit(&state_with(2).to_wire()).unwrap();
        std::fs::write(&path, &old).unwrap();
        let err = load(&path, &guard).unwrap_err().to_string();
        assert!(err.contains("rollback guard") && err.contains("put back"), "{err}");
        // Without its guard the token does not start either.
        std::fs::remove_file(&guard).unwrap();
        let err = load(&path, &guard).unwrap_err().to_string();
        assert!(err.contains("rollback guard"), "{err}");
        let _ = std::fs::remove_dir_all(&d);
    }

    /// Damaged or foreign files are one-line errors, never a panic or a state made up
    /// from garbage: random bytes behind the header, truncations, absurd slot sizes.
    #[test]
    fn damaged_eeprom_files_are_errors() {
        use rand_core::RngCore;
        let d = eeprom_dir("damaged");
        let (mut e, path, guard) = created(&d);
        e.load().unwrap();
        e.commit(&state_with(2).to_wire()).unwrap();
        let good = std::fs::read(&path).unwrap();
        let mut rng = ChaCha20Rng::seed_from_u64(9);
        for i in 0..200 {
            let mut bytes = good.clone();
            match i % 4 {
                0 => bytes.truncate(rng.next_u32() as usize % good.len()),
                1 => {
                    for _ in 0..8 {
                        let at = rng.next_u32() as usize % bytes.len();
                        bytes[at] = rng.next_u32() as u8;
                    }
                }
                2 => bytes[8..12].copy_from_slice(&rng.next_u32().to_be_bytes()),
                _ => {
                    let at = EEPROM_HEADER as usize + 8;
                    bytes[at..at + 4].copy_from_slice(&rng.next_u32().to_be_bytes());
                }
            }
            std::fs::write(&path, &bytes).unwrap();
            match load(&path, &guard) {
                Ok(st) => assert!(st.to_wire() == state_with(2).to_wire() || st.to_wire() == state_with(1).to_wire()),
                Err(e) => assert_eq!(e.to_string().lines().count(), 1, "{e}"),
            }
        }
        let _ = std::fs::remove_dir_all(&d);
    }

    /// A commit torn by a crash (the newer slot damaged) leaves the previous state;
    /// with both slots damaged the load says so instead of inventing a state.
    #[test]
    fn a_torn_commit_leaves_the_previous_state() {
        let d = eeprom_dir("torn");
        let (mut e, path, guard) = created(&d);
        e.load().unwrap();
        let mut bytes = std::fs::read(&path).unwrap();
        let slot_size = u32::from_be_bytes(bytes[8..12].try_into().unwrap()) as usize;
        // The crash: state 2 written to slot 1 but torn before the guard moved on.
        let sealed = seal_state(&key(), 2, &state_with(2).to_wire());
        let mut rec = slot_record(2, &sealed);
        let last = rec.len() - 1;
        rec[last] ^= 1;
        let at = EEPROM_HEADER as usize + slot_size;
        bytes[at..at + rec.len()].copy_from_slice(&rec);
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(load(&path, &guard).unwrap().to_wire(), state_with(1).to_wire());
        // The next commit goes to the damaged slot, not over the good one.
        let mut e = FileEeprom::new(&path, key(), &guard);
        e.load().unwrap();
        e.commit(&state_with(3).to_wire()).unwrap();
        assert_eq!(load(&path, &guard).unwrap().to_wire(), state_with(3).to_wire());
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[EEPROM_HEADER as usize + 20] ^= 1;
        bytes[EEPROM_HEADER as usize + slot_size + 20] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        let err = load(&path, &guard).unwrap_err().to_string();
        assert!(err.contains("damaged"), "{err}");
        let _ = std::fs::remove_dir_all(&d);
    }

    fn card() -> Card<MemoryEeprom> {
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        let ca = SigningKey::generate(&mut rng);
        let st = TokenState::manufacture(&ca, &TokenSpec::software("test", [7; 32]), &mut rng).unwrap();
        Card::new(st, MemoryEeprom::default()).unwrap()
    }

    fn cmd(ins: u8, p1: u8, data: Vec<u8>, ne: usize) -> Vec<u8> {
        Command {
            cla: if ins == INS_GET_RESPONSE { 0 } else { CLA },
            ins,
            p1,
            p2: 0,
            data,
            ne,
        }
        .encode()
    }

    fn sw_in(c: &mut Card<MemoryEeprom>, s: &mut Session, b: &[u8]) -> u16 {
        Response::decode(&c.process_in(s, b)).unwrap().sw
    }

    #[test]
    fn state_roundtrips_and_counter_is_committed_first() {
        let mut c = card();
        let r = Response::decode(&c.process(&cmd(INS_GENERATE, 7, vec![], 9))).unwrap();
        assert_eq!(r.sw, 0x6100);
        let saved = TokenState::from_wire(&c.eeprom().committed).unwrap();
        // the reserved block is durable before the first value is handed out
        assert_eq!(saved.next_d(), D_RESERVE);
        // a token restarted from it continues past the block
        let again = Card::new(saved, MemoryEeprom::default()).unwrap();
        assert_eq!(again.issued_d, D_RESERVE);
    }

    #[test]
    fn bad_commands_get_status_words() {
        let mut c = card();
        let sw_of = |c: &mut Card<MemoryEeprom>, b: &[u8]| Response::decode(&c.process(b)).unwrap().sw;
        assert_eq!(sw_of(&mut c, &[0x80]), sw::WRONG_LENGTH);
        assert_eq!(sw_of(&mut c, &[0x81, 0x10, 0, 0]), sw::CLA_NOT_SUPPORTED);
        assert_eq!(sw_of(&mut c, &[0x80, 0x99, 0, 0]), sw::INS_NOT_SUPPORTED);
        assert_eq!(sw_of(&mut c, &[0x80, INS_GENERATE, 3, 0]), sw::WRONG_P1P2);
        assert_eq!(sw_of(&mut c, &[0x00, INS_GET_RESPONSE, 0, 0, 0]), sw::CONDITIONS);
        assert_eq!(
            sw_of(&mut c, &[0x80, INS_RELEASE_A, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 9]),
            sw::NOT_FOUND
        );
        assert_eq!(sw_of(&mut c, &[0x80, INS_RELEASE_B, 0, 0, 1, 0]), sw::WRONG_DATA);
        assert_eq!(sw_of(&mut c, &[0x80, INS_DELETE, 0, 0, 1, 0]), sw::WRONG_LENGTH);
    }

    /// Fills one sequence of 2^7 triples in `s` and returns its `d`.
    fn fill(c: &mut Card<MemoryEeprom>, s: &mut Session) -> u64 {
        let r = Response::decode(&c.process_in(s, &cmd(INS_GENERATE, 7, vec![], 9))).unwrap();
        let d = u64::from_be_bytes(r.data[..8].try_into().unwrap());
        assert_eq!(sw_in(c, s, &cmd(INS_GET_RESPONSE, 0, vec![], 65536)), sw::OK);
        d
    }

    /// Item 2 of issue 27 (in the card): a session that is not the paired host's gets
    /// neither s_A nor s_B and cannot erase anything, even for a sequence it generated
    /// itself; the paired host's session gets s_A.
    #[test]
    fn only_the_paired_host_is_answered_release_a() {
        let mut c = card();
        let mut probe = Session::stranger();
        let mut host = Session::paired_host();
        let d = fill(&mut c, &mut host);
        let mine = fill(&mut c, &mut probe);
        for dd in [d, mine] {
            let data = dd.to_be_bytes().to_vec();
            assert_eq!(
                sw_in(&mut c, &mut probe, &cmd(INS_RELEASE_A, 0, data.clone(), 16)),
                sw::SECURITY
            );
            assert_eq!(sw_in(&mut c, &mut probe, &cmd(INS_DELETE, 0, data, 0)), sw::SECURITY);
        }
        assert_eq!(
            sw_in(&mut c, &mut probe, &cmd(INS_RELEASE_B, 0, vec![0; 80], 65536)),
            sw::SECURITY
        );
        assert_eq!(
            sw_in(&mut c, &mut host, &cmd(INS_RELEASE_A, 0, d.to_be_bytes().to_vec(), 16)),
            sw::OK
        );
    }

    /// Item 6 of issue 27: abandoned GENERATEs do not fill the token. A stream cut by
    /// another command or by the session's end is erased at once; a token full of
    /// generated, unused sequences evicts the oldest; DELETE erases one on request;
    /// sequences left Generating by a crash are dropped at the restart.
    #[test]
    fn abandoned_and_unused_sequences_do_not_brick_the_token() {
        let mut c = card();
        let mut s = Session::paired_host();
        // 3 × MAX_LIVE abandoned GENERATEs, half cut by the next GENERATE, half by the
        // session's end.
        for i in 0..3 * MAX_LIVE_SEQUENCES {
            assert_eq!(sw_in(&mut c, &mut s, &cmd(INS_GENERATE, 7, vec![], 9)), 0x6100, "{i}");
            if i % 2 == 0 {
                c.end_session(&mut s);
                s = Session::paired_host();
            }
        }
        c.end_session(&mut s);
        assert_eq!(c.state().sequences().count(), 0);
        // A full token of finished, unused sequences still generates (the oldest goes).
        let mut s = Session::paired_host();
        let first = fill(&mut c, &mut s);
        for _ in 1..MAX_LIVE_SEQUENCES {
            fill(&mut c, &mut s);
        }
        assert_eq!(c.state().sequences().count(), MAX_LIVE_SEQUENCES);
        let newest = fill(&mut c, &mut s);
        assert_eq!(c.state().sequences().count(), MAX_LIVE_SEQUENCES);
        assert!(c.state().sequences().all(|(d, _, _)| d != first));
        // DELETE erases one; a second DELETE finds nothing.
        let data = newest.to_be_bytes().to_vec();
        assert_eq!(sw_in(&mut c, &mut s, &cmd(INS_DELETE, 0, data.clone(), 0)), sw::OK);
        assert_eq!(sw_in(&mut c, &mut s, &cmd(INS_DELETE, 0, data, 0)), sw::NOT_FOUND);
        // A crash mid-stream: the restarted token drops the unfinished sequence.
        let mut c = card();
        let mut s = Session::paired_host();
        assert_eq!(sw_in(&mut c, &mut s, &cmd(INS_GENERATE, 7, vec![], 9)), 0x6100);
        let mut st = c.state().clone();
        assert_eq!(st.sequences().count(), 1);
        st.drop_unfinished();
        assert_eq!(
            Card::new(c.state().clone(), MemoryEeprom::default())
                .unwrap()
                .state()
                .sequences()
                .count(),
            0
        );
        assert_eq!(st.sequences().count(), 0);
    }

    /// Review of issue 27 (in the card): a setup abandoned after RELEASE A — a peer
    /// that walked away, a party a that crashed or was cut by its deadline, without
    /// the DELETE an orderly party a sends — leaves nothing behind: the sequences whose
    /// s_A a session released are erased when that session ends, and a restarted token
    /// drops every AReleased sequence (no session survives a restart). Sequences
    /// another session released, or that were only generated, stay.
    #[test]
    fn a_session_that_ends_after_release_a_leaves_no_sequence_behind() {
        let mut c = card();
        let (mut maker, mut other) = (Session::paired_host(), Session::paired_host());
        let ds: Vec<u64> = (0..3).map(|_| fill(&mut c, &mut maker)).collect();
        let kept = fill(&mut c, &mut maker);
        let mut s = Session::paired_host();
        for &d in &ds {
            assert_eq!(
                sw_in(&mut c, &mut s, &cmd(INS_RELEASE_A, 0, d.to_be_bytes().to_vec(), 16)),
                sw::OK
            );
        }
        let theirs = fill(&mut c, &mut other);
        assert_eq!(
            sw_in(
                &mut c,
                &mut other,
                &cmd(INS_RELEASE_A, 0, theirs.to_be_bytes().to_vec(), 16)
            ),
            sw::OK
        );
        assert_eq!(c.state().sequences().count(), 5);
        c.end_session(&mut s);
        let left: Vec<u64> = c.state().sequences().map(|(d, _, _)| d).collect();
        assert_eq!(left, vec![kept, theirs]);
        // The restart: `other` never ended, but its sequence goes too.
        let again = Card::new(c.state().clone(), MemoryEeprom::default()).unwrap();
        let left: Vec<u64> = again.state().sequences().map(|(d, _, _)| d).collect();
        assert_eq!(left, vec![kept]);
    }

    /// Review of the issue-27 fixes (concurrent sessions on one pool): a second
    /// session — a hostile one, or an honest one whose pool offered the same sequence
    /// — asking RELEASE A for a sequence another live session released is refused, and
    /// so are its RELEASE B and DELETE of it; its end leaves it alone. The owner still
    /// finishes it (RELEASE B once), and asking RELEASE A again in its own session is
    /// answered (a retry changes nothing: the same `s_A`). Before the fix the token
    /// answered 9000 to the second RELEASE A.
    #[test]
    fn a_sequence_released_to_one_session_is_refused_to_another() {
        let mut c = card();
        let (mut owner, mut other) = (Session::paired_host(), Session::paired_host());
        let d = fill(&mut c, &mut owner);
        let data = d.to_be_bytes().to_vec();
        assert_eq!(
            sw_in(&mut c, &mut owner, &cmd(INS_RELEASE_A, 0, data.clone(), 16)),
            sw::OK
        );
        assert_eq!(
            sw_in(&mut c, &mut other, &cmd(INS_RELEASE_A, 0, data.clone(), 16)),
            sw::CONDITIONS,
            "a second live session was answered RELEASE A for a sequence another one holds"
        );
        assert_eq!(
            sw_in(&mut c, &mut other, &cmd(INS_DELETE, 0, data.clone(), 0)),
            sw::CONDITIONS
        );
        let mut rng = ChaCha20Rng::seed_from_u64(4);
        let e = Scalar::random(&mut rng);
        let req = SeedRequest {
            sequences: vec![super::super::SequenceId { d, log: 7 }],
            ephemeral: RistrettoPoint::mul_base(&e).compress().to_bytes(),
            nonce: [1; 32],
        };
        assert_eq!(
            sw_in(&mut c, &mut other, &cmd(INS_RELEASE_B, 0, req.to_wire(), 65536)),
            sw::CONDITIONS
        );
        c.end_session(&mut other);
        assert_eq!(c.state().sequences().count(), 1, "another session's end erased it");
        assert_eq!(sw_in(&mut c, &mut owner, &cmd(INS_RELEASE_A, 0, data, 16)), sw::OK);
        assert_eq!(
            sw_in(&mut c, &mut owner, &cmd(INS_RELEASE_B, 0, req.to_wire(), 65536)),
            sw::OK
        );
        assert_eq!(c.state().sequences().count(), 0);
    }

    /// GIVE BACK (rev27: a peer walking away after the offer burnt the pool) turns a
    /// sequence its own session released back into a free one, and is no way to use
    /// a triple twice: a stranger is refused (6982), another session is refused
    /// (6985: the ownership of RELEASE A holds), a sequence whose `s_B` left is gone
    /// (6A88: RELEASE B erased it before answering, so nothing released comes back),
    /// and a sequence given back releases `s_B` once, to whichever session takes it
    /// next. Giving back what is already free changes nothing.
    #[test]
    fn give_back_returns_only_the_sessions_own_unfinished_sequence() {
        let mut c = card();
        let (mut owner, mut other, mut probe) = (Session::paired_host(), Session::paired_host(), Session::stranger());
        let d = fill(&mut c, &mut owner);
        let data = d.to_be_bytes().to_vec();
        let give_back = |data: &[u8]| cmd(INS_GIVE_BACK, 0, data.to_vec(), 0);
        assert_eq!(
            sw_in(&mut c, &mut owner, &give_back(&data)),
            sw::OK,
            "a free one stays free"
        );
        assert_eq!(
            sw_in(&mut c, &mut owner, &cmd(INS_RELEASE_A, 0, data.clone(), 16)),
            sw::OK
        );
        assert_eq!(sw_in(&mut c, &mut probe, &give_back(&data)), sw::SECURITY);
        assert_eq!(sw_in(&mut c, &mut other, &give_back(&data)), sw::CONDITIONS);
        assert_eq!(sw_in(&mut c, &mut owner, &give_back(&data)), sw::OK);
        assert!(c.state().sequences().all(|(_, _, st)| st == SequenceState::Generated));
        // The owner's end no longer erases it: it is nobody's.
        c.end_session(&mut owner);
        assert_eq!(c.state().sequences().count(), 1);
        // The next session takes it and finishes it; s_B leaves once.
        let mut rng = ChaCha20Rng::seed_from_u64(5);
        let e = Scalar::random(&mut rng);
        let req = SeedRequest {
            sequences: vec![super::super::SequenceId { d, log: 7 }],
            ephemeral: RistrettoPoint::mul_base(&e).compress().to_bytes(),
            nonce: [2; 32],
        };
        assert_eq!(
            sw_in(&mut c, &mut other, &cmd(INS_RELEASE_A, 0, data.clone(), 16)),
            sw::OK
        );
        assert_eq!(
            sw_in(&mut c, &mut other, &cmd(INS_RELEASE_B, 0, req.to_wire(), 65536)),
            sw::OK
        );
        // After RELEASE B nothing can be given back, by anyone.
        for s in [&mut other, &mut owner] {
            assert_eq!(sw_in(&mut c, s, &give_back(&data)), sw::NOT_FOUND);
        }
        assert_eq!(
            sw_in(&mut c, &mut other, &cmd(INS_RELEASE_A, 0, data.clone(), 16)),
            sw::NOT_FOUND
        );
        assert_eq!(
            sw_in(&mut c, &mut other, &cmd(INS_RELEASE_B, 0, req.to_wire(), 65536)),
            sw::NOT_FOUND
        );
        assert_eq!(sw_in(&mut c, &mut other, &give_back(&[0; 3])), sw::WRONG_LENGTH);
    }

    /// Two sessions stream at once without cutting each other's streams.
    #[test]
    fn sessions_do_not_cut_each_others_streams() {
        let mut c = card();
        let (mut s1, mut s2) = (Session::paired_host(), Session::paired_host());
        assert_eq!(sw_in(&mut c, &mut s1, &cmd(INS_GENERATE, 8, vec![], 9)), 0x6100);
        assert_eq!(sw_in(&mut c, &mut s2, &cmd(INS_GENERATE, 8, vec![], 9)), 0x6100);
        for s in [&mut s1, &mut s2] {
            assert_eq!(sw_in(&mut c, s, &cmd(INS_GET_RESPONSE, 0, vec![], 16)), 0x6100);
        }
        for s in [&mut s1, &mut s2] {
            assert_eq!(sw_in(&mut c, s, &cmd(INS_GET_RESPONSE, 0, vec![], 65536)), sw::OK);
        }
        assert!(c.state().sequences().all(|(_, _, st)| st == SequenceState::Generated));
        assert_eq!(c.state().sequences().count(), 2);
    }
}
