//! `web_search {query, freshness?, count?}`: the top results
//! (title, URL, snippet) from the Brave Search API or a SearXNG instance.
//!
//! The query passes the outbound secret filter before it leaves the machine (a secret in it is
//! replaced, and the result says so). Results are cached by the [`SearchLedger`] under the
//! normalised query, the freshness and the provider; a query about something that changes
//! (dates, "today", "latest", "news", prices, weather, scores…) bypasses the cache. Every search
//! is logged there too (volume and cost per day; the ledger raises the volume alert). What
//! comes back is untrusted text: the agent loop passes it through the injection filter and
//! wraps it as data like every tool result.

use std::sync::Arc;
use std::time::Duration;

use aria_api::{Redact, Tier, Tool, ToolContext, ToolError, ToolFuture, ToolOutput, ToolSpec};
use serde_json::{Value, json};

use crate::guard::secrets::SecretRedactor;

/// The official Brave Search endpoint.
pub const BRAVE_URL: &str = "https://api.search.brave.com/res/v1/web/search";

/// Results returned when the call does not say.
const DEFAULT_COUNT: u64 = 5;
const MAX_COUNT: u64 = 10;
const TIMEOUT: Duration = Duration::from_secs(15);
/// Characters of a snippet kept.
const SNIPPET_CHARS: usize = 400;

/// Where searches go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SearchProvider {
    /// The Brave Search API: `url` (default [`BRAVE_URL`]) with the subscription key.
    Brave { url: String, key: String },
    /// A SearXNG instance at `url` (its JSON output must be enabled).
    Searxng { url: String },
}

impl SearchProvider {
    pub fn name(&self) -> &'static str {
        match self {
            SearchProvider::Brave { .. } => "brave",
            SearchProvider::Searxng { .. } => "searxng",
        }
    }
}

/// The cache and the log of searches (the store, in the binary).
pub trait SearchLedger: Send + Sync + std::fmt::Debug {
    /// Cached results of `key`, if any are still fresh.
    fn cached(&self, key: &str) -> Option<Value>;
    /// Keeps `results` under `key` for the cache's lifetime.
    fn keep(&self, key: &str, provider: &str, query: &str, results: &Value);
    /// Records one search (and raises the volume alert when it crosses the threshold).
    fn record(&self, provider: &str, cached: bool);
}

/// The search tool. Tier: read.
#[derive(Debug)]
pub struct WebSearch {
    provider: SearchProvider,
    ledger: Arc<dyn SearchLedger>,
    redactor: SecretRedactor,
    spec: ToolSpec,
    /// Built on the first search and kept (its connections are reused).
    client: std::sync::OnceLock<reqwest::Client>,
}

/// The query as the cache keys it: lowercase, whitespace collapsed.
pub fn normalise(query: &str) -> String {
    query.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}

/// Whether the answer to `query` changes from day to day, so a cached one would be stale.
pub fn time_sensitive(query: &str) -> bool {
    const WORDS: &[&str] = &[
        "today",
        "tonight",
        "tomorrow",
        "yesterday",
        "now",
        "current",
        "currently",
        "latest",
        "recent",
        "recently",
        "news",
        "breaking",
        "live",
        "update",
        "updates",
        "price",
        "prices",
        "cost",
        "stock",
        "stocks",
        "weather",
        "forecast",
        "score",
        "scores",
        "result",
        "results",
        "election",
        "release",
        "released",
        "this week",
        "this month",
        "this year",
        "upcoming",
    ];
    const MONTHS: &[&str] = &[
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ];
    let q = normalise(query);
    let words: Vec<&str> =
        q.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect();
    let has_word = |w: &str| {
        if w.contains(' ') { q.contains(w) } else { words.contains(&w) }
    };
    let year = words.iter().any(|w| {
        w.len() == 4
            && (w.starts_with("19") || w.starts_with("20"))
            && w.chars().all(|c| c.is_ascii_digit())
    });
    let date = q.as_bytes().windows(10).any(|w| {
        w.iter()
            .enumerate()
            .all(|(i, b)| if i == 4 || i == 7 { *b == b'-' } else { b.is_ascii_digit() })
    });
    WORDS.iter().any(|w| has_word(w)) || MONTHS.iter().any(|m| words.contains(m)) || year || date
}

