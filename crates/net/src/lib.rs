//! tacit's transports. This crate holds no cryptography: it moves the bytes that the
//! sans-I/O protocol engines produce.
//!
//! [`FramedConn`] is a TCP connection carrying length-prefixed frames
//! (`[u32 big-endian length][payload]`, see `docs/wire.md`) with `TCP_NODELAY`, a
//! connect timeout, a per-read timeout and a maximum frame size that is enforced from
//! the frame header, before the payload is buffered.
//!
//! A listener and a client on loopback, one frame each way (this example runs as a
//! doctest):
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), tacit_net::Error> {
//! use tacit_net::{FramedConn, FramedListener, NetConfig};
//! let cfg = NetConfig::default();
//! let listener = FramedListener::bind("127.0.0.1:0", &cfg).await?;
//! let addr = listener.local_addr()?;
//! let server = tokio::spawn(async move {
//!     let mut conn = listener.accept().await?;
//!     let hello = conn.recv().await?;
//!     conn.send(&[b"echo: ", &hello[..]].concat()).await
//! });
//! let mut conn = FramedConn::connect(addr, &cfg).await?;
//! conn.send(b"hello").await?;
//! assert_eq!(conn.recv().await?, b"echo: hello");
//! server.await.expect("server task")?;
//! # Ok(()) }
//! ```
//!
//! Every tacit protocol runs over [`FramedConn`] after a [`greeting`] (which protocol,
//! which versions) and, by default, TLS 1.3 with pinned keys ([`tls`]).
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod channel;
pub mod greeting;
pub mod guard;
pub mod mdns;
pub mod memory;
pub mod records;
pub mod tls;

pub use greeting::{Greeting, Protocol};

use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, ToSocketAddrs};

/// Transport errors.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Connecting did not finish in time.
    #[error("connecting to {addr} timed out after {secs:.1} s")]
    ConnectTimeout {
        /// Where to.
        addr: String,
        /// The timeout.
        secs: f64,
    },
    /// The peer did not send within the read timeout.
    #[error("the peer sent nothing for {0:.1} s; giving up")]
    ReadTimeout(f64),
    /// The peer announced a frame over the maximum.
    #[error("the peer announced a {len}-byte message; the limit is {max} bytes")]
    FrameTooLarge {
        /// Announced length.
        len: usize,
        /// Maximum.
        max: usize,
    },
    /// The connection closed before a complete frame arrived.
    #[error("the peer closed the connection")]
    Closed,
    /// The peer's frame is not of the length the protocol step requires
    /// ([`FramedConn::exchange_spin_expecting`]).
    #[error("the peer sent a {len}-byte message where this step takes {expected} bytes")]
    UnexpectedLength {
        /// Announced length.
        len: usize,
        /// The length the step takes.
        expected: usize,
    },
    /// The peer did not take our data within the write timeout.
    #[error("the peer accepted nothing for {0:.1} s; giving up")]
    WriteTimeout(f64),
    /// The whole exchange ran past its deadline.
    #[error("the exchange did not finish within its {0:.1} s deadline")]
    Deadline(f64),
    /// The TLS handshake failed (wrong key, not TLS, …).
    #[error("TLS handshake: {0}")]
    Tls(String),
    /// The peer's greeting ([`greeting`]) shows it is not what this connection
    /// expects: another tacit protocol or version, TLS against plain TCP or the
    /// reverse, or not tacit at all. The message names both sides in one line.
    #[error("{0}")]
    Greeting(String),
    /// Any other socket error.
    #[error("network error: {0}")]
    Io(#[from] std::io::Error),
}

/// Transport settings.
#[derive(Debug, Clone, Copy)]
pub struct NetConfig {
    /// Maximum frame payload in bytes.
    pub max_frame: usize,
    /// Connect timeout (and TLS handshake timeout).
    pub connect_timeout: Duration,
    /// Timeout for each read of a frame (header and payload) and each write.
    pub read_timeout: Duration,
    /// Deadline for the whole connection, counted from connect or accept: a peer
    /// that trickles one byte per read timeout is still cut off here. `None`: no
    /// overall deadline.
    pub deadline: Option<Duration>,
    /// The greeting ([`greeting`]) connections open with: sent and checked before
    /// anything else. `None`: no greeting (raw frames, for tests of the framing
    /// itself); every tacit protocol sets one.
    pub greeting: Option<Greeting>,
}

impl Default for NetConfig {
    fn default() -> Self {
        NetConfig {
            max_frame: tacit_wire::DEFAULT_MAX_FRAME,
            connect_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(30),
            deadline: None,
            greeting: None,
        }
    }
}

impl NetConfig {
    /// The same with a larger frame limit (never smaller than the current one).
    pub fn with_max_frame_at_least(mut self, bytes: usize) -> Self {
        self.max_frame = self.max_frame.max(bytes);
        self
    }

    /// The same with an overall deadline per connection.
    pub fn with_deadline(mut self, d: Duration) -> Self {
        self.deadline = Some(d);
        self
    }

    /// The same with another per-message timeout.
    pub fn with_read_timeout(mut self, d: Duration) -> Self {
        self.read_timeout = d;
        self
    }

    /// The same, opening connections with the greeting of version 1 of `protocol`.
    pub fn speaking(mut self, protocol: Protocol) -> Self {
        self.greeting = Some(Greeting::v1(protocol));
        self
    }
}

/// A byte stream a [`FramedConn`] can run over: plain TCP or TLS.
pub trait Stream: AsyncRead + AsyncWrite + Unpin + Send + Sync {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send + Sync> Stream for T {}

/// What rustls reads a TLS connection's bytes through: the socket behind a 64 KiB
/// buffer. rustls asks for at most 4 KiB per read, so without it a 16 KiB record took
/// four system calls; with it, one read takes whatever the socket holds (a GMW layer
/// message of any size is one system call, as on plain TCP) and rustls's reads copy
/// from memory. Writes go straight to the socket.
type TlsIo = tokio::io::BufReader<FirstBytes<TcpStream>>;

/// The TLS connection's socket, buffered for reading ([`TlsIo`]).
fn tls_io(tcp: TcpStream) -> TlsIo {
    tokio::io::BufReader::with_capacity(64 * 1024, FirstBytes::new(tcp))
}

/// A socket that keeps a copy of the first [`greeting::LEN`] bytes read from it: when
/// a TLS handshake fails, they tell whether the peer answered with a plain tacit
/// greeting (a plain server) or something else ([`name_plain_answer`]). One
/// comparison per read afterwards.
#[derive(Debug)]
pub struct FirstBytes<S> {
    inner: S,
    seen: [u8; greeting::LEN],
    n: usize,
}

impl<S> FirstBytes<S> {
    /// Wraps `inner`.
    pub fn new(inner: S) -> Self {
        FirstBytes {
            inner,
            seen: [0; greeting::LEN],
            n: 0,
        }
    }

    /// The first bytes read so far (at most [`greeting::LEN`]).
    pub fn seen(&self) -> &[u8] {
        &self.seen[..self.n]
    }

    /// The stream underneath.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The stream underneath, unwrapped.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

/// The one line for a TLS client (speaking `ours`) whose handshake with `peer` failed
/// on the first bytes `seen`: a plain tacit server's greeting names it; bytes that are
/// neither TLS nor tacit say so. `None` when the bytes explain nothing (a TLS failure
/// proper).
pub fn name_plain_answer(peer: &str, ours: Protocol, seen: &[u8]) -> Option<String> {
    use greeting::Seen;
    match greeting::classify(seen) {
        // 12 bytes in the clear are not authenticated: an on-path attacker can send
        // them. A TLS listener never answers a TLS client in the clear, and a plain
        // server's greeting is flagged acceptor and not "TLS required"; anything else
        // is named as suspect, and no line advises dropping TLS (review rev28).
        Seen::Greeting(r) if r.flags & greeting::FLAG_TLS_REQUIRED != 0 || r.flags & greeting::FLAG_ACCEPTOR == 0 => {
            Some(format!(
                "{peer} answered the TLS handshake with a tacit greeting in the clear that no tacit server sends to a TLS client ({}); it may be an attacker on the path: keep TLS",
                greeting::show(seen)
            ))
        }
        Seen::Greeting(r) if r.protocol == ours.id() => Some(format!(
            "{peer} answered in the clear as a tacit {} on plain TCP and this connection is TLS (the answer is not authenticated); \
             if you expect that server to run plain TCP, connect with --plain-tcp; otherwise serve it with TLS",
            r.kind()
        )),
        Seen::Greeting(r) => Some(format!("{peer} is a tacit {} (on plain TCP), not a {ours}", r.kind())),
        Seen::Format(f) => Some(format!(
            "{peer} speaks tacit greeting format {f} on plain TCP and this tacit reads format {} over TLS; update the older one",
            greeting::FORMAT
        )),
        Seen::Other if !seen.is_empty() => Some(format!(
            "{peer} does not speak TLS and is not a tacit server (it sent {})",
            greeting::show(seen)
        )),
        _ => None,
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for FirstBytes<S> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
        if self.n < greeting::LEN && matches!(r, std::task::Poll::Ready(Ok(()))) {
            let got = &buf.filled()[before..];
            let k = got.len().min(greeting::LEN - self.n);
            let n = self.n;
            self.seen[n..n + k].copy_from_slice(&got[..k]);
            self.n += k;
        }
        r
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for FirstBytes<S> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.inner).poll_write(cx, buf)
    }
    fn poll_write_vectored(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }
    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Where a connection stands with its greeting.
#[derive(Debug, Clone)]
enum Greet {
    /// No greeting on this connection.
    Off,
    /// Ours is still to be sent and theirs checked (before the first frame).
    Pending(Greeting),
    /// Ours is sent; theirs is checked before the first frame is received
    /// ([`FramedConn::connect_early`]).
    Sent(Greeting),
    /// Checked: the protocol version both run.
    Done(u16),
    /// The peer's greeting was refused, for this reason.
    Failed(String),
}

/// The byte stream under a [`FramedConn`].
enum Io {
    Tcp(TcpStream),
    Tls(Box<tokio_rustls::TlsStream<TlsIo>>),
    /// A TLS session whose records are sealed and opened here
    /// ([`FramedConn::own_record_layer`]).
    Own(Box<records::OwnRecords>),
    /// Between taking the TCP stream for a TLS handshake and the handshake's end.
    Gone,
}

impl Io {
    fn stream(&mut self) -> std::io::Result<&mut dyn Stream> {
        match self {
            Io::Tcp(t) => Ok(t),
            Io::Tls(s) => Ok(s.as_mut()),
            Io::Own(s) => Ok(s.as_mut()),
            Io::Gone => Err(std::io::Error::new(
                std::io::ErrorKind::NotConnected,
                "the connection failed its TLS handshake",
            )),
        }
    }
}

/// A connection (plain TCP or TLS) that carries frames.
pub struct FramedConn {
    stream: Io,
    peer: Option<SocketAddr>,
    cfg: NetConfig,
    sent: u64,
    received: u64,
    started: Instant,
    binding: Option<[u8; 32]>,
    peer_certificate: Option<Vec<u8>>,
    /// Whether [`Self::recv`] skips the peer's keep-alives ([`Self::accept_keepalives`]).
    keepalives: bool,
    /// Keep-alives skipped so far.
    keepalives_seen: u64,
    greet: Greet,
    /// Whether this side accepted the connection (it words the greeting's errors).
    acceptor: bool,
    /// The peer as errors name it: the address connected to, as given, or the
    /// accepted peer's address.
    label: String,
}

/// The keep-alive frame's payload (`01 0003`, tag [`tacit_wire::tags::KEEPALIVE`]): a
/// side that computes for long sends it every [`KEEPALIVE_PERIOD`] so that the side
/// waiting for its message knows work is under way ([`FramedConn::working`]). A
/// connection that accepts keep-alives ([`FramedConn::accept_keepalives`]) skips them
/// in [`FramedConn::recv`], and each restarts its per-message timeout; the
/// connection's overall deadline still runs, so a peer that only sends keep-alives is
/// cut off there. See `docs/wire.md`, "Keep-alives".
pub const KEEPALIVE: [u8; 3] = [tacit_wire::WIRE_VERSION, 0x00, 0x03];

/// How often a computing side sends a keep-alive: well below the shortest
/// per-message timeout tacit's commands accept by default (60 s), and small enough
/// that a `--timeout` of 10 s still sees two per timeout.
pub const KEEPALIVE_PERIOD: Duration = Duration::from_secs(4);

impl core::fmt::Debug for FramedConn {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("FramedConn")
            .field("peer", &self.peer)
            .field("tls", &self.binding.is_some())
            .field("sent", &self.sent)
            .field("received", &self.received)
            .finish()
    }
}

impl FramedConn {
    /// Connects with the configured timeout, then sends our greeting and checks the
    /// peer's ([`greeting`]; when `cfg.greeting` is set).
    pub async fn connect(addr: impl ToSocketAddrs + std::fmt::Display, cfg: &NetConfig) -> Result<Self, Error> {
        let mut conn = Self::connect_tcp(addr, cfg).await?;
        conn.greet().await?;
        Ok(conn)
    }

