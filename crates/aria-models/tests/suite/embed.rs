//! The HTTP embedders against the mocks' `/api/embed` and `/v1/embeddings`: the requests sent,
//! batching, order, and error classification.

use aria_api::{EmbedError, Embedder};
use aria_models::{EmbedWire, HttpEmbedder, HttpEmbedderConfig};
use aria_testkit::mock::{Mock, MockServer, MockTurn, ScriptEnd};
use aria_testkit::ollama_mock::MockOllama;
use aria_testkit::toy_embedding;
use pretty_assertions::assert_eq;
use serde_json::json;

fn texts(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn ollama(server: &MockServer, batch: usize) -> HttpEmbedder {
    let mut config = HttpEmbedderConfig::new(EmbedWire::Ollama, &server.url(), "mock-model", 8);
    config.batch = batch;
    HttpEmbedder::new(config).unwrap()
}

fn openai(server: &MockServer, key: Option<&str>) -> HttpEmbedder {
    let base = format!("{}/v1", server.url());
    let mut config = HttpEmbedderConfig::new(EmbedWire::OpenAi, &base, "text-embedding-3-small", 8);
    config.api_key = key.map(str::to_owned);
    HttpEmbedder::new(config).unwrap()
}

#[tokio::test]
async fn ollama_embeds_in_batches_and_keeps_the_order() {
    let server = MockOllama::new(vec![]).serve();
    let embedder = ollama(&server, 2);
    assert_eq!(embedder.model_id(), "ollama:mock-model");
    assert_eq!(embedder.dims(), 8);
    let input = texts(&["one apple", "two pears", "three plums"]);
    let got = embedder.embed(&input).await.unwrap();
    let want: Vec<Vec<f32>> = input.iter().map(|t| toy_embedding(t, 8)).collect();
    assert_eq!(got, want);
    let requests = server.other_requests();
    assert_eq!(requests.len(), 2, "two batches of at most 2");
    assert_eq!(requests[0].0, "/api/embed");
    assert_eq!(
        requests[0].1,
        json!({"model": "mock-model", "input": ["one apple", "two pears"], "truncate": true})
    );
    assert_eq!(requests[1].1["input"], json!(["three plums"]));
    assert!(embedder.embed(&[]).await.unwrap().is_empty());
    assert_eq!(server.other_requests().len(), 2, "an empty batch sends nothing");
}

#[tokio::test]
async fn ollama_unknown_model_and_wrong_dims_are_named_errors() {
    let server = MockOllama::new(vec![]).serve();
    let config = HttpEmbedderConfig::new(EmbedWire::Ollama, &server.url(), "nomic-embed-text", 8);
    let err = HttpEmbedder::new(config).unwrap().embed(&texts(&["x"])).await.unwrap_err();
    assert!(
        matches!(&err, EmbedError::Http { status: 404, body } if body.contains("ollama pull")),
        "{err}"
    );
    assert!(!err.is_retryable());
    let config = HttpEmbedderConfig::new(EmbedWire::Ollama, &server.url(), "mock-model", 768);
    let err = HttpEmbedder::new(config).unwrap().embed(&texts(&["x"])).await.unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("8 dimensions, expected 768") && msg.contains("dims"), "{msg}");
}

#[tokio::test]
async fn openai_sends_the_key_and_reorders_data_by_index() {
    let server = Mock::new(vec![]).serve();
    let embedder = openai(&server, Some("sk-test-123"));
    assert_eq!(embedder.model_id(), "openai:text-embedding-3-small");
    let input = texts(&["alpha beta", "gamma", "delta epsilon zeta"]);
    let got = embedder.embed(&input).await.unwrap();
    let want: Vec<Vec<f32>> = input.iter().map(|t| toy_embedding(t, 8)).collect();
    assert_eq!(got, want, "the mock lists data in reverse; index puts it back");
    let (path, body) = server.other_requests().remove(0);
    assert_eq!(path, "/v1/embeddings");
    assert_eq!(
        body,
        json!({"model": "text-embedding-3-small", "input": input, "encoding_format": "float"})
    );
    let headers = server.request_headers();
    assert!(headers.is_empty(), "embedding requests are not chat requests: {headers:?}");
}

#[tokio::test]
async fn openai_errors_are_classified() {
    let server = Mock::new(vec![])
        .on_script_end(ScriptEnd::Fail)
        .embed_errors(vec![
            MockTurn::error(
                401,
                "invalid_request_error",
                Some("invalid_api_key"),
                "Incorrect API key provided",
            ),
            MockTurn::status(503),
        ])
        .serve();
    let embedder = openai(&server, Some("sk-wrong"));
    let auth = embedder.embed(&texts(&["x"])).await.unwrap_err();
    assert!(matches!(auth, EmbedError::Auth { .. }), "{auth}");
    let busy = embedder.embed(&texts(&["x"])).await.unwrap_err();
    assert!(matches!(busy, EmbedError::Http { status: 503, .. }) && busy.is_retryable(), "{busy}");
    assert_eq!(embedder.embed(&texts(&["x"])).await.unwrap().len(), 1, "then it answers");
}

#[tokio::test]
async fn a_server_that_is_not_there_is_a_network_error() {
    let server = MockOllama::new(vec![]).serve();
    let url = server.url();
    server.shutdown();
    let config = HttpEmbedderConfig::new(EmbedWire::Ollama, &url, "mock-model", 8);
    let err = HttpEmbedder::new(config).unwrap().embed(&texts(&["x"])).await.unwrap_err();
    assert!(matches!(err, EmbedError::Network { .. }) && err.is_retryable(), "{err}");
}
