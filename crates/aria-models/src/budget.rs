//! The context-budget planner: fits a request into a model's context window before it is
//! sent, and refuses one that cannot fit so that it is never sent.
//!
//! What must stay: every system message, the tool declarations, and the current turn (the
//! last user message and everything after it — the tool calls and results the model is working
//! on). What may go: older history, dropped oldest first in whole units, a unit being a user
//! message or an assistant message together with the tool results that answer it (a result is
//! never sent without its call). Room is kept for the answer: the request's `max_tokens`, else a
//! quarter of the window up to 4096 tokens. Token counts are [`crate::tokens`] counts for the
//! request's model (exact BPE counts for OpenAI models, the documented estimate otherwise).

use aria_api::{ChatRequest, Message, ProviderError, Role};

use crate::tokens::{
    MESSAGE_OVERHEAD, OPENAI_REPLY_PRIMING, OPENAI_TOKENS_PER_MESSAGE, count_message,
    count_request_overhead, count_tools,
};

/// A model's context window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextBudget {
    pub window: u64,
}

/// What [`ContextBudget::fit`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fitted {
    /// Messages of older history left out.
    pub dropped: usize,
    /// The estimated input tokens of the request as sent.
    pub input_tokens: u64,
}

impl ContextBudget {
    pub fn new(window: u64) -> Self {
        ContextBudget { window }
    }

    /// The tokens kept free for the answer.
    pub fn reserve(&self, request: &ChatRequest) -> u64 {
        match request.max_tokens {
            Some(n) => u64::from(n),
            None => (self.window / 4).min(4096),
        }
    }

    /// Whether `request` certainly fits without counting its tokens: no tokenizer makes more
    /// tokens of a text than it has bytes (a BPE token is at least one byte, and the formula
    /// counts at most one per character), so the byte length of every text plus the largest
    /// framing of either counter is an upper bound. The router skips [`ContextBudget::fit`]
    /// when this holds, so a small request in a large window costs no tokenizer pass.
    pub fn fits_by_bytes(&self, request: &ChatRequest) -> bool {
        let limit = self.window.saturating_sub(self.reserve(request));
        let framing = MESSAGE_OVERHEAD.max(OPENAI_TOKENS_PER_MESSAGE);
        let mut bound = OPENAI_REPLY_PRIMING;
        for m in &request.messages {
            bound += framing + m.role.as_str().len() as u64 + m.content.len() as u64;
            for c in &m.tool_calls {
                bound += framing + (c.name.len() + c.arguments.len()) as u64;
            }
            if bound > limit {
                return false;
            }
        }
        for t in &request.tools {
            bound += MESSAGE_OVERHEAD
                + (t.name.len() + t.description.len() + t.parameters.to_string().len()) as u64;
        }
        bound <= limit
    }

    /// Fits `request` into the window, dropping old history if needed.
    pub fn fit(&self, request: &mut ChatRequest) -> Result<Fitted, ProviderError> {
        let reserve = self.reserve(request);
        let limit = self.window.saturating_sub(reserve);
        let model = request.model.as_str();
        let tools = count_tools(model, &request.tools) + count_request_overhead(model);
        let sizes: Vec<u64> = request.messages.iter().map(|m| count_message(model, m)).collect();
        let total: u64 = tools + sizes.iter().sum::<u64>();
        if total <= limit {
            return Ok(Fitted { dropped: 0, input_tokens: total });
        }
        let keep_from = current_turn(&request.messages);
        let fixed: u64 = tools
            + request
                .messages
                .iter()
                .zip(&sizes)
                .enumerate()
                .filter(|(i, (m, _))| *i >= keep_from || m.role == Role::System)
                .map(|(_, (_, s))| s)
                .sum::<u64>();
        if fixed > limit {
            return Err(ProviderError::ContextLengthExceeded {
                message: format!(
                    "model `{}` has a context window of {} tokens; the system prompt, {} tool \
                     declarations and the current turn need about {fixed}, plus {reserve} kept \
                     for the answer, so the request was not sent",
                    request.model,
                    self.window,
                    request.tools.len()
                ),
            });
        }
        // Drop whole units from the oldest until what is left fits.
        let mut drop = vec![false; request.messages.len()];
        let mut size = total;
        let mut i = 0;
        while size > limit && i < keep_from {
            if request.messages[i].role == Role::System {
                i += 1;
                continue;
            }
            let end = unit_end(&request.messages, i, keep_from);
            for j in i..end {
                if request.messages[j].role != Role::System {
                    drop[j] = true;
                    size -= sizes[j];
                }
            }
            i = end;
        }
        let dropped = drop.iter().filter(|d| **d).count();
        let mut index = 0;
        request.messages.retain(|_| {
            let keep = !drop[index];
            index += 1;
            keep
        });
        tracing::info!(model = %request.model, dropped, window = self.window, "older history left out to fit the context window");
        Ok(Fitted { dropped, input_tokens: size })
    }
}

