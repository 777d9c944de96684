//! Conversations and the messages that start runs in them.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::Gateway;
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::extract::{ApiJson, ApiJsonOrEmpty, ApiPath, ApiQuery, Paging};
use crate::openai::wire::StreamEvent;
use crate::runs::{Channel, Reply, Start};

pub fn routes() -> OpenApiRouter<Arc<Gateway>> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(get_one, rename, delete))
        .routes(routes!(send))
}

/// A conversation without its messages.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Conversation {
    pub id: String,
    /// Empty until the first message names it.
    pub title: String,
    pub created_at: String,
    pub updated_at: String,
    pub message_count: u64,
    /// Whether a run is in flight in it now.
    pub running: bool,
    /// The agent it is bound to (shown on one conversation and when made; `default` or
    /// absent: the daemon's own).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}

impl Conversation {
    fn from(gw: &Gateway, c: aria_store::ConversationSummary) -> Conversation {
        let running = gw.runs.in_conversation(&c.id).is_some();
        Conversation {
            id: c.id,
            title: c.title,
            created_at: c.created_at,
            updated_at: c.updated_at,
            message_count: c.message_count,
            running,
            agent: None,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ConversationPage {
    pub items: Vec<Conversation>,
    pub limit: usize,
    pub offset: usize,
    pub total: u64,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// Keep conversations whose title or messages contain this text.
    pub q: Option<String>,
    /// How many items (1–500, default 50; more is read as 500).
    #[param(value_type = Option<u64>, maximum = 4294967295u32)]
    pub limit: Option<u32>,
    /// How many to skip (default 0).
    #[param(value_type = Option<u64>, maximum = 4294967295u32)]
    pub offset: Option<u32>,
}

/// Conversations, most recently active first.
#[utoipa::path(get, path = "/api/v1/conversations", tag = "conversations", params(ListQuery),
    responses((status = 200, body = ConversationPage), (status = 400, body = ErrorBody)))]
async fn list(
    State(gw): State<Arc<Gateway>>,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> ApiResult<Json<ConversationPage>> {
    let paging = Paging { limit: query.limit, offset: query.offset };
    let page = gw.store.conversation_page(query.q.as_deref(), paging.limit(), paging.offset())?;
    Ok(Json(ConversationPage {
        items: page.items.into_iter().map(|c| Conversation::from(&gw, c)).collect(),
        limit: paging.limit(),
        offset: paging.offset(),
        total: page.total,
    }))
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewConversation {
    /// A title; without one the first message names the conversation.
    #[serde(default)]
    pub title: Option<String>,
    /// The agent it runs as (`GET /api/v1/agents`); without one, the daemon's own. A
    /// conversation keeps its agent.
    #[serde(default)]
    #[schema(pattern = "^[a-z0-9_-]{1,32}$")]
    pub agent: Option<String>,
}

/// Starts an empty conversation (the body may be `{}`).
#[utoipa::path(post, path = "/api/v1/conversations", tag = "conversations",
    request_body = Option<NewConversation>,
    responses((status = 201, body = Conversation), (status = 400, body = ErrorBody)))]
async fn create(
    State(gw): State<Arc<Gateway>>,
    ApiJsonOrEmpty(body): ApiJsonOrEmpty<NewConversation>,
) -> ApiResult<Response> {
    if let Some(name) = &body.agent {
        let hint = "list the agents with GET /api/v1/agents";
        let book = gw.services.agents.as_ref().ok_or_else(|| {
            ApiError::bad_request("agent: this daemon runs only its own agent", hint)
        })?;
        book.get(name).map_err(|e| ApiError::bad_request(format!("agent: {e}"), hint))?;
    }
    let created = gw.store.create_conversation(body.title.as_deref().unwrap_or(""))?;
    if let Some(name) = &body.agent {
        gw.store.set_conversation_agent(&created.id, name)?;
    }
    let mut shown = Conversation::from(&gw, created);
    shown.agent = body.agent;
    Ok((StatusCode::CREATED, Json(shown)).into_response())
}

/// One message as the API shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct MessageBody {
    pub id: i64,
    /// `system`, `user`, `assistant` or `tool`.
    pub role: String,
    pub content: String,
    /// The calls an assistant message asked for: `[{id, name, arguments}]`.
    #[schema(value_type = Vec<Object>)]
    pub tool_calls: Vec<Value>,
    pub tool_call_id: Option<String>,
    pub session_id: Option<String>,
    pub model: Option<String>,
    pub created_at: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ConversationDetail {
    #[serde(flatten)]
    pub conversation: Conversation,
    pub messages: Vec<MessageBody>,
    /// The runs in this conversation (sessions), oldest first.
    #[schema(value_type = Vec<Object>)]
    pub sessions: Vec<Value>,
}

fn unknown(id: &str) -> ApiError {
    ApiError::not_found(
        format!("no conversation {id}"),
        "list them with GET /api/v1/conversations, or start one with POST /api/v1/conversations",
    )
}

/// A conversation with its messages and runs.
#[utoipa::path(get, path = "/api/v1/conversations/{id}", tag = "conversations",
    params(("id" = String, Path, description = "conversation id")),
    responses((status = 200, body = ConversationDetail), (status = 404, body = ErrorBody)))]
