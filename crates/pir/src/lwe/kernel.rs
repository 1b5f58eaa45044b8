//! The server's matrix–vector kernel: `answer = D · q mod 2³²` for a signed 8-bit
//! matrix `D` (m × ℓ) and queries `q ∈ Z_{2³²}^ℓ`, for a batch of queries in one pass
//! over `D`.
//!
//! **Exact definition** (what every implementation — the AVX-512 and AVX2 kernels, the
//! scalar fallback, a GPU kernel — must produce bit for bit):
//! `answer[r] = Σ_c D[r][c] · q[c] mod 2³²`, with `D[r][c] ∈ [−128, 127]` read as a
//! signed integer and the sum taken in the integers.
//!
//! **Layout.** `D` is stored in column tiles of `T` columns; inside a tile, in blocks
//! of 16 rows; inside a block, column pair by column pair, 32 bytes per pair:
//! `[r0c0 r0c1 r1c0 r1c1 … r15c0 r15c1]`. A tile of a block is `16·T` contiguous
//! bytes, and a thread that owns a range of blocks streams each tile's part of it
//! sequentially. So one pass over the table serves the whole batch while the
//! queries' slices for the current tile stay in the L1/L2 cache.
//!
//! **Arithmetic.** Each query element is split into two signed 16-bit limbs,
//! `q = lo + 2¹⁶·hi (mod 2³²)`, and packed per column pair, so that one multiply-add
//! of 16-bit pairs computes `D[r][c]·lo_c + D[r][c+1]·lo_{c+1}` for a row in one 32-bit
//! lane (|·| ≤ 2²³, no overflow); the 32-bit accumulators wrap, which is exact modulo
//! 2³²; at the end `answer = Σlo + 2¹⁶·Σhi mod 2³²`.
//!
//! * **AVX-512 VNNI** (`vpdpwssd`): one instruction multiplies, adds the pair and
//!   accumulates for the block's 16 rows; a block's column pair is sign-extended once
//!   (`vpmovsxbw`) and used for up to [`GROUP_512`] queries, whose limbs are broadcast
//!   from memory. Chosen at run time where the CPU has AVX-512 BW and VNNI.
//! * **AVX2** (`vpmaddwd` + `vpaddd`, two 8-row halves, [`GROUP_AVX2`] queries).
//! * **Scalar**: the same sums in portable code.
#![allow(unsafe_code)]

use rayon::prelude::*;

/// Rows per block (one 512-bit register of 32-bit lanes).
const BLOCK: usize = 16;
/// Default tile width in columns.
const TILE: usize = 512;
/// Queries per pass over a block in the AVX-512 kernel (2 accumulators each, of 32
/// registers).
const GROUP_512: usize = 8;
/// Queries per pass over a block in the AVX2 kernel (4 accumulators each, of 16).
const GROUP_AVX2: usize = 3;

/// The instruction set the kernel runs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Isa {
    /// AVX-512 BW + VNNI.
    Avx512Vnni,
    /// AVX2.
    Avx2,
    /// Portable code.
    Scalar,
}

impl Isa {
    /// The best one this CPU runs.
    pub(crate) fn detect() -> Isa {
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx512bw") && std::is_x86_feature_detected!("avx512vnni") {
                return Isa::Avx512Vnni;
            }
            if std::is_x86_feature_detected!("avx2") {
                return Isa::Avx2;
            }
        }
        Isa::Scalar
    }

    /// Its name, for reports.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Isa::Avx512Vnni => "avx512-vnni",
            Isa::Avx2 => "avx2",
            Isa::Scalar => "scalar",
        }
    }

    fn group(self) -> usize {
        match self {
            Isa::Avx512Vnni => GROUP_512,
            Isa::Avx2 | Isa::Scalar => GROUP_AVX2,
        }
    }

    /// Whether this CPU runs `self` (tests force a lesser one).
    fn available(self) -> bool {
        match (self, Isa::detect()) {
            (Isa::Scalar, _) => true,
            (Isa::Avx2, d) => d != Isa::Scalar,
            (Isa::Avx512Vnni, d) => d == Isa::Avx512Vnni,
        }
    }
}

/// A signed 8-bit matrix in the tiled layout described in the module docs.
#[derive(Clone)]
pub(crate) struct TiledMatrix {
    rows: usize,
    cols: usize,
    rows_pad: usize,
    tile: usize,
    tiles: usize,
    data: Vec<i8>,
}

