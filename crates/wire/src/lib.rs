//! The one canonical encoding used by every tacit message that is sent or signed.
//!
//! The rules (see `docs/wire.md` for the full description):
//!
//! * integers are fixed-width big-endian (`u8`, `u16`, `u32`, `u64`);
//! * fixed-size fields (points, scalars, digests) are written as raw bytes with no
//!   prefix: their size is known from the context;
//! * variable-size byte strings carry a `u32` length prefix, and sequences a `u32`
//!   element count; the decoder checks every length against a protocol maximum and
//!   against the bytes that remain *before* it allocates;
//! * a top-level message starts with an [`Envelope`]: the wire version byte and a
//!   message-type tag;
//! * decoding must consume the input exactly: trailing bytes are an error.
//!
//! Because every field has exactly one encoding, the encoding of a value is also the
//! byte string that gets signed or hashed.
//!
//! ```
//! use tacit_wire::{Reader, Writer};
//!
//! let mut w = Writer::new();
//! w.put_u16(7);
//! w.put_var_bytes(b"hello");
//! let bytes = w.into_bytes();
//!
//! let mut r = Reader::new(&bytes);
//! assert_eq!(r.u16().unwrap(), 7);
//! assert_eq!(r.var_bytes("greeting", 16).unwrap(), b"hello");
//! r.finish().unwrap();
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod file;
mod frame;
pub mod text;

pub use frame::{DEFAULT_MAX_FRAME, FrameDecoder, encode_frame};

/// The wire version written in every [`Envelope`].
pub const WIRE_VERSION: u8 = 1;

/// Everything that can go wrong while decoding (or framing) bytes from a peer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The input ended before a field was complete.
    #[error("message truncated: {what} needs {needed} more bytes but only {remaining} remain")]
    Truncated {
        /// The field being read.
        what: &'static str,
        /// Bytes the field needs.
        needed: usize,
        /// Bytes left in the input.
        remaining: usize,
    },
    /// Bytes were left after a complete message.
    #[error("{0} unexpected trailing bytes after the message")]
    TrailingBytes(usize),
    /// A byte string is longer than the protocol allows.
    #[error("{what} is {len} bytes long; the limit is {max}")]
    TooLong {
        /// The field.
        what: &'static str,
        /// Its declared length.
        len: u64,
        /// The protocol maximum.
        max: u64,
    },
    /// A sequence has more elements than the protocol allows.
    #[error("{what} has {count} elements; the limit is {max}")]
    TooMany {
        /// The field.
        what: &'static str,
        /// Its declared count.
        count: u64,
        /// The protocol maximum.
        max: u64,
    },
    /// The envelope names a wire version this build does not speak.
    #[error("unsupported wire version {0} (this build speaks version {WIRE_VERSION})")]
    UnsupportedVersion(u8),
    /// The envelope names another message type than the one expected here.
    #[error("expected a {expected} message, got message type {got:#06x}")]
    UnexpectedType {
        /// Name of the expected message.
        expected: &'static str,
        /// The tag found.
        got: u16,
    },
    /// A field holds a value that is not allowed.
    #[error("invalid {what}: {why}")]
    Invalid {
        /// The field.
        what: &'static str,
        /// Why it was refused.
        why: String,
    },
}

impl Error {
    /// Shorthand for [`Error::Invalid`].
    pub fn invalid(what: &'static str, why: impl Into<String>) -> Self {
        Error::Invalid { what, why: why.into() }
    }
}

/// Result alias for decoding.
pub type Result<T> = core::result::Result<T, Error>;

/// Appends canonically encoded fields to a byte vector.
#[derive(Debug, Default, Clone)]
pub struct Writer {
    buf: Vec<u8>,
}

impl Writer {
    /// An empty writer.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty writer with room for `n` bytes.
    pub fn with_capacity(n: usize) -> Self {
        Writer {
            buf: Vec::with_capacity(n),
        }
    }

    /// Writes a one-byte integer.
    pub fn put_u8(&mut self, v: u8) {
        self.buf.push(v);
    }

    /// Writes a big-endian `u16`.
    pub fn put_u16(&mut self, v: u16) {
        self.buf.extend_from_slice(&v.to_be_bytes());
    }

    /// Writes a big-endian `u32`.
    pub fn put_u32(&mut self, v: u32) {
        self.buf.extend_from_slice(&v.to_be_bytes());
    }

