//! `ntru-paper`: the paper's NTRU PIR with Multiple Row Selection (TracEdge §4),
//! **insecure, kept for reproducing the paper's tables**.
//!
//! **NTRU** (§4.3) over `Z_q[X]/(X^N − 1)` with the parameter set APR2011_439_FAST
//! (EES439EP1) and the paper's modulus: `N = 439`, `p = 3`, `q = 2²¹`, private key
//! `f = 1 + p·F` with `F = F₁⋆F₂ + F₃` in product form (9, 8, 5 ones and as many minus
//! ones), `g` ternary (147 ones, 146 minus ones), public key `h = p·f_q⋆g`.
//! Encryption `c = r⋆h + m` with a product-form blinding `r = r₁⋆r₂ + r₃` (9, 8, 5);
//! decryption `a = f⋆c` centred, `m = a mod p`.
//!
//! **PIR with Multiple Row Selection** (§4.1–4.2). Rows are grouped `k` at a time (the
//! square layout: `k` balances query and answer, as in Kushilevitz–Ostrovsky); groups
//! are cut into regions of `N`; bit `j` of the groups of region `i` forms the column
//! polynomial `e_{i,j}`. The query is one ciphertext per region, `E(x^{t})` in the
//! region of the wanted group (`t` = its offset) and `E(0)` elsewhere; the answer is
//! `r_j = Σ_i v_i ⋆ e_{i,j}` for every column, and the wanted bit is coefficient
//! `2t mod N` of `D(r_j)`. Encrypting `Σ w·x^t` over several regions at one offset
//! selects the weighted sum of those rows (modulo `p = 3`).
//!
//! The server keeps every column polynomial in transformed form (`ntt`) and answers
//! a batch of queries in one pass.
//!
//! **Why it is insecure** ([`attack`]): `r(1) = 0` for a fixed-weight blinding
//! polynomial, so `c(1) = m(1)` names the region of the query; and `(c − x^t)⋆h⁻¹ = r`
//! is short exactly for the right offset `t`, so the server recovers the queried
//! row from the query alone. Besides, `q = 2²¹` is far past the overstretched-NTRU
//! point for `N = 439`. See `docs/pir.md`.

pub mod attack;
mod messages;
pub(crate) mod ntt;
pub(crate) mod ring;

use rand_core::{CryptoRng, RngCore};
use rayon::prelude::*;
use zeroize::Zeroize;

pub use messages::{NtruAnswer, NtruQuery, TAG_ANSWER, TAG_QUERY};

use crate::backend::{Decoded, PirClient, PirServer, Selection, Sizes, SymbolLayout, Table, TableShape};
use crate::{Error, Result};
use ring::{Poly, Ternary};

/// The name of this backend.
pub const BACKEND: &str = "ntru-paper";

/// NTRU parameters: APR2011_439_FAST with the paper's modulus (Table 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NtruParams {
    /// Ring degree `N` (prime).
    pub n: usize,
    /// `log₂ q`.
    pub log_q: u32,
    /// Plaintext modulus `p`.
    pub p: u32,
    /// Product-form weights of `F` and of the blinding `r`.
    pub df: [usize; 3],
    /// Weight of `g` (`dg + 1` ones, `dg` minus ones).
    pub dg: usize,
}

impl NtruParams {
    /// The paper's parameters (Table 2): APR2011_439_FAST, `q = 2²¹`.
    pub const PAPER: NtruParams = NtruParams {
        n: 439,
        log_q: 21,
        p: 3,
        df: [9, 8, 5],
        dg: 146,
    };

    /// The same ring with another modulus (the paper's Table 3 sweeps `q`).
    pub fn with_log_q(log_q: u32) -> Self {
        NtruParams { log_q, ..Self::PAPER }
    }

    fn mask(&self) -> u32 {
        (1u32 << self.log_q) - 1
    }

    /// Bytes of one packed ciphertext (`N·log₂ q` bits).
    pub fn ciphertext_bytes(&self) -> usize {
        (self.n * self.log_q as usize).div_ceil(8)
    }
}

