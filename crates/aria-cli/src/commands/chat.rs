//! `aria chat`: one message, or a line-editing conversation. Each message is one session of
//! the same conversation; Ctrl-C during an answer cancels that answer, at the prompt it quits.

use std::future::Future;
use std::io::{BufRead, IsTerminal, Write};
use std::pin::Pin;
use std::sync::Arc;

use aria_core::{ApprovalAnswer, ApprovalRequest, Approver};
use aria_gateway::choices::{Choice, Chooser};
use futures::future::BoxFuture;
use rustyline::error::ReadlineError;
use tokio_util::sync::CancellationToken;

use super::run::{Context, cancel_on_ctrl_c, runtime};
use crate::app;
use crate::cli::{ChatArgs, GlobalArgs};
use crate::exit::{CliError, CliResult, OK};

/// Asks on the terminal, showing exactly what would run.
struct TerminalApprover;

impl Approver for TerminalApprover {
    fn ask(&self, request: ApprovalRequest) -> BoxFuture<'static, ApprovalAnswer> {
        Box::pin(async move {
            let question = terminal_question(&request);
            let answer = ask_line(question).await;
            match answer.trim().to_ascii_lowercase().as_str() {
                "y" | "yes" => ApprovalAnswer::Once,
                "s" | "session" => ApprovalAnswer::Session,
                _ => ApprovalAnswer::Deny,
            }
        })
    }
}

/// The approval question as the terminal shows it: the whole arguments, never shortened, with
/// every hidden character (bidi controls, zero-width characters, escape sequences) shown as its
/// code point ([`aria_api::approval_arguments`], the same text every channel shows).
fn terminal_question(request: &ApprovalRequest) -> String {
    // Several lines (what `schedule_create` will do) stay under the question.
    let why = request
        .reason
        .as_deref()
        .map(|r| format!("\n    why: {}", aria_api::escape_hidden(r).replace('\n', "\n         ")))
        .unwrap_or_default();
    let arguments = aria_api::approval_arguments(&request.arguments).replace('\n', "\n    ");
    format!(
        "\nARIA wants to run `{}` ({}):\n    {arguments}{why}\nAllow? [y] once, [s] for this session, [N] no (60 s): ",
        aria_api::escape_hidden(&request.tool),
        request.tier.as_str(),
    )
}

/// Shows `prompt` on the terminal and reads one line (empty when there is none). The
/// progress line stays off the screen while the question is asked.
async fn ask_line(prompt: String) -> String {
    tokio::task::spawn_blocking(move || {
        let _hold = crate::progress::hold();
        eprint!("{prompt}");
        let _ = std::io::stderr().flush();
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line).ok()?;
        Some(line)
    })
    .await
    .ok()
    .flatten()
    .unwrap_or_default()
}

/// Puts `ask_user` questions on the terminal with numbered options.
#[derive(Debug)]
struct TerminalChooser;

impl Chooser for TerminalChooser {
    fn choose<'a>(
        &'a self,
        _session_id: &'a str,
        question: &'a str,
        options: &'a [String],
    ) -> Pin<Box<dyn Future<Output = Choice> + Send + 'a>> {
        let numbered: String =
            options.iter().enumerate().map(|(n, o)| format!("\n    [{}] {o}", n + 1)).collect();
        let prompt = format!(
            "\nARIA asks: {question}{numbered}\nYour choice (a number; Enter to decide later): "
        );
        let options = options.to_vec();
        Box::pin(async move {
            let line = ask_line(prompt).await;
            pick(&options, &line).map_or(Choice::Postponed, Choice::Chosen)
        })
    }
}

/// The option an answer typed on the terminal names: its number, or its text.
fn pick(options: &[String], line: &str) -> Option<String> {
    let line = line.trim();
    let by_number = line.parse::<usize>().ok().and_then(|n| options.get(n.checked_sub(1)?));
    by_number.or_else(|| options.iter().find(|o| o.eq_ignore_ascii_case(line))).cloned()
}

pub fn chat(global: &GlobalArgs, mut args: ChatArgs) -> CliResult<u8> {
    let mut ctx = Context::load(global)?;
    ctx.report_interrupted();
    args.conversation =
        ctx.resolve_opt(aria_store::IdKind::Conversation, args.conversation.as_deref())?;
    let agent =
        crate::agents::choose(&ctx.store, args.agent.as_deref(), args.conversation.as_deref())?;
    if let Some(name) = &agent {
        ctx.config = crate::agents::configure(global, ctx.config, &ctx.store, name)?;
    }
    let approver: Option<Arc<dyn Approver>> =
        std::io::stdin().is_terminal().then(|| Arc::new(TerminalApprover) as Arc<dyn Approver>);
    // Kept here for as long as the agent runs: `ask_user` holds it weakly.
    let chooser: Option<Arc<dyn Chooser>> =
        std::io::stdin().is_terminal().then(|| Arc::new(TerminalChooser) as Arc<dyn Chooser>);
    let one_shot = args.message.is_some();
    app::require_work_root(&ctx.config)?;
    app::settle_local_model(&mut ctx.config)?;
    let agent = app::agent_asking(
        &ctx.config,
        ctx.store.clone(),
        ctx.redactor.clone(),
        approver,
        one_shot,
        chooser.as_ref(),
    )?;
    let rt = runtime()?;
    let extras = crate::planned::Extras::load(&ctx.config)?;
    if let Some(message) = args.message {
        let finished = rt.block_on(async {
            let cancel = CancellationToken::new();
            cancel_on_ctrl_c(cancel.clone());
            crate::planned::turn(
                &agent,
                &extras,
                &ctx.config.data_dir,
                &message,
                args.conversation,
                cancel,
            )
            .await
        });
        crate::anchor::record(&ctx.config.data_dir, &ctx.store);
        let (turn, styled) = finished?;
        crate::planned::show(&turn, styled.as_deref());
        super::run::finish_background(&rt, &agent);
        super::run::export_traces(&rt, &ctx.store);
        crate::retention::after_run(ctx.config.traces, &ctx.store);
        return Ok(match &turn {
            crate::planned::Turn::Run(d) => super::run::exit_code_with(d.session.state, &d.denied),
            crate::planned::Turn::Plan(outcome) => crate::planned::exit_code(outcome),
        });
    }
    let code = repl(&ctx, &agent, &extras, &rt, args.conversation);
    super::run::finish_background(&rt, &agent);
    super::run::export_traces(&rt, &ctx.store);
    crate::retention::after_run(ctx.config.traces, &ctx.store);
    code
}

