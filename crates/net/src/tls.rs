//! Mutual TLS with rustls (ring provider, TLS 1.3 and 1.2 safe defaults): both sides
//! present a certificate chained to one trust anchor and verify the other's.

use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use rustls::server::WebPkiClientVerifier;
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use std::sync::Arc;

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
