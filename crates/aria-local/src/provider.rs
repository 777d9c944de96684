//! [`LocalChatProvider`]: the embedded GGUF model behind the ordinary [`Provider`] trait.
//!
//! Generation runs on its own OS thread (inference is CPU-bound and must not block an async
//! runtime) and sends events through a bounded channel; the returned stream reads the channel.
//! Dropping the stream closes the channel, and the thread stops before its next token.
//! One model serves one generation at a time; a second stream waits for the first.

use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use aria_api::{
    ChatEvent, ChatRequest, ChatStream, EDIT_FILE_TOOL, INSERT_FILE_TOOL, PATCH_TOOL, Provider,
    ProviderError, READ_FILE_TOOL as READ_TOOL, WRITE_FILE_TOOL,
};
use futures::StreamExt;

use crate::engine::ChatModel;
use crate::error::LocalError;
use crate::generate::{GenParams, GenStats, ToolsOffer, generate};
use crate::grammar::ToolGrammar;
use crate::prompt::{Prompt, TOOL_CALL_OPEN, render};

/// Whether the model may answer in text when tools are offered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ToolChoice {
    /// The model chooses: text, or `<tool_call>` (then decoding is constrained).
    #[default]
    Auto,
    /// When tools are offered, the answer is always one tool call.
    Required,
    /// The first answer to a user message that refers to files (names one, a path, or says
    /// "file", "directory" or "folder"), to code or the project (`update_stock`, "defined",
    /// "the last commit"), asks for a change, or names an offered tool is a tool call; once a tool
    /// result has come back, or for any other message ("tell me a joke"), the model answers
    /// freely (text or a call).
    /// For models too small to decide to use a tool by themselves (SmolLM2-135M almost never
    /// does), so that they still look before they answer about the user's files. A message
    /// asking to edit a file it names ("fix the typo in README.md") gets a first call to
    /// `file_read` and, once the file was read, a second that changes it (`apply_patch`, or
    /// `file_write` when no patch tool is offered).
    FirstThenAuto,
}

/// Defaults for calls that do not say otherwise.
#[derive(Debug, Clone, PartialEq)]
pub struct LocalChatOptions {
    pub max_tokens: u32,
    /// Used when the request has no temperature. 0 = greedy (deterministic).
    pub temperature: f32,
    pub top_p: f32,
    pub repeat_penalty: f32,
    pub repeat_last_n: usize,
    /// Sampling seed; `None` = a new seed per call.
    pub seed: Option<u64>,
    pub tool_choice: ToolChoice,
    /// How the model changes a file it was asked to edit (with [`ToolChoice::FirstThenAuto`]).
    pub edit_form: EditForm,
}

/// The tool an embedded model changes part of a file with, when it is forced to (see
/// [`EditStep`]). A request to add lines ("add the line 'bread' at the end of shopping.txt")
/// uses `file_insert` whatever the form, when it is offered: nothing is replaced, so nothing is
/// lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EditForm {
    /// `apply_patch` with a unified diff.
    Patch,
    /// `file_edit {path, old, new}`, found exactly or with the spacing forgiven.
    #[default]
    Replace,
}

impl EditForm {
    /// `patch` or `replace`.
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "patch" => Some(EditForm::Patch),
            "replace" => Some(EditForm::Replace),
            _ => None,
        }
    }

    /// The tool of this form.
    fn tool(self) -> &'static str {
        match self {
            EditForm::Patch => PATCH_TOOL,
            EditForm::Replace => EDIT_FILE_TOOL,
        }
    }

    /// The tool of the other form, which the model is not shown beside this one's.
    fn other(self) -> &'static str {
        match self {
            EditForm::Patch => EDIT_FILE_TOOL,
            EditForm::Replace => PATCH_TOOL,
        }
    }
}

impl Default for LocalChatOptions {
    fn default() -> Self {
        LocalChatOptions {
            max_tokens: 512,
            temperature: 0.0,
            top_p: 0.9,
            repeat_penalty: 1.1,
            repeat_last_n: 64,
            seed: None,
            tool_choice: ToolChoice::Auto,
            edit_form: EditForm::default(),
        }
    }
}

