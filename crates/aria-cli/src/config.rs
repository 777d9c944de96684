//! Configuration: `aria.toml`, then environment variables, then flags. Defaults live here and
//! nowhere else. Two stages: [`RawConfig`] mirrors the file (every key optional, unknown keys
//! rejected by name), [`Config`] is the validated result the rest of the binary uses.

use std::path::{Path, PathBuf};
use std::time::Duration;

use aria_api::{ApprovalMode, Limits};
use serde::{Deserialize, Serialize};

/// A configuration problem. Exit code 2.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read the config file {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("{0}")]
    Invalid(String),
    #[error(
        "cannot create the data directory {path}: {source}; set ARIA_HOME to a writable directory"
    )]
    DataDir { path: PathBuf, source: std::io::Error },
    #[error("cannot read {path}: {message}")]
    DotEnv { path: PathBuf, message: String },
}

#[derive(Debug, Default, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawConfig {
    pub provider: Option<RawProvider>,
    pub scope: Option<RawScope>,
    pub limits: Option<RawLimits>,
    pub policy: Option<RawPolicy>,
    pub logging: Option<RawLogging>,
}

#[derive(Debug, Default, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawProvider {
    pub name: Option<String>,
    pub model: Option<String>,
    pub base_url: Option<String>,
    pub temperature: Option<f32>,
    pub max_output_tokens: Option<u32>,
    /// USD per million input tokens, for models ARIA has no price for.
    pub input_price_per_mtok: Option<f64>,
    pub output_price_per_mtok: Option<f64>,
    /// Where embedded models are kept (default `$ARIA_HOME/models`).
    pub models_dir: Option<String>,
}

#[derive(Debug, Default, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawScope {
    pub roots: Option<Vec<String>>,
    /// Replaces the default list of sensitive file patterns.
    pub sensitive: Option<Vec<String>>,
}

#[derive(Debug, Default, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawLimits {
    pub max_iterations: Option<u32>,
    pub max_tokens: Option<u64>,
    pub tool_timeout_secs: Option<u64>,
    pub session_timeout_secs: Option<u64>,
    pub max_tool_output_chars: Option<usize>,
    pub max_cost_usd: Option<f64>,
}

#[derive(Debug, Default, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawPolicy {
    pub mode: Option<String>,
    pub approval_timeout_secs: Option<u64>,
}

#[derive(Debug, Default, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawLogging {
    /// stderr level filter (`warn` by default), e.g. `info` or `aria_core=debug`.
    pub level: Option<String>,
    /// Write JSON-lines logs under the data directory (default true).
    pub file: Option<bool>,
}

/// Flags that override the file and the environment.
#[derive(Debug, Default, Clone)]
pub struct Overrides {
    pub roots: Vec<PathBuf>,
    pub provider: Option<String>,
    pub model: Option<String>,
    pub mode: Option<String>,
    pub dry_run: bool,
}

/// Where a config file was found, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigSource {
    Flag(PathBuf),
    Env(PathBuf),
    Xdg(PathBuf),
    /// No file: `PathBuf` is where one would be read from.
    None(PathBuf),
}

