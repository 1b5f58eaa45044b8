//! mDNS / DNS-SD discovery with the `mdns-sd` crate.
//!
//! An advertisement carries nothing that identifies its owner: the instance name and
//! host name are random per session, and the TXT record holds only the protocol
//! version. Discovery returns socket addresses; who is behind them is learned only by
//! the authenticated protocol that follows.

use mdns_sd::{IfKind, ServiceDaemon, ServiceEvent, ServiceInfo};
use std::collections::BTreeSet;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

/// PrivateDrop's service type.
pub const DROP_SERVICE: &str = "_tacit-drop._tcp.local.";

/// Which interfaces mDNS uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// All interfaces (a real local network).
    All,
    /// Loopback only (tests, and a loopback-only network namespace).
    Loopback,
}

/// mDNS errors.
#[derive(Debug, thiserror::Error)]
#[error("mDNS: {0}")]
pub struct MdnsError(String);

fn err(e: impl core::fmt::Display) -> MdnsError {
    MdnsError(e.to_string())
}

fn daemon(scope: Scope) -> Result<ServiceDaemon, MdnsError> {
    let d = ServiceDaemon::new().map_err(err)?;
    if scope == Scope::Loopback {
        d.disable_interface(IfKind::All).map_err(err)?;
        d.enable_interface(IfKind::LoopbackV4).map_err(err)?;
    }
    Ok(d)
}

/// A registered advertisement; withdrawn when dropped.
pub struct Advertisement {
    daemon: ServiceDaemon,
    fullname: String,
}

impl core::fmt::Debug for Advertisement {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Advertisement({})", self.fullname)
    }
}

impl Advertisement {
    /// The instance's full DNS-SD name (random).
    pub fn fullname(&self) -> &str {
        &self.fullname
    }
}

impl Drop for Advertisement {
    fn drop(&mut self) {
        let _ = self.daemon.unregister(&self.fullname);
        let _ = self.daemon.shutdown();
    }
}

fn random_label(seed: &[u8; 8]) -> String {
    seed.iter().map(|b| format!("{b:02x}")).collect()
}

/// Advertises `service` on `port` under a random instance and host name. `addrs`
/// empty means the addresses of the enabled interfaces. `random` provides the names'
/// randomness.
pub fn advertise(
    service: &str,
    port: u16,
    addrs: &[IpAddr],
    scope: Scope,
    random: [u8; 8],
) -> Result<Advertisement, MdnsError> {
    let d = daemon(scope)?;
    let label = random_label(&random);
    let host = format!("tacit-{label}.local.");
    let props: &[(&str, &str)] = &[("v", "1")];
    let info = if addrs.is_empty() {
        ServiceInfo::new(service, &label, &host, (), port, props)
            .map_err(err)?
            .enable_addr_auto()
    } else {
        ServiceInfo::new(service, &label, &host, addrs, port, props).map_err(err)?
    };
    let fullname = info.get_fullname().to_string();
    d.register(info).map_err(err)?;
    Ok(Advertisement { daemon: d, fullname })
}

/// Browses for `service` for `wait`, returning every resolved IPv4 address.
pub fn browse(service: &str, scope: Scope, wait: Duration) -> Result<Vec<SocketAddr>, MdnsError> {
    let d = daemon(scope)?;
    let rx = d.browse(service).map_err(err)?;
    let deadline = Instant::now() + wait;
    let mut found = BTreeSet::new();
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        match rx.recv_timeout(left) {
            Ok(ServiceEvent::ServiceResolved(info)) => {
                for ip in info.get_addresses_v4() {
                    if scope == Scope::All || ip.is_loopback() {
                        found.insert(SocketAddr::new(IpAddr::V4(ip), info.get_port()));
                    }
                }
            }
            Ok(_) => {}
            Err(_) => break,
        }
    }
    let _ = d.stop_browse(service);
    let _ = d.shutdown();
    Ok(found.into_iter().collect())
}
