//! From text to [`Script`]: tree-sitter-bash parses the full bash grammar, then an allowlist of
//! node kinds becomes the small AST. Everything else is refused by name.
//!
//! Two passes over the tree: first every node is checked against the refused constructs
//! (so a substitution hidden anywhere, even inside `${x:-…}` or a redirect target, is found),
//! then the allowed shape is converted. The converter itself refuses any node kind it does not
//! expect, so a construct missing from the first list still cannot slip through.

use std::cell::RefCell;

use tree_sitter::{Node, Parser};

use super::ast::{
    Assignment, Body, Redirect, RedirectMode, RedirectTarget, RunIf, ShellRefusal, SimpleCommand,
    Step, Word, shorten,
};
use super::words::{text, word};

mod redirect;
use redirect::{heredoc, herestring, redirect};

/// Longest command line accepted, in bytes.
pub const MAX_COMMAND_LINE: usize = 64 * 1024;
/// Most simple commands in one command line.
pub const MAX_COMMANDS: usize = 256;

/// Shell builtins that have no program of their own (or only make sense inside a shell).
pub(super) const SHELL_ONLY: &[&str] = &[
    ".",
    "source",
    "eval",
    "exec",
    "set",
    "shopt",
    "alias",
    "unalias",
    "declare",
    "typeset",
    "local",
    "readonly",
    "let",
    "trap",
    "read",
    "ulimit",
    "umask",
    "builtin",
    "enable",
    "hash",
    "history",
    "jobs",
    "fg",
    "bg",
    "disown",
    "wait",
    "return",
    "exit",
    "logout",
    "break",
    "continue",
    "shift",
    "getopts",
    "pushd",
    "popd",
    "dirs",
    "complete",
    "compgen",
    "compopt",
    "mapfile",
    "readarray",
    "times",
    "suspend",
    "caller",
    "coproc",
    "function",
    "select",
];

thread_local! {
    static PARSER: RefCell<Option<Parser>> = const { RefCell::new(None) };
}

/// Parses one command line into a [`Script`], or says which construct ARIA will not run.
pub fn parse(command_line: &str) -> Result<super::ast::Script, ShellRefusal> {
    if command_line.contains('\0') {
        return Err(ShellRefusal::new(
            "NUL byte",
            "the command line contains a NUL byte, which no program argument can hold",
        ));
    }
    if command_line.len() > MAX_COMMAND_LINE {
        return Err(ShellRefusal::new(
            "too long",
            format!(
                "the command line is {} bytes; the limit is {MAX_COMMAND_LINE}. Put long \
                 content in a file with file_write and pass its path",
                command_line.len()
            ),
        ));
    }
    // The hand-written lexer for the common simple shapes first (`fast.rs`: the same AST, or
    // `None` to leave the line to the grammar).
    let fast = if super::fast::enabled() { super::fast::parse_fast(command_line) } else { None };
    let script = match fast {
        Some(script) => script,
        None => match pipe_segments(command_line) {
            Some(segments) => stitch(&segments).or_else(|_| parse_tree(command_line))?,
            None => parse_tree(command_line)?,
        },
    };
    if script.commands().count() > MAX_COMMANDS {
        return Err(ShellRefusal::new(
            "too many commands",
            format!("the command line has more than {MAX_COMMANDS} commands; split it into steps"),
        ));
    }
    for command in script.commands() {
        if let Some(name) = command.program().literal_text()
            && SHELL_ONLY.contains(&name)
        {
            return Err(ShellRefusal::new(
                "shell builtin",
                format!(
                    "`{name}` is a shell builtin and ARIA runs programs directly, never through \
                     a shell; do the work with programs (for variables use `env NAME=value \
                     program`)"
                ),
            ));
        }
    }
    Ok(script)
}

