//! `lwe-gpu`: the [`lwe`](crate::lwe) server on NVIDIA GPUs, answer for answer
//! identical to the CPU server (same parameters, hint, table id, query and answer
//! messages), so that clients cannot tell them apart.
//!
//! **Nothing to install at build time.** CUDA is reached through `cudarc` with
//! dynamic loading: the driver (`libcuda`), NVRTC (`libnvrtc`, which compiles
//! `kernels.cu` when a server starts) and cuBLASLt (`libcublasLt`) are opened at run
//! time. On a machine without them, [`GpuLweServer::setup`] returns
//! [`Error::Gpu`] with a one-line reason, and nothing else changes.
//!
//! **Layout.** The centred matrix `D` (`m × ℓ` signed bytes, [`crate::lwe`]) is kept
//! row-major with `ℓ` padded to `ℓ'`, a multiple of 16, and split by rows into
//! *parts*, one or more per GPU (`--gpus 0,1` puts one part on each; `0,0` two on
//! GPU 0, which exercises the multi-GPU path on one device).
//!
//! **Pipeline.** Queries are answered in chunks ([`GpuConfig::chunk`] queries) through
//! [`SLOTS`] staging slots. A slot is one page-locked input buffer (the chunk's
//! queries, written straight from where the caller holds them) and one page-locked
//! result buffer (`chunk × m` answers), shared by every part (*one gather*): each part
//! copies the whole chunk of queries from the same input buffer to its GPU and its
//! answers' rows back into its own column range of the result buffer with one 2-D
//! copy, so the host neither copies the batch once per part nor joins the parts'
//! answers. Each part gives each slot a CUDA stream of its own (copy in, product,
//! copy out), so the copies of one chunk overlap the product of the next, and the
//! host stages chunk k+1 and takes chunk k−1's answers while the GPUs answer chunk k
//! ([`crate::stream::PipelinedLwe`]).
//!
//! **Answers.** `answer[r] = Σ_c D[r][c]·q[c] mod 2³²` (the exact definition of
//! `lwe::kernel`). Two paths, bit-identical:
//! * *small batches* (≤ [`GpuConfig::small_batch`] queries): kernels that read `D`
//!   once and multiply in 32-bit integers — for one or two queries a persistent grid
//!   with the queries in shared memory and 16-byte loads of `D`, for more the queries'
//!   column tile in shared memory; memory-bound, for latency;
//! * *large batches*: each query is cut into four signed base-256 digits
//!   `q = s₀ + 2⁸s₁ + 2¹⁶s₂ + 2²⁴s₃ (mod 2³²)`, `s_k ∈ [−128, 127]`, and one int8
//!   tensor-core product through cuBLASLt computes `D·[s₀ s₁ s₂ s₃ …]` for the
//!   whole chunk of queries in one pass over `D`; a kernel recombines
//!   `Σ_k 2^{8k}·(D·s_k) mod 2³²`. Every partial sum is exact in int32 because the
//!   columns are taken in chunks of at most [`K_CHUNK`] (`128·128·K_CHUNK < 2³¹`).
//!
//! **Hint.** `H = D·A` is the same product with the 1024 columns of `A` as queries.
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Arc, Mutex, MutexGuard};

use cudarc::cublaslt::{result as lt, sys as ltsys};
use cudarc::driver::{
    CudaContext, CudaEvent, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr, DevicePtrMut, LaunchConfig,
    PinnedHostSlice, PushKernelArg, sys as cusys,
};
use rayon::prelude::*;

use crate::backend::{PirServer, Sizes, Table, TableShape};
use crate::lwe::{LWE_N, LweAnswer, LweHint, LweHintUpdate, LweParams, LweQuery, TableId, reference};
use crate::stream::{Answers, PipelinedLwe, Staging, Ticket, TicketKind};
use crate::{Error, Result};

pub mod ntru;
pub mod ristretto;

/// The name of this backend.
pub const BACKEND: &str = "lwe-gpu";

/// The CUDA source of the kernels, compiled at run time by NVRTC.
pub const KERNELS: &str = include_str!("kernels.cu");

/// Columns per int8 product: `128·128·K_CHUNK < 2³¹`, so no int32 sum overflows.
pub const K_CHUNK: usize = 131_056;

/// Staging slots: chunks in flight at once (one being staged and one being taken by
/// the host, two on the GPUs).
pub const SLOTS: usize = crate::stream::PIPELINE_DEPTH;

/// Rows of `D` per part are a multiple of this (cuBLASLt alignment).
const ROW_ALIGN: usize = 16;
/// cuBLASLt workspace per stream.
const WORKSPACE: usize = 32 << 20;
/// Rows per block of the small-batch kernel (8 warps × 2 rows).
const SMALL_ROWS_PER_BLOCK: usize = 16;
/// Threads per block of the persistent one- and two-query kernel.
const ROWS_KERNEL_THREADS: u32 = 1024;

fn gpu_err(what: &str, e: impl core::fmt::Debug) -> Error {
    Error::Gpu(format!("{what}: {e:?}"))
}

/// Which GPUs hold the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GpuSelection {
    /// Every GPU the driver sees, one part each.
    All,
    /// These device ordinals, one part per entry (an ordinal may repeat).
    List(Vec<usize>),
}

impl core::str::FromStr for GpuSelection {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        if s == "all" {
            return Ok(GpuSelection::All);
        }
        let list = s
            .split(',')
            .map(|x| {
                x.trim()
                    .parse::<usize>()
                    .map_err(|_| Error::Gpu(format!("--gpus takes 'all' or ordinals like 0,1; got {s:?}")))
            })
            .collect::<Result<Vec<_>>>()?;
        if list.is_empty() || list.len() > 64 {
            return Err(Error::Gpu(format!("--gpus lists 1 to 64 devices; got {s:?}")));
        }
        Ok(GpuSelection::List(list))
    }
}

impl GpuSelection {
    /// The device ordinals, one per part; `Err` when there is no GPU or an ordinal
    /// does not exist.
    pub fn devices(&self) -> Result<Vec<usize>> {
        let count = available()?;
        match self {
            GpuSelection::All => Ok((0..count).collect()),
            GpuSelection::List(l) => {
                if let Some(bad) = l.iter().find(|&&g| g >= count) {
                    return Err(Error::Gpu(format!(
                        "GPU {bad} does not exist; this machine has {count} (0..{})",
                        count - 1
                    )));
                }
                Ok(l.clone())
            }
        }
    }
}

/// Settings of the GPU server.
#[derive(Debug, Clone)]
pub struct GpuConfig {
    /// Which GPUs hold the table (one part per entry).
    pub gpus: GpuSelection,
    /// Batches of at most this many queries take the direct kernels; larger ones the
    /// int8 tensor-core product.
    pub small_batch: usize,
    /// Queries per chunk: per staging slot and per tensor-core product (bounds device
    /// and page-locked memory, [`SLOTS`] chunks of queries and answers).
    pub chunk: usize,
}

/// The default [`GpuConfig::chunk`]: 1 024 queries per chunk, so that a batch of a
/// few thousand is three or more chunks and the host's staging overlaps the GPU.
pub const DEFAULT_CHUNK: usize = 1024;

impl Default for GpuConfig {
    fn default() -> Self {
        GpuConfig {
            gpus: GpuSelection::All,
            small_batch: 8,
            chunk: DEFAULT_CHUNK,
        }
    }
}

/// Whether the CUDA driver, NVRTC and cuBLASLt can be loaded and a device is there;
/// `Err` says in one line what is missing.
pub fn available() -> Result<usize> {
    // SAFETY: only tries to open shared libraries by name.
    unsafe {
        if !cudarc::driver::sys::is_culib_present() {
            return Err(Error::Gpu(
                "no CUDA driver (libcuda.so) on this machine; lwe-gpu and the GPU kernels need an NVIDIA GPU".into(),
            ));
        }
        if !cudarc::nvrtc::sys::is_culib_present() {
            return Err(Error::Gpu(
                "NVRTC (libnvrtc.so) was not found; add the CUDA toolkit's lib64 to LD_LIBRARY_PATH".into(),
            ));
        }
        if !ltsys::is_culib_present() {
            return Err(Error::Gpu(
                "cuBLASLt (libcublasLt.so) was not found; add the CUDA toolkit's lib64 to LD_LIBRARY_PATH".into(),
            ));
        }
    }
    let n = CudaContext::device_count().map_err(|e| gpu_err("no usable CUDA device", e))?;
    if n <= 0 {
        return Err(Error::Gpu("the CUDA driver sees no device".into()));
    }
    Ok(n as usize)
}

/// A compiled module's functions on one context.
struct Funcs {
    _module: Arc<CudaModule>,
    split: CudaFunction,
    combine: CudaFunction,
    small: [CudaFunction; 4],
    /// The persistent one- and two-query kernels.
    rows: [CudaFunction; 2],
    set_entries: CudaFunction,
    scan: CudaFunction,
    noop: CudaFunction,
}

