//! One tool call from outside the agent loop: another agent or editor calling ARIA's tools over
//! MCP (`aria mcp serve`, the daemon's `/mcp`).
//!
//! The call meets the same rules as the model's: the tool's JSON Schema, the policy table for
//! its tier in the configured mode, a question to ARIA's user for what asks (refused when no
//! one can be asked), a restore point before a recoverable write, the tool's timeout, the
//! audit log before and after (with the client's name as the actor), and the secret filter and
//! size cap on what goes back. The client is another program: it never approves anything.

use std::sync::Arc;
use std::time::{Duration, Instant};

use aria_api::{
    ApprovalMode, AuditEvent, AuditSink, Limits, Redact, Tier, ToolContext, ToolError, ToolSpec,
};
use serde_json::{Value, json};

use crate::events::{ApprovalAnswer, ApprovalRequest, Approver};
use crate::policy::{Decision, decide};
use crate::registry::ToolRegistry;
use crate::snapshot::Snapshotter;

/// Who is calling: the client's name (from its MCP `initialize`) and this connection's id,
/// which labels its restore points and approval questions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub client: String,
    pub connection: String,
}

impl Caller {
    /// `client` as the client named itself, cut to 64 printable characters.
    pub fn new(client: &str, connection: impl Into<String>) -> Caller {
        let client: String = client
            .chars()
            .filter(|c| !c.is_control())
            .take(64)
            .collect::<String>()
            .trim()
            .to_owned();
        let client = if client.is_empty() { "unnamed".to_owned() } else { client };
        Caller { client, connection: connection.into() }
    }

    /// The audit actor: `mcp:CLIENT`.
    pub fn actor(&self) -> String {
        format!("mcp:{}", self.client)
    }
}

/// What a call returned: the text for the client, and whether it is an error.
#[derive(Debug, Clone, PartialEq)]
pub struct Gated {
    pub text: String,
    pub is_error: bool,
    /// `ok`, `failed`, `refused`, `invalid`, `timeout` or `fatal`.
    pub outcome: &'static str,
}

impl Gated {
    fn error(outcome: &'static str, text: String) -> Gated {
        Gated { text, is_error: true, outcome }
    }
}

/// The registry, or the tools whose schemas are compiled on the first call
/// ([`ToolGate::deferred`]).
struct Registry {
    ready: std::sync::OnceLock<Result<Arc<ToolRegistry>, String>>,
    pending: std::sync::Mutex<Option<Vec<Arc<dyn aria_api::Tool>>>>,
}

impl Registry {
    fn get(&self) -> &Result<Arc<ToolRegistry>, String> {
        self.ready.get_or_init(|| {
            match self.pending.lock().unwrap_or_else(|e| e.into_inner()).take() {
                Some(tools) => ToolRegistry::new(tools).map(Arc::new).map_err(|e| e.to_string()),
                None => Err("the tools were never prepared (a bug in ARIA)".into()),
            }
        })
    }
}

/// The tools offered to a client and the rules their calls meet.
pub struct ToolGate {
    /// Each tool's spec and its tier without arguments (what the client is told).
    listing: Vec<(ToolSpec, Tier)>,
    tools: Registry,
    audit: Arc<dyn AuditSink>,
    redactor: Arc<dyn Redact>,
    approver: Option<Arc<dyn Approver>>,
    snapshotter: Option<Arc<dyn Snapshotter>>,
    mode: ApprovalMode,
    limits: Limits,
    approval_timeout: Duration,
}

impl std::fmt::Debug for ToolGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolGate")
            .field("tools", &self.listing.iter().map(|(s, _)| &s.name).collect::<Vec<_>>())
            .field("mode", &self.mode)
            .field("asks", &self.approver.is_some())
            .finish_non_exhaustive()
    }
}

impl ToolGate {
    pub fn new(
        tools: Arc<ToolRegistry>,
        audit: Arc<dyn AuditSink>,
        redactor: Arc<dyn Redact>,
        mode: ApprovalMode,
        limits: Limits,
    ) -> ToolGate {
        let listing = tools
            .specs()
            .into_iter()
            .filter_map(|spec| {
                let tier = tools.get(&spec.name)?.tier(&json!({}));
                Some((spec, tier))
            })
            .collect();
        let registry = Registry {
            ready: std::sync::OnceLock::from(Ok(tools)),
            pending: std::sync::Mutex::new(None),
        };
        ToolGate::with_registry(listing, registry, audit, redactor, mode, limits)
    }

