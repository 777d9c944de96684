//! Test helpers for ARIA (dev-only; never a dependency of shipped code).
//!
//! - [`scripted`]: an in-process [`aria_api::Provider`] that plays back a script of turns and
//!   records every request, for unit tests of the agent loop.
//! - [`memory`]: an in-memory journal and audit sink that can inject write failures.
//! - [`openai_mock`], [`anthropic_mock`], [`ollama_mock`]: loopback HTTP servers that speak the
//!   OpenAI chat-completions, Anthropic Messages and Ollama native wire formats (real stream
//!   shapes), playing one script vocabulary ([`mock::MockTurn`]) that includes fault injection:
//!   HTTP errors with `Retry-After`, a connection reset mid-stream, truncated JSON, a stall.
//! - [`embed_mock`]: the embedding endpoints of the Ollama and OpenAI mocks (`/api/embed`,
//!   `/v1/embeddings`), answering with deterministic bag-of-words vectors ([`toy_embedding`]).
//! - [`telegram_mock`]: a fake Telegram Bot API (long polling, messages and edits kept,
//!   HTML checked as Telegram does, scripted 429/5xx/cut connections/delays).
//!
//! - [`tools`]: test tools (an irreversible one that counts its calls).
//!
//! Nothing here reaches beyond 127.0.0.1.

pub mod anthropic_mock;
pub mod embed_mock;
pub mod memory;
pub mod mock;
pub mod ollama_mock;
pub mod openai_mock;
pub mod scripted;
pub mod search_mock;
pub mod telegram_mock;
pub mod tools;

pub use embed_mock::toy_embedding;
pub use telegram_mock::{FakeTelegram, Fault};
