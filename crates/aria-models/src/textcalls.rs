//! Tool calls that models write as text instead of using the API's tool-call channel.
//!
//! Local models served through a plain chat template often answer a tool request with the call
//! in their *content*: Qwen and Hermes-style `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`
//! blocks, or a bare JSON object (sometimes in a ```` ```json ```` fence) and nothing else. Shown
//! raw, that text reaches the user and nothing runs. [`TextCalls`] recognises both and turns them
//! into real [`ToolCall`]s, while ordinary text still streams as it arrives:
//!
//! - Text is passed on at once, except a tail that could be the start of `<tool_call>`, which
//!   is held until the next piece shows what it is.
//! - Inside a `<tool_call>` block nothing is passed on; at `</tool_call>` (or the end of the
//!   answer, since models often stop without closing the tag) the block is parsed. A block
//!   that is not a call is given back as the text it was, so nothing is lost.
//! - An answer that starts with `{`, `[{` or a code fence is held whole and, at the
//!   end, becomes calls only if it is a call object (or an array of them) naming a *declared*
//!   tool; otherwise it is passed on unchanged. A JSON answer is therefore never mistaken for
//!   a call to a tool that does not exist.
//!
//! A call is `{"name", "arguments"}` (also `"parameters"`, or the OpenAI shape
//! `{"function": {"name", "arguments"}}`), `arguments` an object or a JSON string. When calls
//! were recognised, a `stop` finish reason becomes `tool_calls`.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};

use aria_api::{ChatEvent, ChatStream, FinishReason, ToolCall, ToolSpec};
use futures::StreamExt;
use serde_json::Value;

const OPEN: &str = "<tool_call>";
const CLOSE: &str = "</tool_call>";

static IDS: AtomicU64 = AtomicU64::new(1);

fn next_id() -> String {
    format!("call_text_{}", IDS.fetch_add(1, Ordering::Relaxed))
}

#[derive(Debug, PartialEq, Eq)]
enum Mode {
    /// Nothing seen yet: the answer may still turn out to be bare JSON.
    Start,
    Text,
    InTag,
    /// The answer began with `{` or a fence: held whole until the end.
    Json,
}

/// Recognises tool calls written as text. Pure: events in, events out.
#[derive(Debug)]
pub struct TextCalls {
    tools: Vec<String>,
    mode: Mode,
    buf: String,
    found: bool,
}

impl TextCalls {
    /// `tools`: the names declared in the request.
    pub fn new(tools: Vec<String>) -> Self {
        TextCalls { tools, mode: Mode::Start, buf: String::new(), found: false }
    }

    /// Feeds one event from the provider, appending what should be passed on.
    pub fn push(&mut self, event: ChatEvent, out: &mut Vec<ChatEvent>) {
        match event {
            ChatEvent::TextDelta { text } => self.text(&text, out),
            ChatEvent::Finished { reason } => {
                self.flush(out);
                let reason = if self.found && reason == FinishReason::Stop {
                    FinishReason::ToolCalls
                } else {
                    reason
                };
                out.push(ChatEvent::Finished { reason });
            }
            other => {
                if matches!(other, ChatEvent::Usage { .. }) {
                    self.flush(out);
                }
                out.push(other);
            }
        }
    }

    /// The stream ended (with or without `Finished`): gives back whatever is held.
    pub fn flush(&mut self, out: &mut Vec<ChatEvent>) {
        let buf = std::mem::take(&mut self.buf);
        match self.mode {
            Mode::Start | Mode::Text => emit_text(buf, out),
            Mode::InTag => match parse_calls(&buf, None) {
                Some(calls) => self.emit_calls(calls, out),
                None => emit_text(format!("{OPEN}{buf}"), out),
            },
            Mode::Json => match parse_calls(strip_fence(&buf), Some(&self.tools)) {
                Some(calls) => self.emit_calls(calls, out),
                None => emit_text(buf, out),
            },
        }
        self.mode = Mode::Text;
    }

    fn text(&mut self, text: &str, out: &mut Vec<ChatEvent>) {
        self.buf.push_str(text);
        loop {
            match self.mode {
                Mode::Json => return,
                Mode::Start => {
                    let trimmed = self.buf.trim_start();
                    if trimmed.is_empty() {
                        return;
                    }
                    let array = trimmed.strip_prefix('[').map(str::trim_start);
                    if array.is_some_and(str::is_empty) {
                        return; // `[` alone: an array of calls, or a link?
                    }
                    let json = trimmed.starts_with('{')
                        || trimmed.starts_with("```")
                        || array.is_some_and(|a| a.starts_with('{'));
                    self.mode = if json { Mode::Json } else { Mode::Text };
                }
                Mode::Text => {
                    if let Some(at) = self.buf.find(OPEN) {
                        let rest = self.buf.split_off(at);
                        emit_text(std::mem::take(&mut self.buf), out);
                        self.buf = rest[OPEN.len()..].to_string();
                        self.mode = Mode::InTag;
                        continue;
                    }
                    let keep = held_tail(&self.buf);
                    let rest = self.buf.split_off(self.buf.len() - keep);
                    emit_text(std::mem::replace(&mut self.buf, rest), out);
                    return;
                }
                Mode::InTag => {
                    let Some(at) = self.buf.find(CLOSE) else { return };
                    let rest = self.buf[at + CLOSE.len()..].to_string();
                    let block = &self.buf[..at];
                    match parse_calls(block, None) {
                        Some(calls) => self.emit_calls(calls, out),
                        None => emit_text(format!("{OPEN}{block}{CLOSE}"), out),
                    }
                    self.buf = rest;
                    self.mode = Mode::Text;
                }
            }
        }
    }

