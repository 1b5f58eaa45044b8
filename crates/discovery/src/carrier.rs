//! Carrying encrypted service advertisements over mDNS / DNS-SD, or behind a short
//! pointer served by an auxiliary service (Wu, Taly, Shankar, Boneh, §6.3).
//!
//! A private-discovery advertisement (§5, Fig. 2) is opaque here: bytes produced by
//! the handshake, about 820 bytes for a one-prefix policy and more with several
//! prefixes. The paper's deployment note gives the two budgets this module works
//! with: an mDNS TXT record should stay within **1300 bytes** (RFC 6763 §6.2), and a
//! BLE advertising payload is **31 bytes**. An advertisement that fits is carried
//! *inline*; one that does not is stored by an auxiliary service on the same host and
//! the broadcast carries only a [`Pointer`].
//!
//! # TXT layout
//!
//! A TXT record is a sequence of strings, each one length byte and at most
//! [`TXT_STRING_MAX`] bytes of `key=value`. Values are raw bytes (see
//! [`tacit_net::mdns`]). The record is, in this order:
//!
//! ```text
//! v=1                                    version, always first         4 bytes
//! inline:  a0=<252 bytes> a1=<252 bytes> … a<n-1>=<1..=252 bytes>   ≤ 256 bytes each
//! pointer: p=<id (16) || aux port (u16 big-endian)>                   21 bytes
//! ```
//!
//! Chunk `a<i>` holds `255 − len("a<i>=")` bytes (252 for `a0`–`a9`); every chunk but
//! the last is full and the last is not empty, so each advertisement has exactly one
//! record. Measured sizes (length bytes included): a 700-byte advertisement takes
//! 716 bytes (chunks 252, 252, 196), the paper's 820-byte one 840 bytes, and the
//! largest inline advertisement, [`MAX_INLINE_ADVERT`] = 1272 bytes, exactly 1300; a
//! pointer record is 25 bytes ([`POINTER_TXT_LEN`]). [`from_txt`] refuses any other
//! list of entries: a missing or unknown version, unknown, repeated, missing or
//! out-of-order keys, non-canonical chunks, strings over 255 bytes and records over
//! 1300 bytes (checked before anything is copied).
//!
//! **What [`from_txt`] sees of a record received over mDNS.** Not the record's
//! bytes: `mdns-sd` 0.21 decodes them first and keeps only the first of entries
//! whose keys repeat (ignoring case) and drops entries whose key is not UTF-8
//! ([`tacit_net::mdns::txt_as_browsed`]; the crate gives no access to the raw
//! record). A record with a repeated or non-UTF-8 key is therefore read as the
//! record without those entries, and accepted if that is well formed; the refusal
//! of repeated keys holds only for entries handed to [`from_txt`] directly. This
//! costs nothing we rely on: the advertisement is authenticated ciphertext (§5), so
//! whatever a record is stripped to opens as the advertiser's own advertisement or
//! not at all, and a neighbour able to send a malformed record can as well send a
//! well-formed one. Test: `a_record_with_repeated_keys_is_read_as_mdns_sd_strips_it`
//! (`tests/carrier.rs`).
//!
//! The SRV record's port is the handshake port; the instance and host names are
//! random per publication ([`tacit_net::mdns::advertise_txt`]); the TXT record holds
//! nothing but the above, so nothing in the broadcast names its owner.
//!
//! # BLE
//!
//! [`Pointer::to_ble_bytes`] is `u8 version (1) || id (16) || u16 port`, 19 bytes. As
//! the data of a "Service Data – 16-bit UUID" AD structure (4 bytes of header) next
//! to the Flags AD structure (3 bytes) it makes a 26-byte advertising payload, within
//! [`BLE_BUDGET`]. BLE carries no IP address: a client reaches the auxiliary service
//! at an address it learns otherwise (its mDNS record, or a configured host).
//!
//! # The auxiliary service and what it learns
//!
//! [`serve_aux`] answers [`FetchAdvert`] (`01 0330 || id (16)`) with [`Advert`]
//! (`01 0331 || u32 len (1..=16384) || bytes`) or an [`ErrorMessage`] ("unknown
//! pointer"), one request per connection, over [`tacit_net`] frames. The advertisement
//! it returns is the same ciphertext an inline record would have broadcast, so
//! fetching it reveals nothing that listening would not. **What a fetch leaks**: the
//! service learns the client's network address and when it fetched which pointer,
//! that is, that *someone at that address* is discovering services here; it learns no
//! identity, and cannot tell whether the client could decrypt the advertisement. A
//! pointer is stable while its [`Publication`] lives, so it is as linkable as the
//! advertisement itself; publish again (a fresh pointer and instance name) to rotate.
//!
//! A discovering client connects to the addresses and port an mDNS record names; a
//! hostile neighbour can point it at any TCP port on the network, which costs one
//! connection attempt bounded by [`NetConfig::connect_timeout`].
//!
//! ```
//! use tacit_discovery::carrier::{from_txt, plan, to_txt, Budget, Carried, Plan};
//!
//! let advert = vec![7u8; 700];
//! assert_eq!(plan(&advert, Budget::Mdns), Plan::Inline { txt_len: 716 });
//! let txt = to_txt(&Carried::Inline(advert.clone()));
//! let keys: Vec<&str> = txt.iter().map(|(k, _)| k.as_str()).collect();
//! assert_eq!(keys, ["v", "a0", "a1", "a2"]);
//! assert_eq!(from_txt(&txt).unwrap(), Carried::Inline(advert));
//! assert_eq!(plan(&[0u8; 2000], Budget::Mdns), Plan::Pointer);
//! ```

