//! The channel of every `tacit pros` / `tacit schedule` session (issue 26): TLS 1.3
//! with self-signed Ed25519 keys by default, both ways.
//!
//! * The server presents this store's `pros-tls-identity` key and prints its
//!   fingerprint; a client pins it (`--pin`) or records it on first use (the default,
//!   `--tofu`; a later different key is refused, as SSH does).
//! * The client presents its own store key too (mutual pinning). In reconciliation and
//!   scheduling both parties learn the output, and the client (A, the key holder) is
//!   the party with the strongest position (it decrypts every comparison), so the
//!   server must know who it reconciled with: it prints the client's fingerprint with
//!   every result and accepts only the keys given with `--allow` when any are given.
//!   See `docs/pros.md`, "The channel".
//! * `--plain-tcp` on both sides runs without TLS, for measurements only.

use crate::util::channel::parse_fingerprint;
use crate::util::store_path;
use anyhow::{Result, bail};
use clap::Args;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tacit_net::channel::hex as hex_fp;
use tacit_net::{FramedConn, NetConfig, Protocol};
use tacit_pros::endpoint::{ClientBuilder, Server, ServerBuilder, ServerTrust, Service, Session};
use tacit_pros::service::ServiceConfig;

pub use tacit_pros::endpoint::{TLS_NAME, known_name};

/// Channel options of a connecting command.
#[derive(Debug, Clone, Args)]
pub struct ConnectChannel {
    /// Accept only the server key with this SHA-256 fingerprint (hex, as the server
    /// prints it).
    #[arg(long, value_name = "SHA256", conflicts_with_all = ["tofu", "plain_tcp"])]
    pub pin: Option<String>,
    /// Trust the server's key on first use (the default without --pin): it is
    /// recorded in the store and a later different key is refused.
    #[arg(long, conflicts_with = "plain_tcp")]
    pub tofu: bool,
    /// No TLS: plain TCP, nothing authenticated or encrypted (for measurements only;
    /// the server must run --plain-tcp too).
    #[arg(long)]
    pub plain_tcp: bool,
    /// Seconds to wait for each message from the server.
    #[arg(long, default_value_t = 600.0, value_name = "SECS")]
    pub timeout: f64,
    /// Seconds the whole session may take.
    #[arg(long, default_value_t = 7200.0, value_name = "SECS")]
    pub deadline: f64,
}

/// Channel and load options of a serving command.
#[derive(Debug, Clone, Args)]
pub struct ServeChannel {
    /// No TLS: plain TCP, nothing authenticated or encrypted (for measurements only;
    /// clients must use --plain-tcp too).
    #[arg(long)]
    pub plain_tcp: bool,
    /// Accept only clients whose key has this SHA-256 fingerprint (repeatable; a
    /// client prints its own with `tacit pros fingerprint`). Without it any client key
    /// is accepted and printed with each session.
    #[arg(long = "allow", value_name = "SHA256")]
    pub allow: Vec<String>,
    /// Most sessions in progress at once; further clients are refused at once.
    #[arg(long, default_value_t = 4, value_name = "K")]
    pub max_clients: usize,
    /// Seconds a whole session may take.
    #[arg(long, default_value_t = 600.0, value_name = "SECS")]
    pub deadline: f64,
    /// Seconds to wait for each message from a client.
    #[arg(long, default_value_t = 60.0, value_name = "SECS")]
    pub timeout: f64,
    /// Size of the ring-Pedersen modulus N̂ made on the first serve of a store (kept
    /// there and reused; later values are ignored). Peers prove their key's factors
    /// large against it; below 3072 bits it protects less (1024: tests only).
    #[arg(long, env = "TACIT_PROS_RING_BITS", default_value_t = tacit_pros::facproof::DEFAULT_RING_BITS, value_name = "BITS")]
    pub ring_bits: u32,
}

pub(crate) fn secs(what: &str, s: f64) -> Result<Duration> {
    anyhow::ensure!(
        s.is_finite() && s > 0.0 && s <= 86_400.0,
        "{what} must be between 0 and 86400 seconds"
    );
    Ok(Duration::from_secs_f64(s))
}

fn hex(fp: &[u8; 32]) -> String {
    hex_fp(fp)
}

