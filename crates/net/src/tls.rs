//! TLS with rustls (ring provider):
//!
//! * [`MutualTls`]: both sides present a certificate chained to one trust anchor and
//!   verify the other's (TLS 1.3 and 1.2 safe defaults; PrivateDrop).
//! * [`SelfSigned`] with [`checked_server_client`] / [`SelfSigned::server_config`]:
//!   a server with a self-signed Ed25519 certificate that the client accepts by a
//!   check of its own, such as a pinned fingerprint, trust on first use, or a
//!   signature of another key carried in the certificate. TLS 1.3 only, no client
//!   certificate. rustls still verifies the server's handshake signature with the
//!   certificate's key, so passing the check means talking to the key's holder.
//!
//! [`channel_binding`] exports 32 bytes (RFC 8446 §7.5) that both ends of one
//! session share and no other session has; protocols bind their transcripts to it.

use rustls::DistinguishedName;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
pub use rustls::{ClientConfig, ServerConfig};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};
use sha2::{Digest, Sha256};
use std::sync::Arc;

/// The exporter label of [`channel_binding`].
pub const CHANNEL_BINDING_LABEL: &[u8] = b"EXPORTER-tacit-channel-binding";

/// The channel binding of an established TLS session: 32 bytes exported under
/// [`CHANNEL_BINDING_LABEL`].
pub fn channel_binding<D>(conn: &rustls::ConnectionCommon<D>) -> Result<[u8; 32], TlsConfigError> {
    conn.export_keying_material([0u8; 32], CHANNEL_BINDING_LABEL, None)
        .map_err(err)
}

/// SHA-256 of a certificate's SubjectPublicKeyInfo: the fingerprint users pin.
pub fn spki_fingerprint(cert_der: &[u8]) -> Result<[u8; 32], TlsConfigError> {
    Ok(Sha256::digest(spki_of(cert_der)?).into())
}

/// A certificate's SubjectPublicKeyInfo (DER).
pub fn spki_of(cert_der: &[u8]) -> Result<Vec<u8>, TlsConfigError> {
    let (rest, cert) = x509_parser::parse_x509_certificate(cert_der).map_err(err)?;
    if !rest.is_empty() {
        return Err(err("trailing bytes after the certificate"));
    }
    Ok(cert.public_key().raw.to_vec())
}

/// An X.509 extension of a self-signed certificate (for example a signature by
/// another key over the certificate's key).
#[derive(Debug, Clone)]
pub struct Extension {
    /// Its object identifier, as arcs.
    pub oid: Vec<u64>,
    /// Its DER content (wrapped in an OCTET STRING by the encoder).
    pub content: Vec<u8>,
}

/// A self-signed Ed25519 certificate and its key (PKCS#8, zeroized on drop).
#[derive(Clone)]
pub struct SelfSigned {
    cert: Vec<u8>,
    key: Arc<zeroize::Zeroizing<Vec<u8>>>,
}

impl core::fmt::Debug for SelfSigned {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "SelfSigned({} byte certificate, <key redacted>)", self.cert.len())
    }
}

impl SelfSigned {
    /// A fresh Ed25519 key and a certificate for `name` (a DNS name), valid for about
    /// a hundred years (these certificates are pinned, not validated by date).
    pub fn generate(name: &str) -> Result<Self, TlsConfigError> {
        Self::generate_with(name, |_| Ok(Vec::new()))
    }

