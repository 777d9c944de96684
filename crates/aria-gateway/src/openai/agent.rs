//! `model: "aria"`: the agent runs the last user message as its task, and its run's events
//! become a `chat.completion` or a stream of chunks.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use aria_api::Usage;
use axum::Json;
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use tokio::sync::mpsc;

use super::wire::{self, CompletionRequest, Meta};
use super::{AGENT_MODEL, CONVERSATION_HEADER, OpenAiError, name_run};
use crate::Gateway;
use crate::runs::{Channel, Event, Reply, RunHub, Start};

/// Cancels the run when the request goes away before it ended (the client disconnected): an
/// OpenAI client that stops reading wants no more of the answer.
struct CancelOnDrop(Arc<RunHub>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if !self.0.is_finished() {
            self.0.cancel.cancel();
        }
    }
}

pub(super) async fn respond(
    gw: Arc<Gateway>,
    headers: &HeaderMap,
    request: CompletionRequest,
    agent: Option<String>,
) -> Result<Response, OpenAiError> {
    let messages = wire::messages(request.raw_messages())?;
    let Some(task) = wire::last_user_text(&messages).filter(|t| !t.trim().is_empty()) else {
        return Err(OpenAiError::invalid(
            Some("messages"),
            "invalid_value",
            "there is no user message with text: the agent's task is the last message with \
             role `user`",
        ));
    };
    let conversation_id = conversation(&gw, headers, agent.as_deref())?;
    let answering_model =
        agent.as_ref().map_or_else(|| AGENT_MODEL.to_owned(), |a| format!("{AGENT_MODEL}:{a}"));
    let hub = gw.runs.start(
        gw.clone(),
        conversation_id.clone(),
        Start::Message(task.to_owned()),
        Channel::OpenAi,
    );
    let guard = CancelOnDrop(hub.clone());
    let mut rx = hub.follow();
    // The run's first event names its session, or says why it could not start.
    let first = rx.recv().await;
    let session_id = match (&first, hub.session_id()) {
        (_, Some(id)) => id,
        (Some(event), None) if event.event == "error" => return Err(run_error(&event.data)),
        _ => {
            return Err(OpenAiError::from(crate::error::ApiError::unavailable(
                "the run was stopped before it started",
            )));
        }
    };
    let meta =
        Meta::new(format!("chatcmpl-{session_id}"), answering_model, request.include_usage());
    let mut answer = Answer { meta, hub, denied: Vec::new(), error: None };
    let first_deltas = answer.observe(first.iter());
    let run = (session_id, conversation_id);
    let mut response = if request.stream() {
        stream(answer, first_deltas, rx, guard)
    } else {
        while let Some(event) = rx.recv().await {
            answer.observe(std::iter::once(&event));
        }
        drop(guard);
        match answer.end() {
            Ok((text, used)) => {
                let body = wire::completion(&answer.meta, Some(&text), &[], "stop", used);
                Json(body).into_response()
            }
            Err(e) => return Err(OpenAiError { run: Some(Box::new(run)), ..e }),
        }
    };
    name_run(response.headers_mut(), &run.0, &run.1);
    Ok(response)
}

/// The conversation a request continues (`X-Aria-Conversation`), or a new one.
fn conversation(
    gw: &Gateway,
    headers: &HeaderMap,
    agent: Option<&str>,
) -> Result<String, OpenAiError> {
    let Some(value) = headers.get(CONVERSATION_HEADER) else {
        let id = gw.store.create_conversation("")?.id;
        if let Some(name) = agent {
            gw.store.set_conversation_agent(&id, name)?;
        }
        return Ok(id);
    };
    let id = value.to_str().map(str::trim).unwrap_or_default();
    if id.is_empty() || gw.store.conversation(id)?.is_none() {
        return Err(OpenAiError::new(
            StatusCode::NOT_FOUND,
            "conversation_not_found",
            format!("there is no conversation `{id}` (from the X-Aria-Conversation header)"),
            "list them with GET /api/v1/conversations, or leave the header out to start one",
        ));
    }
    let bound = gw.store.conversation_agent(id)?;
    let wanted = agent.unwrap_or("default");
    // A conversation with no run and no agent yet takes the one this request names.
    if bound.is_none()
        && let Some(name) = agent
    {
        gw.store.set_conversation_agent(id, name)?;
        return Ok(id.to_owned());
    }
    if let Some(bound) = bound.filter(|b| b != wanted) {
        let model =
            if bound == "default" { AGENT_MODEL.to_owned() } else { format!("aria:{bound}") };
        return Err(OpenAiError::invalid(
            Some("model"),
            "invalid_value",
            format!(
                "conversation `{id}` is bound to the agent {bound}: continue it with the model \
                 `{model}`, or leave the X-Aria-Conversation header out to start a new one"
            ),
        ));
    }
    Ok(id.to_owned())
}