impl ConfigSource {
    pub fn path(&self) -> &Path {
        match self {
            ConfigSource::Flag(p)
            | ConfigSource::Env(p)
            | ConfigSource::Xdg(p)
            | ConfigSource::None(p) => p,
        }
    }
    pub fn describe(&self) -> String {
        match self {
            ConfigSource::Flag(p) => format!("{} (from --config)", p.display()),
            ConfigSource::Env(p) => format!("{} (from ARIA_CONFIG)", p.display()),
            ConfigSource::Xdg(p) => format!("{}", p.display()),
            ConfigSource::None(p) => {
                format!("{} (not present; built-in defaults in use)", p.display())
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProviderConfig {
    pub name: String,
    pub model: String,
    pub base_url: String,
    #[serde(serialize_with = "redacted")]
    pub api_key: Option<String>,
    pub temperature: Option<f32>,
    pub max_output_tokens: Option<u32>,
    pub price: Option<(f64, f64)>,
    /// Where embedded models are pulled to and loaded from.
    pub models_dir: PathBuf,
    /// True when the provider was chosen because nothing else was configured.
    #[serde(skip)]
    pub chosen_by_default: bool,
}

fn redacted<S: serde::Serializer>(v: &Option<String>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(if v.is_some() { "[set, redacted]" } else { "[unset]" })
}

/// The validated configuration.
#[derive(Debug, Clone, Serialize)]
pub struct Config {
    #[serde(skip)]
    pub source: ConfigSource,
    pub data_dir: PathBuf,
    pub roots: Vec<PathBuf>,
    pub sensitive: Option<Vec<String>>,
    pub provider: ProviderConfig,
    pub limits: Limits,
    pub mode: ApprovalMode,
    pub dry_run: bool,
    #[serde(with = "secs")]
    pub approval_timeout: Duration,
    pub log_level: String,
    pub log_file: bool,
}

mod secs {
    pub fn serialize<S: serde::Serializer>(
        d: &std::time::Duration,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_secs())
    }
}

pub const DEFAULT_OPENAI_BASE_URL: &str = "https://api.openai.com/v1";
pub const DEFAULT_OPENAI_MODEL: &str = "gpt-4o-mini";
/// The embedded model's provider name.
pub const LOCAL_PROVIDER: &str = "local";
/// The default embedded chat model (a catalog name in `aria-local`).
pub const DEFAULT_LOCAL_MODEL: &str = "smollm2-135m-instruct";
/// Provider names this build understands.
pub fn known_providers() -> &'static [&'static str] {
    if cfg!(feature = "local") { &["openai", LOCAL_PROVIDER] } else { &["openai"] }
}

/// Reads the environment through a function, so tests can pass their own.
pub trait Env {
    fn var(&self, key: &str) -> Option<String>;
}

/// The process environment. Empty values count as unset.
#[derive(Debug, Clone, Copy)]
pub struct ProcessEnv;

impl Env for ProcessEnv {
    fn var(&self, key: &str) -> Option<String> {
        std::env::var(key).ok().filter(|v| !v.is_empty())
    }
}

fn home(env: &dyn Env) -> PathBuf {
    env.var("HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/"))
}

/// Which config file applies: `--config`, then `$ARIA_CONFIG`, then `$XDG_CONFIG_HOME/aria/aria.toml`.
pub fn locate(flag: Option<&Path>, env: &dyn Env) -> ConfigSource {
    if let Some(p) = flag {
        return ConfigSource::Flag(p.to_path_buf());
    }
    if let Some(p) = env.var("ARIA_CONFIG") {
        return ConfigSource::Env(PathBuf::from(p));
    }
    let base =
        env.var("XDG_CONFIG_HOME").map(PathBuf::from).unwrap_or_else(|| home(env).join(".config"));
    let path = base.join("aria").join("aria.toml");
    if path.is_file() { ConfigSource::Xdg(path) } else { ConfigSource::None(path) }
}

/// `$ARIA_HOME`, else `$XDG_DATA_HOME/aria`, else `~/.local/share/aria`.
pub fn data_dir(env: &dyn Env) -> PathBuf {
    if let Some(p) = env.var("ARIA_HOME") {
        return PathBuf::from(p);
    }
    let base = env
        .var("XDG_DATA_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| home(env).join(".local/share"));
    base.join("aria")
}

/// Parses a config file. An explicitly named file must exist; the XDG one may be absent.
pub fn read_raw(source: &ConfigSource) -> Result<RawConfig, ConfigError> {
    let path = match source {
        ConfigSource::None(_) => return Ok(RawConfig::default()),
        other => other.path(),
    };
    let text = std::fs::read_to_string(path)
        .map_err(|source| ConfigError::Read { path: path.to_path_buf(), source })?;
    parse_raw(&text, path)
}

pub fn parse_raw(text: &str, path: &Path) -> Result<RawConfig, ConfigError> {
    toml::from_str(text).map_err(|e| ConfigError::Parse {
        path: path.to_path_buf(),
        message: e.to_string().trim_end().replace('\n', "\n  "),
    })
}

fn expand_tilde(s: &str, env: &dyn Env) -> PathBuf {
    match s.strip_prefix("~/") {
        Some(rest) => home(env).join(rest),
        None if s == "~" => home(env),
        None => PathBuf::from(s),
    }
}

/// Resolves file + environment + flags into a [`Config`]. Does not touch the disk except to
/// make the roots absolute; [`prepare_dirs`] creates directories.
pub fn resolve(
    raw: RawConfig,
    source: ConfigSource,
    env: &dyn Env,
    flags: &Overrides,
) -> Result<Config, ConfigError> {
    let data_dir = data_dir(env);
    let scope = raw.scope.unwrap_or_default();
    let roots = resolve_roots(&scope, &data_dir, env, flags)?;
    let provider = resolve_provider(raw.provider.unwrap_or_default(), &data_dir, env, flags)?;
    let limits = resolve_limits(raw.limits.unwrap_or_default(), env)?;
    let policy = raw.policy.unwrap_or_default();
    let mode_text = flags.mode.clone().or_else(|| env.var("ARIA_MODE")).or(policy.mode);
    let mode = match mode_text {
        None => ApprovalMode::default(),
        Some(m) => ApprovalMode::parse(&m).ok_or_else(|| {
            ConfigError::Invalid(format!(
                "unknown approval mode `{m}`; use governed, supervised or read_only"
            ))
        })?,
    };
    let logging = raw.logging.unwrap_or_default();
    Ok(Config {
        source,
        data_dir,
        roots,
        sensitive: scope.sensitive,
        provider,
        limits,
        mode,
        dry_run: flags.dry_run,
        approval_timeout: Duration::from_secs(policy.approval_timeout_secs.unwrap_or(60)),
        log_level: env.var("ARIA_LOG").or(logging.level).unwrap_or_else(|| "warn".into()),
        log_file: logging.file.unwrap_or(true),
    })
}

fn resolve_roots(
    scope: &RawScope,
    data_dir: &Path,
    env: &dyn Env,
    flags: &Overrides,
) -> Result<Vec<PathBuf>, ConfigError> {
    let roots: Vec<PathBuf> = if !flags.roots.is_empty() {
        flags.roots.clone()
    } else if let Some(list) = env.var("ARIA_ROOTS") {
        list.split(':').filter(|s| !s.is_empty()).map(|s| expand_tilde(s, env)).collect()
    } else if let Some(list) = &scope.roots {
        list.iter().map(|s| expand_tilde(s, env)).collect()
    } else {
        vec![data_dir.join("workspace")]
    };
    if roots.is_empty() {
        return Err(ConfigError::Invalid(
            "no allowed roots: give --root DIR or set ARIA_ROOTS".into(),
        ));
    }
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    Ok(roots.into_iter().map(|r| if r.is_absolute() { r } else { cwd.join(r) }).collect())
}

fn resolve_provider(
    raw: RawProvider,
    data_dir: &Path,
    env: &dyn Env,
    flags: &Overrides,
) -> Result<ProviderConfig, ConfigError> {
    let api_key = env.var("OPENAI_API_KEY");
    let env_base_url = env.var("OPENAI_BASE_URL");
    let named = flags.provider.clone().or_else(|| env.var("ARIA_PROVIDER")).or(raw.name.clone());
    // Nothing named: a configured server wins; with none, the embedded model (when built in).
    let server_configured = api_key.is_some() || env_base_url.is_some() || raw.base_url.is_some();
    let chosen_by_default = named.is_none();
    let name = named.unwrap_or_else(|| {
        if server_configured || !cfg!(feature = "local") {
            "openai".into()
        } else {
            LOCAL_PROVIDER.into()
        }
    });
    if !known_providers().contains(&name.as_str()) {
        let hint = if name == LOCAL_PROVIDER {
            "this `aria` was built without the `local` feature; rebuild with default features, or \
             use `openai` (any OpenAI-compatible server)"
                .to_owned()
        } else {
            format!(
                "use one of: {} (`openai` is any OpenAI-compatible server: OpenAI, Ollama, vLLM, \
                 llama.cpp, LM Studio)",
                known_providers().join(", ")
            )
        };
        return Err(ConfigError::Invalid(format!("unknown provider `{name}`; {hint}")));
    }
    let default_model =
        if name == LOCAL_PROVIDER { DEFAULT_LOCAL_MODEL } else { DEFAULT_OPENAI_MODEL };
    let model = flags
        .model
        .clone()
        .or_else(|| env.var("ARIA_MODEL"))
        .or(raw.model)
        .unwrap_or_else(|| default_model.into());
    let models_dir = env
        .var("ARIA_MODELS_DIR")
        .or(raw.models_dir)
        .map(|d| expand_tilde(&d, env))
        .unwrap_or_else(|| data_dir.join("models"));
    let base_url = env_base_url.or(raw.base_url).unwrap_or_else(|| DEFAULT_OPENAI_BASE_URL.into());
    if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
        return Err(ConfigError::Invalid(format!(
            "the provider base URL `{base_url}` must start with http:// or https://"
        )));
    }
    let price = match (raw.input_price_per_mtok, raw.output_price_per_mtok) {
        (Some(i), Some(o)) if i >= 0.0 && o >= 0.0 => Some((i, o)),
        (None, None) => None,
        _ => {
            return Err(ConfigError::Invalid(
                "[provider] input_price_per_mtok and output_price_per_mtok go together and must be ≥ 0".into(),
            ));
        }
    };
    Ok(ProviderConfig {
        name,
        model,
        base_url,
        api_key,
        temperature: raw.temperature,
        max_output_tokens: raw.max_output_tokens,
        price,
        models_dir,
        chosen_by_default,
    })
}

fn resolve_limits(raw: RawLimits, env: &dyn Env) -> Result<Limits, ConfigError> {
    let d = Limits::default();
    let max_cost_usd = match env.var("ARIA_MAX_COST_USD") {
        Some(v) => {
            v.parse::<f64>().ok().filter(|c| *c >= 0.0 && c.is_finite()).ok_or_else(|| {
                ConfigError::Invalid(format!(
                    "ARIA_MAX_COST_USD=`{v}` is not a non-negative number of dollars"
                ))
            })?
        }
        None => raw.max_cost_usd.unwrap_or(d.max_cost_usd),
    };
    let limits = Limits {
        max_iterations: raw.max_iterations.unwrap_or(d.max_iterations),
        max_tokens: raw.max_tokens.unwrap_or(d.max_tokens),
        tool_timeout: raw.tool_timeout_secs.map_or(d.tool_timeout, Duration::from_secs),
        session_timeout: raw.session_timeout_secs.map_or(d.session_timeout, Duration::from_secs),
        max_tool_output_chars: raw.max_tool_output_chars.unwrap_or(d.max_tool_output_chars),
        max_cost_usd,
    };
    if limits.max_iterations == 0
        || limits.max_tokens == 0
        || limits.tool_timeout.is_zero()
        || limits.session_timeout.is_zero()
        || limits.max_tool_output_chars == 0
    {
        return Err(ConfigError::Invalid("[limits] values must be greater than zero".into()));
    }
    Ok(limits)
}

/// Loads `.env` files (the working directory's, then the data directory's) into the process
/// environment without overriding variables that are already set.
pub fn load_dotenv(data_dir: &Path) -> Result<(), ConfigError> {
    for path in [PathBuf::from(".env"), data_dir.join(".env")] {
        if !path.is_file() {
            continue;
        }
        match dotenvy::from_path(&path) {
            Ok(()) => {}
            Err(e) => return Err(ConfigError::DotEnv { path, message: e.to_string() }),
        }
    }
    Ok(())
}

/// Creates the data directory (0700) and, when it is the default root, the workspace.
pub fn prepare_dirs(config: &Config) -> Result<(), ConfigError> {
    create_private_dir(&config.data_dir)?;
    let default_root = config.data_dir.join("workspace");
    if config.roots.iter().any(|r| r == &default_root) {
        create_private_dir(&default_root)?;
    }
    Ok(())
}

fn create_private_dir(path: &Path) -> Result<(), ConfigError> {
    let err = |source| ConfigError::DataDir { path: path.to_path_buf(), source };
    if !path.exists() {
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(path).map_err(err)?;
    }
    Ok(())
}

/// Values that must never appear in logs, the audit log or the database: every configured
/// key, plus any environment variable whose name marks it as a secret.
pub fn secret_values(config: &Config) -> Vec<String> {
    let mut values: Vec<String> = config.provider.api_key.iter().cloned().collect();
    for (key, value) in std::env::vars() {
        let upper = key.to_ascii_uppercase();
        let secret_name = ["KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"]
            .iter()
            .any(|marker| upper.contains(marker));
        if secret_name && value.len() >= 8 {
            values.push(value);
        }
    }
    values.sort();
    values.dedup();
    values
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
