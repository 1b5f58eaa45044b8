//! Deviating peers for tests (feature `testing`), in the manner of BoringSSL's
//! `ProtocolBugs`: each party runs the honest state machine, and a test decides for
//! every message that party sends whether it goes out as is, is replaced by bytes of
//! the test's choosing (another message, an old one, one computed from what the
//! party received), or is withheld. An attack is then a few lines.
//!
//! * [`reconcile`] and [`psi`] run both parties of 3PR / FNP in process;
//! * [`respond_over`] and [`schedule_respond_over`] run a deviating B over a real
//!   connection, for tests against the drivers and the `tacit` binary;
//! * [`InvertingResponder`] is the break of issue 26: B answers every query with the
//!   inverse of A's own ciphertexts, `E(−a_i)⁻¹ = E(a_i)`.

use crate::bn;
use crate::fnp::{self, PsiParams, Sender};
use crate::net::{binding_of, recv_at_most, send};
use crate::paillier::{Ciphertext, PrivateKey, PublicKey, RnPool};
use crate::schedule::{TAG_WINDOW_OK, WINDOW_LEN, Window};
use crate::threepr::{
    self, Answer, Hello, Initiator, InitiatorStep, Query, ReconcileParams, Reconciled, Responder, ResponderStep,
    Scheme, Variant,
};
use crate::{Error, NO_CHANNEL_BINDING, Result};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use std::collections::HashMap;
use std::sync::Arc;
use tacit_net::FramedConn;
use tacit_wire::{Encode, ErrorMessage};

/// Which party sent a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Party {
    /// The key holder (3PR's A, FNP's chooser).
    A,
    /// The evaluator (3PR's B, FNP's sender).
    B,
}

/// A message a party is about to send.
#[derive(Debug)]
pub struct Outgoing<'a> {
    /// Who sends it.
    pub from: Party,
    /// How many messages this party sent before.
    pub index: usize,
    /// What the honest party would send.
    pub honest: &'a [u8],
    /// What this party received so far, in order.
    pub received: &'a [Vec<u8>],
}

/// What the deviating party does with a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Act {
    /// Send these bytes (the honest ones, or others).
    Send(Vec<u8>),
    /// Send nothing; the run ends.
    Withhold,
}

impl Act {
    /// The honest message.
    pub fn honest(o: &Outgoing<'_>) -> Act {
        Act::Send(o.honest.to_vec())
    }
}

