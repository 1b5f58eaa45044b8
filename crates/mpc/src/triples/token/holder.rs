//! The parties' side of the token protocol: A (who holds the token and a pool of
//! `c_A` sequences) and B (who trusts the manufacturer's CA).

use super::apdu::{Command, Response, sw};
use super::card::{Card, Eeprom, Session};
use super::{
    CLA, INS_DELETE, INS_GENERATE, INS_GET_CERTIFICATE, INS_GET_RESPONSE, INS_RELEASE_A, INS_RELEASE_B, MAX_SEQUENCES,
    MIN_LOG, SeedRelease, SeedRequest, SequenceId, TokenCertificate, TokenOffer, TokenTrust, decompose, expand_a,
    expand_b, seal_aad, seal_key,
};
use crate::driver::TripleSource;
use crate::messages::{TripleKind, tags};
use crate::prg::Seed;
use crate::triples::TripleShares;
use crate::{Error, Party};
use curve25519_dalek::ristretto::RistrettoPoint;
use curve25519_dalek::scalar::Scalar;
use rand_core::CryptoRngCore;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tacit_net::{FramedConn, FramedListener};
use tacit_wire::{Decode, Encode, ErrorMessage, Reader, Writer};
use zeroize::Zeroize;

/// How A talks to its token.
pub trait TokenLink {
    /// Sends one command APDU and returns the token's response APDU.
    fn transmit(&mut self, cmd: &Command) -> impl std::future::Future<Output = Result<Response, Error>>;

    /// The connection, when this link can queue commands before reading their
    /// responses (a token process over a socket answers them in order). A card
    /// reader cannot; the default is `None`.
    fn queue(&mut self) -> Option<&mut FramedConn> {
        None
    }
}

/// How long A polls for the next `c_A` chunk before sleeping (init phase).
const FILL_SPIN: Duration = Duration::from_micros(200);

/// A token process reached over framed TCP (one APDU per frame).
#[derive(Debug)]
pub struct TcpTokenLink {
    conn: FramedConn,
}

impl TcpTokenLink {
    /// Wraps a connection to `tacit mpc token serve`.
    pub fn new(mut conn: FramedConn) -> Self {
        conn.set_max_frame(super::apdu::MAX_NE + 16);
        TcpTokenLink { conn }
    }
}

impl TokenLink for TcpTokenLink {
    async fn transmit(&mut self, cmd: &Command) -> Result<Response, Error> {
        self.conn.send(&cmd.encode()).await?;
        let got = self.conn.recv().await?;
        Response::decode(&got)
    }

    fn queue(&mut self) -> Option<&mut FramedConn> {
        Some(&mut self.conn)
    }
}

/// A token in this process (tests and benchmarks of the protocol without a socket).
#[derive(Debug)]
pub struct LocalTokenLink<E: Eeprom> {
    /// The token.
    pub card: Card<E>,
}

impl<E: Eeprom> TokenLink for LocalTokenLink<E> {
    async fn transmit(&mut self, cmd: &Command) -> Result<Response, Error> {
        let r = self.card.process(&cmd.encode());
        self.card.prefetch();
        Response::decode(&r)
    }
}

/// Serves a token over one framed connection until the host hangs up: each frame is
/// a command APDU, each answer a response APDU; between commands the token computes
/// ahead. `paired` says whether the connection proved the paired host's key (the
/// [`TokenServer`] admits no other); a stranger is refused RELEASE A, RELEASE B and
/// DELETE. The card is locked for one command at a time, so several connections
/// share it; a stream the connection leaves unfinished is erased when it ends — also
/// when this future is dropped (a deadline).
pub async fn serve_connection<E: Eeprom>(
    card: &Mutex<Card<E>>,
    mut conn: FramedConn,
    paired: bool,
) -> Result<u64, Error> {
    conn.set_max_frame(super::apdu::MAX_NE + 16);
    let mut session = EndOnDrop {
        card,
        session: if paired {
            Session::paired_host()
        } else {
            Session::stranger()
        },
    };
    let mut n = 0;
    loop {
        let cmd = match conn.recv().await {
            Ok(c) => c,
            Err(tacit_net::Error::Closed) => return Ok(n),
            Err(e) => return Err(e.into()),
        };
        let resp = lock(card).process_in(&mut session.session, &cmd);
        conn.send(&resp).await?;
        super::card::prefetch(&mut session.session);
        n += 1;
    }
}

/// A connection's session, ended in the card when it goes out of scope.
struct EndOnDrop<'c, E: Eeprom> {
    card: &'c Mutex<Card<E>>,
    session: Session,
}

impl<E: Eeprom> Drop for EndOnDrop<'_, E> {
    fn drop(&mut self) {
        lock(self.card).end_session(&mut self.session);
    }
}

