//! Multiplication triples (Beaver): bits `a_i, b_i, c_i` held by party `i ∈ {A, B}`
//! with `c_A ⊕ c_B = (a_A ⊕ a_B) ∧ (b_A ⊕ b_B)` (paper §2.4).
//!
//! Two sources produce them: the trusted token of paper §4 ([`token`]) and OT
//! extension, two random OTs per triple ([`ot`]). Both are driven over the parties'
//! connection by [`crate::driver::TripleSource`].

pub mod ot;
pub mod token;

use crate::bits;
use zeroize::{Zeroize, ZeroizeOnDrop};

/// One party's shares of `len` bit triples, packed 64 per word.
#[derive(Clone, Default, PartialEq, Eq, Zeroize, ZeroizeOnDrop)]
pub struct TripleShares {
    len: usize,
    a: Vec<u64>,
    b: Vec<u64>,
    c: Vec<u64>,
}

impl std::fmt::Debug for TripleShares {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TripleShares({} triples)", self.len)
    }
}

impl TripleShares {
    /// Shares from packed vectors of at least `len` bits each (bits past `len` are
    /// cleared).
    pub fn from_words(len: usize, mut a: Vec<u64>, mut b: Vec<u64>, mut c: Vec<u64>) -> Self {
        let w = bits::words_for(len);
        for v in [&mut a, &mut b, &mut c] {
            v.resize(w, 0);
            if !len.is_multiple_of(64) {
                v[w - 1] &= (1u64 << (len % 64)) - 1;
            }
            if len == 0 {
                v[0] = 0;
            }
        }
        TripleShares { len, a, b, c }
    }

    /// No triples yet, with room for `n` (so that appending sequences up to `n`
    /// triples never reallocates, which would hold the old and the new vectors at once).
    pub fn with_capacity(n: usize) -> Self {
        let w = bits::words_for(n);
        TripleShares {
            len: 0,
            a: Vec::with_capacity(w),
            b: Vec::with_capacity(w),
            c: Vec::with_capacity(w),
        }
    }

    /// How many triples.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The `a` shares.
    pub fn a(&self) -> &[u64] {
        &self.a
    }

    /// The `b` shares.
    pub fn b(&self) -> &[u64] {
        &self.b
    }

    /// The `c` shares.
    pub fn c(&self) -> &[u64] {
        &self.c
    }

    /// Appends `other` (paper §4.3: the sequences `s_k` of `2^k` triples are merged).
    pub fn append(&mut self, other: &TripleShares) {
        let n = self.len + other.len;
        let w = bits::words_for(n);
        for (dst, src) in [
            (&mut self.a, &other.a),
            (&mut self.b, &other.b),
            (&mut self.c, &other.c),
        ] {
            dst.resize(w, 0);
            bits::xor_bits_at(dst, self.len, src, other.len);
        }
        self.len = n;
    }

    /// Keeps the first `n` triples.
    pub fn truncate(&mut self, n: usize) {
        if n >= self.len {
            return;
        }
        let w = bits::words_for(n);
        for v in [&mut self.a, &mut self.b, &mut self.c] {
            v[w..].zeroize();
            v.truncate(w);
            if !n.is_multiple_of(64) {
                v[w - 1] &= (1u64 << (n % 64)) - 1;
            }
            if n == 0 {
                v[0] = 0;
            }
        }
        self.len = n;
    }

    /// Whether `self` (A's) and `other` (B's) are valid triples: for every `i`,
    /// `c_A ⊕ c_B = (a_A ⊕ a_B) ∧ (b_A ⊕ b_B)`. A test and diagnostic helper.
    pub fn consistent_with(&self, other: &TripleShares) -> bool {
        self.len == other.len
            && (0..self.a.len())
                .all(|k| (self.c[k] ^ other.c[k]) == (self.a[k] ^ other.a[k]) & (self.b[k] ^ other.b[k]))
    }
}

/// A trusted dealer: both parties' shares of `n` triples from `rng` (the model of
/// \[Hua12\]; used by tests and by the benchmarks of the online phase, never by two
/// parties that do not trust a third).
pub fn deal(n: usize, rng: &mut impl rand_core::RngCore) -> (TripleShares, TripleShares) {
    let w = bits::words_for(n);
    let mut v = || (0..w).map(|_| rng.next_u64()).collect::<Vec<u64>>();
    let (aa, ba, ab, bb, cb) = (v(), v(), v(), v(), v());
    let ca: Vec<u64> = (0..w).map(|k| (aa[k] ^ ab[k]) & (ba[k] ^ bb[k]) ^ cb[k]).collect();
    (
        TripleShares::from_words(n, aa, ba, ca),
        TripleShares::from_words(n, ab, bb, cb),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;

    #[test]
    fn dealt_triples_are_consistent_and_append() {
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        let (mut a, mut b) = deal(100, &mut rng);
        assert!(a.consistent_with(&b));
        let (a2, b2) = deal(37, &mut rng);
        a.append(&a2);
        b.append(&b2);
        assert_eq!(a.len(), 137);
        assert!(a.consistent_with(&b));
        a.truncate(70);
        b.truncate(70);
        assert!(a.consistent_with(&b));
        let mut bad = b.clone();
        bad.c[0] ^= 1;
        assert!(!a.consistent_with(&bad));
    }
}
