//! Whether a request asks a question or asks for a change, read from the sentence's form.
//!
//! Words alone mislead: "What does the add function return?" contains `add`, "how does
//! remove_item work" contains `remove`. What decides is where the word stands and what it does
//! there. A change request has an imperative verb of change at the start of a clause ("Rename
//! multiply to mul", "please fix the typo", "Read calc.py and fix the test", "can you add a
//! test?"). A question starts with an interrogative ("what", "how", "does", …), ends with `?`,
//! or is an imperative that asks for information ("explain", "list", "tell me", …). A verb of
//! change is no verb when it is part of a name (`update()`, `remove_item`, `add.py`, `` `add` ``)
//! or the first half of a compound noun ("the add function", "remove functions do …").
//!
//! When in doubt the answer is *not a change*: a request is a change only on positive evidence,
//! because a run forced to change files when the user asked a question fails them.

/// What a request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestKind {
    /// An imperative verb of change starts one of its clauses.
    Change,
    /// An interrogative, a trailing `?`, or an imperative asking for information.
    Question,
    /// Neither (a statement, a greeting, a command to run something).
    Other,
}

/// Verbs that ask for files or code to change when they start a clause.
const CHANGE: &[&str] = &[
    "add",
    "adjust",
    "annotate",
    "append",
    "apply",
    "bump",
    "change",
    "clean",
    "comment",
    "commit",
    "complete",
    "convert",
    "correct",
    "create",
    "decrease",
    "delete",
    "disable",
    "document",
    "downgrade",
    "drop",
    "edit",
    "enable",
    "extract",
    "fill",
    "fix",
    "format",
    "generate",
    "handle",
    "implement",
    "improve",
    "increase",
    "inline",
    "insert",
    "introduce",
    "lower",
    "make",
    "merge",
    "migrate",
    "modify",
    "move",
    "optimise",
    "optimize",
    "patch",
    "pin",
    "port",
    "prepend",
    "put",
    "raise",
    "refactor",
    "reformat",
    "remove",
    "rename",
    "reorder",
    "replace",
    "restore",
    "restructure",
    "revert",
    "rewrite",
    "save",
    "set",
    "simplify",
    "sort",
    "split",
    "strip",
    "swap",
    "tidy",
    "translate",
    "trim",
    "tweak",
    "uncomment",
    "undo",
    "unpin",
    "update",
    "upgrade",
    "wrap",
    "write",
];

/// Imperatives that ask for information.
const INFO: &[&str] = &[
    "analyse",
    "analyze",
    "check",
    "compare",
    "count",
    "describe",
    "determine",
    "diagnose",
    "display",
    "explain",
    "find",
    "give",
    "grep",
    "help",
    "identify",
    "inspect",
    "list",
    "locate",
    "look",
    "outline",
    "print",
    "read",
    "review",
    "search",
    "see",
    "show",
    "summarise",
    "summarize",
    "tell",
    "trace",
    "understand",
    "verify",
    "walk",
];

/// Words that open a question.
const INTERROGATIVE: &[&str] = &[
    "what", "what's", "whats", "which", "where", "where's", "why", "how", "how's", "does", "do",
    "did", "doesn't", "don't", "is", "isn't", "are", "aren't", "was", "were", "can", "could",
    "should", "would", "will", "who", "whom", "whose", "when", "has", "have", "had", "am", "may",
    "might", "shall",
];

/// Words that make a verb of change the first half of a compound noun ("the add function").
const NOUN_HEAD: &[&str] = &[
    "function",
    "functions",
    "method",
    "methods",
    "button",
    "buttons",
    "endpoint",
    "endpoints",
    "handler",
    "handlers",
    "command",
    "commands",
    "operation",
    "operations",
    "helper",
    "helpers",
    "route",
    "routes",
    "logic",
    "feature",
    "call",
    "calls",
    "path",
    "flow",
    "loop",
    "form",
    "dialog",
    "view",
    "script",
    "subcommand",
    "permissions",
    "request",
    "test",
    "tests",
    "flag",
    "option",
    "keyword",
    "statement",
    "branch",
    "case",
];

/// Words after such a noun that show it is a subject ("the delete button does nothing").
const DESCRIBED: &[&str] = &[
    "is", "are", "was", "were", "does", "do", "doesn't", "don't", "returns", "return", "seems",
    "has", "have", "works", "work", "fails", "crashes", "throws", "raises", "in", "of", "should",
];

/// Openers that only soften a request ("please", "can you", "I want you to").
const SOFTENERS: &[&[&str]] = &[
    &["please"],
    &["pls"],
    &["kindly"],
    &["now"],
    &["then"],
    &["also"],
    &["and"],
    &["ok"],
    &["okay"],
    &["so"],
    &["just"],
    &["first"],
    &["next"],
    &["finally"],
    &["hey"],
    &["aria"],
    &["can", "you"],
    &["could", "you"],
    &["would", "you"],
    &["will", "you"],
    &["can", "u"],
    &["i", "want", "you", "to"],
    &["i'd", "like", "you", "to"],
    &["i", "would", "like", "you", "to"],
    &["i", "need", "you", "to"],
    &["we", "need", "to"],
    &["you", "need", "to"],
    &["you", "should"],
    &["go", "ahead", "and"],
    &["let's"],
    &["lets"],
    &["let", "us"],
    &["make", "sure", "to"],
    &["be", "sure", "to"],
    &["remember", "to"],
    &["don't", "forget", "to"],
    &["feel", "free", "to"],
    &["try", "to"],
];

