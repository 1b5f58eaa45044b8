//! Two PSI runs with swapped roles in three messages (PrivateDrop §4.4, "Round
//! Complexity", and Fig. 4: DO2 → DO3).
//!
//! ```text
//! Responder (AirDrop receiver)                 Initiator (AirDrop sender)
//!   PSI receiver of run 1, sender of run 2       PSI sender of run 1, receiver of run 2
//!
//!   M1 = Request₁ (its blinded IDs)      ───▶
//!                                        ◀───  M2 = Response₁ (answers + its address book)
//!                                                   ‖ Request₂ (its blinded IDs)
//!   learns run 1's result
//!   M3 = Response₂ (answers + its book)  ───▶
//!                                               learns run 2's result
//! ```
//!
//! The initiator answers run 1 before it reveals anything of run 2, so a peer cannot
//! make it work without first doing its own share (the paper's argument against a
//! fully symmetric four-message variant). Both runs use the same [`PsiParams`].

use crate::messages::{Request, Response, check_refusal};
use crate::receiver::{Intersection, Receiver, ReceiverAwaitingResponse, ReceiverPrecomputation};
use crate::sender::Sender;
use crate::{Error, PsiParams, Result};
use rand_core::CryptoRngCore;
use tacit_crypto::PrimeGroup;
use tacit_wire::{Reader, Writer, tags};

/// M2: the response of run 1 bundled with the request of run 2.
#[derive(Debug, Clone, PartialEq)]
pub struct Bundle<G: PrimeGroup> {
    /// Run 1's response.
    pub response: Response<G>,
    /// Run 2's request.
    pub request: Request<G>,
}

impl<G: PrimeGroup> Bundle<G> {
    /// `Envelope(0x0103) || Response || Request`.
    pub fn to_bytes(&self) -> Vec<u8> {
        let p = &self.response.params;
        let mut w = Writer::with_capacity(3 + Response::<G>::encoded_len(p) + Request::<G>::encoded_len(p));
        w.put_envelope(tags::PSI_BUNDLE);
        self.response.encode(&mut w);
        self.request.encode(&mut w);
        w.into_bytes()
    }

    /// Decodes a bundle for a party running `ours`.
    pub fn from_bytes(bytes: &[u8], ours: &PsiParams) -> Result<Self> {
        check_refusal(bytes)?;
        let mut r = Reader::new(bytes);
        r.envelope(tags::PSI_BUNDLE, "PSI bundle")?;
        let response = Response::decode(&mut r, ours)?;
        let request = Request::decode(&mut r, ours)?;
        r.finish()?;
        Ok(Bundle { response, request })
    }
}

/// The party that answers first (AirDrop sender): PSI sender of run 1.
#[derive(Debug)]
pub struct Initiator<G: PrimeGroup> {
    sender: Sender<G>,
    own: ReceiverPrecomputation<G>,
}

/// The initiator after sending M2.
#[derive(Debug)]
pub struct InitiatorAwaitingM3<G: PrimeGroup> {
    receiver: ReceiverAwaitingResponse<G>,
}

impl<G: PrimeGroup> Initiator<G> {
    /// An initiator with its sender state (address book) and its own blinded elements.
    pub fn new(sender: Sender<G>, own: ReceiverPrecomputation<G>) -> Result<Self> {
        if sender.params() != own.params() {
            return Err(Error::PrecomputationMismatch(
                "the two runs must use the same parameters",
            ));
        }
        Ok(Initiator { sender, own })
    }

    /// Handles M1 and produces M2.
    pub fn on_m1(self, m1: &[u8], rng: &mut impl CryptoRngCore) -> Result<(InitiatorAwaitingM3<G>, Vec<u8>)> {
        let request = Request::<G>::from_bytes(m1, self.sender.params())?;
        let (state, m2) = self.on_m1_typed(&request, rng)?;
        Ok((state, m2.to_bytes()))
    }

    /// Like [`Initiator::on_m1`] with typed messages (for protocols that carry
    /// certificates beside the PSI messages and must inspect them).
    pub fn on_m1_typed(
        self,
        request: &Request<G>,
        rng: &mut impl CryptoRngCore,
    ) -> Result<(InitiatorAwaitingM3<G>, Bundle<G>)> {
        let response = self.sender.respond_to(request, rng)?;
        let (receiver, request2) = Receiver::start_typed(&self.own);
        Ok((
            InitiatorAwaitingM3 { receiver },
            Bundle {
                response,
                request: request2,
            },
        ))
    }
}

impl<G: PrimeGroup> InitiatorAwaitingM3<G> {
    /// Handles M3: the result of run 2 (which of our elements the responder holds).
    pub fn on_m3(self, m3: &[u8]) -> Result<Intersection> {
        self.receiver.on_response(m3)
    }

