//! The options of `tacit schedule serve|connect` that both engines read: the
//! calendar, the window, preferences and output (`--engine pros`, crates/pros; and
//! `--engine gmw`, crates/mpc). Kept apart from both engines' modules so that
//! neither imports the other (`scripts/import-circles`).

use crate::pros::cmd::{SchemeArg, VariantArg};
use anyhow::{Result, bail};
use chrono::Weekday;
use clap::{Args, ValueEnum};
use std::path::PathBuf;
use tacit_calendar::Pref;

/// `--encoding`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SlotEncodingArg {
    /// Start and end hashed: any date, any duration.
    Default,
    /// The paper's 32-bit S‖D (45 days ahead, whole hours).
    Paper,
}

/// Options both parties give.
#[derive(Debug, Clone, Args)]
pub struct ScheduleArgs {
    /// Your calendar (.ics): VEVENTs and VFREEBUSY block time.
    #[arg(long, value_name = "FILE.ics")]
    pub calendar: PathBuf,
    /// Window start: RFC 3339 time or a date (midnight in --tz). Must match the peer's.
    #[arg(long)]
    pub from: String,
    /// Window end (exclusive). Must match the peer's.
    #[arg(long)]
    pub to: String,
    /// Meeting length, e.g. 30m, 1h, 1h30m.
    #[arg(long, default_value = "30m")]
    pub duration: String,
    /// Grid step between slot starts.
    #[arg(long, default_value = "15m")]
    pub step: String,
    /// Your time zone (IANA), for working hours, preferences, dates and output
    /// (default: $TZ, else UTC).
    #[arg(long)]
    pub tz: Option<String>,
    /// Your working hours, e.g. 09:00-17:00 (default: any time).
    #[arg(long, value_name = "HH:MM-HH:MM")]
    pub hours: Option<String>,
    /// Your working days, e.g. mon,tue,wed,thu,fri (default: every day).
    #[arg(long, value_delimiter = ',')]
    pub days: Vec<String>,
    /// Preferences ranking your slots first: morning, afternoon, evening, a weekday.
    #[arg(long, value_delimiter = ',')]
    pub prefer: Vec<String>,
    /// Slots to rank last: morning, afternoon, evening, a weekday.
    #[arg(long, value_delimiter = ',')]
    pub avoid: Vec<String>,
    /// At most this many of your best slots take part (the worst case costs n² comparisons).
    #[arg(long, default_value_t = 32)]
    pub max_slots: usize,
    /// Slot encoding (must match the peer's).
    #[arg(long, value_enum, default_value = "default")]
    pub encoding: SlotEncodingArg,
    /// Preference composition.
    #[arg(long, value_enum, default_value = "sor")]
    pub scheme: SchemeArg,
    /// 3PR variant.
    #[arg(long, value_enum, default_value = "implicit")]
    pub variant: VariantArg,
    /// Write the agreed slot as an .ics invitation.
    #[arg(long, value_name = "FILE.ics")]
    pub out: Option<PathBuf>,
    /// Title of the invitation.
    #[arg(long, default_value = "Meeting (scheduled privately with tacit)")]
    pub summary: String,
    /// JSON output.
    #[arg(long)]
    pub json: bool,
    /// Engine. pros (default): 3PR over Paillier; only the agreed slot is revealed,
    /// and each party may offer a private subset of slots (hours, preferences,
    /// --max-slots). gmw: the paper's GMW circuits (one AND layer for availability;
    /// with --locations the least-travel slot); faster (56 to 2 604 AND gates and one
    /// round for availability against n² Paillier comparisons) but both learn every
    /// common free slot, and the window (--from, --to, --step, --duration, --hours,
    /// --days, --tz) must match the peer's exactly.
    #[arg(long, value_enum, default_value = "pros")]
    pub engine: EngineArg,
    #[command(flatten)]
    pub gmw: Box<GmwScheduleArgs>,
}

/// `--engine`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EngineArg {
    /// Private reconciliation of ranked slots over Paillier (crates/pros).
    Pros,
    /// GMW circuits of paper 003 §6 (crates/mpc).
    Gmw,
}

/// Options of the GMW engine (ignored by `--engine pros`).
#[derive(Debug, Clone, Args)]
pub struct GmwScheduleArgs {
    /// GMW: location-aware scheduling (§6.2): the slot where both can get to a common
    /// place with the least travel, from the GEO (or a "LAT,LON" LOCATION) of the
    /// events before and after it.
    #[arg(long)]
    pub locations: bool,
    /// GMW --locations: where you are on a day before your first and after your last
    /// event, LAT,LON in degrees.
    #[arg(long, value_name = "LAT,LON")]
    pub home: Option<String>,
    /// GMW --locations: your travel speed bound in km/h (reaches are speed × free time).
    #[arg(long, default_value_t = 30.0)]
    pub speed: f64,
    /// GMW --locations: the public reference point of the shared grid, LAT,LON (must
    /// match the peer's; the grid is 2^10 × 2^10 units around it).
    #[arg(long, value_name = "LAT,LON")]
    pub center: Option<String>,
    /// GMW --locations: metres per grid unit (must match the peer's).
    #[arg(long, default_value_t = 250.0)]
    pub unit: f64,
    #[command(flatten)]
    pub triples: crate::mpc::triples::TripleOpts,
}

/// A weekday given by name (`mon`, `tuesday`, …).
pub(crate) fn weekday(s: &str) -> Result<Weekday> {
    match s.parse::<Pref>()? {
        Pref::Day(d) => Ok(d),
        _ => bail!("{s:?} is not a weekday"),
    }
}
