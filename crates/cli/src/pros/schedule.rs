//! `tacit schedule serve|connect`: appoint — a meeting slot from two .ics calendars
//! by 3PR, over the project's channel (TLS 1.3 with pinned keys by default; see
//! [`crate::pros::channel`]).

use crate::pros::channel::{ConnectChannel, ServeChannel, announce, client, client_label, server};
use crate::pros::cmd::{SmallKeysArg, limits, progress_hook, runtime, session_label};
use crate::schedule_args::{EngineArg, ScheduleArgs, SlotEncodingArg, weekday};
use crate::util::sanitize;
use anyhow::{Context, Result, bail};
use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use clap::Subcommand;
use std::path::Path;
use std::sync::Arc;
use tacit_calendar::{
    Calendar, Preferences, Slot, SlotSpec, free_slots, parse_hours, parse_span, parse_time, parse_zone, rank_slots,
};
use tacit_pros::paillier::DEFAULT_KEY_BITS;
use tacit_pros::schedule::{self, Agreed, MAX_SLOTS, SlotEncoding, Window};
use tacit_pros::service::Event;

/// `tacit schedule`.
#[derive(Debug, Subcommand)]
pub enum ScheduleCommand {
    /// Wait for a peer and agree on a slot (party B).
    #[command(after_help = "\
Example:
  tacit schedule serve --calendar bob.ics --listen 127.0.0.1:7990 \\
      --from 2025-01-06 --to 2025-01-11 --duration 30m --step 30m --hours 09:00-17:00 --tz Europe/Berlin --sessions 1
  tacit schedule serve ... --allow 9a0e…     # only the person whose key this is

Runs over TLS 1.3 with this store's key (printed: the peer pins it or records it on
first use). The peer presents its own key, printed with the agreed slot; --allow
restricts who may schedule with you. The peer holds the Paillier key and so can test
guesses against your offered slots (docs/pros.md): offer few (--max-slots), and bound
a session with --max-peer-slots and --max-comparisons.
The first serve on a store makes its ring-Pedersen parameters (two 1536-bit safe
primes, seconds to a minute, shown with a spinner) and keeps them there: clients prove
their Paillier key's factors large against them (docs/pros.md, \"The modulus proof\").")]
    Serve {
        /// Address to listen on.
        #[arg(long, value_name = "ADDR")]
        listen: String,
        /// Exit after this many sessions: a number (0: exit once ready) or `forever`
        /// (the default).
        #[arg(long, value_name = "N", value_parser = crate::util::parse_sessions)]
        sessions: Option<u64>,
        /// Smallest peer key accepted (1024 at the least, unless --insecure-small-keys).
        #[arg(long, default_value_t = 2048)]
        min_key_bits: u32,
        #[command(flatten)]
        small_keys: SmallKeysArg,
        /// The most slots a peer may offer (the session costs up to n² comparisons
        /// with n the longer list).
        #[arg(long, default_value_t = 128, value_name = "N")]
        max_peer_slots: u32,
        /// The most comparisons one session may need (refused at the peer's hello if
        /// n² exceeds it).
        #[arg(long, default_value_t = 16_384, value_name = "N")]
        max_comparisons: u64,
        #[command(flatten)]
        opts: Box<ScheduleArgs>,
        #[command(flatten)]
        channel: ServeChannel,
    },
    /// Connect to a peer and agree on a slot (party A, holds the key).
    #[command(after_help = "\
