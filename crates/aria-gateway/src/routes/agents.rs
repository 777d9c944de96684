//! Agent profiles: list, read, make, change and remove the agents the daemon's
//! runs, `aria run --agent` and `aria chat --agent` use. What a profile may hold and how it is
//! checked belong to the binary ([`crate::AgentBook`]); this module maps the book's answers to
//! HTTP. Built-in agents and those of `aria.toml` are read-only here (409): edit the file.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::extract::{ApiJson, ApiPath};
use crate::{AgentBook, BookError, Gateway};

pub fn routes() -> OpenApiRouter<Arc<Gateway>> {
    OpenApiRouter::new().routes(routes!(list, create)).routes(routes!(get_one, edit, remove))
}

fn book(gw: &Gateway) -> ApiResult<&Arc<dyn AgentBook>> {
    gw.services.agents.as_ref().ok_or_else(|| ApiError::unavailable("agents are not served here"))
}

impl From<BookError> for ApiError {
    fn from(e: BookError) -> ApiError {
        match e {
            BookError::Invalid(m) => {
                ApiError::bad_request(m, "see GET /api/v1/openapi.json for an agent's fields")
            }
            BookError::NotFound(m) => ApiError::not_found(m, "list them with GET /api/v1/agents"),
            BookError::Conflict(m) => ApiError::conflict(m, "pick another name or agent"),
            BookError::Internal(m) => ApiError::internal("the agents", m),
        }
    }
}

/// An agent's fields, as `POST /api/v1/agents` takes them (the rules the schema cannot say —
/// a tool or group name that exists, a persona file that exists, `confirm_completion` only with
/// a `planner` — are checked too, and a break is a 400 naming the field).
#[derive(Debug, serde::Deserialize, ToSchema)]
#[allow(dead_code)] // the document of the body; the handler reads it as JSON
pub struct AgentBody {
    #[schema(pattern = "^[a-z0-9_-]{1,32}$")]
    pub name: String,
    #[schema(max_length = 500)]
    pub description: Option<String>,
    /// Added to ARIA's own system prompt.
    #[schema(max_length = 20000)]
    pub system_prompt: Option<String>,
    /// `BACKEND/MODEL`, the primary first, then the fallbacks.
    #[schema(inline)]
    pub models: Option<Vec<ModelName>>,
    /// Tool names and groups (`read`, `files`, `git`, `shell`, `profiles`, `web`, `memory`,
    /// `mcp`, `mcp:NAME`, `all`); absent: every tool.
    pub tools: Option<Vec<String>>,
    /// `governed`, `supervised` or `read_only` (applies only when stricter).
    #[schema(pattern = "^(governed|supervised|read_only)$")]
    pub mode: Option<String>,
    #[schema(minimum = 0)]
    pub max_cost_usd: Option<f64>,
    #[schema(minimum = 0)]
    pub per_day_usd: Option<f64>,
    #[schema(minimum = 0, maximum = 2)]
    pub temperature: Option<f32>,
    #[schema(pattern = "^(shared|own)$")]
    pub memory: Option<String>,
    /// A persona of `$ARIA_HOME/personas/NAME.toml` (or the shipped `friendly`); empty: none.
    #[schema(pattern = "^([a-z0-9_-]{1,32})?$")]
    pub persona: Option<String>,
    /// `BACKEND/MODEL` of a planner; empty: none.
    #[schema(pattern = "^((local|ollama|openai|anthropic)/.*[^ ].*)?$")]
    pub planner: Option<String>,
    pub confirm_completion: Option<bool>,
}

/// `BACKEND/MODEL`.
#[derive(Debug, serde::Deserialize, ToSchema)]
#[allow(dead_code)] // documents the body only
#[schema(pattern = "^(local|ollama|openai|anthropic)/.*[^ ].*$")]
pub struct ModelName(pub String);

