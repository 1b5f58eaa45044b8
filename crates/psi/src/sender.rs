//! The PSI sender: key, precomputation of its set, and the online answer.

use crate::messages::{Request, Response};
use crate::params::PsiParams;
use crate::{Error, Result, Security, dedupe};
use rand_core::CryptoRngCore;
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};
use tacit_crypto::oprf::{KeyPair, Oprf};
use tacit_crypto::rng::shuffle;
use tacit_crypto::{PrimeGroup, SecretScalar};
use tacit_wire::{Reader, Writer, tags};

/// Whether a precomputation may serve more than one session (PrivateDrop §4.4).
///
/// Reusing the sender's truncated evaluations across sessions lets a peer that talks
/// to us twice compare the two lists: it learns how many entries were added or
/// removed in between (and that nothing changed, when nothing did). Fresh
/// precomputations avoid that at the cost of one precomputation per session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reuse {
    /// A new key and a new precomputation for every session (the default; nothing
    /// links two sessions).
    FreshPerSession,
    /// One key and precomputation for every session of a key epoch (the paper's
    /// optimisation; leaks changes of the set between sessions of the epoch).
    WithinEpoch,
}

impl Reuse {
    fn code(self) -> u8 {
        match self {
            Reuse::FreshPerSession => 0,
            Reuse::WithinEpoch => 1,
        }
    }
}

/// The PSI sender's OPRF key `k`, tagged with the key epoch it belongs to.
#[derive(Debug, Clone)]
pub struct SenderKey<G: PrimeGroup> {
    key: KeyPair<G>,
    epoch: u64,
}

impl<G: PrimeGroup> SenderKey<G> {
    /// A fresh random key for `epoch`.
    pub fn generate(rng: &mut impl CryptoRngCore, epoch: u64) -> Self {
        SenderKey {
            key: KeyPair::from_secret(SecretScalar::random(rng)),
            epoch,
        }
    }

    /// The key epoch.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The public key `k·G`.
    pub fn public(&self) -> &G::Element {
        self.key.public()
    }

    /// The key pair.
    pub fn key_pair(&self) -> &KeyPair<G> {
        &self.key
    }

    /// Encoding for storage (contains the secret: keep it in the store only).
    pub fn to_bytes(&self) -> zeroize::Zeroizing<Vec<u8>> {
        let mut w = Writer::new();
        w.put_envelope(tags::PSI_SENDER_KEY);
        w.put_u8(G::ID.code());
        w.put_u64(self.epoch);
        w.put_fixed(&self.key.secret().to_bytes());
        zeroize::Zeroizing::new(w.into_bytes())
    }

    /// Decodes a stored key.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let mut r = Reader::new(bytes);
        r.envelope(tags::PSI_SENDER_KEY, "PSI sender key")?;
        if r.u8()? != G::ID.code() {
            return Err(Error::PrecomputationMismatch("stored key belongs to another group"));
        }
        let epoch = r.u64()?;
        let secret = SecretScalar::<G>::from_bytes(r.fixed("secret key", G::SCALAR_LEN)?)?;
        r.finish()?;
        Ok(SenderKey {
            key: KeyPair::from_secret(secret),
            epoch,
        })
    }
}

/// The sender's precomputed, truncated, padded and shuffled evaluations
/// `uⱼ = Hash(cⱼ, k·H(cⱼ))[..l]` of its set (PrivateDrop §4.4, "Precomputation").
///
/// Move-only: a [`Reuse::FreshPerSession`] precomputation serves exactly one
/// [`Sender`] and one session, so it cannot be cloned into a second one (issue 9);
/// a [`Reuse::WithinEpoch`] one is shared with [`SenderPrecomputation::share`].
/// `Debug` shows neither the real set size nor the evaluations.
pub struct SenderPrecomputation<G: PrimeGroup> {
    params: PsiParams,
    epoch: u64,
    public_key: G::Element,
    reuse: Reuse,
    real: usize,
    truncated: Vec<u8>,
}

impl<G: PrimeGroup> core::fmt::Debug for SenderPrecomputation<G> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SenderPrecomputation")
            .field("params", &self.params)
            .field("epoch", &self.epoch)
            .field("reuse", &self.reuse)
            .finish_non_exhaustive()
    }
}

