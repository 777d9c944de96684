//! Configuration: `aria.toml`, then environment variables, then flags. Defaults live here and
//! nowhere else. Two stages: [`RawConfig`] mirrors the file (every key optional, unknown keys
//! rejected by name), [`Config`] is the validated result the rest of the binary uses.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use aria_api::{ApprovalMode, Limits};
use serde::{Deserialize, Serialize};

pub mod agents;
mod dotenv;
pub use dotenv::{Pinned, load_dotenv};
mod memory;
pub use memory::{
    EmbedderConfig, GRANITE_LOCAL_EMBEDDING_MODEL, MemoryConfig, RawMemory, VectorResidence,
    resolve_memory,
};
mod observe;
pub use observe::{LogLimits, RawTraces, TracesConfig};
mod mcp;
mod provider;
mod schedule;
mod search;
mod server;
pub use mcp::{McpServers, RawMcp};
pub use schedule::{NotifyConfig, RawNotify, RawSchedule, ScheduleConfig};
pub use search::{RawSearch, SearchBackend, SearchConfig};
pub use server::{RawServer, ServerAuth, ServerConfig, parse_listen};
mod roots;
pub use roots::RootsOrigin;
mod show;
mod telegram;
use provider::resolve_provider;
pub use provider::{
    DEFAULT_OLLAMA_MODEL, DEFAULT_OLLAMA_URL, DEFAULT_OPENAI_BASE_URL, LOCAL_PROVIDER,
    ProviderConfig, RawProvider, default_model, known_providers,
};
pub use telegram::{RawTelegram, TelegramSettings};

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
    pub traces: Option<RawTraces>,
    pub router: Option<RawRouter>,
    /// USD per million tokens by exact model name; wins over the built-in table.
    pub pricing: Option<BTreeMap<String, RawPrice>>,
    /// Command profiles by name: override a built-in (`lint_project`, ...) or add one.
    pub profiles: Option<BTreeMap<String, aria_tools::ProfileConfig>>,
    pub snapshots: Option<RawSnapshots>,
    pub memory: Option<RawMemory>,
    pub web: Option<RawWeb>,
    pub server: Option<RawServer>,
    pub telegram: Option<RawTelegram>,
    pub schedule: Option<RawSchedule>,
    pub notify: Option<RawNotify>,
    pub search: Option<RawSearch>,
    pub mcp: Option<RawMcp>,
    pub agents: Option<BTreeMap<String, agents::RawAgent>>,
}

/// `[web]`: which local hosts `web_fetch` may reach (public addresses only by default).
#[derive(Debug, Default, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawWeb {
    /// Let `web_fetch` reach loopback, private, CGNAT, ULA and link-local addresses.
    pub allow_private: Option<bool>,
    /// Host names, IP addresses or CIDR blocks on the local network that may be fetched.
    pub allowed_hosts: Option<Vec<String>>,
}

/// `[snapshots]`: git snapshots before writes.
#[derive(Debug, Default, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawSnapshots {
    /// Initialise a root that is not a git repository on its first write (default true).
    pub auto_init: Option<bool>,
    /// Snapshot branches older than this many days are pruned, never the newest (default 30).
    pub prune_after_days: Option<u64>,
}

#[derive(Debug, Default, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawRouter {
    /// Tries per model call, the first included (default 3).
    pub attempts: Option<u32>,
    /// Fallback routes, tried in order.
    pub fallback: Option<Vec<RawFallback>>,
}

#[derive(Debug, Default, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawFallback {
    pub backend: String,
    pub model: Option<String>,
    pub on_error: Option<bool>,
    pub on_context_overflow: Option<bool>,
    pub above_input_tokens: Option<u64>,
}

#[derive(Debug, Default, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawPrice {
    pub input_per_mtok: f64,
    pub output_per_mtok: f64,
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
    /// Caps on model spend per UTC day and per month, across all runs.
    pub per_day_usd: Option<f64>,
    pub per_month_usd: Option<f64>,
}