/// An NTRU key pair (the client's). The private key is zeroized on drop.
pub struct NtruKeys {
    params: NtruParams,
    f1: Ternary,
    f2: Ternary,
    f3: Ternary,
    /// `h = p·f_q⋆g`.
    h: Poly,
}

impl Drop for NtruKeys {
    fn drop(&mut self) {
        self.f1.zeroize();
        self.f2.zeroize();
        self.f3.zeroize();
    }
}

impl core::fmt::Debug for NtruKeys {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("NtruKeys(<private>)")
    }
}

impl NtruKeys {
    /// Key generation (§4.3): draws `F` and `g` until `f` and `g` are invertible.
    pub fn generate(params: NtruParams, rng: &mut impl RngCore) -> Self {
        let (n, mask) = (params.n, params.mask());
        loop {
            let f1 = Ternary::random(n, params.df[0], params.df[0], rng);
            let f2 = Ternary::random(n, params.df[1], params.df[1], rng);
            let f3 = Ternary::random(n, params.df[2], params.df[2], rng);
            let f = Self::f_dense(params, &f1, &f2, &f3);
            let Some(fq) = ring::invert_mod_pow2(&f, params.log_q) else {
                continue;
            };
            let g = Ternary::random(n, params.dg + 1, params.dg, rng);
            // h must be invertible for nothing in the scheme, but a g that is not
            // invertible modulo 2 would make a weaker key; the standard redraws.
            if ring::invert_mod_pow2(&g.dense(n, mask), params.log_q).is_none() {
                continue;
            }
            let h: Poly = g
                .mul(&fq, mask)
                .iter()
                .map(|&v| v.wrapping_mul(params.p) & mask)
                .collect();
            return NtruKeys { params, f1, f2, f3, h };
        }
    }

    fn f_dense(params: NtruParams, f1: &Ternary, f2: &Ternary, f3: &Ternary) -> Poly {
        let mask = params.mask();
        let big_f = add(
            &f1.mul(&f2.dense(params.n, mask), mask),
            &f3.dense(params.n, mask),
            mask,
        );
        let mut f: Poly = big_f.iter().map(|&v| v.wrapping_mul(params.p) & mask).collect();
        f[0] = f[0].wrapping_add(1) & mask;
        f
    }

    /// The public key `h`.
    pub fn public_key(&self) -> &[u32] {
        &self.h
    }

    /// The parameters.
    pub fn params(&self) -> NtruParams {
        self.params
    }

    /// `E(m) = r⋆h + m` with a fresh product-form blinding `r = r₁⋆r₂ + r₃`.
    pub fn encrypt(&self, m: &[u32], rng: &mut impl RngCore) -> Vec<u32> {
        let p = self.params;
        let mask = p.mask();
        let r1 = Ternary::random(p.n, p.df[0], p.df[0], rng);
        let r2 = Ternary::random(p.n, p.df[1], p.df[1], rng);
        let r3 = Ternary::random(p.n, p.df[2], p.df[2], rng);
        let rh = add(&r1.mul(&r2.mul(&self.h, mask), mask), &r3.mul(&self.h, mask), mask);
        rh.iter().zip(m).map(|(a, b)| a.wrapping_add(*b) & mask).collect()
    }

    /// `D(c)`: `a = f⋆c = c + p·(F₁⋆(F₂⋆c) + F₃⋆c)` centred, then `a mod p` in `0..p`.
    pub fn decrypt(&self, c: &[u32]) -> Vec<u32> {
        let p = self.params;
        let mask = p.mask();
        let fc = add(&self.f1.mul(&self.f2.mul(c, mask), mask), &self.f3.mul(c, mask), mask);
        c.iter()
            .zip(&fc)
            .map(|(&ci, &fi)| {
                let a = ring::centre(ci.wrapping_add(fi.wrapping_mul(p.p)) & mask, p.log_q);
                a.rem_euclid(p.p as i64) as u32
            })
            .collect()
    }
}

