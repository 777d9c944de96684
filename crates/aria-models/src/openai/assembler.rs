//! Turning OpenAI `chat.completion.chunk` payloads into [`ChatEvent`]s.
//!
//! [`ChunkAssembler`] is pure: it sees one SSE `data:` payload at a time (already split by
//! [`crate::SseParser`]) and never touches the network. Text is emitted as it arrives; tool calls
//! are accumulated by `index` (their fragments may be split anywhere and interleaved between
//! calls) and emitted whole when `finish_reason` arrives; usage and `Finished` come last.

use std::sync::atomic::{AtomicU64, Ordering};

use aria_api::{ChatEvent, FinishReason, ProviderError, ToolCall, Usage};
use serde_json::Value;

use super::errors;
use super::wire::{Chunk, Delta, ToolCallDelta, WireUsage};

/// Numbers the ids made up for tool calls a server sent without one (`call_1`, `call_2`, ...),
/// unique within the process so results can never be paired with the wrong call.
static GENERATED_IDS: AtomicU64 = AtomicU64::new(1);

#[derive(Debug, Default)]
struct PartialCall {
    index: Option<u32>,
    id: String,
    name: String,
    arguments: String,
}

/// Folds a stream of chunk payloads into events. Feed it with [`ChunkAssembler::push`]; call
/// [`ChunkAssembler::finish`] when the byte stream ends.
#[derive(Debug, Default)]
pub struct ChunkAssembler {
    calls: Vec<PartialCall>,
    any_calls: bool,
    usage: Option<WireUsage>,
    finish: Option<FinishReason>,
    done: bool,
}

impl ChunkAssembler {
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the answer is complete (`[DONE]` seen, or the end accepted); later input is
    /// ignored.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Feeds one `data:` payload, appending the events it completes to `out`.
    pub fn push(&mut self, data: &str, out: &mut Vec<ChatEvent>) -> Result<(), ProviderError> {
        let data = data.trim();
        if self.done || data.is_empty() {
            return Ok(());
        }
        if data == "[DONE]" {
            return self.complete(out);
        }
        let chunk: Chunk = crate::http::parse_stream_json(data, "a chunk")?;
        if let Some(error) = &chunk.error {
            return Err(errors::from_stream_error(error));
        }
        if let Some(usage) = chunk.usage {
            // Kept, not summed: some servers repeat running totals in every chunk.
            self.usage = Some(usage);
        }
        for choice in chunk.choices.unwrap_or_default() {
            if choice.index != 0 {
                continue; // ARIA asks for one choice; extra ones are never used
            }
            if let Some(delta) = choice.delta {
                self.absorb(delta, out);
            }
            if let Some(reason) = choice.finish_reason {
                self.finish = Some(finish_reason(&reason));
                self.emit_calls(out)?;
            }
        }
        Ok(())
    }

    /// The byte stream ended. Accepted when a `finish_reason` arrived (some servers close
    /// without `[DONE]`); otherwise the answer was cut off and this is a
    /// [`ProviderError::MalformedStream`].
    pub fn finish(&mut self, out: &mut Vec<ChatEvent>) -> Result<(), ProviderError> {
        if self.done {
            return Ok(());
        }
        if self.finish.is_none() {
            return Err(ProviderError::MalformedStream {
                message:
                    "the stream ended before the answer did (no finish_reason and no [DONE]); \
                          the connection was probably cut"
                        .into(),
            });
        }
        self.complete(out)
    }

    fn absorb(&mut self, delta: Delta, out: &mut Vec<ChatEvent>) {
        for text in [delta.content, delta.refusal].into_iter().flatten() {
            if !text.is_empty() {
                out.push(ChatEvent::TextDelta { text });
            }
        }
        for call in delta.tool_calls.unwrap_or_default() {
            self.absorb_call(call);
        }
    }

