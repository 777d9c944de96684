//! Spend queries over the traces table: what the cost caps and `aria cost` read.
//!
//! Every model call is a `model_call` trace with its cost in USD, written by the agent loop
//! whatever started the run (a chat, `aria run`, a scheduled job), so a sum over traces binds
//! all of them. Periods are UTC: a day starts at 00:00 UTC, a month on the 1st at 00:00 UTC.
//! Times compare as text, which is safe because every stored time has the same fixed-width
//! RFC 3339 form.

use rusqlite::params;
use serde::Serialize;

use crate::error::{StoreError, sql, to_u64};
use crate::store::Store;

/// How [`Store::spend_report`] groups model calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SpendGroup {
    /// By UTC day (`2026-01-31`), newest first.
    Day,
    /// By model name, most expensive first.
    Model,
    /// By session, newest first; `label` is the session's task.
    Session,
}

/// One line of a spend report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SpendRow {
    pub key: String,
    /// For sessions: the task (its first 60 characters).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    pub calls: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: f64,
}

/// The start of the current UTC day, e.g. `2026-01-31T00:00:00.000Z`.
pub fn day_start_utc() -> String {
    let t = time::OffsetDateTime::now_utc();
    format!("{:04}-{:02}-{:02}T00:00:00.000Z", t.year(), u8::from(t.month()), t.day())
}

/// The start of the UTC day `days` days before today (`0`: today).
pub fn day_start_utc_days_ago(days: u32) -> String {
    let t = time::OffsetDateTime::now_utc() - time::Duration::days(i64::from(days));
    format!("{:04}-{:02}-{:02}T00:00:00.000Z", t.year(), u8::from(t.month()), t.day())
}

/// The start of the current UTC month, e.g. `2026-01-01T00:00:00.000Z`.
pub fn month_start_utc() -> String {
    let t = time::OffsetDateTime::now_utc();
    format!("{:04}-{:02}-01T00:00:00.000Z", t.year(), u8::from(t.month()))
}

impl Store {
    /// USD spent on model calls recorded at or after `since` (an RFC 3339 UTC time as this
    /// store writes them, e.g. [`day_start_utc`]).
    pub fn spend_since(&self, since: &str) -> Result<f64, StoreError> {
        let conn = self.conn();
        conn.query_row(
            "SELECT COALESCE(SUM(cost_usd), 0.0) FROM traces \
             WHERE kind = 'model_call' AND created_at >= ?1",
            [since],
            |r| r.get::<_, f64>(0),
        )
        .map_err(sql("summing spend"))
    }

