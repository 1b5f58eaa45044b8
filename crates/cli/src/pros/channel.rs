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

use crate::util::channel::{Trust, parse_fingerprint, tls_identity};
use crate::util::store_path;
use anyhow::{Context, Result, bail};
use clap::Args;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tacit_net::{FramedConn, NetConfig, Protocol};
use tacit_pros::service::ServiceConfig;

/// The store purpose of the pros TLS key (server and client).
pub const TLS_PURPOSE: &str = "pros-tls-identity";
/// The TLS server name of a pros service (certificates are pinned, not named).
pub const TLS_NAME: &str = "tacit-pros.invalid";

/// The store's name for the key recorded on first use for the server at `addr`.
pub fn known_name(addr: &str) -> String {
    format!("pros/{addr}")
}

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
    hex::encode(fp)
}

/// Store purpose of the serving side's ring-Pedersen parameters (Π^fac's verifier
/// parameters: `N̂` of two safe primes, `s`, `t`, `λ`, Π^prm).
pub const RING_PEDERSEN_PURPOSE: &str = "pros-ring-pedersen";

/// This store's ring-Pedersen parameters, made on first use: two 1536-bit safe
/// primes (seconds to a minute, with a spinner on stderr), then kept in the store
/// like the TLS key, so every later session and restart reuses them. Peers prove
/// their Paillier key's factors large against them (`docs/pros.md`, "The modulus
/// proof").
pub fn ring_pedersen(store: Option<&Path>, who: &str, bits: u32) -> Result<Arc<tacit_pros::facproof::RingPedersen>> {
    use tacit_pros::facproof::RingPedersen;
    let path = store_path(store)?;
    let mut st = crate::util::open_store(&path)?;
    if let Some(k) = st.current_key(RING_PEDERSEN_PURPOSE)? {
        let rp = RingPedersen::from_secret_bytes(&k.secret)
            .with_context(|| format!("the stored {RING_PEDERSEN_PURPOSE} parameters are corrupt"))?;
        return Ok(Arc::new(rp));
    }
    let pb = indicatif::ProgressBar::new_spinner();
    pb.set_message(format!(
        "{who}: making ring-Pedersen parameters ({bits}-bit N̂ of two safe primes; once per store)"
    ));
    pb.enable_steady_tick(Duration::from_millis(120));
    let start = std::time::Instant::now();
    let rp = RingPedersen::generate(bits, &mut tacit_crypto::rng::SecureRng::from_os());
    pb.finish_and_clear();
    let rp = rp?;
    eprintln!(
        "{who}: ring-Pedersen parameters made in {:.1} s and kept in {}",
        start.elapsed().as_secs_f64(),
        path.display()
    );
    st.put_key(
        RING_PEDERSEN_PURPOSE,
        1,
        &zeroize::Zeroizing::new(rp.to_secret_bytes()),
        crate::util::now_unix(),
    )?;
    Ok(Arc::new(rp))
}

/// This store's pros TLS key (made on first use) and its fingerprint.
pub fn identity(store: Option<&Path>) -> Result<(tacit_net::tls::SelfSigned, String)> {
    let path = store_path(store)?;
    let mut st = crate::util::open_store(&path)?;
    let id = tls_identity(&mut st, TLS_PURPOSE, TLS_NAME)?;
    let fp = hex(&id.fingerprint()?);
    Ok((id, fp))
}

