//! Admission control for tacit's servers: one mechanism that every server uses so that
//! no single peer can exhaust it with idle connections (issue 32).
//!
//! A server that spawns a task per accepted connection and lets each sit idle until a
//! handshake timeout can be brought down by one peer: it opens connections until the
//! process runs out of file descriptors, and then `accept` fails. A server that takes
//! one connection at a time is stalled by a single idle one. [`serve`] does the
//! accepting for them, with four guarantees:
//!
//! * **a cap on concurrent connections** ([`ServeLimits::max_connections`]), fitted
//!   below the process's file-descriptor limit ([`ServeLimits::fds_per_connection`]),
//!   so that `accept` itself keeps working;
//! * **per-address fairness**: one address (an IPv4 address, or an IPv6 /64, which one
//!   host usually holds whole) holds at most [`ServeLimits::max_per_address`]
//!   connections; and when the server is full, a newcomer from an address holding
//!   fewer connections than the busiest address minus one takes the busiest
//!   address's oldest connection (among equally busy addresses, the oldest connection) (max-min fairness: a flood from a few addresses
//!   cannot keep anyone else out);
//! * **a deadline per connection** ([`ServeLimits::deadline`]), after which the
//!   connection is dropped whatever its handler is doing;
//! * **`accept` errors are reported and serving continues** (with a back-off of
//!   [`ServeLimits::accept_backoff`], doubling to one second), never returned.
//!
//! A refused connection is closed at once, or handed to a [`RefuseHook`] (a server that
//! tells its clients "busy, try again"), which runs under a short deadline, at most
//! [`MAX_REFUSALS_IN_FLIGHT`] at a time (beyond that refused connections are simply
//! closed).
//!
//! [`ConnectionLimiter`] is the bookkeeping alone, for a server with its own accept
//! loop: [`ConnectionLimiter::admit`] gives a [`ConnectionPermit`] that frees its slot
//! when dropped and whose [`ConnectionPermit::evicted`] resolves when a newcomer took
//! its slot (the server must then drop the connection).
//!
//! ```no_run
//! # async fn demo() {
//! use std::sync::Arc;
//! use tacit_net::guard::{self, Guard, ServeLimits};
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
//! let guard = Guard::new(ServeLimits::default()).on_event(Arc::new(|e| eprintln!("{e}")));
//! guard::serve(&listener, &guard, None, |stream, peer| async move {
//!     // one connection: TLS, the protocol, …
//!     let _ = (stream, peer);
//! })
//! .await;
//! # }
//! ```

use std::collections::{BTreeSet, HashMap};
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};

/// Most refused connections answered at once by a [`RefuseHook`]; further refused
/// connections are closed without an answer.
pub const MAX_REFUSALS_IN_FLIGHT: usize = 16;

/// How long a [`RefuseHook`] may take with one connection.
pub const REFUSAL_DEADLINE: Duration = Duration::from_secs(2);

/// File descriptors kept for everything but connections (the store, mDNS sockets,
/// the runtime, files being written) when [`ServeLimits::max_connections`] is fitted
/// to the process's limit.
pub const RESERVED_DESCRIPTORS: u64 = 64;

/// A server's admission limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServeLimits {
    /// Most connections served at once.
    pub max_connections: usize,
    /// Most connections one address (IPv4 address or IPv6 /64) holds at once.
    pub max_per_address: usize,
    /// Longest a connection may live, from accept to close.
    pub deadline: Duration,
    /// File descriptors one connection may use (2 for a server that writes a file per
    /// connection): the connection cap is fitted to `(limit − 64) / this`.
    pub fds_per_connection: usize,
    /// First wait after a failed `accept` (doubling to one second while it keeps
    /// failing).
    pub accept_backoff: Duration,
}

impl Default for ServeLimits {
    /// 256 connections, 16 per address, 30 s each.
    fn default() -> Self {
        ServeLimits {
            max_connections: 256,
            max_per_address: 16,
            deadline: Duration::from_secs(30),
            fds_per_connection: 1,
            accept_backoff: Duration::from_millis(20),
        }
    }
}

