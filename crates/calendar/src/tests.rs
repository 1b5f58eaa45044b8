use super::*;
use chrono::TimeZone;

fn utc(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(y, mo, d, h, mi, 0).unwrap()
}

fn cal(body: &str) -> String {
    format!("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:test\r\n{body}END:VCALENDAR\r\n")
}

fn ev(uid: &str, lines: &[&str]) -> String {
    let mut s = format!("BEGIN:VEVENT\r\nUID:{uid}\r\n");
    for l in lines {
        s.push_str(l);
        s.push_str("\r\n");
    }
    s.push_str("END:VEVENT\r\n");
    s
}

const BERLIN: Tz = chrono_tz::Europe::Berlin;

#[test]
fn weekly_rule_with_exdate_and_override() {
    // Mondays 09:00-10:00 Berlin (08:00 UTC in winter), 2025-01-06 onwards;
    // 13 Jan excluded, 20 Jan moved to 14:00
    let ics = cal(&format!(
        "{}{}",
        ev(
            "weekly",
            &[
                "DTSTART;TZID=Europe/Berlin:20250106T090000",
                "DTEND;TZID=Europe/Berlin:20250106T100000",
                "RRULE:FREQ=WEEKLY;BYDAY=MO;COUNT=10",
                "EXDATE;TZID=Europe/Berlin:20250113T090000",
            ]
        ),
        ev(
            "weekly",
            &[
                "RECURRENCE-ID;TZID=Europe/Berlin:20250120T090000",
                "DTSTART;TZID=Europe/Berlin:20250120T140000",
                "DTEND;TZID=Europe/Berlin:20250120T150000",
            ]
        )
    ));
    let c = Calendar::parse(&ics, utc(2025, 1, 1, 0, 0), utc(2025, 1, 28, 0, 0), chrono_tz::UTC).unwrap();
    let starts: Vec<DateTime<Utc>> = c.busy().iter().map(|i| i.start).collect();
    assert_eq!(
        starts,
        vec![utc(2025, 1, 6, 8, 0), utc(2025, 1, 20, 13, 0), utc(2025, 1, 27, 8, 0)]
    );
}

#[test]
fn summer_time_follows_the_zone() {
    let ics = cal(&ev(
        "d",
        &[
            "DTSTART;TZID=Europe/Berlin:20250328T090000",
            "DURATION:PT1H",
            "RRULE:FREQ=DAILY;COUNT=4",
        ],
    ));
    let c = Calendar::parse(&ics, utc(2025, 3, 27, 0, 0), utc(2025, 4, 2, 0, 0), chrono_tz::UTC).unwrap();
    let hours: Vec<u32> = c.busy().iter().map(|i| i.start.hour()).collect();
    // CET until 30 March 02:00, CEST after
    assert_eq!(hours, vec![8, 8, 7, 7]);
}

#[test]
fn all_day_transparent_cancelled_and_floating() {
    let ics = cal(&format!(
        "{}{}{}{}",
        ev("allday", &["DTSTART;VALUE=DATE:20250107", "DTEND;VALUE=DATE:20250108"]),
        ev(
            "free",
            &[
                "DTSTART:20250106T120000Z",
                "DTEND:20250106T130000Z",
                "TRANSP:TRANSPARENT"
            ]
        ),
        ev(
            "gone",
            &["DTSTART:20250106T140000Z", "DTEND:20250106T150000Z", "STATUS:CANCELLED"]
        ),
        ev(
            "floating",
            &[
                "DTSTART:20250106T160000",
                "DTEND:20250106T170000",
                "LOCATION:Room 1\\, 2nd floor",
                "GEO:52.52;13.405"
            ]
        ),
    ));
    let c = Calendar::parse(&ics, utc(2025, 1, 6, 0, 0), utc(2025, 1, 9, 0, 0), BERLIN).unwrap();
    assert_eq!(
        c.busy(),
        &[
            Interval {
                start: utc(2025, 1, 6, 15, 0),
                end: utc(2025, 1, 6, 16, 0)
            },
            Interval {
                start: utc(2025, 1, 6, 23, 0),
                end: utc(2025, 1, 7, 23, 0)
            },
        ]
    );
    assert_eq!(c.occurrences().len(), 4);
    let f = c.occurrences().iter().find(|o| &*o.uid == "floating").unwrap();
    assert_eq!(f.location.as_deref(), Some("Room 1, 2nd floor"));
    assert_eq!(f.geo, Some((52.52, 13.405)));
    assert!(c.occurrences().iter().find(|o| &*o.uid == "allday").unwrap().all_day);
}