/// What a run said that the answer needs.
#[derive(Debug)]
struct Answer {
    meta: Meta,
    hub: Arc<RunHub>,
    /// The `tool_result` events of denied calls.
    denied: Vec<Value>,
    /// The run's `error` event, if it could not go on.
    error: Option<Value>,
}

impl Answer {
    /// Takes note of denied calls and errors; returns the content deltas among the events.
    fn observe<'a>(&mut self, events: impl Iterator<Item = &'a Event>) -> Vec<String> {
        let mut deltas = Vec::new();
        for event in events {
            match event.event {
                "text" => {
                    if let Some(delta) = event.data.get("delta").and_then(Value::as_str) {
                        deltas.push(delta.to_owned());
                    }
                }
                "tool_result"
                    if event.data.get("outcome").and_then(Value::as_str) == Some("denied") =>
                {
                    self.denied.push(event.data.clone());
                }
                "error" => self.error = Some(event.data.clone()),
                _ => {}
            }
        }
        deltas
    }

    /// Once the run ended: its answer with the note on denied calls, and its usage; or why it
    /// has none.
    ///
    /// A run that answered but failed after calls were denied (typically: the task asked for a
    /// change, and the change was one of the denied calls) still gets its answer: the note says
    /// why nothing was done, which is what the client needs to know.
    fn end(&self) -> Result<(String, Usage), OpenAiError> {
        match self.hub.reply() {
            Some(reply)
                if reply.state == "done"
                    || (reply.state == "failed"
                        && reply.answer.is_some()
                        && !self.denied.is_empty()) =>
            {
                let mut text = reply.answer.clone().unwrap_or_default();
                text.push_str(&denied_note(&self.denied));
                Ok((text, usage(&reply)))
            }
            Some(reply) => Err(run_failed(&reply)),
            None => Err(self.error.as_ref().map_or_else(
                || {
                    crate::error::ApiError::unavailable("the run was stopped before it ended")
                        .into()
                },
                run_error,
            )),
        }
    }
}

fn usage(reply: &Reply) -> Usage {
    Usage { input_tokens: reply.usage.input_tokens, output_tokens: reply.usage.output_tokens }
}

/// A run that ended without an answer (failed, cancelled). Not to be retried on its own: it may
/// have acted before it stopped.
fn run_failed(reply: &Reply) -> OpenAiError {
    let why = reply.error.as_deref().unwrap_or("no reason was recorded");
    OpenAiError {
        retry: Some(false),
        ..OpenAiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            if reply.state == "cancelled" { "run_cancelled" } else { "run_failed" },
            format!("the run ended {} without an answer: {why}", reply.state),
            format!(
                "see what it did with GET /api/v1/runs/{}; resume it with POST \
                 /api/v1/runs/{}/resume",
                reply.session_id, reply.session_id
            ),
        )
    }
}

/// A run's `error` event as an OpenAI error.
fn run_error(data: &Value) -> OpenAiError {
    let field = |name: &str| data.get(name).and_then(Value::as_str).unwrap_or("").to_owned();
    OpenAiError {
        retry: Some(false),
        ..OpenAiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "run_failed",
            field("message"),
            field("hint"),
        )
    }
}