impl ServeLimits {
    /// `max_connections` at once, each within `deadline`; 16 per address.
    pub fn new(max_connections: usize, deadline: Duration) -> Self {
        ServeLimits {
            max_connections,
            deadline,
            ..Self::default()
        }
    }

    /// The same with another per-address cap.
    pub fn with_per_address(mut self, n: usize) -> Self {
        self.max_per_address = n;
        self
    }

    /// The same with another deadline.
    pub fn with_deadline(mut self, d: Duration) -> Self {
        self.deadline = d;
        self
    }

    /// The limits in force: both caps at least 1, the per-address cap at most the
    /// total, and the total fitted below the process's file-descriptor limit.
    pub fn effective(&self) -> ServeLimits {
        let mut l = *self;
        l.max_connections = l.max_connections.max(1);
        if let Some(soft) = descriptor_limit() {
            let usable = soft.saturating_sub(RESERVED_DESCRIPTORS) / l.fds_per_connection.max(1) as u64;
            l.max_connections = l.max_connections.min(usable.max(1) as usize);
        }
        l.max_per_address = l.max_per_address.clamp(1, l.max_connections);
        l
    }
}

/// The process's soft limit on open files, if it has one.
pub fn descriptor_limit() -> Option<u64> {
    rustix::process::getrlimit(rustix::process::Resource::Nofile).current
}

/// Which connections count as one address for fairness: an IPv4 address (an
/// IPv4-mapped IPv6 address counts as its IPv4 address), or the /64 prefix of an IPv6
/// address (a host usually has a whole /64 to pick addresses from).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AddressKey([u8; 8], bool);

impl AddressKey {
    /// The key of `ip`.
    pub fn of(ip: IpAddr) -> Self {
        match ip {
            IpAddr::V4(v4) => Self::v4(v4),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => Self::v4(v4),
                None => {
                    let mut k = [0u8; 8];
                    k.copy_from_slice(&v6.octets()[..8]);
                    AddressKey(k, true)
                }
            },
        }
    }

    fn v4(v4: std::net::Ipv4Addr) -> Self {
        let mut k = [0u8; 8];
        k[..4].copy_from_slice(&v4.octets());
        AddressKey(k, false)
    }
}

/// Why a connection was not admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The peer's address already holds its share.
    AddressFull {
        /// Connections per address.
        limit: usize,
    },
    /// The server is full and the peer's address holds as many connections as any
    /// other (nothing to take from a busier address).
    Full {
        /// Connections in all.
        limit: usize,
    },
}

impl core::fmt::Display for Refusal {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Refusal::AddressFull { limit } => {
                write!(
                    f,
                    "this address already holds {limit} connections, the most one address may hold"
                )
            }
            Refusal::Full { limit } => write!(f, "the server is busy ({limit} connections in progress)"),
        }
    }
}

struct Slot {
    key: AddressKey,
    evicted: Arc<Eviction>,
}

#[derive(Default)]
struct Eviction {
    flag: AtomicBool,
    notify: tokio::sync::Notify,
}

#[derive(Default)]
struct Table {
    next: u64,
    slots: HashMap<u64, Slot>,
    /// Connection ids per address, oldest first.
    by_key: HashMap<AddressKey, BTreeSet<u64>>,
}

impl Table {
    fn remove(&mut self, id: u64) -> Option<Slot> {
        let slot = self.slots.remove(&id)?;
        if let Some(ids) = self.by_key.get_mut(&slot.key) {
            ids.remove(&id);
            if ids.is_empty() {
                self.by_key.remove(&slot.key);
            }
        }
        Some(slot)
    }
}

struct Inner {
    limits: ServeLimits,
    table: Mutex<Table>,
}

/// Counts the connections in progress per address and decides who is admitted (see
/// the [module](self) for the rules). Clones share the count.
#[derive(Clone)]
pub struct ConnectionLimiter(Arc<Inner>);

