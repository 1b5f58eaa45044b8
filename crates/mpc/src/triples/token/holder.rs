//! The parties' side of the token protocol: A (who holds the token and a pool of
//! `c_A` sequences) and B (who trusts the manufacturer's CA).

use super::apdu::{Command, Response, sw};
use super::card::{Card, Eeprom, Session};
use super::{
    CLA, INS_DELETE, INS_GENERATE, INS_GET_CERTIFICATE, INS_GET_RESPONSE, INS_GIVE_BACK, INS_RELEASE_A, INS_RELEASE_B,
    MAX_SEQUENCES, MIN_LOG, SeedRelease, SeedRequest, SequenceId, TokenCertificate, TokenOffer, TokenTrust, decompose,
    expand_a_onto, expand_b_onto, seal_aad, seal_key,
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

    /// Ends the link (the token's session ends and its connection slot is freed);
    /// later commands fail. The default does nothing.
    fn close(&mut self) -> impl std::future::Future<Output = ()> {
        async {}
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

    async fn close(&mut self) {
        // The token reads the end of the stream, ends the session and frees the slot.
        let _ = self.conn.shutdown().await;
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

/// Where a stored sequence sits in a pool: its token and its counter (every token
/// counts `d` from 0, so `d` alone does not name a sequence).
pub type PoolKey = ([u8; 16], u64);

/// A's pool of `c_A` sequences from the init phase: in memory, or in a folder (one
/// file per sequence, `<token id>-<d>-<log>.ca`, written with mode 0600).
///
/// **An index, not a copy.** Opening a folder reads only its file names: a sequence's
/// `c_A` is read from its claimed, locked file when the session uses it
/// ([`Pool::take`]), so a session holds in memory only the sequences it spends, and
/// only while it spends them.
///
/// **Sessions side by side.** Several sessions (of one server, or of several processes)
/// may open the same folder. A session uses a sequence only after it *claimed* it
/// ([`Pool::claim`]): the file `….ca` is locked (an exclusive `flock`, which the
/// kernel drops when the process ends) and renamed to `….claim`, so no other pool —
/// in this process or another — can claim it, and a claim is never shared. A used
/// sequence's claim file is removed ([`Pool::take`]); one given back ([`Pool::unclaim`],
/// after the token took it back) is renamed `….ca` again; a claim still held when
/// the pool is dropped is removed (what the token did with it is not known). At
/// [`Pool::open`], claim files nobody holds locked (left by a process that crashed)
/// are swept: the sequence may have been released, so it is not used again.
///
/// **A folder others cannot write.** [`Pool::open`] refuses a folder that is not the
/// user's own or that group or others may write, files are created new (never
/// through an existing name or a symbolic link), a stored file is never replaced,
/// and entries that are not regular files are skipped.
#[derive(Debug, Default)]
pub struct Pool {
    dir: Option<PathBuf>,
    /// The sequences no claim of this pool holds (as far as it knows: another pool
    /// may have claimed them since), with their size.
    free: BTreeMap<PoolKey, u8>,
    /// In memory only: the sequences themselves.
    mem: BTreeMap<PoolKey, StoredSequence>,
    /// The sequences this pool claimed, with their size and locked claim file (none
    /// in memory).
    claims: BTreeMap<PoolKey, (u8, Option<Claim>)>,
}

/// A claimed sequence's file, locked while the claim lasts.
#[derive(Debug)]
struct Claim {
    path: PathBuf,
    file: std::fs::File,
}

impl Drop for Pool {
    fn drop(&mut self) {
        for (_, (_, c)) in std::mem::take(&mut self.claims) {
            if let Some(c) = c {
                let _ = std::fs::remove_file(&c.path);
            }
        }
    }
}

/// The name of a stored sequence's file, without its extension.
fn stem(token_id: &[u8; 16], id: SequenceId) -> String {
    let mut s = String::with_capacity(56);
    for b in token_id {
        s.push_str(&format!("{b:02x}"));
    }
    s.push_str(&format!("-{:016x}-{:02}", id.d, id.log));
    s
}

/// The token, sequence and extension a pool file's name says; `None` for any other
/// name (files of other programs, and of the earlier `<d>.ca` naming, are left alone).
fn parse_name(name: &str) -> Option<([u8; 16], SequenceId, &str)> {
    let (stem, ext) = name.split_once('.')?;
    let mut parts = stem.split('-');
    let (t, d, log) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || t.len() != 32 || d.len() != 16 || log.len() != 2 {
        return None;
    }
    let mut token_id = [0u8; 16];
    for (i, b) in token_id.iter_mut().enumerate() {
        *b = u8::from_str_radix(t.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    let d = u64::from_str_radix(d, 16).ok()?;
    let log: u8 = log.parse().ok()?;
    if !(MIN_LOG..=super::MAX_LOG).contains(&log) {
        return None;
    }
    Some((token_id, SequenceId { d, log }, ext))
}

/// Opens `p` for reading without following a symbolic link and without blocking on
/// a FIFO; `Ok(None)` when it is missing or not a regular file.
fn open_regular(p: &std::path::Path) -> Result<Option<std::fs::File>, Error> {
    use std::os::unix::fs::OpenOptionsExt;
    let flags = rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK;
    let f = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags.bits() as i32)
        .open(p)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        // ELOOP: a symbolic link, which the pool never made.
        Err(e) if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) => return Ok(None),
        Err(e) => return Err(Error::io(format!("opening {}", p.display()), e)),
    };
    let regular = f
        .metadata()
        .map_err(|e| Error::io(format!("reading {}", p.display()), e))?
        .is_file();
    Ok(regular.then_some(f))
}

/// Creates `p` new (never through an existing name or a symbolic link), mode 0600.
fn create_private(p: &std::path::Path) -> Result<std::fs::File, Error> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(p)
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                Error::Params(format!(
                    "{} already exists: the pool never writes through an existing name",
                    p.display()
                ))
            } else {
                Error::io(format!("creating {}", p.display()), e)
            }
        })
}

