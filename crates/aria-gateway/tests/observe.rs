//! The read-only observability endpoints against a real daemon: their shapes, the
//! health roll-up under injected failures (a read-only database, a stuck outbox message, a
//! scheduler that missed its tick), and the Prometheus text format.
// Helper functions unwrap too; clippy's test exemption covers only #[test] fns.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::HashMap;
use std::sync::Arc;

use aria_scheduler::scheduler::{FakeClock, Scheduler, SchedulerConfig};
use aria_testkit::scripted::Turn;
use common::Harness;
use pretty_assertions::assert_eq;
use reqwest::StatusCode;
use serde_json::{Value, json};

/// `GET {path}` on the daemon's root (not under /api/v1): status, content type, body.
async fn get_root(h: &Harness, path: &str) -> (StatusCode, String, String) {
    let root = h.base_url.trim_end_matches("/api/v1");
    let response = h.client.get(format!("{root}{path}")).send().await.expect("request");
    let status = response.status();
    let kind = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    (status, kind, response.text().await.expect("body"))
}

async fn json_root(h: &Harness, path: &str) -> (StatusCode, Value) {
    let (status, _, body) = get_root(h, path).await;
    (status, serde_json::from_str(&body).unwrap_or(Value::String(body)))
}

async fn one_run_with_a_tool_call(h: &Harness) {
    let (_, conversation) = h.post("/conversations", json!({})).await;
    let path = format!("/conversations/{}/messages", conversation["id"].as_str().unwrap());
    let (status, reply) = h.post(&path, json!({"content": "list my files"})).await;
    assert_eq!(status, StatusCode::OK, "{reply}");
}

fn check<'a>(health: &'a Value, name: &str) -> &'a Value {
    health["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no check {name}: {health:#}"))
}

#[tokio::test]
async fn status_and_health_have_their_shapes_and_other_methods_get_405() {
    let h =
        Harness::start(vec![Turn::tool("file_list", json!({"path": "."})), Turn::text("ok")]).await;
    one_run_with_a_tool_call(&h).await;
    h.gateway.status.collect(&h.gateway).await;
    let (status, body) = json_root(&h, "/status").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body["uptime_secs"].is_u64(), "{body:#}");
    assert_eq!(body["status"], json!("healthy"), "{body:#}");
    assert_eq!(body["process"]["pid"], json!(std::process::id()));
    assert!(body["process"]["rss_bytes"].as_u64().unwrap() > 0);
    assert_eq!(body["history"].as_array().unwrap().len(), 24);
    let now = body["history"][23].clone();
    assert_eq!((now["runs"].as_u64(), now["tool_calls"].as_u64()), (Some(1), Some(1)), "{now:#}");
    assert!(body["runs_by_state"].as_array().unwrap().iter().any(|r| r[0] == "done"));

    let (status, health) = json_root(&h, "/health").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(health["status"], json!("healthy"), "{health:#}");
    for name in ["database", "disk", "scheduler", "outbox", "jobs", "models", "runs"] {
        assert_eq!(check(&health, name)["status"], json!("healthy"), "{name}: {health:#}");
    }

    let root = h.base_url.trim_end_matches("/api/v1");
    for path in ["/status", "/health", "/metrics", "/metrics/json"] {
        let response = h.client.post(format!("{root}{path}")).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED, "POST {path}");
    }
}

