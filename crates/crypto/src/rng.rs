//! A cryptographically secure random number generator.
//!
//! [`SecureRng`] is ChaCha20 seeded from the operating system ([`SecureRng::from_os`]).
//! Protocol engines never create randomness themselves: the caller passes an RNG in,
//! so tests can pass a seeded one ([`SecureRng::from_seed`]) and get reproducible runs.

use rand_chacha::ChaCha20Rng;
use rand_core::{CryptoRng, OsRng, RngCore, SeedableRng};

/// ChaCha20-based CSPRNG.
pub struct SecureRng(ChaCha20Rng);

impl SecureRng {
    /// Seeded with 32 bytes from the operating system.
    pub fn from_os() -> Self {
        SecureRng(ChaCha20Rng::from_rng(OsRng).expect("the operating system RNG is available"))
    }

    /// Deterministic, from a seed: for tests and reproducible benchmarks only.
    pub fn from_seed(seed: [u8; 32]) -> Self {
        SecureRng(ChaCha20Rng::from_seed(seed))
    }

    /// An independent generator seeded from this one (for worker threads).
    pub fn fork(&mut self) -> Self {
        let mut seed = [0u8; 32];
        self.0.fill_bytes(&mut seed);
        let out = SecureRng::from_seed(seed);
        zeroize::Zeroize::zeroize(&mut seed);
        out
    }
}

/// Overwrites the generator's key, counter and buffered block on drop (rand_chacha
/// 0.3 has no `Zeroize`, and this crate forbids `unsafe`, so the state is replaced by
/// a zero-keyed one and `black_box` keeps the store from being elided).
impl Drop for SecureRng {
    fn drop(&mut self) {
        self.0 = ChaCha20Rng::from_seed([0; 32]);
        core::hint::black_box(&mut self.0);
        core::sync::atomic::compiler_fence(core::sync::atomic::Ordering::SeqCst);
    }
}

impl core::fmt::Debug for SecureRng {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("SecureRng(<redacted>)")
    }
}

impl RngCore for SecureRng {
    fn next_u32(&mut self) -> u32 {
        self.0.next_u32()
    }
    fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }
    fn fill_bytes(&mut self, dest: &mut [u8]) {
        self.0.fill_bytes(dest)
    }
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand_core::Error> {
        self.0.try_fill_bytes(dest)
    }
}

impl CryptoRng for SecureRng {}

/// A uniformly random integer in `0..n` (rejection sampling, no modulo bias).
pub fn uniform_below(rng: &mut impl RngCore, n: u64) -> u64 {
    assert!(n > 0, "uniform_below(0)");
    let zone = u64::MAX - (u64::MAX % n);
    loop {
        let v = rng.next_u64();
        if v < zone {
            return v % n;
        }
    }
}

/// Shuffles `items` uniformly (Fisher–Yates).
pub fn shuffle<T>(rng: &mut impl RngCore, items: &mut [T]) {
    for i in (1..items.len()).rev() {
        let j = uniform_below(rng, i as u64 + 1) as usize;
        items.swap(i, j);
    }
}
