//! The two PSI messages and their canonical encodings (see `docs/wire.md`).
//!
//! ```text
//! Request  = Envelope(0x0101) || Params || u32 m || m × Element            (blinded yᵢ)
//! Response = Envelope(0x0102) || Params || Element pk || u32 m || m × Element (zᵢ)
//!            || u8 has_proof || [Scalar c || Scalar s]
//!            || u8 l_bytes || u32 n || n × l_bytes                         (uⱼ)
//! Params   = u8 group || u8 security || u32 m || u32 n || u16 λ
//! ```
//!
//! Decoding checks every count against the parameters the local party runs with
//! *before* allocating, so a hostile peer cannot make us allocate more than the bounds
//! allow.

use crate::params::PsiParams;
use crate::{Error, Result, Security};
use core::marker::PhantomData;
use tacit_crypto::PrimeGroup;
use tacit_crypto::oprf::Proof;
use tacit_wire::{Reader, Writer, tags};

/// Canonical encodings remembered beside the elements they encode, so that an element
/// decoded from the wire (or encoded for it) is not compressed again for the DLEQ
/// proof's hashes or for the next message. An encoding is used only while the element
/// beside it still equals the remembered one (a cheap comparison), so changing a
/// message's public fields can never put a stale encoding into a hash or onto the wire.
#[derive(Clone)]
pub struct EncodingMemo<G: PrimeGroup>(Vec<(G::Element, G::ElementBytes)>);

impl<G: PrimeGroup> Default for EncodingMemo<G> {
    fn default() -> Self {
        EncodingMemo(Vec::new())
    }
}

impl<G: PrimeGroup> EncodingMemo<G> {
    /// Encodes each element once.
    pub fn of(elements: &[G::Element]) -> Self {
        EncodingMemo(elements.iter().map(|e| (*e, G::element_bytes(e))).collect())
    }

    /// Remembers encodings the caller already holds (`bytes[i]` encodes `elements[i]`).
    pub fn from_parts(elements: &[G::Element], bytes: &[G::ElementBytes]) -> Self {
        debug_assert_eq!(elements.len(), bytes.len());
        EncodingMemo(elements.iter().copied().zip(bytes.iter().copied()).collect())
    }

    /// The encodings of `elements`: remembered ones where the element is unchanged,
    /// computed ones elsewhere.
    pub fn bytes(&self, elements: &[G::Element]) -> Vec<G::ElementBytes> {
        elements
            .iter()
            .enumerate()
            .map(|(i, e)| match self.0.get(i) {
                Some((m, b)) if m == e => *b,
                _ => G::element_bytes(e),
            })
            .collect()
    }
}

impl<G: PrimeGroup> core::fmt::Debug for EncodingMemo<G> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "EncodingMemo({} entries)", self.0.len())
    }
}

/// A memo is a cache: two messages are equal when their fields are.
impl<G: PrimeGroup> PartialEq for EncodingMemo<G> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// PSI message 1 (receiver → sender): the receiver's padded, blinded elements.
#[derive(Debug, Clone, PartialEq)]
pub struct Request<G: PrimeGroup> {
    /// The parameters the receiver runs with.
    pub params: PsiParams,
    /// Exactly `m` blinded elements `yᵢ = αᵢ·H(xᵢ)` (real and dummy, indistinguishable).
    pub blinded: Vec<G::Element>,
    memo: EncodingMemo<G>,
}

/// PSI message 2 (sender → receiver): evaluations, proof, and the sender's set.
#[derive(Debug, Clone, PartialEq)]
pub struct Response<G: PrimeGroup> {
    /// The parameters (equal to the request's).
    pub params: PsiParams,
    /// The sender's public key `k·G`.
    pub public_key: G::Element,
    memo: EncodingMemo<G>,
    /// `zᵢ = k·yᵢ`, in request order.
    pub evaluated: Vec<G::Element>,
    /// The batched DLEQ proof (malicious security only).
    pub proof: Option<Proof<G>>,
    /// `n` truncated evaluations of the sender's padded set, `l_bytes` each,
    /// concatenated in random order.
    pub truncated: Vec<u8>,
    _g: PhantomData<G>,
}

/// Elements with their canonical encodings, as read from the wire.
type ElementsAndEncodings<G> = (Vec<<G as PrimeGroup>::Element>, Vec<<G as PrimeGroup>::ElementBytes>);

/// Reads `count` group elements of fixed size, with their encodings.
pub(crate) fn read_elements<G: PrimeGroup>(r: &mut Reader<'_>, count: usize) -> Result<ElementsAndEncodings<G>> {
    let mut out = Vec::with_capacity(count);
    let mut bytes = Vec::with_capacity(count);
    for _ in 0..count {
        let (e, b) = read_element::<G>(r, "group element")?;
        out.push(e);
        bytes.push(b);
    }
    Ok((out, bytes))
}

