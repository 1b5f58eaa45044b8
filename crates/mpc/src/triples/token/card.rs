//! The token itself, sans-I/O: command APDUs in, response APDUs out, its persistent
//! state written through an [`Eeprom`] before any answer that depends on it.
//!
//! | command | CLA INS P1 P2 | data | response |
//! |---|---|---|---|
//! | GET CERTIFICATE | `80 10 00 00` | — | the certificate |
//! | GENERATE | `80 20 log 00` | — | `d` (8 bytes) ‖ `log`, SW `6100`: `c_A` follows |
//! | GET RESPONSE | `00 C0 00 00` | — | the next `≤ Ne` bytes of `c_A`; SW `6100` while more |
//! | RELEASE A | `80 30 00 00` | `d` | `s_A` (16 bytes) |
//! | RELEASE B | `80 32 00 00` | seed request | the sealed `s_B` seeds |
//!
//! The rules the paper sets (§4.1, §4.4): a sequence's `s_A` only once it is fully
//! generated, its `s_B` only after `s_A` and only once — the sequence is erased from
//! the persistent state, and that state is committed, before the sealed seeds leave.

use super::apdu::{self, Command, Response, sw};
use super::{
    CLA, INS_GENERATE, INS_GET_CERTIFICATE, INS_GET_RESPONSE, INS_RELEASE_A, INS_RELEASE_B, MAX_LOG, MIN_LOG,
    SeedRelease, SeedRequest, TokenCertificate, TokenKey, compute_c_a_le, decode_point, derive_seed, seal_aad,
    seal_key,
};
use crate::messages::tags;
use crate::prg::Seed;
use curve25519_dalek::ristretto::RistrettoPoint;
use curve25519_dalek::scalar::Scalar;
use rand_core::CryptoRngCore;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use tacit_crypto::sign::SigningKey;
use tacit_wire::{Decode, Encode, Reader, Writer};
use zeroize::Zeroize;

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

/// The token's persistent memory: master keys, static key, certificate, counter and
/// the live sequences (a sequence whose `s_B` was released is erased).
#[derive(Clone, PartialEq, Eq)]
pub struct TokenState {
    /// The certificate (holds the token id and public key).
    pub certificate: TokenCertificate,
    k_a: [u8; 16],
    k_b: [u8; 16],
    secret: [u8; 32],
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

impl TokenState {
    /// Manufactures a token: fresh master keys and static key, certified by `ca`.
    pub fn manufacture(ca: &SigningKey, manufacturer: &str, rng: &mut impl CryptoRngCore) -> Self {
        let mut k_a = [0u8; 16];
        let mut k_b = [0u8; 16];
        let mut token_id = [0u8; 16];
        rng.fill_bytes(&mut k_a);
        rng.fill_bytes(&mut k_b);
        rng.fill_bytes(&mut token_id);
        let t = Scalar::random(rng);
        let public = RistrettoPoint::mul_base(&t).compress().to_bytes();
        let certificate = TokenCertificate::issue(ca, token_id, public, manufacturer);
        TokenState {
            certificate,
            k_a,
            k_b,
            secret: t.to_bytes(),
            next_d: 0,
            sequences: BTreeMap::new(),
        }
    }

    /// The live sequences.
    pub fn sequences(&self) -> impl Iterator<Item = (u64, u8, SequenceState)> + '_ {
        self.sequences.iter().map(|(&d, &(l, s))| (d, l, s))
    }

    /// The next counter value.
    pub fn next_d(&self) -> u64 {
        self.next_d
    }
}

/// The most live sequences a token keeps.
pub const MAX_LIVE_SEQUENCES: usize = 1 << 16;