fn add(a: &[u32], b: &[u32], mask: u32) -> Poly {
    a.iter().zip(b).map(|(x, y)| x.wrapping_add(*y) & mask).collect()
}

/// The PIR layout: rows per group `k` (the square layout), groups, regions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NtruLayout {
    shape: TableShape,
    group: u32,
}

impl NtruLayout {
    /// A layout with `group` rows per group.
    pub fn new(shape: TableShape, group: u32) -> Result<Self> {
        if group == 0 || group as u64 > shape.rows || group as u64 * shape.row_bytes as u64 * 8 > 1 << 24 {
            return Err(Error::InvalidParams(format!("{group} rows per group for {:?}", shape)));
        }
        Ok(NtruLayout { shape, group })
    }

    /// The square layout: `k` chosen so that the query (one ciphertext per region)
    /// and the answer (one per bit column) have about the same size.
    pub fn square(shape: TableShape) -> Self {
        let n = NtruParams::PAPER.n as f64;
        let k = ((shape.rows as f64 / (n * 8.0 * shape.row_bytes as f64)).sqrt().round() as u64).clamp(1, shape.rows);
        NtruLayout { shape, group: k as u32 }
    }

    /// The table's shape.
    pub fn shape(&self) -> TableShape {
        self.shape
    }
    /// Rows per group `k`.
    pub fn group(&self) -> u32 {
        self.group
    }
    /// Bit columns `k·8·row_bytes` (one answer ciphertext each).
    pub fn columns(&self) -> usize {
        self.group as usize * 8 * self.shape.row_bytes as usize
    }
    /// Number of groups.
    pub fn groups(&self) -> u64 {
        self.shape.rows.div_ceil(self.group as u64)
    }
    /// Number of regions `⌈groups / N⌉` (one query ciphertext each).
    pub fn regions(&self) -> usize {
        self.groups().div_ceil(NtruParams::PAPER.n as u64) as usize
    }
    /// (region, offset, row within group) of row `i`.
    pub fn position(&self, i: u64) -> (usize, usize, usize) {
        let g = i / self.group as u64;
        let n = NtruParams::PAPER.n as u64;
        ((g / n) as usize, (g % n) as usize, (i % self.group as u64) as usize)
    }
    /// Sizes on the wire.
    pub fn sizes(&self) -> Sizes {
        let ct = NtruParams::PAPER.ciphertext_bytes() as u64;
        Sizes {
            hint_bytes: 0,
            query_bytes: messages::HEADER_LEN as u64 + self.regions() as u64 * ct,
            answer_bytes: messages::HEADER_LEN as u64 + self.columns() as u64 * ct,
        }
    }
}

/// The `ntru-paper` server: every column polynomial in transformed form,
/// `[column][region][1024]`.
pub struct NtruServer {
    layout: NtruLayout,
    ntt: ntt::Ntt,
    cols: Vec<Vec<u64>>,
    table: Table,
}

impl core::fmt::Debug for NtruServer {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("NtruServer")
            .field("layout", &self.layout)
            .finish_non_exhaustive()
    }
}

fn column_poly(layout: &NtruLayout, table: &Table, region: usize, col: usize) -> Vec<u32> {
    let n = NtruParams::PAPER.n;
    let row_bits = 8 * layout.shape.row_bytes as usize;
    let (sub, bit) = (col / row_bits, col % row_bits);
    (0..n)
        .map(|t| {
            let row = (region * n + t) as u64 * layout.group as u64 + sub as u64;
            match table.row(row) {
                Ok(r) if row < layout.shape.rows => ((r[bit / 8] >> (bit % 8)) & 1) as u32,
                _ => 0,
            }
        })
        .collect()
}

