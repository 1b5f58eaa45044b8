//! Private discovery in one program over loopback (Wu, Taly, Shankar, Boneh): an IBE
//! root authority, a camera advertising to `Home/*` only, the owner's phone, which
//! reads the advert and authenticates privately, and a visitor, who learns neither the
//! camera's name nor its key and reveals nothing. `cargo run -p tacit-discovery --example home`

use std::sync::Arc;
use tacit_crypto::rng::SecureRng;
use tacit_discovery::blessing::{Blessing, Principal, TrustedRoots};
use tacit_discovery::handshake::{Credentials, Error as HsError, Mode, PrefixCredentials};
use tacit_discovery::ibe::MasterSecretKey;
use tacit_discovery::{Advertiser, Authority, Browser, Error, authority};

type Fallible<T> = Result<T, Box<dyn std::error::Error>>;
const UNTIL: u64 = 4_102_444_800; // 2100-01-01: the blessings' expiry

#[tokio::main]
async fn main() -> Fallible<()> {
    let mut rng = SecureRng::from_os();
    let home = Principal::new_root(&mut rng, "Home", UNTIL)?;
    let street = Principal::new_root(&mut rng, "Street", UNTIL)?;
    let mut roots = TrustedRoots::new();
    roots.add("Home", home.0.public_key())?;
    roots.add("Street", street.0.public_key())?;

    // The IBE root authority online.
    let msk = MasterSecretKey::generate(&mut rng);
    let mpk = Arc::new(msk.public().clone());
    let root = Authority::builder(msk, roots.clone()).bind("127.0.0.1:0").await?;
    let at = root.local_addr().to_string();
    tokio::spawn(root.serve());
    let net = tacit_net::NetConfig::default();
    // A member `root/ext` gets its name's prefix key by proving its blessing.
    let member = async |root: &(Principal, Blessing), ext: &str, policy: &str| -> Fallible<_> {
        let me = Arc::new(Principal::generate(&mut SecureRng::from_os()));
        let blessing = root.0.bless(&root.1, &me.public_key(), ext, UNTIL, vec![])?;
        let key = authority::fetch_prefix_key(&at, me.clone(), blessing.clone(), mpk.clone(), &net);
        let prefix = PrefixCredentials::new(mpk.clone(), Some(key.await?));
        Ok((Credentials::new(me, blessing, roots.clone(), policy.parse()?), prefix))
    };
    let (cam_creds, cam_prefix) = member(&home, "Camera", "Home/*").await?;
    let browser = |(creds, prefix)| Browser::builder(creds).prefix(prefix).build();
    let phone = browser(member(&home, "Phone", "Home/*").await?);
    let visitor = browser(member(&street, "Phone", "Home/*").await?);
    println!("IBE root on {at}: granted the prefix keys of Home/Camera, Home/Phone and Street/Phone");

    // The camera advertises to Home/* (mDNS off here: the advert is handed over directly).
    let camera = Advertiser::builder(cam_creds, cam_prefix)
        .respond(|who, req| format!("hello {who}, you said {:?}", String::from_utf8_lossy(req)).into_bytes())
        .bind("127.0.0.1:0")
        .await?;
    let (addr, advert) = (camera.local_addr(), camera.advert());
    tokio::spawn(camera.serve());
    println!(
        "Home/Camera serves on {addr}; its advertisement is {} bytes",
        advert.len()
    );

    let seen = phone.open(&advert, Some(addr))?;
    let reply = String::from_utf8(phone.zero_rtt(&seen, b"status?").await?.response)?;
    println!("Home/Phone opened the advert of {}; 0-RTT reply: {reply}", seen.name());
    let private = phone.connect(&addr.to_string(), Mode::Private, b"unlock").await?;
    let reply = String::from_utf8(private.response)?;
    println!(
        "Home/Phone, private mutual authentication with {}: {reply}",
        private.session.peer.name()
    );

    // The visitor is outside Home/*: the advert and the handshake stay sealed to it.
    match visitor.open(&advert, Some(addr)) {
        Err(Error::Handshake(HsError::NotAuthorizedByPeer(p))) => println!("Street/Phone cannot open it (for {p})"),
        other => return Err(format!("the visitor read the advert: {other:?}").into()),
    }
    match visitor.connect(&addr.to_string(), Mode::Private, b"hi").await {
        Err(e) => println!("Street/Phone, private mutual authentication: {e}; it revealed nothing"),
        Ok(o) => return Err(format!("the visitor authenticated {}", o.session.peer.name()).into()),
    }
    Ok(())
}
