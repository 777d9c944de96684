//! Compound commands ARIA runs without a shell: `for NAME in WORD …; do …; done` over literal
//! words (unrolled into plain steps) and `if …; then …; elif …; then …; else …; fi` (a
//! [`Conditional`] step). Every part is parsed by [`statement`] like a line of its own, so each
//! command in a condition or branch is classified on its own and the tier of the whole is the
//! worst of all its parts.

use tree_sitter::Node;

use super::ast::{
    Arm, Body, Conditional, RedirectTarget, RunIf, Script, Segment, ShellRefusal, SimpleCommand,
    Step, Word,
};
use super::parse::{operator, statement, unexpected};
use super::words::{text, word};

/// Most commands a `for` loop may unroll to.
const MAX_UNROLLED: usize = 64;

/// `for NAME in WORD …; do BODY; done` over literal words: the body once per word, with
/// `$NAME` / `${NAME}` replaced by the word (as quoted text: no further expansion). Only where
/// the loop runs unconditionally (first, or after `;` or a newline), so the steps it becomes
/// run exactly when bash would run them.
pub(super) fn for_loop(
    node: Node<'_>,
    src: &str,
    run_if: RunIf,
    steps: &mut Vec<Step>,
    depth: usize,
) -> Result<(), ShellRefusal> {
    let source = text(node, src)?;
    let refuse = |why: &str| ShellRefusal::needs_shell("for loop", source, why);
    if run_if != RunIf::Always {
        return Err(refuse(
            "a loop after `&&` or `||` is not supported; put it on its own line or after `;`",
        ));
    }
    let mut name = None;
    let mut items = Vec::new();
    let mut body = None;
    let mut cursor = node.walk();
    for (i, child) in node.children(&mut cursor).enumerate() {
        match node.field_name_for_child(i as u32) {
            Some("variable") => name = Some(text(child, src)?.to_owned()),
            Some("value") => {
                let w = word(child, src)?;
                let Some(item) = w.literal_text() else {
                    return Err(refuse(
                        "loop over literal words only (`for f in a.txt b.txt`): list the names \
                         instead of a glob or variable",
                    ));
                };
                items.push(item.to_owned());
            }
            Some("body") if child.kind() == "do_group" => body = Some(child),
            Some(_) => return Err(unexpected(child, src)),
            None => {}
        }
    }
    let (Some(name), Some(body)) = (name, body) else {
        return Err(refuse("write `for x in a b c; do …; done`"));
    };
    if items.is_empty() {
        return Err(refuse("list the words to loop over after `in`"));
    }
    let inner = Script { steps: statements(body, src, depth, &["do", "done"])? };
    let per_item = inner.commands().count();
    if per_item.saturating_mul(items.len()) > MAX_UNROLLED {
        return Err(refuse(&format!(
            "the loop would run more than {MAX_UNROLLED} commands; split it into several lines"
        )));
    }
    for item in &items {
        let mut body = inner.clone();
        bind_script(&mut body, &name, item);
        steps.extend(body.steps);
    }
    Ok(())
}

/// Replaces `$name` in every command of `script`, inside `if` parts too.
fn bind_script(script: &mut Script, name: &str, value: &str) {
    for step in &mut script.steps {
        match &mut step.body {
            Body::Pipeline(p) => p.commands.iter_mut().for_each(|cmd| bind(cmd, name, value)),
            Body::If(c) => c.parts_mut().for_each(|s| bind_script(s, name, value)),
        }
    }
}

/// Replaces `$name` in every word of `cmd` with `value` (quoted text).
fn bind(cmd: &mut SimpleCommand, name: &str, value: &str) {
    let fix = |w: &Word| -> Word {
        let segments = w
            .segments()
            .iter()
            .map(|s| match s {
                Segment::Var { name: n, .. } if n == name => {
                    Segment::Text { text: value.to_owned(), quoted: true }
                }
                other => other.clone(),
            })
            .collect();
        Word::from_segments(segments)
    };
    cmd.words = cmd.words.iter().map(fix).collect();
    for a in &mut cmd.env {
        a.value = fix(&a.value);
    }
    for r in &mut cmd.redirects {
        if let RedirectTarget::File { path, .. } = &mut r.target {
            *path = fix(path);
        }
    }
}

/// The statements among `node`'s children (skipping `keywords`, `;`, newlines and comments),
/// each an unconditional step of its own, as bash runs a list.
fn statements(
    node: Node<'_>,
    src: &str,
    depth: usize,
    keywords: &[&str],
) -> Result<Vec<Step>, ShellRefusal> {
    let mut steps = Vec::new();
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        match child.kind() {
            ";" | "\n" | "comment" => {}
            k if keywords.contains(&k) && !child.is_named() => {}
            _ if child.is_named() => statement(child, src, RunIf::Always, &mut steps, depth + 1)?,
            other => return Err(operator(other)),
        }
    }
    Ok(steps)
}

/// `if COND; then A; elif COND; then B; else C; fi` (on one line or several): one step whose
/// parts are lists of their own. Bash runs the conditions in order until one exits 0 and then
/// that branch; the `if` exits with the branch's status, or 0 when no branch ran.
pub(super) fn if_statement(
    node: Node<'_>,
    src: &str,
    run_if: RunIf,
    steps: &mut Vec<Step>,
    depth: usize,
) -> Result<(), ShellRefusal> {
    let source = text(node, src)?;
    let refuse = |why: &str| ShellRefusal::needs_shell("if statement", source, why);
    let mut built = IfBuilder {
        arms: vec![Arm { condition: Script::default(), then: Script::default() }],
        otherwise: None,
        in_branch: false,
    };
    built.clause(node, src, depth)?;
    let IfBuilder { arms, otherwise, .. } = built;
    if arms.iter().any(|a| a.condition.steps.is_empty()) {
        return Err(refuse("write a command after `if` and `elif`: `if test -f x; then …; fi`"));
    }
    if arms.iter().any(|a| a.then.steps.is_empty())
        || otherwise.as_ref().is_some_and(|o| o.steps.is_empty())
    {
        return Err(refuse(
            "every `then` and `else` needs a command (use `true` for one that does nothing)",
        ));
    }
    steps.push(Step { run_if, body: Body::If(Box::new(Conditional { arms, otherwise })) });
    Ok(())
}

/// The parts of an `if` as its keywords are met: statements go to the open arm's condition
/// until `then`, to its branch until `elif`/`else`, and after `else` to the `else` branch.
struct IfBuilder {
    arms: Vec<Arm>,
    otherwise: Option<Script>,
    in_branch: bool,
}

impl IfBuilder {
    fn clause(&mut self, node: Node<'_>, src: &str, depth: usize) -> Result<(), ShellRefusal> {
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            match child.kind() {
                "elif_clause" | "else_clause" => self.clause(child, src, depth)?,
                "comment" => {}
                _ if child.is_named() => {
                    let target = match (&mut self.otherwise, self.arms.last_mut()) {
                        (Some(o), _) => o,
                        (None, Some(arm)) if self.in_branch => &mut arm.then,
                        (None, Some(arm)) => &mut arm.condition,
                        (None, None) => return Err(unexpected(child, src)),
                    };
                    statement(child, src, RunIf::Always, &mut target.steps, depth + 1)?;
                }
                "if" | "fi" | ";" | "\n" => {}
                "then" => self.in_branch = true,
                "elif" => {
                    self.arms.push(Arm { condition: Script::default(), then: Script::default() });
                    self.in_branch = false;
                }
                "else" => self.otherwise = Some(Script::default()),
                other => return Err(operator(other)),
            }
        }
        Ok(())
    }
}
