//! [`Profiles`]: the configured profiles plus the detected built-ins, one shared run budget,
//! and the tools that expose them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use aria_api::{Tool, ToolError};

use super::detect::{self, ProjectKind};
use super::{
    BUILTIN_PROFILES, ProfileBudget, ProfileConfig, ProfileError, ProfileSpec, RIPGREP_SEARCH,
};
use crate::guard::path::{FileKind, PathGuard};
use crate::tools::path_error;
use crate::tools::run_profile::RunProfile;

/// A profile chosen for one call: what to run, and where.
#[derive(Debug, Clone)]
pub struct Chosen {
    pub spec: ProfileSpec,
    /// The working directory: the project directory for detected profiles, else the directory
    /// the caller gave.
    pub cwd: PathBuf,
    /// How it was chosen: `None` when configured, the project kind when detected.
    pub detected: Option<ProjectKind>,
}

/// Every profile the model may run, and the budget they share.
#[derive(Debug)]
pub struct Profiles {
    guard: Arc<PathGuard>,
    configured: BTreeMap<String, ProfileSpec>,
    budget: Arc<ProfileBudget>,
}

impl Profiles {
    /// The built-ins plus `configs` (`[profiles.NAME]`), with the default budget of
    /// [`super::MAX_PROFILE_RUNS`] per run.
    pub fn new(
        guard: Arc<PathGuard>,
        configs: &BTreeMap<String, ProfileConfig>,
    ) -> Result<Profiles, ProfileError> {
        let mut configured = BTreeMap::new();
        for (name, raw) in configs {
            configured.insert(name.clone(), ProfileSpec::from_config(name, raw)?);
        }
        Ok(Profiles { guard, configured, budget: Arc::new(ProfileBudget::default()) })
    }

    /// Uses `budget` instead of a fresh one (tests, or several sets sharing one limit).
    pub fn with_budget(mut self, budget: Arc<ProfileBudget>) -> Self {
        self.budget = budget;
        self
    }

    pub fn budget(&self) -> &Arc<ProfileBudget> {
        &self.budget
    }

    pub fn guard(&self) -> &Arc<PathGuard> {
        &self.guard
    }

    /// Profile names in registration order: the built-ins, then configured extras by name.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = BUILTIN_PROFILES.iter().map(|s| (*s).to_owned()).collect();
        names.extend(
            self.configured.keys().filter(|k| !BUILTIN_PROFILES.contains(&k.as_str())).cloned(),
        );
        names
    }

    /// The configured profile `name`, if the configuration defines one.
    pub fn configured(&self, name: &str) -> Option<&ProfileSpec> {
        self.configured.get(name)
    }

    /// One tool per profile, named after it.
    pub fn tools(self: &Arc<Self>) -> Vec<Arc<dyn Tool>> {
        self.names()
            .into_iter()
            .map(|name| Arc::new(RunProfile::new(Arc::clone(self), name)) as Arc<dyn Tool>)
            .collect()
    }

    /// Chooses what `name` runs for the path `input` (a file selects its directory): the
    /// configured profile, else the built-in detected from the nearest project files.
    pub fn choose(&self, name: &str, input: &str) -> Result<Chosen, ToolError> {
        let resolved = self
            .guard
            .resolve_existing(input)
            .map_err(|e| path_error(e, "Give a directory inside the roots."))?;
        let dir = if resolved.kind() == Some(FileKind::Dir) {
            resolved.path().to_path_buf()
        } else {
            resolved
                .path()
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_else(|| resolved.root().to_path_buf())
        };
        if let Some(spec) = self.configured.get(name) {
            if !spec.roots.is_empty() && !spec.roots.iter().any(|r| dir.starts_with(canonical(r))) {
                let roots: Vec<String> =
                    spec.roots.iter().map(|r| r.display().to_string()).collect();
                return Err(ToolError::refused(format!(
                    "{name} may only run in {}; {} is not inside those directories",
                    roots.join(", "),
                    dir.display()
                )));
            }
            return Ok(Chosen { spec: spec.clone(), cwd: dir, detected: None });
        }
        if name == RIPGREP_SEARCH {
            let spec = detect::ripgrep(self.guard.sensitive());
            return Ok(Chosen { spec, cwd: dir, detected: None });
        }
        let Some((kind, project)) = detect::detect(&dir, resolved.root()) else {
            return Err(ToolError::failed(format!(
                "no project found at or above {} (looked for Cargo.toml, package.json, \
                 pyproject.toml, pytest.ini, setup.cfg, tox.ini, Makefile up to the root); \
                 give a path inside a project, or configure [profiles.{name}]",
                dir.display()
            )));
        };
        let spec = detect::builtin(name, kind, &project).map_err(ToolError::failed)?;
        Ok(Chosen { spec, cwd: project, detected: Some(kind) })
    }
}

fn canonical(p: &Path) -> PathBuf {
    p.canonicalize().unwrap_or_else(|_| p.to_path_buf())
}
