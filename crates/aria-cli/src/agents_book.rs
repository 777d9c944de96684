//! Making, changing and removing agents, one set of rules for `aria agents
//! add|edit|remove`, the HTTP API and the web UI. Built-in agents and those of `aria.toml`
//! are read-only (edit the file); the others live in ARIA's database as `[agents.NAME]` would
//! say them, and are checked again whenever they are read. Every change is audited
//! (`agent.add`, `agent.edit`, `agent.remove`).

use std::sync::Arc;

use aria_api::AuditEvent;
use aria_gateway::{AgentBook, BookError};
use aria_store::{AgentWrite, Store};
use serde_json::{Value, json};

use crate::config::Config;
use crate::config::agents::{AgentProfile, AgentSource, RawAgent, builtin, from_raw, to_raw};

fn store_error(e: impl std::fmt::Display) -> BookError {
    BookError::Internal(e.to_string())
}

/// Refuses to change `name` when it is built in or defined in `aria.toml`.
fn writable(config: &Config, name: &str) -> Result<(), BookError> {
    if builtin().iter().any(|a| a.name == name) {
        return Err(BookError::Conflict(format!(
            "{name} is a built-in agent and cannot be changed; make your own (aria agents add)"
        )));
    }
    if config.agents.iter().any(|a| a.name == name) {
        return Err(BookError::Conflict(format!(
            "{name} is defined in aria.toml ([agents.{name}]); edit the file to change it"
        )));
    }
    Ok(())
}

/// The stored agent `name` as its fields, to be changed.
pub fn editable(config: &Config, store: &Store, name: &str) -> Result<RawAgent, BookError> {
    writable(config, name)?;
    let stored = store.agent(name).map_err(store_error)?.ok_or_else(|| {
        BookError::NotFound(format!("no agent named {name} (aria agents list shows them)"))
    })?;
    serde_json::from_value(stored.profile)
        .map_err(|e| BookError::Internal(format!("the stored agent {name}: {e}")))
}

/// Checks and writes `raw` as the agent `name`.
pub fn save(
    config: &Config,
    store: &Store,
    name: &str,
    raw: RawAgent,
    how: AgentWrite,
) -> Result<AgentProfile, BookError> {
    writable(config, name)?;
    // The checks of `[agents.NAME]`, said of an agent that is not in aria.toml.
    let profile = from_raw(name, raw, AgentSource::Store).map_err(|e| {
        BookError::Invalid(
            e.to_string()
                .replace("invalid configuration: ", "")
                .replace(&format!("[agents.{name}] "), &format!("agent {name}: ")),
        )
    })?;
    // A persona must be there to be used: named now rather than at the agent's first run.
    if let Some(persona) = &profile.persona {
        crate::persona::load(&config.data_dir, persona)
            .map_err(|e| BookError::Invalid(format!("persona: {:#}", e.error)))?;
    }
    let value = serde_json::to_value(to_raw(&profile)).map_err(store_error)?;
    if !store.agent_put(name, &value, how).map_err(store_error)? {
        return Err(match how {
            AgentWrite::Create => BookError::Conflict(format!(
                "there is an agent named {name} already; change it with aria agents edit {name}"
            )),
            AgentWrite::Replace => BookError::NotFound(format!("no agent named {name}")),
        });
    }
    let kind = match how {
        AgentWrite::Create => "agent.add",
        AgentWrite::Replace => "agent.edit",
    };
    store
        .audit_append(AuditEvent::new(None, "user", kind, json!({"name": name, "profile": value})))
        .map_err(store_error)?;
    Ok(profile)
}

/// Removes the stored agent `name`.
pub fn remove(config: &Config, store: &Store, name: &str) -> Result<(), BookError> {
    writable(config, name)?;
    if !store.agent_remove(name).map_err(store_error)? {
        return Err(BookError::NotFound(format!(
            "no agent named {name} (aria agents list shows them)"
        )));
    }
    store
        .audit_append(AuditEvent::new(None, "user", "agent.remove", json!({"name": name})))
        .map_err(store_error)?;
    Ok(())
}

/// `patch`'s fields over `raw`'s (`null` clears one); an unknown field is refused by name.
pub fn merge(raw: &RawAgent, patch: Value) -> Result<RawAgent, BookError> {
    let Value::Object(patch) = patch else {
        return Err(BookError::Invalid("the body must be a JSON object of fields".into()));
    };
    let mut value = serde_json::to_value(raw).map_err(store_error)?;
    for (field, new) in patch {
        value[field] = new;
    }
    serde_json::from_value(value).map_err(|e| BookError::Invalid(e.to_string()))
}

/// The profile as the API and `aria agents list --json` show it.
fn shown(profile: &AgentProfile) -> Value {
    serde_json::to_value(profile).unwrap_or_default()
}

/// The agents of `aria serve`'s API, over the daemon's configuration and store.
pub struct Book {
    pub config: Config,
    pub store: Arc<Store>,
}

impl AgentBook for Book {
    fn list(&self) -> Result<Vec<Value>, BookError> {
        let all = crate::agents::all(&self.config, Some(&self.store))
            .map_err(|e| store_error(e.error))?;
        Ok(all.iter().map(shown).collect())
    }

    fn get(&self, name: &str) -> Result<Value, BookError> {
        let all = crate::agents::all(&self.config, Some(&self.store))
            .map_err(|e| store_error(e.error))?;
        all.iter().find(|a| a.name == name).map(shown).ok_or_else(|| {
            BookError::NotFound(format!("no agent named {name} (GET /api/v1/agents lists them)"))
        })
    }

    fn create(&self, body: Value) -> Result<Value, BookError> {
        let mut body = body;
        if let Some(o) = body.as_object_mut() {
            o.remove("source");
        }
        let name = match body.as_object_mut().and_then(|o| o.remove("name")) {
            Some(Value::String(name)) => name,
            _ => return Err(BookError::Invalid("name: give the agent a name (a string)".into())),
        };
        let raw = merge(&RawAgent::default(), body)?;
        save(&self.config, &self.store, &name, raw, AgentWrite::Create).map(|p| shown(&p))
    }

    fn update(&self, name: &str, patch: Value) -> Result<Value, BookError> {
        if patch.get("name").is_some_and(|n| n != name) {
            return Err(BookError::Invalid(
                "name: an agent cannot be renamed; make a new one and remove this".into(),
            ));
        }
        let mut patch = patch;
        if let Some(o) = patch.as_object_mut() {
            o.remove("name");
            o.remove("source");
        }
        let raw = merge(&editable(&self.config, &self.store, name)?, patch)?;
        save(&self.config, &self.store, name, raw, AgentWrite::Replace).map(|p| shown(&p))
    }

    fn remove(&self, name: &str) -> Result<(), BookError> {
        remove(&self.config, &self.store, name)
    }
}
