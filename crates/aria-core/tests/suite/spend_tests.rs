//! Day and month caps through the [`SpendGuard`] port: they bind every run and refuse before
//! any request.

use std::sync::{Arc, Mutex};

use aria_api::SessionState::{Done, Failed};
use aria_core::{AgentEvent, SpendGuard};
use aria_testkit::scripted::{End, Turn};

use super::harness::rig;

/// Refuses once the running total would pass `cap`; warns above 80 %. Records every estimate.
#[derive(Debug)]
struct Ledger {
    cap: f64,
    spent: f64,
    seen: Mutex<Vec<f64>>,
}

impl SpendGuard for Ledger {
    fn check(&self, estimate_usd: f64) -> Result<Option<String>, String> {
        self.seen.lock().unwrap().push(estimate_usd);
        if self.spent + estimate_usd > self.cap {
            return Err(format!("the daily cap of USD {:.2} would be passed", self.cap));
        }
        Ok((self.spent + estimate_usd >= 0.8 * self.cap).then(|| "daily spend at 90 %".to_string()))
    }
}

fn priced(guard: Arc<Ledger>) -> impl FnOnce(&mut aria_core::AgentConfig) {
    move |c| {
        c.price = Some(aria_core::Price { input_per_mtok: 1_000.0, output_per_mtok: 1_000.0 });
        c.spend_guard = Some(guard);
    }
}

#[tokio::test]
async fn a_period_cap_refuses_before_any_request_and_says_why() {
    let guard = Arc::new(Ledger { cap: 1.0, spent: 1.0, seen: Mutex::default() });
    let r = rig(vec![Turn::text("never sent")], End::Fail, vec![], priced(guard.clone()));
    let s = r.run("a task").await.0.unwrap();
    assert_eq!(s.state, Failed);
    assert!(r.provider.requests().is_empty(), "the provider saw no request");
    assert!(s.error.unwrap().contains("daily cap of USD 1.00"));
    assert!(r.journal.audit_kinds().contains(&"cost.refused".to_string()));
    assert_eq!(guard.seen.lock().unwrap().len(), 1);
    assert!(guard.seen.lock().unwrap()[0] > 0.0, "the guard got the call's estimate");
}

#[tokio::test]
async fn near_the_cap_the_run_goes_on_with_one_warning() {
    let guard = Arc::new(Ledger { cap: 100.0, spent: 89.9, seen: Mutex::default() });
    let r = rig(vec![Turn::text("fine")], End::Fail, vec![], priced(guard));
    let (result, events) = r.run("a task").await;
    assert_eq!(result.unwrap().state, Done);
    let warnings = events
        .iter()
        .filter(|e| matches!(e, AgentEvent::Warning { message } if message.contains("daily spend")))
        .count();
    assert_eq!(warnings, 1);
}
