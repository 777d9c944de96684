//! Ollama's native `/api/chat` body and answer lines.
//!
//! Tool calls go out with their arguments as a JSON *object* (Ollama's shape), and a tool result
//! carries `tool_name`, the name of the call it answers: the native API pairs results with calls
//! by order and name, not by id.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use aria_api::{
    ChatEvent, ChatRequest, FinishReason, Message, ProviderError, Role, ToolCall, Usage,
};
use serde_json::{Map, Value, json};

use crate::http::truncate;

/// Options that shape the body besides the request itself.
#[derive(Debug, Clone, Default)]
pub(crate) struct Options {
    pub num_ctx: Option<u64>,
    pub keep_alive: Option<String>,
}

pub(crate) fn request_body(
    request: &ChatRequest,
    options: &Options,
) -> Result<Value, ProviderError> {
    let mut names: HashMap<&str, &str> = HashMap::new();
    let mut messages = Vec::with_capacity(request.messages.len());
    for message in &request.messages {
        for call in &message.tool_calls {
            names.insert(call.id.as_str(), call.name.as_str());
        }
        messages.push(message_json(message, &names)?);
    }
    let mut body = json!({"model": request.model, "messages": messages, "stream": true});
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}))
            .collect();
        body["tools"] = Value::Array(tools);
    }
    let mut opts = Map::new();
    if let Some(n) = options.num_ctx {
        opts.insert("num_ctx".into(), json!(n));
    }
    if let Some(t) = request.temperature {
        opts.insert(
            "temperature".into(),
            json!(t.to_string().parse::<f64>().unwrap_or(f64::from(t))),
        );
    }
    if let Some(n) = request.max_tokens {
        opts.insert("num_predict".into(), json!(n));
    }
    if !opts.is_empty() {
        body["options"] = Value::Object(opts);
    }
    if let Some(keep_alive) = &options.keep_alive {
        body["keep_alive"] = json!(keep_alive);
    }
    Ok(body)
}

fn message_json(message: &Message, names: &HashMap<&str, &str>) -> Result<Value, ProviderError> {
    Ok(match message.role {
        Role::System | Role::User => {
            json!({"role": message.role.as_str(), "content": message.content})
        }
        Role::Assistant => {
            let mut out = json!({"role": "assistant", "content": message.content});
            if !message.tool_calls.is_empty() {
                let calls: Vec<Value> = message
                    .tool_calls
                    .iter()
                    .map(|c| {
                        let arguments = match serde_json::from_str::<Value>(&c.arguments) {
                            Ok(Value::Object(map)) => Value::Object(map),
                            _ if c.arguments.trim().is_empty() => json!({}),
                            _ => json!({"_raw_arguments": c.arguments}),
                        };
                        json!({"function": {"name": c.name, "arguments": arguments}})
                    })
                    .collect();
                out["tool_calls"] = Value::Array(calls);
            }
            out
        }
        Role::Tool => {
            let Some(call_id) = &message.tool_call_id else {
                return Err(ProviderError::Config {
                    message: "a tool-result message has no tool_call_id, so the model cannot tell \
                              which call it answers; this is a bug in the caller"
                        .into(),
                });
            };
            let mut out = json!({"role": "tool", "content": message.content});
            if let Some(name) = names.get(call_id.as_str()) {
                out["tool_name"] = json!(name);
            }
            out
        }
    })
}

static IDS: AtomicU64 = AtomicU64::new(1);

/// Folds `/api/chat` answer lines into chat events.
#[derive(Debug, Default)]
pub struct LineAssembler {
    any_calls: bool,
    done: bool,
}

impl LineAssembler {
    pub fn new() -> Self {
        Self::default()
    }