/// One cuBLASLt product shape: `C (rows_pad × n, int32) = Dᵀ-layout (kc × rows_pad)ᵀ · S (kc × n)`.
struct Gemm {
    desc: ltsys::cublasLtMatmulDesc_t,
    a: ltsys::cublasLtMatrixLayout_t,
    b: ltsys::cublasLtMatrixLayout_t,
    c: ltsys::cublasLtMatrixLayout_t,
    algo: ltsys::cublasLtMatmulAlgo_t,
}

impl Drop for Gemm {
    fn drop(&mut self) {
        // SAFETY: created by this struct and destroyed once.
        unsafe {
            let _ = lt::destroy_matrix_layout(self.a);
            let _ = lt::destroy_matrix_layout(self.b);
            let _ = lt::destroy_matrix_layout(self.c);
            let _ = lt::destroy_matmul_desc(self.desc);
        }
    }
}

/// One int8 product `C = D[:, k0..k0+kc]·S[:, k0..k0+kc]ᵀ` through cuBLASLt on `stream`
/// (int32 result, beta = 0).
///
/// # Safety
/// The pointers are live device buffers of the sizes `g`'s layouts describe, with
/// `k0` inside each row; the handle and `g` are live; `stream` belongs to their
/// context.
#[allow(clippy::too_many_arguments)]
unsafe fn matmul_i8(
    handle: ltsys::cublasLtHandle_t,
    g: &Gemm,
    d: u64,
    limbs: u64,
    k0: usize,
    c: u64,
    workspace: u64,
    stream: &CudaStream,
) -> Result<()> {
    let (alpha, beta) = (1i32, 0i32);
    // SAFETY: as the caller promises.
    unsafe {
        lt::matmul(
            handle,
            g.desc,
            &alpha as *const i32 as *const c_void,
            &beta as *const i32 as *const c_void,
            (d + k0 as u64) as *const c_void,
            g.a,
            (limbs + k0 as u64) as *const c_void,
            g.b,
            c as *const c_void,
            g.c,
            c as *mut c_void,
            g.c,
            &g.algo,
            workspace as *mut c_void,
            WORKSPACE,
            stream.cu_stream() as ltsys::cudaStream_t,
        )
    }
    .map_err(|e| gpu_err("the int8 product (cuBLASLt)", e))
}

/// The cuBLASLt handle and the product shapes made so far.
struct Lt {
    handle: ltsys::cublasLtHandle_t,
    shapes: HashMap<(usize, usize), Gemm>,
}

impl Drop for Lt {
    fn drop(&mut self) {
        self.shapes.clear();
        // SAFETY: created in `setup`, destroyed once.
        unsafe {
            let _ = lt::destroy_handle(self.handle);
        }
    }
}
fn compile() -> Result<cudarc::nvrtc::Ptx> {
    compile_source(KERNELS, "the PIR kernels")
}

/// Compiles CUDA source with NVRTC, once per source and process (a server that
/// builds a new table every epoch compiles nothing again); `what` names it in the
/// error.
///
/// NVRTC runs on a thread of its own with a 256 MiB stack: inlining the ristretto255
/// code takes more stack than a test or async worker thread has (2 MiB overflowed).
fn compile_source(src: &'static str, what: &str) -> Result<cudarc::nvrtc::Ptx> {
    static CACHE: Mutex<Vec<(&'static str, cudarc::nvrtc::Ptx)>> = Mutex::new(Vec::new());
    let mut cache = CACHE
        .lock()
        .map_err(|_| Error::Gpu("a GPU compilation panicked".into()))?;
    if let Some((_, ptx)) = cache.iter().find(|(s, _)| core::ptr::eq(*s, src)) {
        return Ok(ptx.clone());
    }
    let ptx = std::thread::Builder::new()
        .name("nvrtc".into())
        .stack_size(256 << 20)
        .spawn(move || {
            cudarc::nvrtc::compile_ptx_with_opts(
                src,
                cudarc::nvrtc::CompileOptions {
                    options: vec!["--std=c++14".into()],
                    ..Default::default()
                },
            )
        })
        .map_err(|e| gpu_err("starting the NVRTC thread", e))?
        .join()
        .map_err(|_| Error::Gpu(format!("NVRTC panicked compiling {what}")))?
        .map_err(|e| gpu_err(&format!("compiling {what} with NVRTC"), e))?;
    cache.push((src, ptx.clone()));
    Ok(ptx)
}

impl Lt {
    fn gemm(&mut self, rows_pad: usize, cols_pad: usize, kc: usize, n: usize) -> Result<&Gemm> {
        if !self.shapes.contains_key(&(kc, n)) {
            let e = |w: &str, x: lt::CublasError| gpu_err(w, x);
            let desc = lt::create_matmul_desc(
                ltsys::cublasComputeType_t::CUBLAS_COMPUTE_32I,
                ltsys::cudaDataType::CUDA_R_32I,
            )
            .map_err(|x| e("cuBLASLt descriptor", x))?;
            let op_t: i32 = 1; // CUBLAS_OP_T
            // SAFETY: `desc` is live; the attribute is an int32.
            unsafe {
                lt::set_matmul_desc_attribute(
                    desc,
                    ltsys::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_TRANSA,
                    &op_t as *const i32 as *const c_void,
                    4,
                )
                .map_err(|x| e("cuBLASLt transpose", x))?;
            }
            let a = lt::create_matrix_layout(
                ltsys::cudaDataType::CUDA_R_8I,
                kc as u64,
                rows_pad as u64,
                cols_pad as i64,
            )
            .map_err(|x| e("cuBLASLt layout of D", x))?;
            let b = lt::create_matrix_layout(ltsys::cudaDataType::CUDA_R_8I, kc as u64, n as u64, cols_pad as i64)
                .map_err(|x| e("cuBLASLt layout of the queries", x))?;
            let c = lt::create_matrix_layout(
                ltsys::cudaDataType::CUDA_R_32I,
                rows_pad as u64,
                n as u64,
                rows_pad as i64,
            )
            .map_err(|x| e("cuBLASLt layout of the product", x))?;
            let pref = lt::create_matmul_pref().map_err(|x| e("cuBLASLt preference", x))?;
            let ws = WORKSPACE as u64;
            // SAFETY: all descriptors are live; the preference is destroyed below.
            let heur = unsafe {
                lt::set_matmul_pref_attribute(
                    pref,
                    ltsys::cublasLtMatmulPreferenceAttributes_t::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                    &ws as *const u64 as *const c_void,
                    8,
                )
                .map_err(|x| e("cuBLASLt workspace", x))?;
                let h = lt::get_matmul_algo_heuristic(self.handle, desc, a, b, c, c, pref);
                let _ = lt::destroy_matmul_pref(pref);
                h.map_err(|x| e("cuBLASLt has no int8 algorithm for this shape", x))?
            };
            self.shapes.insert(
                (kc, n),
                Gemm {
                    desc,
                    a,
                    b,
                    c,
                    algo: heur.algo,
                },
            );
        }
        self.shapes
            .get(&(kc, n))
            .ok_or_else(|| Error::Gpu("cuBLASLt shape cache".into()))
    }
}

fn load(ctx: &Arc<CudaContext>, ptx: &cudarc::nvrtc::Ptx) -> Result<Funcs> {
    let module = ctx
        .load_module(ptx.clone())
        .map_err(|e| gpu_err("loading the kernels", e))?;
    let get = |n: &str| module.load_function(n).map_err(|e| gpu_err(n, e));
    Ok(Funcs {
        split: get("split_limbs")?,
        combine: get("combine")?,
        small: [
            get("gemv_small_1")?,
            get("gemv_small_2")?,
            get("gemv_small_4")?,
            get("gemv_small_8")?,
        ],
        rows: [get("gemv_rows_1")?, get("gemv_rows_2")?],
        set_entries: get("set_entries")?,
        scan: get("scan_xor")?,
        noop: get("noop")?,
        _module: module,
    })
}

fn blocks(n: usize, per: usize) -> Result<u32> {
    u32::try_from(n.div_ceil(per).max(1)).map_err(|_| Error::Gpu(format!("a launch of {n} threads is too large")))
}

/// One stream of a part with the device buffers of one staging slot: the chunk's
/// copy in, product and copy out run on it in order, and `done` marks the end.
struct Lane {
    stream: Arc<CudaStream>,
    done: CudaEvent,
    workspace: CudaSlice<u8>,
    /// Queries the buffers below hold.
    cap: usize,
    /// Whether `limbs` and `c` are allocated for `cap` (the tensor-core path).
    large: bool,
    qd: Option<CudaSlice<u32>>,
    out: Option<CudaSlice<u32>>,
    limbs: Option<CudaSlice<i8>>,
    c: Option<CudaSlice<i32>>,
}

impl Lane {
    fn new(ctx: &Arc<CudaContext>) -> Result<Self> {
        let stream = ctx.new_stream().map_err(|e| gpu_err("creating a stream", e))?;
        let done = ctx.new_event(None).map_err(|e| gpu_err("creating an event", e))?;
        let workspace = stream
            .alloc_zeros::<u8>(WORKSPACE)
            .map_err(|e| gpu_err("allocating the cuBLASLt workspace", e))?;
        Ok(Lane {
            stream,
            done,
            workspace,
            cap: 0,
            large: false,
            qd: None,
            out: None,
            limbs: None,
            c: None,
        })
    }

    /// Makes the buffers hold `nq` queries (and the limbs and product if `large`).
    fn ensure(&mut self, nq: usize, large: bool, rows: usize, rows_pad: usize, cols_pad: usize) -> Result<()> {
        if nq <= self.cap && (self.large || !large) {
            return Ok(());
        }
        // Nothing may still read the buffers about to be freed.
        self.stream
            .synchronize()
            .map_err(|e| gpu_err("waiting for the GPU", e))?;
        let s = self.stream.clone();
        let cap = nq.max(self.cap);
        // SAFETY (all four): every element is written before it is read — queries by
        // the copy in, answers by the kernels, limbs by the limb kernel, the product
        // by cuBLASLt with beta = 0.
        unsafe {
            self.qd = None;
            self.out = None;
            self.qd = Some(
                s.alloc::<u32>(cap * cols_pad)
                    .map_err(|e| gpu_err("allocating queries", e))?,
            );
            self.out = Some(
                s.alloc::<u32>(cap * rows)
                    .map_err(|e| gpu_err("allocating answers", e))?,
            );
            if large || self.large {
                self.limbs = None;
                self.c = None;
                self.limbs = Some(
                    s.alloc::<i8>(4 * cap * cols_pad)
                        .map_err(|e| gpu_err("allocating query limbs", e))?,
                );
                self.c = Some(
                    s.alloc::<i32>(rows_pad * 4 * cap)
                        .map_err(|e| gpu_err("allocating the product", e))?,
                );
                self.large = true;
            }
        }
        self.cap = cap;
        Ok(())
    }
}

/// Rows `[r0, r0 + rows)` of `D` on one device, with one lane per staging slot.
struct Part {
    device: usize,
    r0: usize,
    rows: usize,
    rows_pad: usize,
    ctx: Arc<CudaContext>,
    f: Funcs,
    d: CudaSlice<i8>,
    lt: Lt,
    /// Multiprocessors of the device (the persistent kernel's grid).
    sms: u32,
    /// Shared memory a block may opt in to, in bytes.
    smem_optin: usize,
    lanes: Vec<Lane>,
}

// SAFETY: the raw cuBLASLt handle is only used under the server's pipeline mutex,
// with the part's context bound to the calling thread first; CUDA handles may move
// between threads when not used concurrently.
unsafe impl Send for Part {}

/// A staging slot: page-locked queries in (`cap × cols_pad`) and answers out
/// (`cap × m`), shared by every part.
struct Slot {
    input: Option<PinnedHostSlice<u32>>,
    output: Option<PinnedHostSlice<u32>>,
    cap: usize,
    /// The submission in flight, if any.
    busy: Option<u64>,
}

/// Everything the GPUs run with, used under one mutex.
struct Pipe {
    parts: Vec<Part>,
    slots: Vec<Slot>,
}

impl Drop for Pipe {
    fn drop(&mut self) {
        // Copies in flight read and write the page-locked slots, which are freed
        // after this.
        for p in &self.parts {
            for l in &p.lanes {
                let _ = l.stream.synchronize();
            }
        }
    }
}

/// A staging slot held busy while its caller works on it without the pipeline's
/// mutex: freed when dropped (also on an error or unwinding) unless kept.
struct SlotHold<'a> {
    server: &'a GpuLweServer,
    slot: usize,
    keep: bool,
}

