use serde_json::json;

use super::*;

fn tools() -> Vec<(String, Value)> {
    vec![
        (
            "file_read".into(),
            json!({"type": "object", "properties": {
                "path": {"type": "string"},
                "max_bytes": {"type": "integer"}
            }, "required": ["path"], "additionalProperties": false}),
        ),
        (
            "set_alarm".into(),
            json!({"type": "object", "properties": {
                "hour": {"type": "integer"},
                "minute": {"type": "number"},
                "repeat": {"type": "boolean"},
                "mode": {"enum": ["once", "daily", 7]},
                "label": {"type": ["string", "null"]},
                "tags": {"type": "array", "items": {"type": "string"}},
                "extra": {"type": "object"},
                "anything": {}
            }, "required": ["hour", "minute", "mode", "tags", "extra"]}),
        ),
        ("ping".into(), json!({"type": "object"})),
    ]
}

fn grammar() -> Arc<ToolGrammar> {
    let tools = tools();
    Arc::new(ToolGrammar::new(tools.iter().map(|(n, s)| (n.as_str(), s))))
}

/// Independent check: the text parses, names an offered tool, and its arguments validate
/// against that tool's schema with the `jsonschema` crate.
fn validate(text: &str) -> Result<(), String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("{e}: {text}"))?;
    let name = v["name"].as_str().ok_or("no name")?;
    let (_, schema) = tools().into_iter().find(|(n, _)| n == name).ok_or("unknown tool")?;
    let validator = jsonschema::validator_for(&schema).map_err(|e| e.to_string())?;
    validator.validate(&v["arguments"]).map_err(|e| format!("{e}: {text}"))
}

fn feed_all(m: &mut Matcher, s: &str) -> bool {
    s.chars().all(|c| m.feed(c))
}

#[test]
fn a_well_formed_call_is_accepted_and_its_arguments_located() {
    let mut m = Matcher::new(grammar());
    let text = "\n{\"name\": \"file_read\", \"arguments\": {\"path\": \"/tmp/a b\\\"c\", \"max_bytes\": 10}}";
    assert!(feed_all(&mut m, text));
    assert!(m.is_done());
    assert_eq!(m.tool(), Some(0));
    let (a, b) = m.args_chars();
    let args: String = text.chars().skip(a).take(b - a).collect();
    assert_eq!(args, "{\"path\": \"/tmp/a b\\\"c\", \"max_bytes\": 10}");
    assert!(!m.accepts("x"), "nothing may follow a finished call");
}

#[test]
fn schema_violations_are_rejected_at_the_first_bad_character() {
    let head = "{\"name\": \"file_read\", \"arguments\": {";
    let mut m = Matcher::new(grammar());
    assert!(feed_all(&mut m, head));
    assert!(!m.accepts("}"), "required `path` missing");
    assert!(!m.accepts("\"colour\""), "unknown key");
    assert!(!m.accepts("\"path\": 3"), "path must be a string");
    assert!(!m.accepts("\"max_bytes\": 1.5"), "integer has no fraction");
    assert!(!m.accepts("\"max_bytes\": \"1\""), "integer is not a string");
    assert!(!m.accepts("\"path\": \"a\nb\""), "raw newline inside a string");
    assert!(m.accepts("\"max_bytes\": -0, \"path\": \"x\"}"));
    assert!(!m.accepts("\"path\": \"x\", \"path\": \"y\""), "duplicate key");

    let mut m = Matcher::new(grammar());
    assert!(!m.accepts("{\"name\": \"rm_rf\""), "unknown tool");
    assert!(feed_all(&mut m, "{\"name\": \"set_alarm\", \"arguments\": {\"mode\": "));
    assert!(m.accepts("7,"));
    assert!(m.accepts("\"daily\""));
    assert!(!m.accepts("\"weekly\""));
    assert!(!m.accepts("8"));
}

