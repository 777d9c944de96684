use super::*;
use pretty_assertions::assert_eq;

fn fires(expr: &str, tz: &str, after: &str, n: usize) -> Vec<String> {
    let schedule = Schedule::parse(expr).unwrap();
    let tz = zone(tz).unwrap();
    let after: Timestamp = after.parse().unwrap();
    schedule.fires_after(&tz, after, n).unwrap().iter().map(rfc3339_in).collect()
}

#[test]
fn daily_in_utc() {
    assert_eq!(
        fires("0 9 * * *", "UTC", "2026-01-01T09:00:00Z", 2),
        ["2026-01-02T09:00:00+00:00", "2026-01-03T09:00:00+00:00"]
    );
}

#[test]
fn fixed_time_in_a_spring_gap_runs_at_the_end_of_the_gap() {
    // Berlin 2026-03-29 02:00 CET → 03:00 CEST.
    assert_eq!(
        fires("30 2 * * *", "Europe/Berlin", "2026-03-28T12:00:00Z", 2),
        ["2026-03-29T03:00:00+02:00", "2026-03-30T02:30:00+02:00"]
    );
    // Two times in the gap and the time after it are one fire (one slot per instant).
    assert_eq!(
        fires("0,30 2,3 * * *", "America/New_York", "2026-03-08T05:00:00Z", 3),
        ["2026-03-08T03:00:00-04:00", "2026-03-08T03:30:00-04:00", "2026-03-09T02:00:00-04:00"]
    );
    // Lord Howe's half-hour gap: 02:00 → 02:30.
    assert_eq!(
        fires("10 2 * * *", "Australia/Lord_Howe", "2026-10-03T00:00:00Z", 1),
        ["2026-10-04T02:30:00+11:00"]
    );
    // Santiago skips midnight: 00:00 → 01:00.
    assert_eq!(
        fires("@daily", "America/Santiago", "2026-09-05T12:00:00Z", 1),
        ["2026-09-06T01:00:00-03:00"]
    );
}

#[test]
fn fixed_time_in_a_repeated_hour_runs_once_at_the_first_pass() {
    // Dublin: negative DST in tzdata; 2026-10-25 02:00 IST → 01:00 GMT.
    assert_eq!(
        fires("30 1 * * *", "Europe/Dublin", "2026-10-24T12:00:00Z", 2),
        ["2026-10-25T01:30:00+01:00", "2026-10-26T01:30:00+00:00"]
    );
    // A list in the hour field is still fixed-time by Debian's rule (croner would disagree).
    assert!(Schedule::parse("0,30 1-3 * * *").unwrap().is_fixed_time());
    assert_eq!(
        fires("0,30 1-3 * * *", "America/New_York", "2026-11-01T04:00:00Z", 7),
        [
            "2026-11-01T01:00:00-04:00",
            "2026-11-01T01:30:00-04:00",
            "2026-11-01T02:00:00-05:00",
            "2026-11-01T02:30:00-05:00",
            "2026-11-01T03:00:00-05:00",
            "2026-11-01T03:30:00-05:00",
            "2026-11-02T01:00:00-05:00",
        ]
    );
    // Starting inside the second pass does not run the first pass's times again.
    assert_eq!(
        fires("30 1 * * *", "America/New_York", "2026-11-01T06:10:00Z", 1),
        ["2026-11-02T01:30:00-05:00"]
    );
}

#[test]
fn wildcard_jobs_follow_real_time() {
    assert!(!Schedule::parse("15 * * * *").unwrap().is_fixed_time());
    assert!(!Schedule::parse("0 */2 * * *").unwrap().is_fixed_time());
    // Both passes of Berlin's repeated hour; nothing in the spring gap.
    assert_eq!(
        fires("15 * * * *", "Europe/Berlin", "2026-10-25T00:00:00Z", 3),
        ["2026-10-25T02:15:00+02:00", "2026-10-25T02:15:00+01:00", "2026-10-25T03:15:00+01:00"]
    );
    assert_eq!(
        fires("15 * * * *", "Europe/Berlin", "2026-03-29T00:00:00Z", 2),
        ["2026-03-29T01:15:00+01:00", "2026-03-29T03:15:00+02:00"]
    );
    // Lord Howe's repeated half hour: 01:40 shows twice.
    assert_eq!(
        fires("*/20 * * * *", "Australia/Lord_Howe", "2026-04-04T14:30:00Z", 4),
        [
            "2026-04-05T01:40:00+11:00",
            "2026-04-05T01:40:00+10:30",
            "2026-04-05T02:00:00+10:30",
            "2026-04-05T02:20:00+10:30",
        ]
    );
}

