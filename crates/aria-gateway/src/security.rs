//! The listener's security, in one middleware in front of every route.
//!
//! In order: the `Host` check on a loopback listener (a DNS-rebinding page reaches 127.0.0.1
//! under its own name, which this refuses), the `Origin` check on state-changing requests and
//! WebSocket upgrades (another site open in the user's browser may send requests but not with
//! our origin), JSON-only bodies, a per-client rate limit, and the credentials:
//! `Authorization: Bearer TOKEN`, or the `aria_session` cookie of a web login plus the
//! `X-CSRF-Token` header on state-changing requests. Tokens are compared in constant time.
//!
//! Every request but the liveness probe, the login and the page's static files carries a
//! credential, on loopback too: another account on this machine, or a sandboxed program, can
//! reach a loopback port as easily as the owner. A credential is an [`Identity`] with a
//! [`Scope`]: the daemon's own token (`$ARIA_HOME/api-token`) and a web login are `admin`;
//! tokens made with `aria tokens add NAME --scope read|chat|mcp|admin` are what their scope
//! says. The identity travels with the request (an extension), so the approval route can tell
//! a person's channel (a web login) from the client whose call is waiting.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

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

/// What a credential may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// Reads only: `GET` of the API, no `/mcp`.
    Read,
    /// Reads, conversations and their runs (REST, SSE, WebSocket, the OpenAI-compatible
    /// endpoint); no approvals, memories, schedules or settings changes.
    Chat,
    /// ARIA's tools over MCP at `/mcp`, nothing else.
    Mcp,
    /// Everything, answering approvals included.
    Admin,
}

impl Scope {
    pub const ALL: [Scope; 4] = [Scope::Read, Scope::Chat, Scope::Mcp, Scope::Admin];

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Read => "read",
            Scope::Chat => "chat",
            Scope::Mcp => "mcp",
            Scope::Admin => "admin",
        }
    }

    pub fn parse(text: &str) -> Option<Scope> {
        Scope::ALL.into_iter().find(|s| s.as_str() == text)
    }

    /// Whether a request of `method` to `path` is within this scope (`upgrade`: a WebSocket).
    pub fn permits(self, method: &Method, path: &str, upgrade: bool) -> bool {
        let mcp = path == "/mcp" || path.starts_with("/mcp/");
        let changes = state_changing(method) || upgrade;
        match self {
            Scope::Admin => true,
            Scope::Mcp => mcp,
            Scope::Read => !mcp && !changes,
            Scope::Chat => {
                !mcp && (!changes
                    || path.starts_with("/api/v1/conversations")
                    || path.starts_with("/api/v1/runs/")
                    || path == "/api/v1/ws"
                    || path.starts_with("/v1/"))
            }
        }
    }
}

/// Who made a request, as the security layer established it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// Channel and name, as approvals record it: `web:session` (a web login), `api:owner`
    /// (the daemon's own token), `api:token NAME`, `local` (a daemon without credentials),
    /// `telegram:USER_ID`.
    pub label: String,
    pub scope: Scope,
    /// A person's own channel (a web login, Telegram's allowed user), as opposed to a client
    /// program holding a token.
    pub person: bool,
}

impl Identity {
    /// The daemon's own token.
    pub fn owner() -> Identity {
        Identity { label: "api:owner".into(), scope: Scope::Admin, person: false }
    }

    /// A web login (cookie).
    pub fn web_session() -> Identity {
        Identity { label: "web:session".into(), scope: Scope::Admin, person: true }
    }

    /// A daemon that asks for no credentials (`[server] auth = "none"`, a single-user
    /// container): every request is the one person's, and nothing tells clients apart.
    pub fn local() -> Identity {
        Identity { label: "local".into(), scope: Scope::Admin, person: true }
    }

    /// A request that carried no identity (should not happen behind the guard): it may do
    /// nothing that needs one.
    pub fn unknown() -> Identity {
        Identity { label: "unknown".into(), scope: Scope::Read, person: false }
    }

    /// The label of a client program's credential, for [`crate::runs::RunHub::started_by`]:
    /// `None` for a person's channel (a person may answer what they started).
    pub fn client_label(&self) -> Option<String> {
        (!self.person).then(|| self.label.clone())
    }

    /// Telegram's allowed user.
    pub fn telegram(user_id: i64) -> Identity {
        Identity { label: format!("telegram:{user_id}"), scope: Scope::Admin, person: true }
    }
}

/// Looks up a bearer token that is not the daemon's own: its name and scope.
pub type TokenLookup = Arc<dyn Fn(&str) -> Option<(String, Scope)> + Send + Sync>;

/// How long a one-time login link works.
pub const LOGIN_CODE_TTL: Duration = Duration::from_secs(600);
/// How long a web login lasts without being used, unless configured.
pub const SESSION_IDLE: Duration = Duration::from_secs(7 * 24 * 3600);

