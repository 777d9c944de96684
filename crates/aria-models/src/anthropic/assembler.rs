//! Turning Anthropic Messages stream events into [`ChatEvent`]s. Pure, like the OpenAI one.
//!
//! `message_start` carries the input-token usage; text arrives as `text_delta`s and is passed
//! on at once; a `tool_use` block's input arrives as `input_json_delta` fragments and the call
//! is emitted whole at its `content_block_stop`; `message_delta` carries the stop reason and the
//! output-token count; `message_stop` ends the answer (usage, then `Finished`). `ping`, thinking
//! blocks and event types this version does not know are ignored, as the API asks; an `error`
//! event is classified like an HTTP error.

use std::collections::BTreeMap;

use aria_api::{ChatEvent, FinishReason, ProviderError, ToolCall, Usage};
use serde_json::Value;

use super::errors;

#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    input: String,
}

/// Folds Messages stream events into chat events.
#[derive(Debug, Default)]
pub struct MessageAssembler {
    calls: BTreeMap<u64, PartialCall>,
    any_calls: bool,
    usage: Usage,
    stop: Option<FinishReason>,
    done: bool,
}

impl MessageAssembler {
    pub fn new() -> Self {
        Self::default()
    }

    fn event(&mut self, value: &Value, out: &mut Vec<ChatEvent>) -> Result<(), ProviderError> {
        let kind = value.get("type").and_then(Value::as_str).unwrap_or_default();
        match kind {
            "message_start" => {
                if let Some(usage) = value.pointer("/message/usage") {
                    self.read_usage(usage);
                }
            }
            "content_block_start" => self.block_start(value, out),
            "content_block_delta" => self.block_delta(value, out),
            "content_block_stop" => {
                let index = value.get("index").and_then(Value::as_u64).unwrap_or(0);
                if let Some(call) = self.calls.remove(&index) {
                    emit_call(call, out);
                }
            }
            "message_delta" => {
                if let Some(reason) = value.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop = Some(stop_reason(reason));
                }
                if let Some(usage) = value.get("usage") {
                    self.read_usage(usage);
                }
            }
            "message_stop" => self.complete(out),
            "error" => {
                return Err(errors::from_error_object(value.get("error").unwrap_or(value), None));
            }
            // A whole `message` (a server that did not stream).
            "message" => self.whole(value, out),
            _ => {} // `ping`, and event types added after this was written
        }
        Ok(())
    }

    fn read_usage(&mut self, usage: &Value) {
        let n = |key: &str| usage.get(key).and_then(Value::as_u64);
        if let Some(input) = n("input_tokens") {
            // Cached prompt tokens are input too (billed differently, counted the same here).
            self.usage.input_tokens = input
                + n("cache_creation_input_tokens").unwrap_or(0)
                + n("cache_read_input_tokens").unwrap_or(0);
        }
        if let Some(output) = n("output_tokens") {
            self.usage.output_tokens = output; // cumulative in `message_delta`
        }
    }

    fn block_start(&mut self, value: &Value, out: &mut Vec<ChatEvent>) {
        let index = value.get("index").and_then(Value::as_u64).unwrap_or(0);
        let Some(block) = value.get("content_block") else { return };
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                if let Some(text) =
                    block.get("text").and_then(Value::as_str).filter(|t| !t.is_empty())
                {
                    out.push(ChatEvent::TextDelta { text: text.to_string() });
                }
            }
            Some("tool_use") => {
                let text =
                    |k: &str| block.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
                // `input` is `{}` here and filled by deltas; a non-empty one is the whole input.
                let input = match block.get("input") {
                    Some(Value::Object(map)) if !map.is_empty() => {
                        Value::Object(map.clone()).to_string()
                    }
                    _ => String::new(),
                };
                self.any_calls = true;
                self.calls.insert(index, PartialCall { id: text("id"), name: text("name"), input });
            }
            _ => {} // thinking, redacted_thinking, server tools: not for the loop
        }
    }

    fn block_delta(&mut self, value: &Value, out: &mut Vec<ChatEvent>) {
        let index = value.get("index").and_then(Value::as_u64).unwrap_or(0);
        let Some(delta) = value.get("delta") else { return };
        match delta.get("type").and_then(Value::as_str) {
            Some("text_delta") => {
                if let Some(text) =
                    delta.get("text").and_then(Value::as_str).filter(|t| !t.is_empty())
                {
                    out.push(ChatEvent::TextDelta { text: text.to_string() });
                }
            }
            Some("input_json_delta") => {
                if let (Some(call), Some(part)) =
                    (self.calls.get_mut(&index), delta.get("partial_json").and_then(Value::as_str))
                {
                    call.input.push_str(part);
                }
            }
            _ => {}
        }
    }

    fn whole(&mut self, message: &Value, out: &mut Vec<ChatEvent>) {
        for block in message.get("content").and_then(Value::as_array).into_iter().flatten() {
            match block.get("type").and_then(Value::as_str) {
                Some("text") => {
                    if let Some(text) =
                        block.get("text").and_then(Value::as_str).filter(|t| !t.is_empty())
                    {
                        out.push(ChatEvent::TextDelta { text: text.to_string() });
                    }
                }
                Some("tool_use") => {
                    self.any_calls = true;
                    let text = |k: &str| {
                        block.get(k).and_then(Value::as_str).unwrap_or_default().to_string()
                    };
                    let input = block.get("input").map(Value::to_string).unwrap_or_default();
                    emit_call(PartialCall { id: text("id"), name: text("name"), input }, out);
                }
                _ => {}
            }
        }
        if let Some(reason) = message.get("stop_reason").and_then(Value::as_str) {
            self.stop = Some(stop_reason(reason));
        }
        if let Some(usage) = message.get("usage") {
            self.read_usage(usage);
        }
        self.complete(out);
    }

    fn complete(&mut self, out: &mut Vec<ChatEvent>) {
        if self.done {
            return;
        }
        // Blocks never stopped (a lenient server): their calls still count.
        for (_, call) in std::mem::take(&mut self.calls) {
            emit_call(call, out);
        }
        if self.usage != Usage::default() {
            out.push(ChatEvent::Usage { usage: self.usage });
        }
        let reason = match self.stop {
            Some(FinishReason::Stop) | None if self.any_calls => FinishReason::ToolCalls,
            Some(reason) => reason,
            None => FinishReason::Stop,
        };
        out.push(ChatEvent::Finished { reason });
        self.done = true;
    }
}