/// Parses the whole line with tree-sitter-bash and converts the tree.
pub(super) fn parse_tree(command_line: &str) -> Result<super::ast::Script, ShellRefusal> {
    let tree = syntax_tree(command_line)?;
    let root = tree.root_node();
    if root.has_error() {
        return Err(parse_error(root, command_line));
    }
    if let Some(at) = skipped_text(root, command_line) {
        let ch = command_line[at..].chars().next().unwrap_or(' ');
        return Err(ShellRefusal::new(
            "text the grammar skips",
            format!(
                "the bash grammar leaves `{ch}` at byte {at} out of the command it builds, so \
                 what would run is not what was written; quote it ('{ch}') or reorder the \
                 arguments"
            ),
        ));
    }
    if let Some(inner) = whole_line_subshell(root, command_line) {
        return parse_tree(inner);
    }
    refuse_constructs(root, command_line)?;
    let mut steps = Vec::new();
    let mut next_if = RunIf::Always;
    let mut cursor = root.walk();
    for child in root.children(&mut cursor) {
        match child.kind() {
            "comment" => {}
            ";" => next_if = RunIf::Always,
            _ if child.is_named() => {
                statement(child, command_line, next_if, &mut steps, 0)?;
                next_if = RunIf::Always;
            }
            other => return Err(operator(other)),
        }
    }
    if steps.is_empty() {
        return Err(ShellRefusal::new(
            "empty",
            "the command line is empty: there is nothing to run",
        ));
    }
    Ok(super::ast::Script { steps })
}

/// The tree-sitter-bash tree of a line (non-ASCII masked: offsets stay those of the line).
pub(super) fn syntax_tree(command_line: &str) -> Result<tree_sitter::Tree, ShellRefusal> {
    PARSER.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            let mut parser = Parser::new();
            parser.set_language(&tree_sitter_bash::LANGUAGE.into()).map_err(|e| {
                ShellRefusal::new("parser", format!("the bash grammar could not be loaded: {e}"))
            })?;
            *slot = Some(parser);
        }
        // tree-sitter-bash 0.25.1 crashes (SIGSEGV in its C scanner) on some code points above
        // U+65E20 after `{`, found by the property tests. Bash's syntax is all ASCII, so every
        // non-ASCII character is masked with ASCII letters of the same UTF-8 length: offsets
        // stay the same and words are read back from the original text.
        let masked = mask_non_ascii(command_line);
        slot.as_mut().and_then(|p| p.parse(masked.as_ref(), None)).ok_or_else(|| {
            ShellRefusal::new("parser", "the bash parser gave no result for this command line")
        })
    })
}

/// The text inside `( … )` when the whole line is one subshell without redirects: its
/// commands run as if written without the parentheses (ARIA's working directory changes end
/// with the line anyway).
fn whole_line_subshell<'s>(root: Node<'_>, src: &'s str) -> Option<&'s str> {
    let mut cursor = root.walk();
    let mut named = root.named_children(&mut cursor).filter(|c| c.kind() != "comment");
    let only = named.next()?;
    if named.next().is_some() || only.kind() != "subshell" {
        return None;
    }
    let r = only.byte_range();
    let inner = src.get(r.start + 1..r.end.checked_sub(1)?)?;
    (!inner.trim().is_empty()).then_some(inner)
}

/// The first byte of `src` that is neither blank nor inside a token of the tree, if any.
/// tree-sitter-bash 0.25 drops some text without an error: the lone `-` in `cat - 2>&1`
/// belongs to no node (found by the differential tests), so the command built from the tree
/// would silently lose an argument. Quoted strings and comments count as covered whole,
/// blanks and line continuations as nothing to cover.
fn skipped_text(root: Node<'_>, src: &str) -> Option<usize> {
    let mut covered = vec![false; src.len()];
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        let whole = matches!(node.kind(), "string" | "raw_string" | "comment" | "ansi_c_string");
        if whole || node.child_count() == 0 {
            let range = node.byte_range();
            let end = range.end.min(covered.len());
            covered[range.start.min(end)..end].iter_mut().for_each(|c| *c = true);
            if whole {
                continue;
            }
        }
        let mut cursor = node.walk();
        stack.extend(node.children(&mut cursor));
    }
    let b = src.as_bytes();
    // A `\` ending a line joins it to the next: blank, like the newline itself.
    let continuation = |i: usize| b[i] == b'\\' && matches!(b.get(i + 1), Some(b'\n' | b'\r'));
    (0..b.len())
        .find(|&i| !covered[i] && !matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') && !continuation(i))
}

