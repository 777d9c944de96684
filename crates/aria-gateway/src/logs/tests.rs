use std::io::Write;

use jiff::SignedDuration;
use jiff::tz::TimeZone;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;

fn line(time: &str, level: &str, message: &str) -> String {
    json!({"timestamp": time, "level": level, "fields": {"message": message}, "target": "t"})
        .to_string()
        + "\n"
}

fn append(path: &Path, text: &str) {
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(path).unwrap();
    file.write_all(text.as_bytes()).unwrap();
}

fn messages(entries: &[Entry]) -> Vec<String> {
    entries
        .iter()
        .map(|e| e.event.as_ref().map_or_else(|| e.raw.clone(), |ev| ev.message.clone()))
        .collect()
}

#[test]
fn an_event_reads_back_with_its_fields_in_order_and_renders_as_one_line() {
    let raw = r#"{"timestamp":"2026-11-26T18:04:12.123456Z","level":"WARN","fields":{"message":"tool call","tool":"file_read","outcome":"failed: no such file","duration_ms":3},"target":"aria_core::run","span":{"session":"01ab","name":"run"},"spans":[]}"#;
    let entry = Entry::parse(raw);
    let event = entry.event.clone().unwrap();
    assert_eq!(event.level, Level::Warn);
    assert_eq!(event.target, "aria_core::run");
    let keys: Vec<&str> = event.fields.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, ["tool", "outcome", "duration_ms", "session"]);
    assert_eq!(
        entry.readable(&TimeZone::UTC, false),
        "2026-11-26 18:04:12 WARN  tool call  tool=file_read outcome=\"failed: no such file\" \
         duration_ms=3 session=01ab"
    );
    let coloured = entry.readable(&TimeZone::UTC, true);
    assert!(coloured.contains("\x1b[33mWARN \x1b[0m"), "{coloured:?}");
    let tokyo = TimeZone::get("Asia/Tokyo").unwrap();
    assert!(entry.readable(&tokyo, false).starts_with("2026-11-27 03:04:12 WARN"));
}

#[test]
fn a_line_that_is_not_ours_is_kept_raw_and_filters_decide_about_it() {
    for raw in ["not json", "{\"level\":\"INFO\"}", "{\"timestamp\":\"x\",\"level\":\"INFO\"}", ""]
    {
        let entry = Entry::parse(raw);
        assert_eq!(entry.event, None, "{raw}");
        assert_eq!(entry.readable(&TimeZone::UTC, true), raw);
        assert!(!Filter::default().admits(&entry));
        assert!(Filter { unparsed: true, ..Filter::default() }.admits(&entry));
    }
}

#[test]
fn levels_order_and_filters_combine_level_and_time() {
    assert!(Level::Trace < Level::Debug && Level::Info < Level::Warn && Level::Warn < Level::Error);
    assert_eq!(Level::parse("Warning"), Some(Level::Warn));
    assert_eq!(Level::parse("loud"), None);
    let filter = Filter {
        min_level: Some(Level::Warn),
        since: Some("2026-11-26T12:00:00Z".parse().unwrap()),
        unparsed: false,
    };
    let admits = |t: &str, l: &str| filter.admits(&Entry::parse(&line(t, l, "m")));
    assert!(admits("2026-11-26T12:00:00Z", "ERROR"));
    assert!(admits("2026-11-26T13:00:00Z", "WARN"));
    assert!(!admits("2026-11-26T13:00:00Z", "INFO"));
    assert!(!admits("2026-11-26T11:59:59Z", "ERROR"));
}

#[test]
fn tail_reads_rotated_files_oldest_first_and_keeps_the_last_n() {
    let dir = tempfile::tempdir().unwrap();
    assert!(tail(dir.path(), &Filter::default(), 0).unwrap().is_none());
    std::fs::write(rotated(dir.path(), 2), line("2026-11-26T10:00:00Z", "INFO", "a")).unwrap();
    std::fs::write(rotated(dir.path(), 1), line("2026-11-26T11:00:00Z", "INFO", "b")).unwrap();
    std::fs::write(
        current(dir.path()),
        line("2026-11-26T12:00:00Z", "INFO", "c")
            + "garbage\n"
            + &line("2026-11-26T12:01:00Z", "ERROR", "d"),
    )
    .unwrap();
    // Not ours: ignored.
    std::fs::write(dir.path().join("aria.x.jsonl"), "zzz\n").unwrap();
    let all = Filter { unparsed: true, ..Filter::default() };
    let got = tail(dir.path(), &all, 0).unwrap().unwrap();
    assert_eq!(messages(&got.entries), ["a", "b", "c", "garbage", "d"]);
    let last = tail(dir.path(), &all, 2).unwrap().unwrap();
    assert_eq!((messages(&last.entries), last.matched), (vec!["garbage".into(), "d".into()], 5));
}

#[test]
fn since_skips_rotated_files_last_written_before_it() {
    let dir = tempfile::tempdir().unwrap();
    // A line claiming to be new, in a file last written an hour ago: the file is skipped.
    let now = Timestamp::now();
    std::fs::write(rotated(dir.path(), 1), line(&now.to_string(), "INFO", "old file")).unwrap();
    let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    File::options()
        .write(true)
        .open(rotated(dir.path(), 1))
        .unwrap()
        .set_modified(hour_ago)
        .unwrap();
    std::fs::write(current(dir.path()), line(&now.to_string(), "INFO", "new")).unwrap();
    let filter = Filter { since: Some(now - SignedDuration::from_mins(5)), ..Filter::default() };
    assert_eq!(messages(&tail(dir.path(), &filter, 0).unwrap().unwrap().entries), ["new"]);
}

#[test]
fn a_follower_sees_appended_lines_once_waits_for_line_ends_and_crosses_a_rotation() {
    let dir = tempfile::tempdir().unwrap();
    let mut follower = Follower::new(dir.path());
    assert!(follower.poll().unwrap().is_empty(), "no file yet");
    let path = current(dir.path());
    append(&path, &line("2026-11-26T12:00:00Z", "INFO", "one"));
    assert_eq!(messages(&follower.poll().unwrap()), ["one"]);
    assert!(follower.poll().unwrap().is_empty());
    // Half a line: nothing until its end arrives.
    let two = line("2026-11-26T12:00:01Z", "INFO", "two");
    append(&path, &two[..10]);
    assert!(follower.poll().unwrap().is_empty());
    append(&path, &two[10..]);
    assert_eq!(messages(&follower.poll().unwrap()), ["two"]);
    // A rotation: a late line lands in the renamed file, the next in the new one.
    std::fs::rename(&path, rotated(dir.path(), 1)).unwrap();
    append(&rotated(dir.path(), 1), &line("2026-11-26T12:00:02Z", "INFO", "late"));
    append(&path, &line("2026-11-26T12:00:03Z", "INFO", "three"));
    assert_eq!(messages(&follower.poll().unwrap()), ["late", "three"]);
    append(&path, &line("2026-11-26T12:00:04Z", "INFO", "four"));
    assert_eq!(messages(&follower.poll().unwrap()), ["four"]);
}
