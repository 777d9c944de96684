//! `aria audit list|export|verify`.

use std::io::Write;

use aria_store::{AuditBundle, VerifyReport, render_text, verify_bundle};

use super::run::Context;
use crate::cli::{AuditCommand, ExportFormat, GlobalArgs};
use crate::exit::{CliError, CliResult, FAILED, OK, USAGE};

pub fn audit(global: &GlobalArgs, command: AuditCommand) -> CliResult<u8> {
    match command {
        AuditCommand::Verify { file: Some(path), .. } => verify_file(&path),
        AuditCommand::Verify { session_id, file: None } => {
            let ctx = Context::load(global)?;
            let report = ctx.store.verify(session_id.as_deref())?;
            if session_id.is_none()
                && report.is_ok()
                && let Err(problem) = crate::anchor::check(&ctx.config.data_dir, &ctx.store)
            {
                println!("FAILED: {problem}");
                eprintln!("{} records examined in the audit log", report.records);
                return Ok(FAILED);
            }
            Ok(print_report(&report, "the audit log"))
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
