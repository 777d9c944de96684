//! The router: one [`Provider`] in front of a chain of routes, each a provider and a model.
//!
//! - **Retry.** A retryable failure before the first event ([`ProviderError::is_retryable`]) is
//!   tried again, up to [`RetryPolicy::attempts`] tries in all, after an exponential backoff with
//!   jitter — or exactly the server's `Retry-After` when it sent one (longer than
//!   [`RetryPolicy::max_retry_after`]: no retry, the chain moves on).
//! - **Circuit breaker** per route ([`BreakerPolicy`]): after repeated failures the route is
//!   skipped at once, without a request, until a half-open probe succeeds.
//! - **Fallback chain** with conditions ([`FallbackWhen`]): a
//!   later route takes over on an error, on context overflow, or from the start when the request
//!   is estimated above N input tokens (escalation).
//! - **Context budget**: a route with a known window gets the request fitted by
//!   [`ContextBudget`]; a request that cannot fit is never sent to it.
//!
//! Once a route has produced its first event the answer is committed to it: text already shown
//! cannot be taken back, so a failure later in that stream ends the stream with its classified
//! error (and counts against the route's breaker) instead of being retried.
//!
//! Which route answered is kept ([`Router::last_answer`]), so spend and traces can be recorded
//! under the model that actually answered rather than the configured primary.
//!
//! Time and chance come from a [`RouterClock`], so tests run the whole policy without sleeping.

mod breaker;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aria_api::{ChatRequest, ChatStream, Provider, ProviderError};
use futures::future::BoxFuture;
use futures::{StreamExt, stream};

pub use breaker::{BreakerPolicy, BreakerState};

use crate::budget::ContextBudget;
use crate::reader::failed;
use breaker::Breaker;

/// Time and randomness for the router.
pub trait RouterClock: Send + Sync + std::fmt::Debug {
    fn now(&self) -> Instant;
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()>;
    /// A number in `[0, 1)` for jitter.
    fn random(&self) -> f64;
}

/// The real clock (tokio's timer) and a small xorshift generator for jitter.
#[derive(Debug)]
pub struct SystemClock {
    state: AtomicU64,
}

impl Default for SystemClock {
    fn default() -> Self {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0x9E37_79B9_7F4A_7C15, |d| d.as_nanos() as u64);
        SystemClock { state: AtomicU64::new(seed | 1) }
    }
}

impl RouterClock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        Box::pin(tokio::time::sleep(duration))
    }
    fn random(&self) -> f64 {
        let mut x = self.state.load(Ordering::Relaxed);
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.state.store(x, Ordering::Relaxed);
        (x >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// How failed attempts are retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Tries in all, the first included.
    pub attempts: u32,
    /// The backoff before the second try; it doubles after each.
    pub base_delay: Duration,
    pub max_delay: Duration,
    /// A `Retry-After` longer than this is not waited for.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            attempts: 3,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(10),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// The wait after failed try number `attempt` (1-based); `None`: do not retry.
    /// Backoff is "equal jitter": half the exponential delay, plus up to the other half.
    pub fn delay(&self, attempt: u32, error: &ProviderError, random: f64) -> Option<Duration> {
        if let ProviderError::RateLimited { retry_after: Some(after) } = error {
            return (*after <= self.max_retry_after).then_some(*after);
        }
        let exp = self
            .base_delay
            .saturating_mul(1u32 << attempt.saturating_sub(1).min(16))
            .min(self.max_delay);
        Some(exp / 2 + exp.mul_f64(random.clamp(0.0, 1.0) / 2.0))
    }
}

/// When a fallback route takes over.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FallbackWhen {
    /// After the routes before it failed (retries spent, or breaker open).
    pub on_error: bool,
    /// After a route before it said (or the planner found) the request does not fit.
    pub on_context_overflow: bool,
    /// From the start, when the request is estimated above this many input tokens.
    pub above_input_tokens: Option<u64>,
}

/// Finds a model's context window (e.g. Ollama's `/api/show`).
pub type WindowLookup =
    Arc<dyn Fn(String) -> BoxFuture<'static, Result<u64, ProviderError>> + Send + Sync>;

/// A route's context window.
#[derive(Clone, Default)]
pub enum Window {
    /// Not known: the request is sent as it is.
    #[default]
    Unknown,
    Tokens(u64),
    Lookup(WindowLookup),
}