fn lock<E: Eeprom>(card: &Mutex<Card<E>>) -> std::sync::MutexGuard<'_, Card<E>> {
    // A panic in one command leaves the card as consistent as after any command
    // (each command commits before it answers), so a poisoned lock is taken over.
    card.lock().unwrap_or_else(|e| e.into_inner())
}

/// The token process's network shell: TLS 1.3 with the token's link key, admitting
/// only the paired host's key (mutual pinning), under the project's admission control
/// ([`tacit_net::guard`]: a cap on connections fitted below the descriptor limit, a
/// share per address, a deadline per connection).
pub struct TokenServer<E: Eeprom> {
    card: Arc<Mutex<Card<E>>>,
    tls: Arc<tacit_net::tls::ServerConfig>,
    link: [u8; 32],
    limits: tacit_net::guard::ServeLimits,
}

impl<E: Eeprom> std::fmt::Debug for TokenServer<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenServer")
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl<E: Eeprom + Send + 'static> TokenServer<E> {
    /// The shell around `card`, admitting connections within `limits`.
    pub fn new(card: Card<E>, limits: tacit_net::guard::ServeLimits) -> Result<Self, Error> {
        let id = card.state().link_identity()?;
        let tls = id
            .server_config_checking_clients(tacit_net::tls::pinned(*card.state().host()))
            .map_err(|e| Error::Params(format!("the token's link: {e}")))?;
        let link = id
            .fingerprint()
            .map_err(|e| Error::Params(format!("the token's link: {e}")))?;
        Ok(TokenServer {
            card: Arc::new(Mutex::new(card)),
            tls,
            link,
            limits,
        })
    }

    /// The fingerprint of the link key (the host pins it).
    pub fn link_fingerprint(&self) -> [u8; 32] {
        self.link
    }

    /// The card (tests look at its state).
    pub fn card(&self) -> Arc<Mutex<Card<E>>> {
        self.card.clone()
    }

    /// Serves connections from `listener` until `stop_after` connections were
    /// admitted (for ever with `None`), then waits for them to end. `log` gets one
    /// line per refused, evicted, failed or timed-out connection.
    pub async fn serve(
        &self,
        listener: FramedListener,
        stop_after: Option<u64>,
        log: impl Fn(String) + Clone + Send + Sync + 'static,
    ) -> Result<(), Error> {
        let events = log.clone();
        let guard = tacit_net::guard::Guard::new(self.limits).on_event(Arc::new(move |e| events(e.to_string())));
        let host = *lock(&self.card).state().host();
        let (card, tls) = (self.card.clone(), self.tls.clone());
        listener
            .speaking(tacit_net::Protocol::MpcToken)
            .serve(&guard, stop_after, move |conn| {
                let (card, tls, log) = (card.clone(), tls.clone(), log.clone());
                async move {
                    let peer = conn.peer_addr().map(|a| a.to_string()).unwrap_or_default();
                    let conn = match conn.accept_tls(tls).await {
                        Ok(c) => c,
                        Err(e) => {
                            log(format!("refused {peer}: {e} (only the paired host is served)"));
                            return;
                        }
                    };
                    let paired = conn
                        .peer_certificate()
                        .and_then(|c| tacit_net::tls::spki_fingerprint(c).ok())
                        .is_some_and(|fp| fp == host);
                    if let Err(e) = serve_connection(&card, conn, paired).await {
                        log(format!("host connection ended: {e}"));
                    }
                }
            })
            .await;
        Ok(())
    }
}

/// One stored `c_A` sequence.
#[derive(Clone, PartialEq, Eq)]
pub struct StoredSequence {
    /// The token it came from.
    pub token_id: [u8; 16],
    /// Which sequence.
    pub id: SequenceId,
    /// `c_A`, packed.
    pub c_a: Vec<u64>,
}

impl std::fmt::Debug for StoredSequence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "StoredSequence(d = {}, 2^{} triples)", self.id.d, self.id.log)
    }
}

impl Drop for StoredSequence {
    fn drop(&mut self) {
        self.c_a.zeroize();
    }
}

impl Encode for StoredSequence {
    fn encode(&self, w: &mut Writer) {
        w.put_envelope(tags::TOKEN_SEQUENCE);
        w.put_fixed(&self.token_id);
        w.put_u64(self.id.d);
        w.put_u8(self.id.log);
        w.put_count(self.c_a.len() * 8);
        for x in &self.c_a {
            w.put_fixed(&x.to_le_bytes());
        }
    }
}

