//! `aria plugins …` through the binary with the repository's example plugin: install, list,
//! test, use from `aria run` (audited like any tool), refuse a broken manifest, remove.

use aria_testkit::openai_mock::{MockOpenAi, MockTurn};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::harness::{Aria, code, json_of, text};

const NO_SERVER: &str = "http://127.0.0.1:9/v1";

fn example() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/../../plugins/wordcount").to_owned()
}

#[test]
fn the_example_plugin_is_installed_tested_used_and_removed() {
    let aria = Aria::new();
    let out = aria.run(NO_SERVER, &["plugins", "add", &example()]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("Installed plugin wordcount 1.0.0"),
        "{}",
        text(&out.stdout)
    );
    assert!(aria.home().join("plugins/wordcount/plugin.toml").is_file());
    assert_eq!(
        code(&aria.run(NO_SERVER, &["plugins", "add", &example()])),
        2,
        "twice needs --force"
    );
    assert_eq!(code(&aria.run(NO_SERVER, &["plugins", "add", "--force", &example()])), 0);

    let list = aria.run(NO_SERVER, &["plugins", "list", "--json"]);
    let list = json_of(&list);
    assert_eq!(list["plugins"][0]["name"], json!("wordcount"));
    assert_eq!(
        list["plugins"][0]["tools"][0],
        json!({"name": "word_count", "tier": "read", "timeout_secs": 10, "network": false})
    );

    std::fs::write(aria.root().join("README.md"), "hello plugin world\n").unwrap();
    let root = aria.root();
    let test =
        aria.run(NO_SERVER, &["--root", root.to_str().unwrap(), "plugins", "test", "wordcount"]);
    assert_eq!(code(&test), 0, "{}", text(&test.stderr));
    let answer: serde_json::Value = serde_json::from_str(&text(&test.stdout)).unwrap();
    assert_eq!(answer["words"], json!(3));
    let bad = aria.run(NO_SERVER, &["plugins", "test", "wordcount", "--input", "{\"file\": 1}"]);
    assert_eq!(code(&bad), 2, "{}", text(&bad.stderr));
    assert!(text(&bad.stderr).contains("input schema"), "{}", text(&bad.stderr));

    // The model sees the plugin's tool and calls it; the call is audited like any other.
    let tools = json_of(&aria.run(NO_SERVER, &["tools", "list", "--json"]));
    assert!(tools.to_string().contains("word_count"), "{tools}");
    let mock = MockOpenAi::new(vec![
        MockTurn::tool_call("word_count", r#"{"path":"README.md"}"#),
        MockTurn::text("Three words."),
    ])
    .serve();
    let run = aria
        .cmd(&mock.base_url())
        .args(["run", "--task", "count the readme", "--json"])
        .output()
        .unwrap();
    assert_eq!(code(&run), 0, "{}", text(&run.stderr));
    let sent = mock.requests();
    let result = sent[1].to_string();
    assert!(result.contains("\\\"words\\\": 3"), "the tool result reached the model: {result}");
    let audit = json_of(&aria.run(NO_SERVER, &["audit", "list", "--json"]));
    let ended = audit
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["kind"] == "tool.end" && r["payload"]["name"] == "word_count")
        .expect("a tool.end record for the plugin's tool");
    assert_eq!(ended["payload"]["outcome"], json!("ok"));
    assert_eq!(ended["payload"]["details"]["plugin"], json!("wordcount"));

    let out = aria.run(NO_SERVER, &["plugins", "remove", "wordcount"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(code(&aria.run(NO_SERVER, &["plugins", "remove", "wordcount"])), 2);
    assert_eq!(code(&aria.run(NO_SERVER, &["plugins", "remove", "../x"])), 2);
}

#[test]
fn a_broken_manifest_is_refused_naming_the_field_and_nothing_is_installed() {
    let aria = Aria::new();
    let dir = aria.dir.path().join("broken");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("plugin.toml"),
        "name = \"broken\"\nversion = \"1\"\ndescription = \"x\"\ncommand = \"python3\"\n\
         [[tools]]\nname = \"t\"\ndescription = \"d\"\ntier = \"maybe\"\n\
         input_schema = { type = \"object\" }\noutput_schema = {}\n",
    )
    .unwrap();
    let out = aria.run(NO_SERVER, &["plugins", "add", dir.to_str().unwrap()]);
    assert_eq!(code(&out), 2);
    assert!(text(&out.stderr).contains("tools.t.tier"), "{}", text(&out.stderr));
    assert!(!aria.home().join("plugins/broken").exists());
}