impl<'a> SlotHold<'a> {
    fn new(server: &'a GpuLweServer, slot: usize) -> Self {
        SlotHold {
            server,
            slot,
            keep: false,
        }
    }

    /// The slot stays busy (its chunk is in flight).
    fn keep(&mut self) {
        self.keep = true;
    }
}

impl Drop for SlotHold<'_> {
    fn drop(&mut self) {
        if !self.keep {
            // A poisoned mutex: the server is unusable anyway.
            if let Ok(mut p) = self.server.pipe.lock()
                && let Some(s) = p.slots.get_mut(self.slot)
            {
                s.busy = None;
            }
        }
    }
}

/// What one chunk computes on.
struct Work<'a> {
    f: &'a Funcs,
    d: &'a CudaSlice<i8>,
    lt: &'a mut Lt,
    rows: usize,
    rows_pad: usize,
    cols_pad: usize,
    sms: u32,
    smem_optin: usize,
}

impl Work<'_> {
    /// `out[j][r] = Σ_c D[r][c]·q_j[c] mod 2³²` for the part's rows and the lane's
    /// first `nq` queries (already on the device), on the lane's stream.
    fn compute(&mut self, lane: &mut Lane, nq: usize, small_batch: usize) -> Result<()> {
        let (rows, rows_pad, cols_pad) = (self.rows, self.rows_pad, self.cols_pad);
        let s = lane.stream.clone();
        let large = nq > small_batch;
        lane.ensure(nq, large, rows, rows_pad, cols_pad)?;
        let (Some(q), Some(out)) = (lane.qd.as_ref(), lane.out.as_mut()) else {
            return Err(Error::Gpu("lane buffers".into()));
        };
        if !large {
            // Groups of 8, 4 (query tiles in shared memory) and 2, 1 (the persistent
            // kernel, when the queries fit in shared memory).
            let mut j = 0;
            while j < nq {
                let (k, g) = match nq - j {
                    x if x >= 8 => (3, 8),
                    x if x >= 4 => (2, 4),
                    x if x >= 2 => (1, 2),
                    _ => (0, 1),
                };
                let qv = q.slice(j * cols_pad..(j + g) * cols_pad);
                let mut ov = out.slice_mut(j * rows..(j + g) * rows);
                let (r64, c64) = (rows as u64, cols_pad as u64);
                let smem = g * cols_pad * 4;
                let (func, cfg) = if g <= 2 && smem <= self.smem_optin {
                    (
                        &self.f.rows[g - 1],
                        LaunchConfig {
                            grid_dim: (self.sms.max(1), 1, 1),
                            block_dim: (ROWS_KERNEL_THREADS, 1, 1),
                            shared_mem_bytes: smem as u32,
                        },
                    )
                } else {
                    (
                        &self.f.small[k],
                        LaunchConfig {
                            grid_dim: (blocks(rows, SMALL_ROWS_PER_BLOCK)?, 1, 1),
                            block_dim: (256, 1, 1),
                            shared_mem_bytes: 0,
                        },
                    )
                };
                let mut b = s.launch_builder(func);
                b.arg(self.d).arg(&r64).arg(&c64).arg(&qv).arg(&mut ov);
                // SAFETY: D has rows_pad ≥ rows rows of cols_pad bytes; q has g rows of
                // cols_pad elements; out has g rows of `rows` elements; the persistent
                // kernel's shared memory holds its g queries and was opted in to at load.
                unsafe { b.launch(cfg) }.map_err(|e| gpu_err("the small-batch kernel", e))?;
                j += g;
            }
            return Ok(());
        }
        let (Some(limbs), Some(c)) = (lane.limbs.as_mut(), lane.c.as_mut()) else {
            return Err(Error::Gpu("lane buffers".into()));
        };
        {
            let (n64, c64) = (nq as u64, cols_pad as u64);
            let mut b = s.launch_builder(&self.f.split);
            b.arg(q).arg(&n64).arg(&c64).arg(&mut *limbs);
            let n = u32::try_from(nq * cols_pad).map_err(|_| Error::Gpu("batch too large".into()))?;
            // SAFETY: q has ≥ nq·cols_pad elements, limbs ≥ 4·nq·cols_pad.
            unsafe { b.launch(LaunchConfig::for_num_elems(n)) }.map_err(|e| gpu_err("the limb kernel", e))?;
        }
        let handle = self.lt.handle;
        let mut k0 = 0;
        while k0 < cols_pad {
            let kc = K_CHUNK.min(cols_pad - k0);
            let g = self.lt.gemm(rows_pad, cols_pad, kc, 4 * nq)?;
            {
                let (dp, _r1) = self.d.device_ptr(&s);
                let (lp, _r2) = limbs.device_ptr(&s);
                let (cp, _r3) = c.device_ptr_mut(&s);
                let (wp, _r4) = lane.workspace.device_ptr_mut(&s);
                // SAFETY: D, the limbs, the product and the workspace are live and
                // sized for `g`'s layouts; k0 < cols_pad.
                unsafe { matmul_i8(handle, g, dp, lp, k0, cp, wp, &s)? };
            }
            let (rp, r64, n64) = (rows_pad as u64, rows as u64, nq as u64);
            let acc: i32 = i32::from(k0 > 0);
            let mut b = s.launch_builder(&self.f.combine);
            b.arg(&*c).arg(&rp).arg(&r64).arg(&n64).arg(&mut *out).arg(&acc);
            let n = u32::try_from(nq * rows).map_err(|_| Error::Gpu("batch too large".into()))?;
            // SAFETY: c has ≥ rows_pad·4·nq elements, out ≥ nq·rows.
            unsafe { b.launch(LaunchConfig::for_num_elems(n)) }.map_err(|e| gpu_err("the recombination kernel", e))?;
            k0 += kc;
        }
        Ok(())
    }
}