    /// Writes a big-endian `u64`.
    pub fn put_u64(&mut self, v: u64) {
        self.buf.extend_from_slice(&v.to_be_bytes());
    }

    /// Writes a boolean as one byte, 0 or 1.
    pub fn put_bool(&mut self, v: bool) {
        self.buf.push(v as u8);
    }

    /// Writes bytes whose length the reader knows from the context (no prefix).
    pub fn put_fixed(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// Writes the first `len` bytes of `words` as little-endian bytes, no prefix
    /// (packed bit strings; one pass instead of a call per word).
    ///
    /// # Panics
    /// If `words` holds fewer than `len` bytes.
    pub fn put_words_le(&mut self, words: &[u64], len: usize) {
        assert!(words.len() * 8 >= len, "{len} bytes from {} words", words.len());
        let start = self.buf.len();
        self.buf.resize(start + len, 0);
        let mut out = self.buf[start..].chunks_exact_mut(8);
        let mut it = words.iter();
        for (o, w) in (&mut out).zip(&mut it) {
            o.copy_from_slice(&w.to_le_bytes());
        }
        let tail = out.into_remainder();
        if let Some(w) = it.next() {
            let n = tail.len();
            tail.copy_from_slice(&w.to_le_bytes()[..n]);
        }
    }

    /// Writes `values` as big-endian `u32`s, no prefix, in one pass (the byte swaps
    /// vectorise).
    pub fn put_u32s_be(&mut self, values: &[u32]) {
        let start = self.buf.len();
        self.buf.resize(start + 4 * values.len(), 0);
        for (o, v) in self.buf[start..].chunks_exact_mut(4).zip(values) {
            o.copy_from_slice(&v.to_be_bytes());
        }
    }

    /// The bytes written so far.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }

    /// Writes a `u32` length prefix and the bytes.
    ///
    /// # Panics
    /// If `bytes` is longer than `u32::MAX`, which no tacit message allows.
    pub fn put_var_bytes(&mut self, bytes: &[u8]) {
        self.put_count(bytes.len());
        self.buf.extend_from_slice(bytes);
    }

    /// Writes a UTF-8 string as variable-length bytes.
    pub fn put_str(&mut self, s: &str) {
        self.put_var_bytes(s.as_bytes());
    }

    /// Writes a `u32` element count for a sequence that follows.
    ///
    /// # Panics
    /// If `n` exceeds `u32::MAX`, which no tacit message allows.
    pub fn put_count(&mut self, n: usize) {
        let n = u32::try_from(n).expect("a tacit sequence never exceeds u32::MAX elements");
        self.put_u32(n);
    }

    /// Writes an [`Envelope`] header.
    pub fn put_envelope(&mut self, tag: u16) {
        self.put_u8(WIRE_VERSION);
        self.put_u16(tag);
    }

    /// Bytes written so far.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// Whether nothing was written.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The encoded bytes.
    pub fn into_bytes(self) -> Vec<u8> {
        self.buf
    }
}

/// Reads canonically encoded fields from a byte slice, bounding every length.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A reader over `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    /// Bytes not yet read.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Reads exactly `n` bytes.
    pub fn fixed(&mut self, what: &'static str, n: usize) -> Result<&'a [u8]> {
        if self.remaining() < n {
            return Err(Error::Truncated {
                what,
                needed: n,
                remaining: self.remaining(),
            });
        }
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    /// Reads exactly `N` bytes into an array.
    pub fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N]> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.fixed(what, N)?);
        Ok(out)
    }

    /// Reads a one-byte integer.
    pub fn u8(&mut self) -> Result<u8> {
        Ok(self.fixed("u8", 1)?[0])
    }

    /// Reads a big-endian `u16`.
    pub fn u16(&mut self) -> Result<u16> {
        Ok(u16::from_be_bytes(self.array("u16")?))
    }

    /// Reads a big-endian `u32`.
    pub fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_be_bytes(self.array("u32")?))
    }

    /// Reads a big-endian `u64`.
    pub fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_be_bytes(self.array("u64")?))
    }

    /// Reads a boolean; anything but 0 or 1 is refused (one encoding per value).
    pub fn bool(&mut self, what: &'static str) -> Result<bool> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            v => Err(Error::invalid(what, format!("boolean byte {v} is neither 0 nor 1"))),
        }
    }

    /// Reads a `u32`-prefixed byte string of at most `max` bytes.
    pub fn var_bytes(&mut self, what: &'static str, max: usize) -> Result<&'a [u8]> {
        let len = self.u32()? as usize;
        if len > max {
            return Err(Error::TooLong {
                what,
                len: len as u64,
                max: max as u64,
            });
        }
        self.fixed(what, len)
    }

    /// Reads a `u32`-prefixed UTF-8 string of at most `max` bytes.
    pub fn str(&mut self, what: &'static str, max: usize) -> Result<&'a str> {
        let bytes = self.var_bytes(what, max)?;
        core::str::from_utf8(bytes).map_err(|_| Error::invalid(what, "not valid UTF-8"))
    }

    /// Reads a sequence count of at most `max` elements, each at least `min_elem_len`
    /// bytes long; the count is checked against the bytes that remain, so a caller can
    /// allocate `count` elements safely.
    pub fn count(&mut self, what: &'static str, max: usize, min_elem_len: usize) -> Result<usize> {
        let count = self.u32()? as usize;
        if count > max {
            return Err(Error::TooMany {
                what,
                count: count as u64,
                max: max as u64,
            });
        }
        let needed = count.saturating_mul(min_elem_len);
        if needed > self.remaining() {
            return Err(Error::Truncated {
                what,
                needed,
                remaining: self.remaining(),
            });
        }
        Ok(count)
    }

    /// Reads an [`Envelope`] and checks its version and tag.
    pub fn envelope(&mut self, tag: u16, name: &'static str) -> Result<()> {
        let env = Envelope::read(self)?;
        if env.tag != tag {
            return Err(Error::UnexpectedType {
                expected: name,
                got: env.tag,
            });
        }
        Ok(())
    }

    /// Ends decoding: every byte must have been consumed.
    pub fn finish(self) -> Result<()> {
        match self.remaining() {
            0 => Ok(()),
            n => Err(Error::TrailingBytes(n)),
        }
    }
}

/// The header of every top-level message: wire version and message-type tag.
///
/// Tags are registered in `docs/wire.md`; [`tags`] lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Envelope {
    /// Message-type tag.
    pub tag: u16,
}

