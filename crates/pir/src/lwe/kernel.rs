//! The server's matrix–vector kernel: `answer = D · q mod 2³²` for a signed 8-bit
//! matrix `D` (m × ℓ) and queries `q ∈ Z_{2³²}^ℓ`, for a batch of queries in one pass
//! over `D`.
//!
//! **Exact definition** (what every implementation — this CPU kernel, its scalar
//! fallback, a GPU kernel — must produce bit for bit):
//! `answer[r] = Σ_c D[r][c] · q[c] mod 2³²`, with `D[r][c] ∈ [−128, 127]` read as a
//! signed integer and the sum taken in the integers.
//!
//! **Layout.** `D` is stored in column tiles of `T` columns; inside a tile, in blocks
//! of 8 rows; inside a block, column pair by column pair, 16 bytes per pair:
//! `[r0c0 r0c1 r1c0 r1c1 … r7c0 r7c1]`. A tile of a block is `8·T` contiguous bytes,
//! and a thread that owns a range of blocks streams each tile's part of it
//! sequentially. So one pass over the table serves the whole batch while the
//! queries' slices for the current tile stay in the L1/L2 cache.
//!
//! **Arithmetic.** Each query element is split into two signed 16-bit limbs,
//! `q = lo + 2¹⁶·hi (mod 2³²)`, and packed per column pair, so that one `vpmaddwd`
//! computes `D[r][c]·lo_c + D[r][c+1]·lo_{c+1}` for eight rows at once (|·| ≤ 2²³, no
//! overflow); the 32-bit accumulators wrap, which is exact modulo 2³²; at the end
//! `answer = Σlo + 2¹⁶·Σhi mod 2³²`.
#![allow(unsafe_code)]

use rayon::prelude::*;

/// Rows per block.
const BLOCK: usize = 8;
/// Blocks processed together by the register kernel.
const BLOCKS_PER_STEP: usize = 2;
/// Default tile width in columns.
const TILE: usize = 512;

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
        let step = BLOCK * BLOCKS_PER_STEP;
        let rows_pad = rows.div_ceil(step) * step;
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
        t * self.rows_pad * self.tile
            + (r / BLOCK) * BLOCK * self.tile
            + (cc / 2) * 2 * BLOCK
            + (r % BLOCK) * 2
            + cc % 2
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
                        chunk[(r / BLOCK) * BLOCK * tile + (cc / 2) * 2 * BLOCK + (r % BLOCK) * 2 + cc % 2] = v;
                    }
                }
            });
    }

    /// `D · q mod 2³²` for every query, in one pass over `D`; output `[query][row]`.
    pub(crate) fn mul_batch(&self, queries: &[PreparedQuery]) -> Vec<Vec<u32>> {
        let nq = queries.len();
        if nq == 0 {
            return Vec::new();
        }
        let step_rows = BLOCK * BLOCKS_PER_STEP;
        let steps = self.rows_pad / step_rows;
        let threads = rayon::current_num_threads().max(1);
        // A few chunks per thread for balance; each chunk streams its part of every tile.
        let chunk_steps = steps.div_ceil(threads * 4).max(1);
        let chunks: Vec<(usize, usize)> = (0..steps)
            .step_by(chunk_steps)
            .map(|s| (s, (s + chunk_steps).min(steps)))
            .collect();
        let use_avx2 = avx2_available();
        let parts: Vec<Vec<u32>> = chunks
            .par_iter()
            .map(|&(s0, s1)| {
                let rows = (s1 - s0) * step_rows;
                let mut out = vec![0u32; nq * rows];
                for t in 0..self.tiles {
                    let tile_base = t * self.rows_pad * self.tile;
                    let pair0 = t * self.tile / 2;
                    let npairs = self.tile / 2;
                    for s in s0..s1 {
                        let b0 = tile_base + s * step_rows * self.tile;
                        let blocks = [
                            &self.data[b0..b0 + BLOCK * self.tile],
                            &self.data[b0 + BLOCK * self.tile..b0 + 2 * BLOCK * self.tile],
                        ];
                        let row_in_chunk = (s - s0) * step_rows;
                        let mut g = 0;
                        while g < nq {
                            let take = (nq - g).min(3);
                            // The group's query slices, without a heap allocation per
                            // group (this loop runs rows/16 · tiles · batch/3 times).
                            let empty: &[[i32; 2]] = &[];
                            let mut group = [empty; 3];
                            for (k, slot) in group.iter_mut().enumerate().take(take) {
                                *slot = &queries[g + k].pairs[pair0..pair0 + npairs];
                            }
                            let qs = &group[..take];
                            let mut res = [[0u32; BLOCK * BLOCKS_PER_STEP]; 3];
                            if use_avx2 {
                                // SAFETY: AVX2 was detected at run time; slices are in bounds
                                // (each block slice has 8·tile bytes = 16·npairs, each query
                                // slice npairs pairs).
                                unsafe { avx2::step(blocks, qs, &mut res) };
                            } else {
                                scalar_step(blocks, qs, &mut res);
                            }
                            for (k, r) in res.iter().enumerate().take(take) {
                                let o =
                                    &mut out[(g + k) * rows + row_in_chunk..(g + k) * rows + row_in_chunk + step_rows];
                                for (a, b) in o.iter_mut().zip(r) {
                                    *a = a.wrapping_add(*b);
                                }
                            }
                            g += take;
                        }
                    }
                }
                out
            })
            .collect();
        let mut answers = vec![vec![0u32; self.rows]; nq];
        for (&(s0, s1), part) in chunks.iter().zip(&parts) {
            let rows = (s1 - s0) * step_rows;
            let r0 = s0 * step_rows;
            for (q, ans) in answers.iter_mut().enumerate() {
                for i in 0..rows {
                    if r0 + i < self.rows {
                        ans[r0 + i] = part[q * rows + i];
                    }
                }
            }
        }
        answers
    }
}

