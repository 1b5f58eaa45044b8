//! TracEdge's step 2 through the PIR backend's pipeline ([`Responder`]): the queries
//! as they arrived ([`QueriesFrame`]) to the responses as they leave, byte for byte
//! what [`TracEdgeServer::respond_batch`] answers, with deviating sessions beside
//! honest ones. The same on the GPU is in `tests/gpu.rs`.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};

use common::*;
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use tacit_pir::lwe::{LweAnswer, LweHint, LweHintUpdate, LweQuery, LweServer, TableId};
use tacit_pir::stream::{Answers, PipelinedLwe, Staging, Ticket};
use tacit_pir::tracedge::*;
use tacit_pir::{Error, PirServer, Sizes, TableShape};
use tacit_wire::{Decode, Encode};

fn cpu_world(seed: u64) -> World<LweServer> {
    world(seed, |t, p| LweServer::setup(t, p).unwrap())
}

/// A frame parses exactly when the message decodes, to the same queries and hash,
/// and copies the same values: on honest messages and on every cut, extension and
/// single-byte change of one.
#[test]
fn frames_accept_exactly_what_queries_decode() {
    let mut w = cpu_world(1);
    let (_, _, _, qs) = sessions(&mut w, &[3]);
    let mut rng = ChaCha20Rng::seed_from_u64(2);
    let good = qs[0].to_wire();
    let mut tried = vec![good.clone()];
    for cut in [0, 1, 2, 3, 10, 11, 12, 40, 49, good.len() / 2, good.len() - 1] {
        tried.push(good[..cut].to_vec());
    }
    let mut long = good.clone();
    long.push(0);
    tried.push(long);
    for _ in 0..300 {
        let mut b = good.clone();
        // Mostly the headers, where the structure is.
        let at = if rng.next_u32() % 4 == 0 {
            rng.next_u32() as usize % b.len()
        } else {
            rng.next_u32() as usize % 64
        };
        b[at] ^= 1 << (rng.next_u32() % 8);
        tried.push(b);
    }
    let mut accepted = 0;
    for b in tried {
        let decoded = Queries::from_wire(&b);
        let frame = QueriesFrame::parse(b.clone());
        assert_eq!(decoded.is_ok(), frame.is_ok(), "{} bytes", b.len());
        let (Ok(q), Ok(f)) = (decoded, frame) else { continue };
        accepted += 1;
        assert_eq!(f.to_queries(), q);
        assert_eq!(f.hash(), wire_hash(&q));
        assert_eq!(f.epoch(), q.epoch);
        assert_eq!(f.len(), 1 + q.audits.len());
        let l = q.own.values.len();
        let mut rows = vec![0u32; f.len() * l];
        let h = f.hash_and_write(&mut Staging::new(&mut rows, l, l).unwrap());
        assert_eq!(h, wire_hash(&q));
        for (i, x) in q.all().enumerate() {
            assert_eq!(&rows[i * l..(i + 1) * l], x.values.as_slice());
            assert_eq!(f.table_id(i), &x.table_id);
        }
    }
    // The honest message and the value flips that keep the structure.
    assert!(accepted > 1);
}

/// The pipeline's responses are the batch path's responses, byte for byte (same
/// server, same sessions), and clients authenticate with them.
#[test]
fn pipelined_responses_are_the_batch_responses_byte_for_byte() {
    let rows = [0u64, 7, 19, 44, 101, 150, 199];
    let mut a = cpu_world(5);
    let mut b = cpu_world(5);
    let (_, _, mut ss_a, qs_a) = sessions(&mut a, &rows);
    let (subs, mut cs_b, ss_b, qs_b) = sessions(&mut b, &rows);
    assert_eq!(qs_a, qs_b, "the twin worlds diverged");
    let want: Vec<Vec<u8>> = {
        let mut items: Vec<(&mut ServerSession, &Queries)> = ss_a.iter_mut().zip(qs_a.iter()).collect();
        a.server
            .respond_batch(&mut items)
            .into_iter()
            .map(|r| r.unwrap().to_wire())
            .collect()
    };
    let items: Vec<(ServerSession, QueriesFrame)> = ss_b
        .into_iter()
        .zip(&qs_b)
        .map(|(s, q)| (s, QueriesFrame::parse(q.to_wire()).unwrap()))
        .collect();
    let got = b.server.respond_frames(items);
    assert_eq!(got.len(), rows.len());
    for (i, (mut ss, r)) in got.into_iter().enumerate() {
        let bytes = r.unwrap();
        assert_eq!(bytes, want[i], "session {i}");
        complete(&mut b, &subs[i], &mut cs_b[i], &mut ss, &bytes);
    }
}

