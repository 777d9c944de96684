//! Command profiles: the only way the model runs a project's
//! linter, build, tests or ripgrep. No arbitrary programs: a profile names one executable, an
//! argv template whose only variable parts are named arguments checked against anchored
//! patterns, the roots it may run in, a timeout, whether it gets network, and an output cap.
//!
//! Four profiles are built in — `lint_project`, `build_project`, `run_tests`,
//! `ripgrep_search` — and are *detected* from the project files nearest the `path` the model
//! gives (Cargo.toml → cargo, package.json → npm scripts, pyproject.toml/pytest.ini → pytest
//! and ruff, Makefile → make; see `detect.rs`). A `[profiles.NAME]` table in the configuration
//! replaces the built-in of that name or adds a new one. Every run goes through `aria-sandbox`
//! (argv only, allowlisted environment, rlimits, process-group timeout, Landlock, network off
//! unless the profile grants it), and at most [`MAX_PROFILE_RUNS`] runs happen per agent run,
//! counted across all profiles by a shared [`ProfileBudget`].
//!
//! The one design decision to know: **a model-supplied value is one argv element, never
//! text spliced into a command line**. A template element is either fixed text, `{name}` (the
//! whole element is the value, which may not start with `-`) or `prefix{name}` such as
//! `--type={name}` (dropped entirely when the optional argument is absent).

mod definitions;
mod detect;
#[cfg(test)]
mod detect_tests;
mod run;
mod set;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use aria_api::Tier;
pub use aria_sandbox::NetworkGrant;
use regex::Regex;
use serde::{Deserialize, Serialize};

pub use definitions::defines_commands;
pub use detect::{ProjectKind, detect, detect_in, find_program};
pub(crate) use run::check_values;
pub use run::{ProfileRun, run_profile};
pub use set::{Chosen, Profiles};

/// The built-in profile names (public contracts: they are tool names).
pub const LINT_PROJECT: &str = "lint_project";
pub const BUILD_PROJECT: &str = "build_project";
pub const RUN_TESTS: &str = "run_tests";
pub const RIPGREP_SEARCH: &str = "ripgrep_search";
/// All four, in the order they are registered.
pub const BUILTIN_PROFILES: &[&str] = &[LINT_PROJECT, BUILD_PROJECT, RUN_TESTS, RIPGREP_SEARCH];

/// Profile runs allowed per agent run, across all profiles: a model that keeps retrying a
/// failing build or test stops here and reports instead.
pub const MAX_PROFILE_RUNS: usize = 5;
/// Bytes kept of each of stdout and stderr.
pub const PROFILE_OUTPUT_CAP: usize = 100 * 1024;

/// A profile could not be built from the configuration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProfileError {
    #[error(
        "the profile name {name:?} is not usable; use lower-case letters, digits and '_' (such as \"lint_project\")"
    )]
    BadName { name: String },
    #[error("[profiles.{name}] has no program; set program = \"/usr/bin/make\" or a program name")]
    NoProgram { name: String },
    #[error("[profiles.{name}]: {message}")]
    Invalid { name: String, message: String },
}

/// One optional or required argument the model may pass: `{"name": "value"}`.
#[derive(Debug, Clone)]
pub struct ArgRule {
    pub name: String,
    /// The whole value must match (the pattern is anchored when compiled).
    pub pattern: Regex,
    pub description: String,
    pub required: bool,
    /// The value is a path: it goes through the path guard and is passed relative to the
    /// working directory.
    pub path: bool,
}

/// A profile ready to run.
#[derive(Debug, Clone)]
pub struct ProfileSpec {
    pub name: String,
    pub description: String,
    /// A program name (looked up when run, see [`find_program`]) or an absolute path.
    pub program: String,
    /// The argument template after the program.
    pub args: Vec<String>,
    pub arguments: Vec<ArgRule>,
    /// Directories the profile may run in (empty: every root).
    pub roots: Vec<PathBuf>,
    pub timeout: Duration,
    /// Whether the program may reach the network (through the sandbox's egress proxy, public
    /// addresses only).
    pub network: bool,
    /// The hosts a network grant is limited to (`network = ["pypi.org"]`); `None`: any public
    /// host.
    pub network_hosts: Option<Vec<String>>,
    pub output_cap: usize,
    pub tier: Tier,
    /// Extra variables copied from ARIA's environment (e.g. `CARGO_HOME` for cargo).
    pub env_allowlist: Vec<String>,
}