#[test]
fn freebusy_periods() {
    let ics = cal(
        "BEGIN:VFREEBUSY\r\nUID:fb\r\nFREEBUSY:20250106T090000Z/20250106T100000Z,20250106T110000Z/PT30M\r\n\
         FREEBUSY;FBTYPE=FREE:20250106T120000Z/PT1H\r\nFREEBUSY;FBTYPE=BUSY-TENTATIVE:20250106T095000Z/PT20M\r\nEND:VFREEBUSY\r\n",
    );
    let c = Calendar::parse(&ics, utc(2025, 1, 6, 0, 0), utc(2025, 1, 7, 0, 0), chrono_tz::UTC).unwrap();
    assert_eq!(
        c.busy(),
        &[
            Interval {
                start: utc(2025, 1, 6, 9, 0),
                end: utc(2025, 1, 6, 10, 10)
            },
            Interval {
                start: utc(2025, 1, 6, 11, 0),
                end: utc(2025, 1, 6, 11, 30)
            },
        ]
    );
}

#[test]
fn free_slots_respect_hours_days_and_busy_time() {
    let busy = vec![Interval {
        start: utc(2025, 1, 6, 9, 0),
        end: utc(2025, 1, 6, 10, 0),
    }];
    let mut spec = SlotSpec::new(
        utc(2025, 1, 4, 0, 0),
        utc(2025, 1, 7, 0, 0),
        Duration::minutes(60),
        Duration::minutes(30),
    );
    spec.tz = BERLIN;
    spec.working_hours = Some(parse_hours("09:00-12:00").unwrap());
    spec.days = vec![Weekday::Mon, Weekday::Tue, Weekday::Wed, Weekday::Thu, Weekday::Fri];
    let s = free_slots(&busy, &spec);
    // Monday 6 Jan, Berlin 09:00-12:00 = 08:00-11:00 UTC; busy 09:00-10:00 UTC
    let starts: Vec<(u32, u32)> = s.iter().map(|x| (x.start.hour(), x.start.minute())).collect();
    assert_eq!(starts, vec![(8, 0), (10, 0)]);
    let prefs = Preferences {
        prefer: vec![],
        avoid: vec![Pref::Morning],
    };
    let all = free_slots(
        &[],
        &SlotSpec::new(
            utc(2025, 1, 6, 10, 0),
            utc(2025, 1, 6, 14, 0),
            Duration::hours(1),
            Duration::hours(1),
        ),
    );
    let ranked = rank_slots(&all, &prefs, chrono_tz::UTC);
    assert_eq!(
        ranked.iter().map(|s| s.start.hour()).collect::<Vec<_>>(),
        vec![12, 13, 10, 11]
    );
}

#[test]
fn invitation_reads_back() {
    let slot = Slot {
        start: utc(2025, 1, 6, 9, 0),
        end: utc(2025, 1, 6, 9, 30),
    };
    let ics = invitation(
        &slot,
        "Sync; planning, Q1",
        "abc@tacit",
        utc(2025, 1, 1, 0, 0),
        Some("Room 5"),
    );
    let c = Calendar::parse(&ics, utc(2025, 1, 6, 0, 0), utc(2025, 1, 7, 0, 0), chrono_tz::UTC).unwrap();
    assert_eq!(
        c.busy(),
        &[Interval {
            start: slot.start,
            end: slot.end
        }]
    );
    assert_eq!(c.occurrences()[0].summary.as_deref(), Some("Sync; planning, Q1"));
    assert_eq!(c.occurrences()[0].location.as_deref(), Some("Room 5"));
}

#[test]
fn bad_input_is_one_error() {
    let w = (utc(2025, 1, 1, 0, 0), utc(2025, 1, 2, 0, 0));
    for bad in [
        "hello".to_string(),
        cal(&ev("x", &["DTEND:20250101T100000Z"])),
        cal(&ev("x", &["DTSTART;TZID=Mars/Olympus:20250101T100000"])),
        cal(&ev("x", &["DTSTART:2025XX01T100000Z"])),
        cal(&ev("x", &["DTSTART:20250101T100000Z", "DTEND:20250101T090000Z"])),
        cal(&ev("x", &["DTSTART:20250101T100000Z", "RRULE:FREQ=SOMETIMES"])),
        cal(&ev("x", &["DTSTART:20250101T100000Z", "DURATION:1H"])),
        // The calendar_ics fuzz target's crash: a multi-byte character in BYDAY
        // made the rrule crate panic.
        cal(&ev(
            "x",
            &["DTSTART:20250101T100000Z", "RRULE:FREQ=WEEKLY;BYDAY=M\u{2eb}O"],
        )),
    ] {
        let e = Calendar::parse(&bad, w.0, w.1, chrono_tz::UTC).unwrap_err();
        assert!(!e.to_string().contains('\n'), "{e}");
    }
    assert!(Calendar::load(Path::new("/nonexistent.ics"), w.0, w.1, chrono_tz::UTC).is_err());
}