    /// [`Self::connect`] for a client whose first message is ready at once and whose
    /// latency counts (a 0-RTT handshake, a PSI query): sends our greeting and returns
    /// without waiting for the server's, which is checked before the first frame is
    /// received. The first message thus leaves in the same flight as the greeting; a
    /// wrong server is still named one round trip later, by the first receive.
    pub async fn connect_early(addr: impl ToSocketAddrs + std::fmt::Display, cfg: &NetConfig) -> Result<Self, Error> {
        let mut conn = Self::connect_tcp(addr, cfg).await?;
        conn.send_greeting().await?;
        Ok(conn)
    }

    /// The TCP connection alone (no greeting yet).
    async fn connect_tcp(addr: impl ToSocketAddrs + std::fmt::Display, cfg: &NetConfig) -> Result<Self, Error> {
        let name = addr.to_string();
        let stream = tokio::time::timeout(cfg.connect_timeout, TcpStream::connect(addr))
            .await
            .map_err(|_| Error::ConnectTimeout {
                addr: name.clone(),
                secs: cfg.connect_timeout.as_secs_f64(),
            })??;
        let mut conn = Self::from_stream(stream, cfg)?;
        conn.acceptor = false;
        conn.label = name;
        Ok(conn)
    }

    /// Wraps an accepted stream. Its greeting (when `cfg.greeting` is set) is
    /// exchanged inside TLS by [`Self::accept_tls`], else before the first frame sent
    /// or received, or by [`Self::greet`].
    pub fn from_stream(stream: TcpStream, cfg: &NetConfig) -> Result<Self, Error> {
        stream.set_nodelay(true)?;
        let peer = stream.peer_addr().ok();
        Ok(FramedConn {
            stream: Io::Tcp(stream),
            peer,
            cfg: *cfg,
            sent: 0,
            received: 0,
            started: Instant::now(),
            binding: None,
            peer_certificate: None,
            keepalives: false,
            keepalives_seen: 0,
            greet: match cfg.greeting {
                Some(g) => Greet::Pending(g),
                None => Greet::Off,
            },
            acceptor: true,
            label: peer.map_or_else(|| "the peer".into(), |p| format!("the peer {p}")),
        })
    }

    /// The same connection opening with `greeting` instead of its configuration's
    /// (before its first frame; a server whose listener another layer bound sets its
    /// protocol here).
    pub fn speaking(mut self, protocol: Protocol) -> Self {
        if matches!(self.greet, Greet::Off | Greet::Pending(_)) {
            self.greet = Greet::Pending(Greeting::v1(protocol));
            self.cfg.greeting = Some(Greeting::v1(protocol));
        }
        self
    }

    /// The version of the protocol both sides run, once the greetings were exchanged.
    pub fn protocol_version(&self) -> Option<u16> {
        match self.greet {
            Greet::Done(v) => Some(v),
            _ => None,
        }
    }

    /// Sends our greeting and checks the peer's, if that is still to be done (every
    /// send and receive does it first; a server that computes before its first frame
    /// calls this at once so that the client is not kept waiting for it).
    ///
    /// Bounded: exactly [`greeting::LEN`] bytes are read, never more, and the whole
    /// greeting within the connect timeout (and the connection's deadline). The
    /// peer's first bytes are judged as they come: one byte that cannot begin a
    /// greeting is enough to name what the peer is.
    pub async fn greet(&mut self) -> Result<(), Error> {
        self.send_greeting().await?;
        let ours = match &self.greet {
            Greet::Off | Greet::Done(_) => return Ok(()),
            Greet::Failed(why) => return Err(Error::Greeting(why.clone())),
            Greet::Pending(g) | Greet::Sent(g) => *g,
        };
        match self.check_greeting(&ours).await {
            Ok(v) => {
                self.greet = Greet::Done(v);
                Ok(())
            }
            Err(e) => {
                self.greet = Greet::Failed(e.to_string());
                Err(e)
            }
        }
    }

    /// Sends our greeting if it is still to be sent.
    async fn send_greeting(&mut self) -> Result<(), Error> {
        let Greet::Pending(ours) = self.greet else {
            return Ok(());
        };
        let flags = if self.acceptor { greeting::FLAG_ACCEPTOR } else { 0 };
        let (t, on_timeout) = self.next_timeout(Error::WriteTimeout)?;
        let stream = self.stream.stream()?;
        let hello = ours.encode(flags);
        let write = async {
            stream.write_all(&hello).await?;
            stream.flush().await
        };
        match tokio::time::timeout(t, write).await {
            Err(_) => return Err(on_timeout),
            // The peer may have closed already: what it sent says why.
            Ok(Err(e)) if is_reset(&e) => {}
            Ok(r) => r?,
        }
        self.greet = Greet::Sent(ours);
        Ok(())
    }

    /// Reads and checks the peer's greeting (ours is sent).
    async fn check_greeting(&mut self, ours: &Greeting) -> Result<u16, Error> {
        let bound = self.cfg.connect_timeout.min(self.cfg.read_timeout);
        let left = self.remaining()?;
        let t = bound.min(left);
        let deadline = self.cfg.deadline.filter(|_| left < bound);
        let tls = self.binding.is_some();
        let stream = self.stream.stream()?;
        let exchange = async {
            let mut got = [0u8; greeting::LEN];
            let mut n = 0;
            loop {
                if n > 0 && !matches!(greeting::classify(&got[..n]), greeting::Seen::Partial) {
                    break;
                }
                if n == greeting::LEN {
                    break;
                }
                match stream.read(&mut got[n..]).await {
                    Ok(0) => break,
                    Ok(k) => n += k,
                    // A reset after a few bytes: judge what came.
                    Err(_) if n > 0 => break,
                    Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => break,
                    Err(e) => return Err(e),
                }
            }
            Ok::<_, std::io::Error>((got, n))
        };
        let (got, n) = match tokio::time::timeout(t, exchange).await {
            // The connection's deadline came first: it says so, as every read does.
            Err(_) if deadline.is_some() => {
                return Err(Error::Deadline(deadline.unwrap_or_default().as_secs_f64()));
            }
            Err(_) => {
                return Err(Error::Greeting(if self.acceptor {
                    format!(
                        "{} sent no tacit greeting within {:.1} s (is it a client of a tacit {}?)",
                        self.label,
                        t.as_secs_f64(),
                        ours.protocol
                    )
                } else {
                    format!(
                        "{} sent no tacit greeting within {:.1} s (is it a tacit {}?)",
                        self.label,
                        t.as_secs_f64(),
                        ours.protocol
                    )
                }));
            }
            Ok(Err(e)) if is_reset(&e) => ([0u8; greeting::LEN], 0),
            Ok(r) => r?,
        };
        let got = &got[..n];
        match greeting::classify(got) {
            // The direction first: a server's greeting carries the acceptor flag and a
            // client's carries neither listener flag, so a reflected greeting (our
            // own, echoed) or two clients are refused, and a client cannot make a
            // server word it as a TLS listener (review rev28).
            greeting::Seen::Greeting(theirs)
                if (theirs.flags & greeting::FLAG_ACCEPTOR != 0) == self.acceptor
                    || (self.acceptor && theirs.flags & greeting::FLAG_TLS_REQUIRED != 0) =>
            {
                Err(Error::Greeting(if self.acceptor {
                    format!(
                        "{} sent a server's greeting where a client's belongs (not a client of a tacit {})",
                        self.label, ours.protocol
                    )
                } else {
                    format!(
                        "{} sent a client's greeting where the server's belongs (a reflection of ours, or not a tacit {})",
                        self.label, ours.protocol
                    )
                }))
            }
            greeting::Seen::Greeting(theirs) => ours
                .negotiate(&theirs)
                .map_err(|m| Error::Greeting(self.mismatch(ours, m, tls))),
            seen => Err(Error::Greeting(self.unreadable(ours, &seen, got, tls))),
        }
    }

    /// The one line for two greetings that do not go together.
    fn mismatch(&self, ours: &Greeting, m: greeting::Mismatch, tls: bool) -> String {
        use greeting::Mismatch;
        let peer = &self.label;
        let range = |(a, b): (u16, u16)| if a == b { format!("{a}") } else { format!("{a}–{b}") };
        match (m, self.acceptor) {
            (Mismatch::Protocol { theirs, ours }, false) => format!("{peer} is a tacit {theirs}, not a {ours}"),
            (Mismatch::Protocol { theirs, ours }, true) => {
                format!("{peer} is a client of a tacit {theirs}, not of a {ours}")
            }
            (Mismatch::Version { protocol, theirs, ours }, false) => format!(
                "{peer} is a tacit {protocol} that speaks version {} of its protocol and this tacit speaks {}; update the older one",
                range(theirs),
                range(ours)
            ),
            (Mismatch::Version { protocol, theirs, ours }, true) => format!(
                "{peer} speaks version {} of the {protocol} protocol and this tacit speaks {}; update the older one",
                range(theirs),
                range(ours)
            ),
            (Mismatch::TlsRequired { theirs }, _) if !tls => format!(
                "{peer} is a tacit {theirs} that requires TLS and this connection is plain TCP; connect with TLS (--pin or --tofu, without --plain-tcp)"
            ),
            (Mismatch::TlsRequired { theirs }, _) => {
                format!(
                    "{peer} is a tacit {theirs} that refused this connection ({})",
                    ours.protocol
                )
            }
        }
    }

    /// The one line for a peer whose first bytes are no (readable) greeting.
    fn unreadable(&self, ours: &Greeting, seen: &greeting::Seen, got: &[u8], tls: bool) -> String {
        use greeting::Seen;
        let peer = &self.label;
        let what = if self.acceptor { "client" } else { "server" };
        match seen {
            Seen::Tls if self.acceptor => format!(
                "{peer} speaks TLS and this {} runs plain TCP (serve with TLS, or connect without it)",
                ours.protocol
            ),
            Seen::Tls => format!(
                "{peer} speaks TLS and this connection is plain TCP; connect with TLS (--pin or --tofu, without --plain-tcp)"
            ),
            Seen::Format(f) => format!(
                "{peer} speaks tacit greeting format {f} and this tacit reads format {}; update the older one",
                greeting::FORMAT
            ),
            Seen::Partial if got.is_empty() && self.acceptor => {
                format!("{peer} closed the connection without a tacit greeting")
            }
            Seen::Partial if got.is_empty() => format!(
                "{peer} closed the connection without a tacit greeting (a server that is busy, not a tacit {}, or a tacit older than the greeting)",
                ours.protocol
            ),
            Seen::Partial => format!(
                "{peer} closed the connection in the middle of its greeting (it sent {})",
                greeting::show(got)
            ),
            Seen::Greeting(_) | Seen::Other => {
                let over = if tls { " (inside TLS)" } else { "" };
                format!("{peer} is not a tacit {what} (it sent {}{over})", greeting::show(got))
            }
        }
    }

    /// From now on [`Self::recv`] skips the peer's keep-alives ([`KEEPALIVE`]), each
    /// restarting the per-message timeout, up to the connection's overall deadline.
    /// Without a deadline ([`NetConfig::deadline`] `None`) keep-alives are not
    /// accepted (a peer could hold the connection forever) and this returns `false`.
    pub fn accept_keepalives(&mut self) -> bool {
        self.keepalives = self.cfg.deadline.is_some();
        self.keepalives
    }

    /// Keep-alives skipped by [`Self::recv`] so far.
    pub fn keepalives_seen(&self) -> u64 {
        self.keepalives_seen
    }

    /// Sends one keep-alive frame ([`KEEPALIVE`]).
    pub async fn send_keepalive(&mut self) -> Result<(), Error> {
        self.send(&KEEPALIVE).await
    }

    /// Runs `work` (a computation on another thread, say) and sends a keep-alive
    /// every `period` until it is done, so that the peer waiting for our next message
    /// does not give up ([`KEEPALIVE`]). Only for peers that accept keep-alives.
    /// Keep-alives are best effort: if one cannot be sent (the peer left), the work
    /// still finishes and the next real send or receive reports the connection's
    /// state.
    pub async fn working<T>(&mut self, period: Duration, work: impl std::future::Future<Output = T>) -> T {
        tokio::pin!(work);
        let period = period.max(Duration::from_millis(10));
        loop {
            tokio::select! {
                r = &mut work => return r,
                () = tokio::time::sleep(period) => {
                    if self.send_keepalive().await.is_err() {
                        return work.await;
                    }
                }
            }
        }
    }

