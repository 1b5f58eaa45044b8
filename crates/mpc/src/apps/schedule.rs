//! Scheduling under GMW (paper §6.1 and §6.2) between two processes: the window both
//! parties agree on, each party's calendar turned into circuit inputs in the clear
//! (free/busy bits; origins and reaches), and the session over a framed connection.
//!
//! A calendar reaches this module as a list of [`Event`]s (start, end, optional
//! coordinates); reading `.ics` files is the caller's business.
//!
//! **Reaches** (§6.2: "computed in plaintext using … the free time until the next
//! appointment and the duration of the meeting"). For a free slot `[t, t + D)`:
//! the previous origin is the place of the last event of the same day that ends by
//! `t` (else the home, from the start of the day's window) and its reach is
//! `speed · (t − end)`; the next origin is the place of the first event of the same
//! day that starts at or after `t + D` (else the home, until the end of the day's
//! window) and its reach is `speed · (start − (t + D))`. Reaches are converted to
//! grid units and capped at `2^r − 1` (a cap only ever rules meetings out). An event
//! without coordinates makes that origin unusable.
//!
//! **Projection.** `x = R·cos φ₀·(λ − λ₀)`, `y = R·(φ − φ₀)` (equirectangular around
//! the public reference point `(φ₀, λ₀)`, `R = 6 371 km`), in units of `unit_m`
//! metres, shifted by `2^{b−1}` so that the reference point is the grid's centre. A
//! place off the grid is unusable. Both parties must use the same reference point,
//! unit, speed bound on reaches (`r`) and grid (`b`): they are compared in the
//! [`ScheduleHello`] before anything else.

use super::availability;
use super::location::{self, Choice, LocationParams, Origin, SlotInput};
use crate::driver::{RunReport, SessionConfig, TripleSource, run};
use crate::messages::tags;
use crate::{Error, Party};
use rand_core::CryptoRngCore;
use sha2::{Digest, Sha256};
use tacit_net::FramedConn;
use tacit_wire::{Decode, Encode, ErrorMessage, Reader, Writer};

mod service;
pub use service::{BoundServer, CLIENT_DEADLINE, Client, HELLO_MAX_FRAME, Server, ServerBuilder, ServerEvent};

/// Earth radius of the projection (metres).
pub const EARTH_RADIUS_M: f64 = 6_371_000.0;
/// The most slots a window may have.
pub const MAX_SLOTS: usize = 1 << 14;

/// An appointment: `[start, end)` in Unix seconds and where it takes place.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Event {
    /// Start (Unix seconds).
    pub start: i64,
    /// End (Unix seconds).
    pub end: i64,
    /// Latitude and longitude in degrees, if known.
    pub place: Option<(f64, f64)>,
}

/// The public parameters of location-aware scheduling.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Geo {
    /// Circuit widths.
    pub params: LocationParams,
    /// The projection's reference point (latitude, longitude in degrees).
    pub origin: (f64, f64),
    /// Metres per grid unit.
    pub unit_m: f64,
}

impl Geo {
    /// Projects a place to the grid; `None` off the grid.
    pub fn project(&self, place: (f64, f64)) -> Option<(u32, u32)> {
        let (lat0, lon0) = self.origin;
        let k = std::f64::consts::PI / 180.0;
        let x = EARTH_RADIUS_M * (lat0 * k).cos() * (place.1 - lon0) * k / self.unit_m;
        let y = EARTH_RADIUS_M * (place.0 - lat0) * k / self.unit_m;
        let half = (1u64 << (self.params.coord_bits - 1)) as f64;
        let (gx, gy) = ((x + half).round(), (y + half).round());
        let max = (1u64 << self.params.coord_bits) as f64;
        if !(0.0..max).contains(&gx) || !(0.0..max).contains(&gy) || !gx.is_finite() || !gy.is_finite() {
            return None;
        }
        Some((gx as u32, gy as u32))
    }

    /// Metres per reach unit (`2^k` grid units).
    pub fn reach_unit_m(&self) -> f64 {
        self.unit_m * (1u64 << self.params.reach_shift) as f64
    }

    /// Metres to reach units (rounded down), capped at `2^r − 1`.
    pub fn reach_units(&self, metres: f64) -> u32 {
        let cap = (1u32 << self.params.reach_bits) - 1;
        // NaN and non-positive distances reach nothing.
        if metres.is_nan() || metres <= 0.0 {
            return 0;
        }
        (metres / self.reach_unit_m()).floor().min(cap as f64) as u32
    }
}

/// The window: `slots` candidate meetings `[from + j·step, from + j·step + duration)`
/// (the caller has already dropped those outside working hours).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    /// Slot starts (Unix seconds), ascending.
    pub starts: Vec<i64>,
    /// Meeting length in seconds.
    pub duration: i64,
    /// For each slot, the bounds of its day's window `[day_start, day_end)` (where the
    /// home origin applies before the first and after the last event).
    pub days: Vec<(i64, i64)>,
}