impl Decode for StoredSequence {
    fn decode(r: &mut Reader<'_>) -> tacit_wire::Result<Self> {
        r.envelope(tags::TOKEN_SEQUENCE, "stored c_A sequence")?;
        let token_id = r.array("token id")?;
        let d = r.u64()?;
        let log = r.u8()?;
        if !(MIN_LOG..=super::MAX_LOG).contains(&log) {
            return Err(tacit_wire::Error::invalid("sequence size", format!("2^{log}")));
        }
        let bytes = r.var_bytes("c_A", 1 << 30)?;
        if bytes.len() != (1usize << log) / 8 {
            return Err(tacit_wire::Error::invalid(
                "c_A",
                "length does not match the sequence size",
            ));
        }
        let c_a = bytes
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
            .collect();
        Ok(StoredSequence {
            token_id,
            id: SequenceId { d, log },
            c_a,
        })
    }
}

/// A's pool of `c_A` sequences from the init phase: in memory, or in a folder (one
/// file per sequence, written with mode 0600).
///
/// **Sessions side by side.** Several sessions (of one server, or of several processes)
/// may open the same folder. A session uses a sequence only after it *claimed* it
/// ([`Pool::claim`]): the file `D.ca` is locked (an exclusive `flock`, which the
/// kernel drops when the process ends) and renamed to `D.claim`, so no other pool —
/// in this process or another — can claim it, and a claim is never shared. A used or
/// given-up sequence's claim file is removed ([`Pool::take`]); a claim still held when
/// the pool is dropped is removed too (what the token did with it is not known). At
/// [`Pool::open`], claim files nobody holds locked (left by a process that crashed)
/// are swept: the sequence may have been released, so it is not used again.
#[derive(Debug, Default)]
pub struct Pool {
    dir: Option<PathBuf>,
    seqs: BTreeMap<u64, StoredSequence>,
    /// The sequences this pool claimed, with the locked claim file (none in memory).
    claims: BTreeMap<u64, Option<Claim>>,
}

/// A claimed sequence's file, locked while the claim lasts.
#[derive(Debug)]
struct Claim {
    path: PathBuf,
    _file: std::fs::File,
}

impl Drop for Pool {
    fn drop(&mut self) {
        for (_, c) in std::mem::take(&mut self.claims) {
            if let Some(c) = c {
                let _ = std::fs::remove_file(&c.path);
            }
        }
    }
}

impl Pool {
    /// An empty pool in memory.
    pub fn in_memory() -> Self {
        Pool::default()
    }

    /// The pool in `dir` (created if missing), loading what is there; claim files left
    /// by processes that ended without giving them up are removed.
    pub fn open(dir: impl Into<PathBuf>) -> Result<Self, Error> {
        let dir = dir.into();
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
        let mut seqs = BTreeMap::new();
        let rd = std::fs::read_dir(&dir).map_err(|e| Error::io(format!("reading {}", dir.display()), e))?;
        for ent in rd {
            let ent = ent.map_err(|e| Error::io(format!("reading {}", dir.display()), e))?;
            let p = ent.path();
            match p.extension().and_then(|x| x.to_str()) {
                Some("ca") => {}
                Some("claim") => {
                    sweep_claim(&p)?;
                    continue;
                }
                _ => continue,
            }
            let bytes = match std::fs::read(&p) {
                Ok(b) => b,
                // Claimed (renamed) by another session since the folder was listed.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(Error::io(format!("reading {}", p.display()), e)),
            };
            let s = StoredSequence::from_wire(&bytes)
                .map_err(|e| Error::Params(format!("{} is not a stored sequence: {e}", p.display())))?;
            seqs.insert(s.id.d, s);
        }
        Ok(Pool {
            dir: Some(dir),
            seqs,
            claims: BTreeMap::new(),
        })
    }

    fn path(&self, d: u64) -> Option<PathBuf> {
        self.dir.as_ref().map(|dir| dir.join(format!("{d:016x}.ca")))
    }

    fn claim_path(&self, d: u64) -> Option<PathBuf> {
        self.dir.as_ref().map(|dir| dir.join(format!("{d:016x}.claim")))
    }

    /// Adds a sequence, free for any session to claim. The file is written under
    /// another name and renamed, so a session opening the folder meanwhile (`tacit mpc
    /// token fill` beside a running server) never reads half of it.
    pub fn put(&mut self, s: StoredSequence) -> Result<(), Error> {
        if let Some(p) = self.path(s.id.d) {
            let tmp = p.with_extension("ca-new");
            write_private(&tmp, &s.to_wire())?;
            std::fs::rename(&tmp, &p).map_err(|e| Error::io(format!("storing {}", p.display()), e))?;
        }
        self.seqs.insert(s.id.d, s);
        Ok(())
    }

