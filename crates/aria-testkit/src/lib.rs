//! Test helpers for ARIA (dev-only; never a dependency of shipped code).
//!
//! - [`scripted`]: an in-process [`aria_api::Provider`] that plays back a script of turns and
//!   records every request, for unit tests of the agent loop.
//! - [`memory`]: an in-memory journal and audit sink that can inject write failures.
//! - [`openai_mock`]: a loopback HTTP server that speaks the OpenAI chat-completions wire format
//!   (SSE streaming with real chunk shapes), for end-to-end tests of providers and the binary.
//!
//! Nothing here reaches beyond 127.0.0.1.

pub mod memory;
pub mod openai_mock;
pub mod scripted;