/// The grammar needs 100-260 us for a pipeline of three or more commands (two: under 10 us),
/// so lines whose top-level `|` are unambiguous are split there and each part is parsed by
/// the grammar on its own. Unambiguous means: outside single quotes there is no `\`, `$`,
/// backquote, `(`, `)`, `{`, `}`, `#` or `<<` (so every unquoted `|` is an operator), and each
/// `|` stands alone (not `||`, `|&` or `>|`). Parts must not start or end with an operator.
/// `None` (or any part failing) means the whole line is parsed at once, as before.
pub(super) fn pipe_segments(line: &str) -> Option<Vec<&str>> {
    let b = line.as_bytes();
    let mut cuts = Vec::new();
    let mut quote: Option<u8> = None;
    for (i, &c) in b.iter().enumerate() {
        match quote {
            Some(b'\'') => {
                if c == b'\'' {
                    quote = None;
                }
                continue;
            }
            Some(_) => {
                match c {
                    b'"' => quote = None,
                    b'\\' | b'$' | b'`' => return None,
                    _ => {}
                }
                continue;
            }
            None => {}
        }
        match c {
            b'\'' | b'"' => quote = Some(c),
            b'\\' | b'$' | b'`' | b'(' | b')' | b'{' | b'}' | b'#' => return None,
            b'<' if b.get(i + 1) == Some(&b'<') => return None,
            b'|' => {
                let prev = i.checked_sub(1).map(|p| b[p]);
                let next = b.get(i + 1).copied();
                if matches!(prev, Some(b'|' | b'>' | b'&')) || matches!(next, Some(b'|' | b'&')) {
                    if prev == Some(b'|') || next == Some(b'|') {
                        continue; // `||`: a list operator, not a pipe.
                    }
                    return None;
                }
                cuts.push(i);
            }
            _ => {}
        }
    }
    if quote.is_some() || cuts.len() < 2 {
        return None;
    }
    let mut parts = Vec::with_capacity(cuts.len() + 1);
    let mut start = 0;
    for cut in cuts {
        parts.push(&line[start..cut]);
        start = cut + 1;
    }
    parts.push(&line[start..]);
    let blank = |c: char| c == ' ' || c == '\t';
    for (i, part) in parts.iter().enumerate() {
        let trimmed = part.trim_matches(blank);
        let first = trimmed.trim_start_matches('\n').chars().next()?;
        let last = trimmed.chars().last()?;
        if (i > 0 && matches!(first, ';' | '&' | '|'))
            || (i + 1 < parts.len() && matches!(last, ';' | '&' | '|' | '\n'))
        {
            return None;
        }
    }
    Some(parts)
}

/// Joins separately parsed pipeline parts: the first pipeline of each part continues the last
/// pipeline of the part before it (`a && b | c || d` is `a && (b | c) || d`).
fn stitch(parts: &[&str]) -> Result<super::ast::Script, ShellRefusal> {
    let mut steps: Vec<Step> = Vec::new();
    for part in parts {
        let script = parse_tree(part)?;
        if steps.is_empty() {
            steps = script.steps;
            continue;
        }
        let mut rest = script.steps.into_iter();
        let (Some(last), Some(first)) = (steps.last_mut(), rest.next()) else {
            return Err(ShellRefusal::new("empty", "an empty part of a pipeline"));
        };
        // An `if` on either side of a `|` is not a pipeline ARIA runs (the whole line then goes
        // to the grammar, which refuses it by name).
        let (Body::Pipeline(last), Body::Pipeline(first)) = (&mut last.body, first.body) else {
            return Err(ShellRefusal::new("if in a pipeline", "an if statement in a pipeline"));
        };
        last.commands.extend(first.commands);
        steps.extend(rest);
    }
    Ok(super::ast::Script { steps })
}

