//! Calendars for tacit's private schedulers: iCalendar (RFC 5545) files in, busy time,
//! free slots and invitations out. Both the PROS scheduler (`tacit-pros`, appoint) and
//! the GMW scheduler read calendars through this crate, so both see the same busy
//! time.
//!
//! * [`Calendar::parse`] reads VEVENTs — `DTSTART`/`DTEND`/`DURATION` as UTC,
//!   `TZID` or floating times, all-day dates; `RRULE` expanded with the `rrule` crate;
//!   `RDATE`, `EXDATE` (date-times and dates); `RECURRENCE-ID` overrides; events with
//!   `TRANSP:TRANSPARENT` or `STATUS:CANCELLED` do not block time — and VFREEBUSY
//!   (`FREEBUSY` periods of every `FBTYPE` but `FREE`). Parsing and line unfolding are
//!   the `icalendar` crate's.
//! * [`free_slots`] lists the slots of a window, on a fixed grid (`from + k·step`), of
//!   a given duration, inside working hours and working days in a time zone, that
//!   overlap no busy interval; [`rank_slots`] orders them by [`Preferences`] (prefer
//!   mornings, avoid Fridays, …), best first.
//! * Each event keeps its `LOCATION` and `GEO` ([`Occurrence`]) for location-aware
//!   schedulers.
//! * [`invitation`] writes an agreed slot as an .ics invitation.
//!
//! ```
//! use chrono::{TimeZone, Utc};
//! use tacit_calendar::{Calendar, SlotSpec, free_slots};
//!
//! let ics = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nBEGIN:VEVENT\r\nUID:1\r\n\
//!            DTSTART:20250106T090000Z\r\nDTEND:20250106T100000Z\r\nSUMMARY:standup\r\n\
//!            END:VEVENT\r\nEND:VCALENDAR\r\n";
//! let from = Utc.with_ymd_and_hms(2025, 1, 6, 8, 0, 0).unwrap();
//! let to = Utc.with_ymd_and_hms(2025, 1, 6, 12, 0, 0).unwrap();
//! let cal = Calendar::parse(ics, from, to, chrono_tz::UTC).unwrap();
//! let spec = SlotSpec::new(from, to, chrono::Duration::minutes(60), chrono::Duration::minutes(60));
//! let slots = free_slots(cal.busy(), &spec);
//! let starts: Vec<u32> = slots.iter().map(|s| chrono::Timelike::hour(&s.start)).collect();
//! assert_eq!(starts, vec![8, 10, 11]);
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

use chrono::{DateTime, Datelike, Duration, NaiveDate, NaiveDateTime, NaiveTime, TimeZone, Timelike, Utc, Weekday};
use chrono_tz::Tz;
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

/// Calendar errors: what is wrong with a file or a request, in one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The file could not be read.
    #[error("cannot read {path}: {why}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        why: String,
    },
    /// The text is not iCalendar, or a property cannot be understood.
    #[error("invalid iCalendar data: {0}")]
    Ics(String),
    /// A request that makes no sense (an empty window, a zero step, …).
    #[error("{0}")]
    Invalid(String),
}

/// Result alias.
pub type Result<T> = core::result::Result<T, Error>;

/// The largest .ics file read (16 MiB).
pub const MAX_ICS_BYTES: usize = 16 << 20;
/// The most occurrences one recurring event may produce inside a window (more is an
/// error, not a silent cut: a cut would show busy time as free).
pub const MAX_OCCURRENCES: u16 = 10_000;
/// The most occurrences a whole calendar may produce inside a window.
pub const MAX_TOTAL_OCCURRENCES: usize = 100_000;
/// The most recurrences the whole calendar may step through, from each rule's
/// `DTSTART` to the window's end (a `FREQ=SECONDLY` rule from 1900 would otherwise run
/// for hours before it reaches the window).
pub const MAX_EXPANSION: u64 = 500_000;
/// The longest event or duration read: 100 years.
pub const MAX_DURATION_DAYS: i64 = 36_525;

/// A half-open time interval `[start, end)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Interval {
    /// Start (inclusive).
    pub start: DateTime<Utc>,
    /// End (exclusive).
    pub end: DateTime<Utc>,
}

impl Interval {
    /// Whether the two intervals share a moment.
    pub fn overlaps(&self, other: &Interval) -> bool {
        self.start < other.end && other.start < self.end
    }
}

/// One occurrence of an event inside the window, with what a location-aware scheduler
/// needs. The texts are shared by all occurrences of an event (a recurring event with
/// a long `LOCATION` costs its text once, not once per occurrence).
#[derive(Debug, Clone, PartialEq)]
pub struct Occurrence {
    /// `UID`.
    pub uid: Arc<str>,
    /// `SUMMARY`.
    pub summary: Option<Arc<str>>,
    /// When.
    pub interval: Interval,
    /// Whether it was an all-day event.
    pub all_day: bool,
    /// Whether it blocks time (`TRANSP:OPAQUE`, not cancelled).
    pub busy: bool,
    /// `LOCATION`.
    pub location: Option<Arc<str>>,
    /// `GEO`: latitude and longitude in degrees.
    pub geo: Option<(f64, f64)>,
}