use rand_core::{CryptoRngCore, OsRng, RngCore};
use std::collections::{BTreeSet, HashMap};
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tacit_net::mdns::{self, Advertisement, Found, MdnsError, Scope};
use tacit_net::{FramedConn, FramedListener, NetConfig};
use tacit_wire::{Decode, Encode, Envelope, ErrorMessage, Reader, Writer};

/// The longest `key=value` string of a TXT record (one length byte, RFC 6763 §6.1).
pub const TXT_STRING_MAX: usize = 255;
/// The largest TXT record this module writes or accepts (RFC 6763 §6.2; paper §6.3).
pub const MDNS_TXT_BUDGET: usize = 1300;
/// A BLE advertising payload (paper §6.3).
pub const BLE_BUDGET: usize = 31;
/// The carrier format version, the value of the TXT entry `v` and the first byte of
/// the BLE form.
pub const CARRIER_VERSION: u8 = 1;
/// The longest advertisement this module carries (inline or behind a pointer).
pub const MAX_ADVERT_LEN: usize = 16 * 1024;
/// Length of a pointer id.
pub const POINTER_ID_LEN: usize = 16;
/// Length of [`Pointer::to_ble_bytes`].
pub const BLE_POINTER_LEN: usize = 1 + POINTER_ID_LEN + 2;
/// The TXT record of a pointer: `v=1` and `p=<id || port>`, length bytes included.
pub const POINTER_TXT_LEN: usize = VERSION_ENTRY_LEN + 1 + 2 + POINTER_ID_LEN + 2;
/// The longest advertisement carried inline within [`MDNS_TXT_BUDGET`] (1272 bytes).
pub const MAX_INLINE_ADVERT: usize = max_inline_len(MDNS_TXT_BUDGET);
/// The largest frame of the auxiliary protocol (an [`Advert`] of [`MAX_ADVERT_LEN`]
/// bytes); bind the auxiliary listener with this `max_frame`.
pub const AUX_MAX_FRAME: usize = 3 + 4 + MAX_ADVERT_LEN;
/// Connections [`serve_aux`] answers at once.
pub const MAX_AUX_CONNECTIONS: usize = 64;
/// Most connections the auxiliary service serves at once from one address.
pub const MAX_AUX_PER_ADDRESS: usize = 16;
/// Longest one fetch may take.
pub const AUX_CONNECTION_DEADLINE: Duration = Duration::from_secs(10);
/// Instances [`discover`] resolves from one browse; more are ignored.
pub const MAX_DISCOVERED: usize = 256;
/// Pointer fetches [`discover`] runs at once.
pub const MAX_CONCURRENT_FETCHES: usize = 8;
/// The reason the auxiliary service gives for a pointer it does not hold.
pub const UNKNOWN_POINTER: &str = "unknown pointer";

/// `1 + len("v=1")`.
const VERSION_ENTRY_LEN: usize = 4;

/// Message-type tags of the auxiliary service (`0x0330`–`0x033f` belong to the
/// carrier; `0x0332`–`0x033f` are still free).
pub mod tags {
    /// [`super::FetchAdvert`]: a client asks for the advertisement behind a pointer.
    pub const FETCH_ADVERT: u16 = 0x0330;
    /// [`super::Advert`]: the advertisement behind a pointer.
    pub const ADVERT: u16 = 0x0331;
}

