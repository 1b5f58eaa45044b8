//! tacit's own TLS 1.3 record layer for latency-bound phases: the record protection of
//! RFC 8446 §5, run on the traffic secrets that rustls hands out after the handshake
//! (`dangerous_extract_secrets`, the interface kTLS uses), over the plain socket.
//!
//! The bytes on the wire stay TLS 1.3 application-data records with the sequence
//! numbers rustls would have used: a rustls peer holding the same session reads them
//! ([`crate::FramedConn::own_record_layer`] is where a connection switches, and the
//! test `own_records_are_tls_1_3_records_that_rustls_reads` checks it). What changes is
//! the path a record takes through this process: one seal into a buffer that the
//! socket writes, one open in place in the buffer the socket read into, no layered
//! `poll` of a TLS stream over a buffered reader. A GMW layer is one record each way,
//! so this path is most of what TLS adds to the online phase (docs/mpc.md).
//!
//! What it refuses: any record whose header is not an application-data record of TLS
//! 1.3 within the length limit, a record that fails its authentication
//! (`bad_record_mac`: a flipped bit, a replayed, reordered or dropped record all end
//! here because the nonce is the sequence number), an alert other than
//! `close_notify`, a handshake message (KeyUpdate, NewSessionTicket: tacit's peers
//! send none after the switch), and more than [`MAX_RECORDS`] records in one
//! direction (no key update is implemented, so the session must end first).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use ring::aead::{AES_128_GCM, AES_256_GCM, Aad, CHACHA20_POLY1305, LessSafeKey, Nonce, UnboundKey};
use rustls::ConnectionTrafficSecrets;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// Largest plaintext of one record (RFC 8446 §5.1).
pub const MAX_PLAIN: usize = 1 << 14;
/// Largest ciphertext of one record (RFC 8446 §5.2: plaintext + 256).
pub const MAX_CIPHER: usize = MAX_PLAIN + 256;
/// Records one direction may carry: AES-GCM's limit in RFC 8446 §5.5 is 2^24.5
/// full-size records; with no key update implemented the session must end before.
pub const MAX_RECORDS: u64 = 1 << 24;
const HEADER: usize = 5;
const TAG: usize = 16;
const APPLICATION_DATA: u8 = 0x17;
const ALERT: u8 = 0x15;
const HANDSHAKE: u8 = 0x16;

/// One direction's key, IV and next sequence number.
struct Direction {
    key: LessSafeKey,
    iv: [u8; 12],
    seq: u64,
}

impl Direction {
    fn new(seq: u64, secrets: ConnectionTrafficSecrets) -> io::Result<Self> {
        let (alg, key, iv) = match secrets {
            ConnectionTrafficSecrets::Aes128Gcm { key, iv } => (&AES_128_GCM, key, iv),
            ConnectionTrafficSecrets::Aes256Gcm { key, iv } => (&AES_256_GCM, key, iv),
            ConnectionTrafficSecrets::Chacha20Poly1305 { key, iv } => (&CHACHA20_POLY1305, key, iv),
            _ => {
                return Err(io::Error::other(
                    "the TLS session negotiated a cipher suite tacit's record layer does not run",
                ));
            }
        };
        let key = UnboundKey::new(alg, key.as_ref())
            .map_err(|_| io::Error::other("a TLS traffic key of the wrong length"))?;
        let iv: [u8; 12] = iv
            .as_ref()
            .try_into()
            .map_err(|_| io::Error::other("a TLS traffic IV of the wrong length"))?;
        Ok(Direction {
            key: LessSafeKey::new(key),
            iv,
            seq,
        })
    }

    /// The per-record nonce (RFC 8446 §5.3: the IV XOR the padded sequence number),
    /// and the sequence number moved on.
    fn next_nonce(&mut self) -> io::Result<Nonce> {
        if self.seq >= MAX_RECORDS {
            return Err(io::Error::other(format!(
                "the session carried {MAX_RECORDS} TLS records one way; it must end (no key update)"
            )));
        }
        let mut n = self.iv;
        for (b, s) in n[4..].iter_mut().zip(self.seq.to_be_bytes()) {
            *b ^= s;
        }
        self.seq += 1;
        Ok(Nonce::assume_unique_for_key(n))
    }
}

fn header(len: usize) -> [u8; HEADER] {
    let l = (len as u16).to_be_bytes();
    [APPLICATION_DATA, 0x03, 0x03, l[0], l[1]]
}

fn bad(msg: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.to_string())
}

