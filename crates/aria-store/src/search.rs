//! The web search cache and log: results kept by normalised query, freshness and
//! provider until they expire, and one row per search (cached or not) to count volume and
//! cost per day.

use rusqlite::{OptionalExtension, params};
use serde_json::Value;

use crate::StoreError;
use crate::error::sql;
use crate::store::{Store, now_rfc3339};

/// The statements of the schema step that adds the search cache and log.
pub(crate) const SEARCH: &[&str] = &[
    "CREATE TABLE search_cache (
        key TEXT PRIMARY KEY NOT NULL,
        provider TEXT NOT NULL,
        query TEXT NOT NULL,
        results TEXT NOT NULL,
        created_at TEXT NOT NULL,
        expires_at TEXT NOT NULL
    ) STRICT",
    "CREATE TABLE search_log (
        id INTEGER PRIMARY KEY,
        time TEXT NOT NULL,
        provider TEXT NOT NULL,
        cached INTEGER NOT NULL,
        cost_usd REAL NOT NULL
    ) STRICT",
    "CREATE INDEX search_log_time ON search_log(time)",
];

/// What the cache holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct SearchCacheStats {
    pub entries: u64,
    /// Entries not expired yet.
    pub live: u64,
    /// Bytes of results kept.
    pub bytes: u64,
}

/// Searches in a period.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize)]
pub struct SearchVolume {
    pub searches: u64,
    /// Of them, answered from the cache (free, no request made).
    pub cached: u64,
    pub cost_usd: f64,
}

impl Store {
    /// The cached results of `key` when they have not expired at `now` (RFC 3339 UTC).
    pub fn search_cache_get(&self, key: &str, now: &str) -> Result<Option<Value>, StoreError> {
        let text: Option<String> = self
            .conn()
            .query_row(
                "SELECT results FROM search_cache WHERE key = ?1 AND expires_at > ?2",
                params![key, now],
                |r| r.get(0),
            )
            .optional()
            .map_err(sql("reading the search cache"))?;
        Ok(text.and_then(|t| serde_json::from_str(&t).ok()))
    }

    /// Keeps `results` under `key` until `expires_at` (RFC 3339 UTC), replacing what was there.
    pub fn search_cache_put(
        &self,
        key: &str,
        provider: &str,
        query: &str,
        results: &Value,
        expires_at: &str,
    ) -> Result<(), StoreError> {
        self.conn()
            .execute(
                "INSERT INTO search_cache (key, provider, query, results, created_at, expires_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (key) DO UPDATE SET \
                 results = excluded.results, created_at = excluded.created_at, \
                 expires_at = excluded.expires_at",
                params![key, provider, query, results.to_string(), now_rfc3339(), expires_at],
            )
            .map_err(sql("writing the search cache"))?;
        Ok(())
    }

    pub fn search_cache_stats(&self, now: &str) -> Result<SearchCacheStats, StoreError> {
        self.conn()
            .query_row(
                "SELECT COUNT(*), COALESCE(SUM(expires_at > ?1), 0), \
                 COALESCE(SUM(length(results)), 0) FROM search_cache",
                [now],
                |r| {
                    let n = |i: usize| r.get::<_, i64>(i).map(|v| v.max(0).unsigned_abs());
                    Ok(SearchCacheStats { entries: n(0)?, live: n(1)?, bytes: n(2)? })
                },
            )
            .map_err(sql("reading the search cache"))
    }

    /// Empties the cache; returns how many entries were dropped.
    pub fn search_cache_clear(&self) -> Result<u64, StoreError> {
        let n = self
            .conn()
            .execute("DELETE FROM search_cache", [])
            .map_err(sql("clearing the search cache"))?;
        Ok(n as u64)
    }

    /// Records one search.
    pub fn search_log_add(
        &self,
        provider: &str,
        cached: bool,
        cost_usd: f64,
    ) -> Result<(), StoreError> {
        self.conn()
            .execute(
                "INSERT INTO search_log (time, provider, cached, cost_usd) VALUES (?1, ?2, ?3, ?4)",
                params![now_rfc3339(), provider, cached, cost_usd],
            )
            .map_err(sql("recording a search"))?;
        Ok(())
    }

    /// Searches at or after `since` (RFC 3339 UTC).
    pub fn search_volume_since(&self, since: &str) -> Result<SearchVolume, StoreError> {
        self.conn()
            .query_row(
                "SELECT COUNT(*), COALESCE(SUM(cached), 0), COALESCE(SUM(cost_usd), 0.0) \
                 FROM search_log WHERE time >= ?1",
                [since],
                |r| {
                    Ok(SearchVolume {
                        searches: r.get::<_, i64>(0)?.max(0).unsigned_abs(),
                        cached: r.get::<_, i64>(1)?.max(0).unsigned_abs(),
                        cost_usd: r.get(2)?,
                    })
                },
            )
            .map_err(sql("counting searches"))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use aria_api::NoRedact;
    use serde_json::json;

    use super::*;

    #[test]
    fn the_cache_answers_until_expiry_and_the_log_counts() {
        let store = Store::open_in_memory(Arc::new(NoRedact)).unwrap();
        let results = json!([{"title": "t", "url": "https://e.org", "snippet": "s"}]);
        store.search_cache_put("k", "brave", "q", &results, "2026-01-02T00:00:00Z").unwrap();
        assert_eq!(store.search_cache_get("k", "2026-01-01T00:00:00Z").unwrap(), Some(results));
        assert_eq!(store.search_cache_get("k", "2026-01-03T00:00:00Z").unwrap(), None);
        let stats = store.search_cache_stats("2026-01-03T00:00:00Z").unwrap();
        assert_eq!((stats.entries, stats.live), (1, 0));
        assert_eq!(store.search_cache_clear().unwrap(), 1);
        store.search_log_add("brave", false, 0.005).unwrap();
        store.search_log_add("brave", true, 0.0).unwrap();
        let v = store.search_volume_since("2000-01-01T00:00:00Z").unwrap();
        assert_eq!((v.searches, v.cached), (2, 1));
        assert!((v.cost_usd - 0.005).abs() < 1e-12);
    }
}
