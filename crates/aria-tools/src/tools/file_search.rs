//! `file_search {pattern, path}`: searches file contents under a directory inside the roots,
//! with ripgrep's own crates (see `file_search/engine.rs` for the walk and the search).
//!
//! Output is one `path:line: text` line per matching line, sorted by path then line so the same
//! tree gives the same answer, bounded in lines and bytes, followed by a line saying how many
//! more there are and how to narrow the search.

mod engine;
#[cfg(test)]
mod tests;

use std::fmt::Write as _;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use aria_api::{Tier, Tool, ToolContext, ToolError, ToolFuture, ToolOutput, ToolSpec};
use aria_sandbox::{OpenMode, open_beneath};
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::overrides::{Override, OverrideBuilder};
use serde_json::{Map, Value, json};

use crate::guard::path::{FileKind, PathGuard, Resolved};
use crate::tools::{blocking, path_error_naming, roots_sentence};

pub use engine::MAX_LINE_CHARS;
use engine::{Outcome, Query};

/// Matching lines shown when the call does not say (`max_results`).
pub const DEFAULT_SEARCH_RESULTS: usize = 200;
/// Largest `max_results` accepted.
pub const MAX_SEARCH_RESULTS: usize = 1000;
/// Most bytes of matching lines returned; the rest are counted in the closing line.
pub const MAX_SEARCH_OUTPUT_BYTES: usize = 100 * 1024;
/// How long one search may run before it stops and reports what it found (the agent loop's
/// tool timeout is 30 s: a partial answer that says so beats no answer).
pub const DEFAULT_SEARCH_BUDGET: Duration = Duration::from_secs(20);

/// Largest ignore file read for the directories between a root and the search start.
const MAX_IGNORE_FILE_BYTES: u64 = 1024 * 1024;

const ARGS: &[&str] =
    &["pattern", "path", "glob", "case_insensitive", "fixed_strings", "hidden", "max_results"];

/// Searches file contents inside the roots for a regular expression. Tier: read.
#[derive(Debug)]
pub struct FileSearch {
    guard: Arc<PathGuard>,
    spec: ToolSpec,
    threads: usize,
    budget: Duration,
}

impl FileSearch {
    /// The tool's name: a public contract.
    pub const NAME: &'static str = "file_search";

    pub fn new(guard: Arc<PathGuard>) -> Self {
        let spec = spec(&guard);
        FileSearch { guard, spec, threads: 0, budget: DEFAULT_SEARCH_BUDGET }
    }

    /// Walker threads (default 0: the available parallelism, at most 12).
    pub fn with_threads(mut self, threads: usize) -> Self {
        self.threads = threads;
        self
    }

    /// How long a search may run before it stops with partial results
    /// (default [`DEFAULT_SEARCH_BUDGET`]).
    pub fn with_time_budget(mut self, budget: Duration) -> Self {
        self.budget = budget;
        self
    }
}

fn spec(guard: &PathGuard) -> ToolSpec {
    ToolSpec {
        name: FileSearch::NAME.to_owned(),
        description: format!(
            "Search the contents of files for a regular expression (ripgrep syntax), under a \
             directory inside {}. Returns `path:line: text` lines sorted by path and line, at most \
             {DEFAULT_SEARCH_RESULTS} by default. Honours .gitignore and .ignore; skips .git, \
             node_modules, hidden files (unless hidden is true), binary files, secrets files and \
             symlinks; glob only narrows the search.",
            roots_sentence(guard)
        ),
        parameters: json!({
            "type": "object",
            "properties": {
                "pattern": {
                    "type": "string",
                    "description": "Regular expression to find in each line (literal text if fixed_strings is true)."
                },
                "path": {
                    "type": "string",
                    "description": "Directory or file to search, relative to the first root or absolute inside a root. Default: the first root."
                },
                "glob": {
                    "type": "string",
                    "description": "Only search files whose path matches this glob, e.g. \"*.rs\" or \"src/**/*.py\"; \"!*.md\" excludes instead."
                },
                "case_insensitive": {"type": "boolean", "description": "Ignore case. Default false."},
                "fixed_strings": {"type": "boolean", "description": "Treat pattern as literal text. Default false."},
                "hidden": {"type": "boolean", "description": "Also search hidden files and directories. Default false."},
                "max_results": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_SEARCH_RESULTS,
                    "description": "Most matching lines to show. Default 200."
                }
            },
            "required": ["pattern"],
            "additionalProperties": false
        }),
    }
}

/// The checked arguments of one call.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Args {
    pattern: String,
    path: String,
    glob: Option<String>,
    case_insensitive: bool,
    fixed_strings: bool,
    hidden: bool,
    max_results: usize,
}

