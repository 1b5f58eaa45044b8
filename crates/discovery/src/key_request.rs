//! Who may obtain a prefix key: the IBE root authority extracts the key of a name only
//! for a requester that proves, over a fresh challenge, that it holds a valid blessing
//! for that name (issue 10; paper §4, "the secret key extraction is carried out by IBE
//! root authorities … which may coincide with certificate authorities"). Sans-I/O:
//! bytes in, bytes out; time and randomness come from the caller.
//!
//! ```text
//! requester                                                     IBE root
//!   KeyHello                                   ───────────▶
//!                                              ◀───────────     KeyChallenge: n (32 fresh bytes), H(MPK)
//!   check H(MPK) = H(our MPK)
//!   e ← Z_q, E = e·G
//!   KeyRequest: n, name, chain, E,             ───────────▶     n is the challenge of this connection;
//!     SIG(n, H(MPK), name, E, chain)                            name = the chain's name; chain valid under
//!                                                               the trusted roots (expiry, caveats,
//!                                                               revocation); SIG verifies under the
//!                                                               chain's key; K = Extract(MSK, name);
//!                                              ◀───────────     KeyGrant: Y = y·G, AEAD_k(K)
//!                                                               k = KDF(y·E; n, H(MPK), E, Y, chain)
//!   k = KDF(e·Y; …); K = open; check
//!   e(Q, K) = e(g₁, g₂) for every prefix (the
//!   pairing check on load) and K's name = name
//! ```
//!
//! * The root extracts for the **validated** name only, never for a name the requester
//!   merely states: the request's name must equal the chain's, and the chain must
//!   validate under the naming roots the IBE root trusts.
//! * The signature binds the fresh challenge, the authority's key, the ephemeral key
//!   and the chain: an answer to another challenge (a replay), a chain presented
//!   without its key (a stolen blessing) and a request for another authority all
//!   fail.
//! * The key travels encrypted to the ephemeral key `E`, which only the signer chose,
//!   so an eavesdropper or a relay learns nothing; the requester checks it against
//!   the master public key it already trusts (`PrefixKey::from_bytes`), so a fake root
//!   cannot hand it a key of another authority.
//!
//! Encodings (tags in `docs/wire.md`):
//!
//! ```text
//! KeyHello     = 01 0346
//! KeyChallenge = 01 0347 || n (32) || H(MPK) (32)                 H = SHA-256 of MPK's encoding
//! KeyRequest   = 01 0348 || n (32) || u8 len || name || u32 len || chain || E (32) || signature (64)
//! KeyGrant     = 01 0349 || Y (32) || u32 len || AEAD ciphertext of the PrefixKey encoding
//! signature    = Principal::sign("tacit-discovery/key-request/v1" framed as below)
//! ```
//!
//! A refusal is a [`tacit_wire::ErrorMessage`] with the reason.

use crate::blessing::{self, Blessing, CertificateId, Name, Principal, TrustedRoots, ValidatedBlessing};
use crate::ibe::MasterPublicKey;
use crate::prefix::{self, Prefix, PrefixAuthority, PrefixKey};
use rand_core::CryptoRngCore;
use sha2::{Digest, Sha256};
use std::sync::Arc;
use tacit_crypto::aead::{AeadKey, NONCE_LEN};
use tacit_crypto::kdf::hkdf_sha256;
use tacit_crypto::{PrimeGroup, Ristretto255, SecretScalar};
use tacit_wire::{Decode, Encode, ErrorMessage, Reader, Writer};

type G = Ristretto255;

/// Message-type tags (registered in `docs/wire.md`).
pub mod tags {
    /// [`super::Requester::start`]'s hello.
    pub const KEY_HELLO: u16 = 0x0346;
    /// The root's challenge.
    pub const KEY_CHALLENGE: u16 = 0x0347;
    /// The requester's proof and ephemeral key.
    pub const KEY_REQUEST: u16 = 0x0348;
    /// The encrypted prefix key.
    pub const KEY_GRANT: u16 = 0x0349;
}

/// Largest encoded blessing a request may carry.
pub const MAX_BLESSING_LEN: usize = crate::handshake::MAX_BLESSING_LEN;
/// Largest encrypted prefix key a grant may carry (8 prefixes of 128 bytes and a
/// 255-byte name, with room to spare).
pub const MAX_GRANT_LEN: usize = 4096;

const SIGNATURE_LABEL: &str = "tacit-discovery/key-request/v1";
const KDF_SALT: &[u8] = b"tacit-discovery/key-grant/v1";

