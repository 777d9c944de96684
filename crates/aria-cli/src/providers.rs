//! Model backends from configuration: each backend's client, the router in front of them (retry,
//! circuit breaker, the fallback chain), the price a run is charged at, and the day/month caps.

use std::sync::Arc;
use std::time::Duration;

use anyhow::anyhow;
use aria_api::{Provider, ProviderError};
use aria_models::{
    AnthropicConfig, AnthropicProvider, BreakerPolicy, CapVerdict, FallbackWhen, OllamaConfig,
    OllamaProvider, OpenAiConfig, OpenAiProvider, PeriodCaps, PeriodSpend, Price, Pricing,
    RetryPolicy, Route, Router, SystemClock, SystemResolver, ToolChoice, Window, known_model,
};
use aria_store::Store;

use crate::config::{self, Config};
use crate::exit::{CliError, CliResult};

/// One backend's client.
#[derive(Debug, Clone)]
pub enum Backend {
    OpenAi(OpenAiProvider),
    Anthropic(AnthropicProvider),
    Ollama(OllamaProvider),
    /// The embedded model (built only with the `local` feature).
    #[cfg_attr(not(feature = "local"), allow(dead_code))]
    Local(Arc<dyn Provider>),
}

impl Backend {
    pub fn provider(&self) -> Arc<dyn Provider> {
        match self {
            Backend::OpenAi(p) => Arc::new(p.clone()),
            Backend::Anthropic(p) => Arc::new(p.clone()),
            Backend::Ollama(p) => Arc::new(p.clone()),
            Backend::Local(p) => Arc::clone(p),
        }
    }

    /// Runs on this machine: the embedded model, or a server (Ollama, OpenAI-compatible) whose
    /// every address was checked to be loopback when its client was built
    /// ([`aria_models::locality::judge`], the one rule; the client is pinned to those
    /// addresses). Anthropic's API is never on this machine.
    pub fn is_local(&self) -> bool {
        match self {
            Backend::Local(_) => true,
            Backend::Ollama(p) => p.locality().is_local(),
            Backend::OpenAi(p) => p.locality().is_local(),
            Backend::Anthropic(_) => false,
        }
    }

    /// Why the backend counts as remote (`None` when it runs on this machine).
    pub fn remote_because(&self) -> Option<String> {
        let why = |l: &aria_models::Locality| match l {
            aria_models::Locality::Remote { why } => Some(why.clone()),
            aria_models::Locality::Local { .. } => None,
        };
        match self {
            Backend::Local(_) => None,
            Backend::Ollama(p) => why(p.locality()),
            Backend::OpenAi(p) => why(p.locality()),
            Backend::Anthropic(_) => Some("Anthropic's API is not on this machine".into()),
        }
    }

    /// What the backend offers.
    pub async fn list_models(&self) -> Result<Vec<String>, ProviderError> {
        match self {
            Backend::OpenAi(p) => p.list_models().await,
            Backend::Anthropic(p) => p.list_models().await,
            Backend::Ollama(p) => p.list_models().await,
            Backend::Local(_) => Err(ProviderError::Config {
                message: "the embedded models are listed by `aria model list`".into(),
            }),
        }
    }
}

/// Why a configured backend cannot be used now.
pub fn unavailable(config: &Config, backend: &str) -> Option<String> {
    let p = &config.provider;
    match backend {
        "anthropic" if p.anthropic_api_key.is_none() => Some("ANTHROPIC_API_KEY is not set".into()),
        "openai" if p.api_key.is_none() && p.base_url == config::DEFAULT_OPENAI_BASE_URL => {
            Some("OPENAI_API_KEY is not set and no OPENAI_BASE_URL points at another server".into())
        }
        "local" if !cfg!(feature = "local") => Some("built without the `local` feature".into()),
        _ => None,
    }
}

fn provider_error(backend: &str) -> impl Fn(ProviderError) -> CliError + '_ {
    move |e| CliError::config(anyhow!("the {backend} backend: {e}"))
}