#[test]
fn parse_helpers() {
    assert_eq!(parse_span("1h30m").unwrap(), Duration::minutes(90));
    assert!(parse_span("30x").is_err());
    assert_eq!(parse_time("2025-01-06", BERLIN).unwrap(), utc(2025, 1, 5, 23, 0));
    assert_eq!(
        parse_time("2025-01-06T09:00:00Z", BERLIN).unwrap(),
        utc(2025, 1, 6, 9, 0)
    );
    assert_eq!("fridays".parse::<Pref>().unwrap(), Pref::Day(Weekday::Fri));
    assert_eq!(parse_ics_duration("P1DT2H").unwrap(), Duration::hours(26));
}

proptest::proptest! {
    #[test]
    fn free_slots_never_overlap_busy(starts in proptest::collection::vec((0i64..48, 1i64..6), 0..8)) {
        let base = utc(2025, 1, 6, 0, 0);
        let busy = merge(starts.iter().map(|(s, l)| Interval { start: base + Duration::minutes(30 * s), end: base + Duration::minutes(30 * (s + l)) }).collect());
        let spec = SlotSpec::new(base, base + Duration::hours(24), Duration::minutes(45), Duration::minutes(15));
        let slots = free_slots(&busy, &spec);
        for s in &slots {
            let iv = Interval { start: s.start, end: s.end };
            proptest::prop_assert!(busy.iter().all(|b| !b.overlaps(&iv)));
        }
        // and every grid point that is free is listed
        let mut t = base;
        let mut n = 0;
        while t + spec.duration <= spec.to {
            let iv = Interval { start: t, end: t + spec.duration };
            if busy.iter().all(|b| !b.overlaps(&iv)) { n += 1; }
            t += spec.step;
        }
        proptest::prop_assert_eq!(n, slots.len());
    }
}

// ------------------------------------------------------------ hostile calendars (issue 26, item 6)

fn one_event(props: &str) -> String {
    format!(
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nBEGIN:VEVENT\r\nUID:x\r\nDTSTART:20250106T090000Z\r\n{props}END:VEVENT\r\nEND:VCALENDAR\r\n"
    )
}

/// `DURATION:P99999999999999W` panicked ("TimeDelta::weeks out of bounds") and
/// `DURATION:P100000000W` overflowed `DateTime + TimeDelta` (exit 101): both are
/// one-line errors now, as is a DTEND centuries away.
#[test]
fn huge_durations_are_one_line_errors() {
    let (from, to) = (utc(2025, 1, 6, 0, 0), utc(2025, 1, 13, 0, 0));
    for d in [
        "P99999999999999W",
        "P100000000W",
        "P36526D",
        "PT99999999999999999999S",
        "PW",
    ] {
        let e = Calendar::parse(&one_event(&format!("DURATION:{d}\r\n")), from, to, BERLIN).unwrap_err();
        assert_eq!(e.to_string().lines().count(), 1, "{e}");
        assert!(e.to_string().contains("duration"), "{d}: {e}");
    }
    let e = Calendar::parse(&one_event("DTEND:99991231T000000Z\r\n"), from, to, BERLIN).unwrap_err();
    assert!(e.to_string().contains("longer than"), "{e}");
    assert!(parse_ics_duration("P36525D").is_ok());
}

