//! The home-device part of `tacit demo`: a camera visible only to `Home/*`, the
//! owner's phone and a visitor's phone (Wu, Taly, Shankar, Boneh §4–5).

use crate::discovery::world::{World, home_world, now};
use anyhow::{Result, bail};
use std::sync::{Arc, Mutex};
use tacit_crypto::rng::SecureRng;
use tacit_discovery::handshake::server::ServerConfig;
use tacit_discovery::handshake::zero_rtt::{Service, open_advert};
use tacit_discovery::handshake::{Error as HsError, Mode};
use tacit_discovery::service::{self, Error as SvcError, ServerEvent, ServerState};
use tacit_net::{FramedListener, NetConfig};

pub async fn discovery_demo() -> Result<()> {
    let mut rng = SecureRng::from_os();
    let World { camera, owner, visitor } = home_world(&mut rng)?;
    println!();
    println!("tacit demo — private discovery: IBE prefix encryption (BB2, BLS12-381), SIGMA-I, 0-RTT");
    println!("  The camera is Home/Devices/Camera with policy Home/*; the owner's phone is Home/Owner/Phone");
    println!("  (policy Home/Devices/*); a visitor's phone is Street/Visitor/Phone. Each holds a three-link");
    println!("  chain and a prefix key from the same IBE root.");

    let svc = Service::new(camera.creds.clone());
    let t = now();
    let ad = svc.refresh(&camera.prefix.mpk, t, t + 3600, &mut rng)?;
    let advert = ad.advert().to_vec();
    let log = Arc::new(Mutex::new(Vec::<String>::new()));
    let log2 = log.clone();
    let net = NetConfig::default();
    let state = Arc::new(ServerState {
        config: ServerConfig::new(camera.creds.clone(), Some(camera.prefix.clone()), false),
        service: svc,
        respond: Arc::new(|who: &str, req: &[u8]| {
            format!(
                "camera to {who}: you said {:?}; door unlocked",
                String::from_utf8_lossy(req)
            )
            .into_bytes()
        }),
        events: Arc::new(move |e| {
            if let Ok(mut l) = log2.lock() {
                l.push(match e {
                    ServerEvent::Authenticated { handshake, client } => format!("camera: {handshake} with {client}"),
                    ServerEvent::Refused(why) => {
                        format!("camera: refused a connection ({why}); the client was told nothing")
                    }
                    ServerEvent::Admission(e) => format!("camera: {e}"),
                });
            }
        }),
    });
    let listener = FramedListener::bind("127.0.0.1:0", &net).await?;
    let addr = listener.local_addr()?.to_string();
    let server = tokio::spawn(service::serve(listener, state));
    let flush = |log: &Arc<Mutex<Vec<String>>>| {
        if let Ok(mut l) = log.lock() {
            for line in l.drain(..) {
                println!("    {line}");
            }
        }
    };

    println!(
        "  The camera broadcasts a {}-byte advertisement (over mDNS with `tacit discover advertise`).",
        advert.len()
    );
    // The owner's phone: opens the advert, 0-RTT with early data.
    let found = open_advert(&advert, &owner.creds, &owner.prefix, now())?;
    println!(
        "  Owner's phone opened it: the service is {} (signed, expires in {} s).",
        found.server.name(),
        found.expiry.saturating_sub(now())
    );
    let o = service::connect_zero_rtt(&addr, found, &owner.creds, b"open the door", &net).await?;
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    println!(
        "  Owner → camera, 0-RTT (request in the first flight): {:?} in {:.2} ms",
        String::from_utf8_lossy(&o.response),
        o.timings.total.as_secs_f64() * 1e3
    );
    flush(&log);

    // The visitor's phone cannot read it.
    match open_advert(&advert, &visitor.creds, &visitor.prefix, now()) {
        Err(HsError::NotAuthorizedByPeer(policy)) => println!(
            "  Visitor's phone sees an advertisement for policy {policy} that it cannot decrypt: no name, no key, no service."
        ),
        Err(e) => bail!("the visitor failed for an unexpected reason: {e}"),
        Ok(_) => bail!("the visitor opened the camera's advertisement"),
    }

    // Private mutual authentication without discovery.
    let p = service::connect(
        &addr,
        Mode::Private,
        &owner.creds,
        Some(&owner.prefix),
        None,
        b"status?",
        &net,
    )
    .await?;
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    println!(
        "  Owner, private mutual authentication: talking to {} in {:.2} ms",
        p.session.peer.name(),
        p.timings.total.as_secs_f64() * 1e3
    );
    flush(&log);
    match service::connect(
        &addr,
        Mode::Private,
        &visitor.creds,
        Some(&visitor.prefix),
        None,
        b"hi",
        &net,
    )
    .await
    {
        Err(SvcError::Handshake(HsError::NotAuthorizedByPeer(policy))) => println!(
            "  Visitor, private mutual authentication: the camera's identity is encrypted to {policy}; the visitor\n    cannot read it and stops before revealing its own identity."
        ),
        Err(e) => bail!("the visitor failed for an unexpected reason: {e}"),
        Ok(_) => bail!("the visitor authenticated to the camera"),
    }
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    flush(&log);
    // SIGMA-I would hand the camera's blessing to anyone who asks; a private server
    // does not offer it.
    match service::connect(&addr, Mode::Sigma, &visitor.creds, None, None, b"hi", &net).await {
        Err(SvcError::NoAnswer(_)) => println!(
            "  Visitor, SIGMA-I hello (the non-private baseline): the camera answers only private handshakes,\n    so it closes the connection and the visitor learns nothing."
        ),
        Err(e) => bail!("the visitor's SIGMA-I hello failed for an unexpected reason: {e}"),
        Ok(o) => bail!(
            "the camera answered SIGMA-I and revealed {} to a visitor",
            o.session.peer.name()
        ),
    }
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    flush(&log);
    server.abort();
    Ok(())
}