/// Carrier errors.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A TXT string is over [`TXT_STRING_MAX`] bytes.
    #[error("TXT entry {key:?} is {len} bytes long; a TXT string holds at most {TXT_STRING_MAX}")]
    TxtStringTooLong {
        /// Its key (shortened).
        key: String,
        /// Its length as `key=value`.
        len: usize,
    },
    /// The TXT record is over [`MDNS_TXT_BUDGET`] bytes.
    #[error("the TXT record is at least {at_least} bytes long; the limit is {MDNS_TXT_BUDGET}")]
    TxtTooLarge {
        /// Its length up to the entry that crossed the limit.
        at_least: usize,
    },
    /// The TXT record does not start with `v`.
    #[error("the TXT record does not start with the carrier version entry v={CARRIER_VERSION}")]
    MissingVersion,
    /// The TXT record (or BLE payload) names another carrier version.
    #[error("unsupported carrier version {0:?} (this build speaks version {CARRIER_VERSION})")]
    UnsupportedVersion(String),
    /// A key appears twice.
    #[error("TXT key {0:?} appears twice")]
    DuplicateKey(String),
    /// A key this version does not define.
    #[error("unexpected TXT key {0:?}")]
    UnexpectedKey(String),
    /// Both a pointer and advertisement chunks.
    #[error("the TXT record holds both a pointer and advertisement chunks")]
    MixedPointerAndChunks,
    /// A chunk appears twice.
    #[error("advertisement chunk a{0} appears twice")]
    DuplicateChunk(usize),
    /// A chunk is missing.
    #[error("advertisement chunk a{0} is missing")]
    MissingChunk(usize),
    /// Chunks out of order.
    #[error("advertisement chunks out of order: a{found} in position {position}")]
    ChunkOutOfOrder {
        /// Position among the chunks, from 0.
        position: usize,
        /// The chunk found there.
        found: usize,
    },
    /// A chunk that is not the last is not full.
    #[error("advertisement chunk a{index} is {len} bytes; every chunk but the last holds exactly {expected}")]
    ShortChunk {
        /// Its index.
        index: usize,
        /// Its length.
        len: usize,
        /// The chunk capacity.
        expected: usize,
    },
    /// The last chunk is empty.
    #[error("advertisement chunk a{0} is empty")]
    EmptyChunk(usize),
    /// The TXT record holds neither chunks nor a pointer.
    #[error("the TXT record holds neither an advertisement nor a pointer")]
    NoAdvert,
    /// A malformed pointer.
    #[error("invalid pointer: {0}")]
    InvalidPointer(String),
    /// An advertisement of a size this module does not carry.
    #[error("the advertisement is {len} bytes; it must be 1 to {MAX_ADVERT_LEN} bytes")]
    AdvertSize {
        /// Its length.
        len: usize,
    },
    /// The advertisement needs a pointer but no auxiliary service was given.
    #[error("a {len}-byte advertisement does not fit the {budget}-byte budget; it needs an auxiliary service")]
    NeedsAux {
        /// Its length.
        len: usize,
        /// The budget.
        budget: usize,
    },
    /// A found instance has no usable address.
    #[error("the instance names no usable address")]
    NoAddress,
    /// The auxiliary service refused the fetch.
    #[error("the auxiliary service refused: {0}")]
    Refused(String),
    /// No randomness from the operating system.
    #[error("the operating system's random number generator failed: {0}")]
    Random(String),
    /// The browsing task failed.
    #[error("mDNS browsing failed: {0}")]
    Browse(String),
    /// A malformed auxiliary-service message.
    #[error(transparent)]
    Wire(#[from] tacit_wire::Error),
    /// A transport error.
    #[error(transparent)]
    Net(#[from] tacit_net::Error),
    /// An mDNS error.
    #[error(transparent)]
    Mdns(#[from] MdnsError),
}

/// Result alias for the carrier.
pub type Result<T> = core::result::Result<T, Error>;

/// A peer-supplied key or value, shortened and printable, for an error message.
fn shown(bytes: &[u8]) -> String {
    String::from_utf8_lossy(&bytes[..bytes.len().min(32)]).into_owned()
}

const fn digits(mut n: usize) -> usize {
    let mut d = 1;
    while n >= 10 {
        n /= 10;
        d += 1;
    }
    d
}

/// Length of the key `a<i>`.
const fn chunk_key_len(i: usize) -> usize {
    1 + digits(i)
}

/// How many advertisement bytes chunk `a<i>` holds: `255 − len("a<i>=")` (252 for
/// `a0`–`a9`, 251 for `a10`–`a99`).
pub const fn chunk_capacity(i: usize) -> usize {
    TXT_STRING_MAX - chunk_key_len(i) - 1
}

/// The size of the TXT record carrying an `advert_len`-byte advertisement inline,
/// length bytes and the version entry included.
pub const fn inline_txt_len(advert_len: usize) -> usize {
    let mut total = VERSION_ENTRY_LEN;
    let mut left = advert_len;
    let mut i = 0;
    while left > 0 {
        let cap = chunk_capacity(i);
        let n = if left < cap { left } else { cap };
        total += 1 + chunk_key_len(i) + 1 + n;
        left -= n;
        i += 1;
    }
    total
}

/// The longest advertisement whose inline TXT record is at most `budget` bytes.
pub const fn max_inline_len(budget: usize) -> usize {
    if budget < VERSION_ENTRY_LEN {
        return 0;
    }
    let mut room = budget - VERSION_ENTRY_LEN;
    let mut total = 0;
    let mut i = 0;
    loop {
        let overhead = 1 + chunk_key_len(i) + 1;
        if room <= overhead {
            return total;
        }
        let cap = chunk_capacity(i);
        let n = if room - overhead < cap { room - overhead } else { cap };
        total += n;
        room -= overhead + n;
        i += 1;
    }
}

/// Where an advertisement is broadcast.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Budget {
    /// An mDNS TXT record, [`MDNS_TXT_BUDGET`] bytes.
    Mdns,
    /// A BLE advertising payload, [`BLE_BUDGET`] bytes.
    Ble,
}

impl Budget {
    /// The budget in bytes.
    pub const fn bytes(self) -> usize {
        match self {
            Budget::Mdns => MDNS_TXT_BUDGET,
            Budget::Ble => BLE_BUDGET,
        }
    }
}

/// How an advertisement will be carried ([`plan`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    /// Inline, in a TXT record of `txt_len` bytes.
    Inline {
        /// The TXT record's size, length bytes included.
        txt_len: usize,
    },
    /// Behind a pointer to the auxiliary service.
    Pointer,
}

