//! The listener's security, in one middleware in front of every route.
//!
//! In order: the `Host` check on a loopback listener (a DNS-rebinding page reaches 127.0.0.1
//! under its own name, which this refuses), the `Origin` check on state-changing requests and
//! WebSocket upgrades (another site open in the user's browser may send requests but not with
//! our origin), JSON-only bodies, a per-client rate limit, and the token when one is configured:
//! `Authorization: Bearer TOKEN`, or the `aria_session` cookie of a web login plus the
//! `X-CSRF-Token` header on state-changing requests. Tokens are compared in constant time.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

use crate::Gateway;
use crate::error::ApiError;

/// The cookie a web login sets (HttpOnly).
pub const SESSION_COOKIE: &str = "aria_session";
/// The cookie whose value state-changing requests repeat in [`CSRF_HEADER`].
pub const CSRF_COOKIE: &str = "aria_csrf";
pub const CSRF_HEADER: &str = "x-csrf-token";

/// How the listener is protected.
#[derive(Debug)]
pub struct Security {
    /// The API token; `None`: no token is required (loopback only).
    pub token: Option<String>,
    /// Whether the listener is on a loopback address (then `Host` must be a loopback name).
    pub loopback: bool,
    /// Origins besides the daemon's own allowed to make state-changing requests
    /// (`[server] allowed_origins`), e.g. `https://aria.example.ts.net`.
    pub allowed_origins: Vec<String>,
    /// Requests per minute per client address (0: no limit). `GET /api/v1/health` is free.
    pub rate_per_minute: u32,
    logins: Mutex<HashMap<String, String>>,
    buckets: Mutex<HashMap<IpAddr, Bucket>>,
    /// Requests refused for want of credentials, counted apart from everyone's budget.
    failures: Mutex<HashMap<IpAddr, Bucket>>,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Security {
    pub fn new(
        token: Option<String>,
        loopback: bool,
        allowed_origins: Vec<String>,
        rate_per_minute: u32,
    ) -> Security {
        Security {
            token: token.filter(|t| !t.is_empty()),
            loopback,
            allowed_origins,
            rate_per_minute,
            logins: Mutex::default(),
            buckets: Mutex::default(),
            failures: Mutex::default(),
        }
    }

    /// A web login with the right token: the session and CSRF values for the two cookies.
    pub fn login(&self, token: &str) -> Option<(String, String)> {
        let expected = self.token.as_deref()?;
        if !token_matches(token, expected) {
            return None;
        }
        let session = random_secret();
        let csrf = random_secret();
        let mut logins = self.logins.lock().unwrap_or_else(PoisonError::into_inner);
        // A bound on logins kept: the oldest are not tracked by age, so start over when full.
        if logins.len() >= 1024 {
            logins.clear();
        }
        logins.insert(session.clone(), csrf.clone());
        Some((session, csrf))
    }

    pub fn logout(&self, headers: &HeaderMap) {
        if let Some(session) = cookie(headers, SESSION_COOKIE) {
            self.logins.lock().unwrap_or_else(PoisonError::into_inner).remove(&session);
        }
    }

    /// Whether the request carries valid credentials; for a cookie login, whether the CSRF
    /// header matches too when `state_changing`.
    pub fn authenticated(&self, headers: &HeaderMap, state_changing: bool) -> Result<(), ApiError> {
        let Some(expected) = self.token.as_deref() else { return Ok(()) };
        if let Some(given) = bearer(headers) {
            return if token_matches(&given, expected) {
                Ok(())
            } else {
                Err(ApiError::unauthorized("the API token is not valid"))
            };
        }
        let Some(session) = cookie(headers, SESSION_COOKIE) else {
            return Err(ApiError::unauthorized("this request needs the API token"));
        };
        let csrf = {
            let logins = self.logins.lock().unwrap_or_else(PoisonError::into_inner);
            logins.iter().find(|(s, _)| token_matches(s, &session)).map(|(_, c)| c.clone())
        };
        let Some(csrf) = csrf else {
            return Err(ApiError::unauthorized("the login has expired; log in again"));
        };
        if state_changing {
            let sent = headers.get(CSRF_HEADER).and_then(|v| v.to_str().ok()).unwrap_or("");
            if !token_matches(sent, &csrf) {
                return Err(ApiError::forbidden(
                    "a state-changing request from a login must carry the CSRF token",
                    "send the value of the aria_csrf cookie in the X-CSRF-Token header",
                ));
            }
        }
        Ok(())
    }

    /// Takes one request from the client's budget (for requests that arrive other than as HTTP
    /// requests, e.g. WebSocket frames that start runs); `false` when it is spent.
    pub fn admit_request(&self, client: IpAddr) -> bool {
        self.admit(&self.buckets, client)
    }

    /// Takes one request from the client's bucket; `false` when it is empty.
    fn admit(&self, table: &Mutex<HashMap<IpAddr, Bucket>>, client: IpAddr) -> bool {
        if self.rate_per_minute == 0 {
            return true;
        }
        let capacity = f64::from(self.rate_per_minute);
        let now = Instant::now();
        let mut buckets = table.lock().unwrap_or_else(PoisonError::into_inner);
        if buckets.len() > 10_000 {
            buckets.retain(|_, b| now.duration_since(b.at).as_secs() < 60);
        }
        let bucket = buckets.entry(client).or_insert(Bucket { tokens: capacity, at: now });
        let refill = now.duration_since(bucket.at).as_secs_f64() * capacity / 60.0;
        bucket.tokens = (bucket.tokens + refill).min(capacity);
        bucket.at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// Equal strings, compared in time that does not depend on where they differ (both are
/// hashed first, so the length does not leak either).
pub fn token_matches(given: &str, expected: &str) -> bool {
    let a = Sha256::digest(given.as_bytes());
    let b = Sha256::digest(expected.as_bytes());
    a.iter().zip(b.iter()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn random_secret() -> String {
    format!("{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple())
}

fn bearer(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim().to_owned())
}

/// A cookie's value from the `Cookie` headers.
pub fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_owned())
}

/// Whether `host` (a `Host` header: name or address, maybe with a port) is this machine by a
/// loopback name.
pub fn is_loopback_host(host: &str) -> bool {
    let name = if let Some(rest) = host.strip_prefix('[') {
        // `[address]` or `[address]:port`, nothing else after the bracket.
        match rest.split_once(']') {
            Some((name, "")) => name,
            Some((name, port))
                if port
                    .strip_prefix(':')
                    .is_some_and(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit())) =>
            {
                name
            }
            _ => return false,
        }
    } else {
        host.rsplit_once(':').map_or(host, |(name, port)| {
            if port.chars().all(|c| c.is_ascii_digit()) { name } else { host }
        })
    };
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    if name == "localhost" || name.ends_with(".localhost") {
        return true;
    }
    name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

pub(crate) fn too_many(security: &Security) -> ApiError {
    ApiError::new(
        StatusCode::TOO_MANY_REQUESTS,
        "rate_limited",
        format!("more than {} requests in a minute", security.rate_per_minute),
        "slow down, or raise `[server] rate_limit_per_minute`",
    )
}

/// On a loopback listener: exactly one `Host`, readable, naming this machine; an absolute-form
/// request target must name it too.
fn loopback_host(request: &Request, host: Option<&str>) -> Result<(), ApiError> {
    let hint = "this daemon listens on loopback and answers only to localhost, 127.0.0.1 or ::1 \
                (this protects it from DNS rebinding); for remote access put a proxy in front \
                of it, e.g. `tailscale serve`, and set a token";
    if request.headers().get_all(header::HOST).iter().count() > 1 {
        return Err(ApiError::forbidden("the request has more than one Host header", hint));
    }
    let Some(host) = host else {
        return Err(ApiError::forbidden("the request has no readable Host header", hint));
    };
    if !is_loopback_host(host) {
        return Err(ApiError::forbidden(format!("Host `{host}` is not a loopback name"), hint));
    }
    if let Some(authority) = request.uri().authority()
        && !is_loopback_host(authority.as_str())
    {
        return Err(ApiError::forbidden(
            format!("the request names `{authority}`, not this machine"),
            hint,
        ));
    }
    Ok(())
}

fn fetched_cross_site(headers: &HeaderMap) -> bool {
    headers
        .get("sec-fetch-site")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|site| site.eq_ignore_ascii_case("cross-site"))
}

fn navigation(headers: &HeaderMap) -> bool {
    headers
        .get("sec-fetch-mode")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|mode| mode.eq_ignore_ascii_case("navigate"))
}

/// The page itself (what a link from elsewhere may open).
fn is_page(method: &Method, path: &str) -> bool {
    matches!(*method, Method::GET | Method::HEAD) && matches!(path, "/" | "/index.html")
}

fn state_changing(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// Paths that answer without a token: the liveness probes (`/api/v1/health`, `/health`), the
/// login, the page itself (it shows the login form) and static assets. The OpenAPI document marks these as needing no credentials.
pub(crate) fn public(method: &Method, path: &str) -> bool {
    match *method {
        Method::GET | Method::HEAD => matches!(
            path,
            "/api/v1/health"
                | "/health"
                | "/ui/status.js"
                | "/ui/status.css"
                | "/api/v1/auth"
                | "/api/v1/openapi.json"
                | "/"
                | "/index.html"
                | "/app.js"
                | "/app.css"
        ),
        Method::POST => matches!(path, "/api/v1/login" | "/api/v1/logout"),
        _ => false,
    }
}

/// Whether the rate limit counts this request: all but the liveness probes.
pub(crate) fn rate_limited(method: &Method, path: &str) -> bool {
    !(*method == Method::GET && matches!(path, "/api/v1/health" | "/health"))
}

/// Whether the request says its body is JSON.
pub(crate) fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|mime| mime.trim().eq_ignore_ascii_case("application/json"))
}

