use std::sync::atomic::{AtomicUsize, Ordering};

use aria_api::EmbedError;
use futures::future::BoxFuture;
use serde_json::json;

use super::*;

fn spec(name: &str, description: &str) -> ToolSpec {
    ToolSpec { name: name.into(), description: description.into(), parameters: json!({}) }
}

fn registry() -> Vec<ToolSpec> {
    vec![
        spec("apply_patch", "Apply a unified diff to text files. Several files per patch."),
        spec("file_list", "List the entries of a directory inside the allowed roots."),
        spec("file_read", "Read a UTF-8 text file and return its contents."),
        spec("git_log", "List the latest commits of one git repository."),
        spec("system_info", "Facts about this computer: CPU, memory, free disk space."),
        spec("web_fetch", "Fetch a web page and return its text."),
    ]
}

fn names(s: &Selected) -> Vec<&str> {
    s.tools.iter().map(|t| t.name.as_str()).collect()
}

/// An embedder whose vectors count letters a–z: texts sharing letters are "close". Counts its
/// calls and can be told to fail.
#[derive(Debug, Default)]
struct Letters {
    calls: AtomicUsize,
    texts: AtomicUsize,
    fail: bool,
}

impl Embedder for Letters {
    fn model_id(&self) -> &str {
        "test:letters"
    }
    fn dims(&self) -> usize {
        26
    }
    fn embed(&self, texts: &[String]) -> BoxFuture<'static, Result<Vec<Vec<f32>>, EmbedError>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.texts.fetch_add(texts.len(), Ordering::SeqCst);
        let fail = self.fail;
        let out: Vec<Vec<f32>> = texts
            .iter()
            .map(|t| {
                let mut v = vec![0.0; 26];
                for c in t.to_lowercase().bytes().filter(u8::is_ascii_lowercase) {
                    v[usize::from(c - b'a')] += 1.0;
                }
                v
            })
            .collect();
        Box::pin(async move {
            if fail { Err(EmbedError::Auth { message: "no key".into() }) } else { Ok(out) }
        })
    }
}

#[tokio::test]
async fn words_pick_the_tools_the_request_is_about_best_first() {
    let s = ToolSelection::new(2, None);
    let got = s.select("What is in this directory? List the files", &registry(), &[]).await;
    assert_eq!(got.ranked_by, "words");
    assert_eq!(names(&got), ["file_list", "file_read"]);
    let got = s.select("fetch the page at example.org", &registry(), &[]).await;
    // Best first, then a tie at nothing in common, broken by the registry's order.
    assert_eq!(names(&got), ["web_fetch", "apply_patch"]);
}

#[tokio::test]
async fn tools_already_called_stay_offered_and_few_tools_are_all_offered() {
    let s = ToolSelection::new(2, None);
    let got = s.select("show the commits", &registry(), &["web_fetch".to_owned()]).await;
    assert!(names(&got).contains(&"web_fetch") && names(&got).contains(&"git_log"), "{got:?}");
    assert_eq!(got.tools.len(), 2);
    let few = &registry()[..2];
    let got = s.select("anything", few, &[]).await;
    assert_eq!((got.tools.as_slice(), got.ranked_by), (few, "all"));
    // Nothing in common with any tool: still `max` tools, the registry's first.
    let got = s.select("zzz qqq", &registry(), &[]).await;
    assert_eq!(names(&got), ["apply_patch", "file_list"]);
}

#[tokio::test]
async fn an_embedder_ranks_by_meaning_and_embeds_each_tool_once() {
    let letters = Arc::new(Letters::default());
    let s = ToolSelection::new(1, Some(letters.clone()));
    let got = s.select("web fetch page", &registry(), &[]).await;
    assert_eq!(got.ranked_by, "embedding");
    assert_eq!(got.tools.len(), 1);
    assert_eq!(letters.texts.load(Ordering::SeqCst), registry().len() + 1);
    s.select("web fetch page", &registry(), &[]).await;
    assert_eq!(letters.calls.load(Ordering::SeqCst), 2);
    assert_eq!(letters.texts.load(Ordering::SeqCst), registry().len() + 2, "only the query again");
}

#[tokio::test]
async fn a_failing_embedder_falls_back_to_words() {
    let s = ToolSelection::new(1, Some(Arc::new(Letters { fail: true, ..Letters::default() })));
    let got = s.select("read the file contents", &registry(), &[]).await;
    assert_eq!((names(&got), got.ranked_by), (vec!["file_read"], "words"));
}

#[test]
fn words_drop_short_and_common_words_and_plural_s() {
    let w = words("What are the files in src? Lists, pass");
    let mut w: Vec<_> = w.into_iter().collect();
    w.sort();
    assert_eq!(w, ["file", "list", "pass", "src"]);
}