impl Part {
    fn work(&mut self, cols_pad: usize) -> (Work<'_>, &mut [Lane]) {
        (
            Work {
                f: &self.f,
                d: &self.d,
                lt: &mut self.lt,
                rows: self.rows,
                rows_pad: self.rows_pad,
                cols_pad,
                sms: self.sms,
                smem_optin: self.smem_optin,
            },
            &mut self.lanes,
        )
    }

    /// Enqueues one chunk on lane `s`: the `n` queries from page-locked `input`
    /// (`n × cols_pad`) to the GPU, the product, and the part's rows of the answers
    /// into page-locked `output` (`n` answers of `m` elements, the part's rows at
    /// column `r0`); then records the lane's `done` event.
    ///
    /// # Safety
    /// `input` and `output` point to page-locked buffers of at least `n·cols_pad`
    /// and `n·m` elements that stay allocated, and that nothing else writes (input)
    /// or reads (output), until the event has completed.
    #[allow(clippy::too_many_arguments)]
    unsafe fn enqueue(
        &mut self,
        s: usize,
        n: usize,
        input: *const u32,
        output: *mut u32,
        m: usize,
        cols_pad: usize,
        small: usize,
    ) -> Result<()> {
        self.ctx
            .bind_to_thread()
            .map_err(|e| gpu_err("binding the context", e))?;
        let (rows, rows_pad, r0) = (self.rows, self.rows_pad, self.r0);
        let (mut work, lanes) = self.work(cols_pad);
        let lane = &mut lanes[s];
        lane.ensure(n, n > small, rows, rows_pad, cols_pad)?;
        let st = lane.stream.clone();
        {
            let qd = lane.qd.as_mut().ok_or_else(|| Error::Gpu("lane buffers".into()))?;
            let (qp, _r) = qd.device_ptr_mut(&st);
            // SAFETY: the caller keeps `input` page-locked and unchanged until `done`;
            // the destination holds ≥ n·cols_pad elements.
            unsafe {
                cusys::cuMemcpyHtoDAsync_v2(qp, input as *const c_void, n * cols_pad * 4, st.cu_stream())
                    .result()
                    .map_err(|e| gpu_err("copying queries to the GPU", e))?;
            }
        }
        work.compute(lane, n, small)?;
        {
            let out = lane.out.as_ref().ok_or_else(|| Error::Gpu("lane buffers".into()))?;
            let (op, _r) = out.device_ptr(&st);
            if rows == m {
                // SAFETY: the caller keeps `output` page-locked until `done`; it holds
                // ≥ n·m elements.
                unsafe {
                    cusys::cuMemcpyDtoHAsync_v2(output as *mut c_void, op, n * m * 4, st.cu_stream())
                        .result()
                        .map_err(|e| gpu_err("copying answers from the GPU", e))?;
                }
            } else {
                // The part's rows of every answer, straight into its columns of the
                // shared result buffer.
                let copy = cusys::CUDA_MEMCPY2D {
                    srcXInBytes: 0,
                    srcY: 0,
                    srcMemoryType: cusys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
                    srcHost: core::ptr::null(),
                    srcDevice: op,
                    srcArray: core::ptr::null_mut(),
                    srcPitch: rows * 4,
                    dstXInBytes: r0 * 4,
                    dstY: 0,
                    dstMemoryType: cusys::CUmemorytype::CU_MEMORYTYPE_HOST,
                    dstHost: output as *mut c_void,
                    dstDevice: 0,
                    dstArray: core::ptr::null_mut(),
                    dstPitch: m * 4,
                    WidthInBytes: rows * 4,
                    Height: n,
                };
                // SAFETY: as above; rows r0..r0+rows of each of the n answers lie
                // inside `output` (r0 + rows ≤ m).
                unsafe {
                    cusys::cuMemcpy2DAsync_v2(&copy, st.cu_stream())
                        .result()
                        .map_err(|e| gpu_err("copying answers from the GPU", e))?;
                }
            }
        }
        lane.done.record(&st).map_err(|e| gpu_err("recording an event", e))?;
        Ok(())
    }

    fn sync_lanes(&self) -> Result<()> {
        for l in &self.lanes {
            l.stream.synchronize().map_err(|e| gpu_err("waiting for the GPU", e))?;
        }
        Ok(())
    }
}

/// Bandwidth and latency floors of one GPU, measured by
/// [`GpuLweServer::transfer_floors`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TransferFloors {
    /// An empty kernel launched and waited for (ms).
    pub launch_ms: f64,
    /// One query's `ℓ` values from page-locked memory to the GPU, waited for (ms).
    pub h2d_one_ms: f64,
    /// One answer's rows from the GPU to page-locked memory, waited for (ms).
    pub d2h_one_ms: f64,
    /// Page-locked to GPU, a chunk of queries at once (GB/s).
    pub h2d_gb_s: f64,
    /// GPU to page-locked, a chunk of answers at once (GB/s).
    pub d2h_gb_s: f64,
    /// Both directions at once, on two streams (GB/s in all).
    pub duplex_gb_s: f64,
    /// Queries in the chunk the bandwidths were measured on.
    pub chunk: usize,
}
/// The centred matrix, row-major with `cols_pad` columns, rows `[r0, r0 + n)` (zero
/// rows past `m`).
fn centred_rows(params: &LweParams, table: &Table, r0: usize, n: usize, cols_pad: usize) -> Vec<i8> {
    let (m, l, d) = (params.matrix_rows(), params.cols(), params.d());
    let slots = params.slots() as u64;
    let layout = params.symbols();
    let half = 1i32 << (params.log_p() - 1);
    let mut out = vec![0i8; n * cols_pad];
    // Rows of one slot are d consecutive matrix rows; fill slot by slot in parallel.
    let first_slot = r0 / d;
    let last_slot = (r0 + n).min(m).div_ceil(d);
    let filled: Vec<(usize, Vec<i8>)> = (first_slot..last_slot)
        .into_par_iter()
        .map(|s| {
            let mut block = vec![0i8; d * l];
            for c in 0..l {
                let i = c as u64 * slots + s as u64;
                if i < table.shape().rows {
                    let row = table.row(i).unwrap_or(&[]);
                    for (k, v) in layout.split(row).into_iter().enumerate() {
                        block[k * l + c] = (v as i32 - half) as i8;
                    }
                } else {
                    for k in 0..d {
                        block[k * l + c] = (-half) as i8;
                    }
                }
            }
            (s, block)
        })
        .collect();
    for (s, block) in filled {
        for k in 0..d {
            let r = s * d + k;
            if r < r0 || r >= r0 + n || r >= m {
                continue;
            }
            out[(r - r0) * cols_pad..(r - r0) * cols_pad + l].copy_from_slice(&block[k * l..(k + 1) * l]);
        }
    }
    out
}

/// The `lwe-gpu` server: the parts of `D` on the GPUs, the hint and the table id
/// (on the host, identical to [`crate::lwe::LweServer`]'s), and the pipeline.
pub struct GpuLweServer {
    params: LweParams,
    cols_pad: usize,
    hint: Arc<Vec<u32>>,
    id: TableId,
    /// `(device, first row, rows)` per part.
    layout: Vec<(usize, usize, usize)>,
    pipe: Mutex<Pipe>,
    config: GpuConfig,
    devices: Vec<String>,
}

impl core::fmt::Debug for GpuLweServer {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("GpuLweServer")
            .field("params", &self.params)
            .field("parts", &self.layout.len())
            .finish_non_exhaustive()
    }
}

