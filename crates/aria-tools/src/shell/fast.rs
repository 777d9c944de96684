//! The fast path of [`super::parse`]: a hand-written lexer for a strict subset of bash that
//! builds the same [`Script`] the tree-sitter path builds, in a fraction of the time.
//!
//! The subset (anything else returns `None` and the line goes to tree-sitter, so this path can
//! only ever be more conservative, never a bypass):
//! - words made of plain characters (ASCII letters and digits, `_ . / : , @ % + = - * ? ~ ^`
//!   and non-ASCII text), `'single-quoted'` strings without control characters, and
//!   `"double-quoted"` strings without `$`, backquote, `\`, `!` or control characters, glued
//!   together in any order;
//! - `NAME=value` prefixes (NAME starting with a letter) before the program (a program word containing `=` that is not such a
//!   prefix falls back, and so does a program word with unquoted characters other than
//!   letters, digits, `_ . / + -` and non-ASCII text, or starting with `-` or `+`);
//! - the operators `|`, `&&`, `||`, `;` (one trailing `;` allowed), blanks (space and tab);
//! - after the program, redirects `<`, `>`, `>>` to a word and `>&0`..`>&2`, optionally after a
//!   descriptor `1` or `2`, each written after a blank; once a command has a redirect only more
//!   redirects may follow it;
//! - a lone `{}` argument (as in `find -exec … {} +`);
//! - no reserved word (`if`, `do`, `export`, ...) and no shell builtin as the program, no
//!   word starting with `=~` or `==`.
//!
//! Everything else — `$`, backquotes, `\`, `!`, `#`, `&` alone, `(`, `)`, `{`, `}`, `[`, `]`,
//! newlines and other control characters, `<<`, `>|`, `&>`, descriptors above 2 — falls back.
//! `fast_tests.rs` checks on tables, the bench corpus and generated lines that every accepted
//! line parses and classifies exactly like the tree-sitter path ([`parse_reference`],
//! [`classify_reference`]); the fuzz target `shell_classify` checks it on arbitrary input.

use std::cell::Cell;

use super::ast::{
    Assignment, Redirect, RedirectMode, RedirectTarget, RunIf, Script, Segment, ShellRefusal,
    SimpleCommand, Step, Word,
};
use super::classify::{Classification, classify};

/// More commands than this go to the tree-sitter path (which also enforces its nesting limit).
const MAX_FAST_COMMANDS: usize = 64;

/// Words the grammar reads as syntax (reserved words and declaration commands) when they stand
/// where a program would: such a command is left to tree-sitter.
const RESERVED: &[&str] = &[
    "if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while", "until", "do",
    "done", "in", "function", "time", "coproc", "declare", "typeset", "export", "readonly",
    "local", "unset", "unsetenv", "let",
];

thread_local! {
    static REFERENCE_ONLY: Cell<bool> = const { Cell::new(false) };
}

/// Whether [`super::parse`] may try the fast path on this thread.
pub(super) fn enabled() -> bool {
    !REFERENCE_ONLY.with(Cell::get)
}

/// Runs `f` with the fast path switched off on this thread (restored afterwards, even on panic).
fn without_fast_path<T>(f: impl FnOnce() -> T) -> T {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            REFERENCE_ONLY.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(REFERENCE_ONLY.with(|c| c.replace(true)));
    f()
}

/// [`super::parse`] through the tree-sitter path only: the reference the fast path is tested
/// against (differential tests and the fuzz target).
pub fn parse_reference(command_line: &str) -> Result<Script, ShellRefusal> {
    without_fast_path(|| super::parse(command_line))
}

/// [`classify`] with every parse (also of nested `sh -c '…'` scripts) through the tree-sitter
/// path only.
pub fn classify_reference(command_line: &str) -> Classification {
    without_fast_path(|| classify(command_line))
}

/// The fast path alone: `Some` when the line is inside the subset (then it is the AST the
/// tree-sitter path builds), `None` when the line must go to tree-sitter. [`super::parse`]
/// applies its limits and builtin check to either result.
pub fn parse_fast(command_line: &str) -> Option<Script> {
    Lexer { src: command_line, b: command_line.as_bytes(), i: 0, braces: false }.script()
}

struct Lexer<'s> {
    src: &'s str,
    b: &'s [u8],
    i: usize,
    /// A lone `{}` argument was read.
    braces: bool,
}

fn is_plain(c: u8) -> bool {
    c.is_ascii_alphanumeric()
        || matches!(c, b'_' | b'.' | b'/' | b':' | b',' | b'@' | b'%' | b'+' | b'=' | b'-')
        || matches!(c, b'*' | b'?' | b'~' | b'^')
        || c >= 0x80
}

/// Unquoted text of a program word: letters, digits, `_ . / + -` and non-ASCII text only, and
/// not starting with `-` or `+` (`- 2>&1` reads as something else to the grammar).
fn plain_program(word: &Word) -> bool {
    !word.text().starts_with(['-', '+'])
        && word.segments().iter().all(|s| match s {
            Segment::Text { text, quoted: false } => text.bytes().all(|c| {
                c.is_ascii_alphanumeric()
                    || matches!(c, b'_' | b'.' | b'/' | b'+' | b'-')
                    || c >= 0x80
            }),
            _ => true,
        })
}

