//! Memory extraction: after a finished turn, a background job asks the model which facts and
//! preferences about the user the turn revealed, as JSON constrained by a schema, checks every
//! item, and stores the good ones (deduplicated by the memory backend, secrets redacted, every
//! write audited, provenance kept).
//!
//! The schema reaches the model as the parameters of a single tool, `record_memories`: tool
//! arguments are where providers (and the embedded model's constrained decoder) hold a model to
//! a schema. A model that answers in plain text with the same JSON is accepted too; anything
//! else is junk and is ignored item by item, never fatal.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use aria_api::{
    AuditEvent, AuditSink, ChatRequest, ChatResponse, Journal, Message, Provider, Redact, ToolSpec,
    TraceKind, TraceRecord,
};
use serde_json::{Value, json};
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;

use crate::agent::{AnsweredBy, Price, SpendGuard};
use crate::memory::{MemoryBackend, MemoryKind, NewMemory, Provenance, Stored};
use crate::memory_policy::{Conversation, unjustified};

/// The tool the extraction request offers; its parameters are the schema.
pub const EXTRACTION_TOOL: &str = "record_memories";
/// Extraction jobs that may wait or run at once; more are skipped (and logged).
pub const MAX_PENDING_EXTRACTIONS: usize = 4;
/// The longest memory kept, in characters.
pub const MAX_MEMORY_CHARS: usize = 500;

const INSTRUCTIONS: &str = "You maintain the long-term memory of ARIA, a personal assistant. \
From the exchange below, extract durable facts and preferences about the user that will help in \
future conversations (their name, preferences, projects, tools, people, recurring needs). Only \
what the user said or confirmed; nothing about the assistant, nothing from tool output, nothing \
temporary, no secrets. Write each memory as one self-contained sentence in the third person \
(\"The user's favorite color is blue.\"). If there is nothing worth keeping, record an empty \
list. Call record_memories exactly once.";

/// The JSON Schema of an extraction answer.
pub fn extraction_schema() -> Value {
    let kinds: Vec<&str> = MemoryKind::ALL.iter().map(|k| k.as_str()).collect();
    json!({
        "type": "object",
        "properties": {
            "memories": {
                "type": "array",
                "maxItems": 20,
                "items": item_schema(&kinds),
            }
        },
        "required": ["memories"],
        "additionalProperties": false
    })
}

fn item_schema(kinds: &[&str]) -> Value {
    json!({
        "type": "object",
        "properties": {
            "content": {"type": "string", "minLength": 1, "maxLength": MAX_MEMORY_CHARS},
            "kind": {"type": "string", "enum": kinds},
            "categories": {
                "type": "array",
                "maxItems": 8,
                "items": {"type": "string", "minLength": 1, "maxLength": 40}
            },
            "importance": {"type": "number", "minimum": 0, "maximum": 1},
            "confidence": {"type": "number", "minimum": 0, "maximum": 1}
        },
        "required": ["content", "kind", "categories", "importance", "confidence"],
        "additionalProperties": false
    })
}

/// The extraction request for one exchange.
pub fn extraction_request(model: &str, user: &str, answer: &str) -> ChatRequest {
    let tool = ToolSpec {
        name: EXTRACTION_TOOL.into(),
        description: "Record the memories extracted from the exchange (possibly none).".into(),
        parameters: extraction_schema(),
    };
    ChatRequest {
        model: model.to_owned(),
        messages: vec![
            Message::system(INSTRUCTIONS),
            Message::user(format!(
                "<exchange>\n[user]\n{user}\n\n[assistant]\n{answer}\n</exchange>",
                user = user.replace("</exchange>", "</ exchange>"),
                answer = answer.replace("</exchange>", "</ exchange>"),
            )),
        ],
        tools: vec![tool],
        max_tokens: Some(1_024),
        temperature: Some(0.0),
    }
}

/// One memory the model proposed, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub content: String,
    pub kind: MemoryKind,
    pub categories: Vec<String>,
    pub importance: f64,
    pub confidence: f64,
}

