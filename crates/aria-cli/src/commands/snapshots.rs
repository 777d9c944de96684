//! `aria snapshots list|prune`: the restore points ARIA took before its writes.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use aria_tools::{Snapshot, Snapshots};
use serde::Serialize;

use crate::app;
use crate::cli::{GlobalArgs, SnapshotsCommand};
use crate::exit::{CliError, CliResult, OK};

pub fn snapshots(global: &GlobalArgs, command: SnapshotsCommand) -> CliResult<u8> {
    let ctx = super::run::Context::load(global)?;
    let config = &ctx.config;
    let snapshots = app::snapshots_everywhere(config, &ctx.store, !global.roots.is_empty())?;
    match command {
        SnapshotsCommand::List { path, json } => list(&snapshots, path.as_deref(), json),
        SnapshotsCommand::Prune => {
            let deleted = snapshots.prune(SystemTime::now()).map_err(CliError::failed)?;
            for id in &deleted {
                println!("deleted {id}");
            }
            println!(
                "{} snapshot branch(es) older than {} days deleted",
                deleted.len(),
                config.snapshots.prune_after_days
            );
            Ok(OK)
        }
    }
}

/// One restore point as `--json` prints it.
#[derive(Debug, Serialize)]
struct Row<'a> {
    id: &'a str,
    time: String,
    unix_time: i64,
    operation: &'a str,
    session: &'a str,
    repository: &'a Path,
    commit: &'a str,
    files_changed: &'a [String],
    targets: &'a [String],
}

fn row(s: &Snapshot) -> Row<'_> {
    Row {
        id: &s.id.0,
        time: s.time_rfc3339(),
        unix_time: s.time,
        operation: &s.operation,
        session: &s.session,
        repository: &s.repository,
        commit: &s.commit,
        files_changed: &s.files_changed,
        targets: &s.targets,
    }
}

fn list(snapshots: &Snapshots, path: Option<&Path>, json: bool) -> CliResult<u8> {
    let path = path.map(absolute).transpose()?;
    let all = snapshots.list(None, path.as_deref()).map_err(CliError::failed)?;
    if json {
        let rows: Vec<Row<'_>> = all.iter().map(row).collect();
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(OK);
    }
    if all.is_empty() {
        let roots: Vec<String> =
            snapshots.guard().roots().iter().map(|r| r.display().to_string()).collect();
        println!(
            "no restore points{} under {}; ARIA takes one before every write it makes",
            path.map(|p| format!(" for {}", p.display())).unwrap_or_default(),
            roots.join(", ")
        );
        return Ok(OK);
    }
    for s in &all {
        let session = if s.session.is_empty() { "-" } else { s.session.as_str() };
        let touched = if s.targets.is_empty() {
            String::new()
        } else {
            format!("  writes {}", s.targets.join(", "))
        };
        println!(
            "{}  {}  {}  session {}  {} file(s) changed vs HEAD  in {}{}",
            s.id,
            s.time_rfc3339(),
            s.operation,
            session,
            s.files_changed.len(),
            s.repository.display(),
            touched
        );
    }
    println!("restore one with `aria rollback ID` (add --path FILE for a single file)");
    Ok(OK)
}

/// A path from the command line, relative to the current directory.
pub fn absolute(p: &Path) -> CliResult<PathBuf> {
    std::path::absolute(p)
        .map_err(|e| CliError::config(anyhow::anyhow!("cannot make {} absolute: {e}", p.display())))
}
