//! PrivateDrop: `tacit drop`, the certification authority (`tacit ca`) and the
//! device identity it certifies (`tacit id`).

pub mod bench;
pub mod ca;
pub mod cmd;
pub mod demo;
