//! The tools one agent may call, each with its argument schema compiled once.

use std::collections::BTreeMap;
use std::sync::Arc;

use aria_api::{Tool, ToolSpec};
use serde_json::Value;

/// Why a tool registry could not be built. A bad schema is a programming or plugin error and is
/// caught at start-up, never in the middle of a run.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("two tools are named `{0}`; tool names must be unique")]
    Duplicate(String),
    #[error("tool `{name}` has an invalid argument schema: {message}")]
    BadSchema { name: String, message: String },
}

/// Why the model's call cannot run. The text goes back to the model so it can correct itself.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    #[error("there is no tool named `{name}`; available tools: {available}")]
    UnknownTool { name: String, available: String },
    #[error(
        "the arguments for `{name}` are not valid JSON ({message}); send a JSON object matching the tool's schema"
    )]
    NotJson { name: String, message: String },
    #[error("the arguments for `{name}` do not match its schema: {problems}")]
    Schema { name: String, problems: String },
}

struct Entry {
    tool: Arc<dyn Tool>,
    validator: jsonschema::Validator,
}

/// Tools by name, in a stable order.
pub struct ToolRegistry {
    entries: BTreeMap<String, Entry>,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRegistry")
            .field("tools", &self.entries.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl ToolRegistry {
    pub fn new(tools: Vec<Arc<dyn Tool>>) -> Result<Self, RegistryError> {
        let mut entries = BTreeMap::new();
        for tool in tools {
            let spec = tool.spec();
            let validator = jsonschema::validator_for(&spec.parameters).map_err(|e| {
                RegistryError::BadSchema { name: spec.name.clone(), message: e.to_string() }
            })?;
            let name = spec.name.clone();
            if entries.insert(name.clone(), Entry { tool, validator }).is_some() {
                return Err(RegistryError::Duplicate(name));
            }
        }
        Ok(ToolRegistry { entries })
    }

    pub fn specs(&self) -> Vec<ToolSpec> {
        self.entries.values().map(|e| e.tool.spec().clone()).collect()
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.entries.get(name).map(|e| &e.tool)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Parses and validates the raw arguments of one call. Empty arguments count as `{}`:
    /// several servers send nothing for a tool without parameters.
    pub fn validate(&self, name: &str, raw: &str) -> Result<(Arc<dyn Tool>, Value), CallError> {
        let Some(entry) = self.entries.get(name) else {
            let available = self.entries.keys().cloned().collect::<Vec<_>>().join(", ");
            return Err(CallError::UnknownTool { name: name.to_owned(), available });
        };
        let raw = if raw.trim().is_empty() { "{}" } else { raw };
        let args: Value = serde_json::from_str(raw)
            .map_err(|e| CallError::NotJson { name: name.to_owned(), message: e.to_string() })?;
        let problems: Vec<String> = entry
            .validator
            .iter_errors(&args)
            .take(5)
            .map(|e| {
                let at = e.instance_path().to_string();
                if at.is_empty() { e.to_string() } else { format!("at {at}: {e}") }
            })
            .collect();
        if problems.is_empty() {
            Ok((Arc::clone(&entry.tool), args))
        } else {
            Err(CallError::Schema { name: name.to_owned(), problems: problems.join("; ") })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aria_api::{ToolContext, ToolFuture, ToolOutput};
    use serde_json::json;

    #[derive(Debug)]
    struct Echo(ToolSpec);
    impl Tool for Echo {
        fn spec(&self) -> &ToolSpec {
            &self.0
        }
        fn call<'a>(&'a self, args: Value, _ctx: &'a ToolContext) -> ToolFuture<'a> {
            Box::pin(async move { Ok(ToolOutput::text(args.to_string())) })
        }
    }

    fn echo(name: &str, parameters: Value) -> Arc<dyn Tool> {
        Arc::new(Echo(ToolSpec { name: name.into(), description: String::new(), parameters }))
    }

    fn registry() -> ToolRegistry {
        let schema = json!({
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
            "additionalProperties": false
        });
        ToolRegistry::new(vec![echo("file_read", schema), echo("noop", json!({"type": "object"}))])
            .unwrap()
    }

    #[test]
    fn valid_arguments_pass() {
        let (_, args) = registry().validate("file_read", r#"{"path":"a.txt"}"#).unwrap();
        assert_eq!(args, json!({"path": "a.txt"}));
        let (_, args) = registry().validate("noop", "").unwrap();
        assert_eq!(args, json!({}));
    }

    #[test]
    fn each_kind_of_bad_call_is_named() {
        let r = registry();
        assert!(matches!(r.validate("rm", "{}"), Err(CallError::UnknownTool { .. })));
        let msg = r.validate("rm", "{}").unwrap_err().to_string();
        assert!(msg.contains("file_read, noop"), "{msg}");
        assert!(matches!(r.validate("file_read", "{path:"), Err(CallError::NotJson { .. })));
        let err = r.validate("file_read", r#"{"path": 3}"#).unwrap_err();
        assert!(matches!(err, CallError::Schema { .. }));
        assert!(err.to_string().contains("/path"), "{err}");
        let err = r.validate("file_read", r#"{"path": "a", "mode": "w"}"#).unwrap_err();
        assert!(err.to_string().contains("mode"), "{err}");
        assert!(matches!(r.validate("file_read", "{}"), Err(CallError::Schema { .. })));
        assert!(matches!(r.validate("file_read", "[1]"), Err(CallError::Schema { .. })));
    }

    #[test]
    fn duplicates_and_bad_schemas_are_rejected_at_build_time() {
        let dup = ToolRegistry::new(vec![echo("a", json!({})), echo("a", json!({}))]);
        assert!(matches!(dup, Err(RegistryError::Duplicate(n)) if n == "a"));
        let bad = ToolRegistry::new(vec![echo("b", json!({"type": "no-such-type"}))]);
        assert!(matches!(bad, Err(RegistryError::BadSchema { .. })));
    }
}
