//! The planning step of a run: one model call, streamed, with its tokens, cost and trace
//! recorded.

use std::time::Instant;

use aria_api::{
    ChatEvent, ChatRequest, ChatResponse, JournalError, Message, MessageMeta, ProviderError,
    TraceKind, TraceRecord, Usage,
};
use futures::StreamExt;
use serde_json::{Value, json};

use super::{Run, Stop};
use crate::events::AgentEvent;

impl Run<'_> {
    /// Planning: one model call.
    pub(super) async fn plan(&mut self) -> Result<ChatResponse, Stop> {
        self.check_limits()?;
        self.session.iterations += 1;
        let request = self.build_request().await?;
        let config = &self.agent.config;
        self.audit(
            "model.request",
            json!({
                "iteration": self.session.iterations,
                "provider": self.agent.provider.name(),
                "model": config.model,
                "messages": request.messages.len(),
                "tools": request.tools.len(),
            }),
        )?;
        self.check_cost(&request)?;
        let started = Instant::now();
        let result = self.stream(request).await;
        let duration_ms = started.elapsed().as_millis() as u64;
        match result {
            Ok(response) => self.record_response(response, duration_ms),
            Err(StreamStop::Provider(e)) => {
                tracing::warn!(session = %self.session.id, kind = e.kind(), "model call failed: {e}");
                let model = self.agent.config.model.clone();
                self.trace_model(model, Usage::default(), 0.0, e.kind(), duration_ms, Value::Null)?;
                self.audit("model.error", json!({"kind": e.kind(), "message": e.to_string()}))?;
                Err(Stop::Fail(format!("the model call failed: {e}")))
            }
            Err(StreamStop::Cancel) => Err(Stop::Cancel),
            Err(StreamStop::Deadline) => {
                let model = self.agent.config.model.clone();
                self.trace_model(
                    model,
                    Usage::default(),
                    0.0,
                    "timeout",
                    duration_ms,
                    Value::Null,
                )?;
                Err(Stop::Fail(format!(
                    "the run reached its time limit of {} s while waiting for the model",
                    self.agent.config.limits.session_timeout.as_secs()
                )))
            }
        }
    }

    pub(super) async fn stream(
        &mut self,
        request: ChatRequest,
    ) -> Result<ChatResponse, StreamStop> {
        let started = Instant::now();
        self.first_output_ms = None;
        let mut stream = self.agent.provider.stream(request);
        let mut response = ChatResponse::default();
        loop {
            let item = tokio::select! {
                biased;
                _ = self.cancel.cancelled() => return Err(StreamStop::Cancel),
                _ = tokio::time::sleep_until(self.deadline) => return Err(StreamStop::Deadline),
                item = stream.next() => item,
            };
            match item {
                None => return Ok(response),
                Some(Err(e)) => return Err(StreamStop::Provider(e)),
                Some(Ok(event)) => {
                    if self.first_output_ms.is_none()
                        && matches!(event, ChatEvent::TextDelta { .. } | ChatEvent::ToolCall { .. })
                    {
                        self.first_output_ms = Some(started.elapsed().as_millis() as u64);
                    }
                    if let ChatEvent::TextDelta { text } = &event {
                        let _ = self.events.send(AgentEvent::Text { delta: text.clone() });
                    }
                    response.absorb(event);
                }
            }
        }
    }

    pub(super) fn record_response(
        &mut self,
        mut response: ChatResponse,
        duration_ms: u64,
    ) -> Result<ChatResponse, Stop> {
        let unusable = self.calls_written_as_text(&mut response)?;
        // Recorded under the model that answered (a fallback route may have), at its price.
        let config = &self.agent.config;
        let route = config.answered_by.as_ref().and_then(|a| a.last_answer());
        let (model, price) = match &route {
            Some(answer) => (answer.model.clone(), answer.price.or(config.price)),
            None => (config.model.clone(), config.price),
        };
        let cost = price.map_or(0.0, |p| p.cost(response.usage));
        self.session.usage.add(response.usage);
        self.session.cost_usd += cost;
        // The route that answered, when the provider is a fallback chain.
        let answered = route.as_ref().map_or(Value::Null, |r| {
            json!({"backend": r.backend, "fallback": r.fallback, "retries": r.tries.saturating_sub(1)})
        });
        self.trace_model(model.clone(), response.usage, cost, "ok", duration_ms, answered)?;
        self.audit(
            "model.response",
            json!({
                "usage": response.usage,
                "cost_usd": cost,
                "finish_reason": response.finish_reason,
                "tool_calls": response.tool_calls.iter().map(|c| &c.name).collect::<Vec<_>>(),
                "duration_ms": duration_ms,
                "first_output_ms": self.first_output_ms,
            }),
        )?;
        if response.finish_reason == Some(aria_api::FinishReason::Length) {
            let message = "the model stopped because it reached its output token limit; the answer may be cut short".to_owned();
            let _ = self.events.send(AgentEvent::Warning { message });
        }
        let message = Message::assistant(response.text.clone(), response.tool_calls.clone());
        let meta = MessageMeta { model: Some(model), usage: Some(response.usage) };
        let id = self.agent.journal.append_message(
            &self.session.id,
            &self.session.conversation_id,
            &message,
            &meta,
        )?;
        self.message_ids.push(id);
        self.history.push(message);
        self.agent.journal.save_session(&self.session)?;
        // The first time, the model is told and asked again (see `habit`); the second time
        // the run fails: nothing ran, and ending `done` would count it a success.
        if let Some(what) = unusable {
            if !self.nudged.contains(&"text_call") {
                self.text_call = Some(what);
            } else {
                return Err(Stop::Fail(format!(
                    "the model wrote a tool call as text instead of making it ({what}); \
                     nothing ran. Try again, ask more precisely, or use a larger model"
                )));
            }
        }
        Ok(response)
    }

    /// A final answer that is a tool call written as text (`text_call.rs`): a call of a
    /// declared tool becomes the response's call (its text dropped); anything else that is
    /// call-shaped, or a tool result made up before any tool ran this turn, is returned to fail
    /// the run once recorded. Each is audited.
    fn calls_written_as_text(
        &mut self,
        response: &mut ChatResponse,
    ) -> Result<Option<String>, Stop> {
        if !response.tool_calls.is_empty() || response.text.trim().is_empty() {
            return Ok(None);
        }
        let declared: Vec<String> =
            self.agent.tools.specs().into_iter().map(|spec| spec.name).collect();
        // With no tools there is nothing to call: JSON of that shape is what was asked for.
        if declared.is_empty() {
            return Ok(None);
        }
        let iteration = self.session.iterations;
        let id = |i: usize| format!("call_text_{iteration}_{i}");
        match crate::text_call::read(&response.text, &declared, id) {
            None => Ok(None),
            Some(crate::TextCall::Calls(calls)) => {
                self.audit(
                    "model.text_call",
                    json!({"tools": calls.iter().map(|c| &c.name).collect::<Vec<_>>()}),
                )?;
                response.tool_calls = calls;
                response.text.clear();
                Ok(None)
            }
            // The model copied the markers of a result it has: strip_markers takes them out.
            Some(crate::TextCall::ToolOutputBlock(_)) if self.called_this_turn() => Ok(None),
            Some(crate::TextCall::Unusable(what) | crate::TextCall::ToolOutputBlock(what)) => {
                self.audit("model.text_call_refused", json!({"what": what}))?;
                Ok(Some(what))
            }
        }
    }

    pub(super) fn trace_model(
        &self,
        model: String,
        usage: Usage,
        cost: f64,
        outcome: &str,
        duration_ms: u64,
        extra: Value,
    ) -> Result<(), JournalError> {
        let mut detail = json!({
            "provider": self.agent.provider.name(),
            "iteration": self.session.iterations,
            "first_output_ms": self.first_output_ms,
        });
        if let (Some(into), Value::Object(extra)) = (detail.as_object_mut(), extra) {
            into.extend(extra);
        }
        self.agent.journal.record_trace(&TraceRecord {
            session_id: self.session.id.clone(),
            kind: TraceKind::ModelCall,
            name: model,
            duration_ms,
            usage,
            cost_usd: cost,
            outcome: outcome.to_owned(),
            detail,
        })
    }
}

/// Why a model stream stopped before its end.
pub(super) enum StreamStop {
    Provider(ProviderError),
    Cancel,
    Deadline,
}
