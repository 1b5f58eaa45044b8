//! The project's channel, shared by every command that talks to a peer: TLS 1.3
//! (rustls) with self-signed Ed25519 keys that the other side pins (`--pin`) or
//! records on first use (`--tofu`, as SSH does). Keys live in the store, one per
//! purpose (`psi-tls-identity`, …); recorded peer keys under a name per subsystem
//! and address (`psi/HOST:PORT`, …). See `docs/wire.md` ("The channel").
//!
//! Why TLS and not Noise: rustls is already in the tree for PrivateDrop's mutual
//! TLS, its channel-binding exporter is what protocols bind their transcripts to,
//! and one TLS stack is less to audit than two.

use anyhow::{Context, Result};
use std::sync::Arc;
use tacit_net::tls::{CertificateCheck, SelfSigned};
use tacit_store::Store;

/// How a client decides whether to trust the peer's key.
pub enum Trust {
    /// Plain TCP: nothing authenticated (only under an explicit flag).
    Plain,
    /// TLS, exactly this key (SHA-256 of its SubjectPublicKeyInfo).
    Pinned([u8; 32]),
    /// TLS, the key recorded the first time under `name` in this store; a later
    /// different key is refused.
    FirstUse {
        /// The store that keeps recorded keys.
        store: Store,
        /// The name the key is recorded under (`<subsystem>/<address>`).
        name: String,
    },
}

impl Trust {
    /// The key recorded on first use, if any.
    pub fn recorded(&self) -> Result<Option<[u8; 32]>> {
        match self {
            Trust::FirstUse { store, name } => Ok(store.known_peer(name)?),
            _ => Ok(None),
        }
    }

    /// The certificate check for the TLS handshake; `None` for plain TCP. On first
    /// use any key is accepted (the handshake still proves its holder is on the
    /// other end) and [`Trust::record`] keeps it.
    pub fn check(&self) -> Result<Option<CertificateCheck>> {
        Ok(match self {
            Trust::Plain => None,
            Trust::Pinned(fp) => Some(tacit_net::tls::pinned(*fp)),
            Trust::FirstUse { .. } => Some(match self.recorded()? {
                Some(fp) => tacit_net::tls::pinned(fp),
                None => tacit_net::tls::any_key(),
            }),
        })
    }

    /// After a handshake: records the peer's key on first use and returns its
    /// fingerprint when it was recorded now.
    pub fn record(&mut self, peer_certificate: Option<&[u8]>) -> Result<Option<[u8; 32]>> {
        let recorded = self.recorded()?;
        if let (Trust::FirstUse { store, name }, None, Some(cert)) = (self, recorded, peer_certificate) {
            let fp = tacit_net::tls::spki_fingerprint(cert)?;
            store.remember_peer(name, &fp, crate::util::now_unix())?;
            return Ok(Some(fp));
        }
        Ok(None)
    }
}

/// Parses a fingerprint given on the command line (64 hex digits; `:` and spaces
/// allowed between them).
pub fn parse_fingerprint(s: &str) -> Result<[u8; 32]> {
    let s: String = s.chars().filter(|c| !matches!(c, ':' | ' ')).collect();
    let b = hex::decode(&s).map_err(|_| anyhow::anyhow!("--pin is not hex"))?;
    b.try_into()
        .map_err(|_| anyhow::anyhow!("--pin must be a SHA-256 fingerprint (64 hex digits)"))
}

/// This store's TLS identity for `purpose`, made and stored on first use; `name`
/// is the DNS name in a new certificate (certificates are pinned, not named).
pub fn tls_identity(st: &mut Store, purpose: &str, name: &str) -> Result<SelfSigned> {
    if let Some(k) = st.current_key(purpose)? {
        let mut r = tacit_wire::Reader::new(&k.secret);
        let cert = r.var_bytes("certificate", 1 << 16)?;
        let key = r.var_bytes("key", 1 << 16)?;
        r.finish()?;
        return SelfSigned::from_parts(cert, key).with_context(|| format!("the stored {purpose} key is corrupt"));
    }
    let id = SelfSigned::generate(name)?;
    let mut w = tacit_wire::Writer::new();
    w.put_var_bytes(id.cert_der());
    w.put_var_bytes(id.key_pkcs8_der());
    st.put_key(
        purpose,
        1,
        &zeroize::Zeroizing::new(w.into_bytes()),
        crate::util::now_unix(),
    )?;
    Ok(id)
}

/// A client configuration for `trust` (`None` for plain TCP), presenting `identity`
/// when given (mutual pinning).
pub fn client_config(
    trust: &Trust,
    identity: Option<&SelfSigned>,
) -> Result<Option<Arc<tacit_net::tls::ClientConfig>>> {
    let Some(check) = trust.check()? else {
        return Ok(None);
    };
    Ok(Some(match identity {
        Some(id) => id.client_config_checking_server(check)?,
        None => tacit_net::tls::checked_server_client(check)?,
    }))
}