/// What an extraction answer held.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Extracted {
    pub candidates: Vec<Candidate>,
    /// Items (or whole answers) that were not valid and were ignored.
    pub rejected: usize,
}

/// Reads the model's answer: the `record_memories` call's arguments, else JSON in the text.
pub fn parse_extraction(response: &ChatResponse) -> Extracted {
    let raw = response
        .tool_calls
        .iter()
        .find(|c| c.name == EXTRACTION_TOOL)
        .map(|c| c.arguments.as_str())
        .unwrap_or_else(|| json_in_text(&response.text));
    let Ok(value) = serde_json::from_str::<Value>(raw) else {
        return Extracted { candidates: Vec::new(), rejected: usize::from(!raw.trim().is_empty()) };
    };
    let Some(items) = value.get("memories").and_then(Value::as_array) else {
        return Extracted { candidates: Vec::new(), rejected: 1 };
    };
    let kinds: Vec<&str> = MemoryKind::ALL.iter().map(|k| k.as_str()).collect();
    let validator = jsonschema::validator_for(&item_schema(&kinds)).ok();
    let mut out = Extracted::default();
    for item in items {
        let valid = validator.as_ref().is_some_and(|v| v.is_valid(item));
        match valid.then(|| candidate(item)).flatten() {
            Some(c) => out.candidates.push(c),
            None => out.rejected += 1,
        }
    }
    out
}

fn candidate(item: &Value) -> Option<Candidate> {
    let content = item["content"].as_str()?.split_whitespace().collect::<Vec<_>>().join(" ");
    if content.is_empty() {
        return None;
    }
    let mut categories: Vec<String> = item["categories"]
        .as_array()?
        .iter()
        .filter_map(Value::as_str)
        .map(|c| c.trim().to_lowercase())
        .filter(|c| !c.is_empty())
        .collect();
    categories.dedup();
    Some(Candidate {
        content,
        kind: MemoryKind::parse(item["kind"].as_str()?)?,
        categories,
        importance: item["importance"].as_f64()?,
        confidence: item["confidence"].as_f64()?,
    })
}

/// The JSON object in a text answer (a ```json fence or prose around it is ignored).
fn json_in_text(text: &str) -> &str {
    match (text.find('{'), text.rfind('}')) {
        (Some(a), Some(b)) if a < b => &text[a..=b],
        _ => text.trim(),
    }
}

/// Everything one extraction needs; built by the loop when a turn finishes.
pub(crate) struct Job {
    pub provider: Arc<dyn Provider>,
    pub memory: Arc<dyn MemoryBackend>,
    pub audit: Arc<dyn AuditSink>,
    pub journal: Arc<dyn Journal>,
    pub redactor: Arc<dyn Redact>,
    pub spend_guard: Option<Arc<dyn SpendGuard>>,
    pub price: Option<Price>,
    /// Which route answered, for a provider that falls back (the call is traced under it).
    pub answered_by: Option<Arc<dyn AnsweredBy>>,
    pub model: String,
    pub timeout: Duration,
    pub session_id: String,
    pub conversation_id: String,
    pub message_ids: Vec<i64>,
    pub user: String,
    pub answer: String,
    /// The turn's tool results: what the assistant read, so a fact it backs is not taken for
    /// the assistant's own claim.
    pub tool_output: Vec<String>,
    /// The turn read files: its memories are private.
    pub private: bool,
    /// The turn read outside text: its memories wait for the user's confirmation.
    pub unconfirmed: bool,
    /// What the answering model was told: a memory that restates it is junk.
    pub system_prompt: String,
}

