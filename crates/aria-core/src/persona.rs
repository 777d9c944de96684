//! Personas: a voice, never a hand.
//!
//! A persona may reword a finished run's final answer (tone, a name, emoji habits) with one
//! separate model call. It receives only the answer's text and returns only text: the request
//! has no tools at all (there is no registry here to run one with), no history and no tool
//! output. The rewrite is then checked against the answer ([`check_rewrite`]): every fact kept
//! verbatim, no fact and no claim of action added, no banned topic brought up. Anything that
//! fails — a tool call, a provider error, a timeout, a failed check — keeps the answer as it
//! was ([`Restyled::Kept`]), so a persona can change how an answer sounds but never what it says.
//!
//! Loading `personas/NAME.toml` is the front end's job (this crate has no TOML parser); the
//! struct derives `Deserialize` for it.

use std::collections::BTreeSet;
use std::time::Duration;

use aria_api::{ChatRequest, Message, Provider, Redact};
use serde::{Deserialize, Serialize};

/// A style layer: how answers should sound, and what they must not bring up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Persona {
    pub name: String,
    pub style_prompt: String,
    /// Words or phrases (case-insensitive) a rewrite may not introduce.
    #[serde(default)]
    pub banned_topics: Vec<String>,
}

/// What became of the answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "restyled", rename_all = "snake_case")]
pub enum Restyled {
    /// The persona's wording, checked against the answer.
    Rewritten(String),
    /// The answer stays as it was, and why.
    Kept { reason: String },
}

/// Answers longer than this are kept as they are: a style pass is not worth the cost, and the
/// checks stay cheap.
pub const MAX_RESTYLE_BYTES: usize = 64 * 1024;

/// The one request a persona gets: its rules as the system message, the (redacted) answer as
/// the user message, and no tools.
pub fn restyle_request(
    model: &str,
    persona: &Persona,
    answer: &str,
    redactor: &dyn Redact,
) -> ChatRequest {
    ChatRequest {
        model: model.to_owned(),
        messages: vec![
            Message::system(persona_system_prompt(persona)),
            Message::user(redactor.redact(answer).into_owned()),
        ],
        tools: Vec::new(),
        max_tokens: None,
        temperature: None,
    }
}

fn persona_system_prompt(persona: &Persona) -> String {
    let mut prompt = format!(
        "You are {name}, restyling an answer that another assistant already wrote. The user's \
         message is that answer; reply with the same answer reworded in your style, and nothing \
         else.\n\nYour style:\n{style}\n\nRules:\n\
         - Rewrite the wording only. Keep every fact: every file name, path, number, command, \
         code span, code block, URL and quoted string exactly as written.\n\
         - Add no facts, numbers, paths or links that the answer does not contain.\n\
         - Never claim that anything was done (created, changed, deleted, sent, run…) unless the \
         answer says so.\n\
         - You have no tools and cannot act; do not ask for any.",
        name = persona.name.trim(),
        style = persona.style_prompt.trim(),
    );
    let banned: Vec<&str> =
        persona.banned_topics.iter().map(|t| t.trim()).filter(|t| !t.is_empty()).collect();
    if !banned.is_empty() {
        prompt.push_str("\n- Do not bring up these topics: ");
        prompt.push_str(&banned.join(", "));
        prompt.push('.');
    }
    prompt
}

/// Rewords `answer` in the persona's voice, or keeps it (with the reason) when anything about
/// the rewrite is off. Makes at most one model call, with no tools, and runs nothing.
pub async fn restyle(
    provider: &dyn Provider,
    model: &str,
    persona: &Persona,
    answer: &str,
    redactor: &dyn Redact,
    timeout: Duration,
) -> Restyled {
    let kept = |reason: String| Restyled::Kept { reason };
    if answer.trim().is_empty() {
        return kept("the answer is empty; there is nothing to restyle".into());
    }
    if answer.len() > MAX_RESTYLE_BYTES {
        return kept(format!(
            "the answer is longer than {} KiB; long answers are not restyled",
            MAX_RESTYLE_BYTES / 1024
        ));
    }
    let request = restyle_request(model, persona, answer, redactor);
    // What the model saw is what the rewrite is checked against (a redacted secret stays so).
    let seen = request.messages[1].content.clone();
    let response = match tokio::time::timeout(timeout, provider.complete(request)).await {
        Err(_) => {
            return kept(format!(
                "the persona model did not answer within {} s",
                timeout.as_secs_f64().ceil()
            ));
        }
        Ok(Err(e)) => return kept(format!("the persona model failed: {e}")),
        Ok(Ok(response)) => response,
    };
    if !response.tool_calls.is_empty() {
        return kept("the persona asked for a tool; a persona has none".into());
    }
    let rewritten = response.text.trim();
    if rewritten.is_empty() {
        return kept("the persona model returned no text".into());
    }
    match check_rewrite(&seen, rewritten, persona) {
        Ok(()) => Restyled::Rewritten(rewritten.to_owned()),
        Err(reason) => kept(reason),
    }
}

