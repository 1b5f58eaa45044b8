//! `tacit discover`: private service advertisements and private handshakes.

pub mod bench;
pub mod cmd;
pub mod demo;
pub mod world;