/// A byte that ends a word.
fn is_delimiter(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'|' | b'&' | b';' | b'<' | b'>')
}

fn is_blank(c: u8) -> bool {
    c == b' ' || c == b'\t'
}

/// Inside quotes: tab and printable text only.
fn is_quotable(c: u8) -> bool {
    c == b'\t' || (c >= 0x20 && c != 0x7f)
}

impl<'s> Lexer<'s> {
    fn peek(&self, ahead: usize) -> Option<u8> {
        self.b.get(self.i + ahead).copied()
    }

    fn skip_blanks(&mut self) {
        while self.peek(0).is_some_and(is_blank) {
            self.i += 1;
        }
    }

    fn script(mut self) -> Option<Script> {
        let script = self.steps()?;
        // A line with a lone `{}` is not split at its pipes before the grammar sees it, and the
        // grammar nests `a | b || c` the wrong way round, so that path refuses a pipeline
        // followed by a list operator there: leave such a line to it (found by fuzzing).
        let piped = script.pipelines().iter().any(|p| p.pipeline.commands.len() > 1);
        if self.braces && piped && script.steps.len() > 1 {
            return None;
        }
        Some(script)
    }

    fn steps(&mut self) -> Option<Script> {
        let mut steps = Vec::new();
        let mut commands = Vec::new();
        let mut run_if = RunIf::Always;
        let mut count = 0usize;
        loop {
            commands.push(self.command()?);
            count += 1;
            if count > MAX_FAST_COMMANDS {
                return None;
            }
            // `command` stopped at an operator or the end.
            let Some(c) = self.peek(0) else { break };
            let next = self.peek(1);
            let then = match (c, next) {
                (b'|', Some(b'|')) => RunIf::Failure,
                (b'&', Some(b'&')) => RunIf::Success,
                (b'|', Some(b'&')) | (b';', Some(b';' | b'&')) => return None,
                (b'|', _) => {
                    self.i += 1;
                    continue;
                }
                (b';', _) => RunIf::Always,
                _ => return None,
            };
            self.i += if c == b';' { 1 } else { 2 };
            steps.push(Step::pipeline(run_if, std::mem::take(&mut commands)));
            run_if = then;
            if c == b';' {
                self.skip_blanks();
                if self.peek(0).is_none() {
                    return Some(Script { steps });
                }
            }
        }
        steps.push(Step::pipeline(run_if, commands));
        Some(Script { steps })
    }

    /// One simple command, up to an operator or the end.
    fn command(&mut self) -> Option<SimpleCommand> {
        let mut cmd = SimpleCommand { env: Vec::new(), words: Vec::new(), redirects: Vec::new() };
        loop {
            self.skip_blanks();
            let Some(c) = self.peek(0) else { break };
            match c {
                b'|' | b'&' | b';' => break,
                b'<' | b'>' => self.redirect(None, &mut cmd)?,
                // `0<`/`0>`: tree-sitter-bash 0.25 reads the `0` as an argument, not a
                // descriptor; that reading stays with the grammar.
                b'1' | b'2' if matches!(self.peek(1), Some(b'<' | b'>')) => {
                    self.i += 1;
                    self.redirect(Some(c - b'0'), &mut cmd)?;
                }
                _ if !cmd.redirects.is_empty() => return None,
                // `find … -exec … {} +`: a lone `{}` argument is two unquoted pieces to the
                // grammar.
                b'{' if !cmd.words.is_empty()
                    && self.peek(1) == Some(b'}')
                    && self.peek(2).is_none_or(is_blank) =>
                {
                    self.i += 2;
                    self.braces = true;
                    cmd.words.push(Word::from_segments(vec![
                        Segment::Text { text: "{".to_owned(), quoted: false },
                        Segment::Text { text: "}".to_owned(), quoted: false },
                    ]));
                }
                _ if cmd.words.is_empty() && self.assignment_name().is_some() => {
                    let assignment = self.assignment()?;
                    cmd.env.push(assignment);
                }
                _ => {
                    let start = self.i;
                    let word = self.word()?;
                    let raw = &self.src[start..self.i];
                    // The grammar reads some characters in a program word its own way (`a@b`,
                    // `a%`, `a?b` alone do not even parse): such a program is left to it.
                    // A reserved word glued to quotes (`if''`) is still the keyword to it.
                    let lead = &raw[..raw.find(['\'', '"']).unwrap_or(raw.len())];
                    if cmd.words.is_empty() && (!plain_program(&word) || RESERVED.contains(&lead)) {
                        return None;
                    }
                    // `=~` and `==` open a word as test operators to the grammar.
                    if raw.starts_with("=~") || raw.starts_with("==") {
                        return None;
                    }
                    cmd.words.push(word);
                }
            }
        }
        let program = cmd.words.first()?.text();
        if super::parse::SHELL_ONLY.contains(&program) {
            return None;
        }
        Some(cmd)
    }

