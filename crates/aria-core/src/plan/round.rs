//! What the planner answered, and what a round's steps showed: the two inputs to the decision
//! whether the planner's `DONE` may count.

use aria_api::SessionState;

use crate::events::{AgentEvent, EventSink};

/// What the planner answered.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Reply {
    Done(String),
    Steps(Vec<String>),
    Neither,
}

/// Reads a planner answer: `DONE`/`DONE:` first (any case) ends with the rest as summary;
/// otherwise lines numbered `1.` or `1)` are the steps (other prose is ignored, steps past
/// `max_steps` are cut).
pub(super) fn parse_reply(text: &str, max_steps: usize) -> Reply {
    let trimmed = text.trim_start().trim_start_matches(['*', '#', '`', ' ']);
    if trimmed.get(..4).is_some_and(|w| w.eq_ignore_ascii_case("done"))
        && !trimmed[4..].starts_with(|c: char| c.is_alphanumeric())
    {
        let rest = trimmed[4..].trim_start_matches(['*', '`']).trim_start();
        let rest = rest.strip_prefix([':', '-', '—', '.']).unwrap_or(rest);
        return Reply::Done(rest.trim().to_owned());
    }
    let steps: Vec<String> = text
        .lines()
        .filter_map(numbered)
        .filter(|s| !s.is_empty())
        .take(max_steps)
        .map(str::to_owned)
        .collect();
    if steps.is_empty() { Reply::Neither } else { Reply::Steps(steps) }
}

/// The text of a line numbered `1.` or `1)`.
fn numbered(line: &str) -> Option<&str> {
    let line = line.trim_start().trim_start_matches(['*', '-', ' ']);
    let digits = line.len() - line.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 || digits > 3 {
        return None;
    }
    let rest = line[digits..].strip_prefix(['.', ')'])?;
    rest.starts_with(char::is_whitespace).then(|| rest.trim().trim_matches('*').trim())
}

/// What the last round's steps showed, for deciding whether `DONE` may count.
#[derive(Debug, Default, Clone)]
pub(super) struct RoundFacts {
    pub(super) ran: bool,
    pub(super) last_state: Option<SessionState>,
    pub(super) last_error: Option<String>,
    pub(super) last_step: String,
    pub(super) last_tool: Option<(String, String)>,
    pub(super) invalid: Vec<String>,
    pub(super) denied: Vec<String>,
}

impl RoundFacts {
    /// Why the goal cannot count as met yet (empty: it can).
    pub(super) fn unmet(&self) -> Vec<String> {
        let mut unmet = Vec::new();
        if !self.ran {
            unmet.push("no step has been carried out yet".to_owned());
            return unmet;
        }
        if self.last_state != Some(SessionState::Done) {
            let state = self.last_state.map_or_else(|| "unknown".into(), |s| s.to_string());
            let why = self.last_error.as_deref().map(|e| format!(": {e}")).unwrap_or_default();
            unmet.push(format!("the last step (\"{}\") ended {state}{why}", self.last_step));
        }
        if let Some((name, outcome)) = &self.last_tool
            && outcome != "ok"
        {
            unmet.push(format!("the last tool call of the last step (`{name}`) ended {outcome}"));
        }
        if !self.invalid.is_empty() {
            unmet.push(format!(
                "tool calls with invalid arguments in the last round: {}",
                self.invalid.join(", ")
            ));
        }
        if !self.denied.is_empty() {
            unmet.push(format!(
                "tool calls denied or refused in the last round: {}",
                self.denied.join(", ")
            ));
        }
        unmet
    }
}

/// What the events of one step showed.
#[derive(Debug, Default)]
pub(super) struct Watched {
    pub(super) messages_before: usize,
    /// The last call that ran or was refused: (name, outcome).
    pub(super) last_tool: Option<(String, String)>,
    pub(super) denied: Vec<String>,
}

impl Watched {
    pub(super) fn see(&mut self, event: AgentEvent, events: &EventSink) {
        match &event {
            AgentEvent::ToolFinished { name, outcome, .. } => {
                if outcome == "refused" {
                    self.denied.push(format!("`{name}`"));
                }
                self.last_tool = Some((name.clone(), outcome.clone()));
            }
            AgentEvent::Denied { name, .. } => {
                self.denied.push(format!("`{name}`"));
                self.last_tool = Some((name.clone(), "denied".into()));
            }
            _ => {}
        }
        let _ = events.send(event);
    }
}