fn has_body(headers: &HeaderMap) -> bool {
    let length = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    match length {
        Some(n) => n > 0,
        None => headers.contains_key(header::TRANSFER_ENCODING),
    }
}

/// The middleware.
pub async fn guard(State(gateway): State<Arc<Gateway>>, request: Request, next: Next) -> Response {
    let mut response = match check(&gateway.security, &request) {
        Ok(()) => redact_error(&gateway, next.run(request).await).await,
        Err(e) => e.into_response(),
    };
    // No answer is to be read as anything but what it says it is.
    response
        .headers_mut()
        .entry(header::X_CONTENT_TYPE_OPTIONS)
        .or_insert(axum::http::HeaderValue::from_static("nosniff"));
    response
}

/// An error answer passes the secret filter before it leaves: a backend's error may quote a key
/// or a URL with credentials. (Error bodies are small JSON; streams are left alone.)
async fn redact_error(gateway: &Gateway, response: Response) -> Response {
    let json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("application/json"));
    if response.status().as_u16() < 400 || !json {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, crate::BODY_LIMIT).await else {
        return ApiError::internal("an error answer could not be read", "too large")
            .into_response();
    };
    let text = String::from_utf8_lossy(&bytes);
    let clean = gateway.store.redact_text(&text);
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, axum::body::Body::from(clean))
}

