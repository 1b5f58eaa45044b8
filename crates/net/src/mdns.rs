//! mDNS / DNS-SD discovery with the `mdns-sd` crate.
//!
//! An advertisement carries nothing that identifies its owner: the instance name and
//! host name are random per session, and the TXT record holds only what the caller
//! puts there (PrivateDrop: the protocol version; private service discovery: an
//! encrypted advertisement or a pointer to one, see `tacit_discovery::carrier`).
//! Discovery returns socket addresses and TXT entries; who is behind them is learned
//! only by the authenticated protocol that follows.
//!
//! TXT values are raw bytes: `mdns-sd` 0.21 keeps a [`TxtProperty`] value as a
//! `Vec<u8>` on both the sending and the receiving side and splits each
//! `key=value` string at its *first* `=`, so a value may hold any byte, `=` and NUL
//! included. No base64 is needed. Keys must be printable ASCII without `=` (RFC 6763
//! §6.4) and each `key=value` string is at most 255 bytes (RFC 6763 §6.1).
//!
//! Every daemon this module starts is shut down before the call (or, for an
//! [`Advertisement`], its drop) returns, and the shutdown is confirmed by the daemon
//! thread, so browsing leaves no thread behind.

use mdns_sd::{IfKind, ServiceDaemon, ServiceEvent, ServiceInfo, TxtProperties, TxtProperty};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

/// PrivateDrop's service type.
pub const DROP_SERVICE: &str = "_tacit-drop._tcp.local.";

/// The service type of private service discovery (Wu, Taly, Shankar, Boneh, §5 and
/// §6.3): instances carry an encrypted advertisement, or a pointer to one, in TXT.
pub const DISCOVERY_SERVICE: &str = "_tacit-disc._tcp.local.";

/// The longest `key=value` string of a TXT record (one length byte, RFC 6763 §6.1).
pub const TXT_STRING_MAX: usize = 255;

/// How long a caller waits for the daemon thread to confirm its shutdown.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(2);

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

/// A running daemon, shut down (and the shutdown awaited) when dropped.
struct Daemon(ServiceDaemon);

impl Daemon {
    fn start(scope: Scope) -> Result<Daemon, MdnsError> {
        let d = Daemon(ServiceDaemon::new().map_err(err)?);
        if scope == Scope::Loopback {
            d.0.disable_interface(IfKind::All).map_err(err)?;
            d.0.enable_interface(IfKind::LoopbackV4).map_err(err)?;
        }
        Ok(d)
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        // The daemon thread answers `Shutdown` as the last thing it does before it
        // returns; waiting for the answer means no daemon thread outlives the call.
        if let Ok(status) = self.0.shutdown() {
            let _ = status.recv_timeout(SHUTDOWN_WAIT);
        }
    }
}

/// A registered advertisement; withdrawn (with a DNS-SD goodbye) when dropped.
pub struct Advertisement {
    /// Shut down after `drop` has unregistered the instance.
    daemon: Daemon,
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
        if let Ok(status) = self.daemon.0.unregister(&self.fullname) {
            // The goodbye is sent when the command runs; wait briefly so that it
            // leaves before the daemon shuts down.
            let _ = status.recv_timeout(SHUTDOWN_WAIT);
        }
        // `self.daemon` shuts down when dropped.
    }
}

fn random_label(seed: &[u8; 8]) -> String {
    seed.iter().map(|b| format!("{b:02x}")).collect()
}

/// Checks TXT entries before handing them to `mdns-sd`, with messages that say which
/// entry is wrong.
fn check_txt(txt: &[(String, Vec<u8>)]) -> Result<(), MdnsError> {
    let mut keys = HashSet::new();
    for (key, val) in txt {
        if key.is_empty() || !key.bytes().all(|b| (0x20..=0x7e).contains(&b) && b != b'=') {
            return Err(MdnsError(format!(
                "TXT key {key:?} must be non-empty printable ASCII without '='"
            )));
        }
        let len = key.len() + 1 + val.len();
        if len > TXT_STRING_MAX {
            return Err(MdnsError(format!(
                "TXT entry {key:?} is {len} bytes long; a TXT string holds at most {TXT_STRING_MAX}"
            )));
        }
        if !keys.insert(key.to_ascii_lowercase()) {
            return Err(MdnsError(format!("TXT key {key:?} appears twice")));
        }
    }
    Ok(())
}