/// Reads one group element and keeps its encoding.
pub(crate) fn read_element<G: PrimeGroup>(
    r: &mut Reader<'_>,
    what: &'static str,
) -> Result<(G::Element, G::ElementBytes)> {
    let raw = r.fixed(what, G::ELEMENT_LEN)?;
    let e = G::decode_element(raw)?;
    let b =
        G::ElementBytes::try_from(raw).map_err(|_| tacit_wire::Error::invalid(what, "wrong length for the group"))?;
    Ok((e, b))
}

/// Turns a peer's refusal into [`Error::PeerRefused`] (its words) or
/// [`Error::PeerMismatch`] (a typed mismatch, worded from our side).
pub(crate) fn check_refusal(bytes: &[u8]) -> Result<()> {
    match tacit_wire::Refusal::peek(bytes) {
        None => Ok(()),
        Some(r) => Err(match r? {
            tacit_wire::Refusal::Words(w) => Error::PeerRefused(w),
            tacit_wire::Refusal::Mismatch(m) => Error::PeerMismatch(m),
        }),
    }
}

impl<G: PrimeGroup> Request<G> {
    /// Builds a request.
    pub fn new(params: PsiParams, blinded: Vec<G::Element>) -> Self {
        Request {
            params,
            blinded,
            memo: EncodingMemo::default(),
        }
    }

    /// Builds a request from elements whose canonical encodings the caller already
    /// holds (`bytes[i]` must encode `blinded[i]`; both usually come from one decode).
    pub fn with_encodings(params: PsiParams, blinded: Vec<G::Element>, bytes: &[G::ElementBytes]) -> Self {
        let memo = EncodingMemo::from_parts(&blinded, bytes);
        Request { params, blinded, memo }
    }

    /// The canonical encodings of the blinded elements.
    pub fn blinded_bytes(&self) -> Vec<G::ElementBytes> {
        self.memo.bytes(&self.blinded)
    }

    /// Encoded size for the given parameters (independent of the real set size).
    pub fn encoded_len(params: &PsiParams) -> usize {
        3 + 12 + 4 + params.max_receiver as usize * G::ELEMENT_LEN
    }

    /// Appends the encoding.
    pub fn encode(&self, w: &mut Writer) {
        w.put_envelope(tags::PSI_REQUEST);
        self.params.encode(w);
        w.put_count(self.blinded.len());
        for b in self.blinded_bytes() {
            w.put_fixed(b.as_ref());
        }
    }

    /// The encoding as bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::with_capacity(Self::encoded_len(&self.params));
        self.encode(&mut w);
        w.into_bytes()
    }

    /// Reads a request sent to a sender running `ours`: the parameters must match and
    /// the receiver must send exactly `m` valid elements.
    pub fn decode(r: &mut Reader<'_>, ours: &PsiParams) -> Result<Self> {
        r.envelope(tags::PSI_REQUEST, "PSI request")?;
        let params = PsiParams::decode(r)?;
        params.expect_group::<G>()?;
        ours.expect_equal(&params)?;
        let m = ours.max_receiver as usize;
        let count = r.count("blinded elements", usize::MAX, G::ELEMENT_LEN)?;
        if count != m {
            return Err(Error::WrongCount {
                who: "receiver",
                what: "blinded elements",
                count,
                expected: m,
            });
        }
        let (blinded, bytes) = read_elements::<G>(r, count)?;
        Ok(Request::with_encodings(params, blinded, &bytes))
    }

    /// Decodes a complete request message (or surfaces the peer's refusal).
    pub fn from_bytes(bytes: &[u8], ours: &PsiParams) -> Result<Self> {
        check_refusal(bytes)?;
        let mut r = Reader::new(bytes);
        let req = Self::decode(&mut r, ours)?;
        r.finish()?;
        Ok(req)
    }
}

impl<G: PrimeGroup> Response<G> {
    /// Builds a response.
    pub fn new(
        params: PsiParams,
        public_key: G::Element,
        evaluated: Vec<G::Element>,
        proof: Option<Proof<G>>,
        truncated: Vec<u8>,
    ) -> Self {
        let mut bytes = vec![G::element_bytes(&public_key)];
        bytes.extend(evaluated.iter().map(G::element_bytes));
        Self::with_encodings(params, public_key, evaluated, &bytes, proof, truncated)
    }

