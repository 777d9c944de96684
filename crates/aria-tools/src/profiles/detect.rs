//! Which command a built-in profile runs, from the project files nearest a directory.
//!
//! | marker | lint_project | build_project | run_tests |
//! |---|---|---|---|
//! | `Cargo.toml` | `cargo clippy --all-targets -- -D warnings` | `cargo build` | `cargo test {filter}` |
//! | `package.json` | `npm run lint` | `npm run build` | `npm test` (each only if the script exists) |
//! | `pyproject.toml`, `pytest.ini`, `setup.cfg`, `tox.ini` | `ruff check {target}` | none | `pytest -q {target}` |
//! | `Makefile`, `makefile`, `GNUmakefile` | `make lint` (if the target exists) | `make` | `make test` (if the target exists) |
//!
//! The markers are checked in that order in each directory, from the given directory up to its
//! root; the first directory with a marker is the project, and the profile runs there.
//! `ripgrep_search` does not depend on the project: `rg` in the given directory, never into
//! sensitive files.

use std::path::{Path, PathBuf};

use regex::Regex;

use super::{
    ArgRule, BUILD_PROJECT, LINT_PROJECT, PROFILE_OUTPUT_CAP, ProfileSpec, RIPGREP_SEARCH,
    RUN_TESTS, default_tier, default_timeout,
};
use crate::guard::sensitive::SensitivePatterns;

/// A kind of project, by its marker file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProjectKind {
    Cargo,
    Npm,
    Python,
    Make,
}

impl ProjectKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ProjectKind::Cargo => "cargo (Cargo.toml)",
            ProjectKind::Npm => "npm (package.json)",
            ProjectKind::Python => "python (pyproject.toml / pytest.ini)",
            ProjectKind::Make => "make (Makefile)",
        }
    }
}

const MARKERS: &[(ProjectKind, &[&str])] = &[
    (ProjectKind::Cargo, &["Cargo.toml"]),
    (ProjectKind::Npm, &["package.json"]),
    (ProjectKind::Python, &["pyproject.toml", "pytest.ini", "setup.cfg", "tox.ini"]),
    (ProjectKind::Make, &["Makefile", "makefile", "GNUmakefile"]),
];

/// The project kind of `dir` itself, if it holds a marker.
pub fn detect_in(dir: &Path) -> Option<ProjectKind> {
    MARKERS
        .iter()
        .find(|(_, files)| files.iter().any(|f| dir.join(f).is_file()))
        .map(|(kind, _)| *kind)
}

/// The nearest project at or above `dir`, not above `root`.
pub fn detect(dir: &Path, root: &Path) -> Option<(ProjectKind, PathBuf)> {
    let mut here = dir;
    loop {
        if let Some(kind) = detect_in(here) {
            return Some((kind, here.to_path_buf()));
        }
        if here == root {
            return None;
        }
        match here.parent() {
            Some(p) if p.starts_with(root) => here = p,
            _ => return None,
        }
    }
}

/// Finds a program the way profiles run it: an absolute path as is; a name in the sandbox's
/// `PATH` (`/usr/local/bin:/usr/bin:/bin`), then in `$CARGO_HOME/bin`, `~/.cargo/bin` and
/// `~/.local/bin` (where rustup, pipx and `pip --user` put tools).
pub fn find_program(name: &str) -> Option<PathBuf> {
    if name.starts_with('/') {
        return is_executable(Path::new(name)).then(|| PathBuf::from(name));
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let mut dirs: Vec<PathBuf> = aria_sandbox::SAFE_PATH.split(':').map(PathBuf::from).collect();
    if let Some(cargo) = std::env::var_os("CARGO_HOME") {
        dirs.push(PathBuf::from(cargo).join("bin"));
    }
    if let Some(h) = &home {
        dirs.push(h.join(".cargo/bin"));
        dirs.push(h.join(".local/bin"));
    }
    dirs.into_iter().map(|d| d.join(name)).find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata().map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0).unwrap_or(false)
}

/// An argument rule from a literal pattern in this file.
#[allow(clippy::expect_used)] // Literal patterns, each compiled by the detection tests: cannot fail.
fn rule(name: &str, pattern: &str, description: &str, required: bool, path: bool) -> ArgRule {
    let pattern = Regex::new(&format!("^(?:{pattern})$")).expect("built-in patterns are valid");
    ArgRule { name: name.to_owned(), pattern, description: description.to_owned(), required, path }
}

fn target_rule() -> ArgRule {
    rule(
        "target",
        r"[A-Za-z0-9_.@+/][A-Za-z0-9_.@+/ -]{0,255}",
        "A file or directory to check, relative to the project (default: the whole project).",
        false,
        true,
    )
}

fn spec(
    name: &str,
    kind: &str,
    program: &str,
    args: &[&str],
    arguments: Vec<ArgRule>,
) -> ProfileSpec {
    ProfileSpec {
        name: name.to_owned(),
        description: format!("{kind}: {program} {}", args.join(" ")).trim_end().to_owned(),
        program: program.to_owned(),
        args: args.iter().map(|s| (*s).to_owned()).collect(),
        arguments,
        roots: Vec::new(),
        timeout: default_timeout(name),
        network: false,
        network_hosts: None,
        output_cap: PROFILE_OUTPUT_CAP,
        tier: default_tier(name),
        env_allowlist: Vec::new(),
    }
}

