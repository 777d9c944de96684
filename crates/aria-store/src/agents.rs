//! Agent profiles made outside `aria.toml`: `aria agents add`, the HTTP API and the
//! web UI. One row per agent; the profile itself is JSON the binary checks (this crate keeps
//! it, it does not interpret it), so a field added to profiles needs no schema step.

use rusqlite::{OptionalExtension, params};
use serde_json::Value;

use crate::StoreError;
use crate::error::sql;
use crate::store::{Store, now_rfc3339};

/// The statements of the schema step that adds stored agents.
/// It also gives conversations the agent they were bound to before their first run (a chat's
/// `/agent NAME`, a conversation made with an agent through the API).
pub(crate) const AGENTS: &[&str] = &[
    "CREATE TABLE agents (
        name TEXT PRIMARY KEY NOT NULL,
        profile TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    ) STRICT",
    "ALTER TABLE conversations ADD COLUMN agent TEXT",
];

/// One stored agent.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct StoredAgent {
    pub name: String,
    pub profile: Value,
    /// RFC 3339 UTC.
    pub created_at: String,
    pub updated_at: String,
}

/// How [`Store::agent_put`] treats an agent that is (or is not) there already.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentWrite {
    /// Only a new name: `Ok(false)` when the name is taken.
    Create,
    /// Only an existing name: `Ok(false)` when there is none.
    Replace,
}

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<(String, String, String, String)> {
    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
}

fn stored(
    (name, profile, created_at, updated_at): (String, String, String, String),
) -> Result<StoredAgent, StoreError> {
    let profile = serde_json::from_str(&profile)
        .map_err(|e| StoreError::Corrupt { what: format!("the stored agent {name}: {e}") })?;
    Ok(StoredAgent { name, profile, created_at, updated_at })
}

impl Store {
    /// Every stored agent, by name.
    pub fn agents(&self) -> Result<Vec<StoredAgent>, StoreError> {
        let conn = self.conn();
        let mut statement = conn
            .prepare_cached(
                "SELECT name, profile, created_at, updated_at FROM agents ORDER BY name",
            )
            .map_err(sql("listing the agents"))?;
        let rows = statement
            .query_map([], row)
            .map_err(sql("listing the agents"))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(sql("listing the agents"))?;
        rows.into_iter().map(stored).collect()
    }

    /// The stored agent `name`.
    pub fn agent(&self, name: &str) -> Result<Option<StoredAgent>, StoreError> {
        let found = self
            .conn()
            .query_row(
                "SELECT name, profile, created_at, updated_at FROM agents WHERE name = ?1",
                [name],
                row,
            )
            .optional()
            .map_err(sql("reading an agent"))?;
        found.map(stored).transpose()
    }

    /// Writes the agent `name`; whether it did (see [`AgentWrite`]).
    pub fn agent_put(
        &self,
        name: &str,
        profile: &Value,
        how: AgentWrite,
    ) -> Result<bool, StoreError> {
        let now = now_rfc3339();
        let text = profile.to_string();
        let changed = match how {
            AgentWrite::Create => self.conn().execute(
                "INSERT INTO agents (name, profile, created_at, updated_at) \
                 VALUES (?1, ?2, ?3, ?3) ON CONFLICT (name) DO NOTHING",
                params![name, text, now],
            ),
            AgentWrite::Replace => self.conn().execute(
                "UPDATE agents SET profile = ?2, updated_at = ?3 WHERE name = ?1",
                params![name, text, now],
            ),
        }
        .map_err(sql("writing an agent"))?;
        Ok(changed == 1)
    }

    /// Binds conversation `id` to the agent `name`; whether the conversation exists.
    pub fn set_conversation_agent(&self, id: &str, name: &str) -> Result<bool, StoreError> {
        let n = self
            .conn()
            .execute("UPDATE conversations SET agent = ?2 WHERE id = ?1", params![id, name])
            .map_err(sql("binding a conversation to an agent"))?;
        Ok(n == 1)
    }

    /// The agent conversation `id` is bound to: the one it was made with, else the one its first
    /// run ran as (`agent` of that run's `session.start` record; `default` when it ran as
    /// none). `None`: not bound yet (no agent chosen, no run).
    pub fn conversation_agent(&self, id: &str) -> Result<Option<String>, StoreError> {
        let chosen: Option<Option<String>> = self
            .conn()
            .query_row("SELECT agent FROM conversations WHERE id = ?1", [id], |r| r.get(0))
            .optional()
            .map_err(sql("reading a conversation's agent"))?;
        if let Some(Some(name)) = chosen {
            return Ok(Some(name));
        }
        // Asked before every run the daemon starts: one row each, through the indexes.
        let first: Option<String> = self
            .conn()
            .query_row(
                "SELECT id FROM sessions WHERE conversation_id = ?1 ORDER BY created_at, id \
                 LIMIT 1",
                [id],
                |r| r.get(0),
            )
            .optional()
            .map_err(sql("reading a conversation's first run"))?;
        let Some(first) = first else { return Ok(None) };
        Ok(Some(self.session_agent(&first)?.unwrap_or_else(|| "default".to_owned())))
    }