fn check(security: &Security, request: &Request) -> Result<(), ApiError> {
    let headers = request.headers();
    let method = request.method();
    let path = request.uri().path();
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok()).map(str::to_owned);
    if security.loopback {
        loopback_host(request, host.as_deref())?;
    }
    // A browser sends `Sec-Fetch-Site: cross-site` when another site makes the request: nothing
    // here is for other sites but following a link to the page itself. Refused before it can
    // count against anyone's rate limit.
    if fetched_cross_site(headers) && !(navigation(headers) && is_page(method, path)) {
        return Err(ApiError::forbidden(
            "another site's page may not use this API",
            "use ARIA's own page, or call the API from a program",
        ));
    }
    let upgrade = headers.contains_key(header::UPGRADE);
    if (state_changing(method) || upgrade)
        && let Some(origin) = headers.get(header::ORIGIN)
    {
        let origin = origin.to_str().unwrap_or("null");
        // The daemon serves plain HTTP: its own page's origin is `http://` + the Host.
        let own =
            host.as_deref().is_some_and(|h| origin.eq_ignore_ascii_case(&format!("http://{h}")));
        let allowed = security.allowed_origins.iter().any(|o| o.eq_ignore_ascii_case(origin));
        if !own && !allowed {
            return Err(ApiError::forbidden(
                format!("requests from the origin `{origin}` may not change anything here"),
                "only ARIA's own page may; to allow another origin add it to \
                 `[server] allowed_origins`",
            ));
        }
    }
    if matches!(*method, Method::POST | Method::PUT | Method::PATCH)
        && has_body(headers)
        && !is_json(headers)
    {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "the body must be JSON",
            "send it with `Content-Type: application/json`",
        ));
    }
    let client = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map_or(IpAddr::from([127, 0, 0, 1]), |c| c.0.ip());
    // Credentials first: requests without them are counted apart, so a flood of them (another
    // site, a stranger behind the same tunnel) never spends the owner's budget.
    if !public(method, path)
        && let Err(refused) = security.authenticated(headers, state_changing(method))
    {
        if !security.admit(&security.failures, client) {
            return Err(too_many(security));
        }
        return Err(refused);
    }
    if rate_limited(method, path) && !security.admit(&security.buckets, client) {
        return Err(too_many(security));
    }
    Ok(())
}

#[cfg(test)]
#[path = "security_tests.rs"]
mod tests;
