//! Step 2 in a pipeline: sessions' queries, as they arrived, through the PIR
//! backend's chunks ([`crate::stream`]), each session's response encoded straight
//! from where its answers arrived.
//!
//! Per session the server's own work is the protocol's: one BLAKE3 pass over the
//! queries (which also copies their values into the backend's staging memory, block
//! by block while they are in the cache), one over the answers (while they are
//! written into the response), and one Ed25519 signature. On the GPU server a chunk
//! is staged and submitted while the chunks before it are on the GPU, and a chunk's
//! sessions are finished (encoded, hashed, signed) while the chunks after it are: the
//! host and the device work at the same time.
//!
//! What a peer can make it do: a session's queries join a chunk only after they
//! passed their own checks ([`TracEdgeServer::check_frame`]); a session with more
//! queries than a chunk holds is refused alone (it could never be placed); one
//! failed chunk fails only its own sessions; chunk and slot sizes are the
//! operator's, never the peer's.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use rayon::prelude::*;

use super::messages::{QueriesFrame, encode_response};
use super::protocol::{HintSource, ServerSession, TracEdgeServer};
use crate::lwe::{LweAnswer, LweQuery, TableId};
use crate::stream::{PipelinedLwe, Ticket};
use crate::{Error, PirServer, Result};

/// Chunks kept in flight (the GPU server's staging slots).
const IN_FLIGHT: usize = crate::stream::PIPELINE_DEPTH;

/// A session done with step 2: its response (encoded, to send) or why not.
#[derive(Debug)]
pub struct Responded<T> {
    /// What the caller gave with the session.
    pub tag: T,
    /// The session (awaiting the client's MAC when the response is `Ok`).
    pub session: ServerSession,
    /// The encoded [`super::Response`], or the refusal.
    pub response: Result<Vec<u8>>,
}

/// Where a [`Responder`]'s time went.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ResponderStats {
    /// Sessions answered.
    pub sessions: u64,
    /// Chunks submitted.
    pub chunks: u64,
    /// Queries submitted.
    pub queries: u64,
    /// CPU time (summed over threads) hashing the sessions' queries and copying them
    /// into staging memory, in ns.
    pub stage_cpu_ns: u64,
    /// CPU time (summed over threads) encoding, hashing and signing the responses,
    /// in ns.
    pub finish_cpu_ns: u64,
    /// Wall time the driving thread waited for the backend's answers, in ns.
    pub wait_ns: u64,
}

struct Staged<T> {
    session: ServerSession,
    frame: QueriesFrame,
    tag: T,
}

struct Flying {
    session: ServerSession,
    qhash: [u8; 32],
    first: usize,
    n: usize,
}

struct Chunk<T> {
    epoch: u64,
    table_id: TableId,
    ticket: Ticket,
    sessions: Vec<Flying>,
    tags: Vec<T>,
}

/// Answers sessions' queries in a pipeline: [`Responder::push`] the sessions as
/// their queries arrive, call [`Responder::step`] while there is work, and send the
/// [`Responded`] it returns. One thread drives it; the work of each step runs on all
/// cores.
pub struct Responder<T> {
    staged: BTreeMap<u64, VecDeque<Staged<T>>>,
    flying: VecDeque<Chunk<T>>,
    max_sessions: usize,
    stats: ResponderStats,
}

impl<T> core::fmt::Debug for Responder<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Responder")
            .field("staged", &self.staged.values().map(VecDeque::len).sum::<usize>())
            .field("in_flight", &self.flying.len())
            .field("stats", &self.stats)
            .finish()
    }
}

impl<T: Send> Responder<T> {
    /// A responder that puts at most `max_sessions` sessions in one chunk (and at
    /// most the backend's [`PipelinedLwe::chunk_queries`] queries).
    pub fn new(max_sessions: usize) -> Self {
        Responder {
            staged: BTreeMap::new(),
            flying: VecDeque::new(),
            max_sessions: max_sessions.max(1),
            stats: ResponderStats::default(),
        }
    }

    /// Sessions waiting for a chunk.
    pub fn staged(&self) -> usize {
        self.staged.values().map(VecDeque::len).sum()
    }

    /// Chunks in flight.
    pub fn in_flight(&self) -> usize {
        self.flying.len()
    }

    /// Whether nothing is waiting or in flight.
    pub fn is_idle(&self) -> bool {
        self.flying.is_empty() && self.staged.values().all(VecDeque::is_empty)
    }

    /// Where the time went so far.
    pub fn stats(&self) -> ResponderStats {
        self.stats
    }

