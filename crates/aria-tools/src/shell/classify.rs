//! Command-line level classification: every simple command and redirect is judged; the tier of
//! the line is the highest, and its reason is the first part that reached it.

use aria_api::Tier;
use serde::Serialize;

use super::ast::{Assignment, RedirectMode, RedirectTarget, Script, ShellRefusal, Word, shorten};
use super::judge::{Ctx, Verdict, judge_argv, system_area};
use super::parse::parse;

/// The verdict on one command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classification {
    /// The command line as given.
    pub input: String,
    pub tier: Tier,
    /// Why, naming the program, argument or construct that decided the tier.
    pub reason: String,
    /// Every simple command, in order (empty when the line was refused).
    pub commands: Vec<CommandReport>,
    /// Every file redirect, in order, for the caller to check with the path guard.
    pub redirects: Vec<RedirectReport>,
    /// Paths that commands write (`touch a`, `cp x dest`, `dd of=...`), as written, for the
    /// caller to check with the path guard.
    pub writes: Vec<String>,
    /// Set when the line was not parsed into commands at all (tier `Blocked`).
    pub refusal: Option<ShellRefusal>,
}

impl Classification {
    /// The tier as the CLI prints it: `read`, `recoverable-write`, `irreversible`, `blocked`.
    pub fn verdict(&self) -> &'static str {
        self.tier.as_str()
    }

    /// `{input, verdict, reason}` for `aria check command` (one JSON line per input).
    pub fn report(&self) -> CheckReport {
        CheckReport {
            input: self.input.clone(),
            verdict: self.verdict(),
            reason: self.reason.clone(),
        }
    }
}

/// What `aria check command` prints for one input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckReport {
    pub input: String,
    pub verdict: &'static str,
    pub reason: String,
}

/// One simple command and its own verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandReport {
    pub env: Vec<Assignment>,
    pub words: Vec<Word>,
    pub tier: Tier,
    pub reason: String,
}

impl CommandReport {
    /// The program and arguments after quote removal.
    pub fn argv(&self) -> impl Iterator<Item = &str> {
        self.words.iter().map(|w| w.text())
    }
}

/// A file redirect: which descriptor, how it is opened, and the target as written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RedirectReport {
    pub fd: u8,
    pub mode: RedirectMode,
    pub target: String,
}

/// Classifies one command line. Never panics; anything ARIA will not run is `Blocked` with the
/// refusal's explanation as the reason.
pub fn classify(command_line: &str) -> Classification {
    match parse(command_line) {
        Ok(script) => {
            let judged = judge_script(&script, 0);
            Classification {
                input: command_line.to_owned(),
                tier: judged.verdict.tier,
                reason: judged.verdict.reason,
                commands: judged.commands,
                redirects: judged.redirects,
                writes: judged.verdict.writes,
                refusal: None,
            }
        }
        // `$(…)`: judged by running nothing; see `subst.rs`.
        Err(refusal) if refusal.construct == "command substitution" => {
            super::subst::classify_substituted(command_line)
                .unwrap_or_else(|| Classification::refused(command_line, refusal))
        }
        Err(refusal) => Classification::refused(command_line, refusal),
    }
}

impl Classification {
    /// A line ARIA will not run (tier `Blocked`), with the refusal as the reason.
    pub(crate) fn refused(command_line: &str, refusal: ShellRefusal) -> Classification {
        Classification {
            input: command_line.to_owned(),
            tier: Tier::Blocked,
            reason: refusal.message.clone(),
            commands: Vec::new(),
            redirects: Vec::new(),
            writes: Vec::new(),
            refusal: Some(refusal),
        }
    }
}

/// Judges a script given as text inside another command (`sh -c '…'`, `watch '…'`).
pub(crate) fn judge_text(text: &str, ctx: Ctx) -> Result<Verdict, ShellRefusal> {
    let script = parse(text)?;
    Ok(judge_script(&script, ctx.depth).verdict)
}

struct Judged {
    verdict: Verdict,
    commands: Vec<CommandReport>,
    redirects: Vec<RedirectReport>,
}

fn judge_script(script: &Script, depth: u8) -> Judged {
    let mut parts: Vec<Verdict> = Vec::new();
    let mut commands = Vec::new();
    let mut redirects = Vec::new();
    // Conditions and branches of an `if` too: every part is judged, whether it would run or not.
    for at in script.pipelines() {
        for (index, cmd) in at.pipeline.commands.iter().enumerate() {
            let stdin_from_file = cmd.redirects.iter().any(|r| r.fd == 0);
            let ctx = Ctx { piped: index > 0 && !stdin_from_file, depth };
            // `cd`, `export`, `unset`, `command -v`, `type`: see `builtin.rs`.
            let mut v =
                super::builtin::judge(cmd).unwrap_or_else(|| judge_argv(&cmd.env, &cmd.words, ctx));
            for r in &cmd.redirects {
                let RedirectTarget::File { mode, path } = &r.target else { continue };
                redirects.push(RedirectReport {
                    fd: r.fd,
                    mode: *mode,
                    target: path.text().to_owned(),
                });
                if mode.writes() {
                    judge_redirect(&mut v, *mode, path);
                }
            }
            commands.push(CommandReport {
                env: cmd.env.clone(),
                words: cmd.words.clone(),
                tier: v.tier,
                reason: v.reason.clone(),
            });
            parts.push(v);
        }
    }
    let top = parts.iter().map(|p| p.tier).max().unwrap_or(Tier::Blocked);
    let reason = if top == Tier::Read && parts.len() > 1 {
        let reasons: Vec<&str> = parts.iter().map(|p| p.reason.as_str()).collect();
        format!("every command only reads: {}", reasons.join("; "))
    } else {
        parts
            .iter()
            .find(|p| p.tier == top)
            .map(|p| p.reason.clone())
            .unwrap_or_else(|| "nothing to run".to_owned())
    };
    let writes = parts.into_iter().flat_map(|p| p.writes).collect();
    Judged { verdict: Verdict { tier: top, reason, writes }, commands, redirects }
}

fn judge_redirect(v: &mut Verdict, mode: RedirectMode, path: &Word) {
    let op = mode.operator();
    let t = path.text();
    if let Some(area) = system_area(t) {
        v.raise(Tier::Blocked, || {
            format!("{op} {t} writes {area}: a device or system location ARIA never changes")
        });
    } else if path.needs_expansion() {
        v.raise(Tier::Irreversible, || {
            format!("{op} {}: the target depends on an expansion ARIA cannot see", shorten(t))
        });
    } else if system_area(t).is_none() && !is_harmless_device(t) {
        v.raise(Tier::RecoverableWrite, || format!("{op} {t} writes a file"));
    }
}

fn is_harmless_device(t: &str) -> bool {
    matches!(t, "/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/tty")
}
