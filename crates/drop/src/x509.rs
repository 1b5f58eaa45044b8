//! X.509 for mutual TLS (PrivateDrop §2.4): the CA's root certificate and the
//! account certificates that bind a device's TLS key to its account UUID.
//!
//! An account certificate names the account as `urn:uuid:<UUID>` in its subject
//! alternative names (and as its common name), carries the fixed DNS name
//! [`TLS_SERVER_NAME`] so standard WebPKI verification applies between peers found on
//! the local network, and allows both TLS client and server use (an AirDrop device is
//! either). Keys are Ed25519.

use crate::account::AccountId;
use crate::records::Validity;
use crate::{Error, Result};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair, KeyUsagePurpose, SanType,
    SubjectPublicKeyInfo,
};
use zeroize::Zeroizing;

/// The DNS name every account certificate carries; clients verify servers against it.
pub const TLS_SERVER_NAME: &str = "tacit-drop.invalid";

fn x509_err(e: impl core::fmt::Display) -> Error {
    Error::InvalidParams(format!("X.509: {e}"))
}

fn time(unix: u64) -> Result<time::OffsetDateTime> {
    time::OffsetDateTime::from_unix_timestamp(unix.min(253_402_300_799) as i64).map_err(x509_err)
}

/// The CA's TLS root: a self-signed certificate and its key.
///
/// The Ed25519 key is held by tacit's `SigningKey` (wiped on drop) and its PKCS#8
/// encoding in `Zeroizing`; rcgen signs through [`rcgen::RemoteKeyPair`], so no rcgen
/// or ring key object (neither wipes itself) holds it (issue 10).
pub struct TlsRoot {
    key: KeyPair,
    pkcs8: Zeroizing<Vec<u8>>,
    cert: rcgen::Certificate,
}

/// PKCS#8 v1 (RFC 8410) of an Ed25519 key, up to the 32-byte seed.
const PKCS8_V1_PREFIX: [u8; 16] = [
    0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
];
/// PKCS#8 v2 (RFC 5958, what ring writes) of an Ed25519 key, up to the seed; the
/// public key follows the seed after [`PKCS8_V2_MIDDLE`] (`[1] IMPLICIT BIT STRING`).
const PKCS8_V2_PREFIX: [u8; 16] = [
    0x30, 0x51, 0x02, 0x01, 0x01, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
];
const PKCS8_V2_MIDDLE: [u8; 3] = [0x81, 0x21, 0x00];

/// An Ed25519 key that rcgen signs with and that wipes itself (tacit's `SigningKey`).
struct WipingEd25519 {
    key: tacit_crypto::sign::SigningKey,
    public: [u8; 32],
}

impl rcgen::RemoteKeyPair for WipingEd25519 {
    fn public_key(&self) -> &[u8] {
        &self.public
    }
    fn sign(&self, msg: &[u8]) -> core::result::Result<Vec<u8>, rcgen::Error> {
        Ok(self.key.sign(msg).to_vec())
    }
    fn algorithm(&self) -> &'static rcgen::SignatureAlgorithm {
        &rcgen::PKCS_ED25519
    }
}

/// The seed of an Ed25519 PKCS#8 key (v1, or v2 with its public key checked).
fn ed25519_seed(der: &[u8]) -> Result<Zeroizing<[u8; 32]>> {
    let mut seed = Zeroizing::new([0u8; 32]);
    if der.len() == 48 && der[..16] == PKCS8_V1_PREFIX {
        seed.copy_from_slice(&der[16..48]);
        return Ok(seed);
    }
    if der.len() == 83 && der[..16] == PKCS8_V2_PREFIX && der[48..51] == PKCS8_V2_MIDDLE {
        seed.copy_from_slice(&der[16..48]);
        let public = tacit_crypto::sign::SigningKey::from_seed(&seed)
            .verifying_key()
            .to_bytes();
        if public[..] != der[51..83] {
            return Err(x509_err("the TLS root key's public half does not match its secret"));
        }
        return Ok(seed);
    }
    Err(x509_err("the TLS root key is not an Ed25519 PKCS#8 key"))
}