impl WebSearch {
    pub const NAME: &'static str = "web_search";

    pub fn new(
        provider: SearchProvider,
        ledger: Arc<dyn SearchLedger>,
        secrets: Vec<String>,
    ) -> Self {
        let spec = ToolSpec {
            name: Self::NAME.into(),
            description: format!(
                "Search the web ({}) and return the top results: title, URL and a snippet. Use \
                 web_fetch to read a result. freshness limits results to the last day, week, \
                 month or year.",
                provider.name()
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "minLength": 1, "maxLength": 400, "description": "What to search for."},
                    "freshness": {"type": "string", "enum": ["day", "week", "month", "year"], "description": "Only results from this recent period."},
                    "count": {"type": "integer", "minimum": 1, "maximum": MAX_COUNT, "description": "How many results (default 5)."}
                },
                "required": ["query"],
                "additionalProperties": false
            }),
        };
        WebSearch {
            provider,
            ledger,
            redactor: SecretRedactor::new(secrets),
            spec,
            client: std::sync::OnceLock::new(),
        }
    }

    fn client(&self) -> Result<reqwest::Client, ToolError> {
        if let Some(client) = self.client.get() {
            return Ok(client.clone());
        }
        crate::tools::web_fetch::ensure_crypto_provider();
        let client = reqwest::Client::builder()
            .timeout(TIMEOUT)
            .user_agent(concat!("aria/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| {
                ToolError::failed(format!("web_search: cannot build the HTTP client: {e}"))
            })?;
        Ok(self.client.get_or_init(|| client).clone())
    }

    async fn fetch(
        &self,
        query: &str,
        freshness: Option<&str>,
        count: u64,
    ) -> Result<Value, ToolError> {
        let client = self.client()?;
        let with_query = |base: &str, params: &[(&str, String)]| {
            let mut url = url::Url::parse(base).map_err(|e| {
                ToolError::failed(format!("web_search: the search URL {base:?} is not a URL ({e})"))
            })?;
            url.query_pairs_mut().extend_pairs(params.iter().map(|(k, v)| (*k, v.as_str())));
            Ok::<_, ToolError>(url)
        };
        let request = match &self.provider {
            SearchProvider::Brave { url, key } => {
                let mut params = vec![("q", query.to_owned()), ("count", count.to_string())];
                if let Some(f) = freshness {
                    let code = match f {
                        "day" => "pd",
                        "week" => "pw",
                        "month" => "pm",
                        _ => "py",
                    };
                    params.push(("freshness", code.to_owned()));
                }
                client
                    .get(with_query(url, &params)?)
                    .header("Accept", "application/json")
                    .header("X-Subscription-Token", key)
            }
            SearchProvider::Searxng { url } => {
                let mut params = vec![("q", query.to_owned()), ("format", "json".to_owned())];
                if let Some(f) = freshness {
                    params.push(("time_range", f.to_owned()));
                }
                client.get(with_query(&format!("{}/search", url.trim_end_matches('/')), &params)?)
            }
        };
        let provider = self.provider.name();
        let response = request.send().await.map_err(|e| {
            ToolError::failed(format!(
                "web_search: {provider} could not be reached: {}",
                e.without_url()
            ))
        })?;
        let status = response.status();
        if status.as_u16() == 429 {
            let wait = response
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .map(|s| format!(" (it asks to wait {s} s)"))
                .unwrap_or_default();
            return Err(ToolError::failed(format!(
                "web_search: {provider} is rate limiting the searches{wait}; try again later"
            )));
        }
        if !status.is_success() {
            return Err(ToolError::failed(format!(
                "web_search: {provider} answered HTTP {}{}",
                status.as_u16(),
                if status.as_u16() == 401 || status.as_u16() == 403 {
                    " (check BRAVE_API_KEY)"
                } else {
                    ""
                }
            )));
        }
        let body: Value = response.json().await.map_err(|e| {
            ToolError::failed(format!(
                "web_search: {provider}'s answer is not JSON: {}",
                e.without_url()
            ))
        })?;
        let items = match &self.provider {
            SearchProvider::Brave { .. } => body["web"]["results"].clone(),
            SearchProvider::Searxng { .. } => body["results"].clone(),
        };
        let snippet_key = if matches!(self.provider, SearchProvider::Brave { .. }) {
            "description"
        } else {
            "content"
        };
        let results: Vec<Value> = items
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| {
                let url = r["url"].as_str()?;
                let snippet: String = strip_tags(r[snippet_key].as_str().unwrap_or_default())
                    .chars()
                    .take(SNIPPET_CHARS)
                    .collect();
                Some(json!({"title": strip_tags(r["title"].as_str().unwrap_or(url)), "url": url, "snippet": snippet}))
            })
            .take(usize::try_from(count).unwrap_or(5))
            .collect();
        Ok(Value::Array(results))
    }
}