impl Window {
    /// Checks the window: 1 to [`MAX_SLOTS`] slots, a positive duration, a day per slot.
    pub fn check(&self) -> Result<(), Error> {
        if self.starts.is_empty() || self.starts.len() > MAX_SLOTS {
            return Err(Error::Params(format!(
                "the window has {} slots; between 1 and {MAX_SLOTS} are supported",
                self.starts.len()
            )));
        }
        if self.days.len() != self.starts.len() || self.duration <= 0 {
            return Err(Error::Params("malformed window".into()));
        }
        Ok(())
    }
}

fn busy_in(events: &[Event], t: i64, d: i64) -> bool {
    events.iter().any(|e| e.start < t + d && t < e.end)
}

/// Free/busy bits (`true` = free) of a calendar over the window (§6.1).
pub fn free_bits(window: &Window, events: &[Event]) -> Vec<bool> {
    window
        .starts
        .iter()
        .map(|&t| !busy_in(events, t, window.duration))
        .collect()
}

/// Origins and reaches of a calendar over the window (§6.2), with `speed` in m/s
/// and `home` for days without events before or after a slot.
pub fn slot_inputs(
    geo: &Geo,
    window: &Window,
    events: &[Event],
    speed: f64,
    home: Option<(f64, f64)>,
) -> Vec<SlotInput> {
    let mut sorted: Vec<Event> = events.to_vec();
    sorted.sort_by_key(|e| (e.start, e.end));
    let origin = |place: Option<(f64, f64)>, seconds: i64| -> Option<Origin> {
        let (x, y) = geo.project(place?)?;
        if seconds < 0 {
            return None;
        }
        Some(Origin {
            x,
            y,
            reach: geo.reach_units(speed * seconds as f64),
        })
    };
    window
        .starts
        .iter()
        .zip(&window.days)
        .map(|(&t, &(day_start, day_end))| {
            let d = window.duration;
            if busy_in(&sorted, t, d) {
                return SlotInput::default();
            }
            let prev = sorted
                .iter()
                .filter(|e| e.end <= t && e.end > day_start)
                .max_by_key(|e| e.end);
            let next = sorted
                .iter()
                .filter(|e| e.start >= t + d && e.start < day_end)
                .min_by_key(|e| e.start);
            SlotInput {
                prev: match prev {
                    Some(e) => origin(e.place, t - e.end),
                    None => origin(home, t - day_start),
                },
                next: match next {
                    Some(e) => origin(e.place, e.start - (t + d)),
                    None => origin(home, day_end - (t + d)),
                },
            }
        })
        .collect()
}

/// Which scheduling function.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind {
    /// Common free slots (§6.1).
    Availability,
    /// The slot with the least travel (§6.2).
    Location(Geo),
}

/// What both parties must agree on, sent by both before the computation (tag
/// `0x0530`): the kind, the window (slot starts and length) and, for the
/// location-aware function, the grid.
#[derive(Debug, Clone, PartialEq)]
pub struct ScheduleHello {
    /// The function.
    pub kind: Kind,
    /// SHA-256 of the slot starts.
    pub window: [u8; 32],
    /// Slots.
    pub slots: u32,
    /// Meeting length in seconds.
    pub duration: i64,
}

impl ScheduleHello {
    /// The hello of a window and function.
    pub fn new(kind: Kind, window: &Window) -> Self {
        let mut h = Sha256::new();
        h.update(b"tacit-mpc schedule window v1");
        for (s, d) in window.starts.iter().zip(&window.days) {
            h.update(s.to_be_bytes());
            h.update(d.0.to_be_bytes());
            h.update(d.1.to_be_bytes());
        }
        let kind = match kind {
            Kind::Location(mut g) => {
                g.params.slots = window.starts.len();
                Kind::Location(g)
            }
            k => k,
        };
        ScheduleHello {
            kind,
            window: h.finalize().into(),
            slots: window.starts.len() as u32,
            duration: window.duration,
        }
    }

    /// The context digest of the session.
    pub fn context(&self) -> [u8; 32] {
        Sha256::digest(self.to_wire()).into()
    }