fn usage() -> String {
    format!(
        "{} takes \"pattern\" (a regex string) and optionally \"path\", \"glob\" (strings), \
         \"case_insensitive\", \"fixed_strings\", \"hidden\" (booleans) and \"max_results\" \
         (1 to {MAX_SEARCH_RESULTS})",
        FileSearch::NAME
    )
}

/// Checks the arguments defensively (the loop has validated the schema, but a tool must not
/// trust that).
fn parse_args(args: &Value) -> Result<Args, ToolError> {
    let bad = |what: String| ToolError::failed(format!("{what}; {}", usage()));
    let Some(map) = args.as_object() else {
        return Err(bad("the arguments are not a JSON object".to_owned()));
    };
    if let Some(unknown) = map.keys().find(|k| !ARGS.contains(&k.as_str())) {
        return Err(bad(format!("unknown argument \"{unknown}\"")));
    }
    let pattern = match map.get("pattern") {
        Some(Value::String(p)) if p.is_empty() => {
            return Err(bad("\"pattern\" is empty, which would match every line".to_owned()));
        }
        Some(Value::String(p)) => p.clone(),
        Some(_) => return Err(bad("\"pattern\" must be a string".to_owned())),
        None => return Err(bad("the argument \"pattern\" is missing".to_owned())),
    };
    let path = string_arg(map, "path")?.unwrap_or_else(|| ".".to_owned());
    let glob = string_arg(map, "glob")?;
    let max_results = match map.get("max_results") {
        None | Some(Value::Null) => DEFAULT_SEARCH_RESULTS,
        Some(v) => match v.as_u64() {
            Some(n) if (1..=MAX_SEARCH_RESULTS as u64).contains(&n) => n as usize,
            _ => {
                return Err(bad(format!(
                    "\"max_results\" must be a whole number from 1 to {MAX_SEARCH_RESULTS}, not {v}"
                )));
            }
        },
    };
    Ok(Args {
        pattern,
        path,
        glob,
        case_insensitive: bool_arg(map, "case_insensitive")?,
        fixed_strings: bool_arg(map, "fixed_strings")?,
        hidden: bool_arg(map, "hidden")?,
        max_results,
    })
}

fn string_arg(map: &Map<String, Value>, key: &str) -> Result<Option<String>, ToolError> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(ToolError::failed(format!("\"{key}\" must be a string; {}", usage()))),
    }
}

fn bool_arg(map: &Map<String, Value>, key: &str) -> Result<bool, ToolError> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(ToolError::failed(format!("\"{key}\" must be true or false; {}", usage()))),
    }
}

/// Compiles the pattern the way ripgrep does for a line search: no match may span a line
/// terminator, and a NUL byte (the binary marker) cannot be asked for.
fn matcher(args: &Args) -> Result<RegexMatcher, ToolError> {
    let pattern = without_final_line_break(&args.pattern, args.fixed_strings);
    if pattern.is_empty() {
        return Err(ToolError::failed(format!(
            "the pattern {:?} is only a line break, which would match every line; {}",
            args.pattern,
            usage()
        )));
    }
    RegexMatcherBuilder::new()
        .line_terminator(Some(b'\n'))
        .ban_byte(Some(0))
        .case_insensitive(args.case_insensitive)
        .fixed_strings(args.fixed_strings)
        .build(pattern)
        .map_err(|e| {
            if pattern.contains('\n') || (!args.fixed_strings && pattern.contains("\\n")) {
                return ToolError::failed(format!(
                    "the pattern {:?} contains a line break, but file_search matches within one \
                     line at a time: search for the text of a single line",
                    args.pattern
                ));
            }
            ToolError::failed(format!(
                "the pattern {:?} is not a valid regular expression: {e}\nEscape special \
                 characters with '\\' (e.g. \"foo\\(\"), or pass \"fixed_strings\": true to \
                 search for the text as written",
                args.pattern
            ))
        })
}

/// The pattern without the line breaks it ends with (`\n`, `\r\n`, written as escapes in a
/// regular expression or as the characters themselves): a line search matches up to the end
/// of the line anyway, and models often end a pattern with one.
fn without_final_line_break(pattern: &str, fixed_strings: bool) -> &str {
    let mut rest = pattern;
    loop {
        let before = rest;
        rest = rest.strip_suffix('\n').or_else(|| rest.strip_suffix('\r')).unwrap_or(rest);
        if !fixed_strings {
            for escape in ["\\n", "\\r"] {
                if let Some(cut) = rest.strip_suffix(escape) {
                    // `\\n` is a backslash then `n`: only an odd run of backslashes escapes.
                    let slashes = cut.bytes().rev().take_while(|&b| b == b'\\').count();
                    if slashes % 2 == 0 {
                        rest = cut;
                    }
                }
            }
        }
        if rest == before {
            return rest;
        }
    }
}