    /// Model-call spend grouped by day, model or session, since `since` when given; at most
    /// `limit` rows.
    pub fn spend_report(
        &self,
        group: SpendGroup,
        since: Option<&str>,
        limit: usize,
    ) -> Result<Vec<SpendRow>, StoreError> {
        let (key, label, order) = match group {
            SpendGroup::Day => ("substr(t.created_at, 1, 10)", "NULL", "key DESC"),
            SpendGroup::Model => ("t.name", "NULL", "cost DESC, key"),
            SpendGroup::Session => ("t.session_id", "MAX(s.task)", "MAX(t.created_at) DESC"),
        };
        let query = format!(
            "SELECT {key} AS key, {label}, COUNT(*), SUM(t.input_tokens), SUM(t.output_tokens), \
             SUM(t.cost_usd) AS cost FROM traces t JOIN sessions s ON s.id = t.session_id \
             WHERE t.kind = 'model_call' AND t.created_at >= ?1 \
             GROUP BY key ORDER BY {order} LIMIT ?2"
        );
        let conn = self.conn();
        let mut stmt = conn.prepare(&query).map_err(sql("reading spend"))?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = stmt
            .query_map(params![since.unwrap_or(""), limit], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, Option<String>>(1)?,
                    [r.get::<_, i64>(2)?, r.get::<_, i64>(3)?, r.get::<_, i64>(4)?],
                    r.get::<_, f64>(5)?,
                ))
            })
            .map_err(sql("reading spend"))?;
        rows.map(|row| {
            let (key, label, [calls, input, output], cost_usd) =
                row.map_err(sql("reading spend"))?;
            Ok(SpendRow {
                key,
                label: label.map(|task| crate::journal::title_from_task(&task)),
                calls: to_u64("calls", calls)?,
                input_tokens: to_u64("input_tokens", input)?,
                output_tokens: to_u64("output_tokens", output)?,
                cost_usd,
            })
        })
        .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use aria_api::{Journal, Limits, NewSession, NoRedact, TraceKind, TraceRecord, Usage};

    use super::*;

    fn session(store: &Store, task: &str) -> String {
        let new = NewSession {
            conversation_id: None,
            task: task.into(),
            provider: "openai".into(),
            model: "gpt-4o".into(),
            limits: Limits::default(),
        };
        store.create_session(&new).unwrap().id
    }

    fn trace(store: &Store, session: &str, kind: TraceKind, model: &str, cost: f64, at: &str) {
        store
            .record_trace(&TraceRecord {
                session_id: session.into(),
                kind,
                name: model.into(),
                duration_ms: 5,
                usage: Usage { input_tokens: 100, output_tokens: 10 },
                cost_usd: cost,
                outcome: "ok".into(),
                detail: serde_json::json!({}),
            })
            .unwrap();
        // Back-date the row just written.
        store
            .conn()
            .execute(
                "UPDATE traces SET created_at = ?1 WHERE id = (SELECT MAX(id) FROM traces)",
                [at],
            )
            .unwrap();
    }

    fn fixture() -> Store {
        let store = Store::open_in_memory(Arc::new(NoRedact)).unwrap();
        let a = session(&store, "first task");
        let b = session(&store, "second task");
        trace(&store, &a, TraceKind::ModelCall, "gpt-4o", 0.25, "2026-01-30T23:59:59.999Z");
        trace(&store, &a, TraceKind::ModelCall, "gpt-4o-mini", 0.01, "2026-01-31T00:00:00.000Z");
        trace(&store, &b, TraceKind::ModelCall, "gpt-4o", 0.5, "2026-01-31T10:00:00.000Z");
        trace(&store, &b, TraceKind::ToolCall, "shell", 9.0, "2026-01-31T10:00:01.000Z");
        trace(&store, &b, TraceKind::ModelCall, "gpt-4o", 1.0, "2025-12-31T10:00:00.000Z");
        store
    }

    #[test]
    fn spend_since_sums_model_calls_from_the_boundary_on() {
        let store = fixture();
        assert!((store.spend_since("2026-01-31T00:00:00.000Z").unwrap() - 0.51).abs() < 1e-9);
        assert!((store.spend_since("2026-01-01T00:00:00.000Z").unwrap() - 0.76).abs() < 1e-9);
        assert!((store.spend_since("").unwrap() - 1.76).abs() < 1e-9, "tool traces never count");
        assert_eq!(store.spend_since("2027-01-01T00:00:00.000Z").unwrap(), 0.0);
    }

    #[test]
    fn reports_group_by_day_model_and_session() {
        let store = fixture();
        let days = store.spend_report(SpendGroup::Day, None, 10).unwrap();
        let keys: Vec<(&str, u64)> = days.iter().map(|r| (r.key.as_str(), r.calls)).collect();
        assert_eq!(keys, [("2026-01-31", 2), ("2026-01-30", 1), ("2025-12-31", 1)]);
        let models =
            store.spend_report(SpendGroup::Model, Some("2026-01-01T00:00:00.000Z"), 10).unwrap();
        assert_eq!(models[0].key, "gpt-4o");
        assert!((models[0].cost_usd - 0.75).abs() < 1e-9);
        assert_eq!(models[0].input_tokens, 200);
        let sessions = store.spend_report(SpendGroup::Session, None, 1).unwrap();
        assert_eq!(sessions.len(), 1);
        assert_eq!(sessions[0].label.as_deref(), Some("second task"));
    }

    #[test]
    fn period_starts_are_fixed_width_utc() {
        let day = day_start_utc();
        assert_eq!(day.len(), "2026-01-31T00:00:00.000Z".len());
        assert!(day.ends_with("T00:00:00.000Z"));
        assert!(month_start_utc() <= day && month_start_utc().ends_with("-01T00:00:00.000Z"));
        assert_eq!(day_start_utc_days_ago(0), day);
        let year_ago = day_start_utc_days_ago(366);
        assert!(year_ago < day && year_ago.ends_with("T00:00:00.000Z"), "{year_ago}");
    }
}
