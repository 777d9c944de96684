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
//! tool results come back as a user turn wrapped in `<tool_response>`. Models trained on Qwen2.5's
//! template ([`PromptStyle::Qwen`]) get that template's tool section word for word, with the
//! signatures serialised as its `tojson` does (`", "` and `": "` separators), except that the
//! example call has single braces: some GGUFs' templates show `{{"name": ...}}` and the model
//! copies the doubled braces.
//!
//! The provider shows each tool briefly ([`brief_tool`]): the first sentence of its description
//! and of each parameter's, and only the required parameters (a small model fills in every
//! parameter it is shown and invents values: `"path": "src", "hidden": false, "max_results":
//! 1000`; the tool's defaults apply instead). The rest (roots, limits, what is refused) is
//! enforced by the tool itself and would cost the embedded model seconds of prompt processing
//! on every call. Decoding is constrained by the same brief schema, so the model can only write
//! what it was shown.

use aria_api::{Message, Role, ToolSpec};

use crate::error::LocalError;
use crate::gguf_tokenizer::GgufVocab;

/// The system prompt used when the request has none.
/// (Kept this plain on purpose: with SmolLM2-135M, extra instructions such as "answer briefly"
/// derail simple factual answers; this one gives "The capital of France is Paris.")
pub const DEFAULT_SYSTEM_PROMPT: &str = "You are ARIA, a helpful AI assistant.";

/// The text that opens a tool call.
pub const TOOL_CALL_OPEN: &str = "<tool_call>";

/// Which wording of the ChatML prompt a model gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PromptStyle {
    /// ARIA's own Hermes-style tool section (SmolLM2 and other ChatML models).
    #[default]
    Chatml,
    /// Qwen2.5's chat template.
    Qwen,
}

impl PromptStyle {
    /// The style for a model of architecture `arch` whose GGUF carries `template`
    /// (`tokenizer.chat_template`): Qwen's when the model is a Qwen2 or its template is Qwen's.
    pub fn detect(arch: &str, template: Option<&str>) -> Self {
        let qwen_template = template
            .is_some_and(|t| t.contains("<tools></tools> XML tags") && t.contains("<tool_call>"));
        if arch == "qwen2" || qwen_template { PromptStyle::Qwen } else { PromptStyle::Chatml }
    }
}

/// The system prompt's tool section (appended to the system message when tools are offered).
pub fn tools_section(style: PromptStyle, tools: &[ToolSpec]) -> String {
    match style {
        PromptStyle::Chatml => chatml_tools_section(tools),
        PromptStyle::Qwen => qwen_tools_section(tools),
    }
}

/// Qwen2.5's template, as rendered by its Jinja source (`tool | tojson` per tool).
fn qwen_tools_section(tools: &[ToolSpec]) -> String {
    let mut out = String::from(
        "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n\
         You are provided with function signatures within <tools></tools> XML tags:\n<tools>",
    );
    for tool in tools {
        out.push_str("\n{\"type\": \"function\", \"function\": {\"name\": ");
        python_json(&serde_json::Value::String(tool.name.clone()), &mut out);
        out.push_str(", \"description\": ");
        python_json(&serde_json::Value::String(tool.description.clone()), &mut out);
        out.push_str(", \"parameters\": ");
        python_json(&tool.parameters, &mut out);
        out.push_str("}}");
    }
    out.push_str(
        "\n</tools>\n\nFor each function call, return a json object with function name and \
         arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n\
         {\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>",
    );
    out
}

/// The user's request that the messages up to here answer: the latest user message that is not
/// one of ARIA's own notes to the model (`[ARIA] …`), cut at 400 characters.
fn request_before(messages: &[Message]) -> Option<&str> {
    let text = messages
        .iter()
        .rev()
        .filter(|m| m.role == Role::User)
        .map(|m| m.content.trim())
        .find(|c| !aria_api::is_aria_note(c) && !c.is_empty())?;
    Some(text.char_indices().nth(400).map_or(text, |(cut, _)| &text[..cut]))
}

/// Whether `results` answer calls (the last message of `before`) that were all changes of
/// files, and none of them failed or was refused.
fn changed_files(before: &[Message], results: &[Message]) -> bool {
    let Some(call) = before.last() else { return false };
    call.role == Role::Assistant
        && !call.tool_calls.is_empty()
        && call.tool_calls.iter().all(|c| aria_api::CHANGE_TOOLS.contains(&c.name.as_str()))
        && results.iter().all(|r| !aria_api::tool_failed(&r.content))
}

