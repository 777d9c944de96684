//! Spend and traces under the model that answered: when the provider reports which route of a
//! fallback chain answered ([`AnsweredBy`]), the call is traced and charged as that model. And
//! the pre-call cost estimate uses the configured token counter (tiktoken in the CLI).

use std::sync::{Arc, Mutex};

use aria_api::SessionState::Done;
use aria_api::TraceKind;
use aria_api::{ChatRequest, Usage};
use aria_core::{Answer, AnsweredBy, Price, SpendGuard};
use aria_testkit::scripted::{End, TURN_USAGE, Turn};

use super::harness::rig;

/// Reports a fixed answer and counts how often it was asked.
#[derive(Debug)]
struct Fixed {
    answer: Option<Answer>,
    asked: Mutex<usize>,
}

impl AnsweredBy for Fixed {
    fn last_answer(&self) -> Option<Answer> {
        *self.asked.lock().unwrap() += 1;
        self.answer.clone()
    }
}

const CHAIN_HIGHEST: Price = Price { input_per_mtok: 1_000.0, output_per_mtok: 2_000.0 };
const BACKUP: Price = Price { input_per_mtok: 100.0, output_per_mtok: 200.0 };

fn model_traces(r: &super::harness::Rig) -> Vec<(String, f64)> {
    r.journal
        .traces()
        .into_iter()
        .filter(|t| t.kind == TraceKind::ModelCall)
        .map(|t| (t.name, t.cost_usd))
        .collect()
}

#[tokio::test]
async fn a_fallback_answer_is_traced_and_charged_as_the_model_that_answered() {
    let fixed = Arc::new(Fixed {
        answer: Some(Answer {
            model: "backup-model".into(),
            price: Some(BACKUP),
            backend: Some("backup".into()),
            fallback: true,
            tries: 3,
        }),
        asked: Mutex::default(),
    });
    let by = fixed.clone();
    let r = rig(vec![Turn::text("done")], End::Fail, vec![], move |c| {
        c.price = Some(CHAIN_HIGHEST);
        c.answered_by = Some(by);
    });
    let s = r.run("a task").await.0.unwrap();
    assert_eq!(s.state, Done);
    let cost = BACKUP.cost(TURN_USAGE);
    assert!(cost > 0.0 && cost < CHAIN_HIGHEST.cost(TURN_USAGE));
    let traces = model_traces(&r);
    assert_eq!(traces.len(), 1);
    assert_eq!(traces[0].0, "backup-model");
    assert!((traces[0].1 - cost).abs() < 1e-12, "{traces:?}");
    assert!((s.cost_usd - cost).abs() < 1e-12, "session spend is the answering model's");
    assert_eq!(*fixed.asked.lock().unwrap(), 1);
    let detail =
        &r.journal.traces().into_iter().find(|t| t.kind == TraceKind::ModelCall).unwrap().detail;
    assert_eq!(
        (&detail["backend"], &detail["fallback"], &detail["retries"]),
        (&serde_json::json!("backup"), &serde_json::json!(true), &serde_json::json!(2)),
        "the span says which backend answered, that it was a fallback, and after how many retries"
    );
}

#[tokio::test]
async fn an_unknown_answer_or_price_falls_back_to_the_configured_model_and_price() {
    let unknown = Arc::new(Fixed { answer: None, asked: Mutex::default() });
    let r = rig(vec![Turn::text("done")], End::Fail, vec![], move |c| {
        c.price = Some(CHAIN_HIGHEST);
        c.answered_by = Some(unknown);
    });
    let s = r.run("a task").await.0.unwrap();
    assert_eq!(model_traces(&r), [("test-model".to_string(), CHAIN_HIGHEST.cost(TURN_USAGE))]);
    assert!((s.cost_usd - CHAIN_HIGHEST.cost(TURN_USAGE)).abs() < 1e-12);

    let unpriced = Arc::new(Fixed {
        answer: Some(Answer {
            model: "mystery".into(),
            price: None,
            backend: None,
            fallback: false,
            tries: 0,
        }),
        asked: Mutex::default(),
    });
    let r = rig(vec![Turn::text("done")], End::Fail, vec![], move |c| {
        c.price = Some(CHAIN_HIGHEST);
        c.answered_by = Some(unpriced);
    });
    r.run("a task").await.0.unwrap();
    assert_eq!(model_traces(&r), [("mystery".to_string(), CHAIN_HIGHEST.cost(TURN_USAGE))]);
}

/// Records every estimate it is asked about; allows all.
#[derive(Debug, Default)]
struct Seen(Mutex<Vec<f64>>);

impl SpendGuard for Seen {
    fn check(&self, estimate_usd: f64) -> Result<Option<String>, String> {
        self.0.lock().unwrap().push(estimate_usd);
        Ok(None)
    }
}

fn thousand_per_message(request: &ChatRequest) -> u64 {
    1_000 * request.messages.len() as u64
}

#[tokio::test]
async fn the_pre_call_estimate_uses_the_configured_token_counter() {
    let seen = Arc::new(Seen::default());
    let guard = seen.clone();
    let r = rig(vec![Turn::text("done")], End::Fail, vec![], move |c| {
        c.price = Some(CHAIN_HIGHEST);
        c.spend_guard = Some(guard);
        c.count_input_tokens = Some(thousand_per_message);
        c.limits.max_cost_usd = 100.0;
    });
    assert_eq!(r.run("a task").await.0.unwrap().state, Done);
    // System prompt + the task: 2 000 input tokens, no replies yet so no output estimate.
    let want = CHAIN_HIGHEST.cost(Usage { input_tokens: 2_000, output_tokens: 0 });
    assert_eq!(*seen.0.lock().unwrap(), [want]);
}
