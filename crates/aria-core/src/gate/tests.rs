use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aria_api::{
    ApprovalMode, Limits, NoRedact, Redact, Tier, Tool, ToolContext, ToolError, ToolFuture,
    ToolOutput, ToolSpec,
};
use aria_testkit::memory::MemoryJournal;
use futures::future::BoxFuture;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::*;
use crate::snapshot::{RestorePoint, SnapshotFailed};

/// A tool of a fixed tier that counts its calls and answers with `reply`.
#[derive(Debug)]
struct Fixed {
    spec: ToolSpec,
    tier: Tier,
    reply: Result<String, ToolError>,
    calls: AtomicUsize,
    sleep: Duration,
}

fn fixed(name: &str, tier: Tier, reply: Result<&str, ToolError>) -> Arc<Fixed> {
    Arc::new(Fixed {
        spec: ToolSpec {
            name: name.into(),
            description: "test".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}},
                               "required": ["path"], "additionalProperties": false}),
        },
        tier,
        reply: reply.map(str::to_owned),
        calls: AtomicUsize::new(0),
        sleep: Duration::ZERO,
    })
}

impl Tool for Fixed {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    fn tier(&self, _args: &Value) -> Tier {
        self.tier
    }
    fn call<'a>(&'a self, _args: Value, _ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            self.calls.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(self.sleep).await;
            self.reply.clone().map(ToolOutput::text)
        })
    }
}

#[derive(Debug)]
struct Answering(ApprovalAnswer, Mutex<Vec<ApprovalRequest>>);

impl Approver for Answering {
    fn ask(&self, request: ApprovalRequest) -> BoxFuture<'static, ApprovalAnswer> {
        self.1.lock().unwrap().push(request);
        let answer = self.0;
        Box::pin(async move { answer })
    }
}

#[derive(Debug, Default)]
struct Snap(Mutex<Vec<(String, String)>>);

impl Snapshotter for Snap {
    fn before_write(
        &self,
        tool: &str,
        _args: &Value,
        session_id: &str,
    ) -> Result<Vec<RestorePoint>, SnapshotFailed> {
        self.0.lock().unwrap().push((tool.to_owned(), session_id.to_owned()));
        Ok(vec![RestorePoint { id: "snapshot/x-1".into(), repository: "/repo".into() }])
    }
}

/// Redacts the word `hunter2`.
#[derive(Debug)]
struct Hunter;

impl Redact for Hunter {
    fn redact<'a>(&self, text: &'a str) -> std::borrow::Cow<'a, str> {
        text.replace("hunter2", "[REDACTED]").into()
    }
}

fn gate(tools: Vec<Arc<dyn Tool>>, journal: &Arc<MemoryJournal>, mode: ApprovalMode) -> ToolGate {
    let registry = Arc::new(ToolRegistry::new(tools).unwrap());
    ToolGate::new(registry, journal.clone(), Arc::new(NoRedact), mode, Limits::default())
}

fn caller() -> Caller {
    Caller::new("editor\u{7}-x", "mcp-1")
}

#[tokio::test]
async fn a_read_runs_and_is_audited_with_the_clients_name() {
    let journal = Arc::new(MemoryJournal::new());
    let read = fixed("peek", Tier::Read, Ok("seen"));
    let gate = gate(vec![read.clone()], &journal, ApprovalMode::Governed);
    let out = gate.call(&caller(), "peek", json!({"path": "a"})).await;
    assert_eq!(out, Gated { text: "seen".into(), is_error: false, outcome: "ok" });
    assert_eq!(journal.audit_kinds(), ["tool.start", "tool.end"]);
    let events = journal.audit_events();
    assert_eq!(events[0].actor, "mcp:editor-x");
    assert_eq!(events[0].payload["client"], "editor-x");
    assert_eq!(events[1].payload["outcome"], "ok");
}

