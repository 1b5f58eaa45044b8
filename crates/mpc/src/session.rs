//! One GMW session between two processes, configured by a builder: party a listens
//! ([`SessionBuilder::listen`], or [`SessionBuilder::bind`] then
//! [`Listening::run`]), party b connects ([`SessionBuilder::connect`]); both compute
//! the same circuit on their inputs and get typed outputs — what `tacit mpc run` does.
//!
//! Safe by default: the builder runs over TLS 1.3 with pinned keys
//! ([`Channel::tls`]) and refuses to start without a channel (plain TCP only by
//! name, [`Channel::plain_tcp_unauthenticated`]); a listening party runs the
//! handshakes of the connections that arrive side by side, each within a few
//! seconds, so that a port scan or a key that is not pinned does not hold up the
//! peer ([`crate::service::HANDSHAKES_AT_ONCE`]); the two hellos compare the circuit's
//! digest, the instances, the owners, the triple source and the outputs before any
//! triple is made; frames are bounded by the circuit's largest layer; the online
//! phase runs on tacit's own TLS record layer ([`crate::driver`]).
//!
//! GMW is secure against a peer that follows the protocol (semi-honest); a peer that
//! deviates can change the result and, in some circuits, learn more
//! (`docs/mpc.md`).

use crate::circuit::LayeredCircuit;
use crate::driver::{RunReport, SessionConfig, TripleSource, run};
use crate::gmw::{OutputTo, PartyInputs};
use crate::service::{Channel, Event, Events, MemoryBound, Source, Triples, accept_one, no_events};
use crate::{Error, Party};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tacit_crypto::rng::SecureRng;
use tacit_net::{FramedConn, FramedListener, NetConfig, Protocol};

/// A GMW session (see [`Session::builder`]).
pub struct Session;

impl Session {
    /// A session computing `circuit` (a [`LayeredCircuit`], or a
    /// [`crate::circuit::Circuit`] that is layered here).
    pub fn builder(circuit: impl Into<Arc<LayeredCircuit>>) -> SessionBuilder {
        SessionBuilder {
            lc: circuit.into(),
            owners: None,
            instances: 1,
            inputs: Inputs::None,
            triples: Triples::Ot,
            channel: Channel::default(),
            net: NetConfig::default(),
            spin: crate::driver::DEFAULT_SPIN,
            outputs: OutputTo::Both,
            events: no_events(),
            memory: MemoryBound::Available,
        }
    }
}

impl From<crate::circuit::Circuit> for Arc<LayeredCircuit> {
    fn from(c: crate::circuit::Circuit) -> Self {
        Arc::new(LayeredCircuit::new(c))
    }
}

#[derive(Debug, Clone)]
enum Inputs {
    None,
    Values(Vec<Vec<bool>>),
    Full(PartyInputs),
}

/// Configures a [`Session`].
#[derive(Clone)]
pub struct SessionBuilder {
    lc: Arc<LayeredCircuit>,
    owners: Option<Vec<Party>>,
    instances: usize,
    inputs: Inputs,
    triples: Triples,
    channel: Channel,
    net: NetConfig,
    spin: Duration,
    outputs: OutputTo,
    events: Events,
    memory: MemoryBound,
}

impl std::fmt::Debug for SessionBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionBuilder")
            .field("and_gates", &self.lc.and_gates())
            .field("instances", &self.instances)
            .field("owners", &self.owners)
            .field("triples", &self.triples)
            .field("channel", &self.channel)
            .finish_non_exhaustive()
    }
}

/// What a session gives back.
#[derive(Debug, Clone)]
pub struct SessionOutput {
    /// Which party this process played.
    pub party: Party,
    /// The peer's key fingerprint (`None` on plain TCP).
    pub peer_key: Option<[u8; 32]>,
    /// Outputs, rounds, bytes and times.
    pub report: RunReport,
}

impl SessionOutput {
    /// The output values of the first instance, in output order (empty when the
    /// outputs were opened only to the peer).
    pub fn outputs(&self) -> &[Vec<bool>] {
        self.report.outputs.values.first().map_or(&[], |v| v.as_slice())
    }
}

impl SessionBuilder {
    /// Who supplies each input value (default: input 0 party a, the rest party b).
    pub fn owners(mut self, owners: Vec<Party>) -> Self {
        self.owners = Some(owners);
        self
    }