impl Encode for TokenState {
    fn encode(&self, w: &mut Writer) {
        w.put_envelope(tags::TOKEN_STATE);
        w.put_var_bytes(&self.certificate.to_wire());
        w.put_fixed(&self.k_a);
        w.put_fixed(&self.k_b);
        w.put_fixed(&self.secret);
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
        let certificate = TokenCertificate::from_wire(r.var_bytes("certificate", 512)?)?;
        let k_a = r.array("k_A")?;
        let k_b = r.array("k_B")?;
        let secret: [u8; 32] = r.array("token key")?;
        if Option::<Scalar>::from(Scalar::from_canonical_bytes(secret)).is_none() {
            return Err(tacit_wire::Error::invalid("token key", "not a canonical scalar"));
        }
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

/// State in a file of two slots (a card's EEPROM with atomic updates).
///
/// ```text
/// header (4 KiB): "TACITEE2" ‖ slot size (u32)
/// slot 0, slot 1: generation (u64) ‖ length (u32) ‖ SHA-256(label ‖ generation ‖ length ‖ state) ‖ state
/// ```
///
/// A commit writes the slot that does *not* hold the current state, in place, and
/// `fdatasync`s: one flush of a file whose size does not change (0.07 ms here, against
/// 0.4 ms for the write–fsync–rename–fsync-the-folder replace). Loading takes the
/// valid slot of higher generation, so a crash in the middle of a commit leaves the
/// previous state, whole. A file that holds a bare state (as earlier versions kept it)
/// is read as is; the first commit then formats the file by the atomic replace, as
/// it does when the state outgrows a slot.
#[derive(Debug)]
pub struct FileEeprom {
    path: PathBuf,
    /// The open slotted file, its slot size, the current generation and slot.
    open: Option<(std::fs::File, u64, u64, usize)>,
}

const EEPROM_MAGIC: &[u8; 8] = b"TACITEE2";
const EEPROM_HEADER: u64 = 4096;
const SLOT_HEADER: usize = 8 + 4 + 32;
const SLOT_LABEL: &[u8] = b"tacit token eeprom slot";

fn slot_digest(generation: u64, state: &[u8]) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(SLOT_LABEL);
    h.update(generation.to_be_bytes());
    h.update((state.len() as u32).to_be_bytes());
    h.update(state);
    h.finalize().into()
}

fn slot_record(generation: u64, state: &[u8]) -> Vec<u8> {
    let mut r = Vec::with_capacity(SLOT_HEADER + state.len());
    r.extend_from_slice(&generation.to_be_bytes());
    r.extend_from_slice(&(state.len() as u32).to_be_bytes());
    r.extend_from_slice(&slot_digest(generation, state));
    r.extend_from_slice(state);
    r
}

/// A slotted file's slot size and its valid slots as `(slot, generation, state)`;
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
        let Some(state) = rec.get(SLOT_HEADER..SLOT_HEADER + len) else {
            continue;
        };
        if generation > 0 && rec[12..44] == slot_digest(generation, state) {
            valid.push((slot, generation, state));
        }
    }
    Some((slot_size, valid))
}

impl FileEeprom {
    /// State at `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        FileEeprom {
            path: path.into(),
            open: None,
        }
    }

    /// Loads the state stored at `path` (the newest valid slot, or a bare state).
    pub fn load(path: &Path) -> Result<TokenState, crate::Error> {
        let bytes = std::fs::read(path).map_err(|e| crate::Error::io(format!("reading {}", path.display()), e))?;
        match read_slots(&bytes) {
            None => Ok(TokenState::from_wire(&bytes)?),
            Some((_, valid)) => {
                let (_, _, state) = valid.iter().max_by_key(|v| v.1).ok_or_else(|| {
                    crate::Error::Token(format!("the state in {} is damaged (no valid slot)", path.display()))
                })?;
                Ok(TokenState::from_wire(state)?)
            }
        }
    }

    /// Writes a fresh slotted file holding `state` as generation `generation` in slot 0,
    /// by the atomic replace, and keeps it open.
    fn format(&mut self, state: &[u8], generation: u64) -> std::io::Result<()> {
        let slot_size = ((2 * (SLOT_HEADER + state.len())) as u64)
            .next_multiple_of(4096)
            .max(64 << 10);
        let mut bytes = vec![0u8; (EEPROM_HEADER + 2 * slot_size) as usize];
        bytes[..8].copy_from_slice(EEPROM_MAGIC);
        bytes[8..12].copy_from_slice(&(slot_size as u32).to_be_bytes());
        let rec = slot_record(generation, state);
        bytes[EEPROM_HEADER as usize..EEPROM_HEADER as usize + rec.len()].copy_from_slice(&rec);
        replace_atomically(&self.path, &bytes)?;
        let file = std::fs::OpenOptions::new().read(true).write(true).open(&self.path)?;
        self.open = Some((file, slot_size, generation, 0));
        Ok(())
    }

    /// Opens the slotted file at `path` (None if it is not one, or has no valid slot).
    fn reopen(&mut self) -> std::io::Result<()> {
        let bytes = match std::fs::read(&self.path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        if let Some((slot_size, valid)) = read_slots(&bytes)
            && let Some(&(slot, generation, _)) = valid.iter().max_by_key(|v| v.1)
        {
            let file = std::fs::OpenOptions::new().read(true).write(true).open(&self.path)?;
            self.open = Some((file, slot_size, generation, slot));
        }
        Ok(())
    }
}

