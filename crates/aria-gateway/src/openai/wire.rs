//! OpenAI's wire format: the request as clients send it, turned into `aria_api` messages and
//! tools, and the answers as OpenAI's clients parse them (`chat.completion`, the
//! `chat.completion.chunk` stream, `usage`). Pure functions, no I/O.

use aria_api::{FinishReason, Message, Role, ToolCall, ToolSpec, Usage};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use utoipa::ToSchema;
use utoipa::openapi::schema::{
    ArrayBuilder, ObjectBuilder, OneOfBuilder, Schema, SchemaType, Type,
};

use super::OpenAiError;

/// `POST /v1/chat/completions`: the fields ARIA reads. Other fields OpenAI defines (`top_p`,
/// `user`, `seed`, …) are accepted and ignored.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[schema(example = json!({"model": "aria", "stream": true, "messages": [
    {"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say hello."}]}))]
pub struct CompletionRequest {
    /// `aria` (or absent) for the agent with its tools; `BACKEND/MODEL` (e.g.
    /// `ollama/qwen2.5:7b`) to talk to that model directly; `GET /v1/models` lists them.
    pub model: Option<String>,
    /// OpenAI chat messages. For `aria` only the last `user` message is used: it is the task, and
    /// ARIA keeps the conversation's history itself.
    #[schema(schema_with = messages_schema, required = true)]
    pub messages: Option<Vec<Value>>,
    /// Answer as `text/event-stream` of `chat.completion.chunk`, ended by `data: [DONE]`.
    pub stream: Option<bool>,
    pub stream_options: Option<StreamOptions>,
    /// Client-side tools: the model's calls to them are returned for the client to run
    /// (`finish_reason: "tool_calls"`); ARIA's agent does not run.
    #[schema(value_type = Option<Vec<Object>>)]
    pub tools: Option<Vec<Value>>,
    /// `"none"` sends the request without the tools; other values (`"auto"`, `"required"`, an
    /// object naming a tool) are not enforced.
    #[schema(value_type = Value, required = false)]
    pub tool_choice: Option<Value>,
    #[schema(value_type = Option<u64>, maximum = 4294967295u32)]
    pub max_tokens: Option<u32>,
    #[schema(value_type = Option<u64>, maximum = 4294967295u32)]
    pub max_completion_tokens: Option<u32>,
    pub temperature: Option<f32>,
    /// Only 1 is supported.
    #[schema(minimum = 1, maximum = 1)]
    pub n: Option<u32>,
}

#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct StreamOptions {
    /// Send a last chunk with `usage` and `"choices": []` before `[DONE]`.
    pub include_usage: Option<bool>,
}

/// `messages`: at least one OpenAI chat message (text content only).
fn messages_schema() -> Schema {
    let text_part = ObjectBuilder::new()
        .property(
            "type",
            ObjectBuilder::new().schema_type(Type::String).enum_values(Some(["text", "refusal"])),
        )
        .required("type")
        .property("text", ObjectBuilder::new().schema_type(Type::String))
        .property("refusal", ObjectBuilder::new().schema_type(Type::String));
    let content = OneOfBuilder::new()
        .item(ObjectBuilder::new().schema_type(SchemaType::from_iter([Type::String, Type::Null])))
        .item(ArrayBuilder::new().items(text_part));
    let message = ObjectBuilder::new()
        .property(
            "role",
            ObjectBuilder::new().schema_type(Type::String).enum_values(Some([
                "system",
                "developer",
                "user",
                "assistant",
                "tool",
            ])),
        )
        .required("role")
        .property("content", content)
        .property(
            "tool_calls",
            ObjectBuilder::new()
                .schema_type(SchemaType::from_iter([Type::Array, Type::Null]))
                .description(Some(
                    "an assistant message's calls: `[{id, type, function: {name, arguments}}]`",
                )),
        )
        .property(
            "tool_call_id",
            ObjectBuilder::new()
                .schema_type(Type::String)
                .description(Some("the call a `tool` message answers (required for role `tool`)")),
        );
    ArrayBuilder::new()
        .items(message)
        .min_items(Some(1))
        .description(Some(
            "OpenAI chat messages. For `aria` only the last `user` message is used: it is the \
             task, and ARIA keeps the conversation's history itself.",
        ))
        .build()
        .into()
}

