//! The embedded sentence embedder, loaded on first use. Building the agent happens on every
//! `aria chat`/`aria run`; loading the model (~0.5 s) only pays off when a memory search or a
//! memory write actually embeds something, so the weights are read then, once, off the async
//! runtime's threads. The model id and dimension count are known before that from the model's
//! `config.json` (or its pack's header), so the store can check vectors against them without
//! loading anything.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use aria_api::{EmbedError, Embedder};
use aria_local::{LocalEmbedder, LocalEmbedderHandle};
use futures::future::BoxFuture;

/// [`LocalEmbedderHandle`] behind a load on first [`Embedder::embed`]. A failed load is not
/// remembered: the next call tries again (the files may have been fetched meanwhile).
#[derive(Debug)]
pub struct LazyLocalEmbedder {
    inner: Arc<Inner>,
    model_id: String,
    dims: usize,
}

#[derive(Debug)]
struct Inner {
    dir: PathBuf,
    name: String,
    loaded: Mutex<Option<LocalEmbedderHandle>>,
}

impl LazyLocalEmbedder {
    /// Reads only the dimension count (`dir/config.json`, or the pack's header); the weights
    /// wait for first use.
    pub fn new(dir: PathBuf, name: &str) -> Result<LazyLocalEmbedder, EmbedError> {
        let dims = aria_local::embedding_dims(&dir).map_err(|e| EmbedError::Config {
            message: format!("{e}; `aria model pull {name}` fetches it again"),
        })?;
        Ok(LazyLocalEmbedder {
            inner: Arc::new(Inner { dir, name: name.to_owned(), loaded: Mutex::new(None) }),
            model_id: format!("local:{name}"),
            dims,
        })
    }

    /// Whether the weights have been loaded yet.
    #[cfg(test)]
    fn is_loaded(&self) -> bool {
        self.inner.loaded.lock().is_ok_and(|l| l.is_some())
    }
}

impl Inner {
    /// The loaded model, loading it now if this is the first use. Blocking.
    fn handle(&self) -> Result<LocalEmbedderHandle, EmbedError> {
        let mut slot = self.loaded.lock().map_err(|_| EmbedError::Model {
            message: "an earlier load of the embedding model panicked".into(),
        })?;
        if let Some(handle) = slot.as_ref() {
            return Ok(handle.clone());
        }
        let embedder = LocalEmbedder::load(&self.dir).map_err(|e| EmbedError::Model {
            message: format!("loading the embedding model {}: {e}", self.name),
        })?;
        tracing::info!(
            model = self.name.as_str(),
            load_ms = embedder.load_time().as_millis() as u64,
            "embedder loaded on first use"
        );
        let handle = LocalEmbedderHandle::new(Arc::new(embedder), &self.name);
        *slot = Some(handle.clone());
        Ok(handle)
    }
}

impl Embedder for LazyLocalEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn dims(&self) -> usize {
        self.dims
    }

    /// The embedded model: nothing leaves the process.
    fn on_this_machine(&self) -> bool {
        true
    }

    fn embed(&self, texts: &[String]) -> BoxFuture<'static, Result<Vec<Vec<f32>>, EmbedError>> {
        let loaded = self.loaded();
        let texts = texts.to_vec();
        Box::pin(async move { loaded.await?.embed(&texts).await })
    }

    /// The tokenizer's windows, loading the model now if this is the first use (blocking);
    /// by words when it cannot be loaded (embedding says why).
    fn passages(&self, text: &str) -> Vec<std::ops::Range<usize>> {
        match self.inner.handle() {
            Ok(handle) => handle.passages(text),
            Err(_) => {
                aria_api::word_passages(text, aria_api::PASSAGE_WORDS, aria_api::PASSAGE_OVERLAP)
            }
        }
    }

    /// As the default, with the load off the caller's thread.
    fn embed_passages(
        &self,
        texts: &[String],
    ) -> BoxFuture<'static, Result<Vec<Vec<Vec<f32>>>, EmbedError>> {
        let loaded = self.loaded();
        let texts = texts.to_vec();
        Box::pin(async move { loaded.await?.embed_passages(&texts).await })
    }
}

