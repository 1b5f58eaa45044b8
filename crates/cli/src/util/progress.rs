//! Progress on long work, always on stderr (stdout stays for results): a bar or a
//! spinner when stderr is a terminal, periodic lines when it is not (a log, a pipe, a
//! service manager), so that a 40-second precomputation or a 3 GB transfer is never
//! silent (issue 28, item 10).

use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// At most one line per this long when stderr is not a terminal (besides the line at
/// each tenth of the work).
pub const LINE_EVERY: Duration = Duration::from_secs(10);

/// Whether stderr is a terminal (bars and spinners) or not (lines).
pub fn stderr_is_terminal() -> bool {
    std::io::stderr().is_terminal()
}

/// How a [`Progress`] counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Items (elements, rows).
    Items,
    /// Bytes (shown in KiB/MiB/GiB).
    Bytes,
}

/// Progress over `total` units: a bar on a terminal, else a line on stderr at each
/// tenth of the work and at least every [`LINE_EVERY`] ("tacit psi serve:
/// precomputing: 400000/1000000 elements (40%)").
pub struct Progress {
    bar: ProgressBar,
    lines: Option<Lines>,
}

struct Lines {
    who: String,
    what: String,
    total: u64,
    unit: Unit,
    /// The position, the tenth last printed and when.
    state: Mutex<(u64, u64, Instant)>,
}

impl Progress {
    /// Progress over `total` items, labelled `what`, lines prefixed with `who`
    /// ("tacit psi serve"). Work under `min` units shows nothing.
    pub fn new(total: u64, what: &str, who: &str, unit: Unit, min: u64) -> Self {
        Self::with_terminal(total, what, who, unit, min, stderr_is_terminal())
    }

    /// [`Self::new`] with the terminal test given (for tests).
    pub fn with_terminal(total: u64, what: &str, who: &str, unit: Unit, min: u64, terminal: bool) -> Self {
        if total < min {
            return Progress {
                bar: ProgressBar::hidden(),
                lines: None,
            };
        }
        if terminal {
            let bar = ProgressBar::new(total);
            let template = match unit {
                Unit::Items => "{msg:>14} [{bar:30}] {pos}/{len} ({eta})",
                Unit::Bytes => "{msg:>20} [{bar:30}] {bytes}/{total_bytes} ({eta})",
            };
            bar.set_style(
                ProgressStyle::with_template(template)
                    .expect("static template")
                    .progress_chars("=> "),
            );
            bar.set_message(what.to_string());
            return Progress { bar, lines: None };
        }
        Progress {
            bar: ProgressBar::hidden(),
            lines: Some(Lines {
                who: who.to_string(),
                what: what.to_string(),
                total,
                unit,
                state: Mutex::new((0, 0, Instant::now())),
            }),
        }
    }

    /// `k` more units done.
    pub fn inc(&self, k: u64) {
        self.bar.inc(k);
        if let Some(l) = &self.lines {
            let pos = match l.state.lock() {
                Ok(mut s) => {
                    s.0 = s.0.saturating_add(k);
                    s.0
                }
                Err(_) => return,
            };
            l.maybe_print(pos);
        }
    }

    /// `pos` units done in all.
    pub fn set_position(&self, pos: u64) {
        self.bar.set_position(pos);
        if let Some(l) = &self.lines {
            if let Ok(mut s) = l.state.lock() {
                s.0 = pos;
            }
            l.maybe_print(pos);
        }
    }

    /// Clears the bar (lines need no clearing: the last tenth was printed).
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

impl Lines {
    fn maybe_print(&self, pos: u64) {
        let tenth = pos.min(self.total).saturating_mul(10) / self.total.max(1);
        let Ok(mut s) = self.state.lock() else {
            return;
        };
        let now = Instant::now();
        if tenth > s.1 || now.duration_since(s.2) >= LINE_EVERY {
            s.1 = s.1.max(tenth);
            s.2 = now;
            drop(s);
            eprintln!("{}", self.line(pos));
        }
    }

    fn line(&self, pos: u64) -> String {
        let pct = pos.min(self.total) as f64 * 100.0 / self.total.max(1) as f64;
        match self.unit {
            Unit::Items => format!("{}: {}: {pos}/{} ({pct:.0}%)", self.who, self.what, self.total),
            Unit::Bytes => format!(
                "{}: {}: {} of {} ({pct:.0}%)",
                self.who,
                self.what,
                super::mib(pos),
                super::mib(self.total)
            ),
        }
    }
}

/// What a session is doing, shown as a spinner on a terminal and as lines otherwise:
/// the first after [`LINE_EVERY`] of work (a short session prints none), then at most
/// one per [`LINE_EVERY`], besides messages marked `important`.
pub struct Activity {
    spinner: Option<ProgressBar>,
    who: String,
    last: Mutex<Instant>,
}

impl Activity {
    /// An activity of `who` ("tacit pros psi query"); `spinner` false forces lines
    /// (a server with several sessions at once).
    pub fn new(who: &str, spinner: bool) -> Self {
        let spinner = (spinner && stderr_is_terminal()).then(|| {
            let pb = ProgressBar::new_spinner();
            pb.enable_steady_tick(Duration::from_millis(120));
            pb
        });
        Activity {
            spinner,
            who: who.to_string(),
            last: Mutex::new(Instant::now()),
        }
    }

    /// Shows `msg` (a line when stderr is not a terminal and the last line is older
    /// than [`LINE_EVERY`], or `important`).
    pub fn say(&self, msg: &str, important: bool) {
        if let Some(pb) = &self.spinner {
            pb.set_message(format!("{}: {msg}", self.who));
            return;
        }
        let Ok(mut last) = self.last.lock() else {
            return;
        };
        let now = Instant::now();
        if important || now.duration_since(*last) >= LINE_EVERY {
            *last = now;
            eprintln!("{}: {msg}", self.who);
        }
    }

    /// Clears the spinner.
    pub fn finish(&self) {
        if let Some(pb) = &self.spinner {
            pb.finish_and_clear();
        }
    }
}

impl Drop for Activity {
    fn drop(&mut self) {
        self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_name_the_work_and_its_share() {
        let p = Progress::with_terminal(1000, "precomputing", "tacit psi serve", Unit::Items, 10, false);
        let l = p.lines.as_ref().unwrap();
        assert_eq!(l.line(400), "tacit psi serve: precomputing: 400/1000 (40%)");
        let b = Progress::with_terminal(3 << 30, "x.bin", "tacit drop send", Unit::Bytes, 10, false);
        assert!(b.lines.as_ref().unwrap().line(3 << 29).ends_with("(50%)"));
        // small work shows nothing
        assert!(
            Progress::with_terminal(5, "x", "y", Unit::Items, 10, false)
                .lines
                .is_none()
        );
    }
}