impl std::fmt::Debug for Window {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Window::Unknown => f.write_str("Unknown"),
            Window::Tokens(n) => write!(f, "Tokens({n})"),
            Window::Lookup(_) => f.write_str("Lookup"),
        }
    }
}

/// One provider and model in the chain.
#[derive(Debug, Clone)]
pub struct Route {
    pub provider: Arc<dyn Provider>,
    /// The model to ask; `None` keeps the request's.
    pub model: Option<String>,
    /// Ignored for the first route.
    pub when: FallbackWhen,
    pub window: Window,
}

impl Route {
    pub fn new(provider: Arc<dyn Provider>) -> Self {
        Route { provider, model: None, when: FallbackWhen::default(), window: Window::Unknown }
    }
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }
    pub fn when(mut self, when: FallbackWhen) -> Self {
        self.when = when;
        self
    }
    pub fn window(mut self, window: Window) -> Self {
        self.window = window;
        self
    }
    fn label(&self, request_model: &str) -> String {
        format!("{}:{}", self.provider.name(), self.model.as_deref().unwrap_or(request_model))
    }
}

/// The route that answered a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteAnswer {
    /// Its place in the chain (0: the primary).
    pub index: usize,
    /// Its provider's name.
    pub provider: String,
    /// The model it was asked for.
    pub model: String,
    /// Tries the call took over every route (1: the first try of the first route answered).
    pub tries: u32,
}

#[derive(Debug)]
struct Slot {
    route: Route,
    breaker: Mutex<Breaker>,
}

impl Slot {
    fn breaker(&self) -> std::sync::MutexGuard<'_, Breaker> {
        self.breaker.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A [`Provider`] that retries, breaks circuits and falls back. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Router {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    name: String,
    slots: Vec<Arc<Slot>>,
    retry: RetryPolicy,
    clock: Arc<dyn RouterClock>,
    last_answer: Mutex<Option<RouteAnswer>>,
}

impl Router {
    /// A router over `routes` (the first is the primary). Panics never; an empty chain answers
    /// every call with a configuration error.
    pub fn new(
        routes: Vec<Route>,
        retry: RetryPolicy,
        breaker: BreakerPolicy,
        clock: Arc<dyn RouterClock>,
    ) -> Self {
        let mut names: Vec<&str> = Vec::new();
        for r in &routes {
            if !names.contains(&r.provider.name()) {
                names.push(r.provider.name());
            }
        }
        let name = names.join("+");
        let slots = routes
            .into_iter()
            .map(|route| Arc::new(Slot { route, breaker: Mutex::new(Breaker::new(breaker)) }))
            .collect();
        let last_answer = Mutex::new(None);
        Router { inner: Arc::new(Inner { name, slots, retry, clock, last_answer }) }
    }

    /// One route with the default policies and the real clock.
    pub fn single(provider: Arc<dyn Provider>) -> Self {
        Router::new(
            vec![Route::new(provider)],
            RetryPolicy::default(),
            BreakerPolicy::default(),
            Arc::new(SystemClock::default()),
        )
    }

    /// The route that answered the most recent call through this router (set when a route
    /// produces its first event; cleared when a call starts, so a call that every route failed
    /// leaves `None`). Calls made concurrently through one router share this slot: it names
    /// whichever committed last, so read it right after a call's stream ends.
    pub fn last_answer(&self) -> Option<RouteAnswer> {
        self.inner.last_answer.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Each route's breaker state, in chain order.
    pub fn breaker_states(&self) -> Vec<BreakerState> {
        self.inner.slots.iter().map(|s| s.breaker().state()).collect()
    }
}

impl Provider for Router {
    fn name(&self) -> &str {
        &self.inner.name
    }

