//! Loopback mock of the Anthropic Messages API (`POST /v1/messages`, `GET /v1/models`).
//!
//! It checks what the real API checks before answering: an `x-api-key` header (else 401
//! `authentication_error`), an `anthropic-version` header and a `max_tokens` field (else 400
//! `invalid_request_error`). Streamed answers are the documented event sequence: `message_start`
//! (with input-token usage), a `ping`, then per content block `content_block_start`,
//! `content_block_delta` (`text_delta` for text in four-character pieces; `input_json_delta`
//! for tool input in six-character pieces) and `content_block_stop`, then `message_delta` with
//! `stop_reason` (`end_turn` or `tool_use`) and output-token usage, then `message_stop`.
//! Requests without `"stream": true` get a whole `message` object.
//!
//! Tool-use ids are `toolu_mock{hit}_{index}`. The server machinery is [`crate::mock`].

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::Response;
use axum::routing::{get, post};
use serde_json::{Value, json};

pub use crate::mock::{Mock, MockServer, MockTurn, ScriptEnd};
use crate::mock::{Plan, Shared, Tail, Wire, pieces};

/// The model id a message answers with when the request names none.
const DEFAULT_MODEL: &str = "claude-mock";

/// Builds Anthropic mocks.
#[derive(Debug, Clone, Copy)]
pub struct MockAnthropic;

impl MockAnthropic {
    /// A builder for a mock speaking the Messages API.
    #[allow(clippy::new_ret_no_self)] // a namespace for the vendor's constructors
    pub fn new(script: Vec<MockTurn>) -> Mock {
        Mock::with_wire(Wire::Anthropic, script)
    }

    /// Starts a server playing `script`, failing (HTTP 500) once it runs out.
    pub async fn start(script: Vec<MockTurn>) -> MockServer {
        MockAnthropic::new(script).serve()
    }

    /// Starts a server from non-async code (e.g. a test that spawns the `aria` binary).
    pub fn serve_blocking(script: Vec<MockTurn>) -> MockServer {
        MockAnthropic::new(script).serve()
    }

    /// An Anthropic-shaped error body: `{"type":"error","error":{"type","message"}}`.
    pub fn error(status: u16, kind: &str, message: &str) -> MockTurn {
        let body = json!({"type": "error", "error": {"type": kind, "message": message}});
        MockTurn::Error { status, body: body.to_string(), retry_after: None }
    }
}

pub(crate) fn routes(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/v1/messages", post(messages))
        .route("/v1/models", get(list_models))
        .fallback(no_route)
        .with_state(shared)
}

fn error_plan(status: StatusCode, kind: &str, message: &str) -> Plan {
    let body = json!({"type": "error", "error": {"type": kind, "message": message}});
    Plan::json(status, body.to_string())
}

async fn messages(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let delay = shared.config.chunk_delay;
    let parsed: Result<Value, _> = serde_json::from_slice(&body);
    let Ok(request) = parsed else {
        shared.record(Value::String(String::from_utf8_lossy(&body).into()), &headers);
        return error_plan(StatusCode::BAD_REQUEST, "invalid_request_error", "body is not JSON")
            .into_response(delay);
    };
    let hit = shared.record(request.clone(), &headers);
    if !headers.contains_key("x-api-key") {
        let message = "x-api-key header is required";
        return error_plan(StatusCode::UNAUTHORIZED, "authentication_error", message)
            .into_response(delay);
    }
    if !headers.contains_key("anthropic-version") {
        let message = "anthropic-version: header is required";
        return error_plan(StatusCode::BAD_REQUEST, "invalid_request_error", message)
            .into_response(delay);
    }
    if request.get("max_tokens").and_then(Value::as_u64).is_none() {
        let message = "max_tokens: Field required";
        return error_plan(StatusCode::BAD_REQUEST, "invalid_request_error", message)
            .into_response(delay);
    }
    let (played, turn) = shared.next_turn();
    let Some(turn) = turn else {
        return error_plan(
            StatusCode::INTERNAL_SERVER_ERROR,
            "api_error",
            &shared.exhausted(played),
        )
        .into_response(delay);
    };
    let ctx = Ctx::new(&request, hit, &shared);
    if *turn == MockTurn::Stall && !ctx.stream {
        std::future::pending::<()>().await;
    }
    render(turn, &ctx).into_response(delay)
}

async fn list_models(State(shared): State<Arc<Shared>>) -> Response {
    let data: Vec<Value> = shared
        .config
        .models
        .iter()
        .map(|id| {
            json!({"type": "model", "id": id, "display_name": id, "created_at": "2025-01-01T00:00:00Z"})
        })
        .collect();
    let first = data.first().map(|m| m["id"].clone()).unwrap_or(Value::Null);
    let last = data.last().map(|m| m["id"].clone()).unwrap_or(Value::Null);
    let body = json!({"data": data, "has_more": false, "first_id": first, "last_id": last});
    Plan::json(StatusCode::OK, body.to_string()).into_response(std::time::Duration::ZERO)
}