/// Decides what each message becomes.
pub type Bugs<'a> = &'a mut dyn FnMut(&Outgoing<'_>) -> Act;

/// The end of an in-process run.
#[derive(Debug)]
pub struct Run<TA, TB> {
    /// A's result.
    pub a: Result<TA>,
    /// B's result.
    pub b: Result<TB>,
    /// Every message as delivered.
    pub transcript: Vec<(Party, Vec<u8>)>,
}

fn refusal(e: &Error) -> Vec<u8> {
    ErrorMessage::new(e.to_string()).to_wire()
}

fn withheld() -> Error {
    Error::Net("the peer withheld its message".into())
}

struct Wire<'a, 'b> {
    bugs: Bugs<'b>,
    sent: [usize; 2],
    received: [Vec<Vec<u8>>; 2],
    transcript: &'a mut Vec<(Party, Vec<u8>)>,
}

impl Wire<'_, '_> {
    /// Passes `honest` from `from` through the bugs; the bytes the other party gets.
    fn pass(&mut self, from: Party, honest: &[u8]) -> Option<Vec<u8>> {
        let k = from as usize;
        let act = (self.bugs)(&Outgoing {
            from,
            index: self.sent[k],
            honest,
            received: &self.received[k],
        });
        self.sent[k] += 1;
        match act {
            Act::Send(b) => {
                let to = 1 - k;
                self.received[to].push(b.clone());
                self.transcript.push((from, b.clone()));
                Some(b)
            }
            Act::Withhold => None,
        }
    }
}

/// Runs 3PR in process: A with `key` and `a_set`, B as `responder`, every message
/// through `bugs`. A party whose step fails sends the other a refusal, as the
/// drivers do.
pub fn reconcile<T: AsRef<[u8]>>(
    params: ReconcileParams,
    key: PrivateKey,
    a_set: &[T],
    responder: Responder,
    bugs: Bugs<'_>,
    seed: u64,
) -> Run<Reconciled, Reconciled> {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut transcript = Vec::new();
    let mut w = Wire {
        bugs,
        sent: [0, 0],
        received: [Vec::new(), Vec::new()],
        transcript: &mut transcript,
    };
    let cb = NO_CHANNEL_BINDING;
    let pool = match RnPool::new(key.public()) {
        Ok(p) => Arc::new(p),
        Err(e) => return end(Err(e.clone()), Err(e), transcript),
    };
    let (a, hello) = match Initiator::start(params, key, a_set, pool) {
        Ok(x) => x,
        Err(e) => return end(Err(e.clone()), Err(e), transcript),
    };
    let Some(hello) = w.pass(Party::A, &hello) else {
        return end(Err(withheld()), Err(withheld()), transcript);
    };
    let (mut b, accept) = match responder.on_hello(&hello, &cb, &mut rng) {
        Ok(x) => x,
        Err(e) => {
            let a = w.pass(Party::B, &refusal(&e)).map(|r| threepr_refused(&r));
            return end(a.unwrap_or(Err(withheld())), Err(e), transcript);
        }
    };
    let Some(accept) = w.pass(Party::B, &accept) else {
        return end(Err(withheld()), Err(withheld()), transcript);
    };
    let (mut a, fac, q) = match a.on_accept(&accept, &cb, &mut rng) {
        Ok(x) => x,
        Err(e) => {
            let b = w.pass(Party::A, &refusal(&e)).map(|r| threepr_refused(&r));
            return end(Err(e), b.unwrap_or(Err(withheld())), transcript);
        }
    };
    let Some(fac) = w.pass(Party::A, &fac) else {
        return end(Err(withheld()), Err(withheld()), transcript);
    };
    b = match b.on_factor_proof(&fac) {
        Ok(b) => b,
        Err(e) => {
            let a = w.pass(Party::B, &refusal(&e)).map(|r| threepr_refused(&r));
            return end(a.unwrap_or(Err(withheld())), Err(e), transcript);
        }
    };
    let mut msg = match w.pass(Party::A, &q) {
        Some(m) => m,
        None => return end(Err(withheld()), Err(withheld()), transcript),
    };
    loop {
        let (next_b, ans) = match b.on_message(&msg, &mut rng) {
            Ok(ResponderStep::Answer(nb, ans)) => (nb, ans),
            Ok(ResponderStep::Done(rb)) => {
                // B finished on a message A never meant as its outcome
                return end(Err(withheld()), Ok(rb), transcript);
            }
            Err(e) => {
                let a = w.pass(Party::B, &refusal(&e)).map(|r| threepr_refused(&r));
                return end(a.unwrap_or(Err(withheld())), Err(e), transcript);
            }
        };
        b = next_b;
        let Some(ans) = w.pass(Party::B, &ans) else {
            return end(Err(withheld()), Err(withheld()), transcript);
        };
        match a.on_answer(&ans, &mut rng) {
            Ok(InitiatorStep::Continue(na, q)) => {
                a = na;
                match w.pass(Party::A, &q) {
                    Some(m) => msg = m,
                    None => return end(Err(withheld()), Err(withheld()), transcript),
                }
            }
            Ok(InitiatorStep::Done(ra, out)) => {
                let rb = match w.pass(Party::A, &out) {
                    Some(m) => match b.on_message(&m, &mut rng) {
                        Ok(ResponderStep::Done(rb)) => Ok(rb),
                        Ok(ResponderStep::Answer(..)) => Err(Error::Deviation("A sent another query".into())),
                        Err(e) => Err(e),
                    },
                    None => Err(withheld()),
                };
                return end(Ok(ra), rb, transcript);
            }
            Err(e) => {
                let rb = match w.pass(Party::A, &refusal(&e)) {
                    Some(r) => match b.on_message(&r, &mut rng) {
                        Err(x) => Err(x),
                        Ok(_) => Err(Error::Deviation("B accepted a refusal".into())),
                    },
                    None => Err(withheld()),
                };
                return end(Err(e), rb, transcript);
            }
        }
    }
}

fn threepr_refused<T>(bytes: &[u8]) -> Result<T> {
    crate::messages::check_refusal(bytes)?;
    Err(Error::Deviation("expected a refusal".into()))
}

fn end<TA, TB>(a: Result<TA>, b: Result<TB>, transcript: Vec<(Party, Vec<u8>)>) -> Run<TA, TB> {
    Run { a, b, transcript }
}

/// Runs FNP in process: the chooser (A) with `key` and `set`, the sender (B), both
/// messages through `bugs`. The chooser's result is the intersection it learns.
pub fn psi<T: AsRef<[u8]>>(
    params: &PsiParams,
    key: PrivateKey,
    set: &[T],
    sender: &Sender,
    bugs: Bugs<'_>,
    seed: u64,
) -> Run<Vec<Vec<u8>>, ()> {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut transcript = Vec::new();
    let mut w = Wire {
        bugs,
        sent: [0, 0],
        received: [Vec::new(), Vec::new()],
        transcript: &mut transcript,
    };
    let cb = NO_CHANNEL_BINDING;
    let pool = match RnPool::new(key.public()) {
        Ok(p) => p,
        Err(e) => return end(Err(e.clone()), Err(e), transcript),
    };
    let (opening, setup) = sender.open(&mut rng);
    let Some(setup) = w.pass(Party::B, &setup) else {
        return end(Err(withheld()), Err(withheld()), transcript);
    };
    let (wait, q) = match fnp::Chooser::start(params, key, set, &setup, &cb, &pool, &mut rng) {
        Ok(x) => x,
        Err(e) => {
            let b = w.pass(Party::A, &refusal(&e)).map(|r| threepr_refused::<()>(&r));
            return end(Err(e), b.unwrap_or(Err(withheld())), transcript);
        }
    };
    let Some(q) = w.pass(Party::A, &q.to_bytes()) else {
        return end(Err(withheld()), Err(withheld()), transcript);
    };
    let ans = match sender.respond(&opening, &q, &cb, &mut rng) {
        Ok((a, pk)) => a.to_bytes(&pk),
        Err(e) => {
            let a = w.pass(Party::B, &refusal(&e)).map(|r| threepr_refused(&r));
            return end(a.unwrap_or(Err(withheld())), Err(e), transcript);
        }
    };
    let Some(ans) = w.pass(Party::B, &ans) else {
        return end(Err(withheld()), Ok(()), transcript);
    };
    end(wait.on_answer(&ans, &cb), Ok(()), transcript)
}

/// B of 3PR over a connection, every message it sends through `bugs` (the honest
/// driver of [`crate::net::reconcile_responder`] otherwise). Returns what B received.
pub async fn respond_over(
    conn: &mut FramedConn,
    responder: Responder,
    bugs: &mut (dyn FnMut(&Outgoing<'_>) -> Act + Send),
    seed: u64,
) -> Result<Vec<Vec<u8>>> {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut received = Vec::new();
    let mut sent = 0;
    let mut out = |received: &[Vec<u8>], honest: &[u8]| {
        let act = bugs(&Outgoing {
            from: Party::B,
            index: sent,
            honest,
            received,
        });
        sent += 1;
        match act {
            Act::Send(b) => Ok(b),
            Act::Withhold => Err(withheld()),
        }
    };
    let hello = recv_at_most(conn, responder.max_hello_len()).await?;
    received.push(hello.clone());
    let (state, accept) = responder.on_hello(&hello, &binding_of(conn), &mut rng)?;
    send(conn, &out(&received, &accept)?).await?;
    let fac = recv_at_most(conn, state.max_next_message_len()).await?;
    received.push(fac.clone());
    let mut state = match state.on_factor_proof(&fac) {
        Ok(s) => s,
        Err(e) => {
            let _ = send(conn, &refusal(&e)).await;
            return Err(e);
        }
    };
    loop {
        let msg = recv_at_most(conn, state.max_next_message_len()).await?;
        received.push(msg.clone());
        match state.on_message(&msg, &mut rng) {
            Ok(ResponderStep::Answer(s, a)) => {
                send(conn, &out(&received, &a)?).await?;
                state = s;
            }
            Ok(ResponderStep::Done(_)) => return Ok(received),
            Err(e) => {
                let _ = send(conn, &refusal(&e)).await;
                return Err(e);
            }
        }
    }
}

/// B of appoint over a connection: agrees to any window A sends, then runs
/// [`respond_over`] with `slots` (their elements under A's window).
pub async fn schedule_respond_over(
    conn: &mut FramedConn,
    scheme: Scheme,
    variant: Variant,
    slots: &[tacit_calendar::Slot],
    bugs: &mut (dyn FnMut(&Outgoing<'_>) -> Act + Send),
    seed: u64,
) -> Result<Vec<Vec<u8>>> {
    let w = Window::from_bytes(&recv_at_most(conn, WINDOW_LEN).await?)?;
    let mut ok = tacit_wire::Writer::new();
    ok.put_envelope(TAG_WINDOW_OK);
    send(conn, &ok.into_bytes()).await?;
    let set: Vec<Vec<u8>> = slots.iter().map(|s| w.element(s)).collect::<Result<_>>()?;
    let params = ReconcileParams {
        scheme,
        variant,
        encoding: w.encoding.element_encoding(),
    };
    respond_over(
        conn,
        // a hostile server takes any key its victim brings
        Responder::new(params, &set, 0, 4096, ring_pedersen())?.accept_insecure_small_keys(),
        bugs,
        seed,
    )
    .await
}

/// The break of issue 26: a B that, from round `from_round` on, answers every pair
/// `(i, j)` with the inverse of A's ciphertext for position `i`, `E(−a_i)⁻¹ = E(a_i)`
/// (no exponentiation at all), and before that passes the honest answers.
#[derive(Debug)]
pub struct InvertingResponder {
    scheme: Scheme,
    variant: Variant,
    from_round: u32,
    key: Option<PublicKey>,
    n: u32,
    cache: HashMap<u32, Ciphertext>,
}

impl InvertingResponder {
    /// The attack for `scheme` / `variant`, starting at `from_round`.
    pub fn new(scheme: Scheme, variant: Variant, from_round: u32) -> Self {
        InvertingResponder {
            scheme,
            variant,
            from_round,
            key: None,
            n: 0,
            cache: HashMap::new(),
        }
    }

    /// The round from which every one of A's positions appears (SOR `n − 1`, MOR
    /// `n − 1`): the choice.
    pub fn all_positions_round(n: u32) -> u32 {
        n.saturating_sub(1)
    }

    /// The deviation, as a [`Bugs`] callback.
    pub fn act(&mut self, o: &Outgoing<'_>) -> Act {
        if o.from != Party::B {
            return Act::honest(o);
        }
        if o.index == 0 {
            // our accept: learn A's key and n
            if let Some(h) = o.received.first().and_then(|b| Hello::from_bytes(b).ok()) {
                self.key = Some(h.key);
            }
            if o.honest.len() >= 7 {
                self.n = u32::from_be_bytes([o.honest[3], o.honest[4], o.honest[5], o.honest[6]]);
            }
            return Act::honest(o);
        }
        let (Some(key), Some(last)) = (self.key.as_ref(), o.received.last()) else {
            return Act::honest(o);
        };
        let max = threepr::max_round_pairs(self.scheme, self.n);
        let Ok(q) = Query::from_bytes(last, key, max) else {
            return Act::honest(o);
        };
        for (p, c) in &q.entries {
            self.cache.insert(*p, c.clone());
        }
        if q.round < self.from_round {
            return Act::honest(o);
        }
        let pairs = self.scheme.round_pairs(self.n, q.round);
        let values: Option<Vec<Ciphertext>> = pairs
            .iter()
            .enumerate()
            .map(|(k, (i, _))| {
                let c = match self.variant {
                    Variant::Explicit => &q.entries.get(k)?.1,
                    _ => self.cache.get(i)?,
                };
                let inv = bn::inv_mod(c.value(), key.n_squared()).ok()?;
                key.ciphertext(inv).ok()
            })
            .collect();
        match values {
            Some(values) => Act::Send(Answer { round: q.round, values }.to_bytes(key)),
            None => Act::honest(o),
        }
    }
}

/// The test fixture of ring-Pedersen parameters (1024-bit `N̂` with public factors:
/// [`crate::facproof::test_ring_pedersen`]).
pub fn ring_pedersen() -> Arc<crate::facproof::RingPedersen> {
    crate::facproof::test_ring_pedersen()
}
