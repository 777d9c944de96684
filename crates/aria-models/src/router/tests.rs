use std::collections::VecDeque;

use aria_api::{ChatEvent, FinishReason, Message};
use futures::executor::block_on;

use super::*;

/// A clock whose sleeps return at once and move its time forward.
#[derive(Debug)]
pub(crate) struct FakeClock {
    start: Instant,
    offset: Mutex<Duration>,
    pub(crate) slept: Mutex<Vec<Duration>>,
}

impl FakeClock {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(FakeClock {
            start: Instant::now(),
            offset: Mutex::default(),
            slept: Mutex::default(),
        })
    }
    fn advance(&self, d: Duration) {
        *self.offset.lock().unwrap() += d;
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
        self.advance(d);
        Box::pin(async {})
    }
    fn random(&self) -> f64 {
        0.5
    }
}

/// A provider answering from a queue of outcomes, recording the models it was asked for.
#[derive(Debug)]
struct Fake {
    name: &'static str,
    outcomes: Mutex<VecDeque<Result<&'static str, ProviderError>>>,
    asked: Mutex<Vec<ChatRequest>>,
}

impl Fake {
    fn new(name: &'static str, outcomes: Vec<Result<&'static str, ProviderError>>) -> Arc<Self> {
        Arc::new(Fake { name, outcomes: Mutex::new(outcomes.into()), asked: Mutex::default() })
    }
    fn calls(&self) -> usize {
        self.asked.lock().unwrap().len()
    }
}

impl Provider for Fake {
    fn name(&self) -> &str {
        self.name
    }
    fn stream(&self, request: ChatRequest) -> ChatStream {
        self.asked.lock().unwrap().push(request);
        let outcome = self.outcomes.lock().unwrap().pop_front().unwrap_or(Ok("default"));
        match outcome {
            Ok(text) => Box::pin(stream::iter(vec![
                Ok(ChatEvent::TextDelta { text: text.into() }),
                Ok(ChatEvent::Finished { reason: FinishReason::Stop }),
            ])),
            Err(err) => failed(err),
        }
    }
}

fn request(text: &str) -> ChatRequest {
    ChatRequest {
        model: "primary-model".into(),
        messages: vec![Message::user(text)],
        tools: vec![],
        max_tokens: Some(16),
        temperature: None,
    }
}

fn router(routes: Vec<Route>, clock: &Arc<FakeClock>) -> Router {
    Router::new(routes, RetryPolicy::default(), BreakerPolicy::default(), clock.clone())
}

fn answer(router: &Router, text: &str) -> Result<String, ProviderError> {
    block_on(router.complete(request(text))).map(|r| r.text)
}

fn http(status: u16) -> ProviderError {
    ProviderError::Http { status, body: String::new() }
}

#[test]
fn retryable_failures_are_retried_with_backoff_then_succeed() {
    let clock = FakeClock::new();
    let fake = Fake::new("a", vec![Err(http(503)), Err(http(500)), Ok("third time")]);
    let r = router(vec![Route::new(fake.clone())], &clock);
    assert_eq!(answer(&r, "hi").unwrap(), "third time");
    assert_eq!(fake.calls(), 3);
    // Equal jitter with random 0.5: 3/4 of 500 ms, then 3/4 of 1 s.
    assert_eq!(clock.slept(), [Duration::from_millis(375), Duration::from_millis(750)]);
}

#[test]
fn retry_after_is_honoured_and_three_tries_is_the_limit() {
    let clock = FakeClock::new();
    let limited = ProviderError::RateLimited { retry_after: Some(Duration::from_secs(7)) };
    let fake = Fake::new(
        "a",
        vec![Err(limited.clone()), Err(limited.clone()), Err(limited.clone()), Ok("never")],
    );
    let r = router(vec![Route::new(fake.clone())], &clock);
    assert_eq!(answer(&r, "hi").unwrap_err(), limited);
    assert_eq!(fake.calls(), 3);
    assert_eq!(clock.slept(), [Duration::from_secs(7), Duration::from_secs(7)]);
}

#[test]
fn a_retry_after_longer_than_the_limit_and_non_retryable_errors_are_not_retried() {
    let clock = FakeClock::new();
    let long = ProviderError::RateLimited { retry_after: Some(Duration::from_secs(3600)) };
    let auth = ProviderError::Auth { message: "bad key".into() };
    let fake = Fake::new("a", vec![Err(long.clone()), Err(auth.clone())]);
    let r = router(vec![Route::new(fake.clone())], &clock);
    assert_eq!(answer(&r, "1").unwrap_err(), long);
    assert_eq!(answer(&r, "2").unwrap_err(), auth);
    assert_eq!(fake.calls(), 2);
    assert!(clock.slept().is_empty());
}

#[test]
fn the_breaker_opens_skips_to_the_fallback_at_once_and_closes_after_a_good_probe() {
    let clock = FakeClock::new();
    let down =
        Fake::new("down", vec![Err(http(503)), Err(http(503)), Err(http(503)), Ok("recovered")]);
    let backup = Fake::new("backup", vec![Ok("from backup"), Ok("backup again")]);
    let on_error = FallbackWhen { on_error: true, ..FallbackWhen::default() };
    let r = router(
        vec![
            Route::new(down.clone()),
            Route::new(backup.clone()).model("backup-model").when(on_error),
        ],
        &clock,
    );

    assert_eq!(answer(&r, "1").unwrap(), "from backup");
    assert_eq!(down.calls(), 3, "three tries, then the fallback");
    assert!(matches!(r.breaker_states()[0], BreakerState::Open { .. }));
    assert_eq!(backup.asked.lock().unwrap()[0].model, "backup-model");

    let slept_before = clock.slept().len();
    assert_eq!(answer(&r, "2").unwrap(), "backup again");
    assert_eq!(down.calls(), 3, "an open breaker sends nothing");
    assert_eq!(clock.slept().len(), slept_before, "and waits for nothing");

    clock.advance(Duration::from_secs(30));
    assert_eq!(answer(&r, "3").unwrap(), "recovered", "the half-open probe succeeds");
    assert_eq!(r.breaker_states()[0], BreakerState::Closed { failures: 0 });
}

