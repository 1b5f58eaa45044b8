#![no_main]
//! The .ics reader: busy time, recurrences, free slots.
use chrono::{Duration, TimeZone, Utc};
use libfuzzer_sys::fuzz_target;
use tacit_calendar::{Calendar, SlotSpec, free_slots};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let from = Utc.with_ymd_and_hms(2025, 1, 1, 0, 0, 0).unwrap();
    let to = from + Duration::days(14);
    if let Ok(c) = Calendar::parse(text, from, to, chrono_tz::Europe::Berlin) {
        for b in c.busy() {
            assert!(b.start < b.end);
        }
        let _ = free_slots(
            c.busy(),
            &SlotSpec::new(from, to, Duration::minutes(30), Duration::minutes(15)),
        );
    }
});