/// One Server-Sent Event of a `text/event-stream` answer, as the OpenAPI document describes it:
/// the run events of `/api/v1` (`event` names them, `data` is their JSON) and OpenAI's
/// `chat.completion.chunk`s (no name; `data` is the chunk's JSON, then `[DONE]`). Never built:
/// the streams are written by axum's `Sse`.
#[derive(Debug, ToSchema)]
#[allow(dead_code)]
pub struct StreamEvent {
    /// `state`, `text`, `tool_call`, `tool_result`, `approval`, `approval_result`, `warning`,
    /// `workflow`, `usage`, `error` or `done` (see docs/http-api.md).
    pub event: Option<String>,
    pub data: String,
}

impl CompletionRequest {
    /// Parses a body, saying what is wrong in OpenAI's terms.
    pub fn parse(body: &[u8]) -> Result<CompletionRequest, OpenAiError> {
        // serde would also read the request from an array of its fields in order.
        if body.trim_ascii_start().first() != Some(&b'{')
            && serde_json::from_slice::<serde::de::IgnoredAny>(body).is_ok()
        {
            return Err(OpenAiError::invalid(
                None,
                "invalid_type",
                "the body must be a JSON object (a chat-completions request)",
            ));
        }
        let request: CompletionRequest = serde_json::from_slice(body).map_err(|e| {
            if e.is_data() {
                OpenAiError::invalid(
                    None,
                    "invalid_type",
                    format!("the body does not have the expected fields: {e}"),
                )
            } else {
                OpenAiError::invalid(
                    None,
                    "invalid_json",
                    format!("the body is not valid JSON: {e}"),
                )
            }
        })?;
        match &request.messages {
            None => Err(OpenAiError::invalid(
                Some("messages"),
                "missing_required_parameter",
                "missing required parameter: 'messages'",
            )),
            Some(m) if m.is_empty() => Err(OpenAiError::invalid(
                Some("messages"),
                "invalid_value",
                "'messages' must hold at least one message",
            )),
            Some(_) if request.n.is_some_and(|n| n != 1) => Err(OpenAiError::invalid(
                Some("n"),
                "invalid_value",
                "only one choice (n = 1) is supported",
            )),
            Some(_) => Ok(request),
        }
    }

    pub fn stream(&self) -> bool {
        self.stream.unwrap_or(false)
    }

    pub fn include_usage(&self) -> bool {
        self.stream_options.as_ref().and_then(|o| o.include_usage).unwrap_or(false)
    }

    /// Whether the request brings tools for the client to run.
    pub fn has_tools(&self) -> bool {
        self.tools.as_ref().is_some_and(|t| !t.is_empty())
    }

    /// The most output tokens asked for (`max_completion_tokens` wins over `max_tokens`).
    pub fn max_tokens(&self) -> Option<u32> {
        self.max_completion_tokens.or(self.max_tokens)
    }

    pub fn raw_messages(&self) -> &[Value] {
        self.messages.as_deref().unwrap_or_default()
    }
}

/// OpenAI messages as `aria_api` messages (text only).
pub fn messages(raw: &[Value]) -> Result<Vec<Message>, OpenAiError> {
    raw.iter().enumerate().map(|(i, m)| message(i, m)).collect()
}

fn message(i: usize, raw: &Value) -> Result<Message, OpenAiError> {
    let at = |field: &str| format!("messages[{i}]{field}");
    let Some(object) = raw.as_object() else {
        return Err(OpenAiError::invalid(
            Some(&at("")),
            "invalid_type",
            format!("messages[{i}] is not an object"),
        ));
    };
    let Some(role) = object.get("role").and_then(Value::as_str) else {
        return Err(OpenAiError::invalid(
            Some(&at(".role")),
            "missing_required_parameter",
            format!("messages[{i}] has no role"),
        ));
    };
    let content = text(object.get("content"), &at(".content"))?;
    Ok(match role {
        "system" | "developer" => Message::system(content),
        "user" => Message::user(content),
        "assistant" => Message::assistant(content, tool_calls(i, object)?),
        "tool" => {
            let Some(id) = object.get("tool_call_id").and_then(Value::as_str) else {
                return Err(OpenAiError::invalid(
                    Some(&at(".tool_call_id")),
                    "missing_required_parameter",
                    format!("messages[{i}] (role tool) has no tool_call_id"),
                ));
            };
            Message::tool_result(id, content)
        }
        other => {
            return Err(OpenAiError::invalid(
                Some(&at(".role")),
                "invalid_value",
                format!(
                    "messages[{i}] has the role `{other}`; use system, developer, user, \
                     assistant or tool"
                ),
            ));
        }
    })
}

