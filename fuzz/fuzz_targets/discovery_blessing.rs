#![no_main]
//! Blessing decoders (chains arrive inside discovery handshakes from anyone; principals
//! and trusted roots are read back from files) and the name and policy parsers. A
//! decoded value re-encodes to the same bytes (one encoding per value); validating a
//! decoded chain never panics.
use libfuzzer_sys::fuzz_target;
use tacit_discovery::blessing::{
    Blessing, CertificateId, Name, Policy, PrefixPolicy, Principal, SignedRevocationList, TrustedRoot, TrustedRoots,
};
use tacit_wire::{Decode, Encode};

fuzz_target!(|data: &[u8]| {
    if let Ok(b) = Blessing::from_wire(data) {
        assert_eq!(b.to_wire(), data);
        assert_eq!(b.encoded_len(), data.len());
        let mut roots = TrustedRoots::new();
        let _ = roots.insert(TrustedRoot::of(&b));
        let _ = b.validate(&roots, 1_767_225_600);
    }
    if let Ok(b) = Blessing::from_file_bytes(data) {
        assert_eq!(b.to_file_bytes(), data);
    }
    if let Ok(p) = Principal::from_file_bytes(data) {
        assert_eq!(p.to_file_bytes().as_slice(), data);
    }
    if let Ok(r) = TrustedRoots::from_file_bytes(data) {
        assert_eq!(r.to_file_bytes(), data);
    }
    // Issue 10: revocation lists arrive from root services and files; applying one
    // to roots that trust its issuer never panics.
    if let Ok(l) = SignedRevocationList::from_file_bytes(data) {
        assert_eq!(l.to_file_bytes(), data);
        let mut roots = TrustedRoots::new();
        let _ = roots.insert(l.unverified().root().clone());
        let _ = roots.apply_revocations(&l);
    }
    if let Ok(n) = Name::from_wire(data) {
        assert_eq!(n.to_wire(), data);
    }
    if let Ok(p) = Policy::from_wire(data) {
        assert_eq!(p.to_wire(), data);
    }
    if let Ok(s) = core::str::from_utf8(data) {
        if let Ok(id) = s.parse::<CertificateId>() {
            assert_eq!(id.to_string(), s.trim().to_ascii_lowercase());
        }
        if let Ok(n) = Name::parse(s) {
            assert_eq!(n.to_string(), s);
        }
        if let Ok(p) = PrefixPolicy::parse(s) {
            assert_eq!(p.to_string(), s);
        }
        if let Ok(p) = Policy::parse(s) {
            assert_eq!(Policy::parse(&p.to_string()).ok(), Some(p));
        }
    }
});
