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
use tacit_wire::{Envelope, ErrorMessage, Reader, Writer, tags};

/// PSI message 1 (receiver → sender): the receiver's padded, blinded elements.
#[derive(Debug, Clone, PartialEq)]
pub struct Request<G: PrimeGroup> {
    /// The parameters the receiver runs with.
    pub params: PsiParams,
    /// Exactly `m` blinded elements `yᵢ = αᵢ·H(xᵢ)` (real and dummy, indistinguishable).
    pub blinded: Vec<G::Element>,
}

/// PSI message 2 (sender → receiver): evaluations, proof, and the sender's set.
#[derive(Debug, Clone, PartialEq)]
pub struct Response<G: PrimeGroup> {
    /// The parameters (equal to the request's).
    pub params: PsiParams,
    /// The sender's public key `k·G`.
    pub public_key: G::Element,
    /// `zᵢ = k·yᵢ`, in request order.
    pub evaluated: Vec<G::Element>,
    /// The batched DLEQ proof (malicious security only).
    pub proof: Option<Proof<G>>,
    /// `n` truncated evaluations of the sender's padded set, `l_bytes` each,
    /// concatenated in random order.
    pub truncated: Vec<u8>,
    _g: PhantomData<G>,
}

/// Reads `count` group elements of fixed size.
fn read_elements<G: PrimeGroup>(r: &mut Reader<'_>, count: usize) -> Result<Vec<G::Element>> {
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        out.push(G::decode_element(r.fixed("group element", G::ELEMENT_LEN)?)?);
    }
    Ok(out)
}

/// Turns a peer's [`ErrorMessage`] into [`Error::PeerRefused`].
pub(crate) fn check_refusal(bytes: &[u8]) -> Result<()> {
    if let Ok(env) = Envelope::peek(bytes) {
        if env.tag == tags::ERROR {
            let m = <ErrorMessage as tacit_wire::Decode>::from_wire(bytes)?;
            return Err(Error::PeerRefused(m.reason));
        }
    }
    Ok(())
}

impl<G: PrimeGroup> Request<G> {
    /// Encoded size for the given parameters (independent of the real set size).
    pub fn encoded_len(params: &PsiParams) -> usize {
        3 + 12 + 4 + params.max_receiver as usize * G::ELEMENT_LEN
    }

    /// Appends the encoding.
    pub fn encode(&self, w: &mut Writer) {
        w.put_envelope(tags::PSI_REQUEST);
        self.params.encode(w);
        w.put_count(self.blinded.len());
        for e in &self.blinded {
            w.put_fixed(G::element_bytes(e).as_ref());
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
        let blinded = read_elements::<G>(r, count)?;
        Ok(Request { params, blinded })
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
        Response {
            params,
            public_key,
            evaluated,
            proof,
            truncated,
            _g: PhantomData,
        }
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
        w.put_fixed(G::element_bytes(&self.public_key).as_ref());
        w.put_count(self.evaluated.len());
        for e in &self.evaluated {
            w.put_fixed(G::element_bytes(e).as_ref());
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
        let public_key = G::decode_element(r.fixed("public key", G::ELEMENT_LEN)?)?;
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
        let evaluated = read_elements::<G>(r, count)?;
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
        Ok(Response::new(params, public_key, evaluated, proof, truncated))
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