/// Replaces `path` by `bytes` atomically: a temporary file (mode 0600), fsync,
/// rename, fsync the folder.
fn replace_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    {
        let mut f = std::fs::File::create(&tmp)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        }
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
        if self.open.is_none() {
            self.reopen()?;
        }
        let Some((slot_size, generation)) = self.open.as_ref().map(|o| (o.1, o.2)) else {
            // A bare state or no file yet: format.
            return self.format(state, 1);
        };
        let next = generation + 1;
        if (SLOT_HEADER + state.len()) as u64 > slot_size {
            return self.format(state, next);
        }
        let Some((file, _, generation, slot)) = &mut self.open else {
            return Err(std::io::Error::other("the EEPROM file is not open"));
        };
        let other = 1 - *slot;
        let rec = slot_record(next, state);
        #[cfg(unix)]
        {
            use std::os::unix::fs::FileExt;
            file.write_all_at(&rec, EEPROM_HEADER + other as u64 * slot_size)?;
        }
        #[cfg(not(unix))]
        {
            use std::io::{Seek, SeekFrom};
            file.seek(SeekFrom::Start(EEPROM_HEADER + other as u64 * slot_size))?;
            file.write_all(&rec)?;
        }
        file.sync_data()?;
        *generation = next;
        *slot = other;
        Ok(())
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

struct Stream {
    d: u64,
    s_a: Seed,
    s_b: Seed,
    next_word: usize,
    total_words: usize,
    ready: Option<Vec<u8>>,
    ready_ne: usize,
}