impl core::fmt::Debug for ConnectionLimiter {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "ConnectionLimiter({:?}, {} in use)", self.0.limits, self.in_use())
    }
}

impl ConnectionLimiter {
    /// A limiter enforcing `limits` ([`ServeLimits::effective`]).
    pub fn new(limits: ServeLimits) -> Self {
        ConnectionLimiter(Arc::new(Inner {
            limits: limits.effective(),
            table: Mutex::new(Table::default()),
        }))
    }

    /// The limits in force.
    pub fn limits(&self) -> &ServeLimits {
        &self.0.limits
    }

    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        // The table holds counts only; a panic elsewhere cannot leave it inconsistent.
        self.0.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Admits a connection from `peer`, or says why not. When the server is full, a
    /// peer whose address holds fewer connections than the busiest address minus one
    /// is admitted and the busiest address's oldest connection is evicted (its
    /// [`ConnectionPermit::evicted`] resolves).
    pub fn admit(&self, peer: IpAddr) -> Result<ConnectionPermit, Refusal> {
        let l = &self.0.limits;
        let key = AddressKey::of(peer);
        let mut t = self.table();
        let mine = t.by_key.get(&key).map_or(0, BTreeSet::len);
        if mine >= l.max_per_address {
            return Err(Refusal::AddressFull {
                limit: l.max_per_address,
            });
        }
        if t.slots.len() >= l.max_connections {
            // The busiest address; among equally busy ones, the one holding the
            // oldest connection (deterministic, and the oldest has had its time).
            let busiest = t
                .by_key
                .values()
                .filter_map(|ids| Some((ids.len(), *ids.first()?)))
                .max_by_key(|&(n, oldest)| (n, std::cmp::Reverse(oldest)));
            match busiest {
                Some((n, oldest)) if n > mine + 1 => {
                    if let Some(victim) = t.remove(oldest) {
                        victim.evicted.flag.store(true, Ordering::SeqCst);
                        victim.evicted.notify.notify_one();
                    }
                }
                _ => {
                    return Err(Refusal::Full {
                        limit: l.max_connections,
                    });
                }
            }
        }
        let id = t.next;
        t.next += 1;
        let evicted = Arc::new(Eviction::default());
        t.slots.insert(
            id,
            Slot {
                key,
                evicted: evicted.clone(),
            },
        );
        t.by_key.entry(key).or_default().insert(id);
        Ok(ConnectionPermit {
            limiter: self.clone(),
            id,
            evicted,
        })
    }

    /// Connections admitted and not yet released or evicted.
    pub fn in_use(&self) -> usize {
        self.table().slots.len()
    }

    /// Connections `peer`'s address holds.
    pub fn in_use_by(&self, peer: IpAddr) -> usize {
        self.table().by_key.get(&AddressKey::of(peer)).map_or(0, BTreeSet::len)
    }
}

/// One admitted connection's slot; dropping it frees the slot.
pub struct ConnectionPermit {
    limiter: ConnectionLimiter,
    id: u64,
    evicted: Arc<Eviction>,
}

impl core::fmt::Debug for ConnectionPermit {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "ConnectionPermit({}, evicted {})", self.id, self.is_evicted())
    }
}

impl ConnectionPermit {
    /// Resolves when a newcomer took this slot (the connection must then be dropped;
    /// its slot no longer counts).
    pub async fn evicted(&self) {
        loop {
            let notified = self.evicted.notify.notified();
            if self.is_evicted() {
                return;
            }
            notified.await;
        }
    }

    /// Whether a newcomer took this slot.
    pub fn is_evicted(&self) -> bool {
        self.evicted.flag.load(Ordering::SeqCst)
    }
}

impl Drop for ConnectionPermit {
    fn drop(&mut self) {
        self.limiter.table().remove(self.id);
    }
}