impl NtruServer {
    /// Lays the table out and transforms every column polynomial.
    pub fn setup(table: &Table, layout: NtruLayout) -> Result<Self> {
        if table.shape() != layout.shape {
            return Err(Error::InvalidParams("the layout is for another table shape".into()));
        }
        let ntt = ntt::Ntt::new();
        let regions = layout.regions();
        let cols: Vec<Vec<u64>> = (0..layout.columns())
            .into_par_iter()
            .map(|j| {
                let mut out = Vec::with_capacity(regions * ntt::LEN);
                for i in 0..regions {
                    out.extend(ntt.forward(&column_poly(&layout, table, i, j)));
                }
                out
            })
            .collect();
        Ok(NtruServer {
            layout,
            ntt,
            cols,
            table: table.clone(),
        })
    }

    /// The layout.
    pub fn layout(&self) -> NtruLayout {
        self.layout
    }

    /// Bytes of the transformed table in memory.
    pub fn transformed_bytes(&self) -> usize {
        self.cols.iter().map(|c| c.len() * 8).sum()
    }

    fn column(&self, j: usize, queries: &[Vec<u64>]) -> Vec<Vec<u32>> {
        column_answer(&self.ntt, &self.cols[j], self.layout.regions(), queries)
    }
}

/// The answer for one column and transformed queries (the paper's per-column work,
/// Table 8): point-wise products summed over the regions, one inverse transform per
/// query, folded modulo `X^N − 1` and reduced modulo `q`.
fn column_answer(ntt: &ntt::Ntt, col: &[u64], regions: usize, queries: &[Vec<u64>]) -> Vec<Vec<u32>> {
    let mut acc = vec![vec![0u64; ntt::LEN]; queries.len()];
    for i in 0..regions {
        let e = &col[i * ntt::LEN..(i + 1) * ntt::LEN];
        for (a, q) in acc.iter_mut().zip(queries) {
            let v = &q[i * ntt::LEN..(i + 1) * ntt::LEN];
            for t in 0..ntt::LEN {
                a[t] = ntt::add(a[t], ntt::mul(v[t], e[t]));
            }
        }
    }
    acc.into_iter().map(|a| finish_column(ntt, a)).collect()
}

/// A column's answer from its transformed sum: the inverse transform, folded modulo
/// `X^N − 1` and reduced modulo `q`.
pub(crate) fn finish_column(ntt: &ntt::Ntt, acc: Vec<u64>) -> Vec<u32> {
    let n = NtruParams::PAPER.n;
    let mask = (1u64 << NtruParams::PAPER.log_q) - 1;
    let c = ntt.inverse(acc);
    (0..n)
        .map(|t| ((c[t] + if t + n < ntt::LEN { c[t + n] } else { 0 }) & mask) as u32)
        .collect()
}

/// One column answered for one transformed query, before the inverse transform:
/// `Σᵢ qᵢ ⊙ eᵢ` modulo the transform's prime (1 024 words), on one thread — the
/// reference for the GPU's per-column kernel ([`crate::gpu::ntru`]).
pub fn column_accumulate(column: &[u64], query: &[u64]) -> Vec<u64> {
    let mut acc = vec![0u64; ntt::LEN];
    for (e, q) in column.chunks_exact(ntt::LEN).zip(query.chunks_exact(ntt::LEN)) {
        for t in 0..ntt::LEN {
            acc[t] = ntt::add(acc[t], ntt::mul(q[t], e[t]));
        }
    }
    acc
}

/// A random transformed column and query of `regions` regions each, shaped like the
/// server's: every column polynomial has `N` coefficients in {0, 1}, every query
/// polynomial `N` coefficients below `q = 2²¹` (a ciphertext's).
pub fn random_transformed(regions: usize, rng: &mut impl RngCore) -> (Vec<u64>, Vec<u64>) {
    let p = NtruParams::PAPER;
    let ntt = ntt::Ntt::new();
    let mut column = Vec::with_capacity(regions * ntt::LEN);
    let mut query = Vec::with_capacity(regions * ntt::LEN);
    for _ in 0..regions {
        let e: Vec<u32> = (0..p.n).map(|_| rng.next_u32() & 1).collect();
        let q: Vec<u32> = (0..p.n).map(|_| rng.next_u32() & p.mask()).collect();
        column.extend(ntt.forward(&e));
        query.extend(ntt.forward(&q));
    }
    (column, query)
}