/// This store's ring-Pedersen parameters, made on first use: two 1536-bit safe
/// primes (seconds to a minute, with a spinner on stderr), then kept in the store
/// like the TLS key, so every later session and restart reuses them. Peers prove
/// their Paillier key's factors large against them (`docs/pros.md`, "The modulus
/// proof").
pub fn ring_pedersen(
    st: &mut tacit_store::Store,
    path: &Path,
    who: &str,
    bits: u32,
) -> Result<Arc<tacit_pros::facproof::RingPedersen>> {
    if let Some(rp) = tacit_pros::endpoint::stored_ring_pedersen(st)? {
        return Ok(rp);
    }
    let pb = indicatif::ProgressBar::new_spinner();
    pb.set_message(format!(
        "{who}: making ring-Pedersen parameters ({bits}-bit N̂ of two safe primes; once per store)"
    ));
    pb.enable_steady_tick(Duration::from_millis(120));
    let start = std::time::Instant::now();
    let rp = tacit_pros::endpoint::make_ring_pedersen(st, bits);
    pb.finish_and_clear();
    let rp = rp?;
    eprintln!(
        "{who}: ring-Pedersen parameters made in {:.1} s and kept in {}",
        start.elapsed().as_secs_f64(),
        path.display()
    );
    Ok(rp)
}

/// This store's pros TLS key (made on first use) and its fingerprint.
pub fn identity(store: Option<&Path>) -> Result<(tacit_net::tls::SelfSigned, String)> {
    let path = store_path(store)?;
    let mut st = crate::util::open_store(&path)?;
    let id = tacit_pros::endpoint::identity(&mut st)?;
    let fp = hex(&id.fingerprint()?);
    Ok((id, fp))
}

/// The checked `--allow` keys of a serving command.
fn allowed(ch: &ServeChannel) -> Result<Vec<[u8; 32]>> {
    anyhow::ensure!(
        (1..=1024).contains(&ch.max_clients),
        "--max-clients must be from 1 to 1024"
    );
    secs("--timeout", ch.timeout)?;
    secs("--deadline", ch.deadline)?;
    if ch.plain_tcp && !ch.allow.is_empty() {
        bail!("--allow needs TLS; it cannot go with --plain-tcp");
    }
    ch.allow.iter().map(|a| parse_fingerprint(a)).collect()
}

/// A library server configured as a serving command's flags say: the store (opened
/// here; its ring-Pedersen parameters made with a spinner on first use), the channel
/// and load options, the key floor and `--sessions`.
pub fn server<S: Service>(
    store: Option<&Path>,
    ch: &ServeChannel,
    who: &str,
    make: impl FnOnce(tacit_store::Store) -> ServerBuilder<S>,
    min_key_bits: u32,
    insecure_small_keys: bool,
    sessions: Option<u64>,
) -> Result<ServerBuilder<S>> {
    let allow = allowed(ch)?;
    let path = store_path(store)?;
    let mut st = crate::util::open_store(&path)?;
    let rp = ring_pedersen(&mut st, &path, who, ch.ring_bits)?;
    let mut b = make(st)
        .ring_pedersen(rp)
        .max_clients(ch.max_clients)
        .deadline(secs("--deadline", ch.deadline)?)
        .timeout(secs("--timeout", ch.timeout)?)
        .min_key_bits(min_key_bits);
    for a in allow {
        b = b.allow(a);
    }
    if ch.plain_tcp {
        b = b.insecure_plain_tcp();
    }
    if insecure_small_keys {
        b = b.insecure_small_keys();
    }
    if let Some(n) = sessions {
        b = b.sessions(n);
    }
    Ok(b)
}

/// Prints how a bound server serves, as the serving commands always have.
pub fn announce<S: Service>(server: &Server<S>, who: &str) {
    match server.fingerprint() {
        None => eprintln!("{who}: plain TCP (--plain-tcp): nothing is authenticated or encrypted"),
        Some(fp) => {
            let fp = hex(&fp);
            eprintln!(
                "{who}: TLS 1.3; server key fingerprint {fp} (clients: --pin {fp}, or trust on first use); {}",
                match server.allowed_keys() {
                    0 => "any client key accepted and printed".to_string(),
                    n => format!("clients: {n} allowed key(s)"),
                }
            );
        }
    }
}