#[derive(Debug, Default, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawPolicy {
    pub mode: Option<String>,
    pub approval_timeout_secs: Option<u64>,
    /// The governed workflow after snapshotted writes (lint/build/test, then commit or
    /// restore); on by default, only in governed mode.
    pub workflow: Option<bool>,
    /// Calls approved in advance: tool names (`python_run`) or command prefixes (`cargo
    /// test`) that every simple command of a shell line must start with. Never widens what is
    /// blocked or refused by the mode.
    pub allow: Option<Vec<String>>,
}

#[derive(Debug, Default, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawLogging {
    /// stderr level filter (`warn` by default), e.g. `info` or `aria_core=debug`.
    pub level: Option<String>,
    /// Write JSON-lines logs under the data directory (default true).
    pub file: Option<bool>,
    /// Rotate `logs/aria.jsonl` (to `aria.1.jsonl`, …) when it reaches this many MB (default 10).
    pub max_file_mb: Option<u64>,
    /// Keep all log files together under this many MB by deleting the oldest rotated ones
    /// (default 50; at least twice `max_file_mb`).
    pub max_total_mb: Option<u64>,
}

/// Flags that override the file and the environment.
#[derive(Debug, Default, Clone)]
pub struct Overrides {
    pub roots: Vec<PathBuf>,
    pub provider: Option<String>,
    pub model: Option<String>,
    pub mode: Option<String>,
    pub dry_run: bool,
    /// `--allow PATTERN` (repeatable), added to `[policy] allow`.
    pub allow: Vec<String>,
    /// `--yes`: approve what this run asks about, for this run only.
    pub yes: bool,
    /// `--accept-download`: the embedded model's one-time download needs no question.
    pub accept_download: bool,
    /// The directory ARIA was started in, the root when nothing names one (`None`: the
    /// process's own; tests give one).
    pub cwd: Option<PathBuf>,
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

/// One fallback route.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FallbackConfig {
    pub backend: String,
    pub model: String,
    pub on_error: bool,
    pub on_context_overflow: bool,
    pub above_input_tokens: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RouterConfig {
    pub attempts: u32,
    pub fallback: Vec<FallbackConfig>,
}

/// Spend caps beyond one run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct SpendCaps {
    pub per_day_usd: Option<f64>,
    pub per_month_usd: Option<f64>,
}

/// The validated configuration.
#[derive(Debug, Clone, Serialize)]
pub struct Config {
    #[serde(skip)]
    pub source: ConfigSource,
    /// ARIA's configuration directory (`$XDG_CONFIG_HOME/aria`), whether or not the config file
    /// in use is there: its `.env` is read, and a root containing it does not expose it.
    pub config_dir: PathBuf,
    pub data_dir: PathBuf,
    pub roots: Vec<PathBuf>,
    /// Why the roots are these (a flag, the environment, the file, the current directory).
    #[serde(skip)]
    pub roots_origin: RootsOrigin,
    pub sensitive: Option<Vec<String>>,
    pub provider: ProviderConfig,
    pub limits: Limits,
    pub mode: ApprovalMode,
    pub dry_run: bool,
    #[serde(with = "secs")]
    pub approval_timeout: Duration,
    pub log_level: String,
    pub log_file: bool,
    pub log_limits: LogLimits,
    pub traces: TracesConfig,
    pub router: RouterConfig,
    /// Price overrides: model → (input, output) USD per million tokens.
    pub pricing: Vec<(String, f64, f64)>,
    pub caps: SpendCaps,
    /// Whether the governed workflow runs (governed mode only).
    pub governed_workflow: bool,
    /// Pre-approved calls: `[policy] allow` then `--allow` (see [`RawPolicy::allow`]).
    pub allow: Vec<String>,
    /// `--yes`: what this run asks about is approved, for this run only (never saved).
    #[serde(skip)]
    pub yes: bool,
    /// `[profiles.NAME]`, each checked by `aria_tools::ProfileSpec::from_config`.
    pub profiles: BTreeMap<String, aria_tools::ProfileConfig>,
    pub snapshots: SnapshotConfig,
    pub memory: MemoryConfig,
    pub web: WebConfig,
    pub server: ServerConfig,
    pub telegram: TelegramSettings,
    pub schedule: ScheduleConfig,
    pub notify: NotifyConfig,
    pub search: SearchConfig,
    /// `[mcp.servers.*]`, the enabled ones.
    #[serde(skip)]
    pub mcp: McpServers,
    /// `[mcp]` as written (for `aria config show`).
    #[serde(skip)]
    pub mcp_raw: RawMcp,
    /// The agents of `[agents.*]` (the built-in ones and those in the store are added by
    /// `crate::agents`).
    pub agents: Vec<agents::AgentProfile>,
    /// The agent this command runs as (`--agent NAME`), already applied to the settings above.
    pub agent: Option<agents::AgentProfile>,
}

