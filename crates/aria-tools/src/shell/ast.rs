//! The small typed AST of what ARIA runs: a list of steps, each a pipeline of simple commands
//! or an `if` whose parts are lists of steps again.
//!
//! Anything outside this shape (substitutions, `while`, `case`, functions, ...) never becomes
//! an AST: [`super::parse`] refuses it with a [`ShellRefusal`] that names the construct.

use std::fmt;

/// A parsed command line: steps run left to right, each gated by the previous exit status.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Script {
    pub steps: Vec<Step>,
}

impl Script {
    /// Every simple command, in document order (inside `if` conditions and branches too).
    pub fn commands(&self) -> impl Iterator<Item = &SimpleCommand> {
        self.pipelines().into_iter().flat_map(|p| p.pipeline.commands.iter())
    }

    /// Every pipeline, in document order, with its gate and how many `if`s enclose it.
    pub fn pipelines(&self) -> Vec<PipelineAt<'_>> {
        let mut out = Vec::new();
        self.collect_pipelines(0, &mut out);
        out
    }

    fn collect_pipelines<'a>(&'a self, nested: usize, out: &mut Vec<PipelineAt<'a>>) {
        for step in &self.steps {
            match &step.body {
                Body::Pipeline(pipeline) => {
                    out.push(PipelineAt { run_if: step.run_if, pipeline, nested })
                }
                Body::If(c) => c.parts().for_each(|s| s.collect_pipelines(nested + 1, out)),
            }
        }
    }
}

/// A pipeline found by [`Script::pipelines`].
#[derive(Debug, Clone, Copy)]
pub struct PipelineAt<'a> {
    /// The gate of the step it is (relative to the steps beside it).
    pub run_if: RunIf,
    pub pipeline: &'a Pipeline,
    /// How many `if` statements enclose it (0: a step of the line itself).
    pub nested: usize,
}

/// One step and the condition under which it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub run_if: RunIf,
    pub body: Body,
}

impl Step {
    /// A step that is one pipeline.
    pub fn pipeline(run_if: RunIf, commands: Vec<SimpleCommand>) -> Step {
        Step { run_if, body: Body::Pipeline(Pipeline { commands }) }
    }

    /// The pipeline, when the step is one (not an `if`).
    pub fn as_pipeline(&self) -> Option<&Pipeline> {
        match &self.body {
            Body::Pipeline(p) => Some(p),
            Body::If(_) => None,
        }
    }
}

/// What a step runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    /// Simple commands joined by `|`.
    Pipeline(Pipeline),
    /// `if COND; then …; elif COND; then …; else …; fi`.
    If(Box<Conditional>),
}

/// `if`: the first arm whose condition exits 0 runs its branch; if none does, `otherwise`
/// runs. The exit status is the branch's, or 0 when no branch ran (bash's rule).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conditional {
    /// The `if` arm, then each `elif` arm, in order. Never empty.
    pub arms: Vec<Arm>,
    /// The `else` branch.
    pub otherwise: Option<Script>,
}

impl Conditional {
    /// Every part in document order: each condition then its branch, then the `else` branch.
    pub fn parts(&self) -> impl Iterator<Item = &Script> {
        self.arms.iter().flat_map(|a| [&a.condition, &a.then]).chain(self.otherwise.as_ref())
    }

    /// Every part, mutably, in document order.
    pub fn parts_mut(&mut self) -> impl Iterator<Item = &mut Script> {
        self.arms
            .iter_mut()
            .flat_map(|a| [&mut a.condition, &mut a.then])
            .chain(self.otherwise.as_mut())
    }
}

/// `COND; then BRANCH`: the condition's steps, and the branch run when it exits 0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arm {
    pub condition: Script,
    pub then: Script,
}

/// The operator before a pipeline: `;` or newline, `&&`, `||`. The first step is `Always`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunIf {
    /// `;`, a newline, or the first pipeline.
    Always,
    /// `&&`: only if the previous exit status was 0.
    Success,
    /// `||`: only if the previous exit status was not 0.
    Failure,
}

/// Simple commands joined by `|` (stdout of one to stdin of the next).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pipeline {
    pub commands: Vec<SimpleCommand>,
}

/// `NAME=value ... program arg ... redirects`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimpleCommand {
    /// Environment assignments written before the program (`LANG=C ls`).
    pub env: Vec<Assignment>,
    /// The program and its arguments, after quote removal. Never empty.
    pub words: Vec<Word>,
    /// Redirects in the order written (order matters: `> f 2>&1` differs from `2>&1 > f`).
    pub redirects: Vec<Redirect>,
}

impl SimpleCommand {
    /// The program word.
    pub fn program(&self) -> &Word {
        // `parse` never builds a command without words (it refuses bare assignments/redirects).
        &self.words[0]
    }

    /// The argument texts as written after quote removal (expansions shown as written).
    pub fn argv(&self) -> impl Iterator<Item = &str> {
        self.words.iter().map(|w| w.text())
    }
}

/// `NAME=value` before a program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    pub name: String,
    pub value: Word,
}

/// A redirect of one of the standard descriptors (0, 1, 2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    /// 0 = stdin, 1 = stdout, 2 = stderr.
    pub fd: u8,
    pub target: RedirectTarget,
}

/// Where a redirected descriptor goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RedirectTarget {
    /// A file, opened for reading (`<`), truncating (`>`, `>|`) or appending (`>>`).
    File { mode: RedirectMode, path: Word },
    /// A copy of another standard descriptor (`2>&1`, `>&2`, `<&0`).
    Dup(u8),
    /// Standard input from this text: a heredoc (`<<'EOF'`) or a here-string (`<<< word`),
    /// already literal (ARIA never expands inside it).
    Text(String),
}

