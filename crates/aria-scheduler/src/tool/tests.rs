use std::sync::Arc;

use aria_api::NoRedact;
use pretty_assertions::assert_eq;

use super::*;

fn store() -> Arc<Store> {
    Arc::new(Store::open_in_memory(Arc::new(NoRedact)).unwrap())
}

/// Thursday 26 November 2026, 18:00 UTC.
fn thursday_evening() -> Timestamp {
    "2026-11-26T18:00:00Z".parse().unwrap()
}

fn weekday_check() -> Value {
    json!({
        "name": "repo-check",
        "cron": "0 9 * * 1-5",
        "tz": "Europe/Berlin",
        "prompt": "check my repo and tell me what changed",
    })
}

#[test]
fn the_question_shows_schedule_zone_action_and_the_next_three_fires_in_the_zone() {
    let planned = plan(&weekday_check(), thursday_evening()).unwrap();
    assert_eq!(
        planned.fires,
        ["2026-11-27T09:00:00+01:00", "2026-11-30T09:00:00+01:00", "2026-12-01T09:00:00+01:00"],
        "Friday, then Monday and Tuesday: the weekend is skipped, Berlin is at +01:00"
    );
    assert_eq!(
        planned.question(),
        "Create the scheduled job \"repo-check\", which `aria serve` then runs on its own, \
         unasked:\n\
         schedule: 0 9 * * 1-5 in Europe/Berlin\n\
         action: agent: check my repo and tell me what changed\n\
         next runs: 2026-11-27T09:00:00+01:00, 2026-11-30T09:00:00+01:00, \
         2026-12-01T09:00:00+01:00"
    );
    assert_eq!(
        planned.action,
        json!({"kind": "agent", "prompt": "check my repo and tell me what changed"})
    );
}

#[test]
fn fire_times_carry_the_offset_of_their_own_date_in_the_zone() {
    // New York leaves daylight saving time on 1 November 2026: -04:00 before, -05:00 after.
    let args = json!({"name": "tea", "cron": "@daily", "tz": "America/New_York", "message": "tea"});
    let planned = plan(&args, "2026-10-30T12:00:00Z".parse().unwrap()).unwrap();
    assert_eq!(
        planned.fires,
        ["2026-10-31T00:00:00-04:00", "2026-11-01T00:00:00-04:00", "2026-11-02T00:00:00-05:00"]
    );
    assert_eq!(planned.action, json!({"kind": "notify", "message": "tea"}));
    assert!(planned.question().contains("action: notify: tea"), "{}", planned.question());
}

#[test]
fn without_a_zone_the_system_zone_is_used() {
    let args = json!({"name": "tea", "cron": "0 16 * * *", "message": "tea"});
    let planned = plan(&args, thursday_evening()).unwrap();
    assert_eq!(planned.tz, system_zone().0);
    assert_eq!(planned.fires.len(), 3);
}

#[test]
fn bad_requests_say_what_to_fix() {
    let now = thursday_evening();
    let with = |key: &str, value: Value| {
        let mut args = weekday_check();
        args[key] = value;
        plan(&args, now).unwrap_err().to_string()
    };
    let bad_cron = with("cron", json!("61 9 * * 1-5"));
    assert!(bad_cron.contains("\"61 9 * * 1-5\" is not valid"), "{bad_cron}");
    let bad_zone = with("tz", json!("Mars/Olympus"));
    assert!(bad_zone.contains("Mars/Olympus") && bad_zone.contains("IANA"), "{bad_zone}");
    let bad_name = with("name", json!("check my repo"));
    assert!(bad_name.contains("one word"), "{bad_name}");
    let both = with("message", json!("hello"));
    assert!(both.contains("exactly one of \"prompt\""), "{both}");
    let empty = with("prompt", json!("  "));
    assert!(empty.contains("non-empty \"prompt\""), "{empty}");
    let mut neither = weekday_check();
    neither.as_object_mut().unwrap().remove("prompt");
    assert!(plan(&neither, now).unwrap_err().to_string().contains("exactly one of"));
    let never = with("cron", json!("0 9 31 2 *"));
    assert!(never.contains("never fires"), "{never}");
}

#[tokio::test]
async fn a_call_creates_the_job_as_the_agent_with_the_roots() {
    let store = store();
    let tool = ScheduleCreate::new(store.clone(), vec!["/home/u/repo".into()]);
    assert!(tool.always_confirm());
    assert_eq!(tool.tier(&weekday_check()), Tier::Irreversible);
    let shown = tool.confirmation(&weekday_check()).unwrap().unwrap();
    assert!(shown.contains("schedule: 0 9 * * 1-5 in Europe/Berlin"), "{shown}");
    assert_eq!(shown.matches("T09:00:00+01:00").count(), 3, "{shown}");

    let out = tool.call(weekday_check(), &ToolContext::default()).await.unwrap();
    let job = store.job("repo-check").unwrap().unwrap();
    assert_eq!(
        (job.cron.as_str(), job.tz.as_str(), job.created_by.as_str(), job.enabled),
        ("0 9 * * 1-5", "Europe/Berlin", "agent", true)
    );
    assert_eq!(job.roots, ["/home/u/repo"]);
    assert_eq!(job.action["kind"], "agent");
    assert!(out.content.starts_with("Created the job repo-check"), "{}", out.content);
    assert_eq!(out.content.matches("T09:00:00+01:00").count(), 3, "{}", out.content);
    assert_eq!(out.details["created_by"], "agent");

    // The same name again: refused before anyone is asked, and by the call itself.
    let asked = tool.confirmation(&weekday_check()).unwrap_err().to_string();
    assert!(asked.contains("repo-check exists already"), "{asked}");
    let again = tool.call(weekday_check(), &ToolContext::default()).await.unwrap_err();
    assert!(matches!(again, ToolError::Failed { .. }), "{again}");
    assert_eq!(store.jobs().unwrap().len(), 1);
}

#[tokio::test]
async fn a_bad_call_or_a_dry_run_creates_nothing() {
    let store = store();
    let tool = ScheduleCreate::new(store.clone(), vec![]);
    let mut args = weekday_check();
    args["tz"] = json!("Europe/Berlinn");
    let err = tool.call(args, &ToolContext::default()).await.unwrap_err();
    assert!(
        matches!(&err, ToolError::Failed { message } if message.starts_with("no job was created") && message.contains("Europe/Berlinn")),
        "{err}"
    );
    let dry = ToolContext { dry_run: true, ..ToolContext::default() };
    let out = tool.call(weekday_check(), &dry).await.unwrap();
    assert!(
        out.content.starts_with("[dry run] would: Create the scheduled job"),
        "{}",
        out.content
    );
    assert!(store.jobs().unwrap().is_empty());
}
