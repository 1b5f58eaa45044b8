//! Multiplication triples from OT extension (paper §2.4, after \[ALSZ13\]): two random
//! OTs per triple, one in each direction, from semi-honest IKNP \[IKNP03\] on 128 base
//! OTs (Chou–Orlandi "simplest OT" over ristretto255), all over the parties' own
//! framed TCP connection.
//!
//! **Triple from two random OTs.** In the OT where `P` is the sender it obtains two
//! random bits `(x₀, x₁)`; in the one where it is the receiver, with random choice
//! `b_P`, it obtains `v_P = y_{b_P}`. It sets
//!
//! ```text
//! a_P = x₀ ⊕ x₁,   u_P = x₀,   c_P = a_P·b_P ⊕ u_P ⊕ v_P
//! ```
//!
//! Since `v_B = u_A ⊕ b_B·a_A` and `v_A = u_B ⊕ b_A·a_B`, `c_A ⊕ c_B = a_A b_A ⊕ a_B b_B
//! ⊕ a_A b_B ⊕ a_B b_A = (a_A ⊕ a_B)(b_A ⊕ b_B)`.
//!
//! **IKNP (random OT, κ = 128).** The extension receiver holds 128 seed pairs
//! `(k⁰_j, k¹_j)` (it was the base-OT sender) and random choices `r`; it sends the
//! columns `u_j = G(k⁰_j) ⊕ G(k¹_j) ⊕ r`. The extension sender holds `s ∈ {0,1}^128`
//! and `k^{s_j}_j`, and computes `q_j = G(k^{s_j}_j) ⊕ s_j·u_j`; after transposing,
//! row `i` is `q_i = t_i ⊕ r_i·s`. Outputs are one bit of the correlation-robust hash
//! `H(x) = π(x) ⊕ x` (fixed-key AES `π`) of `q_i ⊕ i` and `q_i ⊕ s ⊕ i` for the sender
//! and of `t_i ⊕ i` for the receiver. Both parties are receiver in one extension and
//! sender in the other, so each chunk is one exchange of `16` bytes per triple each way.

use crate::bits;
use crate::messages::tags;
use crate::prg::{Prg, Seed};
use crate::triples::TripleShares;
use crate::{Error, Party};
use aes::Aes128;
use aes::cipher::{BlockEncrypt, KeyInit, generic_array::GenericArray};
use curve25519_dalek::ristretto::{CompressedRistretto, RistrettoPoint};
use curve25519_dalek::scalar::Scalar;
use curve25519_dalek::traits::Identity;
use rand_core::CryptoRngCore;
use sha2::{Digest, Sha256};
use tacit_wire::{Reader, Writer};
use zeroize::Zeroize;

/// Base OTs (the security parameter κ).
pub const KAPPA: usize = 128;
/// OTs per extension chunk (one exchange each).
pub const CHUNK_OTS: usize = 1 << 16;
/// The largest extension message: 128 columns of a chunk.
pub const MAX_CHUNK_BYTES: usize = KAPPA * CHUNK_OTS / 8 + 16;
/// The most triples one session may ask for (2^32).
pub const MAX_TRIPLES: usize = 1 << 32;

/// The fixed key of `π` (the digits of π, as in many OT libraries).
const FIXED_KEY: [u8; 16] = [
    0x24, 0x3f, 0x6a, 0x88, 0x85, 0xa3, 0x08, 0xd3, 0x13, 0x19, 0x8a, 0x2e, 0x03, 0x70, 0x73, 0x44,
];

fn kdf(label: &[u8], j: usize, point: &RistrettoPoint, transcript: &[u8]) -> Seed {
    let mut h = Sha256::new();
    h.update(b"tacit-mpc base OT v1");
    h.update(label);
    h.update((j as u32).to_be_bytes());
    h.update(transcript);
    h.update(point.compress().as_bytes());
    let d = h.finalize();
    let mut s = [0u8; 16];
    s.copy_from_slice(&d[..16]);
    Seed(s)
}