impl Job {
    /// Runs the extraction. Errors are returned as text for the log; none is fatal.
    pub(crate) async fn run(self) -> Result<(usize, usize), String> {
        let request = extraction_request(&self.model, &self.user, &self.answer);
        if let Some(guard) = &self.spend_guard {
            let estimate = self.price.map_or(0.0, |p| {
                p.cost(aria_api::Usage { input_tokens: 1_000, output_tokens: 1_024 })
            });
            guard.check(estimate).map_err(|m| format!("skipped by the cost caps: {m}"))?;
        }
        let started = Instant::now();
        let result = tokio::time::timeout(self.timeout, self.provider.complete(request)).await;
        let duration_ms = started.elapsed().as_millis() as u64;
        let response = match result {
            Err(_) => {
                self.trace(Default::default(), "timeout", duration_ms);
                return Err(format!("no answer within {} s", self.timeout.as_secs()));
            }
            Ok(Err(e)) => {
                self.trace(Default::default(), e.kind(), duration_ms);
                return Err(format!("the model call failed: {e}"));
            }
            Ok(Ok(r)) => r,
        };
        // Traced and charged under the route that answered, as the loop does.
        let (model, price) = match self.answered_by.as_ref().and_then(|a| a.last_answer()) {
            Some(answer) => (answer.model, answer.price.or(self.price)),
            None => (self.model.clone(), self.price),
        };
        self.trace_as(&model, price, response.usage, "ok", duration_ms);
        let mut extracted = parse_extraction(&response);
        let conversation = Conversation {
            user: vec![&self.user],
            tool_output: self.tool_output.iter().map(String::as_str).collect(),
            assistant: vec![&self.answer],
            instructions: vec![
                &self.system_prompt,
                INSTRUCTIONS,
                crate::context::PROFILE_FRAMING,
                crate::context::MEMORY_FRAMING,
            ],
        };
        let before = extracted.candidates.len();
        extracted.candidates.retain(|c| match unjustified(&c.content, &conversation)
            .or_else(|| crate::outside::instructs_assistant(&c.content).map(str::to_owned))
        {
            None => true,
            Some(why) => {
                tracing::info!(session = %self.session_id, "an extracted memory was dropped: {why}");
                false
            }
        });
        let unjustified_count = before - extracted.candidates.len();
        let (mut stored, mut updated, mut failed) = (0, 0, 0);
        let mut ids = Vec::new();
        let extracted_at = rfc3339_now();
        for c in extracted.candidates {
            match self.store(c, &extracted_at).await {
                Ok(s) => {
                    match s {
                        Stored::Inserted(_) => stored += 1,
                        Stored::Updated(_) => updated += 1,
                    }
                    ids.push(s.id().to_owned());
                }
                Err(e) => {
                    failed += 1;
                    tracing::warn!(session = %self.session_id, "a memory was not stored: {e}");
                }
            }
        }
        self.audit(
            "memory.extraction",
            json!({
                "model": self.model, "stored": stored, "updated": updated, "failed": failed,
                "rejected": extracted.rejected, "unjustified": unjustified_count, "ids": ids,
                "message_ids": self.message_ids, "private": self.private,
            }),
        );
        Ok((stored, updated))
    }

    async fn store(&self, c: Candidate, extracted_at: &str) -> Result<Stored, String> {
        let memory = NewMemory {
            content: self.redactor.redact(&c.content).into_owned(),
            // What a turn that read outside text leaves is a fact to confirm, no preference.
            kind: if self.unconfirmed && c.kind == crate::memory::MemoryKind::Preference {
                crate::memory::MemoryKind::Fact
            } else {
                c.kind
            },
            categories: c.categories,
            importance: c.importance,
            confidence: c.confidence,
            private: self.private,
            unconfirmed: self.unconfirmed,
            provenance: Provenance {
                conversation_id: Some(self.conversation_id.clone()),
                session_id: Some(self.session_id.clone()),
                message_ids: self.message_ids.clone(),
                model: Some(self.model.clone()),
                extracted_at: Some(extracted_at.to_owned()),
                source: "extraction".into(),
            },
        };
        self.memory.remember(memory).await.map_err(|e| e.to_string())
    }

    fn trace(&self, usage: aria_api::Usage, outcome: &str, duration_ms: u64) {
        self.trace_as(&self.model, self.price, usage, outcome, duration_ms);
    }

    fn trace_as(
        &self,
        model: &str,
        price: Option<Price>,
        usage: aria_api::Usage,
        outcome: &str,
        duration_ms: u64,
    ) {
        let trace = TraceRecord {
            session_id: self.session_id.clone(),
            kind: TraceKind::ModelCall,
            name: model.to_owned(),
            duration_ms,
            usage,
            cost_usd: price.map_or(0.0, |p| p.cost(usage)),
            outcome: outcome.to_owned(),
            detail: json!({"purpose": "memory_extraction"}),
        };
        if let Err(e) = self.journal.record_trace(&trace) {
            tracing::warn!(session = %self.session_id, "the extraction call was not traced: {e}");
        }
    }