/// Advertises `service` on `port` under a random instance and host name. `addrs`
/// empty means the addresses of the enabled interfaces. `random` provides the names'
/// randomness. The TXT record is `v=1`.
pub fn advertise(
    service: &str,
    port: u16,
    addrs: &[IpAddr],
    scope: Scope,
    random: [u8; 8],
) -> Result<Advertisement, MdnsError> {
    advertise_txt(service, port, addrs, &[("v".into(), b"1".to_vec())], scope, random)
}

/// Advertises `service` on `port` (the SRV record's port) under a random instance and
/// host name, with the TXT record made of `txt`: one `key=value` string per entry, in
/// this order, values as raw bytes. `addrs` empty means the addresses of the enabled
/// interfaces; `random` provides the names' randomness.
///
/// Refuses keys that are empty, not printable ASCII, contain `=` or repeat (ignoring
/// case, RFC 6763 §6.4), and entries over [`TXT_STRING_MAX`] bytes.
pub fn advertise_txt(
    service: &str,
    port: u16,
    addrs: &[IpAddr],
    txt: &[(String, Vec<u8>)],
    scope: Scope,
    random: [u8; 8],
) -> Result<Advertisement, MdnsError> {
    check_txt(txt)?;
    let props: Vec<TxtProperty> = txt.iter().map(|(k, v)| TxtProperty::from((k.as_str(), v))).collect();
    let label = random_label(&random);
    let host = format!("tacit-{label}.local.");
    let info = if addrs.is_empty() {
        ServiceInfo::new(service, &label, &host, (), port, props)
            .map_err(err)?
            .enable_addr_auto()
    } else {
        ServiceInfo::new(service, &label, &host, addrs, port, props).map_err(err)?
    };
    let fullname = info.get_fullname().to_string();
    let daemon = Daemon::start(scope)?;
    daemon.0.register(info).map_err(err)?;
    Ok(Advertisement { daemon, fullname })
}

/// What an advertisement of a service listening on `listen` should announce, and
/// where ([`reach`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reach {
    /// Where to advertise: [`Scope::Loopback`] when only this machine can connect.
    pub scope: Scope,
    /// The addresses to announce (empty: those of the enabled interfaces, for a
    /// service listening on every interface).
    pub addrs: Vec<IpAddr>,
    /// One line for the user when the advert reaches less than was asked for.
    pub note: Option<String>,
}

/// Which addresses an advertisement of a service listening on `listen` may announce
/// under `scope`: only addresses others can connect to (issue 28). A service on
/// every interface announces the interfaces' addresses; one on a loopback address
/// is announced to this machine only, whatever `scope` asked (a note says so); one
/// on another single address announces that address. `Err` holds the one line
/// saying why no advert would help: a loopback-only advert of a non-loopback
/// address, or an IPv6 address (browsers here keep IPv4 addresses only).
pub fn reach(listen: SocketAddr, scope: Scope) -> Result<Reach, String> {
    let ip = listen.ip();
    if ip.is_unspecified() {
        return Ok(Reach {
            scope,
            addrs: vec![],
            note: None,
        });
    }
    if ip.is_ipv6() && !ip.is_loopback() {
        return Err(format!(
            "not advertised over mDNS: listening on {ip} only, and browsers here look for IPv4 addresses              (listen on 0.0.0.0:{port} to be found)",
            port = listen.port()
        ));
    }
    if ip.is_loopback() {
        let v4 = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);
        return Ok(Reach {
            scope: Scope::Loopback,
            addrs: vec![if ip.is_ipv4() { ip } else { v4 }],
            note: (scope == Scope::All).then(|| {
                format!(
                    "listening on {ip} only, so the mDNS advert reaches this machine only;                      to be found from other machines listen on 0.0.0.0:{port}",
                    port = listen.port()
                )
            }),
        });
    }
    if scope == Scope::Loopback {
        return Err(format!(
            "not advertised over mDNS: --mdns loopback announces loopback addresses only,              and this listens on {ip} (use --mdns all)"
        ));
    }
    Ok(Reach {
        scope,
        addrs: vec![ip],
        note: None,
    })
}

