//! Token counts made before a call, when the provider has not reported usage yet.
//!
//! **OpenAI models** (with the default `tiktoken` feature) are counted exactly with OpenAI's own
//! BPE encodings from the `tiktoken-rs` crate, whose rank files are compiled into the binary (no
//! download at run time): `o200k_base` for `gpt-4o*`, `gpt-4.1*`, `gpt-5*`, `o1*`, `o3*`,
//! `o4*`, and `cl100k_base` for the other `gpt-4*` and `gpt-3.5*` ([`encoding_for`]). Each
//! encoding is built once, on first use (a `OnceLock`), never on start-up paths. Messages are
//! framed the way OpenAI documents it (the "How to count tokens with tiktoken" cookbook): 3
//! tokens per message plus its role, 1 per tool call plus its name and arguments, and 3 once per
//! request for the primed reply. Tool declarations count as the BPE tokens of their name,
//! description and JSON schema plus [`MESSAGE_OVERHEAD`] (OpenAI does not document their
//! framing).
//!
//! **Every other model** (and OpenAI models when the feature is off, or if an encoding fails to
//! load) gets the documented estimate, deliberately on the high side because it guards caps and
//! context windows: every ASCII character counts a quarter token (English prose and code average
//! about four characters per token with the OpenAI and Anthropic tokenizers), every other
//! character counts one whole token (accented letters, CJK and emoji take one to three tokens
//! each), and every message adds 4 tokens of role and framing overhead. Tool schemas count as
//! their JSON text. Exact counts come afterwards from the provider's reported usage.
//!
//! The model-aware entry points are [`count_text`], [`count_message`], [`count_tools`] and
//! [`count_input`]; the router and the context-budget planner use them. The `estimate_*`
//! functions are the model-independent formula.

use aria_api::{ChatRequest, Message, ToolSpec};

/// Per-message framing (role markers, separators) in the documented estimate.
pub const MESSAGE_OVERHEAD: u64 = 4;

/// OpenAI's framing per chat message (`<|start|>{role}<|message|>…<|end|>` less the role).
pub const OPENAI_TOKENS_PER_MESSAGE: u64 = 3;
/// OpenAI's framing per tool call in an assistant message.
pub const OPENAI_TOKENS_PER_TOOL_CALL: u64 = 1;
/// OpenAI's reply priming, once per request (`<|start|>assistant<|message|>`).
pub const OPENAI_REPLY_PRIMING: u64 = 3;

/// An OpenAI BPE encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// GPT-4 and GPT-3.5 Turbo.
    Cl100kBase,
    /// GPT-4o, GPT-4.1, GPT-5 and the o-series.
    O200kBase,
}

/// The OpenAI encoding of `model` (a provider prefix such as `openai/` is ignored); `None` for
/// models that are not OpenAI's, which get the documented estimate.
pub fn encoding_for(model: &str) -> Option<Encoding> {
    let model = model.rsplit('/').next().unwrap_or(model);
    const O200K: &[&str] = &["gpt-4o", "gpt-4.1", "gpt-5", "o1", "o3", "o4", "chatgpt-4o"];
    const CL100K: &[&str] = &["gpt-4", "gpt-3.5"];
    if O200K.iter().any(|p| model.starts_with(p)) {
        Some(Encoding::O200kBase)
    } else if CL100K.iter().any(|p| model.starts_with(p)) {
        Some(Encoding::Cl100kBase)
    } else {
        None
    }
}

#[cfg(feature = "tiktoken")]
mod bpe {
    use std::sync::OnceLock;

    use tiktoken_rs::CoreBPE;

    use super::Encoding;

    /// The encoding, built on first use; `None` if it failed to build (then the estimate is
    /// used, and the failure is logged once).
    pub(super) fn get(encoding: Encoding) -> Option<&'static CoreBPE> {
        static CL100K: OnceLock<Option<CoreBPE>> = OnceLock::new();
        static O200K: OnceLock<Option<CoreBPE>> = OnceLock::new();
        let cell = match encoding {
            Encoding::Cl100kBase => &CL100K,
            Encoding::O200kBase => &O200K,
        };
        cell.get_or_init(|| {
            let built = match encoding {
                Encoding::Cl100kBase => tiktoken_rs::cl100k_base(),
                Encoding::O200kBase => tiktoken_rs::o200k_base(),
            };
            built
                .map_err(|e| tracing::warn!(?encoding, "tokenizer unavailable, estimating: {e}"))
                .ok()
        })
        .as_ref()
    }

    pub(super) fn count(bpe: &CoreBPE, text: &str) -> u64 {
        bpe.count_ordinary(text) as u64
    }
}

/// What counts a model's tokens.
#[derive(Clone, Copy)]
enum Counter {
    #[cfg(feature = "tiktoken")]
    Bpe(&'static tiktoken_rs::CoreBPE),
    Estimate,
}

impl Counter {
    fn for_model(model: &str) -> Counter {
        #[cfg(feature = "tiktoken")]
        if let Some(bpe) = encoding_for(model).and_then(bpe::get) {
            return Counter::Bpe(bpe);
        }
        let _ = model;
        Counter::Estimate
    }