    /// A gate whose schemas are compiled on the first call rather than up front: the tools can
    /// be listed at once (a client's `tools/list` needs only their specs), and a bad schema or
    /// a duplicate name is then every call's error. What `aria mcp serve` uses, so a client gets
    /// its list without waiting for work it may never need.
    pub fn deferred(
        tools: Vec<Arc<dyn aria_api::Tool>>,
        audit: Arc<dyn AuditSink>,
        redactor: Arc<dyn Redact>,
        mode: ApprovalMode,
        limits: Limits,
    ) -> ToolGate {
        let mut listing: Vec<(ToolSpec, Tier)> =
            tools.iter().map(|t| (t.spec().clone(), t.tier(&json!({})))).collect();
        listing.sort_by(|a, b| a.0.name.cmp(&b.0.name));
        listing.dedup_by(|a, b| a.0.name == b.0.name);
        let registry = Registry {
            ready: std::sync::OnceLock::new(),
            pending: std::sync::Mutex::new(Some(tools)),
        };
        ToolGate::with_registry(listing, registry, audit, redactor, mode, limits)
    }

    fn with_registry(
        listing: Vec<(ToolSpec, Tier)>,
        tools: Registry,
        audit: Arc<dyn AuditSink>,
        redactor: Arc<dyn Redact>,
        mode: ApprovalMode,
        limits: Limits,
    ) -> ToolGate {
        ToolGate {
            listing,
            tools,
            audit,
            redactor,
            approver: None,
            snapshotter: None,
            mode,
            limits,
            approval_timeout: Duration::from_secs(300),
        }
    }

    /// Questions go to `approver` (ARIA's own channels), answered within `timeout`.
    pub fn with_approver(mut self, approver: Arc<dyn Approver>, timeout: Duration) -> Self {
        self.approver = Some(approver);
        self.approval_timeout = timeout;
        self
    }

    /// Recoverable writes are snapshotted first (and so run without asking in governed mode).
    pub fn with_snapshotter(mut self, snapshotter: Arc<dyn Snapshotter>) -> Self {
        self.snapshotter = Some(snapshotter);
        self
    }

    pub fn specs(&self) -> Vec<ToolSpec> {
        self.listing.iter().map(|(spec, _)| spec.clone()).collect()
    }

    /// The tier of `name` called with no arguments: what the tool is at least, for clients'
    /// hints (a call's own tier may be higher, as a shell command's is).
    pub fn tier_hint(&self, name: &str) -> Option<Tier> {
        self.listing.iter().find(|(spec, _)| spec.name == name).map(|(_, tier)| *tier)
    }

    fn audit(&self, caller: &Caller, kind: &str, mut payload: Value) {
        payload["client"] = json!(caller.client);
        payload["connection"] = json!(caller.connection);
        if let Err(e) = self.audit.append(AuditEvent::new(None, &caller.actor(), kind, payload)) {
            tracing::error!("cannot audit an MCP call ({kind}): {e}");
        }
    }