/// What can go wrong when asking for, or granting, a prefix key.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A message that does not decode.
    #[error("malformed key-request message: {0}")]
    Wire(#[from] tacit_wire::Error),
    /// The requester's chain does not validate (untrusted root, bad signature,
    /// expired, revoked…).
    #[error("the requester's blessing is not valid: {0}")]
    Blessing(#[from] blessing::Error),
    /// Extraction or the check of the granted key failed.
    #[error("{0}")]
    Prefix(#[from] prefix::Error),
    /// The request answers another challenge than this connection's (a replayed
    /// request).
    #[error("the request answers another challenge (replayed or stale)")]
    WrongChallenge,
    /// The request names another name than its chain.
    #[error("the request asks for {requested} but its blessing is for {blessed}")]
    NameMismatch {
        /// The name asked for.
        requested: String,
        /// The name the chain claims.
        blessed: String,
    },
    /// The request's signature does not verify under the key the chain names (the
    /// blessing was presented without its key, or the request was altered).
    #[error("the request is not signed by the key its blessing names")]
    BadSignature,
    /// The root serves another master public key than the requester expects.
    #[error("the IBE root serves another master public key than the one given (--mpk)")]
    WrongAuthority,
    /// The grant does not decrypt (altered, or not made for this request).
    #[error("the key grant does not decrypt")]
    Decrypt,
    /// The granted key is for another name than the one asked for.
    #[error("the IBE root granted a key for {got}, not {wanted}")]
    WrongName {
        /// The name asked for.
        wanted: String,
        /// The key's name.
        got: String,
    },
    /// The root refused and said why.
    #[error("the IBE root refused: {0}")]
    Refused(String),
    /// The IBE root trusts the requester's root name under several keys not marked
    /// as one root's rollover: prefix keys name only names, so a key for this name
    /// would open what is encrypted for the other roots of that name (issue 32).
    #[error(
        "this IBE root trusts the root name {name} under {keys} keys; prefix keys name only names, so it \
         grants none for {name} until one of them is dropped or they are marked as one root's rollover"
    )]
    SharedRootName {
        /// The root name.
        name: String,
        /// How many keys it is trusted with.
        keys: usize,
    },
    /// An invalid Diffie–Hellman share.
    #[error("invalid ephemeral key: {0}")]
    Group(#[from] tacit_crypto::Error),
}

/// The result type of this module.
pub type Result<T> = core::result::Result<T, Error>;

fn mpk_hash(mpk: &MasterPublicKey) -> [u8; 32] {
    Sha256::digest(mpk.to_wire()).into()
}

fn name_bytes(w: &mut Writer, name: &str) {
    // A name is at most 255 bytes (MAX_NAME_LEN).
    w.put_u8(name.len() as u8);
    w.put_fixed(name.as_bytes());
}

/// What the requester signs: the label, then each field length-prefixed.
fn signed_request(nonce: &[u8; 32], mpk_hash: &[u8; 32], name: &str, e: &[u8; 32], chain: &[u8]) -> Vec<u8> {
    let mut w = Writer::new();
    w.put_str(SIGNATURE_LABEL);
    for f in [&nonce[..], &mpk_hash[..], name.as_bytes(), &e[..], chain] {
        w.put_var_bytes(f);
    }
    w.into_bytes()
}

fn grant_key(
    dh: &[u8; 32],
    nonce: &[u8; 32],
    mpk_hash: &[u8; 32],
    e: &[u8; 32],
    y: &[u8; 32],
    chain: &[u8],
) -> zeroize::Zeroizing<[u8; 32]> {
    let mut h = Sha256::new();
    for f in [&nonce[..], &mpk_hash[..], &e[..], &y[..], chain] {
        h.update((f.len() as u64).to_be_bytes());
        h.update(f);
    }
    let info: [u8; 32] = h.finalize().into();
    let okm = hkdf_sha256(KDF_SALT, dh, &info, 32).expect("32 ≤ 255·32");
    let mut k = zeroize::Zeroizing::new([0u8; 32]);
    k.copy_from_slice(&okm);
    k
}

fn aad(nonce: &[u8; 32], y: &[u8; 32]) -> Vec<u8> {
    [&nonce[..], &y[..]].concat()
}

/// A refusal to send back: the reason as a [`ErrorMessage`].
pub fn refusal(e: &Error) -> Vec<u8> {
    ErrorMessage::new(e.to_string()).to_wire()
}

fn peer_refused(msg: &[u8]) -> Option<Error> {
    match tacit_wire::Envelope::peek(msg) {
        Ok(env) if env.tag == tacit_wire::tags::ERROR => Some(match ErrorMessage::from_wire(msg) {
            Ok(m) => Error::Refused(m.reason),
            Err(e) => Error::Wire(e),
        }),
        _ => None,
    }
}

// ---------------------------------------------------------------------------
// The IBE root's side

/// The IBE root authority answering key requests: its master secret key and the
/// naming roots whose blessings it honours (with their revocation lists).
pub struct KeyAuthority {
    authority: Arc<PrefixAuthority>,
    roots: TrustedRoots,
    mpk_hash: [u8; 32],
    /// Root names whose several trusted keys are one root's old and new keys.
    rollover: Arc<std::collections::BTreeSet<String>>,
}

impl core::fmt::Debug for KeyAuthority {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "KeyAuthority(<msk>, {} trusted roots)", self.roots.len())
    }
}