    /// The agent session `id` ran as (`agent` of its `session.start` record); `None` when it
    /// ran as none.
    pub fn session_agent(&self, id: &str) -> Result<Option<String>, StoreError> {
        let payload: Option<String> = self
            .conn()
            .query_row(
                "SELECT payload FROM audit_log WHERE session_id = ?1 AND kind = 'session.start' \
                 ORDER BY seq LIMIT 1",
                [id],
                |r| r.get(0),
            )
            .optional()
            .map_err(sql("reading a run's start record"))?;
        let payload: Option<Value> = payload.and_then(|p| serde_json::from_str(&p).ok());
        Ok(payload.and_then(|p| p["agent"].as_str().map(str::to_owned)))
    }

    /// Removes the stored agent `name`; whether there was one.
    pub fn agent_remove(&self, name: &str) -> Result<bool, StoreError> {
        let n = self
            .conn()
            .execute("DELETE FROM agents WHERE name = ?1", [name])
            .map_err(sql("removing an agent"))?;
        Ok(n == 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn agents_are_created_once_replaced_only_when_there_and_removed() {
        let store = Store::open_in_memory(std::sync::Arc::new(aria_api::NoRedact)).unwrap();
        assert!(store.agents().unwrap().is_empty());
        let profile = json!({"name": "writer", "description": "writes"});
        assert!(!store.agent_put("writer", &profile, AgentWrite::Replace).unwrap());
        assert!(store.agent_put("writer", &profile, AgentWrite::Create).unwrap());
        assert!(!store.agent_put("writer", &json!({}), AgentWrite::Create).unwrap());
        assert_eq!(store.agent("writer").unwrap().unwrap().profile, profile);
        let edited = json!({"name": "writer", "description": "edits"});
        assert!(store.agent_put("writer", &edited, AgentWrite::Replace).unwrap());
        let all = store.agents().unwrap();
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].profile, edited);
        assert!(all[0].updated_at >= all[0].created_at);
        assert!(store.agent_remove("writer").unwrap());
        assert!(!store.agent_remove("writer").unwrap());
        assert!(store.agent("writer").unwrap().is_none());
    }

    #[test]
    fn a_conversation_is_bound_by_choice_or_by_its_first_run() {
        let store = Store::open_in_memory(std::sync::Arc::new(aria_api::NoRedact)).unwrap();
        let chosen = store.create_conversation("chosen").unwrap();
        assert_eq!(store.conversation_agent(&chosen.id).unwrap(), None);
        assert!(store.set_conversation_agent(&chosen.id, "poet").unwrap());
        assert_eq!(store.conversation_agent(&chosen.id).unwrap().as_deref(), Some("poet"));
        assert!(!store.set_conversation_agent("no-such-conversation", "poet").unwrap());
        assert_eq!(store.conversation_agent("no-such-conversation").unwrap(), None);
    }

    #[test]
    fn an_unchosen_conversation_is_bound_by_the_agent_of_its_first_run() {
        use aria_api::{AuditEvent, Journal, Limits, NewSession};
        let store = Store::open_in_memory(std::sync::Arc::new(aria_api::NoRedact)).unwrap();
        let run = |conversation: Option<String>, agent: Option<&str>| {
            let new = NewSession {
                conversation_id: conversation,
                task: "t".into(),
                provider: "p".into(),
                model: "m".into(),
                limits: Limits::default(),
            };
            let session = store.create_session(&new).unwrap();
            let start = json!({"agent": agent});
            store
                .audit_append(AuditEvent::new(Some(&session.id), "user", "session.start", start))
                .unwrap();
            session
        };
        let first = run(None, Some("coder"));
        assert_eq!(store.session_agent(&first.id).unwrap().as_deref(), Some("coder"));
        // A later run as another agent does not rebind it.
        run(Some(first.conversation_id.clone()), None);
        assert_eq!(
            store.conversation_agent(&first.conversation_id).unwrap().as_deref(),
            Some("coder")
        );
        let plain = run(None, None);
        assert_eq!(store.session_agent(&plain.id).unwrap(), None);
        assert_eq!(
            store.conversation_agent(&plain.conversation_id).unwrap().as_deref(),
            Some("default")
        );
    }
}
