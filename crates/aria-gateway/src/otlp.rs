//! Traces out to OpenTelemetry: each finished run becomes one OTLP trace — a root
//! span for the run and a child span for each model call, tool call and approval — sent as
//! OTLP/HTTP JSON to `{OTEL_EXPORTER_OTLP_ENDPOINT}/v1/traces` (or
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as is), so Jaeger, Tempo or Langfuse can show them.
//! Off unless one of those is set. What is sent is what the store holds — tool and model names,
//! times, tokens, cost, outcomes, tiers — already scrubbed of secrets; never prompts, arguments
//! or answers.
//!
//! The daemon exports in the background ([`run`]): every few seconds the runs that ended since
//! the last export (a cursor in the store, so a restart neither skips nor repeats a run); `aria
//! run` and `aria chat` do one pass ([`export_pending`]) when they end.

use std::time::Duration;

use aria_api::{SessionRecord, TraceKind};
use aria_store::{Store, StoredTrace};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

/// Where the cursor of exported runs is kept (`channel_state`).
const CURSOR: (&str, &str) = ("otlp", "exported_until");

/// Sends runs to an OTLP/HTTP endpoint.
#[derive(Debug, Clone)]
pub struct Exporter {
    http: reqwest::Client,
    /// The full URL of the traces endpoint.
    url: String,
    headers: Vec<(String, String)>,
}

/// The endpoint from the environment, per the OpenTelemetry specification:
/// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as is, else `OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/traces`.
/// `None`: export is off.
pub fn endpoint_from_env(var: impl Fn(&str) -> Option<String>) -> Option<String> {
    if let Some(url) = var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").filter(|u| !u.trim().is_empty()) {
        return Some(url.trim().to_owned());
    }
    var("OTEL_EXPORTER_OTLP_ENDPOINT")
        .filter(|u| !u.trim().is_empty())
        .map(|base| format!("{}/v1/traces", base.trim().trim_end_matches('/')))
}

/// `OTEL_EXPORTER_OTLP_HEADERS`: `key=value,key2=value2` (values URL-encoded per the spec are
/// taken as written).
pub fn headers_from_env(var: impl Fn(&str) -> Option<String>) -> Vec<(String, String)> {
    var("OTEL_EXPORTER_OTLP_HEADERS")
        .unwrap_or_default()
        .split(',')
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .filter(|(k, _)| !k.is_empty())
        .collect()
}

impl Exporter {
    pub fn new(url: &str, headers: Vec<(String, String)>) -> Result<Exporter, String> {
        let parsed = reqwest::Url::parse(url)
            .map_err(|e| format!("OTEL_EXPORTER_OTLP_ENDPOINT {url:?} is not a URL ({e})"))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(format!("OTEL_EXPORTER_OTLP_ENDPOINT {url:?} must be http:// or https://"));
        }
        let http = crate::http::client_for(
            &parsed,
            Duration::from_secs(5),
            Some(Duration::from_secs(10)),
        )?;
        Ok(Exporter { http, url: url.to_owned(), headers })
    }

    /// Sends one run. `Err`: why not (the endpoint's answer or the connection's failure).
    pub async fn export_session(&self, store: &Store, session_id: &str) -> Result<(), String> {
        let session = store
            .session(session_id)
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("no run {session_id}"))?;
        let spans = store.traces_for_session(session_id).map_err(|e| e.to_string())?;
        self.send(&request(&[(session, spans)])).await
    }

    async fn send(&self, body: &Value) -> Result<(), String> {
        let mut request = self.http.post(&self.url).json(body);
        for (k, v) in &self.headers {
            request = request.header(k, v);
        }
        let response = request.send().await.map_err(|e| {
            let e = e.without_url();
            format!("cannot reach the OTLP endpoint: {e}")
        })?;
        let status = response.status();
        if status.is_success() {
            Ok(())
        } else {
            let text = response.text().await.unwrap_or_default();
            Err(format!(
                "the OTLP endpoint answered {status}: {}",
                text.chars().take(200).collect::<String>()
            ))
        }
    }
}

