//! Conversation and session ids given the way people type them: in full, or as a unique prefix
//! of at least [`MIN_PREFIX`] characters, like git's abbreviated commit ids. A prefix that fits
//! several ids is an error that lists them; one that fits none names it. Nothing is guessed.

use rusqlite::params;

use crate::error::{StoreError, sql};
use crate::store::Store;

/// The shortest prefix accepted (shorter input must be a whole id).
pub const MIN_PREFIX: usize = 4;

/// Which ids to look in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdKind {
    Conversation,
    Session,
}

impl IdKind {
    fn table(self) -> &'static str {
        match self {
            IdKind::Conversation => "conversations",
            IdKind::Session => "sessions",
        }
    }

    fn noun(self) -> &'static str {
        match self {
            IdKind::Conversation => "conversation",
            IdKind::Session => "session",
        }
    }
}

impl Store {
    /// The full id that `given` names: itself when it is an id, else the one id it is a prefix
    /// of. Errors name the input: unknown, or ambiguous with the candidates listed.
    pub fn resolve_id(&self, kind: IdKind, given: &str) -> Result<String, StoreError> {
        let unknown = || match kind {
            IdKind::Conversation => StoreError::UnknownConversation(given.to_owned()),
            IdKind::Session => StoreError::UnknownSession(given.to_owned()),
        };
        let conn = self.conn();
        let table = kind.table();
        let exact: Option<String> = conn
            .query_row(&format!("SELECT id FROM {table} WHERE id = ?1"), params![given], |r| {
                r.get(0)
            })
            .ok();
        if let Some(id) = exact {
            return Ok(id);
        }
        if given.chars().count() < MIN_PREFIX {
            return Err(unknown());
        }
        // A range scan on the primary key (no LIKE, so `%` and `_` in the input mean nothing).
        let upper = format!("{given}\u{10FFFF}");
        let mut stmt = conn
            .prepare(&format!(
                "SELECT id FROM {table} WHERE id >= ?1 AND id < ?2 ORDER BY id LIMIT 6"
            ))
            .map_err(sql("look up an id prefix"))?;
        let found: Vec<String> = stmt
            .query_map(params![given, upper], |r| r.get(0))
            .map_err(sql("look up an id prefix"))?
            .filter_map(Result::ok)
            .filter(|id: &String| id.starts_with(given))
            .collect();
        match found.as_slice() {
            [] => Err(unknown()),
            [one] => Ok(one.clone()),
            many => Err(StoreError::AmbiguousId {
                noun: kind.noun(),
                given: given.to_owned(),
                candidates: many.iter().take(5).cloned().collect::<Vec<_>>().join(", "),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_ids_and_unique_prefixes_resolve_and_the_rest_is_named() {
        let store = Store::open_in_memory(std::sync::Arc::new(aria_api::NoRedact)).unwrap();
        {
            let conn = store.conn();
            for id in ["019a7c1e-aaaa", "019a7c1e-aabb", "019b0000-cccc"] {
                conn.execute(
                    "INSERT INTO conversations (id, title, created_at, updated_at) VALUES (?1, 't', 'x', 'x')",
                    params![id],
                )
                .unwrap();
            }
        }
        let c = IdKind::Conversation;
        assert_eq!(store.resolve_id(c, "019a7c1e-aaaa").unwrap(), "019a7c1e-aaaa");
        assert_eq!(store.resolve_id(c, "019b").unwrap(), "019b0000-cccc");
        assert_eq!(store.resolve_id(c, "019a7c1e-aab").unwrap(), "019a7c1e-aabb");
        let err = store.resolve_id(c, "019a7c1e-aa").unwrap_err().to_string();
        assert!(err.contains("019a7c1e-aaaa") && err.contains("019a7c1e-aabb"), "{err}");
        assert!(store.resolve_id(c, "019").is_err(), "too short to be a prefix");
        assert!(store.resolve_id(c, "ffff").unwrap_err().to_string().contains("ffff"));
        assert!(store.resolve_id(c, "019%").is_err(), "no pattern matching");
    }
}
