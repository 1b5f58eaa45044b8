//! 3PR fair reconciliation between two processes: B serves its ordered set
//! ([`serve`]), A (the key holder) connects with its own ([`connect`]); both learn
//! the agreed element(s). What `tacit pros reconcile serve|connect` runs; see
//! [`crate::endpoint`] for the channel, the limits and the defaults.
//!
//! ```no_run
//! # async fn demo() -> Result<(), tacit_pros::endpoint::Error> {
//! use tacit_pros::reconcile;
//! use tacit_pros::threepr::ReconcileParams;
//! let store = tacit_store::Store::open(std::path::Path::new("b.db"))?;
//! let server = reconcile::serve(store, ReconcileParams::default(), &["mon", "tue"]).bind("0.0.0.0:7980").await?;
//! println!("pin {:?}", server.fingerprint());
//! server.serve(|event| println!("{event:?}")).await?;
//! # Ok(()) }
//! ```

use crate::endpoint::{ClientBuilder, KeyPolicy, Result, ServerBuilder, SessionFuture};
use crate::paillier::{MAX_KEY_BITS, PrivateKey, RnPool};
use crate::threepr::{DEFAULT_MAX_PEER_SET, Hello, Limits, MAX_ORDERED_SET, ReconcileParams, Reconciled, Responder};
use rand_chacha::ChaCha20Rng;
use std::sync::Arc;
use tacit_net::{FramedConn, Protocol};
use tacit_store::Store;

/// A reconciliation server of `set` (best first), keeping its keys in `store`.
pub fn serve<T: AsRef<[u8]>>(store: Store, params: ReconcileParams, set: &[T]) -> ServerBuilder<Service> {
    ServerBuilder::new(
        store,
        Service {
            params,
            set: Arc::new(set.iter().map(|e| e.as_ref().to_vec()).collect()),
            // the defaults of `tacit pros reconcile serve`
            limits: Limits {
                max_peer_set: 256,
                max_comparisons: 65_536,
            },
            policy: None,
            set_len: 0,
        },
    )
}

/// A reconciliation client of `set` (best first), keeping its keys in `store`; run
/// it with [`ClientBuilder::run`].
pub fn connect<T: AsRef<[u8]>>(store: Store, params: ReconcileParams, set: &[T]) -> ClientBuilder<Reconcile> {
    ClientBuilder::new(
        store,
        Reconcile {
            params,
            set: set.iter().map(|e| e.as_ref().to_vec()).collect(),
            max_peer_set: DEFAULT_MAX_PEER_SET,
        },
    )
}

/// B's side of a reconciliation server.
#[derive(Debug)]
pub struct Service {
    params: ReconcileParams,
    set: Arc<Vec<Vec<u8>>>,
    limits: Limits,
    policy: Option<KeyPolicy>,
    set_len: usize,
}

impl Service {
    /// The 3PR parameters.
    pub fn params(&self) -> ReconcileParams {
        self.params
    }
    /// B's list length (after the server is bound).
    pub fn set_len(&self) -> usize {
        self.set_len
    }
    /// What one session may cost.
    pub fn limits(&self) -> Limits {
        self.limits
    }
}

impl ServerBuilder<Service> {
    /// Bounds what one session may cost: the peer's list length and the comparisons
    /// (default 256 elements, 65 536 comparisons).
    pub fn limits(self, limits: Limits) -> Self {
        self.map_service(|s| s.limits = limits)
    }
}

impl crate::endpoint::Service for Service {
    type Output = Reconciled;
    const PROTOCOL: Protocol = Protocol::ProsReconcile;

    fn prepare(&mut self, policy: &KeyPolicy) -> Result<usize> {
        let probe = Responder::new(
            self.params,
            &self.set,
            policy.min_key_bits,
            policy.max_key_bits,
            policy.ring_pedersen.clone(),
        )?;
        self.set_len = probe.set_len();
        self.policy = Some(policy.clone());
        Ok(Hello::max_len(MAX_KEY_BITS))
    }

    fn session(self: Arc<Self>, mut conn: FramedConn) -> SessionFuture<Reconciled> {
        Box::pin(async move {
            let p = self
                .policy
                .clone()
                .ok_or_else(|| crate::Error::Invalid("the service was not prepared".into()))?;
            let r = Responder::new(self.params, &self.set, p.min_key_bits, p.max_key_bits, p.ring_pedersen)?
                .with_limits(self.limits);
            let r = if p.insecure_small_keys {
                r.accept_insecure_small_keys()
            } else {
                r
            };
            let mut rng = crate::endpoint::session_rng()?;
            crate::net::reconcile_responder(&mut conn, r, &mut rng).await
        })
    }
}

/// A's side of a reconciliation.
#[derive(Debug)]
pub struct Reconcile {
    params: ReconcileParams,
    set: Vec<Vec<u8>>,
    max_peer_set: u32,
}

impl ClientBuilder<Reconcile> {
    /// The longest list the server may bring (refused above max(ours, this); default
    /// [`DEFAULT_MAX_PEER_SET`]): a hostile server gets one guess per element of the
    /// session against each of our elements.
    pub fn max_peer_set(self, n: u32) -> Self {
        self.map_session(|s| s.max_peer_set = n)
    }
}

impl crate::endpoint::Session for Reconcile {
    type Output = Reconciled;
    const PROTOCOL: Protocol = Protocol::ProsReconcile;

    fn pool_size(&self) -> usize {
        self.set.len()
    }

    fn check(&self) -> Result<()> {
        if self.max_peer_set == 0 || self.max_peer_set > MAX_ORDERED_SET {
            return Err(crate::endpoint::Error::Config(format!(
                "--max-peer-set must be from 1 to {MAX_ORDERED_SET}"
            )));
        }
        Ok(())
    }

    fn describe(&self, addr: &str) -> String {
        format!("reconciliation with {addr}")
    }

    fn run(
        self,
        mut conn: FramedConn,
        key: PrivateKey,
        pool: Arc<RnPool>,
        mut rng: ChaCha20Rng,
    ) -> SessionFuture<Reconciled> {
        Box::pin(async move {
            crate::net::reconcile_initiator_limited(
                &mut conn,
                self.params,
                key,
                &self.set,
                pool,
                self.max_peer_set,
                &mut rng,
            )
            .await
        })
    }
}
