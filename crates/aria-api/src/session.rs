//! The session state machine. Pure: it decides which transitions are legal and nothing else.
//! The agent loop persists and audits every transition it makes through here.
//!
//! ```text
//! Idle → Planning → Validating → Executing → Filtering → Updating → Planning | Completing
//!                   Validating → AwaitingApproval → Executing | Updating
//!                   Validating → Updating            (every call invalid: errors go to the model)
//!        Planning → Completing                        (a final answer, no tool calls)
//!                                Completing → Done
//! any non-terminal state → Failed | Cancelled
//! ```
//! Resuming is not a transition but its own operation, [`SessionState::resume`]: a run that was
//! interrupted (any non-terminal state) or failed goes back to `Planning`.

use std::time::Duration;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionState {
    Idle,
    Planning,
    Validating,
    AwaitingApproval,
    Executing,
    Filtering,
    Updating,
    Completing,
    Done,
    Failed,
    Cancelled,
}

/// An attempt to move the session along an edge that is not in the whitelist. It halts the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("illegal session transition {} -> {}; the run was halted to keep its record consistent", .from.as_str(), .to.as_str())]
pub struct IllegalTransition {
    pub from: SessionState,
    pub to: SessionState,
}

impl SessionState {
    pub const ALL: [SessionState; 11] = [
        SessionState::Idle,
        SessionState::Planning,
        SessionState::Validating,
        SessionState::AwaitingApproval,
        SessionState::Executing,
        SessionState::Filtering,
        SessionState::Updating,
        SessionState::Completing,
        SessionState::Done,
        SessionState::Failed,
        SessionState::Cancelled,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SessionState::Idle => "idle",
            SessionState::Planning => "planning",
            SessionState::Validating => "validating",
            SessionState::AwaitingApproval => "awaiting_approval",
            SessionState::Executing => "executing",
            SessionState::Filtering => "filtering",
            SessionState::Updating => "updating",
            SessionState::Completing => "completing",
            SessionState::Done => "done",
            SessionState::Failed => "failed",
            SessionState::Cancelled => "cancelled",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|state| state.as_str() == s)
    }

    /// Done, Failed and Cancelled end a run.
    pub fn is_terminal(self) -> bool {
        matches!(self, SessionState::Done | SessionState::Failed | SessionState::Cancelled)
    }

    /// The whitelist.
    pub fn can_transition_to(self, to: SessionState) -> bool {
        use SessionState::*;
        if !self.is_terminal() && matches!(to, Failed | Cancelled) {
            return true;
        }
        matches!(
            (self, to),
            (Idle, Planning)
                | (Planning, Validating)
                | (Planning, Completing)
                | (Validating, Executing)
                | (Validating, AwaitingApproval)
                | (Validating, Updating)
                | (AwaitingApproval, Executing)
                | (AwaitingApproval, Updating)
                | (Executing, Filtering)
                | (Filtering, Updating)
                | (Updating, Planning)
                | (Updating, Completing)
                | (Completing, Done)
        )
    }

    /// Checks one transition.
    pub fn transition(self, to: SessionState) -> Result<SessionState, IllegalTransition> {
        if self.can_transition_to(to) { Ok(to) } else { Err(IllegalTransition { from: self, to }) }
    }

    /// Whether a run left in this state can be resumed: interrupted (non-terminal, not yet
    /// started) or failed. Done and cancelled runs are over by the user's or the model's choice.
    pub fn is_resumable(self) -> bool {
        (!self.is_terminal() && self != SessionState::Idle) || self == SessionState::Failed
    }

    /// Resumes an interrupted or failed run at `Planning`.
    pub fn resume(self) -> Result<SessionState, IllegalTransition> {
        if self.is_resumable() {
            Ok(SessionState::Planning)
        } else {
            Err(IllegalTransition { from: self, to: SessionState::Planning })
        }
    }
}

