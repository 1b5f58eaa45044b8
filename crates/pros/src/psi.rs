//! FNP private set intersection between two processes: the sender serves its set
//! ([`serve`], it learns nothing), the chooser queries with its own ([`query`]) and
//! learns the intersection. What `tacit pros psi serve|query` runs; see
//! [`crate::endpoint`] for the channel, the limits and the defaults.

use crate::endpoint::{ClientBuilder, Error, KeyPolicy, Result, ServerBuilder, SessionFuture};
use crate::fnp::{PsiParams, Sender};
use crate::paillier::{MAX_KEY_BITS, PrivateKey, RnPool};
use rand_chacha::ChaCha20Rng;
use std::sync::Arc;
use tacit_net::{FramedConn, Protocol};
use tacit_store::Store;

/// An FNP server of `set`, keeping its keys in `store`.
pub fn serve<T: AsRef<[u8]>>(store: Store, params: PsiParams, set: &[T]) -> ServerBuilder<Service> {
    ServerBuilder::new(
        store,
        Service {
            params,
            set: set.iter().map(|e| e.as_ref().to_vec()).collect(),
            max_tests: None,
            sender: None,
        },
    )
}

/// An FNP query of `set`, keeping its keys in `store`; run it with
/// [`ClientBuilder::run`] (the result is the intersection).
pub fn query<T: AsRef<[u8]>>(store: Store, params: PsiParams, set: &[T]) -> ClientBuilder<Query> {
    ClientBuilder::new(
        store,
        Query {
            params,
            set: set.iter().map(|e| e.as_ref().to_vec()).collect(),
        },
    )
}

/// The sender's side of an FNP server.
#[derive(Debug)]
pub struct Service {
    params: PsiParams,
    set: Vec<Vec<u8>>,
    max_tests: Option<usize>,
    sender: Option<Arc<Sender>>,
}

impl Service {
    /// The FNP parameters.
    pub fn params(&self) -> PsiParams {
        self.params
    }
}

impl ServerBuilder<Service> {
    /// Refuse to start if a deviating chooser could test more candidates than `n`
    /// ([`PsiParams::chooser_tests`]).
    pub fn max_tests(self, n: usize) -> Self {
        self.map_service(|s| s.max_tests = Some(n))
    }
}

impl crate::endpoint::Service for Service {
    type Output = ();
    const PROTOCOL: Protocol = Protocol::ProsPsi;

    fn prepare(&mut self, policy: &KeyPolicy) -> Result<usize> {
        let p = self.params;
        let sender = Sender::new(
            &p,
            &self.set,
            policy.min_key_bits,
            policy.max_key_bits,
            policy.ring_pedersen.clone(),
        )?;
        let sender = if policy.insecure_small_keys {
            sender.accept_insecure_small_keys()
        } else {
            sender
        };
        // both directions' limits from the bounds, before any work (issue 26, item 4)
        let (q_max, a_max) = (p.query_len(MAX_KEY_BITS), p.answer_len(MAX_KEY_BITS));
        if q_max.max(a_max) > crate::net::MAX_FRAME {
            return Err(Error::Config(format!(
                "these bounds need messages of up to {q_max} bytes (query) and {a_max} bytes (answer) at \
                 {MAX_KEY_BITS} bits; the limit is {} bytes: lower --max-chooser or --max-sender",
                crate::net::MAX_FRAME
            )));
        }
        if let Some(t) = self.max_tests
            && p.chooser_tests() > t
        {
            return Err(Error::Config(format!(
                "a deviating querier could test {} candidates ({} bins of {} roots, two per root); --max-tests is \
                 {t}: lower --max-chooser or give --no-bucketing (then 2·M = {})",
                p.chooser_tests(),
                p.bins(),
                p.load(),
                2 * p.chooser_bound
            )));
        }
        self.sender = Some(Arc::new(sender));
        Ok(q_max)
    }

    fn session(self: Arc<Self>, mut conn: FramedConn) -> SessionFuture<()> {
        Box::pin(async move {
            let sender = self
                .sender
                .clone()
                .ok_or_else(|| crate::Error::Invalid("the service was not prepared".into()))?;
            let mut rng = crate::endpoint::session_rng()?;
            crate::net::psi_serve(&mut conn, sender, &mut rng).await
        })
    }
}

/// The chooser's side of an FNP query.
#[derive(Debug)]
pub struct Query {
    params: PsiParams,
    set: Vec<Vec<u8>>,
}

impl crate::endpoint::Session for Query {
    type Output = Vec<Vec<u8>>;
    const PROTOCOL: Protocol = Protocol::ProsPsi;

    fn pool_size(&self) -> usize {
        self.params.root_slots()
    }

    fn describe(&self, addr: &str) -> String {
        format!("query to {addr}")
    }

    fn run(
        self,
        mut conn: FramedConn,
        key: PrivateKey,
        pool: Arc<RnPool>,
        mut rng: ChaCha20Rng,
    ) -> SessionFuture<Vec<Vec<u8>>> {
        Box::pin(async move { crate::net::psi_query(&mut conn, &self.params, key, &self.set, pool, &mut rng).await })
    }
}