    /// Adds a sequence claimed by this pool at once (generated for its own session).
    pub fn put_claimed(&mut self, s: StoredSequence) -> Result<(), Error> {
        let d = s.id.d;
        let claim = match self.claim_path(d) {
            Some(p) => {
                use std::io::Write;
                let mut f = open_private(&p)?;
                // A sweep in another pool may open the new file before it is locked
                // and remove it: that loses only the copy on disk (this pool holds the
                // sequence in memory, and the session uses it), so it is no error.
                match f.try_lock() {
                    Ok(()) | Err(std::fs::TryLockError::WouldBlock) => {}
                    Err(std::fs::TryLockError::Error(e)) => {
                        return Err(Error::io(format!("locking {}", p.display()), e));
                    }
                }
                f.write_all(&s.to_wire())
                    .map_err(|e| Error::io(format!("writing {}", p.display()), e))?;
                Some(Claim { path: p, _file: f })
            }
            None => None,
        };
        self.seqs.insert(d, s);
        self.claims.insert(d, claim);
        Ok(())
    }

    /// Claims sequence `d` for this pool's session: true when it is now this pool's
    /// alone; false when another session holds it or used it (it leaves this pool).
    pub fn claim(&mut self, d: u64) -> Result<bool, Error> {
        if self.claims.contains_key(&d) {
            return Ok(true);
        }
        if !self.seqs.contains_key(&d) {
            return Ok(false);
        }
        let (Some(p), Some(to)) = (self.path(d), self.claim_path(d)) else {
            self.claims.insert(d, None);
            return Ok(true);
        };
        let gone = |pool: &mut Pool| {
            pool.seqs.remove(&d);
            Ok(false)
        };
        let f = match std::fs::OpenOptions::new().read(true).open(&p) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return gone(self),
            Err(e) => return Err(Error::io(format!("opening {}", p.display()), e)),
        };
        match f.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => return gone(self),
            Err(std::fs::TryLockError::Error(e)) => return Err(Error::io(format!("locking {}", p.display()), e)),
        }
        // Locked: whoever renamed or removed it since we opened it has let go, so the
        // rename tells whether the file is still the free `D.ca`.
        match std::fs::rename(&p, &to) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return gone(self),
            Err(e) => return Err(Error::io(format!("claiming {}", p.display()), e)),
        }
        self.claims.insert(d, Some(Claim { path: to, _file: f }));
        Ok(true)
    }

    /// Removes and returns sequence `d` (it is used up, or given up): its file goes.
    pub fn take(&mut self, d: u64) -> Result<Option<StoredSequence>, Error> {
        let p = match self.claims.remove(&d) {
            Some(Some(c)) => Some(c.path.clone()),
            Some(None) => None,
            None => self.path(d),
        };
        if let Some(p) = p {
            match std::fs::remove_file(&p) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io(format!("removing {}", p.display()), e)),
            }
        }
        Ok(self.seqs.remove(&d))
    }

    /// The stored sequences of `token_id` no session has claimed (as far as this pool
    /// knows: [`Pool::claim`] finds out).
    pub fn list(&self, token_id: &[u8; 16]) -> Vec<SequenceId> {
        self.seqs
            .values()
            .filter(|s| &s.token_id == token_id && !self.claims.contains_key(&s.id.d))
            .map(|s| s.id)
            .collect()
    }

    /// The sequences this pool holds claimed.
    pub fn claimed(&self) -> Vec<u64> {
        self.claims.keys().copied().collect()
    }

    /// Triples stored for `token_id`.
    pub fn triples(&self, token_id: &[u8; 16]) -> usize {
        self.list(token_id).iter().map(|s| s.len()).sum()
    }
}

/// Removes a claim file that no process holds locked (its process ended).
fn sweep_claim(p: &std::path::Path) -> Result<(), Error> {
    let f = match std::fs::OpenOptions::new().read(true).open(p) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io(format!("opening {}", p.display()), e)),
    };
    match f.try_lock() {
        Ok(()) => match std::fs::remove_file(p) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Error::io(format!("removing the stale claim {}", p.display()), e)),
        },
        Err(std::fs::TryLockError::WouldBlock) => Ok(()),
        Err(std::fs::TryLockError::Error(e)) => Err(Error::io(format!("locking {}", p.display()), e)),
    }
}

fn write_private(p: &std::path::Path, bytes: &[u8]) -> Result<(), Error> {
    use std::io::Write;
    open_private(p)?
        .write_all(bytes)
        .map_err(|e| Error::io(format!("writing {}", p.display()), e))
}

/// Opens `p` for writing, created with mode 0600 and truncated.
fn open_private(p: &std::path::Path) -> Result<std::fs::File, Error> {
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600);
    }
    o.open(p).map_err(|e| Error::io(format!("writing {}", p.display()), e))
}