    fn text(self, text: &str) -> u64 {
        match self {
            #[cfg(feature = "tiktoken")]
            Counter::Bpe(bpe) => bpe::count(bpe, text),
            Counter::Estimate => estimate_text(text),
        }
    }

    fn message(self, message: &Message) -> u64 {
        match self {
            #[cfg(feature = "tiktoken")]
            Counter::Bpe(_) => {
                let calls: u64 = message
                    .tool_calls
                    .iter()
                    .map(|c| {
                        self.text(&c.name) + self.text(&c.arguments) + OPENAI_TOKENS_PER_TOOL_CALL
                    })
                    .sum();
                OPENAI_TOKENS_PER_MESSAGE
                    + self.text(message.role.as_str())
                    + self.text(&message.content)
                    + calls
            }
            Counter::Estimate => estimate_message(message),
        }
    }

    fn tools(self, tools: &[ToolSpec]) -> u64 {
        tools
            .iter()
            .map(|t| {
                self.text(&t.name)
                    + self.text(&t.description)
                    + self.text(&t.parameters.to_string())
                    + MESSAGE_OVERHEAD
            })
            .sum()
    }

    fn request_overhead(self) -> u64 {
        match self {
            #[cfg(feature = "tiktoken")]
            Counter::Bpe(_) => OPENAI_REPLY_PRIMING,
            Counter::Estimate => 0,
        }
    }
}

/// The tokens of `text` for `model`: exact for OpenAI models, else the estimate.
pub fn count_text(model: &str, text: &str) -> u64 {
    Counter::for_model(model).text(text)
}

/// The tokens of one message for `model`, framing included.
pub fn count_message(model: &str, message: &Message) -> u64 {
    Counter::for_model(model).message(message)
}

/// The tokens of the tool declarations for `model`.
pub fn count_tools(model: &str, tools: &[ToolSpec]) -> u64 {
    Counter::for_model(model).tools(tools)
}

/// The framing counted once per request for `model` (OpenAI's reply priming; 0 otherwise).
pub fn count_request_overhead(model: &str) -> u64 {
    Counter::for_model(model).request_overhead()
}

/// The input tokens of a whole request for its model: messages, tools and per-request framing.
/// This is the figure the router, the context planner and cost pre-checks use.
pub fn count_input(request: &ChatRequest) -> u64 {
    let counter = Counter::for_model(&request.model);
    request.messages.iter().map(|m| counter.message(m)).sum::<u64>()
        + counter.tools(&request.tools)
        + counter.request_overhead()
}

/// The estimated tokens of a text.
pub fn estimate_text(text: &str) -> u64 {
    let (ascii, other) = text
        .chars()
        .fold((0u64, 0u64), |(a, o), c| if c.is_ascii() { (a + 1, o) } else { (a, o + 1) });
    ascii.div_ceil(4) + other
}

/// The estimated tokens of one message, framing included.
pub fn estimate_message(message: &Message) -> u64 {
    let calls: u64 = message
        .tool_calls
        .iter()
        .map(|c| estimate_text(&c.name) + estimate_text(&c.arguments) + MESSAGE_OVERHEAD)
        .sum();
    MESSAGE_OVERHEAD + estimate_text(&message.content) + calls
}

/// The estimated tokens of the tool declarations.
pub fn estimate_tools(tools: &[ToolSpec]) -> u64 {
    tools
        .iter()
        .map(|t| {
            estimate_text(&t.name)
                + estimate_text(&t.description)
                + estimate_text(&t.parameters.to_string())
                + MESSAGE_OVERHEAD
        })
        .sum()
}

/// The estimated input tokens of a whole request (the formula, whatever the model).
pub fn estimate_input(request: &ChatRequest) -> u64 {
    request.messages.iter().map(estimate_message).sum::<u64>() + estimate_tools(&request.tools)
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod formula_tests {
    use super::*;

    #[test]
    fn ascii_is_a_quarter_token_and_other_characters_one() {
        assert_eq!(estimate_text(""), 0);
        assert_eq!(estimate_text("abcd"), 1);
        assert_eq!(estimate_text("abcde"), 2);
        assert_eq!(estimate_text("日本語"), 3);
        assert_eq!(estimate_text("héllo"), 1 + 1);
        assert_eq!(estimate_message(&Message::user("abcd")), 5);
    }

    #[test]
    fn a_request_counts_messages_and_tools() {
        let request = ChatRequest {
            model: "m".into(),
            messages: vec![Message::system("abcdefgh"), Message::user("abcd")],
            tools: vec![ToolSpec {
                name: "ls".into(),
                description: "List".into(),
                parameters: serde_json::json!({}),
            }],
            max_tokens: None,
            temperature: None,
        };
        assert_eq!(estimate_input(&request), (4 + 2) + (4 + 1) + (1 + 1 + 1 + 4));
    }
}
