//! The crate's error for the embedding API ([`crate::Advertiser`], [`crate::Browser`],
//! [`crate::Authority`]): every module's error, with the messages the CLI prints.

use crate::{blessing, carrier, handshake, root_service, service};
use std::path::PathBuf;

/// Why an advertiser, a browser or the IBE root authority failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A networked handshake failed ([`service::Error`]).
    #[error(transparent)]
    Service(#[from] service::Error),
    /// A key request or a revocation-list exchange failed ([`root_service::Error`]).
    #[error(transparent)]
    Root(#[from] root_service::Error),
    /// mDNS or the auxiliary advertisement service failed ([`carrier::Error`]).
    #[error(transparent)]
    Carrier(#[from] carrier::Error),
    /// A handshake or an advertisement was refused ([`handshake::Error`]).
    #[error(transparent)]
    Handshake(#[from] handshake::Error),
    /// A blessing, trusted root or revocation list is unusable.
    #[error(transparent)]
    Blessing(#[from] blessing::Error),
    /// The network failed (binding a listener, most often).
    #[error(transparent)]
    Net(#[from] tacit_net::Error),
    /// A store could not be opened.
    #[error("cannot open {}", path.display())]
    StoreOpen {
        /// The store's path.
        path: PathBuf,
        /// Why.
        #[source]
        source: tacit_store::Error,
    },
    /// A store operation failed.
    #[error(transparent)]
    Store(#[from] tacit_store::Error),
    /// The authority trusts one root name with several keys that are not marked as
    /// one root's rollover ([`crate::authority::AuthorityBuilder::rollover`]).
    #[error(
        "the root name {name} is trusted with {keys} keys; prefix keys name only names, so members under one \
         would read what is encrypted for the others (trust one key per name, or mark the keys as one root's rollover)"
    )]
    AmbiguousRootName {
        /// The root name.
        name: String,
        /// How many keys it is trusted with.
        keys: usize,
    },
    /// The advertisement's validity is shorter than [`crate::advertiser::MIN_REFRESH`].
    #[error("an advertisement must stay valid at least {} s", crate::advertiser::MIN_REFRESH.as_secs())]
    RefreshTooShort,
    /// Private mutual authentication, or reading private advertisements, needs a
    /// prefix key ([`crate::browser::BrowserBuilder::prefix`]).
    #[error("private mutual authentication needs a prefix key (or use SIGMA-I)")]
    NoPrefixKey,
    /// A visible service whose advertisement carried no address.
    #[error("the advertisement of {0} carried no address")]
    NoAddress(String),
}
