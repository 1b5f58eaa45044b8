//! tacit's transports. This crate holds no cryptography: it moves the bytes that the
//! sans-I/O protocol engines produce.
//!
//! [`FramedConn`] is a TCP connection carrying length-prefixed frames
//! (`[u32 big-endian length][payload]`, see `docs/wire.md`) with `TCP_NODELAY`, a
//! connect timeout, a per-read timeout and a maximum frame size that is enforced from
//! the frame header, before the payload is buffered.
//!
//! ```no_run
//! # async fn demo() -> Result<(), tacit_net::Error> {
//! use tacit_net::{FramedConn, NetConfig};
//! let cfg = NetConfig::default();
//! let mut conn = FramedConn::connect("127.0.0.1:7878", &cfg).await?;
//! conn.send(b"hello").await?;
//! let reply = conn.recv().await?;
//! # Ok(()) }
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod guard;
pub mod mdns;
pub mod records;
pub mod tls;

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
}

impl Default for NetConfig {
    fn default() -> Self {
        NetConfig {
            max_frame: tacit_wire::DEFAULT_MAX_FRAME,
            connect_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(30),
            deadline: None,
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
}

/// A byte stream a [`FramedConn`] can run over: plain TCP or TLS.
pub trait Stream: AsyncRead + AsyncWrite + Unpin + Send + Sync {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send + Sync> Stream for T {}

/// What rustls reads a TLS connection's bytes through: the socket behind a 64 KiB
/// buffer. rustls asks for at most 4 KiB per read, so without it a 16 KiB record took
/// four system calls; with it, one read takes whatever the socket holds (a GMW layer
/// message of any size is one system call, as on plain TCP) and rustls's reads copy
/// from memory. Writes go straight to the socket.
type TlsIo = tokio::io::BufReader<TcpStream>;

/// The TLS connection's socket, buffered for reading ([`TlsIo`]).
fn tls_io(tcp: TcpStream) -> TlsIo {
    tokio::io::BufReader::with_capacity(64 * 1024, tcp)
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
    /// Connects with the configured timeout.
    pub async fn connect(addr: impl ToSocketAddrs + std::fmt::Display, cfg: &NetConfig) -> Result<Self, Error> {
        let name = addr.to_string();
        let stream = tokio::time::timeout(cfg.connect_timeout, TcpStream::connect(addr))
            .await
            .map_err(|_| Error::ConnectTimeout {
                addr: name,
                secs: cfg.connect_timeout.as_secs_f64(),
            })??;
        Self::from_stream(stream, cfg)
    }

    /// Wraps an accepted stream.
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
        })
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
        let mut conn = Self::connect(addr, cfg).await?;
        let name = tls::server_name(server_name).map_err(|e| Error::Tls(e.to_string()))?;
        let tcp = tls_io(conn.take_tcp()?);
        let handshake = tls::TlsConnector::from(client).connect(name, tcp);
        let stream = conn.timed_handshake(handshake).await?;
        let (_, session) = stream.get_ref();
        conn.binding = Some(tls::channel_binding(&**session).map_err(|e| Error::Tls(e.to_string()))?);
        conn.peer_certificate = session.peer_certificates().and_then(|c| c.first()).map(|c| c.to_vec());
        conn.stream = Io::Tls(Box::new(tokio_rustls::TlsStream::Client(stream)));
        Ok(conn)
    }

    /// Runs a TLS handshake as the server on an accepted plain connection.
    pub async fn accept_tls(mut self, server: std::sync::Arc<rustls::ServerConfig>) -> Result<Self, Error> {
        let tcp = tls_io(self.take_tcp()?);
        let handshake = tls::TlsAcceptor::from(server).accept(tcp);
        let stream = self.timed_handshake(handshake).await?;
        let (_, session) = stream.get_ref();
        self.binding = Some(tls::channel_binding(&**session).map_err(|e| Error::Tls(e.to_string()))?);
        self.peer_certificate = session.peer_certificates().and_then(|c| c.first()).map(|c| c.to_vec());
        self.stream = Io::Tls(Box::new(tokio_rustls::TlsStream::Server(stream)));
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
        let own = records::OwnRecords::new(io.into_inner(), secrets, &early).map_err(|e| Error::Tls(e.to_string()))?;
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
        }
    }

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
}
