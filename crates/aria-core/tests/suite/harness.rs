//! Shared fixtures: a configurable test tool and an agent wired to in-memory parts.

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use aria_api::{
    Redact, SessionRecord, Tier, Tool, ToolContext, ToolError, ToolFuture, ToolOutput, ToolSpec,
};
use aria_core::{Agent, AgentConfig, AgentEvent, ToolRegistry};
use aria_testkit::memory::MemoryJournal;
use aria_testkit::scripted::{End, ScriptedProvider, Turn};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

#[derive(Debug, Clone)]
pub enum Behaviour {
    Echo,
    Output(String),
    Sleep(Duration),
    Refuse(String),
    Fatal,
}

#[derive(Debug)]
pub struct TestTool {
    spec: ToolSpec,
    tier: Tier,
    behaviour: Behaviour,
    /// `Some`: a person confirms every call ([`Tool::always_confirm`]), shown this text (`Ok`)
    /// or told the arguments cannot work (`Err`).
    confirm: Option<Result<String, String>>,
    pub calls: AtomicUsize,
}

impl TestTool {
    pub fn new(name: &str, tier: Tier, behaviour: Behaviour) -> Arc<TestTool> {
        Arc::new(TestTool {
            spec: ToolSpec {
                name: name.into(),
                description: format!("test tool {name}"),
                parameters: json!({
                    "type": "object",
                    "properties": {"path": {"type": "string"}},
                    "required": ["path"],
                    "additionalProperties": false
                }),
            },
            tier,
            behaviour,
            confirm: None,
            calls: AtomicUsize::new(0),
        })
    }

    /// A tool a person confirms every time, with what it shows them (or why it cannot work).
    pub fn confirmed(
        name: &str,
        tier: Tier,
        confirmation: Result<String, String>,
    ) -> Arc<TestTool> {
        let mut tool = Arc::into_inner(TestTool::new(name, tier, Behaviour::Echo))
            .unwrap_or_else(|| unreachable!("just made"));
        tool.confirm = Some(confirmation);
        Arc::new(tool)
    }

    pub fn count(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

impl Tool for TestTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    fn min_tier(&self) -> Tier {
        self.tier
    }

    fn tier(&self, _args: &Value) -> Tier {
        self.tier
    }
    fn always_confirm(&self) -> bool {
        self.confirm.is_some()
    }
    fn confirmation(&self, _args: &Value) -> Result<Option<String>, ToolError> {
        match &self.confirm {
            None => Ok(None),
            Some(Ok(text)) => Ok(Some(text.clone())),
            Some(Err(why)) => Err(ToolError::failed(why.clone())),
        }
    }
    fn call<'a>(&'a self, args: Value, _ctx: &'a ToolContext) -> ToolFuture<'a> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let behaviour = self.behaviour.clone();
        Box::pin(async move {
            match behaviour {
                Behaviour::Echo => Ok(ToolOutput::text(format!("contents of {}", args["path"]))),
                Behaviour::Output(s) => Ok(ToolOutput::text(s)),
                Behaviour::Sleep(d) => {
                    tokio::time::sleep(d).await;
                    Ok(ToolOutput::text("late"))
                }
                Behaviour::Refuse(r) => Err(ToolError::refused(r)),
                Behaviour::Fatal => Err(ToolError::Fatal { message: "store broken".into() }),
            }
        })
    }
}

/// Redacts the literal `sk-test-SECRET`.
#[derive(Debug)]
pub struct TestRedactor;
impl Redact for TestRedactor {
    fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        if text.contains("sk-test-SECRET") {
            Cow::Owned(text.replace("sk-test-SECRET", "[REDACTED:test]"))
        } else {
            Cow::Borrowed(text)
        }
    }
}

pub struct Rig {
    pub provider: ScriptedProvider,
    pub journal: Arc<MemoryJournal>,
    pub agent: Agent,
}

pub fn rig(
    turns: Vec<Turn>,
    end: End,
    tools: Vec<Arc<TestTool>>,
    tweak: impl FnOnce(&mut AgentConfig),
) -> Rig {
    rig_with_journal(turns, end, tools, tweak, MemoryJournal::new())
}

pub fn rig_with_journal(
    turns: Vec<Turn>,
    end: End,
    tools: Vec<Arc<TestTool>>,
    tweak: impl FnOnce(&mut AgentConfig),
    journal: MemoryJournal,
) -> Rig {
    let provider = ScriptedProvider::new(turns, end);
    let journal = Arc::new(journal);
    let tools: Vec<Arc<dyn Tool>> = tools.into_iter().map(|t| t as Arc<dyn Tool>).collect();
    let mut config = AgentConfig::new("test-model", "You are a test.");
    tweak(&mut config);
    let agent = Agent::new(
        Arc::new(provider.clone()),
        Arc::new(ToolRegistry::new(tools).unwrap()),
        journal.clone(),
        journal.clone(),
        Arc::new(TestRedactor),
        config,
    );
    Rig { provider, journal, agent }
}

impl Rig {
    pub async fn run(
        &self,
        task: &str,
    ) -> (Result<SessionRecord, aria_core::RunError>, Vec<AgentEvent>) {
        self.run_with(task, CancellationToken::new()).await
    }

    pub async fn run_with(
        &self,
        task: &str,
        cancel: CancellationToken,
    ) -> (Result<SessionRecord, aria_core::RunError>, Vec<AgentEvent>) {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let result = self.agent.run(task, None, &tx, cancel).await;
        drop(tx);
        let mut events = Vec::new();
        while let Some(e) = rx.recv().await {
            events.push(e);
        }
        (result, events)
    }
}