#[derive(Debug, Clone)]
struct Login {
    csrf: String,
    last_seen: Instant,
}

/// How the listener is protected.
pub struct Security {
    /// The API token; `None`: no credentials are asked for (`[server] auth = "none"`).
    pub token: Option<String>,
    /// Whether the listener is on a loopback address (then `Host` must be a loopback name).
    pub loopback: bool,
    /// Origins besides the daemon's own allowed to make state-changing requests
    /// (`[server] allowed_origins`), e.g. `https://aria.example.ts.net`.
    pub allowed_origins: Vec<String>,
    /// Requests per minute per client address (0: no limit). `GET /api/v1/health` is free.
    pub rate_per_minute: u32,
    /// How long a web login lasts without a request.
    pub session_idle: Duration,
    /// Scoped tokens (`aria tokens add`), looked up by value.
    tokens: Option<TokenLookup>,
    logins: Mutex<HashMap<String, Login>>,
    /// One-time login codes and when they stop working.
    codes: Mutex<HashMap<String, Instant>>,
    /// Identities that spoke to `/mcp`, and when last: an MCP client may not answer the
    /// questions its own calls raise.
    mcp_clients: Mutex<HashMap<String, Instant>>,
    buckets: Mutex<HashMap<IpAddr, Bucket>>,
    /// Requests refused for want of credentials, counted apart from everyone's budget.
    failures: Mutex<HashMap<IpAddr, Bucket>>,
}

