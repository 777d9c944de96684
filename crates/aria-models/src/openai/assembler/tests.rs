//! Unit tests of [`ChunkAssembler`], fed through [`SseParser`] the way the provider feeds it.

use super::*;
use crate::sse::SseParser;
use pretty_assertions::assert_eq;
use serde_json::json;

/// Parses byte pieces as the provider does: SSE events → chunk payloads → chat events.
fn run(pieces: &[&[u8]]) -> Result<Vec<ChatEvent>, ProviderError> {
    let mut parser = SseParser::new();
    let mut assembler = ChunkAssembler::new();
    let mut sse = Vec::new();
    let mut out = Vec::new();
    let malformed =
        |e: crate::sse::SseError| ProviderError::MalformedStream { message: e.to_string() };
    for piece in pieces {
        parser.push(piece, &mut sse).map_err(malformed)?;
        for event in sse.drain(..) {
            assembler.push(&event.data, &mut out)?;
        }
    }
    parser.finish(&mut sse).map_err(malformed)?;
    for event in sse.drain(..) {
        assembler.push(&event.data, &mut out)?;
    }
    assembler.finish(&mut out)?;
    Ok(out)
}

fn run_str(body: &str) -> Result<Vec<ChatEvent>, ProviderError> {
    run(&[body.as_bytes()])
}

/// `data: <chunk>\n\n` for a chunk whose only choice has this delta and finish reason.
fn chunk(delta: Value, finish: Option<&str>) -> String {
    let body = json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m",
                      "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    format!("data: {body}\n\n")
}

fn text(t: &str) -> ChatEvent {
    ChatEvent::TextDelta { text: t.into() }
}

fn call(id: &str, name: &str, arguments: &str) -> ChatEvent {
    ChatEvent::ToolCall {
        call: ToolCall { id: id.into(), name: name.into(), arguments: arguments.into() },
    }
}

fn finished(reason: FinishReason) -> ChatEvent {
    ChatEvent::Finished { reason }
}

