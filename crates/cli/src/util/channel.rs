//! The project's channel, shared by every command that talks to a peer: TLS 1.3
//! (rustls) with self-signed Ed25519 keys that the other side pins (`--pin`) or
//! records on first use (`--tofu`, as SSH does). Keys live in the store, one per
//! purpose (`psi-tls-identity`, …); recorded peer keys under a name per subsystem
//! and address (`psi/HOST:PORT`, …). See `docs/wire.md` ("The channel").
//!
//! The channel itself is the library's [`tacit_net::channel`] (re-exported here);
//! this module keeps what belongs to the command line: the clap options
//! ([`ChannelArgs`]), fingerprint parsing, and opening the `--store`.

use anyhow::Result;
use std::sync::Arc;
use tacit_net::Protocol;
use tacit_net::tls::SelfSigned;
use tacit_store::Store;

pub use tacit_net::channel::{PeerKey, Trust};

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
    Ok(tacit_net::channel::tls_identity(st, purpose, name)?)
}

/// A client configuration for `trust` (`None` for plain TCP), presenting `identity`
/// when given (mutual pinning).
pub fn client_config(
    trust: &Trust,
    identity: Option<&SelfSigned>,
) -> Result<Option<Arc<tacit_net::tls::ClientConfig>>> {
    Ok(tacit_net::channel::client_config(trust, identity)?)
}

/// The channel options of a command between two parties: TLS 1.3 by default,
/// plain TCP only with `--plain-tcp`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ChannelArgs {
    /// Run over plain TCP instead of TLS 1.3: nothing is encrypted or authenticated
    /// (an observer of the path reads every message; one who changes a bit changes
    /// the result). For latency measurements only; both parties must give it.
    #[arg(long)]
    pub plain_tcp: bool,
    /// The peer's key (SHA-256 fingerprint, 64 hex digits, as the peer prints it).
    /// Connecting: the listening party's key; without it the key is recorded on first
    /// use and required from then on (as SSH does). Listening: the keys of the
    /// parties admitted (repeat the flag); without it any key is admitted and its
    /// fingerprint printed.
    #[arg(long = "pin", value_name = "SHA256", conflicts_with = "plain_tcp")]
    pub pin: Vec<String>,
}

impl ChannelArgs {
    /// The pinned fingerprints.
    pub fn pins(&self) -> Result<Vec<[u8; 32]>> {
        self.pin.iter().map(|p| parse_fingerprint(p)).collect()
    }
}

/// A store's TLS identity and how it checks peers, for one command between two
/// parties (see [`ChannelArgs`]): the library's [`tacit_net::channel::Channel`],
/// made from the command line.
pub struct Channel(tacit_net::channel::Channel);

impl std::ops::Deref for Channel {
    type Target = tacit_net::channel::Channel;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl std::ops::DerefMut for Channel {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

impl Channel {
    /// The channel of `args`: opens the store (`store`: the `--store` argument) and
    /// its identity for `purpose` unless plain TCP was asked for.
    pub fn new(
        args: &ChannelArgs,
        store: Option<&std::path::Path>,
        purpose: &str,
        prefix: &'static str,
        tls_name: &'static str,
        protocol: Protocol,
    ) -> Result<Self> {
        if args.plain_tcp {
            return Ok(Channel(tacit_net::channel::Channel::insecure_plain_tcp(
                prefix, tls_name, protocol,
            )));
        }
        let path = crate::util::store_path(store)?;
        let st = crate::util::open_store(&path)?;
        let pins = args.pins()?;
        Ok(Channel(tacit_net::channel::Channel::tls(
            st, purpose, &pins, prefix, tls_name, protocol,
        )?))
    }

    /// Connects to `addr` ([`tacit_net::channel::Channel::connect`]).
    pub async fn connect(
        &mut self,
        addr: &str,
        cfg: &tacit_net::NetConfig,
    ) -> Result<(tacit_net::FramedConn, PeerKey)> {
        Ok(self.0.connect(addr, cfg).await?)
    }

    /// The server side of this channel (shareable between tasks).
    pub fn acceptor(&self) -> Result<Acceptor> {
        Ok(Acceptor(self.0.acceptor()?))
    }

    /// This party's key fingerprint (TLS).
    pub fn fingerprint(&self) -> Result<Option<[u8; 32]>> {
        Ok(self.0.fingerprint()?)
    }
}

/// The server side of a [`Channel`] ([`tacit_net::channel::Acceptor`]).
#[derive(Clone)]
pub struct Acceptor(tacit_net::channel::Acceptor);

impl Acceptor {
    /// Runs the server side of the handshake on an accepted connection and checks
    /// the peer's greeting (only the greeting on plain TCP).
    pub async fn accept(&self, conn: tacit_net::FramedConn) -> Result<(tacit_net::FramedConn, PeerKey)> {
        Ok(self.0.accept(conn).await?)
    }
}