impl KeyAuthority {
    /// An authority extracting with `authority` for chains rooted in `roots`.
    pub fn new(authority: Arc<PrefixAuthority>, roots: TrustedRoots) -> Self {
        let mpk_hash = mpk_hash(authority.public());
        KeyAuthority {
            authority,
            roots,
            mpk_hash,
            rollover: Arc::default(),
        }
    }

    /// Marks the keys `name` is trusted with as one root's rollover (an old and a new
    /// key of the same owner): members under any of them get `name`'s prefix keys.
    /// Without the mark, a root name trusted under several keys gets no keys at all
    /// ([`Error::SharedRootName`]): IBE identities encode names only, so two owners of
    /// one name would read each other's advertisements.
    pub fn with_rollover(mut self, name: &str) -> Self {
        Arc::make_mut(&mut self.rollover).insert(name.to_string());
        self
    }

    /// Root names trusted under several keys that are not marked as a rollover: no
    /// key is granted under them. A serving command refuses to start with any.
    pub fn ambiguous_root_names(&self) -> Vec<(String, usize)> {
        ambiguous(&self.roots, &self.rollover)
    }

    /// The naming roots (and their revocation lists) this authority honours.
    pub fn roots(&self) -> &TrustedRoots {
        &self.roots
    }

    /// Answers a [`tags::KEY_HELLO`] with a fresh challenge.
    pub fn on_hello(&self, hello: &[u8], rng: &mut impl CryptoRngCore) -> Result<(AwaitingKeyRequest, Vec<u8>)> {
        let mut r = Reader::new(hello);
        r.envelope(tags::KEY_HELLO, "key hello")?;
        r.finish()?;
        let mut nonce = [0u8; 32];
        rng.fill_bytes(&mut nonce);
        let mut w = Writer::new();
        w.put_envelope(tags::KEY_CHALLENGE);
        w.put_fixed(&nonce);
        w.put_fixed(&self.mpk_hash);
        Ok((
            AwaitingKeyRequest {
                authority: self.authority.clone(),
                roots: self.roots.clone(),
                mpk_hash: self.mpk_hash,
                nonce,
                rollover: self.rollover.clone(),
            },
            w.into_bytes(),
        ))
    }
}

/// The root after its challenge: one request answers it.
pub struct AwaitingKeyRequest {
    authority: Arc<PrefixAuthority>,
    roots: TrustedRoots,
    mpk_hash: [u8; 32],
    nonce: [u8; 32],
    rollover: Arc<std::collections::BTreeSet<String>>,
}

/// Root names `roots` trusts under more than one key, except those in `rollover`.
fn ambiguous(roots: &TrustedRoots, rollover: &std::collections::BTreeSet<String>) -> Vec<(String, usize)> {
    let mut count = std::collections::BTreeMap::<&str, usize>::new();
    for r in roots.iter() {
        *count.entry(r.name()).or_default() += 1;
    }
    count
        .into_iter()
        .filter(|(name, n)| *n > 1 && !rollover.contains(*name))
        .map(|(name, n)| (name.to_string(), n))
        .collect()
}

impl core::fmt::Debug for AwaitingKeyRequest {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "AwaitingKeyRequest")
    }
}

/// What the root granted, for its log.
#[derive(Debug, Clone)]
pub struct Granted {
    /// The requester's validated blessing.
    pub requester: ValidatedBlessing,
    /// The identifier of the blessing it proved (what a root would revoke).
    pub blessing_id: CertificateId,
}