impl core::fmt::Debug for TiledMatrix {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("TiledMatrix")
            .field("rows", &self.rows)
            .field("cols", &self.cols)
            .finish_non_exhaustive()
    }
}

/// A query split into limbs, per column pair: `(lo_c | lo_{c+1} << 16, hi_c | hi_{c+1} << 16)`.
pub(crate) struct PreparedQuery {
    pairs: Vec<[i32; 2]>,
}

impl PreparedQuery {
    /// Splits `q` (ℓ elements) for a matrix with `cols_pad` columns.
    pub(crate) fn new(q: &[u32], m: &TiledMatrix) -> Self {
        let cols_pad = m.tile * m.tiles;
        let mut pairs = vec![[0i32; 2]; cols_pad / 2];
        for (c, &v) in q.iter().enumerate().take(m.cols) {
            let lo = v as u16 as i16;
            let hi = (v.wrapping_sub(lo as i32 as u32) >> 16) as u16;
            let shift = 16 * (c % 2);
            pairs[c / 2][0] |= ((lo as u16 as u32) << shift) as i32;
            pairs[c / 2][1] |= ((hi as u32) << shift) as i32;
        }
        PreparedQuery { pairs }
    }
}

impl TiledMatrix {
    /// An all-zero `rows × cols` matrix.
    pub(crate) fn zeros(rows: usize, cols: usize) -> Self {
        let rows_pad = rows.div_ceil(BLOCK).max(1) * BLOCK;
        let tile = TILE.min(cols.div_ceil(2) * 2).max(2);
        let tiles = cols.div_ceil(tile);
        TiledMatrix {
            rows,
            cols,
            rows_pad,
            tile,
            tiles,
            data: vec![0; rows_pad * tile * tiles],
        }
    }

    /// Bytes held (padding included).
    pub(crate) fn bytes(&self) -> usize {
        self.data.len()
    }

    #[inline]
    fn offset(&self, r: usize, c: usize) -> usize {
        let (t, cc) = (c / self.tile, c % self.tile);
        t * self.rows_pad * self.tile + in_tile(self.tile, r, cc)
    }

    /// Entry `(r, c)`.
    pub(crate) fn get(&self, r: usize, c: usize) -> i8 {
        self.data[self.offset(r, c)]
    }

    /// Sets entry `(r, c)`.
    pub(crate) fn set(&mut self, r: usize, c: usize, v: i8) {
        let o = self.offset(r, c);
        self.data[o] = v;
    }

    /// Fills the matrix column by column from `f(c) -> column of rows entries`, in
    /// parallel over tiles.
    pub(crate) fn fill_columns(&mut self, f: impl Fn(usize, &mut [i8]) + Sync) {
        let (rows, cols, rows_pad, tile) = (self.rows, self.cols, self.rows_pad, self.tile);
        self.data
            .par_chunks_mut(rows_pad * tile)
            .enumerate()
            .for_each(|(t, chunk)| {
                let mut col = vec![0i8; rows];
                for cc in 0..tile {
                    let c = t * tile + cc;
                    if c >= cols {
                        break;
                    }
                    col.iter_mut().for_each(|v| *v = 0);
                    f(c, &mut col);
                    for (r, &v) in col.iter().enumerate() {
                        chunk[in_tile(tile, r, cc)] = v;
                    }
                }
            });
    }

    /// `D · q mod 2³²` for every query, in one pass over `D`; output `[query][row]`.
    pub(crate) fn mul_batch(&self, queries: &[PreparedQuery]) -> Vec<Vec<u32>> {
        self.mul_batch_with(Isa::detect(), queries)
    }

