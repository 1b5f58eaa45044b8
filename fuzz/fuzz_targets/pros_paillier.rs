#![no_main]
//! Paillier public keys, private keys and ciphertexts from the wire.
use libfuzzer_sys::fuzz_target;
use tacit_pros::paillier::{PrivateKey, PublicKey};
use tacit_wire::{Reader, Writer};

fuzz_target!(|data: &[u8]| {
    let Some((&sel, msg)) = data.split_first() else { return };
    match sel % 3 {
        0 => {
            let mut r = Reader::new(msg);
            if let Ok(k) = PublicKey::decode(&mut r) {
                if r.finish().is_ok() {
                    let mut w = Writer::new();
                    k.encode(&mut w);
                    assert_eq!(w.into_bytes(), msg);
                }
            }
        }
        1 => {
            let mut r = Reader::new(msg);
            if let Ok(k) = PrivateKey::decode(&mut r) {
                let mut w = Writer::new();
                k.encode(&mut w).unwrap();
                assert_eq!(&w.into_bytes()[..], &msg[..msg.len() - r.remaining()]);
            }
        }
        _ => {
            let pk = tacit_fuzz::pros::key().public();
            let mut r = Reader::new(msg);
            if let Ok(c) = pk.decode_ciphertext(&mut r) {
                let mut w = Writer::new();
                pk.encode_ciphertext(&c, &mut w);
                assert_eq!(&w.into_bytes()[..], &msg[..pk.ciphertext_len()]);
                let _ = tacit_fuzz::pros::key().decrypt(&c);
            }
        }
    }
});
