//! Unit tests of `file_search`'s argument checks, pattern compilation, line shaping and
//! rendering. The walk itself is tested end to end in `tests/suite/file_search.rs`.

use std::fs;
use std::path::Path;

use pretty_assertions::assert_eq;
use serde_json::json;

use super::engine::{Hit, shown_line};
use super::*;

fn args(v: Value) -> Args {
    parse_args(&v).unwrap()
}

fn failed(r: Result<impl std::fmt::Debug, ToolError>) -> String {
    match r {
        Err(ToolError::Failed { message }) => message,
        other => panic!("expected Failed, got {other:?}"),
    }
}

#[test]
fn defaults_fill_in_the_optional_arguments() {
    assert_eq!(
        args(json!({"pattern": "fn main"})),
        Args {
            pattern: "fn main".into(),
            path: ".".into(),
            glob: None,
            case_insensitive: false,
            fixed_strings: false,
            hidden: false,
            max_results: DEFAULT_SEARCH_RESULTS,
        }
    );
    let all = args(json!({
        "pattern": "x", "path": "src", "glob": "*.rs", "case_insensitive": true,
        "fixed_strings": true, "hidden": true, "max_results": 5
    }));
    assert_eq!((all.path.as_str(), all.glob.as_deref()), ("src", Some("*.rs")));
    assert!(all.case_insensitive && all.fixed_strings && all.hidden);
    assert_eq!(all.max_results, 5);
}

#[test]
fn bad_arguments_are_named() {
    let m = failed(parse_args(&json!({"pattern": "x", "query": "y"})));
    assert!(m.contains("unknown argument \"query\""), "{m}");
    let m = failed(parse_args(&json!({"path": "."})));
    assert!(m.contains("\"pattern\" is missing"), "{m}");
    let m = failed(parse_args(&json!({"pattern": ""})));
    assert!(m.contains("empty"), "{m}");
    let m = failed(parse_args(&json!({"pattern": 3})));
    assert!(m.contains("\"pattern\" must be a string"), "{m}");
    let m = failed(parse_args(&json!({"pattern": "x", "hidden": "yes"})));
    assert!(m.contains("\"hidden\" must be true or false"), "{m}");
    let m = failed(parse_args(&json!({"pattern": "x", "path": 7})));
    assert!(m.contains("\"path\" must be a string"), "{m}");
    let m = failed(parse_args(&json!(["x"])));
    assert!(m.contains("not a JSON object"), "{m}");
    for n in [json!(0), json!(MAX_SEARCH_RESULTS + 1), json!(-1), json!(2.5), json!("10")] {
        let m = failed(parse_args(&json!({"pattern": "x", "max_results": n})));
        assert!(m.contains("\"max_results\" must be a whole number from 1 to 1000"), "{m}");
    }
}

#[test]
fn a_bad_regex_names_the_problem_and_the_way_out() {
    let m = failed(matcher(&args(json!({"pattern": "foo("}))));
    assert!(m.contains("\"foo(\" is not a valid regular expression"), "{m}");
    assert!(m.contains("unclosed group"), "{m}");
    assert!(m.contains("fixed_strings"), "{m}");
    let m = failed(matcher(&args(json!({"pattern": "[z-a]"}))));
    assert!(m.contains("invalid character class range"), "{m}");
    // A match may not span lines: a newline inside is refused rather than silently dropped
    // (a final one is dropped: a line match runs to the line's end anyway).
    let m = failed(matcher(&args(json!({"pattern": "a\nb"}))));
    assert!(m.contains("matches within one line"), "{m}");
    // The same text is fine as a fixed string.
    assert!(matcher(&args(json!({"pattern": "foo(", "fixed_strings": true}))).is_ok());
}

#[test]
fn fixed_strings_and_case_insensitive_change_what_matches() {
    use grep_matcher::Matcher;
    let m = matcher(&args(json!({"pattern": "a.c", "fixed_strings": true}))).unwrap();
    assert!(m.is_match(b"xa.cx").unwrap());
    assert!(!m.is_match(b"abc").unwrap());
    let m = matcher(&args(json!({"pattern": "Hello", "case_insensitive": true}))).unwrap();
    assert!(m.is_match(b"say HELLO").unwrap());
    let m = matcher(&args(json!({"pattern": "Hello"}))).unwrap();
    assert!(!m.is_match(b"say HELLO").unwrap());
}

#[test]
fn lines_lose_their_terminator_and_control_characters_are_escaped() {
    let m = RegexMatcher::new("x").unwrap();
    assert_eq!(shown_line(b"let x = 1;\r\n", &m), "let x = 1;");
    assert_eq!(shown_line(b"a\tx\x1b[31m\n", &m), "a\tx\\u{1b}[31m");
    assert_eq!(shown_line(b"x\xff\xfe", &m), "x\u{fffd}\u{fffd}");
}