/// Decides how `advert` is carried within `budget`: inline when its TXT record
/// ([`inline_txt_len`]) fits [`Budget::Mdns`], otherwise behind a pointer. The BLE
/// form carries pointers only (no advertisement of the protocol, at least ~300
/// bytes, fits 31), so [`Budget::Ble`] always gives [`Plan::Pointer`].
pub fn plan(advert: &[u8], budget: Budget) -> Plan {
    match budget {
        Budget::Mdns if advert.len() <= MAX_INLINE_ADVERT => Plan::Inline {
            txt_len: inline_txt_len(advert.len()),
        },
        _ => Plan::Pointer,
    }
}

/// A short pointer to an advertisement held by an auxiliary service on the
/// advertising host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Pointer {
    /// Random id under which the auxiliary service holds the advertisement.
    pub id: [u8; POINTER_ID_LEN],
    /// The auxiliary service's TCP port (not 0).
    pub port: u16,
}

impl Pointer {
    /// A pointer with a fresh random id.
    pub fn random(rng: &mut impl CryptoRngCore, port: u16) -> Pointer {
        let mut id = [0u8; POINTER_ID_LEN];
        rng.fill_bytes(&mut id);
        Pointer { id, port }
    }

    /// The TXT value of `p`: `id (16) || u16 port`.
    pub fn to_txt_value(&self) -> [u8; POINTER_ID_LEN + 2] {
        let mut out = [0u8; POINTER_ID_LEN + 2];
        out[..POINTER_ID_LEN].copy_from_slice(&self.id);
        out[POINTER_ID_LEN..].copy_from_slice(&self.port.to_be_bytes());
        out
    }

    /// Parses the TXT value of `p`.
    pub fn from_txt_value(value: &[u8]) -> Result<Pointer> {
        let mut r = Reader::new(value);
        let id = r.array::<POINTER_ID_LEN>("pointer id");
        let port = r.u16();
        let (Ok(id), Ok(port), Ok(())) = (id, port, r.finish()) else {
            return Err(Error::InvalidPointer(format!(
                "{} bytes; a pointer is {} bytes",
                value.len(),
                POINTER_ID_LEN + 2
            )));
        };
        if port == 0 {
            return Err(Error::InvalidPointer("auxiliary port 0".into()));
        }
        Ok(Pointer { id, port })
    }

    /// The BLE form: `u8 version (1) || id (16) || u16 port`, [`BLE_POINTER_LEN`] =
    /// 19 bytes.
    pub fn to_ble_bytes(&self) -> [u8; BLE_POINTER_LEN] {
        let mut out = [0u8; BLE_POINTER_LEN];
        out[0] = CARRIER_VERSION;
        out[1..].copy_from_slice(&self.to_txt_value());
        out
    }

    /// Parses the BLE form.
    pub fn from_ble_bytes(bytes: &[u8]) -> Result<Pointer> {
        let (&version, rest) = bytes
            .split_first()
            .ok_or_else(|| Error::InvalidPointer("empty BLE payload".into()))?;
        if version != CARRIER_VERSION {
            return Err(Error::UnsupportedVersion(version.to_string()));
        }
        Pointer::from_txt_value(rest)
    }
}

/// An advertisement as a broadcast carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Carried {
    /// The advertisement itself, split over the TXT entries `a0`, `a1`, ….
    Inline(Vec<u8>),
    /// A pointer to it.
    Pointer(Pointer),
}

/// The TXT entries carrying `carried` (see the module docs for the layout). Call
/// [`plan`] first: an inline advertisement over [`MAX_INLINE_ADVERT`] bytes gives a
/// record [`from_txt`] refuses, and an empty one gives a record without chunks.
pub fn to_txt(carried: &Carried) -> Vec<(String, Vec<u8>)> {
    let mut txt = vec![("v".to_string(), CARRIER_VERSION.to_string().into_bytes())];
    match carried {
        Carried::Inline(advert) => {
            let mut rest = advert.as_slice();
            let mut i = 0;
            while !rest.is_empty() {
                let (chunk, tail) = rest.split_at(rest.len().min(chunk_capacity(i)));
                txt.push((format!("a{i}"), chunk.to_vec()));
                rest = tail;
                i += 1;
            }
        }
        Carried::Pointer(p) => txt.push(("p".to_string(), p.to_txt_value().to_vec())),
    }
    txt
}

