//! `GET /api/v1/ws`: the API over one WebSocket. The client sends JSON frames —
//! `{"type": "message", "conversation_id"?, "content"}` starts a run (in a new conversation
//! without an id), `{"type": "cancel", "session_id"}` stops one, `{"type": "approve", "id",
//! "decision"}` answers an approval question — and receives each event of the runs it started
//! as `{"event": NAME, "data": {...}}`, the same events as the SSE streams, plus
//! `conversation_id` and `session_id` so several runs can stream on one socket at once.
//!
//! Every notification (a scheduled job ran, a heartbeat) is sent to every open socket as
//! `{"event": "notification", "data": {...}}`, the record `GET /api/v1/notifications` lists.
//!
//! A frame that cannot be understood is answered with an `error` frame; the socket stays open.
//! Runs started here ask their approval questions on this socket. A run goes on when the socket
//! closes (follow it with `GET /api/v1/runs/{id}/events`). When the daemon begins to stop, the
//! socket takes no new runs and closes (`1001 going away`) once the runs it follows have ended.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade, close_code};
use axum::response::{IntoResponse, Response};
use futures::{SinkExt, StreamExt};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tracing::Instrument;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::Gateway;
use crate::approvals::Decision;
use crate::error::{ApiError, ErrorBody};
use crate::runs::{Channel, Event, Start};
use crate::security::Identity;

pub fn routes() -> OpenApiRouter<Arc<Gateway>> {
    OpenApiRouter::new().routes(routes!(upgrade))
}

/// What a client may send.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
enum ClientFrame {
    Message {
        #[serde(default)]
        conversation_id: Option<String>,
        content: String,
    },
    Cancel {
        session_id: String,
    },
    Approve {
        id: String,
        decision: Decision,
    },
}

const FRAMES_HINT: &str = "send JSON text frames: {\"type\": \"message\", \"conversation_id\"?, \
    \"content\"}, {\"type\": \"cancel\", \"session_id\"} or {\"type\": \"approve\", \"id\", \
    \"decision\": \"approve\" | \"approve_session\" | \"deny\"}";

/// Upgrades to a WebSocket that starts runs and streams their events (see the module
/// documentation for the frames).
#[utoipa::path(get, path = "/api/v1/ws", tag = "runs",
    responses((status = 101, description = "switching to the WebSocket protocol"),
              (status = 400, body = ErrorBody, description = "not a WebSocket upgrade"),
              (status = 503, body = ErrorBody)))]