/// The embedded chat model as a [`Provider`]. Cloning shares the loaded model.
#[derive(Debug, Clone)]
pub struct LocalChatProvider {
    model: Arc<Mutex<ChatModel>>,
    options: LocalChatOptions,
    load_time: Duration,
    last_stats: Arc<Mutex<Option<GenStats>>>,
}

/// The request's tools as the embedded model is shown them (and may call them): briefly, and
/// without the other edit form's tool when this form's tool or `file_write` is there (two ways
/// to change part of a file split a small model's choice). `apply_patch`'s patch must start
/// with a `--- ` file header: the 1.5B model otherwise often writes bare `@@` hunks, or the new
/// lines without `+`, and names no file. (Asked for the optional `path` instead, it wrote the
/// file's new text as the "patch" more often.)
fn shown_tools(request: &ChatRequest, form: EditForm) -> Vec<aria_api::ToolSpec> {
    let covered = request.tools.iter().any(|t| t.name == form.tool() || t.name == WRITE_FILE_TOOL);
    request
        .tools
        .iter()
        .filter(|t| !(covered && t.name == form.other()))
        .map(|t| match t.name == aria_api::PATCH_TOOL {
            true => crate::prompt::brief_tool(&starting(t, "patch", PATCH_START)),
            false => crate::prompt::brief_tool(t),
        })
        .collect()
}

/// How an embedded model's `apply_patch` patch starts (a `pattern` the grammar enforces).
const PATCH_START: &str = "^--- ";

/// `tool` with its string parameter `name` (when it has one) made to match `pattern`.
fn starting(tool: &aria_api::ToolSpec, name: &str, pattern: &str) -> aria_api::ToolSpec {
    let mut tool = tool.clone();
    if let Some(prop) = tool.parameters.pointer_mut(&format!("/properties/{name}"))
        && let Some(prop) = prop.as_object_mut()
    {
        prop.insert("pattern".into(), pattern.into());
    }
    tool
}

/// The text of the request's latest user message.
fn last_user_message(request: &ChatRequest) -> Option<&str> {
    request
        .messages
        .iter()
        .rev()
        .find(|m| m.role == aria_api::Role::User)
        .map(|m| m.content.as_str())
}

/// Whether `message` names one of `tools` ("use file_search to find it", or ARIA's note that a
/// call was described instead of made): a call is what it asks for.
fn names_a_tool(message: &str, tools: &[aria_api::ToolSpec]) -> bool {
    message
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .any(|word| tools.iter().any(|t| t.name == word))
}

/// The tool a forced change of `request` uses: `file_insert` for a request to add lines, else
/// the form's tool, else a whole-file `file_write`; the first of them offered. Never a
/// whole-file write when a partial change is offered: a small model asked to rewrite a file
/// whole for "add a line" writes only the new line, losing the rest.
fn change_tool(request: &ChatRequest, form: EditForm) -> Option<&'static str> {
    let offers = |name: &str| request.tools.iter().any(|t| t.name == name);
    let adds = last_user_message(request).is_some_and(aria_api::asks_to_add_lines);
    let insert = adds.then_some(INSERT_FILE_TOOL);
    insert.into_iter().chain([form.tool(), WRITE_FILE_TOOL]).find(|name| offers(name))
}

/// Where a small model's edit of a named file stands: an embedded model that changes a file it
/// has not seen writes a patch against text it imagines (`port = 8088` as the hunk's first
/// line) or replaces the file with a guess, and once it has read the file it explains the
/// change instead of making it. So its first call reads the file and its second makes the
/// change with the tool [`change_tool`] names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EditStep {
    /// Not an edit of a named file, or past its first two calls: the model chooses.
    Free,
    /// The first call: `file_read`.
    Read,
    /// The file was read: the change.
    Write,
}

impl EditStep {
    /// Whether a call of `tool` may be written at this step of `request`.
    fn allows(self, tool: &str, request: &ChatRequest, form: EditForm) -> bool {
        match self {
            EditStep::Free => true,
            EditStep::Read => tool == READ_TOOL,
            EditStep::Write => change_tool(request, form) == Some(tool),
        }
    }
}