    /// Connects and runs a TLS handshake as the client (see [`tls`] for the
    /// configurations: pinned keys, trust on first use, mutual TLS).
    pub async fn connect_tls(
        addr: impl ToSocketAddrs + std::fmt::Display,
        cfg: &NetConfig,
        client: std::sync::Arc<rustls::ClientConfig>,
        server_name: &str,
    ) -> Result<Self, Error> {
        let mut conn = Self::connect_tcp(addr, cfg).await?;
        let name = tls::server_name(server_name).map_err(|e| Error::Tls(e.to_string()))?;
        let tcp = tls_io(conn.take_tcp()?);
        let handshake = tls::TlsConnector::from(client).connect(name, tcp).into_fallible();
        let t = conn.cfg.connect_timeout.min(conn.remaining()?);
        let stream = match tokio::time::timeout(t, handshake).await {
            Err(_) => return Err(Error::Tls(format!("no handshake within {:.1} s", t.as_secs_f64()))),
            Ok(Err((e, io))) => return Err(conn.failed_handshake(e, io.get_ref().seen())),
            Ok(Ok(s)) => s,
        };
        let (_, session) = stream.get_ref();
        conn.binding = Some(tls::channel_binding(&**session).map_err(|e| Error::Tls(e.to_string()))?);
        conn.peer_certificate = session.peer_certificates().and_then(|c| c.first()).map(|c| c.to_vec());
        conn.stream = Io::Tls(Box::new(tokio_rustls::TlsStream::Client(stream)));
        conn.greet().await?;
        Ok(conn)
    }

    /// The error of a failed client handshake: named from the server's first bytes
    /// when they were a plain tacit greeting (a plain server) or not TLS at all.
    fn failed_handshake(&self, e: std::io::Error, seen: &[u8]) -> Error {
        match self
            .cfg
            .greeting
            .and_then(|ours| name_plain_answer(&self.label, ours.protocol, seen))
        {
            Some(line) => Error::Greeting(line),
            None => Error::Tls(e.to_string()),
        }
    }

    /// Runs a TLS handshake as the server on an accepted plain connection.
    ///
    /// With a greeting configured, a plain tacit client (its first bytes are a
    /// greeting) is answered in the clear with our greeting flagged "TLS required"
    /// and refused, so that it can name what it reached; after the handshake the
    /// greetings are exchanged inside TLS.
    pub async fn accept_tls(mut self, server: std::sync::Arc<rustls::ServerConfig>) -> Result<Self, Error> {
        if let Some(ours) = self.cfg.greeting {
            refuse_plain_client(&mut self, &ours).await?;
        }
        let tcp = tls_io(self.take_tcp()?);
        let handshake = tls::TlsAcceptor::from(server).accept(tcp);
        let stream = self.timed_handshake(handshake).await?;
        let (_, session) = stream.get_ref();
        self.binding = Some(tls::channel_binding(&**session).map_err(|e| Error::Tls(e.to_string()))?);
        self.peer_certificate = session.peer_certificates().and_then(|c| c.first()).map(|c| c.to_vec());
        self.stream = Io::Tls(Box::new(tokio_rustls::TlsStream::Server(stream)));
        self.greet().await?;
        Ok(self)
    }

    /// Switches a TLS connection to tacit's own record layer ([`records`]): the same
    /// TLS 1.3 records on the wire, sealed and opened on the traffic secrets that
    /// rustls gives up after the handshake (the interface kTLS uses), for phases where
    /// a record's path through rustls is a measurable part of each round trip (GMW's
    /// online phase). Both peers call it at the same point of their protocol, one with
    /// `initiator` true. On plain TCP it does nothing and returns false.
    ///
    /// The switch is a barrier, so that no byte of the peer's is in rustls's buffers
    /// when its state is taken: the initiator sends a switch frame through rustls, the
    /// responder answers through rustls and switches, the initiator switches on the
    /// answer and sends a last frame through the new layer, which the responder reads
    /// before either side sends anything else. Any other frame in its place is an
    /// error, and the connection must be dropped.
    pub async fn own_record_layer(&mut self, initiator: bool) -> Result<bool, Error> {
        const SWITCH: &[u8] = b"tacit: own TLS records";
        const AGREED: &[u8] = b"tacit: own TLS records agreed";
        const GO: &[u8] = b"tacit: own TLS records go";
        let unexpected = || Error::Tls("the peer did not switch to tacit's TLS record layer".into());
        if !matches!(self.stream, Io::Tls(_)) {
            return Ok(false);
        }
        if initiator {
            self.send(SWITCH).await?;
            if self.recv().await? != AGREED {
                return Err(unexpected());
            }
            self.take_tls_records()?;
            self.send(GO).await?;
        } else {
            if self.recv().await? != SWITCH {
                return Err(unexpected());
            }
            self.send(AGREED).await?;
            self.take_tls_records()?;
            if self.recv().await? != GO {
                return Err(unexpected());
            }
        }
        Ok(true)
    }

    /// Takes the TLS session's state out of rustls ([`Self::own_record_layer`]).
    fn take_tls_records(&mut self) -> Result<(), Error> {
        let Io::Tls(s) = std::mem::replace(&mut self.stream, Io::Gone) else {
            return Err(Error::Tls("the connection does not run TLS".into()));
        };
        let fail = |e: rustls::Error| Error::Tls(format!("cannot take the TLS session over: {e}"));
        let (io, secrets) = match *s {
            tokio_rustls::TlsStream::Client(c) => {
                let (io, mut conn) = c.into_inner();
                no_plaintext_left(conn.reader())?;
                (io, conn.dangerous_extract_secrets().map_err(fail)?)
            }
            tokio_rustls::TlsStream::Server(c) => {
                let (io, mut conn) = c.into_inner();
                no_plaintext_left(conn.reader())?;
                (io, conn.dangerous_extract_secrets().map_err(fail)?)
            }
        };
        // Socket bytes read ahead of rustls are records of the new layer.
        let early = io.buffer().to_vec();
        let own = records::OwnRecords::new(io.into_inner().into_inner(), secrets, &early)
            .map_err(|e| Error::Tls(e.to_string()))?;
        self.stream = Io::Own(Box::new(own));
        Ok(())
    }

    fn take_tcp(&mut self) -> Result<TcpStream, Error> {
        match std::mem::replace(&mut self.stream, Io::Gone) {
            Io::Tcp(t) => Ok(t),
            other => {
                self.stream = other;
                Err(Error::Tls("the connection already runs TLS".into()))
            }
        }
    }

    async fn timed_handshake<S>(&self, hs: impl std::future::Future<Output = std::io::Result<S>>) -> Result<S, Error> {
        let t = self.cfg.connect_timeout.min(self.remaining()?);
        match tokio::time::timeout(t, hs).await {
            Err(_) => Err(Error::Tls(format!("no handshake within {:.1} s", t.as_secs_f64()))),
            Ok(Err(e)) => Err(Error::Tls(e.to_string())),
            Ok(Ok(s)) => Ok(s),
        }
    }

    /// The peer's address.
    pub fn peer_addr(&self) -> Result<SocketAddr, Error> {
        self.peer
            .ok_or_else(|| Error::Io(std::io::Error::new(std::io::ErrorKind::NotConnected, "no peer address")))
    }

    /// The TLS channel binding (an RFC 5705 / RFC 8446 §7.5 exporter value, label
    /// [`tls::CHANNEL_BINDING_LABEL`]), equal on both ends of one TLS session and
    /// different on any other; `None` on plain TCP. Protocols put it in their
    /// transcripts so that their messages cannot be relayed into another session.
    pub fn channel_binding(&self) -> Option<&[u8; 32]> {
        self.binding.as_ref()
    }

    /// The peer's end-entity certificate (DER), on TLS connections where it sent one.
    pub fn peer_certificate(&self) -> Option<&[u8]> {
        self.peer_certificate.as_deref()
    }

    /// Time left before the connection's deadline (the per-message timeout when
    /// there is none).
    fn remaining(&self) -> Result<Duration, Error> {
        match self.cfg.deadline {
            None => Ok(Duration::MAX),
            Some(d) => d
                .checked_sub(self.started.elapsed())
                .filter(|r| !r.is_zero())
                .ok_or(Error::Deadline(d.as_secs_f64())),
        }
    }

    /// The timeout of the next read or write and the error it raises.
    fn next_timeout(&self, timeout: fn(f64) -> Error) -> Result<(Duration, Error), Error> {
        let left = self.remaining()?;
        let t = self.cfg.read_timeout;
        Ok(if left < t {
            (left, Error::Deadline(self.cfg.deadline.unwrap_or(t).as_secs_f64()))
        } else {
            (t, timeout(t.as_secs_f64()))
        })
    }

    /// Sends one frame (one write, so a frame is never split across two TLS records
    /// more than it must be).
    pub async fn send(&mut self, payload: &[u8]) -> Result<(), Error> {
        if !matches!(self.greet, Greet::Off | Greet::Done(_) | Greet::Sent(_)) {
            self.greet().await?;
        }
        if payload.len() > self.cfg.max_frame {
            return Err(Error::FrameTooLarge {
                len: payload.len(),
                max: self.cfg.max_frame,
            });
        }
        let (t, on_timeout) = self.next_timeout(Error::WriteTimeout)?;
        let header = (payload.len() as u32).to_be_bytes();
        let stream = self.stream.stream()?;
        let write = async {
            // A small frame goes out in one write: with TCP_NODELAY, two writes would
            // send the 4-byte header in a packet of its own and wake the peer twice.
            if payload.len() <= 16 * 1024 {
                let mut one = Vec::with_capacity(4 + payload.len());
                one.extend_from_slice(&header);
                one.extend_from_slice(payload);
                stream.write_all(&one).await?;
            } else {
                stream.write_all(&header).await?;
                stream.write_all(payload).await?;
            }
            stream.flush().await
        };
        match tokio::time::timeout(t, write).await {
            Err(_) => return Err(on_timeout),
            Ok(r) => r?,
        }
        self.sent += 4 + payload.len() as u64;
        Ok(())
    }

    /// Receives one frame, refusing frames over the maximum before reading them. On a
    /// connection that accepts keep-alives ([`Self::accept_keepalives`]) a keep-alive
    /// frame is skipped and the next frame read under a fresh per-message timeout
    /// (the overall deadline still counts).
    pub async fn recv(&mut self) -> Result<Vec<u8>, Error> {
        loop {
            let frame = self.recv_frame().await?;
            if self.keepalives && frame[..] == KEEPALIVE[..] {
                self.keepalives_seen += 1;
                continue;
            }
            return Ok(frame);
        }
    }

    async fn recv_frame(&mut self) -> Result<Vec<u8>, Error> {
        if !self.greeted() {
            self.greet().await?;
        }
        let mut header = [0u8; 4];
        self.read_exact_timed(&mut header).await?;
        let len = u32::from_be_bytes(header) as usize;
        if len > self.cfg.max_frame {
            return Err(Error::FrameTooLarge {
                len,
                max: self.cfg.max_frame,
            });
        }
        let mut payload = vec![0u8; len];
        self.read_exact_timed(&mut payload).await?;
        self.received += 4 + len as u64;
        Ok(payload)
    }

    /// Sends one frame and receives one at the same time (full duplex), so that two
    /// peers that both send before they read never block each other, however large
    /// the frames. Small frames go out in one write (header and payload together).
    pub async fn exchange(&mut self, payload: &[u8]) -> Result<Vec<u8>, Error> {
        if !self.greeted() {
            self.greet().await?;
        }
        if payload.len() > self.cfg.max_frame {
            return Err(Error::FrameTooLarge {
                len: payload.len(),
                max: self.cfg.max_frame,
            });
        }
        let max = self.cfg.max_frame;
        let (t, _) = self.next_timeout(Error::ReadTimeout)?;
        let (mut rd, mut wr) = tokio::io::split(self.stream.stream()?);
        let send = async {
            let header = (payload.len() as u32).to_be_bytes();
            if payload.len() <= 16 * 1024 {
                let mut one = Vec::with_capacity(4 + payload.len());
                one.extend_from_slice(&header);
                one.extend_from_slice(payload);
                wr.write_all(&one).await?;
            } else {
                wr.write_all(&header).await?;
                wr.write_all(payload).await?;
            }
            wr.flush().await?;
            Ok::<(), Error>(())
        };
        let recv = async {
            let mut header = [0u8; 4];
            read_exact_timed(&mut rd, &mut header, t).await?;
            let len = u32::from_be_bytes(header) as usize;
            if len > max {
                return Err(Error::FrameTooLarge { len, max });
            }
            let mut buf = vec![0u8; len];
            read_exact_timed(&mut rd, &mut buf, t).await?;
            Ok(buf)
        };
        let ((), got) = tokio::try_join!(send, recv)?;
        self.sent += 4 + payload.len() as u64;
        self.received += 4 + got.len() as u64;
        Ok(got)
    }