/// The median of `v` (0 for none).
pub(crate) fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Timings of the paper's Table 8 on this machine, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PolyTimings {
    /// One polynomial addition modulo `q`.
    pub add_us: f64,
    /// One schoolbook (`O(N²)`) multiplication modulo `X^N − 1` (the paper's "Mult.").
    pub schoolbook_mul_us: f64,
    /// One product through the transform with the table side pre-transformed: forward
    /// transform of the query polynomial, point-wise product, inverse transform.
    pub ntt_mul_us: f64,
    /// One column of the table answered for one query: `regions` point-wise products
    /// and sums, one inverse transform (the paper's "Total/col.").
    pub column_us: f64,
    /// The regions of that column.
    pub regions: usize,
}

/// Measures [`PolyTimings`] with `regions` regions per column (22 780 for the paper's
/// 10⁷ rows), `reps` repetitions of the small operations.
pub fn poly_timings(regions: usize, reps: usize, rng: &mut impl RngCore) -> PolyTimings {
    let p = NtruParams::PAPER;
    let mask = p.mask();
    let a: Poly = (0..p.n).map(|_| rng.next_u32() & mask).collect();
    let b: Poly = (0..p.n).map(|_| rng.next_u32() & 1).collect();
    let reps = reps.max(1);
    let t = std::time::Instant::now();
    let mut acc = a.clone();
    for _ in 0..reps {
        acc = add(&acc, &b, mask);
    }
    let add_us = t.elapsed().as_secs_f64() * 1e6 / reps as f64;
    let t = std::time::Instant::now();
    for _ in 0..reps {
        acc = ring::mul(&acc, &b, mask);
    }
    let schoolbook_mul_us = t.elapsed().as_secs_f64() * 1e6 / reps as f64;
    let ntt = ntt::Ntt::new();
    let fb = ntt.forward(&b);
    let t = std::time::Instant::now();
    for _ in 0..reps {
        let fa = ntt.forward(&acc);
        let prod: Vec<u64> = fa.iter().zip(&fb).map(|(x, y)| ntt::mul(*x, *y)).collect();
        let c = ntt.inverse(prod);
        acc[0] = (c[0] & mask as u64) as u32;
    }
    let ntt_mul_us = t.elapsed().as_secs_f64() * 1e6 / reps as f64;
    std::hint::black_box(&acc);
    let col: Vec<u64> = (0..regions).flat_map(|_| ntt.forward(&b)).collect();
    let query: Vec<u64> = (0..regions).flat_map(|_| ntt.forward(&a)).collect();
    let t = std::time::Instant::now();
    let out = column_answer(&ntt, &col, regions, core::slice::from_ref(&query));
    let column_us = t.elapsed().as_secs_f64() * 1e6;
    std::hint::black_box(out);
    PolyTimings {
        add_us,
        schoolbook_mul_us,
        ntt_mul_us,
        column_us,
        regions,
    }
}

impl PirServer for NtruServer {
    type Query = NtruQuery;
    type Answer = NtruAnswer;
    type Update = ();

