//! Model provider clients for ARIA: the code that turns an [`aria_api::ChatRequest`] into HTTP
//! and a vendor's wire format back into [`aria_api::ChatEvent`]s.
//!
//! This crate owns talking to model servers — the OpenAI-compatible chat-completions API
//! ([`OpenAiProvider`]: OpenAI, vLLM, llama.cpp's server, LM Studio), Anthropic's Messages API
//! ([`AnthropicProvider`]) and Ollama's native API ([`OllamaProvider`]) — and what sits in
//! front of them: the [`Router`] (retry with backoff and `Retry-After`, a circuit breaker per
//! route, a conditional fallback chain), the [`ContextBudget`] planner, token estimates
//! ([`tokens`]), prices and spending-cap verdicts ([`Pricing`], [`PeriodCaps`]), and the
//! recognition of tool calls that models write as text ([`TextCalls`]). It deliberately does not
//! decide *what* to ask a model or what to do with its answer: that is the agent loop's job in
//! `aria-core`, which sees only the [`aria_api::Provider`] trait.
//!
//! The design decision to know: **parsing is pure and separate from I/O.** [`SseParser`] turns
//! bytes cut anywhere into server-sent events, and each vendor's [`Assembler`]
//! ([`ChunkAssembler`], [`MessageAssembler`], [`LineAssembler`]) turns payloads into chat events
//! (text as it arrives, tool calls whole once their fragments are complete). None of them sees a
//! socket or a clock, so all are unit-tested on every way a stream can be split; the providers
//! only add HTTP, timeouts and error classification around them, and the router's clock is
//! injectable so its policies are tested without sleeping. Every failure comes
//! out as a classified [`aria_api::ProviderError`] (auth, rate limit with `Retry-After`, context
//! length, network, timeout, HTTP status, malformed stream) that the router can reason about.

mod anthropic;
mod budget;
mod cost;
mod embed;
mod http;
pub mod locality;
mod ollama;
mod openai;
mod reader;
mod router;
mod sse;
mod textcalls;
pub mod tokens;

pub use anthropic::{AnthropicConfig, AnthropicProvider, MessageAssembler};
pub use budget::{ContextBudget, Fitted};
pub use cost::{
    CapVerdict, KNOWN_MODELS, KnownModel, PeriodCaps, PeriodSpend, Price, Pricing, known_model,
};
pub use embed::{EmbedWire, HttpEmbedder, HttpEmbedderConfig};
pub use http::Timeouts;
pub use locality::{Locality, Pin, Resolve, SystemResolver};
pub use ollama::{LineAssembler, OllamaConfig, OllamaProvider};
pub use openai::{ChunkAssembler, OpenAiConfig, OpenAiProvider, ToolChoice};
pub use reader::Assembler;
pub use router::{
    BreakerPolicy, BreakerState, FallbackWhen, RetryPolicy, Route, RouteAnswer, Router,
    RouterClock, SystemClock, Window, WindowLookup,
};
pub use sse::{MAX_EVENT_BYTES, SseError, SseEvent, SseParser};
pub use textcalls::{TextCalls, recognise as recognise_text_tool_calls};
