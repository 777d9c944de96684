//! `/schedule`, `/notify` and `/heartbeat`: scheduled jobs from a chat, checked
//! and described by [`aria_scheduler::manage`] exactly as `aria schedule` and the HTTP API do.
//!
//! `/schedule add NAME "CRON" TEXT` makes a reminder (a `notify` job); `/schedule add NAME "CRON"
//! ask: PROMPT` a task for the agent (an `agent` job). CRON is five fields in quotes (`"0 9 * *
//! 1-5"`; typographic quotes work too) or one `@hourly`/`@daily`/`@weekly`/`@monthly`/`@yearly`
//! without. Jobs made here are the user's and run in the daemon's zone with its roots.

use std::sync::Arc;

use aria_scheduler::manage::{self, Changes, Draft};
use serde_json::json;

use super::Telegram;

/// Who changes a job from here, in the audit log.
const ACTOR: &str = "telegram";

/// How `/schedule` is used (its answer to `/schedule help` and to a mistake).
pub(super) const USAGE: &str = "\
/schedule — the jobs (also /schedule list)
/schedule add NAME \"CRON\" TEXT — a reminder with TEXT
/schedule add NAME \"CRON\" ask: PROMPT — a task for ARIA; its answer is the notification
/schedule edit NAME \"CRON\" — a new schedule
/schedule show|history|run|enable|disable|delete NAME
CRON is five fields in quotes (minute hour day month weekday, e.g. \"0 9 * * 1-5\") or @hourly, \
@daily, @weekly, @monthly, @yearly. Times are the daemon's zone.";

pub(super) fn schedule(tg: &Arc<Telegram>, chat: i64, rest: &str) -> Result<String, String> {
    let (verb, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let args = args.trim();
    match verb {
        "" | "list" => list(tg),
        "add" => add(tg, args),
        "edit" => edit(tg, args),
        "enable" | "disable" => {
            let name = one_name(verb, args)?;
            let changes = Changes { enabled: Some(verb == "enable"), ..Changes::default() };
            let job =
                manage::edit(&tg.gw.store, name, changes, ACTOR).map_err(|e| e.to_string())?;
            Ok(format!("{} {}d.\n{}", job.name, verb, manage::job_line(&job)))
        }
        "delete" => {
            let name = one_name(verb, args)?;
            manage::find(&tg.gw.store, name).map_err(|e| e.to_string())?;
            tg.gw.store.job_delete(name, ACTOR).map_err(|e| e.to_string())?;
            Ok(format!("Deleted {name}."))
        }
        "show" => show(tg, one_name(verb, args)?),
        "history" => history(tg, one_name(verb, args)?),
        "run" => run(tg, chat, one_name(verb, args)?),
        "help" => Ok(USAGE.to_owned()),
        other => Err(format!("/schedule has no {other:?}.\n\n{USAGE}")),
    }
}

fn one_name<'a>(verb: &str, args: &'a str) -> Result<&'a str, String> {
    match args.split_whitespace().collect::<Vec<_>>()[..] {
        [name] => Ok(name),
        _ => Err(format!("Name one job: /schedule {verb} NAME (see /schedule list)")),
    }
}

fn list(tg: &Telegram) -> Result<String, String> {
    let jobs = tg.gw.store.jobs().map_err(|e| e.to_string())?;
    if jobs.is_empty() {
        return Ok(format!("No scheduled jobs yet.\n\n{USAGE}"));
    }
    let mut out = String::from("Scheduled jobs:\n");
    for job in &jobs {
        out.push_str(&manage::job_line(job));
        out.push('\n');
    }
    Ok(out)
}

