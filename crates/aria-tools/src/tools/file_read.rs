//! `file_read {path}`: returns a text file's contents.

use std::sync::Arc;

use aria_api::{Tier, Tool, ToolContext, ToolError, ToolFuture, ToolOutput, ToolSpec};
use serde_json::{Value, json};

use crate::guard::path::PathGuard;
use crate::guard::read::{DEFAULT_MAX_READ_BYTES, ReadError};
use crate::tools::{blocking, path_arg, path_error_naming, roots_sentence};

/// Reads one UTF-8 text file inside the roots. Tier: read.
#[derive(Debug)]
pub struct FileRead {
    guard: Arc<PathGuard>,
    max_bytes: u64,
    spec: ToolSpec,
}

impl FileRead {
    /// The tool's name: a public contract.
    pub const NAME: &'static str = "file_read";

    pub fn new(guard: Arc<PathGuard>) -> Self {
        let spec = spec(&guard, DEFAULT_MAX_READ_BYTES);
        FileRead { guard, max_bytes: DEFAULT_MAX_READ_BYTES, spec }
    }

    /// Changes the size limit (default [`DEFAULT_MAX_READ_BYTES`]).
    pub fn with_max_bytes(mut self, max_bytes: u64) -> Self {
        self.max_bytes = max_bytes;
        self.spec = spec(&self.guard, max_bytes);
        self
    }
}

fn spec(guard: &PathGuard, max_bytes: u64) -> ToolSpec {
    ToolSpec {
        name: FileRead::NAME.to_owned(),
        description: format!(
            "Read a UTF-8 text file and return its contents. The file must be inside {}. \
             Secrets files (.env, keys, .ssh, credentials), binary files and files over {} are \
             refused. Use file_list to find files.",
            roots_sentence(guard),
            human_size(max_bytes)
        ),
        parameters: json!({
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "File path, relative to the first root or absolute inside a root."
                }
            },
            "required": ["path"],
            "additionalProperties": false
        }),
    }
}

pub(crate) fn human_size(bytes: u64) -> String {
    const MIB: u64 = 1024 * 1024;
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MB", bytes / MIB)
    } else {
        format!("{bytes} bytes")
    }
}

fn read_error(err: ReadError) -> ToolError {
    match err {
        ReadError::IsADirectory { path } => ToolError::failed(format!(
            "{} is a directory; use file_list to see its entries",
            path.display()
        )),
        e if e.is_refusal() => ToolError::refused(e.to_string()),
        e => ToolError::failed(format!("{e}. Use file_list to see which files exist.")),
    }
}

impl Tool for FileRead {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn tier(&self, _args: &Value) -> Tier {
        Tier::Read
    }

    /// Reads have no side effects, so a dry run reads too.
    fn call<'a>(&'a self, args: Value, _ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let input = path_arg(FileRead::NAME, &args)?;
            let guard = Arc::clone(&self.guard);
            let max = self.max_bytes;
            let (resolved, text) = blocking(FileRead::NAME, move || {
                let resolved = guard.resolve_existing(&input).map_err(|e| {
                    path_error_naming(&guard, e, "Use file_list to see which files exist.")
                })?;
                let text = guard.read_text(&resolved, max).map_err(read_error)?;
                Ok((resolved, text))
            })
            .await?;
            tracing::debug!(tool = FileRead::NAME, path = %resolved, bytes = text.len(), "read");
            let details = json!({
                "path": resolved.path().to_string_lossy(),
                "bytes": text.len(),
            });
            // A JSON file's lists, counted, after its text.
            let json = resolved.path().extension().is_some_and(|e| e.eq_ignore_ascii_case("json"));
            let summary = json.then(|| super::json_summary::summary(&text)).flatten();
            let text = match summary {
                Some(summary) => format!("{text}\n\n{summary}"),
                None => text,
            };
            Ok(ToolOutput::text(text).with_details(details))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_well() {
        assert_eq!(human_size(DEFAULT_MAX_READ_BYTES), "10 MB");
        assert_eq!(human_size(3), "3 bytes");
    }

    #[test]
    fn the_description_states_the_limit_in_force() {
        let dir = tempfile::tempdir().unwrap();
        let guard = Arc::new(
            PathGuard::new(&[dir.path().to_path_buf()], crate::SensitivePatterns::default())
                .unwrap(),
        );
        let tool = FileRead::new(guard).with_max_bytes(2 * 1024 * 1024);
        assert!(tool.spec().description.contains("over 2 MB"), "{}", tool.spec().description);
    }
}
