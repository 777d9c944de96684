//! What the loop does about small models' habits and about what a turn may keep: a call
//! described instead of made, a read repeated as it was, a failed call
//! repeated as it was, a change asked for and not made, and the checks a `memory_store` call
//! must pass.

use aria_api::{ARIA_NOTE, Role, Tier, Tool, ToolCall};
use serde_json::{Value, json};

use super::{Run, Stop};

/// How the answer to a failed call repeated as it was begins.
const REPEATED_FAILURE: &str = "this exact call just failed with: ";
/// How it ends.
const CHANGE_IT: &str = "; change it (different arguments or another tool)";

impl Run<'_> {
    /// The answer to a call that repeats, with the same tool and the same arguments (compared
    /// as JSON), a call of the model's previous step that failed: it is not run (or validated,
    /// or asked about) again, since it would fail the same way; the model is told the error and
    /// to change the call. Audited as `tool.repeated_failure`. A third identical call gets the
    /// same answer.
    pub(super) fn repeated_failure(&self, call: &ToolCall) -> Result<Option<String>, Stop> {
        let Some(earlier) = self.same_call_in_previous_step(call) else { return Ok(None) };
        let Some(result) =
            self.history.iter().rev().find(|m| {
                m.role == Role::Tool && m.tool_call_id.as_deref() == Some(earlier.as_str())
            })
        else {
            return Ok(None);
        };
        let body = aria_api::untrusted_body(&result.content).unwrap_or(&result.content).trim();
        let error = if let Some(rest) = body.strip_prefix(REPEATED_FAILURE) {
            rest.strip_suffix(CHANGE_IT).unwrap_or(rest).to_owned()
        } else if aria_api::tool_failed(body) {
            let clipped: String = body.chars().take(400).collect();
            if clipped.len() < body.len() { format!("{clipped}…") } else { clipped }
        } else {
            return Ok(None);
        };
        self.audit(
            "tool.repeated_failure",
            json!({"call_id": call.id, "name": call.name, "earlier_call_id": earlier, "error": error}),
        )?;
        Ok(Some(format!("{REPEATED_FAILURE}{error}{CHANGE_IT}")))
    }

    /// The answer to a validated call that is not run: a read repeated as it was in the
    /// previous step (it returns what it returned), or a `memory_store` the conversation does
    /// not justify. Each is audited.
    pub(super) fn screen(
        &self,
        call: &ToolCall,
        tool: &dyn Tool,
        args: &Value,
    ) -> Result<Option<String>, Stop> {
        if tool.tier(args) == Tier::Read
            && let Some(earlier) = self.repeated_call(call)
        {
            self.audit(
                "tool.repeated",
                json!({"call_id": call.id, "name": call.name, "earlier_call_id": earlier}),
            )?;
            return Ok(Some(format!(
                "not run again: you already have this result (the same `{}` call just \
                 answered, call {earlier}); answer the user from it, or call with different \
                 arguments",
                call.name
            )));
        }
        if call.name == crate::memory_tools::MEMORY_STORE
            && let Some(reason) = self.unjustified_memory(args)
        {
            self.audit_refusal(call, args, Tier::RecoverableWrite, "memory", &reason)?;
            return Ok(Some(format!("refused: {reason}")));
        }
        Ok(None)
    }

    /// What to tell the model about a text answer that shows a small model's habit instead of
    /// an answer, with the audit payload: an empty answer after a tool call, a call described
    /// instead of made ("you can use the `file_list` function"), or, for a model shown a
    /// selection of tools (the small ones) and a task that changes no file, an answer given
    /// right after a call that failed or found nothing; and a text answer to a request for a
    /// change that was not made. Each is pointed out at most once a run.
    pub(super) fn habit(&mut self, text: &str) -> Option<(Value, String)> {
        let (kind, payload, note) = if let Some(what) = self.text_call.take() {
            (
                "text_call",
                json!({"text_call": what}),
                format!(
                    "{ARIA_NOTE}Your answer was {what}: nothing ran, so there is no result yet. \
                     Call a tool now (for example `file_search` to find where a name is, \
                     `file_list` to see the files, `file_read` to read one) and answer from \
                     what it returns."
                ),
            )
        } else if text.trim().is_empty() {
            if !self.called_this_turn() {
                return None;
            }
            (
                "empty_answer",
                json!({"empty_answer": true}),
                format!(
                    "{ARIA_NOTE}Your answer was empty. Answer my request now, in plain text, \
                     from the tool results above."
                ),
            )
        } else if let Some(tool) = self.described_call(text) {
            (
                "described_call",
                json!({"tool": tool}),
                format!(
                    "{ARIA_NOTE}You described calling `{tool}` but did not call it. If the task \
                     needs it, call `{tool}` now; otherwise give your final answer."
                ),
            )
        } else if self.agent.config.tool_selection.is_some()
            && !crate::tool_select::asks_for_file_change(self.task())
            && self.found_nothing()
        {
            (
                "found_nothing",
                json!({"found_nothing": true}),
                format!(
                    "{ARIA_NOTE}Your last tool call failed or found nothing, so it does not back \
                     your answer. If a tool can find the answer (list the files, then read the \
                     right one), call it now; otherwise say plainly that you could not find it."
                ),
            )
        } else if let Some(tools) = self.change_not_made() {
            (
                "change_not_made",
                json!({"change_not_made": true}),
                format!(
                    "{ARIA_NOTE}No file has changed, but my request asks for a change. Do not \
                     describe it or show a command: make the change now by calling {tools}."
                ),
            )
        } else {
            return None;
        };
        if self.nudged.contains(&kind) {
            return None;
        }
        self.nudged.push(kind);
        Some((payload, note))
    }

    /// When the run would end unfulfilled (a change asked for, none made, nothing denied) and
    /// a tool that changes files is there: those tools, named for the note ("`apply_patch` or
    /// `file_write`"). Models explain how to make a change (a `sed` line, a diff in a fence)
    /// instead of making it.
    fn change_not_made(&self) -> Option<String> {
        if self.denials.load(std::sync::atomic::Ordering::Relaxed) > 0
            || self.unfulfilled("").is_none()
        {
            return None;
        }
        let names: Vec<String> = self
            .agent
            .tools
            .specs()
            .into_iter()
            .map(|t| t.name)
            .filter(|n| aria_api::CHANGE_TOOLS.contains(&n.as_str()))
            .map(|n| format!("`{n}`"))
            .collect();
        (!names.is_empty()).then(|| names.join(" or "))
    }

    /// The tool a text answer describes calling instead of calling it.
    fn described_call(&self, text: &str) -> Option<String> {
        let lower = text.to_lowercase();
        const DESCRIBES: [&str; 7] = [
            "you can use",
            "use the",
            "i would use",
            "i will use",
            "i'll use",
            "let me use",
            "i can use",
        ];
        if !DESCRIBES.iter().any(|d| lower.contains(d)) {
            return None;
        }
        self.agent.tools.specs().into_iter().map(|t| t.name).find(|name| {
            [format!("`{name}`"), format!("{name} function"), format!("{name} tool")]
                .iter()
                .any(|form| lower.contains(form.as_str()))
        })
    }

    /// Whether the latest tool result of this turn is an error or a search that found nothing:
    /// small models answer anyway, with a guess or with the error itself. (A refusal is not
    /// included: saying it cannot be done is the answer then.)
    fn found_nothing(&self) -> bool {
        const NOTHING: [&str; 2] = ["error:", "No matches for "];
        self.history
            .iter()
            .rev()
            .take_while(|m| m.role != Role::User)
            .find(|m| m.role == Role::Tool)
            .map(|m| aria_api::untrusted_body(&m.content).unwrap_or(&m.content).trim_start())
            .is_some_and(|result| NOTHING.iter().any(|p| result.starts_with(p)))
    }

    /// The latest user message that is not one of ARIA's own notes to the model (what this
    /// turn answers).
    fn task(&self) -> &str {
        self.history
            .iter()
            .rev()
            .find(|m| m.role == Role::User && !aria_api::is_aria_note(&m.content))
            .map_or("", |m| m.content.as_str())
    }

    /// Whether the model called a tool since the latest user message.
    pub(super) fn called_this_turn(&self) -> bool {
        self.history
            .iter()
            .rev()
            .take_while(|m| m.role != Role::User)
            .any(|m| !m.tool_calls.is_empty())
    }

    /// Why the run must not end `done`: the task asked for files to change and nothing did
    /// (the model answered in text, copied a tool result, refused, or said nothing). Not in a
    /// dry run or read-only mode, where nothing changes by design.
    pub(super) fn unfulfilled(&self, answer: &str) -> Option<String> {
        let config = &self.agent.config;
        if self.changed || config.dry_run || self.mode == aria_api::ApprovalMode::ReadOnly {
            return None;
        }
        if !crate::tool_select::asks_for_file_change(self.task()) {
            return None;
        }
        let denied = self.denials.load(std::sync::atomic::Ordering::Relaxed);
        if denied > 0 {
            return Some(format!(
                "the task asked for a change to files, but no change was made: {denied} call(s) \
                 that needed approval were denied (see above for how to allow them)"
            ));
        }
        let said = answer.split_whitespace().collect::<Vec<_>>().join(" ");
        let said = if said.is_empty() {
            "nothing".to_owned()
        } else {
            let clipped: String = said.chars().take(160).collect();
            if clipped.len() < said.len() {
                format!("«{clipped}…»")
            } else {
                format!("«{clipped}»")
            }
        };
        Some(format!(
            "the task asked for a change to files, but no change was made (the model answered \
             {said}); try again with a larger model, or ask for the change more precisely"
        ))
    }

    /// Why a run must not end `done` though nothing was asked of the files: the final answer is
    /// empty and no file changed, so the user got nothing (small models do this after a tool
    /// call even when told once that their answer was empty). A run that changed files has
    /// done its work and may end without words.
    pub(super) fn unanswered(&self, answer: &str) -> Option<String> {
        if !answer.trim().is_empty() || self.changed {
            return None;
        }
        Some(
            "the model ended without an answer and changed nothing; try again, ask more \
             precisely, or use a larger model"
                .to_owned(),
        )
    }

    /// The id of the same call (name and arguments) in the model's previous step of this turn:
    /// small models repeat a call whose result they already have instead of answering.
    fn repeated_call(&self, call: &ToolCall) -> Option<String> {
        self.same_call_in_previous_step(call)
    }

    /// The id of the call of the model's previous step of this turn with `call`'s tool and
    /// arguments (equal as JSON: key order and spacing do not matter).
    fn same_call_in_previous_step(&self, call: &ToolCall) -> Option<String> {
        let previous = self
            .history
            .iter()
            .rev()
            .take_while(|m| m.role != Role::User)
            .filter(|m| m.role == Role::Assistant && !m.tool_calls.is_empty())
            .nth(1)?;
        let args = |raw: &str| serde_json::from_str::<Value>(raw).ok();
        previous
            .tool_calls
            .iter()
            .find(|c| {
                c.name == call.name
                    && (c.arguments == call.arguments
                        || args(&c.arguments).is_some_and(|a| Some(a) == args(&call.arguments)))
            })
            .map(|c| c.id.clone())
    }

    /// Whether this run's turn (from the latest user message) may have shown the model a file.
    pub(super) fn turn_read_files(&self) -> bool {
        let start = self.history.iter().rposition(|m| m.role == Role::User).unwrap_or(0);
        crate::memory_policy::turn_read_files(&self.history[start..])
    }

    /// Why the conversation does not justify the memory a `memory_store` call wants to keep.
    fn unjustified_memory(&self, args: &Value) -> Option<String> {
        let content = args["content"].as_str().unwrap_or_default();
        let by = |role: Role| -> Vec<&str> {
            self.history.iter().filter(|m| m.role == role).map(|m| m.content.as_str()).collect()
        };
        let conversation = crate::Conversation {
            user: by(Role::User),
            tool_output: by(Role::Tool),
            assistant: by(Role::Assistant),
            instructions: vec![
                &self.agent.config.system_prompt,
                crate::context::PROFILE_FRAMING,
                crate::context::MEMORY_FRAMING,
            ],
        };
        crate::unjustified(content, &conversation)
    }
}
