//! The scheduling scene of `tacit demo`: Alice and Bob find a meeting slot from their
//! calendars (`examples/alice.ics`, `examples/bob.ics`, embedded) by 3PR over loopback
//! TLS with each other's key pinned, and the demo prints what each of them learned.

use anyhow::Result;
use chrono::Duration;
use std::sync::Arc;
use std::time::Instant;
use tacit_calendar::{Calendar, Pref, Preferences, SlotSpec, free_slots, parse_hours, parse_time, rank_slots};
use tacit_crypto::rng::SecureRng;
use tacit_net::tls::SelfSigned;
use tacit_net::{FramedConn, FramedListener, NetConfig};
use tacit_pros::paillier::{PrivateKey, RnPool};
use tacit_pros::schedule::{self, SlotEncoding, Window};
use tacit_pros::threepr::{Scheme, Variant};

const ALICE: &str = include_str!("../../../../examples/alice.ics");
const BOB: &str = include_str!("../../../../examples/bob.ics");

/// A loopback TLS pair with both keys pinned (mutual pinning): a listener, its
/// server configuration, and a connector for the client.
pub(crate) struct TlsPair {
    pub listener: FramedListener,
    pub server: Arc<tacit_net::tls::ServerConfig>,
    pub client: Arc<tacit_net::tls::ClientConfig>,
}

impl TlsPair {
    pub(crate) async fn new(net: &NetConfig) -> Result<Self> {
        let (bob, alice) = (
            SelfSigned::generate(crate::pros::channel::TLS_NAME)?,
            SelfSigned::generate(crate::pros::channel::TLS_NAME)?,
        );
        let server = bob.server_config_checking_clients(tacit_net::tls::pinned(alice.fingerprint()?))?;
        let client = alice.client_config_checking_server(tacit_net::tls::pinned(bob.fingerprint()?))?;
        Ok(TlsPair {
            listener: FramedListener::bind("127.0.0.1:0", net).await?,
            server,
            client,
        })
    }

    pub(crate) async fn accept(l: &FramedListener, server: Arc<tacit_net::tls::ServerConfig>) -> Result<FramedConn> {
        Ok(l.accept().await?.accept_tls(server).await?)
    }

    pub(crate) async fn connect(
        addr: std::net::SocketAddr,
        net: &NetConfig,
        client: Arc<tacit_net::tls::ClientConfig>,
    ) -> Result<FramedConn> {
        Ok(FramedConn::connect_tls(addr, net, client, crate::pros::channel::TLS_NAME).await?)
    }
}

pub async fn schedule_demo() -> Result<()> {
    println!("== appoint: private meeting scheduling (PROS §5) ==");
    let berlin = chrono_tz::Europe::Berlin;
    let london = chrono_tz::Europe::London;
    let from = parse_time("2025-03-10T00:00:00+01:00", berlin)?;
    let to = parse_time("2025-03-15T00:00:00+01:00", berlin)?;
    let (duration, step) = (Duration::minutes(30), Duration::minutes(30));
    let slots = |ics: &str,
                 tz: chrono_tz::Tz,
                 hours: &str,
                 prefs: Preferences|
     -> Result<(Vec<tacit_calendar::Slot>, usize, usize)> {
        let cal = Calendar::parse(ics, from, to, tz)?;
        let mut spec = SlotSpec::new(from, to, duration, step);
        spec.tz = tz;
        spec.working_hours = Some(parse_hours(hours)?);
        let free = free_slots(cal.busy(), &spec);
        let mut r = rank_slots(&free, &prefs, tz);
        r.truncate(16);
        Ok((r, free.len(), cal.occurrences().len()))
    };
    let (a_slots, a_free, a_events) = slots(
        ALICE,
        berlin,
        "09:00-17:00",
        Preferences {
            prefer: vec![Pref::Morning],
            avoid: vec![Pref::Day(chrono::Weekday::Fri)],
        },
    )?;
    let (b_slots, b_free, b_events) = slots(
        BOB,
        london,
        "08:00-16:00",
        Preferences {
            prefer: vec![Pref::Afternoon],
            avoid: vec![],
        },
    )?;
    println!(
        "Alice (Berlin, 09:00-17:00, prefers mornings, avoids Fridays): {a_events} events this week, {a_free} free 30-minute slots; offers her best {}",
        a_slots.len()
    );
    println!(
        "Bob (London, 08:00-16:00, prefers afternoons): {b_events} events, {b_free} free slots; offers his best {}",
        b_slots.len()
    );
    let window = Window {
        from,
        to,
        duration,
        step,
        encoding: SlotEncoding::Default,
    };
    println!(
        "Bob makes his ring-Pedersen parameters (two safe primes; `tacit schedule serve` keeps them in its store) …"
    );
    let rp = tokio::task::spawn_blocking(|| {
        tacit_pros::facproof::RingPedersen::generate(tacit_pros::facproof::DEFAULT_RING_BITS, &mut SecureRng::from_os())
    })
    .await??;
    let rp = Arc::new(rp);
    let net = crate::pros::cmd::net_config();
    let tls = TlsPair::new(&net).await?;
    let addr = tls.listener.local_addr()?;
    let t = Instant::now();
    let (l, server) = (tls.listener, tls.server);
    let bob = tokio::spawn(async move {
        let mut c = TlsPair::accept(&l, server).await?;
        let r = schedule::serve(
            &mut c,
            &window,
            Scheme::Sor,
            Variant::Implicit,
            &b_slots,
            &schedule::Policy {
                min_key_bits: 3072,
                max_key_bits: 4096,
                limits: Default::default(),
                ring_pedersen: rp,
                insecure_small_keys: false,
            },
            &mut SecureRng::from_os(),
        )
        .await?;
        Ok::<_, anyhow::Error>(r)
    });
    let key = tokio::task::spawn_blocking(|| PrivateKey::generate(3072)).await??;
    let pool = Arc::new(RnPool::new(key.public())?);
    pool.fill(key.public(), a_slots.len(), &mut SecureRng::from_os())?;
    let mut c = TlsPair::connect(addr, &net, tls.client).await?;
    let a = schedule::connect(
        &mut c,
        &window,
        Scheme::Sor,
        Variant::Implicit,
        key,
        &a_slots,
        pool,
        &mut SecureRng::from_os(),
    )
    .await?;
    let b = bob.await??;
    let took = t.elapsed();
    let show = |s: &tacit_calendar::Slot, tz: chrono_tz::Tz| {
        format!(
            "{} – {}",
            s.start.with_timezone(&tz).format("%a %d %b %H:%M"),
            s.end.with_timezone(&tz).format("%H:%M %Z")
        )
    };
    for (who, r, tz) in [("Alice", &a, berlin), ("Bob", &b, london)] {
        match r.slots.first() {
            Some(s) => println!(
                "{who} learned: the agreed slot {} (combined rank maximal, found in round {} of at most {}), and nothing else about the other calendar",
                show(s, tz),
                r.reconciled.rounds,
                2 * r.reconciled.n - 1
            ),
            None => println!("{who} learned: no common free slot"),
        }
    }
    println!(
        "3072-bit Paillier (modulus proven Paillier–Blum and verified by Bob), SOR FNP-implicit, over TLS 1.3 with both keys pinned; {} comparisons, {:.2} s including key generation",
        a.reconciled.comparisons,
        took.as_secs_f64()
    );
    Ok(())
}
