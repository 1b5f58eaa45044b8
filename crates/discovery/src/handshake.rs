//! The three handshakes, sans-I/O: bytes in, bytes out; time and randomness are
//! passed in by the caller.
//!
//! * **SIGMA-I** ([`Mode::Sigma`]), the baseline the paper extends (§4, Krawczyk's
//!   SIGMA-I with an AEAD instead of separate encryption and MAC keys):
//!
//!   ```text
//!   C → S  sid, gˣ
//!   S → C  sid, gʸ, {ID_S, SIG_S(sid, ID_S, gˣ, gʸ)}_htkₛ
//!   C → S  sid,     {ID_C, SIG_C(sid, ID_C, gˣ, gʸ)}_htk꜀        (htk, atk) = KDF(gˣ, gʸ, gˣʸ)
//!   ```
//!
//!   Private against passive observers only: the server shows its identity to anyone
//!   who connects.
//!
//! * **Private mutual authentication** ([`Mode::Private`], paper §4 and Fig. 1): the server
//!   sends `CT_S = PE.Enc(π_S, ID_S ‖ k_σ)` instead of `ID_S`, and signs
//!   `(sid, CT_S, gˣ, gʸ)`. A client learns `ID_S` only if its own name satisfies
//!   `π_S`, and reveals `ID_C` only after `ID_S` satisfied *its* policy `π_C` and the
//!   signature verified. Departure from Fig. 1 (issue 32): the signature travels
//!   sealed under `K_σ = KDF(htkₛ, k_σ; …)`, not under `htkₛ` alone, because any
//!   client derives `htkₛ` and signatures are not key-private: one outside the
//!   policy holding candidate public keys could test the signature against each
//!   and recognise the server.
//!
//! * **Private service discovery with 0-RTT** ([`zero_rtt`], paper §5 and Fig. 2):
//!   the service broadcasts `bid, PE.Enc(π_S, (ID_S, gˢ, expiry, SIG_S(bid, ID_S, gˢ,
//!   expiry)))`; an authorised client opens a session in one flight with early data
//!   under `gˢˣ`, and the server answers with a fresh `gʸ` so that everything after
//!   its reply has forward secrecy.
//!
//! Every message is a canonical tacit encoding (tags `0x0340`–`0x0345`, see
//! `docs/wire.md`); Diffie–Hellman runs in ristretto255; keys come from HKDF-SHA256
//! over the shared secret and a hash of the transcript; the AEAD is
//! ChaCha20-Poly1305. Failures give a precise error to the local caller and nothing
//! to the peer but a closed connection.

use crate::blessing::{self, Blessing, Policy, Principal, TrustedRoots, ValidatedBlessing};
use crate::ibe::MasterPublicKey;
use crate::prefix::{self, Prefix, PrefixCiphertext, PrefixKey};
use rand_core::CryptoRngCore;
use sha2::{Digest, Sha256};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use tacit_crypto::aead::{AeadKey, NONCE_LEN};
use tacit_crypto::kdf::hkdf_sha256;
use tacit_crypto::{PrimeGroup, Ristretto255, SecretScalar};
use tacit_wire::{Decode, Encode, Reader, Writer};
use zeroize::Zeroizing;

/// A 32-byte secret (a DH result or a derived key), wiped on drop.
type Key = Zeroizing<[u8; 32]>;

type G = Ristretto255;
type Element = <G as PrimeGroup>::Element;

/// Length of session and broadcast identifiers.
pub const ID_LEN: usize = 16;
/// Largest encoded blessing a handshake accepts.
pub const MAX_BLESSING_LEN: usize = 8 * 400;
/// Largest early or application payload carried in a handshake message.
pub const MAX_PAYLOAD_LEN: usize = 64 * 1024;
/// Most prefixes a server policy may encrypt its identity under.
pub const MAX_POLICY_CIPHERTEXTS: usize = 4;

/// Wire tags of the handshake messages.
pub mod tags {
    /// Client hello (SIGMA-I and private mutual authentication).
    pub const CLIENT_HELLO: u16 = 0x0340;
    /// Server hello.
    pub const SERVER_HELLO: u16 = 0x0341;
    /// Client finish.
    pub const CLIENT_FINISH: u16 = 0x0342;
    /// A private service advertisement.
    pub const ADVERT: u16 = 0x0343;
    /// The 0-RTT first flight.
    pub const ZERO_RTT_HELLO: u16 = 0x0344;
    /// The server's 0-RTT reply.
    pub const ZERO_RTT_REPLY: u16 = 0x0345;
}

