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
pub struct TlsRoot {
    key: KeyPair,
    cert: rcgen::Certificate,
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
        let key = KeyPair::generate_for(&rcgen::PKCS_ED25519).map_err(x509_err)?;
        let mut params = CertificateParams::default();
        params.distinguished_name.push(DnType::CommonName, "tacit drop CA");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        params.not_before = time(not_before)?;
        params.not_after = time(not_after)?;
        let cert = params.self_signed(&key).map_err(x509_err)?;
        Ok(TlsRoot { key, cert })
    }

    /// A stored root: its key (PKCS#8 PEM) and certificate (DER).
    pub fn from_parts(key_pem: &str, cert_der: &[u8]) -> Result<Self> {
        let key = KeyPair::from_pem(key_pem).map_err(x509_err)?;
        let params = CertificateParams::from_ca_cert_der(&cert_der.to_vec().into()).map_err(x509_err)?;
        // Re-signing gives an issuer object with the stored name and key; the stored
        // DER stays the trust anchor devices hold.
        let cert = params.self_signed(&key).map_err(x509_err)?;
        Ok(TlsRoot { key, cert })
    }

    /// The key, PKCS#8 PEM (secret).
    pub fn key_pem(&self) -> Zeroizing<String> {
        Zeroizing::new(self.key.serialize_pem())
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
    }
}