/// A calendar restricted to a window: its occurrences and merged busy time.
#[derive(Debug, Clone, PartialEq)]
pub struct Calendar {
    occurrences: Vec<Occurrence>,
    busy: Vec<Interval>,
}

type Props<'a> = Vec<&'a icalendar::parser::Property<'a>>;

fn props<'a>(c: &'a icalendar::parser::Component<'a>, name: &str) -> Props<'a> {
    c.properties
        .iter()
        .filter(|p| p.name.as_str().eq_ignore_ascii_case(name))
        .collect()
}

fn prop<'a>(c: &'a icalendar::parser::Component<'a>, name: &str) -> Option<&'a icalendar::parser::Property<'a>> {
    props(c, name).into_iter().next()
}

fn param<'a>(p: &'a icalendar::parser::Property<'a>, key: &str) -> Option<&'a str> {
    p.params
        .iter()
        .find(|x| x.key.as_str().eq_ignore_ascii_case(key))
        .and_then(|x| x.val.as_ref().map(|v| v.as_str().trim_matches('"')))
}

fn text(p: &icalendar::parser::Property<'_>) -> String {
    p.val
        .as_str()
        .replace("\\n", "\n")
        .replace("\\N", "\n")
        .replace("\\,", ",")
        .replace("\\;", ";")
        .replace("\\\\", "\\")
}

/// A parsed DTSTART/DTEND-like value.
#[derive(Debug, Clone, Copy)]
enum When {
    Date(NaiveDate),
    Utc(DateTime<Utc>),
    Zoned(NaiveDateTime, Tz),
    Floating(NaiveDateTime),
}

/// Most nested components (`BEGIN:` inside `BEGIN:`): real calendars nest three
/// deep (VCALENDAR, VEVENT, VALARM; VTIMEZONE, STANDARD).
pub const MAX_NESTING: usize = 16;

/// Refuses components nested deeper than [`MAX_NESTING`] before the parser sees them:
/// the `icalendar` parser recurses once per level, and 20 000 nested components
/// (320 KB) overflowed the main thread's stack.
fn check_nesting(unfolded: &str) -> Result<()> {
    let mut depth = 0usize;
    for line in unfolded.lines() {
        let line = line.trim_start();
        let head = line.get(..6).unwrap_or("");
        if head.eq_ignore_ascii_case("BEGIN:") {
            depth += 1;
            if depth > MAX_NESTING {
                return Err(Error::Ics(format!("components nested more than {MAX_NESTING} deep")));
            }
        } else if line.get(..4).unwrap_or("").eq_ignore_ascii_case("END:") {
            depth = depth.saturating_sub(1);
        }
    }
    Ok(())
}

fn parse_tz(name: &str) -> Result<Tz> {
    name.parse::<Tz>().map_err(|_| {
        Error::Ics(format!(
            "unknown time zone {name:?} (use an IANA name such as Europe/Berlin)"
        ))
    })
}

fn parse_when_value(v: &str, is_date: bool, tzid: Option<&str>) -> Result<When> {
    let v = v.trim();
    if is_date || (v.len() == 8 && !v.contains('T')) {
        return NaiveDate::parse_from_str(v, "%Y%m%d")
            .map(When::Date)
            .map_err(|_| Error::Ics(format!("bad date {v:?}")));
    }
    if let Some(s) = v.strip_suffix('Z') {
        let t = NaiveDateTime::parse_from_str(s, "%Y%m%dT%H%M%S")
            .map_err(|_| Error::Ics(format!("bad date-time {v:?}")))?;
        return Ok(When::Utc(Utc.from_utc_datetime(&t)));
    }
    let t =
        NaiveDateTime::parse_from_str(v, "%Y%m%dT%H%M%S").map_err(|_| Error::Ics(format!("bad date-time {v:?}")))?;
    match tzid {
        Some(z) => Ok(When::Zoned(t, parse_tz(z)?)),
        None => Ok(When::Floating(t)),
    }
}

fn parse_when(p: &icalendar::parser::Property<'_>) -> Result<When> {
    let is_date = param(p, "VALUE").is_some_and(|v| v.eq_ignore_ascii_case("DATE"));
    parse_when_value(p.val.as_str(), is_date, param(p, "TZID"))
}

fn local_to_utc(t: NaiveDateTime, tz: Tz) -> DateTime<Utc> {
    // a time in a DST gap is moved forward by the gap; an ambiguous time takes the
    // earlier offset (RFC 5545 §3.3.5)
    match tz.from_local_datetime(&t) {
        chrono::LocalResult::Single(d) => d.with_timezone(&Utc),
        chrono::LocalResult::Ambiguous(a, _) => a.with_timezone(&Utc),
        chrono::LocalResult::None => local_to_utc(t + Duration::hours(1), tz),
    }
}