/// One resolved DNS-SD instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The instance's full DNS-SD name (random for tacit's own advertisements).
    pub instance: String,
    /// Its IPv4 addresses (only loopback ones under [`Scope::Loopback`]), sorted.
    pub addrs: Vec<IpAddr>,
    /// The SRV record's port.
    pub port: u16,
    /// The TXT record's entries in record order, values as raw bytes, as `mdns-sd`
    /// leaves them (see [`txt_as_browsed`]): a key without `=` is reported with an
    /// empty value, only the first of entries whose keys repeat (ignoring case) is
    /// kept, and entries whose key is not UTF-8 are dropped.
    pub txt: Vec<(String, Vec<u8>)>,
}

fn txt_entries(props: &TxtProperties) -> Vec<(String, Vec<u8>)> {
    props
        .iter()
        .map(|p| (p.key().to_string(), p.val().unwrap_or_default().to_vec()))
        .collect()
}

/// The entries [`browse_txt`] reports for a TXT record whose RDATA (length-prefixed
/// strings) is `rdata`: what `mdns-sd` 0.21 leaves of it. That crate decodes the
/// record before tacit sees it and keeps **only the first of entries whose keys
/// repeat** (ignoring case) and **drops entries whose key is not UTF-8**; neither
/// is visible to a caller of [`browse_txt`], so no check of ours can refuse such a
/// record (issue 28). Callers must not rely on seeing repeats.
pub fn txt_as_browsed(rdata: &[u8]) -> Vec<(String, Vec<u8>)> {
    txt_entries(&TxtProperties::from(rdata))
}

impl Found {
    /// Every address with the SRV port.
    pub fn socket_addrs(&self) -> Vec<SocketAddr> {
        self.addrs.iter().map(|ip| SocketAddr::new(*ip, self.port)).collect()
    }
}

/// Most instances [`browse_txt`] keeps, and most addresses it keeps per instance:
/// anyone on the network can advertise any number, and what a browse returns must fit
/// in memory (callers cap what they act on further).
pub const MAX_INSTANCES: usize = 1024;
/// Most addresses [`browse_txt`] keeps per instance.
pub const MAX_ADDRS_PER_INSTANCE: usize = 16;

/// Browses for `service` for `wait`, returning every instance resolved in that time
/// (its latest state; instances that said goodbye are left out), sorted by name; at
/// most [`MAX_INSTANCES`] (the first resolved), each with at most
/// [`MAX_ADDRS_PER_INSTANCE`] addresses.
/// Blocks the calling thread for `wait`; the daemon is shut down before returning.
pub fn browse_txt(service: &str, scope: Scope, wait: Duration) -> Result<Vec<Found>, MdnsError> {
    let d = Daemon::start(scope)?;
    let rx = d.0.browse(service).map_err(err)?;
    let deadline = Instant::now() + wait;
    let mut found = BTreeMap::new();
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        match rx.recv_timeout(left) {
            Ok(ServiceEvent::ServiceResolved(info)) => {
                if found.len() >= MAX_INSTANCES && !found.contains_key(info.get_fullname()) {
                    continue;
                }
                let addrs: BTreeSet<IpAddr> = info
                    .get_addresses_v4()
                    .into_iter()
                    .filter(|ip| scope == Scope::All || ip.is_loopback())
                    .map(IpAddr::V4)
                    .take(MAX_ADDRS_PER_INSTANCE)
                    .collect();
                let txt = txt_entries(info.get_properties());
                let entry = Found {
                    instance: info.get_fullname().to_string(),
                    addrs: addrs.into_iter().collect(),
                    port: info.get_port(),
                    txt,
                };
                found.insert(entry.instance.clone(), entry);
            }
            Ok(ServiceEvent::ServiceRemoved(_, fullname)) => {
                found.remove(&fullname);
            }
            Ok(_) => {}
            Err(_) => break,
        }
    }
    let _ = d.0.stop_browse(service);
    drop(d);
    Ok(found.into_values().collect())
}

