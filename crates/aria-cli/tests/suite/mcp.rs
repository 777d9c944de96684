//! `aria mcp …` and MCP tools in `aria run`, through the binary, with the small stdio server of
//! aria-mcp's tests (and the real `@modelcontextprotocol/server-filesystem` when it is
//! installed, see `make test-mcp-servers`).

use aria_testkit::openai_mock::{MockOpenAi, MockTurn};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::harness::{Aria, code, json_of, text};

const NO_SERVER: &str = "http://127.0.0.1:9/v1";

fn fake_server() -> (String, String) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../aria-mcp/tests/fake_server.py");
    let script = std::fs::canonicalize(script).unwrap();
    let dir = script.parent().unwrap().display().to_string();
    (script.display().to_string(), dir)
}

#[test]
fn a_server_is_added_tested_listed_and_its_tools_used_by_the_agent() {
    let aria = Aria::new();
    let (script, dir) = fake_server();
    let add = aria.run(
        NO_SERVER,
        &["mcp", "add", "fake", "--read-path", &dir, "--", "python3", "-u", &script],
    );
    assert_eq!(code(&add), 0, "{}", text(&add.stderr));
    let config = aria.dir.path().join("config/aria/aria.toml");
    let written = std::fs::read_to_string(&config).unwrap();
    assert!(written.contains("[mcp.servers.fake]"), "{written}");
    assert_eq!(code(&aria.run(NO_SERVER, &["mcp", "add", "fake", "--", "x"])), 2, "twice");
    // The user decides the tier: echo only reads.
    std::fs::write(&config, format!("{written}[mcp.servers.fake.tool_tiers]\necho = \"read\"\n"))
        .unwrap();

    let tested = aria.run(NO_SERVER, &["mcp", "test", "fake"]);
    assert_eq!(code(&tested), 0, "{}", text(&tested.stderr));
    assert!(text(&tested.stdout).contains("listed 5 tools"), "{}", text(&tested.stdout));
    let listed = json_of(&aria.run(NO_SERVER, &["mcp", "tools", "--json"]));
    let echo = listed.as_array().unwrap().iter().find(|t| t["name"] == "fake__echo").unwrap();
    assert_eq!(
        (echo["tier"].clone(), echo["read_only_hint"].clone()),
        (json!("read"), json!(true))
    );
    assert_eq!(echo["flagged"], json!(true), "its schema's description orders the model: {echo}");
    let shown = text(&aria.run(NO_SERVER, &["mcp", "tools"]).stdout);
    assert!(shown.contains("FLAGGED"), "{shown}");
    let crash = listed.as_array().unwrap().iter().find(|t| t["name"] == "fake__crash").unwrap();
    assert_eq!(crash["flagged"], json!(false));
    assert_eq!(crash["tier"], json!("irreversible"), "unmarked tools ask");
    let servers = json_of(&aria.run(NO_SERVER, &["mcp", "list", "--json"]));
    assert_eq!(
        (servers[0]["name"].clone(), servers[0]["tools"].clone()),
        (json!("fake"), json!(5))
    );
    assert_eq!(code(&aria.run(NO_SERVER, &["mcp", "test", "nope"])), 2);
    // A server without resources or prompts has none to list, and says so when one is asked for.
    let none = aria.run(NO_SERVER, &["mcp", "resources", "fake", "--json"]);
    assert_eq!((code(&none), json_of(&none)), (0, json!([])), "{}", text(&none.stderr));
    let none = aria.run(NO_SERVER, &["mcp", "prompts", "fake", "--get", "review"]);
    assert_eq!(code(&none), 1);
    assert!(text(&none.stderr).contains("offers no prompts"), "{}", text(&none.stderr));

    let mock = MockOpenAi::new(vec![
        MockTurn::tool_call("fake__echo", r#"{"text":"hello from mcp"}"#),
        MockTurn::text("It said hello."),
    ])
    .serve();
    let run =
        aria.cmd(&mock.base_url()).args(["run", "--task", "echo it", "--json"]).output().unwrap();
    assert_eq!(code(&run), 0, "{}", text(&run.stderr));
    assert!(
        mock.requests()[1].to_string().contains("hello from mcp"),
        "the result reached the model"
    );
    // The model saw the server's poisoned schema text marked as untrusted, never as it was.
    let offered = mock.requests()[0].to_string();
    assert!(offered.contains("fake__echo"), "{offered}");
    assert!(offered.contains("[ARIA:"), "the injected description is marked: {offered}");
    let audit = json_of(&aria.run(NO_SERVER, &["audit", "list", "--json"]));
    let ended = audit
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["kind"] == "tool.end" && r["payload"]["name"] == "fake__echo")
        .expect("the MCP call is audited");
    assert_eq!(ended["payload"]["details"]["mcp_server"], json!("fake"));

    // An irreversible MCP tool is denied when nobody can be asked.
    let mock = MockOpenAi::new(vec![
        MockTurn::tool_call("fake__crash", "{}"),
        MockTurn::text("Could not."),
    ])
    .serve();
    let denied =
        aria.cmd(&mock.base_url()).args(["run", "--task", "crash it", "--json"]).output().unwrap();
    assert_eq!(code(&denied), 1, "{}", text(&denied.stderr));
    assert_eq!(json_of(&denied)["denied"][0]["tool"], json!("fake__crash"));
}

