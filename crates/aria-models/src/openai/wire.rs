//! The OpenAI chat-completions wire format: the request body we send and the chunk shapes we
//! read. Unknown fields are ignored everywhere; servers add their own.

use aria_api::{ChatRequest, Message, ProviderError, Role};
use serde::Deserialize;
use serde_json::{Value, json};

/// Which tools the model may (or must) call: OpenAI's `tool_choice`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolChoice {
    /// The model decides (the server's default).
    Auto,
    /// The model must call at least one tool.
    Required,
    /// The model must not call tools, although they are declared.
    None,
}

impl ToolChoice {
    pub fn as_str(self) -> &'static str {
        match self {
            ToolChoice::Auto => "auto",
            ToolChoice::Required => "required",
            ToolChoice::None => "none",
        }
    }

    pub fn parse(text: &str) -> Option<ToolChoice> {
        Some(match text {
            "auto" => ToolChoice::Auto,
            "required" => ToolChoice::Required,
            "none" => ToolChoice::None,
            _ => return None,
        })
    }
}

/// Provider-level options that shape the body.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Options {
    pub tool_choice: Option<ToolChoice>,
    pub parallel_tool_calls: Option<bool>,
}

/// Builds the JSON body of a streaming `POST /chat/completions`.
pub(crate) fn request_body(
    request: &ChatRequest,
    options: &Options,
) -> Result<Value, ProviderError> {
    let messages = request.messages.iter().map(message_json).collect::<Result<Vec<_>, _>>()?;
    let mut body = json!({
        "model": request.model,
        "messages": messages,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.parameters,
                }})
            })
            .collect();
        body["tools"] = Value::Array(tools);
        if let Some(choice) = options.tool_choice {
            body["tool_choice"] = json!(choice.as_str());
        }
        if let Some(parallel) = options.parallel_tool_calls {
            body["parallel_tool_calls"] = json!(parallel);
        }
    }
    if let Some(max_tokens) = request.max_tokens {
        body["max_tokens"] = json!(max_tokens);
    }
    if let Some(temperature) = request.temperature {
        body["temperature"] = json!(f32_as_written(temperature));
    }
    Ok(body)
}

/// `0.2_f32` as the JSON number `0.2`, not `0.20000000298023224`: the shortest decimal that
/// round-trips the `f32` is re-read as an `f64`.
fn f32_as_written(value: f32) -> f64 {
    value.to_string().parse().unwrap_or(f64::from(value))
}