/// The step of an edit `request` is at (see [`EditStep`]): the user's latest message (not one
/// of ARIA's notes) asks to edit a file it names, `file_read` and a tool that changes files
/// are offered, and since that message there is nothing (the read comes next) or exactly one
/// `file_read` call whose result is not an error (the change comes next). A question about a
/// file the message names (`aria_api::asks_about_a_named_file`) takes the read step only: a
/// small model asked "What day was the meeting moved to? Check notes.txt." otherwise searched
/// the file for a pattern it imagined and found nothing.
fn edit_step(request: &ChatRequest, form: EditForm) -> EditStep {
    let offers = |name: &str| request.tools.iter().any(|t| t.name == name);
    let message = last_user_message(request).filter(|m| !aria_api::is_aria_note(m));
    let edit = message.is_some_and(aria_api::asks_to_edit_a_named_file)
        && change_tool(request, form).is_some();
    let question = message.is_some_and(aria_api::asks_about_a_named_file);
    if !(edit || question) || !offers(READ_TOOL) {
        return EditStep::Free;
    }
    let start = request.messages.iter().rposition(|m| m.role == aria_api::Role::User);
    let since = start.map_or(&request.messages[..], |i| &request.messages[i + 1..]);
    match since {
        [] => EditStep::Read,
        [call, result]
            if edit
                && call.role == aria_api::Role::Assistant
                && call.tool_calls.len() == 1
                && call.tool_calls[0].name == READ_TOOL
                && result.role == aria_api::Role::Tool =>
        {
            if aria_api::tool_failed(&result.content) { EditStep::Free } else { EditStep::Write }
        }
        _ => EditStep::Free,
    }
}

/// Whether a tool has answered since the user last spoke.
fn tool_result_since_last_user_message(request: &ChatRequest) -> bool {
    request
        .messages
        .iter()
        .rev()
        .take_while(|m| m.role != aria_api::Role::User)
        .any(|m| m.role == aria_api::Role::Tool)
}

impl LocalChatProvider {
    /// Loads a GGUF chat model (llama architecture, byte-level BPE tokenizer, ChatML tokens).
    /// Blocking: call it from `spawn_blocking` in async code.
    pub fn load(path: &Path, options: LocalChatOptions) -> Result<Self, LocalError> {
        let model = ChatModel::load(path)?;
        let load_time = model.load_time;
        Ok(LocalChatProvider {
            model: Arc::new(Mutex::new(model)),
            options,
            load_time,
            last_stats: Arc::default(),
        })
    }

    /// Keeps the model state after the system turn in `dir` as well, so that the next process
    /// using this model file does not compute it again (one file per model, mode 0600).
    pub fn keep_prompt_state_in(self, dir: &Path) -> Self {
        self.lock().keep_prompt_state_in(dir);
        self
    }

    /// The same loaded model with other defaults.
    pub fn with_options(&self, options: LocalChatOptions) -> Self {
        LocalChatProvider { options, ..self.clone() }
    }

    pub fn options(&self) -> &LocalChatOptions {
        &self.options
    }

