//! Runs (sessions): list, inspect with trace and audit records, follow, cancel, resume; and
//! the approval questions they are waiting on.

use std::sync::Arc;

use aria_api::SessionRecord;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::Gateway;
use crate::approvals::Decision;
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::extract::{ApiJson, ApiJsonOrEmpty, ApiPath, ApiQuery, Paging};
use crate::openai::wire::StreamEvent;
use crate::runs::{Channel, Reply, Start};

pub fn routes() -> OpenApiRouter<Arc<Gateway>> {
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(get_one))
        .routes(routes!(events))
        .routes(routes!(cancel))
        .routes(routes!(resume))
        .routes(routes!(pending))
        .routes(routes!(answer))
}

/// A session as the API shows it: its record plus whether it is running now and whether it
/// was interrupted (not finished, and nobody is running it: resumable).
pub fn session_json(gw: &Gateway, s: &SessionRecord) -> Value {
    let running = gw.runs.is_running(&s.id) || aria_store::runlock::is_running(&gw.data_dir, &s.id);
    let mut v = serde_json::to_value(s).unwrap_or_default();
    v["running"] = json!(running);
    v["interrupted"] = json!(!s.state.is_terminal() && !running);
    v
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RunPage {
    #[schema(value_type = Vec<Object>)]
    pub items: Vec<Value>,
    pub limit: usize,
    pub offset: usize,
    pub total: u64,
}

/// Runs, newest first.
#[utoipa::path(get, path = "/api/v1/runs", tag = "runs", params(Paging),
    responses((status = 200, body = RunPage), (status = 400, body = ErrorBody)))]
async fn list(
    State(gw): State<Arc<Gateway>>,
    ApiQuery(paging): ApiQuery<Paging>,
) -> ApiResult<Json<RunPage>> {
    let (items, total) = gw.store.session_page(paging.limit(), paging.offset())?;
    Ok(Json(RunPage {
        items: items.iter().map(|s| session_json(&gw, s)).collect(),
        limit: paging.limit(),
        offset: paging.offset(),
        total,
    }))
}

fn unknown(id: &str) -> ApiError {
    ApiError::not_found(format!("no run {id}"), "list them with GET /api/v1/runs")
}

fn session(gw: &Gateway, id: &str) -> ApiResult<SessionRecord> {
    gw.store.session(id)?.ok_or_else(|| unknown(id))
}

/// One run with its model calls (`trace`) and its audit records (`audit`).
#[utoipa::path(get, path = "/api/v1/runs/{id}", tag = "runs",
    params(("id" = String, Path, description = "session id")),
    responses((status = 200, body = Object), (status = 404, body = ErrorBody)))]
async fn get_one(
    State(gw): State<Arc<Gateway>>,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<Value>> {
    let s = session(&gw, &id)?;
    let mut v = session_json(&gw, &s);
    v["trace"] = json!(gw.store.traces_for_session(&id)?);
    v["audit"] = json!(gw.store.audit_for_session(&id)?);
    Ok(Json(v))
}

/// Follows a run as Server-Sent Events: what it said so far, then what it says until it ends.
#[utoipa::path(get, path = "/api/v1/runs/{id}/events", tag = "runs",
    params(("id" = String, Path, description = "session id")),
    responses((status = 200, description = "the run's events", body = StreamEvent,
               content_type = "text/event-stream"),
              (status = 404, body = ErrorBody)))]
async fn events(
    State(gw): State<Arc<Gateway>>,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Response> {
    let Some(hub) = gw.runs.session(&id) else {
        session(&gw, &id)?;
        return Err(ApiError::not_found(
            format!(
                "run {id} is not followable: it was not started by this daemon, or it ended long ago"
            ),
            "read what it did with GET /api/v1/runs/{id}",
        ));
    };
    Ok(crate::sse::stream(&hub))
}

/// Cancels a run in flight.
#[utoipa::path(post, path = "/api/v1/runs/{id}/cancel", tag = "runs",
    params(("id" = String, Path, description = "session id")),
    responses((status = 202, description = "cancelling"), (status = 404, body = ErrorBody),
              (status = 409, body = ErrorBody)))]
async fn cancel(
    State(gw): State<Arc<Gateway>>,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<StatusCode> {
    match gw.runs.session(&id) {
        Some(hub) if !hub.is_finished() => {
            hub.cancel.cancel();
            Ok(StatusCode::ACCEPTED)
        }
        _ => {
            let s = session(&gw, &id)?;
            Err(ApiError::conflict(
                format!("run {id} is not running in this daemon (it is {})", s.state),
                "only a run in flight here can be cancelled",
            ))
        }
    }
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ResumeBody {
    /// Answer as Server-Sent Events.
    #[serde(default)]
    pub stream: bool,
}

/// Resumes an interrupted or failed run from where it stopped.
#[utoipa::path(post, path = "/api/v1/runs/{id}/resume", tag = "runs",
    params(("id" = String, Path, description = "session id")), request_body = Option<ResumeBody>,
    responses((status = 200, description = "the reply, or with `stream: true` the run's events",
               content((Reply = "application/json"), (StreamEvent = "text/event-stream"))),
              (status = 404, body = ErrorBody), (status = 409, body = ErrorBody),
              (status = 503, body = ErrorBody)))]
async fn resume(
    State(gw): State<Arc<Gateway>>,
    by: Option<axum::Extension<crate::security::Identity>>,
    ApiPath(id): ApiPath<String>,
    ApiJsonOrEmpty(body): ApiJsonOrEmpty<ResumeBody>,
) -> ApiResult<Response> {
    gw.accepting()?;
    let s = session(&gw, &id)?;
    if gw.runs.is_running(&id) || aria_store::runlock::is_running(&gw.data_dir, &id) {
        return Err(ApiError::conflict(format!("run {id} is running now"), "follow it instead"));
    }
    if s.state.resume().is_err() {
        return Err(ApiError::conflict(
            format!("run {id} is {} and cannot be resumed", s.state),
            "send a new message in its conversation instead",
        ));
    }
    let started_by = by.and_then(|e| e.0.client_label());
    let hub = gw.runs.start_by(
        gw.clone(),
        s.conversation_id,
        Start::Resume(id),
        Channel::Web,
        started_by,
    );
    if body.stream {
        return Ok(crate::sse::stream(&hub));
    }
    Ok(Json(crate::sse::wait(&hub).await?).into_response())
}

/// Approval questions waiting for an answer, oldest first.
#[utoipa::path(get, path = "/api/v1/approvals", tag = "approvals",
    responses((status = 200, body = Object)))]
async fn pending(State(gw): State<Arc<Gateway>>) -> ApiResult<Json<Value>> {
    Ok(Json(json!({ "items": gw.store.approvals_pending()? })))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Answer {
    pub decision: Decision,
}

/// Answers an approval question: `approve` (once), `approve_session` (this call with these
/// arguments for the rest of the run, at most 15 minutes) or `deny`.
#[utoipa::path(post, path = "/api/v1/approvals/{id}", tag = "approvals",
    params(("id" = String, Path, description = "approval id")), request_body = Answer,
    responses((status = 200, body = Object), (status = 400, body = ErrorBody),
              (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
async fn answer(
    State(gw): State<Arc<Gateway>>,
    by: Option<axum::Extension<crate::security::Identity>>,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<Answer>,
) -> ApiResult<Json<Value>> {
    let by = by.map_or_else(crate::security::Identity::unknown, |e| e.0);
    let settled = crate::approvals::answer_request(&gw, &id, body.decision, &by)?;
    Ok(Json(json!(settled)))
}