/// The index where the current turn starts: the last user message (or the last message).
fn current_turn(messages: &[Message]) -> usize {
    messages.iter().rposition(|m| m.role == Role::User).unwrap_or(messages.len().saturating_sub(1))
}

/// The end (exclusive) of the unit starting at `start`: an assistant message takes the tool
/// results that follow it.
fn unit_end(messages: &[Message], start: usize, limit: usize) -> usize {
    let mut end = start + 1;
    if messages[start].role == Role::Assistant {
        while end < limit && messages[end].role == Role::Tool {
            end += 1;
        }
    }
    end
}

#[cfg(test)]
mod tests {
    use super::*;
    use aria_api::ToolCall;

    fn request(messages: Vec<Message>) -> ChatRequest {
        ChatRequest {
            model: "m".into(),
            messages,
            tools: vec![],
            max_tokens: Some(10),
            temperature: None,
        }
    }

    fn words(n: usize) -> String {
        "word ".repeat(n) // 5 ASCII characters: 1.25 tokens each
    }

    #[test]
    fn a_request_that_fits_is_untouched() {
        let mut req = request(vec![Message::system("s"), Message::user("hi")]);
        let before = req.clone();
        let fitted = ContextBudget::new(1000).fit(&mut req).unwrap();
        assert_eq!(fitted.dropped, 0);
        assert_eq!(req, before);
    }

    #[test]
    fn old_history_goes_first_and_calls_leave_with_their_results() {
        let call = ToolCall { id: "c".into(), name: "ls".into(), arguments: "{}".into() };
        let mut req = request(vec![
            Message::system("rules"),
            Message::user(words(40)),
            Message::assistant("", vec![call]),
            Message::tool_result("c", words(40)),
            Message::assistant(words(40), vec![]),
            Message::user("now this"),
        ]);
        let fitted = ContextBudget::new(80).fit(&mut req).unwrap();
        let roles: Vec<Role> = req.messages.iter().map(|m| m.role).collect();
        assert_eq!(roles, [Role::System, Role::Assistant, Role::User], "{fitted:?}");
        assert_eq!(fitted.dropped, 3);
        assert!(fitted.input_tokens + 10 <= 80);
    }

    #[test]
    fn a_current_turn_that_cannot_fit_is_refused_with_the_numbers() {
        let mut req = request(vec![Message::system("rules"), Message::user(words(400))]);
        let err = ContextBudget::new(100).fit(&mut req).unwrap_err();
        assert_eq!(err.kind(), "context_length_exceeded");
        assert!(err.to_string().contains("context window of 100 tokens"), "{err}");
    }

    #[test]
    fn the_byte_bound_never_admits_what_the_exact_count_refuses() {
        let call = ToolCall { id: "c".into(), name: "ls".into(), arguments: "{}".into() };
        for model in ["m", "gpt-4o", "gpt-4"] {
            for text in ["hi", "日本語のテキスト 🦀🚀", "fn main() { x.y(); }"] {
                let mut req = request(vec![
                    Message::system("rules"),
                    Message::assistant(text, vec![call.clone()]),
                    Message::user(text.repeat(3)),
                ]);
                req.model = model.into();
                let exact = crate::tokens::count_input(&req);
                for window in (10..200).step_by(3) {
                    let budget = ContextBudget::new(window);
                    if budget.fits_by_bytes(&req) {
                        assert!(exact + budget.reserve(&req) <= window, "{model} {text} {window}");
                    }
                }
                let roomy = ContextBudget::new(10_000);
                assert!(roomy.fits_by_bytes(&req), "{model}");
            }
        }
        let req = request(vec![Message::user(words(400))]);
        assert!(!ContextBudget::new(1000).fits_by_bytes(&req));
    }

    #[test]
    fn the_reserve_is_max_tokens_or_a_quarter_of_the_window() {
        let mut req = request(vec![]);
        assert_eq!(ContextBudget::new(8000).reserve(&req), 10);
        req.max_tokens = None;
        assert_eq!(ContextBudget::new(8000).reserve(&req), 2000);
        assert_eq!(ContextBudget::new(200_000).reserve(&req), 4096);
    }
}