/// A TCP stream carrying TLS 1.3 records sealed and opened here (see the module
/// docs). Reads and writes like the TLS stream it replaces.
pub(crate) struct OwnRecords {
    tcp: TcpStream,
    tx: Direction,
    rx: Direction,
    /// Bytes read from the socket: `rbuf[rpos..rend]`; an opened record's plaintext
    /// is `rbuf[ppos..pend]` and the record ends at `rnext`.
    rbuf: Vec<u8>,
    rpos: usize,
    rend: usize,
    ppos: usize,
    pend: usize,
    rnext: usize,
    /// Sealed records not yet written: `wbuf[wpos..]`.
    wbuf: Vec<u8>,
    wpos: usize,
    /// The peer sent `close_notify`.
    closed: bool,
    /// We sent `close_notify`.
    shut: bool,
}

impl OwnRecords {
    /// Takes over `tcp` with the secrets rustls extracted, `early` being socket bytes
    /// that were read but not yet given to rustls.
    pub(crate) fn new(tcp: TcpStream, secrets: rustls::ExtractedSecrets, early: &[u8]) -> io::Result<Self> {
        let (txs, tx) = secrets.tx;
        let (rxs, rx) = secrets.rx;
        let mut rbuf = vec![0u8; (64 * 1024).max(early.len() + HEADER + MAX_CIPHER)];
        rbuf[..early.len()].copy_from_slice(early);
        Ok(OwnRecords {
            tcp,
            tx: Direction::new(txs, tx)?,
            rx: Direction::new(rxs, rx)?,
            rbuf,
            rpos: 0,
            rend: early.len(),
            ppos: 0,
            pend: 0,
            rnext: 0,
            wbuf: Vec::with_capacity(HEADER + MAX_CIPHER),
            wpos: 0,
            closed: false,
            shut: false,
        })
    }

    /// Opens the record at `rpos` if it is all there; `Ok(false)` when more bytes are
    /// needed.
    fn open_next(&mut self) -> io::Result<bool> {
        let have = self.rend - self.rpos;
        if have < HEADER {
            return Ok(false);
        }
        let h: [u8; HEADER] = self.rbuf[self.rpos..self.rpos + HEADER].try_into().expect("five bytes");
        if h[0] != APPLICATION_DATA || h[1] != 0x03 || h[2] != 0x03 {
            return Err(bad("the peer sent a record that is not TLS 1.3 application data"));
        }
        let len = u16::from_be_bytes([h[3], h[4]]) as usize;
        if !(TAG + 1..=MAX_CIPHER).contains(&len) {
            return Err(bad("the peer sent a TLS record of an impossible length"));
        }
        if have < HEADER + len {
            return Ok(false);
        }
        let start = self.rpos + HEADER;
        let nonce = self.rx.next_nonce()?;
        let plain = self
            .rx
            .key
            .open_in_place(nonce, Aad::from(h), &mut self.rbuf[start..start + len])
            .map_err(|_| bad("a TLS record failed its authentication (bad_record_mac)"))?;
        // The inner plaintext is content ‖ type ‖ zero padding (RFC 8446 §5.2).
        let Some(t) = plain.iter().rposition(|&b| b != 0) else {
            return Err(bad("the peer sent a TLS record with no content type"));
        };
        let kind = plain[t];
        self.rnext = start + len;
        match kind {
            APPLICATION_DATA => {
                self.ppos = start;
                self.pend = start + t;
                self.rpos = self.rnext;
                Ok(true)
            }
            ALERT if t == 2 && plain[1] == 0 => {
                self.closed = true;
                self.rpos = self.rnext;
                Ok(true)
            }
            ALERT if t == 2 => Err(bad(&format!("the peer sent TLS alert {}", plain[1]))),
            HANDSHAKE => Err(bad(
                "the peer sent a TLS handshake message (a key update?) after the switch to tacit's record layer",
            )),
            _ => Err(bad("the peer sent a TLS record of an unexpected content type")),
        }
    }

