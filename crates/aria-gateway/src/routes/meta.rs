//! Health, and the web login.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::Gateway;
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::extract::ApiJson;
use crate::security::{CSRF_COOKIE, SESSION_COOKIE};

pub fn routes() -> OpenApiRouter<Arc<Gateway>> {
    OpenApiRouter::new()
        .routes(routes!(health))
        .routes(routes!(auth))
        .routes(routes!(login))
        .routes(routes!(logout))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    /// `ok` once the daemon is ready; `stopping` while it shuts down.
    pub status: String,
    pub version: String,
    /// Runs in flight.
    pub runs: usize,
}

/// Liveness: 200 once the daemon is ready. Needs no token.
#[utoipa::path(get, path = "/api/v1/health", tag = "meta",
    responses((status = 200, body = Health)))]
async fn health(State(gw): State<Arc<Gateway>>) -> Json<Health> {
    let status = if gw.shutdown.is_cancelled() { "stopping" } else { "ok" };
    Json(Health {
        status: status.into(),
        version: env!("CARGO_PKG_VERSION").into(),
        runs: gw.runs.active(),
    })
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AuthStatus {
    /// Whether requests need the API token.
    pub required: bool,
    /// Whether this request carried valid credentials (always true when none are required).
    pub authenticated: bool,
}

/// Whether a token is needed, and whether this request has one.
#[utoipa::path(get, path = "/api/v1/auth", tag = "meta",
    responses((status = 200, body = AuthStatus)))]
async fn auth(State(gw): State<Arc<Gateway>>, headers: HeaderMap) -> Json<AuthStatus> {
    Json(AuthStatus {
        required: gw.security.token.is_some(),
        authenticated: gw.security.authenticated(&headers, false).is_ok(),
    })
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct Login {
    pub token: String,
}

/// Logs the web page in: sets the `aria_session` cookie (HttpOnly, SameSite=Strict) and the
/// `aria_csrf` cookie whose value state-changing requests send as `X-CSRF-Token`.
#[utoipa::path(post, path = "/api/v1/login", tag = "meta", request_body = Login,
    responses((status = 204, description = "logged in"),
              (status = 401, body = ErrorBody), (status = 409, body = ErrorBody)))]
async fn login(
    State(gw): State<Arc<Gateway>>,
    ApiJson(body): ApiJson<Login>,
) -> ApiResult<Response> {
    if gw.security.token.is_none() {
        return Err(ApiError::conflict(
            "this daemon needs no token, so there is nothing to log in to",
            "just use the page",
        ));
    }
    let Some((session, csrf)) = gw.security.login(&body.token) else {
        return Err(ApiError::unauthorized("that is not the API token"));
    };
    let mut response = StatusCode::NO_CONTENT.into_response();
    let headers = response.headers_mut();
    for cookie in [
        format!("{SESSION_COOKIE}={session}; Path=/; HttpOnly; SameSite=Strict"),
        format!("{CSRF_COOKIE}={csrf}; Path=/; SameSite=Strict"),
    ] {
        if let Ok(value) = cookie.parse() {
            headers.append(header::SET_COOKIE, value);
        }
    }
    Ok(response)
}

/// Ends the web login.
#[utoipa::path(post, path = "/api/v1/logout", tag = "meta",
    responses((status = 204, description = "logged out")))]
async fn logout(State(gw): State<Arc<Gateway>>, headers: HeaderMap) -> Response {
    gw.security.logout(&headers);
    let mut response = StatusCode::NO_CONTENT.into_response();
    for name in [SESSION_COOKIE, CSRF_COOKIE] {
        if let Ok(value) = format!("{name}=; Path=/; Max-Age=0; SameSite=Strict").parse() {
            response.headers_mut().append(header::SET_COOKIE, value);
        }
    }
    response
}