impl GpuLweServer {
    /// Puts `table` on the GPUs of `config` and computes the hint there. The hint,
    /// table id and every answer equal [`crate::lwe::LweServer::setup`]'s for the
    /// same parameters.
    pub fn setup(table: &Table, params: LweParams, config: GpuConfig) -> Result<Self> {
        params.check()?;
        if table.shape() != params.shape() {
            return Err(Error::InvalidParams(format!(
                "the parameters are for {:?}; the table is {:?}",
                params.shape(),
                table.shape()
            )));
        }
        let devices = config.gpus.devices()?;
        if config.small_batch > 64 || config.chunk == 0 || config.chunk > 65_536 {
            return Err(Error::Gpu("small batch must be at most 64 and chunk 1..=65536".into()));
        }
        let (m, l) = (params.matrix_rows(), params.cols());
        let cols_pad = l.div_ceil(16) * 16;
        let ptx = compile()?;
        // Rows split evenly in multiples of ROW_ALIGN.
        let per = m.div_ceil(devices.len()).div_ceil(ROW_ALIGN) * ROW_ALIGN;
        let mut parts = Vec::new();
        let mut contexts: HashMap<usize, (Arc<CudaContext>, String)> = HashMap::new();
        for (i, &dev) in devices.iter().enumerate() {
            let r0 = (i * per).min(m);
            let rows = per.min(m - r0);
            if rows == 0 {
                continue;
            }
            let rows_pad = rows.div_ceil(ROW_ALIGN) * ROW_ALIGN;
            if let std::collections::hash_map::Entry::Vacant(slot) = contexts.entry(dev) {
                let ctx = CudaContext::new(dev).map_err(|e| gpu_err(&format!("opening GPU {dev}"), e))?;
                // SAFETY: each lane's buffers are used by its own stream only; the
                // matrix is written only while no chunk is in flight (setup, and
                // `&mut self` updates after draining every stream); the page-locked
                // slots are reused only after their chunk's event completed.
                unsafe { ctx.disable_event_tracking() };
                let name = ctx.name().unwrap_or_else(|_| "unknown GPU".into());
                slot.insert((ctx, name));
            }
            let ctx = contexts[&dev].0.clone();
            let f = load(&ctx, &ptx)?;
            let attr = |a| ctx.attribute(a).map_err(|e| gpu_err("device attribute", e));
            let sms = attr(cusys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32;
            let optin = attr(cusys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?;
            // The persistent kernels keep their queries in shared memory: allow them
            // all the device offers (without it, 48 KB).
            let mut smem_optin = 0usize;
            for func in &f.rows {
                let static_smem = func.shared_size_bytes().map_err(|e| gpu_err("a kernel attribute", e))?;
                let dynamic = optin - static_smem;
                func.set_attribute(
                    cusys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    dynamic,
                )
                .map_err(|e| gpu_err("opting in to shared memory", e))?;
                smem_optin = dynamic.max(0) as usize;
            }
            let lanes = (0..SLOTS).map(|_| Lane::new(&ctx)).collect::<Result<Vec<_>>>()?;
            let host = centred_rows(&params, table, r0, rows_pad, cols_pad);
            let d = lanes[0]
                .stream
                .clone_htod(&host)
                .map_err(|e| gpu_err(&format!("copying {} MB of the table to GPU {dev}", host.len() >> 20), e))?;
            lanes[0]
                .stream
                .synchronize()
                .map_err(|e| gpu_err("waiting for the GPU", e))?;
            drop(host);
            ctx.bind_to_thread().map_err(|e| gpu_err("binding the context", e))?;
            let handle = lt::create_handle().map_err(|e| gpu_err("creating a cuBLASLt handle", e))?;
            parts.push(Part {
                device: dev,
                r0,
                rows,
                rows_pad,
                ctx,
                f,
                d,
                lt: Lt {
                    handle,
                    shapes: HashMap::new(),
                },
                sms,
                smem_optin,
                lanes,
            });
        }
        // A GPU listed for a table too small to give it rows holds no part and has
        // no context.
        let mut names: Vec<String> = devices
            .iter()
            .filter_map(|d| contexts.get(d).map(|c| format!("{d}: {}", c.1)))
            .collect();
        names.dedup();
        let layout = parts.iter().map(|p| (p.device, p.r0, p.rows)).collect();
        let slots = (0..SLOTS)
            .map(|_| Slot {
                input: None,
                output: None,
                cap: 0,
                busy: None,
            })
            .collect();
        let mut server = GpuLweServer {
            params,
            cols_pad,
            hint: Arc::new(Vec::new()),
            id: [0; 32],
            layout,
            pipe: Mutex::new(Pipe { parts, slots }),
            config,
            devices: names,
        };
        server.compute_hint()?;
        Ok(server)
    }

    fn lock(&self) -> Result<MutexGuard<'_, Pipe>> {
        self.pipe.lock().map_err(|_| Error::Gpu("a GPU worker panicked".into()))
    }

    /// `H = D·A` on the GPUs (the columns of `A` as 1024 queries), then the table id.
    fn compute_hint(&mut self) -> Result<()> {
        let (m, l) = (self.params.matrix_rows(), self.params.cols());
        let seed = self.params.seed();
        let mut a_rows = vec![0u32; l * LWE_N];
        a_rows
            .par_chunks_mut(LWE_N)
            .enumerate()
            .for_each(|(c, row)| reference::a_row(&seed, c, row));
        // Query j is column j of A.
        let fill = |j: usize, dst: &mut [u32]| {
            for (c, v) in dst.iter_mut().enumerate() {
                *v = a_rows[c * LWE_N + j];
            }
        };
        let mut h = vec![0u32; m * LWE_N];
        let chunk = self.config.chunk;
        let mut in_flight: std::collections::VecDeque<(usize, Ticket)> = std::collections::VecDeque::new();
        let take = |first: usize, t: Ticket, h: &mut Vec<u32>| -> Result<()> {
            self.finish(t, &mut |a| {
                let n = a.len();
                h.par_chunks_mut(LWE_N).enumerate().for_each(|(r, hr)| {
                    for j in 0..n {
                        hr[first + j] = a.get(j)[r];
                    }
                });
            })
        };
        let mut j0 = 0;
        while j0 < LWE_N {
            let g = chunk.min(LWE_N - j0);
            let fill_chunk = |j: usize, dst: &mut [u32]| fill(j0 + j, dst);
            // The tensor-core path for every chunk (exact either way).
            match self.submit_with(g, &mut |st| st.fill_par(&fill_chunk), true)? {
                Some(t) => {
                    in_flight.push_back((j0, t));
                    j0 += g;
                }
                None => {
                    let (first, t) = in_flight
                        .pop_front()
                        .ok_or_else(|| Error::Gpu("no staging slot".into()))?;
                    take(first, t, &mut h)?;
                }
            }
        }
        while let Some((first, t)) = in_flight.pop_front() {
            take(first, t, &mut h)?;
        }
        let _ = m;
        self.id = reference::table_id(&self.params, &h);
        self.hint = Arc::new(h);
        Ok(())
    }

    /// [`PipelinedLwe::submit`], with every chunk on the tensor-core path when
    /// `force_large`.
    fn submit_with(&self, n: usize, fill: &mut dyn FnMut(Staging<'_>), force_large: bool) -> Result<Option<Ticket>> {
        if n == 0 || n > self.config.chunk {
            return Err(Error::Gpu(format!(
                "a submission holds 1 to {} queries, not {n}",
                self.config.chunk
            )));
        }
        let (m, l, cols_pad) = (self.params.matrix_rows(), self.params.cols(), self.cols_pad);
        let small = if force_large { 0 } else { self.config.small_batch };
        let mut guard = self.lock()?;
        let Pipe { parts, slots } = &mut *guard;
        let Some(s) = slots.iter().position(|x| x.busy.is_none()) else {
            return Ok(None);
        };
        let slot = &mut slots[s];
        if slot.cap < n {
            // The slot is free, so no copy uses its buffers.
            slot.input = None;
            slot.output = None;
            let cap = self.config.chunk;
            let ctx = &parts.first().ok_or_else(|| Error::Gpu("no GPU part".into()))?.ctx;
            // SAFETY: written by the fill (queries) and by the copies out (answers)
            // before anything reads them. Portable: every part's context copies from
            // and to them.
            unsafe {
                slot.input = Some(
                    ctx.alloc_pinned_with_flags::<u32>(cap * cols_pad, cusys::CU_MEMHOSTALLOC_PORTABLE)
                        .map_err(|e| gpu_err("allocating page-locked memory", e))?,
                );
                slot.output = Some(
                    ctx.alloc_pinned_with_flags::<u32>(cap * m, cusys::CU_MEMHOSTALLOC_PORTABLE)
                        .map_err(|e| gpu_err("allocating page-locked memory", e))?,
                );
            }
            slot.cap = cap;
        }
        let (Some(input), Some(output)) = (slot.input.as_mut(), slot.output.as_mut()) else {
            return Err(Error::Gpu("staging buffers".into()));
        };
        let in_ptr = input.as_mut_ptr().map_err(|e| gpu_err("page-locked memory", e))?;
        let out_ptr = output.as_mut_ptr().map_err(|e| gpu_err("page-locked memory", e))?;
        // Unique across servers, so that a ticket handed to the wrong server is
        // refused.
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // The slot is ours from here on: the queries are written without the
        // pipeline's mutex, so that other callers take their answers meanwhile.
        slot.busy = Some(id);
        drop(guard);
        let mut held = SlotHold::new(self, s);
        {
            // SAFETY: the slot is marked busy (by us), so nothing else writes or
            // reallocates its buffers and no copy reads them until we enqueue it below;
            // they hold `cap ≥ n` rows of `cols_pad`.
            let inp = unsafe { std::slice::from_raw_parts_mut(in_ptr, n * cols_pad) };
            if cols_pad > l {
                for row in inp.chunks_mut(cols_pad) {
                    row[l..].iter_mut().for_each(|v| *v = 0);
                }
            }
            fill(Staging::new(inp, cols_pad, l)?);
        }
        let mut guard = self.lock()?;
        let Pipe { parts, .. } = &mut *guard;
        for (pi, p) in parts.iter_mut().enumerate() {
            // SAFETY: the slot is marked busy and stays so, its buffers allocated and
            // untouched by the host, until `finish` has waited for every part's event.
            let r = unsafe { p.enqueue(s, n, in_ptr, out_ptr, m, cols_pad, small) };
            if let Err(e) = r {
                // Leave the slot free with nothing in flight on it.
                for q in parts.iter().take(pi + 1) {
                    let _ = q.ctx.bind_to_thread();
                    let _ = q.lanes[s].stream.synchronize();
                }
                return Err(e);
            }
        }
        drop(guard);
        held.keep();
        Ok(Some(Ticket(TicketKind::Gpu { id, slot: s, n })))
    }

    fn finish_gpu(&self, id: u64, s: usize, n: usize, take: &mut dyn FnMut(&Answers<'_>)) -> Result<()> {
        let m = self.params.matrix_rows();
        let mut guard = self.lock()?;
        let Pipe { parts, slots } = &mut *guard;
        let slot = slots
            .get_mut(s)
            .ok_or_else(|| Error::Gpu("no such staging slot".into()))?;
        if slot.busy != Some(id) {
            return Err(Error::Gpu("a ticket of another submission or server".into()));
        }
        let mut waited = Ok(());
        for p in parts.iter() {
            let r = p.lanes[s]
                .done
                .synchronize()
                .map_err(|e| gpu_err("waiting for the GPU", e));
            if waited.is_ok() {
                waited = r;
            }
        }
        if let Err(e) = waited {
            slot.busy = None;
            return Err(e);
        }
        let out = slot
            .output
            .as_ref()
            .ok_or_else(|| Error::Gpu("staging buffers".into()))?;
        let out_ptr = out.as_ptr().map_err(|e| gpu_err("page-locked memory", e))?;
        drop(guard);
        // The answers are read without the pipeline's mutex, so that other callers
        // stage their queries meanwhile; the slot is freed after (or on unwinding).
        let _held = SlotHold::new(self, s);
        // SAFETY: the slot is still marked busy (with our ticket), so nothing writes
        // or reallocates its buffers, and every part's copies into it are done (the
        // events above); it holds `cap ≥ n` answers of `m` elements.
        let data = unsafe { std::slice::from_raw_parts(out_ptr, n * m) };
        take(&Answers::flat(data, m));
        Ok(())
    }

    /// The parameters.
    pub fn params(&self) -> &LweParams {
        &self.params
    }

    /// The table id (changes with every update).
    pub fn table_id(&self) -> TableId {
        self.id
    }

    /// The hint for clients (the same as the CPU server's).
    pub fn hint(&self) -> LweHint {
        LweHint {
            params: self.params,
            h: self.hint.clone(),
        }
    }

    /// The devices in use, as `"ordinal: name"`.
    pub fn devices(&self) -> &[String] {
        &self.devices
    }

    /// Parts of the table (rows split across GPUs): `(device, first row, rows)`.
    pub fn parts(&self) -> Vec<(usize, usize, usize)> {
        self.layout.clone()
    }

    /// Queries per chunk ([`GpuConfig::chunk`]).
    pub fn chunk(&self) -> usize {
        self.config.chunk
    }

    /// Bytes of `D` on the GPUs (padding included).
    pub fn matrix_bytes(&self) -> usize {
        self.layout
            .iter()
            .map(|&(_, _, rows)| rows.div_ceil(ROW_ALIGN) * ROW_ALIGN * self.cols_pad)
            .sum()
    }

    fn check(&self, queries: &[&LweQuery]) -> Result<()> {
        let l = self.params.cols();
        for x in queries {
            if x.table_id != self.id {
                return Err(Error::WrongTable {
                    ours: crate::lwe::hex8(&self.id),
                    theirs: crate::lwe::hex8(&x.table_id),
                });
            }
            if x.values.len() != l {
                return Err(Error::WrongLength {
                    what: "the query",
                    got: x.values.len(),
                    expected: l,
                });
            }
        }
        Ok(())
    }

    /// Device-side timings for the bench, with the queries already on the GPU:
    /// milliseconds per batch of `nq` random queries through the server's own path
    /// (median of `reps`), on part 0, as one product (no chunks).
    pub fn time_device_batch(&self, nq: usize, reps: usize, force_large: bool) -> Result<f64> {
        self.time_part(0, nq, reps, force_large)
    }

    /// Device-side milliseconds per batch of `nq` queries with every part computing
    /// its rows at the same time (median of `reps` until the last part is done),
    /// queries already on the GPUs.
    pub fn time_device_all(&self, nq: usize, reps: usize) -> Result<f64> {
        let small = self.config.small_batch;
        let cols_pad = self.cols_pad;
        let mut guard = self.lock()?;
        let host: Vec<u32> = (0..nq * cols_pad)
            .map(|i| (i as u32).wrapping_mul(2_654_435_761).rotate_left(7))
            .collect();
        for p in guard.parts.iter_mut() {
            p.ctx.bind_to_thread().map_err(|e| gpu_err("binding the context", e))?;
            p.sync_lanes()?;
            let (rows, rows_pad) = (p.rows, p.rows_pad);
            let lane = &mut p.lanes[0];
            lane.ensure(nq, nq > small, rows, rows_pad, cols_pad)?;
            let s = lane.stream.clone();
            let qd = lane.qd.as_mut().ok_or_else(|| Error::Gpu("lane buffers".into()))?;
            s.memcpy_htod(&host, &mut qd.slice_mut(..nq * cols_pad))
                .map_err(|e| gpu_err("copying queries", e))?;
        }
        // Every part's product enqueued at once (they run at the same time), then
        // waited for.
        let mut times = Vec::new();
        for i in 0..reps.max(1) + 2 {
            for p in guard.parts.iter() {
                p.lanes[0].stream.synchronize().map_err(|e| gpu_err("sync", e))?;
            }
            let t = std::time::Instant::now();
            for p in guard.parts.iter_mut() {
                p.ctx.bind_to_thread().map_err(|e| gpu_err("binding the context", e))?;
                let (mut work, lanes) = p.work(cols_pad);
                work.compute(&mut lanes[0], nq, small)?;
            }
            for p in guard.parts.iter() {
                p.lanes[0].stream.synchronize().map_err(|e| gpu_err("sync", e))?;
            }
            if i >= 2 {
                times.push(t.elapsed().as_secs_f64() * 1e3);
            }
        }
        times.sort_by(f64::total_cmp);
        Ok(times[times.len() / 2])
    }

    /// Runs `f` with part `i` and the lane of slot 0 drained (no chunk of its in
    /// flight any more) and the part's context bound.
    fn with_part<R>(&self, i: usize, f: impl FnOnce(&mut Part, usize) -> Result<R>) -> Result<R> {
        let mut guard = self.lock()?;
        let cols_pad = self.cols_pad;
        let p = guard
            .parts
            .get_mut(i)
            .ok_or_else(|| Error::Gpu("no such part".into()))?;
        p.ctx.bind_to_thread().map_err(|e| gpu_err("binding the context", e))?;
        p.lanes[0]
            .stream
            .synchronize()
            .map_err(|e| gpu_err("waiting for the GPU", e))?;
        f(p, cols_pad)
    }

    fn time_part(&self, i: usize, nq: usize, reps: usize, force_large: bool) -> Result<f64> {
        let small = if force_large { 0 } else { self.config.small_batch };
        self.with_part(i, |p, cols_pad| {
            let (rows, rows_pad) = (p.rows, p.rows_pad);
            let (mut work, lanes) = p.work(cols_pad);
            let lane = &mut lanes[0];
            lane.ensure(nq, nq > small, rows, rows_pad, cols_pad)?;
            let s = lane.stream.clone();
            let host: Vec<u32> = (0..nq * cols_pad)
                .map(|i| (i as u32).wrapping_mul(2_654_435_761).rotate_left(7))
                .collect();
            {
                let qd = lane.qd.as_mut().ok_or_else(|| Error::Gpu("lane buffers".into()))?;
                s.memcpy_htod(&host, &mut qd.slice_mut(..nq * cols_pad))
                    .map_err(|e| gpu_err("copying queries", e))?;
            }
            let mut times = Vec::new();
            for i in 0..reps.max(1) + 2 {
                s.synchronize().map_err(|e| gpu_err("sync", e))?;
                let t = std::time::Instant::now();
                work.compute(lane, nq, small)?;
                s.synchronize().map_err(|e| gpu_err("sync", e))?;
                if i >= 2 {
                    times.push(t.elapsed().as_secs_f64() * 1e3);
                }
            }
            times.sort_by(f64::total_cmp);
            Ok(times[times.len() / 2])
        })
    }

    /// The floors on part 0's GPU, measured now: `(ms for one read of the part's D,
    /// ms for the int8 cuBLASLt product of the same shape with `4·nq` limb columns)`.
    pub fn floors(&self, nq: usize, reps: usize) -> Result<(f64, f64)> {
        self.part_floors(0, nq, reps)
    }

    /// [`GpuLweServer::floors`] for part `i` (its rows, on its GPU).
    pub fn part_floors(&self, i: usize, nq: usize, reps: usize) -> Result<(f64, f64)> {
        self.with_part(i, |p, cols_pad| {
            let s = p.lanes[0].stream.clone();
            let bytes = p.rows_pad * cols_pad;
            let n16 = (bytes / 16) as u64;
            let mut acc: CudaSlice<u32> = s.alloc_zeros(1).map_err(|e| gpu_err("alloc", e))?;
            let mut scan = Vec::new();
            for i in 0..reps.max(1) + 2 {
                s.synchronize().map_err(|e| gpu_err("sync", e))?;
                let t = std::time::Instant::now();
                let mut b = s.launch_builder(&p.f.scan);
                b.arg(&p.d).arg(&n16).arg(&mut acc);
                // SAFETY: D holds `bytes` = 16·n16 bytes (cols_pad is a multiple of 16).
                unsafe {
                    b.launch(LaunchConfig {
                        grid_dim: (p.sms * 8, 1, 1),
                        block_dim: (256, 1, 1),
                        shared_mem_bytes: 0,
                    })
                }
                .map_err(|e| gpu_err("the scan kernel", e))?;
                s.synchronize().map_err(|e| gpu_err("sync", e))?;
                if i >= 2 {
                    scan.push(t.elapsed().as_secs_f64() * 1e3);
                }
            }
            scan.sort_by(f64::total_cmp);
            // The bare product: random int8 limbs, one K-chunk at a time, no split or
            // recombination.
            let n = 4 * nq;
            let host: Vec<i8> = (0..n * cols_pad)
                .map(|i| (i as u32).wrapping_mul(2_654_435_761) as i8)
                .collect();
            let limbs = s.clone_htod(&host).map_err(|e| gpu_err("copying limbs", e))?;
            drop(host);
            // SAFETY: written by cuBLASLt (beta = 0) before anything reads it.
            let mut c: CudaSlice<i32> = unsafe { s.alloc(p.rows_pad * n) }.map_err(|e| gpu_err("alloc", e))?;
            let rows_pad = p.rows_pad;
            let handle = p.lt.handle;
            let mut gemm = Vec::new();
            for i in 0..reps.max(1) + 2 {
                s.synchronize().map_err(|e| gpu_err("sync", e))?;
                let t = std::time::Instant::now();
                let mut k0 = 0;
                while k0 < cols_pad {
                    let kc = K_CHUNK.min(cols_pad - k0);
                    let g = p.lt.gemm(rows_pad, cols_pad, kc, n)?;
                    let (dp, _r1) = p.d.device_ptr(&s);
                    let (lp, _r2) = limbs.device_ptr(&s);
                    let (cp, _r3) = c.device_ptr_mut(&s);
                    let (wp, _r4) = p.lanes[0].workspace.device_ptr_mut(&s);
                    // SAFETY: as in `Work::compute`.
                    unsafe { matmul_i8(handle, g, dp, lp, k0, cp, wp, &s)? };
                    k0 += kc;
                }
                s.synchronize().map_err(|e| gpu_err("sync", e))?;
                if i >= 2 {
                    gemm.push(t.elapsed().as_secs_f64() * 1e3);
                }
            }
            gemm.sort_by(f64::total_cmp);
            Ok((scan[scan.len() / 2], gemm[gemm.len() / 2]))
        })
    }

    /// The launch and copy floors on part 0's GPU, measured now through the
    /// staging slot's page-locked buffers (median of `reps`): an empty kernel, one
    /// query in and one answer out, and the bandwidth of a whole chunk each way and
    /// both ways at once.
    pub fn transfer_floors(&self, reps: usize) -> Result<TransferFloors> {
        let chunk = self.config.chunk;
        let (m, cols_pad) = (self.params.matrix_rows(), self.cols_pad);
        // Two chunks through the pipeline, so that slots 0 and 1 and their lanes
        // hold a chunk's buffers.
        let ones = |_: usize, dst: &mut [u32]| dst.iter_mut().for_each(|v| *v = 1);
        crate::stream::answer_all(self, 2 * chunk, &ones, &mut |_, _| {})?;
        let mut guard = self.lock()?;
        let Pipe { parts, slots } = &mut *guard;
        if slots[0].busy.is_some() || slots[1].busy.is_some() {
            return Err(Error::Gpu("the staging slots are in use".into()));
        }
        let p = parts.first_mut().ok_or_else(|| Error::Gpu("no GPU part".into()))?;
        p.ctx.bind_to_thread().map_err(|e| gpu_err("binding the context", e))?;
        p.sync_lanes()?;
        let (rows, rows_pad) = (p.rows, p.rows_pad);
        for lane in p.lanes.iter_mut().take(2) {
            lane.ensure(chunk, false, rows, rows_pad, cols_pad)?;
        }
        let (i0, o0) = {
            let Slot { input, output, .. } = &mut slots[0];
            let (Some(i), Some(o)) = (input.as_mut(), output.as_mut()) else {
                return Err(Error::Gpu("staging buffers".into()));
            };
            (
                i.as_mut_ptr().map_err(|e| gpu_err("page-locked memory", e))?,
                o.as_mut_ptr().map_err(|e| gpu_err("page-locked memory", e))?,
            )
        };
        let o1 = slots[1]
            .output
            .as_mut()
            .ok_or_else(|| Error::Gpu("staging buffers".into()))?
            .as_mut_ptr()
            .map_err(|e| gpu_err("page-locked memory", e))?;
        let (a, b) = p.lanes.split_at_mut(1);
        let (la, lb) = (&mut a[0], &mut b[0]);
        let (sa, sb) = (la.stream.clone(), lb.stream.clone());
        let qa = {
            let q = la.qd.as_mut().ok_or_else(|| Error::Gpu("lane buffers".into()))?;
            q.device_ptr_mut(&sa).0
        };
        let oa = la
            .out
            .as_ref()
            .ok_or_else(|| Error::Gpu("lane buffers".into()))?
            .device_ptr(&sa)
            .0;
        let ob = lb
            .out
            .as_ref()
            .ok_or_else(|| Error::Gpu("lane buffers".into()))?
            .device_ptr(&sb)
            .0;
        let median = |mut v: Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let time = |f: &mut dyn FnMut() -> Result<()>| -> Result<f64> {
            let mut v = Vec::new();
            for i in 0..reps.max(1) + 2 {
                sa.synchronize().map_err(|e| gpu_err("sync", e))?;
                sb.synchronize().map_err(|e| gpu_err("sync", e))?;
                let t = std::time::Instant::now();
                f()?;
                sa.synchronize().map_err(|e| gpu_err("sync", e))?;
                sb.synchronize().map_err(|e| gpu_err("sync", e))?;
                if i >= 2 {
                    v.push(t.elapsed().as_secs_f64() * 1e3);
                }
            }
            Ok(median(v))
        };
        let noop = &p.f.noop;
        let launch_ms = time(&mut || {
            let mut b = sa.launch_builder(noop);
            // SAFETY: the kernel takes no argument and touches nothing.
            unsafe {
                b.launch(LaunchConfig {
                    grid_dim: (1, 1, 1),
                    block_dim: (32, 1, 1),
                    shared_mem_bytes: 0,
                })
            }
            .map(|_| ())
            .map_err(|e| gpu_err("the empty kernel", e))
        })?;
        // SAFETY (every copy below): the page-locked slots and the lanes' buffers are
        // allocated for a whole chunk (`ensure` above and the pipeline's slot), no
        // chunk is in flight (checked under the mutex), and each copy is waited for
        // before the next.
        let h2d = |n: usize, st: &CudaStream| unsafe {
            cusys::cuMemcpyHtoDAsync_v2(qa, i0 as *const c_void, n * cols_pad * 4, st.cu_stream())
                .result()
                .map_err(|e| gpu_err("a copy to the GPU", e))
        };
        let d2h = |n: usize, dst: *mut u32, src: u64, st: &CudaStream| unsafe {
            cusys::cuMemcpyDtoHAsync_v2(dst as *mut c_void, src, n * rows * 4, st.cu_stream())
                .result()
                .map_err(|e| gpu_err("a copy from the GPU", e))
        };
        let h2d_one_ms = time(&mut || h2d(1, &sa))?;
        let d2h_one_ms = time(&mut || d2h(1, o0, oa, &sa))?;
        let h2d_ms = time(&mut || h2d(chunk, &sa))?;
        let d2h_ms = time(&mut || d2h(chunk, o0, oa, &sa))?;
        let duplex_ms = time(&mut || {
            h2d(chunk, &sa)?;
            d2h(chunk, o1, ob, &sb)
        })?;
        let (qbytes, abytes) = ((chunk * cols_pad * 4) as f64, (chunk * rows * 4) as f64);
        let _ = m;
        Ok(TransferFloors {
            launch_ms,
            h2d_one_ms,
            d2h_one_ms,
            h2d_gb_s: qbytes / h2d_ms / 1e6,
            d2h_gb_s: abytes / d2h_ms / 1e6,
            duplex_gb_s: (qbytes + abytes) / duplex_ms / 1e6,
            chunk,
        })
    }
}

impl PipelinedLwe for GpuLweServer {
    fn pipeline_table_id(&self) -> TableId {
        self.id
    }

    fn chunk_queries(&self) -> usize {
        self.config.chunk
    }

    fn submit(&self, n: usize, fill: &mut dyn FnMut(Staging<'_>)) -> Result<Option<Ticket>> {
        self.submit_with(n, fill, false)
    }

    fn finish(&self, ticket: Ticket, take: &mut dyn FnMut(&Answers<'_>)) -> Result<()> {
        match ticket.0 {
            TicketKind::Gpu { id, slot, n } => self.finish_gpu(id, slot, n, take),
            TicketKind::Ready(_) => crate::stream::finish_ready(ticket, take),
        }
    }
}

impl PirServer for GpuLweServer {
    type Query = LweQuery;
    type Answer = LweAnswer;
    type Update = LweHintUpdate;

    fn backend(&self) -> &'static str {
        BACKEND
    }

    fn shape(&self) -> TableShape {
        self.params.shape()
    }

    fn sizes(&self) -> Sizes {
        self.params.sizes()
    }

    fn answer_batch(&self, queries: &[LweQuery]) -> Result<Vec<LweAnswer>> {
        self.answer_batch_refs(&queries.iter().collect::<Vec<_>>())
    }

    /// The queries are written straight into the staging slots and each answer is
    /// copied once, out of the slot its chunk arrived in, while the GPUs answer the
    /// next chunk.
    fn answer_batch_refs(&self, queries: &[&LweQuery]) -> Result<Vec<LweAnswer>> {
        if queries.is_empty() {
            return Ok(Vec::new());
        }
        self.check(queries)?;
        let fill = |j: usize, dst: &mut [u32]| dst.copy_from_slice(&queries[j].values);
        let id = self.id;
        let mut answers: Vec<LweAnswer> = Vec::with_capacity(queries.len());
        crate::stream::answer_all(self, queries.len(), &fill, &mut |_, a| {
            let n = a.len();
            let got: Vec<LweAnswer> = (0..n)
                .into_par_iter()
                .map(|j| LweAnswer {
                    table_id: id,
                    values: a.get(j).to_vec(),
                })
                .collect();
            answers.extend(got);
        })?;
        Ok(answers)
    }

    /// Writes the row's `d` entries on the GPU holding them and updates the hint
    /// exactly as the CPU server does. Chunks in flight are answered over the old
    /// entries first.
    fn update_row(&mut self, row: u64, bytes: &[u8]) -> Result<LweHintUpdate> {
        let shape = self.params.shape();
        shape.check_row(row)?;
        if bytes.len() != shape.row_bytes as usize {
            return Err(Error::WrongSize {
                what: "the new row",
                got: bytes.len(),
                expected: shape.row_bytes as usize,
            });
        }
        let (c, s) = self.params.position(row);
        let d = self.params.d();
        let half = 1i32 << (self.params.log_p() - 1);
        let mut a_c = vec![0u32; LWE_N];
        reference::a_row(&self.params.seed(), c, &mut a_c);
        let new: Vec<i8> = self
            .params
            .symbols()
            .split(bytes)
            .into_iter()
            .map(|v| (v as i32 - half) as i8)
            .collect();
        let mut old = vec![0i8; d];
        let cols_pad = self.cols_pad;
        {
            let pipe = self
                .pipe
                .get_mut()
                .map_err(|_| Error::Gpu("a GPU worker panicked".into()))?;
            for p in &pipe.parts {
                p.ctx.bind_to_thread().map_err(|e| gpu_err("binding the context", e))?;
                p.sync_lanes()?;
            }
            // The old entries come from the hint's own definition: read them back
            // from the GPU holding the slot.
            for (k, o) in old.iter_mut().enumerate() {
                let r = s * d + k;
                let p = pipe
                    .parts
                    .iter_mut()
                    .find(|p| r >= p.r0 && r < p.r0 + p.rows)
                    .ok_or_else(|| Error::Gpu("no part holds the row".into()))?;
                p.ctx.bind_to_thread().map_err(|e| gpu_err("binding the context", e))?;
                let at = (r - p.r0) * cols_pad + c;
                let stream = p.lanes[0].stream.clone();
                let v = stream
                    .clone_dtoh(&p.d.slice(at..at + 1))
                    .map_err(|e| gpu_err("reading an entry", e))?;
                *o = v[0];
                let idx_d = stream
                    .clone_htod(&[at as u64])
                    .map_err(|e| gpu_err("copying an update", e))?;
                let val_d = stream
                    .clone_htod(&[new[k]])
                    .map_err(|e| gpu_err("copying an update", e))?;
                let one = 1u64;
                let mut b = stream.launch_builder(&p.f.set_entries);
                b.arg(&mut p.d).arg(&idx_d).arg(&val_d).arg(&one);
                // SAFETY: `at` is inside the part's D.
                unsafe { b.launch(LaunchConfig::for_num_elems(1)) }.map_err(|e| gpu_err("the update kernel", e))?;
                stream.synchronize().map_err(|e| gpu_err("waiting for the GPU", e))?;
            }
        }
        let hint = Arc::make_mut(&mut self.hint);
        for k in 0..d {
            if new[k] == old[k] {
                continue;
            }
            let r = s * d + k;
            let delta = (new[k] as i32 - old[k] as i32) as u32;
            for (h, a) in hint[r * LWE_N..(r + 1) * LWE_N].iter_mut().zip(&a_c) {
                *h = h.wrapping_add(delta.wrapping_mul(*a));
            }
        }
        let old_id = self.id;
        self.id = reference::table_id(&self.params, &self.hint);
        Ok(LweHintUpdate {
            old_id,
            new_id: self.id,
            first_row: (s * d) as u32,
            rows: self.hint[s * d * LWE_N..(s + 1) * d * LWE_N].to_vec(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpu_lists_parse() {
        assert_eq!("all".parse::<GpuSelection>().unwrap(), GpuSelection::All);
        assert_eq!("0,1".parse::<GpuSelection>().unwrap(), GpuSelection::List(vec![0, 1]));
        assert_eq!("0,0".parse::<GpuSelection>().unwrap(), GpuSelection::List(vec![0, 0]));
        assert!("x".parse::<GpuSelection>().is_err());
        assert!("".parse::<GpuSelection>().is_err());
        assert!("0,,1".parse::<GpuSelection>().is_err());
    }

    /// The signed base-256 digits the limb kernel makes recombine to the element.
    #[test]
    fn signed_digits_recombine() {
        let digits = |mut v: u32| {
            let mut s = [0i32; 4];
            for x in s.iter_mut().take(3) {
                let lo = (v & 0xff) as u8 as i8 as i32;
                *x = lo;
                v = v.wrapping_sub(lo as u32) >> 8;
            }
            s[3] = (v & 0xff) as u8 as i8 as i32;
            s
        };
        for v in [
            0u32,
            1,
            127,
            128,
            255,
            256,
            0x8080_8080,
            u32::MAX,
            0x7f7f_7f7f,
            0x1234_5678,
        ] {
            let s = digits(v);
            assert!(s.iter().all(|x| (-128..=127).contains(x)));
            let back = (0..4).fold(0u32, |a, k| a.wrapping_add((s[k] as u32).wrapping_shl(8 * k as u32)));
            assert_eq!(back, v);
        }
        // The largest int32 partial sum of one K-chunk stays in range.
        assert!(128u64 * 128 * K_CHUNK as u64 <= i32::MAX as u64);
    }

    #[test]
    fn centred_rows_match_the_reference() {
        use rand_chacha::ChaCha20Rng;
        use rand_core::SeedableRng;
        let mut rng = ChaCha20Rng::seed_from_u64(3);
        let table = Table::random(TableShape::new(997, 13).unwrap(), &mut rng);
        let params = LweParams::new(table.shape(), [1; 16]).unwrap();
        let reference = reference::centred_matrix(&params, &table).unwrap();
        let (m, l) = (params.matrix_rows(), params.cols());
        let cols_pad = l.div_ceil(16) * 16;
        for (r0, n) in [(0, m), (5, 17), (m - 3, 16)] {
            let got = centred_rows(&params, &table, r0, n, cols_pad);
            for r in 0..n {
                for c in 0..cols_pad {
                    let want = if r0 + r < m && c < l {
                        reference[(r0 + r) * l + c]
                    } else {
                        0
                    };
                    assert_eq!(got[r * cols_pad + c], want, "row {} col {c}", r0 + r);
                }
            }
        }
    }
}
