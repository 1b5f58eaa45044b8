//! The two parties over framed TCP (`tacit-net`, `TCP_NODELAY`): the shell around the
//! sans-I/O cores. Each party runs [`run`] in its own process.
//!
//! ```text
//! A                                   B
//! ── Hello (circuit digest, n, owners, triple source, input-mask seed) ──   setup
//! ── the triple source's messages (token seeds or OT extension) ──────────  setup
//! ── layer 1: d‖e ⇄ d‖e ─ … ─ layer d(f): d‖e ⇄ d‖e ──────────────────────  online
//! ── output shares ⇄ output shares ────────────────────────────────────────  online
//! ```
//!
//! The online phase is a chain of `d(f)` exchanges in which neither party can do
//! anything while it waits, so its messages go through
//! [`FramedConn::exchange_spin_expecting`] (both messages of a layer have one length)
//! and [`FramedConn::exchange_spin`]: the socket is polled for up to
//! [`SessionConfig::spin`] before the task parks, which takes the scheduler's
//! wake-up latency off every layer.

use crate::circuit::LayeredCircuit;
use crate::gmw::{Online, OutputTo, Outputs, PartyInputs, Step};
use crate::messages::{Hello, TripleKind};
use crate::prg::Seed;
use crate::triples::{TripleShares, deal};
use crate::{Error, Party};
use rand_core::CryptoRngCore;
use std::time::{Duration, Instant};
use tacit_net::FramedConn;
use tacit_wire::{Decode, Encode, ErrorMessage};

/// Where a party's triples come from. Every source produces, for `count` triples, this
/// party's shares; the two parties' shares together are valid triples.
pub trait TripleSource {
    /// The source's kind (both parties must use the same).
    fn kind(&self) -> TripleKind;

    /// Produces this party's shares of `count` triples, talking to the peer over
    /// `conn` as the source requires.
    fn triples(
        &mut self,
        conn: &mut FramedConn,
        party: Party,
        count: usize,
    ) -> impl std::future::Future<Output = Result<TripleShares, Error>>;
}

/// A dealer that both parties trust *and that both parties are*: the triples are
/// expanded from a seed both know, so each could compute the other's shares. Only for
/// tests and for benchmarks of the online phase alone; never for real inputs.
#[derive(Debug, Clone)]
pub struct InsecureSharedDealer {
    /// The shared seed.
    pub seed: [u8; 32],
}

impl TripleSource for InsecureSharedDealer {
    fn kind(&self) -> TripleKind {
        TripleKind::Dealer
    }

    async fn triples(&mut self, _conn: &mut FramedConn, party: Party, count: usize) -> Result<TripleShares, Error> {
        let mut rng = rand_chacha_like(self.seed);
        let (a, b) = deal(count, &mut rng);
        Ok(if party == Party::A { a } else { b })
    }
}

fn rand_chacha_like(seed: [u8; 32]) -> tacit_crypto::rng::SecureRng {
    tacit_crypto::rng::SecureRng::from_seed(seed)
}

/// Rounds, bytes and time of one phase, as seen by one party.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PhaseStats {
    /// Round trips (messages this party sent and then waited on).
    pub rounds: u64,
    /// Bytes sent, frame headers included.
    pub bytes_sent: u64,
    /// Bytes received, frame headers included.
    pub bytes_received: u64,
    /// Wall time.
    pub time: Duration,
}

/// The result of a run.
#[derive(Debug, Clone)]
pub struct RunReport {
    /// The outputs of every instance.
    pub outputs: Outputs,
    /// Triple generation and the ready exchange, timed from the moment the peer's
    /// hello arrived (bytes include the hellos).
    pub setup: PhaseStats,
    /// The hello exchange: one round trip, plus however long the peer took to get
    /// ready (to build its circuit, say). Kept out of `setup`, which would otherwise
    /// measure the peer's preparation rather than the protocol.
    pub hello_wait: std::time::Duration,
    /// Layers and output opening.
    pub online: PhaseStats,
    /// The part of `online.time` this party spent computing (its share of the inputs,
    /// every layer's message and the gates after it, the outputs); the rest is
    /// waiting for the peer's messages and moving bytes.
    pub online_compute: Duration,
    /// Triples consumed.
    pub triples: usize,
}

