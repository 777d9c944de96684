//! `aria traces list|show` and `aria stats`: every run is a trace whose spans are
//! its model calls and tool calls (the `traces` table), read back as a list, as one run's
//! timeline, and as numbers over a period — runs, success rate, p50/p95/p99 latency per model
//! and per tool, tokens, cost, errors by kind.

use std::collections::BTreeMap;
use std::sync::Arc;

use aria_api::{SessionRecord, TraceKind};
use aria_gateway::metrics::percentile_sorted as percentile;
use aria_store::{IdKind, Store, StoredTrace};
use jiff::Timestamp;
use serde_json::{Value, json};

use crate::app;
use crate::cli::{GlobalArgs, StatsArgs, TracesCommand};
use crate::exit::{CliError, CliResult, OK};

fn open(global: &GlobalArgs) -> CliResult<Arc<Store>> {
    let config = app::load_config(global)?;
    app::open_store(&config, app::redactor(&config))
}

pub fn traces(global: &GlobalArgs, command: TracesCommand) -> CliResult<u8> {
    let store = open(global)?;
    match command {
        TracesCommand::List { limit, json } => list(&store, limit, json),
        TracesCommand::Show { id, json } => show(&store, &id, json),
    }
}

/// Milliseconds from `from` to `to` (RFC 3339), 0 when either does not parse.
fn millis_between(from: &str, to: &str) -> u64 {
    match (from.parse::<Timestamp>(), to.parse::<Timestamp>()) {
        (Ok(a), Ok(b)) => u64::try_from(a.duration_until(b).as_millis()).unwrap_or(0),
        _ => 0,
    }
}

/// The distinct names of a run's spans of one kind, in first-use order.
fn names(spans: &[StoredTrace], kind: TraceKind) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for span in spans.iter().filter(|s| s.trace.kind == kind) {
        if !out.contains(&span.trace.name) {
            out.push(span.trace.name.clone());
        }
    }
    out
}

fn summary(session: &SessionRecord, spans: &[StoredTrace]) -> Value {
    let count = |kind| spans.iter().filter(|s| s.trace.kind == kind).count();
    json!({
        "id": session.id,
        "task": session.task,
        "state": session.state.as_str(),
        "started_at": session.created_at,
        "duration_ms": millis_between(&session.created_at, &session.updated_at),
        "models": names(spans, TraceKind::ModelCall),
        "tools": names(spans, TraceKind::ToolCall),
        "model_calls": count(TraceKind::ModelCall),
        "tool_calls": count(TraceKind::ToolCall),
        "input_tokens": session.usage.input_tokens,
        "output_tokens": session.usage.output_tokens,
        "cost_usd": session.cost_usd,
    })
}

fn list(store: &Store, limit: usize, json: bool) -> CliResult<u8> {
    let sessions = store.list_sessions(limit)?;
    let mut rows = Vec::with_capacity(sessions.len());
    for session in &sessions {
        rows.push(summary(session, &store.traces_for_session(&session.id)?));
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(OK);
    }
    if rows.is_empty() {
        println!("No runs yet: `aria run --task TEXT` or `aria chat` makes one.");
    }
    for row in &rows {
        let joined = |key: &str| {
            let list: Vec<&str> =
                row[key].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
            if list.is_empty() { "-".to_owned() } else { list.join(",") }
        };
        println!(
            "{}  {:<9} {:>8}  {} model call(s) [{}]  {} tool call(s) [{}]  ${:.4}  {}",
            row["id"].as_str().unwrap_or_default(),
            row["state"].as_str().unwrap_or_default(),
            duration_text(row["duration_ms"].as_u64().unwrap_or(0)),
            row["model_calls"],
            joined("models"),
            row["tool_calls"],
            joined("tools"),
            row["cost_usd"].as_f64().unwrap_or(0.0),
            first_line(row["task"].as_str().unwrap_or_default(), 50),
        );
    }
    Ok(OK)
}

fn first_line(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or_default();
    if line.chars().count() > max {
        format!("{}…", line.chars().take(max).collect::<String>())
    } else {
        line.to_owned()
    }
}

