//! The PRG `G` of the paper: AES-128 in counter mode (paper §5.3: "We instantiated the
//! pseudo-random generator G … with AES-128 in CTR mode").
//!
//! `G_s(d)` is the keystream of AES-128 under key `s` over the counter blocks
//! `d ‖ j` for `j = 0, 1, 2, …` (the 128-bit block `d · 2^64 + j`, little-endian): the
//! state value `d` of the paper is the high half of the counter.

use aes::Aes128;
use aes::cipher::{BlockEncrypt, KeyInit, generic_array::GenericArray};
use zeroize::Zeroize;

/// Blocks encrypted per call to the cipher (lets AES-NI pipeline).
const CHUNK: usize = 32;

/// A 128-bit PRG seed (an AES-128 key).
#[derive(Clone, PartialEq, Eq, zeroize::Zeroize, zeroize::ZeroizeOnDrop)]
pub struct Seed(pub [u8; 16]);

impl std::fmt::Debug for Seed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Seed(..)")
    }
}

impl Seed {
    /// A fresh random seed.
    pub fn random(rng: &mut impl rand_core::CryptoRngCore) -> Self {
        let mut s = [0u8; 16];
        rng.fill_bytes(&mut s);
        Seed(s)
    }
}

/// AES-128-CTR keystream `G_s(d)`.
pub struct Prg {
    aes: Aes128,
    d: u64,
    ctr: u64,
    buf: [GenericArray<u8, aes::cipher::consts::U16>; CHUNK],
}

impl std::fmt::Debug for Prg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prg")
            .field("d", &self.d)
            .field("ctr", &self.ctr)
            .finish_non_exhaustive()
    }
}

impl Drop for Prg {
    fn drop(&mut self) {
        for b in self.buf.iter_mut() {
            b.as_mut_slice().zeroize();
        }
    }
}

impl Prg {
    /// The keystream of `seed` for state value `d`, from its first block.
    pub fn new(seed: &Seed, d: u64) -> Self {
        Prg {
            aes: Aes128::new(GenericArray::from_slice(&seed.0)),
            d,
            ctr: 0,
            buf: Default::default(),
        }
    }

    /// Moves to block `block` of the keystream.
    pub fn seek_block(&mut self, block: u64) {
        self.ctr = block;
    }

    fn refill(&mut self, blocks: usize) {
        for b in self.buf[..blocks].iter_mut() {
            let v = (self.d as u128) << 64 | self.ctr as u128;
            b.copy_from_slice(&v.to_le_bytes());
            self.ctr = self.ctr.wrapping_add(1);
        }
        self.aes.encrypt_blocks(&mut self.buf[..blocks]);
    }

    /// Fills `out` with keystream, two words per block (little-endian halves).
    pub fn fill_words(&mut self, out: &mut [u64]) {
        let mut chunks = out.chunks_mut(2 * CHUNK);
        for c in &mut chunks {
            let blocks = c.len().div_ceil(2);
            self.refill(blocks);
            for (i, w) in c.iter_mut().enumerate() {
                let b = &self.buf[i / 2];
                let h = (i % 2) * 8;
                *w = u64::from_le_bytes([
                    b[h],
                    b[h + 1],
                    b[h + 2],
                    b[h + 3],
                    b[h + 4],
                    b[h + 5],
                    b[h + 6],
                    b[h + 7],
                ]);
            }
        }
    }

    /// Fills `out` with keystream bytes.
    pub fn fill_bytes(&mut self, out: &mut [u8]) {
        for c in out.chunks_mut(16 * CHUNK) {
            let blocks = c.len().div_ceil(16);
            self.refill(blocks);
            for (i, o) in c.chunks_mut(16).enumerate() {
                o.copy_from_slice(&self.buf[i][..o.len()]);
            }
        }
    }

    /// XORs keystream words into `out`.
    pub fn xor_words(&mut self, out: &mut [u64]) {
        let mut tmp = [0u64; 2 * CHUNK];
        for c in out.chunks_mut(2 * CHUNK) {
            let t = &mut tmp[..c.len()];
            self.fill_words(t);
            for (o, k) in c.iter_mut().zip(t.iter()) {
                *o ^= k;
            }
        }
        tmp.zeroize();
    }
}

/// One AES-128 block encryption `AES_k(x)`: the seed derivation `s = G_k(d)` of paper
/// §4.1 for a single block.
pub fn aes_block(key: &[u8; 16], x: u128) -> [u8; 16] {
    let aes = Aes128::new(GenericArray::from_slice(key));
    let mut b = GenericArray::clone_from_slice(&x.to_le_bytes());
    aes.encrypt_block(&mut b);
    b.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_block_by_block_and_seeks() {
        let s = Seed([7; 16]);
        let mut p = Prg::new(&s, 5);
        let mut w = vec![0u64; 200];
        p.fill_words(&mut w);
        for j in 0..100u64 {
            let blk = aes_block(&s.0, (5u128) << 64 | j as u128);
            assert_eq!(w[2 * j as usize], u64::from_le_bytes(blk[..8].try_into().unwrap()));
            assert_eq!(w[2 * j as usize + 1], u64::from_le_bytes(blk[8..].try_into().unwrap()));
        }
        let mut p2 = Prg::new(&s, 5);
        p2.seek_block(40);
        let mut w2 = vec![0u64; 7];
        p2.fill_words(&mut w2);
        assert_eq!(&w2[..], &w[80..87]);
        let mut bytes = vec![0u8; 33];
        Prg::new(&s, 5).fill_bytes(&mut bytes);
        assert_eq!(&bytes[..8], &w[0].to_le_bytes());
        let mut x = w[..10].to_vec();
        Prg::new(&s, 5).xor_words(&mut x);
        assert!(x.iter().all(|&v| v == 0));
    }

    #[test]
    fn fips197_vector() {
        // FIPS-197 C.1 key and plaintext, as a little-endian u128.
        let key: [u8; 16] = core::array::from_fn(|i| i as u8);
        let pt: [u8; 16] = core::array::from_fn(|i| (i as u8) * 0x11);
        let ct = aes_block(&key, u128::from_le_bytes(pt));
        assert_eq!(hex::encode(ct), "69c4e0d86a7b0430d8cdb78070b4c55a");
    }
}