fn repl(
    ctx: &Context,
    agent: &aria_core::Agent,
    extras: &crate::planned::Extras,
    rt: &tokio::runtime::Runtime,
    mut conversation: Option<String>,
) -> CliResult<u8> {
    let mut editor = rustyline::DefaultEditor::new().map_err(CliError::failed)?;
    let history = ctx.config.data_dir.join("chat_history.txt");
    let _ = editor.load_history(&history);
    let mut denied_unattended = false;
    eprintln!(
        "ARIA chat · model {} · roots {} · /help lists the chat commands, /exit or Ctrl-D quits",
        ctx.config.provider.model,
        ctx.config.roots.iter().map(|r| r.display().to_string()).collect::<Vec<_>>().join(", ")
    );
    loop {
        let line = match editor.readline("you› ") {
            Ok(line) => line,
            Err(ReadlineError::Interrupted | ReadlineError::Eof) => break,
            Err(e) => return Err(CliError::failed(e)),
        };
        let text = line.trim();
        if text.is_empty() {
            continue;
        }
        let chosen = match super::slash::handle(ctx, text, conversation.as_deref()) {
            Some(super::slash::After::Exit) => break,
            Some(super::slash::After::New) => {
                conversation = None;
                continue;
            }
            Some(super::slash::After::Continue) => {
                let _ = editor.add_history_entry(text);
                continue;
            }
            Some(super::slash::After::Send(message)) => message,
            None => text.to_owned(),
        };
        // History keeps what was typed (the command, not the resource it sent).
        let _ = editor.add_history_entry(text);
        let text = chosen.as_str();
        let result = rt.block_on(async {
            let cancel = CancellationToken::new();
            let guard = cancel.clone();
            let watcher = tokio::spawn(async move {
                if tokio::signal::ctrl_c().await.is_ok() {
                    guard.cancel();
                }
            });
            let out = crate::planned::turn(
                agent,
                extras,
                &ctx.config.data_dir,
                text,
                conversation.clone(),
                cancel,
            )
            .await;
            watcher.abort();
            out
        });
        crate::anchor::record(&ctx.config.data_dir, &ctx.store);
        // Without a terminal nobody could answer an approval: a denial is a failure to report
        // (as in one-shot commands), not the user's own "no".
        if let Ok((crate::planned::Turn::Run(driven), _)) = &result
            && !driven.denied.is_empty()
            && !std::io::stdin().is_terminal()
        {
            denied_unattended = true;
        }
        match result {
            Ok((turn, styled)) => {
                conversation = turn.conversation_id().or(conversation);
                crate::planned::show(&turn, styled.as_deref());
            }
            Err(e) => {
                let _ = editor.save_history(&history);
                return Err(e);
            }
        }
    }
    let _ = editor.save_history(&history);
    Ok(if denied_unattended { crate::exit::FAILED } else { OK })
}

#[cfg(test)]
mod tests {
    use super::{pick, terminal_question};

    #[test]
    fn the_terminal_question_shows_the_whole_command_with_hidden_characters_visible() {
        let command = format!("{}; rm -rf important", "echo padding ".repeat(320));
        let request = aria_core::ApprovalRequest {
            session_id: "s".into(),
            tool: "shell".into(),
            arguments: serde_json::json!({"command": command}),
            tier: aria_api::Tier::Irreversible,
            reason: Some("it deletes \u{202E}files".into()),
        };
        let question = terminal_question(&request);
        assert!(question.contains(&format!("\"command\": \"{command}\"")), "{question}");
        assert!(question.contains("why: it deletes ⟨U+202E⟩files"), "{question}");
        let reversed = aria_core::ApprovalRequest {
            arguments: serde_json::json!({"command": "echo \u{202E}fr- mr"}),
            reason: None,
            ..request
        };
        let question = terminal_question(&reversed);
        assert!(question.contains("\"echo ⟨U+202E⟩fr- mr\""), "{question}");
        assert!(!question.contains('\u{202E}'));
    }

    #[test]
    fn a_typed_choice_is_a_number_or_an_options_text_anything_else_decides_later() {
        let options = ["a.txt".to_owned(), "b.txt".to_owned()];
        assert_eq!(pick(&options, "2\n"), Some("b.txt".to_owned()));
        assert_eq!(pick(&options, " A.TXT "), Some("a.txt".to_owned()));
        for later in ["", "\n", "0", "3", "c.txt"] {
            assert_eq!(pick(&options, later), None, "{later:?}");
        }
    }
}
