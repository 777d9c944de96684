//! Counters and histograms of what ARIA did, kept in memory and fed from the
//! store's traces: each trace is read once, in id order (at start all of them, then only the
//! new ones), so a scrape costs the new rows plus rendering, whatever the history's size.
//!
//! [`Families`] is the one description of every metric; it renders as the Prometheus text
//! format (`GET /metrics`) and as JSON (`GET /metrics/json`).

use std::collections::BTreeMap;

use aria_api::TraceKind;
use aria_store::{Store, StoreError, StoredTrace};
use serde::Serialize;
use serde_json::Value;

/// Histogram buckets, in seconds.
pub const BUCKETS: &[f64] =
    &[0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0];

/// Rows read per catch-up query.
const PAGE: usize = 10_000;

/// The hours of per-hour history kept for the status page.
pub const HOURS: usize = 24;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Histogram {
    /// Cumulative counts per bucket of [`BUCKETS`] (then `+Inf` is `count`).
    pub buckets: Vec<u64>,
    pub sum: f64,
    pub count: u64,
}

impl Histogram {
    pub fn observe(&mut self, seconds: f64) {
        if self.buckets.is_empty() {
            self.buckets = vec![0; BUCKETS.len()];
        }
        for (slot, bound) in self.buckets.iter_mut().zip(BUCKETS) {
            if seconds <= *bound {
                *slot += 1;
            }
        }
        self.sum += seconds;
        self.count += 1;
    }
}

/// One hour of activity (for the status page's charts).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Hour {
    /// `2026-11-26T18` (UTC).
    pub hour: String,
    pub model_calls: u64,
    pub tool_calls: u64,
    pub errors: u64,
    pub cost_usd: f64,
    /// Model call durations this hour (for p50/p95), at most [`HOUR_SAMPLES`].
    #[serde(skip)]
    pub model_ms: Vec<u64>,
    pub p50_ms: u64,
    pub p95_ms: u64,
}

/// The most model call durations kept per hour for its percentiles.
const HOUR_SAMPLES: usize = 5_000;

/// Everything counted from the traces.
#[derive(Debug, Default)]
pub struct Counts {
    last_id: i64,
    pub model_calls: BTreeMap<(String, String), u64>,
    pub model_seconds: BTreeMap<String, Histogram>,
    pub tokens: BTreeMap<(String, &'static str), u64>,
    pub cost: BTreeMap<String, f64>,
    pub tool_calls: BTreeMap<(String, String, String), u64>,
    pub tool_seconds: BTreeMap<String, Histogram>,
    pub approvals: BTreeMap<String, u64>,
    pub approval_seconds: Histogram,
    pub recalls: BTreeMap<String, u64>,
    pub recall_seconds: Histogram,
    /// The outcomes of the last model calls, newest last (for the models health check).
    pub recent_model_outcomes: Vec<String>,
    pub hours: Vec<Hour>,
}

/// The first of the last [`HOURS`] hours, as `2026-11-26T18` (UTC).
fn oldest_hour() -> String {
    let now = jiff::Timestamp::now();
    now.checked_sub(jiff::SignedDuration::from_hours(HOURS as i64 - 1))
        .unwrap_or(now)
        .strftime("%Y-%m-%dT%H")
        .to_string()
}

/// The nearest-rank percentile `p` of `values` (sorted here).
pub fn percentile(values: &mut [u64], p: u64) -> u64 {
    values.sort_unstable();
    percentile_sorted(values, p)
}

/// The nearest-rank percentile `p` (0–100) of values already sorted; 0 when there are none.
pub fn percentile_sorted(sorted: &[u64], p: u64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (p * sorted.len() as u64).div_ceil(100).max(1);
    sorted[usize::try_from(rank - 1).unwrap_or(0).min(sorted.len() - 1)]
}

impl Counts {
    /// Reads the traces recorded since the last call.
    pub fn catch_up(&mut self, store: &Store) -> Result<usize, StoreError> {
        let mut read = 0;
        // The first hour kept, once per catch-up (not per trace); older ones are dropped.
        let oldest = oldest_hour();
        self.hours.retain(|h| h.hour >= oldest);
        loop {
            let page = store.traces_after(self.last_id, PAGE)?;
            read += page.len();
            for trace in &page {
                self.add(trace, &oldest);
            }
            if page.len() < PAGE {
                return Ok(read);
            }
        }
    }