fn to_utc(w: When, default_tz: Tz) -> DateTime<Utc> {
    match w {
        When::Date(d) => local_to_utc(d.and_time(NaiveTime::MIN), default_tz),
        When::Utc(t) => t,
        When::Zoned(t, tz) => local_to_utc(t, tz),
        When::Floating(t) => local_to_utc(t, default_tz),
    }
}

/// Parses an RFC 5545 duration (`P1D`, `PT1H30M`, `-PT15M`, `P2W`), at most
/// [`MAX_DURATION_DAYS`] long (checked arithmetic: a huge value is an error, not a
/// panic).
pub fn parse_ics_duration(s: &str) -> Result<Duration> {
    let shown: String = s.chars().take(40).collect();
    let bad = || Error::Ics(format!("bad duration {shown:?}"));
    let too_long = || Error::Ics(format!("duration {shown:?} is longer than {MAX_DURATION_DAYS} days"));
    let (neg, rest) = match s.trim().strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.trim().strip_prefix('+').unwrap_or(s.trim())),
    };
    let rest = rest.strip_prefix('P').ok_or_else(bad)?;
    let mut total = Duration::zero();
    let mut num = String::new();
    let mut in_time = false;
    for ch in rest.chars() {
        match ch {
            'T' => in_time = true,
            '0'..='9' => num.push(ch),
            u => {
                if num.is_empty() {
                    return Err(bad());
                }
                let v: i64 = num.parse().map_err(|_| too_long())?;
                num.clear();
                let part = match (u, in_time) {
                    ('W', false) => Duration::try_weeks(v),
                    ('D', false) => Duration::try_days(v),
                    ('H', true) => Duration::try_hours(v),
                    ('M', true) => Duration::try_minutes(v),
                    ('S', true) => Duration::try_seconds(v),
                    _ => return Err(bad()),
                }
                .ok_or_else(too_long)?;
                total = total.checked_add(&part).ok_or_else(too_long)?;
                if total > Duration::days(MAX_DURATION_DAYS) {
                    return Err(too_long());
                }
            }
        }
    }
    if !num.is_empty() {
        return Err(bad());
    }
    Ok(if neg { -total } else { total })
}

fn rrule_tz(w: When, default_tz: Tz) -> (rrule::Tz, NaiveDateTime) {
    match w {
        When::Date(d) => (rrule::Tz::Tz(default_tz), d.and_time(NaiveTime::MIN)),
        When::Utc(t) => (rrule::Tz::UTC, t.naive_utc()),
        When::Zoned(t, tz) => (rrule::Tz::Tz(tz), t),
        When::Floating(t) => (rrule::Tz::Tz(default_tz), t),
    }
}

struct RawEvent<'a> {
    comp: &'a icalendar::parser::Component<'a>,
    uid: String,
    start: When,
    duration: Duration,
    recurrence_id: Option<DateTime<Utc>>,
}

impl Calendar {
    /// Reads an .ics file (at most [`MAX_ICS_BYTES`]).
    pub fn load(path: &Path, from: DateTime<Utc>, to: DateTime<Utc>, default_tz: Tz) -> Result<Calendar> {
        // refused while reading past the limit, never held whole
        let text =
            tacit_wire::file::read_text_bounded(path, "calendar", MAX_ICS_BYTES as u64).map_err(|e| Error::Io {
                path: path.display().to_string(),
                why: match e {
                    tacit_wire::file::FileError::Io { source, .. } => source.to_string(),
                    tacit_wire::file::FileError::TooLarge { limit, .. } => {
                        format!("larger than {limit} bytes, the limit")
                    }
                    _ => "not UTF-8 text".into(),
                },
            })?;
        Self::parse(&text, from, to, default_tz).map_err(|e| match e {
            Error::Ics(m) => Error::Ics(format!("{}: {m}", path.display())),
            other => other,
        })
    }