async fn transmit_ok<L: TokenLink>(link: &mut L, cmd: Command, what: &str) -> Result<Response, Error> {
    link.transmit(&cmd).await?.check(what)
}

/// Reads the token's certificate.
pub async fn certificate<L: TokenLink>(link: &mut L) -> Result<TokenCertificate, Error> {
    let r = transmit_ok(
        link,
        Command {
            cla: CLA,
            ins: INS_GET_CERTIFICATE,
            p1: 0,
            p2: 0,
            data: vec![],
            ne: super::apdu::MAX_NE,
        },
        "to give its certificate",
    )
    .await?;
    TokenCertificate::from_wire(&r.data).map_err(|e| Error::Token(format!("sent a malformed certificate: {e}")))
}

/// Init phase (paper §4.1, Fig. 4): asks the token for a sequence of `2^log` triples
/// and stores the streamed `c_A` in `pool`. `progress(bytes_done, bytes_total)` is
/// called after each block.
pub async fn generate<L: TokenLink>(
    link: &mut L,
    token_id: [u8; 16],
    log: u8,
    pool: &mut Pool,
    progress: &mut (dyn FnMut(u64, u64) + Send),
) -> Result<SequenceId, Error> {
    let s = stream_sequence(link, token_id, log, progress).await?;
    let id = s.id;
    pool.put(s)?;
    Ok(id)
}

/// GENERATE and the `c_A` stream of one sequence (the init phase of [`generate`]).
async fn stream_sequence<L: TokenLink>(
    link: &mut L,
    token_id: [u8; 16],
    log: u8,
    progress: &mut (dyn FnMut(u64, u64) + Send),
) -> Result<StoredSequence, Error> {
    let r = transmit_ok(
        link,
        Command {
            cla: CLA,
            ins: INS_GENERATE,
            p1: log,
            p2: 0,
            data: vec![],
            ne: 9,
        },
        "to generate a sequence",
    )
    .await?;
    if r.data.len() != 9 || r.data[8] != log || r.sw != 0x6100 {
        return Err(Error::Token("answered GENERATE with garbage".into()));
    }
    let d = u64::from_be_bytes(r.data[..8].try_into().map_err(|_| Error::Token("bad counter".into()))?);
    let total = (1usize << log) / 8;
    // c_A goes straight into words (one copy out of each response).
    let mut c_a: Vec<u64> = Vec::with_capacity(total / 8);
    let get = Command {
        cla: 0x00,
        ins: INS_GET_RESPONSE,
        p1: 0,
        p2: 0,
        data: vec![],
        ne: super::apdu::MAX_NE,
    };
    // Takes one GET RESPONSE answer; true when it was the last.
    let mut take = |r: Response, c_a: &mut Vec<u64>| -> Result<bool, Error> {
        let r = r.check("to send c_A")?;
        let done = 8 * c_a.len();
        if done + r.data.len() > total || r.data.len() % 16 != 0 || r.data.is_empty() {
            return Err(Error::Token(format!(
                "sent {} bytes of c_A after {done}; the sequence has {total}",
                r.data.len(),
            )));
        }
        c_a.extend(
            r.data
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])),
        );
        let mut data = r.data;
        data.zeroize();
        progress(8 * c_a.len() as u64, total as u64);
        Ok(r.sw == sw::OK)
    };
    if let Some(conn) = link.queue() {
        // Over a socket, keep PIPELINE requests in flight so that the token computes
        // the next chunk while this side reads and stores the last one. Requests
        // never cover more than what is left at MAX_NE bytes each, so none is sent
        // past the end of the stream (a token sending less just gets more requests).
        const PIPELINE: usize = 3;
        let get = get.encode();
        let mut in_flight = 0usize;
        loop {
            while in_flight < PIPELINE && 8 * c_a.len() + in_flight * super::apdu::MAX_NE < total {
                conn.send(&get).await?;
                in_flight += 1;
            }
            if in_flight == 0 {
                return Err(Error::Token(format!("has not ended c_A after all {total} bytes")));
            }
            // Polled: the token answers every ~0.1 ms, and a sleeping reader makes the
            // token's send pay for waking it (9 % of the token's profile).
            let r = Response::decode(&conn.recv_spin(FILL_SPIN).await?)?;
            in_flight -= 1;
            if take(r, &mut c_a)? {
                break;
            }
        }
        if in_flight != 0 {
            return Err(Error::Token("ended c_A before answering every request".into()));
        }
    } else {
        loop {
            let r = link.transmit(&get).await?;
            if take(r, &mut c_a)? {
                break;
            }
        }
    }
    if 8 * c_a.len() != total {
        return Err(Error::Token(format!(
            "ended c_A after {} of {total} bytes",
            8 * c_a.len()
        )));
    }
    let id = SequenceId { d, log };
    Ok(StoredSequence { token_id, id, c_a })
}

