//! `[search]`: the `web_search` tool. The provider comes from the environment —
//! `BRAVE_API_KEY` (the Brave Search API; `BRAVE_SEARCH_URL` overrides its endpoint) or
//! `SEARXNG_URL` (a SearXNG instance) — never a key in this file. With neither, there is no
//! `web_search` tool.

use serde::{Deserialize, Serialize};

use super::{ConfigError, Env};

/// `[search]` as written.
#[derive(Debug, Default, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawSearch {
    /// `auto` (Brave when `BRAVE_API_KEY` is set, else SearXNG when `SEARXNG_URL` is), `brave`,
    /// `searxng` or `off`.
    pub provider: Option<String>,
    /// Days a result is kept for the same query (default 7; time-sensitive queries are never
    /// cached).
    pub cache_days: Option<u32>,
    /// Searches per day after which one notification says so (default 100; never a block).
    pub daily_alert: Option<u64>,
    /// What one search costs, in US dollars, for `aria cost` (default 0: a free plan).
    pub cost_per_search_usd: Option<f64>,
}

/// Where searches go, from the environment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum SearchBackend {
    Brave {
        url: String,
        #[serde(skip)]
        key: String,
    },
    Searxng {
        url: String,
    },
}

/// `[search]`, checked.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchConfig {
    /// `None`: no search tool.
    pub backend: Option<SearchBackend>,
    pub provider: String,
    pub cache_days: u32,
    pub daily_alert: u64,
    pub cost_per_search_usd: f64,
}

impl Default for SearchConfig {
    fn default() -> Self {
        SearchConfig {
            backend: None,
            provider: "auto".into(),
            cache_days: 7,
            daily_alert: 100,
            cost_per_search_usd: 0.0,
        }
    }
}

impl SearchConfig {
    pub fn to_raw(&self) -> RawSearch {
        RawSearch {
            provider: Some(self.provider.clone()),
            cache_days: Some(self.cache_days),
            daily_alert: Some(self.daily_alert),
            cost_per_search_usd: Some(self.cost_per_search_usd),
        }
    }
}

fn url_ok(url: &str) -> bool {
    (url.starts_with("http://") || url.starts_with("https://")) && url.len() > 8
}

pub fn resolve_search(raw: RawSearch, env: &dyn Env) -> Result<SearchConfig, ConfigError> {
    let d = SearchConfig::default();
    let provider = raw.provider.unwrap_or_else(|| "auto".into());
    let brave = || -> Result<Option<SearchBackend>, ConfigError> {
        let Some(key) = env.var("BRAVE_API_KEY") else { return Ok(None) };
        let url = env
            .var("BRAVE_SEARCH_URL")
            .unwrap_or_else(|| aria_tools::tools::web_search::BRAVE_URL.into());
        if !url_ok(&url) {
            return Err(ConfigError::Invalid(format!(
                "BRAVE_SEARCH_URL = {url:?}: give an http(s) URL"
            )));
        }
        Ok(Some(SearchBackend::Brave { url, key }))
    };
    let searxng = || -> Result<Option<SearchBackend>, ConfigError> {
        let Some(url) = env.var("SEARXNG_URL") else { return Ok(None) };
        if !url_ok(&url) {
            return Err(ConfigError::Invalid(format!(
                "SEARXNG_URL = {url:?}: give the instance's http(s) URL, e.g. http://127.0.0.1:8888"
            )));
        }
        Ok(Some(SearchBackend::Searxng { url }))
    };
    let backend = match provider.as_str() {
        "auto" => match brave()? {
            Some(b) => Some(b),
            None => searxng()?,
        },
        "brave" => Some(brave()?.ok_or_else(|| {
            ConfigError::Invalid(
                "[search] provider = \"brave\" needs BRAVE_API_KEY in the environment or .env"
                    .into(),
            )
        })?),
        "searxng" => Some(searxng()?.ok_or_else(|| {
            ConfigError::Invalid(
                "[search] provider = \"searxng\" needs SEARXNG_URL in the environment or .env"
                    .into(),
            )
        })?),
        "off" => None,
        other => {
            return Err(ConfigError::Invalid(format!(
                "[search] provider = {other:?}: write auto, brave, searxng or off"
            )));
        }
    };
    let cost = raw.cost_per_search_usd.unwrap_or(d.cost_per_search_usd);
    if !(0.0..=1.0).contains(&cost) {
        return Err(ConfigError::Invalid(format!(
            "[search] cost_per_search_usd = {cost}: give 0 to 1 (Brave's paid plans cost about 0.005)"
        )));
    }
    let cache_days = raw.cache_days.unwrap_or(d.cache_days);
    if cache_days > 365 {
        return Err(ConfigError::Invalid(format!(
            "[search] cache_days = {cache_days}: at most 365 (0 turns the cache off)"
        )));
    }
    Ok(SearchConfig {
        backend,
        provider,
        cache_days,
        daily_alert: raw.daily_alert.unwrap_or(d.daily_alert),
        cost_per_search_usd: cost,
    })
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::super::Vars;
    use super::*;

    #[test]
    fn the_provider_comes_from_the_environment() {
        let none = Vars(HashMap::new());
        assert_eq!(resolve_search(RawSearch::default(), &none).unwrap().backend, None);
        let both =
            Vars(HashMap::from([("BRAVE_API_KEY", "k"), ("SEARXNG_URL", "http://127.0.0.1:8888")]));
        let auto = resolve_search(RawSearch::default(), &both).unwrap();
        assert!(matches!(auto.backend, Some(SearchBackend::Brave { .. })));
        let pick = RawSearch { provider: Some("searxng".into()), ..Default::default() };
        assert_eq!(
            resolve_search(pick, &both).unwrap().backend,
            Some(SearchBackend::Searxng { url: "http://127.0.0.1:8888".into() })
        );
        let missing = RawSearch { provider: Some("brave".into()), ..Default::default() };
        assert!(resolve_search(missing, &none).unwrap_err().to_string().contains("BRAVE_API_KEY"));
        let bad = RawSearch { provider: Some("google".into()), ..Default::default() };
        assert!(resolve_search(bad, &none).is_err());
    }
}
