//! Printing Unix times in error messages (UTC, RFC 3339), without a date library.

use core::fmt;

/// A Unix time (seconds) that prints as `2026-01-01T00:00:00Z`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Utc(pub u64);

impl fmt::Display for Utc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let days = self.0 / 86_400;
        let secs = self.0 % 86_400;
        // Days since 1970-01-01 to a proleptic Gregorian date (H. Hinnant,
        // "chrono-Compatible Low-Level Date Algorithms", civil_from_days), all in
        // non-negative integers since Unix times here are unsigned.
        let z = days + 719_468;
        let era = z / 146_097;
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = doy - (153 * mp + 2) / 5 + 1;
        let month = if mp < 10 { mp + 3 } else { mp - 9 };
        let year = yoe + era * 400 + u64::from(month <= 2);
        write!(
            f,
            "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
            secs / 3600,
            secs / 60 % 60,
            secs % 60
        )
    }
}

impl fmt::Debug for Utc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::Utc;

    #[test]
    fn known_dates() {
        assert_eq!(Utc(0).to_string(), "1970-01-01T00:00:00Z");
        assert_eq!(Utc(951_782_400).to_string(), "2000-02-29T00:00:00Z");
        assert_eq!(Utc(1_767_225_599).to_string(), "2025-12-31T23:59:59Z");
        assert_eq!(Utc(1_767_225_600).to_string(), "2026-01-01T00:00:00Z");
        assert_eq!(Utc(4_107_542_400).to_string(), "2100-03-01T00:00:00Z");
        // Far future: no overflow, no panic.
        assert!(Utc(u64::MAX).to_string().ends_with('Z'));
    }
}
