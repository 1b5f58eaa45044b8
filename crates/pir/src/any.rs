//! An `lwe` server chosen at run time: the CPU server ([`LweServer`]) or, with the
//! `gpu` feature, the GPU server ([`crate::gpu::GpuLweServer`]). Both speak the same
//! messages and give the same answers, so protocols built on `lwe` (TracEdge) hold
//! an [`LweAnyServer`] and let the operator pick the hardware.

use crate::Result;
use crate::backend::{PirServer, Sizes, Table, TableShape};
use crate::lwe::{LweAnswer, LweHint, LweHintUpdate, LweParams, LweQuery, LweServer, TableId};

/// Which `lwe` server to run.
#[derive(Debug, Clone, Default)]
pub enum LweBackend {
    /// The CPU server (all cores).
    #[default]
    Cpu,
    /// The GPU server with these settings.
    #[cfg(feature = "gpu")]
    Gpu(crate::gpu::GpuConfig),
}

impl LweBackend {
    /// From a backend name (`lwe` or `lwe-gpu`) and a GPU list (`all`, `0,1`).
    pub fn from_names(backend: &str, gpus: &str) -> Result<Self> {
        match backend {
            "lwe" => Ok(LweBackend::Cpu),
            #[cfg(feature = "gpu")]
            "lwe-gpu" => Ok(LweBackend::Gpu(crate::gpu::GpuConfig {
                gpus: gpus.parse()?,
                ..Default::default()
            })),
            other => {
                let _ = gpus;
                Err(crate::Error::InvalidParams(format!(
                    "unknown lwe backend {other:?}: use lwe or lwe-gpu"
                )))
            }
        }
    }
}

/// The CPU or the GPU `lwe` server.
#[derive(Debug)]
pub enum LweAnyServer {
    /// On the CPU.
    Cpu(LweServer),
    /// On the GPUs.
    #[cfg(feature = "gpu")]
    Gpu(crate::gpu::GpuLweServer),
}

impl LweAnyServer {
    /// Lays out `table` on `backend` and computes the hint.
    pub fn setup(table: &Table, params: LweParams, backend: &LweBackend) -> Result<Self> {
        Ok(match backend {
            LweBackend::Cpu => LweAnyServer::Cpu(LweServer::setup(table, params)?),
            #[cfg(feature = "gpu")]
            LweBackend::Gpu(c) => LweAnyServer::Gpu(crate::gpu::GpuLweServer::setup(table, params, c.clone())?),
        })
    }

    /// The hint for clients.
    pub fn hint(&self) -> LweHint {
        match self {
            LweAnyServer::Cpu(s) => s.hint(),
            #[cfg(feature = "gpu")]
            LweAnyServer::Gpu(s) => s.hint(),
        }
    }

    /// The table id.
    pub fn table_id(&self) -> TableId {
        match self {
            LweAnyServer::Cpu(s) => s.table_id(),
            #[cfg(feature = "gpu")]
            LweAnyServer::Gpu(s) => s.table_id(),
        }
    }

    /// The parameters.
    pub fn params(&self) -> &LweParams {
        match self {
            LweAnyServer::Cpu(s) => s.params(),
            #[cfg(feature = "gpu")]
            LweAnyServer::Gpu(s) => s.params(),
        }
    }
}

impl PirServer for LweAnyServer {
    type Query = LweQuery;
    type Answer = LweAnswer;
    type Update = LweHintUpdate;

    fn backend(&self) -> &'static str {
        match self {
            LweAnyServer::Cpu(s) => s.backend(),
            #[cfg(feature = "gpu")]
            LweAnyServer::Gpu(s) => s.backend(),
        }
    }

    fn shape(&self) -> TableShape {
        self.params().shape()
    }

    fn sizes(&self) -> Sizes {
        self.params().sizes()
    }

    fn answer_batch(&self, queries: &[LweQuery]) -> Result<Vec<LweAnswer>> {
        match self {
            LweAnyServer::Cpu(s) => s.answer_batch(queries),
            #[cfg(feature = "gpu")]
            LweAnyServer::Gpu(s) => s.answer_batch(queries),
        }
    }

    fn answer_batch_refs(&self, queries: &[&LweQuery]) -> Result<Vec<LweAnswer>> {
        match self {
            LweAnyServer::Cpu(s) => s.answer_batch_refs(queries),
            #[cfg(feature = "gpu")]
            LweAnyServer::Gpu(s) => s.answer_batch_refs(queries),
        }
    }

    fn update_row(&mut self, row: u64, bytes: &[u8]) -> Result<LweHintUpdate> {
        match self {
            LweAnyServer::Cpu(s) => s.update_row(row, bytes),
            #[cfg(feature = "gpu")]
            LweAnyServer::Gpu(s) => s.update_row(row, bytes),
        }
    }
}

impl crate::stream::PipelinedLwe for LweAnyServer {
    fn pipeline_table_id(&self) -> TableId {
        self.table_id()
    }

    fn chunk_queries(&self) -> usize {
        match self {
            LweAnyServer::Cpu(s) => s.chunk_queries(),
            #[cfg(feature = "gpu")]
            LweAnyServer::Gpu(s) => s.chunk_queries(),
        }
    }

    fn submit(
        &self,
        n: usize,
        fill: &mut dyn FnMut(crate::stream::Staging<'_>),
    ) -> Result<Option<crate::stream::Ticket>> {
        match self {
            LweAnyServer::Cpu(s) => s.submit(n, fill),
            #[cfg(feature = "gpu")]
            LweAnyServer::Gpu(s) => s.submit(n, fill),
        }
    }

    fn finish(&self, ticket: crate::stream::Ticket, take: &mut dyn FnMut(&crate::stream::Answers<'_>)) -> Result<()> {
        match self {
            LweAnyServer::Cpu(s) => s.finish(ticket, take),
            #[cfg(feature = "gpu")]
            LweAnyServer::Gpu(s) => s.finish(ticket, take),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{PirClient, Selection};
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;

    #[test]
    fn the_cpu_choice_is_the_cpu_server() {
        let mut rng = ChaCha20Rng::seed_from_u64(4);
        let table = Table::random(TableShape::new(300, 9).unwrap(), &mut rng);
        let params = LweParams::new(table.shape(), [2; 16]).unwrap();
        let mut s = LweAnyServer::setup(&table, params, &LweBackend::from_names("lwe", "all").unwrap()).unwrap();
        let c = crate::lwe::LweClient::new(s.hint()).unwrap();
        let (st, q) = c.query(&Selection::row(17), &mut rng).unwrap();
        assert_eq!(
            c.decode(&st, &s.answer(&q).unwrap()).unwrap().to_row_bytes(9),
            table.row(17).unwrap()
        );
        let u = s.update_row(17, &[7; 9]).unwrap();
        assert_eq!(u.new_id, s.table_id());
        assert!(LweBackend::from_names("ntru", "all").is_err());
        #[cfg(feature = "gpu")]
        assert!(matches!(
            LweBackend::from_names("lwe-gpu", "0,1"),
            Ok(LweBackend::Gpu(_))
        ));
        assert!(LweBackend::from_names("lwe-gpu", "x").is_err());
    }
}