/// Refuses a pool folder that is not this user's own or that others may write into
/// (they could plant names the pool then uses, or take its sequences).
fn check_folder(dir: &std::path::Path) -> Result<(), Error> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(dir).map_err(|e| Error::io(format!("reading {}", dir.display()), e))?;
    if !m.is_dir() {
        return Err(Error::Params(format!("{} is not a folder", dir.display())));
    }
    let me = rustix::process::geteuid().as_raw();
    if m.uid() != me {
        return Err(Error::Params(format!(
            "the pool folder {} belongs to user {}, not to this user ({me}): use a folder of your own",
            dir.display(),
            m.uid()
        )));
    }
    if m.mode() & 0o022 != 0 {
        return Err(Error::Params(format!(
            "the pool folder {} may be written by group or others (mode {:o}): `chmod go-w` it, or use a folder of your own",
            dir.display(),
            m.mode() & 0o7777
        )));
    }
    Ok(())
}

impl Pool {
    /// An empty pool in memory.
    pub fn in_memory() -> Self {
        Pool::default()
    }

    /// The pool in `dir` (created, mode 0700, if missing), indexed by its file names
    /// (no `c_A` is read); claim files left by processes that ended without giving
    /// them up are removed. Refuses a folder that is not the user's own or that group
    /// or others may write.
    pub fn open(dir: impl Into<PathBuf>) -> Result<Self, Error> {
        use std::os::unix::fs::DirBuilderExt;
        let dir = dir.into();
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
        check_folder(&dir)?;
        let mut free = BTreeMap::new();
        let rd = std::fs::read_dir(&dir).map_err(|e| Error::io(format!("reading {}", dir.display()), e))?;
        for ent in rd {
            let ent = ent.map_err(|e| Error::io(format!("reading {}", dir.display()), e))?;
            // The entry's own type: a symbolic link, FIFO or folder is skipped.
            if !ent.file_type().is_ok_and(|t| t.is_file()) {
                continue;
            }
            let name = ent.file_name();
            let Some((token_id, id, ext)) = name.to_str().and_then(parse_name) else {
                continue;
            };
            match ext {
                "ca" => {
                    free.insert((token_id, id.d), id.log);
                }
                "claim" => sweep_claim(&ent.path())?,
                _ => {}
            }
        }
        Ok(Pool {
            dir: Some(dir),
            free,
            mem: BTreeMap::new(),
            claims: BTreeMap::new(),
        })
    }

