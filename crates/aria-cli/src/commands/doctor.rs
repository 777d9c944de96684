//! `aria doctor`: what this machine and configuration actually give ARIA, and what they do not.
//!
//! It never pretends: a protection the kernel cannot enforce is listed as NOT ENFORCED with the
//! reason, and the same report is what every `shell_execute` call records in the audit log.

use aria_sandbox::{Protections, Sandbox};
use serde_json::json;

use crate::app;
use crate::cli::{DoctorArgs, GlobalArgs};
use crate::config::{Config, EmbedderConfig, LOCAL_PROVIDER};
use crate::exit::{CliResult, FAILED, OK};

/// One line of the report.
struct Finding {
    area: &'static str,
    ok: bool,
    detail: String,
}

pub fn doctor(global: &GlobalArgs, args: DoctorArgs) -> CliResult<u8> {
    let config = app::load_config(global)?;
    let mut findings = Vec::new();
    check_data_dir(&config, &mut findings);
    check_roots(&config, &mut findings);
    check_model(&config, &mut findings);
    check_memory(&config, &mut findings);
    check_notes(&config, &mut findings);
    check_daemon(&config, &mut findings);
    findings.push(Finding {
        area: "outside text",
        ok: true,
        detail: "once text from files, commands, the web, MCP or plugins enters a run, \
                 pre-approvals stop covering irreversible calls, memories the model stores wait \
                 for your confirmation, and MCP/plugin tool descriptions are filtered like tool \
                 output"
            .to_owned(),
    });
    // What a child started by `shell_execute` gets on this kernel (no network is granted).
    let protections = Sandbox::planned_protections(false);
    // What a program granted the network (a profile, plugin tool or MCP server) gets instead.
    let granted = Sandbox::planned_protections(true).get("network").cloned();
    let problems = findings.iter().filter(|f| !f.ok).count();
    let unenforced: Vec<&str> =
        protections.items.iter().filter(|p| !p.active).map(|p| p.name).collect();
    if args.json {
        let out = json!({
            "version": env!("CARGO_PKG_VERSION"),
            "checks": findings.iter().map(|f| json!({"area": f.area, "ok": f.ok, "detail": f.detail})).collect::<Vec<_>>(),
            "sandbox": protections,
            "network_grant": granted,
            "unenforced": unenforced,
            "problems": problems,
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        print_text(&findings, &protections, &unenforced);
        if let Some(g) = granted {
            let mark = if g.active { "on " } else { "off" };
            println!("a program granted the network (profiles, plugins, MCP servers):");
            println!("[{mark}] {}: {}", g.name, g.detail);
        }
    }
    Ok(if problems == 0 { OK } else { FAILED })
}

fn print_text(findings: &[Finding], protections: &Protections, unenforced: &[&str]) {
    println!("aria {}", env!("CARGO_PKG_VERSION"));
    for f in findings {
        let mark = if f.ok { "ok " } else { "BAD" };
        println!("[{mark}] {}: {}", f.area, f.detail);
    }
    println!("\nsandbox for commands (shell_execute), on this kernel:");
    print!("{protections}");
    if unenforced.is_empty() {
        println!("\nevery protection above is active on this machine (each line says its limits)");
    } else if unenforced.contains(&"namespaces") {
        println!(
            "\nNOT enforced here: {}. Without namespaces ARIA runs no program at all (shell, \
             Python, profiles) until this is fixed: see the namespaces line above.",
            unenforced.join(", ")
        );
    } else {
        println!(
            "\nNOT enforced here: {}. ARIA still runs commands, and records in the audit log \
             which protections each one had.",
            unenforced.join(", ")
        );
    }
}

fn check_notes(config: &Config, out: &mut Vec<Finding>) {
    let notes = crate::notes::project_notes(config, app::redactor(config).as_ref());
    let detail = if notes.is_empty() {
        format!(
            "none: {} at the top of a root is given to the model as project notes",
            crate::notes::NOTE_FILES.join(" or ")
        )
    } else {
        notes
            .iter()
            .map(|n| {
                let flagged = if n.flagged > 0 {
                    format!(", {} line(s) marked as possible prompt injection", n.flagged)
                } else {
                    String::new()
                };
                let cap = crate::notes::MAX_NOTE_BYTES as u64;
                let cut =
                    if n.bytes > cap { format!(", cut at {cap} bytes") } else { String::new() };
                format!("{} ({} bytes{cut}{flagged})", n.path.display(), n.bytes)
            })
            .collect::<Vec<_>>()
            .join("; ")
    };
    out.push(Finding { area: "project notes", ok: true, detail });
}

/// Who may drive `aria serve`: the credential every request needs, and whether its token file
/// is private.
fn check_daemon(config: &Config, out: &mut Vec<Finding>) {
    use std::os::unix::fs::PermissionsExt;
    let path = super::serve::token_path(&config.data_dir);
    let (ok, detail) = match config.server.auth {
        crate::config::ServerAuth::None => (
            true,
            "aria serve asks for NO credentials ([server] auth = \"none\", with --insecure): \
             anything that reaches its port, other accounts included, can use ARIA"
                .to_owned(),
        ),
        crate::config::ServerAuth::Token => match std::fs::metadata(&path) {
            Ok(m) if m.permissions().mode() & 0o077 != 0 => (
                false,
                format!(
                    "the daemon's token {} is readable by other accounts (mode {:o}): chmod 600 \
                     it, or make a new one with `aria serve --new-token`",
                    path.display(),
                    m.permissions().mode() & 0o777
                ),
            ),
            Ok(_) => (
                true,
                format!(
                    "aria serve needs a credential on every request, loopback included: its \
                     token {} (0600), scoped tokens (aria tokens), or a web login link (aria ui)",
                    path.display()
                ),
            ),
            Err(_) => (
                true,
                format!(
                    "aria serve needs a credential on every request, loopback included; it makes \
                     its token {} (0600) on its first start",
                    path.display()
                ),
            ),
        },
    };
    out.push(Finding { area: "daemon", ok, detail });
}

fn check_memory(config: &Config, out: &mut Vec<Finding>) {
    let detail = if !config.memory.extract {
        "facts and preferences are not extracted ([memory] extract = false)".to_owned()
    } else if app::skips_extraction(config, false) {
        "facts and preferences are not extracted after each turn with the embedded model (a \
         second generation would cost both cores for 30-60 s and small models restate their own \
         guesses); what you ask ARIA to remember is still kept, and with a model server every \
         turn is extracted"
            .to_owned()
    } else {
        format!(
            "facts and preferences are extracted after each turn (a one-shot command waits at \
             most {} s for it after printing the answer, and drops an extraction that takes \
             longer; interactive chat keeps every one)",
            super::run::BACKGROUND_GRACE.as_secs()
        )
    };
    out.push(Finding { area: "memory", ok: true, detail });
    check_privacy(config, out);
}

/// Where private memories may go: to the model and the embedder only when they run on this
/// machine, judged by address (the rule every run applies).
fn check_privacy(config: &Config, out: &mut Vec<Finding>) {
    // Every route of the chain must run here (a fallback may answer); the embedded model is
    // not loaded for this.
    let mut remote = None;
    for (name, model, _) in crate::providers::chain(config) {
        if name == LOCAL_PROVIDER {
            continue;
        }
        let why = match crate::providers::backend(config, &name, &model) {
            Ok(backend) => backend.remote_because(),
            Err(e) => Some(format!("it cannot be built: {:#}", e.error)),
        };
        if let Some(why) = why {
            remote = Some(format!("the `{name}` backend is not on this machine ({why})"));
            break;
        }
    }
    let model = match remote {
        None => "recalled for the model, which runs on this machine".to_owned(),
        Some(why) => format!("never sent to the model: {why}"),
    };
    let resolver = aria_models::SystemResolver;
    let embedder = match &config.memory.embedder {
        EmbedderConfig::None => "no embedder: every memory is found by its words".to_owned(),
        EmbedderConfig::Local { .. } => "embedded by the embedded model, on this machine".into(),
        EmbedderConfig::Ollama { base_url, .. } | EmbedderConfig::OpenAi { base_url, .. } => {
            match aria_models::locality::judge(base_url, &resolver) {
                aria_models::Locality::Local { .. } => {
                    format!("embedded by {base_url}, which runs on this machine")
                }
                aria_models::Locality::Remote { why } => format!(
                    "not embedded by {base_url}, which is not on this machine ({why}): they are \
                     found by their words only (BM25)"
                ),
            }
        }
    };
    out.push(Finding {
        area: "private memories",
        ok: true,
        detail: format!("{model}; {embedder}"),
    });
}

fn check_data_dir(config: &Config, out: &mut Vec<Finding>) {
    let dir = &config.data_dir;
    let detail = match std::fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => {
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                let mode = meta.permissions().mode() & 0o777;
                if mode & 0o077 != 0 {
                    out.push(Finding {
                        area: "data",
                        ok: false,
                        detail: format!(
                            "{} is readable by other users (mode {mode:o}); run `chmod 700 {}`",
                            dir.display(),
                            dir.display()
                        ),
                    });
                    return;
                }
            }
            format!("{} (database {})", dir.display(), app::db_path(config).display())
        }
        Ok(_) => {
            out.push(Finding {
                area: "data",
                ok: false,
                detail: format!("{} exists but is not a directory; set ARIA_HOME", dir.display()),
            });
            return;
        }
        Err(_) => {
            format!("{} (not created yet; the first run creates it, mode 0700)", dir.display())
        }
    };
    out.push(Finding { area: "data", ok: true, detail });
}