/// Splits `"CRON" REST` (or `@daily REST`) into the expression and the rest.
fn cron_and_rest(text: &str) -> Result<(&str, &str), String> {
    let text = text.trim_start();
    let quoted = [('"', '"'), ('“', '”'), ('„', '“'), ('«', '»')];
    for (open, close) in quoted {
        if let Some(inner) = text.strip_prefix(open) {
            let Some((cron, rest)) = inner.split_once(close) else {
                return Err(format!("The schedule has no closing {close}.\n\n{USAGE}"));
            };
            return Ok((cron.trim(), rest.trim()));
        }
    }
    if text.starts_with('@') {
        let (cron, rest) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
        return Ok((cron, rest.trim()));
    }
    Err(format!(
        "Put the schedule in quotes (\"0 9 * * 1-5\") or use @hourly, @daily, @weekly, @monthly \
         or @yearly.\n\n{USAGE}"
    ))
}

fn add(tg: &Telegram, args: &str) -> Result<String, String> {
    let (name, rest) = args.split_once(char::is_whitespace).unwrap_or((args, ""));
    if name.is_empty() {
        return Err(USAGE.to_owned());
    }
    let (cron, text) = cron_and_rest(rest)?;
    let action = match text.strip_prefix("ask:").or_else(|| text.strip_prefix("Ask:")) {
        Some(prompt) => json!({"kind": "agent", "prompt": prompt.trim()}),
        None => json!({"kind": "notify", "message": text}),
    };
    if text.is_empty() {
        return Err(format!("Say what the job does after the schedule.\n\n{USAGE}"));
    }
    let draft = Draft {
        name: name.to_owned(),
        cron: cron.to_owned(),
        tz: None,
        action,
        enabled: true,
        created_by: "user".to_owned(),
        roots: tg.gw.agent.config().roots.clone(),
    };
    let job = manage::create(&tg.gw.store, draft).map_err(|e| e.to_string())?;
    Ok(format!("Scheduled.\n{}", manage::job_line(&job)))
}

fn edit(tg: &Telegram, args: &str) -> Result<String, String> {
    let (name, rest) = args.split_once(char::is_whitespace).unwrap_or((args, ""));
    let (cron, extra) = cron_and_rest(rest)?;
    if name.is_empty() || !extra.is_empty() {
        return Err(format!("Give a name and a schedule only.\n\n{USAGE}"));
    }
    let changes = Changes { cron: Some(cron.to_owned()), ..Changes::default() };
    let job = manage::edit(&tg.gw.store, name, changes, ACTOR).map_err(|e| e.to_string())?;
    Ok(format!("Changed.\n{}", manage::job_line(&job)))
}

fn show(tg: &Telegram, name: &str) -> Result<String, String> {
    let job = manage::find(&tg.gw.store, name).map_err(|e| e.to_string())?;
    let next = if job.enabled {
        match manage::next_fires(&job, 3) {
            Ok(fires) if !fires.is_empty() => fires.join(", "),
            Ok(_) => "never".to_owned(),
            Err(why) => format!("never ({why})"),
        }
    } else {
        "disabled".to_owned()
    };
    let last = tg.gw.store.job_history(job.id, 1).map_err(|e| e.to_string())?;
    let last = last.first().map_or_else(|| "never ran".to_owned(), manage::run_line);
    Ok(format!(
        "{}\nschedule: {} ({})\ndoes: {}\nnext: {next}\nlast run: {last}\nmade by: {}",
        job.name,
        job.cron,
        job.tz,
        manage::action_text(&job.action),
        job.created_by
    ))
}

fn history(tg: &Telegram, name: &str) -> Result<String, String> {
    let job = manage::find(&tg.gw.store, name).map_err(|e| e.to_string())?;
    let runs = tg.gw.store.job_history(job.id, 10).map_err(|e| e.to_string())?;
    if runs.is_empty() {
        return Ok(format!("{name} has not run yet."));
    }
    let mut out = format!("Latest runs of {name} (newest first):\n");
    for run in &runs {
        out.push_str(&manage::run_line(run));
        out.push('\n');
    }
    Ok(out)
}