/// `tool` as an embedded model is shown it: the first sentence of its description and of each
/// parameter's description; only the required parameters when there are any, else all but
/// booleans and numbers.
pub fn brief_tool(tool: &ToolSpec) -> ToolSpec {
    let mut parameters = tool.parameters.clone();
    let required: Vec<String> = parameters
        .get("required")
        .and_then(|r| r.as_array())
        .map(|r| r.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect())
        .unwrap_or_default();
    if let Some(props) = parameters.get_mut("properties").and_then(|p| p.as_object_mut()) {
        props.retain(|name, prop| {
            let flag = matches!(
                prop.get("type").and_then(|t| t.as_str()),
                Some("boolean" | "integer" | "number")
            );
            // With required parameters, only those (a small model invents the optional ones:
            // `"path": "src"`); with none (one of several is needed), all but flags.
            required.contains(name) || (required.is_empty() && !flag)
        });
        for prop in props.values_mut() {
            if let Some(serde_json::Value::String(d)) = prop.get_mut("description") {
                *d = first_sentence(d).to_owned();
            }
        }
    }
    ToolSpec {
        name: tool.name.clone(),
        description: first_sentence(&tool.description).to_owned(),
        parameters,
    }
}

/// The text up to and including the first full stop that ends a sentence: followed by a space
/// and a capital letter (or by the end), outside brackets, and not "e.g." or "i.e.".
pub(crate) fn first_sentence(text: &str) -> &str {
    let mut depth = 0i32;
    let bytes = text.as_bytes();
    for (i, c) in text.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            '.' if depth <= 0 => {
                let rest = &text[i + 1..];
                let next = rest.trim_start();
                let spaced = rest.len() > next.len();
                let ends = next.is_empty()
                    || (spaced && next.chars().next().is_some_and(char::is_uppercase));
                let abbreviation = i >= 3 && matches!(&bytes[i - 3..i], b"e.g" | b"i.e");
                if ends && !abbreviation {
                    return &text[..=i];
                }
            }
            _ => {}
        }
    }
    text
}

/// JSON as Python's `json.dumps` writes it by default (and so Jinja's `tojson` in the
/// Hugging Face chat templates): `", "` between items, `": "` after keys, non-ASCII unescaped.
pub(crate) fn python_json(value: &serde_json::Value, out: &mut String) {
    use serde_json::Value;
    match value {
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                python_json(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push_str(": ");
                python_json(item, out);
            }
            out.push('}');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

fn chatml_tools_section(tools: &[ToolSpec]) -> String {
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
    style: PromptStyle,
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
        system.push_str(&tools_section(style, tools));
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
                let start = i;
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
                // Small models lose the question behind a tool result and explain how they
                // would get it instead: the request is restated after the results.
                // After a change that succeeded, they explained how to make it: they are asked
                // what they changed.
                if let Some(request) = request_before(&messages[..i]) {
                    content.push_str(if changed_files(&messages[..start], &messages[start..i]) {
                        "\n\nWith these results, tell me in one sentence what you changed for my \
                         request: "
                    } else {
                        "\n\nWith these results, answer my request: "
                    });
                    content.push_str(request);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_sentence_ends_at_a_full_stop_before_a_capital() {
        for (text, first) in [
            ("Read a file. The file must be inside /a.", "Read a file."),
            ("One sentence only.", "One sentence only."),
            ("No full stop at all", "No full stop at all"),
            ("A glob, e.g. \"*.rs\". Default none.", "A glob, e.g. \"*.rs\"."),
            ("Skips .git and .env files. Default false.", "Skips .git and .env files."),
            ("Inside the roots (/a. /b). Then more.", "Inside the roots (/a. /b)."),
            ("Version 1.5 is used. More.", "Version 1.5 is used."),
            ("Ends with a dot.\nNext line.", "Ends with a dot."),
            ("", ""),
        ] {
            assert_eq!(first_sentence(text), first, "{text:?}");
        }
    }

    #[test]
    fn a_brief_tool_shows_the_first_sentences_and_only_the_required_parameters() {
        let tool = ToolSpec {
            name: "file_read".into(),
            description: "Read a file. Only files inside /a are read. Secrets are refused.".into(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "A path. Relative to /a."},
                    "glob": {"type": "string"},
                    "lines": {"type": "integer", "minimum": 1},
                    "count": {"type": "integer"},
                    "hidden": {"type": "boolean"}
                },
                "required": ["path", "count"],
                "additionalProperties": false
            }),
        };
        let brief = brief_tool(&tool);
        assert_eq!(brief.name, "file_read");
        assert_eq!(brief.description, "Read a file.");
        // Only the required parameters are shown.
        let mut expected = tool.parameters.clone();
        expected["properties"]["path"]["description"] = "A path.".into();
        let props = expected["properties"].as_object_mut().unwrap();
        props.remove("lines");
        props.remove("hidden");
        props.remove("glob");
        assert_eq!(brief.parameters, expected);
        // No required parameter (one of several is needed): all but flags and numbers.
        let mut either = tool.clone();
        either.parameters["required"] = serde_json::json!([]);
        let shown = brief_tool(&either).parameters["properties"].as_object().unwrap().clone();
        assert_eq!(shown.keys().collect::<Vec<_>>(), ["glob", "path"]);
    }
}
