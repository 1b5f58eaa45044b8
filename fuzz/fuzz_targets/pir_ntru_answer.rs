#![no_main]
//! The `ntru-paper` answer decoder and the client's checks.
use libfuzzer_sys::fuzz_target;
use tacit_crypto::rng::SecureRng;
use tacit_pir::ntru::NtruAnswer;
use tacit_pir::{PirClient, Selection};
use tacit_wire::{Decode, Encode};

fuzz_target!(|data: &[u8]| {
    if let Ok(a) = NtruAnswer::from_wire(data) {
        assert_eq!(a.to_wire(), data);
        let (_, client) = tacit_fuzz::pir::ntru();
        let mut rng = SecureRng::from_seed([2; 32]);
        let (state, _) = client.query(&Selection::row(3), &mut rng).unwrap();
        let _ = client.decode(&state, &a);
    }
});
