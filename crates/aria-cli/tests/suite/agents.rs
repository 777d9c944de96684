//! `aria agents list|show` and `--agent NAME` on `aria run` / `aria chat`, through the binary
//! against the mock OpenAI server: which tools the model is offered, the prompt, the mode and
//! caps that apply, and what the audit log records.

use aria_testkit::openai_mock::{MockOpenAi, MockTurn, ScriptEnd};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::harness::{Aria, code, json_of, text};

const NO_SERVER: &str = "http://127.0.0.1:9/v1";

/// `aria.toml` with no embedder (`[memory]` open: `text` may go on with its keys).
pub(super) fn write_config(aria: &Aria, text: &str) {
    let dir = aria.dir.path().join("config/aria");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("aria.toml"), format!("[memory]\nembedder = \"none\"\n{text}"))
        .unwrap();
}

fn offered(request: &Value) -> Vec<String> {
    let mut names: Vec<String> = request["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
        .collect();
    names.sort();
    names
}

#[test]
fn every_agent_is_listed_with_where_it_comes_from() {
    let aria = Aria::new();
    write_config(
        &aria,
        "[agents.reviewer]\ndescription = \"Reviews.\"\ntools = [\"read\", \"git\"]\nmode = \"supervised\"\n",
    );
    let list = json_of(&aria.run(NO_SERVER, &["agents", "list", "--json"]));
    let rows: Vec<(Value, Value)> =
        list.as_array().unwrap().iter().map(|a| (a["name"].clone(), a["source"].clone())).collect();
    assert_eq!(
        rows,
        [
            (json!("default"), json!("builtin")),
            (json!("researcher"), json!("builtin")),
            (json!("coder"), json!("builtin")),
            (json!("companion"), json!("builtin")),
            (json!("reviewer"), json!("config")),
        ]
    );
    let shown = json_of(&aria.run(NO_SERVER, &["agents", "show", "reviewer", "--json"]));
    assert_eq!(shown["effective"]["mode"], json!("supervised"));
    let tools: Vec<&str> =
        shown["offered_tools"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(tools.contains(&"git_commit") && tools.contains(&"file_read"), "{tools:?}");
    assert!(!tools.contains(&"file_write") && !tools.contains(&"shell_execute"), "{tools:?}");

    let missing = aria.run(NO_SERVER, &["agents", "show", "nope"]);
    assert_eq!(code(&missing), 2);
    assert!(text(&missing.stderr).contains("researcher"), "{}", text(&missing.stderr));
}

#[test]
fn a_bad_or_clashing_agent_entry_is_a_configuration_error_naming_it() {
    let aria = Aria::new();
    for (entry, says) in [
        ("[agents.mine]\nmodels = [\"gpt-4o\"]\n", "[agents.mine] models"),
        ("[agents.mine]\ntools = [\"rm -rf /\"]\n", "[agents.mine] tools"),
        ("[agents.mine]\nmode = \"yolo\"\n", "[agents.mine] mode"),
        ("[agents.mine]\ncolour = \"blue\"\n", "colour"),
        ("[agents.coder]\ndescription = \"mine\"\n", "built-in"),
    ] {
        write_config(&aria, entry);
        let out = aria.run(NO_SERVER, &["agents", "list"]);
        assert_eq!(code(&out), 2, "{entry}");
        assert!(text(&out.stderr).contains(says), "{entry}: {}", text(&out.stderr));
    }
}

#[test]
fn a_run_as_an_agent_gets_its_tools_prompt_and_stricter_mode() {
    let aria = Aria::new();
    write_config(&aria, "");
    let mock = MockOpenAi::new(vec![
        MockTurn::tool_call("file_write", r#"{"path":"x.txt","content":"no"}"#),
        MockTurn::text("I only read."),
    ])
    .serve();
    let run = aria
        .cmd(&mock.base_url())
        .args(["run", "--agent", "researcher", "--task", "look around", "--json"])
        .output()
        .unwrap();
    assert_eq!(code(&run), 0, "{}", text(&run.stderr));
    let request = &mock.requests()[0];
    let tools = offered(request);
    assert!(tools.contains(&"file_read".to_owned()) && tools.contains(&"web_fetch".to_owned()));
    for absent in ["file_write", "apply_patch", "shell_execute", "python_run", "git_commit"] {
        assert!(!tools.contains(&absent.to_owned()), "{absent} offered: {tools:?}");
    }
    assert!(request.to_string().contains("running as the agent \\\"researcher\\\""));
    // A call to a tool the agent does not have is refused, and nothing is written.
    assert!(!aria.root().join("x.txt").exists());
    let audit = json_of(&aria.run(NO_SERVER, &["audit", "list", "--json"]));
    let start = audit.as_array().unwrap().iter().find(|r| r["kind"] == "session.start").unwrap();
    assert_eq!(
        (start["payload"]["agent"].clone(), start["payload"]["mode"].clone()),
        (json!("researcher"), json!("read_only"))
    );

    // The default agent is today's ARIA: every tool.
    let mock = MockOpenAi::new(vec![MockTurn::text("Hello.")]).serve();
    let run = aria.cmd(&mock.base_url()).args(["run", "--task", "hi", "--json"]).output().unwrap();
    assert_eq!(code(&run), 0, "{}", text(&run.stderr));
    assert!(offered(&mock.requests()[0]).contains(&"file_write".to_owned()));

    let unknown = aria.run(NO_SERVER, &["run", "--agent", "nope", "--task", "x"]);
    assert_eq!(code(&unknown), 2);
}

#[test]
fn an_agents_model_chain_and_caps_apply_but_never_widen() {
    let aria = Aria::new();
    let mock = MockOpenAi::new(vec![MockTurn::text("Done.")]).serve();
    write_config(
        &aria,
        "[limits]\nmax_cost_usd = 0.5\n\n[agents.cheap]\nmodels = [\"openai/agent-model\"]\n\
         max_cost_usd = 5.0\ntemperature = 0.2\nmode = \"governed\"\n",
    );
    let run = aria
        .cmd(&mock.base_url())
        .env_remove("ARIA_MODEL")
        .args(["--mode", "supervised", "run", "--agent", "cheap", "--task", "hi", "--json"])
        .output()
        .unwrap();
    assert_eq!(code(&run), 0, "{}", text(&run.stderr));
    let request = &mock.requests()[0];
    assert_eq!(request["model"], json!("agent-model"));
    assert!((request["temperature"].as_f64().unwrap() - 0.2).abs() < 1e-6, "{request}");
    let audit = json_of(&aria.run(NO_SERVER, &["audit", "list", "--json"]));
    let start = audit.as_array().unwrap().iter().find(|r| r["kind"] == "session.start").unwrap();
    assert_eq!(start["payload"]["mode"], json!("supervised"), "the agent cannot loosen the mode");
    assert_eq!(start["payload"]["limits"]["max_cost_usd"], json!(0.5), "nor raise the cap");
}

#[test]
fn a_conversation_keeps_its_agent() {
    let aria = Aria::new();
    write_config(&aria, "");
    let mock =
        MockOpenAi::new(vec![MockTurn::text("Noted.")]).on_script_end(ScriptEnd::Repeat).serve();
    let first = aria
        .cmd(&mock.base_url())
        .args(["run", "--agent", "companion", "--task", "hello", "--json"])
        .output()
        .unwrap();
    assert_eq!(code(&first), 0, "{}", text(&first.stderr));
    let conversation = json_of(&first)["conversation_id"].as_str().unwrap().to_owned();
    // Continued without --agent: still the companion (memory tools only).
    let second = aria
        .cmd(&mock.base_url())
        .args(["run", "--conversation", &conversation, "--task", "again", "--json"])
        .output()
        .unwrap();
    assert_eq!(code(&second), 0, "{}", text(&second.stderr));
    // The chat request of the second run (memory extraction asks the model on the side).
    let requests = mock.requests();
    let again = requests
        .iter()
        .rfind(|r| {
            r.to_string().contains("again") && !offered(r).contains(&"record_memories".to_owned())
        })
        .expect("the second run's request");
    let tools = offered(again);
    assert!(tools.contains(&"memory_search".to_owned()), "{tools:?}");
    assert!(!tools.contains(&"file_read".to_owned()), "{tools:?}");
    // Continued as another agent: refused, nothing sent.
    let other = aria.run(
        &mock.base_url(),
        &["run", "--conversation", &conversation, "--agent", "coder", "--task", "x"],
    );
    assert_eq!(code(&other), 2);
    assert!(
        text(&other.stderr).contains("bound to the agent companion"),
        "{}",
        text(&other.stderr)
    );
    assert_eq!(mock.requests().len(), requests.len(), "nothing was sent");
}

#[test]
fn the_daemon_lists_the_agents() {
    let aria = Aria::new();
    write_config(&aria, "[agents.reviewer]\ndescription = \"Reviews.\"\ntools = [\"read\"]\n");
    let mock = MockOpenAi::new(vec![]).serve();
    let daemon = super::daemon::Daemon::start(&aria, &mock.base_url(), &[]);
    let (status, body) = daemon.json("GET", "/api/v1/agents", None);
    assert_eq!(status, 200, "{body}");
    let names: Vec<&str> =
        body["items"].as_array().unwrap().iter().filter_map(|a| a["name"].as_str()).collect();
    assert_eq!(names, ["default", "researcher", "coder", "companion", "reviewer"]);
    assert_eq!(body["items"][4]["source"], json!("config"));
}

#[test]
fn agents_are_made_changed_and_removed_from_the_cli_and_run_as_made() {
    let aria = Aria::new();
    write_config(&aria, "[agents.reviewer]\ndescription = \"Reviews.\"\n");
    let made = aria.run(
        NO_SERVER,
        &[
            "agents",
            "add",
            "scribe",
            "--description",
            "Writes notes.",
            "--tools",
            "files",
            "--mode",
            "supervised",
            "--prompt",
            "Write in haiku.",
            "--json",
        ],
    );
    assert_eq!(code(&made), 0, "{}", text(&made.stderr));
    assert_eq!(json_of(&made)["source"], json!("store"));
    // Taken names, read-only agents and bad fields are usage errors naming the cause.
    for (args, says) in [
        (vec!["agents", "add", "scribe"], "already"),
        (vec!["agents", "add", "coder"], "built-in"),
        (vec!["agents", "edit", "reviewer", "--description", "x"], "aria.toml"),
        (vec!["agents", "remove", "reviewer"], "aria.toml"),
        (vec!["agents", "add", "x", "--models", "gpt-4o"], "models"),
        (vec!["agents", "add", "x", "--memory", "everyone"], "memory"),
        (vec!["agents", "add", "x", "--confirm-completion"], "planner"),
        (vec!["agents", "add", "x", "--persona", "pirate"], "personas/pirate.toml"),
        (vec!["agents", "add", "Bad Name"], "agent name"),
        (vec!["agents", "edit", "scribe", "--unset", "colour"], "colour"),
        (vec!["agents", "edit", "nobody", "--description", "x"], "no agent named nobody"),
    ] {
        let out = aria.run(NO_SERVER, &args);
        assert_eq!(code(&out), 2, "{args:?}");
        assert!(text(&out.stderr).contains(says), "{args:?}: {}", text(&out.stderr));
    }
    let edited = json_of(&aria.run(
        NO_SERVER,
        &["agents", "edit", "scribe", "--tools", "read", "--unset", "mode", "--json"],
    ));
    assert_eq!((edited["tools"].clone(), edited.get("mode")), (json!(["read"]), None));

    // A run as the stored agent gets its tools and prompt.
    let mock = MockOpenAi::new(vec![MockTurn::text("Done.")]).serve();
    let run = aria
        .cmd(&mock.base_url())
        .args(["run", "--agent", "scribe", "--task", "note", "--json"])
        .output()
        .unwrap();
    assert_eq!(code(&run), 0, "{}", text(&run.stderr));
    let request = &mock.requests()[0];
    assert!(request.to_string().contains("Write in haiku."));
    assert!(!offered(request).contains(&"file_write".to_owned()), "{:?}", offered(request));

    let removed = aria.run(NO_SERVER, &["agents", "remove", "scribe"]);
    assert_eq!(code(&removed), 0, "{}", text(&removed.stderr));
    let names: Vec<String> = json_of(&aria.run(NO_SERVER, &["agents", "list", "--json"]))
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a["name"].as_str().map(str::to_owned))
        .collect();
    assert!(!names.contains(&"scribe".to_owned()), "{names:?}");
    let kinds: Vec<String> = json_of(&aria.run(NO_SERVER, &["audit", "list", "--json"]))
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["kind"].as_str().filter(|k| k.starts_with("agent.")).map(str::to_owned))
        .collect();
    assert_eq!(kinds, ["agent.add", "agent.edit", "agent.remove"]);
    let verify = aria.run(NO_SERVER, &["audit", "verify"]);
    assert_eq!(code(&verify), 0, "{}", text(&verify.stdout));
}

#[test]
fn the_daemon_makes_changes_and_removes_agents() {
    let aria = Aria::new();
    write_config(&aria, "[agents.reviewer]\ndescription = \"Reviews.\"\n");
    let mock = MockOpenAi::new(vec![]).serve();
    let daemon = super::daemon::Daemon::start(&aria, &mock.base_url(), &[]);
    let body =
        json!({"name": "helper", "description": "Helps.", "tools": ["read"], "memory": "own"});
    let (status, made) = daemon.json("POST", "/api/v1/agents", Some(&body));
    assert_eq!(status, 201, "{made}");
    assert_eq!((made["source"].clone(), made["memory"].clone()), (json!("store"), json!("own")));
    let (status, again) = daemon.json("POST", "/api/v1/agents", Some(&body));
    assert_eq!(status, 409, "{again}");
    let (status, bad) =
        daemon.json("POST", "/api/v1/agents", Some(&json!({"name": "x", "mode": "yolo"})));
    assert_eq!(status, 400, "{bad}");
    assert!(bad["error"]["message"].as_str().unwrap().contains("mode"), "{bad}");
    let (status, unknown) =
        daemon.json("POST", "/api/v1/agents", Some(&json!({"name": "x", "colour": "red"})));
    assert_eq!(status, 400, "{unknown}");
    assert!(unknown["error"]["message"].as_str().unwrap().contains("colour"), "{unknown}");

    let (status, edited) = daemon.json(
        "PATCH",
        "/api/v1/agents/helper",
        Some(&json!({"description": "Helps more.", "tools": null})),
    );
    assert_eq!(status, 200, "{edited}");
    assert_eq!(edited["description"], json!("Helps more."));
    assert!(edited.get("tools").is_none(), "null clears: {edited}");
    let (status, one) = daemon.json("GET", "/api/v1/agents/helper", None);
    assert_eq!((status, one["description"].clone()), (200, json!("Helps more.")));
    for (method, path) in [("PATCH", "/api/v1/agents/reviewer"), ("DELETE", "/api/v1/agents/coder")]
    {
        let (status, body) = daemon.json(method, path, Some(&json!({"description": "x"})));
        assert_eq!(status, 409, "{method} {path}: {body}");
    }
    let (status, _) = daemon.json("DELETE", "/api/v1/agents/helper", None);
    assert_eq!(status, 204);
    let (status, gone) = daemon.json("GET", "/api/v1/agents/helper", None);
    assert_eq!(status, 404, "{gone}");
    // What the daemon makes, the CLI sees.
    let (status, _) = daemon.json("POST", "/api/v1/agents", Some(&json!({"name": "later"})));
    assert_eq!(status, 201);
    let shown = aria.run(NO_SERVER, &["agents", "show", "later", "--json"]);
    assert_eq!(code(&shown), 0, "{}", text(&shown.stderr));
    assert_eq!(json_of(&shown)["source"], json!("store"));
}

#[test]
fn a_daemon_conversation_made_with_an_agent_runs_as_it() {
    let aria = Aria::new();
    write_config(&aria, "");
    let mock =
        MockOpenAi::new(vec![MockTurn::text("Read it.")]).on_script_end(ScriptEnd::Repeat).serve();
    let daemon = super::daemon::Daemon::start(&aria, &mock.base_url(), &[]);
    let (status, bad) =
        daemon.json("POST", "/api/v1/conversations", Some(&json!({"agent": "nosuch"})));
    assert_eq!(status, 400, "{bad}");
    let (status, made) =
        daemon.json("POST", "/api/v1/conversations", Some(&json!({"agent": "researcher"})));
    assert_eq!((status, made["agent"].clone()), (201, json!("researcher")), "{made}");
    let id = made["id"].as_str().unwrap();
    let (status, reply) = daemon.json(
        "POST",
        &format!("/api/v1/conversations/{id}/messages"),
        Some(&json!({"content": "look"})),
    );
    assert_eq!(status, 200, "{reply}");
    let tools = offered(&mock.requests()[0]);
    assert!(tools.contains(&"file_read".to_owned()), "{tools:?}");
    assert!(!tools.contains(&"file_write".to_owned()), "{tools:?}");
    let (_, shown) = daemon.json("GET", &format!("/api/v1/conversations/{id}"), None);
    assert_eq!(shown["agent"], json!("researcher"));
    // The CLI goes on as the same agent, and refuses another.
    let other = aria
        .run(&mock.base_url(), &["run", "--conversation", id, "--agent", "coder", "--task", "x"]);
    assert_eq!(code(&other), 2, "{}", text(&other.stderr));
    assert!(text(&other.stderr).contains("bound to the agent researcher"));
}

#[test]
fn an_agent_with_its_own_memory_keeps_it_from_the_others() {
    let aria = Aria::new();
    write_config(
        &aria,
        "extract = false\n\n[agents.diary]\ntools = [\"memory\"]\nmemory = \"own\"\n",
    );
    let mock = MockOpenAi::new(vec![
        MockTurn::tool_call("memory_store", r#"{"content":"The user loves green tea."}"#),
        MockTurn::text("Noted."),
        // The default agent searches for it: shared memory does not hold it.
        MockTurn::tool_call("memory_search", r#"{"query":"green tea"}"#),
        MockTurn::text("Nothing."),
        // The diary finds its own.
        MockTurn::tool_call("memory_search", r#"{"query":"green tea"}"#),
        MockTurn::text("Green tea."),
    ])
    .serve();
    for (agent, task) in [("diary", "remember tea"), ("default", "tea?"), ("diary", "tea?")] {
        let out = aria
            .cmd(&mock.base_url())
            .args(["run", "--agent", agent, "--task", task, "--json"])
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "{agent}: {}", text(&out.stderr));
    }
    let requests = mock.requests();
    let tool_result = |i: usize| {
        requests[i]["messages"]
            .as_array()
            .unwrap()
            .iter()
            .rfind(|m| m["role"] == "tool")
            .map(|m| m["content"].to_string())
            .unwrap_or_default()
    };
    assert!(!tool_result(3).contains("green tea"), "default saw it: {}", tool_result(3));
    assert!(tool_result(5).contains("green tea"), "the diary did not: {}", tool_result(5));
    // The user sees every memory, with the agent that keeps it.
    let listed = aria.run(NO_SERVER, &["memories", "list", "--json"]);
    assert!(text(&listed.stdout).contains("agent:diary"), "{}", text(&listed.stdout));
}