/// Whether the AVX2 kernel can run here.
pub(crate) fn avx2_available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Portable kernel: the same sums with 32-bit wrapping integers.
fn scalar_step(blocks: [&[i8]; 2], qs: &[&[[i32; 2]]], res: &mut [[u32; 16]; 3]) {
    for (k, q) in qs.iter().enumerate() {
        for (b, block) in blocks.iter().enumerate() {
            let mut lo = [0i32; BLOCK];
            let mut hi = [0i32; BLOCK];
            for (p, pair) in q.iter().enumerate() {
                let (l0, l1) = (pair[0] as i16 as i32, (pair[0] >> 16) as i16 as i32);
                let (h0, h1) = (pair[1] as i16 as i32, (pair[1] >> 16) as i16 as i32);
                let e = &block[p * 16..p * 16 + 16];
                for r in 0..BLOCK {
                    let (d0, d1) = (e[2 * r] as i32, e[2 * r + 1] as i32);
                    lo[r] = lo[r].wrapping_add(d0 * l0 + d1 * l1);
                    hi[r] = hi[r].wrapping_add(d0 * h0 + d1 * h1);
                }
            }
            for r in 0..BLOCK {
                res[k][b * BLOCK + r] = (lo[r] as u32).wrapping_add((hi[r] as u32) << 16);
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use core::arch::x86_64::*;

    /// Two blocks of 8 rows against up to three queries over one tile.
    ///
    /// # Safety
    /// The CPU must support AVX2; `blocks[i].len() == 16 · qs[k].len()` for all `i, k`.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn step(blocks: [&[i8]; 2], qs: &[&[[i32; 2]]], res: &mut [[u32; 16]; 3]) {
        match qs.len() {
            3 => step_g::<3>(blocks, [qs[0], qs[1], qs[2]], res),
            2 => step_g::<2>(blocks, [qs[0], qs[1]], res),
            _ => step_g::<1>(blocks, [qs[0]], res),
        }
    }

    #[target_feature(enable = "avx2")]
    #[inline]
    fn step_g<const G: usize>(blocks: [&[i8]; 2], qs: [&[[i32; 2]]; G], res: &mut [[u32; 16]; 3]) {
        let npairs = qs[0].len();
        for q in &qs {
            assert_eq!(q.len(), npairs);
        }
        assert!(blocks[0].len() >= npairs * 16 && blocks[1].len() >= npairs * 16);
        let zero = _mm256_setzero_si256();
        let mut lo = [[zero; 2]; G];
        let mut hi = [[zero; 2]; G];
        let p0 = blocks[0].as_ptr();
        let p1 = blocks[1].as_ptr();
        for p in 0..npairs {
            // SAFETY: p·16 + 16 ≤ len checked above.
            let (t0, t1) = unsafe {
                (
                    _mm256_cvtepi8_epi16(_mm_loadu_si128(p0.add(p * 16) as *const __m128i)),
                    _mm256_cvtepi8_epi16(_mm_loadu_si128(p1.add(p * 16) as *const __m128i)),
                )
            };
            for g in 0..G {
                // SAFETY: p < npairs == qs[g].len().
                let pair = unsafe { *qs[g].get_unchecked(p) };
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
                let mut out = [0u32; 8];
                // SAFETY: out has 8 lanes of u32 = 32 bytes.
                unsafe { _mm256_storeu_si256(out.as_mut_ptr() as *mut __m256i, v) };
                res[g][b * 8..b * 8 + 8].copy_from_slice(&out);
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
        for &(m, l, nq) in &[(1, 1, 1), (17, 3, 2), (40, 1030, 4), (33, 513, 7), (5, 2000, 3)] {
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
            let got = t.mul_batch(&prepared);
            for (q, g) in qs.iter().zip(&got) {
                assert_eq!(g, &plain(&d, q));
            }
            // The portable kernel gives the same answers.
            let mut res = [[0u32; 16]; 3];
            if m >= 16 {
                let blocks = [&t.data[..8 * t.tile], &t.data[8 * t.tile..16 * t.tile]];
                let slices: Vec<&[[i32; 2]]> = prepared.iter().take(3).map(|p| &p.pairs[..t.tile / 2]).collect();
                scalar_step(blocks, &slices, &mut res);
                if avx2_available() {
                    let mut res2 = [[0u32; 16]; 3];
                    unsafe { avx2::step(blocks, &slices, &mut res2) };
                    assert_eq!(res, res2);
                }
            }
        }
    }

    #[test]
    fn extreme_values_do_not_overflow() {
        let (m, l) = (16, 4096);
        let mut t = TiledMatrix::zeros(m, l);
        t.fill_columns(|_, col| col.iter_mut().for_each(|v| *v = -128));
        for q in [vec![0x8000_8000u32; l], vec![u32::MAX; l], vec![0x7fff_7fffu32; l]] {
            let got = t.mul_batch(&[PreparedQuery::new(&q, &t)]);
            let want = (q[0].wrapping_mul((-128i32) as u32)).wrapping_mul(l as u32);
            assert!(got[0].iter().all(|&v| v == want));
        }
    }
}
