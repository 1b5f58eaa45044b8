//! The GMW scene of `tacit demo`: Alice and Bob find the meeting slot with the least
//! travel from their day's appointments (location-aware scheduling, paper §6.2, with
//! triples from a software token), then intersect two small sets by
//! sort–compare–shuffle (§6.3, OT-extension triples); both over TLS 1.3 on loopback,
//! each party pinning the other's key. The demo prints what each of them learned.

use anyhow::Result;
use tacit_crypto::rng::SecureRng;
use tacit_crypto::sign::SigningKey;
use tacit_mpc::Party;
use tacit_mpc::apps::location::LocationParams;
use tacit_mpc::apps::psi::{self, PreparedSet};
use tacit_mpc::apps::schedule::{
    Event, Geo, Kind, Outcome, ScheduleHello, ScheduleInput, Window, run_session, slot_inputs,
};
use tacit_mpc::triples::ot::OtSource;
use tacit_mpc::triples::token::TokenTrust;
use tacit_mpc::triples::token::card::{Card, MemoryEeprom, TokenSpec, TokenState};
use tacit_mpc::triples::token::holder::{LocalTokenLink, Pool, TokenHolder, TokenPeer};
use tacit_net::tls::{SelfSigned, pinned};
use tacit_net::{FramedConn, FramedListener, NetConfig};

/// Alice (listening) and Bob connected over TLS 1.3, each pinning the other's key.
async fn pair() -> Result<(FramedConn, FramedConn)> {
    let cfg = NetConfig::default();
    let (alice, bob) = (
        SelfSigned::generate("alice.invalid")?,
        SelfSigned::generate("bob.invalid")?,
    );
    let server = alice.server_config_checking_clients(pinned(bob.fingerprint()?))?;
    let client = bob.client_config_checking_server(pinned(alice.fingerprint()?))?;
    let l = FramedListener::bind("127.0.0.1:0", &cfg).await?;
    let addr = l.local_addr()?;
    let accept = async { l.accept().await?.accept_tls(server).await };
    let (a, b) = tokio::join!(accept, FramedConn::connect_tls(addr, &cfg, client, "alice.invalid"));
    Ok((a?, b?))
}

fn hm(t: i64, day: i64) -> String {
    let m = (t - day) / 60;
    format!("{:02}:{:02}", m / 60, m % 60)
}

