//! `aria setup` against model servers of the tests' own on loopback.

use aria_testkit::openai_mock::{MockOpenAi, MockTurn};
use serde_json::json;

use super::harness::{Aria, code, json_of, text};

#[test]
fn setup_finds_a_server_checks_a_model_and_writes_the_provider() {
    let aria = Aria::new();
    let mock =
        MockOpenAi::new(vec![MockTurn::text("ready"), MockTurn::tool_call("current_time", "{}")])
            .models(vec!["qwen3-4b".into(), "llama-3.2-3b".into()])
            .serve();
    let found = json_of(&aria.run(&mock.base_url(), &["setup", "--json"]));
    let server = found["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["url"] == mock.base_url())
        .unwrap_or_else(|| panic!("the server at OPENAI_BASE_URL is found: {found}"));
    assert_eq!(server["models"], json!(["qwen3-4b", "llama-3.2-3b"]));
    assert_eq!(found["keys"], json!(["OPENAI_API_KEY"]), "keys are named, never shown");
    assert!(!found.to_string().contains("sk-test"), "{found}");

    let out = aria.run(&mock.base_url(), &["setup", "--use", "openai/qwen3-4b"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let said = text(&out.stdout);
    assert!(said.contains("answer:    ok") && said.contains("tool call: ok"), "{said}");
    let written = std::fs::read_to_string(aria.dir.path().join("config/aria/aria.toml")).unwrap();
    assert!(
        written.contains("[provider]") && written.contains("model = \"qwen3-4b\""),
        "{written}"
    );
    assert!(written.contains(&format!("base_url = \"{}\"", mock.base_url())), "{written}");
    // The two questions reached the model: the second offered the tool.
    let requests = mock.requests();
    let asked: Vec<&serde_json::Value> =
        requests.iter().filter(|r| r["model"] == "qwen3-4b").collect();
    assert_eq!(asked.len(), 2, "{requests:?}");
    assert!(asked[1]["tools"].to_string().contains("current_time"));

    // A second run does not overwrite the user's own [provider].
    let again = aria.run(&mock.base_url(), &["setup", "--use", "openai/llama-3.2-3b"]);
    assert_eq!(code(&again), 2, "{}", text(&again.stderr));
    assert!(text(&again.stderr).contains("has a [provider] table already"));
}

#[test]
fn setup_refuses_what_no_server_offers_and_says_how() {
    let aria = Aria::new();
    let mock = MockOpenAi::new(vec![]).models(vec!["qwen3-4b".into()]).serve();
    let out = aria.run(&mock.base_url(), &["setup", "--use", "openai/not-there"]);
    assert_eq!(code(&out), 2);
    assert!(text(&out.stderr).contains("lists what is offered"), "{}", text(&out.stderr));
    let bad = aria.run(&mock.base_url(), &["setup", "--use", "qwen3-4b"]);
    assert_eq!(code(&bad), 2);
    assert!(!aria.dir.path().join("config/aria/aria.toml").exists(), "nothing written");
}