/// The token.
pub struct Card<E: Eeprom> {
    state: TokenState,
    issued_d: u64,
    eeprom: E,
    key: TokenKey,
    stream: Option<Stream>,
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
    /// A token with `state` stored in `eeprom`.
    pub fn new(state: TokenState, eeprom: E) -> Result<Self, crate::Error> {
        let t = Option::<Scalar>::from(Scalar::from_canonical_bytes(state.secret))
            .ok_or_else(|| crate::Error::Params("token key is not a canonical scalar".into()))?;
        Ok(Card {
            issued_d: state.next_d,
            state,
            eeprom,
            key: TokenKey(t),
            stream: None,
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
        let bytes = self.state.to_wire();
        self.eeprom.commit(&bytes).is_ok()
    }

    /// Processes one encoded command APDU and returns the encoded response.
    pub fn process(&mut self, cmd: &[u8]) -> Vec<u8> {
        let resp = match Command::decode(cmd) {
            Ok(c) => self.handle(&c),
            Err(_) => Response::status(sw::WRONG_LENGTH),
        };
        resp.into_encoded()
    }

    /// Work the token may do while the host is busy: computes the next `c_A` chunk
    /// so that the next GET RESPONSE is answered at once.
    pub fn prefetch(&mut self) {
        if let Some(s) = self.stream.as_mut()
            && s.ready.is_none()
            && s.next_word < s.total_words
        {
            let ne = s.ready_ne.max(16);
            s.ready = Some(next_chunk(s, ne));
        }
    }

    fn handle(&mut self, c: &Command) -> Response {
        if c.ins == INS_GET_RESPONSE && c.cla == 0x00 {
            return self.get_response(c);
        }
        if c.cla != CLA {
            return Response::status(sw::CLA_NOT_SUPPORTED);
        }
        // Any other command ends a running stream (the sequence stays Generating and
        // can never be released).
        if c.ins != INS_GET_RESPONSE {
            self.stream = None;
        }
        match c.ins {
            INS_GET_CERTIFICATE => Response::ok(self.state.certificate.to_wire()),
            INS_GENERATE => self.generate(c),
            INS_RELEASE_A => self.release_a(c),
            INS_RELEASE_B => self.release_b(c),
            _ => Response::status(sw::INS_NOT_SUPPORTED),
        }
    }

    fn generate(&mut self, c: &Command) -> Response {
        let log = c.p1;
        if !(MIN_LOG..=MAX_LOG).contains(&log) || c.p2 != 0 || !c.data.is_empty() {
            return Response::status(sw::WRONG_P1P2);
        }
        if self.state.sequences.len() >= MAX_LIVE_SEQUENCES {
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
        self.stream = Some(Stream {
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

    fn get_response(&mut self, c: &Command) -> Response {
        let Some(s) = self.stream.as_mut() else {
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
        self.stream = None;
        if let Some(e) = self.state.sequences.get_mut(&d) {
            e.1 = SequenceState::Generated;
        }
        Response::ok(chunk)
    }

    fn release_a(&mut self, c: &Command) -> Response {
        let Ok(d) = <[u8; 8]>::try_from(c.data.as_slice()) else {
            return Response::status(sw::WRONG_LENGTH);
        };
        let d = u64::from_be_bytes(d);
        match self.state.sequences.get_mut(&d) {
            None => Response::status(sw::NOT_FOUND),
            Some((_, SequenceState::Generating)) => Response::status(sw::CONDITIONS),
            Some(e) => {
                // Not committed here: this flag only makes RELEASE B wait for RELEASE
                // A. Lost in a crash, the sequence reads Generated (or Generating)
                // again, A asks for the same s_A once more (or the sequence is
                // wasted), and s_B still leaves at most once, because RELEASE B
                // commits the erasure before answering. The next commit stores it.
                e.1 = SequenceState::AReleased;
                Response::ok(derive_seed(&self.state.k_a, d).0.to_vec())
            }
        }
    }

    fn release_b(&mut self, c: &Command) -> Response {
        let Ok(req) = SeedRequest::from_wire(&c.data) else {
            return Response::status(sw::WRONG_DATA);
        };
        let Ok(e) = decode_point(&req.ephemeral) else {
            return Response::status(sw::WRONG_DATA);
        };
        for q in &req.sequences {
            match self.state.sequences.get(&q.d) {
                None => return Response::status(sw::NOT_FOUND),
                Some(&(log, st)) if log != q.log || st != SequenceState::AReleased => {
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

    fn state_with(n: usize) -> TokenState {
        let mut rng = ChaCha20Rng::seed_from_u64(3);
        let ca = SigningKey::generate(&mut rng);
        let mut st = TokenState::manufacture(&ca, "test", &mut rng);
        st.next_d = 10 * n as u64 + 10;
        for k in 0..n as u64 {
            st.sequences.insert(10 * k, (MIN_LOG, SequenceState::Generated));
        }
        st
    }

    /// Every commit is what a later load sees; a bare state (the earlier format) is
    /// read and converted by the first commit; a state that outgrows its slot makes
    /// the file bigger.
    #[test]
    fn file_eeprom_keeps_the_last_commit() {
        let d = eeprom_dir("keeps");
        let path = d.join("state");
        std::fs::write(&path, state_with(1).to_wire()).unwrap();
        assert_eq!(FileEeprom::load(&path).unwrap().to_wire(), state_with(1).to_wire());
        let mut e = FileEeprom::new(&path);
        for n in [2, 3, 4, 5, 9000, 7, 8] {
            e.commit(&state_with(n).to_wire()).unwrap();
            assert_eq!(
                FileEeprom::load(&path).unwrap().to_wire(),
                state_with(n).to_wire(),
                "{n}"
            );
            // A fresh handle (a restarted token) continues from the file.
            e = FileEeprom::new(&path);
        }
        let _ = std::fs::remove_dir_all(&d);
    }

    /// Damaged or foreign files are one-line errors, never a panic or a state made up
    /// from garbage: random bytes behind the header, truncations, absurd slot sizes.
    #[test]
    fn damaged_eeprom_files_are_errors() {
        use rand_core::RngCore;
        let d = eeprom_dir("damaged");
        let path = d.join("state");
        let mut e = FileEeprom::new(&path);
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
            match FileEeprom::load(&path) {
                Ok(st) => assert_eq!(st.to_wire(), state_with(2).to_wire()),
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
        let path = d.join("state");
        let mut e = FileEeprom::new(&path);
        e.commit(&state_with(1).to_wire()).unwrap();
        e.commit(&state_with(2).to_wire()).unwrap();
        let mut bytes = std::fs::read(&path).unwrap();
        let slot_size = u32::from_be_bytes(bytes[8..12].try_into().unwrap()) as usize;
        // state 2 went to slot 1: tear its last byte.
        let at = EEPROM_HEADER as usize + slot_size + SLOT_HEADER + state_with(2).to_wire().len() - 1;
        bytes[at] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(FileEeprom::load(&path).unwrap().to_wire(), state_with(1).to_wire());
        // The next commit goes to the damaged slot, not over the good one.
        let mut e = FileEeprom::new(&path);
        e.commit(&state_with(3).to_wire()).unwrap();
        assert_eq!(FileEeprom::load(&path).unwrap().to_wire(), state_with(3).to_wire());
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[EEPROM_HEADER as usize + 20] ^= 1;
        bytes[EEPROM_HEADER as usize + slot_size + 20] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        let err = FileEeprom::load(&path).unwrap_err().to_string();
        assert!(err.contains("damaged"), "{err}");
        let _ = std::fs::remove_dir_all(&d);
    }

    fn card() -> Card<MemoryEeprom> {
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        let ca = SigningKey::generate(&mut rng);
        let st = TokenState::manufacture(&ca, "test", &mut rng);
        Card::new(st, MemoryEeprom::default()).unwrap()
    }

    #[test]
    fn state_roundtrips_and_counter_is_committed_first() {
        let mut c = card();
        let r = Response::decode(
            &c.process(
                &Command {
                    cla: CLA,
                    ins: INS_GENERATE,
                    p1: 7,
                    p2: 0,
                    data: vec![],
                    ne: 9,
                }
                .encode(),
            ),
        )
        .unwrap();
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
    }
}
