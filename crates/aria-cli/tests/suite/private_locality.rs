//! Private memories stay on this machine, decided by address: a base URL whose *user name*
//! looks like loopback (`http://127.0.0.1@elsewhere/v1`) names the host after the `@`, which is
//! not this machine.
//!
//! Nothing leaves loopback: the "elsewhere" host is an address of the documentation range
//! (203.0.113.0/24), and the mock server stands in as the HTTP proxy (`HTTP_PROXY`), so every
//! request meant for that host reaches the mock on loopback instead; the test reads what would
//! have left. A server judged local never goes through a proxy, so the mock only sees requests
//! that ARIA treated as remote.

use aria_testkit::mock::MockTurn;
use aria_testkit::ollama_mock::MockOllama;
use aria_testkit::openai_mock::MockOpenAi;

use super::harness::{Aria, code, json_of, text};

const PRIVATE: &str = "Dana's salary review is in March";
const PUBLIC: &str = "Dana likes the salary spreadsheet in green";
/// Loopback in the user name, another machine in the host.
const TRICK: &str = "http://127.0.0.1@203.0.113.9:8080/v1";
const NO_SERVER: &str = "http://127.0.0.1:9/v1";

fn config(aria: &Aria, memory: &str) -> std::path::PathBuf {
    let path = aria.dir.path().join("aria.toml");
    std::fs::write(&path, format!("[memory]\n{memory}\n")).unwrap();
    path
}

fn ok(out: &std::process::Output) -> String {
    assert_eq!(code(out), 0, "stdout:\n{}\nstderr:\n{}", text(&out.stdout), text(&out.stderr));
    text(&out.stdout)
}

#[test]
fn a_loopback_user_name_does_not_make_a_remote_model_local() {
    let aria = Aria::new();
    let config = config(&aria, "embedder = \"none\"");
    let memories = |args: &[&str]| {
        let mut full = vec!["--config", config.to_str().unwrap(), "memories"];
        full.extend_from_slice(args);
        ok(&aria.run(NO_SERVER, &full))
    };
    memories(&["add", PRIVATE, "--private"]);
    memories(&["add", PUBLIC]);
    let proxy = MockOpenAi::new(vec![
        MockTurn::text("noted"),
        MockTurn::tool_call("record_memories", r#"{"memories":[]}"#),
    ])
    .serve();
    let out = aria
        .cmd(TRICK)
        .env("HTTP_PROXY", proxy.url())
        .env("http_proxy", proxy.url())
        .args(["--config", config.to_str().unwrap(), "run", "--task"])
        .arg("What about Dana's salary review?")
        .output()
        .unwrap();
    ok(&out);
    let requests = proxy.requests();
    assert!(!requests.is_empty(), "the request went the way a remote one goes");
    let first = requests[0].to_string();
    assert!(first.contains("salary spreadsheet"), "the public memory is recalled: {first}");
    assert!(!first.contains("review is in March"), "the private one is not: {first}");
    for r in &requests {
        assert!(!r.to_string().contains("review is in March"), "{r}");
    }
    // `aria doctor` says so, and why.
    let doctor = aria
        .cmd(TRICK)
        .args(["--config", config.to_str().unwrap(), "doctor", "--json"])
        .output()
        .unwrap();
    let report = json_of(&doctor).to_string();
    assert!(report.contains("never sent to the model"), "{report}");
    assert!(report.contains("203.0.113.9 is not a loopback address"), "{report}");
}

#[test]
fn a_private_memory_is_not_sent_to_a_remote_embedder() {
    let aria = Aria::new();
    let proxy = MockOllama::new(vec![]).embed_dims(8).serve();
    let config = config(
        &aria,
        "embedder = \"ollama\"\nembedding_base_url = \"http://127.0.0.1@203.0.113.9:11434\"\n\
         embedding_model = \"mock-model\"\nembedding_dims = 8",
    );
    let memories = |args: &[&str]| {
        let mut full = vec!["--config", config.to_str().unwrap(), "memories"];
        full.extend_from_slice(args);
        let out = aria
            .cmd(NO_SERVER)
            .env("HTTP_PROXY", proxy.url())
            .env("http_proxy", proxy.url())
            .args(&full)
            .output()
            .unwrap();
        ok(&out)
    };
    let added = memories(&["add", PRIVATE, "--private", "--json"]);
    let id = serde_json::from_str::<serde_json::Value>(&added).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    // A new wording of it is not sent either.
    memories(&["edit", &id, "Dana's salary review moved to April"]);
    let embedded = |needle: &str| {
        proxy
            .other_requests()
            .iter()
            .any(|(path, body)| path.contains("embed") && body.to_string().contains(needle))
    };
    assert!(!embedded("review is in March"), "{:?}", proxy.other_requests());
    assert!(!embedded("moved to April"), "{:?}", proxy.other_requests());
    // A public memory does go to that embedder (so the path above was open).
    memories(&["add", PUBLIC]);
    assert!(embedded("spreadsheet in green"), "{:?}", proxy.other_requests());
    // A reindex leaves the private one to its words too.
    memories(&["reindex"]);
    assert!(!embedded("review is in March"), "{:?}", proxy.other_requests());
    assert!(!embedded("moved to April"), "{:?}", proxy.other_requests());
    let found = memories(&["search", "salary review April", "--json"]);
    assert!(found.contains("moved to April"), "found by its words: {found}");
    let doctor = aria
        .cmd(NO_SERVER)
        .args(["--config", config.to_str().unwrap(), "doctor", "--json"])
        .output()
        .unwrap();
    let report = json_of(&doctor).to_string();
    assert!(report.contains("found by their words only"), "{report}");
}