/// A message's `content`: a string, `null`, or text parts (joined by newlines).
fn text(content: Option<&Value>, param: &str) -> Result<String, OpenAiError> {
    match content {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Array(parts)) => {
            let mut texts = Vec::with_capacity(parts.len());
            for (j, part) in parts.iter().enumerate() {
                let kind = part.get("type").and_then(Value::as_str).unwrap_or("");
                let text = match kind {
                    "text" => part.get("text").and_then(Value::as_str),
                    "refusal" => part.get("refusal").and_then(Value::as_str),
                    _ => None,
                };
                let Some(text) = text else {
                    return Err(OpenAiError::invalid(
                        Some(&format!("{param}[{j}]")),
                        "unsupported_content",
                        format!(
                            "content parts of type `{kind}` are not supported: ARIA passes text only"
                        ),
                    ));
                };
                texts.push(text);
            }
            Ok(texts.join("\n"))
        }
        Some(_) => Err(OpenAiError::invalid(
            Some(param),
            "invalid_type",
            "content must be a string, null or an array of text parts",
        )),
    }
}

fn tool_calls(i: usize, message: &Map<String, Value>) -> Result<Vec<ToolCall>, OpenAiError> {
    let Some(calls) = message.get("tool_calls").filter(|c| !c.is_null()) else {
        return Ok(Vec::new());
    };
    let Some(calls) = calls.as_array() else {
        return Err(OpenAiError::invalid(
            Some(&format!("messages[{i}].tool_calls")),
            "invalid_type",
            "tool_calls must be an array",
        ));
    };
    calls
        .iter()
        .enumerate()
        .map(|(j, call)| {
            let param = format!("messages[{i}].tool_calls[{j}]");
            let function = call.get("function");
            let id = call.get("id").and_then(Value::as_str);
            let name = function.and_then(|f| f.get("name")).and_then(Value::as_str);
            let (Some(id), Some(name)) = (id, name) else {
                return Err(OpenAiError::invalid(
                    Some(&param),
                    "missing_required_parameter",
                    "a tool call needs an id and function.name",
                ));
            };
            let arguments = match function.and_then(|f| f.get("arguments")) {
                None | Some(Value::Null) => "{}".to_owned(),
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
            };
            Ok(ToolCall { id: id.to_owned(), name: name.to_owned(), arguments })
        })
        .collect()
}

/// The client's tools (`{"type": "function", "function": {name, description, parameters}}`).
pub fn tools(raw: &[Value]) -> Result<Vec<ToolSpec>, OpenAiError> {
    raw.iter()
        .enumerate()
        .map(|(i, tool)| {
            let kind = tool.get("type").and_then(Value::as_str).unwrap_or("function");
            if kind != "function" {
                return Err(OpenAiError::invalid(
                    Some(&format!("tools[{i}].type")),
                    "invalid_value",
                    format!("tools of type `{kind}` are not supported; use `function`"),
                ));
            }
            let function = tool.get("function");
            let Some(name) = function.and_then(|f| f.get("name")).and_then(Value::as_str) else {
                return Err(OpenAiError::invalid(
                    Some(&format!("tools[{i}].function.name")),
                    "missing_required_parameter",
                    format!("tools[{i}] has no function.name"),
                ));
            };
            let description = function
                .and_then(|f| f.get("description"))
                .and_then(Value::as_str)
                .unwrap_or_default();
            let parameters = function
                .and_then(|f| f.get("parameters"))
                .filter(|p| !p.is_null())
                .cloned()
                .unwrap_or_else(|| json!({"type": "object", "properties": {}}));
            Ok(ToolSpec { name: name.to_owned(), description: description.to_owned(), parameters })
        })
        .collect()
}

