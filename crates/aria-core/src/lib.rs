//! The ARIA agent.
//!
//! This crate owns the loop that turns one task into a finished session: it builds each model
//! request, validates every tool call against the tool's JSON Schema before anything runs, asks
//! the policy table whether the call may run (and the user, when it must), executes it under a
//! timeout, redacts secrets in what comes back, marks instructions injected into it, caps it and
//! wraps it as untrusted data (`output.rs`), and enforces the hard limits (iterations, tokens,
//! time, cost) that the model can never raise. The loop does no I/O of its own: the model, the
//! tools, the store and the audit log all arrive as `aria-api` traits, wired together in
//! `aria-cli`. What touches the machine here is limited to adapters over `aria-tools`: the git
//! snapshot hook (`snapshot.rs`) and the governed workflow's [`ToolsGovernor`] (command profiles
//! run in the sandbox, `git_commit`'s commit, rollback), both injected through traits the loop
//! knows ([`Snapshotter`], [`Governor`]), so tests run the loop without them.
//!
//! The one design decision to know: every state change goes through a single function that
//! checks the [`aria_api::SessionState`] whitelist, writes the audit record, and persists the
//! session — in that order, halting the run if any step fails. A run therefore never does
//! anything that is not both allowed by the state machine and already in the audit log, and a
//! run killed at any point can be resumed from what was persisted.
//!
//! Around the loop sit two optional layers that never widen what it may do: a persona that may
//! reword a finished answer but has no tools and is checked against it (`persona.rs`), and a
//! planner, with no tools either, that splits a goal into steps each run by the loop (`plan.rs`).

mod agent;
mod compaction;
mod context;
mod events;
mod gate;
mod memory;
mod memory_extract;
mod memory_policy;
mod memory_tools;
mod output;
mod outside;
mod persona;
mod plan;
mod policy;
mod preapprove;
mod registry;
mod run;
mod snapshot;
mod text_call;
mod tool_select;
mod workflow;
mod workflow_baseline;
mod workflow_dry_run;
mod workflow_tools;

pub use agent::{Agent, AgentConfig, Answer, AnsweredBy, Price, RunError, SpendGuard};
pub use compaction::{SUMMARY_MAX_TOKENS, SummaryError, check_summary, summary_request};
pub use context::{
    Assembled, Budget, COMPACT_AT, COMPACT_SHARE, MEMORY_TOKENS, PROFILE_MIN_CONFIDENCE,
    PROFILE_TOKENS, Parts, TokenCounter, assemble, compaction_cut,
};
pub use events::{AgentEvent, ApprovalAnswer, ApprovalRequest, Approver, EventSink};
pub use gate::{Caller, Gated, ToolGate};
pub use memory::{
    MemoryBackend, MemoryError, MemoryFuture, MemoryHit, MemoryKind, NewMemory, Provenance,
    SearchScope, Stored,
};
pub use memory_extract::{
    Candidate, EXTRACTION_TOOL, Extracted, MAX_PENDING_EXTRACTIONS, extraction_request,
    extraction_schema, parse_extraction,
};
pub use memory_policy::{
    Conversation, DEFAULT_RECALL_MIN_SIMILARITY, GRANITE_RECALL_MIN_SIMILARITY, relevant,
    unjustified,
};
pub use memory_tools::{MemorySearchTool, MemoryStoreTool, memory_tools};
// The fence's reader lives in aria-api with its writer; re-exported for the front ends.
pub use aria_api::untrusted_body;
pub use output::{
    Guarded, Shaped, UntrustedFence, guard_for_model, shape_for_model, strip_markers,
};
pub use outside::{INSIDE_TOOLS, brings_outside_text, first_outside_tool, instructs_assistant};
pub use persona::{MAX_RESTYLE_BYTES, Persona, Restyled, check_rewrite, restyle, restyle_request};
pub use plan::{
    Confirmation, Confirmer, PlanOutcome, PlanSettings, PlanStatus, Planner, StepRecord,
    plan_and_execute,
};
pub use policy::{Decision, decide};
pub use preapprove::Preapproval;
pub use registry::{CallError, RegistryError, ToolRegistry};
pub use snapshot::{PlannedPoint, RestorePoint, SnapshotFailed, Snapshotter};
pub use text_call::{TextCall, looks_like_written_call, read as read_text_call};
pub use tool_select::{Selected, ToolSelection};
pub use workflow::{
    Baseline, CheckMemory, CheckOutcome, CheckReport, CheckStatus, Governor, Judgement,
    PlannedCheck, Verdict, WorkflowCommit, baseline, commit_message, govern, report, retry_prompt,
};
pub use workflow_dry_run::{DryRunPlan, DryWrite, RepositoryPlan, dry_run_report};
pub use workflow_tools::{CHECKS, ToolsGovernor};