/// Something the guarded accept loop did, for the server's log.
#[derive(Debug, Clone)]
pub enum ServeEvent {
    /// `accept` failed (out of file descriptors, say); serving goes on after `retry_in`.
    AcceptFailed {
        /// The error.
        error: String,
        /// The back-off before the next `accept`.
        retry_in: Duration,
    },
    /// A connection was refused and closed (or answered by the [`RefuseHook`]).
    Refused {
        /// Who.
        peer: SocketAddr,
        /// Why.
        why: Refusal,
    },
    /// A connection was dropped to make room for a peer from a less busy address.
    Evicted {
        /// Whose connection.
        peer: SocketAddr,
    },
    /// A connection ran past the deadline and was dropped.
    DeadlinePassed {
        /// Whose connection.
        peer: SocketAddr,
        /// The deadline.
        deadline: Duration,
    },
}

impl core::fmt::Display for ServeEvent {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ServeEvent::AcceptFailed { error, retry_in } => write!(
                f,
                "accepting a connection failed ({error}); still serving, next try in {} ms",
                retry_in.as_millis()
            ),
            ServeEvent::Refused { peer, why } => write!(f, "refused a connection from {peer}: {why}"),
            ServeEvent::Evicted { peer } => write!(
                f,
                "dropped a connection from {peer} to make room for a less busy address"
            ),
            ServeEvent::DeadlinePassed { peer, deadline } => write!(
                f,
                "dropped a connection from {peer} at its {:.0} s deadline",
                deadline.as_secs_f64()
            ),
        }
    }
}

/// Where [`ServeEvent`]s go.
pub type ServeEvents = Arc<dyn Fn(ServeEvent) + Send + Sync>;

/// A boxed future of a [`RefuseHook`].
pub type RefuseFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Answers a refused connection (a "busy, try again" message) before it is closed;
/// runs under [`REFUSAL_DEADLINE`], at most [`MAX_REFUSALS_IN_FLIGHT`] at once.
pub type RefuseHook = Arc<dyn Fn(TcpStream, Refusal) -> RefuseFuture + Send + Sync>;

/// A server's admission policy: its [`ConnectionLimiter`], where events go, and how
/// refused connections are answered.
#[derive(Clone)]
pub struct Guard {
    limiter: ConnectionLimiter,
    events: ServeEvents,
    refuse: Option<RefuseHook>,
    refusals: Arc<tokio::sync::Semaphore>,
}

impl core::fmt::Debug for Guard {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Guard({:?})", self.limiter)
    }
}

impl Guard {
    /// A guard enforcing `limits`; events are dropped until [`Guard::on_event`].
    pub fn new(limits: ServeLimits) -> Self {
        Guard {
            limiter: ConnectionLimiter::new(limits),
            events: Arc::new(|_| {}),
            refuse: None,
            refusals: Arc::new(tokio::sync::Semaphore::new(MAX_REFUSALS_IN_FLIGHT)),
        }
    }

    /// Reports what the accept loop does to `events`.
    pub fn on_event(mut self, events: ServeEvents) -> Self {
        self.events = events;
        self
    }

    /// Answers refused connections with `hook` instead of closing them at once.
    pub fn refuse_with(mut self, hook: RefuseHook) -> Self {
        self.refuse = Some(hook);
        self
    }

    /// The limiter (for counts in logs and tests).
    pub fn limiter(&self) -> &ConnectionLimiter {
        &self.limiter
    }

    /// The limits in force.
    pub fn limits(&self) -> &ServeLimits {
        self.limiter.limits()
    }
}

