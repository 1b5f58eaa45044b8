//! `tacit pir`: PIR tables and a one-process query; `tacit bench pir`.

pub mod bench;
pub mod bench_tracedge;
pub mod cmd;
mod gpu_bench;
pub mod demo;
pub mod peers;
pub mod tracedge;