pub async fn gmw_demo() -> Result<()> {
    println!("== GMW: location-aware scheduling and set intersection (token-aided GMW §6) ==");
    // One day, 08:00–14:00 (UTC for the demo), 30-minute meetings every 30 minutes.
    let day = 1_741_564_800i64; // 2025-03-10 00:00 UTC
    let starts: Vec<i64> = (0..12).map(|j| day + 8 * 3600 + 1800 * j).collect();
    let window = Window {
        days: vec![(day + 8 * 3600, day + 14 * 3600); starts.len()],
        starts,
        duration: 1800,
    };
    let geo = Geo {
        params: LocationParams::new(window.starts.len()),
        origin: (52.52, 13.405),
        unit_m: 250.0,
    };
    let h = |hh: i64, mm: i64| day + hh * 3600 + mm * 60;
    // Alice: a review at Alexanderplatz 09:00–10:30, a lunch in Kreuzberg 12:30–13:30.
    let alice = [
        Event {
            start: h(9, 0),
            end: h(10, 30),
            place: Some((52.5219, 13.4132)),
        },
        Event {
            start: h(12, 30),
            end: h(13, 30),
            place: Some((52.4986, 13.4030)),
        },
    ];
    // Bob: a lecture in Charlottenburg 08:00–11:00, a call at home 13:00–14:00.
    let bob = [
        Event {
            start: h(8, 0),
            end: h(11, 0),
            place: Some((52.5125, 13.3269)),
        },
        Event {
            start: h(13, 0),
            end: h(14, 0),
            place: Some((52.5400, 13.4100)),
        },
    ];
    let speed = 20.0 / 3.6;
    let ia = ScheduleInput::Located(slot_inputs(&geo, &window, &alice, speed, Some((52.53, 13.42))));
    let ib = ScheduleInput::Located(slot_inputs(&geo, &window, &bob, speed, Some((52.54, 13.41))));
    let hello = ScheduleHello::new(Kind::Location(geo), &window);
    println!("  Alice: review 09:00–10:30 at Alexanderplatz, lunch 12:30–13:30 in Kreuzberg");
    println!("  Bob:   lecture 08:00–11:00 in Charlottenburg, call 13:00–14:00 at home");
    println!("  both:  20 km/h, 30-minute meeting, slots 08:00–14:00; coordinates stay private");
    let (mut ca, mut cb) = pair().await?;
    let (mut ra, mut rb) = (SecureRng::from_os(), SecureRng::from_os());
    // A software token in this process: Alice holds it, Bob checks its certificate.
    let manufacturer = SigningKey::generate(&mut ra);
    let st = TokenState::manufacture(&manufacturer, &TokenSpec::software("tacit demo", [0; 32]), &mut ra)?;
    let card = Card::new(st, MemoryEeprom::default())?;
    let mut sa = TokenHolder::new(LocalTokenLink { card }, Pool::in_memory()).await?;
    let trust = TokenTrust::new(manufacturer.verifying_key(), crate::util::now_unix()).accepting_software();
    let mut sb = TokenPeer::new(trust, SecureRng::from_os());
    println!(
        "  triples from a software token that Alice holds; Bob accepts it (--accept-software-token)\n  \
         only because this demo is one process on one machine: a software token is as trustworthy\n  \
         as its host, which could read Bob's seeds, so a real session needs a hardware token or a\n  \
         token host that is neither party"
    );
    let (a, b) = tokio::join!(
        run_session(&mut ca, Party::A, &hello, &ia, &mut sa, &mut ra),
        run_session(&mut cb, Party::B, &hello, &ib, &mut sb, &mut rb),
    );
    let ((oa, rep), (ob, _)) = (a?, b?);
    for (who, o, mine_next) in [("Alice", &oa, true), ("Bob", &ob, false)] {
        match o {
            Outcome::Located(Some(c)) => {
                let t = window.starts[c.slot];
                let next = if mine_next { c.a_from_next } else { c.b_from_next };
                println!(
                    "  {who} learned: meet {}–{}, leave from my {} appointment (nothing about the other's places)",
                    hm(t, day),
                    hm(t + 1800, day),
                    if next { "next" } else { "previous" }
                );
            }
            _ => println!("  {who} learned: no slot lets both reach a common place"),
        }
    }
    println!(
        "  ({} triples from the token; setup {:.0} ms, online {:.0} ms in {} rounds, over TLS 1.3)",
        rep.triples,
        rep.setup.time.as_secs_f64() * 1e3,
        rep.online.time.as_secs_f64() * 1e3,
        rep.online.rounds
    );

    // Set intersection: Bob (querier) learns the common elements; Alice learns nothing.
    let sa_set: Vec<String> = [
        "ada@example.org",
        "grace@example.org",
        "alan@example.org",
        "edsger@example.org",
    ]
    .map(String::from)
    .to_vec();
    let sb_set: Vec<String> = ["barbara@example.org", "alan@example.org", "grace@example.org"]
        .map(String::from)
        .to_vec();
    let (pa, pb) = (PreparedSet::new(&sa_set, 40)?, PreparedSet::new(&sb_set, 40)?);
    let (mut ca, mut cb) = pair().await?;
    let (mut sa, mut sb) = (OtSource::new(SecureRng::from_os()), OtSource::new(SecureRng::from_os()));
    let (a, b) = tokio::join!(
        psi::serve(&mut ca, &pa, 64, &mut sa, &mut ra),
        psi::query(&mut cb, &pb, 64, &mut sb, &mut rb),
    );
    let (_, r) = (a?, b?);
    println!("  Alice's set: {}; Bob's set: {}", sa_set.join(", "), sb_set.join(", "));
    println!(
        "  Bob learned:   {} (and that Alice has {} elements)",
        r.elements.join(", "),
        pa.values.len()
    );
    println!(
        "  Alice learned: that Bob has {} elements, nothing else (she chose the shuffle, gets no output)",
        pb.values.len()
    );
    println!(
        "  ({} AND gates, 40-bit hashes: false-positive bound {:.1e})",
        r.report.run.triples, r.report.false_positive_bound
    );
    Ok(())
}