    /// Parses iCalendar text and keeps what touches `[from, to)`. Floating times and
    /// all-day dates are read in `default_tz` (the user's zone).
    pub fn parse(ics: &str, from: DateTime<Utc>, to: DateTime<Utc>, default_tz: Tz) -> Result<Calendar> {
        if to <= from {
            return Err(Error::Invalid("the window ends before it starts".into()));
        }
        if ics.len() > MAX_ICS_BYTES {
            return Err(Error::Ics(format!("{} bytes; the limit is {MAX_ICS_BYTES}", ics.len())));
        }
        let unfolded = icalendar::parser::unfold(ics);
        check_nesting(&unfolded)?;
        let cal = icalendar::parser::read_calendar(&unfolded).map_err(|e| {
            Error::Ics(
                e.lines()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("unparsable")
                    .trim()
                    .to_string(),
            )
        })?;
        let has_vcal = unfolded
            .trim_start()
            .to_ascii_uppercase()
            .starts_with("BEGIN:VCALENDAR");
        if !has_vcal {
            return Err(Error::Ics("no BEGIN:VCALENDAR".into()));
        }
        let window = Interval { start: from, end: to };
        let mut raws = Vec::new();
        let mut freebusy = Vec::new();
        for c in &cal.components {
            match c.name.as_str().to_ascii_uppercase().as_str() {
                "VEVENT" => raws.push(Self::raw_event(c, default_tz)?),
                "VFREEBUSY" => freebusy.extend(Self::freebusy(c, default_tz)?),
                _ => {}
            }
        }
        // RECURRENCE-ID overrides: original starts by uid (looked up once per event,
        // not once per date: a long UID with many RDATEs was cloned and hashed per
        // RDATE)
        let mut overridden: HashMap<&str, HashSet<DateTime<Utc>>> = HashMap::new();
        for r in &raws {
            if let Some(t) = r.recurrence_id {
                overridden.entry(r.uid.as_str()).or_default().insert(t);
            }
        }
        let no_overrides = HashSet::new();
        let mut occurrences: Vec<Occurrence> = Vec::new();
        let mut budget = MAX_EXPANSION;
        for r in &raws {
            let over = overridden.get(r.uid.as_str()).unwrap_or(&no_overrides);
            let starts: Vec<DateTime<Utc>> = if r.recurrence_id.is_none() && prop(r.comp, "RRULE").is_some() {
                Self::expand(r, from, to, default_tz, &mut budget)?
                    .into_iter()
                    .filter(|t| !over.contains(t))
                    .collect()
            } else {
                let mut v = vec![to_utc(r.start, default_tz)];
                if r.recurrence_id.is_none() {
                    v.extend(Self::rdates(r.comp, default_tz)?);
                    v.retain(|t| !over.contains(t));
                }
                v
            };
            let transparent =
                prop(r.comp, "TRANSP").is_some_and(|p| p.val.as_str().trim().eq_ignore_ascii_case("TRANSPARENT"));
            let cancelled =
                prop(r.comp, "STATUS").is_some_and(|p| p.val.as_str().trim().eq_ignore_ascii_case("CANCELLED"));
            let location: Option<Arc<str>> = prop(r.comp, "LOCATION").map(|p| text(p).into());
            let geo = prop(r.comp, "GEO").and_then(|p| {
                let (a, b) = p.val.as_str().split_once(';')?;
                Some((a.trim().parse().ok()?, b.trim().parse().ok()?))
            });
            let summary: Option<Arc<str>> = prop(r.comp, "SUMMARY").map(|p| text(p).into());
            let uid: Arc<str> = r.uid.as_str().into();
            for s in starts {
                let end = s
                    .checked_add_signed(r.duration)
                    .ok_or_else(|| Error::Ics(format!("event {:?} ends after the last representable date", r.uid)))?;
                let iv = Interval { start: s, end };
                if iv.overlaps(&window) || (iv.start == iv.end && iv.start >= from && iv.start < to) {
                    if occurrences.len() >= MAX_TOTAL_OCCURRENCES {
                        return Err(Error::Ics(format!(
                            "more than {MAX_TOTAL_OCCURRENCES} event occurrences in the window"
                        )));
                    }
                    occurrences.push(Occurrence {
                        uid: uid.clone(),
                        summary: summary.clone(),
                        interval: iv,
                        all_day: matches!(r.start, When::Date(_)),
                        busy: !transparent && !cancelled,
                        location: location.clone(),
                        geo,
                    });
                }
            }
        }
        occurrences.sort_by_key(|o| o.interval);
        let mut busy: Vec<Interval> = occurrences.iter().filter(|o| o.busy).map(|o| o.interval).collect();
        busy.extend(freebusy.into_iter().filter(|i| i.overlaps(&window)));
        Ok(Calendar {
            occurrences,
            busy: merge(busy),
        })
    }

    fn raw_event<'a>(c: &'a icalendar::parser::Component<'a>, default_tz: Tz) -> Result<RawEvent<'a>> {
        let uid = prop(c, "UID").map(|p| p.val.as_str().to_string()).unwrap_or_default();
        let ds = prop(c, "DTSTART").ok_or_else(|| Error::Ics(format!("event {uid:?} has no DTSTART")))?;
        let start = parse_when(ds)?;
        let duration = if let Some(de) = prop(c, "DTEND") {
            let end = parse_when(de)?;
            let d = to_utc(end, default_tz) - to_utc(start, default_tz);
            if d > Duration::days(MAX_DURATION_DAYS) {
                return Err(Error::Ics(format!(
                    "event {uid:?} lasts longer than {MAX_DURATION_DAYS} days"
                )));
            }
            d
        } else if let Some(du) = prop(c, "DURATION") {
            parse_ics_duration(du.val.as_str())?
        } else if matches!(start, When::Date(_)) {
            Duration::days(1)
        } else {
            Duration::zero()
        };
        if duration < Duration::zero() {
            return Err(Error::Ics(format!("event {uid:?} ends before it starts")));
        }
        let recurrence_id = match prop(c, "RECURRENCE-ID") {
            Some(p) => Some(to_utc(parse_when(p)?, default_tz)),
            None => None,
        };
        Ok(RawEvent {
            comp: c,
            uid,
            start,
            duration,
            recurrence_id,
        })
    }

