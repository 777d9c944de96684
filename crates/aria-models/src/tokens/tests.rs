//! Model-aware counts: the encoding chosen per model name, exact BPE counts for OpenAI models
//! (checked against OpenAI's published token ids and against `tiktoken-rs`'s own implementation
//! of the cookbook's message counting), and the formula for every other model.

use super::*;

fn request(model: &str, messages: Vec<Message>, tools: Vec<ToolSpec>) -> ChatRequest {
    ChatRequest { model: model.into(), messages, tools, max_tokens: None, temperature: None }
}

#[test]
fn model_names_map_to_their_encoding() {
    for model in [
        "gpt-4o",
        "gpt-4o-mini-2024-07-18",
        "gpt-4.1-nano",
        "gpt-5-mini",
        "o1-preview",
        "o3-mini",
        "o4-mini",
        "openai/gpt-4o",
    ] {
        assert_eq!(encoding_for(model), Some(Encoding::O200kBase), "{model}");
    }
    for model in ["gpt-4", "gpt-4-0613", "gpt-4-turbo", "gpt-3.5-turbo", "openai/gpt-4-32k"] {
        assert_eq!(encoding_for(model), Some(Encoding::Cl100kBase), "{model}");
    }
    for model in ["claude-sonnet-4-5", "llama3.2:3b", "qwen2.5-coder", "mistral", ""] {
        assert_eq!(encoding_for(model), None, "{model}");
    }
}

#[test]
fn models_that_are_not_openai_get_the_formula() {
    let text = "The quick brown fox jumps over the lazy dog. 日本語";
    assert_eq!(count_text("claude-sonnet-4-5", text), estimate_text(text));
    let req = request(
        "llama3.2:3b",
        vec![Message::system("rules"), Message::user(text)],
        vec![ToolSpec {
            name: "ls".into(),
            description: "List".into(),
            parameters: serde_json::json!({"type": "object"}),
        }],
    );
    assert_eq!(count_input(&req), estimate_input(&req));
    assert_eq!(count_request_overhead("llama3.2:3b"), 0);
}

#[cfg(feature = "tiktoken")]
mod bpe_counts {
    use super::*;
    use aria_api::{Role, ToolCall};
    use tiktoken_rs::{ChatCompletionRequestMessage, FunctionCall, num_tokens_from_messages};

    #[test]
    fn exact_counts_of_known_strings() {
        // "hello world" is ["hello", " world"] in both encodings.
        assert_eq!(count_text("gpt-4", "hello world"), 2);
        assert_eq!(count_text("gpt-4o", "hello world"), 2);
        // OpenAI's cookbook: cl100k_base encodes "tiktoken is great!" as
        // [83, 1609, 5963, 374, 2294, 0].
        assert_eq!(count_text("gpt-3.5-turbo", "tiktoken is great!"), 6);
        assert_eq!(count_text("gpt-4o", ""), 0);
        // The counts are the encoders' own, not the formula's.
        let text = "fn main() { println!(\"héllo, 世界\"); }";
        let cl = tiktoken_rs::cl100k_base().unwrap().encode_ordinary(text).len() as u64;
        let o2 = tiktoken_rs::o200k_base().unwrap().encode_ordinary(text).len() as u64;
        assert_eq!(count_text("gpt-4-turbo", text), cl);
        assert_eq!(count_text("o3-mini", text), o2);
        // Special-token text in user content is ordinary text, not a control token.
        assert!(count_text("gpt-4o", "<|endoftext|>") > 1);
    }

    fn oracle(message: &Message) -> ChatCompletionRequestMessage {
        ChatCompletionRequestMessage {
            role: message.role.as_str().to_owned(),
            content: Some(message.content.clone()),
            tool_calls: message
                .tool_calls
                .iter()
                .map(|c| FunctionCall { name: c.name.clone(), arguments: c.arguments.clone() })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn messages_are_framed_as_openai_documents() {
        let call = ToolCall {
            id: "call_1".into(),
            name: "read_file".into(),
            arguments: r#"{"path":"src/main.rs"}"#.into(),
        };
        let messages = vec![
            Message::system(
                "You are a helpful, pattern-following assistant that translates corporate jargon into plain English.",
            ),
            Message::user(
                "This late pivot means we don't have time to boil the ocean for the client deliverable.",
            ),
            Message::assistant("", vec![call]),
            Message::tool_result("call_1", "fn main() {}\n"),
            Message::assistant(
                "Let's talk later when we're less busy about how to do better.",
                vec![],
            ),
        ];
        assert_eq!(messages[3].role, Role::Tool);
        let expected: Vec<ChatCompletionRequestMessage> = messages.iter().map(oracle).collect();
        for model in ["gpt-4-0613", "gpt-4o-2024-08-06", "gpt-4.1-mini", "o3-mini"] {
            let req = request(model, messages.clone(), vec![]);
            let want = num_tokens_from_messages(model, &expected).unwrap() as u64;
            assert_eq!(count_input(&req), want, "{model}");
            assert_eq!(
                messages.iter().map(|m| count_message(model, m)).sum::<u64>()
                    + OPENAI_REPLY_PRIMING,
                want,
                "{model}"
            );
        }
        // One user message: 3 framing + "user" + "hello world" + 3 priming.
        let req = request("gpt-4o", vec![Message::user("hello world")], vec![]);
        assert_eq!(count_input(&req), 3 + 1 + 2 + 3);
    }

    #[test]
    fn tools_count_their_text_in_the_model_encoding() {
        let tool = ToolSpec {
            name: "read_file".into(),
            description: "Read a file".into(),
            parameters: serde_json::json!({"type": "object"}),
        };
        let bpe = tiktoken_rs::o200k_base().unwrap();
        let want = ["read_file", "Read a file", r#"{"type":"object"}"#]
            .iter()
            .map(|t| bpe.encode_ordinary(t).len() as u64)
            .sum::<u64>()
            + MESSAGE_OVERHEAD;
        assert_eq!(count_tools("gpt-4o", std::slice::from_ref(&tool)), want);
        let req = request("gpt-4o", vec![Message::user("hello world")], vec![tool]);
        assert_eq!(count_input(&req), 3 + 1 + 2 + want + 3);
    }
}
