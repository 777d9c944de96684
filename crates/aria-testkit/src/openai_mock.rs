//! Loopback mock of the OpenAI chat-completions API.
//!
//! [`MockOpenAi`] plays a script of [`MockTurn`]s, one per `POST /v1/chat/completions`, and
//! records every request body and header so tests can assert on what a client *sent*. Streamed
//! answers use the chunk shapes OpenAI documents: a role chunk, content or tool-call deltas (a
//! call's first chunk carries `index`, `id`, `type` and `function.name` with empty `arguments`;
//! argument fragments follow, several calls interleaved by index), a chunk with `finish_reason`,
//! a usage chunk with `"choices": []` when the request asked for `stream_options.include_usage`,
//! then `data: [DONE]`. Requests without `"stream": true` get a whole `chat.completion` object.
//! `GET /v1/models` lists the configured model ids.
//!
//! The server machinery (thread, script, request log) is shared with the other vendors' mocks:
//! see [`crate::mock`]. Tool-call ids are `call_{hit}_{index}`, `hit` being the 1-based request
//! number. Nothing here listens beyond 127.0.0.1.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::Response;
use axum::routing::{get, post};
use serde_json::{Value, json};

pub use crate::mock::{Mock, MockServer, MockTurn, ScriptEnd};
use crate::mock::{Plan, Shared, Tail, pieces};

/// The `created` timestamp of every mock response (fixed, so transcripts are reproducible).
pub const CREATED: u64 = 1_735_689_600;

/// The OpenAI-compatible mock's builder ([`Mock`] speaking the OpenAI wire format).
pub type MockOpenAi = Mock;

pub(crate) fn routes(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(chat_completions))
        .route("/v1/embeddings", post(crate::embed_mock::openai_embed))
        .route("/v1/models", get(list_models))
        .fallback(no_route)
        .with_state(shared)
}

async fn chat_completions(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let parsed: Result<Value, _> = serde_json::from_slice(&body);
    let Ok(request) = parsed else {
        shared.record(Value::String(String::from_utf8_lossy(&body).into()), &headers);
        return error_response(
            StatusCode::BAD_REQUEST,
            "openai mock: the request body is not JSON",
        );
    };
    let hit = shared.record(request.clone(), &headers);
    let (played, turn) = shared.next_turn();
    let Some(turn) = turn else {
        return error_response(StatusCode::INTERNAL_SERVER_ERROR, &shared.exhausted(played));
    };
    let ctx = Ctx::new(&request, hit, &shared);
    if *turn == MockTurn::Stall && !ctx.stream {
        std::future::pending::<()>().await;
    }
    render(turn, &ctx).into_response(shared.config.chunk_delay)
}

async fn list_models(State(shared): State<Arc<Shared>>) -> Response {
    let data: Vec<Value> = shared
        .config
        .models
        .iter()
        .map(|id| json!({"id": id, "object": "model", "created": CREATED, "owned_by": "aria-mock"}))
        .collect();
    json_response(StatusCode::OK, &json!({"object": "list", "data": data}))
}

async fn no_route(method: Method, uri: Uri) -> Response {
    error_response(StatusCode::NOT_FOUND, &format!("openai mock: no route for {method} {uri}"))
}

fn error_response(status: StatusCode, message: &str) -> Response {
    let body = json!({"error": {"message": message, "type": "invalid_request_error", "param": null, "code": null}});
    json_response(status, &body)
}

fn json_response(status: StatusCode, body: &Value) -> Response {
    Plan::json(status, body.to_string()).into_response(Duration::ZERO)
}

/// What one request is answered with.
struct Ctx {
    stream: bool,
    include_usage: bool,
    model: String,
    id: String,
    hit: usize,
    prompt_bytes: usize,
    shared: Arc<Shared>,
}

impl Ctx {
    fn new(request: &Value, hit: usize, shared: &Arc<Shared>) -> Ctx {
        let messages_len = request.get("messages").map_or(0, |m| m.to_string().len());
        Ctx {
            stream: request.get("stream").and_then(Value::as_bool).unwrap_or(false),
            include_usage: request
                .pointer("/stream_options/include_usage")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            model: request.get("model").and_then(Value::as_str).unwrap_or("mock-model").into(),
            id: format!("chatcmpl-mock{hit:04}"),
            hit,
            prompt_bytes: messages_len,
            shared: Arc::clone(shared),
        }
    }

    fn call_id(&self, index: usize) -> String {
        format!("call_{}_{index}", self.hit)
    }

    fn usage(&self, generated_bytes: usize) -> Value {
        let (prompt, completion) = self.shared.usage(self.prompt_bytes, generated_bytes);
        json!({"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion})
    }

    /// One `chat.completion.chunk` SSE event.
    fn chunk(&self, delta: Value, finish_reason: Option<&str>) -> Bytes {
        let mut chunk = json!({
            "id": self.id, "object": "chat.completion.chunk", "created": CREATED,
            "model": self.model, "system_fingerprint": "fp_mock",
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason}],
        });
        if self.include_usage {
            chunk["usage"] = Value::Null;
        }
        sse(&chunk)
    }
}