/// Everything that can make a handshake fail. Each is reported to the local caller;
/// the peer only sees the connection close.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A message that does not decode.
    #[error("malformed handshake message: {0}")]
    Wire(#[from] tacit_wire::Error),
    /// A handshake ciphertext that does not decrypt (tampered, or keys disagree).
    #[error("{0} does not decrypt: it was modified or not made for this session")]
    Decrypt(&'static str),
    /// The peer's certificate chain is not valid.
    #[error("the peer's blessing is not valid: {0}")]
    Blessing(#[from] blessing::Error),
    /// Prefix encryption failed.
    #[error("{0}")]
    Prefix(#[from] prefix::Error),
    /// Our identity does not satisfy the server's policy, so we cannot read its
    /// identity (and do not reveal ours).
    #[error("this identity does not satisfy the service's policy {0}")]
    NotAuthorizedByPeer(String),
    /// The peer authenticated, but its name is outside our policy.
    #[error("the peer {peer} does not satisfy our policy {policy}")]
    PeerNotAuthorized {
        /// The peer's authenticated name.
        peer: String,
        /// Our policy.
        policy: String,
    },
    /// A signature does not verify under the key the peer's blessing names.
    #[error("the {0} signature does not verify")]
    BadSignature(&'static str),
    /// The message belongs to another session.
    #[error("the message belongs to another session")]
    WrongSession,
    /// A 0-RTT advertisement whose signed expiry has passed.
    #[error("the advertisement expired at {expiry} (now {now})")]
    AdvertExpired {
        /// Its signed expiry.
        expiry: u64,
        /// The time used.
        now: u64,
    },
    /// A 0-RTT first flight for an advertisement this server does not have (or no
    /// longer has).
    #[error("no current advertisement has this broadcast id")]
    UnknownAdvert,
    /// A 0-RTT first flight seen before for this advertisement.
    #[error("replayed 0-RTT first flight")]
    Replay,
    /// The advertisement's replay cache is full: no more 0-RTT sessions under it
    /// (the private handshake still works, and the next advertisement starts empty).
    #[error("this advertisement has served its {0} 0-RTT sessions; use the full handshake or the next advertisement")]
    ReplayCacheFull(usize),
    /// The server's reply names other identities or another session.
    #[error("the server's confirmation does not match this session")]
    BadConfirmation,
    /// A payload over [`MAX_PAYLOAD_LEN`].
    #[error("payload of {0} bytes; the limit is {MAX_PAYLOAD_LEN}")]
    PayloadTooLong(usize),
    /// Our own configuration cannot run this handshake.
    #[error("{0}")]
    Config(String),
    /// A client hello asked for a handshake this server does not offer (a private
    /// server refuses SIGMA-I, which would send its identity to anyone).
    #[error("this server does not offer the {0} handshake")]
    ModeRefused(&'static str),
    /// A DH share that is not a valid group element.
    #[error("invalid Diffie-Hellman share: {0}")]
    Group(#[from] tacit_crypto::Error),
}

/// The handshake result type.
pub type Result<T> = core::result::Result<T, Error>;

/// What a party brings to a handshake: its signing key, the blessing it presents
/// (`ID_P`), the roots it trusts and its policy for peers (`π_P`).
#[derive(Clone)]
pub struct Credentials {
    /// The signing key.
    pub principal: Arc<Principal>,
    /// The chain this party presents.
    pub blessing: Blessing,
    /// Roots peers' chains must lead to.
    pub roots: TrustedRoots,
    /// Which peer names this party accepts.
    pub policy: Policy,
}

impl Credentials {
    /// `principal` presenting `blessing`, accepting chains to `roots` whose names
    /// `policy` matches.
    pub fn new(principal: Arc<Principal>, blessing: Blessing, roots: TrustedRoots, policy: Policy) -> Self {
        Credentials {
            principal,
            blessing,
            roots,
            policy,
        }
    }
}

impl core::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "Credentials({}, policy {})",
            self.blessing.unverified_name(),
            self.policy
        )
    }
}

/// Prefix-encryption material: the IBE root's master public key and, for a party
/// that must read servers' identities, its prefix key.
#[derive(Clone)]
pub struct PrefixCredentials {
    /// The IBE root authority's master public key.
    pub mpk: Arc<MasterPublicKey>,
    /// Our prefix key (`SK_C`), extracted for our name.
    pub key: Option<Arc<PrefixKey>>,
}

impl PrefixCredentials {
    /// The IBE root's public key and our prefix key (`None`: we only encrypt).
    pub fn new(mpk: Arc<MasterPublicKey>, key: Option<PrefixKey>) -> Self {
        PrefixCredentials {
            mpk,
            key: key.map(Arc::new),
        }
    }
}

impl core::fmt::Debug for PrefixCredentials {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match &self.key {
            Some(k) => write!(f, "PrefixCredentials(key for {})", k.name()),
            None => write!(f, "PrefixCredentials(no key)"),
        }
    }
}

/// The keys of an established session: one AEAD key per direction, counters as
/// nonces.
pub struct SessionKeys {
    send: AeadKey,
    recv: AeadKey,
    send_ctr: u64,
    recv_ctr: u64,
}

impl core::fmt::Debug for SessionKeys {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "SessionKeys(<redacted>, sent {}, received {})",
            self.send_ctr, self.recv_ctr
        )
    }
}

fn nonce(ctr: u64) -> [u8; NONCE_LEN] {
    let mut n = [0u8; NONCE_LEN];
    n[4..].copy_from_slice(&ctr.to_be_bytes());
    n
}

impl SessionKeys {
    fn new(send: &Key, recv: &Key) -> Self {
        SessionKeys {
            send: AeadKey::new(**send),
            recv: AeadKey::new(**recv),
            send_ctr: 0,
            recv_ctr: 0,
        }
    }

    /// Encrypts the next application message.
    pub fn seal(&mut self, msg: &[u8]) -> Vec<u8> {
        let c = self.send.seal(&nonce(self.send_ctr), b"tacit-discovery/app", msg);
        self.send_ctr += 1;
        c
    }

    /// Decrypts the next application message from the peer (in order).
    pub fn open(&mut self, ct: &[u8]) -> Result<Vec<u8>> {
        let m = self
            .recv
            .open(&nonce(self.recv_ctr), b"tacit-discovery/app", ct)
            .map_err(|_| Error::Decrypt("an application message"))?;
        self.recv_ctr += 1;
        Ok(m)
    }
}

/// A completed handshake.
#[derive(Debug)]
pub struct Established {
    /// The peer's authenticated identity.
    pub peer: ValidatedBlessing,
    /// Keys for application data (`atk`).
    pub keys: SessionKeys,
}

// ---------------------------------------------------------------------------
// Shared helpers

fn random_id(rng: &mut impl CryptoRngCore) -> [u8; ID_LEN] {
    let mut id = [0u8; ID_LEN];
    rng.fill_bytes(&mut id);
    id
}

fn dh_share(rng: &mut impl CryptoRngCore) -> (SecretScalar<G>, [u8; 32]) {
    let x = SecretScalar::<G>::random(rng);
    let gx = G::element_bytes(&G::mul_base(x.expose()));
    (x, gx)
}

fn dh(secret: &SecretScalar<G>, peer: &Element) -> Key {
    Zeroizing::new(G::element_bytes(&G::mul(peer, secret.expose())))
}

fn read_share(r: &mut Reader<'_>, what: &'static str) -> Result<([u8; 32], Element)> {
    let raw: [u8; 32] = r.array(what)?;
    Ok((raw, G::decode_element(&raw)?))
}

fn sha256(parts: &[&[u8]]) -> [u8; 32] {
    let mut h = Sha256::new();
    for p in parts {
        h.update((p.len() as u64).to_be_bytes());
        h.update(p);
    }
    h.finalize().into()
}

/// `KDF(secrets; transcript)`: HKDF-SHA256 with the DH results as input keying
/// material and a hash of the transcript and a label as info; `n` 32-byte keys.
fn kdf<const N: usize>(label: &str, secrets: &[&[u8]], transcript: &[&[u8]]) -> [Key; N] {
    let ikm = Zeroizing::new(secrets.concat());
    let th = sha256(transcript);
    let mut info = Vec::with_capacity(label.len() + 32);
    info.extend_from_slice(label.as_bytes());
    info.extend_from_slice(&th);
    let okm = hkdf_sha256(b"tacit-discovery/v1", &ikm, &info, 32 * N).expect("32·N ≤ 255·32");
    core::array::from_fn(|i| {
        let mut k = Zeroizing::new([0u8; 32]);
        k.copy_from_slice(&okm[32 * i..32 * (i + 1)]);
        k
    })
}

fn seal_once(key: &[u8; 32], label: &[u8], msg: &[u8]) -> Vec<u8> {
    AeadKey::new(*key).seal(&[0u8; NONCE_LEN], label, msg)
}

fn open_once(key: &[u8; 32], label: &[u8], ct: &[u8], what: &'static str) -> Result<Vec<u8>> {
    AeadKey::new(*key)
        .open(&[0u8; NONCE_LEN], label, ct)
        .map_err(|_| Error::Decrypt(what))
}

