//! The PSI receiver: blinded elements (precomputable), then unblinding and matching.

use crate::messages::{Request, Response};
use crate::params::PsiParams;
use crate::{Error, Result, Security, dedupe};
use rand_core::CryptoRngCore;
use tacit_crypto::oprf::Oprf;
use tacit_crypto::rng::shuffle;
use tacit_crypto::{PrimeGroup, SecretScalar};
use tacit_wire::{Reader, Writer, tags};

/// One of the `m` request slots: a real element or a dummy.
#[derive(Debug, Clone)]
struct Slot<G: PrimeGroup> {
    /// For a real element: its index into the receiver's (deduplicated) inputs and
    /// `αᵢ⁻¹`, for unblinding. `None` for a dummy.
    input: Option<(u32, SecretScalar<G>)>,
    /// `yᵢ = αᵢ·H(xᵢ)`.
    blinded: G::Element,
    /// Its canonical encoding (made once, at precomputation).
    encoded: G::ElementBytes,
}

impl<G: PrimeGroup> Slot<G> {
    fn new(input: Option<(u32, SecretScalar<G>)>, blinded: G::Element) -> Self {
        Slot {
            input,
            encoded: G::element_bytes(&blinded),
            blinded,
        }
    }
}

/// A request slot whose blinded element a CA certified (PrivateDrop Eq. (5)–(6)): a
/// real identifier with the blinding scalar the device chose, or a dummy element the
/// CA chose for an unused slot.
#[derive(Clone)]
pub enum CertifiedSlot<G: PrimeGroup> {
    /// A real input `x` with its blinding scalar `α` (`y = α·H(x)`).
    Real {
        /// The input.
        input: Vec<u8>,
        /// Its blinding scalar.
        blind: SecretScalar<G>,
    },
    /// A dummy: a uniformly random element nobody knows a preimage for.
    Dummy {
        /// The element.
        blinded: G::Element,
    },
}

impl<G: PrimeGroup> core::fmt::Debug for CertifiedSlot<G> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        // Never the identifier or the blind (issue 9).
        f.write_str("CertifiedSlot(<redacted>)")
    }
}

/// The receiver's precomputed blinded elements and blinding scalars (PrivateDrop §4.4:
/// "the PSI receiver can precompute the values yᵢ, which change seldomly").
///
/// Exactly `m` slots in random order; dummy slots hold `α·H(r)` for a random `r`, so
/// they are distributed exactly like real ones. Reusing one precomputation across
/// sessions sends the same `yᵢ` each time (PrivateDrop certifies them and reuses them
/// by design); a peer can then link the sessions, which the account UUID already
/// allows in PrivateDrop.
///
/// `Debug` shows the parameters only: neither the inputs nor how many are real. The
/// inputs are wiped on drop (the blinding scalars by `SecretScalar`).
#[derive(Clone)]
pub struct ReceiverPrecomputation<G: PrimeGroup> {
    params: PsiParams,
    inputs: Vec<Vec<u8>>,
    slots: Vec<Slot<G>>,
}

impl<G: PrimeGroup> Drop for ReceiverPrecomputation<G> {
    fn drop(&mut self) {
        zeroize::Zeroize::zeroize(&mut self.inputs);
    }
}

impl<G: PrimeGroup> core::fmt::Debug for ReceiverPrecomputation<G> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ReceiverPrecomputation")
            .field("params", &self.params)
            .field("slots", &self.slots.len())
            .finish_non_exhaustive()
    }
}

impl<G: PrimeGroup> ReceiverPrecomputation<G> {
    /// Blinds `set` (duplicates removed) and pads it to `m` slots.
    pub fn compute<T: AsRef<[u8]>>(params: &PsiParams, set: &[T], rng: &mut impl CryptoRngCore) -> Result<Self> {
        let inputs = dedupe(set);
        let blinds: Vec<SecretScalar<G>> = (0..params.max_receiver).map(|_| SecretScalar::random(rng)).collect();
        Self::with_blinds(params, inputs, blinds, rng)
    }

