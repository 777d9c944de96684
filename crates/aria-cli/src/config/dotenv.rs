//! `.env` files: which ones ARIA reads, and what they may not set.
//!
//! Two are read, both in ARIA's own directories: `$ARIA_HOME/.env` (the data directory), then
//! `.env` in the configuration directory (`$XDG_CONFIG_HOME/aria`, else `~/.config/aria`).
//! Never one in the working directory or in a root: a model that can write files there could
//! otherwise change ARIA's configuration for the next run started in that directory (say,
//! a planted `.env` with `ARIA_CONFIG=./evil.toml`). A `.env` never overrides a variable that is
//! already set.
//!
//! A `.env` may not say where ARIA's configuration and data live ([`LOCATING`]): they were found
//! before it was read, and a `.env` that moved them could point ARIA at a configuration of
//! someone else's choosing. Such entries are ignored with a warning. Setting environment
//! variables is `unsafe` in this edition (and `unsafe` is forbidden here), so they cannot be
//! taken back out of the process environment once `dotenvy` has set them; instead the
//! configuration is located and resolved through [`Pinned`], which answers those variables as
//! they were before any `.env` was loaded. Nothing else reads them (children get an
//! allowlisted environment).

use std::path::{Path, PathBuf};

use super::{ConfigError, Env, config_dir, data_dir};

/// Variables that say where ARIA's configuration and data are; a `.env` cannot set them.
pub const LOCATING: &[&str] =
    &["ARIA_CONFIG", "ARIA_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "HOME"];

/// An environment whose [`LOCATING`] variables keep the values they had when it was captured.
#[derive(Clone)]
pub struct Pinned<'a> {
    pinned: Vec<(&'static str, Option<String>)>,
    inner: &'a dyn Env,
}

impl std::fmt::Debug for Pinned<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pinned").field("pinned", &self.pinned).finish_non_exhaustive()
    }
}

impl<'a> Pinned<'a> {
    /// Captures the locating variables of `inner` now; everything else is read live.
    pub fn capture(inner: &'a dyn Env) -> Pinned<'a> {
        let pinned = LOCATING.iter().map(|k| (*k, inner.var(k))).collect();
        Pinned { pinned, inner }
    }
}

impl Env for Pinned<'_> {
    fn var(&self, key: &str) -> Option<String> {
        match self.pinned.iter().find(|(k, _)| *k == key) {
            Some((_, value)) => value.clone(),
            None => self.inner.var(key),
        }
    }
}

/// The `.env` files ARIA reads, in order.
pub fn dotenv_paths(env: &dyn Env) -> [PathBuf; 2] {
    [data_dir(env).join(".env"), config_dir(env).join(".env")]
}

/// Loads ARIA's `.env` files into the process environment (without overriding anything).
/// Returns one warning per entry that was ignored because it would move the configuration.
pub fn load_dotenv(env: &Pinned<'_>) -> Result<Vec<String>, ConfigError> {
    let mut warnings = Vec::new();
    for path in dotenv_paths(env) {
        if !path.is_file() {
            continue;
        }
        warnings.extend(locating_keys(&path)?.into_iter().map(|key| ignored(&path, &key)));
        dotenvy::from_path(&path)
            .map_err(|e| ConfigError::DotEnv { path: path.clone(), message: e.to_string() })?;
    }
    Ok(warnings)
}

/// The [`LOCATING`] variables a `.env` file sets.
pub fn locating_keys(path: &Path) -> Result<Vec<String>, ConfigError> {
    let err = |e: dotenvy::Error| ConfigError::DotEnv {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    let mut keys = Vec::new();
    for item in dotenvy::from_path_iter(path).map_err(err)? {
        let (key, _) = item.map_err(err)?;
        if LOCATING.contains(&key.as_str()) {
            keys.push(key);
        }
    }
    Ok(keys)
}

fn ignored(path: &Path, key: &str) -> String {
    format!(
        "{}: {key} is ignored: a .env file may not move ARIA's configuration or data; set {key} in the environment or pass --config instead",
        path.display()
    )
}
