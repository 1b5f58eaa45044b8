//! ristretto255 scalar multiplications on the GPU: `encode(k·decode(Yᵢ))` for one
//! scalar `k` and millions of public keys `Yᵢ`, the per-row work of a TracEdge key
//! table ([`crate::tracedge::keytable::build_rows`] does the same on the CPU).
//!
//! The kernel (`ristretto.cu`, compiled by NVRTC) gives one thread to each key: RFC
//! 9496 decoding, a constant-time signed radix-16 multiplication and RFC 9496
//! encoding, in 51-bit limbs. Its output is byte for byte the CPU's, because a
//! ristretto255 encoding is canonical; the source also compiles as host C++, and the
//! test `gpu_ristretto_host` checks it against curve25519-dalek without a GPU.
use std::sync::atomic::{AtomicU64, Ordering};

use cudarc::driver::{CudaContext, LaunchConfig, PushKernelArg};
use curve25519_dalek::Scalar;

use super::{GpuSelection, gpu_err};
use crate::{Error, Result};

/// The CUDA source of the kernel.
pub const SOURCE: &str = include_str!("ristretto.cu");

/// Keys per kernel launch (32 MB in, 32 MB out).
const CHUNK: usize = 1 << 20;
/// Threads per block (the kernel's launch bound).
const THREADS: u32 = 128;

/// The signed radix-16 digits of `k`: `k = Σ dᵢ·16ⁱ` with `dᵢ ∈ [-8, 8]`.
pub fn radix16(k: &Scalar) -> [i8; 64] {
    let b = k.to_bytes();
    let mut d = [0i8; 64];
    for (i, x) in b.iter().enumerate() {
        d[2 * i] = (x & 15) as i8;
        d[2 * i + 1] = (x >> 4) as i8;
    }
    // A canonical scalar is below 2²⁵³, so the top digit stays ≤ 2 after the carries.
    for i in 0..63 {
        let carry = (d[i] + 8) >> 4;
        d[i] -= carry << 4;
        d[i + 1] += carry;
    }
    d
}

/// What [`mul_encode`] found.
#[derive(Debug, Clone)]
pub struct MulOutput {
    /// `encode(k·decode(keys[i]))`, or zeros where the key was refused.
    pub points: Vec<[u8; 32]>,
    /// The indices of the keys that are no public key (not a canonical ristretto255
    /// encoding, or the identity), ascending.
    pub refused: Vec<usize>,
    /// How the kernel ran.
    pub stats: MulStats,
}

/// How [`mul_encode`]'s kernel ran (on the first GPU).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct MulStats {
    /// Registers per thread.
    pub regs: i32,
    /// Local (spilled) memory per thread, in bytes.
    pub local_bytes: i32,
    /// Seconds in copies and kernels.
    pub gpu_s: f64,
    /// Seconds compiling the kernel (NVRTC; the first call in a process only) and
    /// loading it (the driver's PTX compiler, cached by the driver across runs).
    pub compile_s: f64,
}