    fn add(&mut self, stored: &StoredTrace, oldest: &str) {
        self.last_id = self.last_id.max(stored.id);
        let t = &stored.trace;
        let seconds = t.duration_ms as f64 / 1_000.0;
        let hour = stored.created_at.get(..13).unwrap_or_default().to_owned();
        let failed = u64::from(t.outcome != "ok");
        match t.kind {
            TraceKind::ModelCall => {
                *self.model_calls.entry((t.name.clone(), t.outcome.clone())).or_default() += 1;
                self.model_seconds.entry(t.name.clone()).or_default().observe(seconds);
                *self.tokens.entry((t.name.clone(), "input")).or_default() += t.usage.input_tokens;
                *self.tokens.entry((t.name.clone(), "output")).or_default() +=
                    t.usage.output_tokens;
                *self.cost.entry(t.name.clone()).or_default() += t.cost_usd;
                self.recent_model_outcomes.push(t.outcome.clone());
                if self.recent_model_outcomes.len() > 20 {
                    self.recent_model_outcomes.remove(0);
                }
                if let Some(h) = self.hour(&hour, oldest) {
                    h.model_calls += 1;
                    h.cost_usd += t.cost_usd;
                    h.errors += failed;
                    if h.model_ms.len() < HOUR_SAMPLES {
                        h.model_ms.push(t.duration_ms);
                    }
                }
            }
            TraceKind::ToolCall => {
                let tier = t.detail["tier"].as_str().unwrap_or("unknown").to_owned();
                *self.tool_calls.entry((t.name.clone(), tier, t.outcome.clone())).or_default() += 1;
                self.tool_seconds.entry(t.name.clone()).or_default().observe(seconds);
                if let Some(h) = self.hour(&hour, oldest) {
                    h.tool_calls += 1;
                    h.errors += failed;
                }
            }
            TraceKind::Approval => {
                *self.approvals.entry(t.outcome.clone()).or_default() += 1;
                self.approval_seconds.observe(seconds);
            }
            TraceKind::MemoryRecall => {
                *self.recalls.entry(t.outcome.clone()).or_default() += 1;
                self.recall_seconds.observe(seconds);
            }
        }
    }

    /// The bucket of `hour` when it is one of the last [`HOURS`] (older traces only count).
    fn hour(&mut self, hour: &str, oldest: &str) -> Option<&mut Hour> {
        if hour < oldest {
            return None;
        }
        let at = match self.hours.binary_search_by(|h| h.hour.as_str().cmp(hour)) {
            Ok(at) => at,
            Err(at) => {
                self.hours.insert(at, Hour { hour: hour.to_owned(), ..Hour::default() });
                at
            }
        };
        self.hours.get_mut(at)
    }

    /// The last [`HOURS`] hours, oldest first, every hour present (empty ones too).
    pub fn history(&self) -> Vec<Hour> {
        let now = jiff::Timestamp::now();
        (0..HOURS as i64)
            .rev()
            .map(|back| {
                let hour = now
                    .checked_sub(jiff::SignedDuration::from_hours(back))
                    .unwrap_or(now)
                    .strftime("%Y-%m-%dT%H")
                    .to_string();
                let mut h = self
                    .hours
                    .iter()
                    .find(|h| h.hour == hour)
                    .cloned()
                    .unwrap_or(Hour { hour, ..Hour::default() });
                let mut samples = std::mem::take(&mut h.model_ms);
                h.p50_ms = percentile(&mut samples, 50);
                h.p95_ms = percentile(&mut samples, 95);
                h
            })
            .collect()
    }
}

/// A metric's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Counter,
    Gauge,
    Histogram,
}

/// One sample: labels and value (a histogram's are its buckets, sum and count).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sample {
    pub labels: Vec<(String, String)>,
    #[serde(flatten)]
    pub value: SampleValue,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum SampleValue {
    Number { value: f64 },
    Histogram { buckets: Vec<(f64, u64)>, sum: f64, count: u64 },
}