    /// [`SelfSigned::generate`] with extensions computed from the new key's
    /// SubjectPublicKeyInfo (DER), for example another key's signature over it.
    pub fn generate_with(
        name: &str,
        extensions: impl FnOnce(&[u8]) -> Result<Vec<Extension>, TlsConfigError>,
    ) -> Result<Self, TlsConfigError> {
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ED25519).map_err(err)?;
        let mut params = rcgen::CertificateParams::new(vec![name.to_string()]).map_err(err)?;
        params.distinguished_name.push(rcgen::DnType::CommonName, name);
        params.not_before = rcgen::date_time_ymd(2020, 1, 1);
        params.not_after = rcgen::date_time_ymd(2120, 1, 1);
        for e in extensions(&key.public_key_der())? {
            params.custom_extensions.push(rcgen::CustomExtension::from_oid_content(
                &e.oid,
                der_octet_string(&e.content),
            ));
        }
        let cert = params.self_signed(&key).map_err(err)?;
        Ok(SelfSigned {
            cert: cert.der().to_vec(),
            key: Arc::new(zeroize::Zeroizing::new(key.serialize_der())),
        })
    }

    /// A stored identity: certificate DER and PKCS#8 key DER.
    pub fn from_parts(cert_der: &[u8], key_pkcs8_der: &[u8]) -> Result<Self, TlsConfigError> {
        rcgen::KeyPair::try_from(key_pkcs8_der).map_err(err)?;
        spki_fingerprint(cert_der)?;
        Ok(SelfSigned {
            cert: cert_der.to_vec(),
            key: Arc::new(zeroize::Zeroizing::new(key_pkcs8_der.to_vec())),
        })
    }

    /// The certificate (DER).
    pub fn cert_der(&self) -> &[u8] {
        &self.cert
    }

    /// The key (PKCS#8 DER, secret).
    pub fn key_pkcs8_der(&self) -> &[u8] {
        &self.key
    }

    /// SHA-256 of the certificate's key ([`spki_fingerprint`]).
    pub fn fingerprint(&self) -> Result<[u8; 32], TlsConfigError> {
        spki_fingerprint(&self.cert)
    }

    /// A TLS 1.3 server configuration presenting this certificate, no client
    /// certificates.
    pub fn server_config(&self) -> Result<Arc<ServerConfig>, TlsConfigError> {
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.key.to_vec()));
        let mut cfg = ServerConfig::builder_with_provider(channel_provider())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(err)?
            .with_no_client_auth()
            .with_single_cert(vec![CertificateDer::from(self.cert.clone())], key)
            .map_err(err)?;
        cfg.enable_secret_extraction = true; // FramedConn::own_record_layer
        Ok(Arc::new(cfg))
    }

    /// A TLS 1.3 server configuration presenting this certificate that **requires**
    /// the client to present one self-signed certificate accepted by `check` (mutual
    /// pinning: each side pins or records the other's key). rustls verifies the
    /// client's handshake signature with the certificate's key, so a client that
    /// passes is the key's holder. The accepted certificate is
    /// [`FramedConn::peer_certificate`](crate::FramedConn::peer_certificate).
    pub fn server_config_checking_clients(&self, check: CertificateCheck) -> Result<Arc<ServerConfig>, TlsConfigError> {
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.key.to_vec()));
        let p = channel_provider();
        let verifier = Arc::new(CheckedClient {
            check,
            algs: p.signature_verification_algorithms,
        });
        let mut cfg = ServerConfig::builder_with_provider(p)
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(err)?
            .with_client_cert_verifier(verifier)
            .with_single_cert(vec![CertificateDer::from(self.cert.clone())], key)
            .map_err(err)?;
        cfg.enable_secret_extraction = true; // FramedConn::own_record_layer
        Ok(Arc::new(cfg))
    }

    /// A TLS 1.3 client configuration that presents this certificate and accepts a
    /// server exactly when `check` accepts its (single, self-signed) certificate: the
    /// client side of [`SelfSigned::server_config_checking_clients`].
    pub fn client_config_checking_server(&self, check: CertificateCheck) -> Result<Arc<ClientConfig>, TlsConfigError> {
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.key.to_vec()));
        let p = channel_provider();
        let verifier = Arc::new(CheckedServer {
            check,
            algs: p.signature_verification_algorithms,
        });
        let mut cfg = ClientConfig::builder_with_provider(p)
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(err)?
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_client_auth_cert(vec![CertificateDer::from(self.cert.clone())], key)
            .map_err(err)?;
        cfg.enable_secret_extraction = true; // FramedConn::own_record_layer
        Ok(Arc::new(cfg))
    }
}