    /// Seals `parts` (at most [`MAX_PLAIN`] bytes of them) as one record into `wbuf`
    /// with `kind`; returns how many bytes it took.
    fn seal<'a>(&mut self, parts: impl Iterator<Item = &'a [u8]>, kind: u8) -> io::Result<usize> {
        debug_assert!(self.wpos == self.wbuf.len());
        self.wbuf.clear();
        self.wpos = 0;
        self.wbuf.extend_from_slice(&[0; HEADER]);
        let mut took = 0;
        for p in parts {
            let n = p.len().min(MAX_PLAIN - took);
            self.wbuf.extend_from_slice(&p[..n]);
            took += n;
        }
        self.wbuf.push(kind);
        let len = took + 1 + TAG;
        let h = header(len);
        self.wbuf[..HEADER].copy_from_slice(&h);
        let nonce = self.tx.next_nonce()?;
        let tag = self
            .tx
            .key
            .seal_in_place_separate_tag(nonce, Aad::from(h), &mut self.wbuf[HEADER..])
            .map_err(|_| io::Error::other("sealing a TLS record failed"))?;
        self.wbuf.extend_from_slice(tag.as_ref());
        Ok(took)
    }

    /// Writes what `wbuf` holds; ready when it is empty.
    fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.wpos < self.wbuf.len() {
            let n = ready!(Pin::new(&mut self.tcp).poll_write(cx, &self.wbuf[self.wpos..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.wpos += n;
        }
        Poll::Ready(Ok(()))
    }

    fn poll_write_parts<'a>(
        &mut self,
        cx: &mut Context<'_>,
        parts: impl Iterator<Item = &'a [u8]> + Clone,
    ) -> Poll<io::Result<usize>> {
        if self.shut {
            return Poll::Ready(Err(io::ErrorKind::BrokenPipe.into()));
        }
        ready!(self.poll_drain(cx))?;
        if parts.clone().all(|p| p.is_empty()) {
            return Poll::Ready(Ok(0));
        }
        let took = self.seal(parts, APPLICATION_DATA)?;
        // Start the write now; what the socket does not take goes on the next write
        // or flush (the bytes are ours to send either way).
        if let Poll::Ready(Err(e)) = self.poll_drain(cx) {
            return Poll::Ready(Err(e));
        }
        Poll::Ready(Ok(took))
    }
}

impl AsyncRead for OwnRecords {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        loop {
            if me.ppos < me.pend {
                let n = (me.pend - me.ppos).min(buf.remaining());
                buf.put_slice(&me.rbuf[me.ppos..me.ppos + n]);
                me.ppos += n;
                return Poll::Ready(Ok(()));
            }
            if me.closed {
                return Poll::Ready(Ok(()));
            }
            if me.open_next()? {
                continue;
            }
            // Room for one more whole record after what is held.
            if me.rpos == me.rend {
                me.rpos = 0;
                me.rend = 0;
            } else if me.rbuf.len() - me.rend < HEADER + MAX_CIPHER {
                me.rbuf.copy_within(me.rpos..me.rend, 0);
                me.rend -= me.rpos;
                me.rpos = 0;
            }
            let end = me.rend;
            let mut rb = ReadBuf::new(&mut me.rbuf[end..]);
            ready!(Pin::new(&mut me.tcp).poll_read(cx, &mut rb))?;
            let n = rb.filled().len();
            if n == 0 {
                // The socket ended without close_notify: a cut within a record is an
                // error; at a record boundary it reads as the end of the stream and
                // the frame layer above says what was missing.
                if me.rend > me.rpos {
                    return Poll::Ready(Err(io::ErrorKind::UnexpectedEof.into()));
                }
                return Poll::Ready(Ok(()));
            }
            me.rend += n;
        }
    }
}

impl AsyncWrite for OwnRecords {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.get_mut().poll_write_parts(cx, std::iter::once(buf))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().poll_write_parts(cx, bufs.iter().map(|b| &**b))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        ready!(me.poll_drain(cx))?;
        Pin::new(&mut me.tcp).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        ready!(me.poll_drain(cx))?;
        if !me.shut {
            // close_notify: alert level warning (1), description 0.
            me.seal(std::iter::once(&[1u8, 0][..]), ALERT)?;
            me.shut = true;
        }
        ready!(me.poll_drain(cx))?;
        Pin::new(&mut me.tcp).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tls;
    use std::io::{Read, Write};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A finished TLS 1.3 session between two in-memory rustls connections, with the
    /// configurations tacit's channel uses.
    fn session() -> (rustls::ClientConnection, rustls::ServerConnection) {
        let id = tls::SelfSigned::generate("tacit.invalid").unwrap();
        let ccfg = tls::checked_server_client(tls::pinned(id.fingerprint().unwrap())).unwrap();
        let mut c = rustls::ClientConnection::new(ccfg, tls::server_name("tacit.invalid").unwrap()).unwrap();
        let mut s = rustls::ServerConnection::new(id.server_config().unwrap()).unwrap();
        let mut buf = Vec::new();
        for _ in 0..10 {
            buf.clear();
            while c.wants_write() {
                c.write_tls(&mut buf).unwrap();
            }
            let mut r = &buf[..];
            while !r.is_empty() {
                s.read_tls(&mut r).unwrap();
            }
            s.process_new_packets().unwrap();
            buf.clear();
            while s.wants_write() {
                s.write_tls(&mut buf).unwrap();
            }
            let mut r = &buf[..];
            while !r.is_empty() {
                c.read_tls(&mut r).unwrap();
            }
            c.process_new_packets().unwrap();
            if !c.is_handshaking() && !s.is_handshaking() && !s.wants_write() {
                break;
            }
        }
        assert!(!c.is_handshaking() && !s.is_handshaking());
        (c, s)
    }