/// 32 hex digits: the run's id without dashes when it is a UUID, else a hash of it.
fn trace_id(session_id: &str) -> String {
    let hex: String = session_id.chars().filter(char::is_ascii_hexdigit).collect();
    if hex.len() == 32 && session_id.len() == 36 {
        return hex.to_ascii_lowercase();
    }
    hex::encode(&Sha256::digest(session_id.as_bytes())[..16])
}

/// 16 hex digits, stable for the same run and span.
fn span_id(session_id: &str, span: &str) -> String {
    hex::encode(&Sha256::digest(format!("{session_id}/{span}").as_bytes())[..8])
}

fn nanos(rfc3339: &str) -> i128 {
    rfc3339.parse::<jiff::Timestamp>().map_or(0, |t| t.as_nanosecond())
}

fn attr(key: &str, value: Value) -> Value {
    let value = match value {
        Value::String(s) => json!({"stringValue": s}),
        Value::Bool(b) => json!({"boolValue": b}),
        Value::Number(n) if n.is_i64() || n.is_u64() => json!({"intValue": n.to_string()}),
        Value::Number(n) => json!({"doubleValue": n.as_f64().unwrap_or(0.0)}),
        other => json!({"stringValue": other.to_string()}),
    };
    json!({"key": key, "value": value})
}

/// The OTLP/HTTP JSON body for `runs`.
pub fn request(runs: &[(SessionRecord, Vec<StoredTrace>)]) -> Value {
    let mut spans = Vec::new();
    for (session, traces) in runs {
        let trace = trace_id(&session.id);
        let root = span_id(&session.id, "run");
        let failed = matches!(session.state.as_str(), "failed" | "cancelled");
        spans.push(json!({
            "traceId": trace,
            "spanId": root,
            "name": "aria.run",
            "kind": 1,
            "startTimeUnixNano": nanos(&session.created_at).to_string(),
            "endTimeUnixNano": nanos(&session.updated_at).to_string(),
            "attributes": [
                attr("aria.session_id", json!(session.id)),
                attr("aria.conversation_id", json!(session.conversation_id)),
                attr("aria.state", json!(session.state.as_str())),
                attr("gen_ai.system", json!(session.provider)),
                attr("gen_ai.request.model", json!(session.model)),
                attr("gen_ai.usage.input_tokens", json!(session.usage.input_tokens)),
                attr("gen_ai.usage.output_tokens", json!(session.usage.output_tokens)),
                attr("aria.cost_usd", json!(session.cost_usd)),
            ],
            "status": if failed {
                json!({"code": 2, "message": session.error.clone().unwrap_or_default()})
            } else {
                json!({"code": 1})
            },
        }));
        for stored in traces {
            let t = &stored.trace;
            let end = nanos(&stored.created_at);
            let start = end - i128::from(t.duration_ms) * 1_000_000;
            let (name, mut attributes) = match t.kind {
                TraceKind::ModelCall => (
                    format!("chat {}", t.name),
                    vec![
                        attr("gen_ai.operation.name", json!("chat")),
                        attr("gen_ai.response.model", json!(t.name)),
                        attr("gen_ai.usage.input_tokens", json!(t.usage.input_tokens)),
                        attr("gen_ai.usage.output_tokens", json!(t.usage.output_tokens)),
                        attr("aria.cost_usd", json!(t.cost_usd)),
                    ],
                ),
                TraceKind::ToolCall => {
                    (format!("tool {}", t.name), vec![attr("gen_ai.tool.name", json!(t.name))])
                }
                TraceKind::Approval => (
                    format!("approval {}", t.name),
                    vec![attr("aria.approval.answer", json!(t.outcome))],
                ),
                TraceKind::MemoryRecall => ("memory recall".to_owned(), Vec::new()),
            };
            attributes.push(attr("aria.outcome", json!(t.outcome)));
            for key in ["tier", "first_output_ms", "output_chars", "purpose"] {
                if let Some(v) = t.detail.get(key).filter(|v| !v.is_null()) {
                    attributes.push(attr(&format!("aria.{key}"), v.clone()));
                }
            }
            let ok = t.outcome == "ok" || t.kind == TraceKind::Approval;
            spans.push(json!({
                "traceId": trace,
                "spanId": span_id(&session.id, &stored.id.to_string()),
                "parentSpanId": root,
                "name": name,
                "kind": if t.kind == TraceKind::ModelCall { 3 } else { 1 },
                "startTimeUnixNano": start.to_string(),
                "endTimeUnixNano": end.to_string(),
                "attributes": attributes,
                "status": if ok { json!({"code": 1}) } else { json!({"code": 2, "message": t.outcome}) },
            }));
        }
    }
    json!({
        "resourceSpans": [{
            "resource": {"attributes": [
                attr("service.name", json!("aria")),
                attr("service.version", json!(env!("CARGO_PKG_VERSION"))),
            ]},
            "scopeSpans": [{"scope": {"name": "aria", "version": env!("CARGO_PKG_VERSION")}, "spans": spans}],
        }]
    })
}

