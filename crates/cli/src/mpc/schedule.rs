//! `tacit schedule serve|connect --engine gmw`: availability scheduling (paper §6.1)
//! and, with `--locations`, location-aware scheduling (§6.2) under GMW, on the same
//! calendar options (`crate::schedule_args`) and .ics reading as the PROS scheduler.
//!
//! The window is common: the grid of `--from`, `--to`, `--step`, `--duration`, cut to
//! `--hours` and `--days` in `--tz`; all of these must match the peer's (the circuit
//! has one input per slot; the two hellos compare a digest of the slot starts). Each
//! party's calendar becomes one free/busy bit per slot (and, with `--locations`, its
//! origins and reaches per slot) in the clear, through `tacit_calendar`.

use crate::pros::channel::{ConnectChannel, ServeChannel, service_config};
use crate::schedule_args::{GmwScheduleArgs, ScheduleArgs, weekday};
use crate::util::sanitize;
use anyhow::{Context, Result, anyhow, bail};
use chrono::{DateTime, Duration, NaiveTime, TimeZone, Utc};
use chrono_tz::Tz;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tacit_calendar::{
    Calendar, Preferences, Slot, SlotSpec, free_slots, parse_hours, parse_span, parse_time, parse_zone, rank_slots,
};
use tacit_crypto::rng::SecureRng;
use tacit_mpc::Party;
use tacit_mpc::apps::location::{Choice, LocationParams};
use tacit_mpc::apps::schedule::{
    Event, Geo, Kind, MAX_SLOTS, Outcome, ScheduleHello, ScheduleInput, Window, free_bits, run_session, slot_inputs,
};
use tacit_mpc::driver::RunReport;
use tacit_net::{FramedListener, Protocol};

/// A calendar ready for a session.
struct Prepared {
    tz: Tz,
    slots: Vec<Slot>,
    hello: ScheduleHello,
    input: ScheduleInput,
    prefs: Preferences,
    free: usize,
}

fn parse_place(s: &str) -> Option<(f64, f64)> {
    let (a, b) = s.split_once(',')?;
    let (lat, lon) = (a.trim().parse::<f64>().ok()?, b.trim().parse::<f64>().ok()?);
    ((-90.0..=90.0).contains(&lat) && (-180.0..=180.0).contains(&lon)).then_some((lat, lon))
}

fn place_arg(s: &str, what: &str) -> Result<(f64, f64)> {
    parse_place(s).ok_or_else(|| anyhow!("{what} must be LAT,LON in degrees, e.g. 52.52,13.405"))
}

/// The bounds of the slot's day: its working hours in `tz` if given, else the local
/// calendar day, cut to the window.
fn day_of(t: DateTime<Utc>, tz: Tz, hours: Option<(NaiveTime, NaiveTime)>, spec: &SlotSpec) -> (i64, i64) {
    let date = t.with_timezone(&tz).date_naive();
    let at = |time: NaiveTime| {
        tz.from_local_datetime(&date.and_time(time))
            .earliest()
            .map(|d| d.with_timezone(&Utc))
    };
    let (s, e) = match hours {
        Some((a, b)) if b > a => (at(a), at(b)),
        _ => (
            at(NaiveTime::MIN),
            tz.from_local_datetime(&(date + Duration::days(1)).and_time(NaiveTime::MIN))
                .earliest()
                .map(|d| d.with_timezone(&Utc)),
        ),
    };
    let s = s.unwrap_or(t).max(spec.from);
    let e = e.unwrap_or(t + Duration::days(1)).min(spec.to);
    (s.timestamp(), e.timestamp())
}

