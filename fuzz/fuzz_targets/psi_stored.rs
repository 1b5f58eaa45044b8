#![no_main]
//! Decoders of stored PSI state: keys and precomputations (read back from the store,
//! which may be corrupted).
use libfuzzer_sys::fuzz_target;
use tacit_crypto::{P256, PrimeGroup, Ristretto255};
use tacit_psi::{ReceiverPrecomputation, SenderKey, SenderPrecomputation};

fn check<G: PrimeGroup>(data: &[u8]) {
    if let Ok(k) = SenderKey::<G>::from_bytes(data) {
        assert_eq!(k.to_bytes().as_slice(), data);
    }
    if let Ok(p) = SenderPrecomputation::<G>::from_bytes(data) {
        assert_eq!(p.to_bytes(), data);
    }
    if let Ok(p) = ReceiverPrecomputation::<G>::from_bytes(data) {
        assert_eq!(p.to_bytes().as_slice(), data);
    }
}

fuzz_target!(|data: &[u8]| {
    check::<Ristretto255>(data);
    check::<P256>(data);
});
