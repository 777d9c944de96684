//! Tool calls a model wrote as its answer's text instead of making them.
//!
//! Small models sometimes answer with `{"name": "file_read", "arguments": {"path": "…"}}` (in
//! a fence, a `<tool_call>` tag, or after a line of prose), or with a tool result they made up
//! (a `<tool_output id=…>` block). The OpenAI, Anthropic and Ollama clients recognise the
//! commonest shapes while streaming; this is the loop's own check of every backend's final
//! text, whatever produced it. A call to a declared tool with a JSON object for arguments is
//! made as if the model had called it; a call to a tool that is not there, one whose arguments
//! are not an object, or a tool result made up before any tool ran in the turn ends the run
//! failed: nothing ran, and ending `done` would count it a success. (After a tool ran, a model
//! that copies the result's markers around its answer is answering: the markers are taken
//! out, see `output::strip_markers`.)
//!
//! Only text whose *only substantial content* is the call counts: an explanation that quotes a
//! call in the middle of prose is an answer.

use aria_api::ToolCall;
use serde_json::Value;

/// Characters of prose (outside the call, fences and tags) an answer may have and still be a
/// call written as text ("Here is the call:").
const PROSE_ALLOWED: usize = 80;

/// What a final answer turned out to be.
#[derive(Debug, Clone, PartialEq)]
pub enum TextCall {
    /// Calls of declared tools with JSON-object arguments: make them.
    Calls(Vec<ToolCall>),
    /// A call that cannot be made: what it was, for the failure.
    Unusable(String),
    /// A tool-output block as the answer: made up, unless a tool ran in this turn (then the
    /// model copied its markers). What it was, for the failure.
    ToolOutputBlock(String),
}

/// Reads `text` as a call written as text. `declared`: the tools the model may call. `id`:
/// the id of the n-th call found.
pub fn read(text: &str, declared: &[String], id: impl Fn(usize) -> String) -> Option<TextCall> {
    if let Some(marker) = fake_output(text) {
        return Some(TextCall::ToolOutputBlock(format!(
            "a made-up tool result (`{marker}`) instead of calling a tool"
        )));
    }
    let (items, prose) = call_objects(text);
    if items.is_empty() || prose > PROSE_ALLOWED {
        return None;
    }
    let mut calls = Vec::with_capacity(items.len());
    for (i, (name, arguments)) in items.into_iter().enumerate() {
        if !declared.contains(&name) {
            return Some(TextCall::Unusable(format!(
                "a call to `{name}`, which is not a tool ARIA offers"
            )));
        }
        let arguments = match arguments {
            Some(Value::Object(map)) => Value::Object(map).to_string(),
            None | Some(Value::Null) => "{}".to_owned(),
            Some(Value::String(s)) => match serde_json::from_str::<Value>(&s) {
                Ok(object @ Value::Object(_)) => object.to_string(),
                _ => {
                    return Some(TextCall::Unusable(format!(
                        "a call to `{name}` whose arguments are not a JSON object"
                    )));
                }
            },
            Some(_) => {
                return Some(TextCall::Unusable(format!(
                    "a call to `{name}` whose arguments are not a JSON object"
                )));
            }
        };
        calls.push(ToolCall { id: id(i), name, arguments });
    }
    Some(TextCall::Calls(calls))
}

/// Whether `text` is a tool call written as text or a made-up tool output, whatever the tools
/// (for figures over runs recorded before this check existed).
pub fn looks_like_written_call(text: &str) -> bool {
    if fake_output(text).is_some() {
        return true;
    }
    let (items, prose) = call_objects(text);
    !items.is_empty() && prose <= PROSE_ALLOWED
}

/// The tool-output marker `text` carries when a made-up tool result is all it substantially
/// says: a marker opening a line, after little or no prose. (A sentence that mentions such a
/// marker is an answer.)
fn fake_output(text: &str) -> Option<&'static str> {
    const MARKERS: [&str; 4] = ["<<tool_output", "<tool_output", "<tool_response", "<tool_result"];
    let mut before = 0;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if let Some(marker) = MARKERS.iter().find(|m| trimmed.starts_with(**m)) {
            return (before <= PROSE_ALLOWED).then_some(*marker);
        }
        before += substantial(line);
    }
    None
}

/// The call-shaped JSON values in `text` (`{"name", "arguments"}`, `{"function": {…}}`, or an
/// array of them) as (name, arguments), and how many characters of prose are left around them
/// once fences and `<tool_call>` tags are taken out too.
fn call_objects(text: &str) -> (Vec<(String, Option<Value>)>, usize) {
    let mut items = Vec::new();
    let mut rest = String::new();
    let mut at = 0;
    while at < text.len() {
        let Some(offset) = text[at..].find(['{', '[']) else {
            rest.push_str(&text[at..]);
            break;
        };
        let start = at + offset;
        rest.push_str(&text[at..start]);
        let mut values = serde_json::Deserializer::from_str(&text[start..]).into_iter::<Value>();
        match values.next() {
            Some(Ok(value)) => {
                let end = start + values.byte_offset();
                let found = calls_in(&value);
                if found.is_empty() {
                    rest.push_str(&text[start..end]);
                } else {
                    items.extend(found);
                }
                at = end;
            }
            _ => {
                rest.push_str(&text[start..start + 1]);
                at = start + 1;
            }
        }
    }
    for noise in ["```json", "```", "<tool_call>", "</tool_call>"] {
        rest = rest.replace(noise, "");
    }
    (items, substantial(&rest))
}

fn calls_in(value: &Value) -> Vec<(String, Option<Value>)> {
    match value {
        Value::Array(list) => {
            let calls: Vec<_> = list.iter().filter_map(call_in).collect();
            if calls.len() == list.len() { calls } else { Vec::new() }
        }
        other => call_in(other).into_iter().collect(),
    }
}

/// One call object: a tool-like name (letters, digits, `_`, `-`, `.`) and an `arguments` or
/// `parameters` key, or the OpenAI `{"function": {"name", "arguments"}}` shape.
fn call_in(value: &Value) -> Option<(String, Option<Value>)> {
    let object = value.as_object()?;
    let (inner, wrapped) = match object.get("function") {
        Some(f @ Value::Object(_)) => (f.as_object()?, true),
        _ => (object, false),
    };
    let name = inner.get("name")?.as_str()?.trim();
    let tool_like = !name.is_empty()
        && name.len() <= 64
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    let arguments = inner.get("arguments").or_else(|| inner.get("parameters"));
    (tool_like && (arguments.is_some() || wrapped)).then(|| (name.to_owned(), arguments.cloned()))
}

/// Characters of `text` that are not whitespace.
fn substantial(text: &str) -> usize {
    text.chars().filter(|c| !c.is_whitespace()).count()
}

#[cfg(test)]
mod tests;