fn mask_non_ascii(text: &str) -> std::borrow::Cow<'_, str> {
    if text.is_ascii() {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            out.extend(std::iter::repeat_n('a', c.len_utf8()));
        }
    }
    std::borrow::Cow::Owned(out)
}

fn parse_error(root: Node<'_>, src: &str) -> ShellRefusal {
    // The first error or missing node, in document order, for the message.
    let mut cursor = root.walk();
    let mut at = None;
    'walk: loop {
        let node = cursor.node();
        if node.is_error() || node.is_missing() {
            at = Some(node);
            break;
        }
        if node.has_error() && cursor.goto_first_child() {
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                continue 'walk;
            }
            if !cursor.goto_parent() {
                break 'walk;
            }
        }
    }
    let near = at
        .map(|n| {
            let start = n.start_byte().saturating_sub(10);
            let end = (n.end_byte() + 10).min(src.len());
            let snippet = (start..=n.start_byte())
                .find(|&s| src.is_char_boundary(s))
                .and_then(|s| {
                    (end..=src.len()).find(|&e| src.is_char_boundary(e)).map(|e| &src[s..e])
                })
                .unwrap_or("");
            format!(" near `{}`", shorten(snippet))
        })
        .unwrap_or_default();
    ShellRefusal::new(
        "syntax error",
        format!(
            "the command line does not parse as bash{near}: check quotes, brackets and that \
             every operator has a command on both sides"
        ),
    )
}

/// The first refused construct anywhere in the tree, in document order.
fn refuse_constructs(root: Node<'_>, src: &str) -> Result<(), ShellRefusal> {
    let mut cursor = root.walk();
    'walk: loop {
        let node = cursor.node();
        if let Some(refusal) = refused(node, src) {
            return Err(refusal);
        }
        if cursor.goto_first_child() {
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                continue 'walk;
            }
            if !cursor.goto_parent() {
                return Ok(());
            }
        }
    }
}

/// What to write instead of `while` / `until`: the loop forms ARIA runs.
const LOOP_INSTEAD: &str = "loops run only over literal words: `for x in a b c; do …; done` (with \
     `if …; then …; fi` inside to decide per item); to poll or retry, run the command as its own \
     step and decide in the next one";

fn refused(node: Node<'_>, src: &str) -> Option<ShellRefusal> {
    let source = src.get(node.byte_range()).unwrap_or("");
    let first = node.child(0).map(|c| c.kind()).unwrap_or("");
    let (construct, instead) = match node.kind() {
        "command_substitution" | "simple_expansion" | "expansion"
            if node.parent().is_some_and(|p| p.kind() == "heredoc_body") =>
        {
            (
                "heredoc with expansions",
                "quote the delimiter (`<<'EOF'`) so the text is taken literally, or write the \
                 values into the text",
            )
        }
        "command_substitution" => (
            "command substitution",
            "run the inner command as its own step and put its output in the next command literally",
        ),
        "process_substitution" => {
            ("process substitution", "write the output to a file first and pass the file")
        }
        "arithmetic_expansion" => {
            ("arithmetic expansion", "compute the number and write it literally")
        }
        "subshell" => (
            "subshell",
            "a subshell is supported only as the whole line (`(cd DIR && cmd)`); otherwise \
             run the commands directly, joined with `&&` or `;`",
        ),
        "compound_statement" if first == "((" => {
            ("arithmetic command", "compute the value and write it literally")
        }
        "compound_statement" => {
            ("command group", "run the commands directly, joined with `&&` or `;`")
        }
        "function_definition" => ("function definition", "run the commands directly"),
        "for_statement" if first == "select" => ("select loop", "run the commands one by one"),
        // `for x in a b c; do …; done` over literal words is unrolled (`for_loop`).
        "for_statement" if first == "for" => return None,
        "for_statement" | "c_style_for_statement" => (
            "for loop",
            "write `for x in a b c; do …; done` over literal words, or run one command per item",
        ),
        "while_statement" if first == "until" => ("until loop", LOOP_INSTEAD),
        "while_statement" => ("while loop", LOOP_INSTEAD),
        // `if …; then …; elif …; else …; fi` becomes a conditional step (`if_statement`).
        "if_statement" | "elif_clause" | "else_clause" => return None,
        "case_statement" => (
            "case statement",
            "write it as `if test VALUE = a; then …; elif test VALUE = b; then …; else …; fi`, \
             or decide in the next step which command to run",
        ),
        "test_command" if first == "[" => return None,
        "test_command" => {
            ("test expression `[[ … ]]`", "use the `test` program (`test -f x && …`)")
        }
        "negated_command" => ("negation `!`", "use `||` to act on failure"),
        "declaration_command" if first != "export" => (
            declaration_kind(first),
            "shell variables do not exist here; pass values with `env NAME=value program`",
        ),
        "variable_assignments" | "variable_assignment"
            if node
                .parent()
                .is_none_or(|p| !matches!(p.kind(), "command" | "declaration_command")) =>
        {
            (
                "variable assignment",
                "shell variables do not exist here; pass values with `env NAME=value program`",
            )
        }
        "&" => ("background job `&`", "run the command in the foreground"),
        _ => return None,
    };
    Some(ShellRefusal::needs_shell(construct, source, instead))
}

