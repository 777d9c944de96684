//! The audit anchor kept off the machine: `aria audit head` prints the
//! chain's head as `SEQ:HASH`, and `aria audit verify --expect-head SEQ:HASH` fails when that
//! record is gone or different, whatever `audit-head.json` beside the database says.

use std::process::Output;

use aria_testkit::openai_mock::{MockOpenAi, MockTurn};
use serde_json::{Value, json};

use super::harness::{Aria, code, json_of, text};

const NO_SERVER: &str = "http://127.0.0.1:9/v1";

/// One finished run, so the log has records.
fn run_once(aria: &Aria, task: &str) {
    let mock = MockOpenAi::new(vec![MockTurn::text("hello")]).serve();
    let out = aria.run(&mock.base_url(), &["run", "--task", task]);
    assert_eq!(code(&out), 0, "stderr: {}", text(&out.stderr));
}

fn head(aria: &Aria) -> String {
    let out = aria.run(NO_SERVER, &["audit", "head"]);
    assert_eq!(code(&out), 0, "stderr: {}", text(&out.stderr));
    let line = text(&out.stdout);
    assert!(line.ends_with('\n') && line.lines().count() == 1, "one line: {line:?}");
    line.trim_end().to_owned()
}

fn verify(aria: &Aria, expect: Option<&str>) -> Output {
    let mut args = vec!["audit", "verify"];
    if let Some(h) = expect {
        args.extend(["--expect-head", h]);
    }
    aria.run(NO_SERVER, &args)
}

