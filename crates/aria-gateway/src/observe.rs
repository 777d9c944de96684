//! The read-only observability endpoints, on the API's listener: `GET /status`
//! (JSON), `GET /health` (JSON, 503 when unhealthy; open without a token, for load balancers
//! and uptime checks), `GET /metrics` (Prometheus text), `GET /metrics/json` and the status page
//! `GET /ui/status`. They change nothing; other methods get 405.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::json;

use crate::Gateway;
use crate::status::Health;

const PAGE: &str = include_str!("../assets/status.html");
const PAGE_JS: &str = include_str!("../assets/status.js");
const PAGE_CSS: &str = include_str!("../assets/status.css");

pub fn routes() -> axum::Router<Arc<Gateway>> {
    axum::Router::new()
        .route("/status", get(status))
        .route("/health", get(health))
        .route("/metrics", get(metrics))
        .route("/metrics/json", get(metrics_json))
        .route("/ui/status", get(|| async { crate::ui::asset("text/html; charset=utf-8", PAGE) }))
        .route(
            "/ui/status.js",
            get(|| async { crate::ui::asset("text/javascript; charset=utf-8", PAGE_JS) }),
        )
        .route(
            "/ui/status.css",
            get(|| async { crate::ui::asset("text/css; charset=utf-8", PAGE_CSS) }),
        )
}

async fn status(State(gw): State<Arc<Gateway>>) -> Response {
    let status = gw.status.status(&gw).await;
    axum::Json(status.as_ref().clone()).into_response()
}

async fn health(State(gw): State<Arc<Gateway>>) -> Response {
    let status = gw.status.status(&gw).await;
    let overall = status.status.unwrap_or(Health::Healthy);
    let code =
        if overall == Health::Unhealthy { StatusCode::SERVICE_UNAVAILABLE } else { StatusCode::OK };
    let body = json!({"status": overall.as_str(), "checks": status.checks, "collected_at": status.collected_at});
    (code, axum::Json(body)).into_response()
}

async fn metrics(State(gw): State<Arc<Gateway>>) -> Response {
    let text = gw.status.families(&gw).to_text();
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], text).into_response()
}

async fn metrics_json(State(gw): State<Arc<Gateway>>) -> Response {
    axum::Json(gw.status.families(&gw).to_json()).into_response()
}