fn decode_point(bytes: &[u8]) -> Result<RistrettoPoint, Error> {
    let c = CompressedRistretto::from_slice(bytes).map_err(|_| Error::Peer("sent a malformed group element".into()))?;
    let p = c
        .decompress()
        .ok_or_else(|| Error::Peer("sent an invalid ristretto255 element".into()))?;
    if p == RistrettoPoint::identity() {
        return Err(Error::Peer("sent the identity element".into()));
    }
    Ok(p)
}

/// Base-OT step 1: this party as base-OT sender (for the extension where it is the
/// receiver) sends `A = a·G`.
pub struct BaseOtStart {
    a: Scalar,
    big_a: RistrettoPoint,
    choices: [u8; 16],
    rng_seed: Seed,
}

impl std::fmt::Debug for BaseOtStart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BaseOtStart(..)")
    }
}

impl Drop for BaseOtStart {
    fn drop(&mut self) {
        self.a.zeroize();
        self.choices.zeroize();
    }
}

/// Base-OT step 2: waiting for the peer's `B_j`.
pub struct BaseOtAwaitingKeys {
    start: BaseOtStart,
    peer_a: RistrettoPoint,
    bs: Vec<Scalar>,
}

impl std::fmt::Debug for BaseOtAwaitingKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BaseOtAwaitingKeys(..)")
    }
}

impl Drop for BaseOtAwaitingKeys {
    fn drop(&mut self) {
        for b in self.bs.iter_mut() {
            b.zeroize();
        }
    }
}

impl BaseOtStart {
    /// Starts: picks `a`, the base choices `s` and this party's PRG seed.
    pub fn new(rng: &mut impl CryptoRngCore) -> (Self, Vec<u8>) {
        let a = Scalar::random(rng);
        let big_a = RistrettoPoint::mul_base(&a);
        let mut choices = [0u8; 16];
        rng.fill_bytes(&mut choices);
        let rng_seed = Seed::random(rng);
        let mut w = Writer::new();
        w.put_envelope(tags::OT_BASE_SENDER);
        w.put_fixed(big_a.compress().as_bytes());
        (
            BaseOtStart {
                a,
                big_a,
                choices,
                rng_seed,
            },
            w.into_bytes(),
        )
    }

    /// Takes the peer's `A'` and answers, as base-OT receiver with choices `s`,
    /// `B_j = b_j·G + s_j·A'`.
    pub fn on_peer_start(
        self,
        msg: &[u8],
        rng: &mut impl CryptoRngCore,
    ) -> Result<(BaseOtAwaitingKeys, Vec<u8>), Error> {
        let mut r = Reader::new(msg);
        r.envelope(tags::OT_BASE_SENDER, "base OT sender point")?;
        let peer_a = decode_point(r.fixed("point", 32)?)?;
        r.finish()?;
        let mut w = Writer::with_capacity(3 + 32 * KAPPA);
        w.put_envelope(tags::OT_BASE_RECEIVER);
        let mut bs = Vec::with_capacity(KAPPA);
        for j in 0..KAPPA {
            let b = Scalar::random(rng);
            let mut p = RistrettoPoint::mul_base(&b);
            if self.choices[j / 8] >> (j % 8) & 1 == 1 {
                p += peer_a;
            }
            w.put_fixed(p.compress().as_bytes());
            bs.push(b);
        }
        Ok((
            BaseOtAwaitingKeys {
                start: self,
                peer_a,
                bs,
            },
            w.into_bytes(),
        ))
    }
}

