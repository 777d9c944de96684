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
        .routes(routes!(login_code))
}

/// `GET /login?code=…`: the one-time login link `aria serve` and `aria ui` print. A valid,
/// unused code sets the login cookies and sends the browser to the page; the code is spent.
pub fn login_link_routes() -> axum::Router<Arc<Gateway>> {
    axum::Router::new().route("/login", axum::routing::get(login_link))
}

#[derive(Debug, Deserialize)]
struct LinkQuery {
    code: Option<String>,
}

async fn login_link(
    State(gw): State<Arc<Gateway>>,
    axum::extract::Query(query): axum::extract::Query<LinkQuery>,
) -> Response {
    let login = query.code.as_deref().and_then(|code| gw.security.redeem_login_code(code));
    let Some((session, csrf)) = login else {
        let page = "<!doctype html><meta charset=utf-8><title>ARIA login</title>\
                    <p>This login link is not valid: it was used already, it expired (links \
                    work once, for 10 minutes), or it was mistyped.</p>\
                    <p>Run <code>aria ui</code> on the machine where ARIA runs for a new one.</p>";
        return (
            StatusCode::UNAUTHORIZED,
            [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
            page,
        )
            .into_response();
    };
    let mut response = (StatusCode::SEE_OTHER, [(header::LOCATION, "/")]).into_response();
    set_login_cookies(&mut response, &session, &csrf);
    response
}

fn set_login_cookies(response: &mut Response, session: &str, csrf: &str) {
    for cookie in [
        format!("{SESSION_COOKIE}={session}; Path=/; HttpOnly; SameSite=Strict"),
        format!("{CSRF_COOKIE}={csrf}; Path=/; SameSite=Strict"),
    ] {
        if let Ok(value) = cookie.parse() {
            response.headers_mut().append(header::SET_COOKIE, value);
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct LoginCode {
    /// Open this in a browser on this machine: it logs the page in, once.
    pub url: String,
    /// Seconds the link works for.
    pub expires_in: u64,
}

/// Makes a one-time login link for the web page (what `aria ui` prints). Needs an admin
/// credential.
#[utoipa::path(post, path = "/api/v1/login-codes", tag = "meta",
    responses((status = 201, body = LoginCode), (status = 409, body = ErrorBody)))]
async fn login_code(
    State(gw): State<Arc<Gateway>>,
    headers: HeaderMap,
) -> ApiResult<(StatusCode, Json<LoginCode>)> {
    let code = gw.security.issue_login_code().ok_or_else(|| {
        ApiError::conflict(
            "no login link can be made: this daemon asks for no credentials, or too many \
             links are waiting to be used",
            "open the page directly, or wait 10 minutes for unused links to expire",
        )
    })?;
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok()).unwrap_or("127.0.0.1");
    Ok((
        StatusCode::CREATED,
        Json(LoginCode {
            url: format!("http://{host}/login?code={code}"),
            expires_in: crate::security::LOGIN_CODE_TTL.as_secs(),
        }),
    ))
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
    set_login_cookies(&mut response, &session, &csrf);
    Ok(response)
}

/// Ends the web login. A login must send its CSRF token (`X-CSRF-Token`), so another page
/// cannot log the user out.
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