/// What the two parties agree on before computing.
#[derive(Debug, Clone)]
pub struct SessionConfig {
    /// Parallel instances (SIMD).
    pub instances: usize,
    /// Owner of each input value.
    pub owners: Vec<Party>,
    /// Who learns the outputs.
    pub outputs: OutputTo,
    /// A digest of the application's parameters that both must agree on (zero when
    /// the circuit says everything).
    pub context: [u8; 32],
    /// How long the online phase polls the socket for the peer's layer message before
    /// it parks on the reactor ([`FramedConn::exchange_spin`]); zero parks at once.
    /// Not part of the agreement: each party chooses its own.
    pub spin: Duration,
}

/// The default [`SessionConfig::spin`]: a layer's message usually arrives within tens
/// of µs of our own; past this the peer is slow and polling would only burn a core.
pub const DEFAULT_SPIN: Duration = Duration::from_micros(200);

impl SessionConfig {
    /// `instances` instances, inputs owned by `owners`, outputs to both, no context.
    pub fn new(instances: usize, owners: Vec<Party>) -> Self {
        SessionConfig {
            instances,
            owners,
            outputs: OutputTo::Both,
            context: [0; 32],
            spin: DEFAULT_SPIN,
        }
    }

    /// Sets how long the online phase polls before it parks (zero: never polls).
    pub fn with_spin(mut self, spin: Duration) -> Self {
        self.spin = spin;
        self
    }

    /// Opens the outputs only to `to`.
    pub fn with_outputs(mut self, to: OutputTo) -> Self {
        self.outputs = to;
        self
    }

    /// Binds the session to an application context digest.
    pub fn with_context(mut self, context: [u8; 32]) -> Self {
        self.context = context;
        self
    }
}

/// The largest frame a session accepts: the biggest layer or output message of this
/// circuit, or the triple sources' chunks, whichever is larger.
pub fn max_frame_for(lc: &LayeredCircuit, instances: usize) -> usize {
    let layer = crate::messages::LayerMessage::encoded_len(2 * lc.max_layer_ands() * instances);
    let out = 16 + lc.circuit().total_output_bits() * instances / 8;
    layer
        .max(out)
        .max(crate::triples::ot::MAX_CHUNK_BYTES + 64)
        .max(1 << 16)
}

/// Sends `msg` and receives the peer's message of the same step; a refusal from the
/// peer becomes [`Error::Refused`].
pub(crate) async fn exchange(conn: &mut FramedConn, msg: &[u8]) -> Result<Vec<u8>, Error> {
    let got = conn.exchange(msg).await?;
    refused(&got)?;
    Ok(got)
}

/// Turns an [`ErrorMessage`] into [`Error::Refused`].
pub(crate) fn refused(got: &[u8]) -> Result<(), Error> {
    if let Ok(env) = tacit_wire::Envelope::peek(got)
        && env.tag == tacit_wire::tags::ERROR
        && let Ok(m) = ErrorMessage::from_wire(got)
    {
        return Err(Error::Refused(m.reason));
    }
    Ok(())
}