fn check_roots(config: &Config, out: &mut Vec<Finding>) {
    for root in &config.roots {
        let ok = root.is_dir();
        let detail = if ok {
            format!("{} (files and commands are confined here)", root.display())
        } else {
            format!(
                "{} does not exist or is not a directory; create it or fix --root / [scope] roots",
                root.display()
            )
        };
        out.push(Finding { area: "root", ok, detail });
    }
    if let Err(e) = app::path_guard(config) {
        out.push(Finding { area: "root", ok: false, detail: e.error.to_string() });
    }
}

fn check_model(config: &Config, out: &mut Vec<Finding>) {
    let p = &config.provider;
    if p.name == LOCAL_PROVIDER {
        let installed = match app::local_model_note(config) {
            None => format!("It is installed in {}", p.models_dir.display()),
            Some(note) => {
                let mut chars = note.chars();
                chars.next().map_or(note.clone(), |c| c.to_uppercase().chain(chars).collect())
            }
        };
        #[cfg(feature = "local")]
        let detail = {
            let (model, why) = crate::default_model::explain(config);
            format!("a plain `aria chat` uses the embedded model `{model}`, {why}. {installed}")
        };
        #[cfg(not(feature = "local"))]
        let detail = installed;
        // A model that is not pulled yet is fetched by the first chat: not a problem.
        out.push(Finding { area: "model", ok: true, detail });
        return;
    }
    out.push(Finding {
        area: "model",
        ok: true,
        detail: format!(
            "`{}` through the `{}` backend; `aria models test` checks that it answers",
            p.model, p.name
        ),
    });
}