    /// Like [`ReceiverPrecomputation::compute`] with given blinding scalars `αᵢ` (for
    /// example the ones a CA certified `yᵢ = αᵢ·H(IDᵢ)` for); `blinds` must hold `m`
    /// non-zero scalars, the first `|set|` used for the real elements in order.
    pub fn with_blinds(
        params: &PsiParams,
        inputs: Vec<Vec<u8>>,
        blinds: Vec<SecretScalar<G>>,
        rng: &mut impl CryptoRngCore,
    ) -> Result<Self> {
        params.validate()?;
        params.expect_group::<G>()?;
        let m = params.max_receiver as usize;
        if inputs.len() > m {
            return Err(Error::SetTooLarge {
                what: "receiver set",
                len: inputs.len(),
                max: m,
            });
        }
        if blinds.len() != m {
            return Err(Error::InvalidParams(format!(
                "{} blinding scalars for m = {m} slots",
                blinds.len()
            )));
        }
        let oprf = Oprf::<G>::new(params.security.mode());
        let mut slots = Vec::with_capacity(m);
        for (i, alpha) in blinds.into_iter().enumerate() {
            let (input, point) = if i < inputs.len() {
                (Some(i as u32), oprf.hash_to_group(&inputs[i])?)
            } else {
                let mut r = [0u8; 32];
                rng.fill_bytes(&mut r);
                (None, oprf.hash_to_group(&r)?)
            };
            if G::scalar_is_zero(alpha.expose()) {
                return Err(Error::InvalidParams("a blinding scalar is zero".into()));
            }
            slots.push(Slot::new(
                input.map(|i| (i, SecretScalar::new(G::scalar_invert(alpha.expose())))),
                G::mul(&point, alpha.expose()),
            ));
        }
        shuffle(rng, &mut slots);
        Ok(ReceiverPrecomputation {
            params: *params,
            inputs,
            slots,
        })
    }

    /// A precomputation from certified slots, in the given (certified) order: exactly
    /// `m` slots, real inputs distinct.
    pub fn from_certified_slots(params: &PsiParams, certified: Vec<CertifiedSlot<G>>) -> Result<Self> {
        params.validate()?;
        params.expect_group::<G>()?;
        let m = params.max_receiver as usize;
        if certified.len() != m {
            return Err(Error::InvalidParams(format!(
                "{} certified slots for m = {m}",
                certified.len()
            )));
        }
        let oprf = Oprf::<G>::new(params.security.mode());
        let mut inputs: Vec<Vec<u8>> = Vec::new();
        let mut slots = Vec::with_capacity(m);
        for c in certified {
            match c {
                CertifiedSlot::Real { input, blind } => {
                    if inputs.contains(&input) {
                        return Err(Error::InvalidParams("a certified input appears twice".into()));
                    }
                    if G::scalar_is_zero(blind.expose()) {
                        return Err(Error::InvalidParams("a blinding scalar is zero".into()));
                    }
                    let blinded = G::mul(&oprf.hash_to_group(&input)?, blind.expose());
                    slots.push(Slot::new(
                        Some((inputs.len() as u32, SecretScalar::new(G::scalar_invert(blind.expose())))),
                        blinded,
                    ));
                    inputs.push(input);
                }
                CertifiedSlot::Dummy { blinded } => {
                    if G::is_identity(&blinded) {
                        return Err(Error::InvalidParams("a dummy slot holds the identity".into()));
                    }
                    slots.push(Slot::new(None, blinded));
                }
            }
        }
        Ok(ReceiverPrecomputation {
            params: *params,
            inputs,
            slots,
        })
    }

    /// The parameters.
    pub fn params(&self) -> &PsiParams {
        &self.params
    }

    /// The deduplicated inputs, in input order.
    pub fn inputs(&self) -> &[Vec<u8>] {
        &self.inputs
    }

    /// The blinded element of each real input, in input order (what a CA certifies).
    pub fn blinded_inputs(&self) -> Vec<G::Element> {
        let mut out = vec![G::identity(); self.inputs.len()];
        for s in &self.slots {
            if let Some((i, _)) = &s.input {
                out[*i as usize] = s.blinded;
            }
        }
        out
    }

    /// The `m` blinded elements in request order.
    pub fn request_elements(&self) -> Vec<G::Element> {
        self.slots.iter().map(|s| s.blinded).collect()
    }

    /// Encoding for storage (contains the blinding scalars: keep it in the store only).
    pub fn to_bytes(&self) -> zeroize::Zeroizing<Vec<u8>> {
        // Sized exactly, so the buffer never grows: a grown buffer would leave a copy
        // of the blinds in freed memory (issue 9).
        let mut params = Writer::new();
        self.params.encode(&mut params);
        let len = 3
            + params.into_bytes().len()
            + 4
            + self.inputs.iter().map(|i| 4 + i.len()).sum::<usize>()
            + 4
            + self.slots.len() * (1 + G::ELEMENT_LEN)
            + self.slots.iter().filter(|s| s.input.is_some()).count() * (4 + G::SCALAR_LEN);
        let mut w = Writer::with_capacity(len);
        w.put_envelope(tags::PSI_RECEIVER_PRECOMPUTATION);
        self.params.encode(&mut w);
        w.put_count(self.inputs.len());
        for i in &self.inputs {
            w.put_var_bytes(i);
        }
        w.put_count(self.slots.len());
        for s in &self.slots {
            match &s.input {
                Some((i, inverse_blind)) => {
                    w.put_u8(1);
                    w.put_u32(*i);
                    w.put_fixed(&inverse_blind.to_bytes());
                }
                None => w.put_u8(0),
            }
            w.put_fixed(s.encoded.as_ref());
        }
        zeroize::Zeroizing::new(w.into_bytes())
    }