/// The `glob` argument as a matcher relative to the start directory.
fn glob(start: &Path, glob: Option<&str>) -> Result<Option<Override>, ToolError> {
    let Some(glob) = glob else { return Ok(None) };
    let invalid = |e: ignore::Error| {
        ToolError::failed(format!(
            "the glob {glob:?} is invalid: {e}; write a glob such as \"*.rs\", \"src/**/*.py\" \
             or \"!*.md\""
        ))
    };
    let mut builder = OverrideBuilder::new(start);
    builder.add(glob).map_err(invalid)?;
    builder.build().map(Some).map_err(invalid)
}

/// The `.gitignore` and `.ignore` rules of the directories from the root down to (not
/// including) `start`, deepest first. Each file is opened beneath the root, never through a
/// symlink; one that cannot be read is skipped, as git skips it.
fn ancestor_ignores(root: &Path, start: &Path) -> Vec<Gitignore> {
    let Ok(below) = start.strip_prefix(root) else { return Vec::new() };
    let names: Vec<_> = below.components().collect();
    let mut out = Vec::new();
    for depth in (0..names.len()).rev() {
        let dir: PathBuf = names[..depth].iter().collect();
        let mut builder = GitignoreBuilder::new(root.join(&dir));
        let mut any = false;
        for name in [".gitignore", ".ignore"] {
            let Some(text) = read_small(root, &dir.join(name)) else { continue };
            for line in text.lines() {
                // An invalid line is skipped, as git does.
                any |= builder.add_line(Some(root.join(&dir).join(name)), line).is_ok();
            }
        }
        if any && let Ok(gi) = builder.build() {
            out.push(gi);
        }
    }
    out
}

fn read_small(root: &Path, relative: &Path) -> Option<String> {
    let file = open_beneath(root, relative, OpenMode::ReadNonBlocking).ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    file.take(MAX_IGNORE_FILE_BYTES).read_to_end(&mut bytes).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

impl Tool for FileSearch {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn tier(&self, _args: &Value) -> Tier {
        Tier::Read
    }

    /// Searching has no side effects, so a dry run searches too.
    fn call<'a>(&'a self, args: Value, _ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let args = parse_args(&args)?;
            let guard = Arc::clone(&self.guard);
            let (threads, budget) = (self.threads, self.budget);
            blocking(FileSearch::NAME, move || run(&guard, &args, threads, budget)).await
        })
    }
}

fn run(
    guard: &PathGuard,
    args: &Args,
    threads: usize,
    budget: Duration,
) -> Result<ToolOutput, ToolError> {
    let start = guard.resolve_existing(&args.path).map_err(|e| {
        path_error_naming(
            guard,
            e,
            "Use file_list to see which directories exist, or leave out \"path\".",
        )
    })?;
    check_kind(&start)?;
    let search = |args: &Args| -> Result<Outcome, ToolError> {
        let query = Query {
            matcher: matcher(args)?,
            glob: glob(start.path(), args.glob.as_deref())?,
            ancestor_ignores: ancestor_ignores(start.root(), start.path()),
            start: start.path().to_path_buf(),
            root: start.root().to_path_buf(),
            shown_from: guard.roots().first().cloned().unwrap_or_default(),
            hidden: args.hidden,
            sensitive: guard.sensitive().clone(),
            aria_dirs: guard.aria_dirs_within(start.root()),
            keep: args.max_results,
            threads,
            deadline: Instant::now().checked_add(budget),
        };
        Ok(engine::search(&query))
    };
    let mut outcome = search(args)?;
    let mut searched = args.clone();
    let mut preface = String::new();
    if outcome.matched_lines == 0
        && let Some(stem) = name_in_file_name(&args.pattern)
    {
        let narrower = Args { pattern: stem.clone(), fixed_strings: true, ..args.clone() };
        let retried = search(&narrower)?;
        if retried.matched_lines > 0 {
            preface =
                format!("No line contains {:?}; these lines contain {stem:?}:\n", args.pattern);
            outcome = retried;
            searched = narrower;
        }
    }
    tracing::debug!(
        tool = FileSearch::NAME,
        path = %start,
        files = outcome.searched_files,
        lines = outcome.matched_lines,
        "searched"
    );
    let text = render(&searched, &start, &outcome, budget);
    let details = json!({
        "path": start.path().to_string_lossy(),
        "pattern": args.pattern,
        "searched_pattern": searched.pattern,
        "searched_files": outcome.searched_files,
        "matched_files": outcome.matched_files,
        "matched_lines": outcome.matched_lines,
        "shown": text.shown,
        "binary_files": outcome.binary_files,
        "unreadable": outcome.unreadable,
        "stopped_early": outcome.stopped_early,
    });
    Ok(ToolOutput::text(format!("{preface}{}", text.text)).with_details(details))
}