fn prepare(o: &ScheduleArgs, g: &GmwScheduleArgs) -> Result<Prepared> {
    let tz = match &o.tz {
        Some(z) => parse_zone(z)?,
        None => match std::env::var("TZ") {
            Ok(z) if z.parse::<Tz>().is_ok() => parse_zone(&z)?,
            _ => chrono_tz::UTC,
        },
    };
    let from = parse_time(&o.from, tz)?;
    let to = parse_time(&o.to, tz)?;
    let mut spec = SlotSpec::new(from, to, parse_span(&o.duration)?, parse_span(&o.step)?);
    spec.tz = tz;
    spec.working_hours = o.hours.as_deref().map(parse_hours).transpose()?;
    spec.days = o.days.iter().map(|d| weekday(d)).collect::<Result<_>>()?;
    spec.check(100_000)?;
    // The common window: every grid slot inside the hours and days.
    let slots = free_slots(&[], &spec);
    if slots.is_empty() {
        bail!("the window has no {} slot between {} and {}", o.duration, o.from, o.to);
    }
    if slots.len() > MAX_SLOTS {
        bail!(
            "the window has {} slots; --engine gmw takes at most {MAX_SLOTS} (a coarser --step or a shorter window)",
            slots.len()
        );
    }
    let cal = Calendar::load(&o.calendar, from, to, tz)?;
    let window = Window {
        starts: slots.iter().map(|s| s.start.timestamp()).collect(),
        duration: spec.duration.num_seconds(),
        days: slots
            .iter()
            .map(|s| day_of(s.start, tz, spec.working_hours, &spec))
            .collect(),
    };
    let events: Vec<Event> = cal
        .occurrences()
        .iter()
        .filter(|e| e.busy)
        .map(|e| Event {
            start: e.interval.start.timestamp(),
            end: e.interval.end.timestamp(),
            place: e.geo.or_else(|| e.location.as_deref().and_then(parse_place)),
        })
        .collect();
    // Busy time the calendar knows beyond events (VFREEBUSY) blocks slots too.
    let free_set: std::collections::HashSet<i64> = free_slots(cal.busy(), &spec)
        .iter()
        .map(|s| s.start.timestamp())
        .collect();
    let (kind, input) = if g.locations {
        let center = place_arg(
            g.center
                .as_deref()
                .ok_or_else(|| anyhow!("--locations needs --center LAT,LON (the shared grid's reference point)"))?,
            "--center",
        )?;
        if !(g.unit >= 1.0 && g.unit <= 100_000.0) {
            bail!("--unit must be from 1 to 100000 metres");
        }
        if !(g.speed > 0.0 && g.speed <= 2000.0) {
            bail!("--speed must be from 0 to 2000 km/h");
        }
        let home = g.home.as_deref().map(|h| place_arg(h, "--home")).transpose()?;
        let geo = Geo {
            params: LocationParams::new(slots.len()),
            origin: center,
            unit_m: g.unit,
        };
        let mut per_slot = slot_inputs(&geo, &window, &events, g.speed / 3.6, home);
        for (s, t) in per_slot.iter_mut().zip(&window.starts) {
            if !free_set.contains(t) {
                *s = Default::default();
            }
        }
        (Kind::Location(geo), ScheduleInput::Located(per_slot))
    } else {
        let mut bits = free_bits(&window, &events);
        for (b, t) in bits.iter_mut().zip(&window.starts) {
            *b &= free_set.contains(t);
        }
        (Kind::Availability, ScheduleInput::Free(bits))
    };
    let free = match &input {
        ScheduleInput::Free(b) => b.iter().filter(|&&x| x).count(),
        ScheduleInput::Located(v) => v.iter().filter(|s| s.prev.is_some() || s.next.is_some()).count(),
    };
    let hello = ScheduleHello::new(kind, &window);
    Ok(Prepared {
        tz,
        slots,
        hello,
        input,
        prefs: Preferences {
            prefer: o.prefer.iter().map(|p| p.parse()).collect::<Result<_, _>>()?,
            avoid: o.avoid.iter().map(|p| p.parse()).collect::<Result<_, _>>()?,
        },
        free,
    })
}

fn local(t: DateTime<Utc>, tz: Tz) -> String {
    t.with_timezone(&tz).to_rfc3339()
}

