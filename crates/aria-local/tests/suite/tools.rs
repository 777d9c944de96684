//! Constrained tool calls with the real model: every call parses and follows its schema.

use aria_api::{ChatEvent, ChatRequest, FinishReason, Message, ToolCall, ToolSpec};
use aria_local::{EditForm, LocalChatOptions, ToolChoice};
use serde_json::{Value, json};

use super::support::{chat, greedy};

fn tools() -> Vec<ToolSpec> {
    let spec = |name: &str, description: &str, parameters: Value| ToolSpec {
        name: name.into(),
        description: description.into(),
        parameters,
    };
    vec![
        spec(
            "get_weather",
            "Current weather for a city.",
            json!({"type": "object",
            "properties": {"city": {"type": "string"}, "unit": {"enum": ["celsius", "fahrenheit"]}},
            "required": ["city"]}),
        ),
        spec(
            "file_read",
            "Read a text file.",
            json!({"type": "object",
            "properties": {"path": {"type": "string"}, "max_bytes": {"type": "integer"}},
            "required": ["path"], "additionalProperties": false}),
        ),
        spec(
            "set_timer",
            "Start a countdown timer.",
            json!({"type": "object",
            "properties": {"minutes": {"type": "integer"}, "label": {"type": "string"}, "loud": {"type": "boolean"}},
            "required": ["minutes"]}),
        ),
        spec(
            "web_search",
            "Search the web.",
            json!({"type": "object",
            "properties": {"query": {"type": "string"}, "count": {"type": "number"}},
            "required": ["query", "count"]}),
        ),
    ]
}

/// 50 requests that ask for a tool.
fn prompts() -> Vec<String> {
    let cities =
        ["Paris", "Tokyo", "Lagos", "Lima", "Oslo", "Cairo", "Denver", "Hanoi", "Perth", "Quito"];
    let paths = [
        "/etc/hosts",
        "notes.txt",
        "src/main.rs",
        "README.md",
        "/tmp/log.txt",
        "a b.txt",
        "data/x.csv",
        "~/todo.md",
        "Cargo.toml",
        "/var/log/syslog",
    ];
    let topics = [
        "rust async",
        "best pizza in Naples",
        "2024 olympics",
        "how to bake bread",
        "quantum computing",
        "cheap flights",
        "python tutorials",
        "mars rover news",
        "jazz history",
        "linux kernel",
    ];
    let mut out = Vec::new();
    for (i, c) in cities.iter().enumerate() {
        out.push(if i % 2 == 0 {
            format!("What's the weather in {c}?")
        } else {
            format!("Is it raining in {c} right now? Use fahrenheit.")
        });
    }
    for p in paths {
        out.push(format!("Read the file {p} and show it to me."));
    }
    for n in 1..=10 {
        out.push(format!("Set a timer for {} minutes for the tea.", n * 3));
    }
    for t in topics {
        out.push(format!("Search the web for \"{t}\", 5 results."));
    }
    for (p, c) in paths.iter().zip(cities) {
        out.push(format!(
            "First show me the first 100 bytes of {p}, then tell me the weather in {c}."
        ));
    }
    assert_eq!(out.len(), 50);
    out
}

/// Independent validation: JSON parse + the `jsonschema` crate against the tool's schema.
fn validate(call: &ToolCall, tools: &[ToolSpec]) -> Result<(), String> {
    let tool = tools
        .iter()
        .find(|t| t.name == call.name)
        .ok_or_else(|| format!("unknown tool {:?}", call.name))?;
    let args: Value =
        serde_json::from_str(&call.arguments).map_err(|e| format!("{e}: {}", call.arguments))?;
    let validator = jsonschema::validator_for(&tool.parameters).map_err(|e| e.to_string())?;
    validator.validate(&args).map_err(|e| format!("{e}: {}", call.arguments))
}

fn request(prompt: &str, tools: Vec<ToolSpec>) -> ChatRequest {
    ChatRequest {
        model: "local".into(),
        messages: vec![Message::user(prompt)],
        tools,
        max_tokens: Some(64),
        temperature: Some(0.0),
    }
}