    fn absorb_call(&mut self, delta: ToolCallDelta) {
        let id = delta.id.filter(|id| !id.is_empty());
        let (name, arguments) = match delta.function {
            Some(f) => (f.name.filter(|n| !n.is_empty()), f.arguments),
            None => (None, None),
        };
        let slot = self.slot(delta.index, id.as_deref(), name.is_some());
        let call = &mut self.calls[slot];
        if let Some(id) = id {
            call.id = id;
        }
        if let Some(name) = name {
            // Most servers send the name once; some repeat it whole in every chunk.
            if call.name != name {
                call.name.push_str(&name);
            }
        }
        match arguments {
            Some(Value::String(fragment)) => call.arguments.push_str(&fragment),
            Some(Value::Null) | None => {}
            Some(whole) => call.arguments.push_str(&whole.to_string()),
        }
    }

    /// Which partial call a delta belongs to. By `index` when there is one; a different `id` at
    /// an index already in use (or, without an index, a new id or a second name) starts a call.
    fn slot(&mut self, index: Option<u32>, id: Option<&str>, has_name: bool) -> usize {
        let other_id =
            |call: &PartialCall| id.is_some_and(|id| !call.id.is_empty() && call.id != id);
        let existing = match index {
            Some(index) => self.calls.iter().rposition(|c| c.index == Some(index)),
            None => self.calls.len().checked_sub(1),
        };
        match existing {
            Some(pos) if other_id(&self.calls[pos]) => {}
            Some(pos)
                if index.is_none()
                    && id.is_none()
                    && has_name
                    && !self.calls[pos].name.is_empty() => {}
            Some(pos) => return pos,
            None => {}
        }
        self.calls.push(PartialCall { index, ..PartialCall::default() });
        self.any_calls = true;
        self.calls.len() - 1
    }

    fn emit_calls(&mut self, out: &mut Vec<ChatEvent>) -> Result<(), ProviderError> {
        for call in self.calls.drain(..) {
            if call.name.is_empty() {
                return Err(ProviderError::MalformedStream {
                    message: format!(
                        "a tool call (index {}) ended without a function name",
                        call.index.map_or_else(|| "none".to_string(), |i| i.to_string())
                    ),
                });
            }
            let id = if call.id.is_empty() {
                format!("call_{}", GENERATED_IDS.fetch_add(1, Ordering::Relaxed))
            } else {
                call.id
            };
            // A call to a tool without parameters is often sent with no arguments at all.
            let arguments =
                if call.arguments.trim().is_empty() { "{}".to_string() } else { call.arguments };
            out.push(ChatEvent::ToolCall { call: ToolCall { id, name: call.name, arguments } });
        }
        Ok(())
    }

    fn complete(&mut self, out: &mut Vec<ChatEvent>) -> Result<(), ProviderError> {
        self.emit_calls(out)?;
        if let Some(usage) = self.usage.take() {
            let usage = Usage {
                input_tokens: usage.prompt_tokens.unwrap_or(0),
                output_tokens: usage.completion_tokens.unwrap_or(0),
            };
            out.push(ChatEvent::Usage { usage });
        }
        let reason = match self.finish {
            // Some servers say "stop" after tool calls; the calls are what matters.
            Some(FinishReason::Stop) | None if self.any_calls => FinishReason::ToolCalls,
            Some(reason) => reason,
            None => FinishReason::Stop,
        };
        out.push(ChatEvent::Finished { reason });
        self.done = true;
        Ok(())
    }
}

impl crate::reader::Assembler for ChunkAssembler {
    fn push(
        &mut self,
        _event: Option<&str>,
        data: &str,
        out: &mut Vec<ChatEvent>,
    ) -> Result<(), ProviderError> {
        ChunkAssembler::push(self, data, out)
    }
    fn finish(&mut self, out: &mut Vec<ChatEvent>) -> Result<(), ProviderError> {
        ChunkAssembler::finish(self, out)
    }
    fn is_done(&self) -> bool {
        ChunkAssembler::is_done(self)
    }
}

fn finish_reason(reason: &str) -> FinishReason {
    match reason {
        "stop" | "eos" | "end_turn" => FinishReason::Stop,
        "tool_calls" | "function_call" => FinishReason::ToolCalls,
        "length" | "max_tokens" => FinishReason::Length,
        "content_filter" => FinishReason::ContentFilter,
        _ => FinishReason::Other,
    }
}

#[cfg(test)]
mod tests;