    /// What differs from `other`, in words.
    pub fn difference(&self, other: &ScheduleHello) -> Option<String> {
        match (&self.kind, &other.kind) {
            (Kind::Availability, Kind::Location(_)) | (Kind::Location(_), Kind::Availability) => {
                return Some("one side schedules with locations, the other without".into());
            }
            (Kind::Location(a), Kind::Location(b)) => {
                if a.origin != b.origin {
                    return Some(format!(
                        "the reference points differ ({:.5},{:.5} and {:.5},{:.5})",
                        a.origin.0, a.origin.1, b.origin.0, b.origin.1
                    ));
                }
                if a.unit_m != b.unit_m {
                    return Some(format!("the grid units differ ({} m and {} m)", a.unit_m, b.unit_m));
                }
                if a.params != b.params {
                    return Some("the grid or reach widths differ".into());
                }
            }
            _ => {}
        }
        if self.slots != other.slots {
            return Some(format!("the windows have {} and {} slots", self.slots, other.slots));
        }
        if self.duration != other.duration {
            return Some(format!(
                "the meeting lengths differ ({} and {} minutes)",
                self.duration / 60,
                other.duration / 60
            ));
        }
        if self.window != other.window {
            return Some("the windows differ (other dates, hours, step or time zone)".into());
        }
        None
    }
}

impl Encode for ScheduleHello {
    fn encode(&self, w: &mut Writer) {
        w.put_envelope(tags::SCHEDULE_HELLO);
        match &self.kind {
            Kind::Availability => w.put_u8(0),
            Kind::Location(g) => {
                w.put_u8(1);
                w.put_u8(g.params.coord_bits as u8);
                w.put_u8(g.params.reach_bits as u8);
                w.put_u8(g.params.reach_shift as u8);
                w.put_u64(g.origin.0.to_bits());
                w.put_u64(g.origin.1.to_bits());
                w.put_u64(g.unit_m.to_bits());
            }
        }
        w.put_fixed(&self.window);
        w.put_u32(self.slots);
        w.put_u64(self.duration as u64);
    }
}

fn finite(r: &mut Reader<'_>, what: &'static str, lo: f64, hi: f64) -> tacit_wire::Result<f64> {
    let v = f64::from_bits(r.u64()?);
    if !(lo..=hi).contains(&v) {
        return Err(tacit_wire::Error::invalid(what, "out of range"));
    }
    Ok(v)
}

impl Decode for ScheduleHello {
    fn decode(r: &mut Reader<'_>) -> tacit_wire::Result<Self> {
        r.envelope(tags::SCHEDULE_HELLO, "schedule hello")?;
        let kind = match r.u8()? {
            0 => Kind::Availability,
            1 => {
                let coord_bits = r.u8()? as usize;
                let reach_bits = r.u8()? as usize;
                let reach_shift = r.u8()? as usize;
                let lat = finite(r, "latitude", -90.0, 90.0)?;
                let lon = finite(r, "longitude", -180.0, 180.0)?;
                let unit_m = finite(r, "grid unit", 1.0, 100_000.0)?;
                Kind::Location(Geo {
                    params: LocationParams {
                        slots: 0,
                        coord_bits,
                        reach_bits,
                        reach_shift,
                    },
                    origin: (lat, lon),
                    unit_m,
                })
            }
            k => return Err(tacit_wire::Error::invalid("schedule kind", format!("unknown kind {k}"))),
        };
        let window = r.array("window digest")?;
        let slots = r.u32()?;
        if slots as usize > MAX_SLOTS || slots == 0 {
            return Err(tacit_wire::Error::invalid("slots", format!("{slots} slots")));
        }
        let duration = r.u64()?;
        if duration == 0 || duration > 1 << 40 {
            return Err(tacit_wire::Error::invalid("duration", "out of range"));
        }
        let mut kind = kind;
        if let Kind::Location(g) = &mut kind {
            g.params.slots = slots as usize;
        }
        Ok(ScheduleHello {
            kind,
            window,
            slots,
            duration: duration as i64,
        })
    }
}

/// What a scheduling session found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Availability: the common free slots (indices into the window).
    Common(Vec<usize>),
    /// Location-aware: the chosen slot and origins, if any slot is feasible.
    Located(Option<Choice>),
}

/// One party's calendar, turned into inputs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScheduleInput {
    /// Free bits.
    Free(Vec<bool>),
    /// Origins per slot.
    Located(Vec<SlotInput>),
}