fn calls(events: &[ChatEvent]) -> Vec<ToolCall> {
    events
        .iter()
        .filter_map(|e| match e {
            ChatEvent::ToolCall { call } => Some(call.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn fifty_tool_requests_all_yield_schema_valid_calls() {
    let provider =
        chat().with_options(LocalChatOptions { tool_choice: ToolChoice::Required, ..greedy() });
    let tools = tools();
    let mut failures = Vec::new();
    let mut expected_tool = 0;
    let wanted =
        |i: usize| ["get_weather", "file_read", "set_timer", "web_search", "file_read"][i / 10];
    for (i, prompt) in prompts().iter().enumerate() {
        let (events, stats) = provider.generate_blocking(&request(prompt, tools.clone())).unwrap();
        eprintln!("{stats:?}");
        let calls = calls(&events);
        if calls.len() != 1 {
            failures.push(format!("{prompt}: {} calls in {events:?}", calls.len()));
            continue;
        }
        if let Err(e) = validate(&calls[0], &tools) {
            failures.push(format!("{prompt}: {e}"));
        }
        if calls[0].name == wanted(i) {
            expected_tool += 1;
        }
        assert!(events.contains(&ChatEvent::Finished { reason: FinishReason::ToolCalls }));
        eprintln!("{prompt} -> {} {}", calls[0].name, calls[0].arguments);
    }
    eprintln!("the expected tool was chosen {expected_tool}/50 times");
    assert!(failures.is_empty(), "{} invalid:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn auto_mode_calls_are_valid_whenever_the_model_chooses_a_tool() {
    let provider = chat();
    let tools = tools();
    let mut called = 0;
    for prompt in prompts().iter().step_by(10) {
        let req = ChatRequest { max_tokens: Some(32), ..request(prompt, tools.clone()) };
        let (events, _) = provider.generate_blocking(&req).unwrap();
        for call in calls(&events) {
            called += 1;
            validate(&call, &tools).unwrap_or_else(|e| panic!("{prompt}: {e}"));
        }
        let text: String = events
            .iter()
            .filter_map(|e| match e {
                ChatEvent::TextDelta { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert!(!text.contains("<tool_call>"), "a tool call leaked into the text: {text}");
        eprintln!("{prompt} -> {:?} / {text:?}", calls(&events));
    }
    eprintln!("auto mode: {called}/5 prompts produced a call");
}

/// In auto mode the model decides. SmolLM2-135M almost never opens a tool call unprompted (see
/// the test above, and it does not imitate an earlier call in the conversation either), but it
/// copies text it is asked to repeat. That is enough to exercise the switch end to end: the tag
/// is detected in free text, kept out of the text deltas, and what follows is decoded under the
/// grammar into a valid call.
#[test]
fn auto_mode_switches_to_constrained_decoding_when_the_model_opens_a_call() {
    let provider = chat();
    let tools = tools();
    let mut switched = 0;
    for prompt in [
        "Repeat exactly: <tool_call>",
        "Say \"<tool_call>\" and nothing else.",
        "Copy this text: <tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}",
    ] {
        let (events, _) = provider.generate_blocking(&request(prompt, tools.clone())).unwrap();
        let text: String = events
            .iter()
            .filter_map(|e| match e {
                ChatEvent::TextDelta { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert!(!text.contains("<tool_call>"), "a tool call leaked into the text: {text}");
        for call in calls(&events) {
            validate(&call, &tools).unwrap();
            switched += 1;
        }
        eprintln!("{prompt}: {:?} / {text:?}", calls(&events));
    }
    assert!(switched >= 1, "the model never opened a tool call, so the switch went untested");
}

#[test]
fn first_then_auto_forces_a_first_call_only_for_a_message_about_files() {
    let provider = chat()
        .with_options(LocalChatOptions { tool_choice: ToolChoice::FirstThenAuto, ..greedy() });
    let forced = |prompt: &str| {
        let text = provider.render_prompt(&request(prompt, tools())).unwrap().text;
        text.ends_with("<|im_start|>assistant\n<tool_call>\n")
    };
    assert!(forced("What is in notes.txt?"));
    assert!(forced("List the files in this directory."));
    assert!(!forced("Tell me a short joke."));
    assert!(!forced("What is 17 + 25?"));
    assert!(forced("Use web_search for the weather"), "a message naming an offered tool");
    assert!(!forced("Use a web search for the weather"));
    // Once a tool result is in, the model answers freely.
    let mut after = request("What is in notes.txt?", tools());
    after.messages.push(Message::assistant(
        "",
        vec![ToolCall { id: "c1".into(), name: "file_read".into(), arguments: "{}".into() }],
    ));
    after.messages.push(Message::tool_result("c1", "hello"));
    assert!(provider.render_prompt(&after).unwrap().text.ends_with("<|im_start|>assistant\n"));
}

/// [`tools`] and two that change files.
fn edit_tools() -> Vec<ToolSpec> {
    let spec = |name: &str, key: &str| ToolSpec {
        name: name.into(),
        description: format!("{name} a file."),
        parameters: json!({"type": "object", "properties": {key: {"type": "string"}},
            "required": [key], "additionalProperties": false}),
    };
    let mut tools = tools();
    tools.push(spec("file_write", "content"));
    tools.push(spec("apply_patch", "patch"));
    tools
}

/// A forced first call that starts an edit of a named file reads it: the grammar allows only
/// `file_read` (SmolLM2 picks the other tools for these messages when it may).
#[test]
fn first_then_auto_reads_a_file_before_editing_it() {
    let provider = chat()
        .with_options(LocalChatOptions { tool_choice: ToolChoice::FirstThenAuto, ..greedy() });
    let first_call = |prompt: &str| {
        let req = ChatRequest { max_tokens: Some(48), ..request(prompt, edit_tools()) };
        let (events, _) = provider.generate_blocking(&req).unwrap();
        calls(&events).into_iter().next().map(|c| c.name)
    };
    for prompt in [
        "Fix the typo 'wether' in weather.md, it should be 'weather'.",
        "Change the timer in timers.toml from 5 to 10 minutes.",
        "Add the city Oslo at the end of cities.txt.",
        "In search.py, rename the function web_search to search_web.",
        // A question about a named file reads it first too.
        "What day was the meeting moved to? Check notes.txt.",
        "Which port does the server listen on according to config.toml?",
    ] {
        assert_eq!(first_call(prompt).as_deref(), Some("file_read"), "{prompt}");
    }
    // After the question's read the model is free: it may answer in text.
    let mut req = request("What is the version in package.json?", edit_tools());
    req.messages.push(Message::assistant(
        "",
        vec![ToolCall {
            id: "c1".into(),
            name: "file_read".into(),
            arguments: "{\"path\": \"package.json\"}".into(),
        }],
    ));
    req.messages.push(Message::tool_result("c1", "{\"version\": \"1.2.3\"}"));
    let prompt = provider.render_prompt(&req).unwrap().text;
    assert!(!prompt.ends_with("<tool_call>\n"), "not forced after the read");
    // Without file_read among the tools, any tool may come first (a change here).
    let mut req = request("Fix the typo 'wether' in weather.md.", edit_tools());
    req.tools.retain(|t| t.name != "file_read");
    req.max_tokens = Some(48);
    let (events, _) = provider.generate_blocking(&req).unwrap();
    assert!(calls(&events).iter().all(|c| c.name != "file_read"));
    assert_eq!(calls(&events).len(), 1);
}

/// Once the file is read, the forced second call of an edit changes it with the edit form's
/// tool (here the patch form: `apply_patch`), or with `file_write` when that tool is not
/// offered (a file rewritten whole by a small model lost everything but the new line); a read
/// that failed leaves the model free.
#[test]
fn first_then_auto_changes_the_file_it_read() {
    let provider = chat().with_options(LocalChatOptions {
        tool_choice: ToolChoice::FirstThenAuto,
        edit_form: EditForm::Patch,
        ..greedy()
    });
    let tools = edit_tools();
    let task = "Change the port in config.toml from 8088 to 9090.";
    let after_read_with = |result: &str, tools: &[ToolSpec]| {
        let mut req = ChatRequest { max_tokens: Some(64), ..request(task, tools.to_vec()) };
        req.messages.push(Message::assistant(
            "",
            vec![ToolCall {
                id: "c1".into(),
                name: "file_read".into(),
                arguments: "{\"path\": \"config.toml\"}".into(),
            }],
        ));
        req.messages.push(Message::tool_result("c1", result));
        req
    };
    let after_read = |result: &str| after_read_with(result, &tools);
    let first = |req: &ChatRequest| {
        let (events, _) = provider.generate_blocking(req).unwrap();
        calls(&events).into_iter().next().map(|c| c.name)
    };
    let fenced = |body: &str| format!("<<tool_output id=ab12>>\n{body}\n<</tool_output id=ab12>>");
    let short = fenced("[server]\nport = 8088\n");
    assert_eq!(first(&after_read(&short)).as_deref(), Some("apply_patch"));
    // With file_edit offered too, the change is still a patch in the patch form.
    let mut with_edit = tools.clone();
    with_edit.push(ToolSpec {
        name: "file_edit".into(),
        description: "file_edit a file.".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"},
            "old": {"type": "string"}, "new": {"type": "string"}},
            "required": ["path", "old", "new"], "additionalProperties": false}),
    });
    assert_eq!(first(&after_read_with(&short, &with_edit)).as_deref(), Some("apply_patch"));
    // And the embedded model is not shown file_edit beside a patch tool, so it cannot call it.
    let prompt = provider.render_prompt(&after_read_with(&short, &with_edit)).unwrap().text;
    assert!(!prompt.contains("file_edit"), "{prompt}");
    with_edit.retain(|t| t.name != "apply_patch" && t.name != "file_write");
    let prompt = provider.render_prompt(&after_read_with(&short, &with_edit)).unwrap().text;
    assert!(prompt.contains("file_edit"), "the only change tool is shown");
    let mut no_patch = tools.clone();
    no_patch.retain(|t| t.name != "apply_patch");
    assert_eq!(first(&after_read_with(&short, &no_patch)).as_deref(), Some("file_write"));
    // A failed read: no forced call (the model may say the file is missing).
    let forced = |req: &ChatRequest| {
        provider.render_prompt(req).unwrap().text.ends_with("<|im_start|>assistant\n<tool_call>\n")
    };
    assert!(forced(&after_read(&short)));
    assert!(!forced(&after_read(&fenced("error: config.toml does not exist"))));
    assert!(!forced(&after_read("refused: outside the roots")));
    // After the change (a second call), the model answers freely.
    let mut done = after_read(&short);
    done.messages.push(Message::assistant(
        "",
        vec![ToolCall { id: "c2".into(), name: "file_write".into(), arguments: "{}".into() }],
    ));
    done.messages.push(Message::tool_result("c2", "Replaced config.toml"));
    assert!(!forced(&done));
}

/// In the replace form the change is a `file_edit` (and the model is not shown `apply_patch`);
/// a request to add lines is a `file_insert` in either form.
#[test]
fn the_replace_form_edits_and_additions_insert() {
    let spec = |name: &str, keys: &[&str]| ToolSpec {
        name: name.into(),
        description: format!("{name} a file."),
        parameters: json!({"type": "object",
            "properties": keys.iter().map(|k| (k.to_string(), json!({"type": "string"}))).collect::<serde_json::Map<_, _>>(),
            "required": keys, "additionalProperties": false}),
    };
    let mut tools = edit_tools();
    tools.push(spec("file_edit", &["path", "old", "new"]));
    tools.push(spec("file_insert", &["path", "text"]));
    let after_read = |task: &str| {
        let mut req = ChatRequest { max_tokens: Some(48), ..request(task, tools.clone()) };
        req.messages.push(Message::assistant(
            "",
            vec![ToolCall {
                id: "c1".into(),
                name: "file_read".into(),
                arguments: "{\"path\": \"list.txt\"}".into(),
            }],
        ));
        req.messages.push(Message::tool_result("c1", "milk\neggs\n"));
        req
    };
    for form in [EditForm::Replace, EditForm::Patch] {
        let provider = chat().with_options(LocalChatOptions {
            tool_choice: ToolChoice::FirstThenAuto,
            edit_form: form,
            ..greedy()
        });
        let first = |req: &ChatRequest| {
            let (events, _) = provider.generate_blocking(req).unwrap();
            calls(&events).into_iter().next().map(|c| c.name)
        };
        let change = after_read("Change eggs to bread in list.txt.");
        let want = if form == EditForm::Replace { "file_edit" } else { "apply_patch" };
        assert_eq!(first(&change).as_deref(), Some(want));
        let prompt = provider.render_prompt(&change).unwrap().text;
        let hidden = if form == EditForm::Replace { "apply_patch" } else { "file_edit" };
        assert!(!prompt.contains(hidden), "{prompt}");
        let add = after_read("Add the line 'bread' at the end of list.txt.");
        assert_eq!(first(&add).as_deref(), Some("file_insert"));
    }
}

/// After a change that succeeded the model is asked what it changed (it explained how to make
/// the change it had just made); after a failed one, or a read, to answer the request.
#[test]
fn after_a_change_the_model_is_asked_what_it_changed() {
    let provider = chat();
    let task = "Change the port in config.toml from 8088 to 9090.";
    let after = |name: &str, result: &str| {
        let mut req = request(task, edit_tools());
        req.messages.push(Message::assistant(
            "",
            vec![ToolCall { id: "c1".into(), name: name.into(), arguments: "{}".into() }],
        ));
        req.messages.push(Message::tool_result("c1", result));
        provider.render_prompt(&req).unwrap().text
    };
    let asked = format!("tell me in one sentence what you changed for my request: {task}");
    let fenced = |body: &str| format!("<<tool_output id=ab12>>\n{body}\n<</tool_output id=ab12>>");
    assert!(after("file_write", &fenced("Replaced config.toml (1 line changed)")).contains(&asked));
    assert!(after("apply_patch", "Applied the patch to 1 file").contains(&asked));
    for (name, result) in [
        ("apply_patch", fenced("error: the hunk does not match")),
        ("file_write", "refused: outside the roots".to_owned()),
        ("file_read", fenced("port = 8088")),
    ] {
        let text = after(name, &result);
        assert!(!text.contains(&asked), "{name}: {result}");
        assert!(text.contains(&format!("answer my request: {task}")), "{name}: {result}");
    }
}

#[test]
fn the_request_is_restated_after_tool_results_but_not_arias_own_notes() {
    let provider = chat();
    let mut req = request("What is in notes.txt?", tools());
    let call =
        |id: &str| ToolCall { id: id.into(), name: "file_read".into(), arguments: "{}".into() };
    req.messages.push(Message::assistant("", vec![call("c1")]));
    req.messages.push(Message::tool_result("c1", "hello"));
    req.messages.push(Message::user("[ARIA] You described calling `file_read`; call it now."));
    req.messages.push(Message::assistant("", vec![call("c2")]));
    req.messages.push(Message::tool_result("c2", "hello"));
    let text = provider.render_prompt(&req).unwrap().text;
    let restated =
        "</tool_response>\n\nWith these results, answer my request: What is in notes.txt?";
    assert_eq!(text.matches(restated).count(), 2, "{text}");
}

/// An embedded model's patch starts with a `--- ` file header (the grammar says so): small
/// models write bare `@@` hunks, or the new lines without `+`, and name no file.
#[test]
fn embedded_models_name_the_file_they_patch() {
    let provider = chat().with_options(LocalChatOptions {
        tool_choice: ToolChoice::FirstThenAuto,
        edit_form: EditForm::Patch,
        ..greedy()
    });
    let mut tools = edit_tools();
    let patch = tools.iter_mut().find(|t| t.name == "apply_patch").unwrap();
    patch.parameters = json!({"type": "object", "properties": {"patch": {"type": "string"},
        "path": {"type": "string"}}, "required": ["patch"], "additionalProperties": false});
    let mut req = ChatRequest {
        max_tokens: Some(96),
        ..request("Add the line 'bread' at the end of shopping.txt.", tools)
    };
    req.messages.push(Message::assistant(
        "",
        vec![ToolCall {
            id: "c1".into(),
            name: "file_read".into(),
            arguments: "{\"path\": \"shopping.txt\"}".into(),
        }],
    ));
    req.messages.push(Message::tool_result(
        "c1",
        "<<tool_output id=ab12>>\nmilk\neggs\n<</tool_output id=ab12>>",
    ));
    let (events, _) = provider.generate_blocking(&req).unwrap();
    let call = calls(&events).into_iter().next().expect("a forced change");
    assert_eq!(call.name, "apply_patch");
    let args: Value = serde_json::from_str(&call.arguments).unwrap();
    let patch = args["patch"].as_str().unwrap_or_default();
    assert!(patch.starts_with("--- "), "{args}");
}