    /// [`Self::exchange`] for latency-bound protocols, where both peers compute a small
    /// message, swap it and go on at once (a GMW AND layer, say): on a plain TCP
    /// connection it tries the socket without parking (`try_write`/`try_read`,
    /// yielding to the runtime between tries) for up to `spin` after the last byte
    /// moved, and only then waits on the reactor. A wake-up through the reactor costs
    /// a scheduler round trip on each side (tens of µs on a virtual machine); this
    /// costs a system call per try and at most `spin` of one core per message while
    /// the peer is slow. `spin` zero is [`Self::exchange`].
    ///
    /// On a TLS connection the same polling drives the TLS stream itself
    /// ([`Self::exchange_spin`] polls its `poll_write`/`poll_read` with a waker that
    /// does nothing, yielding between tries, and parks with the task's own waker
    /// after `spin`): rustls decrypts what the socket holds and encrypts what we
    /// write, so polling TLS costs the same system calls as polling TCP plus the
    /// record cryptography.
    ///
    /// Same frames, bounds, timeouts and byte counts as [`Self::exchange`]; deadlock
    /// free for frames of any size because writing and reading interleave.
    pub async fn exchange_spin(&mut self, payload: &[u8], spin: Duration) -> Result<Vec<u8>, Error> {
        if spin.is_zero() {
            return self.exchange(payload).await;
        }
        let got = self.spin_any(Some(payload), true, None, spin).await?;
        Ok(got.unwrap_or_default())
    }

    /// [`Self::exchange_spin`] for a step whose reply has a length both sides know
    /// (`reply_len` bytes; GMW's layer messages, say): the frame header and the payload
    /// are read with one system call where they arrive together, and a frame of any
    /// other length is [`Error::UnexpectedLength`] (after which the connection must be
    /// dropped: bytes of it may have been read).
    pub async fn exchange_spin_expecting(
        &mut self,
        payload: &[u8],
        reply_len: usize,
        spin: Duration,
    ) -> Result<Vec<u8>, Error> {
        if spin.is_zero() {
            let got = self.exchange(payload).await?;
            if got.len() != reply_len {
                return Err(Error::UnexpectedLength {
                    len: got.len(),
                    expected: reply_len,
                });
            }
            return Ok(got);
        }
        let got = self.spin_any(Some(payload), true, Some(reply_len), spin).await?;
        Ok(got.unwrap_or_default())
    }

    /// [`Self::recv`] with the polling of [`Self::exchange_spin`] (`spin` zero is
    /// [`Self::recv`]).
    pub async fn recv_spin(&mut self, spin: Duration) -> Result<Vec<u8>, Error> {
        if spin.is_zero() {
            return self.recv().await;
        }
        let got = self.spin_any(None, true, None, spin).await?;
        Ok(got.unwrap_or_default())
    }

    /// [`Self::spin_io`] on plain TCP, [`Self::spin_stream`] on TLS.
    async fn spin_any(
        &mut self,
        payload: Option<&[u8]>,
        receive: bool,
        expect: Option<usize>,
        spin: Duration,
    ) -> Result<Option<Vec<u8>>, Error> {
        if !self.greeted() {
            self.greet().await?;
        }
        if matches!(self.stream, Io::Tcp(_)) {
            self.spin_io(payload, receive, expect, spin).await
        } else {
            self.spin_stream(payload, receive, expect, spin).await
        }
    }

    /// The polling exchange over any [`Stream`] (TLS): the stream's `poll_write`,
    /// `poll_flush` and `poll_read` are tried with a waker that does nothing
    /// (`Pending` only means "not now"), yielding to the runtime between tries, for up
    /// to `spin` after the last byte moved; then the same polls run with the task's
    /// waker until something moves. A frame up to 16 KiB goes out in one write (one
    /// TLS record); with a known reply length the header and the payload are read
    /// with one read.
    async fn spin_stream(
        &mut self,
        payload: Option<&[u8]>,
        receive: bool,
        expect: Option<usize>,
        spin: Duration,
    ) -> Result<Option<Vec<u8>>, Error> {
        let max = self.cfg.max_frame;
        let out = payload.unwrap_or(&[]);
        if out.len() > max {
            return Err(Error::FrameTooLarge { len: out.len(), max });
        }
        if let Some(len) = expect.filter(|&e| e > max) {
            return Err(Error::FrameTooLarge { len, max });
        }
        let (t, on_timeout) = self.next_timeout(Error::ReadTimeout)?;
        let stream = self.stream.stream()?;
        let mut st = Polled::new(payload, receive, expect, max);
        let start = Instant::now();
        let mut last = start;
        loop {
            // A context that is not kept across an await (it is not `Send`).
            let moved = st.poll(stream, &mut std::task::Context::from_waker(std::task::Waker::noop()))?;
            if st.done() {
                break;
            }
            let now = Instant::now();
            let waited = now.duration_since(start);
            if waited >= t {
                return Err(on_timeout);
            }
            if moved {
                last = now;
                continue;
            }
            if now.duration_since(last) < spin {
                spin_pause().await;
                continue;
            }
            let wait = std::future::poll_fn(|cx| match st.poll(stream, cx) {
                Err(e) => std::task::Poll::Ready(Err(e)),
                Ok(true) => std::task::Poll::Ready(Ok(())),
                Ok(false) if st.done() => std::task::Poll::Ready(Ok(())),
                Ok(false) => std::task::Poll::Pending,
            });
            match tokio::time::timeout(t - waited, wait).await {
                Err(_) => return Err(on_timeout),
                Ok(r) => r?,
            }
            if st.done() {
                break;
            }
            last = Instant::now();
        }
        self.sent += st.total as u64;
        if receive {
            self.received += 4 + st.body.len() as u64;
            return Ok(Some(st.body));
        }
        Ok(None)
    }

    /// Sends `payload` (if any) and receives one frame (if `receive`; of exactly
    /// `expect` bytes if given), polling as [`Self::exchange_spin`] describes. Only
    /// called on plain TCP.
    async fn spin_io(
        &mut self,
        payload: Option<&[u8]>,
        receive: bool,
        expect: Option<usize>,
        spin: Duration,
    ) -> Result<Option<Vec<u8>>, Error> {
        use std::io::ErrorKind::WouldBlock;
        use std::io::IoSliceMut;
        use tokio::io::Interest;
        let max = self.cfg.max_frame;
        let out = payload.unwrap_or(&[]);
        if out.len() > max {
            return Err(Error::FrameTooLarge { len: out.len(), max });
        }
        if let Some(len) = expect.filter(|&e| e > max) {
            return Err(Error::FrameTooLarge { len, max });
        }
        let (t, on_timeout) = self.next_timeout(Error::ReadTimeout)?;
        let Io::Tcp(tcp) = &self.stream else {
            return Err(Error::Io(std::io::Error::other("spin_io on a TLS connection")));
        };
        let header = (out.len() as u32).to_be_bytes();
        let total = if payload.is_some() { 4 + out.len() } else { 0 };
        let mut sent = 0usize;
        let mut hdr = [0u8; 4];
        let mut hfill = 0usize;
        // With a known length the payload buffer exists from the start, and the header
        // and the payload are read together.
        let mut body: Vec<u8> = vec![0u8; expect.unwrap_or(0)];
        let mut bfill = 0usize;
        let mut received = !receive;
        let start = Instant::now();
        let mut last = start;
        loop {
            let mut progress = false;
            if sent < total {
                let r = if sent < 4 {
                    tcp.try_write_vectored(&[std::io::IoSlice::new(&header[sent..]), std::io::IoSlice::new(out)])
                } else {
                    tcp.try_write(&out[sent - 4..])
                };
                match r {
                    Ok(n) => {
                        sent += n;
                        progress |= n > 0;
                    }
                    Err(e) if e.kind() == WouldBlock => {}
                    Err(e) => return Err(Error::Io(e)),
                }
            }
            if !received {
                let r = if hfill < 4 {
                    if expect.is_some() {
                        tcp.try_read_vectored(&mut [IoSliceMut::new(&mut hdr[hfill..]), IoSliceMut::new(&mut body)])
                    } else {
                        tcp.try_read(&mut hdr[hfill..])
                    }
                } else {
                    tcp.try_read(&mut body[bfill..])
                };
                match r {
                    Ok(0) => return Err(Error::Closed),
                    Ok(n) => {
                        progress = true;
                        if hfill < 4 {
                            let h = n.min(4 - hfill);
                            hfill += h;
                            bfill += n - h;
                            if hfill == 4 {
                                let len = u32::from_be_bytes(hdr) as usize;
                                match expect {
                                    Some(e) if len != e => return Err(Error::UnexpectedLength { len, expected: e }),
                                    Some(_) => {}
                                    None if len > max => return Err(Error::FrameTooLarge { len, max }),
                                    None => body = vec![0u8; len],
                                }
                            }
                        } else {
                            bfill += n;
                        }
                    }
                    Err(e) if e.kind() == WouldBlock => {}
                    Err(e) => return Err(Error::Io(e)),
                }
                received = hfill == 4 && bfill == body.len();
            }
            if sent == total && received {
                break;
            }
            let now = Instant::now();
            let waited = now.duration_since(start);
            if waited >= t {
                return Err(on_timeout);
            }
            if progress {
                last = now;
                continue;
            }
            if now.duration_since(last) < spin {
                // Lets other tasks of this runtime run (a peer in the same process).
                // (Polling without yielding was measured slower: sha256 ×1024 online
                // 68–71 ms against 24–27 ms.)
                spin_pause().await;
                continue;
            }
            let interest = match (sent < total, !received) {
                (true, true) => Interest::READABLE | Interest::WRITABLE,
                (true, false) => Interest::WRITABLE,
                _ => Interest::READABLE,
            };
            match tokio::time::timeout(t - waited, tcp.ready(interest)).await {
                Err(_) => return Err(on_timeout),
                Ok(r) => {
                    r?;
                }
            }
            last = Instant::now();
        }
        self.sent += total as u64;
        if receive {
            self.received += 4 + bfill as u64;
            return Ok(Some(body));
        }
        Ok(None)
    }

    /// Whether the greeting is behind us (or there is none).
    #[inline]
    fn greeted(&self) -> bool {
        matches!(self.greet, Greet::Off | Greet::Done(_))
    }

    /// Changes the largest frame this connection accepts and sends (a protocol that
    /// knows the exact size of what comes next can bound it tighter or looser than
    /// the default).
    pub fn set_max_frame(&mut self, max: usize) {
        self.cfg.max_frame = max;
    }

    async fn read_exact_timed(&mut self, buf: &mut [u8]) -> Result<(), Error> {
        let (t, on_timeout) = self.next_timeout(Error::ReadTimeout)?;
        match tokio::time::timeout(t, self.stream.stream()?.read_exact(buf)).await {
            Err(_) => Err(on_timeout),
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => Err(Error::Closed),
            Ok(r) => r.map(|_| ()).map_err(Error::Io),
        }
    }

    /// Bytes sent so far, frame headers included.
    pub fn bytes_sent(&self) -> u64 {
        self.sent
    }

    /// Bytes received so far, frame headers included.
    pub fn bytes_received(&self) -> u64 {
        self.received
    }

    /// Closes the sending side.
    pub async fn shutdown(&mut self) -> Result<(), Error> {
        self.stream.stream()?.shutdown().await?;
        Ok(())
    }
}

/// Whether an I/O error is the peer resetting the connection (judged like a close).
fn is_reset(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::ConnectionAborted | std::io::ErrorKind::BrokenPipe
    )
}

/// Before a TLS handshake: looks at the client's first bytes without taking them. A
/// plain tacit greeting gets ours back in the clear, flagged "TLS required", and an
/// error; anything else is left to the handshake.
async fn refuse_plain_client(conn: &mut FramedConn, ours: &Greeting) -> Result<(), Error> {
    let t = conn.cfg.connect_timeout.min(conn.remaining()?);
    let Io::Tcp(tcp) = &mut conn.stream else {
        return Ok(());
    };
    let mut first = [0u8; greeting::LEN];
    let n = match tokio::time::timeout(t, tcp.peek(&mut first)).await {
        Err(_) => return Err(Error::Tls(format!("no handshake within {:.1} s", t.as_secs_f64()))),
        Ok(r) => r?,
    };
    let plain = n > 0 && first[0] == greeting::MAGIC[0];
    if !plain {
        return Ok(());
    }
    let refusal = ours.encode(greeting::FLAG_ACCEPTOR | greeting::FLAG_TLS_REQUIRED);
    let _ = tokio::time::timeout(t, async {
        tcp.write_all(&refusal).await?;
        tcp.flush().await?;
        // Take what was looked at, so that closing sends FIN rather than a reset.
        tcp.read(&mut first[..n]).await
    })
    .await;
    let why = format!(
        "{} speaks plain TCP and this {} requires TLS (it was told so)",
        conn.label, ours.protocol
    );
    conn.greet = Greet::Failed(why.clone());
    Err(Error::Greeting(why))
}

