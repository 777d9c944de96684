//! Shell without a shell: a command line is parsed with a real bash grammar, turned into a
//! small AST of what ARIA is willing to run, and classified into a policy tier.
//!
//! - [`parse`] uses tree-sitter-bash and accepts only simple commands (argv words after quote
//!   removal, `NAME=value` prefixes, redirects of fd 0/1/2), pipelines, `&&` / `||` / `;`
//!   lists, and (`compound.rs`) `for x in …` over literal words (unrolled) and `if/elif/else`
//!   (a [`Conditional`] step whose every part is a list again). Subshells (but a whole-line
//!   one), `while`/`until`/`case`, `eval`, functions, background jobs and anything that does
//!   not parse are refused with a [`ShellRefusal`] that names the construct. Expansions ARIA does not perform (`$VAR`, globs, `~`, braces) are
//!   kept and flagged on the [`Word`]. The common simple shapes (plain and quoted words,
//!   `NAME=value` prefixes, `|`, `&&`, `||`, `;`, plain redirects) skip tree-sitter: a small
//!   lexer (`fast.rs`, [`parse_fast`]) builds the same AST in about a tenth of the time and
//!   hands everything else to the grammar; [`parse_reference`] and [`classify_reference`]
//!   force the grammar, for the differential tests and the fuzz target.
//! - [`classify`] judges every command with the table in `rules.rs` (classification is data:
//!   one list of programs with per-argument rules, plus analyzers for `rm`, `chmod`, `find`,
//!   `sed`, `awk`, `git`, wrappers and interpreters). The tier of a line is the maximum over
//!   its parts and the reason names what decided it. Unknown programs are never `read`.
//!
//! - [`history`]: `git` commands that print contents from history get exclusions for the
//!   sensitive files appended, or are refused ([`guard_git_history`]).
//!
//! The design decision to know: **what is classified is exactly what runs.** The executor
//! spawns the argv of this AST directly (never `sh -c`), so there is no second interpretation
//! of the text that the classifier did not see.

mod analyze;
mod archive;
mod ast;
pub mod builtin;
mod classify;
mod compound;
mod env_rules;
mod fast;
mod git;
pub mod history;
mod judge;
mod parse;
mod rules;
pub mod subst;
mod textprog;
mod words;

pub use ast::{
    Arm, Assignment, Body, Conditional, Pipeline, PipelineAt, Redirect, RedirectMode,
    RedirectTarget, RunIf, Script, Segment, ShellRefusal, SimpleCommand, Step, Word,
};
pub use classify::{CheckReport, Classification, CommandReport, RedirectReport, classify};
pub use fast::{classify_reference, parse_fast, parse_reference};
pub use history::guard_git_history;
pub use parse::{MAX_COMMAND_LINE, MAX_COMMANDS, parse};

#[cfg(test)]
mod classify_tests;
#[cfg(test)]
mod compound_tests;
#[cfg(test)]
mod constructs_tests;
#[cfg(test)]
mod fast_tests;
#[cfg(test)]
mod options_tests;
#[cfg(test)]
mod parse_tests;