    fn backend(&self) -> &'static str {
        BACKEND
    }

    fn shape(&self) -> TableShape {
        self.layout.shape
    }

    fn sizes(&self) -> Sizes {
        self.layout.sizes()
    }

    fn answer_batch(&self, queries: &[NtruQuery]) -> Result<Vec<NtruAnswer>> {
        for q in queries {
            if q.layout != self.layout {
                return Err(Error::WrongTable {
                    ours: format!("{:?}", self.layout),
                    theirs: format!("{:?}", q.layout),
                });
            }
            if q.cts.len() != self.layout.regions() {
                return Err(Error::WrongLength {
                    what: "the query",
                    got: q.cts.len(),
                    expected: self.layout.regions(),
                });
            }
        }
        let transformed: Vec<Vec<u64>> = queries
            .par_iter()
            .map(|q| q.cts.iter().flat_map(|c| self.ntt.forward(c)).collect())
            .collect();
        let per_col: Vec<Vec<Vec<u32>>> = (0..self.layout.columns())
            .into_par_iter()
            .map(|j| self.column(j, &transformed))
            .collect();
        Ok((0..queries.len())
            .map(|k| NtruAnswer {
                layout: self.layout,
                cts: per_col.iter().map(|c| c[k].clone()).collect(),
            })
            .collect())
    }

    /// Rewrites the row and re-transforms the column polynomials of its region.
    fn update_row(&mut self, row: u64, bytes: &[u8]) -> Result<()> {
        self.table.set_row(row, bytes)?;
        let (region, _, sub) = self.layout.position(row);
        let row_bits = 8 * self.layout.shape.row_bytes as usize;
        for j in sub * row_bits..(sub + 1) * row_bits {
            let t = self.ntt.forward(&column_poly(&self.layout, &self.table, region, j));
            self.cols[j][region * ntt::LEN..(region + 1) * ntt::LEN].copy_from_slice(&t);
        }
        Ok(())
    }
}

/// The `ntru-paper` client: its key pair and the table's layout.
#[derive(Debug)]
pub struct NtruClient {
    layout: NtruLayout,
    keys: NtruKeys,
}

/// What the client keeps: which offset and row within the group it asked for.
#[derive(Debug)]
pub struct NtruQueryState {
    offset: usize,
    sub: usize,
}

impl NtruClient {
    /// A client with a fresh key pair.
    pub fn new(layout: NtruLayout, rng: &mut impl RngCore) -> Self {
        NtruClient {
            layout,
            keys: NtruKeys::generate(NtruParams::PAPER, rng),
        }
    }

    /// The client's public key (the attack uses it; it is public anyway).
    pub fn public_key(&self) -> &[u32] {
        self.keys.public_key()
    }

    fn check(&self, sel: &Selection) -> Result<(usize, usize)> {
        let mut pos: Option<(u64, usize, usize)> = None;
        let mut regions = std::collections::HashSet::new();
        for &(i, _) in sel.entries() {
            self.layout.shape.check_row(i)?;
            let (region, offset, sub) = self.layout.position(i);
            if let Some((j, o, s)) = pos {
                if o != offset || s != sub {
                    return Err(Error::NotCombinable {
                        a: j,
                        b: i,
                        why: "ntru-paper combines only rows at one offset of different regions",
                    });
                }
            } else {
                pos = Some((i, offset, sub));
            }
            if !regions.insert(region) {
                return Err(Error::NotCombinable {
                    a: pos.map(|p| p.0).unwrap_or(i),
                    b: i,
                    why: "ntru-paper combines only rows at one offset of different regions",
                });
            }
        }
        pos.map(|(_, o, s)| (o, s))
            .ok_or_else(|| Error::InvalidSelection("no row selected".into()))
    }
}

impl PirClient for NtruClient {
    type Query = NtruQuery;
    type Answer = NtruAnswer;
    type State = NtruQueryState;

    fn shape(&self) -> TableShape {
        self.layout.shape
    }

    fn symbols(&self) -> SymbolLayout {
        SymbolLayout {
            bits: 1,
            modulus: NtruParams::PAPER.p,
        }
    }

    fn check_selection(&self, sel: &Selection) -> Result<()> {
        self.check(sel).map(|_| ())
    }