/// Runs one scheduling session over `conn` (party A listened, B connected): the hellos
/// are exchanged and compared, the circuit is built, and both learn the outcome.
pub async fn run_session<S: TripleSource>(
    conn: &mut FramedConn,
    party: Party,
    hello: &ScheduleHello,
    input: &ScheduleInput,
    source: &mut S,
    rng: &mut impl CryptoRngCore,
) -> Result<(Outcome, RunReport), Error> {
    let got = crate::driver::exchange(conn, &hello.to_wire()).await?;
    let peer = ScheduleHello::from_wire(&got)?;
    if let Some(why) = hello.difference(&peer) {
        let _ = conn
            .send(&ErrorMessage::new(format!("schedule mismatch: {why}")).to_wire())
            .await;
        return Err(Error::Peer(format!("schedules differently: {why}")));
    }
    let cfg = SessionConfig::new(1, crate::gmw::default_owners(2)).with_context(hello.context());
    match (&hello.kind, input) {
        (Kind::Availability, ScheduleInput::Free(bits)) => {
            if bits.len() != hello.slots as usize {
                return Err(Error::Input("free bits do not cover the window".into()));
            }
            let lc = crate::circuit::LayeredCircuit::new(availability::circuit(bits.len())?);
            let inputs = availability::inputs(party, bits);
            let report = run(conn, &lc, party, &cfg, &inputs, source, rng).await?;
            let common = report.outputs.values[0][0]
                .iter()
                .enumerate()
                .filter(|(_, b)| **b)
                .map(|(i, _)| i)
                .collect();
            Ok((Outcome::Common(common), report))
        }
        (Kind::Location(geo), ScheduleInput::Located(slots)) => {
            let p = LocationParams {
                slots: hello.slots as usize,
                ..geo.params
            };
            let lc = crate::circuit::LayeredCircuit::new(location::circuit(&p)?);
            let inputs = location::inputs(&p, party, slots)?;
            let report = run(conn, &lc, party, &cfg, &inputs, source, rng).await?;
            let choice = location::decode(&p, &report.outputs.values[0])?;
            Ok((Outcome::Located(choice), report))
        }
        _ => Err(Error::Input(
            "the calendar input does not match the scheduling kind".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn geo() -> Geo {
        Geo {
            params: LocationParams::new(4),
            origin: (52.52, 13.405),
            unit_m: 250.0,
        }
    }

    #[test]
    fn projection_and_reaches() {
        let g = geo();
        assert_eq!(g.project((52.52, 13.405)), Some((512, 512)));
        // 1 km north is 4 units up
        let (_, y) = g
            .project((52.52 + 1000.0 / EARTH_RADIUS_M * 180.0 / std::f64::consts::PI, 13.405))
            .unwrap();
        assert_eq!(y, 516);
        assert_eq!(g.project((60.0, 13.405)), None);
        assert_eq!(g.reach_units(1000.0), 2);
        assert_eq!(g.reach_units(1e9), 15);
        assert_eq!(g.reach_units(-5.0), 0);
        assert_eq!(g.reach_units(f64::NAN), 0);
    }

    #[test]
    fn slot_inputs_follow_the_calendar() {
        let g = geo();
        let h = 3600;
        let window = Window {
            starts: vec![8 * h, 9 * h, 10 * h, 11 * h],
            duration: h,
            days: vec![(8 * h, 22 * h); 4],
        };
        let office = (52.52, 13.405);
        let events = [Event {
            start: 9 * h,
            end: 10 * h,
            place: Some(office),
        }];
        assert_eq!(free_bits(&window, &events), vec![true, false, true, true]);
        let s = slot_inputs(&g, &window, &events, 1.0, Some((52.53, 13.405)));
        // 8:00: from home (0 s of travel), to the office (0 s left before 9:00)
        assert_eq!(s[0].prev.unwrap().reach, 0);
        assert_eq!(s[0].next.unwrap().reach, 0);
        assert_eq!(s[0].next.unwrap().x, 512);
        assert_eq!(s[1], SlotInput::default());
        // 10:00: from the office, left at 10:00
        assert_eq!((s[2].prev.unwrap().x, s[2].prev.unwrap().reach), (512, 0));
        // 11:00: an hour after the office at 1 m/s = 3.6 km = 7 reach units of 500 m
        assert_eq!(s[3].prev.unwrap().reach, 7);
        // no next event: home until 22:00 (capped)
        assert_eq!(s[3].next.unwrap().reach, 15);
        // an event without a place: that origin is unusable
        let s = slot_inputs(
            &g,
            &window,
            &[Event {
                place: None,
                ..events[0]
            }],
            1.0,
            None,
        );
        assert!(s[0].next.is_none() && s[0].prev.is_none() && s[2].prev.is_none());
    }

    #[test]
    fn hellos_roundtrip_and_name_differences() {
        let w = Window {
            starts: vec![0, 900],
            duration: 900,
            days: vec![(0, 3600); 2],
        };
        let a = ScheduleHello::new(Kind::Location(geo()), &w);
        assert_eq!(ScheduleHello::from_wire(&a.to_wire()).unwrap(), a);
        let b = ScheduleHello::new(Kind::Availability, &w);
        assert!(a.difference(&b).is_some());
        let w2 = Window {
            duration: 1800,
            ..w.clone()
        };
        assert!(
            b.difference(&ScheduleHello::new(Kind::Availability, &w2))
                .unwrap()
                .contains("lengths")
        );
        assert!(b.difference(&ScheduleHello::new(Kind::Availability, &w)).is_none());
    }
}