/// The built-in profile `name` for a `kind` project in `dir`, or why there is none.
pub(crate) fn builtin(name: &str, kind: ProjectKind, dir: &Path) -> Result<ProfileSpec, String> {
    let k = kind.as_str();
    let mut out = match (kind, name) {
        (ProjectKind::Cargo, LINT_PROJECT) => {
            spec(name, k, "cargo", &["clippy", "--all-targets", "--", "-D", "warnings"], vec![])
        }
        (ProjectKind::Cargo, BUILD_PROJECT) => spec(name, k, "cargo", &["build"], vec![]),
        (ProjectKind::Cargo, RUN_TESTS) => spec(
            name,
            k,
            "cargo",
            &["test", "{filter}"],
            vec![rule(
                "filter",
                "[A-Za-z0-9_:]{1,200}",
                "Only tests whose name contains this.",
                false,
                false,
            )],
        ),
        (ProjectKind::Npm, _) => {
            let script = match name {
                LINT_PROJECT => "lint",
                BUILD_PROJECT => "build",
                _ => "test",
            };
            if !npm_scripts(dir).iter().any(|s| s == script) {
                return Err(format!(
                    "package.json in {} has no \"{script}\" script, so {name} has nothing to run; \
                     add the script or configure [profiles.{name}]",
                    dir.display()
                ));
            }
            if script == "test" {
                spec(name, k, "npm", &["test"], vec![])
            } else {
                spec(name, k, "npm", &["run", script], vec![])
            }
        }
        (ProjectKind::Python, LINT_PROJECT) => {
            spec(name, k, "ruff", &["check", "{target}"], vec![target_rule()])
        }
        (ProjectKind::Python, RUN_TESTS) => {
            spec(name, k, "pytest", &["-q", "{target}"], vec![target_rule()])
        }
        (ProjectKind::Python, _) => {
            return Err(format!(
                "{} is a Python project without a build step ARIA knows; use run_tests, or \
                 configure [profiles.{name}]",
                dir.display()
            ));
        }
        (ProjectKind::Make, BUILD_PROJECT) => spec(name, k, "make", &[], vec![]),
        (ProjectKind::Make, _) => {
            let target = if name == LINT_PROJECT { "lint" } else { "test" };
            if !make_targets(dir).iter().any(|t| t == target) {
                return Err(format!(
                    "the Makefile in {} has no \"{target}\" target, so {name} has nothing to run; \
                     add the target or configure [profiles.{name}]",
                    dir.display()
                ));
            }
            spec(name, k, "make", &[target], vec![])
        }
        _ => return Err(format!("{name} is not a project profile")),
    };
    if kind == ProjectKind::Cargo {
        out.env_allowlist = ["CARGO_HOME", "RUSTUP_HOME", "RUSTUP_TOOLCHAIN"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
    }
    Ok(out)
}

/// `ripgrep_search`: `rg` with line numbers, never into files matching the sensitive patterns.
pub(crate) fn ripgrep(sensitive: &SensitivePatterns) -> ProfileSpec {
    let mut args: Vec<String> = [
        "--line-number",
        "--no-heading",
        "--color=never",
        "--max-columns=300",
        "--max-count=100",
        "--type={type}",
        "--glob={glob}",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    for g in sensitive.globs() {
        args.push(format!("--glob=!{g}"));
    }
    args.push("--regexp={pattern}".to_owned());
    args.push("--".to_owned());
    args.push(".".to_owned());
    ProfileSpec {
        name: RIPGREP_SEARCH.to_owned(),
        description: "ripgrep: rg --line-number PATTERN in the directory".to_owned(),
        program: "rg".to_owned(),
        args,
        arguments: vec![
            rule(
                "pattern",
                "(?s).{1,500}",
                "The regular expression to search for (ripgrep syntax).",
                true,
                false,
            ),
            rule(
                "type",
                "[A-Za-z0-9_+-]{1,30}",
                "Only files of this ripgrep type, e.g. rust, js, py.",
                false,
                false,
            ),
            rule(
                "glob",
                r"[A-Za-z0-9_.*?/\[\]{},!-]{1,200}",
                "Only files matching this glob, e.g. *.toml or !tests/**.",
                false,
                false,
            ),
        ],
        roots: Vec::new(),
        timeout: default_timeout(RIPGREP_SEARCH),
        network: false,
        network_hosts: None,
        output_cap: PROFILE_OUTPUT_CAP,
        tier: default_tier(RIPGREP_SEARCH),
        env_allowlist: Vec::new(),
    }
}

/// The script names in `dir/package.json` (none when it cannot be read).
fn npm_scripts(dir: &Path) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(dir.join("package.json")) else { return Vec::new() };
    let Ok(json) = serde_json::from_str::<serde_json::Value>(&text) else { return Vec::new() };
    json.get("scripts")
        .and_then(|s| s.as_object())
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

/// Explicit target names defined in the Makefile of `dir` (`name:` at the start of a line).
fn make_targets(dir: &Path) -> Vec<String> {
    let text = ["GNUmakefile", "makefile", "Makefile"]
        .iter()
        .find_map(|f| std::fs::read_to_string(dir.join(f)).ok())
        .unwrap_or_default();
    text.lines()
        .filter(|l| !l.starts_with(['\t', ' ', '#', '.']))
        .filter_map(|l| l.split_once(':'))
        .filter(|(_, rest)| !rest.starts_with('='))
        .flat_map(|(names, _)| names.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
        .collect()
}
