use super::*;
use aria_api::Usage;
use pretty_assertions::assert_eq;

fn run(pieces: &[&str], tools: &[&str]) -> Vec<ChatEvent> {
    let mut filter = TextCalls::new(tools.iter().map(|t| t.to_string()).collect());
    let mut out = Vec::new();
    for piece in pieces {
        filter.push(ChatEvent::TextDelta { text: piece.to_string() }, &mut out);
    }
    filter.push(ChatEvent::Usage { usage: Usage { input_tokens: 1, output_tokens: 2 } }, &mut out);
    filter.push(ChatEvent::Finished { reason: FinishReason::Stop }, &mut out);
    out
}

fn text(events: &[ChatEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            ChatEvent::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

fn calls(events: &[ChatEvent]) -> Vec<(String, Value)> {
    events
        .iter()
        .filter_map(|e| match e {
            ChatEvent::ToolCall { call } => {
                Some((call.name.clone(), serde_json::from_str(&call.arguments).unwrap()))
            }
            _ => None,
        })
        .collect()
}

fn finish(events: &[ChatEvent]) -> FinishReason {
    match events.last() {
        Some(ChatEvent::Finished { reason }) => *reason,
        other => panic!("last event is not Finished: {other:?}"),
    }
}

const HERMES: &str = "Let me look.\n<tool_call>\n{\"name\": \"file_read\", \"arguments\": {\"path\": \"a.txt\"}}\n</tool_call>";

#[test]
fn a_hermes_tool_call_block_becomes_a_call_at_every_split() {
    for at in 0..=HERMES.len() {
        if !HERMES.is_char_boundary(at) {
            continue;
        }
        let (a, b) = HERMES.split_at(at);
        let events = run(&[a, b], &["file_read"]);
        assert_eq!(text(&events), "Let me look.\n", "split at {at}");
        assert_eq!(
            calls(&events),
            [("file_read".to_string(), serde_json::json!({"path": "a.txt"}))],
            "split at {at}"
        );
        assert_eq!(finish(&events), FinishReason::ToolCalls);
    }
}

#[test]
fn text_streams_without_waiting_and_only_a_possible_tag_start_is_held() {
    let mut filter = TextCalls::new(vec!["ls".into()]);
    let mut out = Vec::new();
    filter.push(ChatEvent::TextDelta { text: "Hello wor".into() }, &mut out);
    assert_eq!(text(&out), "Hello wor", "plain text is passed on at once");
    out.clear();
    filter.push(ChatEvent::TextDelta { text: "ld <tool".into() }, &mut out);
    assert_eq!(text(&out), "ld ", "`<tool` could open a tag: held");
    out.clear();
    filter.push(ChatEvent::TextDelta { text: "box> is a tag".into() }, &mut out);
    assert_eq!(text(&out), "<toolbox> is a tag");
}

#[test]
fn several_blocks_and_an_unclosed_last_block_are_all_calls() {
    let events = run(
        &[
            "<tool_call>{\"name\":\"ls\",\"arguments\":{\"dir\":\".\"}}</tool_call>\n",
            "<tool_call>{\"name\":\"shell\",\"arguments\":\"{\\\"cmd\\\":\\\"pwd\\\"}\"}",
        ],
        &["ls", "shell"],
    );
    assert_eq!(
        calls(&events),
        [
            ("ls".to_string(), serde_json::json!({"dir": "."})),
            ("shell".to_string(), serde_json::json!({"cmd": "pwd"})),
        ]
    );
    assert_eq!(text(&events), "\n");
}

#[test]
fn a_block_that_is_not_a_call_is_given_back_as_text() {
    let events = run(&["see <tool_call>not json</tool_call> ok"], &["ls"]);
    assert_eq!(text(&events), "see <tool_call>not json</tool_call> ok");
    assert!(calls(&events).is_empty());
    assert_eq!(finish(&events), FinishReason::Stop);
}

#[test]
fn bare_json_naming_a_declared_tool_is_a_call_fenced_or_not() {
    for answer in [
        "{\"name\": \"file_read\", \"arguments\": {\"path\": \"x\"}}",
        "  ```json\n{\"name\": \"file_read\", \"parameters\": {\"path\": \"x\"}}\n```",
        "[{\"function\": {\"name\": \"file_read\", \"arguments\": {\"path\": \"x\"}}}]",
    ] {
        let pieces: Vec<String> =
            answer.chars().collect::<Vec<_>>().chunks(5).map(|c| c.iter().collect()).collect();
        let refs: Vec<&str> = pieces.iter().map(String::as_str).collect();
        let events = run(&refs, &["file_read"]);
        assert_eq!(text(&events), "", "{answer}");
        assert_eq!(calls(&events), [("file_read".to_string(), serde_json::json!({"path": "x"}))]);
        assert_eq!(finish(&events), FinishReason::ToolCalls);
    }
}

#[test]
fn bare_json_that_is_not_a_declared_call_stays_text() {
    for answer in ["{\"name\": \"Ada\", \"arguments\": {}}", "{\"answer\": 42}", "{not json"] {
        let events = run(&[answer], &["file_read"]);
        assert_eq!(text(&events), answer);
        assert!(calls(&events).is_empty());
        assert_eq!(finish(&events), FinishReason::Stop);
    }
}

#[test]
fn recognised_calls_come_before_usage_and_real_calls_pass_through() {
    let mut filter = TextCalls::new(vec!["ls".into()]);
    let mut out = Vec::new();
    let real = ToolCall { id: "c1".into(), name: "ls".into(), arguments: "{}".into() };
    filter.push(ChatEvent::ToolCall { call: real.clone() }, &mut out);
    filter.push(ChatEvent::TextDelta { text: "<tool_call>{\"name\":\"ls\"}".into() }, &mut out);
    filter.push(ChatEvent::Usage { usage: Usage::default() }, &mut out);
    filter.push(ChatEvent::Finished { reason: FinishReason::ToolCalls }, &mut out);
    assert_eq!(out[0], ChatEvent::ToolCall { call: real });
    assert!(
        matches!(&out[1], ChatEvent::ToolCall { call } if call.name == "ls" && call.arguments == "{}")
    );
    assert!(matches!(out[2], ChatEvent::Usage { .. }));
    assert_eq!(out.len(), 4);
}

#[test]
fn a_stream_error_still_gives_back_held_text_first() {
    let inner: ChatStream = Box::pin(futures::stream::iter(vec![
        Ok(ChatEvent::TextDelta { text: "partial <tool".into() }),
        Err(aria_api::ProviderError::MalformedStream { message: "cut".into() }),
    ]));
    let spec = ToolSpec {
        name: "ls".into(),
        description: String::new(),
        parameters: serde_json::json!({"type": "object"}),
    };
    let items: Vec<_> = futures::executor::block_on(recognise(inner, &[spec]).collect());
    assert_eq!(items.len(), 3, "{items:?}");
    assert_eq!(items[0], Ok(ChatEvent::TextDelta { text: "partial ".into() }));
    assert_eq!(items[1], Ok(ChatEvent::TextDelta { text: "<tool".into() }));
    assert!(items[2].is_err());
}

/// Qwen2.5 copies its template's doubled braces and adds closing braces.
#[test]
fn doubled_braces_and_extra_closing_braces_are_forgiven_for_declared_tools() {
    let tools = ["file_read"];
    for answer in [
        r#"{{"name": "file_read", "arguments": {"path": "notes.txt"}}}"#,
        r#"<tool_call>{{"name": "file_read", "arguments": {"path": "notes.txt"}}}</tool_call>"#,
        "```json\n{\"name\": \"file_read\", \"arguments\": {\"path\": \"notes.txt\"}}}\n```",
        r#"{"name": "file_read", "arguments": {"path": "notes.txt"}}}}"#,
    ] {
        let events = run(&[answer], &tools);
        assert_eq!(
            calls(&events),
            vec![("file_read".to_owned(), serde_json::json!({"path": "notes.txt"}))],
            "{answer}"
        );
        assert_eq!(text(&events), "", "{answer}");
    }
    // Other trailing text is not forgiven, and an undeclared tool stays text.
    for answer in [
        r#"{"name": "file_read", "arguments": {"path": "x"}} and then"#,
        r#"{{"name": "file_append", "arguments": {"path": "x"}}}"#,
    ] {
        let events = run(&[answer], &tools);
        assert!(calls(&events).is_empty(), "{answer}");
        assert_eq!(text(&events), answer);
    }
}