    fn line(&mut self, value: &Value, out: &mut Vec<ChatEvent>) -> Result<(), ProviderError> {
        if let Some(error) = value.get("error") {
            let message = error.as_str().map(str::to_string).unwrap_or_else(|| error.to_string());
            return Err(stream_error(&message));
        }
        if let Some(message) = value.get("message") {
            if let Some(text) =
                message.get("content").and_then(Value::as_str).filter(|t| !t.is_empty())
            {
                out.push(ChatEvent::TextDelta { text: text.to_string() });
            }
            for call in message.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
                out.push(ChatEvent::ToolCall { call: tool_call(call)? });
                self.any_calls = true;
            }
        }
        if value.get("done").and_then(Value::as_bool) == Some(true) {
            let n = |key: &str| value.get(key).and_then(Value::as_u64).unwrap_or(0);
            let usage =
                Usage { input_tokens: n("prompt_eval_count"), output_tokens: n("eval_count") };
            if usage != Usage::default() {
                out.push(ChatEvent::Usage { usage });
            }
            let reason = match value.get("done_reason").and_then(Value::as_str) {
                _ if self.any_calls => FinishReason::ToolCalls,
                Some("stop") | None => FinishReason::Stop,
                Some("length") => FinishReason::Length,
                Some(_) => FinishReason::Other,
            };
            out.push(ChatEvent::Finished { reason });
            self.done = true;
        }
        Ok(())
    }
}

fn tool_call(call: &Value) -> Result<ToolCall, ProviderError> {
    let function = call.get("function").unwrap_or(call);
    let Some(name) = function.get("name").and_then(Value::as_str).filter(|n| !n.is_empty()) else {
        return Err(ProviderError::MalformedStream {
            message: format!(
                "a tool call has no function name: {}",
                truncate(&call.to_string(), 200)
            ),
        });
    };
    let arguments = match function.get("arguments") {
        None | Some(Value::Null) => "{}".to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    };
    let id = call.get("id").and_then(Value::as_str).filter(|id| !id.is_empty()).map_or_else(
        || format!("call_ollama_{}", IDS.fetch_add(1, Ordering::Relaxed)),
        str::to_string,
    );
    Ok(ToolCall { id, name: name.to_string(), arguments })
}

fn is_context_length(message: &str) -> bool {
    let m = message.to_lowercase();
    ["context length", "context window", "exceeds the context", "context size", "num_ctx"]
        .iter()
        .any(|n| m.contains(n))
}

/// An `error` line inside a 200 stream: the server failed while answering.
fn stream_error(message: &str) -> ProviderError {
    if is_context_length(message) {
        ProviderError::ContextLengthExceeded { message: message.to_string() }
    } else {
        ProviderError::Http {
            status: 500,
            body: truncate(&format!("error reported inside the stream: {message}"), 500),
        }
    }
}

/// Classifies a non-success HTTP answer (`{"error": "..."}` bodies).
pub(crate) fn from_status(
    status: u16,
    retry_after: Option<std::time::Duration>,
    body: &str,
) -> ProviderError {
    let message = serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| v.get("error").and_then(Value::as_str).map(str::to_string))
        .unwrap_or_else(|| truncate(body.trim(), 500));
    match status {
        401 | 403 => ProviderError::Auth { message },
        429 => ProviderError::RateLimited { retry_after },
        404 => ProviderError::Http {
            status,
            body: format!(
                "{message}; pull it first with `ollama pull <model>` or pick one from `aria models list`"
            ),
        },
        400..=499 if is_context_length(&message) => {
            ProviderError::ContextLengthExceeded { message }
        }
        _ => ProviderError::Http { status, body: truncate(body, 500) },
    }
}

impl crate::reader::Assembler for LineAssembler {
    fn push(
        &mut self,
        _event: Option<&str>,
        data: &str,
        out: &mut Vec<ChatEvent>,
    ) -> Result<(), ProviderError> {
        if self.done {
            return Ok(());
        }
        let value: Value = crate::http::parse_stream_json(data, "a line")?;
        self.line(&value, out)
    }

    fn finish(&mut self, _out: &mut Vec<ChatEvent>) -> Result<(), ProviderError> {
        if self.done {
            return Ok(());
        }
        Err(ProviderError::MalformedStream {
            message: "the stream ended before the answer did (no `\"done\": true` line); the connection was probably cut".into(),
        })
    }