/// Browses for `service` for `wait`, returning every resolved IPv4 address with the
/// instance's port (only loopback addresses under [`Scope::Loopback`]).
pub fn browse(service: &str, scope: Scope, wait: Duration) -> Result<Vec<SocketAddr>, MdnsError> {
    let found: BTreeSet<SocketAddr> = browse_txt(service, scope, wait)?
        .iter()
        .flat_map(Found::socket_addrs)
        .collect();
    Ok(found.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(k: &str, v: &[u8]) -> (String, Vec<u8>) {
        (k.to_string(), v.to_vec())
    }

    #[test]
    fn adverts_announce_only_addresses_others_reach() {
        let sa = |s: &str| s.parse::<SocketAddr>().unwrap();
        // every interface: the interfaces' addresses, where asked
        let r = reach(sa("0.0.0.0:8770"), Scope::All).unwrap();
        assert_eq!((r.scope, r.addrs.len(), r.note), (Scope::All, 0, None));
        // loopback asked to be seen on the network: this machine only, with a note
        let r = reach(sa("127.0.0.1:8770"), Scope::All).unwrap();
        assert_eq!(r.scope, Scope::Loopback);
        assert_eq!(r.addrs, vec!["127.0.0.1".parse::<IpAddr>().unwrap()]);
        assert!(r.note.unwrap().contains("listen on 0.0.0.0:8770"));
        let r = reach(sa("127.0.0.1:1"), Scope::Loopback).unwrap();
        assert_eq!((r.scope, r.note), (Scope::Loopback, None));
        // one LAN address: that address
        let r = reach(sa("192.0.2.7:8770"), Scope::All).unwrap();
        assert_eq!(r.addrs, vec!["192.0.2.7".parse::<IpAddr>().unwrap()]);
        // useless adverts are not made
        assert!(
            reach(sa("192.0.2.7:8770"), Scope::Loopback)
                .unwrap_err()
                .contains("--mdns all")
        );
        assert!(
            reach(sa("[2001:db8::1]:8770"), Scope::All)
                .unwrap_err()
                .contains("IPv4")
        );
    }

    #[test]
    fn mdns_sd_strips_repeated_and_non_utf8_keys_before_we_see_them() {
        // v=1, V=2 (a repeat ignoring case), \xff k=1 (a key that is not UTF-8), p=ab
        let raw = b"\x03v=1\x03V=2\x04\xffk=1\x04p=ab";
        assert_eq!(txt_as_browsed(raw), vec![entry("v", b"1"), entry("p", b"ab")]);
    }

    #[test]
    fn labels_are_hex_of_the_randomness() {
        assert_eq!(random_label(&[0, 1, 0xab, 0xff, 2, 3, 4, 5]), "0001abff02030405");
    }

    #[test]
    fn binary_values_are_accepted() {
        let all: Vec<u8> = (0..=250).collect();
        check_txt(&[entry("v", b"1"), entry("a0", &[0, b'=', 0xff]), entry("b", &all)]).unwrap();
        check_txt(&[entry("k", &[0; 253])]).unwrap();
        check_txt(&[]).unwrap();
    }

    #[test]
    fn bad_txt_entries_are_refused() {
        for bad in [
            vec![entry("", b"x")],
            vec![entry("a=b", b"x")],
            vec![entry("é", b"x")],
            vec![entry("a\n", b"x")],
            vec![entry("k", &[0; 254])],
            vec![entry("k", b"1"), entry("K", b"2")],
        ] {
            assert!(check_txt(&bad).is_err(), "{bad:?}");
        }
        let e = check_txt(&[entry("k", &[0; 300])]).unwrap_err().to_string();
        assert!(e.contains("302 bytes") && e.contains("255"), "{e}");
    }

    #[test]
    fn mdns_sd_keeps_binary_values() {
        // What `advertise_txt` hands to mdns-sd comes back byte for byte.
        let val: Vec<u8> = vec![0, b'=', 0x80, 0xff, b'='];
        let p = TxtProperty::from(("a0", &val));
        assert_eq!(p.key(), "a0");
        assert_eq!(p.val(), Some(val.as_slice()));
    }
}
