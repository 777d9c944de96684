//! The embedding endpoints of the mocks: Ollama's `POST /api/embed` and OpenAI's
//! `POST /v1/embeddings`, in their real request and answer shapes.
//!
//! - Ollama: request `{"model", "input": "text" | ["text", ...], "truncate"?}`, answer
//!   `{"model", "embeddings": [[...], ...], "total_duration", "load_duration",
//!   "prompt_eval_count"}`; an unknown model is a 404 `{"error": "model \"x\" not found, try
//!   pulling it first"}` as Ollama answers.
//! - OpenAI: request `{"model", "input": "text" | ["text", ...], "encoding_format"?}`, answer
//!   `{"object": "list", "data": [{"object": "embedding", "index", "embedding"}], "model",
//!   "usage": {"prompt_tokens", "total_tokens"}}`. The mock lists `data` in *reverse* order:
//!   the API promises an `index` per item, not an order, and clients must use it.
//!
//! Vectors are [`toy_embedding`]s of [`crate::mock::Mock::embed_dims`] dimensions; requests are
//! logged with [`crate::mock::MockServer::other_requests`] under their path; the first requests
//! can be answered with [`crate::mock::Mock::embed_errors`].

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Value, json};

use crate::mock::{MockTurn, Plan, Shared};

/// A deterministic unit vector for `text`: each lowercase alphanumeric word adds 1 to the
/// dimension its FNV-1a hash picks, then the vector is normalised. Texts sharing words are
/// similar; a text with no words is the first axis.
pub fn toy_embedding(text: &str, dims: usize) -> Vec<f32> {
    let mut v = vec![0.0f32; dims.max(1)];
    let buckets = v.len() as u64;
    let lower = text.to_lowercase();
    for word in lower.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for byte in word.bytes() {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
        v[(hash % buckets) as usize] += 1.0;
    }
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm == 0.0 {
        v[0] = 1.0;
    } else {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    v
}

fn inputs(request: &Value) -> Option<Vec<String>> {
    match request.get("input")? {
        Value::String(s) => Some(vec![s.clone()]),
        Value::Array(items) => items.iter().map(|i| i.as_str().map(str::to_owned)).collect(),
        _ => None,
    }
}

fn respond(status: StatusCode, body: Value) -> Response {
    Plan::json(status, body.to_string()).into_response(std::time::Duration::ZERO)
}

fn scripted_error(turn: &MockTurn) -> Response {
    match turn {
        MockTurn::Error { status, body, retry_after } => {
            Plan::error(*status, body, *retry_after).into_response(std::time::Duration::ZERO)
        }
        other => respond(
            StatusCode::INTERNAL_SERVER_ERROR,
            json!({"error": format!("mock: embed_errors holds a non-error turn {other:?}")}),
        ),
    }
}

pub(crate) async fn ollama_embed(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    shared.record_other("/api/embed", request.clone());
    if let Some(turn) = shared.next_embed_error() {
        return scripted_error(turn);
    }
    let model = request.get("model").and_then(Value::as_str).unwrap_or_default();
    if !shared.config.models.iter().any(|m| m == model) {
        let message = format!("model \"{model}\" not found, try pulling it first");
        return respond(StatusCode::NOT_FOUND, json!({"error": message}));
    }
    let Some(texts) = inputs(&request) else {
        return respond(StatusCode::BAD_REQUEST, json!({"error": "invalid input type"}));
    };
    let embeddings: Vec<Vec<f32>> =
        texts.iter().map(|t| toy_embedding(t, shared.config.embed_dims)).collect();
    let tokens: usize = texts.iter().map(|t| t.split_whitespace().count()).sum();
    respond(
        StatusCode::OK,
        json!({
            "model": model,
            "embeddings": embeddings,
            "total_duration": 14_143_917,
            "load_duration": 1_019_500,
            "prompt_eval_count": tokens,
        }),
    )
}

pub(crate) async fn openai_embed(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    shared.record_other("/v1/embeddings", request.clone());
    if let Some(turn) = shared.next_embed_error() {
        return scripted_error(turn);
    }
    let model = request.get("model").and_then(Value::as_str).unwrap_or_default().to_owned();
    let Some(texts) = inputs(&request) else {
        let error = json!({"error": {"message": "'input' is a required property",
            "type": "invalid_request_error", "param": "input", "code": null}});
        return respond(StatusCode::BAD_REQUEST, error);
    };
    let data: Vec<Value> = texts
        .iter()
        .enumerate()
        .rev()
        .map(|(i, t)| {
            json!({"object": "embedding", "index": i,
                   "embedding": toy_embedding(t, shared.config.embed_dims)})
        })
        .collect();
    let tokens: usize = texts.iter().map(|t| t.split_whitespace().count()).sum();
    respond(
        StatusCode::OK,
        json!({
            "object": "list",
            "data": data,
            "model": model,
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toy_embeddings_are_unit_deterministic_and_share_words() {
        let a = toy_embedding("my favourite colour is blue", 16);
        assert_eq!(a, toy_embedding("My favourite colour is BLUE!", 16));
        assert!((a.iter().map(|x| x * x).sum::<f32>() - 1.0).abs() < 1e-5);
        let dot = |x: &[f32], y: &[f32]| x.iter().zip(y).map(|(a, b)| a * b).sum::<f32>();
        let near = toy_embedding("what is my favourite colour", 16);
        let far = toy_embedding("quarterly tax return deadline", 16);
        assert!(dot(&a, &near) > dot(&a, &far));
        assert_eq!(toy_embedding("", 4), vec![1.0, 0.0, 0.0, 0.0]);
    }
}
