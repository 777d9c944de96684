//! `[provider]`: which model backend answers, its model, address, key and sampling, and the
//! built-in defaults of each backend.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::*;

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
    /// Ollama: `keep_alive` sent with every chat (e.g. "5m", "-1").
    pub keep_alive: Option<String>,
    /// Ollama: a fixed `num_ctx` instead of the model's own context length.
    pub num_ctx: Option<u64>,
    /// The model's context window in tokens, for the context-budget planner (known cloud
    /// models and Ollama are found without it).
    pub context_window: Option<u64>,
    /// OpenAI-compatible: `auto`, `required` or `none`.
    pub tool_choice: Option<String>,
    /// OpenAI-compatible: allow several tool calls in one answer.
    pub parallel_tool_calls: Option<bool>,
    /// Offer the model at most this many tools per request, those that best fit the user's
    /// message; 0 offers all (default: 4 for the embedded model, all for the others).
    pub max_tools: Option<usize>,
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
    #[serde(serialize_with = "redacted")]
    pub anthropic_api_key: Option<String>,
    pub anthropic_base_url: String,
    pub ollama_url: String,
    pub keep_alive: Option<String>,
    pub num_ctx: Option<u64>,
    pub context_window: Option<u64>,
    pub tool_choice: Option<String>,
    pub parallel_tool_calls: Option<bool>,
    /// At most this many tools offered per request, chosen for the user's message; `None`
    /// offers all.
    pub max_tools: Option<usize>,
    /// True when the provider was chosen because nothing else was configured.
    #[serde(skip)]
    pub chosen_by_default: bool,
    /// True when the model was named (`--model`, `ARIA_MODEL` or `[provider] model`). When it
    /// was not, the embedded backend uses the model chosen for this machine (`aria doctor`
    /// says which and why).
    #[serde(skip)]
    pub model_explicit: bool,
    /// `--accept-download`: the embedded backend may fetch its recommended model (about 1.1 GB,
    /// once) without asking.
    #[serde(skip)]
    pub accept_download: bool,
}

fn redacted<S: serde::Serializer>(v: &Option<String>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(if v.is_some() { "[set, redacted]" } else { "[unset]" })
}

pub const DEFAULT_OPENAI_BASE_URL: &str = "https://api.openai.com/v1";
pub const DEFAULT_OPENAI_MODEL: &str = "gpt-4o-mini";
pub const DEFAULT_ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";
pub const DEFAULT_ANTHROPIC_MODEL: &str = "claude-sonnet-4-5";
pub const DEFAULT_OLLAMA_URL: &str = "http://127.0.0.1:11434";
pub const DEFAULT_OLLAMA_MODEL: &str = "llama3.2";
/// The embedded model's provider name.
pub const LOCAL_PROVIDER: &str = "local";
/// How many tools the embedded model is shown per request: a 135M model chooses better among
/// a few, and reads the prompt several times faster.
pub const DEFAULT_LOCAL_MAX_TOOLS: usize = 4;
/// The embedded chat model used when nothing else is chosen (a catalog name in `aria-local`);
/// on a machine with the memory for it, a larger one may be chosen once (see
/// `crate::default_model`).
pub const DEFAULT_LOCAL_MODEL: &str = "smollm2-135m-instruct";
/// Provider names this build understands.
pub fn known_providers() -> &'static [&'static str] {
    if cfg!(feature = "local") {
        &["openai", "anthropic", "ollama", LOCAL_PROVIDER]
    } else {
        &["openai", "anthropic", "ollama"]
    }
}

/// The default model of a backend.
pub fn default_model(backend: &str) -> &'static str {
    match backend {
        LOCAL_PROVIDER => DEFAULT_LOCAL_MODEL,
        "anthropic" => DEFAULT_ANTHROPIC_MODEL,
        "ollama" => DEFAULT_OLLAMA_MODEL,
        _ => DEFAULT_OPENAI_MODEL,
    }
}

pub(super) fn resolve_provider(
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
                "use one of: {} (`openai` is any OpenAI-compatible server: OpenAI, vLLM, \
                 llama.cpp, LM Studio; `ollama` is Ollama's native API)",
                known_providers().join(", ")
            )
        };
        return Err(ConfigError::Invalid(format!("unknown provider `{name}`; {hint}")));
    }
    let default_model = default_model(&name);
    let named_model = flags.model.clone().or_else(|| env.var("ARIA_MODEL")).or(raw.model);
    let model_explicit = named_model.is_some();
    let model = named_model.unwrap_or_else(|| default_model.into());
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
    if let Some(choice) = &raw.tool_choice
        && !matches!(choice.as_str(), "auto" | "required" | "none")
    {
        return Err(ConfigError::Invalid(format!(
            "[provider] tool_choice `{choice}` is not auto, required or none"
        )));
    }
    let ollama_url = env
        .var("OLLAMA_HOST")
        .or_else(|| env.var("OLLAMA_URL"))
        .or_else(|| env.var("OLLAMA_BASE_URL"))
        .map(|v| aria_models::OllamaConfig::host_url(&v))
        .unwrap_or_else(|| DEFAULT_OLLAMA_URL.into());
    let max_tools = match raw.max_tools {
        Some(0) => None,
        Some(n) => Some(n),
        None if name == LOCAL_PROVIDER => Some(DEFAULT_LOCAL_MAX_TOOLS),
        None => None,
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
        anthropic_api_key: env.var("ANTHROPIC_API_KEY"),
        anthropic_base_url: env
            .var("ANTHROPIC_BASE_URL")
            .unwrap_or_else(|| DEFAULT_ANTHROPIC_BASE_URL.into()),
        ollama_url,
        keep_alive: raw.keep_alive,
        num_ctx: raw.num_ctx,
        context_window: raw.context_window,
        tool_choice: raw.tool_choice,
        parallel_tool_calls: raw.parallel_tool_calls,
        max_tools,
        chosen_by_default,
        model_explicit,
        accept_download: flags.accept_download,
    })
}