#[test]
fn a_long_line_is_cut_around_its_first_match() {
    let m = RegexMatcher::new("NEEDLE").unwrap();
    let line = format!("{}NEEDLE{}\n", "a".repeat(5000), "b".repeat(5000));
    let shown = shown_line(line.as_bytes(), &m);
    assert!(shown.contains("NEEDLE"), "{shown}");
    assert!(shown.starts_with('…') && shown.ends_with('…'), "{shown}");
    assert_eq!(shown.chars().count(), MAX_LINE_CHARS + 2);
    // A match near the start keeps the start of the line.
    let line = format!("NEEDLE{}", "b".repeat(1000));
    let shown = shown_line(line.as_bytes(), &m);
    assert!(shown.starts_with("NEEDLE") && shown.ends_with('…'), "{shown}");
    // A match at the very end keeps the end.
    let line = format!("{}NEEDLE", "a".repeat(1000));
    let shown = shown_line(line.as_bytes(), &m);
    assert!(shown.starts_with('…') && shown.ends_with("NEEDLE"), "{shown}");
    assert_eq!(shown.chars().count(), MAX_LINE_CHARS + 1);
    // Multi-byte characters are never split.
    let line = "é".repeat(MAX_LINE_CHARS * 2);
    let shown = shown_line(line.as_bytes(), &RegexMatcher::new("é").unwrap());
    assert_eq!(shown.chars().filter(|c| *c == 'é').count(), MAX_LINE_CHARS);
}

#[test]
fn hits_sort_by_path_components_then_line_number() {
    let hit = |p: &str, line: u64| Hit { path: Arc::from(Path::new(p)), line, text: String::new() };
    let mut hits = [hit("b.txt", 1), hit("a/z.txt", 10), hit("a/z.txt", 9), hit("a.txt", 2)];
    hits.sort();
    let order: Vec<(String, u64)> =
        hits.iter().map(|h| (h.path.display().to_string(), h.line)).collect();
    let expected: Vec<(String, u64)> =
        [("a/z.txt", 9), ("a/z.txt", 10), ("a.txt", 2), ("b.txt", 1)]
            .iter()
            .map(|(p, l)| (p.to_string(), *l))
            .collect();
    assert_eq!(order, expected);
}

fn resolved(dir: &Path) -> (PathGuard, Resolved) {
    let guard = PathGuard::new(&[dir.to_path_buf()], crate::SensitivePatterns::default()).unwrap();
    let start = guard.resolve_existing(".").unwrap();
    (guard, start)
}

fn outcome(hits: usize, text_len: usize, matched_lines: u64) -> Outcome {
    let hits = (0..hits)
        .map(|i| Hit {
            path: Arc::from(Path::new("src/lib.rs")),
            line: i as u64 + 1,
            text: "x".repeat(text_len),
        })
        .collect();
    Outcome { hits, matched_lines, matched_files: 3, searched_files: 10, ..Outcome::default() }
}

#[test]
fn rendering_says_how_many_more_and_how_to_narrow() {
    let dir = tempfile::tempdir().unwrap();
    let (_guard, start) = resolved(dir.path());
    let a = args(json!({"pattern": "x"}));
    let r = render(&a, &start, &outcome(2, 3, 7), DEFAULT_SEARCH_BUDGET);
    assert_eq!(
        r.text,
        "src/lib.rs:1: xxx\nsrc/lib.rs:2: xxx\n… 5 more matching lines not shown (7 matching \
         lines in 3 files in all). Narrow the search: a more specific pattern, a subdirectory \
         as \"path\", or a \"glob\" such as \"*.rs\"."
    );
    assert_eq!(r.shown, 2);
    let r = render(&a, &start, &outcome(2, 3, 2), DEFAULT_SEARCH_BUDGET);
    assert_eq!(r.text, "src/lib.rs:1: xxx\nsrc/lib.rs:2: xxx");
}

#[test]
fn rendering_stops_at_the_byte_bound() {
    let dir = tempfile::tempdir().unwrap();
    let (_guard, start) = resolved(dir.path());
    let a = args(json!({"pattern": "x"}));
    // 1000 hits of ~215 bytes: over 100 KB, so some are left out and counted.
    let r = render(&a, &start, &outcome(1000, MAX_LINE_CHARS, 1000), DEFAULT_SEARCH_BUDGET);
    let body: usize = r.text.lines().take(r.shown).map(|l| l.len() + 1).sum();
    assert!(body <= MAX_SEARCH_OUTPUT_BYTES, "{body}");
    assert!(r.shown < 1000 && r.shown > 400, "{}", r.shown);
    let last = r.text.lines().last().unwrap();
    assert!(last.starts_with(&format!("… {} more matching lines", 1000 - r.shown)), "{last}");
}