/// A session whose queries are wrong (length, table, epoch), or that sends them
/// twice, is refused alone; the sessions beside it in the same chunk authenticate.
#[test]
fn deviating_sessions_fail_alone_in_the_pipeline() {
    let mut w = cpu_world(6);
    let rows = [1u64, 2, 3, 4, 5, 6];
    let (subs, mut cs, ss, mut qs) = sessions(&mut w, &rows);
    qs[1].own.values.pop();
    qs[2].audits[0].table_id[0] ^= 1;
    qs[3].epoch += 1;
    let mut r: Responder<usize> = Responder::new(64);
    let mut out: Vec<Option<Responded<usize>>> = (0..rows.len()).map(|_| None).collect();
    for (i, (s, q)) in ss.into_iter().zip(&qs).enumerate() {
        if let Some(d) = r.push(&w.server, s, QueriesFrame::parse(q.to_wire()).unwrap(), i) {
            let t = d.tag;
            out[t] = Some(d);
        }
    }
    // The refusals come back at once, before any work.
    assert!(out[1].is_some() && out[2].is_some() && out[3].is_some());
    assert!(matches!(
        out[1].as_ref().unwrap().response,
        Err(Error::WrongLength { .. })
    ));
    assert!(matches!(
        out[2].as_ref().unwrap().response,
        Err(Error::WrongTable { .. })
    ));
    assert!(matches!(out[3].as_ref().unwrap().response, Err(Error::Refused(_))));
    for d in r.drain(&w.server) {
        let t = d.tag;
        out[t] = Some(d);
    }
    for i in [0usize, 4, 5] {
        let d = out[i].take().unwrap();
        let mut ss = d.session;
        complete(&mut w, &subs[i], &mut cs[i], &mut ss, &d.response.unwrap());
    }
    // Queries sent again on an answered session are out of order.
    let (_, _, mut ss2, qs2) = sessions(&mut w, &[9]);
    let s = ss2.pop().unwrap();
    let f = QueriesFrame::parse(qs2[0].to_wire()).unwrap();
    let mut r: Responder<()> = Responder::new(64);
    assert!(r.push(&w.server, s, f.clone(), ()).is_none());
    let mut done = r.drain(&w.server);
    let d = done.pop().unwrap();
    assert!(d.response.is_ok());
    let again = r.push(&w.server, d.session, f, ()).unwrap();
    assert!(matches!(again.response, Err(Error::Refused(_))));
}

/// The CPU server with a small chunk and few staging slots, to drive the pipeline's
/// edges on any machine.
struct Narrow {
    inner: LweServer,
    chunk: usize,
    slots: usize,
    in_flight: AtomicUsize,
    submitted: AtomicUsize,
    /// The finish (counted from 1) that fails, 0 for none.
    fail_finish: usize,
    finished: AtomicUsize,
}

impl PirServer for Narrow {
    type Query = LweQuery;
    type Answer = LweAnswer;
    type Update = LweHintUpdate;
    fn backend(&self) -> &'static str {
        "narrow"
    }
    fn shape(&self) -> TableShape {
        self.inner.shape()
    }
    fn sizes(&self) -> Sizes {
        self.inner.sizes()
    }
    fn answer_batch(&self, q: &[LweQuery]) -> tacit_pir::Result<Vec<LweAnswer>> {
        self.inner.answer_batch(q)
    }
    fn update_row(&mut self, row: u64, bytes: &[u8]) -> tacit_pir::Result<LweHintUpdate> {
        self.inner.update_row(row, bytes)
    }
}

impl HintSource for Narrow {
    fn current_hint(&self) -> LweHint {
        self.inner.hint()
    }
}