    /// Parallel instances of the circuit, all on the same inputs unless given with
    /// [`SessionBuilder::party_inputs`] (default 1).
    pub fn instances(mut self, n: usize) -> Self {
        self.instances = n;
        self
    }

    /// This party's input values, in input order (each as bits, first bit = first
    /// wire; see [`crate::bits`]).
    pub fn inputs(mut self, values: Vec<Vec<bool>>) -> Self {
        self.inputs = Inputs::Values(values);
        self
    }

    /// This party's inputs per input and instance.
    pub fn party_inputs(mut self, inputs: PartyInputs) -> Self {
        self.inputs = Inputs::Full(inputs);
        self
    }

    /// Where the triples come from (default OT extension).
    pub fn triples(mut self, t: Triples) -> Self {
        self.triples = t;
        self
    }

    /// The channel between the parties (required: TLS, or plain TCP by name).
    pub fn channel(mut self, ch: Channel) -> Self {
        self.channel = ch;
        self
    }

    /// Transport settings (timeouts, an overall deadline); the greeting and the
    /// frame limit are the session's.
    pub fn net_config(mut self, cfg: NetConfig) -> Self {
        self.net = cfg;
        self
    }

    /// An overall deadline for the connection, from connect or accept.
    pub fn deadline(mut self, d: Duration) -> Self {
        self.net.deadline = Some(d);
        self
    }

    /// How long the online phase polls the socket for the peer's layer message
    /// before it sleeps (default [`crate::driver::DEFAULT_SPIN`]; zero sleeps at once).
    pub fn spin(mut self, d: Duration) -> Self {
        self.spin = d;
        self
    }

    /// Open the outputs only to `to` (default both; both parties must agree).
    pub fn outputs_to(mut self, to: OutputTo) -> Self {
        self.outputs = to;
        self
    }

    /// Where progress and connection events go.
    pub fn on_event(mut self, f: impl Fn(Event) + Send + Sync + 'static) -> Self {
        self.events = Arc::new(f);
        self
    }

    /// The memory this session's triples and wires may take (bytes): `instances`
    /// copies of the circuit that do not fit are refused before anything connects
    /// or is allocated (default: what this process may use,
    /// [`tacit_net::memory::memory_budget`], as `tacit mpc run`).
    pub fn memory_budget(mut self, bytes: u64) -> Self {
        self.memory = MemoryBound::Bytes(bytes);
        self
    }

    /// No memory bound on the session's size (a session larger than the machine
    /// then runs out of memory instead of being refused).
    pub fn no_memory_bound(mut self) -> Self {
        self.memory = MemoryBound::Unbounded;
        self
    }

    /// Bytes `instances` copies of the circuit take to run beyond the circuit
    /// itself: the triples (3 bits per AND gate, twice while they are made) and at
    /// most one word per wire (what the memory bound is checked against).
    pub fn memory_needed(&self) -> u128 {
        let s = self.lc.circuit().stats();
        ((s.and_gates as u128 * 6).div_ceil(8) + s.wires as u128 / 8) * self.instances as u128
    }

    /// Party a: binds `addr` (port 0 picks one) and returns the listener, to run the
    /// session on with [`Listening::run`].
    pub async fn bind(self, addr: &str) -> Result<Listening, Error> {
        self.check()?;
        let l = FramedListener::bind(addr, &self.net)
            .await
            .map_err(|err| Error::Connect {
                what: format!("listening on {addr}"),
                err,
            })?;
        let local = l.local_addr()?;
        (self.events)(Event::Listening { addr: local });
        Ok(Listening {
            builder: self,
            listener: l,
            addr: local,
        })
    }

    /// Party a: listens on `addr`, admits one peer and runs the session.
    pub async fn listen(self, addr: &str) -> Result<SessionOutput, Error> {
        self.bind(addr).await?.run().await
    }

    /// Party b: connects to party a at `addr` and runs the session.
    pub async fn connect(self, addr: &str) -> Result<SessionOutput, Error> {
        self.check()?;
        let (mut conn, peer_key) = self.channel.connect(addr, &self.net, Protocol::MpcRun).await?;
        (self.events)(Event::Connected { peer_key });
        self.run(&mut conn, Party::B, peer_key).await
    }