async fn upgrade(
    State(gw): State<Arc<Gateway>>,
    crate::extract::ClientIp(client): crate::extract::ClientIp,
    by: Option<axum::Extension<Identity>>,
    ws: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Response {
    let by = by.map_or_else(Identity::unknown, |e| e.0);
    if let Err(e) = gw.accepting() {
        return e.into_response();
    }
    let ws = match ws {
        Ok(ws) => ws,
        Err(e) => {
            return ApiError::bad_request(
                format!("this path takes a WebSocket upgrade: {}", e.body_text()),
                "connect with a WebSocket client (ws://HOST/api/v1/ws)",
            )
            .into_response();
        }
    };
    ws.max_message_size(crate::BODY_LIMIT).max_frame_size(crate::BODY_LIMIT).on_upgrade(
        move |socket| {
            let span = tracing::info_span!("ws");
            serve(gw, socket, client, by).instrument(span)
        },
    )
}

/// Frames go out through one writer task, so runs can stream while the reader waits.
type Outbox = mpsc::UnboundedSender<Message>;

async fn serve(gw: Arc<Gateway>, socket: WebSocket, client: std::net::IpAddr, by: Identity) {
    let (mut sink, mut incoming) = socket.split();
    let (outbox, mut out) = mpsc::unbounded_channel::<Message>();
    let writer = tokio::spawn(
        async move {
            while let Some(frame) = out.recv().await {
                if sink.send(frame).await.is_err() {
                    break;
                }
            }
            let _ = sink.close().await;
        }
        .instrument(tracing::info_span!("ws_writer")),
    );
    let mut followers = JoinSet::new();
    let mut stopping = false;
    let mut notifications = gw.notifications.subscribe();
    let mut listening = true;
    loop {
        // A stopping daemon starts no runs; the socket closes once its runs have ended (or
        // were stopped by the daemon, which their followers hear as an `error` event).
        if stopping && followers.is_empty() {
            let _ = outbox.send(Message::Close(Some(CloseFrame {
                code: close_code::AWAY,
                reason: "the daemon is stopping".into(),
            })));
            break;
        }
        tokio::select! {
            () = gw.shutdown.cancelled(), if !stopping => stopping = true,
            frame = incoming.next() => match frame {
                Some(Ok(Message::Text(text))) => {
                    if let Err(e) = handle(&gw, client, &by, text.as_str(), &outbox, &mut followers) {
                        send(&outbox, &json!({"event": "error", "data": e.body().error}));
                    }
                }
                Some(Ok(Message::Binary(_))) => {
                    let e = ApiError::bad_request("binary frames are not understood", FRAMES_HINT);
                    send(&outbox, &json!({"event": "error", "data": e.body().error}));
                }
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break,
                Some(Ok(Message::Ping(_) | Message::Pong(_))) => {}
            },
            Some(_) = followers.join_next(), if !followers.is_empty() => {}
            note = notifications.recv(), if listening => match note {
                Ok(n) => {
                    let data = crate::routes::schedules::notification_json(&n);
                    send(&outbox, &json!({"event": "notification", "data": data}));
                }
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                // The hub lives as long as the gateway; stop listening if it goes.
                Err(tokio::sync::broadcast::error::RecvError::Closed) => listening = false,
            },
        }
    }
    // The runs go on; only following them here stops.
    followers.abort_all();
    drop(outbox);
    let _ = tokio::time::timeout(Duration::from_secs(5), writer).await;
}

fn send(outbox: &Outbox, frame: &Value) {
    let _ = outbox.send(Message::Text(frame.to_string().into()));
}

fn handle(
    gw: &Arc<Gateway>,
    client: std::net::IpAddr,
    by: &Identity,
    text: &str,
    outbox: &Outbox,
    followers: &mut JoinSet<()>,
) -> Result<(), ApiError> {
    let frame: ClientFrame = serde_json::from_str(text).map_err(|e| {
        let what = if e.is_data() { "does not have the expected fields" } else { "is not JSON" };
        ApiError::bad_request(format!("the frame {what}: {e}"), FRAMES_HINT)
    })?;
    match frame {
        ClientFrame::Message { conversation_id, content } => {
            gw.accepting()?;
            // A message frame starts a run like a POST does, and counts like one.
            if !gw.security.admit_request(client) {
                return Err(crate::security::too_many(&gw.security));
            }
            if content.trim().is_empty() {
                return Err(ApiError::bad_request(
                    "the message is empty",
                    "say something in `content`",
                ));
            }
            let conversation_id = match conversation_id {
                Some(id) if gw.store.conversation(&id)?.is_some() => id,
                Some(id) => {
                    return Err(ApiError::not_found(
                        format!("no conversation {id}"),
                        "leave `conversation_id` out to start a new one, or list them with GET \
                         /api/v1/conversations",
                    ));
                }
                None => gw.store.create_conversation("")?.id,
            };
            let hub = gw.runs.start_by(
                gw.clone(),
                conversation_id.clone(),
                Start::Message(content),
                Channel::Ws,
                by.client_label(),
            );
            let events = hub.follow();
            let span = tracing::info_span!("ws_follow", conversation_id = %conversation_id);
            followers.spawn(follow(events, outbox.clone(), conversation_id).instrument(span));
            Ok(())
        }
        ClientFrame::Cancel { session_id } => match gw.runs.session(&session_id) {
            Some(hub) if !hub.is_finished() => {
                hub.cancel.cancel();
                Ok(())
            }
            _ => Err(match gw.store.session(&session_id)? {
                Some(s) => ApiError::conflict(
                    format!("run {session_id} is not running in this daemon (it is {})", s.state),
                    "only a run in flight here can be cancelled",
                ),
                None => ApiError::not_found(
                    format!("no run {session_id}"),
                    "list them with GET /api/v1/runs",
                ),
            }),
        },
        ClientFrame::Approve { id, decision } => {
            crate::approvals::answer_request(gw, &id, decision, by).map(|_| ())
        }
    }
}

/// Sends one run's events to the socket until the run ends or the socket goes away.
async fn follow(
    mut events: mpsc::UnboundedReceiver<Event>,
    outbox: Outbox,
    conversation_id: String,
) {
    let mut session_id: Option<String> = None;
    while let Some(event) = events.recv().await {
        if session_id.is_none() {
            session_id = event.data.get("session_id").and_then(Value::as_str).map(str::to_owned);
        }
        let frame = json!({
            "event": event.event,
            "data": event.data,
            "conversation_id": conversation_id,
            "session_id": session_id,
        });
        if outbox.send(Message::Text(frame.to_string().into())).is_err() {
            break;
        }
    }
}