/// Accepts a client whose one self-signed certificate passes a check.
struct CheckedClient {
    check: CertificateCheck,
    algs: WebPkiSupportedAlgorithms,
}

impl core::fmt::Debug for CheckedClient {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("CheckedClient")
    }
}

impl ClientCertVerifier for CheckedClient {
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        if !intermediates.is_empty() {
            return Err(rustls::Error::General(
                "the client sent a certificate chain; one self-signed certificate expected".into(),
            ));
        }
        (self.check)(end_entity.as_ref()).map_err(rustls::Error::General)?;
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Err(rustls::Error::General("TLS 1.2 is not offered".into()))
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algs)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algs.supported_schemes()
    }
}

/// A check that accepts any certificate (trust on first use records the key after
/// the handshake; the handshake itself still proves the peer holds it).
pub fn any_key() -> CertificateCheck {
    Arc::new(|_: &[u8]| Ok(()))
}

/// The DER of an OCTET STRING holding `b`.
fn der_octet_string(b: &[u8]) -> Vec<u8> {
    let mut out = vec![0x04];
    let n = b.len();
    if n < 0x80 {
        out.push(n as u8);
    } else {
        let len = n.to_be_bytes();
        let skip = len.iter().take_while(|&&x| x == 0).count();
        out.push(0x80 | (len.len() - skip) as u8);
        out.extend_from_slice(&len[skip..]);
    }
    out.extend_from_slice(b);
    out
}

/// The content of extension `oid` in `cert_der` (the bytes inside its OCTET STRING),
/// if the certificate has it.
pub fn extension_content(cert_der: &[u8], oid: &[u64]) -> Result<Option<Vec<u8>>, TlsConfigError> {
    let (_, cert) = x509_parser::parse_x509_certificate(cert_der).map_err(err)?;
    let want = x509_parser::der_parser::oid::Oid::from(oid).map_err(|_| err("bad object identifier"))?;
    for e in cert.extensions() {
        if e.oid == want {
            let (rest, inner) = x509_parser::der_parser::der::parse_der_octetstring(e.value).map_err(err)?;
            if !rest.is_empty() {
                return Err(err("trailing bytes in a certificate extension"));
            }
            return Ok(Some(inner.as_slice().map_err(err)?.to_vec()));
        }
    }
    Ok(None)
}

/// Decides whether a server's end-entity certificate (DER) is the one we want to
/// talk to; the error says why not.
pub type CertificateCheck = Arc<dyn Fn(&[u8]) -> Result<(), String> + Send + Sync>;

struct CheckedServer {
    check: CertificateCheck,
    algs: WebPkiSupportedAlgorithms,
}

impl core::fmt::Debug for CheckedServer {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("CheckedServer")
    }
}

impl ServerCertVerifier for CheckedServer {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if !intermediates.is_empty() {
            return Err(rustls::Error::General(
                "the server sent a certificate chain; one self-signed certificate expected".into(),
            ));
        }
        (self.check)(end_entity.as_ref()).map_err(rustls::Error::General)?;
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Err(rustls::Error::General("TLS 1.2 is not offered".into()))
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algs)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algs.supported_schemes()
    }
}

/// A TLS 1.3 client configuration that accepts a server exactly when `check`
/// accepts its (single, self-signed) certificate.
pub fn checked_server_client(check: CertificateCheck) -> Result<Arc<ClientConfig>, TlsConfigError> {
    let p = channel_provider();
    let verifier = Arc::new(CheckedServer {
        check,
        algs: p.signature_verification_algorithms,
    });
    let mut cfg = ClientConfig::builder_with_provider(p)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(err)?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    cfg.enable_secret_extraction = true; // FramedConn::own_record_layer
    Ok(Arc::new(cfg))
}

