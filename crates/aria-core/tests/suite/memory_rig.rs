//! Fixtures for context, compaction and memory tests: a provider that answers each request by
//! looking at it (so summary and extraction calls can be told from turns), and an in-memory
//! memory backend.

use std::sync::{Arc, Mutex};

use aria_api::{
    ChatEvent, ChatRequest, ChatStream, FinishReason, Message, Provider, ProviderError, Role,
    SessionRecord, ToolCall, Usage,
};
use aria_core::{
    Agent, AgentConfig, EXTRACTION_TOOL, MemoryBackend, MemoryError, MemoryFuture, MemoryHit,
    NewMemory, RunError, SearchScope, Stored, ToolRegistry,
};
use aria_testkit::memory::MemoryJournal;
use futures::stream;
use tokio_util::sync::CancellationToken;

use super::harness::TestRedactor;

/// How the provider answers one request.
pub enum Reply {
    Text(String),
    Tool(&'static str, String),
    Fail(ProviderError),
    Hang,
}

type Answer = dyn Fn(&ChatRequest) -> Reply + Send + Sync;

/// Answers with a function of the request and records every request.
#[derive(Clone)]
pub struct FnProvider {
    answer: Arc<Answer>,
    pub requests: Arc<Mutex<Vec<ChatRequest>>>,
}

impl std::fmt::Debug for FnProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FnProvider")
    }
}

impl FnProvider {
    pub fn new(answer: impl Fn(&ChatRequest) -> Reply + Send + Sync + 'static) -> Self {
        FnProvider { answer: Arc::new(answer), requests: Arc::default() }
    }

    pub fn requests(&self) -> Vec<ChatRequest> {
        self.requests.lock().unwrap().clone()
    }

    /// Requests of the agent's own turns (not summaries, not extractions).
    pub fn turn_requests(&self) -> Vec<ChatRequest> {
        self.requests().into_iter().filter(|r| kind(r) == Kind::Turn).collect()
    }
}

#[derive(Debug, PartialEq, Eq)]
pub enum Kind {
    Summary,
    Extraction,
    Turn,
}

/// What a request is for.
pub fn kind(r: &ChatRequest) -> Kind {
    if r.tools.iter().any(|t| t.name == EXTRACTION_TOOL) {
        Kind::Extraction
    } else if r
        .messages
        .first()
        .is_some_and(|m| m.content.starts_with("You compress conversations"))
    {
        Kind::Summary
    } else {
        Kind::Turn
    }
}

impl Provider for FnProvider {
    fn name(&self) -> &str {
        "fn"
    }

    fn stream(&self, request: ChatRequest) -> ChatStream {
        let reply = (self.answer)(&request);
        let n = {
            let mut all = self.requests.lock().unwrap();
            all.push(request);
            all.len()
        };
        let usage = Ok(ChatEvent::Usage { usage: Usage { input_tokens: 10, output_tokens: 5 } });
        let events = match reply {
            Reply::Hang => return Box::pin(stream::pending()),
            Reply::Fail(e) => vec![Err(e)],
            Reply::Text(text) => vec![
                Ok(ChatEvent::TextDelta { text }),
                usage,
                Ok(ChatEvent::Finished { reason: FinishReason::Stop }),
            ],
            Reply::Tool(name, arguments) => vec![
                Ok(ChatEvent::ToolCall {
                    call: ToolCall { id: format!("call_{n}"), name: name.into(), arguments },
                }),
                usage,
                Ok(ChatEvent::Finished { reason: FinishReason::ToolCalls }),
            ],
        };
        Box::pin(stream::iter(events))
    }
}

/// Memories in a vector: word-overlap search, same words = update.
#[derive(Debug, Default)]
pub struct FakeMemory {
    pub items: Mutex<Vec<NewMemory>>,
    pub profile: Mutex<Vec<MemoryHit>>,
    pub fail_search: bool,
    /// Search like a vector index: every memory is a hit, with the share of its words that
    /// the query has as its similarity.
    pub vectors: bool,
}

fn words(s: &str) -> Vec<String> {
    s.split(|c: char| !c.is_alphanumeric()).filter(|w| w.len() > 2).map(str::to_lowercase).collect()
}