    /// The client's half of the session as [`OwnRecords`] on a socket whose other
    /// end the test reads and writes raw, with the server's rustls connection.
    async fn own_client() -> (OwnRecords, TcpStream, rustls::ServerConnection) {
        let (c, s) = session();
        let secrets = c.dangerous_extract_secrets().unwrap();
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let (a, b) = tokio::join!(TcpStream::connect(addr), l.accept());
        (OwnRecords::new(a.unwrap(), secrets, &[]).unwrap(), b.unwrap().0, s)
    }

    /// rustls's records of the server, raw.
    fn server_records(s: &mut rustls::ServerConnection, data: &[u8]) -> Vec<u8> {
        s.writer().write_all(data).unwrap();
        let mut out = Vec::new();
        while s.wants_write() {
            s.write_tls(&mut out).unwrap();
        }
        out
    }

    /// Our records are TLS 1.3 records that rustls opens (one under 16 KiB, one split
    /// over two records, close_notify), and rustls's records are ours to open.
    #[tokio::test]
    async fn own_records_are_tls_1_3_records_that_rustls_reads() {
        let (mut own, mut raw, mut s) = own_client().await;
        let big: Vec<u8> = (0..20_000u32).map(|i| i as u8).collect();
        own.write_all(b"through tacit's records").await.unwrap();
        own.write_all(&big).await.unwrap();
        own.shutdown().await.unwrap();
        let mut wire = Vec::new();
        raw.read_to_end(&mut wire).await.unwrap();
        let mut r = &wire[..];
        let mut got = Vec::new();
        while !r.is_empty() {
            s.read_tls(&mut r).unwrap();
            s.process_new_packets().unwrap();
            let _ = s.reader().read_to_end(&mut got);
        }
        assert!(s.process_new_packets().unwrap().peer_has_closed());
        let mut want = b"through tacit's records".to_vec();
        want.extend_from_slice(&big);
        assert_eq!(got, want);
        let (mut own, mut raw, mut s) = own_client().await;
        let wire = server_records(&mut s, &big);
        raw.write_all(&wire).await.unwrap();
        let mut got = vec![0u8; big.len()];
        own.read_exact(&mut got).await.unwrap();
        assert_eq!(got, big);
    }

    /// A flipped bit, a replayed record, a dropped record, a key update and an alert
    /// are each an error, never data.
    #[tokio::test]
    async fn own_records_refuse_what_tls_refuses() {
        async fn read_err(wire: Vec<u8>, own: &mut OwnRecords, raw: &mut TcpStream) -> String {
            raw.write_all(&wire).await.unwrap();
            let mut got = [0u8; 64];
            let mut n = 0;
            loop {
                match own.read(&mut got[n..]).await {
                    Ok(0) => return "end of stream".into(),
                    Ok(k) => n += k,
                    Err(e) => return e.to_string(),
                }
            }
        }
        // A flipped bit.
        let (mut own, mut raw, mut s) = own_client().await;
        let mut wire = server_records(&mut s, b"one record");
        wire[8] ^= 1;
        assert!(read_err(wire, &mut own, &mut raw).await.contains("bad_record_mac"));
        // A replayed record: the first reads, its copy does not.
        let (mut own, mut raw, mut s) = own_client().await;
        let wire = server_records(&mut s, b"once");
        raw.write_all(&wire).await.unwrap();
        let mut got = [0u8; 4];
        own.read_exact(&mut got).await.unwrap();
        assert!(read_err(wire, &mut own, &mut raw).await.contains("bad_record_mac"));
        // A dropped record: the next one does not open.
        let (mut own, mut raw, mut s) = own_client().await;
        let _dropped = server_records(&mut s, b"first");
        let wire = server_records(&mut s, b"second");
        assert!(read_err(wire, &mut own, &mut raw).await.contains("bad_record_mac"));
        // A key update (a handshake message).
        let (mut own, mut raw, mut s) = own_client().await;
        s.refresh_traffic_keys().unwrap();
        let mut wire = Vec::new();
        while s.wants_write() {
            s.write_tls(&mut wire).unwrap();
        }
        assert!(read_err(wire, &mut own, &mut raw).await.contains("handshake message"));
        // close_notify ends the stream.
        let (mut own, mut raw, mut s) = own_client().await;
        s.send_close_notify();
        let mut wire = Vec::new();
        s.write_tls(&mut wire).unwrap();
        assert_eq!(read_err(wire, &mut own, &mut raw).await, "end of stream");
        // A record header that is not TLS 1.3 application data.
        let (mut own, mut raw, _) = own_client().await;
        let e = read_err(vec![0x16, 3, 1, 0, 5, 0, 0, 0, 0, 0], &mut own, &mut raw).await;
        assert!(e.contains("not TLS 1.3 application data"), "{e}");
    }
}