impl Envelope {
    /// Reads an envelope, refusing unknown wire versions.
    pub fn read(r: &mut Reader<'_>) -> Result<Envelope> {
        let version = r.u8()?;
        if version != WIRE_VERSION {
            return Err(Error::UnsupportedVersion(version));
        }
        Ok(Envelope { tag: r.u16()? })
    }

    /// Peeks at the envelope of a complete message without consuming it.
    pub fn peek(bytes: &[u8]) -> Result<Envelope> {
        Envelope::read(&mut Reader::new(bytes))
    }
}

/// The registry of message-type tags (mirrored in `docs/wire.md`).
pub mod tags {
    /// A refusal with a human-readable reason ([`crate::ErrorMessage`]).
    pub const ERROR: u16 = 0x0001;
    /// A refusal because the two sides run different settings ([`crate::Mismatch`]).
    pub const MISMATCH: u16 = 0x0002;
    /// A keep-alive: work is under way (`tacit_net::KEEPALIVE`; no body).
    pub const KEEPALIVE: u16 = 0x0003;
    /// PSI request: the receiver's blinded elements.
    pub const PSI_REQUEST: u16 = 0x0101;
    /// PSI response: evaluations, proof and the sender's truncated set.
    pub const PSI_RESPONSE: u16 = 0x0102;
    /// Two-way PSI, second message: a response bundled with a request.
    pub const PSI_BUNDLE: u16 = 0x0103;
    /// A stored sender precomputation.
    pub const PSI_SENDER_PRECOMPUTATION: u16 = 0x0110;
    /// A stored receiver precomputation.
    pub const PSI_RECEIVER_PRECOMPUTATION: u16 = 0x0111;
    /// A stored PSI sender key.
    pub const PSI_SENDER_KEY: u16 = 0x0112;
}

/// A value with one canonical encoding.
pub trait Encode {
    /// Appends the encoding of `self`.
    fn encode(&self, w: &mut Writer);