/// The service configuration of a serving command: TLS (requiring a client key, from
/// `--allow` or any) unless `--plain-tcp`, the client cap, deadlines, and the first
/// message's frame limit, and the greeting of `protocol`. Prints how it serves to
/// stderr under `who`.
pub fn service_config(
    store: Option<&Path>,
    ch: &ServeChannel,
    first_frame: usize,
    protocol: Protocol,
    who: &str,
) -> Result<ServiceConfig> {
    anyhow::ensure!(
        (1..=1024).contains(&ch.max_clients),
        "--max-clients must be from 1 to 1024"
    );
    let net = NetConfig {
        max_frame: first_frame,
        read_timeout: secs("--timeout", ch.timeout)?,
        deadline: Some(secs("--deadline", ch.deadline)?),
        ..NetConfig::default().speaking(protocol)
    };
    let tls = if ch.plain_tcp {
        if !ch.allow.is_empty() {
            bail!("--allow needs TLS; it cannot go with --plain-tcp");
        }
        eprintln!("{who}: plain TCP (--plain-tcp): nothing is authenticated or encrypted");
        None
    } else {
        let (id, fp) = identity(store)?;
        let allowed: Vec<[u8; 32]> = ch.allow.iter().map(|a| parse_fingerprint(a)).collect::<Result<_>>()?;
        let check: tacit_net::tls::CertificateCheck = if allowed.is_empty() {
            tacit_net::tls::any_key()
        } else {
            Arc::new(move |cert: &[u8]| {
                let got = tacit_net::tls::spki_fingerprint(cert).map_err(|e| e.to_string())?;
                if allowed.contains(&got) {
                    Ok(())
                } else {
                    Err(format!(
                        "the client key {} is not one of the --allow keys",
                        hex::encode(got)
                    ))
                }
            })
        };
        eprintln!(
            "{who}: TLS 1.3; server key fingerprint {fp} (clients: --pin {fp}, or trust on first use); {}",
            if ch.allow.is_empty() {
                "any client key accepted and printed".to_string()
            } else {
                format!("clients: {} allowed key(s)", ch.allow.len())
            }
        );
        Some(id.server_config_checking_clients(check)?)
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
/// and checked before this returns, so a wrong server is named at once, before any
/// long computation.
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
        ..NetConfig::default().speaking(protocol)
    };
    if ch.plain_tcp {
        let c = FramedConn::connect(addr, &net)
            .await
            .with_context(|| format!("cannot connect to {addr}"))?;
        return Ok((c, None));
    }
    let path = store_path(store)?;
    let mut st = crate::util::open_store(&path)?;
    let id = tls_identity(&mut st, TLS_PURPOSE, TLS_NAME)?;
    let mut trust = match &ch.pin {
        Some(p) => Trust::Pinned(parse_fingerprint(p)?),
        None => Trust::FirstUse {
            store: st,
            name: known_name(addr),
        },
    };
    let recorded = trust.recorded()?;
    let Some(check) = trust.check()? else {
        bail!("internal: no certificate check for TLS");
    };
    let client = id.client_config_checking_server(check)?;
    let conn = match FramedConn::connect_tls(addr, &net, client, TLS_NAME).await {
        Ok(c) => c,
        Err(e @ tacit_net::Error::Tls(_)) => {
            if recorded.is_some() && ch.pin.is_none() {
                bail!(
                    "cannot connect to {addr}: {e} — if the server's key differs from the one recorded on first use \
                     and it changed its key on purpose, run `tacit pros forget --connect {addr}`"
                );
            }
            if ch.pin.is_some() {
                bail!("cannot connect to {addr}: {e}");
            }
            bail!("cannot connect to {addr}: {e} (does the server run --plain-tcp, or refuse our key?)");
        }
        Err(e) => return Err(anyhow::Error::from(e).context(format!("cannot connect to {addr}"))),
    };
    let server_fp = conn
        .peer_certificate()
        .map(tacit_net::tls::spki_fingerprint)
        .transpose()?
        .map(|fp| hex(&fp));
    if let Some(fp) = trust.record(conn.peer_certificate())? {
        eprintln!("{who}: recorded the key of {addr} on first use: {}", hex(&fp));
    }
    Ok((conn, server_fp))
}

/// The fingerprint of a client's key as a service event reports it.
pub fn client_label(client: &Option<[u8; 32]>) -> String {
    match client {
        Some(fp) => format!("key {}", hex(fp)),
        None => "plain TCP".into(),
    }
}