/// The text of the last `user` message: the agent's task.
pub fn last_user_text(messages: &[Message]) -> Option<&str> {
    messages.iter().rev().find(|m| m.role == Role::User).map(|m| m.content.as_str())
}

/// What every object of one answer repeats.
#[derive(Debug, Clone)]
pub struct Meta {
    pub id: String,
    pub model: String,
    pub created: u64,
    /// Whether the stream ends with a usage chunk (then every chunk has `"usage": null`).
    pub include_usage: bool,
}

impl Meta {
    pub fn new(id: String, model: String, include_usage: bool) -> Meta {
        let created = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        Meta { id, model, created, include_usage }
    }
}

pub fn usage(u: Usage) -> Value {
    json!({
        "prompt_tokens": u.input_tokens,
        "completion_tokens": u.output_tokens,
        "total_tokens": u.total(),
    })
}

pub fn finish_reason(reason: FinishReason) -> &'static str {
    match reason {
        FinishReason::Stop | FinishReason::Other => "stop",
        FinishReason::ToolCalls => "tool_calls",
        FinishReason::Length => "length",
        FinishReason::ContentFilter => "content_filter",
    }
}

fn call_json(call: &ToolCall) -> Value {
    json!({
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments},
    })
}

/// A whole `chat.completion`.
pub fn completion(
    meta: &Meta,
    content: Option<&str>,
    calls: &[ToolCall],
    finish: &str,
    used: Usage,
) -> Value {
    let mut message = json!({"role": "assistant", "content": content, "refusal": null});
    if !calls.is_empty() {
        message["tool_calls"] = calls.iter().map(call_json).collect();
    }
    json!({
        "id": meta.id,
        "object": "chat.completion",
        "created": meta.created,
        "model": meta.model,
        "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": finish}],
        "usage": usage(used),
    })
}

/// One `chat.completion.chunk` with a single choice.
pub fn chunk(meta: &Meta, delta: Value, finish: Option<&str>) -> Value {
    let mut chunk = json!({
        "id": meta.id,
        "object": "chat.completion.chunk",
        "created": meta.created,
        "model": meta.model,
        "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
    });
    if meta.include_usage {
        chunk["usage"] = Value::Null;
    }
    chunk
}

/// The first chunk of an answer.
pub fn role_chunk(meta: &Meta) -> Value {
    chunk(meta, json!({"role": "assistant", "content": ""}), None)
}

pub fn content_chunk(meta: &Meta, text: &str) -> Value {
    chunk(meta, json!({"content": text}), None)
}

/// A tool call as OpenAI streams it: a chunk naming it (with empty `arguments`), then one with
/// the arguments.
pub fn tool_call_chunks(meta: &Meta, index: usize, call: &ToolCall) -> [Value; 2] {
    let head = json!({"index": index, "id": call.id, "type": "function",
                      "function": {"name": call.name, "arguments": ""}});
    let args = json!({"index": index, "function": {"arguments": call.arguments}});
    [
        chunk(meta, json!({"tool_calls": [head]}), None),
        chunk(meta, json!({"tool_calls": [args]}), None),
    ]
}

pub fn finish_chunk(meta: &Meta, finish: &str) -> Value {
    chunk(meta, json!({}), Some(finish))
}

/// The last chunk when `stream_options.include_usage` is set: no choices, the usage.
pub fn usage_chunk(meta: &Meta, used: Usage) -> Value {
    json!({
        "id": meta.id,
        "object": "chat.completion.chunk",
        "created": meta.created,
        "model": meta.model,
        "choices": [],
        "usage": usage(used),
    })
}

/// `GET /v1/models`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ModelList {
    /// Always `list`.
    pub object: &'static str,
    pub data: Vec<ModelEntry>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ModelEntry {
    /// `aria`, or `BACKEND/MODEL`.
    pub id: String,
    /// Always `model`.
    pub object: &'static str,
    pub created: u64,
    pub owned_by: String,
}

#[cfg(test)]
mod tests;
