//! Answering `lwe` queries in a pipeline: the caller stages a chunk of queries
//! ([`PipelinedLwe::submit`]), goes on with other work, and later takes the chunk's
//! answers ([`PipelinedLwe::finish`]).
//!
//! On the GPU server a submission writes the queries straight into page-locked
//! staging memory and starts the copies and the product on streams of their own, so
//! the host can stage chunk k+1 and finish chunk k−1 while the GPU answers chunk k;
//! the answers are read where the GPU copied them. The CPU server answers at
//! submission. Either way every answer equals [`PirServer::answer`]'s.
//!
//! [`PirServer::answer`]: crate::PirServer::answer

use crate::lwe::{LweAnswer, LweQuery, LweServer, TableId};
use crate::{PirServer, Result};

/// Chunks a pipeline keeps in flight: one being staged and one being taken by the
/// host at the same time, two on the GPUs (the GPU server has this many staging
/// slots).
pub const PIPELINE_DEPTH: usize = 4;

/// A chunk of queries being answered; hand it back to [`PipelinedLwe::finish`] of
/// the server that made it.
#[derive(Debug)]
pub struct Ticket(pub(crate) TicketKind);

#[derive(Debug)]
pub(crate) enum TicketKind {
    /// Answered at submission (the CPU server).
    Ready(Vec<LweAnswer>),
    /// In flight on the GPUs: staging slot `slot`, submission number `id`, `n`
    /// queries.
    #[cfg(feature = "gpu")]
    Gpu { id: u64, slot: usize, n: usize },
}

impl Ticket {
    /// Queries in the chunk.
    pub fn len(&self) -> usize {
        match &self.0 {
            TicketKind::Ready(a) => a.len(),
            #[cfg(feature = "gpu")]
            TicketKind::Gpu { n, .. } => *n,
        }
    }

    /// Whether the chunk holds no query.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The answers of one chunk, read where they are (page-locked memory on the GPU
/// server): answer `j` is `get(j)`, `m` elements.
#[derive(Debug)]
pub struct Answers<'a>(AnswersInner<'a>);

#[derive(Debug)]
enum AnswersInner<'a> {
    Flat { data: &'a [u32], m: usize },
    Each(&'a [LweAnswer]),
}

impl<'a> Answers<'a> {
    /// `data` holds `data.len() / m` answers of `m` elements, one after another.
    pub(crate) fn flat(data: &'a [u32], m: usize) -> Self {
        Answers(AnswersInner::Flat { data, m })
    }

    fn each(a: &'a [LweAnswer]) -> Self {
        Answers(AnswersInner::Each(a))
    }

    /// Answers in the chunk.
    pub fn len(&self) -> usize {
        match &self.0 {
            AnswersInner::Flat { data, m } => data.len() / (*m).max(1),
            AnswersInner::Each(a) => a.len(),
        }
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The values of answer `j` (panics past [`Answers::len`], like slice indexing).
    pub fn get(&self, j: usize) -> &'a [u32] {
        match &self.0 {
            AnswersInner::Flat { data, m } => &data[j * m..(j + 1) * m],
            AnswersInner::Each(a) => &a[j].values,
        }
    }
}

/// The staging rows of one submission: row `j` receives the `ℓ` values of query
/// `j`, written where the server sends them from (page-locked memory on the GPU
/// server). Split it to fill groups of rows in parallel.
#[derive(Debug)]
pub struct Staging<'a> {
    data: &'a mut [u32],
    stride: usize,
    cols: usize,
}

impl<'a> Staging<'a> {
    /// Rows over `data`: `data.len() / stride` rows of `stride` elements, of which
    /// the first `cols` are the query's.
    pub fn new(data: &'a mut [u32], stride: usize, cols: usize) -> Result<Self> {
        if cols > stride || stride == 0 || !data.len().is_multiple_of(stride) {
            return Err(crate::Error::InvalidParams(format!(
                "staging rows of {cols} values in a stride of {stride} over {} elements",
                data.len()
            )));
        }
        Ok(Staging { data, stride, cols })
    }

    /// Rows.
    pub fn len(&self) -> usize {
        self.data.len() / self.stride
    }

    /// Whether there is no row.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The `ℓ` values of row `j`.
    pub fn row(&mut self, j: usize) -> &mut [u32] {
        &mut self.data[j * self.stride..j * self.stride + self.cols]
    }

    /// Consecutive groups of `sizes[0]`, `sizes[1]`, … rows (their sum at most
    /// [`Staging::len`]).
    pub fn split(self, sizes: &[usize]) -> Vec<Staging<'a>> {
        let (stride, cols) = (self.stride, self.cols);
        let mut rest = self.data;
        let mut out = Vec::with_capacity(sizes.len());
        for &k in sizes {
            let (head, tail) = core::mem::take(&mut rest).split_at_mut(k * stride);
            out.push(Staging {
                data: head,
                stride,
                cols,
            });
            rest = tail;
        }
        out
    }

    /// Calls `fill(j, row j)` for every row, in parallel when there is enough to do.
    pub fn fill_par(self, fill: &(dyn Fn(usize, &mut [u32]) + Sync)) {
        use rayon::prelude::*;
        let (stride, cols) = (self.stride, self.cols);
        if self.data.len() >= 1 << 15 {
            self.data
                .par_chunks_mut(stride)
                .enumerate()
                .for_each(|(j, r)| fill(j, &mut r[..cols]));
        } else {
            for (j, r) in self.data.chunks_mut(stride).enumerate() {
                fill(j, &mut r[..cols]);
            }
        }
    }
}