fn emit_call(call: PartialCall, out: &mut Vec<ChatEvent>) {
    let arguments = if call.input.trim().is_empty() { "{}".to_string() } else { call.input };
    out.push(ChatEvent::ToolCall { call: ToolCall { id: call.id, name: call.name, arguments } });
}

fn stop_reason(reason: &str) -> FinishReason {
    match reason {
        "end_turn" | "stop_sequence" => FinishReason::Stop,
        "tool_use" => FinishReason::ToolCalls,
        "max_tokens" | "model_context_window_exceeded" => FinishReason::Length,
        "refusal" => FinishReason::ContentFilter,
        _ => FinishReason::Other,
    }
}

impl crate::reader::Assembler for MessageAssembler {
    fn push(
        &mut self,
        _event: Option<&str>,
        data: &str,
        out: &mut Vec<ChatEvent>,
    ) -> Result<(), ProviderError> {
        let data = data.trim();
        if self.done || data.is_empty() {
            return Ok(());
        }
        let value: Value = crate::http::parse_stream_json(data, "an event")?;
        self.event(&value, out)
    }

    fn finish(&mut self, out: &mut Vec<ChatEvent>) -> Result<(), ProviderError> {
        if self.done {
            return Ok(());
        }
        if self.stop.is_none() {
            return Err(ProviderError::MalformedStream {
                message: "the stream ended before the answer did (no stop_reason and no \
                          message_stop); the connection was probably cut"
                    .into(),
            });
        }
        self.complete(out);
        Ok(())
    }

    fn is_done(&self) -> bool {
        self.done
    }
}

#[cfg(test)]
mod tests;
