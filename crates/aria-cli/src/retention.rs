//! When old traces are pruned (`[traces] keep_days`): at `aria serve` start and then
//! once a day while it runs, and at the end of `aria run` and `aria chat` when no process did
//! it in the last day (the store keeps when it last happened). Pruning deletes `traces` rows
//! only; what is kept and why is `aria_store`'s retention module. A failure is logged, never
//! fails the command: the traces are still there for the next try.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use aria_store::Store;
use tokio_util::sync::CancellationToken;

use crate::config::TracesConfig;

/// At most one prune per this period, across processes.
pub const EVERY: Duration = Duration::from_secs(86_400);

/// How often the daemon asks whether a day has passed (so a laptop asleep at the daily mark
/// still prunes soon after it wakes).
const CHECK_EVERY: Duration = Duration::from_secs(3_600);

fn report(result: Result<Option<u64>, aria_store::StoreError>, keep_days: u32) {
    match result {
        Ok(Some(deleted)) if deleted > 0 => {
            tracing::info!(deleted, keep_days, "traces older than keep_days pruned");
        }
        Ok(_) => {}
        Err(e) => tracing::warn!("cannot prune old traces: {e}"),
    }
}

/// The end of `aria run` or `aria chat`: prunes when due.
pub fn after_run(traces: TracesConfig, store: &Store) {
    if traces.keep_days == 0 {
        return;
    }
    report(store.prune_traces_if_due(traces.keep_days, SystemTime::now(), EVERY), traces.keep_days);
}

/// The daemon's task: prunes now, then whenever a day has passed, until `stop`. `None` when
/// traces are kept forever.
pub fn start(
    traces: TracesConfig,
    store: Arc<Store>,
    stop: CancellationToken,
) -> Option<tokio::task::JoinHandle<()>> {
    if traces.keep_days == 0 {
        return None;
    }
    let keep_days = traces.keep_days;
    let task = async move {
        let mut force = true;
        loop {
            let store = store.clone();
            let result = tokio::task::spawn_blocking(move || {
                if force {
                    store.prune_traces(keep_days, SystemTime::now()).map(Some)
                } else {
                    store.prune_traces_if_due(keep_days, SystemTime::now(), EVERY)
                }
            })
            .await;
            match result {
                Ok(result) => report(result, keep_days),
                Err(e) => tracing::warn!("the trace prune stopped: {e}"),
            }
            force = false;
            tokio::select! {
                () = stop.cancelled() => break,
                () = tokio::time::sleep(CHECK_EVERY) => {}
            }
        }
    };
    let span = tracing::info_span!("trace_retention");
    Some(tokio::spawn(tracing::Instrument::instrument(task, span)))
}
