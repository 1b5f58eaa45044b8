//! The enrolment channel: TLS 1.3 between a device and the CA, authenticated by the
//! CA's record-signing key that the device already trusts (`--ca-key`).
//!
//! Enrolment carries the device's identifiers in the clear inside the request, so it
//! must not run over plain TCP (issue 9, defect 3). The CA serves TLS with a fresh
//! self-signed Ed25519 certificate whose key it *endorses*: an X.509 extension
//! ([`ENDORSEMENT_OID`]) holds the CA's Ed25519 signature over
//! `tacit-drop-v1/enrolment-tls ‖ 0x00 ‖ SHA-256(SubjectPublicKeyInfo)`. The device
//! accepts the server only if that signature verifies under the pinned CA key, and
//! rustls checks the server's TLS 1.3 handshake signature with the endorsed key, so
//! the device talks to a holder of a key the CA vouched for. The CA's own signing
//! key never signs TLS handshakes (no cross-protocol use of one key).
//!
//! Frames on the channel are the ordinary [`tacit_net::FramedConn`] frames: one
//! enrolment request, one answer ([`crate::ca::Issued`] or a
//! [`tacit_wire::ErrorMessage`]).

use crate::ca::CertificateAuthority;
use crate::records::CaPublicKey;
use crate::{Error, Result, signed_message};
use sha2::{Digest, Sha256};
use std::sync::Arc;
use tacit_net::tls::{self, Extension, SelfSigned};

/// The TLS server name of an enrolment endpoint.
pub const SERVER_NAME: &str = "tacit-ca.invalid";

/// OID of the endorsement extension (a UUID-form arc under 2.25).
pub const ENDORSEMENT_OID: &[u64] = &[2, 25, 2_929_836_120_839_371_245];

fn endorsement_message(spki_der: &[u8]) -> Vec<u8> {
    signed_message("enrolment-tls", &Sha256::digest(spki_der))
}

fn tls_err(e: impl core::fmt::Display) -> Error {
    Error::Transport(format!("enrolment TLS: {e}"))
}

impl CertificateAuthority {
    /// A fresh TLS identity for the enrolment endpoint, endorsed by this CA's key.
    pub fn enrolment_tls_identity(&self) -> Result<SelfSigned> {
        SelfSigned::generate_with(SERVER_NAME, |spki| {
            Ok(vec![Extension {
                oid: ENDORSEMENT_OID.to_vec(),
                content: self.sign_raw(&endorsement_message(spki)).to_vec(),
            }])
        })
        .map_err(tls_err)
    }
}

/// Whether `cert_der` carries a valid endorsement of its own key by `ca`.
pub fn check_endorsement(ca: &CaPublicKey, cert_der: &[u8]) -> core::result::Result<(), String> {
    let sig = tls::extension_content(cert_der, ENDORSEMENT_OID)
        .map_err(|e| e.to_string())?
        .ok_or("the server's certificate carries no endorsement by a tacit CA")?;
    let spki = tls::spki_of(cert_der).map_err(|e| e.to_string())?;
    ca.0.verify(&endorsement_message(&spki), &sig)
        .map_err(|_| "the server's TLS key is not endorsed by the CA key given with --ca-key".to_string())
}

/// The device's TLS configuration: accept exactly servers endorsed by `ca`.
pub fn client_config(ca: CaPublicKey) -> Result<Arc<tacit_net::tls::ClientConfig>> {
    tls::checked_server_client(Arc::new(move |cert: &[u8]| check_endorsement(&ca, cert))).map_err(tls_err)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tacit_crypto::rng::SecureRng;

    #[test]
    fn only_the_ca_endorses_its_endpoint() {
        let mut rng = SecureRng::from_seed([3; 32]);
        let ca = CertificateAuthority::generate(&mut rng).unwrap();
        let other = CertificateAuthority::generate(&mut rng).unwrap();
        let id = ca.enrolment_tls_identity().unwrap();
        check_endorsement(&ca.public_key(), id.cert_der()).unwrap();
        let e = check_endorsement(&other.public_key(), id.cert_der()).unwrap_err();
        assert!(e.contains("not endorsed"), "{e}");
        let plain = SelfSigned::generate(SERVER_NAME).unwrap();
        let e = check_endorsement(&ca.public_key(), plain.cert_der()).unwrap_err();
        assert!(e.contains("no endorsement"), "{e}");
    }
}
