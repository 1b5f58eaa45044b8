#![no_main]
//! Every message decoder of the mpc subsystem (what a peer or a token sends, and the
//! files A and the token keep); the first byte picks the decoder. A message that
//! decodes re-encodes to the same bytes (canonical encoding).
use libfuzzer_sys::fuzz_target;
use tacit_mpc::messages::{Hello, LayerMessage, OutputMessage};
use tacit_mpc::triples::token::card::TokenState;
use tacit_mpc::triples::token::holder::StoredSequence;
use tacit_mpc::triples::token::{SeedRelease, SeedRequest, TokenCertificate, TokenOffer};
use tacit_wire::{Decode, Encode};

fn canon<T: Decode + Encode>(b: &[u8]) {
    if let Ok(v) = T::from_wire(b) {
        assert_eq!(v.to_wire(), b);
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else { return };
    match sel % 12 {
        0 => canon::<Hello>(rest),
        1 => {
            let _ = LayerMessage::decode_any(rest, 1 << 16);
        }
        2 => {
            // a layer of k bits, as the online phase checks it
            if rest.len() >= 2 {
                let bits = u16::from_be_bytes([rest[0], rest[1]]) as usize;
                let mut dst = vec![0u64; bits.div_ceil(64).max(1)];
                let _ = LayerMessage::decode_xor_into(&rest[2..], 1, bits, &mut dst);
            }
        }
        3 => {
            if rest.len() >= 2 {
                let bits = u16::from_be_bytes([rest[0], rest[1]]) as usize;
                let mut dst = vec![0u64; bits.div_ceil(64).max(1)];
                let _ = OutputMessage::decode_xor_into(&rest[2..], bits, &mut dst);
            }
        }
        4 => canon::<TokenOffer>(rest),
        5 => canon::<SeedRequest>(rest),
        6 => canon::<SeedRelease>(rest),
        7 => canon::<TokenCertificate>(rest),
        8 => canon::<TokenState>(rest),
        9 => canon::<StoredSequence>(rest),
        10 => tacit_fuzz::mpc::apps(rest),
        _ => tacit_fuzz::mpc::ot(rest),
    }
});