impl ProfileSpec {
    /// The argv this profile runs with `values` (already checked), without the program path.
    pub(crate) fn expand(&self, values: &BTreeMap<String, String>) -> Vec<String> {
        let mut argv = Vec::with_capacity(self.args.len());
        for item in &self.args {
            match placeholder(item) {
                None => argv.push(item.clone()),
                Some((prefix, name)) => {
                    if let Some(v) = values.get(name) {
                        argv.push(format!("{prefix}{v}"));
                    }
                }
            }
        }
        argv
    }

    /// A one-line rendering for dry runs and reports: `cargo clippy --all-targets`.
    pub fn command_line(&self, values: &BTreeMap<String, String>) -> String {
        let mut words = vec![self.program.clone()];
        words.extend(self.expand(values));
        words.join(" ")
    }
}

/// `("--type=", "type")` for `--type={type}`, `("", "x")` for `{x}`, `None` for fixed text.
pub(crate) fn placeholder(item: &str) -> Option<(&str, &str)> {
    let open = item.find('{')?;
    let name = item[open + 1..].strip_suffix('}')?;
    let ok = !name.is_empty()
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    ok.then(|| (&item[..open], name))
}

/// `[profiles.NAME.arguments.ARG]` as written in the configuration.
#[derive(Debug, Default, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ArgConfig {
    pub pattern: String,
    pub description: Option<String>,
    pub required: Option<bool>,
    pub path: Option<bool>,
}

/// `[profiles.NAME]` as written in the configuration; every key optional, unknown keys are an
/// error. Resolved into a [`ProfileSpec`] by [`ProfileSpec::from_config`].
#[derive(Debug, Default, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileConfig {
    pub description: Option<String>,
    pub program: Option<String>,
    pub args: Option<Vec<String>>,
    pub arguments: Option<BTreeMap<String, ArgConfig>>,
    pub roots: Option<Vec<PathBuf>>,
    pub timeout_secs: Option<u64>,
    /// `true`, `false`, or the hosts the grant is limited to (`["pypi.org", "*.example.com"]`).
    pub network: Option<NetworkGrant>,
    pub output_cap_bytes: Option<usize>,
    /// "read", "recoverable_write" or "irreversible".
    pub tier: Option<String>,
    pub env: Option<Vec<String>>,
}

/// The default timeout of a built-in profile (building and testing take longer than linting).
pub fn default_timeout(name: &str) -> Duration {
    Duration::from_secs(match name {
        LINT_PROJECT => 60,
        BUILD_PROJECT => 300,
        RUN_TESTS => 600,
        RIPGREP_SEARCH => 30,
        _ => 60,
    })
}

/// The tier of a built-in profile. Lint and ripgrep only read the sources (a linter may write
/// its cache, such as `target/` or `.ruff_cache`, never the files under review), so they are
/// `read`; build and test write build directories and run project code, so they are
/// `recoverable_write` (snapshotted first in governed mode). A new profile is `irreversible`
/// unless its configuration says otherwise: an unknown program fails safe.
pub fn default_tier(name: &str) -> Tier {
    match name {
        LINT_PROJECT | RIPGREP_SEARCH => Tier::Read,
        BUILD_PROJECT | RUN_TESTS => Tier::RecoverableWrite,
        _ => Tier::Irreversible,
    }
}

