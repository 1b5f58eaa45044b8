//! The triple-source options the GMW commands share (`tacit mpc run`, `tacit schedule
//! --engine gmw`, `tacit mpc psi`), turned into the library's [`Triples`].

use super::cmd::{TokenLinkArgs, TriplesArg, token_access};
use anyhow::{Context, Result, anyhow};
use clap::Args;
use std::path::{Path, PathBuf};
use tacit_crypto::sign::VerifyingKey;
use tacit_mpc::Party;
use tacit_mpc::service::Triples;
use tacit_mpc::triples::token::TokenTrust;

pub use tacit_mpc::service::Source;

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

impl TripleOpts {
    /// Party a's token access (`--token`, `--token-pin`, `--pool`; the link key
    /// from the store).
    pub fn access(&self, store: Option<&Path>) -> Result<tacit_mpc::service::TokenAccess> {
        let addr = self
            .link
            .token
            .as_deref()
            .ok_or_else(|| anyhow!("the listening party with --triples token needs --token ADDR"))?;
        let access = token_access(store, addr, self.link.token_pin.as_deref())?;
        Ok(match &self.pool {
            Some(p) => access.pool(p),
            None => access,
        })
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

    /// The library's triple source of `party` (a: the listening side).
    pub fn triples(&self, party: Party, store: Option<&Path>) -> Result<Triples> {
        Ok(match (self.triples, party) {
            (TriplesArg::Ot, _) => Triples::Ot,
            (TriplesArg::Token, Party::A) => Triples::Token(self.access(store)?),
            (TriplesArg::Token, Party::B) => Triples::TokenPeer(self.trust()?),
        })
    }

    /// The source for `party` (a: the listening side), its token link connected.
    pub async fn source(&self, party: Party, store: Option<&Path>) -> Result<Source> {
        let none: tacit_mpc::service::Events = std::sync::Arc::new(|_| {});
        Ok(self.triples(party, store)?.source(party, &none).await?)
    }
}
