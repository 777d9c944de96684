//! What the gateway's benches share: a daemon over an on-disk store in `dir` with a scripted
//! model that answers `answer` to everything and no tools.

use std::sync::Arc;
use std::time::Duration;

use aria_api::NoRedact;
use aria_core::{Agent, AgentConfig, ToolRegistry};
use aria_gateway::{Approvals, Gateway, Runs, Security, Services};
use aria_store::Store;
use aria_testkit::scripted::{End, ScriptedProvider, Turn};

pub fn gateway(dir: &std::path::Path, answer: &str) -> Arc<Gateway> {
    let store = Arc::new(Store::open(&dir.join("aria.db"), Arc::new(NoRedact)).unwrap());
    let runs = Arc::new(Runs::new());
    let approvals = Approvals::new(store.clone(), runs.clone(), Duration::from_secs(30));
    let model = ScriptedProvider::new(vec![Turn::text(answer)], End::RepeatLast);
    let agent = Agent::new(
        Arc::new(model),
        Arc::new(ToolRegistry::new(vec![]).unwrap()),
        store.clone(),
        store.clone(),
        Arc::new(NoRedact),
        AgentConfig::new("bench-model", "You are a benchmark."),
    );
    Arc::new(Gateway::new(
        agent,
        store,
        runs,
        approvals,
        dir.to_path_buf(),
        Services::default(),
        Security::new(None, true, Vec::new(), 0),
    ))
}