/// Builds one backend's client for `model`.
pub fn backend(config: &Config, name: &str, model: &str) -> CliResult<Backend> {
    let p = &config.provider;
    if let Some(why) = unavailable(config, name) {
        return Err(CliError::config(anyhow!("the {name} backend cannot be used: {why}")));
    }
    Ok(match name {
        "anthropic" => {
            let key = p.anthropic_api_key.clone().unwrap_or_default();
            let mut c = AnthropicConfig::new(p.anthropic_base_url.clone(), key);
            if let Some(n) = p.max_output_tokens {
                c.default_max_tokens = n;
            }
            Backend::Anthropic(AnthropicProvider::new(c).map_err(provider_error(name))?)
        }
        "ollama" => {
            let c = OllamaConfig {
                keep_alive: p.keep_alive.clone(),
                num_ctx: p.num_ctx,
                ..OllamaConfig::new(p.ollama_url.clone())
            };
            let judged = OllamaProvider::judged(c, &SystemResolver);
            Backend::Ollama(judged.map_err(provider_error(name))?)
        }
        config::LOCAL_PROVIDER => local(config, model)?,
        _ => {
            let c = OpenAiConfig {
                base_url: p.base_url.clone(),
                api_key: p.api_key.clone(),
                tool_choice: p.tool_choice.as_deref().and_then(ToolChoice::parse),
                parallel_tool_calls: p.parallel_tool_calls,
                ..OpenAiConfig::default()
            };
            let judged = OpenAiProvider::judged(c, &SystemResolver);
            Backend::OpenAi(judged.map_err(provider_error(name))?)
        }
    })
}

#[cfg(feature = "local")]
fn local(config: &Config, model: &str) -> CliResult<Backend> {
    let mut config = config.clone();
    config.provider.model = model.to_owned();
    let provider = crate::local::chat_provider(&config)?;
    let recording = crate::speed::Recording::new(provider, model, &config.data_dir);
    Ok(Backend::Local(Arc::new(recording)))
}

#[cfg(not(feature = "local"))]
fn local(_config: &Config, _model: &str) -> CliResult<Backend> {
    Err(CliError::config(anyhow!("this `aria` was built without the `local` feature")))
}

/// The backends of the chain in order, with their models: the primary, then each fallback that
/// can be used (a fallback to a cloud backend whose key is not set stays off).
pub fn chain(config: &Config) -> Vec<(String, String, FallbackWhen)> {
    let p = &config.provider;
    let mut out = vec![(p.name.clone(), p.model.clone(), FallbackWhen::default())];
    for f in &config.router.fallback {
        if let Some(why) = unavailable(config, &f.backend) {
            tracing::warn!(backend = %f.backend, "fallback route is off: {why}");
            continue;
        }
        let when = FallbackWhen {
            on_error: f.on_error,
            on_context_overflow: f.on_context_overflow,
            above_input_tokens: f.above_input_tokens,
        };
        out.push((f.backend.clone(), f.model.clone(), when));
    }
    out
}

/// What a run needs from the model side.
#[derive(Debug)]
pub struct Built {
    pub provider: Arc<dyn Provider>,
    /// What a call is charged at: the highest price of the chain, so spend is never
    /// under-counted whichever route answers; `None` when no route has a known price. This is
    /// what the pre-call cost checks use; after a call, [`Built::answered_by`] names the route
    /// that answered so spend and traces are recorded under it, at its own price.
    pub price: Option<Price>,
    /// Which route of the chain answered the last call; `None` for the embedded model alone.
    pub answered_by: Option<Arc<dyn aria_core::AnsweredBy>>,
    /// Every route runs on this machine (see [`Backend::is_local`]): private memories may be
    /// sent to it.
    pub local: bool,
}

/// Reads the router's record of which route answered, with that route's price.
#[derive(Debug)]
pub struct ChainAnswers {
    router: Router,
    /// Per route, in chain order: `None` when its price is unknown (then the chain's price
    /// applies).
    prices: Vec<Option<Price>>,
}

impl ChainAnswers {
    pub fn new(router: Router, prices: Vec<Option<Price>>) -> Self {
        ChainAnswers { router, prices }
    }
}

impl aria_core::AnsweredBy for ChainAnswers {
    fn last_answer(&self) -> Option<aria_core::Answer> {
        let answer = self.router.last_answer()?;
        let price = self.prices.get(answer.index).copied().flatten().map(|p| aria_core::Price {
            input_per_mtok: p.input_per_mtok,
            output_per_mtok: p.output_per_mtok,
        });
        Some(aria_core::Answer {
            model: answer.model,
            price,
            backend: Some(answer.provider),
            fallback: answer.index > 0,
            tries: answer.tries,
        })
    }
}

/// The pricing table with the configured overrides.
pub fn pricing(config: &Config) -> Pricing {
    let mut overrides: Vec<(String, Price)> = config
        .pricing
        .iter()
        .map(|(m, i, o)| (m.clone(), Price { input_per_mtok: *i, output_per_mtok: *o }))
        .collect();
    if let Some((i, o)) = config.provider.price {
        overrides
            .push((config.provider.model.clone(), Price { input_per_mtok: i, output_per_mtok: o }));
    }
    Pricing::new(overrides)
}

fn window(config: &Config, backend: &Backend, model: &str, primary: bool) -> Window {
    if primary && let Some(n) = config.provider.context_window {
        return Window::Tokens(n);
    }
    match backend {
        Backend::Ollama(p) => {
            let p = p.clone();
            Window::Lookup(Arc::new(move |model: String| {
                let p = p.clone();
                Box::pin(async move { p.num_ctx(&model).await })
            }))
        }
        Backend::Local(_) => Window::Unknown,
        _ => known_model(model).map_or(Window::Unknown, |m| Window::Tokens(m.context_window)),
    }
}

