//! The OpenAI-compatible endpoints: `POST /v1/chat/completions` and `GET /v1/models`, so any
//! OpenAI client (the official SDKs, editors, scripts) can talk to ARIA.
//!
//! What a request reaches depends on its `model` and on whether it brings `tools`:
//! - `aria` (or no model): the agent, with ARIA's tools ([`agent`]). The task is the last `user`
//!   message; the other messages are ignored, because ARIA keeps each conversation's history
//!   itself. Each request is a new conversation unless `X-Aria-Conversation: ID` names one. The
//!   run has nobody to ask, so calls that need approval are denied and the answer says which.
//!   The answer's `x-aria-session-id` and `x-aria-conversation-id` headers name the run.
//! - `aria:AGENT`: the agent profile AGENT (`GET /api/v1/agents`), with its tools, prompt,
//!   models and mode; a new conversation is bound to it, and a conversation bound to another
//!   agent is refused. An unknown AGENT is 404 `model_not_found`.
//! - `BACKEND/MODEL`: the request goes to that model as it is, without ARIA's tools ([`proxy`]).
//! - a request with `tools`: the client's tools, so the agent does not run; the messages and
//!   tools go to the model (the agent's own for `aria`) and its tool calls come back for the
//!   client to run (`finish_reason: "tool_calls"`).
//!
//! Errors have OpenAI's shape, `{"error": {"message", "type", "param", "code"}}` (plus ARIA's
//! `hint`), including the ones the security layer gives before a handler runs: [`error_shape`]
//! rewrites those for paths under `/v1/`. A client that goes away cancels its run.

mod agent;
mod proxy;
pub mod wire;

use std::sync::Arc;

use aria_api::Provider;
use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::{Value, json};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::Gateway;
use crate::error::ApiError;
use wire::{CompletionRequest, ModelEntry, ModelList};

/// The header that continues a conversation instead of starting one.
pub const CONVERSATION_HEADER: &str = "x-aria-conversation";
/// Response headers naming the run an `aria` request started.
pub const SESSION_ID_HEADER: &str = "x-aria-session-id";
pub const CONVERSATION_ID_HEADER: &str = "x-aria-conversation-id";

/// The model name of the agent.
pub const AGENT_MODEL: &str = "aria";

pub fn routes() -> OpenApiRouter<Arc<Gateway>> {
    OpenApiRouter::new().routes(routes!(chat_completions)).routes(routes!(models))
}

/// An error in OpenAI's shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenAiError {
    pub status: StatusCode,
    /// OpenAI's `type`: `invalid_request_error`, `authentication_error`, `permission_error`,
    /// `rate_limit_error`, `server_error`.
    pub kind: &'static str,
    pub code: String,
    pub param: Option<Box<str>>,
    pub message: String,
    pub hint: String,
    /// `x-should-retry`: OpenAI's SDKs obey it. A run that failed is not retried on its own (it
    /// may have changed things); `None` leaves it to the client.
    pub retry: Option<bool>,
    /// Headers naming the run (session, conversation), when there was one.
    pub run: Option<Box<(String, String)>>,
}

impl OpenAiError {
    pub fn new(
        status: StatusCode,
        code: &str,
        message: impl Into<String>,
        hint: impl Into<String>,
    ) -> OpenAiError {
        OpenAiError {
            status,
            kind: kind_for(status),
            code: code.to_owned(),
            param: None,
            message: message.into(),
            hint: hint.into(),
            retry: None,
            run: None,
        }
    }

    /// A 400 about the request.
    pub fn invalid(param: Option<&str>, code: &str, message: impl Into<String>) -> OpenAiError {
        OpenAiError {
            param: param.map(Into::into),
            ..OpenAiError::new(
                StatusCode::BAD_REQUEST,
                code,
                message,
                "see the OpenAI chat-completions reference; ARIA's differences are in \
                 docs/http-api.md (OpenAI-compatible)",
            )
        }
    }

    pub fn model_not_found(message: impl Into<String>) -> OpenAiError {
        OpenAiError {
            param: Some("model".into()),
            ..OpenAiError::new(
                StatusCode::NOT_FOUND,
                "model_not_found",
                message,
                "use the model `aria` (the agent with its tools) or BACKEND/MODEL to talk to a \
                 model directly (backends: ollama, openai, anthropic); GET /v1/models lists them",
            )
        }
    }

    fn body(&self) -> Value {
        json!(OpenAiErrorBody {
            error: OpenAiErrorDetail {
                message: self.message.clone(),
                kind: self.kind,
                param: self.param.as_deref().map(str::to_owned),
                code: self.code.clone(),
                hint: self.hint.clone(),
            }
        })
    }
}