impl std::fmt::Display for SessionState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Hard limits of one run (defaults below; `[limits]` in `aria.toml`); the model can never
/// raise them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Limits {
    pub max_iterations: u32,
    pub max_tokens: u64,
    #[serde(with = "secs")]
    pub tool_timeout: Duration,
    #[serde(with = "secs")]
    pub session_timeout: Duration,
    pub max_tool_output_chars: usize,
    pub max_cost_usd: f64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_iterations: 15,
            max_tokens: 100_000,
            tool_timeout: Duration::from_secs(30),
            session_timeout: Duration::from_secs(300),
            max_tool_output_chars: 20_000,
            max_cost_usd: 1.0,
        }
    }
}

mod secs {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let secs = f64::deserialize(d)?;
        Duration::try_from_secs_f64(secs).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::SessionState::*;
    use super::*;
    use proptest::prelude::*;

    fn any_state() -> impl Strategy<Value = SessionState> {
        proptest::sample::select(SessionState::ALL.to_vec())
    }

    #[test]
    fn the_happy_path_is_legal() {
        let path = [
            Idle, Planning, Validating, Executing, Filtering, Updating, Planning, Completing, Done,
        ];
        for pair in path.windows(2) {
            assert_eq!(pair[0].transition(pair[1]), Ok(pair[1]), "{} -> {}", pair[0], pair[1]);
        }
    }

    #[test]
    fn skipping_validation_is_illegal() {
        assert_eq!(
            Planning.transition(Executing),
            Err(IllegalTransition { from: Planning, to: Executing })
        );
        assert!(Idle.transition(Executing).is_err());
        assert!(Updating.transition(Executing).is_err());
        let msg = Planning.transition(Executing).unwrap_err().to_string();
        assert!(msg.contains("planning -> executing"), "{msg}");
    }

    #[test]
    fn names_round_trip() {
        for s in SessionState::ALL {
            assert_eq!(SessionState::parse(s.as_str()), Some(s));
            let json = serde_json::to_string(&s).unwrap();
            assert_eq!(json, format!("\"{}\"", s.as_str()));
        }
        assert_eq!(SessionState::parse("running"), None);
    }

    #[test]
    fn resume_rules() {
        assert_eq!(Executing.resume(), Ok(Planning));
        assert_eq!(Failed.resume(), Ok(Planning));
        assert!(Done.resume().is_err());
        assert!(Cancelled.resume().is_err());
        assert!(Idle.resume().is_err());
    }

    proptest! {
        #[test]
        fn terminal_states_have_no_way_out(from in any_state(), to in any_state()) {
            if from.is_terminal() {
                prop_assert!(from.transition(to).is_err());
            }
        }

        #[test]
        fn every_live_state_can_fail_or_be_cancelled(from in any_state()) {
            prop_assume!(!from.is_terminal());
            prop_assert!(from.can_transition_to(Failed));
            prop_assert!(from.can_transition_to(Cancelled));
        }

        #[test]
        fn nothing_returns_to_idle(from in any_state()) {
            prop_assert!(from.transition(Idle).is_err());
        }

        #[test]
        fn tools_only_execute_after_validation(from in any_state()) {
            let ok = from.can_transition_to(Executing);
            prop_assert_eq!(ok, matches!(from, Validating | AwaitingApproval));
        }

        #[test]
        fn done_is_only_reached_through_completing(from in any_state()) {
            prop_assert_eq!(from.can_transition_to(Done), from == Completing);
        }

        /// A random walk along legal edges always stays legal and reaches only known states;
        /// an illegal step is reported with both endpoints.
        #[test]
        fn random_walks(steps in proptest::collection::vec(any_state(), 1..60)) {
            let mut state = Idle;
            for next in steps {
                match state.transition(next) {
                    Ok(s) => { prop_assert!(state.can_transition_to(s)); state = s; }
                    Err(e) => { prop_assert_eq!(e, IllegalTransition { from: state, to: next }); }
                }
            }
        }
    }
}