/// The same look for a server that runs TLS on its own (PrivateDrop's HTTPS): when
/// the client's first bytes on `tcp` are a plain tacit greeting, answers with
/// `ours` flagged "TLS required" and returns the one-line reason to log; `None` when
/// the client may well speak TLS (then nothing was read). Waits at most `wait` for
/// the first byte.
pub async fn refuse_plain_tacit(tcp: &mut TcpStream, ours: Protocol, wait: Duration) -> Option<String> {
    let mut first = [0u8; 1];
    let n = tokio::time::timeout(wait, tcp.peek(&mut first)).await.ok()?.ok()?;
    if n == 0 || first[0] != greeting::MAGIC[0] {
        return None;
    }
    let refusal = Greeting::v1(ours).encode(greeting::FLAG_ACCEPTOR | greeting::FLAG_TLS_REQUIRED);
    let _ = tokio::time::timeout(wait, async {
        tcp.write_all(&refusal).await?;
        tcp.flush().await?;
        let mut theirs = [0u8; greeting::LEN];
        tcp.read(&mut theirs).await
    })
    .await;
    let peer = tcp.peer_addr().map_or_else(|_| "a client".into(), |p| p.to_string());
    Some(format!(
        "{peer} speaks plain TCP and this {ours} requires TLS (it was told so)"
    ))
}

/// One pause of a polling loop: gives the core to another runnable thread of the
/// machine if there is one (`sched_yield`; the peer process, on a machine with fewer
/// cores than busy threads, would otherwise wait for our time slice to end on every
/// layer), then lets the other tasks of this runtime run.
async fn spin_pause() {
    std::thread::yield_now();
    tokio::task::yield_now().await;
}

/// The state of one polled exchange over a [`Stream`] ([`FramedConn::spin_stream`]).
struct Polled<'p> {
    /// The frame header of what we send.
    header: [u8; 4],
    /// What we send (the payload); the header and it go out in one vectored write
    /// (one TLS record up to 16 KiB, with no copy of the payload before rustls's).
    out: &'p [u8],
    /// Bytes of the frame (header included) to send; 0 when nothing is sent.
    total: usize,
    sent: usize,
    flushed: bool,
    expect: Option<usize>,
    max: usize,
    hdr: [u8; 4],
    hfill: usize,
    /// The payload (with a known length, allocated at once).
    body: Vec<u8>,
    bfill: usize,
    received: bool,
}

impl<'p> Polled<'p> {
    fn new(payload: Option<&'p [u8]>, receive: bool, expect: Option<usize>, max: usize) -> Self {
        let out = payload.unwrap_or(&[]);
        let header = (out.len() as u32).to_be_bytes();
        let total = if payload.is_some() { 4 + out.len() } else { 0 };
        Polled {
            header,
            out,
            total,
            sent: 0,
            flushed: payload.is_none(),
            expect,
            max,
            hdr: [0; 4],
            hfill: 0,
            body: expect.map(|e| vec![0u8; e]).unwrap_or_default(),
            bfill: 0,
            received: !receive,
        }
    }

    fn done(&self) -> bool {
        self.flushed && self.received
    }