/// Asks the token to erase sequence `d` (A gives it up; nothing of it is released
/// any more) and drops it from `pool`.
pub async fn delete<L: TokenLink>(link: &mut L, pool: &mut Pool, d: u64) -> Result<(), Error> {
    pool.take(d)?;
    transmit_ok(
        link,
        Command {
            cla: CLA,
            ins: INS_DELETE,
            p1: 0,
            p2: 0,
            data: d.to_be_bytes().to_vec(),
            ne: 0,
        },
        "to delete a sequence",
    )
    .await?;
    Ok(())
}

/// Picks the pool's sequences for `n` triples: for each binary digit of `n` (paper
/// §4.3) a stored sequence of that size, or the sizes still missing.
pub fn plan(pool: &Pool, token_id: &[u8; 16], n: usize) -> (Vec<SequenceId>, Vec<u8>) {
    let mut have = pool.list(token_id);
    let mut chosen = Vec::new();
    let mut missing = Vec::new();
    for log in decompose(n) {
        if let Some(i) = have.iter().position(|s| s.log == log) {
            chosen.push(have.remove(i));
        } else {
            missing.push(log);
        }
    }
    (chosen, missing)
}

/// A's triple source: its token (for `s_A` and to relay B's request) and its pool.
/// Sizes missing from the pool are generated on the spot (init work done in the setup
/// phase, reported in [`TokenHolder::init_time`]).
#[derive(Debug)]
pub struct TokenHolder<L: TokenLink> {
    link: L,
    /// The token's certificate.
    pub certificate: TokenCertificate,
    /// The `c_A` pool.
    pub pool: Pool,
    /// Time spent generating missing sequences during the last setup.
    pub init_time: Duration,
    /// Bytes A exchanged with the token during the last setup (commands + responses).
    pub token_bytes: u64,
}

impl<L: TokenLink> TokenHolder<L> {
    /// Reads the token's certificate.
    pub async fn new(mut link: L, pool: Pool) -> Result<Self, Error> {
        let certificate = certificate(&mut link).await?;
        Ok(TokenHolder {
            link,
            certificate,
            pool,
            init_time: Duration::ZERO,
            token_bytes: 0,
        })
    }

    /// The link to the token.
    pub fn link(&mut self) -> &mut L {
        &mut self.link
    }

    /// Init phase: fills the pool so that `n` triples are covered.
    pub async fn fill(
        &mut self,
        n: usize,
        progress: &mut (dyn FnMut(u64, u64) + Send),
    ) -> Result<Vec<SequenceId>, Error> {
        let (_, missing) = plan(&self.pool, &self.certificate.token_id, n);
        let total: u64 = missing.iter().map(|&l| (1u64 << l) / 8).sum();
        let mut done = 0u64;
        let mut out = Vec::new();
        for log in missing {
            let id = self.certificate.token_id;
            let base = done;
            let s = generate(&mut self.link, id, log, &mut self.pool, &mut |b, _| {
                progress(base + b, total)
            })
            .await?;
            done += (1u64 << log) / 8;
            out.push(s);
        }
        Ok(out)
    }
}

impl<L: TokenLink> TripleSource for TokenHolder<L> {
    fn kind(&self) -> TripleKind {
        TripleKind::Token
    }

    async fn triples(&mut self, conn: &mut FramedConn, party: Party, count: usize) -> Result<TripleShares, Error> {
        if party != Party::A {
            return Err(Error::Params("the token holder plays party a".into()));
        }
        let t = Instant::now();
        let chosen = match self.reserve(count).await {
            Ok(c) => c,
            Err(e) => {
                // Nothing was released: what this session claimed is given up (the
                // token evicts such sequences when it needs the room).
                for d in self.pool.claimed() {
                    let _ = self.pool.take(d);
                }
                let _ = conn.send(&ErrorMessage::new(e.to_string()).to_wire()).await;
                return Err(e);
            }
        };
        self.init_time = t.elapsed();
        // The offer goes to B first, so that B checks the certificate and makes its
        // key while the token releases the s_A (the token still releases s_B only
        // after them: RELEASE B is sent below, once every RELEASE A is answered).
        let offer = TokenOffer {
            certificate: self.certificate.clone(),
            sequences: chosen.clone(),
        };
        conn.send(&offer.to_wire()).await?;
        match self.setup(conn, &chosen, count).await {
            Ok(mine) => Ok(mine),
            Err(e) => {
                // The setup is abandoned: a sequence whose s_A was released and whose
                // s_B did not leave is of no use to anyone, so A gives up every chosen
                // sequence — the token erases them (else they would stay AReleased,
                // beyond eviction, until the token is full) and the pool drops them.
                // A sequence already erased (released, evicted) answers 6A82; fine.
                for s in &chosen {
                    let _ = delete(&mut self.link, &mut self.pool, s.d).await;
                }
                // B waits for the seed release: tell it why none comes, unless B is
                // the one who refused.
                if !matches!(e, Error::Refused(_)) {
                    let _ = conn.send(&ErrorMessage::new(e.to_string()).to_wire()).await;
                }
                Err(e)
            }
        }
    }
}

