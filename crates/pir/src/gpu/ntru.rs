//! The paper's GPU design for `ntru-paper` (TracEdge §5.4, Fig. 4, Table 8): one
//! column of the transformed table on the GPU, multiplied point by point with a
//! transformed query and summed over the regions in two steps — `β` blocks each add
//! every `β`-th region into a partial polynomial, then one block adds the `β`
//! partials. The result equals [`crate::ntru::column_accumulate`] on the CPU word for
//! word (sums modulo a prime do not depend on the order); the inverse transform and
//! the fold stay on the host, as in the CPU server.
//!
//! This is the per-column kernel the paper times, with its block parameter, so that
//! the per-column times can be set beside the paper's; a whole `ntru-paper` server
//! on the GPU is not built (at 10⁷ rows × 326 bits its transformed table is
//! 326 × 22 780 × 8 KiB ≈ 61 GB).
use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};

use super::gpu_err;
use crate::ntru::ntt::LEN;
use crate::{Error, Result};

/// The CUDA source of the two kernels.
pub const SOURCE: &str = include_str!("ntru.cu");

/// One transformed column resident on a GPU, with a transformed query beside it.
pub struct GpuColumn {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    partial_fn: CudaFunction,
    final_fn: CudaFunction,
    regions: usize,
    e: CudaSlice<u64>,
    q: CudaSlice<u64>,
    out: CudaSlice<u64>,
    partial: Option<(u32, CudaSlice<u64>)>,
}

impl core::fmt::Debug for GpuColumn {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("GpuColumn")
            .field("regions", &self.regions)
            .finish_non_exhaustive()
    }
}

impl GpuColumn {
    /// Uploads `column` and `query` (each `regions × 1024` transformed coefficients)
    /// to GPU `device`.
    pub fn new(device: usize, column: &[u64], query: &[u64]) -> Result<Self> {
        let regions = column.len() / LEN;
        if regions == 0 || column.len() != regions * LEN || query.len() != column.len() {
            return Err(Error::InvalidParams(
                "a column and a query of the same whole number of regions".into(),
            ));
        }
        let count = super::available()?;
        if device >= count {
            return Err(Error::Gpu(format!(
                "GPU {device} does not exist; this machine has {count}"
            )));
        }
        let ptx = super::compile_source(SOURCE, "the ntru-paper kernels")?;
        let ctx = CudaContext::new(device).map_err(|e| gpu_err(&format!("opening GPU {device}"), e))?;
        let module = ctx
            .load_module(ptx)
            .map_err(|e| gpu_err("loading the ntru-paper kernels", e))?;
        let get = |n: &str| module.load_function(n).map_err(|e| gpu_err(n, e));
        let (partial_fn, final_fn) = (get("ntru_column_partial")?, get("ntru_column_final")?);
        let stream = ctx.new_stream().map_err(|e| gpu_err("creating a stream", e))?;
        let e = stream
            .clone_htod(column)
            .map_err(|e| gpu_err("copying the column", e))?;
        let q = stream.clone_htod(query).map_err(|e| gpu_err("copying the query", e))?;
        let out = stream.alloc_zeros::<u64>(LEN).map_err(|e| gpu_err("alloc", e))?;
        stream.synchronize().map_err(|e| gpu_err("waiting for the GPU", e))?;
        Ok(GpuColumn {
            ctx,
            stream,
            partial_fn,
            final_fn,
            regions,
            e,
            q,
            out,
            partial: None,
        })
    }

    /// Regions of the column.
    pub fn regions(&self) -> usize {
        self.regions
    }

    /// The GPU's name.
    pub fn device_name(&self) -> String {
        self.ctx.name().unwrap_or_else(|_| "unknown GPU".into())
    }

    /// Queues the two steps with `beta` blocks in the first.
    fn launch(&mut self, beta: u32) -> Result<()> {
        if beta == 0 || beta > 65_535 {
            return Err(Error::InvalidParams(format!("β = {beta}: use 1 to 65 535 blocks")));
        }
        if self.partial.as_ref().map(|p| p.0) != Some(beta) {
            let buf = self
                .stream
                .alloc_zeros::<u64>(beta as usize * LEN)
                .map_err(|e| gpu_err("alloc", e))?;
            self.partial = Some((beta, buf));
        }
        let regions = self.regions as u64;
        let Some((_, partial)) = self.partial.as_mut() else {
            return Err(Error::Gpu("no partial buffer".into()));
        };
        let mut b = self.stream.launch_builder(&self.partial_fn);
        b.arg(&self.e).arg(&self.q).arg(&regions).arg(&beta).arg(&mut *partial);
        // SAFETY: e and q hold regions·1024 words, partial beta·1024; every thread
        // touches coefficients threadIdx.x + 256k < 1024 of its block's rows only.
        unsafe {
            b.launch(LaunchConfig {
                grid_dim: (beta, 1, 1),
                block_dim: (256, 1, 1),
                shared_mem_bytes: 0,
            })
        }
        .map_err(|e| gpu_err("ntru_column_partial", e))?;
        let mut b = self.stream.launch_builder(&self.final_fn);
        b.arg(&*partial).arg(&beta).arg(&mut self.out);
        // SAFETY: partial holds beta·1024 words, out 1024.
        unsafe {
            b.launch(LaunchConfig {
                grid_dim: (1, 1, 1),
                block_dim: (256, 1, 1),
                shared_mem_bytes: 0,
            })
        }
        .map_err(|e| gpu_err("ntru_column_final", e))?;
        Ok(())
    }

    /// `Σᵢ qᵢ ⊙ eᵢ` in the transform domain (1024 words), with `beta` blocks.
    pub fn accumulate(&mut self, beta: u32) -> Result<Vec<u64>> {
        self.launch(beta)?;
        let v = self
            .stream
            .clone_dtoh(&self.out)
            .map_err(|e| gpu_err("copying the sum back", e))?;
        self.stream
            .synchronize()
            .map_err(|e| gpu_err("waiting for the GPU", e))?;
        Ok(v)
    }

    /// The device time of both steps with `beta` blocks, in milliseconds: the median
    /// of `reps` runs between CUDA events, after two warm-up runs.
    pub fn time_ms(&mut self, beta: u32, reps: usize) -> Result<f64> {
        let timing = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
        let mut t = Vec::with_capacity(reps.max(1));
        for i in 0..reps.max(1) + 2 {
            let start = self.stream.record_event(timing).map_err(|e| gpu_err("event", e))?;
            self.launch(beta)?;
            let end = self.stream.record_event(timing).map_err(|e| gpu_err("event", e))?;
            end.synchronize().map_err(|e| gpu_err("waiting for the GPU", e))?;
            if i >= 2 {
                t.push(start.elapsed_ms(&end).map_err(|e| gpu_err("event time", e))? as f64);
            }
        }
        Ok(crate::ntru::median(&mut t))
    }
}
