//! `aria check path|command|secrets|injection`: one guard's verdict and reason for one input,
//! or for every `{"input": …}` line of JSON Lines on stdin (`--jsonl`).
//!
//! Exit codes: 0 when every input is allowed / `read` / clean / benign, 1 when any is not
//! (for `command`, any tier above `read`), 2 for usage errors — including JSON lines that could
//! not be read, which are named on stderr while the other lines are still checked.

use std::io::{self, BufRead, Read};

use aria_tools::{InjectionFilter, PathError, PathGuard, SecretRedactor};
use serde::Serialize;

use crate::app;
use crate::cli::{CheckCommand, GlobalArgs};
use crate::exit::{CliError, CliResult, FAILED, OK, USAGE};

/// One verdict, as printed.
#[derive(Debug, Serialize)]
struct Report {
    input: String,
    verdict: &'static str,
    reason: String,
    /// `injection` only: the second stage's own verdict, whatever the rules found.
    #[serde(skip_serializing_if = "Option::is_none")]
    classifier: Option<ClassifierVerdict>,
    #[serde(skip)]
    passed: bool,
}

/// The classifier's verdict on its most suspicious sentence.
#[derive(Debug, Serialize)]
struct ClassifierVerdict {
    verdict: &'static str,
    /// Its probability that the sentence is an order to the model, rounded to 3 places.
    score: f64,
    threshold: f64,
}

