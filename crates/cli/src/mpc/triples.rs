//! The triple-source options the GMW commands share (`tacit mpc run`, `tacit schedule
//! --engine gmw`, `tacit mpc psi`), and one source type over the three kinds a CLI
//! party uses.

use super::cmd::{TokenLinkArgs, TriplesArg, connect_token, token_link};
use anyhow::{Context, Result, anyhow};
use clap::Args;
use std::path::{Path, PathBuf};
use tacit_crypto::rng::SecureRng;
use tacit_crypto::sign::VerifyingKey;
use tacit_mpc::driver::TripleSource;
use tacit_mpc::messages::TripleKind;
use tacit_mpc::triples::TripleShares;
use tacit_mpc::triples::ot::OtSource;
use tacit_mpc::triples::token::TokenTrust;
use tacit_mpc::triples::token::holder::{TcpTokenLink, TokenHolder, TokenPeer};
use tacit_mpc::{Error, Party};
use tacit_net::FramedConn;

/// Where the GMW triples come from (both parties must choose the same).
#[derive(Debug, Clone, Args)]
pub struct TripleOpts {
    /// GMW triple source: OT extension between the two, or the trusted token (the
    /// listening party talks to the token with --token, the connecting one checks its
    /// certificate with --trust-ca).
    #[arg(long, value_enum, default_value = "ot")]
    pub triples: TriplesArg,
    #[command(flatten)]
    pub link: TokenLinkArgs,
    /// Listening party with --triples token: the folder of stored c_A sequences
    /// (default: in memory; created mode 0700; one that is not yours or that group
    /// or others may write is refused). Sessions running at once, of this process or
    /// others, may share it: each claims the sequences it uses (TOKEN-D-LOG.ca locked
    /// and renamed .claim), gives back those a peer left unused, and claims left by a
    /// crashed process are removed at the next start.
    #[arg(long, value_name = "DIR")]
    pub pool: Option<PathBuf>,
    /// Connecting party with --triples token: the manufacturer CA key to trust (hex).
    #[arg(long, value_name = "HEX")]
    pub trust_ca: Option<String>,
    /// Connecting party with --triples token: accept a token whose certificate says
    /// "software". Such a token is only as trustworthy as the host it runs on, which
    /// can read every seed (yours included): accept one only if that host is neither
    /// party. Without this flag only hardware tokens are accepted.
    #[arg(long)]
    pub accept_software_token: bool,
}

/// A triple source of any kind.
pub enum Source {
    /// OT extension.
    Ot(OtSource<SecureRng>),
    /// Party a's token link.
    Holder(Box<TokenHolder<TcpTokenLink>>),
    /// Party b's side of the token.
    Peer(TokenPeer<SecureRng>),
}

impl TripleSource for Source {
    fn kind(&self) -> TripleKind {
        match self {
            Source::Ot(s) => s.kind(),
            Source::Holder(s) => s.kind(),
            Source::Peer(s) => s.kind(),
        }
    }

    async fn triples(&mut self, conn: &mut FramedConn, party: Party, count: usize) -> Result<TripleShares, Error> {
        match self {
            Source::Ot(s) => s.triples(conn, party, count).await,
            Source::Holder(s) => s.triples(conn, party, count).await,
            Source::Peer(s) => s.triples(conn, party, count).await,
        }
    }
}

impl TripleOpts {
    /// Party a's token link and pool (`--token`, `--token-pin`, `--pool`; the link key
    /// from the store).
    pub async fn holder(&self, store: Option<&Path>) -> Result<TokenHolder<TcpTokenLink>> {
        let addr = self
            .link
            .token
            .as_deref()
            .ok_or_else(|| anyhow!("the listening party with --triples token needs --token ADDR"))?;
        let (mut trust, id) = token_link(store, addr, self.link.token_pin.as_deref())?;
        let mut h = connect_token(addr, self.pool.as_deref(), &mut trust, &id).await?;
        // One holder per session: its token connection ends with the setup, so the
        // online phase holds none of the token's --max-connections.
        h.close_after_setup = true;
        Ok(h)
    }

    /// Party b's trust in tokens (`--trust-ca`, `--accept-software-token`), now.
    pub fn trust(&self) -> Result<TokenTrust> {
        let hexkey = self
            .trust_ca
            .as_deref()
            .ok_or_else(|| anyhow!("the connecting party with --triples token needs --trust-ca HEX"))?;
        let ca = VerifyingKey::from_bytes(&hex::decode(hexkey.trim()).context("--trust-ca is not hex")?)
            .map_err(|e| anyhow!("--trust-ca: {e}"))?;
        let t = TokenTrust::new(ca, crate::util::now_unix());
        Ok(if self.accept_software_token {
            t.accepting_software()
        } else {
            t
        })
    }

    /// The source for `party` (a: the listening side).
    pub async fn source(&self, party: Party, store: Option<&Path>) -> Result<Source> {
        Ok(match (self.triples, party) {
            (TriplesArg::Ot, _) => Source::Ot(OtSource::new(SecureRng::from_os())),
            (TriplesArg::Token, Party::A) => Source::Holder(Box::new(self.holder(store).await?)),
            (TriplesArg::Token, Party::B) => Source::Peer(TokenPeer::new(self.trust()?, SecureRng::from_os())),
        })
    }
}