impl<G: PrimeGroup> SenderPrecomputation<G> {
    /// A copy for another session of the same epoch; `None` for a fresh-per-session
    /// precomputation, which must never serve two sessions.
    pub fn share(&self) -> Option<Self> {
        (self.reuse == Reuse::WithinEpoch).then(|| SenderPrecomputation {
            params: self.params,
            epoch: self.epoch,
            public_key: self.public_key,
            reuse: self.reuse,
            real: self.real,
            truncated: self.truncated.clone(),
        })
    }
}

/// Elements per parallel work unit.
const CHUNK: usize = 64;

impl<G: PrimeGroup> SenderPrecomputation<G> {
    /// Precomputes the evaluations of `set` under `key` (duplicates removed, padded to
    /// `n` with random strings, shuffled), on all cores.
    pub fn compute<T: AsRef<[u8]> + Sync>(
        params: &PsiParams,
        key: &SenderKey<G>,
        set: &[T],
        reuse: Reuse,
        rng: &mut impl CryptoRngCore,
    ) -> Result<Self> {
        Self::compute_with_progress(params, key, set, reuse, rng, &|_| {})
    }

    /// [`SenderPrecomputation::compute`] reporting progress: `progress(k)` is called
    /// after each batch of `k` elements.
    pub fn compute_with_progress<T: AsRef<[u8]> + Sync>(
        params: &PsiParams,
        key: &SenderKey<G>,
        set: &[T],
        reuse: Reuse,
        rng: &mut impl CryptoRngCore,
        progress: &(dyn Fn(usize) + Sync),
    ) -> Result<Self> {
        params.validate()?;
        params.expect_group::<G>()?;
        let set = dedupe(set);
        let n = params.max_sender as usize;
        if set.len() > n {
            return Err(Error::SetTooLarge {
                what: "sender set",
                len: set.len(),
                max: n,
            });
        }
        let lb = params.truncation_bytes();
        let oprf = Oprf::<G>::new(params.security.mode());
        let mut truncated = vec![0u8; n * lb];
        let (real_part, dummy_part) = truncated.split_at_mut(set.len() * lb);
        real_part
            .par_chunks_mut(CHUNK * lb)
            .zip(set.par_chunks(CHUNK))
            .try_for_each(|(out, items)| -> Result<()> {
                for (slot, item) in out.chunks_exact_mut(lb).zip(items) {
                    let u = oprf.evaluate(key.key_pair(), item)?;
                    slot.copy_from_slice(&u[..lb]);
                }
                progress(items.len());
                Ok(())
            })?;
        // Dummies: uniformly random strings, distributed like truncated PRF outputs.
        rng.fill_bytes(dummy_part);
        // Random order: shuffle whole entries.
        let mut order: Vec<u32> = (0..n as u32).collect();
        shuffle(rng, &mut order);
        let mut shuffled = vec![0u8; n * lb];
        for (dst, &src) in shuffled.chunks_exact_mut(lb).zip(&order) {
            let s = src as usize * lb;
            dst.copy_from_slice(&truncated[s..s + lb]);
        }
        Ok(SenderPrecomputation {
            params: *params,
            epoch: key.epoch(),
            public_key: *key.public(),
            reuse,
            real: set.len(),
            truncated: shuffled,
        })
    }

    /// The parameters it was made for.
    pub fn params(&self) -> &PsiParams {
        &self.params
    }

    /// The key epoch it belongs to.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Its reuse policy.
    pub fn reuse(&self) -> Reuse {
        self.reuse
    }

    /// How many real (non-dummy) elements it holds (never sent).
    pub fn real_len(&self) -> usize {
        self.real
    }

    /// Encoding for storage.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::with_capacity(self.truncated.len() + 64);
        w.put_envelope(tags::PSI_SENDER_PRECOMPUTATION);
        self.params.encode(&mut w);
        w.put_u64(self.epoch);
        w.put_fixed(G::element_bytes(&self.public_key).as_ref());
        w.put_u8(self.reuse.code());
        w.put_u32(self.real as u32);
        w.put_var_bytes(&self.truncated);
        w.into_bytes()
    }

    /// Decodes a stored precomputation.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let mut r = Reader::new(bytes);
        r.envelope(tags::PSI_SENDER_PRECOMPUTATION, "PSI sender precomputation")?;
        let params = PsiParams::decode(&mut r)?;
        if params.group != G::ID {
            return Err(Error::PrecomputationMismatch("stored for another group"));
        }
        let epoch = r.u64()?;
        let public_key = G::decode_element(r.fixed("public key", G::ELEMENT_LEN)?)?;
        let reuse = match r.u8()? {
            0 => Reuse::FreshPerSession,
            1 => Reuse::WithinEpoch,
            x => {
                return Err(tacit_wire::Error::invalid("reuse", format!("unknown code {x}")).into());
            }
        };
        let real = r.u32()? as usize;
        let expected = params.max_sender as usize * params.truncation_bytes();
        let truncated = r.var_bytes("precomputed evaluations", expected)?.to_vec();
        r.finish()?;
        if truncated.len() != expected || real > params.max_sender as usize {
            return Err(Error::PrecomputationMismatch("stored evaluations have the wrong size"));
        }
        Ok(SenderPrecomputation {
            params,
            epoch,
            public_key,
            reuse,
            real,
            truncated,
        })
    }
}