/// Whether `rewritten` says what `original` says: (a) every fact of the original is in it
/// verbatim, (b) it has no fact the original lacks, (c) it claims no action the original does
/// not, (d) it brings up no banned topic the original did not. `Err` names what failed.
///
/// Facts are code spans and fenced code blocks, quoted strings (compared by content), and the
/// tokens that are URLs, paths (a `/` or `\`), file names (`notes.txt`) or numbers (the digits
/// with what is between them: `1,234.5`, `1.2.3`, `50%`). Every step is linear in the text.
pub fn check_rewrite(original: &str, rewritten: &str, persona: &Persona) -> Result<(), String> {
    let before = Facts::of(original);
    let after = Facts::of(rewritten);
    for fact in &before.spans {
        if !rewritten.contains(fact.as_str()) {
            return Err(format!("the rewrite dropped {}", shown(fact)));
        }
    }
    if let Some(token) = before.tokens.difference(&after.tokens).next() {
        return Err(format!("the rewrite dropped {}", shown(token)));
    }
    for fact in &after.spans {
        if !original.contains(fact.as_str()) {
            return Err(format!(
                "the rewrite added {}, which the answer does not contain",
                shown(fact)
            ));
        }
    }
    if let Some(token) = after.tokens.difference(&before.tokens).next() {
        return Err(format!(
            "the rewrite added {}, which the answer does not contain",
            shown(token)
        ));
    }
    let said = words(original);
    for (phrase, verb) in claims(&words(rewritten)) {
        if !asserts(&said, verb) {
            return Err(format!("the rewrite claims \"{phrase}\", which the answer does not say"));
        }
    }
    let (original_lower, rewritten_lower) = (original.to_lowercase(), rewritten.to_lowercase());
    for topic in &persona.banned_topics {
        let topic = topic.trim().to_lowercase();
        if !topic.is_empty()
            && mentions(&rewritten_lower, &topic)
            && !mentions(&original_lower, &topic)
        {
            return Err(format!("the rewrite brings up the banned topic \"{topic}\""));
        }
    }
    Ok(())
}

/// A fact as a reason shows it: quoted, and cut short when long.
fn shown(fact: &str) -> String {
    const MAX: usize = 80;
    let one_line = fact.trim().replace('\n', " ");
    if one_line.chars().count() <= MAX {
        format!("\"{one_line}\"")
    } else {
        let cut: String = one_line.chars().take(MAX).collect();
        format!("\"{cut}…\"")
    }
}

/// The facts of one text: spans (compared by containment) and tokens (compared as sets).
#[derive(Debug, Default)]
struct Facts {
    /// Code blocks, code spans and quoted strings, by content.
    spans: BTreeSet<String>,
    /// URLs, paths, file names and numbers.
    tokens: BTreeSet<String>,
}

impl Facts {
    fn of(text: &str) -> Facts {
        let mut facts = Facts::default();
        let prose = facts.take_code(text);
        facts.take_quotes(&prose);
        // Tokens come from the whole text, code included, so that a path moved out of (or
        // into) backticks still counts as the same fact.
        for line in text.lines() {
            for token in without_list_marker(line).split(|c: char| c.is_whitespace() || c == '`') {
                if let Some(fact) = token_fact(token) {
                    facts.tokens.insert(fact);
                }
            }
        }
        facts
    }

    /// Collects fenced blocks and inline code spans; returns the prose with them blanked out.
    fn take_code(&mut self, text: &str) -> String {
        let mut prose = String::with_capacity(text.len());
        let mut fence: Option<String> = None;
        for line in text.split_inclusive('\n') {
            let trimmed = line.trim_start();
            match &mut fence {
                Some(body) if trimmed.starts_with("```") => {
                    let body = std::mem::take(body);
                    if !body.trim().is_empty() {
                        self.spans.insert(body.trim_end_matches('\n').to_owned());
                    }
                    fence = None;
                    prose.push('\n');
                }
                Some(body) => {
                    body.push_str(line);
                    prose.push('\n');
                }
                None if trimmed.starts_with("```") => {
                    fence = Some(String::new());
                    prose.push('\n');
                }
                None => self.take_inline_code(line, &mut prose),
            }
        }
        // An unclosed fence still holds code.
        if let Some(body) = fence.filter(|b| !b.trim().is_empty()) {
            self.spans.insert(body.trim_end_matches('\n').to_owned());
        }
        prose
    }

