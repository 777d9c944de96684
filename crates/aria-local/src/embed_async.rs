//! [`LocalEmbedderHandle`]: the in-process embedder behind [`aria_api::Embedder`]. The forward
//! pass is CPU-bound and blocking, so each batch runs on its own OS thread and the returned
//! future only waits for the answer; no async runtime is assumed.

use std::sync::Arc;

use aria_api::{EmbedError, Embedder, check_embed_batch};
use futures::future::BoxFuture;

use crate::embed::LocalEmbedder;

/// A shared [`LocalEmbedder`] with its stable model id (`local:<catalog name>`).
#[derive(Debug, Clone)]
pub struct LocalEmbedderHandle {
    inner: Arc<LocalEmbedder>,
    model_id: String,
}

impl LocalEmbedderHandle {
    /// `name` is the model's catalog name (e.g. `all-minilm-l6-v2`); the id becomes
    /// `local:all-minilm-l6-v2`.
    pub fn new(inner: Arc<LocalEmbedder>, name: &str) -> LocalEmbedderHandle {
        LocalEmbedderHandle { inner, model_id: format!("local:{name}") }
    }

    pub fn embedder(&self) -> &LocalEmbedder {
        &self.inner
    }
}

impl Embedder for LocalEmbedderHandle {
    /// The embedded model: nothing leaves the process.
    fn on_this_machine(&self) -> bool {
        true
    }

    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn dims(&self) -> usize {
        self.inner.dimensions()
    }

    /// The tokenizer's own windows ([`LocalEmbedder::passages`]); by words when it fails.
    fn passages(&self, text: &str) -> Vec<std::ops::Range<usize>> {
        self.inner.passages(text).unwrap_or_else(|e| {
            tracing::debug!("cutting a text into passages by tokens failed ({e}); cut by words");
            aria_api::word_passages(text, aria_api::PASSAGE_WORDS, aria_api::PASSAGE_OVERLAP)
        })
    }

    fn embed(&self, texts: &[String]) -> BoxFuture<'static, Result<Vec<Vec<f32>>, EmbedError>> {
        if texts.is_empty() {
            return Box::pin(async { Ok(Vec::new()) });
        }
        let inner = Arc::clone(&self.inner);
        let texts = texts.to_vec();
        let (tx, rx) = tokio::sync::oneshot::channel();
        let spawned = std::thread::Builder::new().name("aria-embed".into()).spawn(move || {
            let result = inner
                .embed(&texts)
                .map_err(|e| EmbedError::Model { message: e.to_string() })
                .and_then(|vectors| {
                    check_embed_batch(texts.len(), inner.dimensions(), &vectors).map(|()| vectors)
                });
            // The caller may have stopped waiting; then nobody needs the answer.
            let _ = tx.send(result);
        });
        Box::pin(async move {
            spawned.map_err(|e| EmbedError::Model {
                message: format!("could not start the embedding thread: {e}"),
            })?;
            rx.await.map_err(|_| EmbedError::Model {
                message: "the embedding thread stopped without an answer (it panicked)".into(),
            })?
        })
    }
}
