//! A run's events as Server-Sent Events, and the non-streaming wait for its reply.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::Stream;

use crate::error::{ApiError, ApiResult};
use crate::runs::RunHub;

/// Follows `hub` as an SSE response: everything it said so far, then each event as it comes;
/// the response ends after the run's last event (`done` or `error`).
pub fn stream(hub: &Arc<RunHub>) -> Response {
    let rx = hub.follow();
    let events = futures::stream::unfold(rx, |mut rx| async move {
        let event = rx.recv().await?;
        let sse = SseEvent::default().event(event.event).data(event.data.to_string());
        Some((Ok::<_, Infallible>(sse), rx))
    });
    sse_response(events)
}

fn sse_response(
    events: impl Stream<Item = Result<SseEvent, Infallible>> + Send + 'static,
) -> Response {
    Sse::new(events).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))).into_response()
}

/// Waits for the run's end and returns its reply (or its error).
pub async fn wait(hub: &Arc<RunHub>) -> ApiResult<crate::runs::Reply> {
    let mut rx = hub.follow();
    let mut error = None;
    while let Some(event) = rx.recv().await {
        if event.event == "error" {
            error = Some(event.data);
        }
    }
    match (hub.reply(), error) {
        (Some(reply), _) => Ok(reply),
        (None, Some(e)) => Err(ApiError::internal(
            "the run could not go on",
            e.get("message").and_then(|m| m.as_str()).unwrap_or("unknown error"),
        )),
        (None, None) => Err(ApiError::unavailable("the run was stopped before it ended")),
    }
}