    /// [`Self::mul_batch`] with a chosen instruction set (which this CPU must run).
    pub(crate) fn mul_batch_with(&self, isa: Isa, queries: &[PreparedQuery]) -> Vec<Vec<u32>> {
        assert!(isa.available(), "{} does not run on this CPU", isa.name());
        let nq = queries.len();
        if nq == 0 {
            return Vec::new();
        }
        let blocks = self.rows_pad / BLOCK;
        let threads = rayon::current_num_threads().max(1);
        // A few chunks per thread for balance; each chunk streams its part of every tile.
        let chunk_blocks = blocks.div_ceil(threads * 4).max(1);
        let chunks: Vec<(usize, usize)> = (0..blocks)
            .step_by(chunk_blocks)
            .map(|s| (s, (s + chunk_blocks).min(blocks)))
            .collect();
        let group = isa.group();
        let npairs = self.tile / 2;
        let parts: Vec<Vec<u32>> = chunks
            .par_iter()
            .map(|&(s0, s1)| {
                let rows = (s1 - s0) * BLOCK;
                let mut out = vec![0u32; nq * rows];
                let empty: &[[i32; 2]] = &[];
                let mut slices = vec![empty; nq];
                for t in 0..self.tiles {
                    let tile_base = t * self.rows_pad * self.tile;
                    let pair0 = t * npairs;
                    for (slot, q) in slices.iter_mut().zip(queries) {
                        *slot = &q.pairs[pair0..pair0 + npairs];
                    }
                    for s in s0..s1 {
                        let b0 = tile_base + s * BLOCK * self.tile;
                        let block = &self.data[b0..b0 + BLOCK * self.tile];
                        let row_in_chunk = (s - s0) * BLOCK;
                        for (g, qs) in slices.chunks(group).enumerate() {
                            let mut res = [[0u32; BLOCK]; GROUP_512];
                            step(isa, block, qs, &mut res);
                            for (k, r) in res.iter().enumerate().take(qs.len()) {
                                let q = g * group + k;
                                let o = &mut out[q * rows + row_in_chunk..q * rows + row_in_chunk + BLOCK];
                                for (a, b) in o.iter_mut().zip(r) {
                                    *a = a.wrapping_add(*b);
                                }
                            }
                        }
                    }
                }
                out
            })
            .collect();
        let mut answers = vec![vec![0u32; self.rows]; nq];
        for (&(s0, s1), part) in chunks.iter().zip(&parts) {
            let rows = (s1 - s0) * BLOCK;
            let r0 = s0 * BLOCK;
            let take = rows.min(self.rows.saturating_sub(r0));
            for (q, ans) in answers.iter_mut().enumerate() {
                ans[r0..r0 + take].copy_from_slice(&part[q * rows..q * rows + take]);
            }
        }
        answers
    }
}

/// Offset of entry `(r, cc)` (`cc` the column inside its tile) from the tile's start.
#[inline]
fn in_tile(tile: usize, r: usize, cc: usize) -> usize {
    (r / BLOCK) * BLOCK * tile + (cc / 2) * 2 * BLOCK + (r % BLOCK) * 2 + cc % 2
}

/// One block of 16 rows over one tile against the queries `qs` (at most the ISA's
/// group), into `res[k]` for query `k`.
fn step(isa: Isa, block: &[i8], qs: &[&[[i32; 2]]], res: &mut [[u32; BLOCK]; GROUP_512]) {
    let npairs = block.len() / (2 * BLOCK);
    assert!(qs.len() <= isa.group() && qs.iter().all(|q| q.len() == npairs));
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `mul_batch_with` checked that the CPU has AVX-512 BW and VNNI; the
        // block holds 32 bytes per pair and every query slice `npairs` pairs (asserted).
        Isa::Avx512Vnni => unsafe { avx512::step(block, qs, res) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above, for AVX2.
        Isa::Avx2 => unsafe { avx2::step(block, qs, res) },
        _ => scalar_step(block, qs, res),
    }
}