#[tokio::test]
async fn bad_arguments_and_unknown_tools_are_errors_that_run_nothing() {
    let journal = Arc::new(MemoryJournal::new());
    let read = fixed("peek", Tier::Read, Ok("seen"));
    let gate = gate(vec![read.clone()], &journal, ApprovalMode::Governed);
    let bad = gate.call(&caller(), "peek", json!({"path": 3})).await;
    assert!(bad.is_error && bad.outcome == "invalid", "{bad:?}");
    let unknown = gate.call(&caller(), "nope", json!({})).await;
    assert!(unknown.is_error && unknown.text.contains("peek"), "{unknown:?}");
    assert_eq!(read.calls.load(Ordering::SeqCst), 0);
    assert_eq!(journal.audit_kinds(), ["tool.invalid", "tool.invalid"]);
}

#[tokio::test]
async fn an_irreversible_call_with_no_one_to_ask_is_refused_with_the_way_out() {
    let journal = Arc::new(MemoryJournal::new());
    let shell = fixed("shell", Tier::Irreversible, Ok("ran"));
    let gate = gate(vec![shell.clone()], &journal, ApprovalMode::Governed);
    let out = gate.call(&caller(), "shell", json!({"path": "a"})).await;
    assert!(out.is_error && out.outcome == "refused", "{out:?}");
    assert!(out.text.contains("no ARIA channel is attached") && out.text.contains("/mcp"));
    assert_eq!(shell.calls.load(Ordering::SeqCst), 0);
    assert_eq!(journal.audit_kinds(), ["tool.refused"]);
}

#[tokio::test]
async fn an_asked_call_runs_only_when_the_user_says_yes() {
    for (answer, runs) in [(ApprovalAnswer::Once, 1), (ApprovalAnswer::Deny, 0)] {
        let journal = Arc::new(MemoryJournal::new());
        let shell = fixed("shell", Tier::Irreversible, Ok("ran"));
        let approver = Arc::new(Answering(answer, Mutex::default()));
        let gate = gate(vec![shell.clone()], &journal, ApprovalMode::Governed)
            .with_approver(approver.clone(), Duration::from_secs(5));
        let out = gate.call(&caller(), "shell", json!({"path": "a"})).await;
        assert_eq!(shell.calls.load(Ordering::SeqCst), runs, "{answer:?}: {out:?}");
        assert_eq!(out.is_error, runs == 0);
        let asked = approver.1.lock().unwrap().clone();
        assert_eq!(asked.len(), 1);
        assert_eq!(asked[0].session_id, "mcp-1");
        assert!(asked[0].reason.as_deref().unwrap().contains("\"editor-x\""));
        assert_eq!(journal.audit_kinds()[0], "approval.answer");
    }
}

#[tokio::test]
async fn read_only_mode_refuses_every_change_and_blocked_never_runs() {
    let journal = Arc::new(MemoryJournal::new());
    let write = fixed("write", Tier::RecoverableWrite, Ok("written"));
    let blocked = fixed("rm", Tier::Blocked, Ok("gone"));
    let approver = Arc::new(Answering(ApprovalAnswer::Once, Mutex::default()));
    let gate = gate(vec![write.clone(), blocked.clone()], &journal, ApprovalMode::ReadOnly)
        .with_approver(approver.clone(), Duration::from_secs(5));
    for name in ["write", "rm"] {
        let out = gate.call(&caller(), name, json!({"path": "a"})).await;
        assert_eq!(out.outcome, "refused", "{name}: {out:?}");
    }
    assert_eq!(write.calls.load(Ordering::SeqCst) + blocked.calls.load(Ordering::SeqCst), 0);
    assert!(approver.1.lock().unwrap().is_empty(), "nobody is asked about what policy refuses");
}