    /// The encoding of `self` as a fresh vector.
    fn to_wire(&self) -> Vec<u8> {
        let mut w = Writer::new();
        self.encode(&mut w);
        w.into_bytes()
    }

    /// Calls `f` with the encoding of `self`, written into a buffer that the thread
    /// keeps between calls (up to 16 MiB), so that hashing a large message allocates
    /// nothing. The bytes stay in that buffer until the thread's next call: use it for
    /// public messages only, never for ones that carry secrets.
    fn with_wire<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R
    where
        Self: Sized,
    {
        thread_local! {
            static BUF: core::cell::Cell<Vec<u8>> = const { core::cell::Cell::new(Vec::new()) };
        }
        let mut buf = BUF.take();
        buf.clear();
        let mut w = Writer { buf };
        self.encode(&mut w);
        let r = f(&w.buf);
        if w.buf.capacity() <= 16 << 20 {
            BUF.set(w.buf);
        }
        r
    }
}

/// A value that can be decoded from its canonical encoding.
pub trait Decode: Sized {
    /// Reads one value, leaving the reader after it.
    fn decode(r: &mut Reader<'_>) -> Result<Self>;

    /// Decodes a complete message: trailing bytes are an error.
    fn from_wire(bytes: &[u8]) -> Result<Self> {
        let mut r = Reader::new(bytes);
        let v = Self::decode(&mut r)?;
        r.finish()?;
        Ok(v)
    }
}

/// The longest reason an [`ErrorMessage`] carries.
pub const MAX_ERROR_REASON: usize = 512;

/// A refusal sent to a peer instead of the expected message, with a reason a person
/// can read ("receiver sent 11 blinded elements; the bound is 10").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorMessage {
    /// Why the peer's message was refused.
    pub reason: String,
}

impl ErrorMessage {
    /// A refusal with `reason`, cut to [`MAX_ERROR_REASON`] bytes on a character boundary.
    pub fn new(reason: impl Into<String>) -> Self {
        let mut reason = reason.into();
        if reason.len() > MAX_ERROR_REASON {
            let mut cut = MAX_ERROR_REASON;
            while !reason.is_char_boundary(cut) {
                cut -= 1;
            }
            reason.truncate(cut);
        }
        ErrorMessage { reason }
    }
}

impl Encode for ErrorMessage {
    fn encode(&self, w: &mut Writer) {
        w.put_envelope(tags::ERROR);
        w.put_str(&self.reason);
    }
}

impl Decode for ErrorMessage {
    fn decode(r: &mut Reader<'_>) -> Result<Self> {
        r.envelope(tags::ERROR, "error")?;
        Ok(ErrorMessage {
            reason: r.str("error reason", MAX_ERROR_REASON)?.to_owned(),
        })
    }
}

/// The longest field of a [`Mismatch`].
pub const MAX_MISMATCH_FIELD: usize = 400;

fn cut(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut end = max;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
    }
    s
}

/// A refusal because the two sides run different settings, sent as data so that the
/// side that receives it words it from its own point of view (issue 28, item 8): the
/// refusing side's log says "we run m = 10; the peer runs m = 20", the refused side's
/// "we run m = 20; the peer runs m = 10" — never the refuser's sentence with the roles
/// reversed.
///
/// ```text
/// Mismatch = 01 0002 || str what (≤ 64) || str refuser (≤ 400) || str received (≤ 400)
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// What differs, as a noun ("parameter", "group", "scheduling window").
    pub what: String,
    /// The refusing side's setting in its words, or what it is willing to say of it.
    pub refuser: String,
    /// The setting the refusing side received from the other side, as it read it.
    pub received: String,
}

impl Mismatch {
    /// A mismatch; each field is cut to its bound on a character boundary.
    pub fn new(what: impl Into<String>, refuser: impl Into<String>, received: impl Into<String>) -> Self {
        Mismatch {
            what: cut(what.into(), 64),
            refuser: cut(refuser.into(), MAX_MISMATCH_FIELD),
            received: cut(received.into(), MAX_MISMATCH_FIELD),
        }
    }

    /// The refusing side's words: "parameter mismatch: we run …; the peer runs …".
    pub fn refuser_words(&self) -> String {
        format!(
            "{} mismatch: we run {}; the peer runs {}",
            self.what, self.refuser, self.received
        )
    }

