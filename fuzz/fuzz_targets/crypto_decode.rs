#![no_main]
//! Group elements, scalars, proofs and Ed25519 keys: a decoded value re-encodes to
//! the same bytes (one encoding per value).
use libfuzzer_sys::fuzz_target;
use tacit_crypto::oprf::Proof;
use tacit_crypto::schnorr::DlogProof;
use tacit_crypto::sign::VerifyingKey;
use tacit_crypto::{P256, PrimeGroup, Ristretto255};

fn check<G: PrimeGroup>(data: &[u8]) {
    if let Ok(e) = G::decode_element(data) {
        assert_eq!(G::element_bytes(&e).as_ref(), data);
        assert!(!G::is_identity(&e));
    }
    if let Ok(s) = G::decode_scalar(data) {
        let mut v = Vec::new();
        G::encode_scalar(&s, &mut v);
        assert_eq!(v, data);
    }
    if let Ok(p) = Proof::<G>::from_bytes(data) {
        assert_eq!(p.to_bytes(), data);
    }
    if let Ok(p) = DlogProof::<G>::from_bytes(data) {
        assert_eq!(p.to_bytes(), data);
    }
}

fuzz_target!(|data: &[u8]| {
    check::<Ristretto255>(data);
    check::<P256>(data);
    if let Ok(k) = VerifyingKey::from_bytes(data) {
        assert_eq!(&k.to_bytes()[..], data);
    }
});
