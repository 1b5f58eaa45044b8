//! `tacit demo`: two local parties run every subsystem end to end over loopback and
//! print what each learned. Each subsystem's scene lives in its folder
//! (`psi/demo.rs`, `drop/demo.rs`, `discovery/demo.rs`, `pir/demo.rs`); this file only runs them in
//! order.

use anyhow::Result;
use clap::Args;
use rand_core::RngCore;
use tacit_crypto::rng::SecureRng;
use tacit_crypto::{GroupId, P256, Ristretto255};

/// Options of the demo.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// The group.
    #[arg(long, default_value = "ristretto255", value_parser = |s: &str| s.parse::<GroupId>())]
    pub group: GroupId,
    /// Contacts in Bob's generated address book.
    #[arg(long, default_value_t = 1000)]
    pub contacts: u32,
    /// Seed for the generated sets (keys and blinds always come from the OS).
    #[arg(long, default_value_t = 2026)]
    pub seed: u64,
}

pub fn run(a: DemoArgs) -> Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    match a.group {
        GroupId::Ristretto255 => {
            rt.block_on(crate::psi::demo::psi_demo::<Ristretto255>(a.contacts, a.seed))?;
            rt.block_on(crate::drop::demo::drop_demo::<Ristretto255>(a.contacts, a.seed))?;
        }
        GroupId::P256 => {
            rt.block_on(crate::psi::demo::psi_demo::<P256>(a.contacts, a.seed))?;
            rt.block_on(crate::drop::demo::drop_demo::<P256>(a.contacts, a.seed))?;
        }
    }
    rt.block_on(crate::discovery::demo::discovery_demo())?;
    rt.block_on(crate::pros::demo::schedule_demo())?;
    rt.block_on(crate::mpc::demo::gmw_demo())?;
    crate::pir::demo::hotspot_demo()
}

/// A random US-style phone number for generated address books.
pub fn phone(rng: &mut SecureRng) -> String {
    format!("1555{:07}", rng.next_u32() % 10_000_000)
}