impl BaseOtAwaitingKeys {
    /// Takes the peer's `B_j` and derives both seed sets: `k⁰_j = H(a·B_j)`,
    /// `k¹_j = H(a·(B_j − A))` as sender, `k^{s_j}_j = H(b_j·A')` as receiver.
    pub fn on_peer_keys(self, msg: &[u8]) -> Result<Extender, Error> {
        let mut r = Reader::new(msg);
        r.envelope(tags::OT_BASE_RECEIVER, "base OT receiver points")?;
        let mut recv_seeds = Vec::with_capacity(KAPPA);
        let my_a = self.start.big_a.compress();
        let peer_a = self.peer_a.compress();
        // As receiver of the peer's base OTs (transcript: the peer's A').
        for (j, b) in self.bs.iter().enumerate() {
            recv_seeds.push(kdf(b"ot", j, &(self.peer_a * b), peer_a.as_bytes()));
        }
        let mut send_seeds = Vec::with_capacity(KAPPA);
        for j in 0..KAPPA {
            let bj = decode_point(r.fixed("point", 32)?)?;
            let k0 = kdf(b"ot", j, &(bj * self.start.a), my_a.as_bytes());
            let k1 = kdf(b"ot", j, &((bj - self.start.big_a) * self.start.a), my_a.as_bytes());
            send_seeds.push((k0, k1));
        }
        r.finish()?;
        let delta = (u128::from_le_bytes(self.start.choices)).to_le_bytes();
        Ok(Extender::new(send_seeds, recv_seeds, delta, &self.start.rng_seed))
    }
}

/// The extension phase: chunk by chunk, this party's `u` columns out (as receiver)
/// and the peer's in (as sender), and the triples of the chunk.
pub struct Extender {
    // receiver role: G(k⁰_j), G(k¹_j)
    g0: Vec<Prg>,
    g1: Vec<Prg>,
    // sender role: G(k^{s_j}_j)
    gs: Vec<Prg>,
    delta: [u8; 16],
    choices: Prg,
    pi: Aes128,
    next_index: u64,
    // per chunk
    pending: Option<Pending>,
    out: TripleShares,
    target: usize,
}

struct Pending {
    ots: usize,
    r: Vec<u64>,
    t: Vec<u64>,
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.r.zeroize();
        self.t.zeroize();
    }
}

impl std::fmt::Debug for Extender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Extender({} of {} triples)", self.out.len(), self.target)
    }
}

impl Drop for Extender {
    fn drop(&mut self) {
        self.delta.zeroize();
    }
}

/// Transposes a 64×64 bit block in place (`a[i]` bit `j` ↔ `a[j]` bit `i`).
pub fn transpose64(a: &mut [u64; 64]) {
    let mut j = 32;
    let mut m: u64 = 0x0000_0000_ffff_ffff;
    while j != 0 {
        let mut k = 0;
        while k < 64 {
            let t = ((a[k] >> j) ^ a[k + j]) & m;
            a[k] ^= t << j;
            a[k + j] ^= t;
            k = (k + j + 1) & !j;
        }
        j >>= 1;
        m ^= m << j;
    }
}

/// Transposes 128 columns of `cols` bits (`m[j]` = column `j`, `cols/64` words) into
/// `cols` rows of 128 bits (`(lo, hi)` pairs).
fn transpose_128(m: &[Vec<u64>], cols: usize, rows: &mut [(u64, u64)]) {
    let mut blk = [0u64; 64];
    for cb in 0..cols / 64 {
        for half in 0..2 {
            for (r, b) in blk.iter_mut().enumerate() {
                *b = m[half * 64 + r][cb];
            }
            transpose64(&mut blk);
            for (i, b) in blk.iter().enumerate() {
                if half == 0 {
                    rows[cb * 64 + i].0 = *b;
                } else {
                    rows[cb * 64 + i].1 = *b;
                }
            }
        }
    }
    blk.zeroize();
}

/// Bit 0 of `H(x ⊕ i) = π(x ⊕ i) ⊕ x ⊕ i` for many rows, into `out` (one bit per row).
fn hash_bits(pi: &Aes128, rows: &[(u64, u64)], first_index: u64, xor: (u64, u64), out: &mut [u64]) {
    const B: usize = 32;
    let mut buf: [GenericArray<u8, aes::cipher::consts::U16>; B] = Default::default();
    for (c, chunk) in rows.chunks(B).enumerate() {
        for (k, &(lo, hi)) in chunk.iter().enumerate() {
            let i = first_index + (c * B + k) as u64;
            let x = ((hi ^ xor.1) as u128) << 64 | (lo ^ xor.0 ^ i) as u128;
            buf[k].copy_from_slice(&x.to_le_bytes());
        }
        let inputs: [u8; B] = core::array::from_fn(|k| buf[k][0]);
        pi.encrypt_blocks(&mut buf[..chunk.len()]);
        for k in 0..chunk.len() {
            let bit = (buf[k][0] ^ inputs[k]) & 1;
            let idx = c * B + k;
            out[idx / 64] |= (bit as u64) << (idx % 64);
        }
    }
    for b in buf.iter_mut() {
        b.as_mut_slice().zeroize();
    }
}