/// `[web]`, checked: every allowed host parses.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct WebConfig {
    pub allow_private: bool,
    pub allowed_hosts: Vec<String>,
}

impl WebConfig {
    /// The SSRF policy `web_fetch` gets.
    pub fn policy(&self) -> Result<aria_tools::SsrfPolicy, aria_tools::AllowedHostError> {
        self.allowed_hosts.iter().try_fold(
            aria_tools::SsrfPolicy::public_only().allow_private(self.allow_private),
            |policy, host| policy.allow_host(host),
        )
    }
}

fn resolve_web(raw: RawWeb) -> Result<WebConfig, ConfigError> {
    let web = WebConfig {
        allow_private: raw.allow_private.unwrap_or(false),
        allowed_hosts: raw.allowed_hosts.unwrap_or_default(),
    };
    web.policy().map_err(|e| ConfigError::Invalid(format!("[web] allowed_hosts: {e}")))?;
    Ok(web)
}

/// Snapshot settings (`[snapshots]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SnapshotConfig {
    pub auto_init: bool,
    pub prune_after_days: u64,
}

impl SnapshotConfig {
    pub fn options(&self) -> aria_tools::SnapshotOptions {
        aria_tools::SnapshotOptions {
            auto_init: self.auto_init,
            prune_after: Duration::from_secs(self.prune_after_days.saturating_mul(86_400)),
        }
    }
}

/// Days snapshot branches are kept by default (`[snapshots] prune_after_days`).
pub const DEFAULT_SNAPSHOT_PRUNE_DAYS: u64 = 30;

fn resolve_snapshots(raw: RawSnapshots) -> Result<SnapshotConfig, ConfigError> {
    let days = raw.prune_after_days.unwrap_or(DEFAULT_SNAPSHOT_PRUNE_DAYS);
    if days == 0 {
        return Err(ConfigError::Invalid(
            "[snapshots] prune_after_days must be at least 1 (the newest snapshot is always kept)"
                .into(),
        ));
    }
    Ok(SnapshotConfig { auto_init: raw.auto_init.unwrap_or(true), prune_after_days: days })
}

mod secs {
    pub fn serialize<S: serde::Serializer>(
        d: &std::time::Duration,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_secs())
    }
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
/// Never one in the working directory.
pub fn locate(flag: Option<&Path>, env: &dyn Env) -> ConfigSource {
    if let Some(p) = flag {
        return ConfigSource::Flag(p.to_path_buf());
    }
    if let Some(p) = env.var("ARIA_CONFIG") {
        return ConfigSource::Env(PathBuf::from(p));
    }
    let path = config_dir(env).join("aria.toml");
    if path.is_file() { ConfigSource::Xdg(path) } else { ConfigSource::None(path) }
}