fn message_json(message: &Message) -> Result<Value, ProviderError> {
    Ok(match message.role {
        Role::System | Role::User => {
            json!({"role": message.role.as_str(), "content": message.content})
        }
        Role::Assistant => {
            let mut out = json!({"role": "assistant", "content": message.content});
            if !message.tool_calls.is_empty() {
                if message.content.is_empty() {
                    out["content"] = Value::Null;
                }
                let calls: Vec<Value> = message
                    .tool_calls
                    .iter()
                    .map(|c| {
                        json!({"id": c.id, "type": "function",
                               "function": {"name": c.name, "arguments": c.arguments}})
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
            json!({"role": "tool", "tool_call_id": call_id, "content": message.content})
        }
    })
}

/// One `chat.completion.chunk` (or, for servers that do not stream, one `chat.completion`: its
/// `message` is read like a delta).
#[derive(Debug, Deserialize)]
pub(crate) struct Chunk {
    #[serde(default)]
    pub choices: Option<Vec<Choice>>,
    #[serde(default)]
    pub usage: Option<WireUsage>,
    #[serde(default)]
    pub error: Option<Value>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Choice {
    #[serde(default)]
    pub index: u32,
    #[serde(default, alias = "message")]
    pub delta: Option<Delta>,
    #[serde(default)]
    pub finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Delta {
    #[serde(default)]
    pub content: Option<String>,
    #[serde(default)]
    pub refusal: Option<String>,
    #[serde(default)]
    pub tool_calls: Option<Vec<ToolCallDelta>>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct ToolCallDelta {
    #[serde(default)]
    pub index: Option<u32>,
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub function: Option<FunctionDelta>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct FunctionDelta {
    #[serde(default)]
    pub name: Option<String>,
    /// A string fragment per the spec; some servers send a whole JSON object instead.
    #[serde(default)]
    pub arguments: Option<Value>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
pub(crate) struct WireUsage {
    #[serde(default)]
    pub prompt_tokens: Option<u64>,
    #[serde(default)]
    pub completion_tokens: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use aria_api::{ToolCall, ToolSpec};
    use pretty_assertions::assert_eq;

    fn request(messages: Vec<Message>) -> ChatRequest {
        ChatRequest {
            model: "gpt-x".into(),
            messages,
            tools: vec![],
            max_tokens: None,
            temperature: None,
        }
    }

    #[test]
    fn the_body_has_every_role_in_the_documented_shape() {
        let call =
            ToolCall { id: "call_9".into(), name: "ls".into(), arguments: "{\"p\":1}".into() };
        let mut req = request(vec![
            Message::system("be brief"),
            Message::user("list"),
            Message::assistant("", vec![call]),
            Message::tool_result("call_9", "a b"),
            Message::assistant("done", vec![]),
        ]);
        req.tools = vec![ToolSpec {
            name: "ls".into(),
            description: "List".into(),
            parameters: json!({"type": "object"}),
        }];
        req.max_tokens = Some(64);
        req.temperature = Some(0.2);
        let body = request_body(&req, &Options::default()).unwrap();
        assert_eq!(
            body,
            json!({
                "model": "gpt-x",
                "messages": [
                    {"role": "system", "content": "be brief"},
                    {"role": "user", "content": "list"},
                    {"role": "assistant", "content": null, "tool_calls": [
                        {"id": "call_9", "type": "function", "function": {"name": "ls", "arguments": "{\"p\":1}"}}
                    ]},
                    {"role": "tool", "tool_call_id": "call_9", "content": "a b"},
                    {"role": "assistant", "content": "done"},
                ],
                "tools": [{"type": "function", "function": {
                    "name": "ls", "description": "List", "parameters": {"type": "object"}
                }}],
                "stream": true,
                "stream_options": {"include_usage": true},
                "max_tokens": 64,
                "temperature": 0.2,
            })
        );
    }

    #[test]
    fn optional_fields_are_left_out() {
        let body = request_body(&request(vec![Message::user("hi")]), &Options::default()).unwrap();
        for key in ["tools", "max_tokens", "temperature"] {
            assert!(body.get(key).is_none(), "{key} should be absent: {body}");
        }
    }

    #[test]
    fn tool_choice_and_parallel_calls_are_sent_only_with_tools() {
        let options =
            Options { tool_choice: Some(ToolChoice::Required), parallel_tool_calls: Some(false) };
        let plain = request_body(&request(vec![Message::user("hi")]), &options).unwrap();
        assert!(plain.get("tool_choice").is_none() && plain.get("parallel_tool_calls").is_none());
        let mut req = request(vec![Message::user("hi")]);
        req.tools = vec![ToolSpec {
            name: "ls".into(),
            description: String::new(),
            parameters: json!({"type": "object"}),
        }];
        let body = request_body(&req, &options).unwrap();
        assert_eq!(body["tool_choice"], "required");
        assert_eq!(body["parallel_tool_calls"], false);
        assert_eq!(ToolChoice::parse("none"), Some(ToolChoice::None));
        assert_eq!(ToolChoice::parse("always"), None);
    }

    #[test]
    fn a_tool_result_without_a_call_id_is_refused() {
        let mut orphan = Message::tool_result("x", "out");
        orphan.tool_call_id = None;
        let err = request_body(&request(vec![orphan]), &Options::default()).unwrap_err();
        assert_eq!(err.kind(), "config");
    }
}