    fn take_inline_code(&mut self, line: &str, prose: &mut String) {
        let mut rest = line;
        while let Some(open) = rest.find('`') {
            let Some(len) = rest[open + 1..].find('`') else { break };
            prose.push_str(&rest[..open]);
            // A quote around code is not a quoted string of its own.
            prose.push(CODE);
            let code = &rest[open + 1..open + 1 + len];
            if !code.trim().is_empty() {
                self.spans.insert(code.to_owned());
            }
            rest = &rest[open + 2 + len..];
        }
        prose.push_str(rest);
    }

    /// Double-quoted strings (straight or curly) on one line, at most 300 bytes long.
    fn take_quotes(&mut self, prose: &str) {
        for line in prose.lines() {
            let mut rest = line;
            while let Some((open, width)) = find_quote(rest) {
                let after = &rest[open + width..];
                let Some((close, close_width)) = find_quote(after) else { break };
                let content = after[..close].trim();
                if !content.is_empty() && close <= 300 && !content.contains(CODE) {
                    self.spans.insert(content.to_owned());
                }
                rest = &after[close + close_width..];
            }
        }
    }
}

/// A line without its ordered-list marker (`1.`, `2)`): numbering is layout, not a fact.
fn without_list_marker(line: &str) -> &str {
    let trimmed = line.trim_start();
    let digits = trimmed.len() - trimmed.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let rest = &trimmed[digits..];
    match rest.strip_prefix(['.', ')']) {
        Some(after)
            if digits > 0 && (after.is_empty() || after.starts_with(char::is_whitespace)) =>
        {
            after
        }
        _ => line,
    }
}

/// Stands for a code span in the prose (a NUL of the answer's own only skips a quote).
const CODE: char = '\0';

fn find_quote(text: &str) -> Option<(usize, usize)> {
    text.char_indices().find(|(_, c)| matches!(c, '"' | '“' | '”')).map(|(i, c)| (i, c.len_utf8()))
}

/// The fact one whitespace-separated token stands for, if any.
fn token_fact(raw: &str) -> Option<String> {
    // A Markdown link `[text](url)` hides its URL behind the text.
    let raw = raw.rsplit_once("](").map_or(raw, |(_, url)| url);
    let token = raw
        .trim_start_matches(|c: char| !c.is_alphanumeric() && !matches!(c, '/' | '.' | '~' | '\\'))
        .trim_end_matches(|c: char| !c.is_alphanumeric() && !matches!(c, '/' | '%' | '\\'));
    if !token.chars().any(char::is_alphanumeric) {
        return None;
    }
    if token.contains("://") || token.starts_with("www.") {
        return Some(token.to_owned());
    }
    if token.contains('/') || token.contains('\\') || is_file_name(token) {
        return Some(token.to_owned());
    }
    number(token)
}

/// `notes.txt`, `main.rs`, `Cargo.toml`: a stem and a short extension with a letter in it.
fn is_file_name(token: &str) -> bool {
    const NOT_FILES: &[&str] = &["e.g", "i.e", "a.m", "p.m", "u.s", "etc", "vs"];
    let Some((stem, extension)) = token.rsplit_once('.') else { return false };
    !stem.is_empty()
        && stem.chars().any(char::is_alphanumeric)
        && (1..=6).contains(&extension.len())
        && extension.chars().all(|c| c.is_ascii_alphanumeric())
        && extension.chars().any(|c| c.is_ascii_alphabetic())
        && !NOT_FILES.contains(&token.to_ascii_lowercase().as_str())
}

/// The number in a token: from its first digit to its last, with a trailing `%`.
fn number(token: &str) -> Option<String> {
    let first = token.find(|c: char| c.is_ascii_digit())?;
    let last = token.rfind(|c: char| c.is_ascii_digit())?;
    let mut number = token[first..=last].to_owned();
    if token[last + 1..].starts_with('%') {
        number.push('%');
    }
    Some(number)
}