impl LazyLocalEmbedder {
    /// The loaded model: loaded on a thread of its own on first use (it blocks for a while,
    /// like the forward pass; no async runtime is assumed), checked against the dimension
    /// count given out before.
    fn loaded(&self) -> BoxFuture<'static, Result<LocalEmbedderHandle, EmbedError>> {
        let inner = Arc::clone(&self.inner);
        let dims = self.dims;
        let (tx, rx) = tokio::sync::oneshot::channel();
        let spawned = std::thread::Builder::new().name("aria-embed-load".into()).spawn(move || {
            // The caller may have stopped waiting; then nobody needs the answer.
            let _ = tx.send(inner.handle());
        });
        Box::pin(async move {
            spawned.map_err(|e| EmbedError::Model {
                message: format!("could not start the embedding model load: {e}"),
            })?;
            let handle = rx.await.map_err(|_| EmbedError::Model {
                message: "the embedding model load stopped without an answer (it panicked)".into(),
            })??;
            if handle.dims() != dims {
                return Err(EmbedError::Config {
                    message: format!(
                        "the embedding model has {} dimensions but its config.json says {dims}",
                        handle.dims()
                    ),
                });
            }
            Ok(handle)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model_dir(config: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("config.json"), config).unwrap();
        dir
    }

    #[tokio::test]
    async fn nothing_is_loaded_until_the_first_embed_and_a_failed_load_is_retried() {
        // A config.json and no weights: building must succeed (nothing but the config is read),
        // and only embedding finds out that the weights are missing.
        let dir = model_dir(r#"{"hidden_size": 384}"#);
        let lazy = LazyLocalEmbedder::new(dir.path().to_path_buf(), "toy").unwrap();
        assert_eq!((lazy.model_id(), lazy.dims()), ("local:toy", 384));
        assert!(!lazy.is_loaded());
        let err = lazy.embed(&["hello".to_owned()]).await.unwrap_err();
        assert!(matches!(&err, EmbedError::Model { message } if message.contains("toy")), "{err}");
        assert!(!lazy.is_loaded());
        let again = lazy.embed(&["hello".to_owned()]).await.unwrap_err();
        assert_eq!(again.kind(), "model");
    }

    #[test]
    fn a_packs_dimensions_come_from_its_header_alone() {
        let dir = tempfile::tempdir().unwrap();
        let header = br#"{"format": 1, "arch": {"hidden": 384}}"#;
        let mut pack = b"HMSEMB01".to_vec();
        pack.extend((header.len() as u64).to_le_bytes());
        pack.extend(header);
        // No tokenizer, no tensors: only the header is read until the first embed.
        std::fs::write(dir.path().join("toy.hmsemb"), pack).unwrap();
        let lazy = LazyLocalEmbedder::new(dir.path().to_path_buf(), "toy").unwrap();
        assert_eq!(lazy.dims(), 384);
        std::fs::write(dir.path().join("toy.hmsemb"), b"HMSEMB01").unwrap();
        let err = LazyLocalEmbedder::new(dir.path().to_path_buf(), "toy").unwrap_err();
        assert_eq!(err.kind(), "config", "{err}");
        assert!(err.to_string().contains("cut short"), "{err}");
    }

    #[test]
    fn a_missing_or_bad_config_is_a_configuration_error_naming_the_fix() {
        let missing = tempfile::tempdir().unwrap();
        let err = LazyLocalEmbedder::new(missing.path().to_path_buf(), "toy").unwrap_err();
        assert!(
            matches!(&err, EmbedError::Config { message } if message.contains("aria model pull toy"))
        );
        for bad in [r#"{"hidden_size": 0}"#, "not json", "{}"] {
            let dir = model_dir(bad);
            let err = LazyLocalEmbedder::new(dir.path().to_path_buf(), "toy").unwrap_err();
            assert_eq!(err.kind(), "config", "{bad}: {err}");
        }
    }
}