/// One VEVENT with a 4 MiB LOCATION and `RRULE:FREQ=MINUTELY` cloned the text per
/// occurrence (2.96 GB before abort). The text is now shared by all occurrences, a
/// rule producing more than `MAX_OCCURRENCES` in the window is an error instead of a
/// silent cut, and so is a calendar of more than `MAX_TOTAL_OCCURRENCES`.
#[test]
fn a_long_text_on_a_frequent_rule_is_shared_and_bounded() {
    let loc = "x".repeat(4 << 20);
    let ics = one_event(&format!("DURATION:PT1M\r\nRRULE:FREQ=MINUTELY\r\nLOCATION:{loc}\r\n"));
    let from = utc(2025, 1, 6, 9, 0);
    let c = Calendar::parse(&ics, from, from + Duration::hours(24), BERLIN).unwrap();
    let occ = c.occurrences();
    assert_eq!(occ.len(), 24 * 60);
    let first = occ[0].location.clone().unwrap();
    assert!(
        occ.iter()
            .all(|o| o.location.as_ref().is_some_and(|l| Arc::ptr_eq(l, &first)))
    );
    // a week of minutes: 10 080 > 10 000
    let e = Calendar::parse(&ics, from, from + Duration::days(7), BERLIN).unwrap_err();
    assert!(e.to_string().contains("repeats more than"), "{e}");
    // 21 rules of 5 000 minutes each: over the calendar's total
    let mut many = String::from("BEGIN:VCALENDAR\r\nVERSION:2.0\r\n");
    for i in 0..21 {
        many.push_str(&format!(
            "BEGIN:VEVENT\r\nUID:e{i}\r\nDTSTART:20250106T090000Z\r\nDURATION:PT1M\r\nRRULE:FREQ=MINUTELY\r\nEND:VEVENT\r\n"
        ));
    }
    many.push_str("END:VCALENDAR\r\n");
    let e = Calendar::parse(&many, from, from + Duration::minutes(5000), BERLIN).unwrap_err();
    assert!(e.to_string().contains("occurrences in the window"), "{e}");
}

/// A `FREQ=SECONDLY` rule from 1900 stepped through about four billion recurrences
/// before the window; the calendar's expansion budget makes it a one-line error.
#[test]
fn a_rule_that_runs_long_before_the_window_is_an_error() {
    let ics = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nBEGIN:VEVENT\r\nUID:x\r\nDTSTART:19000101T000000Z\r\nDURATION:PT1S\r\nRRULE:FREQ=SECONDLY\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";
    let from = utc(2025, 1, 6, 9, 0);
    let e = Calendar::parse(ics, from, from + Duration::minutes(10), BERLIN).unwrap_err();
    assert!(e.to_string().contains("repeats too often"), "{e}");
    // a daily rule from 1990 is fine
    let daily = ics.replace("SECONDLY", "DAILY").replace("19000101", "19900101");
    assert_eq!(
        Calendar::parse(&daily, utc(2025, 1, 6, 0, 0), utc(2025, 1, 13, 0, 0), BERLIN)
            .unwrap()
            .occurrences()
            .len(),
        7
    );
}

/// The `rrule` crate mis-expands `FREQ=SECONDLY`/`MINUTELY` rules with a day-level
/// filter (this one skipped 2025–2029, so the window's occurrence vanished and the two
/// hours showed as free); they are refused, and a rule whose iterator gives up
/// (100 000 empty steps) before the window ends is an error, not a silent end (found
/// by the review of issue 26). Fails on the code before the fix: the calendar showed
/// no busy time.
#[test]
fn sparse_sub_hourly_rules_are_errors_not_dropped_occurrences() {
    for (name, dtstart, rule) in [
        (
            "secondly",
            "20240106T100000Z",
            "FREQ=SECONDLY;BYMONTH=1;BYMONTHDAY=6;BYHOUR=10;BYMINUTE=0;BYSECOND=0",
        ),
        (
            "minutely",
            "20240106T100000Z",
            "FREQ=MINUTELY;BYMONTH=1;BYMONTHDAY=6;BYHOUR=10;BYMINUTE=0",
        ),
        (
            "secondly, first date in 2025",
            "20250101T100000Z",
            "FREQ=SECONDLY;BYMONTHDAY=6;BYHOUR=10;BYMINUTE=0;BYSECOND=0",
        ),
        (
            "minutely on mondays",
            "20250101T100000Z",
            "FREQ=MINUTELY;BYDAY=MO;BYHOUR=10;BYMINUTE=0",
        ),
    ] {
        let ics = cal(&ev(
            "x",
            &[&format!("DTSTART:{dtstart}"), "DURATION:PT2H", &format!("RRULE:{rule}")],
        ));
        match Calendar::parse(&ics, utc(2025, 1, 6, 0, 0), utc(2025, 1, 11, 0, 0), chrono_tz::UTC) {
            Err(e) => assert!(
                e.to_string().contains("RRULE") && !e.to_string().contains('\n'),
                "{name}: {e}"
            ),
            Ok(c) => assert!(
                c.busy()
                    .iter()
                    .any(|i| i.start == utc(2025, 1, 6, 10, 0) && i.end == utc(2025, 1, 6, 12, 0)),
                "{name}: RRULE:{rule} blocks 2025-01-06 10:00-12:00, but the calendar shows busy {:?}",
                c.busy()
            ),
        }
    }
    // a sub-hourly rule without day filters still expands (daily at 10:00)
    let ics = cal(&ev(
        "d",
        &[
            "DTSTART:20250101T100000Z",
            "DURATION:PT1H",
            "RRULE:FREQ=MINUTELY;BYHOUR=10;BYMINUTE=0",
        ],
    ));
    let c = Calendar::parse(&ics, utc(2025, 1, 6, 0, 0), utc(2025, 1, 8, 0, 0), chrono_tz::UTC).unwrap();
    assert_eq!(c.busy().len(), 2, "{:?}", c.busy());
}