    /// Tries to move bytes each way once; true when any moved.
    fn poll(&mut self, s: &mut dyn Stream, cx: &mut std::task::Context<'_>) -> Result<bool, Error> {
        use std::pin::Pin;
        use std::task::Poll;
        let mut moved = false;
        while self.sent < self.total {
            let w = if self.sent < 4 {
                let parts = [
                    std::io::IoSlice::new(&self.header[self.sent..]),
                    std::io::IoSlice::new(self.out),
                ];
                Pin::new(&mut *s).poll_write_vectored(cx, &parts)
            } else {
                Pin::new(&mut *s).poll_write(cx, &self.out[self.sent - 4..])
            };
            match w {
                Poll::Ready(Ok(0)) => return Err(Error::Io(std::io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => {
                    self.sent += n;
                    moved = true;
                }
                Poll::Ready(Err(e)) => return Err(Error::Io(e)),
                Poll::Pending => break,
            }
        }
        if self.sent == self.total && !self.flushed {
            match Pin::new(&mut *s).poll_flush(cx) {
                Poll::Ready(Ok(())) => {
                    self.flushed = true;
                    moved = true;
                }
                Poll::Ready(Err(e)) => return Err(Error::Io(e)),
                Poll::Pending => {}
            }
        }
        while !self.received {
            // The header, then the payload, each read into its own buffer: a TLS
            // stream hands out what it has decrypted without another system call, so
            // two reads cost what one does, and nothing is moved afterwards.
            let buf: &mut [u8] = if self.hfill < 4 {
                &mut self.hdr[self.hfill..]
            } else {
                &mut self.body[self.bfill..]
            };
            let mut rb = tokio::io::ReadBuf::new(buf);
            let n = match Pin::new(&mut *s).poll_read(cx, &mut rb) {
                Poll::Ready(Ok(())) if rb.filled().is_empty() => return Err(Error::Closed),
                Poll::Ready(Ok(())) => rb.filled().len(),
                Poll::Ready(Err(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Err(Error::Closed),
                Poll::Ready(Err(e)) => return Err(Error::Io(e)),
                Poll::Pending => break,
            };
            moved = true;
            if self.hfill < 4 {
                self.hfill += n;
                if self.hfill == 4 {
                    let len = u32::from_be_bytes(self.hdr) as usize;
                    match self.expect {
                        Some(e) if len != e => return Err(Error::UnexpectedLength { len, expected: e }),
                        Some(_) => {}
                        None if len > self.max => return Err(Error::FrameTooLarge { len, max: self.max }),
                        None => self.body = vec![0u8; len],
                    }
                }
            } else {
                self.bfill += n;
            }
            if self.hfill == 4 && self.bfill == self.body.len() {
                self.received = true;
            }
        }
        Ok(moved)
    }
}

/// Refuses to take a TLS session over while rustls holds decrypted bytes nobody read
/// (a peer that sent more than the switch barrier allows).
fn no_plaintext_left(mut r: rustls::Reader<'_>) -> Result<(), Error> {
    use std::io::Read;
    let mut one = [0u8; 1];
    match r.read(&mut one) {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Ok(()),
        _ => Err(Error::Tls(
            "the peer sent data across the switch to tacit's TLS record layer".into(),
        )),
    }
}

async fn read_exact_timed<R: AsyncReadExt + Unpin>(rd: &mut R, buf: &mut [u8], t: Duration) -> Result<(), Error> {
    match tokio::time::timeout(t, rd.read_exact(buf)).await {
        Err(_) => Err(Error::ReadTimeout(t.as_secs_f64())),
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => Err(Error::Closed),
        Ok(r) => r.map(|_| ()).map_err(Error::Io),
    }
}

/// A listener handing out [`FramedConn`]s.
#[derive(Debug)]
pub struct FramedListener {
    listener: TcpListener,
    cfg: NetConfig,
}

impl FramedListener {
    /// Binds to `addr`.
    pub async fn bind(addr: impl ToSocketAddrs, cfg: &NetConfig) -> Result<Self, Error> {
        Ok(FramedListener {
            listener: TcpListener::bind(addr).await?,
            cfg: *cfg,
        })
    }

    /// The bound address (useful with port 0).
    pub fn local_addr(&self) -> Result<SocketAddr, Error> {
        Ok(self.listener.local_addr()?)
    }

    /// Accepts the next connection.
    pub async fn accept(&self) -> Result<FramedConn, Error> {
        let (stream, _) = self.listener.accept().await?;
        FramedConn::from_stream(stream, &self.cfg)
    }

    /// The same listener, its connections opening with the greeting of version 1 of
    /// `protocol`.
    pub fn speaking(mut self, protocol: Protocol) -> Self {
        self.cfg.greeting = Some(Greeting::v1(protocol));
        self
    }

    /// The TCP listener underneath.
    pub fn tcp(&self) -> &TcpListener {
        &self.listener
    }

    /// The settings accepted connections get.
    pub fn config(&self) -> &NetConfig {
        &self.cfg
    }

    /// Serves connections under `guard` ([`guard::serve`]: a cap on connections,
    /// per-address fairness, a deadline per connection, `accept` errors reported and
    /// never fatal), running `handler` on each admitted connection, until `sessions`
    /// were admitted (or forever).
    pub async fn serve<F, Fut>(&self, guard: &guard::Guard, sessions: Option<u64>, handler: F)
    where
        F: Fn(FramedConn) -> Fut,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        let cfg = self.cfg;
        guard::serve(&self.listener, guard, sessions, |stream, _peer| {
            let conn = FramedConn::from_stream(stream, &cfg);
            let work = conn.map(&handler);
            async move {
                if let Ok(work) = work {
                    work.await;
                }
            }
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> NetConfig {
        NetConfig {
            max_frame: 64,
            connect_timeout: Duration::from_secs(2),
            read_timeout: Duration::from_millis(300),
            deadline: None,
            greeting: None,
        }
    }

    fn speaking(p: Protocol) -> NetConfig {
        NetConfig {
            max_frame: 1 << 16,
            connect_timeout: Duration::from_secs(2),
            ..NetConfig::default()
        }
        .speaking(p)
    }

    /// A server speaking `p` (TLS with `tls`) that answers one frame with its reverse
    /// and returns what its first receive gave.
    async fn greeting_server(
        p: Protocol,
        tls: Option<std::sync::Arc<rustls::ServerConfig>>,
    ) -> (SocketAddr, tokio::task::JoinHandle<Result<Vec<u8>, Error>>) {
        let l = FramedListener::bind("127.0.0.1:0", &speaking(p)).await.unwrap();
        let addr = l.local_addr().unwrap();
        let task = tokio::spawn(async move {
            let c = l.accept().await?;
            let mut c = match tls {
                Some(t) => c.accept_tls(t).await?,
                None => c,
            };
            let m = c.recv().await?;
            c.send(&m.iter().rev().copied().collect::<Vec<_>>()).await?;
            Ok(m)
        });
        (addr, task)
    }

    #[tokio::test]
    async fn the_same_protocol_greets_and_carries_frames() {
        let (addr, server) = greeting_server(Protocol::Psi, None).await;
        let mut c = FramedConn::connect(addr, &speaking(Protocol::Psi)).await.unwrap();
        assert_eq!(c.protocol_version(), Some(1));
        c.send(b"abc").await.unwrap();
        assert_eq!(c.recv().await.unwrap(), b"cba");
        assert_eq!(server.await.unwrap().unwrap(), b"abc");
        // Sending the first frame with the greeting, checking at the first receive.
        let (addr, server) = greeting_server(Protocol::Psi, None).await;
        let mut c = FramedConn::connect_early(addr, &speaking(Protocol::Psi)).await.unwrap();
        assert_eq!(c.protocol_version(), None);
        c.send(b"abc").await.unwrap();
        assert_eq!(c.recv().await.unwrap(), b"cba");
        assert_eq!(server.await.unwrap().unwrap(), b"abc");
        // The greeting is not counted as frame bytes.
        assert_eq!((c.bytes_sent(), c.bytes_received()), (7, 7));
        // Over TLS, inside it.
        let id = tls::SelfSigned::generate("tacit.invalid").unwrap();
        let (addr, server) = greeting_server(Protocol::Psi, Some(id.server_config().unwrap())).await;
        let client = tls::checked_server_client(tls::pinned(id.fingerprint().unwrap())).unwrap();
        let mut c = FramedConn::connect_tls(addr, &speaking(Protocol::Psi), client, "tacit.invalid")
            .await
            .unwrap();
        assert_eq!(c.protocol_version(), Some(1));
        c.send(b"xyz").await.unwrap();
        assert_eq!(c.recv().await.unwrap(), b"zyx");
        assert_eq!(server.await.unwrap().unwrap(), b"xyz");
    }

    /// The issue's case: a pros PSI client reaching a discovery root is told so by
    /// the greeting, before any frame (it used to compute for 34.5 s and then read
    /// "unexpected message type 0x0410"); the root logs the mirror line.
    #[tokio::test]
    async fn another_protocol_is_named_in_one_line_both_ways() {
        let (addr, server) = greeting_server(Protocol::DiscoveryRoot, None).await;
        let e = FramedConn::connect(addr, &speaking(Protocol::ProsPsi))
            .await
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("{addr} is a tacit discovery root, not a pros PSI server")
        );
        let e = server.await.unwrap().unwrap_err().to_string();
        assert!(
            e.starts_with("the peer 127.0.0.1:")
                && e.ends_with(" is a client of a tacit pros PSI server, not of a discovery root"),
            "{e}"
        );
        // An id this tacit does not know (a newer tacit's protocol).
        let l = FramedListener::bind("127.0.0.1:0", &cfg()).await.unwrap();
        let addr = l.local_addr().unwrap();
        let peer = tokio::spawn(async move {
            let (mut s, _) = l.tcp().accept().await.unwrap();
            let mut g = Greeting::v1(Protocol::Psi).encode(greeting::FLAG_ACCEPTOR);
            g[6..8].copy_from_slice(&0x7777u16.to_be_bytes());
            s.write_all(&g).await.unwrap();
            let mut b = [0u8; 12];
            let _ = s.read_exact(&mut b).await;
        });
        let e = FramedConn::connect(addr, &speaking(Protocol::Psi)).await.unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("{addr} is a tacit server of a protocol this tacit does not know (0x7777), not a PSI server")
        );
        peer.await.unwrap();
    }

    /// A peer of the same protocol whose versions do not meet ours is refused with
    /// both ranges; one whose range includes ours runs our highest.
    #[tokio::test]
    async fn versions_are_negotiated_or_refused_in_one_line() {
        async fn peer_with(min: u16, max: u16) -> (SocketAddr, tokio::task::JoinHandle<Result<Option<u16>, Error>>) {
            let g = Greeting {
                protocol: Protocol::MpcRun,
                min,
                max,
            };
            let cfg = NetConfig {
                greeting: Some(g),
                ..speaking(Protocol::MpcRun)
            };
            let l = FramedListener::bind("127.0.0.1:0", &cfg).await.unwrap();
            let addr = l.local_addr().unwrap();
            let t = tokio::spawn(async move {
                let mut c = l.accept().await?;
                c.greet().await?;
                Ok(c.protocol_version())
            });
            (addr, t)
        }
        let (addr, peer) = peer_with(2, 4).await;
        let e = FramedConn::connect(addr, &speaking(Protocol::MpcRun))
            .await
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "{addr} is a tacit GMW party (mpc run) that speaks version 2–4 of its protocol and this tacit speaks 1; update the older one"
            )
        );
        let e = peer.await.unwrap().unwrap_err().to_string();
        assert!(
            e.ends_with(
                " speaks version 1 of the GMW party (mpc run) protocol and this tacit speaks 2–4; update the older one"
            ),
            "{e}"
        );
        let (addr, peer) = peer_with(0, 1).await;
        let c = FramedConn::connect(addr, &speaking(Protocol::MpcRun)).await.unwrap();
        assert_eq!(c.protocol_version(), Some(1));
        assert_eq!(peer.await.unwrap().unwrap(), Some(1));
    }

    /// The issue's case `psi query` (plain) against `psi serve --tls`: the TLS server
    /// sees a plain greeting, answers with its own flagged "TLS required", and both
    /// sides name it; and the reverse, a TLS client against a plain server.
    #[tokio::test]
    async fn tls_against_plain_is_named_both_ways() {
        let id = tls::SelfSigned::generate("tacit.invalid").unwrap();
        let (addr, server) = greeting_server(Protocol::Psi, Some(id.server_config().unwrap())).await;
        let e = FramedConn::connect(addr, &speaking(Protocol::Psi)).await.unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "{addr} is a tacit PSI server that requires TLS and this connection is plain TCP; connect with TLS (--pin or --tofu, without --plain-tcp)"
            )
        );
        let e = server.await.unwrap().unwrap_err().to_string();
        assert!(
            e.ends_with(" speaks plain TCP and this PSI server requires TLS (it was told so)"),
            "{e}"
        );
        // The same for a client that sends its first frame with its greeting: the
        // first receive names the server.
        let (addr, server) = greeting_server(Protocol::Psi, Some(id.server_config().unwrap())).await;
        let mut c = FramedConn::connect_early(addr, &speaking(Protocol::Psi)).await.unwrap();
        c.send(b"request").await.unwrap();
        assert_eq!(
            c.recv().await.unwrap_err().to_string(),
            format!(
                "{addr} is a tacit PSI server that requires TLS and this connection is plain TCP; connect with TLS (--pin or --tofu, without --plain-tcp)"
            )
        );
        assert!(server.await.unwrap().is_err());
        // A TLS listener of another protocol: the protocol is named first.
        let (addr, server) = greeting_server(Protocol::CaEnrolment, Some(id.server_config().unwrap())).await;
        let e = FramedConn::connect(addr, &speaking(Protocol::MpcRun))
            .await
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("{addr} is a tacit certification authority (ca serve), not a GMW party (mpc run)")
        );
        let _ = server.await.unwrap();
        // TLS client, plain server.
        let (addr, server) = greeting_server(Protocol::Psi, None).await;
        let client = tls::checked_server_client(tls::pinned(id.fingerprint().unwrap())).unwrap();
        let e = FramedConn::connect_tls(addr, &speaking(Protocol::Psi), client.clone(), "tacit.invalid")
            .await
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "{addr} answered in the clear as a tacit PSI server on plain TCP and this connection is TLS (the answer is not authenticated); if you expect that server to run plain TCP, connect with --plain-tcp; otherwise serve it with TLS"
            )
        );
        let e = server.await.unwrap().unwrap_err().to_string();
        assert!(
            e.ends_with(" speaks TLS and this PSI server runs plain TCP (serve with TLS, or connect without it)"),
            "{e}"
        );
        // TLS client, plain server of another protocol.
        let (addr, _server) = greeting_server(Protocol::DiscoveryService, None).await;
        let e = FramedConn::connect_tls(addr, &speaking(Protocol::Psi), client, "tacit.invalid")
            .await
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("{addr} is a tacit discovery service (discover advertise) (on plain TCP), not a PSI server")
        );
    }

    /// Deviating peers: no greeting but frames (a tacit from before the greeting), an
    /// HTTP server, a TLS server answering a plain greeting with an alert, a greeting
    /// format from the future, a greeting followed by more than it (read exactly, the
    /// rest is frames), one trickled byte by byte past the bound, a silent peer.
    #[tokio::test]
    async fn deviating_greetings_are_bounded_and_named() {
        async fn peer_sending(bytes: Vec<u8>, pause: Duration) -> (SocketAddr, tokio::task::JoinHandle<()>) {
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = l.local_addr().unwrap();
            let t = tokio::spawn(async move {
                let (mut s, _) = l.accept().await.unwrap();
                for chunk in bytes.chunks(if pause.is_zero() { bytes.len().max(1) } else { 1 }) {
                    if s.write_all(chunk).await.is_err() {
                        return;
                    }
                    tokio::time::sleep(pause).await;
                }
                let mut sink = vec![0u8; 1 << 16];
                while let Ok(n) = s.read(&mut sink).await {
                    if n == 0 {
                        break;
                    }
                }
            });
            (addr, t)
        }
        let quick = NetConfig {
            connect_timeout: Duration::from_millis(400),
            ..speaking(Protocol::Psi)
        };
        let e = |addr: SocketAddr| async move { FramedConn::connect(addr, &quick).await.unwrap_err().to_string() };
        // An old tacit's first frame.
        let (addr, _p) = peer_sending(vec![0, 0, 0, 5, 1, 2, 3, 4, 5], Duration::ZERO).await;
        let got = e(addr).await;
        assert!(
            got.starts_with(&format!("{addr} is not a tacit server (it sent 00")),
            "{got}"
        );
        // HTTP.
        let (addr, _p) = peer_sending(
            b"HTTP/1.1 400 Bad Request

"
            .to_vec(),
            Duration::ZERO,
        )
        .await;
        let got = e(addr).await;
        assert!(
            got.starts_with(&format!("{addr} is not a tacit server (it sent \"H")),
            "{got}"
        );
        // A TLS alert (what a TLS server without tacit's greeting answers).
        let (addr, _p) = peer_sending(vec![0x15, 3, 3, 0, 2, 2, 50], Duration::ZERO).await;
        assert_eq!(
            e(addr).await,
            format!(
                "{addr} speaks TLS and this connection is plain TCP; connect with TLS (--pin or --tofu, without --plain-tcp)"
            )
        );
        // A later greeting format.
        let mut later = Greeting::v1(Protocol::Psi).encode(0);
        later[4] = 2;
        let (addr, _p) = peer_sending(later.to_vec(), Duration::ZERO).await;
        assert_eq!(
            e(addr).await,
            format!("{addr} speaks tacit greeting format 2 and this tacit reads format 1; update the older one")
        );
        // More than a greeting: exactly 12 bytes are taken, what follows is a frame
        // header (here announcing 4 GB) and is refused as one.
        let mut long = Greeting::v1(Protocol::Psi).encode(greeting::FLAG_ACCEPTOR).to_vec();
        long.extend_from_slice(&u32::MAX.to_be_bytes());
        long.extend_from_slice(&[7u8; 1000]);
        let (addr, _p) = peer_sending(long, Duration::ZERO).await;
        let mut c = FramedConn::connect(addr, &quick).await.unwrap();
        assert!(matches!(c.recv().await, Err(Error::FrameTooLarge { .. })));
        // A greeting trickled a byte every 100 ms is cut off at the 400 ms bound, not
        // after 12 read timeouts.
        let (addr, _p) = peer_sending(
            Greeting::v1(Protocol::Psi).encode(2).to_vec(),
            Duration::from_millis(100),
        )
        .await;
        let t = Instant::now();
        assert_eq!(
            e(addr).await,
            format!("{addr} sent no tacit greeting within 0.4 s (is it a tacit PSI server?)")
        );
        assert!(t.elapsed() < Duration::from_secs(2));
        // A closed connection halfway through a greeting.
        let (addr, p) = {
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = l.local_addr().unwrap();
            let t = tokio::spawn(async move {
                let (mut s, _) = l.accept().await.unwrap();
                let mut b = [0u8; 12];
                let _ = s.read_exact(&mut b).await;
                let _ = s.write_all(&MAGIC_HALF).await;
            });
            (addr, t)
        };
        assert_eq!(
            e(addr).await,
            format!("{addr} closed the connection in the middle of its greeting (it sent e3 74 61)")
        );
        p.await.unwrap();
        // A server that closes at once.
        let (addr, p) = {
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = l.local_addr().unwrap();
            let t = tokio::spawn(async move {
                let (s, _) = l.accept().await.unwrap();
                drop(s);
            });
            (addr, t)
        };
        assert_eq!(
            e(addr).await,
            format!(
                "{addr} closed the connection without a tacit greeting (a server that is busy, not a tacit PSI server, or a tacit older than the greeting)"
            )
        );
        p.await.unwrap();
        // The server side: a client that never greets is dropped at the bound.
        let l = FramedListener::bind("127.0.0.1:0", &quick).await.unwrap();
        let addr = l.local_addr().unwrap();
        let _quiet = TcpStream::connect(addr).await.unwrap();
        let mut s = l.accept().await.unwrap();
        let t = Instant::now();
        let e = s.recv().await.unwrap_err().to_string();
        assert!(
            e.ends_with(" sent no tacit greeting within 0.4 s (is it a client of a tacit PSI server?)"),
            "{e}"
        );
        assert!(t.elapsed() < Duration::from_secs(2));
        // …and every later call says the same.
        assert_eq!(s.send(b"x").await.unwrap_err().to_string(), e);
    }

    const MAGIC_HALF: [u8; 3] = [0xE3, b't', b'a'];

    #[tokio::test]
    async fn frames_roundtrip() {
        let l = FramedListener::bind("127.0.0.1:0", &cfg()).await.unwrap();
        let addr = l.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let mut c = l.accept().await.unwrap();
            let m = c.recv().await.unwrap();
            c.send(&m.iter().rev().cloned().collect::<Vec<_>>()).await.unwrap();
            c.send(b"").await.unwrap();
        });
        let mut c = FramedConn::connect(addr, &cfg()).await.unwrap();
        c.send(b"abc").await.unwrap();
        assert_eq!(c.recv().await.unwrap(), b"cba");
        assert_eq!(c.recv().await.unwrap(), b"");
        assert_eq!(c.bytes_sent(), 7);
        server.await.unwrap();
        assert!(matches!(c.recv().await, Err(Error::Closed)));
    }

    /// Issue 28, item 10: keep-alives restart the per-message timeout only where the
    /// connection accepts them and has an overall deadline; a peer that sends nothing
    /// else is cut off there, and where they are not accepted they are ordinary data.
    #[tokio::test]
    async fn keepalives_restart_the_timeout_up_to_the_deadline() {
        let l = FramedListener::bind("127.0.0.1:0", &cfg()).await.unwrap();
        let addr = l.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let mut c = l.accept().await.unwrap();
            // slow but honest: 900 ms of work (three read timeouts) announced, then data
            let slow = tokio::time::sleep(Duration::from_millis(900));
            c.working(Duration::from_millis(50), slow).await;
            c.send(b"late").await.unwrap();
            // then a keep-alive to a side that does not accept them
            c.send_keepalive().await.unwrap();
            // then keep-alives only, until the peer leaves
            while c.send_keepalive().await.is_ok() {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        });
        let mut c = FramedConn::connect(addr, &cfg()).await.unwrap();
        assert!(!c.accept_keepalives(), "no deadline: keep-alives are refused");
        let mut c = FramedConn {
            cfg: cfg().with_deadline(Duration::from_millis(2500)),
            ..c
        };
        assert!(c.accept_keepalives());
        assert_eq!(c.recv().await.unwrap(), b"late");
        assert!(c.keepalives_seen() >= 3, "{}", c.keepalives_seen());
        c.keepalives = false;
        assert_eq!(c.recv().await.unwrap(), KEEPALIVE);
        c.accept_keepalives();
        assert!(matches!(c.recv().await, Err(Error::Deadline(_))));
        drop(c);
        server.await.unwrap();
    }

    #[tokio::test]
    async fn oversize_frames_refused_both_ways() {
        let l = FramedListener::bind("127.0.0.1:0", &cfg()).await.unwrap();
        let addr = l.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let mut c = l.accept().await.unwrap();
            c.recv().await
        });
        let mut c = FramedConn::connect(addr, &cfg()).await.unwrap();
        assert!(matches!(c.send(&[0; 65]).await, Err(Error::FrameTooLarge { .. })));
        // a raw header announcing a huge frame
        c.stream
            .stream()
            .unwrap()
            .write_all(&u32::MAX.to_be_bytes())
            .await
            .unwrap();
        assert!(
            matches!(server.await.unwrap(), Err(Error::FrameTooLarge { len, max: 64 }) if len == u32::MAX as usize)
        );
    }

    #[tokio::test]
    async fn pinned_tls_carries_frames_and_binds_the_channel() {
        let id = tls::SelfSigned::generate("tacit.invalid").unwrap();
        let pin = id.fingerprint().unwrap();
        let l = FramedListener::bind("127.0.0.1:0", &cfg()).await.unwrap();
        let addr = l.local_addr().unwrap();
        let server_cfg = id.server_config().unwrap();
        let server = tokio::spawn(async move {
            let mut out = vec![];
            for _ in 0..2 {
                let c = l.accept().await.unwrap();
                match c.accept_tls(server_cfg.clone()).await {
                    Ok(mut c) => {
                        let m = c.recv().await.unwrap();
                        c.send(&m).await.unwrap();
                        out.push(Some(*c.channel_binding().unwrap()));
                    }
                    Err(_) => out.push(None),
                }
            }
            out
        });
        let client = tls::checked_server_client(tls::pinned(pin)).unwrap();
        let mut c = FramedConn::connect_tls(addr, &cfg(), client, "tacit.invalid")
            .await
            .unwrap();
        c.send(b"over tls").await.unwrap();
        assert_eq!(c.recv().await.unwrap(), b"over tls");
        assert_eq!(c.peer_certificate().unwrap(), id.cert_der());
        let binding = *c.channel_binding().unwrap();
        // A client pinning another key refuses the server during the handshake.
        let other = tls::SelfSigned::generate("tacit.invalid").unwrap();
        let wrong = tls::checked_server_client(tls::pinned(other.fingerprint().unwrap())).unwrap();
        let e = FramedConn::connect_tls(addr, &cfg(), wrong, "tacit.invalid")
            .await
            .unwrap_err();
        assert!(e.to_string().contains("not the pinned"), "{e}");
        let seen = server.await.unwrap();
        assert_eq!(seen[0], Some(binding));
        assert_eq!(seen[1], None);
    }

    #[tokio::test]
    async fn mutual_pinning_authenticates_both_ends() {
        let server_id = tls::SelfSigned::generate("tacit.invalid").unwrap();
        let client_id = tls::SelfSigned::generate("tacit.invalid").unwrap();
        let stranger = tls::SelfSigned::generate("tacit.invalid").unwrap();
        let l = FramedListener::bind("127.0.0.1:0", &cfg()).await.unwrap();
        let addr = l.local_addr().unwrap();
        let server_cfg = server_id
            .server_config_checking_clients(tls::pinned(client_id.fingerprint().unwrap()))
            .unwrap();
        let server = tokio::spawn(async move {
            let mut out = vec![];
            for _ in 0..3 {
                let c = l.accept().await.unwrap();
                match c.accept_tls(server_cfg.clone()).await {
                    Ok(mut c) => {
                        let m = c.recv().await.unwrap();
                        c.send(&m).await.unwrap();
                        out.push(c.peer_certificate().map(|c| c.to_vec()));
                    }
                    Err(_) => out.push(None),
                }
            }
            out
        });
        let pin_server = tls::pinned(server_id.fingerprint().unwrap());
        let good = client_id.client_config_checking_server(pin_server.clone()).unwrap();
        let mut c = FramedConn::connect_tls(addr, &cfg(), good, "tacit.invalid")
            .await
            .unwrap();
        c.send(b"both pinned").await.unwrap();
        assert_eq!(c.recv().await.unwrap(), b"both pinned");
        // A client the server does not know is refused; in TLS 1.3 the client
        // learns it on its first read.
        let bad = stranger.client_config_checking_server(pin_server).unwrap();
        if let Ok(mut c) = FramedConn::connect_tls(addr, &cfg(), bad, "tacit.invalid").await {
            let _ = c.send(b"x").await;
            assert!(c.recv().await.is_err());
        }
        // A client without a certificate is refused too.
        let anon = tls::checked_server_client(tls::pinned(server_id.fingerprint().unwrap())).unwrap();
        if let Ok(mut c) = FramedConn::connect_tls(addr, &cfg(), anon, "tacit.invalid").await {
            let _ = c.send(b"x").await;
            assert!(c.recv().await.is_err());
        }
        let seen = server.await.unwrap();
        assert_eq!(seen[0].as_deref(), Some(client_id.cert_der()));
        assert_eq!(seen[1], None);
        assert_eq!(seen[2], None);
    }

    #[tokio::test]
    async fn a_connection_deadline_cuts_off_a_trickling_peer() {
        let quick = NetConfig {
            deadline: Some(Duration::from_millis(400)),
            read_timeout: Duration::from_millis(250),
            ..cfg()
        };
        let l = FramedListener::bind("127.0.0.1:0", &quick).await.unwrap();
        let addr = l.local_addr().unwrap();
        let trickle = tokio::spawn(async move {
            let mut c = TcpStream::connect(addr).await.unwrap();
            // one small frame every 150 ms: each arrives within the per-read
            // timeout, but the exchange never ends.
            for _ in 0..20 {
                tokio::time::sleep(Duration::from_millis(150)).await;
                if c.write_all(&[0, 0, 0, 1, b'x']).await.is_err() {
                    break;
                }
            }
        });
        let mut s = l.accept().await.unwrap();
        let mut frames = 0;
        let e = loop {
            match s.recv().await {
                Ok(_) => frames += 1,
                Err(e) => break e,
            }
        };
        assert!(matches!(e, Error::Deadline(_)), "{e}");
        assert!((1..=3).contains(&frames), "{frames}");
        trickle.abort();
    }

    #[tokio::test]
    async fn exchange_is_full_duplex_for_large_frames() {
        let big = NetConfig {
            max_frame: 64 << 20,
            ..cfg()
        };
        let l = FramedListener::bind("127.0.0.1:0", &big).await.unwrap();
        let addr = l.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let mut c = l.accept().await.unwrap();
            c.exchange(&vec![1u8; 16 << 20]).await.unwrap()
        });
        let mut c = FramedConn::connect(addr, &big).await.unwrap();
        let got = c.exchange(&vec![2u8; 16 << 20]).await.unwrap();
        assert!(got.iter().all(|&b| b == 1) && got.len() == 16 << 20);
        let theirs = server.await.unwrap();
        assert!(theirs.iter().all(|&b| b == 2));
        assert_eq!(c.bytes_sent(), 4 + (16 << 20));
    }

    /// The polling exchange moves the same frames as `exchange`, both peers in one
    /// single-threaded runtime (so it must yield to let the peer run): many rounds of
    /// small and empty frames, then 16 MiB each way at once (interleaved writes and
    /// reads: no deadlock), with the same byte counts.
    #[tokio::test]
    async fn spin_exchange_moves_the_same_frames_in_one_runtime() {
        let big = NetConfig {
            max_frame: 64 << 20,
            ..cfg()
        };
        let spin = Duration::from_micros(200);
        let l = FramedListener::bind("127.0.0.1:0", &big).await.unwrap();
        let addr = l.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let mut c = l.accept().await.unwrap();
            for i in 0..500u32 {
                let mine = vec![i as u8; (i as usize * 7) % 300];
                let got = c.exchange_spin(&mine, spin).await.unwrap();
                assert_eq!(got, vec![(i + 1) as u8; (i as usize * 11) % 200]);
            }
            // Mixed with the parking calls of the other side.
            let got = c.recv_spin(spin).await.unwrap();
            c.send(&got).await.unwrap();
            let got = c.exchange_spin(&vec![1u8; 16 << 20], spin).await.unwrap();
            (got, c.bytes_sent(), c.bytes_received())
        });
        let mut c = FramedConn::connect(addr, &big).await.unwrap();
        for i in 0..500u32 {
            let mine = vec![(i + 1) as u8; (i as usize * 11) % 200];
            let got = c.exchange_spin(&mine, spin).await.unwrap();
            assert_eq!(got, vec![i as u8; (i as usize * 7) % 300]);
        }
        c.send(b"echo").await.unwrap();
        assert_eq!(c.recv().await.unwrap(), b"echo");
        let got = c.exchange_spin(&vec![2u8; 16 << 20], spin).await.unwrap();
        assert!(got.len() == 16 << 20 && got.iter().all(|&b| b == 1));
        let (theirs, sent, received) = server.await.unwrap();
        assert!(theirs.len() == 16 << 20 && theirs.iter().all(|&b| b == 2));
        assert_eq!((sent, received), (c.bytes_received(), c.bytes_sent()));
    }

    /// With a known reply length, header and payload are read together and never past
    /// the frame: a peer that sends its next frame at once still gets both delivered
    /// in order; a reply of another length is refused.
    #[tokio::test]
    async fn spin_exchange_with_a_known_length_reads_exactly_one_frame() {
        let spin = Duration::from_micros(200);
        let l = FramedListener::bind("127.0.0.1:0", &cfg()).await.unwrap();
        let addr = l.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let mut c = l.accept().await.unwrap();
            // Two frames back to back, then one of the wrong length.
            c.send(b"first").await.unwrap();
            c.send(b"second!").await.unwrap();
            let a = c.recv().await.unwrap();
            let b = c.recv().await.unwrap();
            c.send(b"xx").await.unwrap();
            (a, b)
        });
        let mut c = FramedConn::connect(addr, &cfg()).await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(c.exchange_spin_expecting(b"one", 5, spin).await.unwrap(), b"first");
        assert_eq!(c.exchange_spin_expecting(b"two", 7, spin).await.unwrap(), b"second!");
        assert_eq!(c.bytes_received(), 4 + 5 + 4 + 7);
        let e = c.recv_spin(spin).await;
        assert_eq!(e.unwrap(), b"xx");
        let (a, b) = server.await.unwrap();
        assert_eq!((a.as_slice(), b.as_slice()), (&b"one"[..], &b"two"[..]));
        // Wrong length, and the parking path checks it too.
        let l = FramedListener::bind("127.0.0.1:0", &cfg()).await.unwrap();
        let addr = l.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let mut c = l.accept().await.unwrap();
            c.send(b"abc").await.unwrap();
            c.send(b"abc").await.unwrap();
        });
        let mut c = FramedConn::connect(addr, &cfg()).await.unwrap();
        let e = c.exchange_spin_expecting(b"q", 4, spin).await.unwrap_err();
        assert!(matches!(e, Error::UnexpectedLength { len: 3, expected: 4 }), "{e}");
        server.await.unwrap();
        let l = FramedListener::bind("127.0.0.1:0", &cfg()).await.unwrap();
        let addr = l.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let mut c = l.accept().await.unwrap();
            c.send(b"abc").await.unwrap();
            c.recv().await.unwrap()
        });
        let mut c = FramedConn::connect(addr, &cfg()).await.unwrap();
        let e = c.exchange_spin_expecting(b"q", 2, Duration::ZERO).await.unwrap_err();
        assert!(matches!(e, Error::UnexpectedLength { len: 3, expected: 2 }), "{e}");
        server.await.unwrap();
    }

    /// Polling keeps every bound of the parking path: a frame header over the
    /// maximum is refused before its payload, a silent peer times out, a closed one
    /// is `Closed`.
    #[tokio::test]
    async fn spin_exchange_keeps_the_bounds() {
        let spin = Duration::from_micros(100);
        let l = FramedListener::bind("127.0.0.1:0", &cfg()).await.unwrap();
        let addr = l.local_addr().unwrap();
        // Oversized header.
        let mut raw = TcpStream::connect(addr).await.unwrap();
        let mut s = l.accept().await.unwrap();
        raw.write_all(&u32::MAX.to_be_bytes()).await.unwrap();
        let e = s.exchange_spin(b"hi", spin).await.unwrap_err();
        assert!(matches!(e, Error::FrameTooLarge { max: 64, .. }), "{e}");
        assert!(matches!(
            s.exchange_spin(&[0; 65], spin).await,
            Err(Error::FrameTooLarge { .. })
        ));
        // Silent peer: the 300 ms read timeout, not a hang.
        let _quiet = TcpStream::connect(addr).await.unwrap();
        let mut s = l.accept().await.unwrap();
        let t = Instant::now();
        assert!(matches!(s.recv_spin(spin).await, Err(Error::ReadTimeout(_))));
        assert!(t.elapsed() >= Duration::from_millis(250));
        // Closed peer.
        let gone = TcpStream::connect(addr).await.unwrap();
        let mut s = l.accept().await.unwrap();
        drop(gone);
        assert!(matches!(s.recv_spin(spin).await, Err(Error::Closed)));
    }

    /// A TLS pair (server pinned by the client) over loopback with `cfg`.
    async fn tcp_pair(cfg: &NetConfig) -> (FramedConn, FramedConn) {
        let l = FramedListener::bind("127.0.0.1:0", cfg).await.unwrap();
        let addr = l.local_addr().unwrap();
        let (s, c) = tokio::join!(l.accept(), FramedConn::connect(addr, cfg));
        (s.unwrap(), c.unwrap())
    }

    async fn tls_pair(cfg: &NetConfig) -> (FramedConn, FramedConn) {
        let id = tls::SelfSigned::generate("tacit.invalid").unwrap();
        let client = tls::checked_server_client(tls::pinned(id.fingerprint().unwrap())).unwrap();
        let l = FramedListener::bind("127.0.0.1:0", cfg).await.unwrap();
        let addr = l.local_addr().unwrap();
        let server = id.server_config().unwrap();
        let accept = async { l.accept().await.unwrap().accept_tls(server).await.unwrap() };
        let (s, c) = tokio::join!(accept, FramedConn::connect_tls(addr, cfg, client, "tacit.invalid"));
        (s, c.unwrap())
    }

    /// The polling exchange over TLS moves the same frames as over TCP, both peers in
    /// one single-threaded runtime: many rounds of small and empty frames, known
    /// lengths, a mix with the parking calls, 16 MiB each way at once; a reply of
    /// another length is refused and a closed peer is `Closed`.
    #[tokio::test]
    async fn spin_exchange_over_tls_moves_the_same_frames() {
        let big = NetConfig {
            max_frame: 64 << 20,
            ..cfg()
        };
        let (s, c) = tls_pair(&big).await;
        frames_both_ways(s, c).await;
        // The peer goes away: Closed, not a hang.
        let (mut s, c) = tls_pair(&cfg()).await;
        drop(c);
        assert!(matches!(
            s.recv_spin(Duration::from_micros(200)).await,
            Err(Error::Closed) | Err(Error::Io(_))
        ));
    }

    /// After [`FramedConn::own_record_layer`] the same frames move as through rustls,
    /// records over 16 KiB included, and a peer that goes away is `Closed`.
    #[tokio::test]
    async fn own_records_move_the_same_frames() {
        let big = NetConfig {
            max_frame: 64 << 20,
            ..cfg()
        };
        let (mut s, mut c) = tls_pair(&big).await;
        let (a, b) = tokio::join!(s.own_record_layer(false), c.own_record_layer(true));
        assert!(a.unwrap() && b.unwrap());
        assert!(matches!(s.stream, Io::Own(_)) && matches!(c.stream, Io::Own(_)));
        frames_both_ways(s, c).await;
        let (mut s, mut c) = tls_pair(&cfg()).await;
        let (a, b) = tokio::join!(s.own_record_layer(false), c.own_record_layer(true));
        assert!(a.unwrap() && b.unwrap());
        // A clean close (close_notify) and a dropped socket both read as Closed.
        c.shutdown().await.unwrap();
        assert!(matches!(s.recv().await, Err(Error::Closed)));
        drop(c);
        // Plain TCP does not switch.
        let (mut s, mut c) = tcp_pair(&cfg()).await;
        let (a, b) = tokio::join!(s.own_record_layer(false), c.own_record_layer(true));
        assert!(!a.unwrap() && !b.unwrap());
    }

    /// A peer that does not take part in the switch is refused in one line.
    #[tokio::test]
    async fn own_records_need_both_peers_to_switch() {
        let (mut s, mut c) = tls_pair(&cfg()).await;
        let other = tokio::spawn(async move {
            let _ = s.recv().await;
            s.send(b"hello").await.unwrap();
            s
        });
        let e = c.own_record_layer(true).await.unwrap_err();
        assert!(e.to_string().contains("did not switch"), "{e}");
        drop(other.await.unwrap());
    }

    async fn frames_both_ways(mut s: FramedConn, mut c: FramedConn) {
        let spin = Duration::from_micros(200);
        let (s0, r0, c0, c1) = (s.bytes_sent(), s.bytes_received(), c.bytes_received(), c.bytes_sent());
        let server = tokio::spawn(async move {
            for i in 0..300u32 {
                let mine = vec![i as u8; (i as usize * 7) % 300];
                let got = s.exchange_spin(&mine, spin).await.unwrap();
                assert_eq!(got, vec![(i + 1) as u8; (i as usize * 11) % 200]);
            }
            for i in 0..100u32 {
                let got = s.exchange_spin_expecting(&[i as u8; 40], 40, spin).await.unwrap();
                assert_eq!(got, vec![!(i as u8); 40]);
            }
            let got = s.recv_spin(spin).await.unwrap();
            s.send(&got).await.unwrap();
            let got = s.exchange_spin(&vec![1u8; 16 << 20], spin).await.unwrap();
            // The other side sends a frame of the wrong length.
            let e = s.exchange_spin_expecting(b"q", 5, spin).await.unwrap_err();
            assert!(matches!(e, Error::UnexpectedLength { len: 3, expected: 5 }), "{e}");
            (got, s.bytes_sent(), s.bytes_received())
        });
        for i in 0..300u32 {
            let mine = vec![(i + 1) as u8; (i as usize * 11) % 200];
            let got = c.exchange_spin(&mine, spin).await.unwrap();
            assert_eq!(got, vec![i as u8; (i as usize * 7) % 300]);
        }
        for i in 0..100u32 {
            let got = c.exchange_spin_expecting(&[!(i as u8); 40], 40, spin).await.unwrap();
            assert_eq!(got, vec![i as u8; 40]);
        }
        c.send(b"echo").await.unwrap();
        assert_eq!(c.recv().await.unwrap(), b"echo");
        let got = c.exchange_spin(&vec![2u8; 16 << 20], spin).await.unwrap();
        assert!(got.len() == 16 << 20 && got.iter().all(|&b| b == 1));
        c.send(b"abc").await.unwrap();
        let (theirs, sent, received) = server.await.unwrap();
        assert!(theirs.len() == 16 << 20 && theirs.iter().all(|&b| b == 2));
        assert_eq!(sent - s0, c.bytes_received() - c0);
        assert_eq!(received - r0, c.bytes_sent() - c1 - 7);
    }

    /// Over TLS a silent peer still times out and an oversized header is refused
    /// before its payload.
    #[tokio::test]
    async fn spin_exchange_over_tls_keeps_the_bounds() {
        let spin = Duration::from_micros(100);
        let (mut s, _c) = tls_pair(&cfg()).await;
        let t = Instant::now();
        assert!(matches!(s.recv_spin(spin).await, Err(Error::ReadTimeout(_))));
        assert!(t.elapsed() >= Duration::from_millis(250));
        let (mut s, mut c) = tls_pair(&cfg()).await;
        c.stream
            .stream()
            .unwrap()
            .write_all(&u32::MAX.to_be_bytes())
            .await
            .unwrap();
        c.stream.stream().unwrap().flush().await.unwrap();
        let e = s.exchange_spin(b"hi", spin).await.unwrap_err();
        assert!(matches!(e, Error::FrameTooLarge { max: 64, .. }), "{e}");
    }

    #[tokio::test]
    async fn silent_peer_times_out() {
        let l = FramedListener::bind("127.0.0.1:0", &cfg()).await.unwrap();
        let addr = l.local_addr().unwrap();
        let _c = FramedConn::connect(addr, &cfg()).await.unwrap();
        let mut s = l.accept().await.unwrap();
        assert!(matches!(s.recv().await, Err(Error::ReadTimeout(_))));
    }

    /// rev28 (low): the "sent by the accepting side" flag is sent but never checked,
    /// so a peer (or a man in the middle on plain TCP) that reflects the client's own
    /// greeting back is taken for the server: the client's greeting (flags 0) comes
    /// back and the connection is "greeted" at version 1.
    #[tokio::test]
    async fn red_rev28_a_reflected_client_greeting_is_taken_for_the_servers() {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let mirror = tokio::spawn(async move {
            let (mut s, _) = l.accept().await.unwrap();
            let mut g = [0u8; greeting::LEN];
            s.read_exact(&mut g).await.unwrap();
            assert_eq!(g[5], 0, "the client's greeting is not flagged acceptor");
            s.write_all(&g).await.unwrap();
            let mut b = [0u8; 64];
            let _ = tokio::time::timeout(Duration::from_secs(1), s.read(&mut b)).await;
        });
        let r = FramedConn::connect(addr, &speaking(Protocol::Psi)).await;
        mirror.await.unwrap();
        assert!(
            r.is_err(),
            "a greeting without the acceptor flag (the client's own, reflected) was taken for the server's"
        );
    }

    /// rev28 (low): a client whose greeting carries the listener-only flags ("TLS
    /// required", "sent by the accepting side") makes the server log a line about a
    /// TLS *server* and advise itself to "connect with TLS": the peer is misattributed.
    #[tokio::test]
    async fn red_rev28_a_client_greeting_with_listener_flags_is_worded_as_a_server() {
        let l = FramedListener::bind("127.0.0.1:0", &speaking(Protocol::Psi))
            .await
            .unwrap();
        let addr = l.local_addr().unwrap();
        let client = tokio::spawn(async move {
            let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
            let g = Greeting::v1(Protocol::Psi).encode(greeting::FLAG_ACCEPTOR | greeting::FLAG_TLS_REQUIRED);
            s.write_all(&g).await.unwrap();
            let mut b = [0u8; 64];
            let _ = tokio::time::timeout(Duration::from_secs(1), s.read(&mut b)).await;
        });
        let mut c = l.accept().await.unwrap();
        let e = c.greet().await.unwrap_err().to_string();
        client.await.unwrap();
        assert!(
            !e.contains("requires TLS and this connection is plain TCP") && !e.contains("--pin or --tofu"),
            "the server words its client as a TLS listener: {e}"
        );
    }

    /// rev28 (medium): a TLS client answered in the clear by a greeting that itself
    /// says "this listener requires TLS" (what an attacker who cannot complete the
    /// handshake sends) is told to drop TLS ("connect with --plain-tcp"): the line
    /// built from unauthenticated bytes contradicts them and steers the user to a
    /// downgrade.
    #[tokio::test]
    async fn red_rev28_a_plain_answer_saying_tls_required_tells_the_tls_client_to_drop_tls() {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let mitm = tokio::spawn(async move {
            let (mut s, _) = l.accept().await.unwrap();
            let mut b = [0u8; 512];
            let _ = s.read(&mut b).await;
            let g = Greeting::v1(Protocol::Psi).encode(greeting::FLAG_ACCEPTOR | greeting::FLAG_TLS_REQUIRED);
            s.write_all(&g).await.unwrap();
            let _ = s.shutdown().await;
            let _ = tokio::time::timeout(Duration::from_secs(1), s.read(&mut b)).await;
        });
        let id = tls::SelfSigned::generate("tacit.invalid").unwrap();
        let client = tls::checked_server_client(tls::pinned(id.fingerprint().unwrap())).unwrap();
        let e = FramedConn::connect_tls(addr, &speaking(Protocol::Psi), client, "tacit.invalid")
            .await
            .unwrap_err()
            .to_string();
        mitm.await.unwrap();
        assert!(
            !e.contains("--plain-tcp"),
            "a plain answer flagged \"TLS required\" tells the TLS client to drop TLS: {e}"
        );
    }
}
