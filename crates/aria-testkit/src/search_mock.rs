//! A fake web search service on a loopback port, for `web_search`'s tests: the Brave Search
//! API (`GET /res/v1/web/search`, key in `X-Subscription-Token`, answer under `web.results`
//! with `description` snippets) and SearXNG (`GET /search?format=json`, answer under `results`
//! with `content` snippets) from one server.
//!
//! Every query gets the same scripted results ([`FakeSearch::set_results`]); every request is
//! kept ([`FakeSearch::requests`]: path and query parameters); failures can be scripted for
//! the next requests ([`FakeSearch::fail_next`]: a status, with `Retry-After` for 429).

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use axum::Router;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};

use crate::mock::Loopback;

/// One received search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchRequest {
    pub path: String,
    pub params: BTreeMap<String, String>,
    /// The `X-Subscription-Token` sent, if any.
    pub key: Option<String>,
}

#[derive(Debug, Default)]
struct Inner {
    results: Vec<(String, String, String)>,
    requests: Vec<SearchRequest>,
    failures: VecDeque<u16>,
    key: Option<String>,
}

#[derive(Debug, Clone, Default)]
struct Shared(Arc<Mutex<Inner>>);

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The fake service; dropping it stops the server.
#[derive(Debug)]
pub struct FakeSearch {
    shared: Shared,
    server: Loopback,
}

impl FakeSearch {
    /// Starts the server. `key`: the Brave key it accepts (any other is answered 401).
    pub fn start(key: &str) -> FakeSearch {
        let shared = Shared::default();
        shared.lock().key = Some(key.to_owned());
        shared.lock().results = vec![
            (
                "The Rust Programming Language".into(),
                "https://doc.rust-lang.org/book/".into(),
                "The <strong>Rust</strong> book".into(),
            ),
            (
                "Rust by Example".into(),
                "https://doc.rust-lang.org/rust-by-example/".into(),
                "Learn Rust with examples".into(),
            ),
        ];
        let app = Router::new()
            .route("/res/v1/web/search", get(brave))
            .route("/search", get(searxng))
            .with_state(shared.clone());
        let server = match Loopback::serve("search-mock", app) {
            Ok(server) => server,
            Err(e) => panic!("the fake search service could not start: {e}"),
        };
        FakeSearch { shared, server }
    }

    /// The Brave endpoint (for `BRAVE_SEARCH_URL`).
    pub fn brave_url(&self) -> String {
        format!("http://{}/res/v1/web/search", self.server.addr)
    }

    /// The SearXNG base URL (for `SEARXNG_URL`).
    pub fn searxng_url(&self) -> String {
        format!("http://{}", self.server.addr)
    }

    /// The results every query gets: (title, URL, snippet).
    pub fn set_results(&self, results: Vec<(&str, &str, &str)>) {
        self.shared.lock().results =
            results.into_iter().map(|(t, u, s)| (t.into(), u.into(), s.into())).collect();
    }

    /// The next `count` requests are answered with `status` (429 carries `Retry-After: 7`).
    pub fn fail_next(&self, status: u16, count: usize) {
        self.shared.lock().failures.extend(std::iter::repeat_n(status, count));
    }

    pub fn requests(&self) -> Vec<SearchRequest> {
        self.shared.lock().requests.clone()
    }
}

fn record(
    shared: &Shared,
    path: &str,
    params: BTreeMap<String, String>,
    headers: &HeaderMap,
) -> Option<Response> {
    let key = headers.get("x-subscription-token").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let mut inner = shared.lock();
    inner.requests.push(SearchRequest { path: path.into(), params, key });
    let status = inner.failures.pop_front()?;
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (code, axum::Json(json!({"error": "scripted failure"}))).into_response();
    if status == 429 {
        response.headers_mut().insert("retry-after", axum::http::HeaderValue::from_static("7"));
    }
    Some(response)
}

async fn brave(
    State(shared): State<Shared>,
    headers: HeaderMap,
    Query(params): Query<BTreeMap<String, String>>,
) -> Response {
    let sent = headers.get("x-subscription-token").and_then(|v| v.to_str().ok()).map(str::to_owned);
    if let Some(failure) = record(&shared, "/res/v1/web/search", params, &headers) {
        return failure;
    }
    if sent != shared.lock().key {
        return (StatusCode::UNAUTHORIZED, axum::Json(json!({"error": "bad key"}))).into_response();
    }
    let results: Vec<Value> = shared
        .lock()
        .results
        .iter()
        .map(|(t, u, s)| json!({"title": t, "url": u, "description": s}))
        .collect();
    axum::Json(json!({"type": "search", "web": {"results": results}})).into_response()
}

async fn searxng(
    State(shared): State<Shared>,
    headers: HeaderMap,
    Query(params): Query<BTreeMap<String, String>>,
) -> Response {
    let json_wanted = params.get("format").is_some_and(|f| f == "json");
    if let Some(failure) = record(&shared, "/search", params, &headers) {
        return failure;
    }
    if !json_wanted {
        return (StatusCode::FORBIDDEN, "format not allowed").into_response();
    }
    let results: Vec<Value> = shared
        .lock()
        .results
        .iter()
        .map(|(t, u, s)| json!({"title": t, "url": u, "content": s}))
        .collect();
    axum::Json(json!({"query": "", "results": results})).into_response()
}