    /// Figures of the last finished (or cancelled) generation: tokens and seconds.
    pub fn last_stats(&self) -> Option<GenStats> {
        *self.last_stats.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// How long loading the GGUF took.
    pub fn load_time(&self) -> Duration {
        self.load_time
    }

    /// The model's context window in tokens.
    pub fn context_length(&self) -> usize {
        self.lock().context()
    }

    /// Encodes plain text with the model's tokenizer (control tokens are not recognised).
    pub fn tokenize(&self, text: &str) -> Result<Vec<u32>, LocalError> {
        self.lock().vocab.encode_text(text)
    }

    /// Decodes token ids to text.
    pub fn detokenize(&self, ids: &[u32]) -> Result<String, LocalError> {
        let model = self.lock();
        let bytes: Vec<u8> = ids
            .iter()
            .flat_map(|id| model.vocab.pieces.get(*id as usize).cloned().unwrap_or_default())
            .collect();
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// The prompt a request turns into (what the model sees).
    pub fn render_prompt(&self, request: &ChatRequest) -> Result<Prompt, LocalError> {
        let prefix = self.assistant_prefix(request, self.edit_step(request));
        let model = self.lock();
        let shown = shown_tools(request, self.options.edit_form);
        render(&model.vocab, model.style, &request.messages, &shown, prefix)
    }

    /// Runs a request to the end on the calling thread, returning the events and timing
    /// figures (benchmarks and tests; the agent uses [`Provider::stream`]).
    pub fn generate_blocking(
        &self,
        request: &ChatRequest,
    ) -> Result<(Vec<ChatEvent>, GenStats), LocalError> {
        let mut events = Vec::new();
        let stats = self.run(
            request,
            &mut |e| {
                events.push(e);
                true
            },
            &|| false,
        )?;
        Ok((events, stats))
    }

    /// Where an edit of a named file stands, with the tool choice that forces its steps.
    fn edit_step(&self, request: &ChatRequest) -> EditStep {
        if self.options.tool_choice == ToolChoice::FirstThenAuto {
            edit_step(request, self.options.edit_form)
        } else {
            EditStep::Free
        }
    }

    /// `edit`: [`Self::edit_step`] of the request (asked once per request).
    fn assistant_prefix(&self, request: &ChatRequest, edit: EditStep) -> &'static str {
        let forced = !request.tools.is_empty()
            && match self.options.tool_choice {
                ToolChoice::Auto => false,
                ToolChoice::Required => true,
                ToolChoice::FirstThenAuto => {
                    let first = !tool_result_since_last_user_message(request)
                        && last_user_message(request).is_some_and(|m| {
                            aria_api::refers_to_files(m)
                                || aria_api::refers_to_code(m)
                                || aria_api::asks_for_change(m)
                                || names_a_tool(m, &request.tools)
                        });
                    first || edit == EditStep::Write
                }
            };
        if forced { "<tool_call>\n" } else { "" }
    }

    fn lock(&self) -> MutexGuard<'_, ChatModel> {
        // A panic mid-generation leaves a possibly inconsistent KV cache: clear it and go on.
        self.model.lock().unwrap_or_else(|poisoned| {
            let mut guard = poisoned.into_inner();
            guard.reset();
            guard
        })
    }

    fn params(&self, request: &ChatRequest) -> GenParams {
        let o = &self.options;
        let seed = o.seed.unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(42, |d| d.as_nanos() as u64)
        });
        GenParams {
            max_tokens: request.max_tokens.unwrap_or(o.max_tokens) as usize,
            temperature: request.temperature.unwrap_or(o.temperature).max(0.0),
            top_p: o.top_p,
            repeat_penalty: o.repeat_penalty,
            repeat_last_n: o.repeat_last_n,
            seed,
        }
    }

    fn run(
        &self,
        request: &ChatRequest,
        emit: &mut dyn FnMut(ChatEvent) -> bool,
        cancelled: &dyn Fn() -> bool,
    ) -> Result<GenStats, LocalError> {
        let edit = self.edit_step(request);
        let prefix = self.assistant_prefix(request, edit);
        // The grammar allows what the prompt shows; the forced calls of an edit of a named file
        // read it, then change it.
        let form = self.options.edit_form;
        let shown = shown_tools(request, form);
        let forced = prefix.starts_with(TOOL_CALL_OPEN);
        let step = if forced { edit } else { EditStep::Free };
        let allowed: Vec<&aria_api::ToolSpec> =
            shown.iter().filter(|t| step.allows(&t.name, request, form)).collect();
        let offer = (!request.tools.is_empty()).then(|| ToolsOffer {
            grammar: Arc::new(ToolGrammar::new(
                allowed.iter().map(|t| (t.name.as_str(), &t.parameters)),
            )),
            // The grammar's tool indices index this list.
            names: allowed.iter().map(|t| t.name.clone()).collect(),
            forced,
        });
        let params = self.params(request);
        let mut model = self.lock();
        let prompt = render(&model.vocab, model.style, &request.messages, &shown, prefix)?;
        tracing::trace!(target: "aria_local::prompt", tokens = prompt.tokens.len(), text = %prompt.text);
        let stats = generate(&mut model, &prompt, &params, offer.as_ref(), emit, cancelled)?;
        *self.last_stats.lock().unwrap_or_else(|p| p.into_inner()) = Some(stats);
        Ok(stats)
    }
}