/// The chunk index of a key `a<i>` written canonically (no leading zeros).
fn chunk_index(key: &str) -> Option<usize> {
    let d = key.strip_prefix('a')?;
    if d.is_empty() || d.len() > 4 || !d.bytes().all(|b| b.is_ascii_digit()) || (d.len() > 1 && d.starts_with('0')) {
        return None;
    }
    d.parse().ok()
}

/// Reads a TXT record written by [`to_txt`], refusing every other record (see the
/// module docs). The record's size is bounded by [`MDNS_TXT_BUDGET`] before anything
/// is copied.
pub fn from_txt(txt: &[(String, Vec<u8>)]) -> Result<Carried> {
    let mut total = 0usize;
    for (key, val) in txt {
        let len = key.len().saturating_add(1).saturating_add(val.len());
        if len > TXT_STRING_MAX {
            return Err(Error::TxtStringTooLong {
                key: shown(key.as_bytes()),
                len,
            });
        }
        total += 1 + len;
        if total > MDNS_TXT_BUDGET {
            return Err(Error::TxtTooLarge { at_least: total });
        }
    }
    let Some(((vkey, version), rest)) = txt.split_first() else {
        return Err(Error::MissingVersion);
    };
    if vkey != "v" {
        return Err(Error::MissingVersion);
    }
    if version.as_slice() != CARRIER_VERSION.to_string().as_bytes() {
        return Err(Error::UnsupportedVersion(shown(version)));
    }
    match rest {
        [] => Err(Error::NoAdvert),
        [(k, v)] if k == "p" => Ok(Carried::Pointer(Pointer::from_txt_value(v)?)),
        [(k, _), (extra, _), ..] if k == "p" => Err(match extra.as_str() {
            "p" | "v" => Error::DuplicateKey(extra.clone()),
            e if chunk_index(e).is_some() => Error::MixedPointerAndChunks,
            e => Error::UnexpectedKey(shown(e.as_bytes())),
        }),
        chunks => join_chunks(chunks).map(Carried::Inline),
    }
}

fn join_chunks(chunks: &[(String, Vec<u8>)]) -> Result<Vec<u8>> {
    // `chunks` has at most MDNS_TXT_BUDGET / 3 entries (checked by the caller).
    let mut indices = Vec::with_capacity(chunks.len());
    for (key, _) in chunks {
        match chunk_index(key) {
            Some(i) => indices.push(i),
            None => {
                return Err(match key.as_str() {
                    "v" => Error::DuplicateKey(key.clone()),
                    "p" => Error::MixedPointerAndChunks,
                    _ => Error::UnexpectedKey(shown(key.as_bytes())),
                });
            }
        }
    }
    let mut seen = BTreeSet::new();
    for &i in &indices {
        if !seen.insert(i) {
            return Err(Error::DuplicateChunk(i));
        }
    }
    if let Some(missing) = (0..indices.len()).find(|i| !seen.contains(i)) {
        return Err(Error::MissingChunk(missing));
    }
    if let Some((position, &found)) = indices.iter().enumerate().find(|(pos, i)| *pos != **i) {
        return Err(Error::ChunkOutOfOrder { position, found });
    }
    let last = chunks.len() - 1;
    for (i, (_, v)) in chunks.iter().enumerate() {
        let cap = chunk_capacity(i);
        if v.is_empty() {
            return Err(Error::EmptyChunk(i));
        }
        if i < last && v.len() != cap {
            return Err(Error::ShortChunk {
                index: i,
                len: v.len(),
                expected: cap,
            });
        }
    }
    // Bounded by MDNS_TXT_BUDGET.
    let len = chunks.iter().map(|(_, v)| v.len()).sum();
    let mut advert = Vec::with_capacity(len);
    for (_, v) in chunks {
        advert.extend_from_slice(v);
    }
    Ok(advert)
}

/// Auxiliary service request: the advertisement behind pointer `id`.
///
/// `01 0330 || id (16)`
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FetchAdvert {
    /// The pointer id.
    pub id: [u8; POINTER_ID_LEN],
}

impl Encode for FetchAdvert {
    fn encode(&self, w: &mut Writer) {
        w.put_envelope(tags::FETCH_ADVERT);
        w.put_fixed(&self.id);
    }
}

impl Decode for FetchAdvert {
    fn decode(r: &mut Reader<'_>) -> tacit_wire::Result<Self> {
        r.envelope(tags::FETCH_ADVERT, "advertisement fetch")?;
        Ok(FetchAdvert {
            id: r.array("pointer id")?,
        })
    }
}

