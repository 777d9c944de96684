//! The agent's memory tools: `memory_search {query, limit?}` (tier read) and
//! `memory_store {content, kind?, categories?}` (tier recoverable-write: it writes only the
//! user's own memory store, and every memory can be edited or forgotten afterwards with
//! `aria memories edit|forget`). They live here, not in `aria-tools`, because they need the
//! memory backend, which the agent owns.

use std::sync::Arc;

use aria_api::{Redact, Tier, Tool, ToolContext, ToolError, ToolFuture, ToolOutput, ToolSpec};
use serde_json::{Value, json};

use crate::memory::{MemoryBackend, MemoryKind, NewMemory, Provenance, SearchScope};
use crate::memory_extract::{MAX_MEMORY_CHARS, audit_payload};

/// The most results `memory_search` returns.
pub const MAX_SEARCH_LIMIT: u64 = 50;

/// The name of the tool that searches memories (its results are the user's own memories: a
/// false injection alarm on them does not taint the run).
pub const MEMORY_SEARCH: &str = "memory_search";

/// The name of the tool that stores a memory (its content is checked against the
/// conversation before it runs: [`crate::unjustified`]).
pub const MEMORY_STORE: &str = "memory_store";

/// Both memory tools over one backend. `private`: whether the model they serve runs on this
/// machine, so that `memory_search` may return private memories.
pub fn memory_tools(
    memory: Arc<dyn MemoryBackend>,
    redactor: Arc<dyn Redact>,
    private: bool,
) -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(MemorySearchTool::new(Arc::clone(&memory), private)),
        Arc::new(MemoryStoreTool::new(memory, redactor)),
    ]
}

/// `memory_search`: hybrid search over the user's long-term memory.
#[derive(Debug)]
pub struct MemorySearchTool {
    spec: ToolSpec,
    memory: Arc<dyn MemoryBackend>,
    private: bool,
}

impl MemorySearchTool {
    /// `private`: whether private memories may be returned (the model runs on this machine).
    pub fn new(memory: Arc<dyn MemoryBackend>, private: bool) -> Self {
        let spec = ToolSpec {
            name: MEMORY_SEARCH.into(),
            description: "Search the user's long-term memory (facts and preferences remembered \
                          from earlier conversations). Returns the best matches, best first."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "minLength": 1, "description": "What to look for, in words."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_SEARCH_LIMIT, "description": "At most this many results (default 5)."}
                },
                "required": ["query"],
                "additionalProperties": false
            }),
        };
        MemorySearchTool { spec, memory, private }
    }
}

impl Tool for MemorySearchTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn tier(&self, _args: &Value) -> Tier {
        Tier::Read
    }

    fn call<'a>(&'a self, args: Value, _ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let query = args["query"].as_str().unwrap_or_default().to_owned();
            let limit = args["limit"].as_u64().unwrap_or(5).clamp(1, MAX_SEARCH_LIMIT) as usize;
            let scope = SearchScope { limit, private: self.private };
            let mut hits = self
                .memory
                .search(&query, scope)
                .await
                .map_err(|e| ToolError::failed(e.to_string()))?;
            hits.retain(|h| self.private || !h.private);
            if hits.is_empty() {
                return Ok(ToolOutput::text("no memories match"));
            }
            let lines: Vec<String> = hits
                .iter()
                .map(|h| {
                    let cats = if h.categories.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", h.categories.join(", "))
                    };
                    format!("{} [{}{}] {}", h.id, h.kind.as_str(), cats, h.content)
                })
                .collect();
            let ids: Vec<&str> = hits.iter().map(|h| h.id.as_str()).collect();
            Ok(ToolOutput::text(lines.join("\n")).with_details(json!({"ids": ids})))
        })
    }
}

/// `memory_store`: remembers one thing the user asked to be remembered.
pub struct MemoryStoreTool {
    spec: ToolSpec,
    memory: Arc<dyn MemoryBackend>,
    redactor: Arc<dyn Redact>,
}