/// The online PSI sender: answers requests with its key and precomputation.
#[derive(Debug)]
pub struct Sender<G: PrimeGroup> {
    params: PsiParams,
    key: SenderKey<G>,
    precomputation: SenderPrecomputation<G>,
    oprf: Oprf<G>,
    used: AtomicBool,
}

impl<G: PrimeGroup> Sender<G> {
    /// A sender; the precomputation must have been made with `key` for `params`.
    pub fn new(params: &PsiParams, key: SenderKey<G>, precomputation: SenderPrecomputation<G>) -> Result<Self> {
        params.validate()?;
        if precomputation.params != *params {
            return Err(Error::PrecomputationMismatch("made for other parameters"));
        }
        if precomputation.epoch != key.epoch() || precomputation.public_key != *key.public() {
            return Err(Error::PrecomputationMismatch("made with another key"));
        }
        Ok(Sender {
            params: *params,
            oprf: Oprf::new(params.security.mode()),
            key,
            precomputation,
            used: AtomicBool::new(false),
        })
    }

    /// The parameters.
    pub fn params(&self) -> &PsiParams {
        &self.params
    }

    /// Whether a session was already answered.
    pub fn is_used(&self) -> bool {
        self.used.load(Ordering::SeqCst)
    }

    /// Answers an encoded request; returns the encoded response.
    ///
    /// # Errors
    /// The request does not match our parameters or bounds, holds an invalid point,
    /// or a fresh-per-session precomputation was already used.
    pub fn respond(&self, request: &[u8], rng: &mut impl CryptoRngCore) -> Result<Vec<u8>> {
        let req = Request::<G>::from_bytes(request, &self.params)?;
        Ok(self.respond_to(&req, rng)?.to_bytes())
    }

    /// Answers a decoded request.
    pub fn respond_to(&self, req: &Request<G>, rng: &mut impl CryptoRngCore) -> Result<Response<G>> {
        self.params.expect_equal(&req.params)?;
        if req.blinded.len() != self.params.max_receiver as usize {
            return Err(Error::WrongCount {
                who: "receiver",
                what: "blinded elements",
                count: req.blinded.len(),
                expected: self.params.max_receiver as usize,
            });
        }
        if self.precomputation.reuse == Reuse::FreshPerSession && self.used.swap(true, Ordering::SeqCst) {
            return Err(Error::PrecomputationReused);
        }
        self.used.store(true, Ordering::SeqCst);
        // zᵢ = k·yᵢ. Sequential: with m = 10, waking a second thread cost more than it
        // saved (measured with `tacit bench psi`, see docs/psi.md).
        let evaluated: Vec<G::Element> = req
            .blinded
            .iter()
            .map(|b| self.oprf.blind_evaluate(self.key.key_pair(), b))
            .collect();
        // Each element is compressed once: the encodings feed both the proof's hashes
        // and the response on the wire.
        let mut bytes = Vec::with_capacity(evaluated.len() + 1);
        bytes.push(G::element_bytes(self.key.public()));
        bytes.extend(evaluated.iter().map(G::element_bytes));
        let proof = match self.params.security {
            Security::Malicious => Some(
                self.oprf
                    .generate_proof_encoded(
                        self.key.key_pair(),
                        (&req.blinded, &req.blinded_bytes()),
                        (&evaluated, &bytes[1..]),
                        rng,
                    )
                    .map_err(|_| Error::ProofFailed)?,
            ),
            Security::SemiHonest => None,
        };
        Ok(Response::with_encodings(
            self.params,
            *self.key.public(),
            evaluated,
            &bytes,
            proof,
            self.precomputation.truncated.clone(),
        ))
    }
}