/// `export NAME=value NAME …` and `unset NAME …` as simple commands whose words are the
/// keyword and the arguments (`NAME=value` kept as one word); `builtin.rs` judges and runs them.
fn declaration(node: Node<'_>, src: &str) -> Result<SimpleCommand, ShellRefusal> {
    let mut cmd = SimpleCommand { env: Vec::new(), words: Vec::new(), redirects: Vec::new() };
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        match child.kind() {
            "export" | "unset" if !child.is_named() => cmd.words.push(Word::literal(child.kind())),
            "comment" => {}
            "variable_name" => cmd.words.push(Word::literal(text(child, src)?)),
            "variable_assignment" => {
                let a = assignment(child, src)?;
                let mut segments =
                    vec![super::ast::Segment::Text { text: format!("{}=", a.name), quoted: true }];
                segments.extend(a.value.segments().iter().cloned());
                cmd.words.push(Word::from_segments(segments));
            }
            _ if child.is_named() => cmd.words.push(word(child, src)?),
            _ => return Err(unexpected(child, src)),
        }
    }
    if cmd.words.is_empty() {
        return Err(unexpected(node, src));
    }
    Ok(cmd)
}

/// `[ EXPR ]`: the `[` program with the expression's words and `]`. The grammar reads the
/// expression as syntax, so its text is parsed again as the arguments of a command.
fn bracket_test(node: Node<'_>, src: &str) -> Result<SimpleCommand, ShellRefusal> {
    let source = text(node, src)?;
    let inner = source
        .strip_prefix('[')
        .and_then(|s| s.strip_suffix(']'))
        .filter(|s| s.starts_with([' ', '\t']) && s.ends_with([' ', '\t']))
        .ok_or_else(|| {
            ShellRefusal::needs_shell("test expression", source, "write `[ EXPR ]` or `test EXPR`")
        })?;
    let script = parse_tree(&format!("test {inner}"))?;
    let mut commands = script.steps.into_iter().flat_map(|s| match s.body {
        Body::Pipeline(p) => p.commands,
        Body::If(_) => Vec::new(),
    });
    let (Some(mut cmd), None) = (commands.next(), commands.next()) else {
        return Err(ShellRefusal::needs_shell(
            "test expression",
            source,
            "write one expression inside `[ … ]`, or use `test EXPR`",
        ));
    };
    if !cmd.env.is_empty() || !cmd.redirects.is_empty() {
        return Err(ShellRefusal::needs_shell("test expression", source, "use `test EXPR`"));
    }
    cmd.words[0] = Word::literal("[");
    cmd.words.push(Word::literal("]"));
    Ok(cmd)
}

fn declaration_kind(keyword: &str) -> &'static str {
    match keyword {
        "export" => "export",
        "local" => "local",
        "readonly" => "readonly",
        "typeset" => "typeset",
        _ => "declare",
    }
}

