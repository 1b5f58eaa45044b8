//! Drivers that run the sans-I/O engines over a [`tacit_net::FramedConn`] (plain
//! TCP or TLS; `TCP_NODELAY`, bounded frames). They hold no cryptography: bytes from
//! the engines go out, bytes from the peer go in. On a local error the driver sends
//! the peer an [`tacit_wire::ErrorMessage`] (or a typed [`tacit_wire::Mismatch`]) with the reason before it returns.
//!
//! **Frame limits come from the protocol.** Before each receive the driver sets the
//! connection's limit to the largest message the protocol allows at that step (the
//! engines say how large: [`Responder::max_hello_len`],
//! [`crate::threepr::ResponderAwaiting::max_next_message_len`],
//! [`crate::threepr::InitiatorAwaitingAnswer::expected_answer_len`], [`PsiParams::answer_len`]), and
//! before each send to the message's own size; a refusal always fits. Over TLS the
//! engines mix the channel binding into their session identifier.
//!
//! The heavy steps (verifying a modulus proof, a round of evaluations, a round of
//! decryptions) run on the blocking pool (`spawn_blocking`), so a server's accept
//! loop and other sessions keep running while one session computes.

use crate::fnp::{Chooser, PsiParams, SETUP_LEN, Sender};
use crate::paillier::{PrivateKey, RnPool};
use crate::threepr::{
    ACCEPT_LEN, DEFAULT_MAX_PEER_SET, Initiator, InitiatorStep, ReconcileParams, Reconciled, Responder, ResponderStep,
};
use crate::{Error, NO_CHANNEL_BINDING, Result};
use rand_chacha::ChaCha20Rng;
use rand_core::{CryptoRngCore, SeedableRng};
use std::sync::Arc;
use tacit_net::FramedConn;

/// The largest frame any PROS message can need: the bucketed FNP query of 100 000
/// elements at 4096 bits does not fit, and `tacit` refuses such bounds at start.
pub const MAX_FRAME: usize = 256 << 20;

/// Room for a refusal ([`tacit_wire::ErrorMessage`] or [`tacit_wire::Mismatch`] with its longest fields) wherever a shorter
/// message is expected.
pub const REFUSAL_ROOM: usize = 1024;

/// The connection's TLS channel binding, or [`NO_CHANNEL_BINDING`] on plain TCP.
pub fn binding_of(conn: &FramedConn) -> [u8; 32] {
    conn.channel_binding().copied().unwrap_or(NO_CHANNEL_BINDING)
}

async fn refuse(conn: &mut FramedConn, e: &Error) {
    if !matches!(e, Error::PeerRefused(_) | Error::PeerMismatch(_) | Error::Net(_)) {
        let msg = crate::messages::refusal_of(e);
        conn.set_max_frame(msg.len().max(REFUSAL_ROOM));
        let _ = conn.send(&msg).await;
    }
}

async fn guard<T>(conn: &mut FramedConn, r: Result<T>) -> Result<T> {
    if let Err(e) = &r {
        refuse(conn, e).await;
    }
    r
}

/// Receives one frame of at most `max` bytes (or a refusal).
pub async fn recv_at_most(conn: &mut FramedConn, max: usize) -> Result<Vec<u8>> {
    conn.set_max_frame(max.max(REFUSAL_ROOM));
    Ok(conn.recv().await?)
}

/// Sends one message (the frame limit is the message's size).
pub async fn send(conn: &mut FramedConn, bytes: &[u8]) -> Result<()> {
    conn.set_max_frame(bytes.len().max(REFUSAL_ROOM));
    Ok(conn.send(bytes).await?)
}

fn seed(rng: &mut impl CryptoRngCore) -> ChaCha20Rng {
    let mut s = [0u8; 32];
    rng.fill_bytes(&mut s);
    ChaCha20Rng::from_seed(s)
}

/// Starts `f` on the blocking pool, holding the session's compute slot
/// ([`crate::service`]) until `f` returns, even if the session is dropped meanwhile
/// (at its deadline): so `max_clients` bounds concurrent computations. Must be
/// called from the session's task (outside a service it holds nothing).
pub fn spawn_blocking_step<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> tokio::task::JoinHandle<T> {
    let slot = crate::service::COMPUTE_SLOT.try_with(Arc::clone).ok();
    tokio::task::spawn_blocking(move || {
        let _slot = slot;
        f()
    })
}

/// Runs `f` on the blocking pool ([`spawn_blocking_step`]) and waits for it.
pub async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    spawn_blocking_step(f)
        .await
        .map_err(|e| Error::Backend(format!("a worker failed: {e}")))?
}