#[test]
fn completion_closes_any_prefix_into_a_schema_valid_call() {
    let full = "{\"name\": \"set_alarm\", \"arguments\": {\"tags\": [\"a\", \"b\\u00e9\"], \"label\": null, \"minute\": 1.5e3, \"extra\": {\"k\": [1, {\"z\": true}]}, \"hour\": 7, \"mode\": \"once\", \"anything\": \"x\"}}";
    let mut m = Matcher::new(grammar());
    for (i, c) in full.chars().enumerate() {
        let done = m.completion();
        validate(&format!("{}{}", &full.chars().take(i).collect::<String>(), done))
            .unwrap_or_else(|e| panic!("prefix {i}: {e}"));
        assert!(m.feed(c), "char {i} {c:?} rejected");
    }
    assert!(m.is_done());
    validate(full).unwrap();
    assert_eq!(Matcher::new(grammar()).completion(), "{\"name\": \"ping\", \"arguments\": {}}");
}

/// Whatever a model picks among the allowed characters, the finished text is a valid call:
/// random walks over a broad alphabet, stopped at random points and completed.
#[test]
fn random_walks_always_yield_valid_calls() {
    let alphabet: Vec<char> =
        "{}[]\":, \n-+.0123456789eEtrufalsnbxyzk_\\/@é".chars().collect::<Vec<_>>();
    let mut seed = 0x1234_5678_9abc_def0u64;
    let mut rand = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let names = ["file_read", "set_alarm", "ping"];
    for walk in 0..300 {
        let mut m = Matcher::new(grammar());
        let mut text = String::new();
        // Start like a model would, with a real tool name, then wander.
        let name = names[walk % names.len()];
        let head = format!("{{\"name\": \"{name}\", \"arguments\": ");
        assert!(feed_all(&mut m, &head));
        text.push_str(&head);
        let steps = (rand() % 200) as usize;
        for _ in 0..steps {
            let allowed: Vec<char> =
                alphabet.iter().copied().filter(|c| m.accepts(&c.to_string())).collect();
            if allowed.is_empty() || m.is_done() {
                break;
            }
            let c = allowed[(rand() % allowed.len() as u64) as usize];
            assert!(m.feed(c));
            text.push(c);
        }
        text.push_str(&m.completion());
        validate(&text).unwrap_or_else(|e| panic!("walk {walk}: {e}"));
    }
}

#[test]
fn unsupported_schema_parts_fall_back_to_any_value() {
    let g = Arc::new(ToolGrammar::new([(
        "t",
        &json!({"type": "object", "properties": {"r": {"$ref": "#/x"}}, "required": ["r"]}),
    )]));
    let mut m = Matcher::new(g);
    assert!(feed_all(
        &mut m,
        "{\"name\": \"t\", \"arguments\": {\"r\": [1, \"a\", {\"b\": null}]}}"
    ));
    assert!(m.is_done());
}

#[test]
fn a_string_pattern_anchored_with_a_literal_makes_the_string_start_with_it() {
    let schema = json!({"type": "object", "properties": {
        "patch": {"type": "string", "pattern": "^--- "}
    }, "required": ["patch"], "additionalProperties": false});
    let g = Arc::new(ToolGrammar::new([("apply_patch", &schema)]));
    let start = "\n{\"name\": \"apply_patch\", \"arguments\": {\"patch\": \"";
    let mut m = Matcher::new(Arc::clone(&g));
    assert!(feed_all(&mut m, start));
    // Only the required start may come: not the end of the string, not other text.
    assert!(!m.accepts("\""));
    assert!(!m.accepts("@@"));
    assert!(!m.accepts("-- "), "the prefix is followed character by character");
    assert!(m.accepts("--- a/f\\n+++ b/f\\n@@ -1 +1 @@\\n-a\\n+b\\n\"}}"));
    // The shortest completion writes the start before closing the string.
    assert_eq!(m.completion(), "--- \"}}");
    let mut done = m.clone();
    assert!(feed_all(&mut done, "--- a/f\"}}") && done.is_done());
    // Patterns whose start is not a plain literal constrain nothing (or only their literal part).
    for (pattern, want) in [
        ("^--- ", Some("--- ")),
        ("--- ", None),
        ("^[a-z]+", None),
        ("^ab*", Some("a")),
        ("^a\\.b", Some("a")),
        ("^x{2}", None),
        ("^say \"hi\"", Some("say ")),
    ] {
        assert_eq!(literal_prefix(pattern).as_deref(), want, "{pattern}");
    }
}