impl Extender {
    fn new(send_seeds: Vec<(Seed, Seed)>, recv_seeds: Vec<Seed>, delta: [u8; 16], rng_seed: &Seed) -> Self {
        Extender {
            g0: send_seeds.iter().map(|(k0, _)| Prg::new(k0, 0)).collect(),
            g1: send_seeds.iter().map(|(_, k1)| Prg::new(k1, 0)).collect(),
            gs: recv_seeds.iter().map(|k| Prg::new(k, 0)).collect(),
            delta,
            choices: Prg::new(rng_seed, 1),
            pi: Aes128::new(GenericArray::from_slice(&FIXED_KEY)),
            next_index: 0,
            pending: None,
            out: TripleShares::default(),
            target: 0,
        }
    }

    /// Sets how many triples to produce.
    pub fn set_target(&mut self, count: usize) -> Result<(), Error> {
        if count > MAX_TRIPLES {
            return Err(Error::Params(format!(
                "{count} triples; at most {MAX_TRIPLES} per session"
            )));
        }
        self.target = count;
        Ok(())
    }

    /// Triples made so far.
    pub fn made(&self) -> usize {
        self.out.len()
    }

    /// Whether all triples are made.
    pub fn done(&self) -> bool {
        self.out.len() >= self.target
    }

    /// OTs in the next chunk (a multiple of 128).
    pub fn next_chunk_len(&self) -> usize {
        let left = self.target - self.out.len().min(self.target);
        left.min(CHUNK_OTS).div_ceil(128) * 128
    }

    /// This party's `u` columns for the next chunk (extension receiver).
    pub fn chunk_message(&mut self) -> Vec<u8> {
        let ots = self.next_chunk_len();
        let w = ots / 64;
        let mut r = vec![0u64; w];
        self.choices.fill_words(&mut r);
        let mut t = vec![0u64; KAPPA * w];
        let mut u = vec![0u64; w];
        let mut msg = Writer::with_capacity(3 + 8 + KAPPA * w * 8);
        msg.put_envelope(tags::OT_EXTEND);
        msg.put_u32(ots as u32);
        msg.put_count(KAPPA * w * 8);
        for j in 0..KAPPA {
            let tj = &mut t[j * w..(j + 1) * w];
            self.g0[j].fill_words(tj);
            self.g1[j].fill_words(&mut u);
            let mut bytes = Vec::with_capacity(w * 8);
            for k in 0..w {
                let v = u[k] ^ tj[k] ^ r[k];
                bytes.extend_from_slice(&v.to_le_bytes());
            }
            msg.put_fixed(&bytes);
        }
        u.zeroize();
        self.pending = Some(Pending { ots, r, t });
        msg.into_bytes()
    }