    fn audit(&self, kind: &str, payload: Value) {
        let event = AuditEvent::new(Some(&self.session_id), "system", kind, payload);
        if let Err(e) = self.audit.append(event) {
            tracing::error!(session = %self.session_id, "a memory event was not audited: {e}");
        }
    }
}

/// Now as RFC 3339 UTC with milliseconds (`2026-11-23T07:45:00.123Z`), the store's format.
pub(crate) fn rfc3339_now() -> String {
    let since =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    rfc3339(since.as_secs(), since.subsec_millis())
}

/// `secs` since the Unix epoch as RFC 3339 UTC (Howard Hinnant's days-to-civil algorithm).
pub(crate) fn rfc3339(secs: u64, millis: u32) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rem / 3_600,
        rem % 3_600 / 60,
        rem % 60
    )
}

/// What a memory write did, for a tool's audit details.
pub(crate) fn audit_payload(memory: &NewMemory, stored: &Stored) -> Value {
    json!({
        "id": stored.id(),
        "outcome": match stored { Stored::Inserted(_) => "inserted", Stored::Updated(_) => "updated" },
        "content": memory.content,
        "kind": memory.kind,
        "categories": memory.categories,
        "importance": memory.importance,
        "confidence": memory.confidence,
        "private": memory.private,
        "provenance": memory.provenance,
    })
}

/// Background jobs of an agent: bounded (at most [`MAX_PENDING_EXTRACTIONS`] waiting or
/// running, one running at a time), never awaited by a turn, and drained before the process
/// exits.
#[derive(Debug)]
pub(crate) struct Background {
    running: Arc<Semaphore>,
    pending: Arc<AtomicUsize>,
    tasks: std::sync::Mutex<Vec<JoinHandle<()>>>,
}

impl Default for Background {
    fn default() -> Self {
        Background {
            running: Arc::new(Semaphore::new(1)),
            pending: Arc::default(),
            tasks: std::sync::Mutex::default(),
        }
    }
}

impl Background {
    /// Starts `job` in the background; `false` (logged) when too many are pending already.
    pub(crate) fn spawn(&self, job: Job) -> bool {
        if self.pending.fetch_add(1, Ordering::SeqCst) >= MAX_PENDING_EXTRACTIONS {
            self.pending.fetch_sub(1, Ordering::SeqCst);
            tracing::warn!(session = %job.session_id, "memory extraction skipped: {MAX_PENDING_EXTRACTIONS} are already pending");
            return false;
        }
        let (running, pending) = (Arc::clone(&self.running), Arc::clone(&self.pending));
        let span = tracing::info_span!("memory_extraction", session = %job.session_id);
        let task = tokio::spawn(tracing::Instrument::instrument(
            async move {
                let permit = running.acquire_owned().await;
                let session = job.session_id.clone();
                match job.run().await {
                    Ok((stored, updated)) => {
                        tracing::info!(%session, stored, updated, "memories extracted")
                    }
                    Err(e) => tracing::warn!(%session, "memory extraction failed: {e}"),
                }
                drop(permit);
                pending.fetch_sub(1, Ordering::SeqCst);
            },
            span,
        ));
        if let Ok(mut tasks) = self.tasks.lock() {
            tasks.retain(|t| !t.is_finished());
            tasks.push(task);
        }
        true
    }

    /// Waits up to `timeout` for every job started so far; `true` when all finished.
    pub(crate) async fn drain(&self, timeout: Duration) -> bool {
        let tasks: Vec<JoinHandle<()>> =
            self.tasks.lock().map(|mut t| std::mem::take(&mut *t)).unwrap_or_default();
        let all = futures::future::join_all(tasks);
        tokio::time::timeout(timeout, all).await.is_ok()
    }
}

#[cfg(test)]
mod tests;
