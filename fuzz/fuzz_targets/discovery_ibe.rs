#![no_main]
//! BB2 IBE and prefix-encryption decoders: master public and secret keys, identity
//! keys, IBE ciphertexts, prefix ciphertexts and prefix keys. A decoded value
//! re-encodes to the same bytes (one encoding per value).
//!
//! Identity and prefix keys are decoded against the master public key of a fixed
//! authority (`MasterSecretKey::generate(SecureRng::from_seed([0x1b; 32]))`); seeds
//! made with that authority reach the code after the pairing check.
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;
use tacit_crypto::rng::SecureRng;
use tacit_discovery::ibe::{Ciphertext, IdentityKey, MasterPublicKey, MasterSecretKey};
use tacit_discovery::prefix::{Prefix, PrefixCiphertext, PrefixKey};
use tacit_wire::{Decode, Encode};

fn authority() -> &'static MasterSecretKey {
    static MSK: OnceLock<MasterSecretKey> = OnceLock::new();
    MSK.get_or_init(|| MasterSecretKey::generate(&mut SecureRng::from_seed([0x1b; 32])))
}

fuzz_target!(|data: &[u8]| {
    let mpk = authority().public();
    if let Ok(k) = MasterPublicKey::from_wire(data) {
        assert_eq!(k.to_wire(), data);
    }
    if let Ok(k) = MasterSecretKey::from_bytes(data) {
        assert_eq!(k.to_bytes().as_slice(), data);
    }
    if let Ok(k) = IdentityKey::from_bytes(mpk, data) {
        assert_eq!(k.to_bytes().as_slice(), data);
    }
    if let Ok(c) = Ciphertext::from_bytes(data) {
        assert_eq!(c.to_bytes(), data);
    }
    if let Ok(c) = PrefixCiphertext::from_wire(data) {
        assert_eq!(c.to_wire(), data);
    }
    if let Ok(k) = PrefixKey::from_bytes(mpk, data) {
        assert_eq!(k.to_bytes().as_slice(), data);
    }
    if let Ok(s) = core::str::from_utf8(data) {
        if let Ok(p) = Prefix::parse(s) {
            assert_eq!(p.to_string(), s);
            assert_eq!(Prefix::from_components(p.components()).as_ref(), Ok(&p));
        }
    }
});
