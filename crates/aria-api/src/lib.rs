//! Shared vocabulary of ARIA.
//!
//! This crate owns the types every other crate speaks: chat messages and tool calls, the
//! streaming [`Provider`] contract, the [`Tool`] contract, policy enums, the pure session state
//! machine, and the [`Redact`] hook used to keep secrets out of logs and the audit log. It does no
//! I/O and holds no concrete implementation: concrete types meet only in `aria-cli`.
//!
//! The one design decision to know: a provider has exactly one required method,
//! [`Provider::stream`], which yields [`ChatEvent`]s; tool-call fragments are assembled by the
//! provider, so the agent loop only ever sees whole [`ToolCall`]s whose `arguments` are the raw
//! text the model wrote (validation happens in the loop, never in the provider).

mod chat;
mod embed;
mod fence;
mod journal;
mod message;
mod policy;
mod quote;
mod redact;
mod request_kind;
mod session;
mod shown;
mod since;
mod tool;
mod words;

pub use chat::{
    ChatEvent, ChatRequest, ChatResponse, ChatStream, FinishReason, Provider, ProviderError,
};
pub use embed::{
    EmbedError, Embedder, MAX_PASSAGES, PASSAGE_OVERLAP, PASSAGE_WORDS, PassagePlan,
    check_batch as check_embed_batch, cosine, even_windows, may_embed, passage_texts,
    word_passages,
};
pub use fence::{
    CHANGE_TOOLS, EDIT_FILE_TOOL, INSERT_FILE_TOOL, PATCH_TOOL, READ_FILE_TOOL, WRITE_FILE_TOOL,
    fence, tool_failed, untrusted_body,
};
pub use journal::{
    AuditEvent, AuditSink, HistorySummary, Journal, JournalError, MessageMeta, NewSession,
    SessionRecord, TraceKind, TraceRecord,
};
pub use message::{Message, Role, ToolCall, Usage};
pub use policy::{ApprovalMode, Tier};
pub use quote::{QUOTE_MIN_CHARS, QUOTE_MIN_SHORT, normalise_for_quotes, quotes};
pub use redact::{NoRedact, Redact, redact_json};
pub use request_kind::{RequestKind, asks_for_change, classify as classify_request};
pub use session::{IllegalTransition, Limits, SessionState};
pub use shown::{approval_arguments, escape_hidden, needs_escape};
pub use since::{SinceError, parse_since};
pub use tool::{Tool, ToolContext, ToolError, ToolFuture, ToolOutput, ToolSpec};
pub use words::{
    ARIA_NOTE, asks_about_a_named_file, asks_to_add_lines, asks_to_edit_a_named_file, is_aria_note,
    refers_to_code, refers_to_files,
};
