use super::*;
use crate::reader::{Assembler, Decoder, SseDecoder};
use pretty_assertions::assert_eq;

/// A documented-shape transcript: text, then two tool calls with split inputs, thinking and
/// ping in between.
const TRANSCRIPT: &str = concat!(
    "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-x\",\"stop_reason\":null,\"usage\":{\"input_tokens\":25,\"cache_read_input_tokens\":5,\"output_tokens\":1}}}\n\n",
    "event: ping\ndata: {\"type\": \"ping\"}\n\n",
    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"hmm\"}}\n\n",
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"Héllo \"}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"🌍\"}}\n\n",
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_a\",\"name\":\"file_read\",\"input\":{}}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\"}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"path\\\": \\\"a\"}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\".txt\\\"}\"}}\n\n",
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":2}\n\n",
    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":3,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_b\",\"name\":\"now\",\"input\":{}}}\n\n",
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":3}\n\n",
    "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":42}}\n\n",
    "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
);

fn decode(pieces: &[&[u8]]) -> Result<Vec<ChatEvent>, ProviderError> {
    let mut decoder = SseDecoder::new(MessageAssembler::new(), false);
    let mut out = Vec::new();
    for piece in pieces {
        decoder.feed(piece, &mut out)?;
    }
    decoder.end(&mut out)?;
    Ok(out)
}

fn expected() -> Vec<ChatEvent> {
    let call = |id: &str, name: &str, args: &str| ChatEvent::ToolCall {
        call: ToolCall { id: id.into(), name: name.into(), arguments: args.into() },
    };
    vec![
        ChatEvent::TextDelta { text: "Héllo ".into() },
        ChatEvent::TextDelta { text: "🌍".into() },
        call("toolu_a", "file_read", "{\"path\": \"a.txt\"}"),
        call("toolu_b", "now", "{}"),
        ChatEvent::Usage { usage: Usage { input_tokens: 30, output_tokens: 42 } },
        ChatEvent::Finished { reason: FinishReason::ToolCalls },
    ]
}

#[test]
fn a_whole_transcript_gives_text_calls_usage_and_finish() {
    assert_eq!(decode(&[TRANSCRIPT.as_bytes()]).unwrap(), expected());
}

#[test]
fn every_split_position_gives_the_same_events() {
    let bytes = TRANSCRIPT.as_bytes();
    for at in (0..=bytes.len()).step_by(7) {
        let (a, b) = bytes.split_at(at);
        assert_eq!(decode(&[a, b]).unwrap(), expected(), "split at {at}");
    }
}

#[test]
fn an_error_event_is_classified_and_a_cut_stream_is_malformed() {
    let overloaded = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\nevent: error\ndata: {\"type\": \"error\", \"error\": {\"type\": \"overloaded_error\", \"message\": \"Overloaded\"}}\n\n";
    let err = decode(&[overloaded.as_bytes()]).unwrap_err();
    assert!(matches!(err, ProviderError::Http { status: 529, .. }), "{err:?}");
    let cut = &TRANSCRIPT.as_bytes()[..TRANSCRIPT.len() / 2];
    assert_eq!(decode(&[cut]).unwrap_err().kind(), "malformed_stream");
}

#[test]
fn a_stop_reason_without_message_stop_is_accepted_and_max_tokens_is_length() {
    let body = "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"max_tokens\"},\"usage\":{\"output_tokens\":9}}\n\n";
    let events = decode(&[body.as_bytes()]).unwrap();
    assert_eq!(events.last(), Some(&ChatEvent::Finished { reason: FinishReason::Length }));
}

#[test]
fn a_whole_message_is_read_like_a_stream() {
    let whole = r#"{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"Hi"},{"type":"tool_use","id":"toolu_1","name":"ls","input":{"dir":"."}}],"stop_reason":"tool_use","usage":{"input_tokens":5,"output_tokens":6}}"#;
    let mut decoder = SseDecoder::new(MessageAssembler::new(), true);
    let mut out = Vec::new();
    decoder.feed(whole.as_bytes(), &mut out).unwrap();
    decoder.end(&mut out).unwrap();
    assert_eq!(out.len(), 4, "{out:?}");
    assert!(matches!(&out[1], ChatEvent::ToolCall { call } if call.arguments == "{\"dir\":\".\"}"));
    let mut a = MessageAssembler::new();
    assert!(!Assembler::is_done(&a));
    a.push(None, whole, &mut Vec::new()).unwrap();
    assert!(Assembler::is_done(&a));
}
