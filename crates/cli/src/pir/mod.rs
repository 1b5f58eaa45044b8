//! `tacit pir`: PIR tables and a one-process query; `tacit bench pir`.

pub mod bench;
pub mod bench_tracedge;
pub mod cmd;
pub mod demo;
mod gpu_bench;
pub mod peers;
pub mod tracedge;