    /// Like [`InitiatorAwaitingM3::on_m3`] with the typed response.
    pub fn on_m3_typed(self, m3: &Response<G>) -> Result<Intersection> {
        self.receiver.on_response_typed(m3)
    }
}

/// The party that starts (AirDrop receiver): PSI receiver of run 1.
#[derive(Debug)]
pub struct Responder;

/// The responder after sending M1.
#[derive(Debug)]
pub struct ResponderAwaitingM2<G: PrimeGroup> {
    sender: Sender<G>,
    receiver: ReceiverAwaitingResponse<G>,
}

impl Responder {
    /// Starts: returns the waiting state and M1.
    pub fn start<G: PrimeGroup>(
        sender: Sender<G>,
        own: &ReceiverPrecomputation<G>,
    ) -> Result<(ResponderAwaitingM2<G>, Vec<u8>)> {
        if sender.params() != own.params() {
            return Err(Error::PrecomputationMismatch(
                "the two runs must use the same parameters",
            ));
        }
        let (state, m1) = Self::start_typed(sender, own)?;
        Ok((state, m1.to_bytes()))
    }

    /// Like [`Responder::start`] with the typed request.
    pub fn start_typed<G: PrimeGroup>(
        sender: Sender<G>,
        own: &ReceiverPrecomputation<G>,
    ) -> Result<(ResponderAwaitingM2<G>, Request<G>)> {
        if sender.params() != own.params() {
            return Err(Error::PrecomputationMismatch(
                "the two runs must use the same parameters",
            ));
        }
        let (receiver, m1) = Receiver::start_typed(own);
        Ok((ResponderAwaitingM2 { sender, receiver }, m1))
    }
}

impl<G: PrimeGroup> ResponderAwaitingM2<G> {
    /// Handles M2: returns the result of run 1 (which of our elements the initiator
    /// holds) and M3. If run 1 fails (a bad proof, a malformed message), no M3 is made.
    pub fn on_m2(self, m2: &[u8], rng: &mut impl CryptoRngCore) -> Result<(Intersection, Vec<u8>)> {
        let bundle = Bundle::<G>::from_bytes(m2, self.sender.params())?;
        let (learned, m3) = self.on_m2_typed(&bundle, rng)?;
        Ok((learned, m3.to_bytes()))
    }

    /// Takes run 2's request ahead of M2 (a variant in which the initiator sends its
    /// request with its first message): the answer can then be computed while the
    /// initiator works on run 1 ([`ResponderWithRequest::answer_now`]), and is still
    /// released only after run 1's response verified.
    pub fn with_request(self, request: Request<G>) -> Result<ResponderWithRequest<G>> {
        self.sender.params().expect_equal(&request.params)?;
        Ok(ResponderWithRequest {
            sender: self.sender,
            receiver: self.receiver,
            request,
            answer: None,
        })
    }

    /// Like [`ResponderAwaitingM2::on_m2`] with typed messages.
    pub fn on_m2_typed(self, m2: &Bundle<G>, rng: &mut impl CryptoRngCore) -> Result<(Intersection, Response<G>)> {
        let learned = self.receiver.on_response_typed(&m2.response)?;
        let m3 = self.sender.respond_to(&m2.request, rng)?;
        Ok((learned, m3))
    }
}

/// The responder holding run 2's request before run 1's response arrived.
#[derive(Debug)]
pub struct ResponderWithRequest<G: PrimeGroup> {
    sender: Sender<G>,
    receiver: ReceiverAwaitingResponse<G>,
    request: Request<G>,
    answer: Option<Response<G>>,
}

impl<G: PrimeGroup> ResponderWithRequest<G> {
    /// Computes run 2's answer now (it stays inside this state until
    /// [`ResponderWithRequest::on_response_typed`] has verified run 1).
    pub fn answer_now(&mut self, rng: &mut impl CryptoRngCore) -> Result<()> {
        if self.answer.is_none() {
            self.answer = Some(self.sender.respond_to(&self.request, rng)?);
        }
        Ok(())
    }

    /// Whether run 2's answer is ready.
    pub fn is_answered(&self) -> bool {
        self.answer.is_some()
    }

    /// Handles run 1's response: returns its result and run 2's answer (computed now
    /// if [`ResponderWithRequest::answer_now`] was not called). If run 1 fails, no
    /// answer leaves this state.
    pub fn on_response_typed(
        self,
        response: &Response<G>,
        rng: &mut impl CryptoRngCore,
    ) -> Result<(Intersection, Response<G>)> {
        let learned = self.receiver.on_response_typed(response)?;
        let answer = match self.answer {
            Some(a) => a,
            None => self.sender.respond_to(&self.request, rng)?,
        };
        Ok((learned, answer))
    }
}