fn root_key(seed: &[u8; 32]) -> Result<(KeyPair, Zeroizing<Vec<u8>>)> {
    let key = tacit_crypto::sign::SigningKey::from_seed(seed);
    let public = key.verifying_key().to_bytes();
    let mut pkcs8 = Zeroizing::new(Vec::with_capacity(48));
    pkcs8.extend_from_slice(&PKCS8_V1_PREFIX);
    pkcs8.extend_from_slice(seed);
    let kp = KeyPair::from_remote(Box::new(WipingEd25519 { key, public })).map_err(x509_err)?;
    Ok((kp, pkcs8))
}

impl core::fmt::Debug for TlsRoot {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("TlsRoot(<key redacted>)")
    }
}

impl TlsRoot {
    /// A new root (Ed25519), valid from 2020 to 2100 (key rotation is out of scope).
    pub fn generate() -> Result<Self> {
        Self::generate_valid(1_577_836_800, 4_102_444_800)
    }

    /// A new root valid from `not_before` to `not_after` (Unix seconds).
    pub fn generate_valid(not_before: u64, not_after: u64) -> Result<Self> {
        let mut seed = Zeroizing::new([0u8; 32]);
        rand_core::RngCore::fill_bytes(&mut tacit_crypto::rng::SecureRng::from_os(), &mut *seed);
        let (key, pkcs8) = root_key(&seed)?;
        let mut params = CertificateParams::default();
        params.distinguished_name.push(DnType::CommonName, "tacit drop CA");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        params.not_before = time(not_before)?;
        params.not_after = time(not_after)?;
        let cert = params.self_signed(&key).map_err(x509_err)?;
        Ok(TlsRoot { key, pkcs8, cert })
    }

    /// A stored root: its key (PKCS#8 PEM) and certificate (DER).
    pub fn from_parts(key_pem: &str, cert_der: &[u8]) -> Result<Self> {
        let der = Zeroizing::new(pem::parse(key_pem).map_err(x509_err)?.into_contents());
        let (key, pkcs8) = root_key(&*ed25519_seed(&der)?)?;
        let params = CertificateParams::from_ca_cert_der(&cert_der.to_vec().into()).map_err(x509_err)?;
        // Re-signing gives an issuer object with the stored name and key; the stored
        // DER stays the trust anchor devices hold.
        let cert = params.self_signed(&key).map_err(x509_err)?;
        Ok(TlsRoot { key, pkcs8, cert })
    }

    /// The key, PKCS#8 PEM (secret).
    pub fn key_pem(&self) -> Zeroizing<String> {
        let p = pem::Pem::new("PRIVATE KEY", self.pkcs8.to_vec());
        let out = Zeroizing::new(pem::encode_config(
            &p,
            pem::EncodeConfig::new().set_line_ending(pem::LineEnding::LF),
        ));
        let mut contents = p.into_contents();
        zeroize::Zeroize::zeroize(&mut contents);
        out
    }

    /// The root certificate, DER.
    pub fn cert_der(&self) -> Vec<u8> {
        self.cert.der().to_vec()
    }

    /// Issues the account certificate for `account` over the TLS public key
    /// `spki_der` (SubjectPublicKeyInfo, DER).
    pub fn issue(&self, account: &AccountId, spki_der: &[u8], validity: &Validity) -> Result<Vec<u8>> {
        let spki = SubjectPublicKeyInfo::from_der(spki_der).map_err(x509_err)?;
        let mut params = CertificateParams::default();
        params.distinguished_name.push(DnType::CommonName, account.to_string());
        params.subject_alt_names = vec![
            SanType::URI(format!("urn:uuid:{account}").try_into().map_err(x509_err)?),
            SanType::DnsName(TLS_SERVER_NAME.try_into().map_err(x509_err)?),
        ];
        params.is_ca = IsCa::ExplicitNoCa;
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth, ExtendedKeyUsagePurpose::ClientAuth];
        params.not_before = time(validity.not_before)?;
        params.not_after = time(validity.not_after)?;
        let cert = params.signed_by(&spki, &self.cert, &self.key).map_err(x509_err)?;
        Ok(cert.der().to_vec())
    }
}

/// A device's TLS key (Ed25519), PKCS#8 DER; zeroized on drop.
#[derive(Clone)]
pub struct TlsKey(Zeroizing<Vec<u8>>);

