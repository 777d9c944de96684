//! Pre-approval for scripts and unattended runs: `--allow PATTERN` (repeatable),
//! `[policy] allow = [...]` and `--yes`.
//!
//! A pattern is a tool name (`python_run`) or a command prefix (`cargo test`), matched against
//! the argv of **every** simple command of a `shell_execute` line, so `cargo test; rm -rf x`
//! does not match `cargo test`. `--yes` approves what this run would ask about, for this run
//! only. Neither widens the policy: blocked calls and `read_only` refusals are decided before
//! anything is asked, and nothing here applies once a tool result was flagged as a possible
//! prompt injection (the run is tainted: every such call asks a person again).

use aria_api::Tier;
use serde_json::Value;

/// What was approved in advance.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Preapproval {
    patterns: Vec<Vec<String>>,
    yes: bool,
}

impl Preapproval {
    /// `patterns` from `--allow` and `[policy] allow`; `yes` from `--yes`. An empty pattern is
    /// an error naming it.
    pub fn new(patterns: &[String], yes: bool) -> Result<Preapproval, String> {
        let mut parsed = Vec::new();
        for p in patterns {
            let words: Vec<String> = p.split_whitespace().map(str::to_owned).collect();
            if words.is_empty() {
                return Err(format!(
                    "the allow pattern {p:?} is empty; give a tool name (python_run) or a command prefix (\"cargo test\")"
                ));
            }
            parsed.push(words);
        }
        Ok(Preapproval { patterns: parsed, yes })
    }

    /// Whether anything is pre-approved at all.
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty() && !self.yes
    }

    /// Whether `--yes` was given.
    pub fn yes(&self) -> bool {
        self.yes
    }

    /// The rule that approves this call, if one does (`--yes`, or the matching pattern).
    pub fn approves(&self, tool: &str, args: &Value, tier: Tier) -> Option<String> {
        if tier == Tier::Blocked {
            return None;
        }
        if let Some(p) = self.patterns.iter().find(|p| p.len() == 1 && p[0] == tool) {
            return Some(format!("--allow {}", p[0]));
        }
        if tool == "shell_execute"
            && let Some(rule) =
                args.get("command").and_then(Value::as_str).and_then(|c| self.command(c))
        {
            return Some(rule);
        }
        self.yes.then(|| "--yes".to_owned())
    }

    /// The pattern that `argv` starts with, if one does.
    fn covering(&self, argv: &[&str]) -> Option<&Vec<String>> {
        self.patterns
            .iter()
            .find(|p| p.len() <= argv.len() && p.iter().zip(argv).all(|(a, b)| a == b))
    }

    /// The pattern(s) that cover every simple command of `line`.
    fn command(&self, line: &str) -> Option<String> {
        let script = aria_tools::shell::parse(line).ok()?;
        let mut used = Vec::new();
        let mut any = false;
        for cmd in script.commands() {
            any = true;
            let argv: Vec<&str> = cmd.argv().collect();
            let p = self.covering(&argv)?;
            let rule = format!("--allow {:?}", p.join(" "));
            if !used.contains(&rule) {
                used.push(rule);
            }
        }
        any.then(|| used.join(", "))
    }
}

impl Preapproval {
    /// How the user could pre-approve a call that was denied for want of someone to ask: one
    /// `--allow` per simple command of a shell line that no pattern covers yet (its program and
    /// first argument), else the tool's name.
    pub fn suggestion(&self, tool: &str, args: &Value) -> String {
        let mut missing: Vec<String> = Vec::new();
        if tool == "shell_execute"
            && let Some(script) = args
                .get("command")
                .and_then(Value::as_str)
                .and_then(|l| aria_tools::shell::parse(l).ok())
        {
            for cmd in script.commands() {
                let argv: Vec<&str> = cmd.argv().collect();
                let covered = self.covering(&argv).is_some();
                let pattern = format!(
                    "--allow {:?}",
                    argv.iter().take(2).copied().collect::<Vec<_>>().join(" ")
                );
                if !covered && !argv.is_empty() && !missing.contains(&pattern) {
                    missing.push(pattern);
                }
            }
        }
        if missing.is_empty() {
            missing.push(format!("--allow {tool:?}"));
        }
        format!(
            "to allow it, run again with {} (or add it to [policy] allow), or --yes to approve this run's actions",
            missing.join(" ")
        )
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn p(patterns: &[&str], yes: bool) -> Preapproval {
        Preapproval::new(&patterns.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>(), yes)
            .unwrap()
    }

    #[test]
    fn the_suggestion_names_only_what_no_pattern_covers() {
        let allow = p(&["make test"], false);
        let hint = allow.suggestion("shell_execute", &json!({"command": "make test; rm -rf x"}));
        assert!(hint.contains("--allow \"rm -rf\"") && !hint.contains("make test"), "{hint}");
        let none = p(&[], false);
        let hint = none.suggestion("shell_execute", &json!({"command": "cargo test && make"}));
        assert!(hint.contains("--allow \"cargo test\" --allow \"make\""), "{hint}");
        assert!(none.suggestion("python_run", &json!({})).contains("--allow \"python_run\""));
    }

    #[test]
    fn a_command_prefix_must_cover_every_simple_command() {
        let allow = p(&["cargo test", "make"], false);
        let shell =
            |c: &str| allow.approves("shell_execute", &json!({"command": c}), Tier::Irreversible);
        assert!(shell("cargo test").is_some());
        assert!(shell("cargo test --workspace && make lint").is_some());
        assert_eq!(shell("cargo test; rm -rf x"), None);
        assert_eq!(shell("cargo build"), None);
        assert_eq!(shell("cargo"), None, "a prefix longer than the command does not match");
        assert_eq!(shell("rm -rf x | make"), None);
    }

    #[test]
    fn tool_names_yes_and_what_is_never_approved() {
        let allow = p(&["python_run"], false);
        assert!(allow.approves("python_run", &json!({"code": "1"}), Tier::Irreversible).is_some());
        assert_eq!(
            allow.approves("shell_execute", &json!({"command": "ls"}), Tier::Irreversible),
            None
        );
        let yes = p(&[], true);
        assert_eq!(
            yes.approves("python_run", &json!({}), Tier::Irreversible).as_deref(),
            Some("--yes")
        );
        assert_eq!(yes.approves("x", &json!({}), Tier::Blocked), None, "never widens blocked");
        assert!(Preapproval::new(&["  ".into()], false).is_err());
        assert!(p(&[], false).is_empty());
    }

    #[test]
    fn a_denial_suggests_the_narrowest_pattern() {
        let none = p(&[], false);
        let s = none.suggestion("shell_execute", &json!({"command": "make test -j2; ls"}));
        assert!(s.contains("--allow \"make test\" --allow \"ls\""), "{s}");
    }
}