    fn file(&self, token_id: &[u8; 16], id: SequenceId, ext: &str) -> Option<PathBuf> {
        self.dir
            .as_ref()
            .map(|dir| dir.join(format!("{}.{ext}", stem(token_id, id))))
    }

    /// Adds a sequence, free for any session to claim. The file is written under
    /// another name (created new) and then linked to its name, which never replaces
    /// an existing file; a session opening the folder meanwhile (`tacit mpc token
    /// fill` beside a running server) never sees half of it.
    pub fn put(&mut self, s: StoredSequence) -> Result<(), Error> {
        let key = (s.token_id, s.id.d);
        if self.free.contains_key(&key) || self.claims.contains_key(&key) {
            return Err(Error::Params(format!("the pool already holds sequence {}", s.id.d)));
        }
        if let (Some(p), Some(tmp)) = (
            self.file(&s.token_id, s.id, "ca"),
            self.file(&s.token_id, s.id, "ca-new"),
        ) {
            use std::io::Write;
            // A leftover of a crashed `put` (or a name someone planted) goes first: the
            // removal takes the name away, never what a link points to.
            match std::fs::remove_file(&tmp) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io(format!("removing {}", tmp.display()), e)),
            }
            let written = create_private(&tmp).and_then(|mut f| {
                f.write_all(&s.to_wire())
                    .map_err(|e| Error::io(format!("writing {}", tmp.display()), e))
            });
            let linked = written.and_then(|()| {
                std::fs::hard_link(&tmp, &p).map_err(|e| {
                    if e.kind() == std::io::ErrorKind::AlreadyExists {
                        Error::Params(format!(
                            "{} already exists: a stored sequence is never replaced",
                            p.display()
                        ))
                    } else {
                        Error::io(format!("storing {}", p.display()), e)
                    }
                })
            });
            let _ = std::fs::remove_file(&tmp);
            linked?;
            self.free.insert(key, s.id.log);
        } else {
            self.free.insert(key, s.id.log);
            self.mem.insert(key, s);
        }
        Ok(())
    }

    /// Adds a sequence claimed by this pool at once (generated for its own session).
    pub fn put_claimed(&mut self, s: StoredSequence) -> Result<(), Error> {
        let key = (s.token_id, s.id.d);
        if self.free.contains_key(&key) || self.claims.contains_key(&key) {
            return Err(Error::Params(format!("the pool already holds sequence {}", s.id.d)));
        }
        let claim = match self.file(&s.token_id, s.id, "claim") {
            Some(p) => {
                use std::io::Write;
                let mut f = create_private(&p)?;
                // A sweep in another pool may open the new file before it is locked
                // and remove it: that loses only the copy on disk (the session holds
                // the file open and reads it from there), so it is no error.
                match f.try_lock() {
                    Ok(()) | Err(std::fs::TryLockError::WouldBlock) => {}
                    Err(std::fs::TryLockError::Error(e)) => {
                        return Err(Error::io(format!("locking {}", p.display()), e));
                    }
                }
                f.write_all(&s.to_wire())
                    .map_err(|e| Error::io(format!("writing {}", p.display()), e))?;
                Some(Claim { path: p, file: f })
            }
            None => None,
        };
        self.claims.insert(key, (s.id.log, claim));
        if self.dir.is_none() {
            self.mem.insert(key, s);
        }
        Ok(())
    }

    /// Claims sequence `d` of `token_id` for this pool's session: true when it is now
    /// this pool's alone; false when another session holds it or used it (it leaves
    /// this pool).
    pub fn claim(&mut self, token_id: &[u8; 16], d: u64) -> Result<bool, Error> {
        let key = (*token_id, d);
        if self.claims.contains_key(&key) {
            return Ok(true);
        }
        let Some(&log) = self.free.get(&key) else {
            return Ok(false);
        };
        let id = SequenceId { d, log };
        let (Some(p), Some(to)) = (self.file(token_id, id, "ca"), self.file(token_id, id, "claim")) else {
            self.free.remove(&key);
            self.claims.insert(key, (log, None));
            return Ok(true);
        };
        let gone = |pool: &mut Pool| {
            pool.free.remove(&key);
            Ok(false)
        };
        let Some(f) = open_regular(&p)? else {
            return gone(self);
        };
        match f.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => return gone(self),
            Err(std::fs::TryLockError::Error(e)) => return Err(Error::io(format!("locking {}", p.display()), e)),
        }
        // Locked: whoever renamed or removed it since we opened it has let go, so the
        // rename tells whether the file is still the free `….ca`.
        match std::fs::rename(&p, &to) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return gone(self),
            Err(e) => return Err(Error::io(format!("claiming {}", p.display()), e)),
        }
        self.free.remove(&key);
        self.claims.insert(key, (log, Some(Claim { path: to, file: f })));
        Ok(true)
    }

    /// Gives claimed sequence `d` back, free for any session again (the token took it
    /// back: nothing of it left but `s_A`, to this host). Its claim file is renamed
    /// to `….ca` while still locked.
    pub fn unclaim(&mut self, token_id: &[u8; 16], d: u64) -> Result<(), Error> {
        let key = (*token_id, d);
        let Some((log, claim)) = self.claims.remove(&key) else {
            return Ok(());
        };
        if let Some(c) = claim {
            let p = c.path.with_extension("ca");
            // The claim file stays locked until after the rename (dropped below), so
            // no other pool claims it half-way.
            match std::fs::rename(&c.path, &p) {
                Ok(()) => {}
                // Swept by another pool (a race only with a claim made by
                // `put_claimed`): the sequence is gone from the folder.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
                Err(e) => return Err(Error::io(format!("giving back {}", c.path.display()), e)),
            }
            drop(c);
        }
        self.free.insert(key, log);
        Ok(())
    }

    /// Removes and returns sequence `d` of `token_id` (it is used up, or given up),
    /// claiming it first if this pool has not; its file goes. A folder's `c_A` is
    /// read here, from the locked claim file. `None` when another session holds it.
    pub fn take(&mut self, token_id: &[u8; 16], d: u64) -> Result<Option<StoredSequence>, Error> {
        let key = (*token_id, d);
        if !self.claim(token_id, d)? {
            return Ok(None);
        }
        let Some((log, claim)) = self.claims.remove(&key) else {
            return Ok(None);
        };
        let Some(mut c) = claim else {
            return Ok(self.mem.remove(&key));
        };
        let read = read_stored(&mut c.file, &c.path, token_id, SequenceId { d, log });
        match std::fs::remove_file(&c.path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(format!("removing {}", c.path.display()), e)),
        }
        read.map(Some)
    }

    /// Drops sequence `d` of `token_id` without reading it (it is given up): claimed
    /// first if this pool has not (a sequence another session holds stays its), its
    /// file goes.
    pub fn discard(&mut self, token_id: &[u8; 16], d: u64) -> Result<(), Error> {
        let key = (*token_id, d);
        if !self.claims.contains_key(&key) && !self.claim(token_id, d)? {
            return Ok(());
        }
        self.mem.remove(&key);
        if let Some((_, Some(c))) = self.claims.remove(&key) {
            match std::fs::remove_file(&c.path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io(format!("removing {}", c.path.display()), e)),
            }
        }
        Ok(())
    }

    /// The stored sequences of `token_id` no session has claimed (as far as this pool
    /// knows: [`Pool::claim`] finds out), oldest first.
    pub fn list(&self, token_id: &[u8; 16]) -> Vec<SequenceId> {
        self.free
            .range((*token_id, 0)..=(*token_id, u64::MAX))
            .map(|(&(_, d), &log)| SequenceId { d, log })
            .collect()
    }

    /// The sequences of `token_id` this pool holds claimed.
    pub fn claimed(&self, token_id: &[u8; 16]) -> Vec<u64> {
        self.claims
            .range((*token_id, 0)..=(*token_id, u64::MAX))
            .map(|(&(_, d), _)| d)
            .collect()
    }

    /// Triples stored for `token_id`.
    pub fn triples(&self, token_id: &[u8; 16]) -> usize {
        self.list(token_id).iter().map(|s| s.len()).sum()
    }
}