/// The body of every error answer under `/v1/`: OpenAI's shape, plus ARIA's `hint`.
#[derive(Debug, Serialize, ToSchema)]
pub struct OpenAiErrorBody {
    pub error: OpenAiErrorDetail,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct OpenAiErrorDetail {
    pub message: String,
    /// `invalid_request_error`, `authentication_error`, `permission_error`, `rate_limit_error`
    /// or `server_error`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The request field at fault, when there is one (e.g. `messages`, `model`).
    pub param: Option<String>,
    /// E.g. `invalid_json`, `missing_required_parameter`, `invalid_api_key`, `model_not_found`,
    /// `rate_limit_exceeded`, `run_failed`.
    pub code: String,
    /// What to do about it (ARIA's addition).
    pub hint: String,
}

/// OpenAI's error `type` for a status.
fn kind_for(status: StatusCode) -> &'static str {
    match status.as_u16() {
        401 => "authentication_error",
        403 => "permission_error",
        429 => "rate_limit_error",
        500.. => "server_error",
        _ => "invalid_request_error",
    }
}

/// OpenAI's names for the codes ARIA's own errors use, where OpenAI has one.
fn openai_code(aria_code: &str) -> &str {
    match aria_code {
        "unauthorized" => "invalid_api_key",
        "rate_limited" => "rate_limit_exceeded",
        other => other,
    }
}

impl From<ApiError> for OpenAiError {
    fn from(e: ApiError) -> OpenAiError {
        OpenAiError::new(e.status, openai_code(e.code), e.message, e.hint)
    }
}

impl From<aria_store::StoreError> for OpenAiError {
    fn from(e: aria_store::StoreError) -> OpenAiError {
        ApiError::from(e).into()
    }
}

impl IntoResponse for OpenAiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, Json(self.body())).into_response();
        let headers = response.headers_mut();
        if let Some(retry) = self.retry {
            headers.insert("x-should-retry", HeaderValue::from_static(bool_str(retry)));
        }
        if let Some(run) = &self.run {
            name_run(headers, &run.0, &run.1);
        }
        response
    }
}

fn bool_str(b: bool) -> &'static str {
    if b { "true" } else { "false" }
}

/// Adds the headers naming a run.
fn name_run(headers: &mut HeaderMap, session_id: &str, conversation_id: &str) {
    for (name, value) in
        [(SESSION_ID_HEADER, session_id), (CONVERSATION_ID_HEADER, conversation_id)]
    {
        if let Ok(value) = HeaderValue::from_str(value) {
            headers.insert(name, value);
        }
    }
}

/// Chat completions, OpenAI-compatible. `model: "aria"` (or none) runs the agent on the last
/// `user` message, in a new conversation unless `X-Aria-Conversation: ID` names one; calls that
/// need approval are denied (nobody can be asked) and the answer says so. `BACKEND/MODEL`
/// passes the messages to that model; a request with `tools` gets the model's tool calls back.
/// With `stream: true` the answer is `text/event-stream` of `chat.completion.chunk`s ending in
/// `data: [DONE]`.
#[utoipa::path(post, path = "/v1/chat/completions", tag = "openai",
    request_body = CompletionRequest,
    params(("X-Aria-Conversation" = Option<String>, Header,
            description = "continue this conversation (model `aria` only)")),
    responses(
        (status = 200, description = "a chat.completion, or with `stream: true` a \
            text/event-stream of chat.completion.chunk ended by `data: [DONE]`; an `aria` answer \
            names its run in the x-aria-session-id and x-aria-conversation-id headers",
            content((Object = "application/json"), (wire::StreamEvent = "text/event-stream"))),
        (status = 400, body = OpenAiErrorBody, description = "bad JSON, no messages, no user \
            message with text (`aria`), content parts that are not text"),
        (status = 404, body = OpenAiErrorBody,
            description = "`model_not_found`, or `conversation_not_found`"),
        (status = "4XX", body = OpenAiErrorBody,
            description = "`upstream_rejected`: a `BACKEND/MODEL` refused the request (its status)"),
        (status = 500, body = OpenAiErrorBody,
            description = "the run failed (not retried: it may have acted)"),
        (status = 502, body = OpenAiErrorBody,
            description = "the backend of a `BACKEND/MODEL` failed or is unreachable"),
        (status = 503, body = OpenAiErrorBody, description = "the daemon is stopping"),
        (status = 504, body = OpenAiErrorBody, description = "the backend timed out")))]
async fn chat_completions(
    State(gw): State<Arc<Gateway>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    match complete(gw, &headers, body).await {
        Ok(response) => response,
        Err(e) => e.into_response(),
    }
}

