//! The tool contract. Tools are registered in one place (`aria-tools`); the loop validates the
//! model's arguments against [`ToolSpec::parameters`] before [`Tool::call`] ever runs.

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::policy::Tier;

/// What the model is told about a tool. `name` and the argument names inside `parameters` are a
/// public interface: scripts and other models rely on them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// A JSON Schema (draft 2020-12) object describing the arguments.
    pub parameters: Value,
}

/// Per-call context handed to a tool.
#[derive(Debug, Clone, Default)]
pub struct ToolContext {
    pub session_id: String,
    /// When set, the tool must describe what it would do and change nothing.
    pub dry_run: bool,
}

/// A tool's successful result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolOutput {
    /// Text for the model (the loop caps and filters it before it is sent).
    pub content: String,
    /// Structured facts for the audit log (paths touched, byte counts, ...). Never sent to the model.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub details: Value,
}

impl ToolOutput {
    pub fn text(content: impl Into<String>) -> Self {
        ToolOutput { content: content.into(), details: Value::Null }
    }
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = details;
        self
    }
}

/// A tool failure. `Refused` and `Failed` go back to the model, which may try something else;
/// `Fatal` ends the run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// A guard said no (path outside the roots, sensitive file, ...). Audited as a refusal.
    #[error("refused: {reason}")]
    Refused { reason: String },
    /// The tool ran and failed (file not found, bad input, ...).
    #[error("failed: {message}")]
    Failed { message: String },
    /// Something the run cannot continue after (audit write failed, store broken, ...).
    #[error("fatal: {message}")]
    Fatal { message: String },
}

impl ToolError {
    pub fn refused(reason: impl Into<String>) -> Self {
        ToolError::Refused { reason: reason.into() }
    }
    pub fn failed(message: impl Into<String>) -> Self {
        ToolError::Failed { message: message.into() }
    }
    pub fn kind(&self) -> &'static str {
        match self {
            ToolError::Refused { .. } => "refused",
            ToolError::Failed { .. } => "failed",
            ToolError::Fatal { .. } => "fatal",
        }
    }
}

pub type ToolFuture<'a> = BoxFuture<'a, Result<ToolOutput, ToolError>>;

/// Something the model can ask ARIA to do.
pub trait Tool: Send + Sync + std::fmt::Debug {
    fn spec(&self) -> &ToolSpec;

    /// The lowest tier any call of this tool can have. A run with no one to ask does not offer
    /// a tool whose every call would need approval (it could only be denied). Default: `Read`,
    /// which never withholds a tool; a tool whose [`Tool::tier`] is the same for every call says
    /// so here.
    fn min_tier(&self) -> Tier {
        Tier::Read
    }

    /// The policy tier of one call with these (already schema-validated) arguments. The default
    /// fails safe: a tool that does not say what it does is treated as irreversible.
    fn tier(&self, _args: &Value) -> Tier {
        Tier::Irreversible
    }

    /// How long one call may run when that is longer than the loop's per-tool limit: a build or
    /// test profile carries its own, user-configured timeout and enforces it itself. The loop
    /// waits for the longer of the two (plus a short grace, so the tool's own limit fires first
    /// and reports what ran); the run's overall time limit still applies.
    fn timeout(&self) -> Option<std::time::Duration> {
        None
    }

    /// Whether this tool runs commands that the project's own files define: a Makefile's
    /// recipes, `package.json` scripts, Cargo build scripts, test configuration (the lint,
    /// build and test profiles). When the run has changed such a file, the loop asks the user
    /// before the call, whatever its tier: the model would otherwise choose what runs
    /// unasked. Default: no.
    fn runs_project_definitions(&self) -> bool {
        false
    }

    /// Whether a person confirms every call of this tool. The loop then treats the call as at
    /// least irreversible (so `read_only` refuses it and every other mode asks), and nothing
    /// stands in for the person: not `--yes`, not `--allow`, not an earlier "for this session"
    /// answer; with nobody to ask, the call is denied. For tools whose effect outlives the run
    /// and acts later unattended (`schedule_create` makes a job that runs on its own). Default:
    /// no.
    fn always_confirm(&self) -> bool {
        false
    }

    /// What the person is shown, besides the tool's name and arguments, when a call asks: what
    /// it will do, in their terms (`schedule_create`: the parsed schedule, its zone, the action
    /// and the next three fire times in that zone). Every front end shows it with the question.
    /// `Err`: these arguments cannot succeed; the loop gives the error to the model and asks
    /// nobody. Default: nothing to add.
    fn confirmation(&self, _args: &Value) -> Result<Option<String>, ToolError> {
        Ok(None)
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> ToolFuture<'a>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Silent(ToolSpec);
    impl Tool for Silent {
        fn spec(&self) -> &ToolSpec {
            &self.0
        }
        fn call<'a>(&'a self, _args: Value, _ctx: &'a ToolContext) -> ToolFuture<'a> {
            Box::pin(async { Ok(ToolOutput::text("ok")) })
        }
    }

    #[test]
    fn a_tool_that_does_not_declare_its_tier_is_irreversible() {
        let tool = Silent(ToolSpec {
            name: "x".into(),
            description: String::new(),
            parameters: serde_json::json!({"type": "object"}),
        });
        assert_eq!(tool.tier(&Value::Null), Tier::Irreversible);
        assert_eq!(tool.timeout(), None, "no own timeout: the loop's limit applies");
        assert!(!tool.runs_project_definitions());
        assert!(!tool.always_confirm(), "pre-approval applies unless a tool says otherwise");
        assert_eq!(tool.confirmation(&Value::Null), Ok(None));
    }
}