Example:
  tacit schedule connect --calendar alice.ics --connect 127.0.0.1:7990 \\
      --from 2025-01-06 --to 2025-01-11 --duration 30m --step 30m --hours 09:00-17:00 --tz Europe/Berlin \\
      --prefer morning --avoid friday --out meeting.ics
  tacit schedule connect ... --pin 3f1c…      # the server's key, as it printed it")]
    Connect {
        /// The peer.
        #[arg(long, value_name = "ADDR")]
        connect: String,
        /// Paillier key size (`--bits` is accepted too; 1024 at the least, unless
        /// --insecure-small-keys).
        #[arg(long, alias = "bits", default_value_t = DEFAULT_KEY_BITS)]
        key_bits: u32,
        #[command(flatten)]
        small_keys: SmallKeysArg,
        /// The most slots the server may bring (refused above max(yours, this)): a
        /// hostile server gets n guesses against each of your offered slots.
        #[arg(long, default_value_t = schedule::DEFAULT_MAX_PEER_SLOTS, value_name = "N")]
        max_peer_slots: u32,
        #[command(flatten)]
        opts: Box<ScheduleArgs>,
        #[command(flatten)]
        channel: ConnectChannel,
    },
}

struct Prepared {
    window: Window,
    slots: Vec<Slot>,
    tz: Tz,
    free: usize,
}

fn prepare(o: &ScheduleArgs) -> Result<Prepared> {
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
    if o.max_slots == 0 || o.max_slots > MAX_SLOTS {
        bail!("--max-slots must be from 1 to {MAX_SLOTS}");
    }
    let cal = Calendar::load(&o.calendar, from, to, tz)?;
    let prefs = Preferences {
        prefer: o.prefer.iter().map(|p| p.parse()).collect::<Result<_, _>>()?,
        avoid: o.avoid.iter().map(|p| p.parse()).collect::<Result<_, _>>()?,
    };
    let free = free_slots(cal.busy(), &spec);
    let mut slots = rank_slots(&free, &prefs, tz);
    slots.truncate(o.max_slots);
    if slots.is_empty() {
        bail!(
            "your calendar has no free {} slot between {} and {}",
            o.duration,
            o.from,
            o.to
        );
    }
    let window = Window {
        from,
        to,
        duration: spec.duration,
        step: spec.step,
        encoding: match o.encoding {
            SlotEncodingArg::Default => SlotEncoding::Default,
            SlotEncodingArg::Paper => SlotEncoding::Paper,
        },
    };
    for s in &slots {
        window.element(s)?;
    }
    Ok(Prepared {
        window,
        slots,
        tz,
        free: free.len(),
    })
}

fn local(t: DateTime<Utc>, tz: Tz) -> String {
    t.with_timezone(&tz).to_rfc3339()
}

fn report(a: &Agreed, p: &Prepared, o: &ScheduleArgs) -> Result<()> {
    if o.json {
        let slots: Vec<_> = a
            .slots
            .iter()
            .map(|s| serde_json::json!({"start": local(s.start, p.tz), "end": local(s.end, p.tz)}))
            .collect();
        let first = slots.first().cloned().unwrap_or(serde_json::Value::Null);
        let mut out = serde_json::json!({
            "start": first.get("start"),
            "end": first.get("end"),
            "slots": slots,
            "rounds": a.reconciled.rounds,
            "n": a.reconciled.n,
            "my_free_slots": p.free,
            "my_offered_slots": p.slots.len(),
        });
        if a.slots.is_empty() {
            out["start"] = serde_json::Value::Null;
            out["end"] = serde_json::Value::Null;
        }
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        for s in &a.slots {
            println!(
                "{} – {}",
                s.start.with_timezone(&p.tz).format("%a %Y-%m-%d %H:%M"),
                s.end.with_timezone(&p.tz).format("%H:%M %Z")
            );
        }
    }
    if a.slots.is_empty() {
        eprintln!("tacit schedule: no common free slot ({} rounds)", a.reconciled.rounds);
        return Ok(());
    }
    eprintln!(
        "tacit schedule: agreed after {} rounds; offered {} of my {} free slots",
        a.reconciled.rounds,
        p.slots.len(),
        p.free
    );
    if let Some(path) = &o.out {
        let s = &a.slots[0];
        let uid = format!("{}-{}@tacit", s.start.timestamp(), s.end.timestamp());
        let ics = tacit_calendar::invitation(s, &o.summary, &uid, Utc::now(), None);
        std::fs::write(path, ics).with_context(|| format!("cannot write {}", path.display()))?;
        eprintln!("tacit schedule: invitation written to {}", path.display());
    }
    Ok(())
}