impl AwaitingKeyRequest {
    /// Checks the request at `now` and, if it proves a valid blessing for the name it
    /// asks for, extracts the prefix key of that (validated) name and encrypts it to
    /// the requester's ephemeral key. Checks, cheapest first: the challenge, that the
    /// name is the chain's, the chain (trusted root, signatures, expiry, caveats,
    /// revocation), the request's signature.
    pub fn on_request(self, msg: &[u8], now: u64, rng: &mut impl CryptoRngCore) -> Result<(Granted, Vec<u8>)> {
        let mut r = Reader::new(msg);
        r.envelope(tags::KEY_REQUEST, "key request")?;
        let nonce: [u8; 32] = r.array("challenge")?;
        let len = r.u8()? as usize;
        let name = core::str::from_utf8(r.fixed("requested name", len)?)
            .map_err(|_| tacit_wire::Error::invalid("requested name", "not valid UTF-8"))?
            .to_owned();
        let chain_bytes = r.var_bytes("blessing", MAX_BLESSING_LEN)?.to_vec();
        let e_raw: [u8; 32] = r.array("ephemeral key")?;
        let signature: [u8; 64] = r.array("request signature")?;
        r.finish()?;
        // Constant time is not needed: the nonce is public once sent.
        if nonce != self.nonce {
            return Err(Error::WrongChallenge);
        }
        let chain = Blessing::from_wire(&chain_bytes)?;
        let claimed = chain.unverified_name();
        if claimed.as_str() != name {
            return Err(Error::NameMismatch {
                requested: name,
                blessed: claimed.to_string(),
            });
        }
        let requester = chain.validate(&self.roots, now)?;
        // Issue 32: the key of a name opens what is encrypted to its prefixes, for
        // every root of that name; so one name, one root (or one root's rollover).
        let root_name = chain.root_name();
        if let Some((name, keys)) = ambiguous(&self.roots, &self.rollover)
            .into_iter()
            .find(|(n, _)| n == root_name)
        {
            return Err(Error::SharedRootName { name, keys });
        }
        requester
            .verify(
                &signed_request(&nonce, &self.mpk_hash, &name, &e_raw, &chain_bytes),
                &signature,
            )
            .map_err(|_| Error::BadSignature)?;
        let e = G::decode_element(&e_raw)?;
        let prefix = Prefix::parse(requester.name().as_str())?;
        let key = self.authority.extract(&prefix, rng)?;
        let y = SecretScalar::<G>::random(rng);
        let y_raw = G::element_bytes(&G::mul_base(y.expose()));
        let dh = zeroize::Zeroizing::new(G::element_bytes(&G::mul(&e, y.expose())));
        let k = grant_key(&dh, &nonce, &self.mpk_hash, &e_raw, &y_raw, &chain_bytes);
        let ct = AeadKey::new(*k).seal(&[0u8; NONCE_LEN], &aad(&nonce, &y_raw), &key.to_bytes());
        let mut w = Writer::new();
        w.put_envelope(tags::KEY_GRANT);
        w.put_fixed(&y_raw);
        w.put_var_bytes(&ct);
        Ok((
            Granted {
                blessing_id: chain.id(),
                requester,
            },
            w.into_bytes(),
        ))
    }
}

// ---------------------------------------------------------------------------
// The requester's side

/// A principal asking the IBE root for the prefix key of one of its names.
#[derive(Debug)]
pub struct Requester;

/// The requester after its hello.
pub struct AwaitingChallenge {
    principal: Arc<Principal>,
    blessing: Blessing,
    mpk: Arc<MasterPublicKey>,
}

impl core::fmt::Debug for AwaitingChallenge {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "AwaitingChallenge({})", self.blessing.unverified_name())
    }
}

impl Requester {
    /// Starts a request for the prefix key of `blessing`'s name, which `principal`
    /// holds; `mpk` is the IBE root's master public key the requester already trusts.
    pub fn start(
        principal: Arc<Principal>,
        blessing: Blessing,
        mpk: Arc<MasterPublicKey>,
    ) -> Result<(AwaitingChallenge, Vec<u8>)> {
        if blessing.public_key() != principal.public_key() {
            return Err(Error::Blessing(blessing::Error::NotOurBlessing {
                name: blessing.unverified_name().to_string(),
            }));
        }
        let mut w = Writer::new();
        w.put_envelope(tags::KEY_HELLO);
        Ok((
            AwaitingChallenge {
                principal,
                blessing,
                mpk,
            },
            w.into_bytes(),
        ))
    }
}