    fn rdates(c: &icalendar::parser::Component<'_>, default_tz: Tz) -> Result<Vec<DateTime<Utc>>> {
        let mut out = Vec::new();
        for p in props(c, "RDATE") {
            let is_date = param(p, "VALUE").is_some_and(|v| v.eq_ignore_ascii_case("DATE"));
            for v in p.val.as_str().split(',') {
                let v = v.split('/').next().unwrap_or(v);
                out.push(to_utc(parse_when_value(v, is_date, param(p, "TZID"))?, default_tz));
            }
        }
        Ok(out)
    }

    /// The starts of a recurring event inside the window, stepping through at most
    /// `budget` recurrences from its `DTSTART` (shared by the whole calendar).
    fn expand(
        r: &RawEvent<'_>,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        default_tz: Tz,
        budget: &mut u64,
    ) -> Result<Vec<DateTime<Utc>>> {
        let (tz, local) = rrule_tz(r.start, default_tz);
        let dtstart = match tz.from_local_datetime(&local) {
            chrono::LocalResult::Single(d) | chrono::LocalResult::Ambiguous(d, _) => d,
            chrono::LocalResult::None => {
                return Err(Error::Ics(format!(
                    "event {:?} starts at a time that does not exist",
                    r.uid
                )));
            }
        };
        let mut set = rrule::RRuleSet::new(dtstart);
        // Whether a rule should still give dates when its iterator ends before the
        // window does (see below).
        let window_end = to.with_timezone(&rrule::Tz::UTC);
        let mut open_ended = false;
        let mut most_count = 0u32;
        for p in props(r.comp, "RRULE") {
            // RFC 5545's recurrence grammar is ASCII; the rrule crate slices BYDAY
            // values by byte and panics inside a multi-byte character (found by the
            // calendar_ics fuzz target), so anything else is refused here.
            if !p.val.as_str().is_ascii() {
                return Err(Error::Ics(format!("RRULE of {:?}: not ASCII", r.uid)));
            }
            let rule: rrule::RRule<rrule::Unvalidated> = p
                .val
                .as_str()
                .parse()
                .map_err(|e| Error::Ics(format!("RRULE of {:?}: {e}", r.uid)))?;
            // The rrule crate (0.13) mis-expands sub-minute and sub-hour rules with a
            // day-level filter: `FREQ=SECONDLY;BYMONTH=1;BYMONTHDAY=6;…` skipped
            // 2025–2029, `FREQ=MINUTELY;BYDAY=MO;…` gave no date at all. Skipping
            // dates would show busy time as free, so such rules are refused.
            if matches!(rule.get_freq(), rrule::Frequency::Secondly | rrule::Frequency::Minutely)
                && (!rule.get_by_month().is_empty()
                    || !rule.get_by_week_no().is_empty()
                    || !rule.get_by_year_day().is_empty()
                    || !rule.get_by_month_day().is_empty()
                    || !rule.get_by_weekday().is_empty())
            {
                return Err(Error::Ics(format!(
                    "RRULE of {:?}: FREQ={} with a BYMONTH, BYWEEKNO, BYYEARDAY, BYMONTHDAY or BYDAY filter \
                     is not supported; write it with FREQ=HOURLY or coarser",
                    r.uid,
                    rule.get_freq()
                )));
            }
            let rule = rule
                .validate(dtstart)
                .map_err(|e| Error::Ics(format!("RRULE of {:?}: {e}", r.uid)))?;
            open_ended |= rule.get_count().is_none() && rule.get_until().is_none_or(|u| *u >= window_end);
            most_count = most_count.max(rule.get_count().unwrap_or(0));
            set = set.rrule(rule);
        }
        for t in Self::rdates(r.comp, default_tz)? {
            set = set.rdate(t.with_timezone(&rrule::Tz::UTC));
        }
        let mut ex_instants = HashSet::new();
        let mut ex_dates = HashSet::new();
        for p in props(r.comp, "EXDATE") {
            let is_date = param(p, "VALUE").is_some_and(|v| v.eq_ignore_ascii_case("DATE"));
            for v in p.val.as_str().split(',') {
                match parse_when_value(v, is_date, param(p, "TZID"))? {
                    When::Date(d) => {
                        ex_dates.insert(d);
                    }
                    w => {
                        ex_instants.insert(to_utc(w, default_tz));
                    }
                }
            }
        }
        let lo = from
            .checked_sub_signed(r.duration)
            .and_then(|t| t.checked_sub_signed(Duration::seconds(1)))
            .ok_or_else(|| Error::Ics(format!("event {:?} lasts too long", r.uid)))?
            .with_timezone(&rrule::Tz::UTC);
        let hi = to.with_timezone(&rrule::Tz::UTC);
        // step through the recurrences ourselves, with the budget; `limit` keeps the
        // crate's guard against rules that never produce a date
        let set = set.limit();
        let mut dates = Vec::new();
        let mut stepped = 0u64;
        let mut reached_end = false;
        for d in &set {
            stepped += 1;
            *budget = budget.checked_sub(1).ok_or_else(|| {
                Error::Ics(format!(
                    "event {:?} repeats too often between its start and the window (the calendar may step through {MAX_EXPANSION} recurrences)",
                    r.uid
                ))
            })?;
            if d > hi {
                reached_end = true;
                break;
            }
            if d >= lo {
                if dates.len() >= MAX_OCCURRENCES as usize {
                    return Err(Error::Ics(format!(
                        "event {:?} repeats more than {MAX_OCCURRENCES} times in the window",
                        r.uid
                    )));
                }
                dates.push(d);
            }
        }
        // The rrule crate gives up after 100 000 steps of the rule's frequency without
        // a date and then simply ends (a FREQ=SECONDLY rule whose dates are more than
        // ~28 hours apart, FREQ=MINUTELY ~69 days): taking that for the end of the
        // rule would show busy time as free. A rule without COUNT, or with an UNTIL at
        // or after the window's end, or a COUNT it did not reach, does not end before
        // the window does: that is an error.
        if !reached_end && (open_ended || stepped < u64::from(most_count)) {
            return Err(Error::Ics(format!(
                "RRULE of {:?}: its dates are too far apart for its frequency to expand \
                 (more than 100 000 steps between two); write it with a coarser FREQ",
                r.uid
            )));
        }
        let local_tz = match r.start {
            When::Zoned(_, tz) => tz,
            _ => default_tz,
        };
        Ok(dates
            .into_iter()
            .map(|d| d.with_timezone(&Utc))
            .filter(|t| !ex_instants.contains(t) && !ex_dates.contains(&t.with_timezone(&local_tz).date_naive()))
            .collect())
    }