/// Signed content: a label, then every field length-prefixed.
fn signed(label: &str, parts: &[&[u8]]) -> Vec<u8> {
    let mut w = Writer::new();
    w.put_str(label);
    for p in parts {
        w.put_var_bytes(p);
    }
    w.into_bytes()
}

fn check_authorized(peer: &ValidatedBlessing, policy: &Policy) -> Result<()> {
    if peer.satisfies(policy) {
        Ok(())
    } else {
        Err(Error::PeerNotAuthorized {
            peer: peer.name().to_string(),
            policy: policy.to_string(),
        })
    }
}

fn check_payload(p: &[u8]) -> Result<()> {
    if p.len() > MAX_PAYLOAD_LEN {
        Err(Error::PayloadTooLong(p.len()))
    } else {
        Ok(())
    }
}

fn policy_prefixes(policy: &Policy) -> Result<Vec<Prefix>> {
    policy
        .prefixes()
        .iter()
        .take(MAX_POLICY_CIPHERTEXTS)
        .map(|p| Ok(Prefix::parse(p.prefix().as_str())?))
        .collect()
}

/// `PE.Enc(π_S, m)` for each prefix of the server's policy (at most
/// [`MAX_POLICY_CIPHERTEXTS`]): a client reads the one its name satisfies.
fn encrypt_to_policy(
    mpk: &MasterPublicKey,
    policy: &Policy,
    aad: &[u8],
    plaintext: &[u8],
    rng: &mut impl CryptoRngCore,
) -> Result<Vec<PrefixCiphertext>> {
    if policy.prefixes().len() > MAX_POLICY_CIPHERTEXTS {
        return Err(Error::Config(format!(
            "a private server policy may have at most {MAX_POLICY_CIPHERTEXTS} prefixes"
        )));
    }
    policy_prefixes(policy)?
        .iter()
        .map(|p| Ok(prefix::encrypt(mpk, p, aad, plaintext, rng)?))
        .collect()
}

fn put_ciphertexts(w: &mut Writer, cts: &[PrefixCiphertext]) {
    w.put_u8(cts.len() as u8);
    for c in cts {
        w.put_var_bytes(&c.to_wire());
    }
}

fn read_ciphertexts(r: &mut Reader<'_>) -> Result<Vec<PrefixCiphertext>> {
    let n = r.u8()? as usize;
    if n == 0 || n > MAX_POLICY_CIPHERTEXTS {
        return Err(tacit_wire::Error::invalid(
            "policy ciphertexts",
            format!("{n}; 1 to {MAX_POLICY_CIPHERTEXTS} allowed"),
        )
        .into());
    }
    (0..n)
        .map(|_| Ok(PrefixCiphertext::from_wire(r.var_bytes("prefix ciphertext", 8192)?)?))
        .collect()
}

/// Cache of decrypted server identities, keyed by the hash of the ciphertext.
///
/// A server that caches its encrypted identity sends the same `CT_S` to every client
/// (paper §4.1, "caching"); a client that keeps what it decrypted skips the pairing on
/// the next connection. Decryption is deterministic, so the cache changes no result;
/// the linkability comes from the server reusing `CT_S` (anyone can link its
/// sessions), not from the client's cache.
///
/// The decrypted identities are what a private server hides from everyone outside its
/// policy, so they are wiped on drop (and when the cache is cleared) and never printed.
#[derive(Default)]
pub struct DecryptionCache(Mutex<HashMap<[u8; 32], Zeroizing<Vec<u8>>>>);

impl core::fmt::Debug for DecryptionCache {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.0.lock() {
            Ok(m) => write!(f, "DecryptionCache({} entries)", m.len()),
            Err(_) => f.write_str("DecryptionCache(poisoned)"),
        }
    }
}

impl DecryptionCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    fn decrypt(&self, key: &PrefixKey, ct: &PrefixCiphertext, aad: &[u8]) -> Result<Vec<u8>> {
        let id = sha256(&[&ct.to_wire(), aad]);
        if let Some(hit) = self
            .0
            .lock()
            .map_err(|_| Error::Config("cache poisoned".into()))?
            .get(&id)
        {
            return Ok(hit.to_vec());
        }
        let pt = key.decrypt(ct, aad)?;
        if let Ok(mut m) = self.0.lock() {
            if m.len() >= 1024 {
                m.clear();
            }
            m.insert(id, Zeroizing::new(pt.clone()));
        }
        Ok(pt)
    }
}

/// Decrypts the ciphertext for the first policy prefix our key satisfies.
fn decrypt_for_us(
    pc: &PrefixCredentials,
    cts: &[PrefixCiphertext],
    aad: &[u8],
    cache: Option<&DecryptionCache>,
) -> Result<Vec<u8>> {
    let key = pc
        .key
        .as_ref()
        .ok_or_else(|| Error::Config("this identity holds no prefix-encryption key".into()))?;
    let ct = cts.iter().find(|c| key.satisfies(c.policy())).ok_or_else(|| {
        Error::NotAuthorizedByPeer(
            cts.iter()
                .map(|c| format!("{}/*", c.policy()))
                .collect::<Vec<_>>()
                .join(","),
        )
    })?;
    match cache {
        Some(c) => c.decrypt(key, ct, aad),
        None => Ok(key.decrypt(ct, aad)?),
    }
}

// ---------------------------------------------------------------------------
// SIGMA-I and private mutual authentication share their message shapes.

/// The plaintext of `CT_S` in private mutual authentication: `u32 len ‖ ID_S ‖ k_σ`,
/// where `k_σ` (32 random bytes, fresh with each `CT_S`) keys the sealing of the
/// server's signature, so that only a client that can decrypt `CT_S` can read it.
fn identity_plaintext(id: &[u8], k_sigma: &[u8; 32]) -> Zeroizing<Vec<u8>> {
    let mut w = Writer::with_capacity(4 + id.len() + 32);
    w.put_var_bytes(id);
    w.put_fixed(k_sigma);
    Zeroizing::new(w.into_bytes())
}

fn read_identity_plaintext(pt: &[u8]) -> Result<(Vec<u8>, Key)> {
    let mut r = Reader::new(pt);
    let id = r.var_bytes("server blessing", MAX_BLESSING_LEN)?.to_vec();
    let k: [u8; 32] = r.array("signature key")?;
    r.finish()?;
    Ok((id, Zeroizing::new(k)))
}

/// `K_σ = KDF(htkₛ ‖ k_σ; sid, CT_S, gˣ, gʸ)`: the key the server's signature is
/// sealed under.
fn signature_key(htk_s: &[u8; 32], k_sigma: &[u8; 32], sid: &[u8], ct_bytes: &[u8], gx: &[u8], gy: &[u8]) -> Key {
    let [k] = kdf::<1>("private/server-signature", &[htk_s, k_sigma], &[sid, ct_bytes, gx, gy]);
    k
}

