//! `/api/v1/schedules` and `/api/v1/notifications` against a real daemon: jobs made, read,
//! edited, run and deleted over HTTP, the refusals (400, 404, 409, 503), the fire-time
//! calculator, and notifications listed and streamed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use aria_scheduler::scheduler::{Scheduler, SchedulerConfig, SystemClock};
use common::{Harness, assert_error};
use pretty_assertions::assert_eq;
use reqwest::StatusCode;
use serde_json::json;

fn tea() -> serde_json::Value {
    json!({
        "name": "tea",
        "cron": "0 16 * * 1-5",
        "tz": "Europe/Berlin",
        "action": {"kind": "notify", "message": "Time for tea"},
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_are_made_read_edited_and_deleted() {
    let h = Harness::start(vec![]).await;
    let (status, job) = h.post("/schedules", tea()).await;
    assert_eq!(status, StatusCode::CREATED, "{job}");
    assert_eq!(job["name"], "tea");
    assert_eq!(job["cron"], "0 16 * * 1-5");
    assert_eq!(job["tz"], "Europe/Berlin");
    assert_eq!(job["action"], json!({"kind": "notify", "message": "Time for tea"}));
    assert_eq!(job["enabled"], true);
    assert_eq!(job["created_by"], "user");
    assert!(job["next_run"].as_str().unwrap().contains("T16:00:00+0"), "{job}");
    let stored = h.store.job("tea").unwrap().unwrap();
    assert_eq!(stored.created_by, "user");

    let (status, list) = h.get("/schedules").await;
    assert_eq!(status, StatusCode::OK);
    let names: Vec<&str> =
        list["items"].as_array().unwrap().iter().map(|j| j["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["tea"]);

    let (status, one) = h.get("/schedules/tea").await;
    assert_eq!(status, StatusCode::OK, "{one}");
    assert_eq!(one["next_runs"].as_array().unwrap().len(), 3, "{one}");
    assert_eq!(one["next_runs"][0], job["next_run"]);
    assert_eq!(one["last_runs"], json!([]));

    let (status, edited) = h.patch("/schedules/tea", json!({"cron": "@daily"})).await;
    assert_eq!(status, StatusCode::OK, "{edited}");
    assert_eq!(edited["cron"], "@daily");
    assert_eq!(edited["action"]["message"], "Time for tea", "unchanged");
    let (_, edited) = h
        .patch(
            "/schedules/tea",
            json!({"enabled": false, "action": {"kind": "agent", "prompt": "Brew", "max_cost_usd": 0.5}}),
        )
        .await;
    assert_eq!(edited["enabled"], false, "{edited}");
    assert_eq!(edited["next_run"], json!(null), "a disabled job never fires");
    assert_eq!(edited["action"], json!({"kind": "agent", "prompt": "Brew", "max_cost_usd": 0.5}));
    let (_, one) = h.get("/schedules/tea").await;
    assert_eq!(one["next_runs"], json!([]));

    let (status, _) = h.delete("/schedules/tea").await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert!(h.store.job("tea").unwrap().is_none());
    assert_error(&h.get("/schedules/tea").await, StatusCode::NOT_FOUND, "not_found");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_jobs_are_refused_with_what_to_fix() {
    let h = Harness::start(vec![]).await;
    let with = |key: &str, value: serde_json::Value| {
        let mut body = tea();
        body[key] = value;
        body
    };
    for (body, says) in [
        (with("cron", json!("61 * * * *")), "61"),
        (with("tz", json!("Mars/Olympus")), "Mars/Olympus"),
        (with("name", json!("two words")), "not a job name"),
        (with("name", json!("preview")), "preview"),
        (with("action", json!({"kind": "notify", "message": "  "})), "message"),
        (with("action", json!({"kind": "agent", "prompt": "x", "max_cost_usd": -1})), "max_cost"),
        (with("action", json!({"kind": "shell", "command": "rm"})), "shell"),
        (with("action", json!({"kind": "notify", "message": "m", "extra": 1})), "extra"),
    ] {
        let answer = h.post("/schedules", body.clone()).await;
        assert_error(&answer, StatusCode::BAD_REQUEST, "bad_request");
        let message = answer.1["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{body}: {message}");
    }
    assert!(h.store.jobs().unwrap().is_empty(), "nothing was made");

    assert_eq!(h.post("/schedules", tea()).await.0, StatusCode::CREATED);
    let duplicate = h.post("/schedules", tea()).await;
    assert_error(&duplicate, StatusCode::CONFLICT, "conflict");
    assert!(duplicate.1["error"]["message"].as_str().unwrap().contains("tea"));

    assert_error(
        &h.patch("/schedules/tea", json!({})).await,
        StatusCode::BAD_REQUEST,
        "bad_request",
    );
    assert_error(
        &h.patch("/schedules/tea", json!({"cron": "not a cron"})).await,
        StatusCode::BAD_REQUEST,
        "bad_request",
    );
    assert_eq!(h.store.job("tea").unwrap().unwrap().cron, "0 16 * * 1-5", "unchanged");
    assert_error(
        &h.patch("/schedules/nope", json!({"enabled": false})).await,
        StatusCode::NOT_FOUND,
        "not_found",
    );
    assert_error(&h.delete("/schedules/nope").await, StatusCode::NOT_FOUND, "not_found");
    assert_error(&h.get("/schedules/nope/history").await, StatusCode::NOT_FOUND, "not_found");

    // No scheduler in this daemon: running now is a 503 that says so (an unknown job a 404).
    let refused = h.post("/schedules/tea/run", json!({})).await;
    assert_error(&refused, StatusCode::SERVICE_UNAVAILABLE, "unavailable");
    assert!(refused.1["error"]["message"].as_str().unwrap().contains("no scheduler"));
    assert_error(
        &h.post("/schedules/nope/run", json!({})).await,
        StatusCode::NOT_FOUND,
        "not_found",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preview_computes_fires_like_the_cli() {
    let h = Harness::start(vec![]).await;
    // Berlin moves to summer time on 29 March 2026: the offset changes, 09:00 stays.
    let (status, body) = h
        .get("/schedules/preview?cron=0%209%20*%20*%20*&tz=Europe/Berlin&after=2026-03-28T09:00:00%2B01:00&count=3")
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body,
        json!({"fires": [
            "2026-03-29T09:00:00+02:00",
            "2026-03-30T09:00:00+02:00",
            "2026-03-31T09:00:00+02:00",
        ]}),
        "after is exclusive"
    );
    let (_, body) = h.get("/schedules/preview?cron=@hourly&tz=UTC&count=100000").await;
    assert_eq!(body["fires"].as_array().unwrap().len(), 1000, "the count is capped");
    let (_, body) = h.get("/schedules/preview?cron=@daily&tz=UTC").await;
    assert_eq!(body["fires"].as_array().unwrap().len(), 5, "five by default");
    for bad in [
        "/schedules/preview",
        "/schedules/preview?cron=99%20*%20*%20*%20*",
        "/schedules/preview?cron=@daily&tz=Nowhere/Land",
        "/schedules/preview?cron=@daily&after=yesterday",
    ] {
        assert_error(&h.get(bad).await, StatusCode::BAD_REQUEST, "bad_request");
    }
}

/// Reads an SSE response until `want` appears in it (or 10 s pass).
async fn read_until(response: &mut reqwest::Response, want: &str) -> String {
    let mut text = String::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !text.contains(want) {
        let chunk = tokio::time::timeout_at(deadline, response.chunk()).await;
        match chunk {
            Ok(Ok(Some(bytes))) => text.push_str(&String::from_utf8_lossy(&bytes)),
            other => panic!("the stream ended or stalled before {want:?}: {other:?}\n{text}"),
        }
    }
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_run_now_is_recorded_listed_and_streamed() {
    let h = Harness::start(vec![]).await;
    let scheduler = Arc::new(Scheduler::new(
        h.store.clone(),
        Arc::new(SystemClock),
        Arc::new(aria_gateway::jobs::JobRunner { gateway: h.gateway.clone() }),
        h.gateway.notifications.clone(),
        SchedulerConfig::default(),
    ));
    h.gateway.notifications.set_scheduler(&scheduler);
    let mut stream =
        h.client.get(format!("{}/notifications/events", h.base_url)).send().await.unwrap();
    assert_eq!(stream.status(), StatusCode::OK);
    assert!(
        stream.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"),
        "{:?}",
        stream.headers()
    );

    assert_eq!(h.post("/schedules", tea()).await.0, StatusCode::CREATED);
    let (status, notice) = h.post("/schedules/tea/run", json!({})).await;
    assert_eq!(status, StatusCode::OK, "{notice}");
    assert_eq!(notice["kind"], "completed");
    assert_eq!(notice["job"], "tea");
    assert!(notice["text"].as_str().unwrap().contains("Time for tea"), "{notice}");

    let events = read_until(&mut stream, "Time for tea").await;
    assert!(events.contains("event: notification"), "{events}");
    let data = events.lines().find_map(|l| l.strip_prefix("data: ")).unwrap();
    let streamed: serde_json::Value = serde_json::from_str(data).unwrap();
    assert_eq!(streamed["job"], "tea");
    assert_eq!(streamed["kind"], "completed");

    let (_, history) = h.get("/schedules/tea/history?limit=5").await;
    let runs = history["items"].as_array().unwrap();
    assert_eq!(runs.len(), 1, "{history}");
    assert_eq!(runs[0]["outcome"], "ok");
    assert_eq!(runs[0]["slot"], notice["slot"]);
    let (_, one) = h.get("/schedules/tea").await;
    assert_eq!(one["last_runs"].as_array().unwrap().len(), 1, "{one}");

    // A second one, published directly: the list is newest first and pages with `before`.
    h.gateway.notifications.publish("heartbeat", None, None, "all well");
    let (status, list) = h.get("/notifications?limit=10").await;
    assert_eq!(status, StatusCode::OK, "{list}");
    let items = list["items"].as_array().unwrap();
    assert_eq!(items.len(), 2, "{list}");
    assert_eq!(items[0]["text"], "all well");
    assert_eq!(items[1]["id"], streamed["id"]);
    assert!(items[0]["pushed"].as_array().unwrap().contains(&json!("web")));
    let first = items[0]["id"].as_i64().unwrap();
    let (_, older) = h.get(&format!("/notifications?before={first}")).await;
    assert_eq!(older["items"].as_array().unwrap().len(), 1);
    assert_eq!(older["items"][0]["job"], "tea");
    read_until(&mut stream, "all well").await;
    assert_error(&h.get("/notifications?before=x").await, StatusCode::BAD_REQUEST, "bad_request");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websocket_clients_get_notification_frames() {
    use futures::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;
    let h = Harness::start(vec![]).await;
    let url = format!("{}/ws", h.base_url.replace("http://", "ws://"));
    let (mut socket, _) = tokio_tungstenite::connect_async(url).await.unwrap();
    async fn next(
        socket: &mut (
                 impl StreamExt<Item = Result<Message, tokio_tungstenite::tungstenite::Error>> + Unpin
             ),
    ) -> serde_json::Value {
        loop {
            let frame = tokio::time::timeout(Duration::from_secs(10), socket.next())
                .await
                .expect("a frame within 10 s")
                .expect("the socket is open")
                .unwrap();
            if let Message::Text(text) = frame {
                return serde_json::from_str(text.as_str()).unwrap();
            }
        }
    }
    // A frame it cannot understand is answered: from then on the socket is served (and hears
    // notifications).
    socket.send(Message::Text("hello?".into())).await.unwrap();
    assert_eq!(next(&mut socket).await["event"], "error");
    let stored = h.gateway.notifications.publish("failed", Some("tea"), None, "The kettle broke");
    let frame = next(&mut socket).await;
    assert_eq!(frame["event"], "notification", "{frame}");
    assert_eq!(frame["data"]["text"], "The kettle broke");
    assert_eq!(frame["data"]["kind"], "failed");
    assert_eq!(frame["data"]["id"], stored.unwrap().id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_notification_stream_ends_when_the_daemon_stops() {
    let h = Harness::start(vec![]).await;
    let mut stream =
        h.client.get(format!("{}/notifications/events", h.base_url)).send().await.unwrap();
    assert_eq!(stream.status(), StatusCode::OK);
    h.gateway.shutdown.cancel();
    let end = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(chunk) = stream.chunk().await.unwrap() {
            assert!(!chunk.is_empty());
        }
    })
    .await;
    assert!(end.is_ok(), "an open stream would hold the daemon's shutdown");
}