/// A realistic transcript: `\r\n` endings, a keep-alive comment, multi-byte text, a multi-line
/// `data:` event, two tool calls whose argument fragments are interleaved and cut inside escape
/// sequences, a usage chunk with no choices, then `[DONE]`.
fn transcript() -> String {
    let mut s = String::from(": OPENROUTER PROCESSING\r\n\r\n");
    s += &chunk(json!({"role": "assistant", "content": ""}), None).replace("\n", "\r\n");
    s += &chunk(json!({"content": "Hé"}), None);
    s += "data: {\"choices\":[{\"index\":0,\n";
    s += "data: \"delta\":{\"content\":\"llo 🌍\"}}]}\n\n";
    let header = |i: u32, id: &str, name: &str| json!({"tool_calls": [{"index": i, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]});
    let fragment =
        |i: u32, a: &str| json!({"tool_calls": [{"index": i, "function": {"arguments": a}}]});
    s += &chunk(header(0, "call_a", "file_read"), None);
    s += &chunk(header(1, "call_b", "shell"), None);
    s += &chunk(fragment(0, "{\"path\": \"a\\"), None);
    s += &chunk(fragment(1, "{\"cmd\":"), None);
    s += &chunk(fragment(0, "\"b.rs\"}"), None);
    s += &chunk(fragment(1, " \"ls -l\"}"), None);
    s += &chunk(json!({}), Some("tool_calls"));
    s += "data: {\"id\":\"chatcmpl-1\",\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":5,\"total_tokens\":17}}\n\n";
    s += "data: [DONE]\n\n";
    s
}

fn expected() -> Vec<ChatEvent> {
    vec![
        text("Hé"),
        text("llo 🌍"),
        call("call_a", "file_read", "{\"path\": \"a\\\"b.rs\"}"),
        call("call_b", "shell", "{\"cmd\": \"ls -l\"}"),
        ChatEvent::Usage { usage: Usage { input_tokens: 12, output_tokens: 5 } },
        finished(FinishReason::ToolCalls),
    ]
}

#[test]
fn a_whole_transcript_becomes_events() {
    assert_eq!(run_str(&transcript()).unwrap(), expected());
}

#[test]
fn every_split_position_gives_the_same_events() {
    let body = transcript();
    let bytes = body.as_bytes();
    for at in 0..=bytes.len() {
        let (a, b) = bytes.split_at(at);
        assert_eq!(run(&[a, b]).unwrap(), expected(), "split at byte {at}");
    }
    let singles: Vec<&[u8]> = bytes.chunks(1).collect();
    assert_eq!(run(&singles).unwrap(), expected(), "one byte at a time");
}

#[test]
fn random_partitions_give_the_same_events() {
    let body = transcript();
    let bytes = body.as_bytes();
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    for _ in 0..200 {
        let mut pieces = Vec::new();
        let mut rest = bytes;
        while !rest.is_empty() {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let n = ((seed >> 33) as usize % 17 + 1).min(rest.len());
            let (piece, tail) = rest.split_at(n);
            pieces.push(piece);
            rest = tail;
        }
        assert_eq!(run(&pieces).unwrap(), expected());
    }
}

#[test]
fn a_finish_reason_without_done_is_accepted_at_the_end() {
    let body = chunk(json!({"content": "ok"}), None) + &chunk(json!({}), Some("stop"));
    assert_eq!(run_str(&body).unwrap(), vec![text("ok"), finished(FinishReason::Stop)]);
}

#[test]
fn an_end_with_neither_finish_reason_nor_done_is_malformed() {
    let body = chunk(json!({"content": "Hel"}), None);
    let err = run_str(&body).unwrap_err();
    assert_eq!(err.kind(), "malformed_stream");
    assert!(err.to_string().contains("no finish_reason"), "{err}");

    let cut = body + "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo";
    assert_eq!(run_str(&cut).unwrap_err().kind(), "malformed_stream");
}

#[test]
fn calls_without_ids_get_unique_generated_ones() {
    let calls = json!({"tool_calls": [
        {"index": 0, "function": {"name": "a", "arguments": "{}"}},
        {"index": 1, "function": {"name": "b", "arguments": "{}"}},
    ]});
    let events = run_str(&(chunk(calls, Some("tool_calls")) + "data: [DONE]\n\n")).unwrap();
    let ids: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            ChatEvent::ToolCall { call } => Some(call.id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(ids.len(), 2);
    assert_ne!(ids[0], ids[1]);
    for id in ids {
        let n = id.strip_prefix("call_").unwrap_or_else(|| panic!("{id}"));
        assert!(n.parse::<u64>().is_ok(), "{id}");
    }
}

#[test]
fn calls_without_index_are_told_apart_by_id_and_object_arguments_become_text() {
    // Whole calls in one chunk, no index, arguments as an object: seen from Ollama-like servers.
    let calls = json!({"tool_calls": [
        {"id": "x1", "function": {"name": "a", "arguments": {"k": 1}}},
        {"id": "x2", "function": {"name": "b", "arguments": "{\"k\":2}"}},
    ]});
    let events = run_str(&chunk(calls, Some("stop"))).unwrap();
    assert_eq!(
        events,
        vec![
            call("x1", "a", "{\"k\":1}"),
            call("x2", "b", "{\"k\":2}"),
            finished(FinishReason::ToolCalls)
        ]
    );
}

#[test]
fn a_new_id_at_a_used_index_is_a_new_call() {
    let first = json!({"tool_calls": [{"index": 0, "id": "g1", "function": {"name": "a", "arguments": "{}"}}]});
    let second = json!({"tool_calls": [{"index": 0, "id": "g2", "function": {"name": "b", "arguments": "{}"}}]});
    let body = chunk(first, None) + &chunk(second, Some("tool_calls"));
    let events = run_str(&body).unwrap();
    assert_eq!(
        events,
        vec![call("g1", "a", "{}"), call("g2", "b", "{}"), finished(FinishReason::ToolCalls)]
    );
}

#[test]
fn repeated_ids_and_names_do_not_duplicate() {
    let piece = |a: &str| json!({"tool_calls": [{"index": 0, "id": "c", "type": "function", "function": {"name": "grep", "arguments": a}}]});
    let body = chunk(piece("{\"q\":"), None) + &chunk(piece("\"x\"}"), Some("tool_calls"));
    assert_eq!(
        run_str(&body).unwrap(),
        vec![call("c", "grep", "{\"q\":\"x\"}"), finished(FinishReason::ToolCalls)]
    );
}

#[test]
fn empty_arguments_become_an_empty_object_and_a_nameless_call_is_malformed() {
    let no_args = json!({"tool_calls": [{"index": 0, "id": "c", "function": {"name": "now", "arguments": ""}}]});
    let events = run_str(&chunk(no_args, Some("tool_calls"))).unwrap();
    assert_eq!(events[0], call("c", "now", "{}"));

    let nameless =
        json!({"tool_calls": [{"index": 0, "id": "c", "function": {"arguments": "{}"}}]});
    let err = run_str(&chunk(nameless, Some("tool_calls"))).unwrap_err();
    assert!(err.to_string().contains("without a function name"), "{err}");
}

#[test]
fn usage_is_reported_once_with_the_last_totals() {
    let usage = |p: u64, c: u64| {
        format!(
            "data: {}\n\n",
            json!({"choices": [], "usage": {"prompt_tokens": p, "completion_tokens": c}})
        )
    };
    let body = usage(3, 1)
        + &chunk(json!({"content": "x"}), Some("length"))
        + &usage(3, 9)
        + "data: [DONE]\n\n";
    assert_eq!(
        run_str(&body).unwrap(),
        vec![
            text("x"),
            ChatEvent::Usage { usage: Usage { input_tokens: 3, output_tokens: 9 } },
            finished(FinishReason::Length),
        ]
    );
}

#[test]
fn an_error_object_in_the_stream_is_classified() {
    let error = json!({"error": {"message": "This model's maximum context length is 8 tokens", "type": "invalid_request_error", "code": "context_length_exceeded"}});
    let body = chunk(json!({"content": "a"}), None) + &format!("data: {error}\n\n");
    let err = run_str(&body).unwrap_err();
    assert_eq!(err.kind(), "context_length_exceeded");
}

#[test]
fn input_after_done_is_ignored_and_other_choices_too() {
    let other =
        json!({"choices": [{"index": 1, "delta": {"content": "B"}, "finish_reason": null}]});
    let body = format!("data: {other}\n\n")
        + &chunk(json!({"content": "A"}), Some("stop"))
        + "data: [DONE]\n\ndata: {broken\n\n";
    assert_eq!(run_str(&body).unwrap(), vec![text("A"), finished(FinishReason::Stop)]);
}

#[test]
fn a_whole_completion_reads_like_one_chunk() {
    let body = json!({"id": "c", "object": "chat.completion", "choices": [{"index": 0, "finish_reason": "tool_calls",
        "message": {"role": "assistant", "content": "Looking.", "tool_calls": [
            {"id": "t1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]}}],
        "usage": {"prompt_tokens": 4, "completion_tokens": 2, "total_tokens": 6}});
    let mut assembler = ChunkAssembler::new();
    let mut out = Vec::new();
    assembler.push(&body.to_string(), &mut out).unwrap();
    assembler.finish(&mut out).unwrap();
    assert_eq!(
        out,
        vec![
            text("Looking."),
            call("t1", "ls", "{}"),
            ChatEvent::Usage { usage: Usage { input_tokens: 4, output_tokens: 2 } },
            finished(FinishReason::ToolCalls),
        ]
    );
}

#[test]
fn json_that_is_not_a_chunk_is_malformed() {
    let err = run_str("data: {\"choices\": 5}\n\n").unwrap_err();
    assert_eq!(err.kind(), "malformed_stream");
    assert!(err.to_string().contains("choices"), "{err}");
}