    /// The refused side's words, from its own point of view: what it sent is what
    /// "we run", the refuser's setting is what "the peer runs".
    pub fn receiver_words(&self) -> String {
        format!(
            "{} mismatch: we run {}; the peer runs {}",
            self.what, self.received, self.refuser
        )
    }
}

impl Encode for Mismatch {
    fn encode(&self, w: &mut Writer) {
        w.put_envelope(tags::MISMATCH);
        w.put_str(&self.what);
        w.put_str(&self.refuser);
        w.put_str(&self.received);
    }
}

impl Decode for Mismatch {
    fn decode(r: &mut Reader<'_>) -> Result<Self> {
        r.envelope(tags::MISMATCH, "mismatch")?;
        Ok(Mismatch {
            what: r.str("mismatch subject", 64)?.to_owned(),
            refuser: r.str("the peer's setting", MAX_MISMATCH_FIELD)?.to_owned(),
            received: r.str("our setting as the peer read it", MAX_MISMATCH_FIELD)?.to_owned(),
        })
    }
}

/// A refusal as it arrives: free words ([`ErrorMessage`]) or a typed [`Mismatch`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The peer's words.
    Words(String),
    /// The peer runs other settings.
    Mismatch(Mismatch),
}

impl Refusal {
    /// `None` unless `bytes` is a refusal ([`tags::ERROR`] or [`tags::MISMATCH`]);
    /// otherwise the refusal, or the error decoding it.
    pub fn peek(bytes: &[u8]) -> Option<Result<Refusal>> {
        let env = Envelope::peek(bytes).ok()?;
        match env.tag {
            tags::ERROR => Some(ErrorMessage::from_wire(bytes).map(|m| Refusal::Words(m.reason))),
            tags::MISMATCH => Some(Mismatch::from_wire(bytes).map(Refusal::Mismatch)),
            _ => None,
        }
    }
}