    fn stream(&self, request: ChatRequest) -> ChatStream {
        let inner = Arc::clone(&self.inner);
        Box::pin(stream::once(async move { inner.route(request).await }).flatten())
    }
}

/// Whether a failure says something about the provider's health.
fn counts_against(error: &ProviderError) -> bool {
    error.is_retryable()
}

impl Inner {
    async fn route(self: Arc<Self>, request: ChatRequest) -> ChatStream {
        self.answered(None);
        // Escalation: the last fallback whose threshold the request is above starts the chain.
        // The request is only counted when some route has a threshold.
        let thresholds =
            self.slots.iter().skip(1).any(|s| s.route.when.above_input_tokens.is_some());
        let estimate = if thresholds { crate::tokens::count_input(&request) } else { 0 };
        let start = self
            .slots
            .iter()
            .enumerate()
            .skip(1)
            .filter(|(_, s)| s.route.when.above_input_tokens.is_some_and(|n| estimate > n))
            .map(|(i, _)| i)
            .next_back()
            .unwrap_or(0);
        if start > 0 {
            tracing::info!(estimate, route = %self.slots[start].route.label(&request.model), "large request: starting at a fallback route");
        }
        let mut last: Option<ProviderError> = None;
        let mut tries = 0;
        for (i, slot) in self.slots.iter().enumerate().skip(start) {
            if let Some(err) = &last {
                let when = slot.route.when;
                let eligible = match err {
                    ProviderError::ContextLengthExceeded { .. } => when.on_context_overflow,
                    _ => when.on_error,
                };
                if !eligible {
                    continue;
                }
                tracing::warn!(from = %self.slots[i - 1].route.label(&request.model), to = %slot.route.label(&request.model), kind = err.kind(), "falling back");
            }
            match self.try_route(slot, request.clone(), &mut tries).await {
                Ok(stream) => {
                    self.answered(Some(RouteAnswer {
                        index: i,
                        provider: slot.route.provider.name().to_owned(),
                        model: slot.route.model.clone().unwrap_or_else(|| request.model.clone()),
                        tries,
                    }));
                    return stream;
                }
                Err(err) => last = Some(err),
            }
        }
        failed(last.unwrap_or_else(|| ProviderError::Config {
            message: "no model route is configured".into(),
        }))
    }

    fn answered(&self, answer: Option<RouteAnswer>) {
        *self.last_answer.lock().unwrap_or_else(|p| p.into_inner()) = answer;
    }

    async fn try_route(
        &self,
        slot: &Arc<Slot>,
        mut request: ChatRequest,
        tries: &mut u32,
    ) -> Result<ChatStream, ProviderError> {
        if let Some(model) = &slot.route.model {
            request.model = model.clone();
        }
        let label = slot.route.label(&request.model);
        let mut attempt = 0;
        loop {
            attempt += 1;
            if let Err(wait) = slot.breaker().admit(self.clock.now()) {
                return Err(ProviderError::Http {
                    status: 503,
                    body: format!(
                        "the circuit breaker for {label} is open after repeated failures; ARIA will try it again in {}s",
                        wait.as_secs().max(1)
                    ),
                });
            }
            *tries += 1;
            match self.attempt(slot, &request).await {
                Ok(stream) => {
                    slot.breaker().success();
                    return Ok(self.watch(slot, stream));
                }
                Err(err) => {
                    if counts_against(&err) {
                        slot.breaker().failure(self.clock.now());
                    }
                    if !err.is_retryable() || attempt >= self.retry.attempts {
                        return Err(err);
                    }
                    let Some(delay) = self.retry.delay(attempt, &err, self.clock.random()) else {
                        return Err(err);
                    };
                    tracing::warn!(route = %label, attempt, kind = err.kind(), delay_ms = delay.as_millis() as u64, "retrying the model call");
                    self.clock.sleep(delay).await;
                }
            }
        }
    }

    /// One try: fit, send, and wait for the first event.
    async fn attempt(
        &self,
        slot: &Slot,
        request: &ChatRequest,
    ) -> Result<ChatStream, ProviderError> {
        let mut request = request.clone();
        let window = match &slot.route.window {
            Window::Unknown => None,
            Window::Tokens(n) => Some(*n),
            Window::Lookup(lookup) => Some(lookup(request.model.clone()).await?),
        };
        if let Some(window) = window {
            let budget = ContextBudget::new(window);
            if !budget.fits_by_bytes(&request) {
                budget.fit(&mut request)?;
            }
        }
        let mut stream = slot.route.provider.stream(request);
        match stream.next().await {
            Some(Ok(first)) => Ok(Box::pin(stream::once(async move { Ok(first) }).chain(stream))),
            Some(Err(err)) => Err(err),
            None => Ok(Box::pin(stream::empty())),
        }
    }

    /// A committed stream: a later failure still counts against the route's breaker.
    fn watch(&self, slot: &Arc<Slot>, stream: ChatStream) -> ChatStream {
        let slot = Arc::clone(slot);
        let clock = Arc::clone(&self.clock);
        Box::pin(stream.inspect(move |item| {
            if let Err(err) = item
                && counts_against(err)
            {
                slot.breaker().failure(clock.now());
            }
        }))
    }
}

#[cfg(test)]
mod tests;