/// What a session is doing, for progress displays: reported to the hook that
/// [`with_progress`] sets for the task, if any (the CLI prints it on stderr).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// We compute our next message (keep-alives go to the peer meanwhile).
    Computing(&'static str),
    /// We wait for the peer's next message (its keep-alives restart our timeout).
    Waiting(&'static str),
    /// 3PR: round `round` (1-based) of at most `rounds` (the session stops at the
    /// first match).
    Round {
        /// This round.
        round: u32,
        /// The most rounds the session can take.
        rounds: u32,
    },
}

/// A progress hook ([`with_progress`]).
pub type ProgressHook = Arc<dyn Fn(Step) + Send + Sync>;

tokio::task_local! {
    static PROGRESS: ProgressHook;
}

/// Runs `f` with `hook` receiving the [`Step`]s of the PROS sessions it runs.
pub async fn with_progress<F: std::future::Future>(hook: ProgressHook, f: F) -> F::Output {
    PROGRESS.scope(hook, f).await
}

fn report(step: Step) {
    let _ = PROGRESS.try_with(|p| p(step));
}

/// Computes `f` on the blocking pool ([`blocking`]) while sending the peer a
/// keep-alive every [`tacit_net::KEEPALIVE_PERIOD`] (issue 28, item 10): a long
/// computation on our side never makes the waiting peer give up, and the peer's
/// overall deadline still bounds a deviating side that only sends keep-alives.
async fn compute<T: Send + 'static>(
    conn: &mut FramedConn,
    what: &'static str,
    f: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    report(Step::Computing(what));
    conn.working(tacit_net::KEEPALIVE_PERIOD, blocking(f)).await
}

/// [`recv_at_most`], reporting what we wait for.
async fn wait_for(conn: &mut FramedConn, what: &'static str, max: usize) -> Result<Vec<u8>> {
    report(Step::Waiting(what));
    recv_at_most(conn, max).await
}

/// The chooser's side of FNP PSI: returns the intersection. Keep-alives from the
/// sender are accepted while it evaluates (up to the connection's deadline), and sent
/// to it while we compute.
pub async fn psi_query<T: AsRef<[u8]>>(
    conn: &mut FramedConn,
    params: &PsiParams,
    key: PrivateKey,
    set: &[T],
    pool: Arc<RnPool>,
    rng: &mut impl CryptoRngCore,
) -> Result<Vec<Vec<u8>>> {
    conn.accept_keepalives();
    let bits = key.public().bits();
    let setup = wait_for(conn, "the server's setup", SETUP_LEN).await?;
    let binding = binding_of(conn);
    let (p, set): (PsiParams, Vec<Vec<u8>>) = (*params, set.iter().map(|e| e.as_ref().to_vec()).collect());
    let mut r = seed(rng);
    let res = compute(conn, "the query (encrypted polynomials)", move || {
        Chooser::start(&p, key, &set, &setup, &binding, &pool, &mut r)
    })
    .await;
    let (wait, q) = guard(conn, res).await?;
    send(conn, &q.to_bytes()).await?;
    let a = wait_for(
        conn,
        "the server's answer (it evaluates the polynomials)",
        params.answer_len(bits),
    )
    .await?;
    let binding = binding_of(conn);
    // the sender is done and may have left: no keep-alives here
    report(Step::Computing("the intersection (decrypting)"));
    let r = blocking(move || wait.on_answer(&a, &binding)).await;
    guard(conn, r).await
}

/// The sender's side of FNP PSI for one session: reads a query of at most
/// [`PsiParams::query_len`] at the sender's largest key size, verifies the modulus
/// proof, answers (sending keep-alives while it computes).
pub async fn psi_serve(conn: &mut FramedConn, sender: Arc<Sender>, rng: &mut impl CryptoRngCore) -> Result<()> {
    conn.accept_keepalives();
    let (opening, setup) = sender.open(rng);
    send(conn, &setup).await?;
    let q = wait_for(conn, "the query", sender.max_query_len()).await?;
    let binding = binding_of(conn);
    let mut r = seed(rng);
    let res = compute(conn, "the answer", move || {
        let (a, pk) = sender.respond(&opening, &q, &binding, &mut r)?;
        Ok(a.to_bytes(&pk))
    })
    .await;
    let a = guard(conn, res).await?;
    send(conn, &a).await
}