/// Length of the sealed server signature (64 bytes and the AEAD tag).
const SEALED_SIGNATURE_LEN: usize = 64 + 16;

/// Which three-message handshake a client hello asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// SIGMA-I: the server's identity travels under the handshake key only, so any
    /// client that asks learns it. Only for public servers.
    Sigma,
    /// Private mutual authentication: the server's identity under prefix encryption.
    Private,
}

impl Mode {
    /// The handshake's name, for logs and errors.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Sigma => "SIGMA-I",
            Mode::Private => "private mutual authentication",
        }
    }
}

/// The mode byte of private mutual authentication, version 2 (issue 32: the
/// server's signature sealed under `K_σ`). Version 1 (`1`) is refused.
const PRIVATE_MODE_V2: u8 = 2;

struct ClientHello {
    mode: Mode,
    sid: [u8; ID_LEN],
    gx: [u8; 32],
}

impl ClientHello {
    fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.put_envelope(tags::CLIENT_HELLO);
        w.put_u8(match self.mode {
            Mode::Sigma => 0,
            Mode::Private => PRIVATE_MODE_V2,
        });
        w.put_fixed(&self.sid);
        w.put_fixed(&self.gx);
        w.into_bytes()
    }

    fn from_bytes(b: &[u8]) -> Result<(Self, Element)> {
        let mut r = Reader::new(b);
        r.envelope(tags::CLIENT_HELLO, "client hello")?;
        let mode = match r.u8()? {
            0 => Mode::Sigma,
            PRIVATE_MODE_V2 => Mode::Private,
            1 => {
                return Err(tacit_wire::Error::invalid(
                    "handshake mode",
                    "private mutual authentication version 1 (the server's signature readable by any client) \
                     is retired; both sides need the current version",
                )
                .into());
            }
            x => return Err(tacit_wire::Error::invalid("handshake mode", format!("unknown mode {x}")).into()),
        };
        let sid = r.array("session id")?;
        let (gx, gx_e) = read_share(&mut r, "client share")?;
        r.finish()?;
        Ok((ClientHello { mode, sid, gx }, gx_e))
    }
}

/// Peeks at the mode of a client hello, so one server can answer both.
pub fn hello_mode(hello: &[u8]) -> Result<Mode> {
    Ok(ClientHello::from_bytes(hello)?.0.mode)
}

fn two_part(tag: u16, sid: &[u8; ID_LEN], share: Option<&[u8; 32]>, c: &[u8]) -> Vec<u8> {
    let mut w = Writer::new();
    w.put_envelope(tag);
    w.put_fixed(sid);
    if let Some(s) = share {
        w.put_fixed(s);
    }
    w.put_var_bytes(c);
    w.into_bytes()
}

/// A session id, an optional DH share, and a ciphertext.
type TwoPart = ([u8; ID_LEN], Option<([u8; 32], Element)>, Vec<u8>);

fn read_two_part(b: &[u8], tag: u16, what: &'static str, with_share: bool) -> Result<TwoPart> {
    let mut r = Reader::new(b);
    r.envelope(tag, what)?;
    let sid = r.array("session id")?;
    let share = if with_share {
        Some(read_share(&mut r, "server share")?)
    } else {
        None
    };
    let c = r.var_bytes("handshake ciphertext", 16 * 1024)?.to_vec();
    r.finish()?;
    Ok((sid, share, c))
}

fn transcript_keys(mode: Mode, sid: &[u8], gx: &[u8], gy: &[u8], gxy: &[u8]) -> [Key; 4] {
    let label = match mode {
        Mode::Sigma => "sigma-i",
        Mode::Private => "private-mutual-auth",
    };
    // htkₛ (server → client), htk꜀ (client → server), atk (both directions).
    kdf::<4>(label, &[gxy], &[sid, gx, gy])
}

/// Client side of SIGMA-I and of private mutual authentication.
pub mod client {
    use super::*;

    /// The client before it has sent anything.
    #[derive(Debug)]
    pub struct Client;

    /// The client after its hello.
    pub struct AwaitingServer {
        mode: Mode,
        creds: Credentials,
        prefix: Option<PrefixCredentials>,
        cache: Option<Arc<DecryptionCache>>,
        sid: [u8; ID_LEN],
        x: SecretScalar<G>,
        gx: [u8; 32],
    }

