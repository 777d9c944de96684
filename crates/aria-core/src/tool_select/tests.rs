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
    // The core file tools in their fixed order, then one ranked tool: a tie between two that
    // mention files or lists, broken by the registry's order.
    assert_eq!(names(&got), ["file_read", "file_list", "apply_patch"]);
    let got = s.select("fetch the page at example.org", &registry(), &[]).await;
    assert_eq!(names(&got), ["file_read", "file_list", "web_fetch"]);
}

#[tokio::test]
async fn tools_already_called_stay_offered_and_few_tools_are_all_offered() {
    let s = ToolSelection::new(2, None);
    let got = s.select("show the commits", &registry(), &["web_fetch".to_owned()]).await;
    assert_eq!(names(&got), ["file_read", "file_list", "git_log", "web_fetch"]);
    let few = &registry()[..2];
    let got = s.select("anything", few, &[]).await;
    assert_eq!((got.tools.as_slice(), got.ranked_by), (few, "all"));
    // Nothing in common with any tool: the core tools and one more, the registry's first.
    let got = s.select("zzz qqq", &registry(), &[]).await;
    assert_eq!(names(&got), ["file_read", "file_list", "apply_patch"]);
}

#[tokio::test]
async fn an_embedder_ranks_by_meaning_and_embeds_each_tool_once() {
    let letters = Arc::new(Letters::default());
    let s = ToolSelection::new(1, Some(letters.clone()));
    let got = s.select("web fetch page", &registry(), &[]).await;
    assert_eq!(got.ranked_by, "embedding");
    assert_eq!(got.tools.len(), 3, "the two core tools and one ranked: {got:?}");
    assert_eq!(letters.texts.load(Ordering::SeqCst), registry().len() + 1);
    s.select("web fetch page", &registry(), &[]).await;
    assert_eq!(letters.calls.load(Ordering::SeqCst), 2);
    assert_eq!(letters.texts.load(Ordering::SeqCst), registry().len() + 2, "only the query again");
}

#[tokio::test]
async fn a_failing_embedder_falls_back_to_words() {
    let s = ToolSelection::new(1, Some(Arc::new(Letters { fail: true, ..Letters::default() })));
    let got = s.select("read the file contents", &registry(), &[]).await;
    assert_eq!(
        (names(&got), got.ranked_by),
        (vec!["file_read", "file_list", "apply_patch"], "words")
    );
}

#[test]
fn words_drop_short_and_common_words_and_plural_s() {
    let w = words("What are the files in src? Lists, pass");
    let mut w: Vec<_> = w.into_iter().collect();
    w.sort();
    assert_eq!(w, ["file", "list", "pass", "src"]);
}

/// "Read calc.py and summarise what it does" was offered neither `file_read` nor,
/// for "rename multiply to mul", `apply_patch` or `file_write`.
#[tokio::test]
async fn the_core_file_tools_are_always_offered_and_the_change_tools_when_asked() {
    let mut tools = registry();
    tools.push(spec("file_search", "Search files for a pattern."));
    tools.push(spec("file_write", "Write a whole text file."));
    tools.push(spec("file_edit", "Replace exact text in a file."));
    tools.push(spec("file_insert", "Add lines to a file."));
    tools.push(spec("python_run", "Run a Python script in a sandbox and summarise its output."));
    tools.push(spec("run_tests", "Run the project's tests and summarise the failures."));
    let s = ToolSelection::new(4, None);
    let got = s.select("Read calc.py and summarise what it does", &tools, &[]).await;
    let offered = names(&got);
    for core in CORE_TOOLS {
        assert!(offered.contains(&core), "{offered:?}");
    }
    for change in CHANGE_TOOLS {
        assert!(!offered.contains(&change), "{offered:?}");
    }
    let got = s.select("rename multiply to mul in calc.py", &tools, &[]).await;
    let offered = names(&got);
    for tool in CORE_TOOLS.iter().chain(&CHANGE_TOOLS) {
        assert!(offered.contains(tool), "{offered:?}");
    }
    assert_eq!(offered.len(), 8, "the core and change tools and one ranked: {offered:?}");
}

#[tokio::test]
async fn with_an_embedder_shared_words_still_count() {
    // The letter-count embedder finds "system info" closest to a query about "summarise", but
    // the words the query shares with python_run's description lift it.
    let mut tools = registry();
    tools.push(spec("python_run", "Run a Python script and summarise its output."));
    let s = ToolSelection::new(3, Some(Arc::new(Letters::default())));
    let got = s.select("run this python script", &tools, &[]).await;
    assert!(names(&got).contains(&"python_run"), "{:?}", names(&got));
}

#[test]
fn a_change_is_asked_for_by_its_verb() {
    assert!(asks_for_change("Rename multiply to mul"));
    assert!(asks_for_change("please fix the typo in README.md"));
    assert!(!asks_for_change("What does calc.py do?"));
    assert!(!asks_for_change("Tell me a short joke"));
    // By the sentence's form, not the word: these name verbs of change as nouns.
    assert!(!asks_for_change("What does the add function in calc.py return?"));
    assert!(!asks_for_change("what does update() do"));
    assert!(!asks_for_file_change("Why is the delete button in form.html greyed out?"));
}

#[test]
fn a_change_to_files_needs_a_verb_and_a_file() {
    assert!(asks_for_file_change("Rename multiply to mul in calc.py"));
    assert!(asks_for_file_change("fix the typo in `docs/intro.md`."));
    assert!(asks_for_file_change("Add a license file"));
    assert!(!asks_for_file_change("Write me a poem about autumn"));
    assert!(!asks_for_file_change("What does calc.py do?"));
    assert!(!asks_for_file_change("add 2.5 and 3"), "a number is not a file name");
}