/// Party A of 3PR (key holder), accepting B's list up to
/// [`crate::threepr::DEFAULT_MAX_PEER_SET`] elements.
pub async fn reconcile_initiator<T: AsRef<[u8]>>(
    conn: &mut FramedConn,
    params: ReconcileParams,
    key: PrivateKey,
    set: &[T],
    pool: Arc<RnPool>,
    rng: &mut impl CryptoRngCore,
) -> Result<Reconciled> {
    reconcile_initiator_limited(conn, params, key, set, pool, DEFAULT_MAX_PEER_SET, rng).await
}

/// Party A of 3PR (key holder), accepting a session length up to
/// `max(n_A, max_peer_set)` ([`crate::threepr::InitiatorAwaitingAccept::with_max_peer_set`]).
pub async fn reconcile_initiator_limited<T: AsRef<[u8]>>(
    conn: &mut FramedConn,
    params: ReconcileParams,
    key: PrivateKey,
    set: &[T],
    pool: Arc<RnPool>,
    max_peer_set: u32,
    rng: &mut impl CryptoRngCore,
) -> Result<Reconciled> {
    conn.accept_keepalives();
    let set: Vec<Vec<u8>> = set.iter().map(|e| e.as_ref().to_vec()).collect();
    let (wait, hello) = compute(conn, "the hello (key and its proof)", move || {
        Initiator::start(params, key, &set, pool)
    })
    .await?;
    let wait = wait.with_max_peer_set(max_peer_set);
    send(conn, &hello).await?;
    let acc = wait_for(conn, "the peer's accept", ACCEPT_LEN).await?;
    let binding = binding_of(conn);
    let mut r = seed(rng);
    let res = compute(conn, "the factor proof and the first query", move || {
        wait.on_accept(&acc, &binding, &mut r)
    })
    .await;
    let (mut state, fac, q) = guard(conn, res).await?;
    send(conn, &fac).await?;
    send(conn, &q).await?;
    loop {
        report(Step::Round {
            round: state.round() + 1,
            rounds: state.rounds(),
        });
        let ans = wait_for(conn, "the peer's answer", state.expected_answer_len()).await?;
        let mut r = seed(rng);
        let step = compute(conn, "the comparisons (decrypting)", move || {
            state.on_answer(&ans, &mut r)
        })
        .await;
        match guard(conn, step).await? {
            InitiatorStep::Continue(s, q) => {
                send(conn, &q).await?;
                state = s;
            }
            InitiatorStep::Done(result, outcome) => {
                send(conn, &outcome).await?;
                return Ok(result);
            }
        }
    }
}

/// Party B of 3PR (evaluator). The responder's [`crate::threepr::Limits`] bound what
/// the session may cost. While A works on a round, B fills its pool of `ρⁿ` for the
/// next one.
pub async fn reconcile_responder(
    conn: &mut FramedConn,
    responder: Responder,
    rng: &mut impl CryptoRngCore,
) -> Result<Reconciled> {
    conn.accept_keepalives();
    let hello = wait_for(conn, "the peer's hello", responder.max_hello_len()).await?;
    let binding = binding_of(conn);
    let mut r = seed(rng);
    let res = compute(conn, "the accept (checking the peer's key)", move || {
        responder.on_hello(&hello, &binding, &mut r)
    })
    .await;
    let (state, accept) = guard(conn, res).await?;
    send(conn, &accept).await?;
    // nothing is computed with A's key until its no-small-factor proof verifies
    let fac = wait_for(conn, "the peer's factor proof", state.max_next_message_len()).await?;
    let res = compute(conn, "checking the factor proof", move || state.on_factor_proof(&fac)).await;
    let mut state = guard(conn, res).await?;
    loop {
        report(Step::Round {
            round: state.round() + 1,
            rounds: state.rounds(),
        });
        report(Step::Waiting("the peer's query"));
        let pool = state.pool();
        let key = state.peer_key().clone();
        let want = state.next_round_size().saturating_sub(pool.len());
        let mut fill_rng = seed(rng);
        let fill = spawn_blocking_step(move || pool.fill(&key, want, &mut fill_rng));
        let msg = recv_at_most(conn, state.max_next_message_len()).await;
        let filled = fill.await.map_err(|e| Error::Backend(e.to_string()))?;
        let msg = msg?;
        filled?;
        let mut r = seed(rng);
        let step = compute(conn, "the answer", move || state.on_message(&msg, &mut r)).await;
        match guard(conn, step).await? {
            ResponderStep::Answer(s, a) => {
                send(conn, &a).await?;
                state = s;
            }
            ResponderStep::Done(result) => return Ok(result),
        }
    }
}
