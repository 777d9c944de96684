//! Planned runs: an agent with a `planner` runs a task as a plan. The planner
//! (`BACKEND/MODEL`, typically a cloud model) writes short numbered steps and judges when the
//! goal is met; the agent's own model chain (typically the embedded model) carries out each
//! step with its tools, in one conversation. The mechanics and their guarantees (the planner
//! sees tool results only through the outbound filter, is stopped by the task's cost cap before
//! a call that would pass it, and a task is done only when the last tool call succeeded, no
//! call was invalid or denied and, with `confirm_completion`, the user said yes) are
//! `aria_core::plan_and_execute`; this module builds the planner, asks the user on the
//! terminal, and shows the outcome.

use std::io::{BufRead, IsTerminal, Write};
use std::time::Duration;

use aria_core::{Agent, Confirmation, Confirmer, PlanOutcome, PlanSettings, PlanStatus, Planner};
use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::config::agents::AgentProfile;
use crate::exit::{CANCELLED, CliError, CliResult, FAILED, OK};

/// The most a planner writes in one answer (a plan is short).
const PLANNER_MAX_TOKENS: u32 = 1024;

/// The planner of `profile`, priced when it runs off this machine.
pub fn planner(config: &Config, profile: &AgentProfile) -> CliResult<Option<Planner>> {
    let Some(spec) = &profile.planner else { return Ok(None) };
    let Some((backend, model)) = spec.split_once('/') else {
        return Err(CliError::usage(format!("the planner {spec:?} is not BACKEND/MODEL")));
    };
    let built = crate::providers::backend(config, backend, model)?;
    // Priced as the run's own routes are: a known price (even through a local proxy), else
    // free.
    let price = crate::providers::pricing(config).price(model).map(|p| aria_core::Price {
        input_per_mtok: p.input_per_mtok,
        output_per_mtok: p.output_per_mtok,
    });
    Ok(Some(Planner {
        provider: built.provider(),
        model: model.to_owned(),
        price,
        max_output_tokens: PLANNER_MAX_TOKENS,
    }))
}

/// The settings of a planned task under `config` (already narrowed by the agent).
pub fn settings(config: &Config, profile: &AgentProfile) -> PlanSettings {
    PlanSettings {
        cost_cap_usd: config.limits.max_cost_usd,
        confirm_completion: profile.confirm_completion,
        // Planner calls: a plan and its verdict, twice more after a "no" or a failed step.
        max_rounds: 6,
        timeout: config
            .limits
            .session_timeout
            .clamp(Duration::from_secs(10), Duration::from_secs(600)),
        ..PlanSettings::default()
    }
}

/// Asks on the terminal whether the goal is met.
struct Terminal;

impl Confirmer for Terminal {
    fn confirm(&self, goal: &str, summary: &str) -> BoxFuture<'_, Confirmation> {
        let (goal, summary) = (goal.to_owned(), summary.to_owned());
        Box::pin(async move {
            let asked = tokio::task::spawn_blocking(move || {
                let mut err = std::io::stderr();
                let _ = write!(
                    err,
                    "\nThe planner says this is done:\n  goal: {goal}\n  {summary}\nIs it? \
                     [y = yes; anything else: what is missing] "
                );
                let _ = err.flush();
                let mut line = String::new();
                std::io::stdin().lock().read_line(&mut line).map(|_| line)
            })
            .await;
            let line = match asked {
                Ok(Ok(line)) => line.trim().to_owned(),
                _ => String::new(),
            };
            match line.to_ascii_lowercase().as_str() {
                "y" | "yes" => Confirmation::Yes,
                "" | "n" | "no" => {
                    Confirmation::No { reason: "the user said it is not done".into() }
                }
                _ => Confirmation::No { reason: line },
            }
        })
    }
}

/// Runs `goal` as a plan; the executor's events are rendered as a run's are.
pub async fn run(
    executor: &Agent,
    (planner, settings): &(Planner, PlanSettings),
    goal: &str,
    conversation: Option<String>,
    render: crate::commands::run::Render,
    data_dir: &std::path::Path,
    cancel: CancellationToken,
) -> CliResult<PlanOutcome> {
    let interactive = std::io::stdin().is_terminal();
    let confirmer: Option<&dyn Confirmer> =
        if settings.confirm_completion && interactive { Some(&Terminal) } else { None };
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let consumer = tokio::spawn(crate::commands::run::consume(rx, render, data_dir.to_path_buf()));
    let outcome = aria_core::plan_and_execute(
        planner,
        executor,
        goal,
        conversation,
        settings,
        confirmer,
        &tx,
        cancel,
    )
    .await;
    drop(tx);
    let _ = consumer.await;
    outcome.map_err(crate::commands::run::run_error)
}

/// The exit code of a planned task: 0 done, 130 cancelled, 1 otherwise.
pub fn exit_code(outcome: &PlanOutcome) -> u8 {
    match outcome.status {
        PlanStatus::Done { .. } => OK,
        PlanStatus::Cancelled => CANCELLED,
        _ => FAILED,
    }
}

