//! `aria rollback ID [--path FILE]`: put a snapshot's files back and record the revert commit.

use aria_api::AuditEvent;
use aria_tools::snapshot::RestoredAction;
use serde_json::json;

use super::run::Context;
use super::snapshots::absolute;
use crate::app;
use crate::cli::{GlobalArgs, RollbackArgs};
use crate::exit::{CliError, CliResult, OK};

pub fn rollback(global: &GlobalArgs, args: RollbackArgs) -> CliResult<u8> {
    let ctx = Context::load(global)?;
    let snapshots = app::snapshots_everywhere(&ctx.config, &ctx.store, !global.roots.is_empty())?;
    let path = args.path.as_deref().map(absolute).transpose()?;
    let done =
        snapshots.rollback(&args.id, None, path.as_deref(), "user").map_err(CliError::failed)?;
    // A rollback changes files: it goes in the audit log like any other change.
    ctx.store.audit_append(AuditEvent::new(
        None,
        "user",
        "snapshot.rollback",
        json!({
            "snapshot": done.snapshot,
            "repository": done.repository,
            "path": path,
            "restored": done.restored,
            "revert_commit": done.revert_commit,
            "branch": done.branch,
        }),
    ))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&done)?);
        return Ok(OK);
    }
    if done.restored.is_empty() {
        println!(
            "nothing to restore: {} already matches {} ({})",
            path.map(|p| p.display().to_string())
                .unwrap_or_else(|| done.repository.display().to_string()),
            done.snapshot,
            done.operation
        );
        return Ok(OK);
    }
    println!(
        "rolled back to {} ({}) in {}:",
        done.snapshot,
        done.operation,
        done.repository.display()
    );
    for r in &done.restored {
        let verb = match r.action {
            RestoredAction::Written => "restored",
            RestoredAction::Deleted => "deleted ",
        };
        println!("  {verb}  {}", r.path);
    }
    if let (Some(commit), Some(branch)) = (&done.revert_commit, &done.branch) {
        // With the repository named: snapshot ids are unique per repository, and another root
        // may have one taken in the same second.
        println!(
            "revert commit {commit} on branch {branch} (your branch, HEAD and index are \
             unchanged); undo this rollback with `aria rollback {branch} --root {}`",
            shell_word(&done.repository.display().to_string())
        );
    }
    Ok(OK)
}

/// `text` as one shell word (quoted when it holds anything but plain path characters).
fn shell_word(text: &str) -> String {
    if !text.is_empty() && text.chars().all(|c| c.is_alphanumeric() || "/._-+=:,@".contains(c)) {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}