    /// Decodes a stored precomputation.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let mut r = Reader::new(bytes);
        r.envelope(tags::PSI_RECEIVER_PRECOMPUTATION, "PSI receiver precomputation")?;
        let params = PsiParams::decode(&mut r)?;
        if params.group != G::ID {
            return Err(Error::PrecomputationMismatch("stored for another group"));
        }
        let m = params.max_receiver as usize;
        let n_inputs = r.count("inputs", m, 4)?;
        let mut inputs = Vec::with_capacity(n_inputs);
        for _ in 0..n_inputs {
            inputs.push(r.var_bytes("input", 1 << 16)?.to_vec());
        }
        let n_slots = r.count("slots", m, 1 + G::ELEMENT_LEN)?;
        if n_slots != m {
            return Err(Error::PrecomputationMismatch("wrong number of slots"));
        }
        let mut slots = Vec::with_capacity(m);
        let mut seen = vec![false; n_inputs];
        for _ in 0..m {
            let input = match r.u8()? {
                0 => None,
                1 => {
                    let i = r.u32()?;
                    match seen.get_mut(i as usize) {
                        Some(s) if !*s => *s = true,
                        _ => {
                            return Err(Error::PrecomputationMismatch("slot names an unknown or repeated input"));
                        }
                    }
                    Some((i, SecretScalar::from_bytes(r.fixed("blinding scalar", G::SCALAR_LEN)?)?))
                }
                x => {
                    return Err(tacit_wire::Error::invalid("slot", format!("unknown tag {x}")).into());
                }
            };
            let (blinded, encoded) = crate::messages::read_element::<G>(&mut r, "blinded element")?;
            slots.push(Slot {
                input,
                blinded,
                encoded,
            });
        }
        r.finish()?;
        if seen.iter().any(|s| !s) {
            return Err(Error::PrecomputationMismatch("an input has no slot"));
        }
        Ok(ReceiverPrecomputation { params, inputs, slots })
    }
}

/// The first (up to) 8 bytes of a truncated value as an integer.
fn prefix(u: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let k = u.len().min(8);
    b[..k].copy_from_slice(&u[..k]);
    u64::from_le_bytes(b)
}

/// Marks the inputs whose truncated output appears among the sender's values. A scan
/// compares 8-byte prefixes against the (at most m) wanted ones and checks the full
/// value only on a prefix hit.
fn match_truncated(outputs: &[(usize, Vec<u8>)], truncated: &[u8], lb: usize, inputs: usize) -> Vec<bool> {
    let mut hit = vec![false; inputs];
    if outputs.is_empty() {
        return hit;
    }
    let prefixes: Vec<u64> = outputs.iter().map(|(_, o)| prefix(o)).collect();
    let check = |u: &[u8], hit: &mut Vec<bool>| {
        for (i, o) in outputs {
            if o.as_slice() == u {
                hit[*i] = true;
            }
        }
    };
    if prefixes.len() <= 16 {
        for u in truncated.chunks_exact(lb) {
            let p = prefix(u);
            if prefixes.contains(&p) {
                check(u, &mut hit);
            }
        }
    } else {
        let set: std::collections::HashSet<u64> = prefixes.iter().copied().collect();
        for u in truncated.chunks_exact(lb) {
            if set.contains(&prefix(u)) {
                check(u, &mut hit);
            }
        }
    }
    hit
}

/// The PSI receiver's entry point.
#[derive(Debug)]
pub struct Receiver;

impl Receiver {
    /// Starts a run: returns the state awaiting the response and the encoded request.
    pub fn start<G: PrimeGroup>(pre: &ReceiverPrecomputation<G>) -> (ReceiverAwaitingResponse<G>, Vec<u8>) {
        let (state, req) = Self::start_typed(pre);
        (state, req.to_bytes())
    }

    /// Like [`Receiver::start`] with the typed request.
    pub fn start_typed<G: PrimeGroup>(pre: &ReceiverPrecomputation<G>) -> (ReceiverAwaitingResponse<G>, Request<G>) {
        let encoded: Vec<G::ElementBytes> = pre.slots.iter().map(|s| s.encoded).collect();
        let request = Request::with_encodings(pre.params, pre.request_elements(), &encoded);
        (
            ReceiverAwaitingResponse {
                pre: pre.clone(),
                blinded: request.blinded.clone(),
                encoded,
            },
            request,
        )
    }
}