/// Auxiliary service answer: the advertisement behind a pointer.
///
/// `01 0331 || u32 len (1..=16384) || bytes`
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Advert {
    /// The advertisement (1 to [`MAX_ADVERT_LEN`] bytes).
    pub bytes: Vec<u8>,
}

fn encode_advert(bytes: &[u8], w: &mut Writer) {
    w.put_envelope(tags::ADVERT);
    w.put_var_bytes(bytes);
}

impl Encode for Advert {
    fn encode(&self, w: &mut Writer) {
        encode_advert(&self.bytes, w);
    }
}

impl Decode for Advert {
    fn decode(r: &mut Reader<'_>) -> tacit_wire::Result<Self> {
        r.envelope(tags::ADVERT, "advertisement")?;
        let bytes = r.var_bytes("advertisement", MAX_ADVERT_LEN)?;
        if bytes.is_empty() {
            return Err(tacit_wire::Error::invalid("advertisement", "empty"));
        }
        Ok(Advert { bytes: bytes.to_vec() })
    }
}

fn check_advert_len(advert: &[u8]) -> Result<()> {
    if advert.is_empty() || advert.len() > MAX_ADVERT_LEN {
        return Err(Error::AdvertSize { len: advert.len() });
    }
    Ok(())
}

/// The advertisements an auxiliary service holds, by pointer id. Cheap to clone (the
/// clones share the map) and safe to use from several threads; refresh an
/// advertisement by inserting it again under the same id.
#[derive(Clone, Default)]
pub struct AuxStore {
    adverts: Arc<RwLock<AdvertMap>>,
}

/// Advertisements by pointer id.
type AdvertMap = HashMap<[u8; POINTER_ID_LEN], Arc<[u8]>>;

impl core::fmt::Debug for AuxStore {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "AuxStore({} advertisements)", self.len())
    }
}

impl AuxStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, AdvertMap> {
        // A panic elsewhere while holding the lock cannot leave the map half-updated
        // (each update is one insert or remove), so a poisoned lock is still usable.
        self.adverts.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, AdvertMap> {
        self.adverts.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Holds `advert` under `id`, replacing what was there; returns whether something
    /// was replaced. Refuses empty advertisements and ones over [`MAX_ADVERT_LEN`].
    pub fn insert(&self, id: [u8; POINTER_ID_LEN], advert: &[u8]) -> Result<bool> {
        check_advert_len(advert)?;
        Ok(self.write().insert(id, Arc::from(advert)).is_some())
    }

    /// Stops serving `id`; returns whether it was held.
    pub fn remove(&self, id: &[u8; POINTER_ID_LEN]) -> bool {
        self.write().remove(id).is_some()
    }

    /// The advertisement held under `id`.
    pub fn get(&self, id: &[u8; POINTER_ID_LEN]) -> Option<Arc<[u8]>> {
        self.read().get(id).cloned()
    }

    /// How many advertisements are held.
    pub fn len(&self) -> usize {
        self.read().len()
    }

    /// Whether none is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Answers one [`FetchAdvert`] on `conn`: [`Advert`], or an [`ErrorMessage`] saying
/// [`UNKNOWN_POINTER`] (an `Ok` outcome) or why the request was malformed (an error).
pub async fn answer_fetch(conn: &mut FramedConn, store: &AuxStore) -> Result<()> {
    let request = conn.recv().await?;
    let fetch = match FetchAdvert::from_wire(&request) {
        Ok(f) => f,
        Err(e) => {
            let _ = conn
                .send(&ErrorMessage::new(format!("not an advertisement fetch: {e}")).to_wire())
                .await;
            return Err(e.into());
        }
    };
    let reply = match store.get(&fetch.id) {
        Some(advert) => {
            let mut w = Writer::with_capacity(7 + advert.len());
            encode_advert(&advert, &mut w);
            w.into_bytes()
        }
        None => ErrorMessage::new(UNKNOWN_POINTER).to_wire(),
    };
    conn.send(&reply).await?;
    Ok(())
}

/// The auxiliary service: answers [`FetchAdvert`]s from `store` on every connection
/// `listener` accepts, one request per connection, at most [`MAX_AUX_CONNECTIONS`] at
/// once and [`MAX_AUX_PER_ADDRESS`] from one address, each within
/// [`AUX_CONNECTION_DEADLINE`] (the shared guard, `tacit_net::guard`, issue 32: a
/// flood of idle connections from one address gets its share, and `accept` errors
/// never end the service). Runs until its task is aborted (which also ends the
/// connections in progress). Bind `listener` with `max_frame` = [`AUX_MAX_FRAME`] or
/// less (a request is 19 bytes) and a short read timeout.
pub async fn serve_aux(listener: FramedListener, store: AuxStore) {
    let limits = tacit_net::guard::ServeLimits::new(MAX_AUX_CONNECTIONS, AUX_CONNECTION_DEADLINE)
        .with_per_address(MAX_AUX_PER_ADDRESS);
    let guard = tacit_net::guard::Guard::new(limits);
    listener
        .serve(&guard, None, |mut conn| {
            let store = store.clone();
            async move {
                let _ = answer_fetch(&mut conn, &store).await;
            }
        })
        .await
}

/// Fetches the advertisement behind pointer `id` from the auxiliary service at
/// `addr`. Frames over [`AUX_MAX_FRAME`] are refused whatever `cfg` allows.
pub async fn fetch_aux(addr: SocketAddr, id: &[u8; POINTER_ID_LEN], cfg: &NetConfig) -> Result<Vec<u8>> {
    let cfg = NetConfig {
        max_frame: cfg.max_frame.min(AUX_MAX_FRAME),
        ..*cfg
    };
    let mut conn = FramedConn::connect(addr, &cfg).await?;
    conn.send(&FetchAdvert { id: *id }.to_wire()).await?;
    let reply = conn.recv().await?;
    if Envelope::peek(&reply)?.tag == tacit_wire::tags::ERROR {
        return Err(Error::Refused(ErrorMessage::from_wire(&reply)?.reason));
    }
    Ok(Advert::from_wire(&reply)?.bytes)
}

/// A published advertisement: withdrawn from mDNS (with a goodbye) and removed from
/// the auxiliary store when dropped.
pub struct Publication {
    advertisement: Advertisement,
    carried: Carried,
    aux: Option<AuxStore>,
}

impl core::fmt::Debug for Publication {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let how = match &self.carried {
            Carried::Inline(a) => format!("inline, {} bytes", a.len()),
            Carried::Pointer(p) => format!("pointer, aux port {}", p.port),
        };
        write!(f, "Publication({}, {how})", self.advertisement.fullname())
    }
}

impl Publication {
    /// The random DNS-SD instance name.
    pub fn fullname(&self) -> &str {
        self.advertisement.fullname()
    }