    /// Runs the session as `party` on a connection the caller made (its greeting
    /// and handshake done; `peer_key` is reported back as it is).
    pub async fn run(
        &self,
        conn: &mut FramedConn,
        party: Party,
        peer_key: Option<[u8; 32]>,
    ) -> Result<SessionOutput, Error> {
        let n = self.instances;
        let owners = self
            .owners
            .clone()
            .unwrap_or_else(|| crate::gmw::default_owners(self.lc.circuit().input_widths().len()));
        let inputs = self.party_inputs_for(party, &owners)?;
        let cfg = SessionConfig::new(n, owners)
            .with_spin(self.spin)
            .with_outputs(self.outputs);
        let mut rng = SecureRng::from_os();
        let mut src = self.triples.source(party, &self.events).await?;
        if let Source::Holder(h) = &mut src {
            // The init phase for what this session needs, before the hellos.
            let ev = self.events.clone();
            crate::token::fill(h, self.lc.and_gates() * n, move |done, total| {
                ev(Event::TokenFill { done, total })
            })
            .await?;
        }
        let report = self.run_with(conn, party, &cfg, &inputs, &mut src, &mut rng).await?;
        Ok(SessionOutput {
            party,
            peer_key,
            report,
        })
    }

    async fn run_with<S: TripleSource>(
        &self,
        conn: &mut FramedConn,
        party: Party,
        cfg: &SessionConfig,
        inputs: &PartyInputs,
        src: &mut S,
        rng: &mut SecureRng,
    ) -> Result<RunReport, Error> {
        run(conn, &self.lc, party, cfg, inputs, src, rng).await
    }

    fn check(&self) -> Result<(), Error> {
        if self.instances == 0 || self.instances > u32::MAX as usize {
            return Err(Error::Params(format!(
                "{} instances is not a valid count",
                self.instances
            )));
        }
        let need = self.memory_needed();
        if let Some(b) = self.memory.bytes()
            && need > b as u128
        {
            return Err(Error::Params(format!(
                "{} instances of this circuit need about {}; this process may use {}",
                self.instances,
                crate::apps::psi::human_bytes(u64::try_from(need).unwrap_or(u64::MAX)),
                crate::apps::psi::human_bytes(b)
            )));
        }
        Ok(())
    }

    fn party_inputs_for(&self, party: Party, owners: &[Party]) -> Result<PartyInputs, Error> {
        self.check()?;
        let n = self.instances;
        let widths = self.lc.circuit().input_widths();
        if owners.len() != widths.len() {
            return Err(Error::Input(format!(
                "the owners name {} inputs; the circuit has {}",
                owners.len(),
                widths.len()
            )));
        }
        match &self.inputs {
            Inputs::Full(p) => Ok(p.clone()),
            Inputs::None | Inputs::Values(_) => {
                let given: &[Vec<bool>] = match &self.inputs {
                    Inputs::Values(v) => v,
                    _ => &[],
                };
                let mine: Vec<usize> = (0..owners.len()).filter(|&i| owners[i] == party).collect();
                if given.len() != mine.len() {
                    return Err(Error::Input(format!(
                        "{} input value(s) given; this party supplies {} (inputs {:?})",
                        given.len(),
                        mine.len(),
                        mine
                    )));
                }
                let mut it = given.iter();
                Ok(PartyInputs {
                    values: owners
                        .iter()
                        .map(|&o| (o == party).then(|| it.next().map(|v| vec![v.clone(); n])).flatten())
                        .collect(),
                })
            }
        }
    }
}

/// Party a's session with its listener bound (see [`SessionBuilder::bind`]).
pub struct Listening {
    builder: SessionBuilder,
    listener: FramedListener,
    addr: SocketAddr,
}

impl std::fmt::Debug for Listening {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listening")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl Listening {
    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Admits one peer (see [`crate::service::HANDSHAKES_AT_ONCE`]) and runs the
    /// session as party a.
    pub async fn run(self) -> Result<SessionOutput, Error> {
        let b = self.builder;
        b.check()?;
        let (mut conn, peer_key) = accept_one(&self.listener, &b.channel, Protocol::MpcRun, &b.events).await?;
        drop(self.listener);
        b.run(&mut conn, Party::A, peer_key).await
    }
}
