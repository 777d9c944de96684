//! `aria traces list|show` and `aria stats` through the binary: a run with a tool
//! call and a priced model shows up as a trace with both spans, and in the numbers.

use aria_testkit::openai_mock::{MockOpenAi, MockTurn};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::harness::{Aria, code, json_of, text};

#[test]
fn a_run_is_a_trace_with_its_model_and_tool_spans_and_counts_in_the_stats() {
    let aria = Aria::new();
    std::fs::write(aria.root().join("notes.md"), "buy milk\n").unwrap();
    let mock = MockOpenAi::new(vec![
        MockTurn::tool_call("file_read", r#"{"path":"notes.md"}"#),
        MockTurn::tool_call("file_read", r#"{"path":"missing.md"}"#),
        MockTurn::text("Buy milk."),
    ])
    .usage(1000, 50)
    .serve();
    let run = aria
        .cmd(&mock.base_url())
        .env("ARIA_MODEL", "gpt-4o")
        .args(["run", "--task", "what is in my notes?", "--json"])
        .output()
        .unwrap();
    assert_eq!(code(&run), 0, "{}", text(&run.stderr));
    let session = json_of(&run)["session_id"].as_str().unwrap().to_owned();

    let out = aria.run(&mock.base_url(), &["traces", "list", "--json"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let list = json_of(&out);
    assert_eq!(list[0]["id"], json!(session));
    assert_eq!(list[0]["models"], json!(["gpt-4o"]));
    assert_eq!(list[0]["tools"], json!(["file_read"]));
    // Three answers, and the memory extraction after the run when it made one.
    assert!(list[0]["model_calls"].as_u64().unwrap() >= 3, "{list:#}");
    assert_eq!(list[0]["tool_calls"], json!(2));
    assert!(list[0]["cost_usd"].as_f64().unwrap() > 0.0);

    let out = aria.run(&mock.base_url(), &["traces", "show", &session[..8], "--json"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let all = json_of(&out)["spans"].as_array().unwrap().clone();
    let recall = all.iter().find(|s| s["kind"] == "memory_recall").expect("a memory recall span");
    assert_eq!(recall["outcome"], json!("ok"), "{recall}");
    let spans: Vec<serde_json::Value> = json_of(&out)["spans"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["detail"]["purpose"].is_null() && s["kind"] != "memory_recall")
        .cloned()
        .collect();
    let kinds: Vec<&str> = spans.iter().map(|s| s["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["model_call", "tool_call", "model_call", "tool_call", "model_call"]);
    assert_eq!(spans[1]["detail"]["tier"], json!("read"));
    assert!(spans[1]["detail"]["output_chars"].as_u64().unwrap() > 0);
    assert_eq!(spans[3]["outcome"], json!("failed"));
    assert_eq!(spans[0]["input_tokens"], json!(1000));
    let starts: Vec<u64> = spans.iter().map(|s| s["start_ms"].as_u64().unwrap()).collect();
    assert!(starts.windows(2).all(|w| w[0] <= w[1]), "a timeline in order: {starts:?}");
    let plain = aria.run(&mock.base_url(), &["traces", "show", &session]);
    let plain = text(&plain.stdout);
    assert!(plain.contains("tool file_read [read]") && plain.contains("→ failed"), "{plain}");
    assert_eq!(code(&aria.run(&mock.base_url(), &["traces", "show", "nope-nope"])), 2);

    let out = aria.run(&mock.base_url(), &["stats", "--since", "1h", "--json"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let stats = json_of(&out);
    assert_eq!(stats["runs"], json!(1));
    assert_eq!(stats["success_rate"], json!(1.0));
    assert_eq!(stats["tools"]["file_read"]["calls"], json!(2));
    assert_eq!(stats["tools"]["file_read"]["errors"], json!(1));
    assert_eq!(stats["errors_by_kind"]["tool_call:failed"], json!(1));
    for key in ["p50_ms", "p95_ms", "p99_ms"] {
        assert!(stats["models"]["gpt-4o"][key].is_u64(), "{key}: {stats:#}");
    }
    let model_input = stats["input_tokens"].as_u64().unwrap();
    assert!(model_input >= 3000 && model_input.is_multiple_of(1000), "{stats:#}");
    assert_eq!(code(&aria.run(&mock.base_url(), &["stats", "--since", "a week"])), 2);
    // A unit that is not ASCII is a usage error like any other, never a panic; `stats` and
    // `logs` take the same periods (seconds too).
    let accented = aria.run(&mock.base_url(), &["stats", "--since", "5é"]);
    assert_eq!(code(&accented), 2, "{}", text(&accented.stderr));
    assert!(
        text(&accented.stderr).contains("give a period like 30s"),
        "{}",
        text(&accented.stderr)
    );
    assert_eq!(code(&aria.run(&mock.base_url(), &["stats", "--since", "30s", "--json"])), 0);
    assert_eq!(code(&aria.run(&mock.base_url(), &["logs", "--since", "5é"])), 2);
    let future =
        aria.run(&mock.base_url(), &["stats", "--since", "2999-01-01T00:00:00Z", "--json"]);
    assert_eq!(json_of(&future)["runs"], json!(0));
}

/// A one-request-at-a-time HTTP server on loopback that answers 200 and hands over each
/// request's path and JSON body: an OpenTelemetry collector for the test.
fn fake_collector() -> (String, std::sync::mpsc::Receiver<(String, serde_json::Value)>) {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            let path = line.split_whitespace().nth(1).unwrap_or_default().to_owned();
            let mut length = 0;
            loop {
                let mut header = String::new();
                reader.read_line(&mut header).unwrap();
                if header.trim().is_empty() {
                    break;
                }
                if let Some((k, v)) = header.split_once(':')
                    && k.eq_ignore_ascii_case("content-length")
                {
                    length = v.trim().parse().unwrap();
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}",
            );
            let _ = tx.send((path, serde_json::from_slice(&body).unwrap_or_default()));
        }
    });
    (url, rx)
}

#[test]
fn finished_runs_are_exported_to_opentelemetry_when_an_endpoint_is_set() {
    let aria = Aria::new();
    std::fs::write(aria.root().join("notes.md"), "buy milk\n").unwrap();
    let mock = MockOpenAi::new(vec![
        MockTurn::tool_call("file_read", r#"{"path":"notes.md"}"#),
        MockTurn::text("Buy milk."),
    ])
    .serve();
    let (collector, received) = fake_collector();
    let run = aria
        .cmd(&mock.base_url())
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &collector)
        .args(["run", "--task", "what is in my notes?", "--json"])
        .output()
        .unwrap();
    assert_eq!(code(&run), 0, "{}", text(&run.stderr));
    let session = json_of(&run)["session_id"].as_str().unwrap().replace('-', "");
    let (path, body) = received.recv_timeout(std::time::Duration::from_secs(10)).unwrap();
    assert_eq!(path, "/v1/traces");
    let scope = &body["resourceSpans"][0]["scopeSpans"][0];
    let spans = scope["spans"].as_array().unwrap();
    let root = spans.iter().find(|s| s["name"] == "aria.run").expect("a run span");
    assert_eq!(root["traceId"], json!(session));
    let tool = spans.iter().find(|s| s["name"] == "tool file_read").expect("a tool span");
    assert_eq!(tool["parentSpanId"], root["spanId"]);
    assert_eq!(tool["traceId"], root["traceId"]);
    assert_eq!(root["spanId"].as_str().unwrap().len(), 16);
    assert!(spans.iter().any(|s| s["name"].as_str().unwrap().starts_with("chat ")));
    let prompt_leaked = body.to_string().contains("what is in my notes");
    assert!(!prompt_leaked, "no prompt text is exported");

    // A dead endpoint warns, and the run still succeeds.
    let mock = MockOpenAi::new(vec![MockTurn::text("Again.")]).serve();
    let again = aria
        .cmd(&mock.base_url())
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
        .args(["run", "--task", "again", "--json"])
        .output()
        .unwrap();
    assert_eq!(code(&again), 0, "{}", text(&again.stderr));
    assert!(text(&again.stderr).contains("OpenTelemetry export"), "{}", text(&again.stderr));
}