#[tokio::test]
async fn a_recoverable_write_is_snapshotted_first_and_names_its_restore_point() {
    let journal = Arc::new(MemoryJournal::new());
    let write = fixed("write", Tier::RecoverableWrite, Ok("written"));
    let snap = Arc::new(Snap::default());
    let gate =
        gate(vec![write.clone()], &journal, ApprovalMode::Governed).with_snapshotter(snap.clone());
    let out = gate.call(&caller(), "write", json!({"path": "a"})).await;
    assert!(!out.is_error, "{out:?}");
    assert!(out.text.contains("snapshot/x-1"), "{}", out.text);
    assert_eq!(*snap.0.lock().unwrap(), [("write".to_owned(), "mcp-1".to_owned())]);
    assert_eq!(journal.audit_kinds(), ["tool.snapshot", "tool.start", "tool.end"]);
}

#[tokio::test]
async fn results_are_filtered_capped_and_timed_out() {
    let journal = Arc::new(MemoryJournal::new());
    let secret = fixed("peek", Tier::Read, Ok("password hunter2 and more text"));
    let mut slow = Arc::try_unwrap(fixed("slow", Tier::Read, Ok("late"))).unwrap();
    slow.sleep = Duration::from_secs(30);
    let guard_refusal = fixed("outside", Tier::Read, Err(ToolError::refused("outside the roots")));
    let registry = Arc::new(
        ToolRegistry::new(vec![secret as Arc<dyn Tool>, Arc::new(slow), guard_refusal]).unwrap(),
    );
    let limits = Limits {
        tool_timeout: Duration::from_millis(50),
        max_tool_output_chars: 20,
        ..Limits::default()
    };
    let gate =
        ToolGate::new(registry, journal.clone(), Arc::new(Hunter), ApprovalMode::Governed, limits);
    let out = gate.call(&caller(), "peek", json!({"path": "a"})).await;
    assert!(!out.text.contains("hunter2"), "{}", out.text);
    assert!(out.text.starts_with("password [REDACTED]") && out.text.contains("[cut:"));
    let late = gate.call(&caller(), "slow", json!({"path": "a"})).await;
    assert_eq!(late.outcome, "timeout");
    let refused = gate.call(&caller(), "outside", json!({"path": "/etc"})).await;
    assert_eq!(refused.outcome, "refused");
    assert!(refused.text.contains("outside the roots"));
    assert!(journal.audit_kinds().contains(&"tool.refused".to_owned()));
}

#[tokio::test]
async fn a_deferred_gate_lists_at_once_and_calls_once_its_schemas_compiled() {
    let journal = Arc::new(MemoryJournal::new());
    let read = fixed("peek", Tier::Read, Ok("seen"));
    let shell = fixed("shell", Tier::Irreversible, Ok("ran"));
    let gate = ToolGate::deferred(
        vec![shell.clone(), read.clone()],
        journal.clone(),
        Arc::new(NoRedact),
        ApprovalMode::Governed,
        Limits::default(),
    );
    let names: Vec<String> = gate.specs().into_iter().map(|s| s.name).collect();
    assert_eq!(names, ["peek", "shell"]);
    assert_eq!(gate.tier_hint("shell"), Some(Tier::Irreversible));
    assert_eq!(gate.call(&caller(), "peek", json!({"path": "a"})).await.text, "seen");
    let bad = gate.call(&caller(), "peek", json!({"path": 1})).await;
    assert_eq!(bad.outcome, "invalid");

    // A tool whose schema does not compile: listed, and every call says why nothing runs.
    let mut broken = Arc::try_unwrap(fixed("broken", Tier::Read, Ok("x"))).unwrap();
    broken.spec.parameters = json!({"type": "no-such-type"});
    let gate = ToolGate::deferred(
        vec![Arc::new(broken), read.clone()],
        journal.clone(),
        Arc::new(NoRedact),
        ApprovalMode::Governed,
        Limits::default(),
    );
    assert_eq!(gate.specs().len(), 2);
    let out = gate.call(&caller(), "peek", json!({"path": "a"})).await;
    assert!(
        out.is_error && out.text.contains("unavailable") && out.text.contains("broken"),
        "{out:?}"
    );
    assert_eq!(read.calls.load(Ordering::SeqCst), 1, "only the first gate's call ran");
}
