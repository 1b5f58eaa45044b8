//! `tacit contacts`: the address book.

pub mod cmd;
