//! One tool per command profile (`lint_project {path, target?}`, `build_project {path}`,
//! `run_tests {path, filter?, target?}`, `ripgrep_search {path, pattern, type?, glob?}`, and
//! any `[profiles.NAME]` from the configuration). See [`crate::profiles`].

use std::sync::Arc;

use aria_api::{Tier, Tool, ToolContext, ToolError, ToolFuture, ToolOutput, ToolSpec};
use serde_json::{Map, Value, json};

use crate::profiles::{
    BUILD_PROJECT, Chosen, LINT_PROJECT, Profiles, RIPGREP_SEARCH, RUN_TESTS, default_tier,
    run_profile,
};
use crate::tools::{blocking, roots_sentence};

/// Runs one profile. Tier: the profile's (see [`crate::profiles::default_tier`]).
#[derive(Debug)]
pub struct RunProfile {
    profiles: Arc<Profiles>,
    name: String,
    tier: Tier,
    spec: ToolSpec,
}

impl RunProfile {
    pub fn new(profiles: Arc<Profiles>, name: String) -> Self {
        let (description, properties, required, tier) = describe(&profiles, &name);
        let mut props = Map::new();
        props.insert(
            "path".into(),
            json!({"type": "string", "description": "The project directory (or a file in it) to run in."}),
        );
        props.extend(properties);
        let mut req = vec![Value::from("path")];
        req.extend(required.into_iter().map(Value::from));
        let spec = ToolSpec {
            name: name.clone(),
            description: format!(
                "{description} Runs in the sandbox without network, at most 5 profile runs per \
                 request; paths are inside {}.",
                roots_sentence(profiles.guard())
            ),
            parameters: json!({
                "type": "object",
                "properties": props,
                "required": req,
                "additionalProperties": false
            }),
        };
        RunProfile { profiles, name, tier, spec }
    }
}

type Described = (String, Map<String, Value>, Vec<String>, Tier);

fn string_prop(description: &str) -> Value {
    json!({"type": "string", "description": description})
}

/// The description, extra properties, required names and tier of profile `name`.
fn describe(profiles: &Profiles, name: &str) -> Described {
    if let Some(spec) = profiles.configured(name) {
        let mut props = Map::new();
        let mut required = Vec::new();
        for rule in &spec.arguments {
            props.insert(rule.name.clone(), string_prop(&rule.description));
            if rule.required {
                required.push(rule.name.clone());
            }
        }
        let line = spec.command_line(&Default::default());
        return (format!("{} Runs `{line}`.", spec.description), props, required, spec.tier);
    }
    let target = "A file or directory to check, relative to the project (default: all of it).";
    let (text, props, required): (&str, Vec<(&str, &str)>, Vec<&str>) = match name {
        LINT_PROJECT => (
            "Run the project's linter, detected from its files (cargo clippy, npm run lint, ruff check, make lint). Returns the lint output and exit status.",
            vec![("target", target)],
            vec![],
        ),
        BUILD_PROJECT => (
            "Build the project, detected from its files (cargo build, npm run build, make). Returns the build output and exit status.",
            vec![],
            vec![],
        ),
        RUN_TESTS => (
            "Run the project's tests, detected from its files (cargo test, npm test, pytest, make test). Returns the test output and exit status.",
            vec![
                ("filter", "cargo only: run tests whose name contains this."),
                ("target", "pytest only: a test file or directory relative to the project."),
            ],
            vec![],
        ),
        RIPGREP_SEARCH => (
            "Search file contents with ripgrep (rg): matching lines with file names and line numbers; .gitignore is honoured and secrets files are skipped.",
            vec![
                ("pattern", "The regular expression to search for."),
                ("type", "Only files of this ripgrep type, e.g. rust, js, py."),
                ("glob", "Only files matching this glob, e.g. *.toml or !tests/**."),
            ],
            vec!["pattern"],
        ),
        _ => ("Run a command profile.", vec![], vec![]),
    };
    let props = props.into_iter().map(|(k, d)| (k.to_owned(), string_prop(d))).collect();
    (text.to_owned(), props, required.into_iter().map(str::to_owned).collect(), default_tier(name))
}

impl Tool for RunProfile {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn min_tier(&self) -> Tier {
        self.tier
    }

    fn tier(&self, _args: &Value) -> Tier {
        self.tier
    }

    /// The profile's own timeout (configured, else the built-in default: 300 s for builds,
    /// 600 s for tests), which the sandbox enforces; the loop must not cut it at 30 s.
    fn timeout(&self) -> Option<std::time::Duration> {
        Some(
            self.profiles
                .configured(&self.name)
                .map_or_else(|| crate::profiles::default_timeout(&self.name), |spec| spec.timeout),
        )
    }

    /// Every profile but the built-in `ripgrep_search` runs what the project's files define
    /// (a configured profile may run anything, so it counts too).
    fn runs_project_definitions(&self) -> bool {
        self.name != RIPGREP_SEARCH || self.profiles.configured(RIPGREP_SEARCH).is_some()
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let Some(map) = args.as_object().cloned() else {
                return Err(ToolError::failed(format!(
                    "{}: the arguments are not a JSON object",
                    self.name
                )));
            };
            let Some(path) = map.get("path").and_then(Value::as_str).map(str::to_owned) else {
                return Err(ToolError::failed(format!(
                    "{}: the argument \"path\" (the project directory) is missing",
                    self.name
                )));
            };
            let profiles = Arc::clone(&self.profiles);
            let name = self.name.clone();
            let session = ctx.session_id.clone();
            let dry_run = ctx.dry_run;
            blocking(&self.name.clone(), move || {
                let chosen = profiles.choose(&name, &path)?;
                let values = crate::profiles::check_values(
                    profiles.guard(),
                    &chosen.spec,
                    &map,
                    &chosen.cwd,
                )?;
                if dry_run {
                    return Ok(dry_run_output(&chosen, &values));
                }
                profiles.budget().take(&session).map_err(ToolError::refused)?;
                let run = run_profile(&chosen.spec, &chosen.cwd, &values, profiles.guard())?;
                let details = json!({
                    "profile": run.profile,
                    "command": run.command,
                    "cwd": run.cwd.display().to_string(),
                    "detected": chosen.detected.map(|k| k.as_str()),
                    "exit_code": run.exit_code,
                    "timed_out": run.timed_out,
                    "passed": run.passed(),
                    "network": chosen.spec.network,
                    "runs_used": profiles.budget().used(&session),
                });
                Ok(ToolOutput::text(run.render()).with_details(details))
            })
            .await
        })
    }
}

fn dry_run_output(
    chosen: &Chosen,
    values: &std::collections::BTreeMap<String, String>,
) -> ToolOutput {
    let line = chosen.spec.command_line(values);
    let text = format!(
        "dry run: would run `{line}` in {} (timeout {} s, network {}); nothing was run",
        chosen.cwd.display(),
        chosen.spec.timeout.as_secs(),
        if chosen.spec.network { "on" } else { "off" }
    );
    ToolOutput::text(text)
        .with_details(json!({"profile": chosen.spec.name, "command": line, "dry_run": true}))
}
