use std::borrow::Cow;
use std::sync::Mutex;

use pretty_assertions::assert_eq;

use super::*;
use crate::memory::{MemoryFuture, MemoryHit, SearchScope, Stored};

/// Word-overlap search; a memory with the same words (any case) is updated, not duplicated.
#[derive(Debug, Default)]
struct Fake {
    items: Mutex<Vec<NewMemory>>,
}

fn words(s: &str) -> Vec<String> {
    s.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

impl MemoryBackend for Fake {
    fn search<'a>(
        &'a self,
        query: &'a str,
        scope: SearchScope,
    ) -> MemoryFuture<'a, Vec<MemoryHit>> {
        let q = words(query);
        let items = self.items.lock().unwrap().clone();
        Box::pin(async move {
            let mut hits: Vec<MemoryHit> = items
                .iter()
                .enumerate()
                .map(|(i, m)| {
                    let score = words(&m.content).iter().filter(|w| q.contains(w)).count() as f64;
                    MemoryHit {
                        id: format!("m{i}"),
                        content: m.content.clone(),
                        kind: m.kind,
                        categories: m.categories.clone(),
                        confidence: m.confidence,
                        score,
                        similarity: None,
                        text_match: true,
                        private: m.private,
                    }
                })
                .filter(|h| h.score > 0.0 && (scope.private || !h.private))
                .collect();
            hits.sort_by(|a, b| b.score.total_cmp(&a.score));
            hits.truncate(scope.limit);
            Ok(hits)
        })
    }

    fn profile(&self, _private: bool) -> MemoryFuture<'_, Vec<MemoryHit>> {
        Box::pin(async { Ok(vec![]) })
    }

    fn remember(&self, memory: NewMemory) -> MemoryFuture<'_, Stored> {
        let mut items = self.items.lock().unwrap();
        let same = items.iter().position(|m| words(&m.content) == words(&memory.content));
        let stored = match same {
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

#[derive(Debug)]
struct HideKey;
impl Redact for HideKey {
    fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        Cow::Owned(text.replace("sk-test-SECRET", "[REDACTED:test]"))
    }
}

fn ctx() -> ToolContext {
    ToolContext { session_id: "s1".into(), dry_run: false }
}

#[tokio::test]
async fn store_then_search_finds_it_and_a_repeat_updates_instead_of_duplicating() {
    let fake = Arc::new(Fake::default());
    let tools = memory_tools(fake.clone(), Arc::new(HideKey), true);
    let (search, store) = (&tools[0], &tools[1]);
    assert_eq!(search.tier(&json!({})), Tier::Read);
    assert_eq!(store.tier(&json!({})), Tier::RecoverableWrite);

    let args = json!({"content": "The user's favorite color is blue.", "kind": "preference", "categories": ["Colors"]});
    let out = store.call(args.clone(), &ctx()).await.unwrap();
    assert!(out.content.starts_with("remembered (m0)"), "{}", out.content);
    let again = store.call(args, &ctx()).await.unwrap();
    assert!(again.content.starts_with("updated the existing memory (m0)"), "{}", again.content);
    assert_eq!(fake.items.lock().unwrap().len(), 1);
    let stored = fake.items.lock().unwrap()[0].clone();
    assert_eq!(stored.kind, MemoryKind::Preference);
    assert_eq!(stored.categories, ["colors"]);
    assert_eq!(stored.provenance.session_id.as_deref(), Some("s1"));
    assert_eq!(stored.provenance.source, "tool");

    assert_eq!(again.details["outcome"], "updated", "tool.end audits what was written");
    assert_eq!(again.details["id"], "m0");
    let found = search.call(json!({"query": "what is my favorite color?"}), &ctx()).await.unwrap();
    assert!(
        found.content.contains("m0 [preference (colors)] The user's favorite color is blue."),
        "{}",
        found.content
    );
    let none = search.call(json!({"query": "bicycles"}), &ctx()).await.unwrap();
    assert_eq!(none.content, "no memories match");
}

#[tokio::test]
async fn a_secret_never_reaches_the_memory_store() {
    let fake = Arc::new(Fake::default());
    let tools = memory_tools(fake.clone(), Arc::new(HideKey), true);
    tools[1].call(json!({"content": "My key is sk-test-SECRET"}), &ctx()).await.unwrap();
    let stored = fake.items.lock().unwrap()[0].content.clone();
    assert_eq!(stored, "My key is [REDACTED:test]");
    assert_eq!(fake.items.lock().unwrap()[0].kind, MemoryKind::Fact, "the default kind");
}

#[tokio::test]
async fn a_dry_run_stores_nothing() {
    let fake = Arc::new(Fake::default());
    let tools = memory_tools(fake.clone(), Arc::new(HideKey), true);
    let dry = ToolContext { session_id: "s1".into(), dry_run: true };
    let out = tools[1].call(json!({"content": "x"}), &dry).await.unwrap();
    assert!(out.content.starts_with("[dry run]"));
    assert!(fake.items.lock().unwrap().is_empty());
}

/// A key with an invisible character inside is still a key. The real
/// redactor (with a configured value, as `OPENAI_API_KEY`'s would be) sits in front of the store.
#[tokio::test]
async fn a_secret_split_by_an_invisible_character_never_reaches_the_memory_store() {
    const CONFIGURED: &str = "opaque.Configured.Value.4242";
    const GITHUB: &str = "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8";
    let fake = Arc::new(Fake::default());
    let redactor = aria_tools::SecretRedactor::new(vec![CONFIGURED.to_owned()]);
    let tools = memory_tools(fake.clone(), Arc::new(redactor), true);
    let hidden = ['\u{200B}', '\u{2060}', '\u{FEFF}', '\u{00AD}', '\u{200C}', '\u{200E}'];
    for (i, h) in hidden.into_iter().enumerate() {
        let content = format!(
            "Remember {i}: my token is ghp_A1b2C3d4E5{h}f6G7h8I9j0K1l2M3n4O5p6Q7r8 and the API key is opaque.Conf{h}igured.Value.4242"
        );
        tools[1].call(json!({"content": content}), &ctx()).await.unwrap();
    }
    let items = fake.items.lock().unwrap().clone();
    assert_eq!(items.len(), hidden.len());
    for m in items {
        let visible: String = m.content.chars().filter(|c| !hidden.contains(c)).collect();
        assert!(!visible.contains(GITHUB) && !visible.contains("f6G7h8I9j0K1l2M3"), "{visible}");
        assert!(!visible.contains(CONFIGURED) && !visible.contains("igured.Value"), "{visible}");
        assert!(visible.contains("[REDACTED:github_token]"), "{visible}");
        assert!(visible.contains("[REDACTED:known]"), "{visible}");
    }
}
