#![no_main]
//! Enrolment and stored-identity decoders (requests reach the CA from anyone; issued
//! certificates and identities are read back from files and the store), and the
//! CA's revocation list and its request (issue 10).
use libfuzzer_sys::fuzz_target;
use tacit_crypto::{P256, PrimeGroup, Ristretto255};
use tacit_drop::DropParams;
use tacit_drop::ca::{DeviceEnrollment, DropIdentity, EnrollmentRequest, Issued};
use tacit_drop::revocation::{RevocationListRequest, SignedRevocationList};

fn check<G: PrimeGroup>(params: &DropParams, msg: &[u8]) {
    if let Ok(r) = EnrollmentRequest::<G>::from_bytes(msg) {
        assert_eq!(r.to_bytes(), msg);
    }
    if let Ok(i) = Issued::<G>::from_bytes(msg, params) {
        assert_eq!(i.to_bytes(), msg);
    }
    let _ = DeviceEnrollment::<G>::from_bytes(msg);
    let _ = DropIdentity::<G>::from_bytes(msg);
}

fuzz_target!(|data: &[u8]| {
    if let Ok(l) = SignedRevocationList::from_bytes(data) {
        assert_eq!(l.to_bytes(), data);
    }
    if RevocationListRequest::from_bytes(data).is_ok() {
        assert_eq!(RevocationListRequest.to_bytes(), data);
    }
    let Some((&sel, msg)) = data.split_first() else { return };
    let params = DropParams {
        psi: tacit_fuzz::params(sel & 1),
    };
    if sel & 1 == 0 {
        check::<Ristretto255>(&params, msg);
    } else {
        check::<P256>(&params, msg);
    }
});
