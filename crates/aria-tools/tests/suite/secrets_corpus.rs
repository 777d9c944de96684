//! The secret filter against its labelled corpus (`tests/data/secrets/`, written by
//! `generate.py` there from the formats' public documentation; every value is synthetic).
//!
//! A positive is caught when the redactor reports a kind (the `aria check secrets` verdict is
//! `secret`) and the value is gone from the output; a negative is a false alarm when any kind
//! is reported. The figures are printed (`cargo nextest run -p aria-tools secrets_corpus
//! --no-capture`) and held to two goals: at least 97 % caught, at most 3 % false alarms.

#![allow(clippy::print_stderr)]

use std::collections::BTreeMap;

use aria_tools::SecretRedactor;
use serde_json::Value;

const POSITIVE: &str = include_str!("../data/secrets/positive.jsonl");
const NEGATIVE: &str = include_str!("../data/secrets/negative.jsonl");

fn rows(jsonl: &str) -> Vec<Value> {
    jsonl
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn field<'a>(row: &'a Value, name: &str) -> &'a str {
    row[name].as_str().unwrap_or("")
}

#[test]
fn detection_and_false_alarm_rates_meet_the_goals() {
    let r = SecretRedactor::new(Vec::new());
    let positives = rows(POSITIVE);
    let negatives = rows(NEGATIVE);
    assert!(positives.len() > 900 && negatives.len() > 400, "corpus too small");
    let mut missed: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut caught = 0;
    for row in &positives {
        let (text, secret) = (field(row, "text"), field(row, "secret"));
        assert!(text.contains(secret), "bad row: {row}");
        let report = r.redact_report(text);
        if !report.kinds.is_empty() && !report.text.contains(secret) {
            caught += 1;
        } else {
            let key = format!("{} / {}", field(row, "syntax"), field(row, "service"));
            missed.entry(key).or_default().push(format!("{text:?} -> {:?}", report.text));
        }
    }
    let mut alarms = Vec::new();
    for row in &negatives {
        let text = field(row, "text");
        let report = r.redact_report(text);
        if !report.kinds.is_empty() {
            alarms.push(format!("{:?} {text:?} -> {:?}", report.kinds, report.text));
        }
    }
    let detection = caught as f64 / positives.len() as f64;
    let false_alarms = alarms.len() as f64 / negatives.len() as f64;
    for (key, texts) in &missed {
        eprintln!("missed {key}: {}", texts.join(" | "));
    }
    for a in &alarms {
        eprintln!("false alarm: {a}");
    }
    eprintln!(
        "secret corpus: caught {caught} of {} ({:.1} %), false alarms {} of {} ({:.1} %)",
        positives.len(),
        detection * 100.0,
        alarms.len(),
        negatives.len(),
        false_alarms * 100.0
    );
    assert!(detection >= 0.97, "detection {:.1} % is under 97 %", detection * 100.0);
    assert!(false_alarms <= 0.03, "false alarms {:.1} % are over 3 %", false_alarms * 100.0);
}