/// ARIA's configuration directory: `$XDG_CONFIG_HOME/aria`, else `~/.config/aria`.
pub fn config_dir(env: &dyn Env) -> PathBuf {
    let base =
        env.var("XDG_CONFIG_HOME").map(PathBuf::from).unwrap_or_else(|| home(env).join(".config"));
    base.join("aria")
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
    let (roots, roots_origin) = resolve_roots(&scope, &data_dir, env, flags)?;
    let provider = resolve_provider(raw.provider.unwrap_or_default(), &data_dir, env, flags)?;
    let limits = resolve_limits(raw.limits.clone().unwrap_or_default(), env)?;
    let policy = raw.policy.unwrap_or_default();
    let governed_workflow = policy.workflow.unwrap_or(true);
    let mut allow = policy.allow.clone().unwrap_or_default();
    allow.extend(flags.allow.iter().cloned());
    aria_core::Preapproval::new(&allow, flags.yes)
        .map_err(|e| ConfigError::Invalid(format!("[policy] allow / --allow: {e}")))?;
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
    let log_limits = observe::resolve_log_limits(&logging)?;
    let traces = observe::resolve_traces(raw.traces.unwrap_or_default())?;
    let router = resolve_router(raw.router.unwrap_or_default())?;
    let pricing = resolve_pricing(raw.pricing.unwrap_or_default())?;
    let caps = resolve_caps(raw.limits.clone().unwrap_or_default(), env)?;
    let profiles = raw.profiles.unwrap_or_default();
    for (name, profile) in &profiles {
        aria_tools::ProfileSpec::from_config(name, profile)
            .map_err(|e| ConfigError::Invalid(e.to_string()))?;
    }
    let snapshots = resolve_snapshots(raw.snapshots.unwrap_or_default())?;
    let memory = resolve_memory(raw.memory.unwrap_or_default(), &provider)?;
    let web = resolve_web(raw.web.unwrap_or_default())?;
    let server = server::resolve_server(raw.server.unwrap_or_default())?;
    let telegram = telegram::resolve_telegram(raw.telegram.unwrap_or_default(), env, &roots)?;
    let schedule = schedule::resolve_schedule(raw.schedule.unwrap_or_default())?;
    let notify = schedule::resolve_notify(raw.notify.unwrap_or_default());
    let search = search::resolve_search(raw.search.unwrap_or_default(), env)?;
    let mcp_raw = raw.mcp.unwrap_or_default();
    let mcp = mcp::resolve_mcp(mcp_raw.clone(), env)?;
    let agents = agents::resolve_agents(raw.agents.unwrap_or_default())?;
    Ok(Config {
        source,
        config_dir: config_dir(env),
        data_dir,
        roots,
        roots_origin,
        sensitive: scope.sensitive,
        provider,
        limits,
        mode,
        dry_run: flags.dry_run,
        approval_timeout: Duration::from_secs(policy.approval_timeout_secs.unwrap_or(60)),
        log_level: env.var("ARIA_LOG").or(logging.level).unwrap_or_else(|| "warn".into()),
        log_file: logging.file.unwrap_or(true),
        log_limits,
        traces,
        router,
        pricing,
        caps,
        governed_workflow,
        allow,
        yes: flags.yes,
        profiles,
        snapshots,
        memory,
        web,
        server,
        telegram,
        schedule,
        notify,
        search,
        mcp,
        mcp_raw,
        agents,
        agent: None,
    })
}

fn resolve_router(raw: RawRouter) -> Result<RouterConfig, ConfigError> {
    let attempts = raw.attempts.unwrap_or(3);
    if attempts == 0 {
        return Err(ConfigError::Invalid("[router] attempts must be at least 1".into()));
    }
    let mut fallback = Vec::new();
    for (i, f) in raw.fallback.unwrap_or_default().into_iter().enumerate() {
        if !known_providers().contains(&f.backend.as_str()) {
            return Err(ConfigError::Invalid(format!(
                "[[router.fallback]] #{}: unknown backend `{}`; use one of: {}",
                i + 1,
                f.backend,
                known_providers().join(", ")
            )));
        }
        let (on_error, on_context_overflow) = (f.on_error, f.on_context_overflow);
        if on_error.is_none() && on_context_overflow.is_none() && f.above_input_tokens.is_none() {
            return Err(ConfigError::Invalid(format!(
                "[[router.fallback]] #{} ({}) has no condition; set on_error, on_context_overflow or above_input_tokens",
                i + 1,
                f.backend
            )));
        }
        fallback.push(FallbackConfig {
            model: f.model.unwrap_or_else(|| default_model(&f.backend).to_owned()),
            backend: f.backend,
            on_error: on_error.unwrap_or(false),
            on_context_overflow: on_context_overflow.unwrap_or(false),
            above_input_tokens: f.above_input_tokens,
        });
    }
    Ok(RouterConfig { attempts, fallback })
}

fn resolve_pricing(
    raw: BTreeMap<String, RawPrice>,
) -> Result<Vec<(String, f64, f64)>, ConfigError> {
    raw.into_iter()
        .map(|(model, p)| {
            let ok = |v: f64| v.is_finite() && v >= 0.0;
            if ok(p.input_per_mtok) && ok(p.output_per_mtok) {
                Ok((model, p.input_per_mtok, p.output_per_mtok))
            } else {
                Err(ConfigError::Invalid(format!("[pricing.\"{model}\"] prices must be ≥ 0")))
            }
        })
        .collect()
}