#[test]
fn a_bad_entry_is_a_configuration_error_naming_it() {
    let aria = Aria::new();
    let config = aria.dir.path().join("config/aria");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("aria.toml"),
        "[mcp.servers.web]\nurl = \"ftp://127.0.0.1:1/mcp\"\n",
    )
    .unwrap();
    let out = aria.run(NO_SERVER, &["mcp", "list"]);
    assert_eq!(code(&out), 2);
    assert!(text(&out.stderr).contains("[mcp.servers.web] url"), "{}", text(&out.stderr));
    for (entry, says) in [
        ("url = \"http://127.0.0.1:1/mcp\"\ncommand = \"x\"", "not both"),
        ("url = \"http://127.0.0.1:1/mcp\"\nenv = [\"TOKEN\"]", "through headers"),
        ("command = \"x\"\nheaders = { Authorization = \"TOKEN\" }", "only a url server"),
        ("url = \"http://127.0.0.1:1/mcp\"\nheaders = { \"A B\" = \"TOKEN\" }", "a header name"),
        ("args = [\"x\"]", "or the url"),
    ] {
        std::fs::write(config.join("aria.toml"), format!("[mcp.servers.web]\n{entry}\n")).unwrap();
        let out = aria.run(NO_SERVER, &["mcp", "list"]);
        assert_eq!(code(&out), 2, "{entry}");
        assert!(text(&out.stderr).contains(says), "{entry}: {}", text(&out.stderr));
    }
    // A url server with its header from the environment is a valid entry.
    std::fs::write(
        config.join("aria.toml"),
        "[mcp.servers.web]\nurl = \"http://127.0.0.1:9/mcp\"\nheaders = { Authorization = \"TOKEN\" }\n",
    )
    .unwrap();
    let listed = aria.run(NO_SERVER, &["mcp", "list", "--json"]);
    assert_eq!(code(&listed), 0, "{}", text(&listed.stderr));
    assert_eq!(json_of(&listed)[0]["name"], json!("web"));
    let unreachable = aria.run(NO_SERVER, &["mcp", "test", "web"]);
    assert_ne!(code(&unreachable), 0);
    std::fs::write(
        config.join("aria.toml"),
        "[mcp.servers.x]\ncommand = \"y\"\ntier = \"maybe\"\n",
    )
    .unwrap();
    let out = aria.run(NO_SERVER, &["mcp", "list"]);
    assert!(text(&out.stderr).contains("[mcp.servers.x] tier"), "{}", text(&out.stderr));
}