    /// Like [`Response::new`] with the encodings of `[public_key, evaluated…]` the
    /// caller already holds.
    pub(crate) fn with_encodings(
        params: PsiParams,
        public_key: G::Element,
        evaluated: Vec<G::Element>,
        bytes: &[G::ElementBytes],
        proof: Option<Proof<G>>,
        truncated: Vec<u8>,
    ) -> Self {
        let mut all = vec![public_key];
        all.extend_from_slice(&evaluated);
        Response {
            params,
            public_key,
            memo: EncodingMemo::from_parts(&all, bytes),
            evaluated,
            proof,
            truncated,
            _g: PhantomData,
        }
    }

    /// The canonical encodings of `[public_key, evaluated…]`.
    pub(crate) fn element_bytes(&self) -> Vec<G::ElementBytes> {
        let mut all = vec![self.public_key];
        all.extend_from_slice(&self.evaluated);
        self.memo.bytes(&all)
    }

    /// Encoded size for the given parameters (independent of the real set sizes).
    pub fn encoded_len(params: &PsiParams) -> usize {
        let proof = match params.security {
            Security::Malicious => 2 * G::SCALAR_LEN,
            Security::SemiHonest => 0,
        };
        3 + 12
            + G::ELEMENT_LEN
            + 4
            + params.max_receiver as usize * G::ELEMENT_LEN
            + 1
            + proof
            + 1
            + 4
            + params.max_sender as usize * params.truncation_bytes()
    }

    /// Appends the encoding.
    pub fn encode(&self, w: &mut Writer) {
        w.put_envelope(tags::PSI_RESPONSE);
        self.params.encode(w);
        let bytes = self.element_bytes();
        w.put_fixed(bytes[0].as_ref());
        w.put_count(self.evaluated.len());
        for b in &bytes[1..] {
            w.put_fixed(b.as_ref());
        }
        match &self.proof {
            Some(p) => {
                w.put_u8(1);
                w.put_fixed(&p.to_bytes());
            }
            None => w.put_u8(0),
        }
        let lb = self.params.truncation_bytes();
        w.put_u8(lb as u8);
        w.put_count(self.truncated.len() / lb);
        w.put_fixed(&self.truncated);
    }

    /// The encoding as bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::with_capacity(Self::encoded_len(&self.params));
        self.encode(&mut w);
        w.into_bytes()
    }

    /// Reads a response for a receiver running `ours`: exact counts, valid elements,
    /// a proof iff the protocol is malicious-secure.
    pub fn decode(r: &mut Reader<'_>, ours: &PsiParams) -> Result<Self> {
        r.envelope(tags::PSI_RESPONSE, "PSI response")?;
        let params = PsiParams::decode(r)?;
        params.expect_group::<G>()?;
        ours.expect_equal(&params)?;
        let (public_key, pk_bytes) = read_element::<G>(r, "public key")?;
        let m = ours.max_receiver as usize;
        let count = r.count("evaluated elements", usize::MAX, G::ELEMENT_LEN)?;
        if count != m {
            return Err(Error::WrongCount {
                who: "sender",
                what: "evaluated elements",
                count,
                expected: m,
            });
        }
        let (evaluated, mut bytes) = read_elements::<G>(r, count)?;
        bytes.insert(0, pk_bytes);
        let has_proof = r.bool("proof flag")?;
        let proof = match (has_proof, ours.security) {
            (true, Security::Malicious) => Some(Proof::<G>::from_bytes(r.fixed("proof", Proof::<G>::LEN)?)?),
            (false, Security::SemiHonest) => None,
            (false, Security::Malicious) => {
                return Err(tacit_wire::Error::invalid("proof", "missing in a malicious-secure run").into());
            }
            (true, Security::SemiHonest) => {
                return Err(tacit_wire::Error::invalid("proof", "unexpected in a semi-honest run").into());
            }
        };
        let lb = r.u8()? as usize;
        if lb != ours.truncation_bytes() {
            return Err(tacit_wire::Error::invalid(
                "truncation length",
                format!("{lb} bytes; the parameters require {}", ours.truncation_bytes()),
            )
            .into());
        }
        let n = r.count("sender elements", usize::MAX, lb)?;
        if n != ours.max_sender as usize {
            return Err(Error::WrongCount {
                who: "sender",
                what: "truncated set elements",
                count: n,
                expected: ours.max_sender as usize,
            });
        }
        let truncated = r.fixed("sender elements", n * lb)?.to_vec();
        Ok(Response::with_encodings(
            params, public_key, evaluated, &bytes, proof, truncated,
        ))
    }

    /// Decodes a complete response message (or surfaces the peer's refusal).
    pub fn from_bytes(bytes: &[u8], ours: &PsiParams) -> Result<Self> {
        check_refusal(bytes)?;
        let mut r = Reader::new(bytes);
        let resp = Self::decode(&mut r, ours)?;
        r.finish()?;
        Ok(resp)
    }
}
