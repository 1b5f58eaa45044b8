//! Drivers that run the sans-I/O engines over tacit's framed TCP
//! ([`tacit_net::FramedConn`], `TCP_NODELAY`, bounded frames). They hold no
//! cryptography: bytes from the engines go out, bytes from the peer go in. On a local
//! error the driver sends the peer an [`ErrorMessage`] with the reason before it
//! returns.

use crate::fnp::{Chooser, PsiParams, Sender};
use crate::paillier::{PrivateKey, RnPool};
use crate::threepr::{Initiator, InitiatorStep, ReconcileParams, Reconciled, Responder, ResponderStep};
use crate::{Error, Result};
use rand_core::CryptoRngCore;
use std::sync::Arc;
use tacit_net::FramedConn;
use tacit_wire::{Encode, ErrorMessage};

/// The largest frame a PROS party accepts (the bucketed FNP query of 100 000 elements
/// at 3072 bits does not fit; `tacit` sizes frames from the bounds it runs with).
pub const MAX_FRAME: usize = 256 << 20;

async fn refuse(conn: &mut FramedConn, e: &Error) {
    if !matches!(e, Error::PeerRefused(_) | Error::Net(_)) {
        let _ = conn.send(&ErrorMessage::new(e.to_string()).to_wire()).await;
    }
}

async fn guard<T>(conn: &mut FramedConn, r: Result<T>) -> Result<T> {
    if let Err(e) = &r {
        refuse(conn, e).await;
    }
    r
}

/// The chooser's side of FNP PSI: returns the intersection.
pub async fn psi_query<T: AsRef<[u8]>>(
    conn: &mut FramedConn,
    params: &PsiParams,
    key: PrivateKey,
    set: &[T],
    pool: &RnPool,
    rng: &mut impl CryptoRngCore,
) -> Result<Vec<Vec<u8>>> {
    let (wait, q) = Chooser::start(params, key, set, pool, rng)?;
    conn.send(&q.to_bytes()).await?;
    let a = conn.recv().await?;
    let r = wait.on_answer(&a);
    guard(conn, r).await
}

/// The sender's side of FNP PSI for one session.
pub async fn psi_serve(conn: &mut FramedConn, sender: &Sender, rng: &mut impl CryptoRngCore) -> Result<()> {
    let q = conn.recv().await?;
    let r = sender.respond(&q, rng);
    let (a, pk) = guard(conn, r).await?;
    conn.send(&a.to_bytes(&pk)).await?;
    Ok(())
}

/// Party A of 3PR (key holder).
pub async fn reconcile_initiator<T: AsRef<[u8]>>(
    conn: &mut FramedConn,
    params: ReconcileParams,
    key: PrivateKey,
    set: &[T],
    pool: Arc<RnPool>,
    rng: &mut impl CryptoRngCore,
) -> Result<Reconciled> {
    let (wait, hello) = Initiator::start(params, key, set, pool)?;
    conn.send(&hello).await?;
    let acc = conn.recv().await?;
    let r = wait.on_accept(&acc, rng);
    let (mut state, q) = guard(conn, r).await?;
    conn.send(&q).await?;
    loop {
        let ans = conn.recv().await?;
        let r = state.on_answer(&ans, rng);
        match guard(conn, r).await? {
            InitiatorStep::Continue(s, q) => {
                conn.send(&q).await?;
                state = s;
            }
            InitiatorStep::Done(result, outcome) => {
                conn.send(&outcome).await?;
                return Ok(result);
            }
        }
    }
}

/// Party B of 3PR (evaluator). While A works on a round, B fills its pool of `ρⁿ`
/// for the next one.
pub async fn reconcile_responder(
    conn: &mut FramedConn,
    responder: Responder,
    rng: &mut impl CryptoRngCore,
) -> Result<Reconciled> {
    let hello = conn.recv().await?;
    let r = responder.on_hello(&hello, rng);
    let (mut state, accept) = guard(conn, r).await?;
    conn.send(&accept).await?;
    loop {
        let pool = state.pool();
        let key = state.peer_key().clone();
        let want = state.next_round_size().saturating_sub(pool.len());
        let mut seed = [0u8; 32];
        rng.fill_bytes(&mut seed);
        let fill = tokio::task::spawn_blocking(move || {
            let mut r = <rand_chacha::ChaCha20Rng as rand_core::SeedableRng>::from_seed(seed);
            pool.fill(&key, want, &mut r)
        });
        let msg = conn.recv().await;
        let filled = fill.await.map_err(|e| Error::Backend(e.to_string()))?;
        let msg = msg?;
        filled?;
        let r = state.on_message(&msg, rng);
        match guard(conn, r).await? {
            ResponderStep::Answer(s, a) => {
                conn.send(&a).await?;
                state = s;
            }
            ResponderStep::Done(result) => return Ok(result),
        }
    }
}