/// A check that accepts exactly the certificate whose key has SHA-256 fingerprint
/// `pin` ([`spki_fingerprint`]).
pub fn pinned(pin: [u8; 32]) -> CertificateCheck {
    Arc::new(move |cert: &[u8]| {
        let got = spki_fingerprint(cert).map_err(|e| e.to_string())?;
        if subtle_eq(&got, &pin) {
            Ok(())
        } else {
            Err(format!(
                "the server's key has fingerprint {}, not the pinned {}",
                hex32(&got),
                hex32(&pin)
            ))
        }
    })
}

fn subtle_eq(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn hex32(b: &[u8; 32]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A TLS error in words.
#[derive(Debug, thiserror::Error)]
#[error("TLS configuration: {0}")]
pub struct TlsConfigError(String);

fn err(e: impl core::fmt::Display) -> TlsConfigError {
    TlsConfigError(e.to_string())
}

/// Our certificate chain and key, and the one root we trust for peers.
#[derive(Clone)]
pub struct MutualTls {
    chain: Vec<CertificateDer<'static>>,
    key: Arc<Vec<u8>>,
    roots: Arc<RootCertStore>,
}

impl core::fmt::Debug for MutualTls {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "MutualTls({} certificates, <key redacted>)", self.chain.len())
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The provider of the project's channel ([`SelfSigned`] configurations): *ring*,
/// with TLS 1.3's AES-128-GCM preferred to AES-256-GCM (both ends are tacit, the
/// rest of the channel is at the 128-bit level — X25519, Ed25519 — and AES-128 has
/// 10 rounds to AES-256's 14: a GMW online phase moves megabytes through it).
fn channel_provider() -> Arc<rustls::crypto::CryptoProvider> {
    let mut p = rustls::crypto::ring::default_provider();
    p.cipher_suites
        .sort_by_key(|s| s.suite() != rustls::CipherSuite::TLS13_AES_128_GCM_SHA256);
    Arc::new(p)
}

impl MutualTls {
    /// Our certificate (DER), our PKCS#8 key (DER) and the trust anchor (DER).
    pub fn new(cert_der: &[u8], key_pkcs8_der: &[u8], root_der: &[u8]) -> Result<Self, TlsConfigError> {
        let mut roots = RootCertStore::empty();
        roots.add(CertificateDer::from(root_der.to_vec())).map_err(err)?;
        Ok(MutualTls {
            chain: vec![CertificateDer::from(cert_der.to_vec())],
            key: Arc::new(key_pkcs8_der.to_vec()),
            roots: Arc::new(roots),
        })
    }

    fn key(&self) -> PrivateKeyDer<'static> {
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.key.as_ref().clone()))
    }

    /// A server configuration that requires a client certificate from the root.
    pub fn server_config(&self) -> Result<Arc<ServerConfig>, TlsConfigError> {
        let verifier = WebPkiClientVerifier::builder_with_provider(self.roots.clone(), provider())
            .build()
            .map_err(err)?;
        let cfg = ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(err)?
            .with_client_cert_verifier(verifier)
            .with_single_cert(self.chain.clone(), self.key())
            .map_err(err)?;
        Ok(Arc::new(cfg))
    }

    /// A client configuration that presents our certificate and trusts only the root.
    pub fn client_config(&self) -> Result<Arc<ClientConfig>, TlsConfigError> {
        let cfg = ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(err)?
            .with_root_certificates(self.roots.clone())
            .with_client_auth_cert(self.chain.clone(), self.key())
            .map_err(err)?;
        Ok(Arc::new(cfg))
    }
}

/// A server name for `name` (a DNS name such as `tacit-drop.invalid`).
pub fn server_name(name: &str) -> Result<ServerName<'static>, TlsConfigError> {
    ServerName::try_from(name.to_string()).map_err(err)
}

pub use tokio_rustls::{TlsAcceptor, TlsConnector, client, server};