/// A library client configured as a connecting command's flags say (the store, the
/// server's key pinned or recorded on first use, plain TCP, timeouts); the key
/// recorded on first use is printed under `who`.
pub fn client<C: Session>(
    store: Option<&Path>,
    ch: &ConnectChannel,
    addr: &str,
    who: &str,
    make: impl FnOnce(tacit_store::Store) -> ClientBuilder<C>,
) -> Result<ClientBuilder<C>> {
    let timeout = secs("--timeout", ch.timeout)?;
    let deadline = secs("--deadline", ch.deadline)?;
    let trust = trust_of(ch)?;
    let st = if ch.plain_tcp {
        tacit_store::Store::open_in_memory()?
    } else {
        crate::util::open_store(&store_path(store)?)?
    };
    let mut b = make(st).timeout(timeout).deadline(deadline);
    b = match trust {
        ServerTrust::Pinned(p) => b.pin(p),
        ServerTrust::InsecurePlainTcp => b.insecure_plain_tcp(),
        ServerTrust::FirstUse => b,
    };
    let (who, addr) = (who.to_string(), addr.to_string());
    Ok(b.on_connected(move |c| {
        if let Some(fp) = c.recorded {
            eprintln!("{who}: recorded the key of {addr} on first use: {}", hex(&fp));
        }
    }))
}

fn trust_of(ch: &ConnectChannel) -> Result<ServerTrust> {
    Ok(if ch.plain_tcp {
        ServerTrust::InsecurePlainTcp
    } else {
        match &ch.pin {
            Some(p) => ServerTrust::Pinned(parse_fingerprint(p)?),
            None => ServerTrust::FirstUse,
        }
    })
}

/// The service configuration of a serving command: TLS (requiring a client key, from
/// `--allow` or any) unless `--plain-tcp`, the client cap, deadlines, and the first
/// message's frame limit, and the greeting of `protocol`. Prints how it serves to
/// stderr under `who`. (For servers that are not PROS builders: `--engine gmw`.)
pub fn service_config(
    store: Option<&Path>,
    ch: &ServeChannel,
    first_frame: usize,
    protocol: Protocol,
    who: &str,
) -> Result<ServiceConfig> {
    let allow = allowed(ch)?;
    let net = NetConfig {
        max_frame: first_frame,
        read_timeout: secs("--timeout", ch.timeout)?,
        deadline: Some(secs("--deadline", ch.deadline)?),
        ..NetConfig::default().speaking(protocol)
    };
    let tls = if ch.plain_tcp {
        eprintln!("{who}: plain TCP (--plain-tcp): nothing is authenticated or encrypted");
        None
    } else {
        let path = store_path(store)?;
        let mut st = crate::util::open_store(&path)?;
        let (cfg, fp) = tacit_pros::endpoint::server_tls(&mut st, &allow)?;
        let fp = hex(&fp);
        eprintln!(
            "{who}: TLS 1.3; server key fingerprint {fp} (clients: --pin {fp}, or trust on first use); {}",
            if ch.allow.is_empty() {
                "any client key accepted and printed".to_string()
            } else {
                format!("clients: {} allowed key(s)", ch.allow.len())
            }
        );
        Some(cfg)
    };
    Ok(ServiceConfig {
        max_clients: ch.max_clients,
        net,
        tls,
    })
}

/// A connection to `addr` as `ch` says: TLS with this store's key, the server's key
/// pinned or recorded on first use, or plain TCP. Returns the connection and the
/// server key's fingerprint (TLS only). The greetings of `protocol` are exchanged
/// and checked before this returns. (For sessions that are not PROS builders:
/// `--engine gmw`.)
pub async fn connect(
    store: Option<&Path>,
    ch: &ConnectChannel,
    addr: &str,
    protocol: Protocol,
    who: &str,
) -> Result<(FramedConn, Option<String>)> {
    let net = NetConfig {
        read_timeout: secs("--timeout", ch.timeout)?,
        deadline: Some(secs("--deadline", ch.deadline)?),
        ..NetConfig::default()
    };
    let trust = trust_of(ch)?;
    let st = if ch.plain_tcp {
        tacit_store::Store::open_in_memory()?
    } else {
        crate::util::open_store(&store_path(store)?)?
    };
    let c = tacit_pros::endpoint::connect_channel(st, trust, addr, &net, protocol).await?;
    if let Some(fp) = c.recorded {
        eprintln!("{who}: recorded the key of {addr} on first use: {}", hex(&fp));
    }
    Ok((c.conn, c.server_key.map(|fp| hex(&fp))))
}

/// The fingerprint of a client's key as a service event reports it.
pub fn client_label(client: &Option<[u8; 32]>) -> String {
    match client {
        Some(fp) => format!("key {}", hex(fp)),
        None => "plain TCP".into(),
    }
}
