//! Scoped API tokens for clients of `aria serve` (`aria tokens add NAME --scope …`).
//!
//! Only a digest of each token is kept: the token itself is shown once, when it is made. The
//! daemon's own token (`$ARIA_HOME/api-token`) is not here; it is the owner's and has every
//! scope. Creating and removing a token is audited (`token.create`, `token.remove`), never with
//! the token's value.

use aria_api::AuditEvent;
use rusqlite::{OptionalExtension, params};
use serde::Serialize;
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::StoreError;
use crate::error::sql;
use crate::store::{Store, now_rfc3339};

/// The schema step's table of scoped tokens.
pub(crate) const API_TOKENS: &str = "CREATE TABLE api_tokens (
        name TEXT PRIMARY KEY NOT NULL,
        scope TEXT NOT NULL,
        digest TEXT NOT NULL UNIQUE,
        created_at TEXT NOT NULL,
        last_used_at TEXT
    ) STRICT";

/// Who answered an approval question: the channel and the identity (`web:session`,
/// `api:token NAME`, `telegram:USER_ID`, `cli`).
pub(crate) const APPROVAL_ANSWERED_BY: &str = "ALTER TABLE approvals ADD COLUMN answered_by TEXT";

/// A stored token, without its value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StoredToken {
    pub name: String,
    /// `read`, `chat`, `mcp` or `admin` (the store keeps the word; the daemon interprets it).
    pub scope: String,
    /// RFC 3339 UTC.
    pub created_at: String,
    /// When a request last carried it (updated at most once a minute).
    pub last_used_at: Option<String>,
}

/// The hex SHA-256 of a token: what is stored and looked up.
pub fn token_digest(token: &str) -> String {
    Sha256::digest(token.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<StoredToken> {
    Ok(StoredToken {
        name: r.get(0)?,
        scope: r.get(1)?,
        created_at: r.get(2)?,
        last_used_at: r.get(3)?,
    })
}

impl Store {
    /// Stores a new token's digest under `name`; `Ok(false)` when the name is taken.
    pub fn token_create(&self, name: &str, scope: &str, token: &str) -> Result<bool, StoreError> {
        let digest = token_digest(token);
        self.write_tx("creating an API token", |tx| {
            let inserted = tx
                .execute(
                    "INSERT OR IGNORE INTO api_tokens (name, scope, digest, created_at) \
                     VALUES (?1, ?2, ?3, ?4)",
                    params![name, scope, digest, now_rfc3339()],
                )
                .map_err(sql("creating an API token"))?;
            if inserted == 0 {
                return Ok(false);
            }
            self.append_events_in(
                tx,
                [AuditEvent::new(
                    None,
                    "user",
                    "token.create",
                    json!({"name": name, "scope": scope}),
                )],
            )?;
            Ok(true)
        })
    }

    /// Removes the token named `name`; `Ok(false)` when there is none.
    pub fn token_remove(&self, name: &str) -> Result<bool, StoreError> {
        self.write_tx("removing an API token", |tx| {
            let removed = tx
                .execute("DELETE FROM api_tokens WHERE name = ?1", [name])
                .map_err(sql("removing an API token"))?;
            if removed == 0 {
                return Ok(false);
            }
            self.append_events_in(
                tx,
                [AuditEvent::new(None, "user", "token.remove", json!({"name": name}))],
            )?;
            Ok(true)
        })
    }

    /// Every token, by name.
    pub fn tokens(&self) -> Result<Vec<StoredToken>, StoreError> {
        let conn = self.conn();
        let mut statement = conn
            .prepare_cached(
                "SELECT name, scope, created_at, last_used_at FROM api_tokens ORDER BY name",
            )
            .map_err(sql("listing API tokens"))?;
        let rows = statement.query_map([], row).map_err(sql("listing API tokens"))?;
        rows.map(|r| r.map_err(sql("listing API tokens"))).collect()
    }

    /// The token whose value is `token`, if one is stored; its use is noted (at most once a
    /// minute, so a busy client does not write on every request).
    pub fn token_lookup(&self, token: &str) -> Result<Option<StoredToken>, StoreError> {
        let digest = token_digest(token);
        let found = {
            let conn = self.conn();
            conn.query_row(
                "SELECT name, scope, created_at, last_used_at FROM api_tokens WHERE digest = ?1",
                [&digest],
                row,
            )
            .optional()
            .map_err(sql("looking up an API token"))?
        };
        if let Some(t) = &found {
            let now = now_rfc3339();
            let stale = t.last_used_at.as_deref().is_none_or(|at| at.get(..16) != now.get(..16));
            if stale {
                let conn = self.conn();
                conn.execute(
                    "UPDATE api_tokens SET last_used_at = ?2 WHERE name = ?1",
                    params![t.name, now],
                )
                .map_err(sql("noting an API token's use"))?;
            }
        }
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_found_by_its_value_and_only_its_digest_is_kept() {
        let store = Store::open_in_memory(std::sync::Arc::new(aria_api::NoRedact)).unwrap();
        assert!(store.token_create("ci", "read", "aria_secret_value").unwrap());
        assert!(!store.token_create("ci", "admin", "other").unwrap(), "names are unique");
        let found = store.token_lookup("aria_secret_value").unwrap().unwrap();
        assert_eq!((found.name.as_str(), found.scope.as_str()), ("ci", "read"));
        assert!(found.last_used_at.is_none(), "the row read before the use was noted");
        assert!(store.token_lookup("aria_secret_valuf").unwrap().is_none());
        assert!(store.tokens().unwrap()[0].last_used_at.is_some());
        let dump: String = store
            .conn()
            .query_row("SELECT group_concat(digest) FROM api_tokens", [], |r| r.get(0))
            .unwrap();
        assert!(!dump.contains("aria_secret_value"));
        assert!(store.token_remove("ci").unwrap());
        assert!(!store.token_remove("ci").unwrap());
        assert!(store.token_lookup("aria_secret_value").unwrap().is_none());
        let kinds: Vec<String> = store
            .conn()
            .prepare("SELECT kind FROM audit_log WHERE kind LIKE 'token.%' ORDER BY seq")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(kinds, ["token.create", "token.remove"]);
    }
}