    fn freebusy(c: &icalendar::parser::Component<'_>, default_tz: Tz) -> Result<Vec<Interval>> {
        let mut out = Vec::new();
        for p in props(c, "FREEBUSY") {
            if param(p, "FBTYPE").is_some_and(|t| t.eq_ignore_ascii_case("FREE")) {
                continue;
            }
            for period in p.val.as_str().split(',') {
                let (a, b) = period
                    .split_once('/')
                    .ok_or_else(|| Error::Ics(format!("bad FREEBUSY period {period:?}")))?;
                let start = to_utc(parse_when_value(a, false, None)?, default_tz);
                let end = if b.trim_start().starts_with(['P', '+', '-']) {
                    start + parse_ics_duration(b)?
                } else {
                    to_utc(parse_when_value(b, false, None)?, default_tz)
                };
                if end > start {
                    out.push(Interval { start, end });
                }
            }
        }
        Ok(out)
    }

    /// Busy time inside the window, merged and sorted.
    pub fn busy(&self) -> &[Interval] {
        &self.busy
    }

    /// Every occurrence inside the window (busy or not), in time order.
    pub fn occurrences(&self) -> &[Occurrence] {
        &self.occurrences
    }
}

/// Sorts and merges overlapping or touching intervals.
pub fn merge(mut v: Vec<Interval>) -> Vec<Interval> {
    v.retain(|i| i.end > i.start);
    v.sort();
    let mut out: Vec<Interval> = Vec::with_capacity(v.len());
    for i in v {
        match out.last_mut() {
            Some(last) if i.start <= last.end => last.end = last.end.max(i.end),
            _ => out.push(i),
        }
    }
    out
}

/// One thing a person prefers or avoids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Pref {
    /// Starts before 12:00 local time.
    Morning,
    /// Starts from 12:00 to before 17:00.
    Afternoon,
    /// Starts from 17:00.
    Evening,
    /// Falls on this weekday.
    Day(Weekday),
}

impl Pref {
    /// Whether a slot starting at local time `t` matches.
    pub fn matches(self, t: &DateTime<Tz>) -> bool {
        match self {
            Pref::Morning => t.hour() < 12,
            Pref::Afternoon => (12..17).contains(&t.hour()),
            Pref::Evening => t.hour() >= 17,
            Pref::Day(d) => t.weekday() == d,
        }
    }
}

