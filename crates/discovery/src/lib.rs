//! Private mutual authentication and private service discovery, after Wu, Taly,
//! Shankar and Boneh, "Privacy, Discovery, and Authentication for the Internet of
//! Things" (ESORICS 2016).
//!
//! * [`blessing`]: principals, hierarchical names bound to Ed25519 keys by
//!   certificate chains, prefix policies;
//! * [`ibe`]: Boneh–Boyen BB2 identity-based encryption over BLS12-381, CCA-secure by
//!   the Fujisaki–Okamoto transform;
//! * [`prefix`]: prefix encryption built from the IBE (paper §3.1);
//! * [`handshake`]: SIGMA-I, private mutual authentication (§4, Fig. 1) and private
//!   service discovery with 0-RTT (§5, Fig. 2), sans-I/O;
//! * [`carrier`]: advertisements in mDNS TXT records, or behind a short pointer
//!   served by an auxiliary service;
//! * [`service`]: the handshakes over framed TCP (the async shell);
//! * [`key_request`]: the IBE root extracts a prefix key only for a requester that
//!   proves a valid blessing for the name over a fresh challenge (sans-I/O);
//! * [`root_service`]: the IBE root authority online: key requests and the naming
//!   roots' revocation lists ([`blessing::revocation`]).
#![deny(missing_docs)]
// Only `ibe::lines` (the wiped Miller-loop lines of a secret key) calls into blst.
#![deny(unsafe_code)]

pub mod advertiser;
pub mod authority;
pub mod blessing;
pub mod browser;
pub mod carrier;
mod error;
pub mod handshake;
pub mod ibe;
pub mod key_request;
pub mod prefix;
pub mod root_service;
pub mod service;
pub mod stored;

pub use advertiser::{Advertiser, AdvertiserBuilder, AdvertiserEvent};
pub use authority::{Authority, AuthorityBuilder, AuthorityEvent};
pub use browser::{BrowseEvent, Browsed, Browser, BrowserBuilder, Visible};
pub use error::Error;
