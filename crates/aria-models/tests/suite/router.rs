//! The router against real loopback servers with injected faults: the right retries, breaker
//! states and fallbacks, no panic, and a clear end state. Backoff sleeps go through a fake
//! clock (no real waiting); only the stalled stream waits for its real, short idle timeout.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aria_api::{ChatEvent, Message, Provider, ProviderError};
use aria_models::{
    AnthropicConfig, AnthropicProvider, BreakerPolicy, BreakerState, FallbackWhen, OllamaConfig,
    OllamaProvider, OpenAiConfig, OpenAiProvider, RetryPolicy, Route, Router, RouterClock,
    Timeouts,
};
use aria_testkit::anthropic_mock::MockAnthropic;
use aria_testkit::mock::{MockServer, MockTurn};
use aria_testkit::ollama_mock::MockOllama;
use aria_testkit::openai_mock::MockOpenAi;
use futures::future::BoxFuture;

use super::{config, drain, request, text_of};

#[derive(Debug)]
struct FakeClock {
    start: Instant,
    offset: Mutex<Duration>,
    slept: Mutex<Vec<Duration>>,
}

impl FakeClock {
    fn new() -> Arc<Self> {
        Arc::new(FakeClock {
            start: Instant::now(),
            offset: Mutex::default(),
            slept: Mutex::default(),
        })
    }
    fn slept(&self) -> Vec<Duration> {
        self.slept.lock().unwrap().clone()
    }
}

impl RouterClock for FakeClock {
    fn now(&self) -> Instant {
        self.start + *self.offset.lock().unwrap()
    }
    fn sleep(&self, d: Duration) -> BoxFuture<'static, ()> {
        self.slept.lock().unwrap().push(d);
        *self.offset.lock().unwrap() += d;
        Box::pin(async {})
    }
    fn random(&self) -> f64 {
        0.0
    }
}

fn openai(server: &MockServer, idle: Duration) -> Arc<dyn Provider> {
    Arc::new(
        OpenAiProvider::new(OpenAiConfig { idle_timeout: idle, ..config(&server.base_url()) })
            .unwrap(),
    )
}

fn router(routes: Vec<Route>, clock: &Arc<FakeClock>) -> Router {
    Router::new(routes, RetryPolicy::default(), BreakerPolicy::default(), clock.clone())
}

#[tokio::test]
async fn rate_limit_with_retry_after_then_503_then_success() {
    let server = MockOpenAi::start(vec![
        MockTurn::Error { status: 429, body: "{\"error\":{\"message\":\"slow\",\"type\":\"requests\",\"code\":\"rate_limit_exceeded\"}}".into(), retry_after: Some(2) },
        MockTurn::status(503),
        MockTurn::text("finally"),
    ])
    .await;
    let clock = FakeClock::new();
    let r = router(vec![Route::new(openai(&server, Duration::from_secs(5)))], &clock);
    let (events, err) = drain(&r, request(vec![Message::user("hi")])).await;
    assert_eq!(err, None);
    assert_eq!(text_of(&events), "finally");
    assert_eq!(server.hits(), 3);
    assert_eq!(
        clock.slept(),
        [Duration::from_secs(2), Duration::from_millis(500)],
        "Retry-After, then backoff"
    );
    assert_eq!(r.breaker_states(), [BreakerState::Closed { failures: 0 }]);
}

#[tokio::test]
async fn a_stalled_stream_and_truncated_json_before_any_event_are_retried() {
    let cut = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel";
    let server =
        MockOpenAi::start(vec![MockTurn::Stall, MockTurn::Raw(cut.into()), MockTurn::text("ok")])
            .await;
    let clock = FakeClock::new();
    let r = router(vec![Route::new(openai(&server, Duration::from_millis(150)))], &clock);
    let (events, err) = drain(&r, request(vec![Message::user("hi")])).await;
    assert_eq!(err, None);
    assert_eq!(text_of(&events), "ok");
    assert_eq!(server.hits(), 3);
}

#[tokio::test]
async fn a_reset_after_text_was_streamed_ends_with_a_clear_error_and_is_not_replayed() {
    let server = MockOpenAi::start(vec![MockTurn::Truncated, MockTurn::text("unused")]).await;
    let clock = FakeClock::new();
    let r = router(vec![Route::new(openai(&server, Duration::from_secs(5)))], &clock);
    let (events, err) = drain(&r, request(vec![Message::user("hi")])).await;
    assert_eq!(text_of(&events), "Hel", "what was shown stays shown");
    assert_eq!(err.unwrap().kind(), "malformed_stream");
    assert_eq!(server.hits(), 1, "text already shown is never duplicated by a silent retry");
    assert_eq!(r.breaker_states(), [BreakerState::Closed { failures: 1 }]);
}

#[tokio::test]
async fn a_failing_ollama_falls_back_to_anthropic_and_its_breaker_opens() {
    let ollama = MockOllama::new(vec![MockTurn::status(500)])
        .on_script_end(aria_testkit::mock::ScriptEnd::Repeat)
        .serve();
    let anthropic =
        MockAnthropic::start(vec![MockTurn::text("from claude"), MockTurn::text("claude again")])
            .await;
    let fast = Timeouts {
        connect: Duration::from_secs(2),
        first_byte: Duration::from_secs(5),
        idle: Duration::from_secs(5),
        request: None,
    };
    let local =
        OllamaProvider::new(OllamaConfig { timeouts: fast, ..OllamaConfig::new(ollama.url()) })
            .unwrap();
    let cloud = AnthropicProvider::new(AnthropicConfig {
        timeouts: fast,
        ..AnthropicConfig::new(anthropic.url(), "sk-ant")
    })
    .unwrap();
    let clock = FakeClock::new();
    let when = FallbackWhen { on_error: true, ..FallbackWhen::default() };
    let r = router(
        vec![
            Route::new(Arc::new(local)).model("mock-model"),
            Route::new(Arc::new(cloud)).model("claude-mock").when(when),
        ],
        &clock,
    );
    assert_eq!(r.name(), "ollama+anthropic");
    let (events, err) = drain(&r, request(vec![Message::user("hi")])).await;
    assert_eq!(err, None);
    assert_eq!(text_of(&events), "from claude");
    assert_eq!(ollama.hits(), 3, "three tries before falling back");
    assert!(matches!(r.breaker_states()[0], BreakerState::Open { .. }));
    assert_eq!(anthropic.requests()[0]["model"], "claude-mock");

    let (events, _) = drain(&r, request(vec![Message::user("again")])).await;
    assert_eq!(text_of(&events), "claude again");
    assert_eq!(ollama.hits(), 3, "the open breaker moved on without a request");
}

#[tokio::test]
async fn when_every_route_fails_the_last_classified_error_comes_out() {
    let server = MockOpenAi::new(vec![MockTurn::status(502)])
        .on_script_end(aria_testkit::mock::ScriptEnd::Repeat)
        .serve();
    let clock = FakeClock::new();
    let r = router(vec![Route::new(openai(&server, Duration::from_secs(5)))], &clock);
    let (events, err) = drain(&r, request(vec![Message::user("hi")])).await;
    assert!(events.is_empty());
    assert!(matches!(err, Some(ProviderError::Http { status: 502, .. })), "{err:?}");
    let (_, err) = drain(&r, request(vec![Message::user("hi")])).await;
    let err = err.unwrap();
    assert!(err.to_string().contains("circuit breaker"), "{err}");
    assert_eq!(server.hits(), 3);
    assert!(!events.iter().any(|e| matches!(e, ChatEvent::Finished { .. })));
}