/// 20 000 nested components (320 KB) overflowed the stack inside the `icalendar`
/// parser and aborted the process; nesting beyond [`MAX_NESTING`] is now a one-line
/// error before the parser runs (review of issue 26; fails on the code before the
/// fix: the child process aborts). Run in a child process, since an overflow aborts
/// the whole test binary.
#[test]
fn deeply_nested_components_are_a_one_line_error() {
    if std::env::var("TACIT_NESTED_CHILD").is_ok() {
        let n = 20_000;
        let ics = format!(
            "BEGIN:VCALENDAR\r\nVERSION:2.0\r\n{}{}END:VCALENDAR\r\n",
            "BEGIN:X\r\n".repeat(n),
            "END:X\r\n".repeat(n)
        );
        // the main thread's 8 MiB, as in `tacit`
        let h = std::thread::Builder::new()
            .stack_size(8 << 20)
            .spawn(move || Calendar::parse(&ics, utc(2025, 1, 6, 0, 0), utc(2025, 1, 11, 0, 0), chrono_tz::UTC))
            .unwrap();
        let e = h.join().unwrap().unwrap_err().to_string();
        assert!(e.contains("nested") && !e.contains('\n'), "{e}");
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "tests::deeply_nested_components_are_a_one_line_error",
            "--nocapture",
        ])
        .env("TACIT_NESTED_CHILD", "1")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("1 passed"),
        "parsing 20 000 nested components failed ({}): {}",
        out.status,
        err.lines()
            .filter(|l| !l.trim().is_empty())
            .take(3)
            .collect::<Vec<_>>()
            .join(" | ")
    );
    // ordinary nesting (VCALENDAR > VEVENT > VALARM) is untouched
    let ics = cal(&ev(
        "a",
        &[
            "DTSTART:20250106T100000Z",
            "DURATION:PT1H",
            "BEGIN:VALARM",
            "ACTION:DISPLAY",
            "TRIGGER:-PT15M",
            "END:VALARM",
        ],
    ));
    let c = Calendar::parse(&ics, utc(2025, 1, 6, 0, 0), utc(2025, 1, 11, 0, 0), chrono_tz::UTC).unwrap();
    assert_eq!(c.busy().len(), 1);
}

/// `Calendar::parse` cloned and hashed an event's `UID` once per `RDATE` to look it up
/// among the `RECURRENCE-ID` overrides: a 2.7 MB file (1 MiB UID, 100 000 RDATEs) took
/// about 20 s, a 16 MiB one about 13 minutes. The lookup is now once per event
/// (review of issue 26; fails on the code before the fix by taking ~20 s). The
/// bound is generous for debug builds on a busy two-core machine; the fixed code
/// takes well under a second.
#[test]
fn a_long_uid_with_many_rdates_is_parsed_in_linear_time() {
    let uid = "U".repeat(1 << 20);
    let dates = vec!["20200101T100000Z"; 100_000].join(",");
    let ics = format!(
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nBEGIN:VEVENT\r\nUID:{uid}\r\nDTSTART:20200101T090000Z\r\nDURATION:PT1H\r\n\
         RDATE:{dates}\r\nEND:VEVENT\r\nBEGIN:VEVENT\r\nUID:o\r\nRECURRENCE-ID:20200101T090000Z\r\n\
         DTSTART:20200101T090000Z\r\nDURATION:PT1H\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
    );
    let t = std::time::Instant::now();
    let _ = Calendar::parse(&ics, utc(2025, 1, 6, 0, 0), utc(2025, 1, 11, 0, 0), chrono_tz::UTC);
    let took = t.elapsed();
    assert!(
        took < std::time::Duration::from_secs(5),
        "a {} KB calendar took {took:.1?} to parse",
        ics.len() / 1024
    );
}
