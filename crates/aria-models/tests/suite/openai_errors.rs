//! Failures of the OpenAI-compatible provider: each comes out classified, none panics.

use std::time::Duration;

use aria_api::{ChatEvent, Message, Provider, ProviderError};
use aria_models::{OpenAiConfig, OpenAiProvider};
use aria_testkit::openai_mock::{MockOpenAi, MockTurn};
use pretty_assertions::assert_eq;

use super::{config, drain, provider, request};

async fn first_error(turn: MockTurn) -> ProviderError {
    let server = MockOpenAi::start(vec![turn]).await;
    let (events, err) = drain(&provider(&server), request(vec![Message::user("hi")])).await;
    assert!(events.is_empty(), "an error answer yields no events: {events:?}");
    err.expect("the answer should fail")
}

#[tokio::test]
async fn unauthorized_is_auth_with_the_servers_message() {
    let err = first_error(MockTurn::error(
        401,
        "invalid_request_error",
        Some("invalid_api_key"),
        "Incorrect API key provided: sk-test***key.",
    ))
    .await;
    assert_eq!(
        err,
        ProviderError::Auth { message: "Incorrect API key provided: sk-test***key.".into() }
    );
    assert!(!err.is_retryable());
}

#[tokio::test]
async fn too_many_requests_is_rate_limited_with_retry_after() {
    let body = r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#;
    let err =
        first_error(MockTurn::Error { status: 429, body: body.into(), retry_after: Some(7) }).await;
    assert_eq!(err, ProviderError::RateLimited { retry_after: Some(Duration::from_secs(7)) });
    assert!(err.is_retryable());
}

#[tokio::test]
async fn a_server_error_is_http_with_its_body() {
    let err = first_error(MockTurn::Error {
        status: 500,
        body: "upstream exploded".into(),
        retry_after: None,
    })
    .await;
    assert_eq!(err, ProviderError::Http { status: 500, body: "upstream exploded".into() });
    assert!(err.is_retryable());
}

#[tokio::test]
async fn an_overlong_conversation_is_context_length_exceeded() {
    let err = first_error(MockTurn::error(
        400,
        "invalid_request_error",
        Some("context_length_exceeded"),
        "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.",
    ))
    .await;
    assert!(
        matches!(&err, ProviderError::ContextLengthExceeded { message } if message.contains("128000")),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_stalled_stream_hits_the_idle_timeout() {
    let server = MockOpenAi::start(vec![MockTurn::Stall]).await;
    let idle = Duration::from_millis(300);
    let config = OpenAiConfig { idle_timeout: idle, ..config(&server.base_url()) };
    let (events, err) =
        drain(&OpenAiProvider::new(config).unwrap(), request(vec![Message::user("hi")])).await;
    assert!(events.is_empty(), "the role chunk carries no event: {events:?}");
    assert_eq!(err, Some(ProviderError::Timeout { after: idle }));
}

#[tokio::test]
async fn a_server_that_never_answers_hits_the_first_byte_timeout() {
    // Accepts the connection, reads the request, says nothing.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let silent = tokio::spawn(async move {
        let (socket, _) = listener.accept().await.unwrap();
        tokio::time::sleep(Duration::from_secs(30)).await;
        drop(socket);
    });
    let first_byte = Duration::from_millis(300);
    let config =
        OpenAiConfig { first_byte_timeout: first_byte, ..config(&format!("http://{addr}/v1")) };
    let (_, err) =
        drain(&OpenAiProvider::new(config).unwrap(), request(vec![Message::user("hi")])).await;
    assert_eq!(err, Some(ProviderError::Timeout { after: first_byte }));
    silent.abort();
}

#[tokio::test]
async fn the_request_timeout_bounds_a_stream_that_never_pauses_long() {
    let server = MockOpenAi::new(vec![MockTurn::text("a long answer that trickles in slowly")])
        .chunk_delay(Duration::from_millis(50))
        .serve();
    let total = Duration::from_millis(200);
    let config = OpenAiConfig { request_timeout: Some(total), ..config(&server.base_url()) };
    let (events, err) =
        drain(&OpenAiProvider::new(config).unwrap(), request(vec![Message::user("hi")])).await;
    assert!(!events.is_empty(), "some text arrived before the deadline");
    assert_eq!(err, Some(ProviderError::Timeout { after: total }));
}

#[tokio::test]
async fn a_truncated_stream_is_malformed_after_the_text_that_did_arrive() {
    let server = MockOpenAi::start(vec![MockTurn::Truncated]).await;
    let (events, err) = drain(&provider(&server), request(vec![Message::user("hi")])).await;
    assert_eq!(events, [ChatEvent::TextDelta { text: "Hel".into() }]);
    let err = err.expect("a cut stream fails");
    assert_eq!(err.kind(), "malformed_stream", "{err}");
    assert!(err.is_retryable());
}

#[tokio::test]
async fn a_clean_close_with_neither_finish_reason_nor_done_is_malformed() {
    let raw = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"par\"},\"finish_reason\":null}]}\n\n";
    let server = MockOpenAi::start(vec![MockTurn::Raw(raw.into())]).await;
    let (events, err) = drain(&provider(&server), request(vec![Message::user("hi")])).await;
    assert_eq!(events, [ChatEvent::TextDelta { text: "par".into() }]);
    assert!(
        matches!(&err, Some(ProviderError::MalformedStream { message }) if message.contains("no finish_reason"))
    );
}

#[tokio::test]
async fn garbage_in_the_stream_is_malformed() {
    let err =
        first_error(MockTurn::Raw("data: {\"choices\": [oops\n\ndata: [DONE]\n\n".into())).await;
    assert_eq!(err.kind(), "malformed_stream");
}

#[tokio::test]
async fn an_error_object_inside_the_stream_is_classified() {
    let raw = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"},\"finish_reason\":null}]}\n\n",
        "data: {\"error\":{\"message\":\"Rate limit reached for requests\",\"type\":\"rate_limit_error\"}}\n\n",
    );
    let server = MockOpenAi::start(vec![MockTurn::Raw(raw.into())]).await;
    let (events, err) = drain(&provider(&server), request(vec![Message::user("hi")])).await;
    assert_eq!(events, [ChatEvent::TextDelta { text: "a".into() }]);
    assert_eq!(err, Some(ProviderError::RateLimited { retry_after: None }));
}

#[tokio::test]
async fn a_closed_port_is_a_network_error_naming_the_endpoint() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let base = format!("http://127.0.0.1:{port}/v1");
    let (_, err) =
        drain(&OpenAiProvider::new(config(&base)).unwrap(), request(vec![Message::user("hi")]))
            .await;
    match err {
        Some(ProviderError::Network { endpoint, message }) => {
            assert_eq!(endpoint, format!("{base}/chat/completions"));
            assert!(!message.is_empty());
        }
        other => panic!("expected a network error, got {other:?}"),
    }
}

#[tokio::test]
async fn listing_models_classifies_failures_too() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let provider = OpenAiProvider::new(config(&format!("http://127.0.0.1:{port}/v1"))).unwrap();
    assert_eq!(provider.list_models().await.unwrap_err().kind(), "network");
}

#[tokio::test]
async fn more_requests_than_scripted_fail_loudly() {
    let server = MockOpenAi::start(vec![MockTurn::text("only one")]).await;
    let provider = provider(&server);
    assert!(provider.complete(request(vec![Message::user("1")])).await.is_ok());
    let err = provider.complete(request(vec![Message::user("2")])).await.unwrap_err();
    assert!(
        matches!(&err, ProviderError::Http { status: 500, body } if body.contains("script exhausted")),
        "{err}"
    );
}
