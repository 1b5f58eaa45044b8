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

pub mod mdns;
pub mod tls;

use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
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
    /// Any other socket error.
    #[error("network error: {0}")]
    Io(#[from] std::io::Error),
}

/// Transport settings.
#[derive(Debug, Clone, Copy)]
pub struct NetConfig {
    /// Maximum frame payload in bytes.
    pub max_frame: usize,
    /// Connect timeout.
    pub connect_timeout: Duration,
    /// Timeout for each read of a frame (header and payload).
    pub read_timeout: Duration,
}

impl Default for NetConfig {
    fn default() -> Self {
        NetConfig {
            max_frame: tacit_wire::DEFAULT_MAX_FRAME,
            connect_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(30),
        }
    }
}

/// A TCP connection that carries frames.
#[derive(Debug)]
pub struct FramedConn {
    stream: TcpStream,
    cfg: NetConfig,
    sent: u64,
    received: u64,
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
        Ok(FramedConn {
            stream,
            cfg: *cfg,
            sent: 0,
            received: 0,
        })
    }

    /// The peer's address.
    pub fn peer_addr(&self) -> Result<SocketAddr, Error> {
        Ok(self.stream.peer_addr()?)
    }

    /// Sends one frame.
    pub async fn send(&mut self, payload: &[u8]) -> Result<(), Error> {
        if payload.len() > self.cfg.max_frame {
            return Err(Error::FrameTooLarge {
                len: payload.len(),
                max: self.cfg.max_frame,
            });
        }
        let header = (payload.len() as u32).to_be_bytes();
        self.stream.write_all(&header).await?;
        self.stream.write_all(payload).await?;
        self.stream.flush().await?;
        self.sent += 4 + payload.len() as u64;
        Ok(())
    }

    /// Receives one frame, refusing frames over the maximum before reading them.
    pub async fn recv(&mut self) -> Result<Vec<u8>, Error> {
        let t = self.cfg.read_timeout;
        let mut header = [0u8; 4];
        self.read_exact_timed(&mut header, t).await?;
        let len = u32::from_be_bytes(header) as usize;
        if len > self.cfg.max_frame {
            return Err(Error::FrameTooLarge {
                len,
                max: self.cfg.max_frame,
            });
        }
        let mut payload = vec![0u8; len];
        self.read_exact_timed(&mut payload, t).await?;
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
        let (max, t) = (self.cfg.max_frame, self.cfg.read_timeout);
        let (mut rd, mut wr) = self.stream.split();
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

    /// Changes the largest frame this connection accepts and sends (a protocol that
    /// knows the exact size of what comes next can bound it tighter or looser than
    /// the default).
    pub fn set_max_frame(&mut self, max: usize) {
        self.cfg.max_frame = max;
    }

    async fn read_exact_timed(&mut self, buf: &mut [u8], t: Duration) -> Result<(), Error> {
        match tokio::time::timeout(t, self.stream.read_exact(buf)).await {
            Err(_) => Err(Error::ReadTimeout(t.as_secs_f64())),
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
        self.stream.shutdown().await?;
        Ok(())
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
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> NetConfig {
        NetConfig {
            max_frame: 64,
            connect_timeout: Duration::from_secs(2),
            read_timeout: Duration::from_millis(300),
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
        c.stream.write_all(&u32::MAX.to_be_bytes()).await.unwrap();
        assert!(
            matches!(server.await.unwrap(), Err(Error::FrameTooLarge { len, max: 64 }) if len == u32::MAX as usize)
        );
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

    #[tokio::test]
    async fn silent_peer_times_out() {
        let l = FramedListener::bind("127.0.0.1:0", &cfg()).await.unwrap();
        let addr = l.local_addr().unwrap();
        let _c = FramedConn::connect(addr, &cfg()).await.unwrap();
        let mut s = l.accept().await.unwrap();
        assert!(matches!(s.recv().await, Err(Error::ReadTimeout(_))));
    }
}
