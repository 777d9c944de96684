//! Token estimates made before a call, when no tokenizer has run yet.
//!
//! The estimate is deliberately on the high side, because it guards caps and context windows:
//! every ASCII character counts a quarter token (English prose and code average about four
//! characters per token with the OpenAI and Anthropic tokenizers), every other character counts
//! one whole token (accented letters, CJK and emoji take one to three tokens each), and every
//! message adds 4 tokens of role and framing overhead. Tool schemas count as their JSON text.
//! Exact counts come afterwards from the provider's reported usage.

use aria_api::{ChatRequest, Message, ToolSpec};

/// Per-message framing (role markers, separators).
pub const MESSAGE_OVERHEAD: u64 = 4;

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

/// The estimated input tokens of a whole request.
pub fn estimate_input(request: &ChatRequest) -> u64 {
    request.messages.iter().map(estimate_message).sum::<u64>() + estimate_tools(&request.tools)
}

#[cfg(test)]
mod tests {
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
