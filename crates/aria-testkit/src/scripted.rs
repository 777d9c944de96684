//! An in-process provider that plays back a script and records every request it receives.

use std::sync::{Arc, Mutex};

use aria_api::{
    ChatEvent, ChatRequest, ChatStream, FinishReason, Provider, ProviderError, ToolCall, Usage,
};
use futures::stream;

/// One scripted model turn.
#[derive(Debug, Clone)]
pub enum Turn {
    /// A final answer.
    Text(String),
    /// Tool calls as `(name, raw arguments)`; ids are `call_<turn>_<n>`.
    Tools(Vec<(String, String)>),
    /// A failure before any event.
    Fail(ProviderError),
    /// A stream that never yields (for cancellation and timeout tests).
    Hang,
}

impl Turn {
    pub fn text(s: &str) -> Turn {
        Turn::Text(s.to_owned())
    }
    pub fn tool(name: &str, args: serde_json::Value) -> Turn {
        Turn::Tools(vec![(name.to_owned(), args.to_string())])
    }
}

/// What happens when the script runs out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// Repeat the last turn forever (a model that never stops).
    RepeatLast,
    /// Fail with a `Config` error naming the exhausted script.
    Fail,
}

/// Plays back [`Turn`]s in order. Every turn reports 10 input and 5 output tokens.
#[derive(Debug, Clone)]
pub struct ScriptedProvider {
    turns: Arc<Vec<Turn>>,
    end: End,
    requests: Arc<Mutex<Vec<ChatRequest>>>,
}

impl ScriptedProvider {
    pub fn new(turns: Vec<Turn>, end: End) -> Self {
        ScriptedProvider { turns: Arc::new(turns), end, requests: Arc::default() }
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<ChatRequest> {
        self.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }

    fn turn_for(&self, index: usize) -> Option<Turn> {
        match self.turns.get(index) {
            Some(turn) => Some(turn.clone()),
            None if self.end == End::RepeatLast => self.turns.last().cloned(),
            None => None,
        }
    }
}

pub const TURN_USAGE: Usage = Usage { input_tokens: 10, output_tokens: 5 };

impl Provider for ScriptedProvider {
    fn name(&self) -> &str {
        "scripted"
    }

    fn stream(&self, request: ChatRequest) -> ChatStream {
        let index = match self.requests.lock() {
            Ok(mut requests) => {
                requests.push(request);
                requests.len() - 1
            }
            Err(_) => 0,
        };
        let events: Vec<Result<ChatEvent, ProviderError>> = match self.turn_for(index) {
            None => vec![Err(ProviderError::Config {
                message: format!("the script has only {} turns", self.turns.len()),
            })],
            Some(Turn::Hang) => return Box::pin(stream::pending()),
            Some(Turn::Fail(e)) => vec![Err(e)],
            Some(Turn::Text(text)) => {
                let mid = text.char_indices().nth(text.chars().count() / 2).map_or(0, |(i, _)| i);
                vec![
                    Ok(ChatEvent::TextDelta { text: text[..mid].to_owned() }),
                    Ok(ChatEvent::TextDelta { text: text[mid..].to_owned() }),
                    Ok(ChatEvent::Usage { usage: TURN_USAGE }),
                    Ok(ChatEvent::Finished { reason: FinishReason::Stop }),
                ]
            }
            Some(Turn::Tools(calls)) => {
                let mut events: Vec<_> = calls
                    .into_iter()
                    .enumerate()
                    .map(|(n, (name, arguments))| {
                        Ok(ChatEvent::ToolCall {
                            call: ToolCall { id: format!("call_{index}_{n}"), name, arguments },
                        })
                    })
                    .collect();
                events.push(Ok(ChatEvent::Usage { usage: TURN_USAGE }));
                events.push(Ok(ChatEvent::Finished { reason: FinishReason::ToolCalls }));
                events
            }
        };
        Box::pin(stream::iter(events))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> ChatRequest {
        ChatRequest {
            model: "m".into(),
            messages: vec![],
            tools: vec![],
            max_tokens: None,
            temperature: None,
        }
    }

    #[test]
    fn plays_turns_in_order_then_repeats() {
        let p = ScriptedProvider::new(
            vec![Turn::text("héllo"), Turn::tool("file_read", serde_json::json!({"path": "a"}))],
            End::RepeatLast,
        );
        let first = futures::executor::block_on(p.complete(request())).unwrap();
        assert_eq!(first.text, "héllo");
        for _ in 0..2 {
            let next = futures::executor::block_on(p.complete(request())).unwrap();
            assert_eq!(next.tool_calls.len(), 1);
            assert_eq!(next.tool_calls[0].name, "file_read");
        }
        assert_eq!(p.requests().len(), 3);
    }

    #[test]
    fn fails_when_exhausted() {
        let p = ScriptedProvider::new(vec![Turn::text("x")], End::Fail);
        futures::executor::block_on(p.complete(request())).unwrap();
        assert!(futures::executor::block_on(p.complete(request())).is_err());
    }
}
