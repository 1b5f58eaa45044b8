#![no_main]
//! The ISO 7816-4 APDU codec and the token behind it: the first byte picks what the
//! rest is fed to. Commands and responses that decode re-encode to an equal value;
//! the token answers every command sequence with a well-formed response and never
//! releases a seed twice.
use libfuzzer_sys::fuzz_target;
use tacit_mpc::triples::token::apdu::{Command, Response};

fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else { return };
    match sel % 3 {
        0 => {
            if let Ok(c) = Command::decode(rest) {
                assert_eq!(Command::decode(&c.encode()).unwrap(), c);
            }
        }
        1 => {
            if let Ok(r) = Response::decode(rest) {
                assert_eq!(r.encode(), rest);
            }
        }
        _ => {
            // A session of commands: 2-byte big-endian length, then the APDU.
            let mut card = tacit_fuzz::mpc::card();
            let mut at = rest;
            while at.len() >= 2 {
                let n = u16::from_be_bytes([at[0], at[1]]) as usize;
                let cmd = &at[2..(2 + n).min(at.len())];
                at = &at[(2 + n).min(at.len())..];
                let resp = card.process(cmd);
                Response::decode(&resp).expect("the token answers with a response APDU");
                card.prefetch();
            }
        }
    }
});