/// Exports the runs that ended since the cursor, in batches of at most 20, until `stop`;
/// failures are logged and retried at the next pass (the cursor only moves on success).
pub async fn run(
    store: std::sync::Arc<Store>,
    exporter: Exporter,
    every: Duration,
    stop: CancellationToken,
) {
    let mut warned = false;
    loop {
        match export_pending(&store, &exporter).await {
            Ok(_) => warned = false,
            Err(e) if !warned => {
                tracing::warn!("OpenTelemetry export: {e}; retrying");
                warned = true;
            }
            Err(_) => {}
        }
        tokio::select! {
            () = stop.cancelled() => {
                let _ = export_pending(&store, &exporter).await;
                return;
            }
            () = tokio::time::sleep(every) => {}
        }
    }
}

/// One pass: the finished runs that ended after the cursor (`updated_at|id`), in batches of
/// 20. Returns how many were sent.
pub async fn export_pending(store: &Store, exporter: &Exporter) -> Result<usize, String> {
    let e = |e: aria_store::StoreError| e.to_string();
    let mut sent = 0;
    loop {
        let cursor = match store.channel_state(CURSOR.0, CURSOR.1).map_err(e)? {
            Some(cursor) => cursor,
            // The first export takes the last hour: older history is not replayed into a new
            // backend.
            None => {
                let hour_ago = jiff::Timestamp::now() - jiff::SignedDuration::from_hours(1);
                format!("{}|", aria_store::rfc3339_at(hour_ago.into()))
            }
        };
        let (time, id) = cursor.split_once('|').unwrap_or((cursor.as_str(), ""));
        let finished = store.sessions_finished_after(time, id, 20).map_err(e)?;
        let Some(last) = finished.last() else { return Ok(sent) };
        let next = format!("{}|{}", last.updated_at, last.id);
        let count = finished.len();
        let mut runs = Vec::with_capacity(count);
        for session in finished {
            let traces = store.traces_for_session(&session.id).map_err(e)?;
            runs.push((session, traces));
        }
        exporter.send(&request(&runs)).await?;
        sent += count;
        store.set_channel_state(CURSOR.0, CURSOR.1, &next).map_err(e)?;
        if count < 20 {
            return Ok(sent);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_endpoint_follows_the_specification() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| (*v).to_owned())
        };
        assert_eq!(endpoint_from_env(env(&[])), None);
        assert_eq!(
            endpoint_from_env(env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318/")])),
            Some("http://127.0.0.1:4318/v1/traces".into())
        );
        assert_eq!(
            endpoint_from_env(env(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318"),
                ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://b/traces"),
            ])),
            Some("http://b/traces".into())
        );
        assert_eq!(
            headers_from_env(env(&[("OTEL_EXPORTER_OTLP_HEADERS", "a=1, b = two,bad")])),
            [("a".to_owned(), "1".to_owned()), ("b".to_owned(), "two".to_owned())]
        );
        assert!(Exporter::new("ftp://x", vec![]).is_err());
    }

    #[test]
    fn ids_have_the_lengths_otlp_wants() {
        let uuid = "0192f0c4-1b2a-7c3d-8e4f-5a6b7c8d9e0f";
        assert_eq!(trace_id(uuid), "0192f0c41b2a7c3d8e4f5a6b7c8d9e0f");
        assert_eq!(trace_id("not-a-uuid").len(), 32);
        assert_eq!(span_id(uuid, "run").len(), 16);
        assert_ne!(span_id(uuid, "run"), span_id(uuid, "1"));
    }
}
