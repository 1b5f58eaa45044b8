//! `tacit mpc`: Boolean circuits in the clear and under GMW between two processes,
//! with triples from a token process or from OT extension; `tacit bench mpc`.

pub mod apps_bench;
pub mod bench;
pub mod cmd;
pub mod demo;
pub mod psi;
pub mod schedule;
pub mod triples;