impl std::fmt::Debug for MemoryStoreTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStoreTool").field("memory", &self.memory).finish_non_exhaustive()
    }
}

impl MemoryStoreTool {
    /// The backend audits each write; the loop audits the call (`tool.start`, and `tool.end`
    /// whose details name the memory written).
    pub fn new(memory: Arc<dyn MemoryBackend>, redactor: Arc<dyn Redact>) -> Self {
        let kinds: Vec<&str> = MemoryKind::ALL.iter().map(|k| k.as_str()).collect();
        let spec = ToolSpec {
            name: MEMORY_STORE.into(),
            description: "Store something in the user's long-term memory so it is remembered in \
                          later conversations: only a fact or preference the user stated, or \
                          something they asked you to remember. One self-contained sentence, \
                          e.g. \"The user's favorite color is blue.\" A memory that repeats an \
                          existing one updates it. Never store secrets."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "content": {"type": "string", "minLength": 1, "maxLength": MAX_MEMORY_CHARS},
                    "kind": {"type": "string", "enum": kinds, "description": "Default: fact."},
                    "categories": {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 40}, "maxItems": 8}
                },
                "required": ["content"],
                "additionalProperties": false
            }),
        };
        MemoryStoreTool { spec, memory, redactor }
    }
}

impl Tool for MemoryStoreTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn tier(&self, _args: &Value) -> Tier {
        Tier::RecoverableWrite
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let raw = args["content"].as_str().unwrap_or_default();
            let content = raw.split_whitespace().collect::<Vec<_>>().join(" ");
            if content.is_empty() {
                return Err(ToolError::failed("`content` is empty; say what to remember"));
            }
            let kind =
                args["kind"].as_str().and_then(MemoryKind::parse).unwrap_or(MemoryKind::Fact);
            let categories: Vec<String> = args["categories"]
                .as_array()
                .map(|a| {
                    a.iter().filter_map(Value::as_str).map(|c| c.trim().to_lowercase()).collect()
                })
                .unwrap_or_default();
            if let Some(why) = crate::outside::instructs_assistant(&content) {
                return Err(ToolError::refused(format!(
                    "this is not kept as a memory: {why}. Memories hold facts and preferences; \
                     how ARIA asks for approval is the user's setting, not a memory"
                )));
            }
            // Set by the loop, never by the model (the schema has no such arguments): the run
            // had read outside text, so the memory waits for the user and is no preference.
            let unconfirmed = args["unconfirmed"].as_bool().unwrap_or(false);
            let kind =
                if unconfirmed && kind == MemoryKind::Preference { MemoryKind::Fact } else { kind };
            if ctx.dry_run {
                return Ok(ToolOutput::text(format!("[dry run] would remember: {content}")));
            }
            let memory = NewMemory {
                content: self.redactor.redact(&content).into_owned(),
                kind,
                categories,
                private: args["private"].as_bool().unwrap_or(false),
                unconfirmed,
                importance: 0.5,
                // The model was asked to store it: it is what the user said, not a guess.
                confidence: 0.9,
                provenance: Provenance {
                    conversation_id: None,
                    session_id: Some(ctx.session_id.clone()),
                    message_ids: Vec::new(),
                    model: None,
                    extracted_at: None,
                    source: "tool".into(),
                },
            };
            let stored = self
                .memory
                .remember(memory.clone())
                .await
                .map_err(|e| ToolError::failed(e.to_string()))?;
            let payload = audit_payload(&memory, &stored);
            let verb = match stored {
                crate::memory::Stored::Inserted(_) => "remembered",
                crate::memory::Stored::Updated(_) => "updated the existing memory",
            };
            let pending = if memory.unconfirmed {
                " It waits for the user's confirmation (this run read text from outside, so \
                 what it keeps is not recalled until the user confirms it with `aria memories \
                 confirm ID`)."
            } else {
                ""
            };
            Ok(ToolOutput::text(format!("{verb} ({}): {}{pending}", stored.id(), memory.content))
                .with_details(payload))
        })
    }
}

#[cfg(test)]
mod tests;
