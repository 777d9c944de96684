//! `aria logs` through the binary, on log files written by hand: the rotated files
//! and the current one read in order, the level and time filters, `--json`, `--limit`, a line
//! that is not JSON shown as it is, and `--follow` picking up appended lines across a rotation.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::json;

use super::harness::{Aria, code, text};

const NO_SERVER: &str = "http://127.0.0.1:9";

fn logs_dir(aria: &Aria) -> PathBuf {
    let dir = aria.home().join("logs");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A line as the JSON layer writes it (keys in its order), `ago_secs` before now.
fn line(ago_secs: i64, level: &str, message: &str) -> String {
    let at = jiff::Timestamp::now() - jiff::SignedDuration::from_secs(ago_secs);
    format!(
        r#"{{"timestamp":"{at}","level":"{level}","fields":{{"message":"{message}","tool":"file_read","took":"3 ms"}},"target":"aria_core::run"}}"#
    ) + "\n"
}

fn logs(aria: &Aria, args: &[&str]) -> (i32, String, String) {
    let out = aria.cmd(NO_SERVER).env("TZ", "UTC").arg("logs").args(args).output().unwrap();
    (code(&out), text(&out.stdout), text(&out.stderr))
}

/// The message of each printed line (the text after the level), or the line when it is not
/// an event.
fn messages(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .map(|l| l.get(26..).and_then(|m| m.split("  ").next()).unwrap_or(l).to_owned())
        .map(|m| if m.is_empty() { "?".into() } else { m })
        .collect()
}

#[test]
fn logs_reads_rotated_files_in_order_and_filters_by_level_and_time() {
    let aria = Aria::new();
    let dir = logs_dir(&aria);
    std::fs::write(dir.join("aria.2.jsonl"), line(3 * 86_400, "INFO", "oldest")).unwrap();
    std::fs::write(dir.join("aria.1.jsonl"), line(2 * 3_600, "WARN", "middle")).unwrap();
    std::fs::write(
        dir.join("aria.jsonl"),
        line(120, "DEBUG", "chatty") + "not json at all\n" + &line(60, "ERROR", "newest"),
    )
    .unwrap();

    let (status, out, err) = logs(&aria, &[]);
    assert_eq!(status, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 5, "{out}");
    assert_eq!(lines[2].get(19..), Some(" DEBUG chatty  tool=file_read took=\"3 ms\""));
    assert!(jiff::civil::DateTime::strptime("%Y-%m-%d %H:%M:%S", &lines[2][..19]).is_ok());
    assert_eq!(lines[3], "not json at all");
    assert!(!out.contains('\x1b'), "no colour into a pipe: {out:?}");
    assert_eq!(messages(&out)[..], ["oldest", "middle", "chatty", "not json at all", "newest"]);

    let (_, out, _) = logs(&aria, &["--level", "warn"]);
    assert_eq!(messages(&out), ["middle", "not json at all", "newest"]);
    let (_, out, _) = logs(&aria, &["--since", "1h"]);
    assert_eq!(messages(&out), ["chatty", "not json at all", "newest"]);
    let day_ago = (jiff::Timestamp::now() - jiff::SignedDuration::from_hours(24)).to_string();
    let (_, out, _) = logs(&aria, &["--since", &day_ago, "--level", "error"]);
    assert_eq!(messages(&out), ["not json at all", "newest"]);
    let (_, out, _) = logs(&aria, &["--limit", "2"]);
    assert_eq!(messages(&out), ["not json at all", "newest"]);

    let (status, out, _) = logs(&aria, &["--json", "--level", "info"]);
    assert_eq!(status, 0);
    let raw: Vec<&str> = out.lines().collect();
    assert_eq!(raw.len(), 4, "{out}");
    let first: serde_json::Value = serde_json::from_str(raw[0]).unwrap();
    assert_eq!(first["fields"]["message"], json!("oldest"));
    assert_eq!(raw[2], "not json at all");
    assert_eq!(
        raw[3],
        std::fs::read_to_string(dir.join("aria.jsonl")).unwrap().lines().last().unwrap()
    );

    let (status, _, err) = logs(&aria, &["--since", "yesterday"]);
    assert_eq!(status, 2, "{err}");
    assert!(err.contains("--since") && err.contains("30m"), "{err}");
    let (status, _, err) = logs(&aria, &["--level", "loud"]);
    assert_eq!(status, 2, "{err}");
}

#[test]
fn no_log_file_is_said_plainly_and_is_not_an_error() {
    let aria = Aria::new();
    let (status, out, err) = logs(&aria, &[]);
    assert_eq!(status, 0, "{err}");
    assert_eq!(out, "");
    assert!(err.contains("There is no log file") && err.contains("logs"), "{err}");
}

#[test]
fn follow_prints_what_is_appended_even_across_a_rotation() {
    let aria = Aria::new();
    let dir = logs_dir(&aria);
    std::fs::write(dir.join("aria.jsonl"), line(60, "INFO", "before")).unwrap();
    let mut child = aria
        .cmd(NO_SERVER)
        .env("TZ", "UTC")
        .args(["logs", "--follow", "--level", "info"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for l in BufReader::new(stdout).lines() {
            if tx.send(l.unwrap()).is_err() {
                break;
            }
        }
    });
    let next = || rx.recv_timeout(Duration::from_secs(20)).expect("a line within 20 s");
    let append = |text: &str| {
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(dir.join("aria.jsonl"))
            .unwrap();
        file.write_all(text.as_bytes()).unwrap();
    };
    assert!(next().contains("INFO  before"));
    append(&line(0, "DEBUG", "below the level"));
    append(&line(0, "WARN", "appended"));
    assert!(next().contains("WARN  appended"));
    // Rotated the way the writer does it: renamed, then a new file.
    std::fs::rename(dir.join("aria.jsonl"), dir.join("aria.1.jsonl")).unwrap();
    append(&line(0, "ERROR", "after the rotation"));
    assert!(next().contains("ERROR after the rotation"));
    child.kill().unwrap();
    child.wait().unwrap();
}