    /// Takes a session's queries: checked on their own now (a refusal comes back at
    /// once, `Some`), answered in a later step.
    pub fn push<S>(
        &mut self,
        srv: &TracEdgeServer<S>,
        session: ServerSession,
        frame: QueriesFrame,
        tag: T,
    ) -> Option<Responded<T>>
    where
        S: PirServer<Query = LweQuery, Answer = LweAnswer> + HintSource + PipelinedLwe,
    {
        let checked = srv.check_frame(&session, &frame).and_then(|()| {
            let cap = srv.table(frame.epoch()).map_or(usize::MAX, |t| t.pir().chunk_queries());
            if frame.len() > cap {
                return Err(Error::Refused(format!(
                    "{} queries in one session; this server answers at most {cap} per session",
                    frame.len()
                )));
            }
            Ok(())
        });
        if let Err(e) = checked {
            return Some(Responded {
                tag,
                session,
                response: Err(e),
            });
        }
        self.staged
            .entry(frame.epoch())
            .or_default()
            .push_back(Staged { session, frame, tag });
        None
    }

    /// One step: submits a chunk of waiting sessions if the backend has room for
    /// one (and, once the GPUs hold enough, finishes the oldest chunk in flight at
    /// the same time), else finishes the oldest chunk in flight. Returns the
    /// sessions done.
    pub fn step<S>(&mut self, srv: &TracEdgeServer<S>) -> Vec<Responded<T>>
    where
        S: PirServer<Query = LweQuery, Answer = LweAnswer> + HintSource + PipelinedLwe,
    {
        self.staged.retain(|_, q| !q.is_empty());
        if self.flying.len() < IN_FLIGHT
            && let Some(&epoch) = self.staged.keys().next()
        {
            match srv.table(epoch) {
                None => {
                    let q = self.staged.remove(&epoch).unwrap_or_default();
                    return q
                        .into_iter()
                        .map(|s| Responded {
                            tag: s.tag,
                            session: s.session,
                            response: Err(expired(epoch)),
                        })
                        .collect();
                }
                Some(t) => {
                    let max = self.max_sessions;
                    let Some(queue) = self.staged.get_mut(&epoch) else {
                        return Vec::new();
                    };
                    let (submitted, mut done) = if self.flying.len() + 1 >= IN_FLIGHT
                        && let Some(oldest) = self.flying.pop_front()
                    {
                        // Stage the next chunk and finish the oldest at once, so
                        // that neither waits for the other's slowest thread.
                        let (s, f) = rayon::join(
                            || submit_chunk(queue, max, epoch, t.pir()),
                            || finish_chunk(srv, oldest),
                        );
                        (s, self.finished(f))
                    } else {
                        (submit_chunk(queue, max, epoch, t.pir()), Vec::new())
                    };
                    match submitted {
                        Submit::Started(chunk, cpu) => {
                            self.stats.stage_cpu_ns += cpu;
                            self.stats.chunks += 1;
                            self.stats.queries += chunk.sessions.iter().map(|f| f.n as u64).sum::<u64>();
                            self.flying.push_back(chunk);
                            return done;
                        }
                        Submit::Failed(failed) => {
                            done.extend(failed);
                            return done;
                        }
                        Submit::Full if !done.is_empty() => return done,
                        Submit::Full => {}
                    }
                }
            }
        }
        match self.flying.pop_front() {
            Some(chunk) => {
                let f = finish_chunk(srv, chunk);
                self.finished(f)
            }
            None => {
                // Every slot is held by another user of the backend.
                std::thread::yield_now();
                Vec::new()
            }
        }
    }

    fn finished(&mut self, (done, f): (Vec<Responded<T>>, Finished)) -> Vec<Responded<T>> {
        self.stats.wait_ns += f.wait_ns;
        self.stats.finish_cpu_ns += f.cpu_ns;
        self.stats.sessions += done.len() as u64;
        done
    }

    /// Steps until nothing is waiting or in flight.
    pub fn drain<S>(&mut self, srv: &TracEdgeServer<S>) -> Vec<Responded<T>>
    where
        S: PirServer<Query = LweQuery, Answer = LweAnswer> + HintSource + PipelinedLwe,
    {
        let mut out = Vec::new();
        while !self.is_idle() {
            out.extend(self.step(srv));
        }
        out
    }
}