/// The model side of a run: every route of the chain behind a router.
pub fn build(config: &Config) -> CliResult<Built> {
    let pricing = pricing(config);
    let mut routes = Vec::new();
    let mut prices = Vec::new();
    let mut route_prices = Vec::new();
    let mut unknown_price = false;
    let mut local = true;
    for (i, (name, model, when)) in chain(config).into_iter().enumerate() {
        let backend = backend(config, &name, &model)?;
        local &= backend.is_local();
        // A known cloud model name is charged even behind a loopback proxy; other models on
        // this machine are free.
        let price = match backend {
            Backend::Ollama(_) | Backend::Local(_) => Some(Price::FREE),
            _ => pricing.price(&model).or(backend.is_local().then_some(Price::FREE)),
        };
        route_prices.push(price);
        match price {
            Some(p) => prices.push(p),
            None => unknown_price = true,
        }
        let window = window(config, &backend, &model, i == 0);
        routes.push(Route::new(backend.provider()).model(model).when(when).window(window));
    }
    if unknown_price && prices.iter().any(|p| *p != Price::FREE) {
        tracing::warn!("a route has no known price; set [pricing] for it so its spend is counted");
    }
    // The embedded model alone needs no router: it cannot be rate limited or unreachable.
    if routes.len() == 1 && config.provider.name == config::LOCAL_PROVIDER {
        let provider = Arc::clone(&routes[0].provider);
        return Ok(Built { provider, price: Some(Price::FREE), answered_by: None, local });
    }
    let retry = RetryPolicy { attempts: config.router.attempts, ..RetryPolicy::default() };
    let router =
        Router::new(routes, retry, BreakerPolicy::default(), Arc::new(SystemClock::default()));
    let answered_by = Arc::new(ChainAnswers::new(router.clone(), route_prices));
    Ok(Built {
        provider: Arc::new(router),
        price: Pricing::highest(prices),
        answered_by: Some(answered_by),
        local,
    })
}

/// The day and month caps, read against the store's record of spend.
#[derive(Debug)]
pub struct StoreSpendGuard {
    pub store: Arc<Store>,
    pub caps: PeriodCaps,
}

impl StoreSpendGuard {
    pub fn spent(&self) -> Result<PeriodSpend, aria_store::StoreError> {
        Ok(PeriodSpend {
            today: self.store.spend_since(&aria_store::day_start_utc())?,
            this_month: self.store.spend_since(&aria_store::month_start_utc())?,
        })
    }
}

impl aria_core::SpendGuard for StoreSpendGuard {
    fn check(&self, estimate_usd: f64) -> Result<Option<String>, String> {
        if estimate_usd <= 0.0 {
            return Ok(None);
        }
        // Fail closed: spend that cannot be read cannot be shown to be under the cap.
        let spent = self.spent().map_err(|e| {
            format!("cannot read today's model spend to check the cost caps ({e}); the call was not made")
        })?;
        match self.caps.check(spent, estimate_usd) {
            CapVerdict::Allow => Ok(None),
            CapVerdict::Warn(message) => Ok(Some(message)),
            CapVerdict::Refuse(message) => Err(message),
        }
    }
}

/// Caps from configuration; `None` when neither is set.
pub fn spend_guard(config: &Config, store: Arc<Store>) -> Option<Arc<dyn aria_core::SpendGuard>> {
    let caps =
        PeriodCaps { per_day: config.caps.per_day_usd, per_month: config.caps.per_month_usd };
    if caps == PeriodCaps::default() {
        return None;
    }
    Some(Arc::new(StoreSpendGuard { store, caps }))
}

/// A tiny health-check call: latency to the first event and to the end.
pub async fn probe(
    provider: Arc<dyn Provider>,
    model: &str,
) -> Result<(Duration, Duration, String), ProviderError> {
    use futures::StreamExt;
    let request = aria_api::ChatRequest {
        model: model.to_owned(),
        messages: vec![aria_api::Message::user("Reply with the single word: ok")],
        tools: vec![],
        max_tokens: Some(16),
        temperature: Some(0.0),
    };
    let started = std::time::Instant::now();
    let mut stream = provider.stream(request);
    let mut first = None;
    let mut text = String::new();
    while let Some(item) = stream.next().await {
        let event = item?;
        first.get_or_insert_with(|| started.elapsed());
        if let aria_api::ChatEvent::TextDelta { text: t } = event {
            text.push_str(&t);
        }
    }
    let total = started.elapsed();
    Ok((first.unwrap_or(total), total, text))
}