/// Runs the job in the background (an agent job can take minutes); its notification reaches
/// the chat like any other, or, when this chat takes none, as a reply.
fn run(tg: &Arc<Telegram>, chat: i64, name: &str) -> Result<String, String> {
    manage::find(&tg.gw.store, name).map_err(|e| e.to_string())?;
    let Some(scheduler) = tg.gw.notifications.scheduler() else {
        return Err("The scheduler is not running in this daemon; try again once it is.".into());
    };
    let tg = tg.clone();
    let job = name.to_owned();
    let task = async move {
        let told = tg.gw.notifications.settings().enabled && tg.notify_on(chat);
        match scheduler.run_now(&job).await {
            Ok(_) if told => {}
            Ok(notice) => tg.say(chat, &notice.text),
            Err(e) => tg.say(chat, &format!("⚠️ {e}")),
        }
    };
    tokio::spawn(tracing::Instrument::instrument(task, tracing::info_span!("telegram_run_now")));
    Ok(format!("Running {name} now; its result follows."))
}

/// `/notify`, `/notify on`, `/notify off`.
pub(super) fn notify(tg: &Telegram, chat: i64, arg: &str) -> Result<String, String> {
    let daemon = if tg.gw.notifications.settings().enabled {
        "The daemon pushes notifications ([notify] enabled = true)."
    } else {
        "The daemon pushes none at all ([notify] enabled = false); they are only recorded."
    };
    match arg {
        "" => Ok(format!(
            "Notifications are {} in this chat. {daemon}\nChange it with /notify on or /notify \
             off.",
            if tg.notify_on(chat) { "on" } else { "off" }
        )),
        "on" | "off" => {
            tg.set_notify(chat, arg == "on").map_err(|e| e.to_string())?;
            Ok(if arg == "on" {
                format!("Notifications are on in this chat. {daemon}")
            } else {
                "Notifications are off in this chat; they are still recorded (the web UI lists \
                 them). /notify on turns them back on."
                    .to_owned()
            })
        }
        other => Err(format!("/notify takes on or off, not {other:?}")),
    }
}

/// The built-in heartbeat job's name.
const HEARTBEAT: &str = "heartbeat";

/// `/heartbeat` (the heartbeat now), `/heartbeat on|off` (the built-in daily one).
pub(super) fn heartbeat(tg: &Telegram, arg: &str) -> Result<String, String> {
    let store = &tg.gw.store;
    match arg {
        "" => {
            let since = manage::find(store, HEARTBEAT).ok().and_then(|j| j.last_completed_slot);
            crate::jobs::heartbeat(&tg.gw, since.as_deref())
        }
        "on" | "off" => {
            let job = manage::find(store, HEARTBEAT).map_err(|_| {
                "There is no heartbeat job: set `[schedule] heartbeat = \"0 9 * * *\"` in aria.toml \
                 and restart the daemon."
                    .to_owned()
            })?;
            let changes = Changes { enabled: Some(arg == "on"), ..Changes::default() };
            let job = manage::edit(store, &job.name, changes, ACTOR).map_err(|e| e.to_string())?;
            Ok(format!(
                "The heartbeat is {} (until the daemon restarts: then `[schedule] heartbeat` in \
                 aria.toml decides again).\n{}",
                if job.enabled { "on" } else { "off" },
                manage::job_line(&job)
            ))
        }
        other => Err(format!("/heartbeat takes on or off, or nothing, not {other:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_schedule_is_quoted_or_one_at_word() {
        assert_eq!(cron_and_rest(r#""0 9 * * 1-5" Stand-up"#), Ok(("0 9 * * 1-5", "Stand-up")));
        assert_eq!(cron_and_rest("“0 9 * * *” ask: the news"), Ok(("0 9 * * *", "ask: the news")));
        assert_eq!(cron_and_rest("@daily  Water the plants"), Ok(("@daily", "Water the plants")));
        assert_eq!(cron_and_rest("@daily"), Ok(("@daily", "")));
        assert!(cron_and_rest("0 9 * * * tea").unwrap_err().contains("quotes"));
        assert!(cron_and_rest("\"0 9 * * * tea").unwrap_err().contains("closing"));
    }
}