impl std::fmt::Debug for Security {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Security")
            .field("token", &self.token.as_ref().map(|_| "(set)"))
            .field("loopback", &self.loopback)
            .field("allowed_origins", &self.allowed_origins)
            .field("rate_per_minute", &self.rate_per_minute)
            .field("session_idle", &self.session_idle)
            .field("scoped_tokens", &self.tokens.is_some())
            .finish_non_exhaustive()
    }
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
            session_idle: SESSION_IDLE,
            tokens: None,
            logins: Mutex::default(),
            codes: Mutex::default(),
            mcp_clients: Mutex::default(),
            buckets: Mutex::default(),
            failures: Mutex::default(),
        }
    }

    /// Scoped tokens besides the daemon's own.
    pub fn with_tokens(mut self, lookup: TokenLookup) -> Security {
        self.tokens = Some(lookup);
        self
    }

    /// How long a web login lasts without a request.
    pub fn with_session_idle(mut self, idle: Duration) -> Security {
        self.session_idle = idle;
        self
    }

    /// A web login with the right token: the session and CSRF values for the two cookies.
    pub fn login(&self, token: &str) -> Option<(String, String)> {
        let expected = self.token.as_deref()?;
        if !token_matches(token, expected) {
            return None;
        }
        Some(self.new_login())
    }

    fn new_login(&self) -> (String, String) {
        let session = random_secret();
        let csrf = random_secret();
        let mut logins = self.logins.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        logins.retain(|_, l| now.duration_since(l.last_seen) < self.session_idle);
        // A bound on logins kept: past it, the least recently used goes.
        if logins.len() >= 1024
            && let Some(oldest) =
                logins.iter().min_by_key(|(_, l)| l.last_seen).map(|(s, _)| s.clone())
        {
            logins.remove(&oldest);
        }
        logins.insert(session.clone(), Login { csrf: csrf.clone(), last_seen: now });
        (session, csrf)
    }

    /// A one-time code for `/login?code=…`, good for [`LOGIN_CODE_TTL`]; `None` when the daemon
    /// asks for no credentials (there is nothing to log in to).
    pub fn issue_login_code(&self) -> Option<String> {
        self.token.as_ref()?;
        let code = random_secret();
        let mut codes = self.codes.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        codes.retain(|_, expires| *expires > now);
        if codes.len() >= 256 {
            return None;
        }
        codes.insert(code.clone(), now + LOGIN_CODE_TTL);
        Some(code)
    }

    /// Spends a one-time login code: a new login (session and CSRF values) when it was valid,
    /// unused and in time.
    pub fn redeem_login_code(&self, code: &str) -> Option<(String, String)> {
        let found = {
            let mut codes = self.codes.lock().unwrap_or_else(PoisonError::into_inner);
            let key = codes.keys().find(|k| token_matches(k, code)).cloned()?;
            codes.remove(&key).filter(|expires| *expires > Instant::now())
        };
        found.map(|_| self.new_login())
    }

    pub fn logout(&self, headers: &HeaderMap) {
        if let Some(session) = cookie(headers, SESSION_COOKIE) {
            self.logins.lock().unwrap_or_else(PoisonError::into_inner).remove(&session);
        }
    }

    /// Notes that `identity` spoke to `/mcp`.
    pub fn note_mcp_client(&self, identity: &Identity) {
        if identity.person {
            return;
        }
        let mut clients = self.mcp_clients.lock().unwrap_or_else(PoisonError::into_inner);
        if clients.len() >= 1024 {
            clients.clear();
        }
        clients.insert(identity.label.clone(), Instant::now());
    }

    /// Whether `identity` spoke to `/mcp` within `within`.
    pub fn is_recent_mcp_client(&self, identity: &Identity, within: Duration) -> bool {
        let clients = self.mcp_clients.lock().unwrap_or_else(PoisonError::into_inner);
        clients.get(&identity.label).is_some_and(|at| at.elapsed() <= within)
    }

    /// Whether the request carries valid credentials (and for a cookie login, when
    /// `state_changing`, the CSRF header too).
    pub fn authenticated(&self, headers: &HeaderMap, state_changing: bool) -> Result<(), ApiError> {
        self.identify(headers, state_changing).map(drop)
    }

    /// Who the request is from, by its credentials: the daemon's token, a scoped token, or a
    /// web login (whose CSRF header must match on state-changing requests).
    pub fn identify(
        &self,
        headers: &HeaderMap,
        state_changing: bool,
    ) -> Result<Identity, ApiError> {
        let Some(expected) = self.token.as_deref() else { return Ok(Identity::local()) };
        if let Some(given) = bearer(headers) {
            if token_matches(&given, expected) {
                return Ok(Identity::owner());
            }
            if let Some((name, scope)) = self.tokens.as_ref().and_then(|lookup| lookup(&given)) {
                return Ok(Identity { label: format!("api:token {name}"), scope, person: false });
            }
            return Err(ApiError::unauthorized("the API token is not valid"));
        }
        let Some(session) = cookie(headers, SESSION_COOKIE) else {
            return Err(ApiError::unauthorized(
                "this request needs a credential: the API token (Authorization: Bearer, from \
                 $ARIA_HOME/api-token) or a web login (open the link `aria ui` prints)",
            ));
        };
        let csrf = {
            let mut logins = self.logins.lock().unwrap_or_else(PoisonError::into_inner);
            let now = Instant::now();
            let key = logins.keys().find(|s| token_matches(s, &session)).cloned();
            match key.and_then(|k| logins.get_mut(&k).map(|l| (k, l))) {
                Some((_, login)) if now.duration_since(login.last_seen) < self.session_idle => {
                    login.last_seen = now;
                    Some(login.csrf.clone())
                }
                Some((key, _)) => {
                    logins.remove(&key);
                    None
                }
                None => None,
            }
        };
        let Some(csrf) = csrf else {
            return Err(ApiError::unauthorized(
                "the login has expired; open a new login link (`aria ui` prints one)",
            ));
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
        Ok(Identity::web_session())
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
/// login (by token, or by a one-time link), the page itself (it shows the login form) and
/// static assets. The OpenAPI document marks these as needing no credentials. Logging out is
/// not among them: it needs the login's CSRF token, so another page cannot log the user out.
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
                | "/login"
        ),
        Method::POST => path == "/api/v1/login",
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

/// The middleware. A request that passes carries its [`Identity`] as an extension (none for
/// the public paths).
pub async fn guard(
    State(gateway): State<Arc<Gateway>>,
    mut request: Request,
    next: Next,
) -> Response {
    let mut response = match check(&gateway.security, &request) {
        Ok(identity) => {
            if let Some(identity) = identity {
                if request.uri().path() == "/mcp" || request.uri().path().starts_with("/mcp/") {
                    gateway.security.note_mcp_client(&identity);
                }
                request.extensions_mut().insert(identity);
            }
            redact_error(&gateway, next.run(request).await).await
        }
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

fn check(security: &Security, request: &Request) -> Result<Option<Identity>, ApiError> {
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
    let identity = if public(method, path) {
        None
    } else {
        match security.identify(headers, state_changing(method)) {
            Ok(identity) => Some(identity),
            Err(refused) => {
                if !security.admit(&security.failures, client) {
                    return Err(too_many(security));
                }
                return Err(refused);
            }
        }
    };
    if let Some(identity) = &identity
        && !identity.scope.permits(method, path, upgrade)
    {
        return Err(ApiError::forbidden(
            format!(
                "the credential {} has the scope `{}`, which does not allow {method} {path}",
                identity.label,
                identity.scope.as_str()
            ),
            "use a token whose scope allows it (aria tokens add NAME --scope \
             read|chat|mcp|admin), or the web UI",
        ));
    }
    if rate_limited(method, path) && !security.admit(&security.buckets, client) {
        return Err(too_many(security));
    }
    Ok(identity)
}

#[cfg(test)]
mod tests;
