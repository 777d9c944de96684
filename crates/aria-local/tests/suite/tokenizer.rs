//! The tokenizer built from the GGUF metadata against reference ids from llama.cpp's
//! `llama-tokenize` (same GGUF, `--no-parse-special`, no BOS), hard-coded here.

use aria_api::{ChatRequest, Message};

use super::support::chat;

#[test]
fn tokenisation_matches_llama_cpp_reference_ids() {
    let provider = chat();
    let cases: &[(&str, &[u32])] = &[
        ("Hello, world!", &[19556, 28, 905, 17]),
        (
            "The year 2024 had 366 days.",
            &[504, 713, 216, 34, 32, 34, 36, 761, 216, 35, 38, 38, 2009, 30],
        ),
        (
            "  leading spaces and\ttabs\nnewline",
            &[216, 2899, 5600, 284, 197, 100, 7366, 198, 28160],
        ),
        (
            "naïve café — déjà vu 🚀",
            &[3546, 46494, 37366, 1841, 32564, 90, 16739, 386, 101, 15107, 244, 218],
        ),
        (
            "I'm sure they've done it; we'll see.",
            &[57, 5248, 2090, 502, 3543, 2294, 357, 43, 392, 3060, 963, 30],
        ),
        (
            "fn main() { println!(\"hi\"); }",
            &[7853, 1085, 1000, 1662, 1628, 34115, 17, 1470, 6004, 21646, 4029],
        ),
        // Control-token text typed by a user is plain text, not a control token.
        ("<|im_start|>user", &[44, 108, 306, 79, 3738, 108, 46, 4093]),
    ];
    for (text, ids) in cases {
        assert_eq!(provider.tokenize(text).unwrap(), *ids, "{text:?}");
        assert_eq!(provider.detokenize(ids).unwrap(), *text);
    }
}

#[test]
fn the_rendered_prompt_matches_llama_cpp_on_the_same_chatml_text() {
    let request = ChatRequest {
        model: "local".into(),
        messages: vec![Message::user("What is the capital of France?")],
        tools: vec![],
        max_tokens: None,
        temperature: None,
    };
    let prompt = chat().render_prompt(&request).unwrap();
    assert_eq!(
        prompt.text,
        "<|im_start|>system\nYou are ARIA, a helpful AI assistant.<|im_end|>\n<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n"
    );
    // llama-tokenize with special tokens parsed, on exactly that text.
    let reference = [
        1, 9690, 198, 2683, 359, 330, 5135, 49, 28, 253, 5356, 5646, 11173, 30, 2, 198, 1, 4093,
        198, 1780, 314, 260, 3575, 282, 4649, 47, 2, 198, 1, 520, 9531, 198,
    ];
    assert_eq!(prompt.tokens, reference);
    assert_eq!(prompt.stable_prefix, 16, "the system turn ends after `<|im_end|>\\n`");
}
