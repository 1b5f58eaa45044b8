//! The home scenario shared by `tacit demo` and `tacit bench discovery`: a camera
//! `Home/Devices/Camera` visible to `Home/*`, the owner's phone `Home/Owner/Phone`
//! and a visitor's phone `Street/Visitor/Phone`, each with a three-link chain and a
//! prefix key from one IBE root authority.

use anyhow::Result;
use std::sync::Arc;
use tacit_crypto::rng::SecureRng;
use tacit_discovery::blessing::{Blessing, Policy, Principal, TrustedRoots};
use tacit_discovery::handshake::{Credentials, PrefixCredentials};
use tacit_discovery::prefix::{Prefix, PrefixAuthority};

pub const YEAR: u64 = 365 * 24 * 3600;

pub use crate::util::now_unix as now;

pub struct Party {
    pub creds: Credentials,
    pub prefix: PrefixCredentials,
}

pub struct World {
    pub camera: Party,
    pub owner: Party,
    pub visitor: Party,
}

fn party(
    rng: &mut SecureRng,
    roots: &TrustedRoots,
    ibe: &PrefixAuthority,
    root: &(Principal, Blessing),
    path: [&str; 2],
    policy: &str,
) -> Result<Party> {
    let until = now() + YEAR;
    let mid = Principal::generate(rng);
    let mid_b = root.0.bless(&root.1, &mid.public_key(), path[0], until, vec![])?;
    let me = Principal::generate(rng);
    let b = mid.bless(&mid_b, &me.public_key(), path[1], until, vec![])?;
    let key = ibe.extract(&Prefix::parse(b.unverified_name().as_str())?, rng)?;
    Ok(Party {
        creds: Credentials {
            principal: Arc::new(me),
            blessing: b,
            roots: roots.clone(),
            policy: policy.parse::<Policy>()?,
        },
        prefix: PrefixCredentials {
            mpk: Arc::new(ibe.public().clone()),
            key: Some(Arc::new(key)),
        },
    })
}

pub fn home_world(rng: &mut SecureRng) -> Result<World> {
    let until = now() + YEAR;
    let home = Principal::new_root(rng, "Home", until)?;
    let street = Principal::new_root(rng, "Street", until)?;
    let mut roots = TrustedRoots::new();
    roots.add("Home", home.0.public_key())?;
    roots.add("Street", street.0.public_key())?;
    let ibe = PrefixAuthority::generate(rng);
    Ok(World {
        camera: party(rng, &roots, &ibe, &home, ["Devices", "Camera"], "Home/*")?,
        owner: party(rng, &roots, &ibe, &home, ["Owner", "Phone"], "Home/Devices/*")?,
        visitor: party(rng, &roots, &ibe, &street, ["Visitor", "Phone"], "Home/*")?,
    })
}
