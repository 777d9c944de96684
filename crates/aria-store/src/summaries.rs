//! Conversation summaries written by context compaction: one row per conversation, replaced
//! each time the conversation is compacted again, so a resumed or continued conversation starts
//! from the same summary the last run used.

use aria_api::HistorySummary;
use rusqlite::{OptionalExtension, params};

use crate::error::{StoreError, sql, to_i64, to_u64};
use crate::store::{Store, now_rfc3339};

impl Store {
    /// Stores `summary` as the conversation's summary, replacing any earlier one.
    pub fn save_summary(
        &self,
        conversation_id: &str,
        summary: &HistorySummary,
    ) -> Result<(), StoreError> {
        let text = self.redactor().redact(&summary.text).into_owned();
        let changed = self
            .conn()
            .execute(
                "INSERT INTO conversation_summaries (conversation_id, text, covers, model, updated_at) \
                 SELECT ?1, ?2, ?3, ?4, ?5 WHERE EXISTS (SELECT 1 FROM conversations WHERE id = ?1) \
                 ON CONFLICT(conversation_id) DO UPDATE SET text = excluded.text, \
                 covers = excluded.covers, model = excluded.model, updated_at = excluded.updated_at",
                params![
                    conversation_id,
                    text,
                    to_i64("covers", summary.covers)?,
                    summary.model,
                    now_rfc3339()
                ],
            )
            .map_err(sql("saving a conversation summary"))?;
        if changed == 0 {
            return Err(StoreError::UnknownConversation(conversation_id.to_owned()));
        }
        Ok(())
    }

    /// The conversation's summary, if it was ever compacted.
    pub fn load_summary(
        &self,
        conversation_id: &str,
    ) -> Result<Option<HistorySummary>, StoreError> {
        let row = self
            .conn()
            .query_row(
                "SELECT text, covers, model FROM conversation_summaries WHERE conversation_id = ?1",
                [conversation_id],
                |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?, r.get::<_, String>(2)?)),
            )
            .optional()
            .map_err(sql("reading a conversation summary"))?;
        row.map(|(text, covers, model)| {
            Ok(HistorySummary { text, covers: to_u64("covers", covers)?, model })
        })
        .transpose()
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;
    use std::sync::Arc;

    use aria_api::{Journal, Limits, NewSession, Redact};

    use super::*;

    #[derive(Debug)]
    struct HideKey;
    impl Redact for HideKey {
        fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
            Cow::Owned(text.replace("sk-live-1", "[REDACTED]"))
        }
    }

    fn conversation(store: &Store) -> String {
        let new = NewSession {
            conversation_id: None,
            task: "t".into(),
            provider: "p".into(),
            model: "m".into(),
            limits: Limits::default(),
        };
        store.create_session(&new).unwrap().conversation_id
    }

    #[test]
    fn a_summary_is_replaced_kept_per_conversation_and_scrubbed() {
        let store = Store::open_in_memory(Arc::new(HideKey)).unwrap();
        let (a, b) = (conversation(&store), conversation(&store));
        assert_eq!(Journal::load_summary(&store, &a).unwrap(), None);
        let first = HistorySummary { text: "one".into(), covers: 4, model: "m".into() };
        Journal::save_summary(&store, &a, &first).unwrap();
        let second =
            HistorySummary { text: "two, key sk-live-1".into(), covers: 9, model: "n".into() };
        Journal::save_summary(&store, &a, &second).unwrap();
        let loaded = Journal::load_summary(&store, &a).unwrap().unwrap();
        assert_eq!(loaded.covers, 9);
        assert_eq!(loaded.model, "n");
        assert_eq!(loaded.text, "two, key [REDACTED]");
        assert_eq!(Journal::load_summary(&store, &b).unwrap(), None);
    }

    #[test]
    fn a_summary_of_an_unknown_conversation_is_refused() {
        let store = Store::open_in_memory(Arc::new(HideKey)).unwrap();
        let s = HistorySummary { text: "x".into(), covers: 1, model: "m".into() };
        let err = store.save_summary("nope", &s).unwrap_err();
        assert!(matches!(err, StoreError::UnknownConversation(_)), "{err}");
    }
}
