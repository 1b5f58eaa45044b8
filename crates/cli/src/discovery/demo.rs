//! The home-device part of `tacit demo`: a camera visible only to `Home/*`, the
//! owner's phone and a visitor's phone (Wu, Taly, Shankar, Boneh §4–5).

use crate::discovery::world::{World, home_world, now};
use anyhow::{Result, bail};
use std::sync::{Arc, Mutex};
use tacit_crypto::rng::SecureRng;
use tacit_discovery::handshake::{Error as HsError, Mode};
use tacit_discovery::service::{Error as SvcError, ServerEvent};
use tacit_discovery::{Advertiser, AdvertiserEvent, Browser, Error};

pub async fn discovery_demo() -> Result<()> {
    let mut rng = SecureRng::from_os();
    let World { camera, owner, visitor } = home_world(&mut rng)?;
    println!();
    println!("tacit demo — private discovery: IBE prefix encryption (BB2, BLS12-381), SIGMA-I, 0-RTT");
    println!("  The camera is Home/Devices/Camera with policy Home/*; the owner's phone is Home/Owner/Phone");
    println!("  (policy Home/Devices/*); a visitor's phone is Street/Visitor/Phone. Each holds a three-link");
    println!("  chain and a prefix key from the same IBE root.");

    let log = Arc::new(Mutex::new(Vec::<String>::new()));
    let log2 = log.clone();
    let advertiser = Advertiser::builder(camera.creds.clone(), camera.prefix.clone())
        .respond(|who: &str, req: &[u8]| {
            format!(
                "camera to {who}: you said {:?}; door unlocked",
                String::from_utf8_lossy(req)
            )
            .into_bytes()
        })
        .on_event(move |e| {
            let line = match e {
                AdvertiserEvent::Connection(ServerEvent::Authenticated { handshake, client }) => {
                    format!("camera: {handshake} with {client}")
                }
                AdvertiserEvent::Connection(ServerEvent::Refused(why)) => {
                    format!("camera: refused a connection ({why}); the client was told nothing")
                }
                AdvertiserEvent::Connection(ServerEvent::Admission(e)) => format!("camera: {e}"),
                _ => return,
            };
            if let Ok(mut l) = log2.lock() {
                l.push(line);
            }
        })
        .bind("127.0.0.1:0")
        .await?;
    let addr = advertiser.local_addr();
    let advert = advertiser.advert();
    let server = tokio::spawn(advertiser.serve());
    let phone = |p: &crate::discovery::world::Party| Browser::builder(p.creds.clone()).prefix(p.prefix.clone()).build();
    let (owner_phone, visitor_phone) = (phone(&owner), phone(&visitor));
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
    let found = owner_phone.open(&advert, Some(addr))?;
    println!(
        "  Owner's phone opened it: the service is {} (signed, expires in {} s).",
        found.name(),
        found.expires_at().saturating_sub(now())
    );
    let o = owner_phone.zero_rtt(&found, b"open the door").await?;
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    println!(
        "  Owner → camera, 0-RTT (request in the first flight): {:?} in {:.2} ms",
        String::from_utf8_lossy(&o.response),
        o.timings.total.as_secs_f64() * 1e3
    );
    flush(&log);

    // The visitor's phone cannot read it.
    match visitor_phone.open(&advert, Some(addr)) {
        Err(Error::Handshake(HsError::NotAuthorizedByPeer(policy))) => println!(
            "  Visitor's phone sees an advertisement for policy {policy} that it cannot decrypt: no name, no key, no service."
        ),
        Err(e) => bail!("the visitor failed for an unexpected reason: {e}"),
        Ok(_) => bail!("the visitor opened the camera's advertisement"),
    }

    // Private mutual authentication without discovery.
    let target = addr.to_string();
    let p = owner_phone.connect(&target, Mode::Private, b"status?").await?;
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    println!(
        "  Owner, private mutual authentication: talking to {} in {:.2} ms",
        p.session.peer.name(),
        p.timings.total.as_secs_f64() * 1e3
    );
    flush(&log);
    match visitor_phone.connect(&target, Mode::Private, b"hi").await {
        Err(Error::Service(SvcError::Handshake(HsError::NotAuthorizedByPeer(policy)))) => println!(
            "  Visitor, private mutual authentication: the camera's identity is encrypted to {policy}; the visitor\n    cannot read it and stops before revealing its own identity."
        ),
        Err(e) => bail!("the visitor failed for an unexpected reason: {e}"),
        Ok(_) => bail!("the visitor authenticated to the camera"),
    }
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    flush(&log);
    // SIGMA-I would hand the camera's blessing to anyone who asks; a private server
    // does not offer it.
    match visitor_phone.connect(&target, Mode::Sigma, b"hi").await {
        Err(Error::Service(SvcError::NoAnswer(_))) => println!(
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