pub(super) fn operator(op: &str) -> ShellRefusal {
    let (construct, instead) = match op {
        ";;" | ";&" | ";;&" => (";;", "separate commands with a single `;`"),
        "|&" => ("|&", "write `2>&1 |` to pipe both streams"),
        "&" => ("background job `&`", "run the command in the foreground"),
        _ => ("operator", "join commands with `|`, `&&`, `||` or `;`"),
    };
    ShellRefusal::new(
        if construct == "operator" { "operator" } else { construct },
        format!("`{op}` is not supported: {instead}"),
    )
}

const MAX_DEPTH: usize = MAX_COMMANDS;

/// Appends the steps of one statement (a pipeline, command, list or redirected statement).
pub(super) fn statement(
    node: Node<'_>,
    src: &str,
    run_if: RunIf,
    steps: &mut Vec<Step>,
    depth: usize,
) -> Result<(), ShellRefusal> {
    if depth > MAX_DEPTH {
        return Err(ShellRefusal::new(
            "too many commands",
            format!("the command line nests more than {MAX_DEPTH} operators; split it into steps"),
        ));
    }
    match node.kind() {
        "list" => {
            let mut cursor = node.walk();
            let mut parts = Vec::new();
            let mut ops = Vec::new();
            for child in node.children(&mut cursor) {
                if child.kind() == "comment" {
                    continue;
                }
                if child.is_named() { parts.push(child) } else { ops.push(child.kind()) }
            }
            let ([left, right], [op]) = (parts.as_slice(), ops.as_slice()) else {
                return Err(ShellRefusal::needs_shell(
                    "list",
                    text(node, src)?,
                    "join commands with `&&`, `||` or `;`",
                ));
            };
            let second = match *op {
                "&&" => RunIf::Success,
                "||" => RunIf::Failure,
                other => return Err(operator(other)),
            };
            statement(*left, src, run_if, steps, depth + 1)?;
            statement(*right, src, second, steps, depth + 1)
        }
        "redirected_statement" => {
            let body = node.child_by_field_name("body").ok_or_else(|| {
                ShellRefusal::needs_shell(
                    "redirect without a command",
                    text(node, src).unwrap_or(""),
                    "name a program",
                )
            })?;
            statement(body, src, run_if, steps, depth + 1)?;
            // Bash binds a redirect to the simple command it follows: the last one here.
            let last = match steps.last_mut().map(|s| &mut s.body) {
                Some(Body::Pipeline(p)) => p.commands.last_mut(),
                Some(Body::If(_)) => {
                    return Err(ShellRefusal::needs_shell(
                        "redirect of an if statement",
                        text(node, src)?,
                        "put the redirect on the commands inside the branches (`then cmd > \
                         f; fi`)",
                    ));
                }
                None => None,
            }
            .ok_or_else(|| ShellRefusal::new("redirect", "a redirect needs a command"))?;
            let mut cursor = node.walk();
            for (i, child) in node.children(&mut cursor).enumerate() {
                if node.field_name_for_child(i as u32) == Some("redirect") {
                    match child.kind() {
                        "heredoc_redirect" => heredoc(child, src, last)?,
                        "herestring_redirect" => herestring(child, src, last)?,
                        _ => redirect(child, src, last)?,
                    }
                }
            }
            Ok(())
        }
        "pipeline" => {
            let mut commands = Vec::new();
            let mut run_if = run_if;
            let mut cursor = node.walk();
            for child in node.children(&mut cursor) {
                match child.kind() {
                    "|" | "comment" => {}
                    "command" => commands.push(command(child, src)?),
                    "redirected_statement" => {
                        let mut inner = Vec::new();
                        statement(child, src, run_if, &mut inner, depth + 1)?;
                        // The grammar may wrap a prefix of the pipeline in a redirected
                        // statement: `a > f | b 2>&1 | c` (a pipeline) or `a || b 2>&1 | c` (a
                        // list, which bash reads as `a || (b 2>&1 | c)`). Its last pipeline
                        // continues this one; steps before it stay steps of their own.
                        let Some(last) = inner.pop() else { return Err(unexpected(child, src)) };
                        if !inner.is_empty() {
                            if !commands.is_empty() {
                                return Err(unexpected(child, src));
                            }
                            steps.append(&mut inner);
                            run_if = last.run_if;
                        }
                        let Body::Pipeline(last) = last.body else {
                            return Err(unexpected(child, src));
                        };
                        commands.extend(last.commands);
                    }
                    other if !child.is_named() => return Err(operator(other)),
                    _ => return Err(unexpected(child, src)),
                }
            }
            steps.push(Step::pipeline(run_if, commands));
            Ok(())
        }
        "for_statement" => super::compound::for_loop(node, src, run_if, steps, depth),
        "if_statement" => super::compound::if_statement(node, src, run_if, steps, depth),
        "test_command" => {
            let command = bracket_test(node, src)?;
            steps.push(Step::pipeline(run_if, vec![command]));
            Ok(())
        }
        "declaration_command" | "unset_command" => {
            let command = declaration(node, src)?;
            steps.push(Step::pipeline(run_if, vec![command]));
            Ok(())
        }
        "command" => {
            let command = command(node, src)?;
            steps.push(Step::pipeline(run_if, vec![command]));
            Ok(())
        }
        _ => Err(unexpected(node, src)),
    }
}