impl core::fmt::Display for Refusal {
    /// The refused side's words: the peer's reason, or the mismatch worded from the
    /// receiving side ([`Mismatch::receiver_words`]).
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Refusal::Words(w) => f.write_str(w),
            Refusal::Mismatch(m) => f.write_str(&m.receiver_words()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_mismatch_is_worded_by_each_side_from_its_own_point_of_view() {
        let m = Mismatch::new("parameter", "m = 10", "m = 20");
        assert_eq!(
            m.refuser_words(),
            "parameter mismatch: we run m = 10; the peer runs m = 20"
        );
        let got = Refusal::peek(&m.to_wire()).unwrap().unwrap();
        assert_eq!(
            got.to_string(),
            "parameter mismatch: we run m = 20; the peer runs m = 10"
        );
        let words = Refusal::peek(&ErrorMessage::new("no").to_wire()).unwrap().unwrap();
        assert_eq!(words, Refusal::Words("no".into()));
        assert!(Refusal::peek(&[1, 0x01, 0x01]).is_none());
        // every field is bounded, trailing bytes are refused
        let long = Mismatch::new("x".repeat(100), "y".repeat(600), "z");
        assert_eq!((long.what.len(), long.refuser.len()), (64, MAX_MISMATCH_FIELD));
        let mut bytes = m.to_wire();
        bytes.push(0);
        assert!(Mismatch::from_wire(&bytes).is_err());
    }

    proptest! {
        #[test]
        fn words_le_are_their_bytes_in_order(words in proptest::collection::vec(any::<u64>(), 0..9), cut in 0usize..8) {
            let len = (words.len() * 8).saturating_sub(cut);
            let mut w = Writer::new();
            w.put_u8(0xaa);
            w.put_words_le(&words, len);
            let want: Vec<u8> = std::iter::once(0xaa)
                .chain(words.iter().flat_map(|x| x.to_le_bytes()).take(len))
                .collect();
            prop_assert_eq!(w.into_bytes(), want);
        }
    }

    #[test]
    fn u32s_are_written_big_endian_in_place() {
        let mut w = Writer::with_capacity(3);
        w.put_u8(7);
        w.put_u32s_be(&[1, 0x0102_0304, u32::MAX]);
        assert_eq!(w.as_bytes(), &[7, 0, 0, 0, 1, 1, 2, 3, 4, 255, 255, 255, 255]);
        let mut v = Writer::new();
        v.put_u8(7);
        for x in [1, 0x0102_0304, u32::MAX] {
            v.put_u32(x);
        }
        assert_eq!(w.into_bytes(), v.into_bytes());
    }

    #[test]
    fn with_wire_sees_the_same_bytes_as_to_wire_and_nests() {
        struct Bytes(Vec<u8>);
        impl Encode for Bytes {
            fn encode(&self, w: &mut Writer) {
                w.put_var_bytes(&self.0);
            }
        }
        let big = Bytes(vec![7; 100_000]);
        let small = Bytes(vec![1, 2, 3]);
        // The second call reuses the first call's (larger) buffer and must not see
        // its stale tail; a nested call gets a buffer of its own.
        assert_eq!(big.with_wire(|b| b.to_vec()), big.to_wire());
        assert_eq!(small.with_wire(|b| b.to_vec()), small.to_wire());
        let (outer, inner) = big.with_wire(|b| (b.to_vec(), small.with_wire(|c| c.to_vec())));
        assert_eq!((outer, inner), (big.to_wire(), small.to_wire()));
    }

    #[test]
    fn roundtrip_fields() {
        let mut w = Writer::new();
        w.put_envelope(0x0101);
        w.put_u8(1);
        w.put_u16(2);
        w.put_u32(3);
        w.put_u64(4);
        w.put_bool(true);
        w.put_var_bytes(b"abc");
        w.put_fixed(&[9, 9]);
        let b = w.into_bytes();
        let mut r = Reader::new(&b);
        r.envelope(0x0101, "test").unwrap();
        assert_eq!(r.u8().unwrap(), 1);
        assert_eq!(r.u16().unwrap(), 2);
        assert_eq!(r.u32().unwrap(), 3);
        assert_eq!(r.u64().unwrap(), 4);
        assert!(r.bool("flag").unwrap());
        assert_eq!(r.var_bytes("abc", 3).unwrap(), b"abc");
        assert_eq!(r.fixed("nines", 2).unwrap(), &[9, 9]);
        r.finish().unwrap();
    }

    #[test]
    fn trailing_bytes_are_refused() {
        let msg = ErrorMessage::new("no").to_wire();
        let mut longer = msg.clone();
        longer.push(0);
        assert_eq!(ErrorMessage::from_wire(&longer), Err(Error::TrailingBytes(1)));
        assert!(ErrorMessage::from_wire(&msg[..msg.len() - 1]).is_err());
    }

    #[test]
    fn lengths_are_bounded_before_allocation() {
        let mut w = Writer::new();
        w.put_u32(u32::MAX);
        let b = w.into_bytes();
        assert!(matches!(
            Reader::new(&b).var_bytes("blob", 1024),
            Err(Error::TooLong { .. })
        ));
        assert!(matches!(
            Reader::new(&b).count("items", usize::MAX, 1),
            Err(Error::Truncated { .. })
        ));
        assert!(matches!(
            Reader::new(&b).count("items", 10, 1),
            Err(Error::TooMany { .. })
        ));
    }

    #[test]
    fn wrong_version_and_tag() {
        let mut b = ErrorMessage::new("x").to_wire();
        b[0] = 2;
        assert_eq!(ErrorMessage::from_wire(&b), Err(Error::UnsupportedVersion(2)));
        let mut w = Writer::new();
        w.put_envelope(tags::PSI_REQUEST);
        assert!(matches!(
            ErrorMessage::from_wire(&w.into_bytes()),
            Err(Error::UnexpectedType { .. })
        ));
    }

    #[test]
    fn non_canonical_bool_refused() {
        assert!(Reader::new(&[2]).bool("flag").is_err());
    }

    #[test]
    fn long_reasons_are_cut_on_char_boundary() {
        let m = ErrorMessage::new("é".repeat(400));
        assert!(m.reason.len() <= MAX_ERROR_REASON);
        assert_eq!(ErrorMessage::from_wire(&m.to_wire()).unwrap(), m);
    }

    proptest! {
        #[test]
        fn error_message_roundtrip(s in ".{0,100}") {
            let m = ErrorMessage::new(s);
            prop_assert_eq!(ErrorMessage::from_wire(&m.to_wire()).unwrap(), m);
        }

        #[test]
        fn decoding_random_bytes_never_panics(b in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = ErrorMessage::from_wire(&b);
        }
    }
}