fn duration_text(ms: u64) -> String {
    match ms {
        0..1_000 => format!("{ms} ms"),
        1_000..60_000 => format!("{:.1} s", ms as f64 / 1_000.0),
        _ => format!("{}m{:02}s", ms / 60_000, ms / 1_000 % 60),
    }
}

/// A span's place in the run: it started `duration_ms` before it was recorded.
fn span_json(session: &SessionRecord, span: &StoredTrace) -> Value {
    let t = &span.trace;
    let end = millis_between(&session.created_at, &span.created_at);
    json!({
        "kind": t.kind.as_str(),
        "name": t.name,
        "start_ms": end.saturating_sub(t.duration_ms),
        "duration_ms": t.duration_ms,
        "input_tokens": t.usage.input_tokens,
        "output_tokens": t.usage.output_tokens,
        "cost_usd": t.cost_usd,
        "outcome": t.outcome,
        "detail": t.detail,
    })
}

fn show(store: &Store, id: &str, json: bool) -> CliResult<u8> {
    let id = store.resolve_id(IdKind::Session, id).map_err(|e| match e {
        aria_store::StoreError::UnknownSession(_) | aria_store::StoreError::AmbiguousId { .. } => {
            CliError::config(e)
        }
        other => CliError::failed(other),
    })?;
    let session = store.session(&id)?.ok_or_else(|| {
        CliError::config(anyhow::anyhow!("no run {id}; `aria traces list` shows them"))
    })?;
    let spans = store.traces_for_session(&id)?;
    let timeline: Vec<Value> = spans.iter().map(|s| span_json(&session, s)).collect();
    if json {
        let mut value = summary(&session, &spans);
        value["spans"] = json!(timeline);
        value["error"] = json!(session.error);
        println!("{}", serde_json::to_string_pretty(&value)?);
        return Ok(OK);
    }
    let total = millis_between(&session.created_at, &session.updated_at);
    println!("Run {} — {} in {}", session.id, session.state.as_str(), duration_text(total));
    println!("  task: {}", first_line(&session.task, 100));
    println!(
        "  {} model call(s), {} tool call(s), {} tokens in, {} out, ${:.4}",
        timeline.iter().filter(|s| s["kind"] == "model_call").count(),
        timeline.iter().filter(|s| s["kind"] == "tool_call").count(),
        session.usage.input_tokens,
        session.usage.output_tokens,
        session.cost_usd
    );
    for span in &timeline {
        let start = span["start_ms"].as_u64().unwrap_or(0);
        let duration = span["duration_ms"].as_u64().unwrap_or(0);
        let what = if span["kind"] == "model_call" {
            let first = span["detail"]["first_output_ms"]
                .as_u64()
                .map(|f| format!(", first output after {}", duration_text(f)))
                .unwrap_or_default();
            let purpose = span["detail"]["purpose"]
                .as_str()
                .map(|p| format!(" ({})", p.replace('_', " ")))
                .unwrap_or_default();
            format!(
                "model {}{purpose} — {} in / {} out tokens, ${:.4}{first}",
                span["name"].as_str().unwrap_or_default(),
                span["input_tokens"],
                span["output_tokens"],
                span["cost_usd"].as_f64().unwrap_or(0.0)
            )
        } else if span["kind"] == "memory_recall" {
            format!(
                "memory recall — {} memories, {} profile facts",
                span["detail"]["memories"], span["detail"]["profile"]
            )
        } else if span["kind"] == "approval" {
            format!(
                "asked before {} → {}",
                span["name"].as_str().unwrap_or_default(),
                span["outcome"].as_str().unwrap_or_default()
            )
        } else {
            let tier =
                span["detail"]["tier"].as_str().map(|t| format!(" [{t}]")).unwrap_or_default();
            let size = span["detail"]["output_chars"]
                .as_u64()
                .map(|n| format!(", {n} chars out"))
                .unwrap_or_default();
            let snaps: Vec<&str> = span["detail"]["snapshots"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            let snaps = if snaps.is_empty() {
                String::new()
            } else {
                format!(", restore point {}", snaps.join(", "))
            };
            format!("tool {}{tier}{size}{snaps}", span["name"].as_str().unwrap_or_default())
        };
        let outcome = span["outcome"].as_str().unwrap_or_default();
        let outcome = if outcome == "ok" || span["kind"] == "approval" {
            String::new()
        } else {
            format!("  → {outcome}")
        };
        println!("  +{:>8}  {:>8}  {what}{outcome}", duration_text(start), duration_text(duration));
    }
    if let Some(error) = &session.error {
        println!("  error: {error}");
    }
    Ok(OK)
}

/// `--since` ([`aria_api::parse_since`]): a refusal is a usage error (exit 2).
fn since(text: &str) -> Result<Timestamp, CliError> {
    aria_api::parse_since(text, Timestamp::now())
        .map_err(|e| CliError::config(anyhow::anyhow!("--since {e}")))
}

/// Calls, errors and latency of one model or tool.
fn latency(durations: &mut [u64], errors: usize) -> Value {
    durations.sort_unstable();
    json!({
        "calls": durations.len(),
        "errors": errors,
        "p50_ms": percentile(durations, 50),
        "p95_ms": percentile(durations, 95),
        "p99_ms": percentile(durations, 99),
    })
}

/// The numbers of the runs since `from`.
pub fn stats_json(sessions: &[SessionRecord], spans: &[StoredTrace], from: Timestamp) -> Value {
    let mut by_state: BTreeMap<&str, u64> = BTreeMap::new();
    let mut run_ms: Vec<u64> = Vec::new();
    for s in sessions {
        *by_state.entry(s.state.as_str()).or_default() += 1;
        if s.state.is_terminal() {
            run_ms.push(millis_between(&s.created_at, &s.updated_at));
        }
    }
    let finished: u64 = run_ms.len() as u64;
    // A success is a run that ended `done` with an answer that is one: a run recorded `done`
    // whose answer is a tool call written as text (before the loop checked for them) did
    // nothing that was asked.
    let done = sessions
        .iter()
        .filter(|s| s.state == aria_api::SessionState::Done)
        .filter(|s| !s.answer.as_deref().is_some_and(aria_core::looks_like_written_call))
        .count() as u64;
    let mut groups: BTreeMap<(&str, &str), (Vec<u64>, usize)> = BTreeMap::new();
    let mut errors: BTreeMap<String, u64> = BTreeMap::new();
    let mut answers: BTreeMap<String, u64> = BTreeMap::new();
    let (mut input, mut output, mut cost) = (0u64, 0u64, 0.0f64);
    for span in spans {
        let t = &span.trace;
        let entry = groups.entry((t.kind.as_str(), t.name.as_str())).or_default();
        entry.0.push(t.duration_ms);
        if t.kind == TraceKind::Approval {
            *answers.entry(t.outcome.clone()).or_default() += 1;
        } else if t.outcome != "ok" {
            entry.1 += 1;
            *errors.entry(format!("{}:{}", t.kind.as_str(), t.outcome)).or_default() += 1;
        }
        input += t.usage.input_tokens;
        output += t.usage.output_tokens;
        cost += t.cost_usd;
    }
    let mut models = serde_json::Map::new();
    let mut tools = serde_json::Map::new();
    let mut approvals: Vec<u64> = Vec::new();
    let mut recalls: Vec<u64> = Vec::new();
    for ((kind, name), (mut durations, errs)) in groups {
        match kind {
            "model_call" => {
                models.insert(name.to_owned(), latency(&mut durations, errs));
            }
            "tool_call" => {
                tools.insert(name.to_owned(), latency(&mut durations, errs));
            }
            "approval" => approvals.extend(durations),
            _ => recalls.extend(durations),
        }
    }
    json!({
        "since": from.to_string(),
        "runs": sessions.len(),
        "runs_by_state": by_state,
        "success_rate": if finished == 0 { Value::Null } else { json!(done as f64 / finished as f64) },
        "run_latency": latency(&mut run_ms, 0),
        "models": models,
        "tools": tools,
        "approvals": {"answers": answers, "wait": latency(&mut approvals, 0)},
        "memory_recall": latency(&mut recalls, 0),
        "input_tokens": input,
        "output_tokens": output,
        "cost_usd": cost,
        "errors_by_kind": errors,
    })
}

pub fn stats(global: &GlobalArgs, args: StatsArgs) -> CliResult<u8> {
    let from = since(&args.since)?;
    let store = open(global)?;
    let stamp = aria_store::rfc3339_at(from.into());
    let sessions = store.sessions_since(&stamp)?;
    let spans = store.traces_since(&stamp)?;
    let value = stats_json(&sessions, &spans, from);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&value)?);
        return Ok(OK);
    }
    let rate =
        value["success_rate"].as_f64().map_or("-".to_owned(), |r| format!("{:.0} %", r * 100.0));
    println!("Since {} ({}):", from.strftime("%Y-%m-%d %H:%M UTC"), args.since);
    let states = value["runs_by_state"]
        .as_object()
        .map(|m| m.iter().map(|(k, v)| format!("{v} {k}")).collect::<Vec<_>>().join(", "))
        .unwrap_or_default();
    if states.is_empty() {
        println!("  runs: none");
    } else {
        println!("  runs: {} ({states}), success rate {rate}", value["runs"]);
    }
    let l = &value["run_latency"];
    println!("  run time: p50 {} ms, p95 {} ms, p99 {} ms", l["p50_ms"], l["p95_ms"], l["p99_ms"]);
    println!(
        "  tokens: {} in, {} out; cost ${:.4}",
        value["input_tokens"],
        value["output_tokens"],
        value["cost_usd"].as_f64().unwrap_or(0.0)
    );
    for (title, key) in [("models", "models"), ("tools", "tools")] {
        let Some(map) = value[key].as_object().filter(|m| !m.is_empty()) else { continue };
        println!("  {title}:");
        for (name, l) in map {
            println!(
                "    {name:<28} {:>5} calls {:>4} errors  p50 {} ms  p95 {} ms  p99 {} ms",
                l["calls"], l["errors"], l["p50_ms"], l["p95_ms"], l["p99_ms"]
            );
        }
    }
    if let Some(errors) = value["errors_by_kind"].as_object().filter(|m| !m.is_empty()) {
        let list: Vec<String> = errors.iter().map(|(k, v)| format!("{k} {v}")).collect();
        println!("  errors: {}", list.join(", "));
    }
    Ok(OK)
}

