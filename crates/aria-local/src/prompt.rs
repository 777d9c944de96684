//! The ChatML prompt ARIA builds for a local model, as token ids.
//!
//! ARIA renders the prompt itself instead of running the GGUF's Jinja template: SmolLM2's
//! template injects "You are a helpful AI assistant named SmolLM..." whenever the first message
//! is not a system message, and that default makes the model ramble. Control tokens are inserted
//! by id and every piece of text is encoded with control-token matching off, so text a user or a
//! tool wrote can never open a new turn.
//!
//! Tools follow the Hermes/Qwen convention: their JSON signatures go in the system prompt inside
//! `<tools>`, the model answers `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`, and
//! tool results come back as a user turn wrapped in `<tool_response>`.

use aria_api::{Message, Role, ToolSpec};

use crate::error::LocalError;
use crate::gguf_tokenizer::GgufVocab;

/// The system prompt used when the request has none.
/// (Kept this plain on purpose: with SmolLM2-135M, extra instructions such as "answer briefly"
/// derail simple factual answers; this one gives "The capital of France is Paris.")
pub const DEFAULT_SYSTEM_PROMPT: &str = "You are ARIA, a helpful AI assistant.";

/// The text that opens a tool call.
pub const TOOL_CALL_OPEN: &str = "<tool_call>";

/// The system prompt's tool section (appended to the system message when tools are offered).
pub fn tools_section(tools: &[ToolSpec]) -> String {
    let mut out = String::from(
        "\n\n# Tools\n\nYou may call one of these functions to help with the user's request. \
         Function signatures are inside <tools></tools>:\n<tools>",
    );
    for tool in tools {
        let sig = serde_json::json!({
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.parameters,
            }
        });
        out.push('\n');
        out.push_str(&sig.to_string());
    }
    out.push_str(
        "\n</tools>\n\nTo call a function, reply with a JSON object with the function name and \
         its arguments inside <tool_call></tool_call> tags:\n<tool_call>\n\
         {\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>\n\
         If no function is needed, answer in plain text.",
    );
    out
}

/// How a tool call is written back into an assistant turn.
pub fn render_tool_call(name: &str, arguments: &str) -> String {
    let name = serde_json::Value::String(name.to_owned());
    let args = if arguments.trim().is_empty() { "{}" } else { arguments };
    format!("{TOOL_CALL_OPEN}\n{{\"name\": {name}, \"arguments\": {args}}}\n</tool_call>")
}

/// The rendered prompt: token ids, plus the same prompt as text (for snapshots and debugging).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    pub tokens: Vec<u32>,
    pub text: String,
    /// Tokens up to the end of the system turn: the same across conversations.
    pub stable_prefix: usize,
}

struct Builder<'a> {
    vocab: &'a GgufVocab,
    tokens: Vec<u32>,
    text: String,
    im_start: u32,
    im_end: u32,
}

impl Builder<'_> {
    fn control(&mut self, id: u32) {
        self.tokens.push(id);
        let piece = self.vocab.pieces.get(id as usize).cloned().unwrap_or_default();
        self.text.push_str(&String::from_utf8_lossy(&piece));
    }

    fn text(&mut self, text: &str) -> Result<(), LocalError> {
        self.tokens.extend(self.vocab.encode_text(text)?);
        self.text.push_str(text);
        Ok(())
    }

    fn turn(&mut self, role: &str, content: &str) -> Result<(), LocalError> {
        self.control(self.im_start);
        self.text(&format!("{role}\n{content}"))?;
        self.control(self.im_end);
        self.text("\n")
    }
}

/// Renders `messages` (and `tools`) as ChatML, ending with an open assistant turn.
/// `assistant_prefix` is text the assistant turn starts with (used to force a tool call).
pub fn render(
    vocab: &GgufVocab,
    messages: &[Message],
    tools: &[ToolSpec],
    assistant_prefix: &str,
) -> Result<Prompt, LocalError> {
    let (Some(im_start), Some(im_end)) =
        (vocab.token_id("<|im_start|>"), vocab.token_id("<|im_end|>"))
    else {
        return Err(LocalError::Tokenizer {
            message: "the model has no <|im_start|>/<|im_end|> tokens; ARIA's local provider needs a ChatML model".into(),
        });
    };
    let mut b = Builder { vocab, tokens: Vec::new(), text: String::new(), im_start, im_end };
    if let Some(bos) = vocab.bos {
        b.control(bos);
    }

    let system: Vec<&str> =
        messages.iter().filter(|m| m.role == Role::System).map(|m| m.content.as_str()).collect();
    let mut system =
        if system.is_empty() { DEFAULT_SYSTEM_PROMPT.to_owned() } else { system.join("\n\n") };
    if !tools.is_empty() {
        system.push_str(&tools_section(tools));
    }
    b.turn("system", &system)?;
    let stable_prefix = b.tokens.len();

    let mut i = 0;
    while i < messages.len() {
        let m = &messages[i];
        match m.role {
            Role::System => {}
            Role::User => b.turn("user", &m.content)?,
            Role::Assistant => {
                let mut content = m.content.clone();
                for call in &m.tool_calls {
                    if !content.is_empty() && !content.ends_with('\n') {
                        content.push('\n');
                    }
                    content.push_str(&render_tool_call(&call.name, &call.arguments));
                }
                b.turn("assistant", &content)?;
            }
            Role::Tool => {
                // Consecutive tool results share one user turn, as in Qwen's template.
                let mut content = String::new();
                while i < messages.len() && messages[i].role == Role::Tool {
                    if !content.is_empty() {
                        content.push('\n');
                    }
                    content.push_str("<tool_response>\n");
                    content.push_str(&messages[i].content);
                    content.push_str("\n</tool_response>");
                    i += 1;
                }
                b.turn("user", &content)?;
                continue;
            }
        }
        i += 1;
    }
    b.control(im_start);
    b.text(&format!("assistant\n{assistant_prefix}"))?;
    Ok(Prompt { tokens: b.tokens, text: b.text, stable_prefix })
}