/// The human ending of a planned task: the steps on stderr, the summary on stdout.
pub fn print_outcome(outcome: &PlanOutcome, shown_summary: Option<&str>) {
    for step in &outcome.steps {
        let mark = match (step.state, step.last_tool_ok) {
            (aria_api::SessionState::Done, Some(false)) => "✗",
            (aria_api::SessionState::Done, _) => "✓",
            _ => "✗",
        };
        eprintln!("{mark} round {} step {}: {}", step.round, step.index, step.text);
    }
    match &outcome.status {
        PlanStatus::Done { summary } => println!("{}", shown_summary.unwrap_or(summary)),
        PlanStatus::Aborted { reason } => eprintln!("error: the plan was stopped: {reason}"),
        PlanStatus::GaveUp { reason } => {
            eprintln!("error: the plan did not reach its goal: {reason}")
        }
        PlanStatus::Cancelled => eprintln!("cancelled"),
    }
    eprintln!("planner: {} call(s), {:.4} USD", outcome.rounds, outcome.planner_cost_usd);
}

/// What an agent's profile adds around its runs: a persona that rewords the answer shown, and
/// a planner that turns a task into planned steps. Loaded before anything runs, so a missing
/// persona or an unusable planner is an error up front.
#[derive(Default)]
pub struct Extras {
    pub persona: Option<aria_core::Persona>,
    pub plan: Option<(Planner, PlanSettings)>,
}

impl Extras {
    pub fn load(config: &Config) -> CliResult<Extras> {
        let Some(profile) = &config.agent else { return Ok(Extras::default()) };
        let persona = match &profile.persona {
            Some(name) => Some(crate::persona::load(&config.data_dir, name)?),
            None => None,
        };
        let plan = planner(config, profile)?.map(|p| (p, settings(config, profile)));
        Ok(Extras { persona, plan })
    }

    /// The persona's wording of a finished run's answer (`None`: no persona, or no answer).
    pub async fn restyle_run(
        &self,
        agent: &Agent,
        session: &aria_api::SessionRecord,
    ) -> Option<String> {
        match (&self.persona, session.state, &session.answer) {
            (Some(persona), aria_api::SessionState::Done, Some(answer)) => {
                Some(agent.restyle(&session.id, persona, answer).await)
            }
            _ => None,
        }
    }

    /// The persona's wording of a finished plan's summary (recorded with its last step).
    pub async fn restyle_plan(&self, agent: &Agent, outcome: &PlanOutcome) -> Option<String> {
        match (&self.persona, &outcome.status, outcome.steps.last()) {
            (Some(persona), PlanStatus::Done { summary }, Some(last)) => {
                Some(agent.restyle(&last.session_id, persona, summary).await)
            }
            _ => None,
        }
    }
}

/// One finished turn of `aria chat`: a run, or a planned task.
pub enum Turn {
    Run(Box<crate::commands::run::Driven>),
    Plan(PlanOutcome),
}

impl Turn {
    pub fn conversation_id(&self) -> Option<String> {
        match self {
            Turn::Run(d) => Some(d.session.conversation_id.clone()),
            Turn::Plan(p) => p.conversation_id.clone(),
        }
    }
}

/// Runs `task` as the agent's profile says (planned or not), then lets the persona reword the
/// answer. Returns the turn and the reworded answer, if there is one. A plain run streams its
/// answer as it comes unless a persona will reword it; a planned one shows its steps.
pub async fn turn(
    agent: &Agent,
    extras: &Extras,
    data_dir: &std::path::Path,
    task: &str,
    conversation: Option<String>,
    cancel: CancellationToken,
) -> CliResult<(Turn, Option<String>)> {
    use crate::commands::run::Render;
    if let Some(plan) = &extras.plan {
        let outcome = run(agent, plan, task, conversation, Render::Quiet, data_dir, cancel).await?;
        let styled = extras.restyle_plan(agent, &outcome).await;
        return Ok((Turn::Plan(outcome), styled));
    }
    let render = if extras.persona.is_some() { Render::Quiet } else { Render::Stream };
    let driven = crate::commands::run::drive(
        agent,
        data_dir,
        Some(task),
        None,
        conversation,
        render,
        cancel,
    )
    .await
    .map_err(crate::commands::run::run_error)?;
    let styled = extras.restyle_run(agent, &driven.session).await;
    Ok((Turn::Run(Box::new(driven)), styled))
}

/// Shows a finished chat turn: a streamed answer is already on the screen; a reworded one, a
/// plan's outcome and a failure are printed here.
pub fn show(turn: &Turn, styled: Option<&str>) {
    match turn {
        Turn::Plan(outcome) => print_outcome(outcome, styled),
        Turn::Run(driven) => match styled {
            Some(styled) => println!("{styled}"),
            None if driven.session.state != aria_api::SessionState::Done => {
                crate::commands::run::print_outcome(&driven.session);
            }
            None => {}
        },
    }
}