async fn complete(
    gw: Arc<Gateway>,
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, OpenAiError> {
    gw.accepting()?;
    let body = body.map_err(|e| {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            OpenAiError::from(crate::extract::payload_too_large())
        } else {
            OpenAiError::invalid(None, "invalid_body", format!("the body could not be read: {e}"))
        }
    })?;
    let request = CompletionRequest::parse(&body)?;
    let model = request.model.as_deref().unwrap_or("").trim().to_owned();
    match (Target::parse(&model)?, request.has_tools()) {
        (Target::Agent, false) => agent::respond(gw, headers, request, None).await,
        (Target::Named(name), false) => {
            let known = gw.services.agents.as_ref().map(|book| book.get(&name));
            if !matches!(known, Some(Ok(_))) {
                return Err(OpenAiError::model_not_found(format!(
                    "there is no agent `{name}` (GET /api/v1/agents lists them; `aria` is the \
                     daemon's own)"
                )));
            }
            agent::respond(gw, headers, request, Some(name)).await
        }
        (Target::Named(name), true) => Err(OpenAiError::invalid(
            Some("tools"),
            "invalid_value",
            format!(
                "`aria:{name}` runs the agent with ARIA's tools; a request that brings its own \
                 tools names `aria` or BACKEND/MODEL"
            ),
        )),
        (Target::Agent, true) => {
            let Some((provider, name)) = gw.services.provider.clone() else {
                return Err(OpenAiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "model_unavailable",
                    "the agent's model is not available to this endpoint",
                    "name a model as BACKEND/MODEL instead",
                ));
            };
            proxy::respond(&gw, provider, name, AGENT_MODEL.to_owned(), request).await
        }
        (Target::Backend { backend, model: name }, _) => {
            let provider = resolve(&gw, &backend, &name)?;
            proxy::respond(&gw, provider, name, model, request).await
        }
    }
}

/// What a `model` names.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    Agent,
    /// `aria:NAME`: an agent profile.
    Named(String),
    Backend {
        backend: String,
        model: String,
    },
}

impl Target {
    fn parse(model: &str) -> Result<Target, OpenAiError> {
        if model.is_empty() || model == AGENT_MODEL {
            return Ok(Target::Agent);
        }
        if let Some(name) = model.strip_prefix("aria:") {
            if name.is_empty() {
                return Err(OpenAiError::model_not_found(
                    "`aria:` names no agent: use aria:NAME (GET /api/v1/agents) or `aria`",
                ));
            }
            return Ok(Target::Named(name.to_owned()));
        }
        match model.split_once('/') {
            Some((backend, name)) if !backend.is_empty() && !name.is_empty() => {
                Ok(Target::Backend { backend: backend.to_owned(), model: name.to_owned() })
            }
            _ => Err(OpenAiError::model_not_found(format!("there is no model `{model}` here"))),
        }
    }
}

/// The agent's own model as `(backend, model)`: the configured provider's name when the
/// configuration says it, else the provider's own name.
fn own_model(gw: &Gateway) -> Option<(String, String, Arc<dyn Provider>)> {
    let (provider, model) = gw.services.provider.clone()?;
    let backend = gw
        .services
        .config
        .pointer("/provider/name")
        .and_then(Value::as_str)
        .map_or_else(|| provider.name().to_owned(), str::to_owned);
    Some((backend, model, provider))
}

/// The provider for `BACKEND/MODEL`: the agent's own when it is that one, else the
/// pass-through's.
fn resolve(gw: &Gateway, backend: &str, model: &str) -> Result<Arc<dyn Provider>, OpenAiError> {
    if let Some((own_backend, own_name, provider)) = own_model(gw)
        && own_backend == backend
        && own_name == model
    {
        return Ok(provider);
    }
    let Some(pass_through) = &gw.services.pass_through else {
        return Err(OpenAiError::model_not_found(format!(
            "there is no model `{backend}/{model}` here: this daemon passes requests only to its \
             own model"
        )));
    };
    pass_through(backend, model).map_err(|why| {
        OpenAiError::model_not_found(format!("there is no model `{backend}/{model}`: {why}"))
    })
}

/// The models a request may name: `aria`, the agent's own model and its fallback routes, as
/// `BACKEND/MODEL` (those the pass-through can reach).
#[utoipa::path(get, path = "/v1/models", tag = "openai",
    responses((status = 200, body = ModelList)))]
