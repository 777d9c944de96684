//! The embedder contract: texts in, one vector per text out.
//!
//! An embedder is identified by [`Embedder::model_id`], a stable string such as
//! `local:all-MiniLM-L6-v2`, `ollama:nomic-embed-text` or `openai:text-embedding-3-small`. The
//! memory store records that id beside every vector and never compares vectors from two ids:
//! changing the embedder means re-embedding (`aria memories reindex`), never mixing.

use futures::future::BoxFuture;

/// A sentence embedder. Only [`Embedder::embed`] does work; it is batched, and the returned
/// vector has exactly one entry per input text, in input order, each of length [`Embedder::dims`].
pub trait Embedder: Send + Sync + std::fmt::Debug {
    /// A stable identifier of the model and its provider, e.g. `local:all-MiniLM-L6-v2`.
    fn model_id(&self) -> &str;

    /// The length of every vector this embedder returns.
    fn dims(&self) -> usize;

    /// Embeds a batch of texts. An empty batch yields an empty result without any work.
    fn embed(&self, texts: &[String]) -> BoxFuture<'static, Result<Vec<Vec<f32>>, EmbedError>>;
}

/// A classified embedding failure. Every message says what to do next.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EmbedError {
    #[error(
        "the embedding provider rejected the credentials ({message}); check the API key variable for this provider"
    )]
    Auth { message: String },
    #[error(
        "could not reach the embedding provider at {endpoint}: {message}; check that the server is running and the base URL is right"
    )]
    Network { endpoint: String, message: String },
    #[error("the embedding provider answered HTTP {status}: {body}")]
    Http { status: u16, body: String },
    #[error("the embedding provider sent an answer ARIA could not use: {message}")]
    Malformed { message: String },
    #[error("the embedding model failed: {message}")]
    Model { message: String },
    #[error("the embedder is not configured correctly: {message}")]
    Config { message: String },
}

impl EmbedError {
    /// Whether trying the same batch again may succeed.
    pub fn is_retryable(&self) -> bool {
        match self {
            EmbedError::Network { .. } => true,
            EmbedError::Http { status, .. } => *status >= 500 || *status == 408 || *status == 429,
            EmbedError::Auth { .. }
            | EmbedError::Malformed { .. }
            | EmbedError::Model { .. }
            | EmbedError::Config { .. } => false,
        }
    }

    /// A stable machine name for traces and JSON output.
    pub fn kind(&self) -> &'static str {
        match self {
            EmbedError::Auth { .. } => "auth",
            EmbedError::Network { .. } => "network",
            EmbedError::Http { .. } => "http",
            EmbedError::Malformed { .. } => "malformed",
            EmbedError::Model { .. } => "model",
            EmbedError::Config { .. } => "config",
        }
    }
}

/// Checks that a batch answer has one vector per text, each of the promised length. Embedders
/// call this before returning, so a short or ragged answer is an error rather than a silent
/// misalignment between texts and vectors.
pub fn check_batch(texts: usize, dims: usize, vectors: &[Vec<f32>]) -> Result<(), EmbedError> {
    if vectors.len() != texts {
        return Err(EmbedError::Malformed {
            message: format!("asked for {texts} vectors, got {}", vectors.len()),
        });
    }
    if let Some((i, v)) = vectors.iter().enumerate().find(|(_, v)| v.len() != dims) {
        return Err(EmbedError::Malformed {
            message: format!("vector {i} has {} dimensions, expected {dims}", v.len()),
        });
    }
    if vectors.iter().flatten().any(|x| !x.is_finite()) {
        return Err(EmbedError::Malformed { message: "a vector holds NaN or infinity".into() });
    }
    Ok(())
}

/// Cosine similarity of two vectors of the same length (their dot product when both are unit
/// length); 0 when either is zero.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    if na == 0.0 || nb == 0.0 { 0.0 } else { dot / (na * nb) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_batch_rejects_short_ragged_and_non_finite_answers() {
        assert!(check_batch(2, 3, &[vec![0.0; 3], vec![1.0; 3]]).is_ok());
        let short = check_batch(2, 3, &[vec![0.0; 3]]).unwrap_err();
        assert!(short.to_string().contains("asked for 2 vectors, got 1"), "{short}");
        let ragged = check_batch(2, 3, &[vec![0.0; 3], vec![0.0; 2]]).unwrap_err();
        assert!(ragged.to_string().contains("vector 1 has 2 dimensions"), "{ragged}");
        assert!(check_batch(1, 1, &[vec![f32::NAN]]).is_err());
    }

    #[test]
    fn retryability_is_classified() {
        assert!(EmbedError::Network { endpoint: "e".into(), message: "m".into() }.is_retryable());
        assert!(EmbedError::Http { status: 503, body: String::new() }.is_retryable());
        assert!(EmbedError::Http { status: 429, body: String::new() }.is_retryable());
        assert!(!EmbedError::Http { status: 400, body: String::new() }.is_retryable());
        assert!(!EmbedError::Auth { message: "bad".into() }.is_retryable());
    }
}