    /// How the advertisement is carried.
    pub fn carried(&self) -> &Carried {
        &self.carried
    }

    /// The pointer, when the advertisement is carried behind one.
    pub fn pointer(&self) -> Option<&Pointer> {
        match &self.carried {
            Carried::Pointer(p) => Some(p),
            Carried::Inline(_) => None,
        }
    }
}

impl Drop for Publication {
    fn drop(&mut self) {
        if let (Some(store), Carried::Pointer(p)) = (&self.aux, &self.carried) {
            store.remove(&p.id);
        }
    }
}

/// Publishes `advert` as an instance of `service_type` (e.g.
/// [`mdns::DISCOVERY_SERVICE`]) whose SRV port is `handshake_port`: inline when
/// [`plan`] says it fits `budget`, otherwise stored in `aux`'s store under a fresh
/// random pointer whose port is `aux`'s port (the auxiliary service must run on this
/// host, see [`serve_aux`]). Instance and host names are fresh random labels.
pub async fn publish(
    advert: &[u8],
    budget: Budget,
    scope: Scope,
    service_type: &str,
    handshake_port: u16,
    aux: Option<(&AuxStore, u16)>,
) -> Result<Publication> {
    publish_at(advert, budget, scope, service_type, &[], handshake_port, aux).await
}

/// [`publish`], announcing `addrs` (empty: the enabled interfaces' addresses) —
/// for a service that listens on one address only (see
/// [`tacit_net::mdns::reach`]).
pub async fn publish_at(
    advert: &[u8],
    budget: Budget,
    scope: Scope,
    service_type: &str,
    addrs: &[IpAddr],
    handshake_port: u16,
    aux: Option<(&AuxStore, u16)>,
) -> Result<Publication> {
    check_advert_len(advert)?;
    let mut random = [0u8; 8 + POINTER_ID_LEN];
    OsRng
        .try_fill_bytes(&mut random)
        .map_err(|e| Error::Random(e.to_string()))?;
    let (label, id) = random.split_at(8);
    let mut label_bytes = [0u8; 8];
    label_bytes.copy_from_slice(label);
    let (carried, store) = match (plan(advert, budget), aux) {
        (Plan::Inline { .. }, _) => (Carried::Inline(advert.to_vec()), None),
        (Plan::Pointer, Some((store, port))) => {
            if port == 0 {
                return Err(Error::InvalidPointer("auxiliary port 0".into()));
            }
            let mut p = Pointer {
                id: [0; POINTER_ID_LEN],
                port,
            };
            p.id.copy_from_slice(id);
            store.insert(p.id, advert)?;
            (Carried::Pointer(p), Some(store.clone()))
        }
        (Plan::Pointer, None) => {
            return Err(Error::NeedsAux {
                len: advert.len(),
                budget: budget.bytes(),
            });
        }
    };
    let txt = to_txt(&carried);
    match mdns::advertise_txt(service_type, handshake_port, addrs, &txt, scope, label_bytes) {
        Ok(advertisement) => Ok(Publication {
            advertisement,
            carried,
            aux: store,
        }),
        Err(e) => {
            if let (Some(store), Carried::Pointer(p)) = (&store, &carried) {
                store.remove(&p.id);
            }
            Err(e.into())
        }
    }
}

/// An advertisement found by [`discover`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiscoveredAdvert {
    /// The random DNS-SD instance name.
    pub instance: String,
    /// The advertiser's addresses.
    pub addrs: Vec<IpAddr>,
    /// The handshake port (the SRV record's port).
    pub handshake_port: u16,
    /// The advertisement.
    pub advert: Vec<u8>,
    /// The pointer it was fetched through, if it was not inline.
    pub pointer: Option<Pointer>,
}