impl<L: TokenLink> TokenHolder<L> {
    /// The sequences of this session's setup, claimed in the pool so that no other
    /// session (of this process or another on the same pool folder) offers them: for
    /// each size of [`decompose`]`(count)` a stored one this pool could claim, else one
    /// generated now (init work, claimed as it is stored).
    async fn reserve(&mut self, count: usize) -> Result<Vec<SequenceId>, Error> {
        let token_id = self.certificate.token_id;
        let mut chosen = Vec::new();
        for log in decompose(count) {
            let mut got = None;
            while let Some(s) = self.pool.list(&token_id).into_iter().find(|s| s.log == log) {
                // A sequence another session claimed first leaves this pool.
                if self.pool.claim(s.d)? {
                    got = Some(s);
                    break;
                }
            }
            let s = match got {
                Some(s) => s,
                None => {
                    let s = stream_sequence(&mut self.link, token_id, log, &mut |_, _| {}).await?;
                    let id = s.id;
                    self.pool.put_claimed(s)?;
                    id
                }
            };
            chosen.push(s);
        }
        Ok(chosen)
    }

    /// The setup after the offer: RELEASE A, B's seed request, RELEASE B, the release
    /// relayed, the triples expanded. On an error the caller gives the sequences up.
    async fn setup(
        &mut self,
        conn: &mut FramedConn,
        chosen: &[SequenceId],
        count: usize,
    ) -> Result<TripleShares, Error> {
        let mut mine = TripleShares::default();
        let release_a = |s: &SequenceId| Command {
            cla: CLA,
            ins: INS_RELEASE_A,
            p1: 0,
            p2: 0,
            data: s.d.to_be_bytes().to_vec(),
            ne: 16,
        };
        let mut answers = Vec::with_capacity(chosen.len());
        if let Some(q) = self.link.queue() {
            // A token process answers in order: all RELEASE A in flight at once.
            for s in chosen {
                q.send(&release_a(s).encode()).await?;
            }
            for _ in chosen {
                answers.push(Response::decode(&q.recv().await?)?);
            }
        } else {
            for s in chosen {
                answers.push(self.link.transmit(&release_a(s)).await?);
            }
        }
        // A sequence the token no longer holds (evicted to make room, or deleted) is
        // useless: it leaves the pool, and the next session generates afresh.
        let gone: Vec<u64> = chosen
            .iter()
            .zip(&answers)
            .filter(|(_, r)| r.sw == sw::NOT_FOUND)
            .map(|(s, _)| s.d)
            .collect();
        if !gone.is_empty() {
            return Err(Error::Triples(format!(
                "the token no longer holds {} of the pool's sequences (evicted to make room, or deleted); \
                 they were dropped from the pool: run the session again",
                gone.len()
            )));
        }
        let mut answers = answers
            .into_iter()
            .map(|r| r.check("to release s_A"))
            .collect::<Result<Vec<_>, _>>()?;
        let mut seeds = Vec::with_capacity(chosen.len());
        for r in &mut answers {
            let seed: Result<[u8; 16], _> = r.data.as_slice().try_into();
            r.data.zeroize();
            seeds.push(Seed(
                seed.map_err(|_| Error::Token("sent an s_A that is not 16 bytes".into()))?,
            ));
        }
        let req_bytes = conn.recv().await?;
        crate::driver::refused(&req_bytes)?;
        let req = SeedRequest::from_wire(&req_bytes)?;
        if req.sequences != *chosen {
            return Err(Error::Peer("asked for other sequences than offered".into()));
        }
        let r = self
            .link
            .transmit(&Command {
                cla: CLA,
                ins: INS_RELEASE_B,
                p1: 0,
                p2: 0,
                data: req_bytes.clone(),
                ne: super::apdu::MAX_NE,
            })
            .await?;
        self.token_bytes = 0;
        if r.sw != sw::OK {
            return Err(Error::Token(format!(
                "refused to release s_B: status {:04X} ({})",
                r.sw,
                sw::describe(r.sw)
            )));
        }
        // A cannot read the release; it only relays it.
        let release =
            SeedRelease::from_wire(&r.data).map_err(|e| Error::Token(format!("sent a malformed release: {e}")))?;
        conn.send(&release.to_wire()).await?;
        for (s, seed) in chosen.iter().zip(&seeds) {
            let stored = self
                .pool
                .take(s.d)?
                .ok_or_else(|| Error::Triples(format!("sequence {} vanished from the pool", s.d)))?;
            let part = expand_a(seed, s.log, stored.c_a.clone());
            mine.append(&part);
        }
        mine.truncate(count);
        Ok(mine)
    }
}