impl PipelinedLwe for Narrow {
    fn pipeline_table_id(&self) -> TableId {
        self.inner.table_id()
    }
    fn chunk_queries(&self) -> usize {
        self.chunk
    }
    fn submit(&self, n: usize, fill: &mut dyn FnMut(Staging<'_>)) -> tacit_pir::Result<Option<Ticket>> {
        assert!(n <= self.chunk, "a chunk of {n} > {}", self.chunk);
        if self.in_flight.load(Ordering::SeqCst) == self.slots {
            return Ok(None);
        }
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        self.submitted.fetch_add(1, Ordering::SeqCst);
        self.inner.submit(n, fill)
    }
    fn finish(&self, t: Ticket, take: &mut dyn FnMut(&Answers<'_>)) -> tacit_pir::Result<()> {
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        if self.finished.fetch_add(1, Ordering::SeqCst) + 1 == self.fail_finish {
            return Err(Error::Gpu("the device failed (test)".into()));
        }
        self.inner.finish(t, take)
    }
}

/// A session with more queries than a chunk holds could never be placed: it is
/// refused alone and at once, and the others are answered in chunks that respect the
/// backend's size and its slots (one free slot at a time here).
#[test]
fn an_oversized_session_is_refused_and_nothing_waits_forever() {
    // A server that answers up to the protocol's limit of audit queries (the default
    // answers one), so that the session below reaches the chunk check.
    let config = ServerConfig {
        max_audit_queries: MAX_AUDIT_QUERIES,
        ..ServerConfig::default()
    };
    let mut w = world_with(7, config, |t, p| Narrow {
        inner: LweServer::setup(t, p).unwrap(),
        chunk: 5,
        slots: 1,
        in_flight: AtomicUsize::new(0),
        submitted: AtomicUsize::new(0),
        fail_finish: 0,
        finished: AtomicUsize::new(0),
    });
    let rows = [10u64, 11, 12, 13, 14, 15, 16];
    let (subs, mut cs, ss, mut qs) = sessions(&mut w, &rows);
    // Session 2 repeats its audit query up to the protocol's limit of audits.
    let extra = qs[2].audits[0].clone();
    qs[2].audits = vec![extra; MAX_AUDIT_QUERIES];
    let mut r: Responder<usize> = Responder::new(100);
    let mut out: Vec<Option<Responded<usize>>> = (0..rows.len()).map(|_| None).collect();
    for (i, (s, q)) in ss.into_iter().zip(&qs).enumerate() {
        if let Some(d) = r.push(&w.server, s, QueriesFrame::parse(q.to_wire()).unwrap(), i) {
            let t = d.tag;
            out[t] = Some(d);
        }
    }
    let refused = out[2].take().expect("refused at once");
    let msg = refused.response.unwrap_err().to_string();
    assert!(msg.contains("17 queries") && msg.contains("at most 5"), "{msg}");
    let mut steps = 0;
    while !r.is_idle() {
        assert!(r.in_flight() <= tacit_pir::stream::PIPELINE_DEPTH);
        for d in r.step(&w.server) {
            let t = d.tag;
            out[t] = Some(d);
        }
        steps += 1;
        assert!(steps < 100, "the pipeline does not drain");
    }
    // Six sessions of two queries, at most two per chunk of five.
    let pir = w.server.current().unwrap().pir();
    assert_eq!(pir.submitted.load(Ordering::SeqCst), 3);
    assert_eq!(r.stats().sessions, 6);
    for i in [0usize, 1, 3, 4, 5, 6] {
        let d = out[i].take().unwrap();
        let mut s = d.session;
        complete(&mut w, &subs[i], &mut cs[i], &mut s, &d.response.unwrap());
    }
}

/// A chunk that fails while the next one is being staged (`answer_all` joins the
/// two): the call fails, and every chunk it had in flight, the one just staged
/// included, is given back (a review of issue 31: the staged chunk's slot stayed busy
/// for good).
#[test]
fn a_failed_chunk_gives_every_slot_back() {
    let mut rng = ChaCha20Rng::seed_from_u64(31);
    let table = tacit_pir::Table::random(TableShape::new(300, 8).unwrap(), &mut rng);
    let params = tacit_pir::lwe::LweParams::new(table.shape(), [3; 16]).unwrap();
    for fail_finish in 1..=4 {
        let s = Narrow {
            inner: LweServer::setup(&table, params).unwrap(),
            chunk: 2,
            slots: tacit_pir::stream::PIPELINE_DEPTH,
            in_flight: AtomicUsize::new(0),
            submitted: AtomicUsize::new(0),
            fail_finish,
            finished: AtomicUsize::new(0),
        };
        let fill = |j: usize, dst: &mut [u32]| dst.iter_mut().for_each(|v| *v = j as u32);
        let r = tacit_pir::stream::answer_all(&s, 20, &fill, &mut |_, _| {});
        assert!(r.is_err(), "finish {fail_finish} failed, the call did not");
        assert_eq!(
            s.in_flight.load(Ordering::SeqCst),
            0,
            "finish {fail_finish}: slots left busy"
        );
    }
}