/// Reads the advertisement of one found instance: from its TXT record, or from the
/// auxiliary service at the instance's addresses (tried in order) and the pointer's
/// port.
pub async fn resolve(found: &Found, cfg: &NetConfig) -> Result<DiscoveredAdvert> {
    let carried = from_txt(&found.txt)?;
    if found.addrs.is_empty() {
        return Err(Error::NoAddress);
    }
    let (advert, pointer) = match carried {
        Carried::Inline(advert) => (advert, None),
        Carried::Pointer(p) => {
            let mut last = Error::NoAddress;
            let mut fetched = None;
            for ip in &found.addrs {
                match fetch_aux(SocketAddr::new(*ip, p.port), &p.id, cfg).await {
                    Ok(a) => {
                        fetched = Some(a);
                        break;
                    }
                    Err(e) => last = e,
                }
            }
            (fetched.ok_or(last)?, Some(p))
        }
    };
    Ok(DiscoveredAdvert {
        instance: found.instance.clone(),
        addrs: found.addrs.clone(),
        handshake_port: found.port,
        advert,
        pointer,
    })
}

/// What [`discover_all`] found, and what it left out.
#[derive(Debug, Default)]
pub struct Discovery {
    /// The advertisements read, in the order their instances were resolved.
    pub adverts: Vec<DiscoveredAdvert>,
    /// Instances whose TXT record [`from_txt`] refused, with why.
    pub malformed: Vec<(String, Error)>,
    /// Instances with a well-formed record whose advertisement could not be had
    /// (no address, or the auxiliary service failed), with why.
    pub unfetched: Vec<(String, Error)>,
    /// Instances beyond [`MAX_DISCOVERED`], not looked at.
    pub over_limit: usize,
}

/// Browses for `service_type` for `wait` and returns the advertisements found,
/// fetching pointed-to ones from their auxiliary services (at most
/// [`MAX_CONCURRENT_FETCHES`] at once). Instances whose record is malformed or whose
/// advertisement cannot be fetched are left out; [`discover_all`] counts them.
pub async fn discover(
    service_type: &str,
    scope: Scope,
    wait: Duration,
    cfg: &NetConfig,
) -> Result<Vec<DiscoveredAdvert>> {
    Ok(discover_all(service_type, scope, wait, cfg).await?.adverts)
}

/// [`discover`], also reporting every instance it left out and why (issue 28:
/// `discover browse` counts malformed adverts instead of dropping them silently).
pub async fn discover_all(service_type: &str, scope: Scope, wait: Duration, cfg: &NetConfig) -> Result<Discovery> {
    let service = service_type.to_string();
    let found = tokio::task::spawn_blocking(move || mdns::browse_txt(&service, scope, wait))
        .await
        .map_err(|e| Error::Browse(e.to_string()))??;
    let mut report = Discovery {
        over_limit: found.len().saturating_sub(MAX_DISCOVERED),
        ..Discovery::default()
    };
    let permits = Arc::new(tokio::sync::Semaphore::new(MAX_CONCURRENT_FETCHES));
    let mut tasks = tokio::task::JoinSet::new();
    for (n, f) in found.into_iter().take(MAX_DISCOVERED).enumerate() {
        if let Err(e) = from_txt(&f.txt) {
            report.malformed.push((f.instance, e));
            continue;
        }
        let cfg = *cfg;
        let permits = permits.clone();
        tasks.spawn(async move {
            let _permit = permits.acquire_owned().await;
            (n, f.instance.clone(), resolve(&f, &cfg).await)
        });
    }
    let mut out = Vec::new();
    while let Some(done) = tasks.join_next().await {
        match done {
            Ok((n, _, Ok(d))) => out.push((n, d)),
            Ok((_, instance, Err(e))) => report.unfetched.push((instance, e)),
            Err(e) => report.unfetched.push((String::new(), Error::Browse(e.to_string()))),
        }
    }
    out.sort_by_key(|(n, _)| *n);
    report.adverts = out.into_iter().map(|(_, d)| d).collect();
    Ok(report)
}