fn sse(value: &Value) -> Bytes {
    Bytes::from(format!("data: {value}\n\n"))
}

fn render(turn: &MockTurn, ctx: &Ctx) -> Plan {
    match turn {
        MockTurn::Text(text) => answer(ctx, text, &[]),
        MockTurn::ToolCalls(calls) => answer(ctx, "", calls),
        MockTurn::TextThenTools(text, calls) => answer(ctx, text, calls),
        MockTurn::Error { status, body, retry_after } => Plan::error(*status, body, *retry_after),
        MockTurn::Stall => Plan::stream(
            "text/event-stream",
            vec![ctx.chunk(json!({"role": "assistant", "content": ""}), None)],
            Tail::Hang,
        ),
        MockTurn::Truncated => truncated(ctx),
        MockTurn::Raw(body) => {
            let frames = body.as_bytes().chunks(64).map(Bytes::copy_from_slice).collect();
            Plan::stream("text/event-stream", frames, Tail::End)
        }
    }
}

/// A successful answer: text and/or tool calls, streamed or whole.
fn answer(ctx: &Ctx, text: &str, calls: &[(String, String)]) -> Plan {
    let finish = if calls.is_empty() { "stop" } else { "tool_calls" };
    let generated = text.len() + calls.iter().map(|(_, a)| a.len()).sum::<usize>();
    if !ctx.stream {
        let tool_calls: Vec<Value> = calls
            .iter()
            .enumerate()
            .map(|(i, (name, args))| {
                json!({"id": ctx.call_id(i), "type": "function", "function": {"name": name, "arguments": args}})
            })
            .collect();
        let mut message = json!({"role": "assistant", "content": null, "refusal": null});
        if !text.is_empty() {
            message["content"] = json!(text);
        }
        if !tool_calls.is_empty() {
            message["tool_calls"] = json!(tool_calls);
        }
        let body = json!({
            "id": ctx.id, "object": "chat.completion", "created": CREATED, "model": ctx.model,
            "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": finish}],
            "usage": ctx.usage(generated),
        });
        return Plan::json(StatusCode::OK, body.to_string());
    }
    let role = if text.is_empty() { json!(null) } else { json!("") };
    let mut frames = vec![ctx.chunk(json!({"role": "assistant", "content": role}), None)];
    for piece in pieces(text, 4) {
        frames.push(ctx.chunk(json!({"content": piece}), None));
    }
    frames.extend(tool_call_chunks(ctx, calls));
    frames.push(ctx.chunk(json!({}), Some(finish)));
    if ctx.include_usage {
        frames.push(sse(&json!({
            "id": ctx.id, "object": "chat.completion.chunk", "created": CREATED, "model": ctx.model,
            "system_fingerprint": "fp_mock", "choices": [], "usage": ctx.usage(generated),
        })));
    }
    frames.push(Bytes::from_static(b"data: [DONE]\n\n"));
    Plan::stream("text/event-stream", frames, Tail::End)
}

/// Each call's header chunk, then argument fragments round-robin across calls.
fn tool_call_chunks(ctx: &Ctx, calls: &[(String, String)]) -> Vec<Bytes> {
    let mut frames = Vec::new();
    for (i, (name, _)) in calls.iter().enumerate() {
        let call = json!({"index": i, "id": ctx.call_id(i), "type": "function",
                          "function": {"name": name, "arguments": ""}});
        frames.push(ctx.chunk(json!({"tool_calls": [call]}), None));
    }
    let fragments: Vec<Vec<String>> = calls.iter().map(|(_, args)| pieces(args, 6)).collect();
    let rounds = fragments.iter().map(Vec::len).max().unwrap_or(0);
    for round in 0..rounds {
        for (i, call_fragments) in fragments.iter().enumerate() {
            if let Some(fragment) = call_fragments.get(round) {
                let call = json!({"index": i, "function": {"arguments": fragment}});
                frames.push(ctx.chunk(json!({"tool_calls": [call]}), None));
            }
        }
    }
    frames
}

fn truncated(ctx: &Ctx) -> Plan {
    if !ctx.stream {
        let partial = format!("{{\"id\":\"{}\",\"object\":\"chat.completion\",\"choi", ctx.id);
        return Plan { tail: Tail::Abort, ..Plan::json(StatusCode::OK, partial) };
    }
    let mut frames = vec![
        ctx.chunk(json!({"role": "assistant", "content": ""}), None),
        ctx.chunk(json!({"content": "Hel"}), None),
    ];
    let cut = format!(
        "data: {{\"id\":\"{}\",\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"lo",
        ctx.id
    );
    frames.push(Bytes::from(cut));
    Plan::stream("text/event-stream", frames, Tail::Abort)
}

#[cfg(test)]
mod tests;
