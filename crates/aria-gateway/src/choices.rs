//! Asking the user to choose: the `ask_user` tool, and the front
//! end that puts its question to a person.
//!
//! When a request is ambiguous the model calls `ask_user {question, options}`. In a Telegram
//! chat the options become buttons (see `telegram/choice.rs`): a press within the wait (60 s)
//! is the tool's result; otherwise the run is told the choice is *postponed* and ends without
//! acting on it, the question stays open, a reminder follows after 30 minutes, and 30 minutes
//! later it is cancelled (nothing done). A press after the postponement comes back to the
//! conversation as the user's next message. `aria chat` on a terminal asks there with numbered
//! options (aria-cli's `TerminalChooser`). Where nobody can be asked (the OpenAI-compatible
//! endpoint, a scheduled run, the web page and WebSocket for now, `aria run`, `aria chat`
//! without a terminal) the tool says so, and the model picks the safest option or asks in its
//! answer.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use aria_api::{Tier, Tool, ToolContext, ToolError, ToolFuture, ToolOutput, ToolSpec};
use serde_json::{Value, json};

/// How a question ended for the run that asked it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    /// The user pressed this option.
    Chosen(String),
    /// Nobody answered within the wait: the question stays open.
    Postponed,
    /// This run has no person to ask; the text says why.
    NobodyToAsk(String),
}

/// A front end that can put a question with options to the person behind a run.
pub trait Chooser: Send + Sync + std::fmt::Debug {
    fn choose<'a>(
        &'a self,
        session_id: &'a str,
        question: &'a str,
        options: &'a [String],
    ) -> Pin<Box<dyn Future<Output = Choice> + Send + 'a>>;
}

/// Where `ask_user` sends its questions: the front end attached when it starts.
#[derive(Debug, Default)]
pub struct Choices {
    chooser: OnceLock<Weak<dyn Chooser>>,
}

impl Choices {
    /// Questions go to `chooser` from now on (the first attached stays).
    pub fn attach(&self, chooser: Weak<dyn Chooser>) {
        let _ = self.chooser.set(chooser);
    }

    fn chooser(&self) -> Option<Arc<dyn Chooser>> {
        self.chooser.get().and_then(Weak::upgrade)
    }
}

/// The longest the tool waits for its front end (the front end's own wait is shorter).
const TOOL_TIMEOUT: Duration = Duration::from_secs(150);

/// `ask_user {question, options}`. Tier: read (asking changes nothing).
#[derive(Debug)]
pub struct AskUser {
    choices: Arc<Choices>,
    spec: ToolSpec,
}

impl AskUser {
    pub const NAME: &'static str = "ask_user";

    pub fn new(choices: Arc<Choices>) -> AskUser {
        let spec = ToolSpec {
            name: Self::NAME.into(),
            description: "Ask the user to choose between options when the request is ambiguous \
                          and a wrong guess would matter. Returns the option chosen, or says the \
                          choice is postponed (then stop and do nothing about it) or that nobody \
                          can be asked (then pick the safest option or ask in your answer)."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "question": {"type": "string", "minLength": 1, "maxLength": 500},
                    "options": {
                        "type": "array",
                        "items": {"type": "string", "minLength": 1, "maxLength": 60},
                        "minItems": 2,
                        "maxItems": 8
                    }
                },
                "required": ["question", "options"],
                "additionalProperties": false
            }),
        };
        AskUser { choices, spec }
    }
}

impl Tool for AskUser {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn tier(&self, _args: &Value) -> Tier {
        Tier::Read
    }

    fn timeout(&self) -> Option<Duration> {
        Some(TOOL_TIMEOUT)
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let question = args["question"].as_str().unwrap_or_default().trim().to_owned();
            let mut options: Vec<String> = Vec::new();
            for option in args["options"].as_array().into_iter().flatten() {
                let option = option.as_str().unwrap_or_default().trim().to_owned();
                if !option.is_empty() && !options.contains(&option) {
                    options.push(option);
                }
            }
            if question.is_empty() || options.len() < 2 {
                return Err(ToolError::failed(
                    "ask_user needs a question and at least two different options",
                ));
            }
            if ctx.dry_run {
                return Ok(ToolOutput::text(format!(
                    "dry run: would ask {question:?} with {}",
                    options.join(" / ")
                )));
            }
            let answer = match self.choices.chooser() {
                Some(chooser) => chooser.choose(&ctx.session_id, &question, &options).await,
                None => Choice::NobodyToAsk("no person is attached to this run".into()),
            };
            let (text, detail) = match &answer {
                Choice::Chosen(option) => (format!("The user chose: {option}"), json!({"chosen": option})),
                Choice::Postponed => (
                    "postponed: the user has not chosen yet. Do nothing further on this until they \
                     answer; their choice will come as their next message."
                        .to_owned(),
                    json!({"postponed": true}),
                ),
                Choice::NobodyToAsk(why) => (
                    format!(
                        "Nobody can be asked here ({why}). Pick the safest option, or ask the \
                         question in your answer."
                    ),
                    json!({"asked": false}),
                ),
            };
            Ok(ToolOutput::text(text).with_details(detail))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Always(Choice);

    impl Chooser for Always {
        fn choose<'a>(
            &'a self,
            _: &'a str,
            _: &'a str,
            options: &'a [String],
        ) -> Pin<Box<dyn Future<Output = Choice> + Send + 'a>> {
            let answer = match &self.0 {
                Choice::Chosen(_) => Choice::Chosen(options[1].clone()),
                other => other.clone(),
            };
            Box::pin(async move { answer })
        }
    }

    fn call(tool: &AskUser, args: Value) -> Result<ToolOutput, ToolError> {
        let ctx = ToolContext { session_id: "s".into(), dry_run: false };
        futures::executor::block_on(tool.call(args, &ctx))
    }

    #[test]
    fn the_answer_postponement_or_absence_of_a_person_is_said_plainly() {
        let args = json!({"question": "Which file?", "options": ["a.txt", "b.txt", "a.txt"]});
        let nobody = AskUser::new(Arc::new(Choices::default()));
        assert!(call(&nobody, args.clone()).unwrap().content.starts_with("Nobody can be asked"));
        for (answer, expected) in [
            (Choice::Chosen(String::new()), "The user chose: b.txt"),
            (Choice::Postponed, "postponed: the user has not chosen yet"),
        ] {
            let choices = Arc::new(Choices::default());
            let chooser: Arc<dyn Chooser> = Arc::new(Always(answer));
            choices.attach(Arc::downgrade(&chooser));
            let out = call(&AskUser::new(choices), args.clone()).unwrap();
            assert!(out.content.starts_with(expected), "{}", out.content);
        }
        let one = json!({"question": "Sure?", "options": ["yes", "yes"]});
        assert!(call(&nobody, one).is_err(), "two different options at least");
    }
}