#[test]
fn fallback_conditions_are_respected() {
    let clock = FakeClock::new();
    let overflow = ProviderError::ContextLengthExceeded { message: "too long".into() };
    let primary =
        Fake::new("p", vec![Err(overflow.clone()), Err(http(500)), Err(http(500)), Err(http(500))]);
    let big = Fake::new("big", vec![Ok("big context")]);
    let only_overflow = FallbackWhen { on_context_overflow: true, ..FallbackWhen::default() };
    let r = router(
        vec![Route::new(primary.clone()), Route::new(big.clone()).when(only_overflow)],
        &clock,
    );
    assert_eq!(answer(&r, "long").unwrap(), "big context");
    assert_eq!(primary.calls(), 1, "context overflow is not retried");
    let err = answer(&r, "fails").unwrap_err();
    assert_eq!(err, http(500), "a plain error does not go to an overflow-only fallback");
    assert_eq!(big.calls(), 1);
}

#[test]
fn a_request_above_the_threshold_starts_at_the_escalation_route() {
    let clock = FakeClock::new();
    let local = Fake::new("local", vec![Ok("small")]);
    let cloud = Fake::new("cloud", vec![Ok("escalated")]);
    let when = FallbackWhen { above_input_tokens: Some(50), ..FallbackWhen::default() };
    let r = router(vec![Route::new(local.clone()), Route::new(cloud.clone()).when(when)], &clock);
    assert_eq!(answer(&r, "short").unwrap(), "small");
    assert_eq!(answer(&r, &"long text ".repeat(40)).unwrap(), "escalated");
    assert_eq!((local.calls(), cloud.calls()), (1, 1));
}

#[test]
fn a_request_that_cannot_fit_the_window_is_never_sent() {
    let clock = FakeClock::new();
    let small = Fake::new("small", vec![]);
    let big = Fake::new("big", vec![Ok("fits here")]);
    let overflow = FallbackWhen { on_context_overflow: true, ..FallbackWhen::default() };
    let r = router(
        vec![
            Route::new(small.clone()).window(Window::Tokens(64)),
            Route::new(big.clone()).window(Window::Tokens(100_000)).when(overflow),
        ],
        &clock,
    );
    assert_eq!(answer(&r, &"word ".repeat(200)).unwrap(), "fits here");
    assert_eq!(small.calls(), 0);
    let alone = router(vec![Route::new(small.clone()).window(Window::Tokens(64))], &clock);
    assert_eq!(answer(&alone, &"word ".repeat(200)).unwrap_err().kind(), "context_length_exceeded");
    assert_eq!(small.calls(), 0);
}

#[test]
fn backoff_doubles_up_to_the_cap_and_jitter_stays_within_half() {
    let policy = RetryPolicy::default();
    let err = http(500);
    assert_eq!(policy.delay(1, &err, 0.0), Some(Duration::from_millis(250)));
    assert_eq!(policy.delay(1, &err, 0.999_999).map(|d| d.as_millis()), Some(499));
    assert_eq!(policy.delay(3, &err, 0.0), Some(Duration::from_secs(1)));
    assert_eq!(policy.delay(30, &err, 0.0), Some(Duration::from_secs(5)));
    let clock = SystemClock::default();
    for _ in 0..1000 {
        let x = clock.random();
        assert!((0.0..1.0).contains(&x));
    }
}

#[test]
fn the_route_that_answered_is_reported_and_a_failed_call_clears_it() {
    let clock = FakeClock::new();
    let primary = Fake::new("p", vec![Ok("from primary"), Err(http(500)), Err(http(500))]);
    let backup = Fake::new("b", vec![Ok("from backup"), Err(http(401))]);
    let on_error = FallbackWhen { on_error: true, ..FallbackWhen::default() };
    let routes = vec![
        Route::new(primary.clone()),
        Route::new(backup.clone()).model("backup-model").when(on_error),
    ];
    let r = Router::new(
        routes,
        RetryPolicy { attempts: 2, ..RetryPolicy::default() },
        BreakerPolicy::default(),
        clock.clone(),
    );
    assert_eq!(r.last_answer(), None, "nothing answered yet");
    assert_eq!(answer(&r, "1").unwrap(), "from primary");
    let primary_answer =
        RouteAnswer { index: 0, provider: "p".into(), model: "primary-model".into(), tries: 1 };
    assert_eq!(r.last_answer(), Some(primary_answer));
    assert_eq!(answer(&r, "2").unwrap(), "from backup");
    let backup_answer =
        // Two tries of the primary (both 500), then the backup's first.
        RouteAnswer { index: 1, provider: "b".into(), model: "backup-model".into(), tries: 3 };
    assert_eq!(r.last_answer(), Some(backup_answer));
    // Primary fails twice (its retries), then the backup refuses: nothing answered.
    primary.outcomes.lock().unwrap().extend([Err(http(500)), Err(http(500))]);
    assert!(answer(&r, "3").is_err());
    assert_eq!(r.last_answer(), None);
}