    /// Runs one call by `caller`. Never panics on bad input: every problem is an error result
    /// that says what to do.
    pub async fn call(&self, caller: &Caller, name: &str, args: Value) -> Gated {
        let raw = args.to_string();
        let registry = match self.tools.get() {
            Ok(registry) => registry,
            Err(e) => {
                self.audit(caller, "tool.invalid", json!({"name": name, "error": e}));
                return Gated::error(
                    "invalid",
                    format!("error: ARIA's tools are unavailable: {e}"),
                );
            }
        };
        let (tool, args) = match registry.validate(name, &raw) {
            Ok(ok) => ok,
            Err(e) => {
                self.audit(
                    caller,
                    "tool.invalid",
                    json!({"name": name, "arguments": args, "error": e.to_string()}),
                );
                return Gated::error("invalid", format!("error: {e}"));
            }
        };
        let own = tool.tier(&args);
        let tier = if tool.always_confirm() { own.max(Tier::Irreversible) } else { own };
        let refuse = |reason: String, by: &str| {
            self.audit(
                caller,
                "tool.refused",
                json!({"name": name, "arguments": args, "tier": tier, "by": by, "reason": reason}),
            );
            Gated::error("refused", format!("refused: {reason}"))
        };
        match decide(tier, self.mode, false, self.snapshotter.is_some()) {
            Decision::Allow => {}
            Decision::Refuse(reason) => return refuse(reason, "policy"),
            Decision::DryRun => unreachable!("a gate never dry-runs"),
            Decision::Ask => {
                if let Err(reason) = self.ask(caller, name, &args, tier, tool.as_ref()).await {
                    let by = if self.approver.is_some() { "user" } else { "no_channel" };
                    return refuse(reason, by);
                }
            }
        }
        let points = if own == Tier::RecoverableWrite && crate::snapshot::writes_files(name) {
            match &self.snapshotter {
                Some(s) => match crate::snapshot::take(s, name, &args, &caller.connection).await {
                    Ok(points) => {
                        if !points.is_empty() {
                            self.audit(
                                caller,
                                "tool.snapshot",
                                json!({"name": name, "snapshots": points}),
                            );
                        }
                        points
                    }
                    Err(e) => {
                        self.audit(
                            caller,
                            "tool.snapshot_failed",
                            json!({"name": name, "error": e.0}),
                        );
                        return Gated::error(
                            "failed",
                            format!(
                                "error: not run: the snapshot that makes this change undoable \
                                 failed, so nothing was changed: {e}"
                            ),
                        );
                    }
                },
                None => Vec::new(),
            }
        } else {
            Vec::new()
        };
        self.audit(caller, "tool.start", json!({"name": name, "arguments": args, "tier": tier}));
        let ctx = ToolContext { session_id: caller.connection.clone(), dry_run: false };
        let timeout = crate::run::tool_timeout(self.limits.tool_timeout, tool.timeout());
        let started = Instant::now();
        let result = tokio::time::timeout(timeout, tool.call(args.clone(), &ctx)).await;
        let duration_ms = started.elapsed().as_millis() as u64;
        let (outcome, text) = match result {
            Err(_) => (
                "timeout",
                format!(
                    "error: `{name}` did not finish within {} s and was stopped",
                    timeout.as_secs()
                ),
            ),
            Ok(Ok(output)) => ("ok", output.content),
            Ok(Err(ToolError::Refused { reason })) => return refuse(reason, "guard"),
            Ok(Err(ToolError::Failed { message })) => ("failed", format!("error: {message}")),
            Ok(Err(ToolError::Fatal { message })) => ("fatal", format!("error: {message}")),
        };
        let text = if points.is_empty() {
            text
        } else {
            format!("{text}\n{}", crate::snapshot::result_note(&points))
        };
        let text = cap(&self.redactor.redact(&text), self.limits.max_tool_output_chars);
        self.audit(
            caller,
            "tool.end",
            json!({"name": name, "outcome": outcome, "duration_ms": duration_ms,
                   "output_chars": text.chars().count()}),
        );
        Gated { text, is_error: outcome != "ok", outcome }
    }

    /// Asks ARIA's user; `Err` says why the call does not run.
    async fn ask(
        &self,
        caller: &Caller,
        name: &str,
        args: &Value,
        tier: Tier,
        tool: &dyn aria_api::Tool,
    ) -> Result<(), String> {
        let Some(approver) = &self.approver else {
            return Err(format!(
                "`{name}` is {} and needs the approval of ARIA's user, and no ARIA channel is \
                 attached to ask on (`aria mcp serve` over stdio has none): call it through the \
                 daemon's /mcp endpoint (`aria serve`), where the web UI and Telegram can \
                 answer, or ask the user to do it",
                tier.as_str()
            ));
        };
        let shown = tool.confirmation(args).map_err(|e| e.to_string())?;
        let intro = format!("MCP client \"{}\" asks to run this.", caller.client);
        let request = ApprovalRequest {
            session_id: caller.connection.clone(),
            tool: name.to_owned(),
            arguments: args.clone(),
            tier,
            reason: Some(shown.map_or(intro.clone(), |s| format!("{intro}\n{s}"))),
        };
        let answer = tokio::time::timeout(self.approval_timeout, approver.ask(request))
            .await
            .unwrap_or(ApprovalAnswer::Deny);
        self.audit(
            caller,
            "approval.answer",
            json!({"name": name, "arguments": args, "answer": answer}),
        );
        match answer {
            ApprovalAnswer::Deny => Err(format!(
                "ARIA's user did not approve `{name}` (denied, or no answer within {} s)",
                self.approval_timeout.as_secs()
            )),
            ApprovalAnswer::Once | ApprovalAnswer::Session => Ok(()),
        }
    }
}

/// `text` cut to `max` characters, saying so.
fn cap(text: &str, max: usize) -> String {
    let total = text.chars().count();
    if total <= max {
        return text.to_owned();
    }
    let kept: String = text.chars().take(max).collect();
    format!("{kept}\n[cut: {} of {total} characters not shown]", total - max)
}

#[cfg(test)]
mod tests;