/// The guard a subcommand asks.
enum Checker {
    Path(std::sync::Arc<PathGuard>),
    /// Judged as `shell_execute` would judge it under these roots.
    Command(std::sync::Arc<PathGuard>),
    Secrets(SecretRedactor),
    Injection(&'static InjectionFilter),
}

impl Checker {
    fn judge(&self, input: &str) -> Report {
        match self {
            Checker::Path(guard) => judge_path(guard, input),
            Checker::Command(guard) => {
                let (tier, reason) = aria_tools::command_verdict(guard, input);
                Report {
                    input: input.to_owned(),
                    verdict: tier.as_str(),
                    passed: tier == aria_api::Tier::Read,
                    reason,
                    classifier: None,
                }
            }
            Checker::Secrets(redactor) => {
                let report = redactor.redact_report(input);
                let (verdict, reason) = if report.kinds.is_empty() {
                    ("clean", "no secrets found".to_owned())
                } else {
                    ("secret", format!("found {}", describe_kinds(&report.kinds)))
                };
                Report {
                    input: input.to_owned(),
                    verdict,
                    reason,
                    classifier: None,
                    passed: verdict == "clean",
                }
            }
            Checker::Injection(filter) => {
                let scan = filter.scan(input);
                let passed = scan.findings.is_empty();
                let round = |p: f32| (f64::from(p) * 1000.0).round() / 1000.0;
                let classifier = filter.classifier().map(|model| {
                    let score = filter.classifier_score(input).unwrap_or(0.0);
                    ClassifierVerdict {
                        verdict: if score >= model.threshold { "injection" } else { "benign" },
                        score: round(score),
                        threshold: round(model.threshold),
                    }
                });
                Report {
                    input: input.to_owned(),
                    verdict: if passed { "benign" } else { "injection" },
                    reason: scan.reason(),
                    classifier,
                    passed,
                }
            }
        }
    }
}

pub fn check(global: &GlobalArgs, command: CheckCommand) -> CliResult<u8> {
    let (checker, args) = match command {
        CheckCommand::Path(args) => {
            let config = app::load_config(global)?;
            (Checker::Path(app::path_guard(&config)?), args)
        }
        CheckCommand::Command(args) => {
            let config = app::load_config(global)?;
            (Checker::Command(app::path_guard(&config)?), args)
        }
        CheckCommand::Secrets(args) => (Checker::Secrets(SecretRedactor::new(Vec::new())), args),
        CheckCommand::Injection(args) => (Checker::Injection(InjectionFilter::shared()), args),
    };
    if args.jsonl {
        return jsonl(&checker);
    }
    let input = match args.input.as_deref() {
        Some("-") => {
            let mut text = String::new();
            io::stdin().read_to_string(&mut text).map_err(|e| {
                CliError::config(anyhow::anyhow!("could not read the input from stdin: {e}"))
            })?;
            text
        }
        Some(text) => text.to_owned(),
        None => {
            return Err(CliError::config(anyhow::anyhow!(
                "give the input as an argument (`-` reads it from stdin), or use --jsonl"
            )));
        }
    };
    let report = checker.judge(&input);
    println!("{}: {}", report.verdict, report.reason);
    Ok(if report.passed { OK } else { FAILED })
}

/// Reads `{"input": …}` lines from stdin; prints one JSON line per good input, names bad lines
/// on stderr, and keeps going.
fn jsonl(checker: &Checker) -> CliResult<u8> {
    let mut failed = false;
    let mut bad = 0usize;
    for (i, line) in io::stdin().lock().lines().enumerate() {
        let n = i + 1;
        let line = line.map_err(|e| {
            CliError::config(anyhow::anyhow!("could not read line {n} from stdin: {e}"))
        })?;
        if line.trim().is_empty() {
            continue;
        }
        let input = match input_of(&line) {
            Ok(input) => input,
            Err(why) => {
                eprintln!(
                    "error: line {n}: {why}; expected an object like {{\"input\": \"text\"}}"
                );
                bad += 1;
                continue;
            }
        };
        let report = checker.judge(&input);
        failed |= !report.passed;
        println!("{}", serde_json::to_string(&report)?);
    }
    if bad > 0 {
        eprintln!("error: {bad} line(s) could not be checked (see above); the others were");
        return Ok(USAGE);
    }
    Ok(if failed { FAILED } else { OK })
}

fn input_of(line: &str) -> Result<String, String> {
    let value: serde_json::Value =
        serde_json::from_str(line).map_err(|e| format!("not valid JSON ({e})"))?;
    match value.get("input") {
        Some(serde_json::Value::String(s)) => Ok(s.clone()),
        Some(_) => Err("the \"input\" field is not a string".to_owned()),
        None => Err("no \"input\" field".to_owned()),
    }
}

fn judge_path(guard: &PathGuard, input: &str) -> Report {
    let block = |reason: String| Report {
        input: input.to_owned(),
        verdict: "block",
        reason,
        classifier: None,
        passed: false,
    };
    let allow = |reason: String| Report {
        input: input.to_owned(),
        verdict: "allow",
        reason,
        classifier: None,
        passed: true,
    };
    match guard.resolve_existing(input) {
        Ok(r) => {
            let what = r.kind().map_or("file", |k| k.describe());
            let size = r.size().map(|s| format!(", {s} bytes")).unwrap_or_default();
            // Readable, but perhaps not writable: say so rather than imply the tools may edit it.
            let writes = guard
                .write_refusal(&r)
                .map(|refusal| format!("; reading is allowed, but {refusal}"))
                .unwrap_or_default();
            allow(format!(
                "{} is inside the root {} ({what}{size}){writes}",
                r.path().display(),
                r.root().display()
            ))
        }
        Err(PathError::NotFound { .. }) => match guard.resolve_for_create(input) {
            Ok(r) => allow(format!(
                "{} does not exist yet; it would be created inside the root {}",
                r.path().display(),
                r.root().display()
            )),
            Err(e) => block(e.to_string()),
        },
        Err(e) => block(e.to_string()),
    }
}

/// `aws_access_key_id, env_secret ×2` (kinds in order of first appearance).
fn describe_kinds(kinds: &[&str]) -> String {
    let mut seen: Vec<(&str, usize)> = Vec::new();
    for k in kinds {
        match seen.iter_mut().find(|(s, _)| s == k) {
            Some((_, n)) => *n += 1,
            None => seen.push((k, 1)),
        }
    }
    seen.iter()
        .map(|(k, n)| if *n > 1 { format!("{k} ×{n}") } else { (*k).to_owned() })
        .collect::<Vec<_>>()
        .join(", ")
}
