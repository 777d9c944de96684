//! Approvals within a run: asking the user (or the approver) about calls the policy does not
//! allow outright, remembering "for this session" answers for a while, and reporting denials.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aria_api::{Tier, ToolCall, TraceKind, TraceRecord, Usage};
use serde_json::{Value, json};

use super::{Plan, Run, Slot, Stop};
use crate::events::{AgentEvent, ApprovalAnswer, ApprovalRequest};

impl Run<'_> {
    /// Whether the user already approved this exact call for the session and that approval
    /// still stands: never once the run is tainted by a flagged tool result, and for an
    /// irreversible call not when outside text entered the run after the approval.
    pub(super) fn approved_earlier(&self, name: &str, args: &Value, tier: Tier) -> bool {
        let key = approval_key(name, args);
        let after_outside = match (&self.outside, self.approved.get(&key)) {
            (Some((_, entered, source)), Some(granted)) => granted > entered || *source == key,
            _ => true,
        };
        self.tainted.is_none()
            && (tier < Tier::Irreversible || after_outside)
            && still_approved(&self.approved, &key, Instant::now())
    }

    /// The outside text that suspends standing pre-approvals for a call of `tier`, if any.
    fn suspending(&self, tier: Tier) -> Option<&str> {
        self.outside
            .as_ref()
            .filter(|_| tier >= Tier::Irreversible)
            .map(|(name, _, _)| name.as_str())
    }

    pub(super) fn audit_refusal(
        &self,
        call: &ToolCall,
        args: &Value,
        tier: Tier,
        by: &str,
        reason: &str,
    ) -> Result<(), Stop> {
        self.audit(
            "tool.refused",
            json!({"call_id": call.id, "name": call.name, "arguments": args, "tier": tier, "by": by, "reason": reason}),
        )?;
        let _ = self.events.send(AgentEvent::ToolFinished {
            call_id: call.id.clone(),
            name: call.name.clone(),
            outcome: "refused".into(),
            summary: reason.to_owned(),
        });
        Ok(())
    }

    /// AwaitingApproval: ask the user about each call that needs it.
    pub(super) async fn ask_approvals(&mut self, slots: &mut [Slot]) -> Result<(), Stop> {
        for slot in slots.iter_mut() {
            let Plan::Ask { tool, args, tier, why } = &slot.plan else { continue };
            let (tool, args, tier, why) = (Arc::clone(tool), args.clone(), *tier, why.clone());
            // What the tool says the call will do; an error means it cannot succeed, so the
            // model hears why and nobody is asked.
            let shown = match tool.confirmation(&args) {
                Ok(shown) => shown,
                Err(e) => {
                    self.audit(
                        "tool.invalid",
                        json!({"call_id": slot.call.id, "name": slot.call.name, "arguments": args, "error": e.to_string()}),
                    )?;
                    slot.plan = Plan::Answered(format!("error: {e}"));
                    continue;
                }
            };
            let reason = match (why.as_ref().map(|w| w.reason.clone()), shown) {
                (Some(why), Some(shown)) => Some(format!("{why}\n{shown}")),
                (why, shown) => why.or(shown),
            };
            let request = ApprovalRequest {
                session_id: self.session.id.clone(),
                tool: slot.call.name.clone(),
                arguments: args.clone(),
                tier,
                reason,
            };
            let pre = self.agent.config.preapproval.approves(&slot.call.name, &args, tier);
            // `--yes` and `--allow` never stand in for the person a tool wants asked, nor for
            // an irreversible call once outside text entered the run.
            let pre = pre.filter(|_| self.tainted.is_none() && !tool.always_confirm());
            let pre = match (pre, self.suspending(tier)) {
                (Some(rule), Some(outside)) => {
                    self.audit(
                        "approval.suspended",
                        json!({"call_id": slot.call.id, "name": slot.call.name, "rule": rule, "because": format!("the result of {outside} brought outside text into the run")}),
                    )?;
                    self.suspended.push(slot.call.id.clone());
                    None
                }
                (pre, _) => pre,
            };
            if let Some(rule) = pre {
                self.audit(
                    "approval.preapproved",
                    json!({"call_id": slot.call.id, "name": slot.call.name, "arguments": args, "rule": rule}),
                )?;
                slot.plan = Plan::Run { tool, args, tier };
                continue;
            }
            let asked = Instant::now();
            let answer = self.ask_user(request).await?;
            self.agent.journal.record_trace(&TraceRecord {
                session_id: self.session.id.clone(),
                kind: TraceKind::Approval,
                name: slot.call.name.clone(),
                duration_ms: asked.elapsed().as_millis() as u64,
                usage: Usage::default(),
                cost_usd: 0.0,
                outcome: serde_json::to_value(answer)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_else(|| format!("{answer:?}").to_lowercase()),
                detail: json!({"call_id": slot.call.id, "tier": tier}),
            })?;
            self.audit(
                "approval.answer",
                json!({"call_id": slot.call.id, "name": slot.call.name, "arguments": args, "answer": answer}),
            )?;
            if answer == ApprovalAnswer::Deny {
                self.report_denial(&slot.call, &args, tool.always_confirm());
            }
            slot.plan = match answer {
                ApprovalAnswer::Deny => Plan::Answered(why.map_or_else(
                    || {
                        "refused: the user did not approve this action; ask them or try something else"
                            .into()
                    },
                    |w| w.refusal,
                )),
                ApprovalAnswer::Session => {
                    self.approved.insert(approval_key(&slot.call.name, &args), Instant::now());
                    Plan::Run { tool, args, tier }
                }
                ApprovalAnswer::Once => Plan::Run { tool, args, tier },
            };
        }
        Ok(())
    }

    /// Tells the front end that a call was denied: why, and how the user could allow it.
    pub(super) fn report_denial(&self, call: &ToolCall, args: &Value, always_confirm: bool) {
        self.denials.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let reason = match &self.agent.approver {
            None => "it needs approval and this run has no one to ask (`aria run` never asks, \
                     nor does a command without a terminal)"
                .to_owned(),
            Some(_) => format!(
                "it needs approval and the user said no or did not answer within {} s",
                self.agent.config.approval_timeout.as_secs()
            ),
        };
        let hint = if always_confirm {
            format!(
                "`{}` always asks a person and cannot be pre-approved: ask for it where ARIA can \
                 ask you (`aria chat` on a terminal, the web UI, Telegram)",
                call.name
            )
        } else if self.tainted.is_some() {
            "a tool result earlier in this run looked like a prompt injection, so only a person \
             can approve it now"
                .to_owned()
        } else if let Some((outside, _, _)) =
            self.outside.as_ref().filter(|_| self.suspended.contains(&call.id))
        {
            format!(
                "text from outside (the result of `{outside}`) entered this run, so pre-approvals \
                 (--allow, --yes, \"approve for this session\") no longer cover irreversible \
                 calls: ask for it where ARIA can ask you (`aria chat` on a terminal, the web \
                 UI, Telegram)"
            )
        } else {
            self.agent.config.preapproval.suggestion(&call.name, args)
        };
        let _ = self.events.send(AgentEvent::Denied {
            call_id: call.id.clone(),
            name: call.name.clone(),
            arguments: args.clone(),
            reason,
            hint,
        });
    }

    /// Asks the approver (no approver: denied), within the approval timeout (timeout: denied).
    pub(super) async fn ask_user(&self, request: ApprovalRequest) -> Result<ApprovalAnswer, Stop> {
        let Some(approver) = &self.agent.approver else {
            return Ok(ApprovalAnswer::Deny);
        };
        let question = approver.ask(request);
        tokio::select! {
            _ = self.cancel.cancelled() => Err(Stop::Cancel),
            answer = tokio::time::timeout(self.agent.config.approval_timeout, question) => {
                Ok(answer.unwrap_or(ApprovalAnswer::Deny))
            }
        }
    }
}

/// How long a "for this session" approval lasts, even in a run allowed to go on longer: after
/// this the user is asked again.
pub(crate) const SESSION_APPROVAL_TTL: Duration = Duration::from_secs(15 * 60);

fn still_approved(
    approved: &HashMap<(String, String), Instant>,
    key: &(String, String),
    now: Instant,
) -> bool {
    approved.get(key).is_some_and(|granted| now.duration_since(*granted) < SESSION_APPROVAL_TTL)
}

pub(super) fn approval_key(name: &str, args: &Value) -> (String, String) {
    (name.to_owned(), args.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_approval_covers_the_same_call_until_it_expires() {
        let granted = Instant::now();
        let key = approval_key("shell_execute", &json!({"command": "make install"}));
        let approved = HashMap::from([(key.clone(), granted)]);
        assert!(still_approved(&approved, &key, granted));
        assert!(still_approved(&approved, &key, granted + SESSION_APPROVAL_TTL / 2));
        assert!(!still_approved(&approved, &key, granted + SESSION_APPROVAL_TTL));
        let other = approval_key("shell_execute", &json!({"command": "make clean"}));
        assert!(!still_approved(&approved, &other, granted), "other arguments ask again");
    }
}