    /// The length of `NAME` when the input continues with `NAME=`.
    fn assignment_name(&self) -> Option<usize> {
        let rest = &self.b[self.i..];
        let first = *rest.first()?;
        // Not `_`: tree-sitter-bash reads `_=x` as a word (found by fuzzing), so names starting
        // with `_` are left to it.
        if !first.is_ascii_alphabetic() {
            return None;
        }
        let len = rest.iter().take_while(|c| c.is_ascii_alphanumeric() || **c == b'_').count();
        (rest.get(len) == Some(&b'=')).then_some(len)
    }

    fn assignment(&mut self) -> Option<Assignment> {
        let len = self.assignment_name()?;
        let name = self.src[self.i..self.i + len].to_owned();
        self.i += len + 1;
        let value = match self.peek(0) {
            None => Word::literal(""),
            Some(c) if is_blank(c) => Word::literal(""),
            Some(_) => self.word()?,
        };
        Some(Assignment { name, value })
    }

    /// A redirect at `self.i` (the operator), after an optional descriptor already consumed.
    fn redirect(&mut self, fd: Option<u8>, cmd: &mut SimpleCommand) -> Option<()> {
        let written_at = self.i - usize::from(fd.is_some());
        if cmd.words.is_empty()
            || !self.b.get(written_at.checked_sub(1)?).copied().is_some_and(is_blank)
        {
            return None;
        }
        // tree-sitter-bash drops a lone `-` argument just before `2>&1` (no node, no error;
        // the grammar path refuses such a line): any redirect after a lone `-` goes to it.
        if cmd.words.last().is_some_and(
            |w| matches!(w.segments(), [Segment::Text { text, quoted: false }] if text == "-"),
        ) {
            return None;
        }
        let (mode, len) = match (self.peek(0)?, self.peek(1)) {
            (b'<', Some(b'<' | b'&' | b'>' | b'(')) => return None,
            (b'<', _) => (RedirectMode::Read, 1),
            (b'>', Some(b'>')) => (RedirectMode::Append, 2),
            (b'>', Some(b'&')) => {
                let to = match self.peek(2)? {
                    d @ b'0'..=b'2' => d - b'0',
                    _ => return None,
                };
                if self.peek(3).is_some_and(|c| !is_delimiter(c) || matches!(c, b'<' | b'>')) {
                    return None;
                }
                self.i += 3;
                cmd.redirects
                    .push(Redirect { fd: fd.unwrap_or(1), target: RedirectTarget::Dup(to) });
                return Some(());
            }
            (b'>', Some(b'|' | b'(')) => return None,
            (b'>', _) => (RedirectMode::Write, 1),
            _ => return None,
        };
        self.i += len;
        self.skip_blanks();
        let path = self.word()?;
        let fd = fd.unwrap_or(if mode == RedirectMode::Read { 0 } else { 1 });
        cmd.redirects.push(Redirect { fd, target: RedirectTarget::File { mode, path } });
        Some(())
    }

    /// One word: plain text and quoted strings glued together, ending at a blank, an operator
    /// or the end. `None` for anything outside the subset, an empty word, or a word that runs
    /// straight into `<` or `>` (`a>f`, `"2">f`: the grammar's reading of those is left to it).
    fn word(&mut self) -> Option<Word> {
        let start = self.i;
        let mut segments: Vec<Segment> = Vec::new();
        while let Some(c) = self.peek(0) {
            match c {
                b'\'' => {
                    let body = self.quoted(b'\'', is_quotable)?;
                    segments.push(Segment::Text { text: body.to_owned(), quoted: true });
                }
                b'"' => {
                    let body = self.quoted(b'"', |c| {
                        is_quotable(c) && !matches!(c, b'$' | b'`' | b'\\' | b'!')
                    })?;
                    // The tree-sitter path keeps an empty `""` only as the first part of a word.
                    if !body.is_empty() || segments.is_empty() {
                        segments.push(Segment::Text { text: body.to_owned(), quoted: true });
                    }
                }
                c if is_plain(c) => {
                    let run = self.b[self.i..].iter().take_while(|c| is_plain(**c)).count();
                    let text = self.src[self.i..self.i + run].to_owned();
                    self.i += run;
                    segments.push(Segment::Text { text, quoted: false });
                }
                c if is_delimiter(c) => break,
                _ => return None,
            }
        }
        if self.i == start || matches!(self.peek(0), Some(b'<' | b'>')) {
            return None;
        }
        Some(Word::from_segments(segments))
    }

    /// The body of a string opened by `quote` at `self.i`; every byte must pass `ok`.
    fn quoted(&mut self, quote: u8, ok: impl Fn(u8) -> bool) -> Option<&'s str> {
        let body_start = self.i + 1;
        let len = self.b[body_start..].iter().position(|&c| c == quote)?;
        let body = &self.b[body_start..body_start + len];
        if !body.iter().all(|&c| ok(c)) {
            return None;
        }
        self.i = body_start + len + 1;
        self.src.get(body_start..body_start + len)
    }
}
