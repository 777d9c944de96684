//! The model backends end to end: `--backend anthropic|ollama`, the fallback chain from the
//! config file, the cost caps (a capped call never reaches the server), `aria cost` and
//! `aria models list|test|unload`, all against loopback mocks speaking each vendor's format.

use aria_testkit::anthropic_mock::MockAnthropic;
use aria_testkit::mock::{MockTurn, ScriptEnd};
use aria_testkit::ollama_mock::MockOllama;
use aria_testkit::openai_mock::MockOpenAi;
use pretty_assertions::assert_eq;

use super::harness::{Aria, code, json_of, text};

const ANTHROPIC_KEY: &str = "sk-ant-e2e-0123456789abcdef";

#[test]
fn a_run_on_anthropic_pairs_tool_results_with_their_calls() {
    let aria = Aria::new();
    let mock = MockAnthropic::serve_blocking(vec![
        MockTurn::tool_call("file_read", r#"{"path":"notes.txt"}"#),
        MockTurn::text("The code is 4242."),
        // Memory extraction after the turn: nothing worth keeping.
        MockTurn::tool_call("record_memories", r#"{"memories":[]}"#),
    ]);
    let out = aria
        .cmd("http://127.0.0.1:9/v1")
        .env("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
        .env("ANTHROPIC_BASE_URL", mock.url())
        .args([
            "run",
            "--backend",
            "anthropic",
            "--model",
            "claude-mock",
            "--task",
            "code?",
            "--json",
        ])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "stderr: {}", text(&out.stderr));
    assert_eq!(json_of(&out)["answer"], "The code is 4242.");
    let requests = mock.requests();
    assert_eq!(requests.len(), 3, "two turns, then the memory extraction");
    assert_eq!(requests[2]["tools"][0]["name"], "record_memories");
    assert!(requests[0]["system"].as_str().unwrap().contains("ARIA"));
    assert!(
        requests[0]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "file_read" && t["input_schema"].is_object())
    );
    let turn = &requests[1]["messages"][2]["content"][0];
    assert_eq!(turn["type"], "tool_result");
    assert_eq!(turn["tool_use_id"], "toolu_mock1_0");
    assert!(turn["content"].as_str().unwrap().contains("4242"));
    assert_eq!(mock.request_headers()[0]["x-api-key"], ANTHROPIC_KEY);
    assert_eq!(mock.request_headers()[0]["anthropic-version"], "2023-06-01");
}

#[test]
fn a_run_on_ollama_sends_num_ctx_from_the_model_and_ollama_host_without_a_scheme_works() {
    let aria = Aria::new();
    let mock =
        MockOllama::new(vec![MockTurn::text("hello from ollama")]).context_length(16_384).serve();
    let out = aria
        .cmd("http://127.0.0.1:9/v1")
        .env("OLLAMA_HOST", mock.addr().to_string())
        .env("ARIA_PROVIDER", "ollama")
        .args(["run", "--task", "hi", "--json"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "stderr: {}", text(&out.stderr));
    let result = json_of(&out);
    assert_eq!(result["answer"], "hello from ollama");
    assert_eq!(result["cost_usd"], 0.0, "a local model costs nothing");
    assert_eq!(mock.requests()[0]["options"]["num_ctx"], 16_384);
    assert_eq!(mock.requests()[0]["model"], "mock-model");
}

#[test]
fn a_failing_primary_falls_back_to_the_configured_route() {
    let aria = Aria::new();
    let primary =
        MockOpenAi::new(vec![MockTurn::status(503)]).on_script_end(ScriptEnd::Repeat).serve();
    let cloud = MockAnthropic::serve_blocking(vec![
        MockTurn::text("answered by the fallback"),
        // Memory extraction after the turn takes the same route.
        MockTurn::tool_call("record_memories", r#"{"memories":[]}"#),
    ]);
    let config = aria.dir.path().join("aria.toml");
    std::fs::write(
        &config,
        "[router]\nattempts = 2\n\n[[router.fallback]]\nbackend = \"anthropic\"\nmodel = \"claude-mock\"\non_error = true\n",
    )
    .unwrap();
    let out = aria
        .cmd(&primary.base_url())
        .env("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
        .env("ANTHROPIC_BASE_URL", cloud.url())
        .args(["--config", config.to_str().unwrap(), "run", "--task", "hi", "--json"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "stderr: {}", text(&out.stderr));
    assert_eq!(json_of(&out)["answer"], "answered by the fallback");
    // [router] attempts = 2 for the turn; the memory extraction after it makes the third
    // consecutive failure, which opens the breaker, so it goes straight to the fallback.
    assert_eq!(primary.hits(), 3, "[router] attempts = 2, then the breaker opens");
    assert_eq!(cloud.requests()[0]["model"], "claude-mock");
    // The call is traced (and charged) as the model that answered, not the primary.
    let out = aria.run(&primary.base_url(), &["cost", "--json"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let by_model = json_of(&out)["by_model"].clone();
    assert_eq!(by_model.as_array().map(Vec::len), Some(1), "{by_model}");
    assert_eq!(by_model[0]["key"], "claude-mock", "{by_model}");
}

#[test]
fn a_fallback_without_its_key_stays_off_and_unknown_router_keys_are_errors() {
    let aria = Aria::new();
    let primary =
        MockOpenAi::new(vec![MockTurn::status(503)]).on_script_end(ScriptEnd::Repeat).serve();
    let config = aria.dir.path().join("aria.toml");
    std::fs::write(&config, "[[router.fallback]]\nbackend = \"anthropic\"\non_error = true\n")
        .unwrap();
    let out = aria
        .run(&primary.base_url(), &["--config", config.to_str().unwrap(), "run", "--task", "hi"]);
    assert_eq!(code(&out), 1, "the primary's failure ends the run: {}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("503") || text(&out.stdout).contains("503"),
        "{}",
        text(&out.stderr)
    );

    std::fs::write(&config, "[router]\nretries = 3\n").unwrap();
    let out = aria
        .run(&primary.base_url(), &["--config", config.to_str().unwrap(), "run", "--task", "hi"]);
    assert_eq!(code(&out), 2);
    assert!(text(&out.stderr).contains("retries"), "{}", text(&out.stderr));
}

#[test]
fn a_cost_cap_below_one_calls_estimate_sends_no_request() {
    let aria = Aria::new();
    let mock = MockOpenAi::new(vec![MockTurn::text("never")]).serve();
    let out = aria
        .cmd(&mock.base_url())
        .env("ARIA_MODEL", "gpt-4o")
        .env("ARIA_MAX_COST_USD", "0.000001")
        .args(["run", "--task", "hello there"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 1);
    assert!(text(&out.stderr).contains("ARIA_MAX_COST_USD"), "{}", text(&out.stderr));

    let config = aria.dir.path().join("aria.toml");
    std::fs::write(&config, "[limits]\nper_day_usd = 0.000001\n").unwrap();
    let out = aria
        .cmd(&mock.base_url())
        .env("ARIA_MODEL", "gpt-4o")
        .args(["--config", config.to_str().unwrap(), "run", "--task", "hello there"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 1);
    let err = text(&out.stderr);
    assert!(
        err.contains("day")
            && err.contains("per_day_usd")
            && err.contains("ARIA_MAX_DAILY_COST_USD"),
        "{err}"
    );
    assert_eq!(mock.hits(), 0, "the mock server saw zero requests");
}

#[test]
fn cost_reports_spend_by_day_model_and_session() {
    let aria = Aria::new();
    let mock = MockOpenAi::new(vec![MockTurn::text("priced answer")]).usage(1000, 500).serve();
    let out = aria
        .cmd(&mock.base_url())
        .env("ARIA_MODEL", "gpt-4o")
        .args(["run", "--task", "a priced task"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let out = aria
        .cmd(&mock.base_url())
        .env("ARIA_MODEL", "gpt-4o")
        .args(["cost", "--json"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let report = json_of(&out);
    // gpt-4o: 1000 × 2.50 + 500 × 10.00 per million = USD 0.0075.
    let expected = 0.0075;
    assert!((report["today_usd"].as_f64().unwrap() - expected).abs() < 1e-9, "{report}");
    assert_eq!(report["by_model"][0]["key"], "gpt-4o");
    assert_eq!(report["by_session"][0]["label"], "a priced task");
    assert_eq!(report["by_day"].as_array().unwrap().len(), 1);
    let shown = aria.run(&mock.base_url(), &["cost"]);
    assert!(text(&shown.stdout).contains("by model"), "{}", text(&shown.stdout));
}

#[test]
fn models_list_test_and_unload_talk_to_each_backend() {
    let aria = Aria::new();
    let ollama = MockOllama::new(vec![MockTurn::text("ok")])
        .models(vec!["llama3.2:latest".into(), "qwen2.5:7b".into()])
        .serve();
    let anthropic = MockAnthropic::new(vec![]).models(vec!["claude-mock".into()]).serve();
    let anthropic_url = anthropic.url();
    let cmd = |args: &[&str]| {
        aria.cmd("http://127.0.0.1:9/v1")
            .env_remove("OPENAI_BASE_URL")
            .env_remove("OPENAI_API_KEY")
            .env("OLLAMA_HOST", ollama.url())
            .env("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
            .env("ANTHROPIC_BASE_URL", &anthropic_url)
            .env("ARIA_PROVIDER", "ollama")
            .env("ARIA_MODEL", "llama3.2")
            .args(args)
            .output()
            .unwrap()
    };
    let out = cmd(&["models", "list", "--json"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let list = json_of(&out);
    let backends: Vec<&str> =
        list.as_array().unwrap().iter().map(|b| b["backend"].as_str().unwrap()).collect();
    assert_eq!(backends, ["ollama", "anthropic"]);
    assert_eq!(list[0]["models"][1], "qwen2.5:7b");
    assert_eq!(list[1]["models"][0], "claude-mock");

    let out = cmd(&["models", "test", "--backend", "ollama", "--json"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let report = json_of(&out);
    assert_eq!(report[0]["ok"], true);
    assert_eq!(report[0]["reply"], "ok");
    assert!(report[0]["first_event_ms"].is_u64());

    let out = cmd(&["models", "unload", "qwen2.5:7b"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert!(ollama.other_requests().iter().any(|(path, body)| path == "/api/generate"
        && body["keep_alive"] == 0
        && body["model"] == "qwen2.5:7b"));

    drop(anthropic);
    let out = cmd(&["models", "test", "--backend", "anthropic", "--model", "claude-mock"]);
    assert_eq!(code(&out), 1, "an unreachable backend fails the health check");
    assert!(text(&out.stdout).contains("FAIL"), "{}", text(&out.stdout));
}