    impl core::fmt::Debug for AwaitingServer {
        fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
            write!(f, "AwaitingServer({:?})", self.mode)
        }
    }

    impl Client {
        /// Step 1: `sid, gˣ`. `prefix` is required for [`Mode::Private`] (our prefix
        /// key reads the server's identity); `cache` optionally remembers decrypted
        /// server identities.
        pub fn start(
            mode: Mode,
            creds: Credentials,
            prefix: Option<PrefixCredentials>,
            cache: Option<Arc<DecryptionCache>>,
            rng: &mut impl CryptoRngCore,
        ) -> Result<(AwaitingServer, Vec<u8>)> {
            if mode == Mode::Private && prefix.as_ref().and_then(|p| p.key.as_ref()).is_none() {
                return Err(Error::Config(
                    "private mutual authentication needs this identity's prefix-encryption key".into(),
                ));
            }
            let sid = random_id(rng);
            let (x, gx) = dh_share(rng);
            let hello = ClientHello { mode, sid, gx }.to_bytes();
            Ok((
                AwaitingServer {
                    mode,
                    creds,
                    prefix,
                    cache,
                    sid,
                    x,
                    gx,
                },
                hello,
            ))
        }
    }

    impl AwaitingServer {
        /// Step 3: checks the server, then reveals our identity (`sid, c'`).
        /// In private mode our identity is sent only after the server's identity
        /// satisfied our policy and its signature verified.
        pub fn on_server_hello(self, msg: &[u8], now: u64) -> Result<(Established, Vec<u8>)> {
            let (sid, share, c) = read_two_part(msg, tags::SERVER_HELLO, "server hello", true)?;
            if sid != self.sid {
                return Err(Error::WrongSession);
            }
            let (gy, gy_e) = share.expect("read with share");
            let gxy = dh(&self.x, &gy_e);
            let [htk_s, htk_c, atk_c2s, atk_s2c] = transcript_keys(self.mode, &sid, &self.gx, &gy, &gxy[..]);
            let inner = open_once(&htk_s, b"server", &c, "the server's hello")?;
            let mut r = Reader::new(&inner);
            let server = match self.mode {
                Mode::Sigma => {
                    let id_bytes = r.var_bytes("server blessing", MAX_BLESSING_LEN)?.to_vec();
                    let sig: [u8; 64] = r.array("server signature")?;
                    r.finish()?;
                    let server = Blessing::from_wire(&id_bytes)?.validate(&self.creds.roots, now)?;
                    let content = signed("sigma-i/server", &[&sid, &id_bytes, &self.gx, &gy]);
                    server
                        .verify(&content, &sig)
                        .map_err(|_| Error::BadSignature("server's"))?;
                    server
                }
                Mode::Private => {
                    // Keep the ciphertexts' bytes as received: the signature covers them.
                    let start = inner.len() - r.remaining();
                    let cts = read_ciphertexts(&mut r)?;
                    let ct_bytes = &inner[start..inner.len() - r.remaining()];
                    let sealed: [u8; SEALED_SIGNATURE_LEN] = r.array("sealed server signature")?;
                    r.finish()?;
                    let pc = self.prefix.as_ref().expect("checked at start");
                    // CT_S names the policy; only a client that satisfies it can read
                    // ID_S and k_σ. The AEAD's associated data binds nothing
                    // session-specific, so that a server may cache CT_S.
                    let pt = Zeroizing::new(decrypt_for_us(
                        pc,
                        &cts,
                        b"tacit-discovery/server-identity",
                        self.cache.as_deref(),
                    )?);
                    let (id_bytes, k_sigma) = read_identity_plaintext(&pt)?;
                    let k = signature_key(&htk_s, &k_sigma, &sid, ct_bytes, &self.gx, &gy);
                    let sig = open_once(&k, b"server-signature", &sealed, "the server's signature")?;
                    let server = Blessing::from_wire(&id_bytes)?.validate(&self.creds.roots, now)?;
                    let content = signed("private/server", &[&sid, ct_bytes, &self.gx, &gy]);
                    server
                        .verify(&content, &sig)
                        .map_err(|_| Error::BadSignature("server's"))?;
                    server
                }
            };
            // The server satisfied our policy: only now do we reveal who we are.
            check_authorized(&server, &self.creds.policy)?;
            let id_c = self.creds.blessing.to_wire();
            let label = match self.mode {
                Mode::Sigma => "sigma-i/client",
                Mode::Private => "private/client",
            };
            let sig = self.creds.principal.sign(&signed(label, &[&sid, &id_c, &self.gx, &gy]));
            let mut w = Writer::new();
            w.put_var_bytes(&id_c);
            w.put_fixed(&sig);
            let c2 = seal_once(&htk_c, b"client", &w.into_bytes());
            Ok((
                Established {
                    peer: server,
                    keys: SessionKeys::new(&atk_c2s, &atk_s2c),
                },
                two_part(tags::CLIENT_FINISH, &sid, None, &c2),
            ))
        }
    }
}

/// Server side of SIGMA-I and of private mutual authentication.
pub mod server {
    use super::*;

    /// A server's long-lived configuration.
    pub struct ServerConfig {
        /// Our credentials (`ID_S`, `π_S`).
        pub creds: Credentials,
        /// For private mode: the master public key to encrypt our identity under `π_S`.
        pub prefix: Option<PrefixCredentials>,
        /// The `CT_S` reused for every session, with the `k_σ` inside it (paper §6.2
        /// precomputes it; costs linkability: see `docs/discovery.md`). `None`
        /// encrypts afresh each time.
        cached_identity: Mutex<Option<(Vec<PrefixCiphertext>, Key)>>,
        /// Whether to cache `CT_S` at all.
        pub cache_identity: bool,
        /// The handshakes this server answers; any other client hello is refused
        /// before anything is sent back.
        modes: Vec<Mode>,
    }

    impl core::fmt::Debug for ServerConfig {
        fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
            write!(
                f,
                "ServerConfig({:?}, modes {:?}, cache {})",
                self.creds, self.modes, self.cache_identity
            )
        }
    }

    impl ServerConfig {
        /// A server configuration. A server given prefix credentials is *private*:
        /// it answers only [`Mode::Private`], because a SIGMA-I server hello carries
        /// its blessing to any client that asks (use [`ServerConfig::with_modes`] to
        /// run a public SIGMA-I endpoint on purpose). A server without them is public
        /// and answers SIGMA-I only.
        pub fn new(creds: Credentials, prefix: Option<PrefixCredentials>, cache_identity: bool) -> Self {
            let modes = if prefix.is_some() {
                vec![Mode::Private]
            } else {
                vec![Mode::Sigma]
            };
            ServerConfig {
                creds,
                prefix,
                cached_identity: Mutex::new(None),
                cache_identity,
                modes,
            }
        }

        /// Answers exactly `modes`. Allowing [`Mode::Sigma`] makes the server's name
        /// and key public: every client that connects receives its blessing.
        pub fn with_modes(mut self, modes: &[Mode]) -> Self {
            self.modes = modes.to_vec();
            self
        }

        /// The handshakes this server answers.
        pub fn modes(&self) -> &[Mode] {
            &self.modes
        }

        /// Whether this server answers `mode`.
        pub fn allows(&self, mode: Mode) -> bool {
            self.modes.contains(&mode)
        }

        /// `CT_S = PE.Enc(π_S, ID_S ‖ k_σ)` and its `k_σ` (cached if so configured).
        fn encrypted_identity(&self, rng: &mut impl CryptoRngCore) -> Result<(Vec<PrefixCiphertext>, Key)> {
            let pc = self
                .prefix
                .as_ref()
                .ok_or_else(|| Error::Config("private mode needs the IBE master public key".into()))?;
            if self.cache_identity
                && let Some((c, k)) = self
                    .cached_identity
                    .lock()
                    .map_err(|_| Error::Config("poisoned".into()))?
                    .as_ref()
            {
                return Ok((c.clone(), k.clone()));
            }
            let mut k = Zeroizing::new([0u8; 32]);
            rng.fill_bytes(&mut k[..]);
            let cts = encrypt_to_policy(
                &pc.mpk,
                &self.creds.policy,
                b"tacit-discovery/server-identity",
                &identity_plaintext(&self.creds.blessing.to_wire(), &k),
                rng,
            )?;
            if self.cache_identity
                && let Ok(mut c) = self.cached_identity.lock()
            {
                *c = Some((cts.clone(), k.clone()));
            }
            Ok((cts, k))
        }
    }

    /// The server waiting for the client's finish.
    pub struct AwaitingClient {
        mode: Mode,
        creds: Credentials,
        sid: [u8; ID_LEN],
        gx: [u8; 32],
        gy: [u8; 32],
        htk_c: Key,
        atk_c2s: Key,
        atk_s2c: Key,
    }

    impl core::fmt::Debug for AwaitingClient {
        fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
            write!(f, "AwaitingClient({:?})", self.mode)
        }
    }

    /// Step 2: answers a client hello with `sid, gʸ, c`.
    pub fn on_client_hello(
        cfg: &ServerConfig,
        hello: &[u8],
        rng: &mut impl CryptoRngCore,
    ) -> Result<(AwaitingClient, Vec<u8>)> {
        let (h, gx_e) = ClientHello::from_bytes(hello)?;
        if !cfg.allows(h.mode) {
            return Err(Error::ModeRefused(h.mode.name()));
        }
        let (y, gy) = dh_share(rng);
        let gxy = dh(&y, &gx_e);
        let [htk_s, htk_c, atk_c2s, atk_s2c] = transcript_keys(h.mode, &h.sid, &h.gx, &gy, &gxy[..]);
        let mut w = Writer::new();
        match h.mode {
            Mode::Sigma => {
                let id = cfg.creds.blessing.to_wire();
                let sig = cfg
                    .creds
                    .principal
                    .sign(&signed("sigma-i/server", &[&h.sid, &id, &h.gx, &gy]));
                w.put_var_bytes(&id);
                w.put_fixed(&sig);
            }
            Mode::Private => {
                let (cts, k_sigma) = cfg.encrypted_identity(rng)?;
                let mut cw = Writer::new();
                put_ciphertexts(&mut cw, &cts);
                let ct_bytes = cw.into_bytes();
                let sig = cfg
                    .creds
                    .principal
                    .sign(&signed("private/server", &[&h.sid, &ct_bytes, &h.gx, &gy]));
                // Sealed under K_σ, which needs k_σ from inside CT_S (issue 32).
                let k = signature_key(&htk_s, &k_sigma, &h.sid, &ct_bytes, &h.gx, &gy);
                w.put_fixed(&ct_bytes);
                w.put_fixed(&seal_once(&k, b"server-signature", &sig));
            }
        }
        let c = seal_once(&htk_s, b"server", &w.into_bytes());
        Ok((
            AwaitingClient {
                mode: h.mode,
                creds: cfg.creds.clone(),
                sid: h.sid,
                gx: h.gx,
                gy,
                htk_c,
                atk_c2s,
                atk_s2c,
            },
            two_part(tags::SERVER_HELLO, &h.sid, Some(&gy), &c),
        ))
    }

    impl AwaitingClient {
        /// Step 4: checks the client's identity, policy and signature.
        pub fn on_client_finish(self, msg: &[u8], now: u64) -> Result<Established> {
            let (sid, _, c) = read_two_part(msg, tags::CLIENT_FINISH, "client finish", false)?;
            if sid != self.sid {
                return Err(Error::WrongSession);
            }
            let inner = open_once(&self.htk_c, b"client", &c, "the client's finish")?;
            let mut r = Reader::new(&inner);
            let id_c = r.var_bytes("client blessing", MAX_BLESSING_LEN)?.to_vec();
            let sig: [u8; 64] = r.array("client signature")?;
            r.finish()?;
            let client = Blessing::from_wire(&id_c)?.validate(&self.creds.roots, now)?;
            check_authorized(&client, &self.creds.policy)?;
            let label = match self.mode {
                Mode::Sigma => "sigma-i/client",
                Mode::Private => "private/client",
            };
            client
                .verify(&signed(label, &[&sid, &id_c, &self.gx, &self.gy]), &sig)
                .map_err(|_| Error::BadSignature("client's"))?;
            Ok(Established {
                peer: client,
                keys: SessionKeys::new(&self.atk_s2c, &self.atk_c2s),
            })
        }
    }
}