/// B's triple source: trusts the tokens [`TokenTrust`] accepts.
#[derive(Debug)]
pub struct TokenPeer<R> {
    trust: TokenTrust,
    rng: R,
}

impl<R: CryptoRngCore> TokenPeer<R> {
    /// Trusts the tokens `trust` accepts.
    pub fn new(trust: TokenTrust, rng: R) -> Self {
        TokenPeer { trust, rng }
    }
}

/// B's check of an offer: a token `trust` accepts ([`TokenCertificate::check`]) and
/// exactly the sequences the composition of paper §4.3 takes for `count` triples
/// ([`decompose`]), in that order — never more, so that A cannot make B expand
/// sequences of 2^32 triples for a circuit of one AND gate.
pub fn check_offer(offer: &TokenOffer, trust: &TokenTrust, count: usize) -> Result<RistrettoPoint, Error> {
    let want = decompose(count);
    let got: Vec<u8> = offer.sequences.iter().map(|s| s.log).collect();
    if got != want {
        let show = |v: &[u8]| v.iter().map(|l| format!("2^{l}")).collect::<Vec<_>>().join(" + ");
        return Err(Error::Peer(format!(
            "offered sequences of {} triples; {count} triples take exactly {}",
            if got.is_empty() { "0".into() } else { show(&got) },
            show(&want)
        )));
    }
    if offer.sequences.len() > MAX_SEQUENCES {
        return Err(Error::Peer("offered too many sequences".into()));
    }
    offer.certificate.check(trust)
}

/// B's key agreement and opening of the release: `Z = e·T`, `K = HKDF(Z, …)`; a
/// release that does not open was not made by the certified token for this request.
pub fn open_release(
    release: &SeedRelease,
    req: &SeedRequest,
    e: &Scalar,
    token_key: &RistrettoPoint,
    token_public: &[u8; 32],
) -> Result<Vec<Seed>, Error> {
    let key = seal_key(&(token_key * e), token_public, req)?;
    let mut plain = key.open(&[0u8; 12], &seal_aad(req), &release.sealed).map_err(|_| {
        Error::Untrusted(
            "the seed release does not open: it was not sealed by the certified token for this request".into(),
        )
    })?;
    if plain.len() != 16 * req.sequences.len() {
        plain.zeroize();
        return Err(Error::Untrusted(
            "the seed release holds the wrong number of seeds".into(),
        ));
    }
    let seeds = plain
        .chunks_exact(16)
        .map(|c| {
            let mut s = [0u8; 16];
            s.copy_from_slice(c);
            Seed(s)
        })
        .collect();
    plain.zeroize();
    Ok(seeds)
}

impl<R: CryptoRngCore> TripleSource for TokenPeer<R> {
    fn kind(&self) -> TripleKind {
        TripleKind::Token
    }

    async fn triples(&mut self, conn: &mut FramedConn, party: Party, count: usize) -> Result<TripleShares, Error> {
        if party != Party::B {
            return Err(Error::Params("the token's peer plays party b".into()));
        }
        let got = conn.recv().await?;
        crate::driver::refused(&got)?;
        let offer = TokenOffer::from_wire(&got)?;
        let t = match check_offer(&offer, &self.trust, count) {
            Ok(t) => t,
            Err(e) => {
                let _ = conn
                    .send(&ErrorMessage::new(format!("b refuses the token: {e}")).to_wire())
                    .await;
                return Err(e);
            }
        };
        let mut e = Scalar::random(&mut self.rng);
        let mut nonce = [0u8; 32];
        self.rng.fill_bytes(&mut nonce);
        let req = SeedRequest {
            sequences: offer.sequences.clone(),
            ephemeral: RistrettoPoint::mul_base(&e).compress().to_bytes(),
            nonce,
        };
        conn.send(&req.to_wire()).await?;
        let got = conn.recv().await?;
        crate::driver::refused(&got)?;
        let release = SeedRelease::from_wire(&got)?;
        let seeds = open_release(&release, &req, &e, &t, &offer.certificate.public);
        e.zeroize();
        let seeds = seeds?;
        let mut mine = TripleShares::default();
        for (s, seed) in offer.sequences.iter().zip(&seeds) {
            mine.append(&expand_b(seed, s.log));
        }
        mine.truncate(count);
        Ok(mine)
    }
}