impl std::str::FromStr for Pref {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        let l = s.trim().to_ascii_lowercase();
        let l = l.trim_end_matches('s');
        Ok(match l {
            "morning" => Pref::Morning,
            "afternoon" => Pref::Afternoon,
            "evening" => Pref::Evening,
            "mon" | "monday" => Pref::Day(Weekday::Mon),
            "tue" | "tuesday" => Pref::Day(Weekday::Tue),
            "wed" | "wednesday" => Pref::Day(Weekday::Wed),
            "thu" | "thursday" => Pref::Day(Weekday::Thu),
            "fri" | "friday" => Pref::Day(Weekday::Fri),
            "sat" | "saturday" => Pref::Day(Weekday::Sat),
            "sun" | "sunday" => Pref::Day(Weekday::Sun),
            _ => {
                return Err(Error::Invalid(format!(
                    "unknown preference {s:?} (morning, afternoon, evening or a weekday such as friday)"
                )));
            }
        })
    }
}

/// Preferences: a slot scores +1 for each `prefer` it matches and −1 for each `avoid`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Preferences {
    /// Liked.
    pub prefer: Vec<Pref>,
    /// Disliked.
    pub avoid: Vec<Pref>,
}

/// How to cut a window into candidate slots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotSpec {
    /// Window start; slots start at `from + k·step`.
    pub from: DateTime<Utc>,
    /// Window end; slots end by then.
    pub to: DateTime<Utc>,
    /// Meeting length.
    pub duration: Duration,
    /// Grid step.
    pub step: Duration,
    /// The zone working hours, days and preferences are read in.
    pub tz: Tz,
    /// Working hours `[start, end)` in `tz`; a slot must lie inside (none: any time).
    pub working_hours: Option<(NaiveTime, NaiveTime)>,
    /// Working days in `tz` (empty: every day).
    pub days: Vec<Weekday>,
}

impl SlotSpec {
    /// Any time of any day, in UTC.
    pub fn new(from: DateTime<Utc>, to: DateTime<Utc>, duration: Duration, step: Duration) -> Self {
        SlotSpec {
            from,
            to,
            duration,
            step,
            tz: chrono_tz::UTC,
            working_hours: None,
            days: Vec::new(),
        }
    }

    /// Checks the spec: positive duration and step, a non-empty window, at most
    /// `max_candidates` grid points.
    pub fn check(&self, max_candidates: usize) -> Result<()> {
        if self.duration <= Duration::zero() || self.step <= Duration::zero() {
            return Err(Error::Invalid("duration and step must be positive".into()));
        }
        if self.to <= self.from {
            return Err(Error::Invalid("--to must be after --from".into()));
        }
        let points = (self.to - self.from).num_seconds() / self.step.num_seconds().max(1);
        if points as usize > max_candidates {
            return Err(Error::Invalid(format!(
                "the window has {points} slot starts at this step; the limit is {max_candidates}"
            )));
        }
        Ok(())
    }
}

/// A candidate meeting time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Slot {
    /// Start.
    pub start: DateTime<Utc>,
    /// End.
    pub end: DateTime<Utc>,
}

/// The free slots of the grid, in time order.
pub fn free_slots(busy: &[Interval], spec: &SlotSpec) -> Vec<Slot> {
    let mut out = Vec::new();
    if spec.step <= Duration::zero() || spec.duration <= Duration::zero() {
        return out;
    }
    let mut t = spec.from;
    let mut bi = 0;
    while t + spec.duration <= spec.to {
        let iv = Interval {
            start: t,
            end: t + spec.duration,
        };
        let local_start = t.with_timezone(&spec.tz);
        let local_end = (t + spec.duration).with_timezone(&spec.tz);
        let day_ok = spec.days.is_empty() || spec.days.contains(&local_start.weekday());
        let hours_ok = match spec.working_hours {
            None => true,
            Some((a, b)) => {
                local_start.date_naive() == (local_end - Duration::nanoseconds(1)).date_naive()
                    && local_start.time() >= a
                    && (local_end.time() <= b || (b == NaiveTime::MIN && local_end.time() == NaiveTime::MIN))
                    && local_end.time() >= a
            }
        };
        while bi < busy.len() && busy[bi].end <= iv.start {
            bi += 1;
        }
        let free = busy[bi..]
            .iter()
            .take_while(|b| b.start < iv.end)
            .all(|b| !b.overlaps(&iv));
        if day_ok && hours_ok && free {
            out.push(Slot {
                start: iv.start,
                end: iv.end,
            });
        }
        t += spec.step;
    }
    out
}

/// Orders slots best first: by preference score (higher first), then earlier first.
pub fn rank_slots(slots: &[Slot], prefs: &Preferences, tz: Tz) -> Vec<Slot> {
    let score = |s: &Slot| -> i64 {
        let l = s.start.with_timezone(&tz);
        prefs.prefer.iter().filter(|p| p.matches(&l)).count() as i64
            - prefs.avoid.iter().filter(|p| p.matches(&l)).count() as i64
    };
    let mut v: Vec<(i64, Slot)> = slots.iter().map(|s| (score(s), *s)).collect();
    v.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.start.cmp(&b.1.start)));
    v.into_iter().map(|(_, s)| s).collect()
}