impl core::fmt::Debug for TlsKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("TlsKey(<redacted>)")
    }
}

impl TlsKey {
    /// A fresh key.
    pub fn generate() -> Result<Self> {
        let k = KeyPair::generate_for(&rcgen::PKCS_ED25519).map_err(x509_err)?;
        Ok(TlsKey(Zeroizing::new(k.serialize_der())))
    }

    /// From PKCS#8 DER.
    pub fn from_pkcs8(der: &[u8]) -> Result<Self> {
        KeyPair::try_from(der).map_err(x509_err)?;
        Ok(TlsKey(Zeroizing::new(der.to_vec())))
    }

    /// PKCS#8 DER (secret).
    pub fn pkcs8_der(&self) -> &[u8] {
        &self.0
    }

    /// The public key, SubjectPublicKeyInfo DER.
    pub fn spki_der(&self) -> Result<Vec<u8>> {
        Ok(KeyPair::try_from(self.0.as_slice()).map_err(x509_err)?.public_key_der())
    }

    /// An Ed25519 signature with this key (a renewal request to the CA proves
    /// possession of the account's current certificate key this way).
    pub fn sign(&self, msg: &[u8]) -> Result<[u8; 64]> {
        let kp = ring::signature::Ed25519KeyPair::from_pkcs8_maybe_unchecked(&self.0)
            .map_err(|e| x509_err(format!("TLS key: {e}")))?;
        kp.sign(msg)
            .as_ref()
            .try_into()
            .map_err(|_| x509_err("Ed25519 signature of unexpected length"))
    }
}

/// OID 1.3.101.112: Ed25519.
const ED25519_OID: &[u64] = &[1, 3, 101, 112];

/// Verifies an Ed25519 signature under a key given as SubjectPublicKeyInfo DER.
pub fn verify_with_spki(spki_der: &[u8], msg: &[u8], sig: &[u8]) -> Result<()> {
    use x509_parser::prelude::FromDer;
    let (rest, spki) = x509_parser::x509::SubjectPublicKeyInfo::from_der(spki_der).map_err(x509_err)?;
    let ed25519 = x509_parser::der_parser::oid::Oid::from(ED25519_OID).map_err(|_| x509_err("OID"))?;
    if !rest.is_empty() || spki.algorithm.algorithm != ed25519 {
        return Err(x509_err("not an Ed25519 key"));
    }
    let key = tacit_crypto::sign::VerifyingKey::from_bytes(&spki.subject_public_key.data)?;
    Ok(key.verify(msg, sig)?)
}

/// Checks that `cert_der` is an account certificate issued by the root `root_der`
/// and valid at `now` for TLS client and server use (the same path validation the
/// peers' mutual TLS runs).
pub fn verify_account_certificate(cert_der: &[u8], root_der: &[u8], now: u64) -> Result<()> {
    use rustls_pki_types::{CertificateDer, UnixTime};
    let root = CertificateDer::from(root_der);
    let anchor = webpki::anchor_from_trusted_cert(&root).map_err(|_| Error::BadCertificate("TLS root certificate"))?;
    let cert = CertificateDer::from(cert_der);
    let ee = webpki::EndEntityCert::try_from(&cert).map_err(|_| Error::BadCertificate("account certificate"))?;
    let time = UnixTime::since_unix_epoch(std::time::Duration::from_secs(now));
    for usage in [webpki::KeyUsage::client_auth(), webpki::KeyUsage::server_auth()] {
        ee.verify_for_usage(
            &[webpki::ring::ED25519],
            std::slice::from_ref(&anchor),
            &[],
            time,
            usage,
            None,
            None,
        )
        .map_err(|_| Error::BadCertificate("account certificate"))?;
    }
    Ok(())
}

/// The account an account certificate names (`urn:uuid:` subject alternative name).
pub fn account_of_certificate(cert_der: &[u8]) -> Result<AccountId> {
    let (rest, cert) = x509_parser::parse_x509_certificate(cert_der).map_err(x509_err)?;
    if !rest.is_empty() {
        return Err(x509_err("trailing bytes after the certificate"));
    }
    let san = cert
        .subject_alternative_name()
        .map_err(x509_err)?
        .ok_or_else(|| x509_err("certificate names no account"))?;
    san.value
        .general_names
        .iter()
        .find_map(|n| match n {
            x509_parser::extensions::GeneralName::URI(u) => u.strip_prefix("urn:uuid:").and_then(AccountId::parse),
            _ => None,
        })
        .ok_or_else(|| x509_err("certificate names no account"))
}