    /// Takes the peer's `u` columns of the same chunk (extension sender) and appends
    /// the chunk's triples.
    pub fn on_chunk(&mut self, msg: &[u8]) -> Result<(), Error> {
        let pending = self
            .pending
            .take()
            .ok_or_else(|| Error::Params("no chunk in progress".into()))?;
        let ots = pending.ots;
        let w = ots / 64;
        let mut rd = Reader::new(msg);
        rd.envelope(tags::OT_EXTEND, "OT extension chunk")?;
        let got = rd.u32()? as usize;
        if got != ots {
            return Err(Error::Peer(format!(
                "sent an OT chunk of {got} OTs; {ots} were expected"
            )));
        }
        let body = rd.var_bytes("OT columns", MAX_CHUNK_BYTES)?;
        rd.finish()?;
        if body.len() != KAPPA * w * 8 {
            return Err(Error::Peer(format!(
                "sent {} bytes of OT columns; exactly {} are required",
                body.len(),
                KAPPA * w * 8
            )));
        }
        // Sender: q_j = G(k^{s_j}) ⊕ s_j·u_j.
        let mut q: Vec<Vec<u64>> = vec![vec![0u64; w]; KAPPA];
        for j in 0..KAPPA {
            self.gs[j].fill_words(&mut q[j]);
            if self.delta[j / 8] >> (j % 8) & 1 == 1 {
                let col = &body[j * w * 8..(j + 1) * w * 8];
                for (k, c) in col.chunks_exact(8).enumerate() {
                    q[j][k] ^= u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
                }
            }
        }
        let mut rows = vec![(0u64, 0u64); ots];
        transpose_128(&q, ots, &mut rows);
        for c in q.iter_mut() {
            c.zeroize();
        }
        let s = u128::from_le_bytes(self.delta);
        let s = (s as u64, (s >> 64) as u64);
        let idx = self.next_index;
        let mut x0 = vec![0u64; w];
        let mut x1 = vec![0u64; w];
        hash_bits(&self.pi, &rows, idx, (0, 0), &mut x0);
        hash_bits(&self.pi, &rows, idx, s, &mut x1);
        // Receiver: rows of t, v = H(t_i ⊕ i).
        let tcols: Vec<Vec<u64>> = (0..KAPPA).map(|j| pending.t[j * w..(j + 1) * w].to_vec()).collect();
        transpose_128(&tcols, ots, &mut rows);
        let mut v = vec![0u64; w];
        hash_bits(&self.pi, &rows, idx, (0, 0), &mut v);
        for (lo, hi) in rows.iter_mut() {
            lo.zeroize();
            hi.zeroize();
        }
        self.next_index += ots as u64;
        // a = x0 ⊕ x1, b = r, c = a·b ⊕ x0 ⊕ v.
        let a: Vec<u64> = (0..w).map(|k| x0[k] ^ x1[k]).collect();
        let b = pending.r.clone();
        let c: Vec<u64> = (0..w).map(|k| a[k] & b[k] ^ x0[k] ^ v[k]).collect();
        let take = ots.min(self.target - self.out.len());
        let chunk = TripleShares::from_words(take, a, b, c);
        self.out.append(&chunk);
        x0.zeroize();
        x1.zeroize();
        v.zeroize();
        Ok(())
    }

    /// The triples made so far.
    pub fn finish(mut self) -> TripleShares {
        std::mem::take(&mut self.out)
    }
}

/// Runs the base OTs and the extension in memory between two parties (tests and
/// benchmarks of the computation alone).
pub fn in_memory(count: usize, rng: &mut impl CryptoRngCore) -> Result<(TripleShares, TripleShares), Error> {
    let (sa, ma) = BaseOtStart::new(rng);
    let (sb, mb) = BaseOtStart::new(rng);
    let (ka, ka_msg) = sa.on_peer_start(&mb, rng)?;
    let (kb, kb_msg) = sb.on_peer_start(&ma, rng)?;
    let mut ea = ka.on_peer_keys(&kb_msg)?;
    let mut eb = kb.on_peer_keys(&ka_msg)?;
    ea.set_target(count)?;
    eb.set_target(count)?;
    while !ea.done() {
        let ua = ea.chunk_message();
        let ub = eb.chunk_message();
        ea.on_chunk(&ub)?;
        eb.on_chunk(&ua)?;
    }
    Ok((ea.finish(), eb.finish()))
}

/// The OT-extension triple source for [`crate::driver::run`].
pub struct OtSource<R> {
    rng: R,
    progress: Option<Box<dyn FnMut(u64, u64) + Send>>,
}

impl<R> std::fmt::Debug for OtSource<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OtSource").finish_non_exhaustive()
    }
}

