//! The Anthropic Messages request body: `system` apart from the turns, content blocks, tools
//! with an `input_schema`, and tool results sent back as `tool_result` blocks in the next user
//! turn, paired with their `tool_use` by id.

use aria_api::{ChatRequest, Message, ProviderError, Role};
use serde_json::{Map, Value, json};

/// Builds the JSON body of a streaming `POST /v1/messages`.
pub(crate) fn request_body(
    request: &ChatRequest,
    default_max_tokens: u32,
) -> Result<Value, ProviderError> {
    let system: Vec<&str> = request
        .messages
        .iter()
        .filter(|m| m.role == Role::System && !m.content.is_empty())
        .map(|m| m.content.as_str())
        .collect();
    let mut turns: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for message in request.messages.iter().filter(|m| m.role != Role::System) {
        let (role, blocks) = blocks(message)?;
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            // Consecutive turns of one role are one turn (tool results of several calls, or
            // results followed by the user's words).
            Some((last, existing)) if *last == role => existing.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    }
    let messages: Vec<Value> = turns
        .into_iter()
        .map(|(role, blocks)| json!({"role": role, "content": simplify(blocks)}))
        .collect();
    let mut body = json!({
        "model": request.model,
        "max_tokens": request.max_tokens.unwrap_or(default_max_tokens),
        "messages": messages,
        "stream": true,
    });
    if !system.is_empty() {
        body["system"] = json!(system.join("\n\n"));
    }
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
            .collect();
        body["tools"] = Value::Array(tools);
    }
    if let Some(temperature) = request.temperature {
        body["temperature"] =
            json!(temperature.to_string().parse::<f64>().unwrap_or(f64::from(temperature)));
    }
    Ok(body)
}

/// A single text block is sent as a plain string, as the API allows.
fn simplify(blocks: Vec<Value>) -> Value {
    match blocks.as_slice() {
        [only] if only["type"] == "text" => only["text"].clone(),
        _ => Value::Array(blocks),
    }
}

fn text_block(text: &str) -> Option<Value> {
    // The API refuses empty text blocks.
    (!text.is_empty()).then(|| json!({"type": "text", "text": text}))
}

fn blocks(message: &Message) -> Result<(&'static str, Vec<Value>), ProviderError> {
    Ok(match message.role {
        Role::System | Role::User => ("user", text_block(&message.content).into_iter().collect()),
        Role::Assistant => {
            let mut blocks: Vec<Value> = text_block(&message.content).into_iter().collect();
            for call in &message.tool_calls {
                blocks.push(json!({"type": "tool_use", "id": call.id, "name": call.name,
                                   "input": input_object(&call.arguments)}));
            }
            ("assistant", blocks)
        }
        Role::Tool => {
            let Some(call_id) = &message.tool_call_id else {
                return Err(ProviderError::Config {
                    message: "a tool-result message has no tool_call_id, so the model cannot tell \
                              which call it answers; this is a bug in the caller"
                        .into(),
                });
            };
            let block =
                json!({"type": "tool_result", "tool_use_id": call_id, "content": message.content});
            ("user", vec![block])
        }
    })
}

/// `tool_use.input` must be an object. Arguments that are not one (a model's invalid JSON, kept
/// so it can see its mistake) are sent as `{"_raw_arguments": text}`.
fn input_object(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(map)) => Value::Object(map),
        _ if arguments.trim().is_empty() => Value::Object(Map::new()),
        _ => json!({"_raw_arguments": arguments}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aria_api::{ToolCall, ToolSpec};
    use pretty_assertions::assert_eq;

    fn request(messages: Vec<Message>) -> ChatRequest {
        ChatRequest {
            model: "claude-x".into(),
            messages,
            tools: vec![],
            max_tokens: None,
            temperature: None,
        }
    }

    #[test]
    fn system_goes_apart_and_tool_results_are_paired_in_one_user_turn() {
        let calls = vec![
            ToolCall {
                id: "toolu_1".into(),
                name: "ls".into(),
                arguments: "{\"dir\":\".\"}".into(),
            },
            ToolCall { id: "toolu_2".into(), name: "now".into(), arguments: String::new() },
        ];
        let mut req = request(vec![
            Message::system("be brief"),
            Message::user("what is here?"),
            Message::assistant("Looking.", calls),
            Message::tool_result("toolu_1", "a.txt"),
            Message::tool_result("toolu_2", "12:00"),
            Message::user("and?"),
        ]);
        req.tools = vec![ToolSpec {
            name: "ls".into(),
            description: "List".into(),
            parameters: json!({"type": "object"}),
        }];
        req.max_tokens = Some(256);
        req.temperature = Some(0.2);
        assert_eq!(
            request_body(&req, 4096).unwrap(),
            json!({
                "model": "claude-x",
                "max_tokens": 256,
                "system": "be brief",
                "stream": true,
                "temperature": 0.2,
                "tools": [{"name": "ls", "description": "List", "input_schema": {"type": "object"}}],
                "messages": [
                    {"role": "user", "content": "what is here?"},
                    {"role": "assistant", "content": [
                        {"type": "text", "text": "Looking."},
                        {"type": "tool_use", "id": "toolu_1", "name": "ls", "input": {"dir": "."}},
                        {"type": "tool_use", "id": "toolu_2", "name": "now", "input": {}},
                    ]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.txt"},
                        {"type": "tool_result", "tool_use_id": "toolu_2", "content": "12:00"},
                        {"type": "text", "text": "and?"},
                    ]},
                ],
            })
        );
    }

    #[test]
    fn max_tokens_is_always_sent_and_empty_text_is_left_out() {
        let call = ToolCall { id: "t".into(), name: "x".into(), arguments: "not json".into() };
        let body = request_body(
            &request(vec![Message::user("hi"), Message::assistant("", vec![call])]),
            1024,
        )
        .unwrap();
        assert_eq!(body["max_tokens"], 1024);
        assert!(body.get("system").is_none() && body.get("tools").is_none());
        assert_eq!(
            body["messages"][1]["content"],
            json!([{"type": "tool_use", "id": "t", "name": "x", "input": {"_raw_arguments": "not json"}}])
        );
    }

    #[test]
    fn a_tool_result_without_a_call_id_is_refused() {
        let mut orphan = Message::tool_result("x", "out");
        orphan.tool_call_id = None;
        assert_eq!(request_body(&request(vec![orphan]), 10).unwrap_err().kind(), "config");
    }
}