/// Runs a call into the book on the blocking pool (it reads the database).
async fn call<T: Send + 'static>(
    gw: &Gateway,
    work: impl FnOnce(&dyn AgentBook) -> Result<T, BookError> + Send + 'static,
) -> ApiResult<T> {
    let book = Arc::clone(book(gw)?);
    super::resources::blocking("the agents", move || work(book.as_ref()).map_err(Into::into)).await
}

/// Every agent: the built-in ones, those of `aria.toml` (`[agents.NAME]`), and those made with
/// `aria agents add`, this API or the web UI. Each has `name`, `description`, `source`
/// (`builtin`, `config` or `store`; only `store` ones can be changed here), `system_prompt`,
/// `models`, `tools`, `mode`, `max_cost_usd`, `per_day_usd`, `temperature`, `memory`
/// (`shared`/`own`), `persona`, `planner`, `confirm_completion`.
#[utoipa::path(get, path = "/api/v1/agents", tag = "agents",
    responses((status = 200, description = "`{\"items\": [agent, …]}`", body = Object)))]
async fn list(State(gw): State<Arc<Gateway>>) -> ApiResult<Json<Value>> {
    let items = call(&gw, |b| b.list()).await?;
    Ok(Json(json!({ "items": items })))
}

/// One agent.
#[utoipa::path(get, path = "/api/v1/agents/{name}", tag = "agents",
    params(("name" = String, Path, description = "agent name")),
    responses((status = 200, body = Object), (status = 404, body = ErrorBody)))]
async fn get_one(
    State(gw): State<Arc<Gateway>>,
    ApiPath(name): ApiPath<String>,
) -> ApiResult<Json<Value>> {
    Ok(Json(call(&gw, move |b| b.get(&name)).await?))
}

/// Makes an agent, stored in ARIA's database: `name` and the fields of `[agents.NAME]`
/// (`description`, `system_prompt`, `models` as `["BACKEND/MODEL", …]`, `tools` (names and
/// groups), `mode`, `max_cost_usd`, `per_day_usd`, `temperature`, `memory`, `persona`,
/// `planner`, `confirm_completion`). An agent never widens what the configuration allows:
/// its mode and caps apply only when stricter. 201 with the agent.
#[utoipa::path(post, path = "/api/v1/agents", tag = "agents", request_body = AgentBody,
    responses((status = 201, body = Object), (status = 400, body = ErrorBody),
              (status = 409, body = ErrorBody)))]
async fn create(
    State(gw): State<Arc<Gateway>>,
    ApiJson(body): ApiJson<Value>,
) -> ApiResult<Response> {
    let agent = call(&gw, move |b| b.create(body)).await?;
    Ok((StatusCode::CREATED, Json(agent)).into_response())
}

/// Changes a stored agent: the fields given replace its own, `null` clears one, what is left
/// out stays. 409 for a built-in agent or one of `aria.toml`.
#[utoipa::path(patch, path = "/api/v1/agents/{name}", tag = "agents",
    params(("name" = String, Path, description = "agent name")), request_body = Object,
    responses((status = 200, body = Object), (status = 400, body = ErrorBody),
              (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
async fn edit(
    State(gw): State<Arc<Gateway>>,
    ApiPath(name): ApiPath<String>,
    ApiJson(body): ApiJson<Value>,
) -> ApiResult<Json<Value>> {
    Ok(Json(call(&gw, move |b| b.update(&name, body)).await?))
}

/// Removes a stored agent (conversations bound to it then need another agent to go on).
#[utoipa::path(delete, path = "/api/v1/agents/{name}", tag = "agents",
    params(("name" = String, Path, description = "agent name")),
    responses((status = 204, description = "removed"), (status = 404, body = ErrorBody),
              (status = 409, body = ErrorBody)))]
async fn remove(
    State(gw): State<Arc<Gateway>>,
    ApiPath(name): ApiPath<String>,
) -> ApiResult<StatusCode> {
    call(&gw, move |b| b.remove(&name)).await?;
    Ok(StatusCode::NO_CONTENT)
}
