#![no_main]
//! The `lwe` answer decoder and the client's checks (what a client reads from an
//! untrusted server).
use libfuzzer_sys::fuzz_target;
use tacit_crypto::rng::SecureRng;
use tacit_pir::lwe::LweAnswer;
use tacit_pir::{PirClient, Selection};
use tacit_wire::{Decode, Encode};

fuzz_target!(|data: &[u8]| {
    if let Ok(a) = LweAnswer::from_wire(data) {
        assert_eq!(a.to_wire(), data);
        let (_, client) = tacit_fuzz::pir::lwe();
        let mut rng = SecureRng::from_seed([1; 32]);
        let (state, _) = client.query(&Selection::row(3), &mut rng).unwrap();
        let mut a = a;
        a.table_id = client.table_id();
        let _ = client.decode(&state, &a);
    }
});
