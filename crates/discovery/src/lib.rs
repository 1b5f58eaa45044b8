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
//!   roots' revocation lists ([`blessing::revocation`]);
//! * [`stored`]: the revocation lists kept in a `tacit_store::Store`.
//!
//! # Embedding (the library API)
//!
//! What `tacit discover` runs, as async builders on tokio with typed events and one
//! [`Error`]:
//!
//! * [`Advertiser`] (the paper's service): serves the handshakes, makes a fresh
//!   advertisement every refresh period and publishes it over mDNS;
//! * [`Browser`] (the client): finds and opens the advertisements it may read, then
//!   0-RTT ([`Browser::zero_rtt`]) or private mutual authentication / SIGMA-I at an
//!   address ([`Browser::connect`]);
//! * [`Authority`] (the IBE root online): prefix keys for proven blessings, revocation
//!   lists; its clients are [`authority::fetch_prefix_key`] and
//!   [`authority::fetch_revocations`].
//!
//! A camera that only `Home/*` may find, and a phone under `Home` that finds it and
//! talks to it with 0-RTT, over loopback (the prefix keys extracted locally here; a
//! deployment fetches them from an [`Authority`]):
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use tacit_crypto::rng::SecureRng;
//! use tacit_discovery::blessing::{Principal, TrustedRoots};
//! use tacit_discovery::handshake::{Credentials, PrefixCredentials};
//! use tacit_discovery::prefix::{Prefix, PrefixAuthority};
//! use tacit_discovery::{Advertiser, Browser};
//!
//! const UNTIL: u64 = 4_102_444_800; // the blessings' expiry (2100)
//! let mut rng = SecureRng::from_os();
//! let (home, root) = Principal::new_root(&mut rng, "Home", UNTIL)?;
//! let mut roots = TrustedRoots::new();
//! roots.add("Home", home.public_key())?;
//! let ibe = PrefixAuthority::generate(&mut rng);
//! let mpk = Arc::new(ibe.public().clone());
//! // A member Home/<name> accepting peers under Home/*, with its name's prefix key.
//! let mut member = |name: &str| -> Result<_, Box<dyn std::error::Error>> {
//!     let me = Arc::new(Principal::generate(&mut rng));
//!     let blessing = home.bless(&root, &me.public_key(), name, UNTIL, vec![])?;
//!     let key = ibe.extract(&Prefix::parse(blessing.unverified_name().as_str())?, &mut rng)?;
//!     let creds = Credentials::new(me, blessing, roots.clone(), "Home/*".parse()?);
//!     Ok((creds, PrefixCredentials::new(mpk.clone(), Some(key))))
//! };
//! let (camera, camera_keys) = member("Camera")?;
//! let (phone, phone_keys) = member("Phone")?;
//!
//! let camera = Advertiser::builder(camera, camera_keys)
//!     .respond(|client, _request| format!("hello {client}").into_bytes())
//!     .bind("127.0.0.1:0")
//!     .await?;
//! let (addr, advert) = (camera.local_addr(), camera.advert());
//! tokio::spawn(camera.serve());
//!
//! let phone = Browser::builder(phone).prefix(phone_keys).build();
//! let seen = phone.open(&advert, Some(addr))?; // from mDNS: phone.browse().await?
//! assert_eq!(seen.name(), "Home/Camera");
//! let reply = phone.zero_rtt(&seen, b"status?").await?;
//! assert_eq!(reply.response, b"hello Home/Phone");
//! # Ok(()) }
//! ```
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