/// One metric family.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Family {
    pub name: String,
    pub help: String,
    #[serde(rename = "type")]
    pub kind: Kind,
    pub samples: Vec<Sample>,
}

/// Every metric, in the order they are shown.
#[derive(Debug, Default, Clone, PartialEq, Serialize)]
pub struct Families(pub Vec<Family>);

fn labels(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
}

impl Families {
    pub fn push(&mut self, name: &str, kind: Kind, help: &str, samples: Vec<Sample>) {
        self.0.push(Family { name: name.to_owned(), help: help.to_owned(), kind, samples });
    }

    /// A family with one unlabelled value.
    pub fn single(&mut self, name: &str, kind: Kind, help: &str, value: f64) {
        self.push(name, kind, help, vec![number(&[], value)]);
    }

    /// The Prometheus text exposition format (version 0.0.4).
    pub fn to_text(&self) -> String {
        let mut out = String::with_capacity(8 * 1024);
        for family in &self.0 {
            let kind = match family.kind {
                Kind::Counter => "counter",
                Kind::Gauge => "gauge",
                Kind::Histogram => "histogram",
            };
            out.push_str(&format!("# HELP {} {}\n", family.name, escape_help(&family.help)));
            out.push_str(&format!("# TYPE {} {kind}\n", family.name));
            for sample in &family.samples {
                match &sample.value {
                    SampleValue::Number { value } => {
                        let name = &family.name;
                        out.push_str(&format!(
                            "{name}{} {}\n",
                            label_text(&sample.labels, None),
                            float(*value)
                        ));
                    }
                    SampleValue::Histogram { buckets, sum, count } => {
                        for (bound, n) in buckets {
                            let le = float(*bound);
                            out.push_str(&format!(
                                "{}_bucket{} {n}\n",
                                family.name,
                                label_text(&sample.labels, Some(&le))
                            ));
                        }
                        out.push_str(&format!(
                            "{}_bucket{} {count}\n",
                            family.name,
                            label_text(&sample.labels, Some("+Inf"))
                        ));
                        let plain = label_text(&sample.labels, None);
                        out.push_str(&format!("{}_sum{plain} {}\n", family.name, float(*sum)));
                        out.push_str(&format!("{}_count{plain} {count}\n", family.name));
                    }
                }
            }
        }
        out
    }

    pub fn to_json(&self) -> Value {
        serde_json::json!({ "metrics": self.0 })
    }
}

pub fn number(pairs: &[(&str, &str)], value: f64) -> Sample {
    Sample { labels: labels(pairs), value: SampleValue::Number { value } }
}

pub fn histogram(pairs: &[(&str, &str)], h: &Histogram) -> Sample {
    let counts = if h.buckets.is_empty() { vec![0; BUCKETS.len()] } else { h.buckets.clone() };
    Sample {
        labels: labels(pairs),
        value: SampleValue::Histogram {
            buckets: BUCKETS.iter().copied().zip(counts).collect(),
            sum: h.sum,
            count: h.count,
        },
    }
}

fn float(v: f64) -> String {
    if v.is_nan() {
        "NaN".to_owned()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf".to_owned() } else { "-Inf".to_owned() }
    } else {
        format!("{v}")
    }
}

fn escape_help(text: &str) -> String {
    text.replace('\\', "\\\\").replace('\n', "\\n")
}