    fn is_done(&self) -> bool {
        self.done
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reader::{Decoder, LineDecoder};
    use aria_api::ToolSpec;
    use pretty_assertions::assert_eq;

    #[test]
    fn the_body_carries_tools_options_keep_alive_and_named_results() {
        let call =
            ToolCall { id: "c1".into(), name: "ls".into(), arguments: "{\"dir\":\".\"}".into() };
        let mut req = ChatRequest {
            model: "llama3.2".into(),
            messages: vec![
                Message::system("s"),
                Message::user("u"),
                Message::assistant("", vec![call]),
                Message::tool_result("c1", "a b"),
            ],
            tools: vec![ToolSpec {
                name: "ls".into(),
                description: "List".into(),
                parameters: json!({"type": "object"}),
            }],
            max_tokens: Some(100),
            temperature: Some(0.2),
        };
        let options = Options { num_ctx: Some(8192), keep_alive: Some("10m".into()) };
        assert_eq!(
            request_body(&req, &options).unwrap(),
            json!({
                "model": "llama3.2", "stream": true, "keep_alive": "10m",
                "options": {"num_ctx": 8192, "temperature": 0.2, "num_predict": 100},
                "tools": [{"type": "function", "function": {"name": "ls", "description": "List", "parameters": {"type": "object"}}}],
                "messages": [
                    {"role": "system", "content": "s"},
                    {"role": "user", "content": "u"},
                    {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "ls", "arguments": {"dir": "."}}}]},
                    {"role": "tool", "content": "a b", "tool_name": "ls"},
                ],
            })
        );
        req.tools.clear();
        req.max_tokens = None;
        req.temperature = None;
        let plain = request_body(&req, &Options::default()).unwrap();
        assert!(
            plain.get("options").is_none()
                && plain.get("keep_alive").is_none()
                && plain.get("tools").is_none()
        );
    }

    const LINES: &str = concat!(
        "{\"model\":\"m\",\"message\":{\"role\":\"assistant\",\"content\":\"Hé\"},\"done\":false}\n",
        "{\"model\":\"m\",\"message\":{\"role\":\"assistant\",\"content\":\"llo\"},\"done\":false}\n",
        "{\"model\":\"m\",\"message\":{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[{\"function\":{\"index\":0,\"name\":\"ls\",\"arguments\":{\"dir\":\".\"}}}]},\"done\":false}\n",
        "{\"model\":\"m\",\"message\":{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[{\"id\":\"call_x\",\"function\":{\"index\":1,\"name\":\"now\",\"arguments\":{}}}]},\"done\":false}\n",
        "{\"model\":\"m\",\"message\":{\"role\":\"assistant\",\"content\":\"\"},\"done\":true,\"done_reason\":\"stop\",\"prompt_eval_count\":26,\"eval_count\":9}\n",
    );

    #[test]
    fn lines_give_text_whole_calls_usage_and_finish_at_every_split() {
        for at in (0..=LINES.len()).filter(|&i| LINES.is_char_boundary(i)) {
            let mut decoder = LineDecoder::new(LineAssembler::new());
            let mut out = Vec::new();
            let (a, b) = LINES.split_at(at);
            decoder.feed(a.as_bytes(), &mut out).unwrap();
            decoder.feed(b.as_bytes(), &mut out).unwrap();
            decoder.end(&mut out).unwrap();
            assert_eq!(out.len(), 6, "{out:?}");
            assert!(
                matches!(&out[2], ChatEvent::ToolCall { call } if call.name == "ls" && call.arguments == "{\"dir\":\".\"}" && call.id.starts_with("call_ollama_"))
            );
            assert!(
                matches!(&out[3], ChatEvent::ToolCall { call } if call.id == "call_x" && call.arguments == "{}")
            );
            assert_eq!(
                out[4],
                ChatEvent::Usage { usage: Usage { input_tokens: 26, output_tokens: 9 } }
            );
            assert_eq!(out[5], ChatEvent::Finished { reason: FinishReason::ToolCalls });
        }
    }

    #[test]
    fn errors_are_classified() {
        let mut a = LineAssembler::new();
        let err = crate::reader::Assembler::push(
            &mut a,
            None,
            "{\"error\":\"an error was encountered while running the model: unexpected EOF\"}",
            &mut Vec::new(),
        )
        .unwrap_err();
        assert!(err.is_retryable() && err.kind() == "http");
        let err = from_status(404, None, "{\"error\":\"model 'x' not found\"}");
        assert!(err.to_string().contains("ollama pull"), "{err}");
        assert_eq!(
            from_status(400, None, "{\"error\":\"input exceeds the context length\"}").kind(),
            "context_length_exceeded"
        );
        assert!(from_status(503, None, "busy").is_retryable());
    }
}