    /// One ciphertext per region (§4.1 Query Generation): `E(w·x^t)` where rows are
    /// selected, `E(0)` elsewhere.
    fn query<R: RngCore + CryptoRng>(&self, sel: &Selection, rng: &mut R) -> Result<(NtruQueryState, NtruQuery)> {
        let (offset, sub) = self.check(sel)?;
        let p = NtruParams::PAPER;
        let mut msgs = vec![None; self.layout.regions()];
        for &(i, w) in sel.entries() {
            let (region, _, _) = self.layout.position(i);
            msgs[region] = Some(w % p.p);
        }
        let cts = msgs
            .iter()
            .map(|w| {
                let mut m = vec![0u32; p.n];
                if let Some(w) = w {
                    m[offset] = *w;
                }
                self.keys.encrypt(&m, rng)
            })
            .collect();
        Ok((
            NtruQueryState { offset, sub },
            NtruQuery {
                layout: self.layout,
                cts,
            },
        ))
    }

    /// Decrypts the `8·row_bytes` column answers of the wanted row and reads
    /// coefficient `2t mod N` of each (§4.3).
    fn decode(&self, state: &NtruQueryState, answer: &NtruAnswer) -> Result<Decoded> {
        if answer.layout != self.layout || answer.cts.len() != self.layout.columns() {
            return Err(Error::WrongLength {
                what: "the answer",
                got: answer.cts.len(),
                expected: self.layout.columns(),
            });
        }
        let n = NtruParams::PAPER.n;
        let row_bits = 8 * self.layout.shape.row_bytes as usize;
        let at = (2 * state.offset) % n;
        let symbols = (0..row_bits)
            .into_par_iter()
            .map(|b| self.keys.decrypt(&answer.cts[state.sub * row_bits + b])[at])
            .collect();
        Ok(Decoded {
            layout: self.symbols(),
            symbols,
        })
    }
}

/// Table 3 of the paper: the number of additions of `E(0)` to `E(1)` before
/// decryption fails, for modulus `2^log_q`; stops after `budget` additions. Returns
/// `(additions, failed)`.
pub fn additions_until_failure(log_q: u32, budget: u64, rng: &mut impl RngCore) -> (u64, bool) {
    let params = NtruParams::with_log_q(log_q);
    let keys = NtruKeys::generate(params, rng);
    let mut one = vec![0u32; params.n];
    one[0] = 1;
    let mut c = keys.encrypt(&one, rng);
    let zero = vec![0u32; params.n];
    let mask = params.mask();
    for k in 1..=budget {
        let e0 = keys.encrypt(&zero, rng);
        c = add(&c, &e0, mask);
        if keys.decrypt(&c) != one {
            return (k, true);
        }
    }
    (budget, false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;

    #[test]
    fn encrypt_decrypt_and_add() {
        let mut rng = ChaCha20Rng::seed_from_u64(11);
        let keys = NtruKeys::generate(NtruParams::PAPER, &mut rng);
        let m: Vec<u32> = (0..439).map(|i| (i % 3) as u32).collect();
        let c = keys.encrypt(&m, &mut rng);
        assert_eq!(keys.decrypt(&c), m);
        // r(1) = 0: the ciphertext at 1 is the plaintext at 1.
        let at1 = |p: &[u32]| p.iter().fold(0u32, |a, v| a.wrapping_add(*v)) & ((1 << 21) - 1);
        assert_eq!(at1(&c), at1(&m));
        let c2 = add(&c, &keys.encrypt(&vec![0; 439], &mut rng), (1 << 21) - 1);
        assert_eq!(keys.decrypt(&c2), m);
    }

    #[test]
    fn small_modulus_fails_after_few_additions() {
        let mut rng = ChaCha20Rng::seed_from_u64(12);
        let (k, failed) = additions_until_failure(11, 10_000, &mut rng);
        assert!(failed && k < 10_000, "{k}");
    }

    #[test]
    fn column_accumulate_is_the_servers_column_sum() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(9);
        let (col, q) = random_transformed(7, &mut rng);
        let ntt = ntt::Ntt::new();
        let want = column_answer(&ntt, &col, 7, core::slice::from_ref(&q));
        assert_eq!(finish_column(&ntt, column_accumulate(&col, &q)), want[0]);
    }
}