/// Runs one party of a session over `conn`: hello, triples from `source`, online
/// phase. Both parties must call it with the same circuit and configuration.
pub async fn run<S: TripleSource>(
    conn: &mut FramedConn,
    lc: &LayeredCircuit,
    party: Party,
    cfg: &SessionConfig,
    inputs: &PartyInputs,
    source: &mut S,
    rng: &mut impl CryptoRngCore,
) -> Result<RunReport, Error> {
    let n = cfg.instances;
    if n == 0 || n > u32::MAX as usize {
        return Err(Error::Params(format!("{n} instances is not a valid count")));
    }
    conn.set_max_frame(max_frame_for(lc, n));
    let t0 = Instant::now();
    let (s0, r0) = (conn.bytes_sent(), conn.bytes_received());
    let own_seed = Seed::random(rng);
    let hello = Hello {
        party,
        circuit: lc.digest(),
        instances: n as u32,
        owners: cfg.owners.clone(),
        triples: source.kind(),
        input_seed: own_seed.0,
        outputs: cfg.outputs,
        context: cfg.context,
    };
    let got = exchange(conn, &hello.to_wire()).await?;
    let hello_wait = t0.elapsed();
    let t0 = Instant::now();
    let peer = Hello::from_wire(&got)?;
    let mismatch = if peer.party != party.peer() {
        Some(format!("also plays party {}", peer.party))
    } else if peer.circuit != hello.circuit {
        Some("computes another circuit (the digests differ)".to_string())
    } else if peer.instances != hello.instances {
        Some(format!("runs {} instances; we run {n}", peer.instances))
    } else if peer.owners != hello.owners {
        Some("assigns the inputs to other parties".to_string())
    } else if peer.triples != hello.triples {
        Some(format!("takes triples from {}; we use {}", peer.triples, hello.triples))
    } else if peer.outputs != hello.outputs {
        Some("opens the outputs to another party".to_string())
    } else if peer.context != hello.context {
        Some("runs the application with other parameters".to_string())
    } else {
        None
    };
    if let Some(why) = mismatch {
        let _ = conn
            .send(&ErrorMessage::new(format!("session mismatch: the peer {why}")).to_wire())
            .await;
        return Err(Error::Peer(why));
    }
    let peer_seed = Seed(peer.input_seed);
    let count = lc.and_gates() * n;
    let triples = source.triples(conn, party, count).await?;
    if triples.len() < count {
        return Err(Error::Triples(format!(
            "the source gave {} of {count} triples",
            triples.len()
        )));
    }
    // Both parties finish the setup before either starts the online clock.
    let mut w = tacit_wire::Writer::new();
    w.put_envelope(crate::messages::tags::READY);
    let got = exchange(conn, &w.into_bytes()).await?;
    tacit_wire::Reader::new(&got).envelope(crate::messages::tags::READY, "ready")?;
    if got.len() != 3 {
        return Err(Error::Peer("sent a malformed ready message".into()));
    }
    // Over TLS the online phase's records are sealed and opened by tacit's own record
    // layer on the session's traffic secrets (same TLS 1.3 records on the wire; a
    // layer is one record each way, and rustls's path was most of what TLS added to
    // a layer's round trip: docs/mpc.md).
    conn.own_record_layer(party == Party::A).await?;
    let setup = PhaseStats {
        rounds: 0,
        bytes_sent: conn.bytes_sent() - s0,
        bytes_received: conn.bytes_received() - r0,
        time: t0.elapsed(),
    };
    let t1 = Instant::now();
    let (s1, r1) = (conn.bytes_sent(), conn.bytes_received());
    let mut rounds = 0;
    let mut compute = Duration::ZERO;
    let c0 = Instant::now();
    let mut step = Online::start_to(
        lc,
        party,
        &cfg.owners,
        n,
        inputs,
        &own_seed,
        &peer_seed,
        triples,
        cfg.outputs,
    )?;
    compute += c0.elapsed();
    let outputs = loop {
        match step {
            Step::Layer(state, msg) => {
                // Both parties' messages of a layer have the same length.
                let got = conn.exchange_spin_expecting(&msg, msg.len(), cfg.spin).await?;
                rounds += 1;
                let c0 = Instant::now();
                step = state.on_layer(&got)?;
                compute += c0.elapsed();
            }
            Step::Reveal(state, msg) => {
                let got = conn.exchange_spin(&msg, cfg.spin).await?;
                refused(&got)?;
                rounds += 1;
                let c0 = Instant::now();
                let out = state.on_outputs(&got)?;
                compute += c0.elapsed();
                break out;
            }
        }
    };
    let online = PhaseStats {
        rounds,
        bytes_sent: conn.bytes_sent() - s1,
        bytes_received: conn.bytes_received() - r1,
        time: t1.elapsed(),
    };
    Ok(RunReport {
        hello_wait,
        outputs,
        setup,
        online,
        online_compute: compute,
        triples: count,
    })
}

/// A seed for [`InsecureSharedDealer`] from a number (tests and benchmarks).
pub fn dealer_seed(n: u64) -> [u8; 32] {
    let mut h = <sha2::Sha256 as sha2::Digest>::new();
    sha2::Digest::update(&mut h, b"tacit-mpc insecure dealer");
    sha2::Digest::update(&mut h, n.to_be_bytes());
    sha2::Digest::finalize(h).into()
}