/// Accepts connections on `listener` and runs `handler` for each admitted one on its
/// own task, under the guard's caps and deadline (see the [module](self)), until
/// `sessions` connections were admitted (or forever); then waits for the connections
/// in progress. Never fails: `accept` errors are reported as
/// [`ServeEvent::AcceptFailed`] and accepting goes on.
pub async fn serve<F, Fut>(listener: &TcpListener, guard: &Guard, sessions: Option<u64>, handler: F)
where
    F: Fn(TcpStream, SocketAddr) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let limits = *guard.limits();
    let mut tasks = tokio::task::JoinSet::new();
    let mut admitted = 0u64;
    let mut backoff = limits.accept_backoff.max(Duration::from_millis(1));
    while sessions.is_none_or(|s| admitted < s) {
        while tasks.try_join_next().is_some() {}
        let (stream, peer) = match listener.accept().await {
            Ok(c) => {
                backoff = limits.accept_backoff.max(Duration::from_millis(1));
                c
            }
            Err(e) => {
                (guard.events)(ServeEvent::AcceptFailed {
                    error: e.to_string(),
                    retry_in: backoff,
                });
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(1));
                continue;
            }
        };
        let permit = match guard.limiter.admit(peer.ip()) {
            Ok(p) => p,
            Err(why) => {
                (guard.events)(ServeEvent::Refused { peer, why });
                if let Some(hook) = &guard.refuse
                    && let Ok(slot) = guard.refusals.clone().try_acquire_owned()
                {
                    let answer = hook(stream, why);
                    tasks.spawn(async move {
                        let _ = tokio::time::timeout(REFUSAL_DEADLINE, answer).await;
                        drop(slot);
                    });
                }
                continue;
            }
        };
        admitted += 1;
        let work = handler(stream, peer);
        let events = guard.events.clone();
        tasks.spawn(async move {
            tokio::select! {
                done = tokio::time::timeout(limits.deadline, work) => {
                    if done.is_err() {
                        events(ServeEvent::DeadlinePassed { peer, deadline: limits.deadline });
                    }
                }
                () = permit.evicted() => events(ServeEvent::Evicted { peer }),
            }
            drop(permit);
        });
    }
    while tasks.join_next().await.is_some() {}
}