/// What the answer adds about calls that were not run because nobody could approve them.
fn denied_note(denied: &[Value]) -> String {
    if denied.is_empty() {
        return String::new();
    }
    let mut note = format!(
        "\n\n---\nARIA did not run {} action{} that need{} approval, because requests through the \
         OpenAI-compatible API have nobody to approve them:\n",
        denied.len(),
        if denied.len() == 1 { "" } else { "s" },
        if denied.len() == 1 { "s" } else { "" },
    );
    for call in denied {
        let name = call.get("name").and_then(Value::as_str).unwrap_or("?");
        let mut arguments = call.get("arguments").map(Value::to_string).unwrap_or_default();
        if arguments.chars().count() > 200 {
            arguments = arguments.chars().take(200).collect::<String>() + "…";
        }
        note.push_str(&format!("- {name} {arguments}\n"));
    }
    note.push_str(
        "To run them, send the task from ARIA's web UI, where you are asked, or allow them in \
         advance under `[policy] allow` in ARIA's configuration.",
    );
    note
}

/// The answer as `chat.completion.chunk`s: a role chunk, the run's text as it comes, the note
/// on denied calls, the finish chunk, the usage chunk when asked for, then `[DONE]`. A run
/// that ends without an answer ends the stream with `{"error": …}` (OpenAI's SDKs raise it).
fn stream(
    answer: Answer,
    deltas: Vec<String>,
    rx: mpsc::UnboundedReceiver<Event>,
    guard: CancelOnDrop,
) -> Response {
    let mut pending = VecDeque::from([data(&wire::role_chunk(&answer.meta))]);
    for delta in deltas {
        pending.push_back(data(&wire::content_chunk(&answer.meta, &delta)));
    }
    let state = Streaming { answer, rx, pending, ended: false, _guard: guard };
    let events = futures::stream::unfold(state, |mut s| async move {
        loop {
            if let Some(event) = s.pending.pop_front() {
                return Some((Ok::<_, Infallible>(event), s));
            }
            if s.ended {
                return None;
            }
            match s.rx.recv().await {
                Some(event) => {
                    for delta in s.answer.observe(std::iter::once(&event)) {
                        s.pending.push_back(data(&wire::content_chunk(&s.answer.meta, &delta)));
                    }
                }
                None => s.finish(),
            }
        }
    });
    Sse::new(events).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))).into_response()
}

struct Streaming {
    answer: Answer,
    rx: mpsc::UnboundedReceiver<Event>,
    pending: VecDeque<SseEvent>,
    ended: bool,
    _guard: CancelOnDrop,
}

impl Streaming {
    fn finish(&mut self) {
        self.ended = true;
        let meta = &self.answer.meta;
        match self.answer.end() {
            Ok((_, used)) => {
                let note = denied_note(&self.answer.denied);
                if !note.is_empty() {
                    self.pending.push_back(data(&wire::content_chunk(meta, &note)));
                }
                self.pending.push_back(data(&wire::finish_chunk(meta, "stop")));
                if meta.include_usage {
                    self.pending.push_back(data(&wire::usage_chunk(meta, used)));
                }
                self.pending.push_back(SseEvent::default().data("[DONE]"));
            }
            Err(e) => self.pending.push_back(data(&e.body())),
        }
    }
}

fn data(value: &Value) -> SseEvent {
    SseEvent::default().data(value.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_note_lists_each_denied_call() {
        assert_eq!(denied_note(&[]), "");
        let denied = [json!({"name": "shell_execute", "arguments": {"command": "rm a.txt"},
                             "outcome": "denied"})];
        let note = denied_note(&denied);
        assert!(
            note.starts_with("\n\n---\nARIA did not run 1 action that needs approval"),
            "{note}"
        );
        assert!(note.contains("- shell_execute {\"command\":\"rm a.txt\"}\n"), "{note}");
        let two = [denied[0].clone(), json!({"name": "file_delete", "arguments": {"path": "b"}})];
        assert!(denied_note(&two).contains("2 actions that need approval"));
    }
}