/// Lower-case words (letters, digits, apostrophes), with curly apostrophes made straight.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '’'))
        .filter(|w| !w.is_empty())
        .map(|w| w.to_lowercase().replace('’', "'"))
        .collect()
}

/// Action verbs as (base, past, participle).
const VERBS: &[(&str, &str, &str)] = &[
    ("create", "created", "created"),
    ("write", "wrote", "written"),
    ("delete", "deleted", "deleted"),
    ("remove", "removed", "removed"),
    ("run", "ran", "run"),
    ("execute", "executed", "executed"),
    ("commit", "committed", "committed"),
    ("push", "pushed", "pushed"),
    ("install", "installed", "installed"),
    ("uninstall", "uninstalled", "uninstalled"),
    ("send", "sent", "sent"),
    ("change", "changed", "changed"),
    ("modify", "modified", "modified"),
    ("update", "updated", "updated"),
    ("save", "saved", "saved"),
    ("move", "moved", "moved"),
    ("rename", "renamed", "renamed"),
    ("fix", "fixed", "fixed"),
    ("email", "emailed", "emailed"),
    ("book", "booked", "booked"),
    ("buy", "bought", "bought"),
    ("pay", "paid", "paid"),
    ("order", "ordered", "ordered"),
    ("schedule", "scheduled", "scheduled"),
    ("deploy", "deployed", "deployed"),
    ("publish", "published", "published"),
    ("upload", "uploaded", "uploaded"),
    ("download", "downloaded", "downloaded"),
    ("replace", "replaced", "replaced"),
    ("edit", "edited", "edited"),
    ("add", "added", "added"),
    ("copy", "copied", "copied"),
    ("merge", "merged", "merged"),
    ("restart", "restarted", "restarted"),
    ("kill", "killed", "killed"),
    ("cancel", "cancelled", "canceled"),
    ("submit", "submitted", "submitted"),
    ("post", "posted", "posted"),
    ("purchase", "purchased", "purchased"),
    ("transfer", "transferred", "transferred"),
    ("finish", "finished", "finished"),
    ("complete", "completed", "completed"),
];

/// Words that make the next action verb a claim of having done it.
const SUBJECTS: &[&str] =
    &["i", "i've", "we", "we've", "have", "has", "had", "been", "was", "were", "is", "are", "it's"];
/// Words that may stand between a subject and its verb.
const FILLERS: &[&str] =
    &["just", "already", "also", "successfully", "now", "then", "and", "finally", "all"];
const NEGATIONS: &[&str] = &[
    "not", "no", "never", "nothing", "didn't", "don't", "wasn't", "weren't", "haven't", "hasn't",
    "couldn't", "cannot", "can't", "won't", "neither", "nor",
];

/// The claims of action in a text: (the words that make it, the verb's past form).
fn claims(words: &[String]) -> Vec<(String, &'static str)> {
    let mut found = Vec::new();
    for (i, word) in words.iter().enumerate() {
        if word == "done" && !negated(words, i) {
            found.push(("done".to_owned(), "done"));
            continue;
        }
        let Some(&(_, past, _)) =
            VERBS.iter().find(|(_, past, participle)| word == past || word == participle)
        else {
            continue;
        };
        let mut j = i;
        while j > 0 && FILLERS.contains(&words[j - 1].as_str()) {
            j -= 1;
        }
        if j > 0 && SUBJECTS.contains(&words[j - 1].as_str()) && !negated(words, j) {
            found.push((words[j - 1..=i].join(" "), past));
        }
    }
    found
}

/// Whether a negation comes within the three words before `at`.
fn negated(words: &[String], at: usize) -> bool {
    words[at.saturating_sub(3)..at].iter().any(|w| NEGATIONS.contains(&w.as_str()))
}

/// Whether the original states the action `past` (in any non-negated past form; a participle
/// that is also the base form, like "run", does not count on its own).
fn asserts(words: &[String], past: &str) -> bool {
    let forms: Vec<&str> = match VERBS.iter().find(|(_, p, _)| *p == past) {
        Some(&(base, past, participle)) if participle != base => vec![past, participle],
        Some(&(_, past, _)) => vec![past],
        None => vec![past],
    };
    words.iter().enumerate().any(|(i, w)| forms.contains(&w.as_str()) && !negated(words, i))
}

/// Whether `phrase` occurs in `text` as whole words (both already lower-case).
fn mentions(text: &str, phrase: &str) -> bool {
    text.match_indices(phrase).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + phrase.len()..].chars().next();
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
    })
}

#[cfg(test)]
mod tests;
