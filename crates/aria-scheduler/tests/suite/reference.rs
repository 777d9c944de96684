//! Our fire times against cronsim 2.8 (an independent implementation of Debian's cron, from
//! PyPI), generated once by `tests/data/gen_fixture.py` into `tests/data/cron_reference.json`.
//! Both 2026 DST transitions of Europe/Berlin, America/New_York, Australia/Lord_Howe (half-hour
//! shift), Europe/Dublin (negative DST in tzdata) and America/Santiago (southern hemisphere,
//! midnight transitions), and the day-of-month/day-of-week rule in UTC.
//!
//! Where the reference and our policy (Debian's/cronie's rules) differ, a case carries
//! `expected` (our policy) besides `reference`; the generator's docstring lists each such rule.
//! With cronsim 2.8 none does, and the test checks that every `expected` is only the documented
//! deduplication.
use aria_scheduler::cron::{Schedule, rfc3339_in, zone};
use jiff::Timestamp;
use pretty_assertions::assert_eq;
use serde::Deserialize;

#[derive(Deserialize)]
struct Fixture {
    source: String,
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    expr: String,
    zone: String,
    after: String,
    until: String,
    reference: Vec<String>,
    expected: Option<Vec<String>>,
    difference: Option<String>,
}

fn ours(case: &Case) -> Vec<String> {
    let schedule = Schedule::parse(&case.expr).unwrap();
    let tz = zone(&case.zone).unwrap();
    let mut out = Vec::new();
    let until: Timestamp = case.until.parse().unwrap();
    let mut at: Timestamp = case.after.parse().unwrap();
    loop {
        at = schedule.next_after(&tz, at).unwrap();
        if at > until {
            return out;
        }
        out.push(rfc3339_in(&at.to_zoned(tz.clone())));
    }
}

fn fixture() -> Fixture {
    serde_json::from_str(include_str!("../data/cron_reference.json")).unwrap()
}

#[test]
fn fire_times_match_the_reference_around_every_transition() {
    let fixture = fixture();
    assert!(fixture.source.starts_with("cronsim 2.8"), "{}", fixture.source);
    assert!(fixture.cases.len() > 100);
    let zones: std::collections::BTreeSet<&str> =
        fixture.cases.iter().map(|c| c.zone.as_str()).collect();
    for z in [
        "Europe/Berlin",
        "America/New_York",
        "Australia/Lord_Howe",
        "Europe/Dublin",
        "America/Santiago",
    ] {
        assert!(zones.contains(z), "{z} missing from the fixture");
    }
    let mut checked = 0;
    for case in &fixture.cases {
        assert!(!case.reference.is_empty(), "{} in {}: empty reference", case.expr, case.zone);
        let want = case.expected.as_ref().unwrap_or(&case.reference);
        assert_eq!(&ours(case), want, "{} in {} after {}", case.expr, case.zone, case.after);
        checked += want.len();
    }
    assert!(checked > 2000, "only {checked} fire times compared");
}

/// Policy over reference: every case where they differ names its rule (see the generator), and
/// the difference is exactly what that rule allows.
#[test]
fn every_difference_is_documented() {
    let mut differences = 0;
    for case in fixture().cases {
        let Some(expected) = case.expected else { continue };
        differences += 1;
        let parse =
            |xs: &[String]| -> Vec<Timestamp> { xs.iter().map(|t| t.parse().unwrap()).collect() };
        let (reference, expected) = (parse(&case.reference), parse(&expected));
        let rule = case.difference.as_deref().unwrap_or("");
        if rule.starts_with("1:") {
            let mut deduped = reference.clone();
            deduped.dedup();
            assert_eq!(expected, deduped, "{} in {}", case.expr, case.zone);
        } else if rule.starts_with("2:") {
            let added: Vec<&Timestamp> =
                expected.iter().filter(|t| !reference.contains(t)).collect();
            assert_eq!(added.len(), 1, "{} in {}: {rule}", case.expr, case.zone);
            assert_eq!(expected.len(), reference.len() + 1);
            // The added instant is the only moment that night the wall clock reads 02:00.
            let shown = added[0].to_zoned(zone(&case.zone).unwrap());
            assert_eq!((shown.hour(), shown.minute()), (2, 0));
        } else {
            panic!(
                "{} in {}: a difference without a documented rule: {rule:?}",
                case.expr, case.zone
            );
        }
    }
    assert_eq!(differences, 1, "the generator documents exactly one difference (rule 2)");
}
