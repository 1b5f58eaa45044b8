//! The public matrix `A ∈ Z_{2³²}^{ℓ×n}`, expanded from a 16-byte seed with AES-128 in
//! counter mode: element `A[c][j]` is the little-endian `u32` at position `c·n + j` of
//! the key stream `AES_seed(0) ‖ AES_seed(1) ‖ …` (block `k` encrypts the 128-bit
//! little-endian integer `k`). Any implementation (a GPU one included) regenerates
//! the same matrix from the seed.

use aes::Aes128;
use aes::cipher::{BlockEncrypt, KeyInit, generic_array::GenericArray};

/// Expands rows of `A` from the seed.
pub(crate) struct MatrixA {
    cipher: Aes128,
    n: usize,
}

impl MatrixA {
    /// The expander for `A` with `n` columns (the LWE dimension).
    pub(crate) fn new(seed: &[u8; 16], n: usize) -> Self {
        debug_assert!(n.is_multiple_of(4));
        MatrixA {
            cipher: Aes128::new(GenericArray::from_slice(seed)),
            n,
        }
    }

    /// Writes row `c` of `A` (n elements) into `out`.
    pub(crate) fn row(&self, c: usize, out: &mut [u32]) {
        debug_assert_eq!(out.len(), self.n);
        let first = (c * self.n / 4) as u128;
        let mut blocks = [GenericArray::from([0u8; 16]); 8];
        for (chunk_i, chunk) in out.chunks_mut(32).enumerate() {
            let nblocks = chunk.len().div_ceil(4);
            for (k, b) in blocks.iter_mut().enumerate().take(nblocks) {
                let ctr = first + (chunk_i * 8 + k) as u128;
                b.copy_from_slice(&ctr.to_le_bytes());
            }
            self.cipher.encrypt_blocks(&mut blocks[..nblocks]);
            for (i, v) in chunk.iter_mut().enumerate() {
                let b = &blocks[i / 4];
                let o = 4 * (i % 4);
                *v = u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_consecutive_key_stream() {
        let seed = [9u8; 16];
        let a = MatrixA::new(&seed, 8);
        let mut r0 = vec![0u32; 8];
        let mut r1 = vec![0u32; 8];
        a.row(0, &mut r0);
        a.row(1, &mut r1);
        // Block 2 of the key stream is the first block of row 1.
        let cipher = Aes128::new(GenericArray::from_slice(&seed));
        let mut b = GenericArray::from(2u128.to_le_bytes());
        cipher.encrypt_block(&mut b);
        assert_eq!(r1[0], u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
        assert_ne!(r0, r1);
        let big = MatrixA::new(&seed, 1024);
        let mut x = vec![0u32; 1024];
        big.row(3, &mut x);
        let mut y = vec![0u32; 8];
        // Row 3 of a 1024-wide A starts at block 768; row 384 of an 8-wide A too.
        a.row(384, &mut y);
        assert_eq!(&x[..8], &y[..]);
    }
}