impl MemoryBackend for FakeMemory {
    fn search<'a>(
        &'a self,
        query: &'a str,
        scope: SearchScope,
    ) -> MemoryFuture<'a, Vec<MemoryHit>> {
        let q = words(query);
        let items = self.items.lock().unwrap().clone();
        let fail = self.fail_search;
        let vectors = self.vectors;
        Box::pin(async move {
            if fail {
                return Err(MemoryError::Embed("the embedder is down (test)".into()));
            }
            let mut hits: Vec<MemoryHit> = items
                .iter()
                .enumerate()
                .map(|(i, m)| {
                    let mine = words(&m.content);
                    let shared = mine.iter().filter(|w| q.contains(w)).count() as f64;
                    MemoryHit {
                        id: format!("m{i}"),
                        content: m.content.clone(),
                        kind: m.kind,
                        categories: m.categories.clone(),
                        confidence: m.confidence,
                        score: shared + 0.5,
                        similarity: vectors.then(|| shared / mine.len().max(1) as f64),
                        text_match: shared > 0.0,
                        private: m.private,
                    }
                })
                .filter(|h| (vectors || h.text_match) && (scope.private || !h.private))
                .collect();
            hits.sort_by(|a, b| b.score.total_cmp(&a.score));
            hits.truncate(scope.limit);
            Ok(hits)
        })
    }

    fn profile(&self, _private: bool) -> MemoryFuture<'_, Vec<MemoryHit>> {
        let profile = self.profile.lock().unwrap().clone();
        Box::pin(async move { Ok(profile) })
    }

    fn remember(&self, memory: NewMemory) -> MemoryFuture<'_, Stored> {
        let mut items = self.items.lock().unwrap();
        let stored = match items.iter().position(|m| words(&m.content) == words(&memory.content)) {
            Some(i) => {
                items[i] = memory;
                Stored::Updated(format!("m{i}"))
            }
            None => {
                items.push(memory);
                Stored::Inserted(format!("m{}", items.len() - 1))
            }
        };
        Box::pin(async move { Ok(stored) })
    }
}

pub struct MemRig {
    pub provider: FnProvider,
    pub journal: Arc<MemoryJournal>,
    pub memory: Arc<FakeMemory>,
    pub agent: Agent,
}

pub fn mem_rig(
    provider: FnProvider,
    memory: FakeMemory,
    tools: Vec<Arc<dyn aria_api::Tool>>,
    tweak: impl FnOnce(&mut AgentConfig),
) -> MemRig {
    build(provider, memory, tools, false, tweak)
}

/// A rig whose tools are the memory tools over its own memory (`memory_store` and
/// `memory_search`, private ones only when `local_model` is set by `tweak`), plus `tools`.
pub fn mem_rig_with_memory_tools(
    provider: FnProvider,
    memory: FakeMemory,
    tools: Vec<Arc<dyn aria_api::Tool>>,
    tweak: impl FnOnce(&mut AgentConfig),
) -> MemRig {
    build(provider, memory, tools, true, tweak)
}

fn build(
    provider: FnProvider,
    memory: FakeMemory,
    mut tools: Vec<Arc<dyn aria_api::Tool>>,
    memory_tools: bool,
    tweak: impl FnOnce(&mut AgentConfig),
) -> MemRig {
    let journal = Arc::new(MemoryJournal::new());
    let memory = Arc::new(memory);
    let mut config = AgentConfig::new("test-model", "You are a test.");
    tweak(&mut config);
    if memory_tools {
        let redactor = Arc::new(TestRedactor);
        tools.extend(aria_core::memory_tools(memory.clone(), redactor, config.local_model));
    }
    let agent = Agent::new(
        Arc::new(provider.clone()),
        Arc::new(ToolRegistry::new(tools).unwrap()),
        journal.clone(),
        journal.clone(),
        Arc::new(TestRedactor),
        config,
    )
    .with_memory(memory.clone());
    MemRig { provider, journal, memory, agent }
}

impl MemRig {
    pub async fn turn(
        &self,
        task: &str,
        conversation: Option<&str>,
    ) -> Result<SessionRecord, RunError> {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let drain = tokio::spawn(async move { while rx.recv().await.is_some() {} });
        let result = self
            .agent
            .run(task, conversation.map(str::to_owned), &tx, CancellationToken::new())
            .await;
        drop(tx);
        let _ = drain.await;
        result
    }
}

/// Every tool result in `messages` follows the assistant message that made its call.
pub fn calls_precede_results(messages: &[Message]) -> bool {
    messages.iter().enumerate().all(|(i, m)| {
        m.role != Role::Tool
            || messages[..i]
                .iter()
                .rev()
                .take_while(|p| p.role == Role::Tool || p.role == Role::Assistant)
                .any(|p| {
                    p.role == Role::Assistant
                        && p.tool_calls.iter().any(|c| Some(&c.id) == m.tool_call_id.as_ref())
                })
    })
}

pub fn words_n(n: usize) -> String {
    "word ".repeat(n)
}