/// How a redirect opens its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RedirectMode {
    Read,
    Write,
    Append,
}

impl RedirectMode {
    pub fn writes(self) -> bool {
        !matches!(self, RedirectMode::Read)
    }
    /// The operator as written.
    pub fn operator(self) -> &'static str {
        match self {
            RedirectMode::Read => "<",
            RedirectMode::Write => ">",
            RedirectMode::Append => ">>",
        }
    }
}

/// One piece of a word.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    /// Literal text. `quoted` text (inside quotes or escaped by `\`) never globs or expands `~`.
    Text { text: String, quoted: bool },
    /// `$NAME` or `${NAME}` (`braced`): a plain variable reference.
    Var { name: String, quoted: bool, braced: bool },
    /// Any other parameter expansion (`${x:-y}`, `$1`, `$@`, `${#x}`): ARIA never performs it.
    Param { source: String },
}

/// One shell word after quote removal, remembering which parts were quoted or expansions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    text: String,
    segments: Vec<Segment>,
    brace: bool,
}

impl Word {
    /// Builds a word from its segments.
    pub fn from_segments(segments: Vec<Segment>) -> Word {
        let mut text = String::new();
        for s in &segments {
            match s {
                Segment::Text { text: t, .. } => text.push_str(t),
                Segment::Var { name, braced, .. } => {
                    text.push('$');
                    if *braced {
                        text.push('{');
                        text.push_str(name);
                        text.push('}');
                    } else {
                        text.push_str(name);
                    }
                }
                Segment::Param { source } => text.push_str(source),
            }
        }
        let brace = has_brace_expansion(&segments);
        Word { text, segments, brace }
    }

    /// A fully quoted literal word (used for words ARIA makes up, e.g. `echo` for `xargs`).
    pub fn literal(text: &str) -> Word {
        Word::from_segments(vec![Segment::Text { text: text.to_owned(), quoted: true }])
    }

    /// The text after quote removal; expansions appear as written (`$HOME`, `*.rs`).
    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }

    /// Contains a `$variable` or other parameter expansion.
    pub fn has_variable(&self) -> bool {
        self.segments.iter().any(|s| !matches!(s, Segment::Text { .. }))
    }

    /// Contains an unquoted `*`, `?` or `[`: the shell would expand it to file names.
    pub fn has_glob(&self) -> bool {
        self.unquoted().any(|t| t.contains(['*', '?', '[']))
    }

    /// Starts with an unquoted `~`: the shell would expand it to a home directory.
    pub fn has_tilde(&self) -> bool {
        matches!(self.segments.first(), Some(Segment::Text { text, quoted: false }) if text.starts_with('~'))
    }

    /// Contains an unquoted `{a,b}` or `{1..3}` brace expansion.
    pub fn has_brace(&self) -> bool {
        self.brace
    }

    /// True when the shell would turn this word into something other than [`Word::text`].
    pub fn needs_expansion(&self) -> bool {
        self.has_variable() || self.has_glob() || self.has_tilde() || self.has_brace()
    }

    /// The literal text, if the word needs no expansion at all.
    pub fn literal_text(&self) -> Option<&str> {
        (!self.needs_expansion()).then_some(self.text.as_str())
    }

    fn unquoted(&self) -> impl Iterator<Item = &str> {
        self.segments.iter().filter_map(|s| match s {
            Segment::Text { text, quoted: false } => Some(text.as_str()),
            _ => None,
        })
    }
}

impl fmt::Display for Word {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// `{a,b}` or `{1..3}` made of unquoted braces with an unquoted `,` or `..` between them.
fn has_brace_expansion(segments: &[Segment]) -> bool {
    // Unquoted characters only; anything quoted or expanded is a neutral placeholder.
    let mut chars = Vec::new();
    for s in segments {
        match s {
            Segment::Text { text, quoted: false } => chars.extend(text.chars()),
            _ => chars.push('\u{0}'),
        }
    }
    let mut open: Vec<usize> = Vec::new();
    for (i, &c) in chars.iter().enumerate() {
        match c {
            '{' => open.push(i),
            '}' => {
                if let Some(start) = open.pop() {
                    let inner: String = chars[start + 1..i].iter().collect();
                    if inner.contains(',') || inner.contains("..") {
                        return true;
                    }
                }
            }
            _ => {}
        }
    }
    false
}

/// Why a command line was not turned into a [`Script`]. `construct` names the shell feature
/// (e.g. "command substitution"); the message says why and what to do instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ShellRefusal {
    pub construct: &'static str,
    pub message: String,
}

impl ShellRefusal {
    pub(crate) fn new(construct: &'static str, message: impl Into<String>) -> ShellRefusal {
        ShellRefusal { construct, message: message.into() }
    }

    /// A construct that needs a real shell, with the source text that used it.
    pub(crate) fn needs_shell(construct: &'static str, source: &str, instead: &str) -> Self {
        let shown = shorten(source);
        ShellRefusal::new(
            construct,
            format!(
                "{construct} `{shown}` is not supported: ARIA runs programs directly, never \
                 through a shell; {instead}"
            ),
        )
    }
}

/// At most 60 characters of `s` on one line, for messages.
pub(crate) fn shorten(s: &str) -> String {
    let one_line: String = s.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    let trimmed = one_line.trim();
    if trimmed.chars().count() <= 60 {
        return trimmed.to_owned();
    }
    let head: String = trimmed.chars().take(57).collect();
    format!("{head}...")
}