/// The SubjectPublicKeyInfo (DER) of a certificate.
pub fn spki_of_certificate(cert_der: &[u8]) -> Result<Vec<u8>> {
    let (_, cert) = x509_parser::parse_x509_certificate(cert_der).map_err(x509_err)?;
    Ok(cert.public_key().raw.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tacit_crypto::rng::SecureRng;

    #[test]
    fn root_keys_stored_by_ring_still_load_and_sign() {
        // A CA directory written before issue 10 holds ring's PKCS#8 v2 key.
        let ring_key = KeyPair::generate_for(&rcgen::PKCS_ED25519).unwrap();
        let now = 1_800_000_000;
        let mut params = CertificateParams::default();
        params.distinguished_name.push(DnType::CommonName, "tacit drop CA");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let old_cert = params.self_signed(&ring_key).unwrap().der().to_vec();
        let root = TlsRoot::from_parts(&ring_key.serialize_pem(), &old_cert).unwrap();
        let key = TlsKey::generate().unwrap();
        let account = AccountId::random(&mut tacit_crypto::rng::SecureRng::from_seed([2; 32]));
        let validity = Validity {
            not_before: now,
            not_after: now + 1000,
        };
        let cert = root.issue(&account, &key.spki_der().unwrap(), &validity).unwrap();
        // Issued with our key object, the certificate chains to the old root.
        verify_account_certificate(&cert, &old_cert, now + 1).unwrap();
        // It is saved as PKCS#8 v1 from then on, and loads again.
        let again = TlsRoot::from_parts(&root.key_pem(), &old_cert).unwrap();
        verify_account_certificate(
            &again.issue(&account, &key.spki_der().unwrap(), &validity).unwrap(),
            &old_cert,
            now + 1,
        )
        .unwrap();
        // A v2 key whose public half was altered is refused, and so is another algorithm.
        let mut der = ring_key.serialize_der();
        let last = der.len() - 1;
        der[last] ^= 1;
        assert!(ed25519_seed(&der).is_err());
        let p256 = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        assert!(TlsRoot::from_parts(&p256.serialize_pem(), &old_cert).is_err());
    }

    #[test]
    fn account_certificates_name_their_account() {
        let now = 1_800_000_000;
        let root = TlsRoot::generate().unwrap();
        let stored = TlsRoot::from_parts(&root.key_pem(), &root.cert_der()).unwrap();
        let account = AccountId::random(&mut SecureRng::from_seed([1; 32]));
        let key = TlsKey::generate().unwrap();
        let validity = Validity {
            not_before: now,
            not_after: now + 1000,
        };
        let cert = stored.issue(&account, &key.spki_der().unwrap(), &validity).unwrap();
        assert_eq!(account_of_certificate(&cert).unwrap(), account);
        assert_eq!(spki_of_certificate(&cert).unwrap(), key.spki_der().unwrap());
        assert!(account_of_certificate(&root.cert_der()).is_err());
        assert!(account_of_certificate(b"junk").is_err());
        // the certificate chains to its root, not to another one
        verify_account_certificate(&cert, &root.cert_der(), now + 1).unwrap();
        let other = TlsRoot::generate().unwrap();
        assert!(verify_account_certificate(&cert, &other.cert_der(), now + 1).is_err());
        assert!(verify_account_certificate(&cert, &root.cert_der(), now + 2000).is_err());
    }

    #[test]
    fn tls_keys_sign_for_their_spki_only() {
        let key = TlsKey::generate().unwrap();
        let sig = key.sign(b"renew").unwrap();
        verify_with_spki(&key.spki_der().unwrap(), b"renew", &sig).unwrap();
        assert!(verify_with_spki(&key.spki_der().unwrap(), b"renew!", &sig).is_err());
        let other = TlsKey::generate().unwrap();
        assert!(verify_with_spki(&other.spki_der().unwrap(), b"renew", &sig).is_err());
        assert!(verify_with_spki(b"junk", b"renew", &sig).is_err());
    }
}