fn report(out: &Outcome, r: &RunReport, party: Party, p: &Prepared, o: &ScheduleArgs) -> Result<()> {
    let (proposed, common, leave): (Option<Slot>, Vec<Slot>, Option<bool>) = match out {
        Outcome::Common(ix) => {
            let common: Vec<Slot> = ix.iter().filter_map(|&i| p.slots.get(i).copied()).collect();
            let best = rank_slots(&common, &p.prefs, p.tz).first().copied();
            (best, common, None)
        }
        Outcome::Located(Some(Choice {
            slot,
            a_from_next,
            b_from_next,
        })) => {
            let s = p
                .slots
                .get(*slot)
                .copied()
                .ok_or_else(|| anyhow!("the circuit named slot {slot}, beyond the window"))?;
            let mine = if party == Party::A { *a_from_next } else { *b_from_next };
            (Some(s), vec![s], Some(mine))
        }
        Outcome::Located(None) => (None, Vec::new(), None),
    };
    let (and_gates, depth) = match p.hello.kind {
        Kind::Availability => (p.slots.len(), 1),
        Kind::Location(geo) => {
            let s = tacit_mpc::apps::location::size(&geo.params)?;
            (s.and_gates, s.depth)
        }
    };
    if o.json {
        let js = |s: &Slot| serde_json::json!({"start": local(s.start, p.tz), "end": local(s.end, p.tz)});
        let v = serde_json::json!({
            "engine": "gmw",
            "function": if matches!(out, Outcome::Common(_)) { "availability" } else { "location" },
            "start": proposed.as_ref().map(|s| local(s.start, p.tz)),
            "end": proposed.as_ref().map(|s| local(s.end, p.tz)),
            "slots": common.iter().map(js).collect::<Vec<_>>(),
            "leave_from": leave.map(|n| if n { "next" } else { "previous" }),
            "window_slots": p.slots.len(),
            "my_free_slots": p.free,
            "and_gates": and_gates,
            "depth": depth,
            "setup_ms": r.setup.time.as_secs_f64() * 1e3,
            "online_ms": r.online.time.as_secs_f64() * 1e3,
            "rounds": r.online.rounds,
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        match out {
            Outcome::Common(_) => {
                for s in &common {
                    println!(
                        "{} – {}",
                        s.start.with_timezone(&p.tz).format("%a %Y-%m-%d %H:%M"),
                        s.end.with_timezone(&p.tz).format("%H:%M %Z")
                    );
                }
            }
            Outcome::Located(_) => {
                if let (Some(s), Some(n)) = (proposed, leave) {
                    println!(
                        "{} – {} (leave from your {} appointment)",
                        s.start.with_timezone(&p.tz).format("%a %Y-%m-%d %H:%M"),
                        s.end.with_timezone(&p.tz).format("%H:%M %Z"),
                        if n { "next" } else { "previous" }
                    );
                }
            }
        }
    }
    let Some(best) = proposed else {
        eprintln!(
            "tacit schedule: no common {} slot in the window ({} AND gates, depth {})",
            if p.hello.kind == Kind::Availability {
                "free"
            } else {
                "reachable"
            },
            and_gates,
            depth
        );
        return Ok(());
    };
    eprintln!(
        "tacit schedule: proposed {} ({} common of {} slots; {} AND gates, depth {}; setup {:.1} ms, online {:.1} ms)",
        best.start.with_timezone(&p.tz).format("%a %Y-%m-%d %H:%M"),
        common.len(),
        p.slots.len(),
        and_gates,
        depth,
        r.setup.time.as_secs_f64() * 1e3,
        r.online.time.as_secs_f64() * 1e3
    );
    if let Some(path) = &o.out {
        let uid = format!("{}-{}@tacit", best.start.timestamp(), best.end.timestamp());
        let ics = tacit_calendar::invitation(&best, &o.summary, &uid, Utc::now(), None);
        std::fs::write(path, ics).with_context(|| format!("cannot write {}", path.display()))?;
        eprintln!("tacit schedule: invitation written to {}", path.display());
    }
    Ok(())
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread().enable_all().build()?)
}

/// `tacit schedule serve --engine gmw`: party a (listens; holds the token link). The
/// channel is the schedule command's (`--plain-tcp`, `--allow`, `--deadline`,
/// `--timeout`; the store's `pros-tls-identity` key). Sessions run side by side under
/// the project's admission control ([`tacit_net::guard`]): at most `--max-clients` at
/// once (a newcomer from a less busy address takes the busiest address's oldest
/// slot), each dropped at `--deadline`, each message awaited at most `--timeout`, so
/// that a client who connects and falls silent holds one slot, not the server.
pub fn serve(
    listen: &str,
    sessions: Option<u64>,
    o: &ScheduleArgs,
    g: &GmwScheduleArgs,
    store: Option<&Path>,
    ch: &ServeChannel,
) -> Result<()> {
    let p = Arc::new(prepare(o, g)?);
    let who = "tacit schedule serve (gmw)";
    let cfg = service_config(store, ch, 1 << 16, Protocol::MpcSchedule, who)?;
    let deadline = crate::pros::channel::secs("--deadline", ch.deadline)?;
    // Sessions run side by side on all cores (a GMW session is CPU work).
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    rt.block_on(crate::util::shutdown::serving(async {
        let l = FramedListener::bind(listen, &cfg.net)
            .await
            .with_context(|| format!("cannot listen on {listen}"))?;
        eprintln!(
            "{who}: {} of {} window slots free; at most {} sessions at once; listening on {}",
            p.free,
            p.slots.len(),
            cfg.max_clients,
            l.local_addr()?
        );
        let limits = tacit_net::guard::ServeLimits::new(cfg.max_clients, deadline);
        let guard = tacit_net::guard::Guard::new(limits)
            .on_event(Arc::new(move |e| eprintln!("{who}: {}", sanitize(&e.to_string()))));
        let (o, g) = (Arc::new(o.clone()), Arc::new(g.clone()));
        let store = store.map(Path::to_path_buf);
        let tls = cfg.tls.clone();
        let n = Arc::new(AtomicU64::new(0));
        l.serve(&guard, sessions, move |c| {
            let (p, o, g, store, tls) = (p.clone(), o.clone(), g.clone(), store.clone(), tls.clone());
            let n = n.fetch_add(1, Ordering::Relaxed) + 1;
            async move {
                let r = async {
                    let mut c = match tls {
                        Some(tls) => {
                            let c = c.accept_tls(tls).await?;
                            if let Some(fp) = c
                                .peer_certificate()
                                .and_then(|d| tacit_net::tls::spki_fingerprint(d).ok())
                            {
                                eprintln!("{who}: session {n}: the peer's key {}", hex::encode(fp));
                            }
                            c
                        }
                        None => c,
                    };
                    // Greet before the triple source is set up (which may take a
                    // while): the client is told at once what it reached.
                    c.greet().await?;
                    let mut src = g.triples.source(Party::A, store.as_deref()).await?;
                    let mut rng = SecureRng::from_os();
                    Ok::<_, anyhow::Error>(run_session(&mut c, Party::A, &p.hello, &p.input, &mut src, &mut rng).await?)
                }
                .await;
                let r = r.and_then(|(out, rep)| report(&out, &rep, Party::A, &p, &o));
                if let Err(e) = r {
                    eprintln!("{who}: session {n}: {}", sanitize(&format!("{e:#}")));
                }
            }
        })
        .await;
        Ok(())
    }))
}

/// `tacit schedule connect --engine gmw`: party b, over the schedule command's channel
/// (`--pin`, `--tofu`, `--plain-tcp`).
pub fn connect(
    addr: &str,
    o: &ScheduleArgs,
    g: &GmwScheduleArgs,
    store: Option<&Path>,
    ch: &ConnectChannel,
) -> Result<()> {
    let p = prepare(o, g)?;
    let (out, rep) = runtime()?.block_on(async {
        let (mut c, _) =
            crate::pros::channel::connect(store, ch, addr, Protocol::MpcSchedule, "tacit schedule connect").await?;
        let mut src = g.triples.source(Party::B, store).await?;
        let mut rng = SecureRng::from_os();
        Ok::<_, anyhow::Error>(run_session(&mut c, Party::B, &p.hello, &p.input, &mut src, &mut rng).await?)
    })?;
    report(&out, &rep, Party::B, &p, o)
}