#[test]
fn rendering_reports_nothing_found_binary_unreadable_and_a_stop() {
    let dir = tempfile::tempdir().unwrap();
    let (_guard, start) = resolved(dir.path());
    let a = args(json!({"pattern": "nope"}));
    let out = Outcome {
        searched_files: 4,
        binary_files: 2,
        unreadable: 1,
        first_error: Some("x: permission denied\n".into()),
        stopped_early: true,
        ..Outcome::default()
    };
    let r = render(&a, &start, &out, Duration::from_secs(20));
    let lines: Vec<&str> = r.text.lines().collect();
    assert!(
        lines[0].starts_with(&format!("No matches for \"nope\" in {} (4 files searched). ", start)),
        "{}",
        lines[0]
    );
    assert_eq!(lines[1], "(2 binary files were not searched.)");
    assert_eq!(lines[2], "(1 entries could not be read; the first: x: permission denied\\n.)");
    assert!(lines[3].starts_with("The search stopped after 20 s"), "{}", lines[3]);
    assert_eq!(lines.len(), 4);
}

#[test]
fn ignore_files_between_the_root_and_the_start_are_collected_deepest_first() {
    let dir = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(dir.path()).unwrap();
    fs::create_dir_all(root.join("a/b/c")).unwrap();
    fs::write(root.join(".gitignore"), "*.log\n").unwrap();
    fs::write(root.join("a/.ignore"), "!keep.log\n").unwrap();
    fs::write(root.join("a/b/c/.gitignore"), "*.txt\n").unwrap();
    let found = ancestor_ignores(&root, &root.join("a/b/c"));
    // a/b has no ignore file, c is the start (the walker reads its own).
    assert_eq!(found.len(), 2);
    let file = root.join("a/b/c/x.log");
    assert!(found[1].matched(&file, false).is_ignore());
    assert!(found[0].matched(root.join("a/b/c/keep.log"), false).is_whitelist());
    assert!(ancestor_ignores(&root, &root).is_empty());
}

#[test]
fn an_ignore_file_that_is_a_symlink_is_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let base = fs::canonicalize(dir.path()).unwrap();
    let root = base.join("root");
    fs::create_dir_all(root.join("sub")).unwrap();
    fs::write(base.join("outside-rules"), "*\n").unwrap();
    std::os::unix::fs::symlink(base.join("outside-rules"), root.join(".gitignore")).unwrap();
    assert!(ancestor_ignores(&root, &root.join("sub")).is_empty());
}

#[test]
fn the_spec_keeps_the_contract_names() {
    let dir = tempfile::tempdir().unwrap();
    let (guard, _) = resolved(dir.path());
    let tool = FileSearch::new(Arc::new(guard));
    let p = &tool.spec().parameters;
    assert_eq!(tool.spec().name, "file_search");
    assert_eq!(p["required"], json!(["pattern"]));
    let mut names: Vec<&str> =
        p["properties"].as_object().unwrap().keys().map(|k| k.as_str()).collect();
    names.sort_unstable();
    let mut expected = ARGS.to_vec();
    expected.sort_unstable();
    assert_eq!(names, expected);
}

#[test]
fn a_pattern_written_like_a_file_name_finds_the_name_when_nothing_else_matched() {
    assert_eq!(name_in_file_name("apply_discount.py").as_deref(), Some("apply_discount"));
    assert_eq!(name_in_file_name("formatTodo\\.js").as_deref(), Some("formatTodo"));
    for other in ["x.py", "apply discount.py", "a.b.c", "v1.2", "def apply_discount", "ab.toolong"]
    {
        assert_eq!(name_in_file_name(other), None, "{other}");
    }
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("pricing.py"), "def apply_discount(x):\n    return x\n").unwrap();
    let (guard, _) = resolved(dir.path());
    let search = |pattern: &str| {
        let a = args(json!({"pattern": pattern}));
        run(&guard, &a, 1, Duration::from_secs(10)).unwrap()
    };
    let out = search("apply_discount.py");
    assert!(
        out.content.starts_with(
            "No line contains \"apply_discount.py\"; these lines contain \"apply_discount\":"
        ),
        "{}",
        out.content
    );
    assert!(out.content.contains("pricing.py:1: def apply_discount(x):"), "{}", out.content);
    assert_eq!(out.details["searched_pattern"], json!("apply_discount"));
    // Nothing under the name either: the plain "no matches" answer.
    assert!(search("missing_name.py").content.starts_with("No matches for"));
}
