//! `web_search` in the binary: the tool built from `[search]` and the environment,
//! its cache and log in the store ([`StoreLedger`]), and the daily volume alert — a
//! notification, once a day, when searches pass `[search] daily_alert` (never a block). In
//! `aria serve` the alert goes through the daemon's notifier (recorded and pushed); elsewhere it
//! is recorded for the web UI's list and logged.

use std::sync::{Arc, OnceLock};

use aria_api::Tool;
use aria_store::Store;
use aria_tools::tools::web_search::{SearchLedger, SearchProvider, WebSearch};
use serde_json::Value;

use crate::config::{Config, SearchBackend};

/// The notification kind of the volume alert.
pub const ALERT_KIND: &str = "search_volume";

/// Where volume alerts go in this process (the daemon sets its notifier once).
type AlertSink = Arc<dyn Fn(&str) + Send + Sync>;
static ALERTS: OnceLock<AlertSink> = OnceLock::new();

/// Sends this process's volume alerts to `sink` (the daemon's notifier).
pub fn send_alerts_to(sink: AlertSink) {
    let _ = ALERTS.set(sink);
}

fn stamp(at: jiff::Timestamp) -> String {
    aria_store::rfc3339_at(at.into())
}

/// The search cache and log in the store.
#[derive(Debug)]
pub struct StoreLedger {
    pub store: Arc<Store>,
    pub cache_days: u32,
    pub daily_alert: u64,
    pub cost_per_search_usd: f64,
}

impl SearchLedger for StoreLedger {
    fn cached(&self, key: &str) -> Option<Value> {
        if self.cache_days == 0 {
            return None;
        }
        self.store.search_cache_get(key, &stamp(jiff::Timestamp::now())).ok().flatten()
    }

    fn keep(&self, key: &str, provider: &str, query: &str, results: &Value) {
        if self.cache_days == 0 {
            return;
        }
        let until = jiff::Timestamp::now()
            + jiff::SignedDuration::from_hours(24 * i64::from(self.cache_days));
        if let Err(e) = self.store.search_cache_put(key, provider, query, results, &stamp(until)) {
            tracing::warn!("the search cache could not keep a result: {e}");
        }
    }

    fn record(&self, provider: &str, cached: bool) {
        let cost = if cached { 0.0 } else { self.cost_per_search_usd };
        if let Err(e) = self.store.search_log_add(provider, cached, cost) {
            tracing::warn!("a search could not be logged: {e}");
            return;
        }
        let today = aria_store::day_start_utc();
        let Ok(volume) = self.store.search_volume_since(&today) else { return };
        if volume.searches <= self.daily_alert {
            return;
        }
        // Once a day: only when no alert was recorded today.
        if self.store.notifications_since(ALERT_KIND, &today).unwrap_or(1) > 0 {
            return;
        }
        let text = format!(
            "Web search volume: {} searches today, more than the {} set as [search] daily_alert \
             ({} answered from the cache, USD {:.3} spent). Searches go on; raise the threshold \
             or look at what keeps searching.",
            volume.searches, self.daily_alert, volume.cached, volume.cost_usd
        );
        match ALERTS.get() {
            Some(sink) => sink(&text),
            None => {
                tracing::warn!("{text}");
                if let Err(e) = self.store.notification_add(ALERT_KIND, None, None, &text, &[]) {
                    tracing::warn!("the search volume alert could not be recorded: {e}");
                }
            }
        }
    }
}

/// The `web_search` tool when a provider is configured.
pub fn tool(config: &Config, store: &Arc<Store>) -> Option<Arc<dyn Tool>> {
    let provider = match config.search.backend.as_ref()? {
        SearchBackend::Brave { url, key } => {
            SearchProvider::Brave { url: url.clone(), key: key.clone() }
        }
        SearchBackend::Searxng { url } => SearchProvider::Searxng { url: url.clone() },
    };
    let ledger = Arc::new(StoreLedger {
        store: store.clone(),
        cache_days: config.search.cache_days,
        daily_alert: config.search.daily_alert,
        cost_per_search_usd: config.search.cost_per_search_usd,
    });
    Some(Arc::new(WebSearch::new(provider, ledger, crate::config::secret_values(config))))
}