fn escape_label(text: &str) -> String {
    text.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

fn label_text(pairs: &[(String, String)], le: Option<&str>) -> String {
    let mut parts: Vec<String> =
        pairs.iter().map(|(k, v)| format!("{k}=\"{}\"", escape_label(v))).collect();
    if let Some(le) = le {
        parts.push(format!("le=\"{le}\""));
    }
    if parts.is_empty() { String::new() } else { format!("{{{}}}", parts.join(",")) }
}

impl Counts {
    /// The families counted from the traces.
    pub fn families(&self, out: &mut Families) {
        let calls = self
            .model_calls
            .iter()
            .map(|((model, outcome), n)| {
                number(&[("model", model), ("outcome", outcome)], *n as f64)
            })
            .collect();
        out.push(
            "aria_model_calls_total",
            Kind::Counter,
            "Model calls, by model and outcome.",
            calls,
        );
        let seconds =
            self.model_seconds.iter().map(|(m, h)| histogram(&[("model", m)], h)).collect();
        out.push(
            "aria_model_call_duration_seconds",
            Kind::Histogram,
            "How long model calls took, by model.",
            seconds,
        );
        let tokens = self
            .tokens
            .iter()
            .map(|((m, dir), n)| number(&[("model", m), ("direction", dir)], *n as f64))
            .collect();
        out.push(
            "aria_tokens_total",
            Kind::Counter,
            "Tokens sent to and received from models.",
            tokens,
        );
        let cost = self.cost.iter().map(|(m, c)| number(&[("model", m)], *c)).collect();
        out.push(
            "aria_cost_usd_total",
            Kind::Counter,
            "Model spend in US dollars, by model.",
            cost,
        );
        let tools = self
            .tool_calls
            .iter()
            .map(|((tool, tier, outcome), n)| {
                number(&[("tool", tool), ("tier", tier), ("outcome", outcome)], *n as f64)
            })
            .collect();
        out.push(
            "aria_tool_calls_total",
            Kind::Counter,
            "Tool calls, by tool, tier and outcome (ok, failed, refused, timeout, ...).",
            tools,
        );
        let seconds = self.tool_seconds.iter().map(|(t, h)| histogram(&[("tool", t)], h)).collect();
        out.push(
            "aria_tool_call_duration_seconds",
            Kind::Histogram,
            "How long tool calls took, by tool.",
            seconds,
        );
        let answers =
            self.approvals.iter().map(|(a, n)| number(&[("answer", a)], *n as f64)).collect();
        out.push("aria_approvals_total", Kind::Counter, "Approval questions, by answer.", answers);
        out.push(
            "aria_approval_wait_seconds",
            Kind::Histogram,
            "How long approval questions waited for an answer.",
            vec![histogram(&[], &self.approval_seconds)],
        );
        let recalls =
            self.recalls.iter().map(|(o, n)| number(&[("outcome", o)], *n as f64)).collect();
        out.push(
            "aria_memory_recalls_total",
            Kind::Counter,
            "Long-term memory recalls for user messages, by outcome.",
            recalls,
        );
        out.push(
            "aria_memory_recall_duration_seconds",
            Kind::Histogram,
            "How long memory recall took.",
            vec![histogram(&[], &self.recall_seconds)],
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histograms_are_cumulative() {
        let mut h = Histogram::default();
        for s in [0.004, 0.2, 0.2, 400.0] {
            h.observe(s);
        }
        assert_eq!(h.count, 4);
        assert_eq!(h.buckets[0], 1, "≤ 5 ms");
        assert_eq!(h.buckets[5], 3, "≤ 250 ms");
        assert_eq!(*h.buckets.last().unwrap(), 3, "≤ 300 s; the 400 s one only in +Inf");
    }

    #[test]
    fn text_format_escapes_labels_and_writes_histograms_whole() {
        let mut families = Families::default();
        families.push(
            "aria_x_total",
            Kind::Counter,
            "An x.\nTwo lines.",
            vec![number(&[("tool", "a\"b\\c\nd")], 3.0)],
        );
        let mut h = Histogram::default();
        h.observe(0.02);
        families.push("aria_d_seconds", Kind::Histogram, "D.", vec![histogram(&[("m", "q")], &h)]);
        let text = families.to_text();
        assert!(text.contains("# HELP aria_x_total An x.\\nTwo lines.\n"), "{text}");
        assert!(text.contains("aria_x_total{tool=\"a\\\"b\\\\c\\nd\"} 3\n"), "{text}");
        assert!(text.contains("aria_d_seconds_bucket{m=\"q\",le=\"0.025\"} 1\n"), "{text}");
        assert!(text.contains("aria_d_seconds_bucket{m=\"q\",le=\"+Inf\"} 1\n"), "{text}");
        assert!(text.contains("aria_d_seconds_count{m=\"q\"} 1\n"), "{text}");
        assert_eq!(families.to_json()["metrics"][0]["type"], "counter");
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let mut v: Vec<u64> = (1..=100).rev().collect();
        assert_eq!(percentile(&mut v, 95), 95);
        assert_eq!(percentile(&mut [], 50), 0);
    }
}