/// One word of a request: lowercased, its punctuation trimmed, and whether it is code (a name
/// with `_`, `(`, `.` or backticks in it, which is never a verb).
#[derive(Debug)]
struct Word {
    text: String,
    code: bool,
    /// A comma, colon or semicolon ended it (a clause may start after it).
    pause: bool,
}

fn words(sentence: &str) -> Vec<Word> {
    sentence
        .split_whitespace()
        .filter_map(|raw| {
            let trimmed = raw.trim_matches(|c: char| {
                matches!(c, ',' | ';' | ':' | '!' | '?' | '"' | '\'' | '(' | ')' | '*' | '-')
            });
            let trimmed = trimmed.trim_end_matches('.');
            if trimmed.is_empty() {
                return None;
            }
            let code = raw.contains('`')
                || trimmed.contains(['_', '(', '.', '/', '=', '<', '>', '[', '{'])
                || raw.trim_end_matches([',', ';', ':', '!', '?', '.']).ends_with("()");
            let pause = raw.ends_with([',', ';', ':']);
            Some(Word { text: trimmed.to_lowercase().replace('’', "'"), code, pause })
        })
        .collect()
}

/// The sentences of `text`: split after `.`, `!`, `?` or `;` followed by a space (or the end),
/// after `: ` and at line breaks. A dot inside a name (`calc.py`) does not end one.
fn sentences(text: &str) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let next_blank = chars.peek().is_none_or(|n| n.is_whitespace());
        if c == '\n' || (matches!(c, '.' | '!' | '?' | ';' | ':') && next_blank) {
            if c != '\n' {
                current.push(c);
            }
            let asked = current.trim_end().ends_with('?');
            if !current.trim().is_empty() {
                out.push((std::mem::take(&mut current), asked));
            }
            current.clear();
        } else {
            current.push(c);
        }
    }
    if !current.trim().is_empty() {
        let asked = current.trim_end().ends_with('?');
        out.push((current, asked));
    }
    out
}

/// How many words at `at` only soften what follows.
fn softener_len(words: &[Word], at: usize) -> usize {
    SOFTENERS
        .iter()
        .filter(|s| {
            s.iter()
                .enumerate()
                .all(|(i, w)| words.get(at + i).is_some_and(|x| !x.code && x.text == *w))
        })
        .map(|s| s.len())
        .max()
        .unwrap_or(0)
}

/// Whether the word at `at` is a verb of change used as one: not code, and not the first half
/// of a compound noun. At the start of a sentence the noun reading needs a verb after it ("Delete
/// button does nothing"), since "Add function docs" is an order.
fn change_verb(words: &[Word], at: usize, sentence_start: bool) -> bool {
    let Some(w) = words.get(at) else { return false };
    if w.code || !CHANGE.contains(&w.text.as_str()) {
        return false;
    }
    let noun = words.get(at + 1).is_some_and(|n| {
        !n.code && !w.pause && NOUN_HEAD.contains(&n.text.as_str()) && {
            !sentence_start
                || words.get(at + 2).is_some_and(|d| DESCRIBED.contains(&d.text.as_str()))
        }
    });
    !noun
}

/// What one sentence asks.
fn sentence_kind(sentence: &str, asked: bool) -> RequestKind {
    let words = words(sentence);
    let mut at = 0;
    // Softeners stack: "ok, please can you …".
    while at < words.len() {
        let n = softener_len(&words, at);
        if n == 0 {
            break;
        }
        at += n;
    }
    let softened = at > 0;
    let Some(first) = words.get(at) else {
        return if asked { RequestKind::Question } else { RequestKind::Other };
    };
    if change_verb(&words, at, true) {
        return RequestKind::Change;
    }
    // "What does add return?", "How do I add a column?": the whole sentence is the question
    // (after a softener, "can you" was the request's politeness, not an interrogative).
    if !softened && !first.code && INTERROGATIVE.contains(&first.text.as_str()) {
        return RequestKind::Question;
    }
    let info = !first.code && INFO.contains(&first.text.as_str());
    // Later clauses: "Read calc.py and fix the test", "Look at main.py, then remove …".
    for i in at + 1..words.len() {
        let boundary = words[i - 1].pause || matches!(words[i - 1].text.as_str(), "and" | "then");
        if !boundary {
            continue;
        }
        let start = i + softener_len(&words, i);
        if change_verb(&words, start, false) {
            return RequestKind::Change;
        }
    }
    if info || asked { RequestKind::Question } else { RequestKind::Other }
}

/// What `text` asks for: a change when any sentence's clause starts with a verb of change used
/// as a verb; else a question when any sentence is one; else neither.
pub fn classify(text: &str) -> RequestKind {
    let kinds: Vec<RequestKind> =
        sentences(text).into_iter().map(|(s, asked)| sentence_kind(&s, asked)).collect();
    if kinds.contains(&RequestKind::Change) {
        RequestKind::Change
    } else if kinds.contains(&RequestKind::Question) {
        RequestKind::Question
    } else {
        RequestKind::Other
    }
}

/// Whether `text` asks for a change ([`classify`] says [`RequestKind::Change`]).
pub fn asks_for_change(text: &str) -> bool {
    classify(text) == RequestKind::Change
}

#[cfg(test)]
mod tests;
