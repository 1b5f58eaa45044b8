//! `tacit psi`: private set intersection between two processes.

pub mod bench;
pub mod cmd;
pub mod demo;
pub mod load;
