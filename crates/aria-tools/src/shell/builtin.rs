//! Shell builtins ARIA evaluates itself, because they have no program or only make sense for
//! the command line they are in: `cd`, `export`, `unset`, `command -v` and `type`.
//!
//! Each is judged here (the classifier asks [`judge`] before the program table) and run
//! in-process by `shell_execute` ([`Builtin::parse`]): `cd` changes the directory of the
//! commands after it (the path guard decides that it stays inside a root), `export`/`unset`
//! change the environment of the commands after it on the same line. Setting a variable that
//! makes programs load or run other code (`LD_*`, `PATH`, `GIT_*`, `PYTHON*`, `NODE_OPTIONS`,
//! `BASH_ENV`, `PAGER`, `EDITOR`, ...) is `Irreversible`.

use aria_api::Tier;

use super::ast::{SimpleCommand, Word};
use super::env_rules::env_rule;
use super::judge::Verdict;

/// A builtin with its arguments checked, ready to evaluate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Builtin {
    /// `cd DIR`.
    Cd(String),
    /// `export NAME=value …` (`None`: `export NAME`, which keeps the current value).
    Export(Vec<(String, Option<String>)>),
    /// `unset NAME …`.
    Unset(Vec<String>),
    /// `command -v NAME …`, `type NAME …`: where each name is found (`Some(path)`), or that it
    /// is a builtin. `verbose` prints `NAME is PATH` (`type`, `command -V`).
    Lookup { names: Vec<String>, verbose: bool },
}

/// Variable name prefixes that configure how programs load or run code.
const HOOK_PREFIXES: &[&str] =
    &["LD_", "DYLD_", "GIT_", "PYTHON", "NODE_", "PERL", "RUBY", "LESS", "CARGO_", "RUSTC", "npm_"];

/// Names `command -v` and `type` report as shell builtins.
pub const BUILTINS: &[&str] = &["cd", "export", "unset", "command", "type", "true", "false"];

impl Builtin {
    /// The builtin `cmd` calls, or `None` when its program is not one of these builtins.
    /// `Err` says why the form is refused and what to write instead.
    pub fn parse(cmd: &SimpleCommand) -> Option<Result<Builtin, String>> {
        let program = cmd.program().literal_text()?;
        let args: Vec<&Word> = cmd.words[1..].iter().collect();
        let lit = |w: &Word| w.literal_text().map(str::to_owned);
        let parsed = match program {
            "cd" => cd(&args),
            "export" => export(&args),
            "unset" => {
                let names: Vec<&Word> = args.into_iter().filter(|w| w.text() != "-v").collect();
                names
                    .iter()
                    .map(|w| lit(w).filter(|n| valid_name(n)))
                    .collect::<Option<Vec<_>>>()
                    .filter(|n| !n.is_empty())
                    .map(Builtin::Unset)
                    .ok_or_else(|| "write `unset NAME …` with plain variable names".to_owned())
            }
            "command" | "type" => lookup(program, &args),
            _ => return None,
        };
        let parsed = parsed.and_then(|b| {
            if !cmd.env.is_empty() || !cmd.redirects.is_empty() {
                Err(format!(
                    "`{program}` takes no `NAME=value` prefix or redirect here; write it on its own"
                ))
            } else {
                Ok(b)
            }
        });
        Some(parsed)
    }
}

fn cd(args: &[&Word]) -> Result<Builtin, String> {
    match args {
        [dir] if dir.literal_text().is_some_and(|d| d != "-" && !d.is_empty()) => {
            Ok(Builtin::Cd(dir.text().to_owned()))
        }
        _ => Err("write `cd DIR` with one literal directory inside the roots (no `cd`, `cd -`, \
                  `cd ~` or `cd $VAR`)"
            .to_owned()),
    }
}

fn export(args: &[&Word]) -> Result<Builtin, String> {
    let usage = "write `export NAME=value …` with literal values (to list variables use `env`)";
    if args.is_empty() {
        return Err(usage.to_owned());
    }
    let mut vars = Vec::new();
    for w in args {
        let text = w.text();
        let (name, value) = match text.split_once('=') {
            Some((n, v)) => (n, Some(v.to_owned())),
            None => (text, None),
        };
        if !valid_name(name) || (value.is_some() && w.needs_expansion()) {
            return Err(usage.to_owned());
        }
        vars.push((name.to_owned(), value));
    }
    Ok(Builtin::Export(vars))
}

fn lookup(program: &str, args: &[&Word]) -> Result<Builtin, String> {
    let mut verbose = program == "type";
    let mut names = Vec::new();
    let mut asked = program == "type";
    for w in args {
        match (program, w.literal_text()) {
            ("command", Some("-v")) => asked = true,
            ("command", Some("-V")) => (asked, verbose) = (true, true),
            ("type", Some("-t" | "-p" | "-P" | "-a")) => {}
            (_, Some(n)) if !n.starts_with('-') => names.push(n.to_owned()),
            _ => return Err(lookup_usage(program)),
        }
    }
    if !asked || names.is_empty() {
        return Err(lookup_usage(program));
    }
    Ok(Builtin::Lookup { names, verbose })
}

fn lookup_usage(program: &str) -> String {
    if program == "command" {
        "`command` is supported only as `command -v NAME` (to look a program up); to run a \
         program write it directly"
            .to_owned()
    } else {
        "write `type NAME` (or `command -v NAME`) with literal names".to_owned()
    }
}

fn valid_name(n: &str) -> bool {
    n.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The tier of setting `name` to `value` for the commands after it on the line.
fn export_tier(name: &str, value: &str) -> Option<(Tier, String)> {
    if let Some((tier, why)) = env_rule(name, value) {
        return Some((tier.max(Tier::Irreversible), why.to_owned()));
    }
    HOOK_PREFIXES
        .iter()
        .any(|p| name.starts_with(p))
        .then(|| (Tier::Irreversible, "configures how programs load or run other code".to_owned()))
}

/// The verdict on a builtin command, or `None` when `cmd` is not one of these builtins.
pub(crate) fn judge(cmd: &SimpleCommand) -> Option<Verdict> {
    let builtin = match Builtin::parse(cmd)? {
        Ok(b) => b,
        Err(why) => return Some(Verdict::new(Tier::Blocked, why)),
    };
    Some(match builtin {
        Builtin::Cd(dir) => Verdict::new(
            Tier::Read,
            format!("cd {dir} changes the working directory of the commands after it"),
        ),
        Builtin::Export(vars) => {
            let mut v = Verdict::new(
                Tier::Read,
                "export sets variables for the commands after it on this line".to_owned(),
            );
            for (name, value) in &vars {
                if let Some((tier, why)) = export_tier(name, value.as_deref().unwrap_or("")) {
                    v.raise(tier, || format!("export {name}=…: {why}"));
                }
            }
            v
        }
        Builtin::Unset(_) => {
            Verdict::new(Tier::Read, "unset removes variables for the commands after it")
        }
        Builtin::Lookup { .. } => {
            Verdict::new(Tier::Read, "looks up where a program is; runs nothing")
        }
    })
}