async fn get_one(
    State(gw): State<Arc<Gateway>>,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<ConversationDetail>> {
    let Some((summary, messages)) = gw.store.get_conversation(&id)? else {
        return Err(unknown(&id));
    };
    let messages = messages
        .into_iter()
        .map(|m| {
            let content = match m.message.role {
                aria_api::Role::Tool => aria_core::strip_markers(
                    aria_core::untrusted_body(&m.message.content).unwrap_or(&m.message.content),
                )
                .into_owned(),
                _ => m.message.content.clone(),
            };
            MessageBody {
                id: m.id,
                role: m.message.role.as_str().to_owned(),
                content,
                tool_calls: m
                    .message
                    .tool_calls
                    .iter()
                    .map(|c| serde_json::json!({"id": c.id, "name": c.name, "arguments": c.arguments}))
                    .collect(),
                tool_call_id: m.message.tool_call_id,
                session_id: m.session_id,
                model: m.model,
                created_at: m.created_at,
            }
        })
        .collect();
    let sessions = gw
        .store
        .sessions_in_conversation(&id)?
        .into_iter()
        .map(|s| crate::routes::runs::session_json(&gw, &s))
        .collect();
    Ok(Json(ConversationDetail {
        conversation: Conversation {
            agent: gw.store.conversation_agent(&summary.id)?,
            ..Conversation::from(&gw, summary)
        },
        messages,
        sessions,
    }))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Rename {
    /// At most 200 characters.
    #[schema(max_length = 200)]
    pub title: String,
}

/// Renames a conversation.
#[utoipa::path(patch, path = "/api/v1/conversations/{id}", tag = "conversations",
    params(("id" = String, Path, description = "conversation id")), request_body = Rename,
    responses((status = 200, body = Conversation), (status = 400, body = ErrorBody),
              (status = 404, body = ErrorBody)))]
async fn rename(
    State(gw): State<Arc<Gateway>>,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<Rename>,
) -> ApiResult<Json<Conversation>> {
    if body.title.chars().count() > 200 {
        return Err(ApiError::bad_request("the title is longer than 200 characters", "shorten it"));
    }
    let renamed = gw.store.rename_conversation(&id, &body.title)?.ok_or_else(|| unknown(&id))?;
    Ok(Json(Conversation::from(&gw, renamed)))
}

/// Deletes a conversation with its messages and runs (the audit log keeps its records).
#[utoipa::path(delete, path = "/api/v1/conversations/{id}", tag = "conversations",
    params(("id" = String, Path, description = "conversation id")),
    responses((status = 204, description = "deleted"), (status = 404, body = ErrorBody),
              (status = 409, body = ErrorBody)))]
async fn delete(
    State(gw): State<Arc<Gateway>>,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<StatusCode> {
    if gw.runs.busy(&id) {
        return Err(ApiError::conflict(
            format!("a run in conversation {id} is in flight"),
            "cancel it (POST /api/v1/runs/{session_id}/cancel) or wait for it to end",
        ));
    }
    if !gw.store.delete_conversation(&id)? {
        return Err(unknown(&id));
    }
    gw.store.audit_append(aria_api::AuditEvent::new(
        None,
        "user",
        "conversation.delete",
        serde_json::json!({ "conversation_id": id }),
    ))?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"content": "What is in notes.txt?"}))]
pub struct SendMessage {
    /// What the user says (not blank).
    #[schema(
        min_length = 1,
        pattern = r"[^\t\n\x0B\f\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]"
    )]
    pub content: String,
    /// Answer as Server-Sent Events (`text/event-stream`) instead of one JSON object.
    #[serde(default)]
    pub stream: bool,
}

/// Sends a message: runs the agent on it. With `stream: true` the answer is Server-Sent
/// Events (`state`, `text`, `tool_call`, `tool_result`, `approval`, `warning`, `usage`,
/// `error`, `done`); otherwise the whole reply once the run ends.
#[utoipa::path(post, path = "/api/v1/conversations/{id}/messages", tag = "conversations",
    params(("id" = String, Path, description = "conversation id")), request_body = SendMessage,
    responses((status = 200, description = "the reply, or with `stream: true` the run's events",
               content((Reply = "application/json"), (StreamEvent = "text/event-stream"))),
              (status = 400, body = ErrorBody), (status = 404, body = ErrorBody),
              (status = 503, body = ErrorBody)))]
async fn send(
    State(gw): State<Arc<Gateway>>,
    by: Option<axum::Extension<crate::security::Identity>>,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<SendMessage>,
) -> ApiResult<Response> {
    gw.accepting()?;
    if body.content.trim().is_empty() {
        return Err(ApiError::bad_request("the message is empty", "say something in `content`"));
    }
    if gw.store.conversation(&id)?.is_none() {
        return Err(unknown(&id));
    }
    let started_by = by.and_then(|e| e.0.client_label());
    let hub =
        gw.runs.start_by(gw.clone(), id, Start::Message(body.content), Channel::Web, started_by);
    if body.stream {
        return Ok(crate::sse::stream(&hub));
    }
    Ok(Json(crate::sse::wait(&hub).await?).into_response())
}