#[tokio::test]
async fn health_rolls_up_injected_failures() {
    let h = Harness::start(vec![Turn::text("hi")]).await;

    // A message waiting longer than the stuck threshold: degraded.
    h.store.outbox_send("telegram", 42, &json!({"text": "hi"}), 0).unwrap();
    h.gateway.status.set_limits(aria_gateway::status::Limits {
        outbox_stuck: std::time::Duration::ZERO,
        ..Default::default()
    });
    h.gateway.status.collect(&h.gateway).await;
    let (status, health) = json_root(&h, "/health").await;
    assert_eq!(status, StatusCode::OK, "degraded still answers 200");
    assert_eq!(health["status"], json!("degraded"), "{health:#}");
    assert_eq!(check(&health, "outbox")["status"], json!("degraded"));
    h.gateway.status.set_limits(Default::default());

    // A scheduler whose last tick was ten minutes ago: degraded.
    let clock =
        Arc::new(FakeClock::new(jiff::Timestamp::now() - jiff::SignedDuration::from_mins(10)));
    let scheduler = Arc::new(Scheduler::new(
        h.store.clone(),
        clock,
        Arc::new(aria_gateway::jobs::JobRunner { gateway: h.gateway.clone() }),
        h.gateway.notifications.clone(),
        SchedulerConfig::default(),
    ));
    scheduler.tick().unwrap();
    h.gateway.notifications.set_scheduler(&scheduler);
    h.gateway.status.collect(&h.gateway).await;
    let (_, health) = json_root(&h, "/health").await;
    let tick = check(&health, "scheduler");
    assert_eq!(tick["status"], json!("degraded"), "{health:#}");
    assert!(tick["detail"].as_str().unwrap().contains("missed its tick"), "{tick}");

    // A database that cannot be written: unhealthy, and 503.
    h.store.set_read_only(true).unwrap();
    h.gateway.status.collect(&h.gateway).await;
    let (status, health) = json_root(&h, "/health").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{health:#}");
    assert_eq!(health["status"], json!("unhealthy"));
    assert_eq!(check(&health, "database")["status"], json!("unhealthy"));
    h.store.set_read_only(false).unwrap();
    h.gateway.status.collect(&h.gateway).await;
    let (status, _) = json_root(&h, "/health").await;
    assert_eq!(status, StatusCode::OK, "recovered");
}

/// Parses the Prometheus text format strictly enough to catch what a scraper would reject:
/// every sample's family is declared with a known type before it, names and labels are
/// well-formed, values are numbers, and histogram buckets never decrease and end in `+Inf`.
fn parse_prometheus(text: &str) -> HashMap<String, f64> {
    let mut types: HashMap<String, String> = HashMap::new();
    let mut samples = HashMap::new();
    let name_ok = |n: &str| {
        !n.is_empty()
            && n.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
            && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
    };
    let mut last_bucket: Option<(String, f64)> = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect("TYPE name kind");
            assert!(name_ok(name), "bad name {name}");
            assert!(["counter", "gauge", "histogram"].contains(&kind), "{line}");
            assert!(types.insert(name.to_owned(), kind.to_owned()).is_none(), "twice: {name}");
            continue;
        }
        if line.starts_with("# HELP ") {
            continue;
        }
        assert!(!line.starts_with('#') && !line.is_empty(), "unexpected line {line:?}");
        let (series, value) = line.rsplit_once(' ').expect("sample value");
        let value: f64 = match value {
            "+Inf" => f64::INFINITY,
            v => v.parse().unwrap_or_else(|_| panic!("not a number: {line}")),
        };
        let name = series.split('{').next().unwrap();
        assert!(name_ok(name), "bad sample name {line}");
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| {
                name.strip_suffix(s).filter(|f| types.get(*f).is_some_and(|t| t == "histogram"))
            })
            .unwrap_or(name);
        assert!(types.contains_key(family), "sample before its TYPE: {line}");
        if let Some(labels) = series.strip_prefix(name)
            && !labels.is_empty()
        {
            assert!(labels.starts_with('{') && labels.ends_with('}'), "{line}");
            for pair in labels[1..labels.len() - 1].split("\",") {
                let (k, v) = pair.split_once("=\"").unwrap_or_else(|| panic!("label in {line}"));
                assert!(name_ok(k), "bad label name in {line}");
                assert!(!v.trim_end_matches('"').contains('\n'), "{line}");
            }
        }
        if name.ends_with("_bucket") {
            let key = series.split("le=").next().unwrap().to_owned();
            if let Some((prev_key, prev)) = &last_bucket
                && *prev_key == key
            {
                assert!(value >= *prev, "buckets decrease: {line}");
            }
            last_bucket = Some((key, value));
        }
        samples.insert(series.to_owned(), value);
    }
    samples
}

#[tokio::test]
async fn metrics_are_valid_prometheus_text_and_count_what_ran() {
    let h =
        Harness::start(vec![Turn::tool("file_list", json!({"path": "."})), Turn::text("ok")]).await;
    one_run_with_a_tool_call(&h).await;
    h.gateway.status.collect(&h.gateway).await;
    let (status, kind, text) = get_root(&h, "/metrics").await;
    assert_eq!(status, StatusCode::OK);
    assert!(kind.starts_with("text/plain; version=0.0.4"), "{kind}");
    let samples = parse_prometheus(&text);
    assert_eq!(
        samples.get("aria_tool_calls_total{tool=\"file_list\",tier=\"read\",outcome=\"ok\"}"),
        Some(&1.0),
        "{text}"
    );
    assert_eq!(
        samples.get("aria_model_calls_total{model=\"scripted-model\",outcome=\"ok\"}"),
        Some(&2.0),
        "{text}"
    );
    assert_eq!(samples.get("aria_runs_total{state=\"done\"}"), Some(&1.0), "{text}");
    assert_eq!(
        samples.get("aria_tool_call_duration_seconds_bucket{tool=\"file_list\",le=\"+Inf\"}"),
        Some(&1.0)
    );
    assert_eq!(samples.get("aria_health_status"), Some(&0.0));
    assert!(samples.contains_key("process_resident_memory_bytes"));
    for name in samples.keys() {
        assert!(name.starts_with("aria_") || name.starts_with("process_"), "{name}");
    }
    let (_, json) = json_root(&h, "/metrics/json").await;
    let names: Vec<&str> =
        json["metrics"].as_array().unwrap().iter().map(|m| m["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"aria_tool_calls_total"), "{names:?}");
}

#[tokio::test]
async fn the_status_page_is_served_with_its_assets() {
    let h = Harness::start(vec![]).await;
    let (status, kind, page) = get_root(&h, "/ui/status").await;
    assert_eq!(status, StatusCode::OK);
    assert!(kind.starts_with("text/html"));
    assert!(page.contains("/ui/status.js") && page.contains("ARIA status"));
    let (status, kind, _) = get_root(&h, "/ui/status.js").await;
    assert_eq!((status, kind.starts_with("text/javascript")), (StatusCode::OK, true));
}

static IDLE_CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn count_idle() {
    IDLE_CALLS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
}

#[tokio::test]
async fn the_collector_gives_back_memory_after_each_idle_collection() {
    let h = Harness::start(vec![Turn::text("ok")]).await;
    let stop = tokio_util::sync::CancellationToken::new();
    let task = tokio::spawn(aria_gateway::status::run(
        h.gateway.clone(),
        std::time::Duration::from_millis(20),
        stop.clone(),
        count_idle,
    ));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while IDLE_CALLS.load(std::sync::atomic::Ordering::SeqCst) < 3 {
        assert!(std::time::Instant::now() < deadline, "when_idle was not called 3 times");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    stop.cancel();
    task.await.expect("the collector stops when told");
    // Every call came after a collection: the status it keeps is filled in.
    let (status, body) = json_root(&h, "/status").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body["checks"].as_array().is_some_and(|c| !c.is_empty()), "{body}");
}