impl AwaitingChallenge {
    /// Answers the root's challenge: the chain, a fresh ephemeral key and a signature
    /// over both, the challenge and the authority's key.
    pub fn on_challenge(self, msg: &[u8], rng: &mut impl CryptoRngCore) -> Result<(AwaitingGrant, Vec<u8>)> {
        if let Some(e) = peer_refused(msg) {
            return Err(e);
        }
        let mut r = Reader::new(msg);
        r.envelope(tags::KEY_CHALLENGE, "key challenge")?;
        let nonce: [u8; 32] = r.array("challenge")?;
        let their_mpk: [u8; 32] = r.array("master public key hash")?;
        r.finish()?;
        let mpk_hash = mpk_hash(&self.mpk);
        if their_mpk != mpk_hash {
            return Err(Error::WrongAuthority);
        }
        let name = self.blessing.unverified_name();
        let chain = self.blessing.to_wire();
        let e = SecretScalar::<G>::random(rng);
        let e_raw = G::element_bytes(&G::mul_base(e.expose()));
        let sig = self
            .principal
            .sign(&signed_request(&nonce, &mpk_hash, name.as_str(), &e_raw, &chain));
        let mut w = Writer::new();
        w.put_envelope(tags::KEY_REQUEST);
        w.put_fixed(&nonce);
        name_bytes(&mut w, name.as_str());
        w.put_var_bytes(&chain);
        w.put_fixed(&e_raw);
        w.put_fixed(&sig);
        Ok((
            AwaitingGrant {
                mpk: self.mpk,
                name,
                chain,
                nonce,
                mpk_hash,
                e,
                e_raw,
            },
            w.into_bytes(),
        ))
    }
}

/// The requester after its request.
pub struct AwaitingGrant {
    mpk: Arc<MasterPublicKey>,
    name: Name,
    chain: Vec<u8>,
    nonce: [u8; 32],
    mpk_hash: [u8; 32],
    e: SecretScalar<G>,
    e_raw: [u8; 32],
}

impl core::fmt::Debug for AwaitingGrant {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "AwaitingGrant({})", self.name)
    }
}

impl AwaitingGrant {
    /// Decrypts the grant and checks the key: every IBE key in it against the master
    /// public key (one pairing each, [`PrefixKey::from_bytes`]) and its name against
    /// the name asked for.
    pub fn on_grant(self, msg: &[u8]) -> Result<PrefixKey> {
        if let Some(e) = peer_refused(msg) {
            return Err(e);
        }
        let mut r = Reader::new(msg);
        r.envelope(tags::KEY_GRANT, "key grant")?;
        let y_raw: [u8; 32] = r.array("root's ephemeral key")?;
        let ct = r.var_bytes("encrypted prefix key", MAX_GRANT_LEN)?;
        r.finish()?;
        let y = G::decode_element(&y_raw)?;
        let dh = zeroize::Zeroizing::new(G::element_bytes(&G::mul(&y, self.e.expose())));
        let k = grant_key(&dh, &self.nonce, &self.mpk_hash, &self.e_raw, &y_raw, &self.chain);
        let pt = zeroize::Zeroizing::new(
            AeadKey::new(*k)
                .open(&[0u8; NONCE_LEN], &aad(&self.nonce, &y_raw), ct)
                .map_err(|_| Error::Decrypt)?,
        );
        let key = PrefixKey::from_bytes(&self.mpk, &pt)?;
        if key.name().to_string() != self.name.as_str() {
            return Err(Error::WrongName {
                wanted: self.name.to_string(),
                got: key.name().to_string(),
            });
        }
        Ok(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tacit_crypto::rng::SecureRng;

    const NOW: u64 = 1_800_000_000;

    #[test]
    fn an_honest_requester_gets_the_key_of_its_name() {
        let mut rng = SecureRng::from_seed([21; 32]);
        let (home, home_b) = Principal::new_root(&mut rng, "Home", NOW + 1000).unwrap();
        let cam = Principal::generate(&mut rng);
        let cam_b = home
            .bless(&home_b, &cam.public_key(), "Camera", NOW + 1000, vec![])
            .unwrap();
        let mut roots = TrustedRoots::new();
        roots.add("Home", home.public_key()).unwrap();
        let ibe = Arc::new(PrefixAuthority::generate(&mut rng));
        let mpk = Arc::new(ibe.public().clone());
        let authority = KeyAuthority::new(ibe, roots);
        let (req, hello) = Requester::start(Arc::new(cam), cam_b.clone(), mpk).unwrap();
        let (root, challenge) = authority.on_hello(&hello, &mut rng).unwrap();
        let (req, request) = req.on_challenge(&challenge, &mut rng).unwrap();
        let (granted, grant) = root.on_request(&request, NOW, &mut rng).unwrap();
        assert_eq!(granted.requester.name().as_str(), "Home/Camera");
        assert_eq!(granted.blessing_id, cam_b.id());
        let key = req.on_grant(&grant).unwrap();
        assert_eq!(key.name().to_string(), "Home/Camera");
    }
}