/// The receiver after sending its request (`Debug` shows nothing of its inputs).
pub struct ReceiverAwaitingResponse<G: PrimeGroup> {
    pre: ReceiverPrecomputation<G>,
    blinded: Vec<G::Element>,
    encoded: Vec<G::ElementBytes>,
}

impl<G: PrimeGroup> core::fmt::Debug for ReceiverAwaitingResponse<G> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ReceiverAwaitingResponse")
            .field("pre", &self.pre)
            .finish_non_exhaustive()
    }
}

/// What the receiver learned: the elements of its set that the sender also holds, in
/// the receiver's input order. The items are wiped on drop; `Debug` shows only how
/// many there are.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Intersection {
    indices: Vec<usize>,
    items: Vec<Vec<u8>>,
}

impl core::fmt::Debug for Intersection {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Intersection({} items)", self.items.len())
    }
}

impl Drop for Intersection {
    fn drop(&mut self) {
        zeroize::Zeroize::zeroize(&mut self.items);
    }
}

impl Intersection {
    /// Indices into the receiver's deduplicated input list.
    pub fn indices(&self) -> &[usize] {
        &self.indices
    }

    /// The common elements.
    pub fn items(&self) -> &[Vec<u8>] {
        &self.items
    }

    /// Whether the sets are disjoint.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Number of common elements.
    pub fn len(&self) -> usize {
        self.items.len()
    }
}

impl<G: PrimeGroup> ReceiverAwaitingResponse<G> {
    /// Processes the encoded response.
    pub fn on_response(self, bytes: &[u8]) -> Result<Intersection> {
        self.on_response_bound(bytes, &[])
    }

    /// [`ReceiverAwaitingResponse::on_response`] for a response bound to this
    /// session with [`crate::Sender::respond_bound`]: the proof must cover `binding`
    /// (our side's channel binding), so a response made in another session fails.
    pub fn on_response_bound(self, bytes: &[u8], binding: &[u8]) -> Result<Intersection> {
        let resp = Response::<G>::from_bytes(bytes, &self.pre.params)?;
        self.on_response_typed_bound(&resp, binding)
    }

    /// Processes a decoded response: verify the proof, unblind, hash, compare.
    pub fn on_response_typed(self, resp: &Response<G>) -> Result<Intersection> {
        self.on_response_typed_bound(resp, &[])
    }

    /// [`ReceiverAwaitingResponse::on_response_typed`] with a channel binding.
    pub fn on_response_typed_bound(self, resp: &Response<G>, binding: &[u8]) -> Result<Intersection> {
        let params = &self.pre.params;
        params.expect_equal(&resp.params)?;
        let m = params.max_receiver as usize;
        if resp.evaluated.len() != m {
            return Err(Error::WrongCount {
                who: "sender",
                what: "evaluated elements",
                count: resp.evaluated.len(),
                expected: m,
            });
        }
        let lb = params.truncation_bytes();
        if resp.truncated.len() != params.max_sender as usize * lb {
            return Err(Error::WrongCount {
                who: "sender",
                what: "bytes of truncated set elements",
                count: resp.truncated.len(),
                expected: params.max_sender as usize * lb,
            });
        }
        let oprf = Oprf::<G>::new(params.security.mode());
        if params.security == Security::Malicious {
            let proof = resp.proof.as_ref().ok_or(Error::ProofFailed)?;
            let bytes = resp.element_bytes();
            oprf.verify_proof_bound(
                (&resp.public_key, &bytes[0]),
                (&self.blinded, &self.encoded),
                (&resp.evaluated, &bytes[1..]),
                proof,
                binding,
            )
            .map_err(|_| Error::ProofFailed)?;
        }
        // Unblind and hash the real slots: u = Hash(x, αᵢ⁻¹·zᵢ)[..l].
        let outputs: Vec<(usize, Vec<u8>)> = self
            .pre
            .slots
            .iter()
            .zip(resp.evaluated.iter())
            .filter_map(|(slot, z)| {
                let (i, inverse_blind) = slot.input.as_ref()?;
                let input = &self.pre.inputs[*i as usize];
                let unblinded = G::mul(z, inverse_blind.expose());
                Some((*i as usize, oprf.finalize_unblinded(input, &unblinded)[..lb].to_vec()))
            })
            .collect();
        let hit = match_truncated(&outputs, &resp.truncated, lb, self.pre.inputs.len());
        let mut result = Intersection::default();
        for (i, h) in hit.iter().enumerate() {
            if *h {
                result.indices.push(i);
                result.items.push(self.pre.inputs[i].clone());
            }
        }
        Ok(result)
    }
}