impl Provider for LocalChatProvider {
    fn name(&self) -> &str {
        "local"
    }

    fn stream(&self, request: ChatRequest) -> ChatStream {
        let (tx, rx) = tokio::sync::mpsc::channel::<Result<ChatEvent, ProviderError>>(64);
        let this = self.clone();
        let spawned =
            std::thread::Builder::new().name("aria-local-generate".into()).spawn(move || {
                let span = tracing::debug_span!("local_generate", model = %request.model);
                let _guard = span.enter();
                let sender = tx.clone();
                let result = this.run(
                    &request,
                    &mut |event| sender.blocking_send(Ok(event)).is_ok(),
                    &|| tx.is_closed(),
                );
                if let Err(e) = result {
                    let _ = tx.blocking_send(Err(e.into()));
                }
            });
        if let Err(e) = spawned {
            let err = ProviderError::Config {
                message: format!("could not start the local generation thread: {e}"),
            };
            return futures::stream::once(async move { Err(err) }).boxed();
        }
        futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|item| (item, rx)) })
            .boxed()
    }
}

#[cfg(test)]
mod edit_step_tests {
    use aria_api::{ChatRequest, Message, ToolCall, ToolSpec};

    use super::{EditForm, EditStep, change_tool, edit_step};

    fn request(task: &str, read: bool) -> ChatRequest {
        let tool = |name: &str| ToolSpec {
            name: name.into(),
            description: String::new(),
            parameters: serde_json::json!({"type": "object"}),
        };
        let mut messages = vec![Message::user(task)];
        if read {
            let call = ToolCall {
                id: "c1".into(),
                name: "file_read".into(),
                arguments: r#"{"path":"calc.py"}"#.into(),
            };
            messages.push(Message::assistant(String::new(), vec![call]));
            messages.push(Message::tool_result("c1", "def add(a, b):\n    return a + b\n"));
        }
        ChatRequest {
            model: "m".into(),
            messages,
            tools: vec![tool("file_read"), tool("apply_patch"), tool("file_write")],
            max_tokens: None,
            temperature: None,
        }
    }

    #[test]
    fn a_question_naming_a_verb_of_change_is_never_forced_to_change_the_file() {
        let step = |task: &str, read: bool| edit_step(&request(task, read), EditForm::Patch);
        let question = "What does the add function in calc.py return?";
        assert_eq!(step(question, false), EditStep::Read);
        assert_eq!(step(question, true), EditStep::Free);
        let change = "Rename add to plus in calc.py";
        assert_eq!(step(change, false), EditStep::Read);
        assert_eq!(step(change, true), EditStep::Write);
    }

    #[test]
    fn the_change_is_made_with_the_forms_tool_and_lines_are_added_with_file_insert() {
        let mut req = request("Rename add to plus in calc.py", true);
        let tool = |name: &str| aria_api::ToolSpec {
            name: name.into(),
            description: String::new(),
            parameters: serde_json::json!({"type": "object"}),
        };
        req.tools.extend([tool("file_edit"), tool("file_insert")]);
        assert_eq!(change_tool(&req, EditForm::Patch), Some("apply_patch"));
        assert_eq!(change_tool(&req, EditForm::Replace), Some("file_edit"));
        req.messages[0] = aria_api::Message::user("Add the line 'bread' at the end of list.txt");
        assert_eq!(change_tool(&req, EditForm::Patch), Some("file_insert"));
        // Only a whole-file write offered: that is what is left.
        req.tools.retain(|t| t.name == "file_read" || t.name == "file_write");
        assert_eq!(change_tool(&req, EditForm::Replace), Some("file_write"));
        req.tools.retain(|t| t.name == "file_read");
        assert_eq!(change_tool(&req, EditForm::Replace), None);
        assert_eq!(edit_step(&req, EditForm::Replace), EditStep::Free);
    }
}