/// The first `G` query slices as an array and their length in column pairs, checked
/// against the block (32 bytes per pair) before the kernels index without bounds.
#[cfg(target_arch = "x86_64")]
#[inline]
fn group<'q, const G: usize>(block: &[i8], qs: &[&'q [[i32; 2]]]) -> ([&'q [[i32; 2]]; G], usize) {
    let npairs = qs[0].len();
    let q: [&[[i32; 2]]; G] = core::array::from_fn(|g| qs[g]);
    for s in &q {
        assert_eq!(s.len(), npairs);
    }
    assert!(block.len() >= npairs * 32);
    (q, npairs)
}

/// Portable kernel: the same sums with 32-bit wrapping integers.
fn scalar_step(block: &[i8], qs: &[&[[i32; 2]]], res: &mut [[u32; BLOCK]; GROUP_512]) {
    for (k, q) in qs.iter().enumerate() {
        let mut lo = [0i32; BLOCK];
        let mut hi = [0i32; BLOCK];
        for (p, pair) in q.iter().enumerate() {
            let (l0, l1) = (pair[0] as i16 as i32, (pair[0] >> 16) as i16 as i32);
            let (h0, h1) = (pair[1] as i16 as i32, (pair[1] >> 16) as i16 as i32);
            let e = &block[p * 2 * BLOCK..(p + 1) * 2 * BLOCK];
            for r in 0..BLOCK {
                let (d0, d1) = (e[2 * r] as i32, e[2 * r + 1] as i32);
                lo[r] = lo[r].wrapping_add(d0 * l0 + d1 * l1);
                hi[r] = hi[r].wrapping_add(d0 * h0 + d1 * h1);
            }
        }
        for r in 0..BLOCK {
            res[k][r] = (lo[r] as u32).wrapping_add((hi[r] as u32) << 16);
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::{BLOCK, GROUP_512};
    use core::arch::x86_64::*;

    /// One block against up to eight queries.
    ///
    /// # Safety
    /// The CPU must support AVX-512 BW and VNNI; `block.len() == 32 · qs[k].len()`.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    pub(super) unsafe fn step(block: &[i8], qs: &[&[[i32; 2]]], res: &mut [[u32; BLOCK]; GROUP_512]) {
        match qs.len() {
            8 => step_g::<8>(block, qs, res),
            7 => step_g::<7>(block, qs, res),
            6 => step_g::<6>(block, qs, res),
            5 => step_g::<5>(block, qs, res),
            4 => step_g::<4>(block, qs, res),
            3 => step_g::<3>(block, qs, res),
            2 => step_g::<2>(block, qs, res),
            _ => step_g::<1>(block, qs, res),
        }
    }

    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    #[inline]
    fn step_g<const G: usize>(block: &[i8], qs: &[&[[i32; 2]]], res: &mut [[u32; BLOCK]; GROUP_512]) {
        let (q, npairs) = super::group::<G>(block, qs);
        let zero = _mm512_setzero_si512();
        let mut lo = [zero; G];
        let mut hi = [zero; G];
        let p0 = block.as_ptr();
        for p in 0..npairs {
            // SAFETY: p·32 + 32 ≤ block.len() (asserted above).
            let t = _mm512_cvtepi8_epi16(unsafe { _mm256_loadu_si256(p0.add(p * 32) as *const __m256i) });
            for g in 0..G {
                // SAFETY: p < npairs == q[g].len().
                let pair = unsafe { *q[g].get_unchecked(p) };
                lo[g] = _mm512_dpwssd_epi32(lo[g], t, _mm512_set1_epi32(pair[0]));
                hi[g] = _mm512_dpwssd_epi32(hi[g], t, _mm512_set1_epi32(pair[1]));
            }
        }
        for g in 0..G {
            let v = _mm512_add_epi32(lo[g], _mm512_slli_epi32::<16>(hi[g]));
            // SAFETY: res[g] has 16 lanes of u32 = 64 bytes.
            unsafe { _mm512_storeu_si512(res[g].as_mut_ptr() as *mut __m512i, v) };
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{BLOCK, GROUP_512};
    use core::arch::x86_64::*;

    /// One block (as two halves of 8 rows) against up to three queries.
    ///
    /// # Safety
    /// The CPU must support AVX2; `block.len() == 32 · qs[k].len()`.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn step(block: &[i8], qs: &[&[[i32; 2]]], res: &mut [[u32; BLOCK]; GROUP_512]) {
        match qs.len() {
            3 => step_g::<3>(block, qs, res),
            2 => step_g::<2>(block, qs, res),
            _ => step_g::<1>(block, qs, res),
        }
    }

    #[target_feature(enable = "avx2")]
    #[inline]
    fn step_g<const G: usize>(block: &[i8], qs: &[&[[i32; 2]]], res: &mut [[u32; BLOCK]; GROUP_512]) {
        let (q, npairs) = super::group::<G>(block, qs);
        let zero = _mm256_setzero_si256();
        let mut lo = [[zero; 2]; G];
        let mut hi = [[zero; 2]; G];
        let p0 = block.as_ptr();
        for p in 0..npairs {
            // SAFETY: p·32 + 32 ≤ block.len() (asserted above).
            let (t0, t1) = unsafe {
                (
                    _mm256_cvtepi8_epi16(_mm_loadu_si128(p0.add(p * 32) as *const __m128i)),
                    _mm256_cvtepi8_epi16(_mm_loadu_si128(p0.add(p * 32 + 16) as *const __m128i)),
                )
            };
            for g in 0..G {
                // SAFETY: p < npairs == q[g].len().
                let pair = unsafe { *q[g].get_unchecked(p) };
                let l = _mm256_set1_epi32(pair[0]);
                let h = _mm256_set1_epi32(pair[1]);
                lo[g][0] = _mm256_add_epi32(lo[g][0], _mm256_madd_epi16(t0, l));
                lo[g][1] = _mm256_add_epi32(lo[g][1], _mm256_madd_epi16(t1, l));
                hi[g][0] = _mm256_add_epi32(hi[g][0], _mm256_madd_epi16(t0, h));
                hi[g][1] = _mm256_add_epi32(hi[g][1], _mm256_madd_epi16(t1, h));
            }
        }
        for g in 0..G {
            for b in 0..2 {
                let v = _mm256_add_epi32(lo[g][b], _mm256_slli_epi32(hi[g][b], 16));
                // SAFETY: res[g][8b..8b+8] is 8 lanes of u32 = 32 bytes.
                unsafe { _mm256_storeu_si256(res[g][b * 8..].as_mut_ptr() as *mut __m256i, v) };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha20Rng;
    use rand_core::{RngCore, SeedableRng};

    fn plain(d: &[Vec<i8>], q: &[u32]) -> Vec<u32> {
        d.iter()
            .map(|row| {
                row.iter()
                    .zip(q)
                    .fold(0u32, |a, (&x, &y)| a.wrapping_add((x as i32 as u32).wrapping_mul(y)))
            })
            .collect()
    }

    #[test]
    fn kernel_matches_plain_product() {
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        // Row counts around the 16-row block, column counts around the 512-column tile,
        // batch sizes around the groups of 3 (AVX2) and 8 (AVX-512).
        for &(m, l, nq) in &[
            (1, 1, 1),
            (17, 3, 2),
            (40, 1030, 4),
            (33, 513, 7),
            (5, 2000, 3),
            (16, 512, 8),
            (47, 1100, 9),
            (64, 700, 19),
        ] {
            let d: Vec<Vec<i8>> = (0..m).map(|_| (0..l).map(|_| rng.next_u32() as i8).collect()).collect();
            let mut t = TiledMatrix::zeros(m, l);
            t.fill_columns(|c, col| {
                for (v, row) in col.iter_mut().zip(&d) {
                    *v = row[c];
                }
            });
            for (r, row) in d.iter().enumerate() {
                for (c, v) in row.iter().enumerate() {
                    assert_eq!(t.get(r, c), *v);
                }
            }
            let qs: Vec<Vec<u32>> = (0..nq).map(|_| (0..l).map(|_| rng.next_u32()).collect()).collect();
            let prepared: Vec<_> = qs.iter().map(|q| PreparedQuery::new(q, &t)).collect();
            // Every kernel this CPU runs (the portable one always) gives the plain sums.
            for isa in ALL.into_iter().filter(|i| i.available()) {
                let got = t.mul_batch_with(isa, &prepared);
                for (q, g) in qs.iter().zip(&got) {
                    assert_eq!(g, &plain(&d, q), "{} at {m} x {l}, {nq} queries", isa.name());
                }
            }
        }
    }

    const ALL: [Isa; 3] = [Isa::Avx512Vnni, Isa::Avx2, Isa::Scalar];

    #[test]
    fn the_kernel_in_use_is_the_best_this_cpu_runs() {
        let best = Isa::detect();
        assert!(best.available());
        for isa in ALL {
            if isa.available() {
                assert!(isa.group() <= GROUP_512);
            }
        }
        eprintln!("lwe kernel on this CPU: {}", best.name());
    }

    #[test]
    fn extreme_values_do_not_overflow() {
        let (m, l) = (16, 4096);
        let mut t = TiledMatrix::zeros(m, l);
        t.fill_columns(|_, col| col.iter_mut().for_each(|v| *v = -128));
        for q in [vec![0x8000_8000u32; l], vec![u32::MAX; l], vec![0x7fff_7fffu32; l]] {
            let want = (q[0].wrapping_mul((-128i32) as u32)).wrapping_mul(l as u32);
            for isa in ALL.into_iter().filter(|i| i.available()) {
                let got = t.mul_batch_with(isa, &[PreparedQuery::new(&q, &t)]);
                assert!(got[0].iter().all(|&v| v == want), "{}", isa.name());
            }
        }
    }
}