/// An `lwe` server that answers in a pipeline (see the module documentation).
pub trait PipelinedLwe: Sync {
    /// The table id the answers carry.
    fn pipeline_table_id(&self) -> TableId;

    /// The most queries one submission takes.
    fn chunk_queries(&self) -> usize;

    /// Stages `n` queries (`1 ≤ n ≤` [`PipelinedLwe::chunk_queries`]) and starts
    /// answering them: `fill` writes every row of the [`Staging`] it is given (the
    /// `ℓ` values of each query), once. `Ok(None)`, without calling `fill`, when
    /// every staging slot holds a chunk in flight: finish one first. The queries are
    /// not checked here: the caller checks table ids and lengths before.
    fn submit(&self, n: usize, fill: &mut dyn FnMut(Staging<'_>)) -> Result<Option<Ticket>>;

    /// Waits for `ticket`'s answers, hands them to `take` and frees the slot.
    fn finish(&self, ticket: Ticket, take: &mut dyn FnMut(&Answers<'_>)) -> Result<()>;
}

/// The CPU server answers the whole chunk at submission.
impl PipelinedLwe for LweServer {
    fn pipeline_table_id(&self) -> TableId {
        self.table_id()
    }

    fn chunk_queries(&self) -> usize {
        usize::MAX
    }

    fn submit(&self, n: usize, fill: &mut dyn FnMut(Staging<'_>)) -> Result<Option<Ticket>> {
        let (id, l) = (self.table_id(), self.params().cols());
        let mut rows = vec![0u32; n * l.max(1)];
        fill(Staging::new(&mut rows, l.max(1), l)?);
        let queries: Vec<LweQuery> = rows
            .chunks(l.max(1))
            .map(|v| LweQuery {
                table_id: id,
                values: v[..l].to_vec(),
            })
            .collect();
        Ok(Some(Ticket(TicketKind::Ready(self.answer_batch(&queries)?))))
    }

    fn finish(&self, ticket: Ticket, take: &mut dyn FnMut(&Answers<'_>)) -> Result<()> {
        finish_ready(ticket, take)
    }
}

/// [`PipelinedLwe::finish`] of a ticket answered at submission.
pub(crate) fn finish_ready(ticket: Ticket, take: &mut dyn FnMut(&Answers<'_>)) -> Result<()> {
    match ticket.0 {
        TicketKind::Ready(a) => {
            take(&Answers::each(&a));
            Ok(())
        }
        #[cfg(feature = "gpu")]
        TicketKind::Gpu { .. } => Err(crate::Error::Gpu("a GPU ticket was handed to the CPU server".into())),
    }
}

/// Answers `n` queries through `server`'s pipeline, chunk after chunk with up to
/// [`PIPELINE_DEPTH`] in flight: once the GPUs hold enough, the host stages the
/// next chunk and takes the oldest one's answers at the same time (`rayon::join`,
/// so neither waits for the other's slowest thread) while the GPUs answer the
/// others. `fill(j, dst)` writes query `j`, `take(first, answers)` receives the
/// answers of queries `first..first + answers.len()`, in order.
pub fn answer_all(
    server: &dyn PipelinedLwe,
    n: usize,
    fill: &(dyn Fn(usize, &mut [u32]) + Sync),
    take: &mut (dyn FnMut(usize, &Answers<'_>) + Send),
) -> Result<()> {
    let mut in_flight: std::collections::VecDeque<(usize, Ticket)> = std::collections::VecDeque::new();
    let r = pipeline(server, n, fill, take, &mut in_flight);
    if r.is_err() {
        // Give the slots of the chunks still in flight back (their answers are not
        // wanted), so that a failed call never holds a staging slot for good.
        for (_, t) in in_flight.drain(..) {
            let _ = server.finish(t, &mut |_| {});
        }
    }
    r
}

fn pipeline(
    server: &dyn PipelinedLwe,
    n: usize,
    fill: &(dyn Fn(usize, &mut [u32]) + Sync),
    take: &mut (dyn FnMut(usize, &Answers<'_>) + Send),
    in_flight: &mut std::collections::VecDeque<(usize, Ticket)>,
) -> Result<()> {
    let chunk = server.chunk_queries().max(1);
    let mut j0 = 0;
    while j0 < n {
        let g = chunk.min(n - j0);
        let fill_chunk = |j: usize, dst: &mut [u32]| fill(j0 + j, dst);
        let submitted = if in_flight.len() + 1 >= PIPELINE_DEPTH
            && let Some((first, t)) = in_flight.pop_front()
        {
            let (submitted, finished) = rayon::join(
                || server.submit(g, &mut |st| st.fill_par(&fill_chunk)),
                || server.finish(t, &mut |a| take(first, a)),
            );
            if let Err(e) = finished {
                // The chunk just staged is in flight too: given back with the others.
                if let Ok(Some(t)) = submitted {
                    in_flight.push_back((j0, t));
                }
                return Err(e);
            }
            submitted?
        } else {
            server.submit(g, &mut |st| st.fill_par(&fill_chunk))?
        };
        match submitted {
            Some(t) => {
                in_flight.push_back((j0, t));
                j0 += g;
            }
            // Every slot is held by another caller: take ours, or wait for one.
            None => match in_flight.pop_front() {
                Some((first, t)) => server.finish(t, &mut |a| take(first, a))?,
                None => std::thread::yield_now(),
            },
        }
    }
    while let Some((first, t)) = in_flight.pop_front() {
        server.finish(t, &mut |a| take(first, a))?;
    }
    Ok(())
}