/// Stages the first sessions of `queue` (at most `max_sessions`, at most a chunk of
/// queries) into `pir` and starts answering them.
fn submit_chunk<T, P: PipelinedLwe + ?Sized>(
    queue: &mut VecDeque<Staged<T>>,
    max_sessions: usize,
    epoch: u64,
    pir: &P,
) -> Submit<T> {
    let cap = pir.chunk_queries().max(1);
    let (mut take, mut total) = (0, 0);
    for s in queue.iter() {
        if take == max_sessions || total + s.frame.len() > cap {
            break;
        }
        total += s.frame.len();
        take += 1;
    }
    if take == 0 {
        // Larger than a chunk (the table changed since the push): alone, refused.
        let Some(s) = queue.pop_front() else {
            return Submit::Full;
        };
        return Submit::Failed(vec![Responded {
            tag: s.tag,
            response: Err(Error::Refused(format!(
                "{} queries in one session; this server answers at most {cap} per session",
                s.frame.len()
            ))),
            session: s.session,
        }]);
    }
    let (mut sessions, mut frames, mut tags) = (
        Vec::with_capacity(take),
        Vec::with_capacity(take),
        Vec::with_capacity(take),
    );
    for s in queue.drain(..take) {
        sessions.push(s.session);
        frames.push(s.frame);
        tags.push(s.tag);
    }
    let sizes: Vec<usize> = frames.iter().map(QueriesFrame::len).collect();
    let mut qhashes = vec![[0u8; 32]; take];
    let cpu = AtomicU64::new(0);
    let table_id = pir.pipeline_table_id();
    let submitted = pir.submit(total, &mut |staging| {
        staging
            .split(&sizes)
            .into_par_iter()
            .zip(frames.par_iter())
            .zip(qhashes.par_iter_mut())
            .for_each(|((mut rows, frame), qh)| {
                let t = Instant::now();
                *qh = frame.hash_and_write(&mut rows);
                cpu.fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
            });
    });
    match submitted {
        Ok(Some(ticket)) => {
            let mut first = 0;
            let sessions: Vec<Flying> = sessions
                .into_iter()
                .zip(qhashes)
                .zip(sizes)
                .map(|((session, qhash), n)| {
                    let f = Flying {
                        session,
                        qhash,
                        first,
                        n,
                    };
                    first += n;
                    f
                })
                .collect();
            Submit::Started(
                Chunk {
                    epoch,
                    table_id,
                    ticket,
                    sessions,
                    tags,
                },
                cpu.into_inner(),
            )
        }
        Ok(None) => {
            // No free slot: the sessions wait, in order.
            let back = sessions.into_iter().zip(frames).zip(tags).rev();
            for ((session, frame), tag) in back {
                queue.push_front(Staged { session, frame, tag });
            }
            Submit::Full
        }
        Err(e) => Submit::Failed(
            sessions
                .into_iter()
                .zip(tags)
                .map(|(session, tag)| Responded {
                    tag,
                    session,
                    response: Err(e.clone()),
                })
                .collect(),
        ),
    }
}

/// Where a finished chunk's time went.
struct Finished {
    wait_ns: u64,
    cpu_ns: u64,
}

/// Waits for `chunk`'s answers and encodes, hashes and signs its sessions'
/// responses straight from where the answers arrived.
fn finish_chunk<T, S>(srv: &TracEdgeServer<S>, chunk: Chunk<T>) -> (Vec<Responded<T>>, Finished)
where
    S: PirServer<Query = LweQuery, Answer = LweAnswer> + HintSource + PipelinedLwe,
{
    let Chunk {
        epoch,
        table_id,
        ticket,
        mut sessions,
        tags,
    } = chunk;
    let mut frames: Vec<Result<Vec<u8>>> = Vec::new();
    let cpu = AtomicU64::new(0);
    let t0 = Instant::now();
    let mut waited = 0u64;
    let r = match srv.table(epoch) {
        // The table expired while its chunk was in flight (its backend is gone,
        // and the ticket with it).
        None => Err(expired(epoch)),
        Some(t) => t.pir().finish(ticket, &mut |answers| {
            waited = t0.elapsed().as_nanos() as u64;
            frames = sessions
                .par_iter_mut()
                .map(|f| {
                    let t = Instant::now();
                    let views: Vec<&[u32]> = (f.first..f.first + f.n).map(|j| answers.get(j)).collect();
                    let (bytes, _) = encode_response(epoch, &table_id, &views, |ahash| {
                        srv.seal_response(&mut f.session, epoch, &f.qhash, ahash)
                    });
                    cpu.fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
                    Ok(bytes)
                })
                .collect();
        }),
    };
    if let Err(e) = r {
        frames = sessions.iter().map(|_| Err(e.clone())).collect();
    }
    let done = sessions
        .into_iter()
        .zip(tags)
        .zip(frames)
        .map(|((f, tag), response)| Responded {
            tag,
            session: f.session,
            response,
        })
        .collect();
    (
        done,
        Finished {
            wait_ns: waited,
            cpu_ns: cpu.into_inner(),
        },
    )
}

enum Submit<T> {
    Started(Chunk<T>, u64),
    Full,
    Failed(Vec<Responded<T>>),
}

fn expired(epoch: u64) -> Error {
    Error::Refused(format!("the table of epoch {epoch} has expired"))
}