fn records(aria: &Aria) -> Vec<Value> {
    let out = aria.run(NO_SERVER, &["audit", "list", "--json"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    json_of(&out).as_array().unwrap().clone()
}

fn sqlite(aria: &Aria, sql: &str) -> String {
    let out = std::process::Command::new("sqlite3")
        .arg(aria.db())
        .arg(sql)
        .output()
        .expect("the sqlite3 shell is installed");
    assert!(out.status.success(), "{sql}: {}", text(&out.stderr));
    text(&out.stdout)
}

/// Deletes every record after `keep` the way a careful attacker would: the append-only trigger
/// is dropped, the rows deleted, the trigger put back as it was, and `audit-head.json` rewritten
/// to name the new last record. Nothing on the machine can tell any more.
fn cut_back_to(aria: &Aria, keep: u64) {
    let trigger = sqlite(aria, "SELECT sql FROM sqlite_master WHERE name = 'audit_log_no_delete';");
    assert!(trigger.contains("CREATE TRIGGER"), "{trigger}");
    sqlite(
        aria,
        &format!(
            "DROP TRIGGER audit_log_no_delete; DELETE FROM audit_log WHERE seq > {keep}; {};",
            trigger.trim_end()
        ),
    );
    let hash = sqlite(aria, &format!("SELECT hash FROM audit_log WHERE seq = {keep};"));
    let anchor = json!({"seq": keep, "hash": hash.trim()});
    std::fs::write(aria.home().join("audit-head.json"), anchor.to_string()).unwrap();
}

#[test]
fn head_prints_the_last_record_as_seq_colon_hash_and_verify_accepts_it() {
    let aria = Aria::new();
    run_once(&aria, "hi");
    let line = head(&aria);
    let last = records(&aria).pop().unwrap();
    assert_eq!(line, format!("{}:{}", last["seq"], last["hash"].as_str().unwrap()));
    let (seq, hash) = line.split_once(':').unwrap();
    assert!(seq.parse::<u64>().unwrap() > 1, "{line}");
    assert!(hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit()), "{line}");

    let ok = verify(&aria, Some(&line));
    assert_eq!(code(&ok), 0, "{}{}", text(&ok.stdout), text(&ok.stderr));
    let said = text(&ok.stdout);
    assert!(said.starts_with("ok: ") && said.contains(&format!("record {seq}")), "{said}");

    // The log grows after the head was written down: the old head still checks out.
    run_once(&aria, "again");
    assert_ne!(head(&aria), line);
    let ok = verify(&aria, Some(&line));
    assert_eq!(code(&ok), 0, "{}{}", text(&ok.stdout), text(&ok.stderr));
}

#[test]
fn a_log_cut_short_with_its_anchor_file_rewritten_passes_verify_but_not_the_kept_head() {
    let aria = Aria::new();
    run_once(&aria, "hi");
    let kept = head(&aria);
    let seq: u64 = kept.split_once(':').unwrap().0.parse().unwrap();

    cut_back_to(&aria, seq - 3);
    let plain = verify(&aria, None);
    assert_eq!(code(&plain), 0, "the weakness this closes: {}", text(&plain.stdout));
    assert!(text(&plain.stderr).is_empty(), "no warning either: {}", text(&plain.stderr));

    let out = verify(&aria, Some(&kept));
    assert_eq!(code(&out), 1, "{}{}", text(&out.stdout), text(&out.stderr));
    let said = text(&out.stdout);
    assert!(said.starts_with("FAILED: "), "{said}");
    assert!(said.contains(&format!("record {seq}")) && said.contains("cut short"), "{said}");
}

#[test]
fn a_log_rewritten_past_the_kept_head_fails_it() {
    let aria = Aria::new();
    run_once(&aria, "hi");
    let kept = head(&aria);
    let seq: u64 = kept.split_once(':').unwrap().0.parse().unwrap();

    // Cut back, then let new records fill the gap: record `seq` exists again, but it is not
    // the one that was written down.
    cut_back_to(&aria, seq - 3);
    run_once(&aria, "a different history");
    assert!(records(&aria).len() as u64 >= seq);
    assert_eq!(code(&verify(&aria, None)), 0);

    let out = verify(&aria, Some(&kept));
    assert_eq!(code(&out), 1, "{}{}", text(&out.stdout), text(&out.stderr));
    let said = text(&out.stdout);
    assert!(said.contains(&format!("record {seq}")) && said.contains("rewritten"), "{said}");
}

#[test]
fn the_expected_head_does_not_replace_the_usual_checks() {
    let aria = Aria::new();
    run_once(&aria, "hi");
    let early = records(&aria)[1].clone();
    let early_head = format!("{}:{}", early["seq"], early["hash"].as_str().unwrap());
    // Records deleted from the end, anchor file left alone: the file's check still fails.
    let trigger = "DROP TRIGGER audit_log_no_delete; DELETE FROM audit_log WHERE seq > 3;";
    sqlite(&aria, trigger);
    let out = verify(&aria, Some(&early_head));
    assert_eq!(code(&out), 1, "{}", text(&out.stdout));
    assert!(text(&out.stdout).contains("deleted"), "{}", text(&out.stdout));
}

#[test]
fn an_empty_log_has_no_head() {
    let aria = Aria::new();
    let out = aria.run(NO_SERVER, &["audit", "head"]);
    assert_eq!(code(&out), 1, "{}", text(&out.stdout));
    assert!(text(&out.stdout).is_empty(), "{}", text(&out.stdout));
    assert!(text(&out.stderr).contains("empty"), "{}", text(&out.stderr));
}

#[test]
fn a_malformed_expected_head_is_a_usage_error() {
    let aria = Aria::new();
    let hex = "ab".repeat(32);
    for (bad, needle) in [
        ("12".to_owned(), "SEQ:HASH"),
        (format!("x:{hex}"), "record number"),
        (format!("0:{hex}"), "record number"),
        ("3:xyz".to_owned(), "64 hexadecimal"),
        (format!("3:{}", "g".repeat(64)), "64 hexadecimal"),
    ] {
        let out = verify(&aria, Some(&bad));
        assert_eq!(code(&out), 2, "{bad}: {}", text(&out.stderr));
        assert!(text(&out.stderr).contains(needle), "{bad}: {}", text(&out.stderr));
    }
    // A bundle has no head of the whole log to compare with.
    let good = format!("1:{hex}");
    let out = aria.run(NO_SERVER, &["audit", "verify", "--file", "x.json", "--expect-head", &good]);
    assert_eq!(code(&out), 2, "{}", text(&out.stderr));
}
