//! Answers that quote a private memory stay on this machine: Telegram is not.
//!
//! A run may quote a private memory only when it saw one: its recall put one into the request
//! (the `context.memories` audit record of its session names the memories recalled), or it
//! called a memory tool (whose results may hold any memory the model was allowed to see). While
//! that can be so, the answer is not streamed to the chat; at its end it is checked, and if it
//! quotes a private memory it saw ([`aria_api::quotes`]: 24 normalised characters of it in a
//! row, or the whole of a short one), the chat gets a pointer to the conversation in the local
//! web UI and on the terminal instead of the answer. What the conversation stores is unchanged.

use aria_store::{MemoryStatus, Store};
use serde_json::Value;

/// The most recent memories looked at when a memory tool ran.
const TOOL_SCAN: usize = 500;

/// What a followed run may have seen of the private memories.
#[derive(Debug, Default)]
pub(super) struct Privacy {
    session: Option<String>,
    /// Whether the run's recall is over (and audited): the model's first text, tool call or
    /// question comes after it.
    recall_over: bool,
    /// Whether the recall record was read.
    recall_read: bool,
    recalled_private: bool,
    memory_tool: bool,
}

impl Privacy {
    /// Notes what an event tells: the run's session, a memory tool called.
    pub(super) fn note(&mut self, event: &str, data: &Value) {
        match event {
            "state" => {
                if let Some(id) = data["session_id"].as_str() {
                    self.session = Some(id.to_owned());
                }
            }
            "tool_call" | "tool_result" => {
                self.recall_over = true;
                if data["name"].as_str().is_some_and(|n| n.starts_with("memory")) {
                    self.memory_tool = true;
                }
            }
            "text" | "approval" | "done" => self.recall_over = true,
            _ => {}
        }
    }

    /// Whether the answer may quote a private memory, so is held until the run ends.
    pub(super) fn may_quote(&mut self, store: &Store) -> bool {
        if self.recall_over
            && !self.recall_read
            && let Some(session) = &self.session
        {
            self.recall_read = true;
            self.recalled_private = !recalled_private(store, session).is_empty();
        }
        self.recalled_private || self.memory_tool
    }

    /// Whether `answer` quotes a private memory this run saw.
    pub(super) fn quotes_private(&self, store: &Store, answer: &str) -> bool {
        let mut seen = match &self.session {
            Some(session) => recalled_private(store, session),
            None => Vec::new(),
        };
        if self.memory_tool {
            match store.memory_list(&[MemoryStatus::Active, MemoryStatus::Archived], TOOL_SCAN, 0) {
                Ok(all) => seen.extend(all.into_iter().filter(|m| m.private).map(|m| m.content)),
                // Fail closed: what cannot be checked is not sent.
                Err(e) => {
                    tracing::error!("cannot read the memories to check an answer: {e}");
                    return true;
                }
            }
        }
        seen.iter().any(|memory| aria_api::quotes(answer, memory))
    }
}

/// The texts of the private memories the recall of `session` put into its requests.
fn recalled_private(store: &Store, session: &str) -> Vec<String> {
    let records = match store.audit_for_session(session) {
        Ok(r) => r,
        Err(e) => {
            tracing::error!(session, "cannot read which memories a run recalled: {e}");
            return Vec::new();
        }
    };
    records
        .iter()
        .filter(|r| r.kind == "context.memories")
        .flat_map(|r| {
            ["profile", "memories"]
                .into_iter()
                .flat_map(|k| r.payload[k].as_array().cloned().unwrap_or_default())
        })
        .filter_map(|id| id.as_str().and_then(|id| store.memory_get(id).ok().flatten()))
        .filter(|m| m.private)
        .map(|m| m.content)
        .collect()
}

/// What the chat is told instead of an answer that quotes a private memory.
pub(super) fn withheld(conversation: &str, ui: Option<&str>) -> String {
    let web = ui.map_or_else(
        || format!("the web UI of `aria serve` (#/c/{conversation})"),
        |base| format!("{}/#/c/{conversation}", base.trim_end_matches('/')),
    );
    format!(
        "🔒 The answer quotes a private memory, so it is not sent to Telegram (which is off this \
         machine). Read it on this machine: {web}, or `aria conversations show {conversation}`."
    )
}

/// The local web UI's address from the daemon's effective configuration (`[server] listen`).
pub(super) fn ui_base(config: &Value) -> Option<String> {
    let listen = config.pointer("/server/listen")?.as_str()?;
    Some(format!("http://{listen}"))
}
