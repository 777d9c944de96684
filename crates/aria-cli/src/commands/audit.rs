//! `aria audit list|export|verify|head`.

use std::io::Write;

use aria_store::{AuditBundle, VerifyReport, render_text, verify_bundle};

use super::run::Context;
use crate::anchor::Anchor;
use crate::cli::{AuditCommand, ExportFormat, GlobalArgs};
use crate::exit::{CliError, CliResult, FAILED, OK, USAGE};

pub fn audit(global: &GlobalArgs, command: AuditCommand) -> CliResult<u8> {
    match command {
        AuditCommand::Verify { file: Some(path), .. } => verify_file(&path),
        AuditCommand::Verify { session_id, file: None, expect_head } => {
            let ctx = Context::load(global)?;
            let session_id = ctx.resolve_opt(aria_store::IdKind::Session, session_id.as_deref())?;
            verify_store(&ctx, session_id.as_deref(), expect_head.as_ref())
        }
        AuditCommand::Head => {
            let ctx = Context::load(global)?;
            head(&ctx)
        }
        AuditCommand::List { last, json } => {
            let ctx = Context::load(global)?;
            let rows = ctx.store.audit_list(last)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&rows)?);
            } else {
                print!("{}", render_text(&rows));
            }
            Ok(OK)
        }
        AuditCommand::Export { session_id, format, output } => {
            let ctx = Context::load(global)?;
            let session_id = ctx.resolve(aria_store::IdKind::Session, &session_id)?;
            let bundle = ctx.store.export_session(&session_id)?;
            let text = match format {
                ExportFormat::Json => serde_json::to_string_pretty(&bundle)? + "\n",
                ExportFormat::Text => render_text(&bundle.records),
            };
            match output {
                Some(path) => std::fs::write(&path, text).map_err(|e| {
                    CliError::failed(anyhow::anyhow!("cannot write {}: {e}", path.display()))
                })?,
                None => std::io::stdout().write_all(text.as_bytes())?,
            }
            Ok(OK)
        }
    }
}

/// The database's chain, then (for the whole log) the anchor file beside it and the head the
/// user kept elsewhere, if given. Exit 1 names the first problem.
fn verify_store(ctx: &Context, session: Option<&str>, expected: Option<&Anchor>) -> CliResult<u8> {
    let report = ctx.store.verify(session)?;
    if !report.is_ok() {
        return Ok(print_report(&report, "the audit log"));
    }
    let mut problem = None;
    if let Some(expected) = expected {
        problem = crate::anchor::check_expected(&ctx.store, expected).err();
    }
    if session.is_none() && problem.is_none() {
        problem = crate::anchor::check(&ctx.config.data_dir, &ctx.store).err();
    }
    if let Some(problem) = problem {
        println!("FAILED: {problem}");
        eprintln!("{} records examined in the audit log", report.records);
        return Ok(FAILED);
    }
    let code = print_report(&report, "the audit log");
    if let Some(expected) = expected {
        println!("ok: record {} matches the expected head {expected}", expected.seq);
    }
    Ok(code)
}

/// `aria audit head`: the log is verified first, since a head taken from a log already cut
/// or rewritten would vouch for it.
fn head(ctx: &Context) -> CliResult<u8> {
    let report = ctx.store.verify(None)?;
    let anchored = crate::anchor::check(&ctx.config.data_dir, &ctx.store);
    if let Some(failure) = &report.first_failure {
        eprintln!(
            "error: record {} does not verify ({}); no head is printed for a log that fails `aria audit verify`",
            failure.seq, failure.reason
        );
        return Ok(FAILED);
    }
    if let Err(problem) = anchored {
        eprintln!("error: {problem}; no head is printed for a log that fails `aria audit verify`");
        return Ok(FAILED);
    }
    let head = crate::anchor::head(&ctx.store).map_err(|e| CliError::failed(anyhow::anyhow!(e)))?;
    match head {
        Some(head) => {
            println!("{head}");
            Ok(OK)
        }
        None => {
            eprintln!("error: the audit log is empty, so there is no head yet; run a task first");
            Ok(FAILED)
        }
    }
}

fn verify_file(path: &std::path::Path) -> CliResult<u8> {
    let text = std::fs::read_to_string(path).map_err(|e| CliError {
        code: USAGE,
        error: anyhow::anyhow!("cannot read {}: {e}", path.display()),
    })?;
    let bundle: AuditBundle = serde_json::from_str(&text).map_err(|e| CliError {
        code: FAILED,
        error: anyhow::anyhow!(
            "{} is not an ARIA audit bundle ({e}); create one with `aria audit export --session-id ID --format json`",
            path.display()
        ),
    })?;
    Ok(print_report(&verify_bundle(&bundle), &path.display().to_string()))
}

fn print_report(report: &VerifyReport, what: &str) -> u8 {
    if !report.triggers_intact {
        eprintln!(
            "warning: the audit log's append-only triggers are missing or changed; the database no longer refuses edits"
        );
    }
    match &report.first_failure {
        None => {
            println!("ok: {} records verified in {what}", report.records);
            OK
        }
        Some(failure) => {
            println!("FAILED: record {} does not verify: {}", failure.seq, failure.reason);
            eprintln!("{} records examined in {what}", report.records);
            FAILED
        }
    }
}