/// Reads a stored sequence from its open file, checking that it is the one its name
/// says (a file of another token or sequence under this name is an error, not triples).
fn read_stored(
    f: &mut std::fs::File,
    p: &std::path::Path,
    token_id: &[u8; 16],
    id: SequenceId,
) -> Result<StoredSequence, Error> {
    use std::io::{Read, Seek};
    let want = (1u64 << id.log) / 8 + 64;
    let mut bytes = Vec::with_capacity(want as usize);
    f.seek(std::io::SeekFrom::Start(0))
        .and_then(|_| f.take(want + 1).read_to_end(&mut bytes))
        .map_err(|e| Error::io(format!("reading {}", p.display()), e))?;
    let s = StoredSequence::from_wire(&bytes);
    bytes.zeroize();
    let s = s.map_err(|e| Error::Params(format!("{} is not a stored sequence: {e}", p.display())))?;
    if s.token_id != *token_id || s.id != id {
        return Err(Error::Params(format!(
            "{} holds another sequence than its name says",
            p.display()
        )));
    }
    Ok(s)
}

/// Removes a claim file that no process holds locked (its process ended).
fn sweep_claim(p: &std::path::Path) -> Result<(), Error> {
    let Some(f) = open_regular(p)? else {
        return Ok(());
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
pub async fn delete<L: TokenLink>(link: &mut L, pool: &mut Pool, token_id: &[u8; 16], d: u64) -> Result<(), Error> {
    pool.discard(token_id, d)?;
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
    /// Close the token link when a session's setup is over (success or not), so
    /// that the online phase does not hold one of the token's `--max-connections`:
    /// for a holder made for one session (the CLI's servers). Off by default.
    pub close_after_setup: bool,
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
            close_after_setup: false,
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
        let r = self.session_triples(conn, count).await;
        if self.close_after_setup {
            self.link.close().await;
        }
        r
    }
}

impl<L: TokenLink> TokenHolder<L> {
    /// The token setup of one session (see [`TripleSource::triples`]).
    async fn session_triples(&mut self, conn: &mut FramedConn, count: usize) -> Result<TripleShares, Error> {
        let t = Instant::now();
        let chosen = match self.reserve(count).await {
            Ok(c) => c,
            Err(e) => {
                // Nothing of this session's sequences reached anyone but this host:
                // each goes back to the token and the pool.
                self.give_back_claimed().await;
                let _ = conn.send(&ErrorMessage::new(e.to_string()).to_wire()).await;
                return Err(e);
            }
        };
        self.init_time = t.elapsed();
        let mut sent_b = false;
        match self.setup(conn, &chosen, count, &mut sent_b).await {
            Ok(mine) => Ok(mine),
            Err(e) => {
                if sent_b {
                    // RELEASE B was sent: the token may have erased the sequences and
                    // sealed s_B to whatever key the request named, so none is used
                    // again — each is given up (one the token erased answers 6A88).
                    let token_id = self.certificate.token_id;
                    for s in &chosen {
                        let _ = delete(&mut self.link, &mut self.pool, &token_id, s.id.d).await;
                    }
                } else {
                    // B left (or refused, or asked for other sequences) before its
                    // request reached the token: s_B never left, so the sequences go
                    // back to the token and the pool for the next session.
                    self.give_back_claimed().await;
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

/// A sequence reserved for a session: claimed in the pool, its `s_A` released to this
/// session by the token (which makes it the session's on the token: no other session
/// may release, delete or evict it).
pub struct Reserved {
    /// The sequence.
    pub id: SequenceId,
    s_a: Seed,
}

impl std::fmt::Debug for Reserved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Reserved({:?})", self.id)
    }
}

impl<L: TokenLink> TokenHolder<L> {
    /// RELEASE A of each of `ds`, all in flight at once over a token process's socket.
    async fn release_a_all(&mut self, ds: &[u64]) -> Result<Vec<Response>, Error> {
        let release_a = |d: u64| Command {
            cla: CLA,
            ins: INS_RELEASE_A,
            p1: 0,
            p2: 0,
            data: d.to_be_bytes().to_vec(),
            ne: 16,
        };
        let mut answers = Vec::with_capacity(ds.len());
        if let Some(q) = self.link.queue() {
            for &d in ds {
                q.send(&release_a(d).encode()).await?;
            }
            for _ in ds {
                answers.push(Response::decode(&q.recv().await?)?);
            }
        } else {
            for &d in ds {
                answers.push(self.link.transmit(&release_a(d)).await?);
            }
        }
        Ok(answers)
    }

    /// Takes one RELEASE A answer: `Some(s_A)`, `None` when the token no longer holds
    /// the sequence (evicted before it was this session's, or deleted).
    fn seed_of(r: Response) -> Result<Option<Seed>, Error> {
        if r.sw == sw::NOT_FOUND {
            return Ok(None);
        }
        let mut r = r.check("to release s_A")?;
        let seed: Result<[u8; 16], _> = r.data.as_slice().try_into();
        r.data.zeroize();
        Ok(Some(Seed(seed.map_err(|_| {
            Error::Token("sent an s_A that is not 16 bytes".into())
        })?)))
    }

    /// The sequences of a session's setup, made the session's own at once: for each
    /// size of [`decompose`]`(count)` a stored one that this pool could claim (so that
    /// no other session, of this process or another on the same pool folder, offers
    /// it), else one generated now (init work, claimed as it is stored); and each is
    /// released (RELEASE A) right after its claim, which makes it this session's on
    /// the token too — another session's GENERATE on a full token never evicts it. A
    /// sequence the token no longer holds (evicted between the claim and the
    /// release) leaves the pool and the next one is taken. On an error the caller
    /// gives back what is claimed.
    pub async fn reserve(&mut self, count: usize) -> Result<Vec<Reserved>, Error> {
        let token_id = self.certificate.token_id;
        let logs = decompose(count);
        let mut got: Vec<Option<Reserved>> = logs.iter().map(|_| None).collect();
        // Stored sequences, a round of claims and their releases at a time.
        loop {
            let mut free = self.pool.list(&token_id);
            let mut batch = Vec::new();
            for (i, &log) in logs.iter().enumerate() {
                if got[i].is_some() {
                    continue;
                }
                while let Some(pos) = free.iter().position(|s| s.log == log) {
                    let s = free.remove(pos);
                    // A sequence another session claimed first leaves this pool.
                    if self.pool.claim(&token_id, s.d)? {
                        batch.push((i, s));
                        break;
                    }
                }
            }
            if batch.is_empty() {
                break;
            }
            let ds: Vec<u64> = batch.iter().map(|(_, s)| s.d).collect();
            let answers = self.release_a_all(&ds).await?;
            for ((i, id), r) in batch.into_iter().zip(answers) {
                match Self::seed_of(r)? {
                    Some(s_a) => got[i] = Some(Reserved { id, s_a }),
                    None => self.pool.discard(&token_id, id.d)?,
                }
            }
        }
        // Sizes the pool lacks: generated now, released at once (a sequence evicted in
        // between — the token full of older unused ones is not — is generated again).
        for (i, &log) in logs.iter().enumerate() {
            let mut tries = 0;
            while got[i].is_none() {
                let s = stream_sequence(&mut self.link, token_id, log, &mut |_, _| {}).await?;
                let id = s.id;
                self.pool.put_claimed(s)?;
                let r = self.release_a_all(&[id.d]).await?;
                match r.into_iter().next().map(Self::seed_of).transpose()?.flatten() {
                    Some(s_a) => got[i] = Some(Reserved { id, s_a }),
                    None if tries < 3 => {
                        tries += 1;
                        self.pool.discard(&token_id, id.d)?;
                    }
                    None => {
                        return Err(Error::Token(format!(
                            "evicted every sequence of 2^{log} triples generated for this session before its release"
                        )));
                    }
                }
            }
        }
        Ok(got.into_iter().flatten().collect())
    }

    /// Gives every sequence this pool holds claimed back to the token (GIVE BACK) and
    /// to the pool, free for the next session; one the token does not take back (the
    /// link broke, it erased it) leaves the pool. Only for sequences whose RELEASE B
    /// was never sent.
    async fn give_back_claimed(&mut self) {
        let token_id = self.certificate.token_id;
        for d in self.pool.claimed(&token_id) {
            let r = self
                .link
                .transmit(&Command {
                    cla: CLA,
                    ins: INS_GIVE_BACK,
                    p1: 0,
                    p2: 0,
                    data: d.to_be_bytes().to_vec(),
                    ne: 0,
                })
                .await;
            let back = match r {
                Ok(r) if r.sw == sw::OK => self.pool.unclaim(&token_id, d).is_ok(),
                _ => false,
            };
            if !back {
                let _ = self.pool.discard(&token_id, d);
            }
        }
    }

    /// The setup after the reservation: the offer, B's seed request, RELEASE B, the
    /// release relayed, the triples expanded. `sent_b` is set before RELEASE B goes
    /// to the token. On an error the caller gives the sequences back, or up.
    async fn setup(
        &mut self,
        conn: &mut FramedConn,
        chosen: &[Reserved],
        count: usize,
        sent_b: &mut bool,
    ) -> Result<TripleShares, Error> {
        let ids: Vec<SequenceId> = chosen.iter().map(|r| r.id).collect();
        let offer = TokenOffer {
            certificate: self.certificate.clone(),
            sequences: ids.clone(),
        };
        conn.send(&offer.to_wire()).await?;
        let req_bytes = conn.recv().await?;
        crate::driver::refused(&req_bytes)?;
        let req = SeedRequest::from_wire(&req_bytes)?;
        if req.sequences != ids {
            return Err(Error::Peer("asked for other sequences than offered".into()));
        }
        *sent_b = true;
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
        let token_id = self.certificate.token_id;
        // Sized once: the sequences are expanded onto it (3 bits per triple), and only
        // the sequence being expanded has its c_A in memory (1 bit per triple of it),
        // read here from the locked claim file.
        let mut mine = TripleShares::with_capacity(chosen.iter().map(|s| s.id.len()).sum());
        for s in chosen {
            let stored = self
                .pool
                .take(&token_id, s.id.d)?
                .ok_or_else(|| Error::Triples(format!("sequence {} vanished from the pool", s.id.d)))?;
            expand_a_onto(&mut mine, &s.s_a, s.id.log, &stored.c_a);
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
        let mut mine = TripleShares::with_capacity(offer.sequences.iter().map(|s| s.len()).sum());
        for (s, seed) in offer.sequences.iter().zip(&seeds) {
            expand_b_onto(&mut mine, seed, s.log);
        }
        mine.truncate(count);
        Ok(mine)
    }
}
