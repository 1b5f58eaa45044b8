//! Helpers shared by the networked tests: an idle flood from one address (a
//! deviating client that takes connection slots and sends nothing), and a home with
//! members whose credentials come from real time.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tacit_crypto::rng::SecureRng;
use tacit_discovery::blessing::{Blessing, Principal, TrustedRoots};
use tacit_discovery::handshake::{Credentials, PrefixCredentials};
use tacit_discovery::prefix::{Prefix, PrefixAuthority};

/// Opens `n` idle connections to `addr` from 127.0.0.2 and keeps them.
pub async fn flood(addr: SocketAddr, n: usize) -> Vec<tokio::net::TcpStream> {
    let mut idle = Vec::new();
    for _ in 0..n {
        if let Ok(c) = tacit_net::guard::connect_from("127.0.0.2".parse().unwrap(), addr).await {
            idle.push(c);
        }
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    idle
}

/// Blessings' expiry (2100-01-01).
pub const UNTIL: u64 = 4_102_444_800;

/// Two naming roots, Home and Street, trusted by everyone, and one IBE root.
pub struct Home {
    pub rng: SecureRng,
    pub home: (Principal, Blessing),
    pub street: (Principal, Blessing),
    pub roots: TrustedRoots,
    pub ibe: Arc<PrefixAuthority>,
}

impl Home {
    pub fn new(seed: u8) -> Home {
        let mut rng = SecureRng::from_seed([seed; 32]);
        let home = Principal::new_root(&mut rng, "Home", UNTIL).unwrap();
        let street = Principal::new_root(&mut rng, "Street", UNTIL).unwrap();
        let mut roots = TrustedRoots::new();
        roots.add("Home", home.0.public_key()).unwrap();
        roots.add("Street", street.0.public_key()).unwrap();
        let ibe = Arc::new(PrefixAuthority::generate(&mut rng));
        Home {
            rng,
            home,
            street,
            roots,
            ibe,
        }
    }

    /// A member `Home/ext` (or `Street/ext`) with `policy`, its own copy of the trusted
    /// roots, and no prefix key yet.
    pub fn member(&mut self, under_home: bool, ext: &str, policy: &str) -> Credentials {
        let (root, root_b) = if under_home { &self.home } else { &self.street };
        let me = Principal::generate(&mut self.rng);
        let b = root.bless(root_b, &me.public_key(), ext, UNTIL, vec![]).unwrap();
        let roots = TrustedRoots::from_file_bytes(&self.roots.to_file_bytes()).unwrap();
        Credentials::new(Arc::new(me), b, roots, policy.parse().unwrap())
    }

    /// The member's prefix key, extracted locally.
    pub fn keys(&mut self, c: &Credentials) -> PrefixCredentials {
        let name = c.blessing.unverified_name();
        let key = self
            .ibe
            .extract(&Prefix::parse(name.as_str()).unwrap(), &mut self.rng)
            .unwrap();
        PrefixCredentials::new(Arc::new(self.ibe.public().clone()), Some(key))
    }
}
