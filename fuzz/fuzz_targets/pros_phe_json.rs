#![no_main]
//! python-paillier JSON: public keys, private keys (p/q and lambda/mu) and encrypted
//! numbers.
use libfuzzer_sys::fuzz_target;
use rand_core::SeedableRng;
use tacit_pros::phe;

fuzz_target!(|data: &[u8]| {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(1);
    let _ = phe::read_public_key(&v);
    let _ = phe::read_private_key(&v, &mut rng);
    let pk = tacit_fuzz::pros::key().public();
    if let Ok(c) = phe::read_encrypted(pk, &v) {
        let _ = phe::decrypt_number(tacit_fuzz::pros::key(), &c);
    }
    if let Some(s) = v.as_str() {
        if let Ok(e) = phe::encode_number(s) {
            let _ = phe::decimal(&e.mantissa, e.exponent);
        }
    }
});