#[test]
fn day_fields_follow_cronies_or_rule() {
    // Both restricted: the 1st, the 15th, or any Monday.
    assert_eq!(
        fires("0 9 1,15 * MON", "UTC", "2026-06-01T10:00:00Z", 3),
        ["2026-06-08T09:00:00+00:00", "2026-06-15T09:00:00+00:00", "2026-06-22T09:00:00+00:00"]
    );
    // A day field starting with `*` makes it AND: odd days that are Mondays.
    assert_eq!(
        fires("0 9 */2 * mon", "UTC", "2026-06-01T10:00:00Z", 2),
        ["2026-06-15T09:00:00+00:00", "2026-06-29T09:00:00+00:00"]
    );
    // Sunday as 7 and as 0.
    assert_eq!(
        fires("0 0 * * 7", "UTC", "2026-06-01T00:00:00Z", 1),
        fires("0 0 * * 0", "UTC", "2026-06-01T00:00:00Z", 1)
    );
}

#[test]
fn shortcuts_mean_what_crontab_says() {
    for (short, long) in [
        ("@yearly", "0 0 1 1 *"),
        ("@annually", "0 0 1 1 *"),
        ("@monthly", "0 0 1 * *"),
        ("@weekly", "0 0 * * 0"),
        ("@daily", "0 0 * * *"),
        ("@midnight", "0 0 * * *"),
        ("@HOURLY", "0 * * * *"),
    ] {
        assert_eq!(
            fires(short, "Europe/Berlin", "2026-01-01T00:00:00Z", 3),
            fires(long, "Europe/Berlin", "2026-01-01T00:00:00Z", 3),
            "{short}"
        );
    }
}

#[test]
fn bad_expressions_and_zones_are_refused_with_a_reason() {
    for bad in [
        "",
        "* * * *",
        "0 0 * * * *",
        "@reboot",
        "60 * * * *",
        "* 24 * * *",
        "0 0 L * *",
        "0 0 15W * *",
        "0 0 * * 5#2",
        "0 0 ? * *",
        "0 0 * FOO *",
        "0 0 * * MON-",
        "a b c d e",
    ] {
        assert!(
            matches!(Schedule::parse(bad), Err(CronError::Expression { .. })),
            "{bad:?} was accepted: {:?}",
            Schedule::parse(bad)
        );
    }
    assert_eq!(
        Schedule::parse("0 0 30 2 *").unwrap_err(),
        CronError::NeverFires { expr: "0 0 30 2 *".into() }
    );
    assert!(Schedule::parse("0 0 29 2 *").is_ok());
    let err = zone("Mars/Olympus_Mons").unwrap_err();
    assert!(err.to_string().contains("IANA"), "{err}");
}

#[test]
fn fires_between_counts_missed_slots_and_keeps_the_last() {
    let schedule = Schedule::parse("0 * * * *").unwrap();
    let tz = zone("UTC").unwrap();
    let (last, count, next) = schedule
        .fires_between(
            &tz,
            "2026-01-01T00:00:00Z".parse().unwrap(),
            "2026-01-01T05:30:00Z".parse().unwrap(),
        )
        .unwrap();
    assert_eq!(count, 5);
    assert_eq!(next, "2026-01-01T06:00:00Z".parse().unwrap());
    assert_eq!(last, Some("2026-01-01T05:00:00Z".parse().unwrap()));
    let (none, zero, _) = schedule
        .fires_between(
            &tz,
            "2026-01-01T00:00:00Z".parse().unwrap(),
            "2026-01-01T00:59:00Z".parse().unwrap(),
        )
        .unwrap();
    assert_eq!((none, zero), (None, 0));
}