pub fn run(cmd: ScheduleCommand, store: Option<&Path>) -> Result<()> {
    match &cmd {
        ScheduleCommand::Serve {
            listen,
            sessions,
            opts,
            channel,
            ..
        } if opts.engine == EngineArg::Gmw => {
            return crate::mpc::schedule::serve(listen, *sessions, opts, &opts.gmw, store, channel);
        }
        ScheduleCommand::Connect {
            connect, opts, channel, ..
        } if opts.engine == EngineArg::Gmw => {
            return crate::mpc::schedule::connect(connect, opts, &opts.gmw, store, channel);
        }
        _ => {}
    }
    match cmd {
        ScheduleCommand::Serve {
            listen,
            sessions,
            min_key_bits,
            small_keys,
            max_peer_slots,
            max_comparisons,
            opts,
            channel,
        } => {
            let who = "tacit schedule serve";
            let insecure_small_keys = small_keys.check_serve(min_key_bits, who)?;
            let p = Arc::new(prepare(&opts)?);
            let opts = Arc::new(opts);
            let limits = limits(max_peer_slots.min(MAX_SLOTS as u32), max_comparisons)?;
            let (scheme, variant) = (opts.scheme.get(), opts.variant.get());
            let make = |st| schedule::Server::builder(st, p.window, scheme, variant, p.slots.clone()).limits(limits);
            let b = server(store, &channel, who, make, min_key_bits, insecure_small_keys, sessions)?
                .progress(move |peer| progress_hook(session_label(who, peer), false));
            runtime()?.block_on(crate::util::shutdown::serving(async {
                let server = b.bind(&listen).await?;
                announce(&server, who);
                eprintln!(
                    "{who}: {} of {} free slots offered; listening on {}",
                    p.slots.len(),
                    p.free,
                    server.local_addr()?
                );
                let events = move |e: Event<Agreed>| match e {
                    Event::Done {
                        session,
                        peer,
                        client,
                        result,
                        ..
                    } => match result {
                        Ok(a) => {
                            eprintln!("{who}: session {session} with {peer} ({})", client_label(&client));
                            if let Err(e) = report(&a, &p, &opts) {
                                eprintln!("{who}: {e}");
                            }
                        }
                        Err(why) => eprintln!(
                            "{who}: session {session} from {peer} ({}): {}",
                            client_label(&client),
                            sanitize(&why)
                        ),
                    },
                    Event::Busy { peer } => eprintln!("{who}: refused {peer}: the server is busy (--max-clients)"),
                };
                server.serve(events).await?;
                Ok::<_, anyhow::Error>(())
            }))
        }
        ScheduleCommand::Connect {
            connect: addr,
            key_bits,
            small_keys,
            max_peer_slots,
            opts,
            channel,
        } => {
            if max_peer_slots == 0 || max_peer_slots > MAX_SLOTS as u32 {
                bail!("--max-peer-slots must be from 1 to {MAX_SLOTS}");
            }
            small_keys.check_own(key_bits)?;
            let p = prepare(&opts)?;
            let who = "tacit schedule connect";
            let (scheme, variant) = (opts.scheme.get(), opts.variant.get());
            let make = |st| {
                schedule::connect_to(st, p.window, scheme, variant, p.slots.clone()).max_peer_slots(max_peer_slots)
            };
            let b = small_keys.apply(client(store, &channel, &addr, who, make)?.key_bits(key_bits));
            let hook = progress_hook(who.to_string(), true);
            let out = runtime()?.block_on(b.progress(move |s| hook(s)).run(&addr))?;
            if let Some(fp) = out.server_key {
                eprintln!("{who}: scheduled with {addr} (key {})", tacit_net::channel::hex(&fp));
            }
            report(&out.result, &p, &opts)
        }
    }
}