fn dollars(
    (name, key): (&str, &str),
    value: Option<String>,
    file: Option<f64>,
) -> Result<Option<f64>, ConfigError> {
    match value {
        Some(v) => {
            v.parse::<f64>().ok().filter(|c| *c >= 0.0 && c.is_finite()).map(Some).ok_or_else(
                || {
                    ConfigError::Invalid(format!(
                        "{name}=`{v}` is not a non-negative number of dollars"
                    ))
                },
            )
        }
        None => match file {
            Some(c) if !(c >= 0.0 && c.is_finite()) => {
                Err(ConfigError::Invalid(format!("[limits] {key} must be a non-negative number")))
            }
            other => Ok(other),
        },
    }
}

fn resolve_caps(raw: RawLimits, env: &dyn Env) -> Result<SpendCaps, ConfigError> {
    Ok(SpendCaps {
        per_day_usd: dollars(
            ("ARIA_MAX_DAILY_COST_USD", "per_day_usd"),
            env.var("ARIA_MAX_DAILY_COST_USD"),
            raw.per_day_usd,
        )?,
        per_month_usd: dollars(
            ("ARIA_MAX_MONTHLY_COST_USD", "per_month_usd"),
            env.var("ARIA_MAX_MONTHLY_COST_USD"),
            raw.per_month_usd,
        )?,
    })
}

fn resolve_roots(
    scope: &RawScope,
    data_dir: &Path,
    env: &dyn Env,
    flags: &Overrides,
) -> Result<(Vec<PathBuf>, RootsOrigin), ConfigError> {
    let cwd = flags.cwd.clone().or_else(|| std::env::current_dir().ok());
    let (roots, origin): (Vec<PathBuf>, RootsOrigin) = if !flags.roots.is_empty() {
        (flags.roots.clone(), RootsOrigin::Flag)
    } else if let Some(list) = env.var("ARIA_ROOTS") {
        let roots = list.split(':').filter(|s| !s.is_empty()).map(|s| expand_tilde(s, env));
        (roots.collect(), RootsOrigin::Env)
    } else if let Some(list) = &scope.roots {
        (list.iter().map(|s| expand_tilde(s, env)).collect(), RootsOrigin::File)
    } else if let Some(cwd) = &cwd {
        let (root, origin) = roots::implicit_root(cwd, &home(env), data_dir);
        (vec![root], origin)
    } else {
        (vec![data_dir.join("workspace")], RootsOrigin::Workspace)
    };
    if roots.is_empty() {
        return Err(ConfigError::Invalid(
            "no allowed roots: give --root DIR or set ARIA_ROOTS".into(),
        ));
    }
    let cwd = cwd.unwrap_or_else(|| PathBuf::from("/"));
    let roots: Vec<PathBuf> =
        roots.into_iter().map(|r| if r.is_absolute() { r } else { cwd.join(r) }).collect();
    for root in &roots {
        // Judged on the path as written and, when it exists, as it really is (a link to /).
        let real = std::fs::canonicalize(root).unwrap_or_else(|_| root.clone());
        let lexical: PathBuf = root.components().collect();
        if aria_sandbox::is_system_path(&lexical) || aria_sandbox::is_system_path(&real) {
            return Err(ConfigError::Invalid(format!(
                "the root {} is a system directory; ARIA's tools and the programs it runs would \
                 see the whole system there. Give a project directory (--root ~/code/project)",
                root.display()
            )));
        }
    }
    Ok((roots, origin))
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
    values.extend(config.provider.anthropic_api_key.iter().cloned());
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

/// An environment given as a table, for the sections' tests.
#[cfg(test)]
pub(crate) struct Vars(pub std::collections::HashMap<&'static str, &'static str>);

#[cfg(test)]
impl Env for Vars {
    fn var(&self, key: &str) -> Option<String> {
        self.0.get(key).map(|v| (*v).to_owned())
    }
}

#[cfg(test)]
mod tests;
