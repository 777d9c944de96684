//! `aria traces list|show` and `aria stats` through the binary (issue #22): a run with a tool
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
    let spans: Vec<serde_json::Value> = json_of(&out)["spans"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["detail"]["purpose"].is_null())
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
    let future =
        aria.run(&mock.base_url(), &["stats", "--since", "2999-01-01T00:00:00Z", "--json"]);
    assert_eq!(json_of(&future)["runs"], json!(0));
}
