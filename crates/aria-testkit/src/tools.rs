//! Test tools.

use std::sync::atomic::{AtomicUsize, Ordering};

use aria_api::{Tier, Tool, ToolContext, ToolFuture, ToolOutput, ToolSpec};
use serde_json::{Value, json};

/// `file_delete {path}`: an irreversible tool that only counts its calls, for tests that a call
/// needing approval does not run unless approved.
#[derive(Debug)]
pub struct DeleteTool {
    spec: ToolSpec,
    calls: AtomicUsize,
}

impl Default for DeleteTool {
    fn default() -> Self {
        DeleteTool {
            spec: ToolSpec {
                name: "file_delete".into(),
                description: "Deletes a file.".into(),
                parameters: json!({"type": "object", "properties": {"path": {"type": "string"}},
                                   "required": ["path"]}),
            },
            calls: AtomicUsize::new(0),
        }
    }
}

impl DeleteTool {
    /// How many times it ran.
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

impl Tool for DeleteTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn tier(&self, _args: &Value) -> Tier {
        Tier::Irreversible
    }

    fn call<'a>(&'a self, args: Value, _ctx: &'a ToolContext) -> ToolFuture<'a> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move { Ok(ToolOutput::text(format!("deleted {}", args["path"]))) })
    }
}