/// Connects to `addr` from the local address `from` (tests that play several hosts
/// over loopback: `127.0.0.2`, `127.0.0.3`, … all reach a `127.0.0.1` listener on
/// Linux).
pub async fn connect_from(from: IpAddr, addr: SocketAddr) -> std::io::Result<TcpStream> {
    let socket = match addr {
        SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
        SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
    };
    socket.bind(SocketAddr::new(from, 0))?;
    socket.connect(addr).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn limits(total: usize, per: usize) -> ServeLimits {
        ServeLimits::new(total, Duration::from_secs(5)).with_per_address(per)
    }

    #[test]
    fn addresses_group_by_ipv4_and_ipv6_64() {
        assert_eq!(AddressKey::of(ip("10.0.0.1")), AddressKey::of(ip("::ffff:10.0.0.1")));
        assert_ne!(AddressKey::of(ip("10.0.0.1")), AddressKey::of(ip("10.0.0.2")));
        assert_eq!(
            AddressKey::of(ip("2001:db8::1")),
            AddressKey::of(ip("2001:db8::ffff:2"))
        );
        assert_ne!(AddressKey::of(ip("2001:db8::1")), AddressKey::of(ip("2001:db8:0:1::1")));
        // An IPv6 /64 starting with an IPv4 address's bytes is still another key.
        assert_ne!(AddressKey::of(ip("10.0.0.1")), AddressKey::of(ip("a00:1::")));
    }

    #[test]
    fn one_address_holds_at_most_its_share() {
        let l = ConnectionLimiter::new(limits(10, 3));
        let a = ip("192.0.2.1");
        let held: Vec<_> = (0..3).map(|_| l.admit(a).unwrap()).collect();
        assert_eq!(l.admit(a).unwrap_err(), Refusal::AddressFull { limit: 3 });
        // Another address is not affected.
        let b = l.admit(ip("192.0.2.2")).unwrap();
        assert_eq!((l.in_use(), l.in_use_by(a)), (4, 3));
        drop(held);
        assert_eq!(l.in_use(), 1);
        let again = l.admit(a).unwrap();
        drop((b, again));
        assert_eq!(l.in_use(), 0);
    }

    #[test]
    fn a_full_server_makes_room_for_a_less_busy_address() {
        let l = ConnectionLimiter::new(limits(4, 4));
        let (a, b, c) = (ip("192.0.2.1"), ip("192.0.2.2"), ip("192.0.2.3"));
        let flood: Vec<_> = (0..4).map(|_| l.admit(a).unwrap()).collect();
        // b holds nothing; a holds 4 > 0 + 1: a's oldest goes.
        let pb = l.admit(b).unwrap();
        assert!(flood[0].is_evicted() && !flood[1].is_evicted());
        assert_eq!((l.in_use_by(a), l.in_use_by(b), l.in_use()), (3, 1, 4));
        let pb2 = l.admit(b).unwrap();
        assert!(flood[1].is_evicted());
        // Now a holds 2 and b 2: b may not take from a (2 > 2 + 1 is false).
        assert_eq!(l.admit(b).unwrap_err(), Refusal::Full { limit: 4 });
        // c holds nothing: 2 > 0 + 1, so it takes a slot from a busiest address, the
        // one holding the oldest connection (a's third).
        let pc = l.admit(c).unwrap();
        assert!(flood[2].is_evicted() && !flood[3].is_evicted());
        assert_eq!((l.in_use_by(a), l.in_use_by(b), l.in_use_by(c)), (1, 2, 1));
        // Dropping an evicted permit does not free a second slot.
        drop(flood);
        assert_eq!(l.in_use(), 3);
        drop((pb, pb2, pc));
        assert_eq!(l.in_use(), 0);
    }

    #[test]
    fn limits_are_at_least_one_and_fit_the_descriptors() {
        let l = ServeLimits::new(0, Duration::from_secs(1))
            .with_per_address(0)
            .effective();
        assert_eq!((l.max_connections, l.max_per_address), (1, 1));
        let l = ServeLimits::new(5, Duration::from_secs(1))
            .with_per_address(50)
            .effective();
        assert_eq!(l.max_per_address, 5);
        let huge = ServeLimits::new(usize::MAX / 2, Duration::from_secs(1)).effective();
        if let Some(soft) = descriptor_limit() {
            assert!(huge.max_connections as u64 <= soft.saturating_sub(RESERVED_DESCRIPTORS).max(1));
        }
    }

    #[tokio::test]
    async fn eviction_resolves_the_permit_future() {
        let l = ConnectionLimiter::new(limits(2, 2));
        let q: Vec<_> = (0..2).map(|_| l.admit(ip("192.0.2.1")).unwrap()).collect();
        let _r = l.admit(ip("192.0.2.9")).unwrap();
        tokio::time::timeout(Duration::from_secs(1), q[0].evicted())
            .await
            .unwrap();
        assert!(!q[1].is_evicted());
        // With one connection per address, the busiest holds 1, not more than 0 + 1:
        // a full server refuses instead of evicting.
        let l = ConnectionLimiter::new(limits(1, 1));
        let _p = l.admit(ip("192.0.2.1")).unwrap();
        assert_eq!(l.admit(ip("192.0.2.2")).unwrap_err(), Refusal::Full { limit: 1 });
    }

    async fn echo_server(guard: Guard, sessions: Option<u64>) -> (SocketAddr, tokio::task::JoinHandle<()>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            serve(&listener, &guard, sessions, |mut s, _| async move {
                let mut b = [0u8; 1];
                // Echo one byte, then hold the connection until the peer closes.
                if s.read_exact(&mut b).await.is_ok() {
                    let _ = s.write_all(&b).await;
                    let _ = s.read(&mut b).await;
                }
            })
            .await
        });
        (addr, task)
    }

    async fn answered(from: &str, addr: SocketAddr) -> bool {
        let Ok(mut s) = connect_from(ip(from), addr).await else {
            return false;
        };
        let mut b = [0u8; 1];
        s.write_all(b"x").await.is_ok()
            && matches!(
                tokio::time::timeout(Duration::from_secs(2), s.read_exact(&mut b)).await,
                Ok(Ok(_))
            )
    }

    /// A flood of idle connections from one address: the address gets its share, the
    /// rest are closed at once, and another address is served.
    #[tokio::test]
    async fn an_idle_flood_from_one_address_does_not_keep_others_out() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s2 = seen.clone();
        let guard = Guard::new(limits(8, 4)).on_event(Arc::new(move |e| s2.lock().unwrap().push(e)));
        let (addr, task) = echo_server(guard.clone(), None).await;
        let mut idle = Vec::new();
        for _ in 0..40 {
            idle.push(connect_from(ip("127.0.0.2"), addr).await.unwrap());
        }
        assert!(answered("127.0.0.1", addr).await);
        assert_eq!(guard.limiter().in_use_by(ip("127.0.0.2")), 4);
        let refused = seen
            .lock()
            .unwrap()
            .iter()
            .filter(|e| {
                matches!(
                    e,
                    ServeEvent::Refused {
                        why: Refusal::AddressFull { .. },
                        ..
                    }
                )
            })
            .count();
        assert_eq!(refused, 36);
        task.abort();
    }

    /// Many addresses fill the server; a newcomer still gets in, at the expense of
    /// the busiest address.
    #[tokio::test]
    async fn a_flood_from_several_addresses_does_not_keep_a_newcomer_out() {
        let guard = Guard::new(limits(6, 3));
        let (addr, task) = echo_server(guard.clone(), None).await;
        let mut idle = Vec::new();
        for host in ["127.0.0.2", "127.0.0.3"] {
            for _ in 0..3 {
                idle.push(connect_from(ip(host), addr).await.unwrap());
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(guard.limiter().in_use(), 6);
        assert!(answered("127.0.0.1", addr).await);
        assert!(answered("127.0.0.4", addr).await);
        task.abort();
    }

    #[tokio::test]
    async fn idle_connections_are_dropped_at_the_deadline() {
        let seen = Arc::new(Mutex::new(0usize));
        let s2 = seen.clone();
        let guard = Guard::new(ServeLimits::new(1, Duration::from_millis(200)).with_per_address(1)).on_event(Arc::new(
            move |e| {
                if matches!(e, ServeEvent::DeadlinePassed { .. }) {
                    *s2.lock().unwrap() += 1;
                }
            },
        ));
        let (addr, task) = echo_server(guard.clone(), None).await;
        let mut idle = connect_from(ip("127.0.0.2"), addr).await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        // Full: another address is refused while the idle one holds the only slot…
        assert!(!answered("127.0.0.3", addr).await);
        // …until the deadline drops it.
        let mut b = [0u8; 1];
        let closed = tokio::time::timeout(Duration::from_secs(2), idle.read(&mut b)).await;
        assert!(matches!(closed, Ok(Ok(0)) | Ok(Err(_))), "{closed:?}");
        assert_eq!(*seen.lock().unwrap(), 1);
        assert!(answered("127.0.0.3", addr).await);
        task.abort();
    }

    #[tokio::test]
    async fn serve_stops_after_the_sessions_and_waits_for_them() {
        let guard = Guard::new(limits(4, 4));
        let (addr, task) = echo_server(guard, Some(2)).await;
        assert!(answered("127.0.0.1", addr).await);
        assert!(answered("127.0.0.1", addr).await);
        tokio::time::timeout(Duration::from_secs(2), task)
            .await
            .unwrap()
            .unwrap();
    }

    #[tokio::test]
    async fn refused_connections_can_be_answered() {
        let guard = Guard::new(limits(4, 1)).refuse_with(Arc::new(|mut s: TcpStream, why: Refusal| {
            Box::pin(async move {
                let _ = s.write_all(format!("{why}\n").as_bytes()).await;
            })
        }));
        let (addr, task) = echo_server(guard, None).await;
        let _held = connect_from(ip("127.0.0.2"), addr).await.unwrap();
        let mut second = connect_from(ip("127.0.0.2"), addr).await.unwrap();
        let mut text = String::new();
        tokio::time::timeout(Duration::from_secs(2), second.read_to_string(&mut text))
            .await
            .unwrap()
            .unwrap();
        assert!(text.contains("already holds 1 connections"), "{text}");
        task.abort();
    }
}