async fn no_route(method: Method, uri: Uri) -> Response {
    error_plan(StatusCode::NOT_FOUND, "not_found_error", &format!("no route for {method} {uri}"))
        .into_response(std::time::Duration::ZERO)
}

struct Ctx {
    stream: bool,
    model: String,
    id: String,
    hit: usize,
    prompt_bytes: usize,
    shared: Arc<Shared>,
}

impl Ctx {
    fn new(request: &Value, hit: usize, shared: &Arc<Shared>) -> Ctx {
        let prompt_bytes = request.get("messages").map_or(0, |m| m.to_string().len())
            + request.get("system").map_or(0, |s| s.to_string().len());
        Ctx {
            stream: request.get("stream").and_then(Value::as_bool).unwrap_or(false),
            model: request.get("model").and_then(Value::as_str).unwrap_or(DEFAULT_MODEL).into(),
            id: format!("msg_mock{hit:04}"),
            hit,
            prompt_bytes,
            shared: Arc::clone(shared),
        }
    }

    fn tool_id(&self, index: usize) -> String {
        format!("toolu_mock{}_{index}", self.hit)
    }
}

fn event(name: &str, data: &Value) -> Bytes {
    Bytes::from(format!("event: {name}\ndata: {data}\n\n"))
}

fn message_start(ctx: &Ctx, input_tokens: u64) -> Bytes {
    event(
        "message_start",
        &json!({"type": "message_start", "message": {
            "id": ctx.id, "type": "message", "role": "assistant", "content": [], "model": ctx.model,
            "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": input_tokens, "output_tokens": 1},
        }}),
    )
}

fn render(turn: &MockTurn, ctx: &Ctx) -> Plan {
    match turn {
        MockTurn::Text(text) => answer(ctx, text, &[]),
        MockTurn::ToolCalls(calls) => answer(ctx, "", calls),
        MockTurn::TextThenTools(text, calls) => answer(ctx, text, calls),
        MockTurn::Error { status, body, retry_after } => Plan::error(*status, body, *retry_after),
        MockTurn::Stall => {
            Plan::stream("text/event-stream", vec![message_start(ctx, 1)], Tail::Hang)
        }
        MockTurn::Truncated => {
            let frames = vec![
                message_start(ctx, 1),
                event(
                    "content_block_start",
                    &json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
                ),
                event(
                    "content_block_delta",
                    &json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hel"}}),
                ),
                Bytes::from(
                    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"lo",
                ),
            ];
            Plan::stream("text/event-stream", frames, Tail::Abort)
        }
        MockTurn::Raw(body) => {
            let frames = body.as_bytes().chunks(64).map(Bytes::copy_from_slice).collect();
            Plan::stream("text/event-stream", frames, Tail::End)
        }
    }
}

fn answer(ctx: &Ctx, text: &str, calls: &[(String, String)]) -> Plan {
    let stop_reason = if calls.is_empty() { "end_turn" } else { "tool_use" };
    let generated = text.len() + calls.iter().map(|(_, a)| a.len()).sum::<usize>();
    let (input_tokens, output_tokens) = ctx.shared.usage(ctx.prompt_bytes, generated);
    if !ctx.stream {
        let mut content = Vec::new();
        if !text.is_empty() {
            content.push(json!({"type": "text", "text": text}));
        }
        for (i, (name, args)) in calls.iter().enumerate() {
            let input: Value = serde_json::from_str(args).unwrap_or_else(|_| json!({}));
            content.push(
                json!({"type": "tool_use", "id": ctx.tool_id(i), "name": name, "input": input}),
            );
        }
        let body = json!({
            "id": ctx.id, "type": "message", "role": "assistant", "model": ctx.model,
            "content": content, "stop_reason": stop_reason, "stop_sequence": null,
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
        });
        return Plan::json(StatusCode::OK, body.to_string());
    }
    let mut frames =
        vec![message_start(ctx, input_tokens), event("ping", &json!({"type": "ping"}))];
    let mut index = 0;
    if !text.is_empty() {
        frames.push(event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}),
        ));
        for piece in pieces(text, 4) {
            frames.push(event(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": piece}}),
            ));
        }
        frames.push(event(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    }
    for (i, (name, args)) in calls.iter().enumerate() {
        frames.push(event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index, "content_block": {
                "type": "tool_use", "id": ctx.tool_id(i), "name": name, "input": {},
            }}),
        ));
        for piece in pieces(args, 6) {
            frames.push(event(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": piece}}),
            ));
        }
        frames.push(event(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    }
    frames.push(event(
        "message_delta",
        &json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null},
                "usage": {"output_tokens": output_tokens}}),
    ));
    frames.push(event("message_stop", &json!({"type": "message_stop"})));
    Plan::stream("text/event-stream", frames, Tail::End)
}