/// `encode(k·decode(keys[i]))` for every key, on the GPUs of `gpus` (each takes an
/// equal contiguous share). `progress` gets the number of keys done so far.
pub fn mul_encode(
    gpus: &GpuSelection,
    k: &Scalar,
    keys: &[[u8; 32]],
    progress: &(dyn Fn(u64) + Sync),
) -> Result<MulOutput> {
    let devices = gpus.devices()?;
    let t0 = std::time::Instant::now();
    let ptx = super::compile_source(SOURCE, "the ristretto255 kernel")?;
    let digits = radix16(k);
    let mut points = vec![[0u8; 32]; keys.len()];
    let mut ok = vec![0u8; keys.len()];
    let per = keys.len().div_ceil(devices.len()).max(1);
    let done = AtomicU64::new(0);
    let stats = std::sync::Mutex::new(MulStats::default());
    std::thread::scope(|s| -> Result<()> {
        let workers: Vec<_> = devices
            .iter()
            .zip(keys.chunks(per))
            .zip(points.chunks_mut(per).zip(ok.chunks_mut(per)))
            .enumerate()
            .map(|(w, ((&dev, keys), (points, ok)))| {
                let (ptx, digits, done, stats) = (&ptx, &digits, &done, &stats);
                s.spawn(move || -> Result<()> {
                    let ctx = CudaContext::new(dev).map_err(|e| gpu_err(&format!("opening GPU {dev}"), e))?;
                    let module = ctx
                        .load_module(ptx.clone())
                        .map_err(|e| gpu_err("loading the ristretto255 kernel", e))?;
                    let f = module
                        .load_function("ristretto_mul")
                        .map_err(|e| gpu_err("ristretto_mul", e))?;
                    let st = ctx.new_stream().map_err(|e| gpu_err("creating a stream", e))?;
                    let dig = st
                        .clone_htod(&digits[..])
                        .map_err(|e| gpu_err("copying the scalar", e))?;
                    let t = std::time::Instant::now();
                    for ((keys, points), ok) in keys
                        .chunks(CHUNK)
                        .zip(points.chunks_mut(CHUNK))
                        .zip(ok.chunks_mut(CHUNK))
                    {
                        let n = keys.len() as u64;
                        let kd = st
                            .clone_htod(keys.as_flattened())
                            .map_err(|e| gpu_err(&format!("copying keys to GPU {dev}"), e))?;
                        let mut out = st.alloc_zeros::<u8>(32 * keys.len()).map_err(|e| gpu_err("alloc", e))?;
                        let mut okd = st.alloc_zeros::<u8>(keys.len()).map_err(|e| gpu_err("alloc", e))?;
                        let mut b = st.launch_builder(&f);
                        b.arg(&kd).arg(&n).arg(&dig).arg(&mut out).arg(&mut okd);
                        // SAFETY: `kd` and `out` hold 32·n bytes, `okd` n, `dig` 64; one
                        // thread per key, threads past n return at once.
                        unsafe {
                            b.launch(LaunchConfig {
                                grid_dim: (super::blocks(keys.len(), THREADS as usize)?, 1, 1),
                                block_dim: (THREADS, 1, 1),
                                shared_mem_bytes: 0,
                            })
                        }
                        .map_err(|e| gpu_err("the ristretto255 kernel", e))?;
                        st.memcpy_dtoh(&out, points.as_flattened_mut())
                            .map_err(|e| gpu_err("copying points back", e))?;
                        st.memcpy_dtoh(&okd, ok).map_err(|e| gpu_err("copying flags back", e))?;
                        st.synchronize().map_err(|e| gpu_err("waiting for the GPU", e))?;
                        progress(done.fetch_add(n, Ordering::Relaxed) + n);
                    }
                    if w == 0 {
                        let regs = f.num_regs().map_err(|e| gpu_err("kernel attributes", e))?;
                        let local = f.local_size_bytes().map_err(|e| gpu_err("kernel attributes", e))?;
                        if let Ok(mut g) = stats.lock() {
                            *g = MulStats {
                                regs,
                                local_bytes: local,
                                gpu_s: t.elapsed().as_secs_f64(),
                                compile_s: (t - t0).as_secs_f64(),
                            };
                        }
                    }
                    Ok(())
                })
            })
            .collect();
        for w in workers {
            w.join().map_err(|_| Error::Gpu("a GPU worker panicked".into()))??;
        }
        Ok(())
    })?;
    let refused = ok
        .iter()
        .enumerate()
        .filter(|&(_, &o)| o == 0)
        .map(|(i, _)| i)
        .collect();
    let stats = stats.into_inner().unwrap_or_default();
    Ok(MulOutput { points, refused, stats })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;

    #[test]
    fn radix16_digits_sum_to_the_scalar() {
        let mut rng = ChaCha20Rng::seed_from_u64(3);
        let sixteen = Scalar::from(16u8);
        for k in [
            Scalar::ZERO,
            Scalar::ONE,
            -Scalar::ONE,
            Scalar::random(&mut rng),
            Scalar::random(&mut rng),
        ] {
            let d = radix16(&k);
            assert!(d.iter().all(|&x| (-8..=8).contains(&x)), "{d:?}");
            let mut acc = Scalar::ZERO;
            for &x in d.iter().rev() {
                acc = acc * sixteen
                    + if x < 0 {
                        -Scalar::from((-x) as u8)
                    } else {
                        Scalar::from(x as u8)
                    };
            }
            assert_eq!(acc, k);
        }
    }
}
