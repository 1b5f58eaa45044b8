//! Private mutual authentication and private service discovery, after Wu, Taly,
//! Shankar and Boneh, "Privacy, Discovery, and Authentication for the Internet of
//! Things" (ESORICS 2016).
//!
//! * [`blessing`]: principals, hierarchical names bound to Ed25519 keys by
//!   certificate chains, prefix policies;
//! * [`ibe`]: Boneh–Boyen BB2 identity-based encryption over BLS12-381, CCA-secure by
//!   the Fujisaki–Okamoto transform;
//! * [`prefix`]: prefix encryption built from the IBE (paper §3.1).
#![deny(missing_docs)]

pub mod blessing;
pub mod ibe;
pub mod prefix;