async fn models(State(gw): State<Arc<Gateway>>) -> Json<ModelList> {
    let created = wire::Meta::new(String::new(), String::new(), false).created;
    let entry = |id: String, owned_by: &str| ModelEntry {
        id,
        object: "model",
        created,
        owned_by: owned_by.to_owned(),
    };
    let mut data = vec![entry(AGENT_MODEL.to_owned(), "aria")];
    let agents = gw.services.agents.as_ref().and_then(|book| book.list().ok()).unwrap_or_default();
    for name in agents.iter().filter_map(|a| a["name"].as_str()).filter(|n| *n != "default") {
        data.push(entry(format!("{AGENT_MODEL}:{name}"), "aria"));
    }
    let own = own_model(&gw);
    let mut candidates: Vec<(String, String)> = Vec::new();
    if let Some((backend, model, _)) = &own {
        candidates.push((backend.clone(), model.clone()));
    }
    let fallbacks = gw.services.config.pointer("/router/fallback").and_then(Value::as_array);
    for route in fallbacks.into_iter().flatten() {
        if let (Some(b), Some(m)) = (
            route.get("backend").and_then(Value::as_str),
            route.get("model").and_then(Value::as_str),
        ) {
            candidates.push((b.to_owned(), m.to_owned()));
        }
    }
    let mut seen = std::collections::HashSet::new();
    for (backend, model) in candidates {
        if !seen.insert((backend.clone(), model.clone())) {
            continue;
        }
        let is_own = own.as_ref().is_some_and(|(b, m, _)| *b == backend && *m == model);
        let reachable = is_own
            || gw.services.pass_through.as_ref().is_some_and(|pt| pt(&backend, &model).is_ok());
        if reachable {
            data.push(entry(format!("{backend}/{model}"), &backend));
        }
    }
    Json(ModelList { object: "list", data })
}

/// Gives error answers under `/v1/` OpenAI's shape, including those of the security layer and
/// the fallbacks (401, 403, 404, 405, 413, 415, 429), which speak ARIA's
/// `{"error": {code, message, hint}}`. Sits outside the security middleware.
pub async fn error_shape(request: Request, next: Next) -> Response {
    if !request.uri().path().starts_with("/v1/") {
        return next.run(request).await;
    }
    let response = next.run(request).await;
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !(status.is_client_error() || status.is_server_error()) || !is_json {
        return response;
    }
    let (parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, 64 * 1024).await else {
        return OpenAiError::new(status, "internal", "the error answer could not be read", "")
            .into_response();
    };
    let parsed: Option<Value> = serde_json::from_slice(&bytes).ok();
    let aria_error = parsed
        .as_ref()
        .and_then(|v| v.get("error"))
        .filter(|e| e.get("type").is_none() && e.get("code").is_some_and(Value::is_string));
    let Some(error) = aria_error else {
        return Response::from_parts(parts, axum::body::Body::from(bytes));
    };
    let field = |name: &str| error.get(name).and_then(Value::as_str).unwrap_or("").to_owned();
    let code = field("code");
    let mut rewritten =
        OpenAiError::new(status, openai_code(&code), field("message"), field("hint"))
            .into_response();
    // Keep what the layer said besides the body (e.g. `Retry-After`, cookies).
    for (name, value) in &parts.headers {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            rewritten.headers_mut().insert(name.clone(), value.clone());
        }
    }
    rewritten
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn models_name_the_agent_a_backend_or_nothing() {
        assert_eq!(Target::parse("").unwrap(), Target::Agent);
        assert_eq!(Target::parse("aria").unwrap(), Target::Agent);
        assert_eq!(
            Target::parse("ollama/qwen2.5:7b").unwrap(),
            Target::Backend { backend: "ollama".into(), model: "qwen2.5:7b".into() }
        );
        assert_eq!(
            Target::parse("openai/meta-llama/llama-3").unwrap(),
            Target::Backend { backend: "openai".into(), model: "meta-llama/llama-3".into() }
        );
        assert_eq!(Target::parse("aria:coder").unwrap(), Target::Named("coder".into()));
        let unnamed = Target::parse("aria:").unwrap_err();
        assert_eq!(
            (unnamed.status, unnamed.code.as_str()),
            (StatusCode::NOT_FOUND, "model_not_found")
        );
        for bad in ["gpt-4o", "/m", "openai/"] {
            let e = Target::parse(bad).unwrap_err();
            assert_eq!((e.code.as_str(), e.param.as_deref()), ("model_not_found", Some("model")));
        }
    }

    #[test]
    fn aria_errors_become_openai_errors() {
        let e: OpenAiError = ApiError::unauthorized("the API token is not valid").into();
        assert_eq!(
            e.body(),
            json!({"error": {
                "message": "the API token is not valid",
                "type": "authentication_error",
                "param": null,
                "code": "invalid_api_key",
                "hint": ApiError::unauthorized("").hint,
            }})
        );
        let e: OpenAiError = ApiError::unavailable("stopping").into();
        assert_eq!(
            (e.status.as_u16(), e.kind, e.code.as_str()),
            (503, "server_error", "unavailable")
        );
    }
}