    fn emit_calls(&mut self, calls: Vec<ToolCall>, out: &mut Vec<ChatEvent>) {
        self.found |= !calls.is_empty();
        out.extend(calls.into_iter().map(|call| ChatEvent::ToolCall { call }));
    }
}

fn emit_text(text: String, out: &mut Vec<ChatEvent>) {
    if !text.is_empty() {
        out.push(ChatEvent::TextDelta { text });
    }
}

/// How many bytes at the end of `text` could be the start of `<tool_call>`.
fn held_tail(text: &str) -> usize {
    (1..OPEN.len()).rev().find(|&n| text.ends_with(&OPEN[..n])).unwrap_or(0)
}

fn strip_fence(text: &str) -> &str {
    let t = text.trim();
    let Some(inner) = t.strip_prefix("```") else { return t };
    let inner = inner.strip_prefix("json").unwrap_or(inner);
    inner.strip_suffix("```").unwrap_or(inner).trim()
}

/// Parses a call object or an array of them. With `known`, every name must be declared.
fn parse_calls(text: &str, known: Option<&[String]>) -> Option<Vec<ToolCall>> {
    let value = lenient_json(text)?;
    let items = match value {
        Value::Array(items) if !items.is_empty() => items,
        Value::Object(_) => vec![value],
        _ => return None,
    };
    let calls: Vec<ToolCall> = items.iter().map(parse_call).collect::<Option<_>>()?;
    if let Some(known) = known
        && !calls.iter().all(|c| known.contains(&c.name))
    {
        return None;
    }
    Some(calls)
}

/// One JSON value, forgiving the two slips small models make when they copy a chat template:
/// the whole object in doubled braces (`{{"name": …}}`, from templates that escape braces) and
/// extra closing braces after it. Anything else after the value is not forgiven.
fn lenient_json(text: &str) -> Option<Value> {
    let text = text.trim();
    if let Ok(value) = serde_json::from_str(text) {
        return Some(value);
    }
    let inner = match text.strip_prefix("{{").and_then(|t| t.strip_suffix("}}")) {
        Some(inner) => format!("{{{inner}}}"),
        None => text.to_owned(),
    };
    let mut values = serde_json::Deserializer::from_str(&inner).into_iter::<Value>();
    let value = values.next()?.ok()?;
    let rest = &inner[values.byte_offset()..];
    rest.chars().all(|c| c == '}' || c.is_whitespace()).then_some(value)
}

fn parse_call(item: &Value) -> Option<ToolCall> {
    let item = item.get("function").filter(|f| f.is_object()).unwrap_or(item);
    let name = item.get("name")?.as_str()?.trim();
    if name.is_empty() {
        return None;
    }
    let arguments = match item.get("arguments").or_else(|| item.get("parameters")) {
        None | Some(Value::Null) => "{}".to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(args @ Value::Object(_)) => args.to_string(),
        Some(_) => return None,
    };
    Some(ToolCall { id: next_id(), name: name.to_string(), arguments })
}

/// Wraps a provider's stream so text-written calls become real ones. A request without tools
/// is passed through untouched.
pub fn recognise(stream: ChatStream, tools: &[ToolSpec]) -> ChatStream {
    if tools.is_empty() {
        return stream;
    }
    let filter = TextCalls::new(tools.iter().map(|t| t.name.clone()).collect());
    let state = (stream, filter, VecDeque::new(), false);
    Box::pin(futures::stream::unfold(
        state,
        |(mut inner, mut filter, mut queue, mut ended)| async move {
            loop {
                if let Some(item) = queue.pop_front() {
                    return Some((item, (inner, filter, queue, ended)));
                }
                if ended {
                    return None;
                }
                let mut out = Vec::new();
                match inner.next().await {
                    Some(Ok(event)) => filter.push(event, &mut out),
                    Some(Err(err)) => {
                        filter.flush(&mut out);
                        queue.extend(out.drain(..).map(Ok));
                        queue.push_back(Err(err));
                        ended = true;
                        continue;
                    }
                    None => {
                        filter.flush(&mut out);
                        ended = true;
                    }
                }
                queue.extend(out.into_iter().map(Ok));
            }
        },
    ))
}

#[cfg(test)]
mod tests;