/// Search snippets carry `<strong>` highlights and entities; the model gets plain text.
fn strip_tags(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_tag = false;
    for c in text.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.replace("&amp;", "&")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
}

fn render(query: &str, results: &Value, cached: bool, redacted: bool) -> String {
    let mut out = format!(
        "Results for {query:?}{}{}:\n",
        if cached { " (from the cache)" } else { "" },
        if redacted { " (a secret in the query was removed before it was sent)" } else { "" }
    );
    let list = results.as_array().cloned().unwrap_or_default();
    if list.is_empty() {
        out.push_str("No results.\n");
    }
    for (i, r) in list.iter().enumerate() {
        out.push_str(&format!(
            "{}. {}\n   {}\n   {}\n",
            i + 1,
            r["title"].as_str().unwrap_or_default(),
            r["url"].as_str().unwrap_or_default(),
            r["snippet"].as_str().unwrap_or_default()
        ));
    }
    out
}

impl Tool for WebSearch {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn tier(&self, _args: &Value) -> Tier {
        Tier::Read
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let given = args["query"].as_str().unwrap_or_default();
            let report = self.redactor.redact(given);
            let redacted = report != given;
            let query = report.trim().to_owned();
            if query.is_empty() {
                return Err(ToolError::failed("web_search: give a query"));
            }
            let freshness = args["freshness"].as_str();
            let count = args["count"].as_u64().unwrap_or(DEFAULT_COUNT).clamp(1, MAX_COUNT);
            if ctx.dry_run {
                return Ok(ToolOutput::text(format!("dry run: would search {query:?}")));
            }
            let provider = self.provider.name();
            let key =
                format!("{provider}|{}|{count}|{}", freshness.unwrap_or(""), normalise(&query));
            let bypass = time_sensitive(&query);
            if !bypass && let Some(results) = self.ledger.cached(&key) {
                self.ledger.record(provider, true);
                return Ok(ToolOutput::text(render(&query, &results, true, redacted))
                    .with_details(json!({"provider": provider, "cached": true})));
            }
            let results = self.fetch(&query, freshness, count).await?;
            self.ledger.record(provider, false);
            if !bypass {
                self.ledger.keep(&key, provider, &query, &results);
            }
            Ok(ToolOutput::text(render(&query, &results, false, redacted)).with_details(json!({
                "provider": provider,
                "cached": false,
                "cache_bypassed": bypass,
                "results": results.as_array().map_or(0, Vec::len),
            })))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_sensitive_queries_are_recognised() {
        for q in [
            "weather in Berlin",
            "latest rust release",
            "BTC price",
            "news about x",
            "what happened on 2026-11-24",
            "events in march",
            "best laptops 2026",
            "what is on this week",
        ] {
            assert!(time_sensitive(q), "{q}");
        }
        for q in
            ["how do rust lifetimes work", "sqlite fts5 bm25", "python dataclass default factory"]
        {
            assert!(!time_sensitive(q), "{q}");
        }
    }

    #[test]
    fn snippets_lose_their_markup() {
        assert_eq!(strip_tags("the <strong>rust</strong> book &amp; more"), "the rust book & more");
    }

    #[test]
    fn queries_normalise_for_the_cache() {
        assert_eq!(normalise("  Rust   LIFETIMES "), "rust lifetimes");
    }
}