/// The name in a pattern written like a file name (`apply_discount.py`, `formatTodo\.js`): a
/// model looking for where a name is defined searches the text for the file it imagines the
/// name lives in. An identifier of at least three characters and a short extension; `None`
/// for anything else.
fn name_in_file_name(pattern: &str) -> Option<String> {
    let (stem, ext) = pattern.trim().rsplit_once('.')?;
    let stem = stem.strip_suffix('\\').unwrap_or(stem);
    let identifier = stem.chars().count() >= 3
        && stem.chars().all(|c| c.is_alphanumeric() || c == '_')
        && stem.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_');
    let extension = (1..=5).contains(&ext.len())
        && ext.chars().all(|c| c.is_ascii_alphanumeric())
        && ext.chars().any(|c| c.is_ascii_alphabetic());
    (identifier && extension).then(|| stem.to_owned())
}

fn check_kind(start: &Resolved) -> Result<(), ToolError> {
    match start.kind() {
        Some(FileKind::Dir | FileKind::File) => Ok(()),
        Some(kind) => Err(ToolError::failed(format!(
            "{} is a {}; give a directory or a regular file to search",
            start.path().display(),
            kind.describe()
        ))),
        None => Err(ToolError::failed(format!("{} does not exist", start.path().display()))),
    }
}

struct Rendered {
    text: String,
    shown: usize,
}

/// The model's view: hit lines within the byte bound, then what was left out and why.
fn render(args: &Args, start: &Resolved, out: &Outcome, budget: Duration) -> Rendered {
    let mut text = String::new();
    let mut shown = 0;
    for hit in &out.hits {
        let path = escape_path(&hit.path);
        let line = format!("{path}:{}: {}\n", hit.line, hit.text);
        if text.len() + line.len() > MAX_SEARCH_OUTPUT_BYTES {
            break;
        }
        text.push_str(&line);
        shown += 1;
    }
    let where_ = start.path().display();
    if out.matched_lines == 0 {
        // Small models search for a phrase of the question and give up at "no matches".
        let hint = if out.searched_files > out.binary_files {
            " The words may differ: search for one distinctive word, or read the file with \
             file_read."
        } else {
            ""
        };
        let whole = whole_texts(out);
        let hint = if whole.is_empty() { hint } else { "" };
        let _ = writeln!(
            text,
            "No matches for {:?} in {where_} ({} files searched).{hint}",
            args.pattern, out.searched_files
        );
        text.push_str(&whole);
    }
    let more = out.matched_lines.saturating_sub(shown as u64);
    if more > 0 {
        let _ = writeln!(
            text,
            "… {more} more matching lines not shown ({} matching lines in {} files in all). \
             Narrow the search: a more specific pattern, a subdirectory as \"path\", or a \
             \"glob\" such as \"*.rs\".",
            out.matched_lines, out.matched_files
        );
    }
    if out.matched_lines == 0 && out.binary_files > 0 {
        let _ = writeln!(text, "({} binary files were not searched.)", out.binary_files);
    }
    if out.unreadable > 0 {
        let first = out.first_error.as_deref().unwrap_or("unknown error");
        let _ = writeln!(
            text,
            "({} entries could not be read; the first: {}.)",
            out.unreadable,
            escape_text(first)
        );
    }
    if out.stopped_early {
        let _ = writeln!(
            text,
            "The search stopped after {} s before covering every file: results and counts are \
             incomplete. Search a subdirectory or use a \"glob\".",
            budget.as_secs()
        );
    }
    if text.ends_with('\n') {
        text.pop();
    }
    Rendered { text, shown }
}

/// When a search that matched nothing covered only a few short text files, their text: a
/// small model searches a short file for a phrase of the question, finds nothing and gives up,
/// where the text would have answered. Empty otherwise (or when any file was skipped).
fn whole_texts(out: &Outcome) -> String {
    let texts = out.searched_files.saturating_sub(out.binary_files);
    if texts == 0
        || out.unmatched_texts.len() as u64 != texts
        || out.unreadable > 0
        || out.stopped_early
    {
        return String::new();
    }
    let mut files: Vec<&(Arc<Path>, String)> = out.unmatched_texts.iter().collect();
    files.sort_by(|a, b| a.0.cmp(&b.0));
    let mut shown = String::from(if files.len() == 1 {
        "The file searched is short; its whole text follows, so answer from it:\n"
    } else {
        "The files searched are short; their whole texts follow, so answer from them:\n"
    });
    for (path, body) in files {
        let _ = writeln!(shown, "--- {}", escape_path(path));
        shown.push_str(body);
        if !body.ends_with('\n') {
            shown.push('\n');
        }
    }
    shown
}

fn escape_path(path: &Path) -> String {
    escape_text(&path.to_string_lossy())
}

fn escape_text(text: &str) -> String {
    text.chars()
        .flat_map(|c| if c.is_control() { c.escape_default().collect::<Vec<_>>() } else { vec![c] })
        .collect()
}