impl<R: CryptoRngCore> OtSource<R> {
    /// A source drawing its randomness from `rng`.
    pub fn new(rng: R) -> Self {
        OtSource { rng, progress: None }
    }

    /// Calls `progress(triples made, triples wanted)` after every chunk (a progress
    /// bar for large circuits).
    pub fn with_progress(mut self, progress: impl FnMut(u64, u64) + Send + 'static) -> Self {
        self.progress = Some(Box::new(progress));
        self
    }
}

impl<R: CryptoRngCore> crate::driver::TripleSource for OtSource<R> {
    fn kind(&self) -> crate::messages::TripleKind {
        crate::messages::TripleKind::Ot
    }

    async fn triples(
        &mut self,
        conn: &mut tacit_net::FramedConn,
        _party: Party,
        count: usize,
    ) -> Result<TripleShares, Error> {
        let (start, m1) = BaseOtStart::new(&mut self.rng);
        let got = crate::driver::exchange(conn, &m1).await?;
        let (keys, m2) = start.on_peer_start(&got, &mut self.rng)?;
        let got = crate::driver::exchange(conn, &m2).await?;
        let mut ext = keys.on_peer_keys(&got)?;
        ext.set_target(count)?;
        while !ext.done() {
            let msg = ext.chunk_message();
            let got = crate::driver::exchange(conn, &msg).await?;
            ext.on_chunk(&got)?;
            if let Some(p) = self.progress.as_mut() {
                p(ext.made().min(count) as u64, count as u64);
            }
        }
        Ok(ext.finish())
    }
}

/// Words of packed bits for `n` triples (helper for callers sizing buffers).
pub fn words_for_triples(n: usize) -> usize {
    bits::words_for(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha20Rng;
    use rand_core::{RngCore, SeedableRng};

    #[test]
    fn transpose_matches_naive() {
        let mut rng = ChaCha20Rng::seed_from_u64(5);
        let mut a = [0u64; 64];
        for x in a.iter_mut() {
            *x = rng.next_u64();
        }
        let orig = a;
        transpose64(&mut a);
        for (i, ai) in a.iter().enumerate() {
            for (j, oj) in orig.iter().enumerate() {
                assert_eq!(ai >> j & 1, oj >> i & 1);
            }
        }
    }

    #[test]
    fn ot_triples_are_valid() {
        let mut rng = ChaCha20Rng::seed_from_u64(11);
        for n in [1usize, 127, 128, 1000, CHUNK_OTS + 5] {
            let (a, b) = in_memory(n, &mut rng).unwrap();
            assert_eq!(a.len(), n);
            assert!(a.consistent_with(&b), "n = {n}");
            // not all zero (the shares are random)
            assert!(a.a().iter().any(|&w| w != 0) || n < 64);
        }
    }

    #[test]
    fn deviating_peer_chunks_are_refused() {
        let mut rng = ChaCha20Rng::seed_from_u64(12);
        let (sa, ma) = BaseOtStart::new(&mut rng);
        let (sb, mb) = BaseOtStart::new(&mut rng);
        // identity point refused
        let mut bad = ma.clone();
        bad[3..].fill(0);
        assert!(BaseOtStart::new(&mut rng).0.on_peer_start(&bad, &mut rng).is_err());
        let (ka, ka_msg) = sa.on_peer_start(&mb, &mut rng).unwrap();
        let (kb, kb_msg) = sb.on_peer_start(&ma, &mut rng).unwrap();
        assert!(kb.on_peer_keys(&ka_msg[..ka_msg.len() - 1]).is_err());
        let mut ea = ka.on_peer_keys(&kb_msg).unwrap();
        ea.set_target(300).unwrap();
        let _ = ea.chunk_message();
        // a chunk of the wrong size
        let mut w = Writer::new();
        w.put_envelope(tags::OT_EXTEND);
        w.put_u32(128);
        w.put_var_bytes(&[0u8; 16 * 128]);
        assert!(matches!(ea.on_chunk(&w.into_bytes()), Err(Error::Peer(_))));
    }
}