// ---------------------------------------------------------------------------
// Private service discovery with 0-RTT (§5, Fig. 2)

/// Private service discovery: advertisements and the 0-RTT handshake.
pub mod zero_rtt {
    use super::*;

    /// A service's current advertisement with its semi-static secret `s`.
    pub struct AdvertSecret {
        bid: [u8; ID_LEN],
        s: SecretScalar<G>,
        gs: [u8; 32],
        expiry: u64,
        id_hash: [u8; 32],
        bytes: Vec<u8>,
        /// First flights seen for this advertisement (`(gˣ)`), kept until it expires.
        seen: Mutex<HashSet<[u8; 32]>>,
    }

    impl core::fmt::Debug for AdvertSecret {
        fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
            write!(f, "AdvertSecret(bid {}, expires {})", hex(&self.bid), self.expiry)
        }
    }

    pub(crate) fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    impl AdvertSecret {
        /// Makes the broadcast `bid, PE.Enc(π_S, (ID_S, gˢ, expiry, SIG_S(bid, ID_S,
        /// gˢ, expiry)))` valid until `expiry` (Unix seconds): a fresh `bid` and `s`
        /// every time, so refreshing an advertisement also refreshes the key whose
        /// compromise would expose early data (§5.1, "forward secrecy").
        pub fn new(
            creds: &Credentials,
            mpk: &MasterPublicKey,
            expiry: u64,
            rng: &mut impl CryptoRngCore,
        ) -> Result<Self> {
            let bid = random_id(rng);
            let (s, gs) = dh_share(rng);
            let id = creds.blessing.to_wire();
            let sig = creds
                .principal
                .sign(&signed("0rtt/advert", &[&bid, &id, &gs, &expiry.to_be_bytes()]));
            let mut w = Writer::new();
            w.put_var_bytes(&id);
            w.put_fixed(&gs);
            w.put_u64(expiry);
            w.put_fixed(&sig);
            let cts = encrypt_to_policy(mpk, &creds.policy, &bid, &w.into_bytes(), rng)?;
            let mut a = Writer::new();
            a.put_envelope(tags::ADVERT);
            a.put_fixed(&bid);
            put_ciphertexts(&mut a, &cts);
            Ok(AdvertSecret {
                bid,
                s,
                gs,
                expiry,
                id_hash: sha256(&[&id]),
                bytes: a.into_bytes(),
                seen: Mutex::new(HashSet::new()),
            })
        }

        /// The advertisement to broadcast.
        pub fn advert(&self) -> &[u8] {
            &self.bytes
        }

        /// Its broadcast id.
        pub fn bid(&self) -> &[u8; ID_LEN] {
            &self.bid
        }

        /// Its signed expiry.
        pub fn expiry(&self) -> u64 {
            self.expiry
        }
    }

    /// What an authorised client learns from an advertisement.
    #[derive(Debug, Clone)]
    pub struct DiscoveredService {
        /// The broadcast id.
        pub bid: [u8; ID_LEN],
        /// The service's authenticated identity.
        pub server: ValidatedBlessing,
        /// Its signed expiry.
        pub expiry: u64,
        gs: [u8; 32],
        gs_e: Element,
        id_bytes: Vec<u8>,
    }

    /// The client's processing of an advertisement (§5 step 1): decrypt with our
    /// prefix key, validate the chain, check it against our policy, verify the
    /// signature and the expiry. A client outside the policy learns only the policy.
    pub fn open_advert(
        advert: &[u8],
        creds: &Credentials,
        prefix: &PrefixCredentials,
        now: u64,
    ) -> Result<DiscoveredService> {
        let mut r = Reader::new(advert);
        r.envelope(tags::ADVERT, "advertisement")?;
        let bid: [u8; ID_LEN] = r.array("broadcast id")?;
        let cts = read_ciphertexts(&mut r)?;
        r.finish()?;
        let pt = decrypt_for_us(prefix, &cts, &bid, None)?;
        let mut r = Reader::new(&pt);
        let id_bytes = r.var_bytes("server blessing", MAX_BLESSING_LEN)?.to_vec();
        let (gs, gs_e) = read_share(&mut r, "semi-static share")?;
        let expiry = r.u64()?;
        let sig: [u8; 64] = r.array("advert signature")?;
        r.finish()?;
        let server = Blessing::from_wire(&id_bytes)?.validate(&creds.roots, now)?;
        server
            .verify(
                &signed("0rtt/advert", &[&bid, &id_bytes, &gs, &expiry.to_be_bytes()]),
                &sig,
            )
            .map_err(|_| Error::BadSignature("advertisement's"))?;
        if now > expiry {
            return Err(Error::AdvertExpired { expiry, now });
        }
        check_authorized(&server, &creds.policy)?;
        Ok(DiscoveredService {
            bid,
            server,
            expiry,
            gs,
            gs_e,
            id_bytes,
        })
    }

    fn first_keys(bid: &[u8], sid: &[u8], gs: &[u8], gx: &[u8], gsx: &[u8]) -> [Key; 3] {
        // (htk, htk', eadk) = KDF(gˢ, gˣ, gˢˣ)
        kdf::<3>("0rtt/handshake", &[gsx], &[bid, sid, gs, gx])
    }

    fn app_keys(bid: &[u8], sid: &[u8], gs: &[u8], gx: &[u8], gy: &[u8], gsx: &[u8], gxy: &[u8]) -> [Key; 2] {
        // atk = KDF(gˢ, gˣ, gˢˣ, gʸ, gˣʸ), one key per direction
        kdf::<2>("0rtt/application", &[gsx, gxy], &[bid, sid, gs, gx, gy])
    }

    /// The client after its first flight.
    pub struct ClientAwaitingReply {
        service: DiscoveredService,
        sid: [u8; ID_LEN],
        x: SecretScalar<G>,
        gx: [u8; 32],
        gsx: Key,
        htk2: Key,
        id_c_hash: [u8; 32],
    }

    impl core::fmt::Debug for ClientAwaitingReply {
        fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
            write!(f, "ClientAwaitingReply({})", self.service.server.name())
        }
    }

    /// Step 2: one flight `bid, sid, gˣ, {ID_S, ID_C, SIG_C(bid, sid, ID_S, ID_C, gˢ,
    /// gˣ)}_htk, {early data}_eadk`.
    pub fn connect(
        service: DiscoveredService,
        creds: &Credentials,
        early_data: &[u8],
        rng: &mut impl CryptoRngCore,
    ) -> Result<(ClientAwaitingReply, Vec<u8>)> {
        check_payload(early_data)?;
        let sid = random_id(rng);
        let (x, gx) = dh_share(rng);
        let gsx = dh(&x, &service.gs_e);
        let [htk, htk2, eadk] = first_keys(&service.bid, &sid, &service.gs, &gx, &gsx[..]);
        let id_c = creds.blessing.to_wire();
        let sig = creds.principal.sign(&signed(
            "0rtt/client",
            &[&service.bid, &sid, &service.id_bytes, &id_c, &service.gs, &gx],
        ));
        let mut w = Writer::new();
        w.put_var_bytes(&service.id_bytes);
        w.put_var_bytes(&id_c);
        w.put_fixed(&sig);
        let c1 = seal_once(&htk, b"0rtt/c1", &w.into_bytes());
        let c2 = seal_once(&eadk, b"0rtt/early", early_data);
        let mut m = Writer::new();
        m.put_envelope(tags::ZERO_RTT_HELLO);
        m.put_fixed(&service.bid);
        m.put_fixed(&sid);
        m.put_fixed(&gx);
        m.put_var_bytes(&c1);
        m.put_var_bytes(&c2);
        Ok((
            ClientAwaitingReply {
                sid,
                x,
                gx,
                gsx,
                htk2,
                id_c_hash: sha256(&[&id_c]),
                service,
            },
            m.into_bytes(),
        ))
    }

    /// A completed 0-RTT session, with the application data that came with the last
    /// message.
    #[derive(Debug)]
    pub struct ZeroRttSession {
        /// The session.
        pub session: Established,
        /// Early data from the client (server side) or the server's first application
        /// message (client side).
        pub data: Vec<u8>,
    }

    impl ClientAwaitingReply {
        /// Step 4: checks the confirmation and opens the server's first message under
        /// the forward-secret `atk`.
        pub fn on_reply(self, msg: &[u8]) -> Result<ZeroRttSession> {
            let mut r = Reader::new(msg);
            r.envelope(tags::ZERO_RTT_REPLY, "0-RTT reply")?;
            let bid: [u8; ID_LEN] = r.array("broadcast id")?;
            let sid: [u8; ID_LEN] = r.array("session id")?;
            let (gy, gy_e) = read_share(&mut r, "server share")?;
            let c1 = r.var_bytes("confirmation", 1024)?.to_vec();
            let c2 = r.var_bytes("application data", MAX_PAYLOAD_LEN + 16)?.to_vec();
            r.finish()?;
            if bid != self.service.bid || sid != self.sid {
                return Err(Error::WrongSession);
            }
            let conf = open_once(&self.htk2, b"0rtt/c1'", &c1, "the server's confirmation")?;
            let expected = confirmation(&bid, &sid, &sha256(&[&self.service.id_bytes]), &self.id_c_hash);
            // Compared in constant time: the confirmation is keyed material.
            if !bool::from(subtle::ConstantTimeEq::ct_eq(conf.as_slice(), expected.as_slice())) {
                return Err(Error::BadConfirmation);
            }
            let gxy = dh(&self.x, &gy_e);
            let [c2s, s2c] = app_keys(&bid, &sid, &self.service.gs, &self.gx, &gy, &self.gsx[..], &gxy[..]);
            let mut keys = SessionKeys::new(&c2s, &s2c);
            let data = keys.open(&c2)?;
            Ok(ZeroRttSession {
                session: Established {
                    peer: self.service.server,
                    keys,
                },
                data,
            })
        }
    }

    fn confirmation(bid: &[u8], sid: &[u8], id_s: &[u8; 32], id_c: &[u8; 32]) -> Vec<u8> {
        [bid, sid, id_s, id_c].concat()
    }

    /// The service side: its current advertisements (the current one and, while they
    /// have not expired, the ones it replaced).
    pub struct Service {
        creds: Credentials,
        adverts: Mutex<Vec<Arc<AdvertSecret>>>,
        replay_limit: usize,
    }

    /// Most 0-RTT first flights one advertisement accepts (its replay cache: 32 bytes
    /// each, 2 MiB at most); beyond, [`Error::ReplayCacheFull`] until the next
    /// advertisement. Only authorised clients reach the cache, so this bounds what
    /// they can make the service store (issue 32).
    pub const MAX_ZERO_RTT_PER_ADVERT: usize = 65_536;

    impl core::fmt::Debug for Service {
        fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
            write!(f, "Service({:?})", self.creds)
        }
    }

    /// A verified first flight, before the server answers.
    pub struct Accepted {
        /// The client's authenticated identity.
        pub client: ValidatedBlessing,
        /// Its early data (replay-protected for the advertisement's lifetime).
        pub early_data: Vec<u8>,
        advert: Arc<AdvertSecret>,
        sid: [u8; ID_LEN],
        gx: [u8; 32],
        gx_e: Element,
        gsx: Key,
        htk2: Key,
        id_c_hash: [u8; 32],
    }

    impl core::fmt::Debug for Accepted {
        fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
            write!(f, "Accepted({})", self.client.name())
        }
    }

    impl Service {
        /// A service presenting `creds` (its blessing and policy `π_S`).
        pub fn new(creds: Credentials) -> Self {
            Service {
                creds,
                adverts: Mutex::new(Vec::new()),
                replay_limit: MAX_ZERO_RTT_PER_ADVERT,
            }
        }

        /// The same with at most `n` 0-RTT first flights per advertisement.
        pub fn with_replay_limit(mut self, n: usize) -> Self {
            self.replay_limit = n;
            self
        }

        /// Starts a new advertisement valid until `expiry`; older ones keep being
        /// accepted until their own expiry. Returns it for broadcasting.
        pub fn refresh(
            &self,
            mpk: &MasterPublicKey,
            now: u64,
            expiry: u64,
            rng: &mut impl CryptoRngCore,
        ) -> Result<Arc<AdvertSecret>> {
            let a = Arc::new(AdvertSecret::new(&self.creds, mpk, expiry, rng)?);
            let mut all = self.adverts.lock().map_err(|_| Error::Config("poisoned".into()))?;
            all.retain(|x| x.expiry >= now);
            all.push(a.clone());
            Ok(a)
        }

        /// Step 3: checks a first flight: a current advertisement, decryptable
        /// handshake and early data, `ID₁ = ID_S`, `ID₂` valid and inside `π_S`, the
        /// client's signature, and no replay.
        pub fn on_hello(&self, msg: &[u8], now: u64) -> Result<Accepted> {
            let mut r = Reader::new(msg);
            r.envelope(tags::ZERO_RTT_HELLO, "0-RTT hello")?;
            let bid: [u8; ID_LEN] = r.array("broadcast id")?;
            let sid: [u8; ID_LEN] = r.array("session id")?;
            let (gx, gx_e) = read_share(&mut r, "client share")?;
            let c1 = r
                .var_bytes("handshake ciphertext", 2 * MAX_BLESSING_LEN + 256)?
                .to_vec();
            let c2 = r.var_bytes("early data", MAX_PAYLOAD_LEN + 16)?.to_vec();
            r.finish()?;
            let advert = self
                .adverts
                .lock()
                .map_err(|_| Error::Config("poisoned".into()))?
                .iter()
                .find(|a| a.bid == bid)
                .cloned()
                .ok_or(Error::UnknownAdvert)?;
            if now > advert.expiry {
                return Err(Error::AdvertExpired {
                    expiry: advert.expiry,
                    now,
                });
            }
            let gsx = dh(&advert.s, &gx_e);
            let [htk, htk2, eadk] = first_keys(&bid, &sid, &advert.gs, &gx, &gsx[..]);
            let inner = open_once(&htk, b"0rtt/c1", &c1, "the client's first flight")?;
            let early_data = open_once(&eadk, b"0rtt/early", &c2, "the client's early data")?;
            let mut r = Reader::new(&inner);
            let id1 = r.var_bytes("server blessing", MAX_BLESSING_LEN)?.to_vec();
            let id2 = r.var_bytes("client blessing", MAX_BLESSING_LEN)?.to_vec();
            let sig: [u8; 64] = r.array("client signature")?;
            r.finish()?;
            if sha256(&[&id1]) != advert.id_hash {
                return Err(Error::BadConfirmation);
            }
            let client = Blessing::from_wire(&id2)?.validate(&self.creds.roots, now)?;
            check_authorized(&client, &self.creds.policy)?;
            client
                .verify(&signed("0rtt/client", &[&bid, &sid, &id1, &id2, &advert.gs, &gx]), &sig)
                .map_err(|_| Error::BadSignature("client's"))?;
            // Replay protection (§5.1): each first flight is accepted once per
            // advertisement. Checked last so that garbage cannot fill the cache, and
            // bounded, so that authorised clients cannot fill memory either.
            {
                let mut seen = advert.seen.lock().map_err(|_| Error::Config("poisoned".into()))?;
                if seen.contains(&gx) {
                    return Err(Error::Replay);
                }
                if seen.len() >= self.replay_limit {
                    return Err(Error::ReplayCacheFull(self.replay_limit));
                }
                seen.insert(gx);
            }
            Ok(Accepted {
                client,
                early_data,
                sid,
                gx,
                gx_e,
                gsx,
                htk2,
                id_c_hash: sha256(&[&id2]),
                advert,
            })
        }
    }

    impl Accepted {
        /// The reply `bid, sid, gʸ, {bid, sid, ID_S, ID_C}_htk', {data}_atk` with a
        /// fresh `y`: `data` and everything after it are forward secret.
        pub fn reply(self, data: &[u8], rng: &mut impl CryptoRngCore) -> Result<(Established, Vec<u8>)> {
            check_payload(data)?;
            let (y, gy) = dh_share(rng);
            let gxy = dh(&y, &self.gx_e);
            let a = &self.advert;
            let [c2s, s2c] = app_keys(&a.bid, &self.sid, &a.gs, &self.gx, &gy, &self.gsx[..], &gxy[..]);
            let conf = confirmation(&a.bid, &self.sid, &a.id_hash, &self.id_c_hash);
            let c1 = seal_once(&self.htk2, b"0rtt/c1'", &conf);
            let mut keys = SessionKeys::new(&s2c, &c2s);
            let c2 = keys.seal(data);
            let mut m = Writer::new();
            m.put_envelope(tags::ZERO_RTT_REPLY);
            m.put_fixed(&a.bid);
            m.put_fixed(&self.sid);
            m.put_fixed(&gy);
            m.put_var_bytes(&c1);
            m.put_var_bytes(&c2);
            Ok((
                Established {
                    peer: self.client,
                    keys,
                },
                m.into_bytes(),
            ))
        }
    }
}