pub(super) fn unexpected(node: Node<'_>, src: &str) -> ShellRefusal {
    let kind = node.kind().replace('_', " ");
    ShellRefusal::new(
        "unsupported syntax",
        format!(
            "`{}` ({kind}) is not supported: ARIA runs simple commands, pipelines and `&&`, `||`, \
             `;` lists, never through a shell",
            shorten(src.get(node.byte_range()).unwrap_or(""))
        ),
    )
}

fn command(node: Node<'_>, src: &str) -> Result<SimpleCommand, ShellRefusal> {
    let mut cmd = SimpleCommand { env: Vec::new(), words: Vec::new(), redirects: Vec::new() };
    let mut cursor = node.walk();
    for (i, child) in node.children(&mut cursor).enumerate() {
        match (node.field_name_for_child(i as u32), child.kind()) {
            (_, "variable_assignment") => cmd.env.push(assignment(child, src)?),
            (Some("name"), "command_name") => {
                let inner = child.named_child(0).ok_or_else(|| unexpected(child, src))?;
                cmd.words.push(word(inner, src)?);
            }
            (Some("argument"), _) if child.is_named() => cmd.words.push(word(child, src)?),
            (_, "file_redirect") => redirect(child, src, &mut cmd)?,
            (_, "herestring_redirect") => herestring(child, src, &mut cmd)?,
            (_, "comment") => {}
            (_, "$") => {
                return Err(ShellRefusal::new(
                    "lone $",
                    "a lone `$` is ambiguous here; quote it as '$' if you mean the character",
                ));
            }
            _ => return Err(unexpected(child, src)),
        }
    }
    if cmd.words.is_empty() {
        return Err(ShellRefusal::needs_shell(
            "command without a program",
            text(node, src)?,
            "name the program to run (to create an empty file use `touch`)",
        ));
    }
    Ok(cmd)
}

fn assignment(node: Node<'_>, src: &str) -> Result<Assignment, ShellRefusal> {
    let source = text(node, src)?;
    let name = node.child_by_field_name("name").ok_or_else(|| unexpected(node, src))?;
    if name.kind() != "variable_name" {
        return Err(ShellRefusal::needs_shell(
            "array assignment",
            source,
            "pass plain `NAME=value`",
        ));
    }
    let mut cursor = node.walk();
    if node.children(&mut cursor).any(|c| c.kind() == "+=") {
        return Err(ShellRefusal::needs_shell(
            "`+=` assignment",
            source,
            "write the full value with `=`",
        ));
    }
    let value = match node.child_by_field_name("value") {
        Some(v) => word(v, src)?,
        None => Word::literal(""),
    };
    Ok(Assignment { name: text(name, src)?.to_owned(), value })
}