#[cfg(test)]
mod tests {
    use jiff::SignedDuration;

    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let sorted: Vec<u64> = (1..=100).collect();
        assert_eq!((percentile(&sorted, 50), percentile(&sorted, 95)), (50, 95));
        assert_eq!(percentile(&sorted, 99), 99);
        assert_eq!(percentile(&[7], 99), 7);
        assert_eq!(percentile(&[], 50), 0);
        assert_eq!(percentile(&[1, 2, 3], 50), 2);
    }

    #[test]
    fn a_done_run_whose_answer_is_a_tool_call_written_as_text_is_no_success() {
        let run = |state: aria_api::SessionState, answer: &str| SessionRecord {
            id: answer.into(),
            conversation_id: "c".into(),
            task: "t".into(),
            provider: "p".into(),
            model: "m".into(),
            state,
            iterations: 1,
            usage: Default::default(),
            cost_usd: 0.0,
            limits: Default::default(),
            error: None,
            answer: Some(answer.into()),
            created_at: "2026-01-01T00:00:00Z".into(),
            updated_at: "2026-01-01T00:00:01Z".into(),
        };
        use aria_api::SessionState::{Done, Failed};
        let sessions = [
            run(Done, "The launch code is 4242."),
            run(Done, r#"{"name": "file_read", "arguments": {"path": "notes.txt"}}"#),
            run(Failed, "x"),
            run(Done, "Changed it."),
        ];
        let from = Timestamp::from_second(0).unwrap();
        let stats = stats_json(&sessions, &[], from);
        assert_eq!(stats["success_rate"], json!(0.5), "{stats}");
        assert_eq!(stats["runs_by_state"]["done"], json!(3), "states stay as recorded");
    }

    #[test]
    fn since_takes_periods_and_instants_and_refuses_the_rest() {
        let week = since("7d").unwrap();
        let expected = Timestamp::now() - SignedDuration::from_hours(168);
        assert!(week.duration_until(expected).abs() < SignedDuration::from_secs(5));
        assert_eq!(since("2026-01-01T00:00:00Z").unwrap().to_string(), "2026-01-01T00:00:00Z");
        for bad in ["", "7", "7w", "-1d", "d", "x1h", "5é"] {
            assert!(since(bad).is_err(), "{bad}");
        }
    }
}