impl ProfileSpec {
    /// Validates a configured profile.
    pub fn from_config(name: &str, raw: &ProfileConfig) -> Result<ProfileSpec, ProfileError> {
        let valid_name = !name.is_empty()
            && name.len() <= 64
            && name.starts_with(|c: char| c.is_ascii_lowercase())
            && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if !valid_name {
            return Err(ProfileError::BadName { name: name.to_owned() });
        }
        let invalid = |message: String| ProfileError::Invalid { name: name.to_owned(), message };
        let program = raw.program.clone().filter(|p| !p.trim().is_empty());
        let Some(program) = program else {
            return Err(ProfileError::NoProgram { name: name.to_owned() });
        };
        if program.contains('/') && !program.starts_with('/') {
            return Err(invalid(format!("program {program:?} must be a name or an absolute path")));
        }
        let mut arguments = Vec::new();
        for (arg, cfg) in raw.arguments.clone().unwrap_or_default() {
            let pattern = Regex::new(&format!("^(?:{})$", cfg.pattern))
                .map_err(|e| invalid(format!("the pattern of argument {arg:?} is invalid: {e}")))?;
            if arg == "path" {
                return Err(invalid(
                    "\"path\" is reserved (the directory the profile runs in)".into(),
                ));
            }
            arguments.push(ArgRule {
                name: arg.clone(),
                pattern,
                description: cfg.description.clone().unwrap_or_default(),
                required: cfg.required.unwrap_or(false),
                path: cfg.path.unwrap_or(false),
            });
        }
        let args = raw.args.clone().unwrap_or_default();
        for item in &args {
            if let Some((_, p)) = placeholder(item)
                && !arguments.iter().any(|a| a.name == p)
            {
                return Err(invalid(format!(
                    "args uses {{{p}}} but [profiles.{name}.arguments.{p}] is not defined"
                )));
            }
        }
        let tier = match raw.tier.as_deref() {
            None => default_tier(name),
            Some("read") => Tier::Read,
            Some("recoverable_write") => Tier::RecoverableWrite,
            Some("irreversible") => Tier::Irreversible,
            Some(other) => {
                return Err(invalid(format!(
                    "tier {other:?} is unknown; use \"read\", \"recoverable_write\" or \"irreversible\""
                )));
            }
        };
        let output_cap = raw.output_cap_bytes.unwrap_or(PROFILE_OUTPUT_CAP);
        if output_cap == 0 || output_cap > PROFILE_OUTPUT_CAP {
            return Err(invalid(format!("output_cap_bytes must be 1 to {PROFILE_OUTPUT_CAP}")));
        }
        let timeout =
            Duration::from_secs(raw.timeout_secs.unwrap_or(default_timeout(name).as_secs()));
        if timeout.is_zero() || timeout > Duration::from_secs(3600) {
            return Err(invalid("timeout_secs must be 1 to 3600".into()));
        }
        let network = raw.network.clone().unwrap_or_default();
        network.validate().map_err(invalid)?;
        Ok(ProfileSpec {
            name: name.to_owned(),
            description: raw
                .description
                .clone()
                .unwrap_or_else(|| format!("Run the configured profile {name}.")),
            program,
            args,
            arguments,
            roots: raw.roots.clone().unwrap_or_default(),
            timeout,
            network: network.granted(),
            network_hosts: network.hosts(),
            output_cap,
            tier,
            env_allowlist: raw.env.clone().unwrap_or_default(),
        })
    }
}

/// Counts profile runs per agent run (keyed by session id) against [`MAX_PROFILE_RUNS`].
#[derive(Debug)]
pub struct ProfileBudget {
    max: usize,
    used: Mutex<HashMap<String, usize>>,
}

/// Sessions remembered at most; the oldest counts are dropped beyond this (a finished run never
/// comes back with the same id, and a resumed one at worst gets a fresh allowance).
const REMEMBERED_SESSIONS: usize = 256;

impl ProfileBudget {
    pub fn new(max: usize) -> Self {
        ProfileBudget { max, used: Mutex::new(HashMap::new()) }
    }

    /// Takes one run for `session`, or says the limit was reached and what the model should do
    /// instead (report what it has).
    pub fn take(&self, session: &str) -> Result<usize, String> {
        let mut used = self.used.lock().unwrap_or_else(|p| p.into_inner());
        if used.len() >= REMEMBERED_SESSIONS && !used.contains_key(session) {
            used.clear();
        }
        let n = used.entry(session.to_owned()).or_insert(0);
        if *n >= self.max {
            return Err(format!(
                "Profile execution limit reached: at most {} command profile runs per request; \
                 report what you have instead of running more",
                self.max
            ));
        }
        *n += 1;
        Ok(*n)
    }

    /// Runs used so far by `session`.
    pub fn used(&self, session: &str) -> usize {
        self.used.lock().unwrap_or_else(|p| p.into_inner()).get(session).copied().unwrap_or(0)
    }
}

impl Default for ProfileBudget {
    fn default() -> Self {
        ProfileBudget::new(MAX_PROFILE_RUNS)
    }
}