/// An .ics invitation (`METHOD:REQUEST`) for an agreed slot.
pub fn invitation(slot: &Slot, summary: &str, uid: &str, stamp: DateTime<Utc>, location: Option<&str>) -> String {
    let fmt = |t: DateTime<Utc>| t.format("%Y%m%dT%H%M%SZ").to_string();
    let esc = |s: &str| {
        s.replace('\\', "\\\\")
            .replace(';', "\\;")
            .replace(',', "\\,")
            .replace('\n', "\\n")
    };
    let mut lines = vec![
        "BEGIN:VCALENDAR".to_string(),
        "VERSION:2.0".into(),
        "PRODID:-//tacit//private scheduling//EN".into(),
        "METHOD:REQUEST".into(),
        "BEGIN:VEVENT".into(),
        format!("UID:{}", esc(uid)),
        format!("DTSTAMP:{}", fmt(stamp)),
        format!("DTSTART:{}", fmt(slot.start)),
        format!("DTEND:{}", fmt(slot.end)),
        format!("SUMMARY:{}", esc(summary)),
    ];
    if let Some(l) = location {
        lines.push(format!("LOCATION:{}", esc(l)));
    }
    lines.extend(["TRANSP:OPAQUE".to_string(), "END:VEVENT".into(), "END:VCALENDAR".into()]);
    let mut out = String::new();
    for l in lines {
        out.push_str(&fold(&l));
        out.push_str("\r\n");
    }
    out
}

/// Folds a content line at 75 octets (RFC 5545 §3.1).
fn fold(line: &str) -> String {
    let mut out = String::new();
    let mut n = 0;
    for ch in line.chars() {
        if n + ch.len_utf8() > 75 {
            out.push_str("\r\n ");
            n = 1;
        }
        out.push(ch);
        n += ch.len_utf8();
    }
    out
}

/// Parses `--from`/`--to` values: RFC 3339 date-times, or dates (`2025-01-06`, local
/// midnight in `tz`).
pub fn parse_time(s: &str, tz: Tz) -> Result<DateTime<Utc>> {
    if let Ok(t) = DateTime::parse_from_rfc3339(s.trim()) {
        return Ok(t.with_timezone(&Utc));
    }
    if let Ok(d) = NaiveDate::parse_from_str(s.trim(), "%Y-%m-%d") {
        return Ok(local_to_utc(d.and_time(NaiveTime::MIN), tz));
    }
    if let Ok(t) = NaiveDateTime::parse_from_str(s.trim(), "%Y-%m-%dT%H:%M") {
        return Ok(local_to_utc(t, tz));
    }
    Err(Error::Invalid(format!(
        "{s:?} is neither an RFC 3339 time (2025-01-06T09:00:00+01:00) nor a date (2025-01-06)"
    )))
}

/// Parses durations like `30m`, `1h`, `1h30m`, `90s`, `2d`.
pub fn parse_span(s: &str) -> Result<Duration> {
    let bad = || Error::Invalid(format!("{s:?} is not a duration such as 30m, 1h or 1h30m"));
    let mut total = Duration::zero();
    let mut num = String::new();
    for ch in s.trim().chars() {
        if ch.is_ascii_digit() {
            num.push(ch);
            continue;
        }
        let v: i64 = num.parse().map_err(|_| bad())?;
        num.clear();
        total += match ch {
            'd' => Duration::days(v),
            'h' => Duration::hours(v),
            'm' => Duration::minutes(v),
            's' => Duration::seconds(v),
            _ => return Err(bad()),
        };
    }
    if !num.is_empty() || total <= Duration::zero() {
        return Err(bad());
    }
    Ok(total)
}

/// Parses working hours `09:00-17:00`.
pub fn parse_hours(s: &str) -> Result<(NaiveTime, NaiveTime)> {
    let bad = || Error::Invalid(format!("{s:?} is not a range of hours such as 09:00-17:00"));
    let (a, b) = s.split_once('-').ok_or_else(bad)?;
    let a = NaiveTime::parse_from_str(a.trim(), "%H:%M").map_err(|_| bad())?;
    let b = NaiveTime::parse_from_str(b.trim(), "%H:%M").map_err(|_| bad())?;
    if b <= a {
        return Err(bad());
    }
    Ok((a, b))
}

/// Parses a time zone name (IANA).
pub fn parse_zone(s: &str) -> Result<Tz> {
    s.parse::<Tz>().map_err(|_| {
        Error::Invalid(format!(
            "unknown time zone {s:?} (use an IANA name such as Europe/Berlin)"
        ))
    })
}

/// Occurrences grouped by UID (handy for listing).
pub fn by_uid(occ: &[Occurrence]) -> HashMap<String, Vec<Occurrence>> {
    let mut m: HashMap<String, Vec<Occurrence>> = HashMap::new();
    for o in occ {
        m.entry(o.uid.to_string()).or_default().push(o.clone());
    }
    m
}

#[cfg(test)]
mod tests;
