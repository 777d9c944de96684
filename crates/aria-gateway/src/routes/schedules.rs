//! Scheduled jobs and notifications: list, create, read, edit, delete and run jobs,
//! their run history, the fire-time calculator, and the notifications with their live stream.
//!
//! A job is checked and shaped by [`aria_scheduler::manage`], exactly as `aria schedule` and
//! Telegram's `/schedule` do it, so a job means the same thing wherever it is made: a refused
//! draft is a 400 (the message says what to fix), an unknown name a 404, a name in use a 409.
//! Jobs made here are the user's (`created_by: "user"`) and run with the daemon agent's roots.
//! "Run now" goes through the daemon's scheduler, so the run is claimed, recorded and notified
//! like a scheduled one; without a scheduler (a daemon started without one) it is a 503.
//!
//! `GET /schedules/preview` is a fixed path: a job named `preview` cannot be made here (the CLI
//! can make one; read it with `GET /schedules`).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use aria_scheduler::cron::{Schedule, rfc3339_in, system_zone, zone};
use aria_scheduler::manage::{self, Changes, Draft, ManageError};
use aria_scheduler::scheduler::RunNowError;
use aria_store::StoredNotification;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::Gateway;
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::extract::{ApiJson, ApiPath, ApiQuery};

pub fn routes() -> OpenApiRouter<Arc<Gateway>> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(preview))
        .routes(routes!(get_one, edit, delete))
        .routes(routes!(run_now))
        .routes(routes!(history))
        .routes(routes!(notifications))
        .routes(routes!(notification_events))
}

/// Fires a preview shows by default, and at most.
const PREVIEW_DEFAULT: u32 = 5;
pub const PREVIEW_MAX: u32 = 1000;
/// Runs a history shows by default, and at most.
const HISTORY_DEFAULT: u32 = 20;
const HISTORY_MAX: u32 = 500;
/// Notifications a listing shows by default, and at most.
const NOTIFICATIONS_DEFAULT: u32 = 50;
const NOTIFICATIONS_MAX: u32 = 500;

/// A job's action, by `kind`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ActionBody {
    /// Run the prompt as a task in a new conversation; the answer is the notification.
    Agent {
        /// The task (not blank).
        #[schema(
            min_length = 1,
            pattern = r"[^\t\n\x0B\f\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]"
        )]
        prompt: String,
        /// The run's own cost cap in US dollars (positive).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schema(exclusive_minimum = 0)]
        max_cost_usd: Option<f64>,
    },
    /// A reminder: the message is the notification.
    Notify {
        /// The reminder (not blank).
        #[schema(
            min_length = 1,
            pattern = r"[^\t\n\x0B\f\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]"
        )]
        message: String,
    },
    /// A command profile (`run_tests`, `lint_project`, a configured one) run in `root`.
    Profile {
        #[schema(
            min_length = 1,
            pattern = r"[^\t\n\x0B\f\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]"
        )]
        profile: String,
        /// A directory inside the daemon's roots.
        #[schema(
            min_length = 1,
            pattern = r"[^\t\n\x0B\f\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]"
        )]
        root: String,
    },
    /// What changed in `root` since the job's last run.
    Digest {
        /// A directory inside the daemon's roots.
        #[schema(
            min_length = 1,
            pattern = r"[^\t\n\x0B\f\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]"
        )]
        root: String,
    },
    /// Operations, failures, jobs, snapshots, spend and the audit chain's head since the last.
    Heartbeat,
}

impl ActionBody {
    /// The action as the scheduler stores it, checked.
    fn checked(&self) -> ApiResult<Value> {
        let value = serde_json::to_value(self)
            .map_err(|e| ApiError::internal("the action could not be read", e))?;
        manage::check_action(&value).map_err(manage_error)
    }
}

/// A job as the API shows it (`aria schedule list --json` shows the same). Not
/// `deny_unknown_fields`: [`JobDetail`] extends it, and its schema must allow that.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct JobBody {
    pub name: String,
    /// The cron expression (five fields, or `@daily` and the like).
    pub cron: String,
    /// The IANA zone its times are in.
    pub tz: String,
    /// What it does: `{"kind": "agent" | "notify" | "profile" | "digest" | "heartbeat", …}`.
    #[schema(value_type = Object)]
    pub action: Value,
    pub enabled: bool,
    /// `user`, `agent` or `system`.
    pub created_by: String,
    /// The roots it runs with.
    pub roots: Vec<String>,
    /// Its next fire (RFC 3339 in its zone); `null` when disabled or never.
    pub next_run: Option<String>,
    /// The latest slot whose run finished.
    pub last_completed_slot: Option<String>,
    pub created_at: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct JobList {
    pub items: Vec<JobBody>,
}

/// One run of a job.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RunBody {
    /// The slot (RFC 3339 UTC).
    pub slot: String,
    pub claimed_at: String,
    pub finished_at: Option<String>,
    /// `ok`, `failed`, `timeout`, `skipped` or `interrupted`; `null` while running.
    pub outcome: Option<String>,
    /// Earlier slots missed while the daemon was down.
    pub missed: u64,
    pub detail: Option<String>,
    /// The agent run (session) of an agent job.
    pub session_id: Option<String>,
}

/// A job with its next fires and latest runs.
#[derive(Debug, Serialize, ToSchema)]
pub struct JobDetail {
    #[serde(flatten)]
    pub job: JobBody,
    /// The next three fires (RFC 3339 in its zone); empty when disabled.
    pub next_runs: Vec<String>,
    /// The latest runs, newest first.
    pub last_runs: Vec<RunBody>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RunList {
    /// Newest first.
    pub items: Vec<RunBody>,
}

fn job_body(job: &aria_store::Job) -> ApiResult<JobBody> {
    serde_json::from_value(manage::job_json(job))
        .map_err(|e| ApiError::internal("a job could not be shown", e))
}

fn run_body(run: &aria_store::SlotRun) -> ApiResult<RunBody> {
    serde_json::from_value(manage::run_json(run))
        .map_err(|e| ApiError::internal("a run could not be shown", e))
}

/// A refusal of [`manage`] in the API's terms.
fn manage_error(e: ManageError) -> ApiError {
    match e {
        ManageError::Invalid(why) => ApiError::bad_request(
            why,
            "see GET /api/v1/openapi.json for the body; try a schedule with GET \
             /api/v1/schedules/preview?cron=EXPR",
        ),
        ManageError::Unknown(name) => unknown(&name),
        ManageError::Duplicate(name) => ApiError::conflict(
            format!("a job named {name} exists already"),
            "pick another name, or change it with PATCH /api/v1/schedules/{name}",
        ),
        ManageError::Store(e) => ApiError::from(e),
    }
}

fn unknown(name: &str) -> ApiError {
    ApiError::not_found(
        format!("there is no job named {name}"),
        "list them with GET /api/v1/schedules",
    )
}

/// The jobs, by name.
#[utoipa::path(get, path = "/api/v1/schedules", tag = "schedules",
    responses((status = 200, body = JobList)))]
async fn list(State(gw): State<Arc<Gateway>>) -> ApiResult<Json<JobList>> {
    let items = gw.store.jobs()?.iter().map(job_body).collect::<ApiResult<_>>()?;
    Ok(Json(JobList { items }))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"name": "tea", "cron": "0 16 * * 1-5", "tz": "Europe/Berlin",
    "action": {"kind": "notify", "message": "Time for tea"}}))]
pub struct NewJobBody {
    /// One word of letters, digits, `-`, `_` or `.`, at most 64 characters.
    #[schema(min_length = 1, max_length = 64)]
    pub name: String,
    /// Five fields (`0 9 * * 1-5`) or `@hourly`, `@daily`, `@weekly`, `@monthly`, `@yearly`.
    #[schema(min_length = 1)]
    pub cron: String,
    /// An IANA zone (default: the daemon's).
    #[serde(default)]
    pub tz: Option<String>,
    pub action: ActionBody,
    /// Default true.
    #[serde(default)]
    pub enabled: Option<bool>,
}

/// Makes a job (the user's, with the daemon's roots). 201 with the job.
#[utoipa::path(post, path = "/api/v1/schedules", tag = "schedules", request_body = NewJobBody,
    responses((status = 201, body = JobBody), (status = 400, body = ErrorBody),
              (status = 409, body = ErrorBody)))]
async fn create(
    State(gw): State<Arc<Gateway>>,
    ApiJson(body): ApiJson<NewJobBody>,
) -> ApiResult<Response> {
    if body.name == "preview" {
        return Err(ApiError::bad_request(
            "the name preview is taken by GET /api/v1/schedules/preview",
            "pick another name",
        ));
    }
    let action = body.action.checked()?;
    let roots = gw.agent.config().roots.clone();
    let draft = Draft {
        name: body.name,
        cron: body.cron,
        tz: body.tz,
        action,
        enabled: body.enabled.unwrap_or(true),
        created_by: "user".to_owned(),
        roots,
    };
    let job = manage::create(&gw.store, draft).map_err(manage_error)?;
    Ok((StatusCode::CREATED, Json(job_body(&job)?)).into_response())
}

/// One job, with its next three fires and its latest runs.
#[utoipa::path(get, path = "/api/v1/schedules/{name}", tag = "schedules",
    params(("name" = String, Path, description = "job name")),
    responses((status = 200, body = JobDetail), (status = 404, body = ErrorBody)))]
async fn get_one(
    State(gw): State<Arc<Gateway>>,
    ApiPath(name): ApiPath<String>,
) -> ApiResult<Json<JobDetail>> {
    let job = manage::find(&gw.store, &name).map_err(manage_error)?;
    let next_runs =
        if job.enabled { manage::next_fires(&job, 3).unwrap_or_default() } else { vec![] };
    let last_runs =
        gw.store.job_history(job.id, 10)?.iter().map(run_body).collect::<ApiResult<_>>()?;
    Ok(Json(JobDetail { job: job_body(&job)?, next_runs, last_runs }))
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EditJobBody {
    /// A new schedule.
    #[serde(default)]
    #[schema(min_length = 1)]
    pub cron: Option<String>,
    /// A new IANA zone.
    #[serde(default)]
    pub tz: Option<String>,
    /// A new action.
    #[serde(default)]
    pub action: Option<ActionBody>,
    /// Enable or disable it.
    #[serde(default)]
    pub enabled: Option<bool>,
}

/// Changes a job: what is left out stays. At least one field is given.
#[utoipa::path(patch, path = "/api/v1/schedules/{name}", tag = "schedules",
    params(("name" = String, Path, description = "job name")), request_body = EditJobBody,
    responses((status = 200, body = JobBody), (status = 400, body = ErrorBody),
              (status = 404, body = ErrorBody)))]
async fn edit(
    State(gw): State<Arc<Gateway>>,
    ApiPath(name): ApiPath<String>,
    ApiJson(body): ApiJson<EditJobBody>,
) -> ApiResult<Json<JobBody>> {
    let action = body.action.as_ref().map(ActionBody::checked).transpose()?;
    let changes = Changes { cron: body.cron, tz: body.tz, action, enabled: body.enabled };
    let job = manage::edit(&gw.store, &name, changes, "user").map_err(manage_error)?;
    Ok(Json(job_body(&job)?))
}

/// Deletes a job (its run history goes with it; the audit log keeps the deletion).
#[utoipa::path(delete, path = "/api/v1/schedules/{name}", tag = "schedules",
    params(("name" = String, Path, description = "job name")),
    responses((status = 204, description = "deleted"), (status = 404, body = ErrorBody)))]
async fn delete(
    State(gw): State<Arc<Gateway>>,
    ApiPath(name): ApiPath<String>,
) -> ApiResult<StatusCode> {
    manage::find(&gw.store, &name).map_err(manage_error)?;
    gw.store.job_delete(&name, "user").map_err(|e| manage_error(e.into()))?;
    Ok(StatusCode::NO_CONTENT)
}

/// What a run told the user.
#[derive(Debug, Serialize, ToSchema)]
pub struct NoticeBody {
    /// `completed`, `failed`, `skipped`, `timeout`, `interrupted` or `heartbeat`.
    pub kind: String,
    pub job: String,
    /// The slot (RFC 3339 UTC).
    pub slot: String,
    pub missed: u64,
    /// The message (the agent's answer, the reminder, why it failed, …).
    pub text: String,
}

/// Runs a job now, through the daemon's scheduler (a claimed, recorded, notified slot that does
/// not move its schedule), and answers what it told the user once the run is over.
#[utoipa::path(post, path = "/api/v1/schedules/{name}/run", tag = "schedules",
    params(("name" = String, Path, description = "job name")),
    responses((status = 200, body = NoticeBody), (status = 404, body = ErrorBody),
              (status = 409, body = ErrorBody, description = "it already ran in this second"),
              (status = 503, body = ErrorBody, description = "the daemon runs no scheduler")))]
async fn run_now(
    State(gw): State<Arc<Gateway>>,
    ApiPath(name): ApiPath<String>,
) -> ApiResult<Json<NoticeBody>> {
    gw.accepting()?;
    let Some(scheduler) = gw.notifications.scheduler() else {
        manage::find(&gw.store, &name).map_err(manage_error)?;
        return Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            "this daemon runs no scheduler, so it cannot run a job now",
            "run it with `aria schedule run NAME`, or start the daemon with `aria serve`",
        ));
    };
    let notice = scheduler.run_now(&name).await.map_err(|e| match e {
        RunNowError::Unknown(name) => unknown(&name),
        RunNowError::Busy(name) => ApiError::conflict(
            format!("job {name} already ran in this second"),
            "try again in a second",
        ),
        RunNowError::Store(e) => ApiError::from(e),
    })?;
    Ok(Json(NoticeBody {
        kind: notice.kind.as_str().to_owned(),
        job: notice.job,
        slot: notice.slot,
        missed: notice.missed,
        text: notice.text,
    }))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct HistoryQuery {
    /// How many runs (1–500, default 20; more is read as 500).
    #[param(value_type = Option<u64>, maximum = 4294967295u32)]
    pub limit: Option<u32>,
}

/// A job's runs, newest first.
#[utoipa::path(get, path = "/api/v1/schedules/{name}/history", tag = "schedules",
    params(("name" = String, Path, description = "job name"), HistoryQuery),
    responses((status = 200, body = RunList), (status = 400, body = ErrorBody),
              (status = 404, body = ErrorBody)))]
async fn history(
    State(gw): State<Arc<Gateway>>,
    ApiPath(name): ApiPath<String>,
    ApiQuery(query): ApiQuery<HistoryQuery>,
) -> ApiResult<Json<RunList>> {
    let job = manage::find(&gw.store, &name).map_err(manage_error)?;
    let limit = query.limit.unwrap_or(HISTORY_DEFAULT).clamp(1, HISTORY_MAX) as usize;
    let items =
        gw.store.job_history(job.id, limit)?.iter().map(run_body).collect::<ApiResult<_>>()?;
    Ok(Json(RunList { items }))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PreviewQuery {
    /// The cron expression (five fields, or `@daily` and the like).
    #[param(required = true, min_length = 1)]
    pub cron: Option<String>,
    /// An IANA zone (default: the daemon's).
    pub tz: Option<String>,
    /// Fires strictly after this RFC 3339 instant (default: now).
    pub after: Option<String>,
    /// How many fires (default 5; more than 1000 is read as 1000).
    #[param(value_type = Option<u64>, maximum = 4294967295u32)]
    pub count: Option<u32>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Fires {
    /// RFC 3339 in the zone, earliest first.
    pub fires: Vec<String>,
}

/// When a schedule fires (as `aria schedule preview`): the next `count` fires after `after`.
#[utoipa::path(get, path = "/api/v1/schedules/preview", tag = "schedules", params(PreviewQuery),
    responses((status = 200, body = Fires), (status = 400, body = ErrorBody)))]
async fn preview(ApiQuery(query): ApiQuery<PreviewQuery>) -> ApiResult<Json<Fires>> {
    let hint = "e.g. GET /api/v1/schedules/preview?cron=0%209%20*%20*%201-5&tz=Europe/Berlin";
    let bad = |why: String| ApiError::bad_request(why, hint);
    let Some(cron) = query.cron.as_deref().filter(|c| !c.trim().is_empty()) else {
        return Err(bad("say which schedule in `cron`".to_owned()));
    };
    let schedule = Schedule::parse(cron).map_err(|e| bad(e.to_string()))?;
    let tz = match query.tz.as_deref() {
        Some(name) => zone(name).map_err(|e| bad(e.to_string()))?,
        None => system_zone().1,
    };
    let after = match query.after.as_deref() {
        Some(text) => text.parse::<Timestamp>().map_err(|e| {
            bad(format!(
                "`after` {text:?} is not an RFC 3339 instant ({e}); write it like \
                 2026-03-29T00:00:00+01:00 or 2026-03-28T23:00:00Z"
            ))
        })?,
        None => Timestamp::now(),
    };
    let count = query.count.unwrap_or(PREVIEW_DEFAULT).min(PREVIEW_MAX) as usize;
    let fires = schedule.fires_after(&tz, after, count).map_err(|e| bad(e.to_string()))?;
    Ok(Json(Fires { fires: fires.iter().map(rfc3339_in).collect() }))
}

/// One notification.
#[derive(Debug, Serialize, ToSchema)]
pub struct NotificationBody {
    pub id: i64,
    /// RFC 3339 UTC.
    pub time: String,
    /// `completed`, `failed`, `skipped`, `timeout`, `interrupted`, `heartbeat`, `started`, …
    pub kind: String,
    pub job: Option<String>,
    pub slot: Option<String>,
    pub text: String,
    /// Where it was pushed (`telegram`, `desktop`, `web`).
    pub pushed: Vec<String>,
}

impl From<StoredNotification> for NotificationBody {
    fn from(n: StoredNotification) -> Self {
        NotificationBody {
            id: n.id,
            time: n.time,
            kind: n.kind,
            job: n.job,
            slot: n.slot,
            text: n.text,
            pushed: n.pushed,
        }
    }
}

/// A notification as a stream event (SSE and WebSocket): `notification` with the record.
pub fn notification_json(n: &StoredNotification) -> Value {
    json!(NotificationBody::from(n.clone()))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct NotificationList {
    /// Newest first.
    pub items: Vec<NotificationBody>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct NotificationsQuery {
    /// How many (1–500, default 50; more is read as 500).
    #[param(value_type = Option<u64>, maximum = 4294967295u32)]
    pub limit: Option<u32>,
    /// Only those with an id below this one (the next page: the last id of this one).
    pub before: Option<i64>,
}

/// Notifications, newest first: every one is recorded, pushed or not (`/notify off` and
/// `[notify] enabled = false` stop pushes only).
#[utoipa::path(get, path = "/api/v1/notifications", tag = "schedules", params(NotificationsQuery),
    responses((status = 200, body = NotificationList), (status = 400, body = ErrorBody)))]
async fn notifications(
    State(gw): State<Arc<Gateway>>,
    ApiQuery(query): ApiQuery<NotificationsQuery>,
) -> ApiResult<Json<NotificationList>> {
    let limit = query.limit.unwrap_or(NOTIFICATIONS_DEFAULT).clamp(1, NOTIFICATIONS_MAX) as usize;
    let items = gw.store.notifications(limit, query.before)?;
    Ok(Json(NotificationList { items: items.into_iter().map(NotificationBody::from).collect() }))
}

/// New notifications as Server-Sent Events, each an event named `notification` whose data is
/// the record, as they are made. The stream stays open (a comment every 15 s keeps it alive)
/// until the client leaves or the daemon stops.
#[utoipa::path(get, path = "/api/v1/notifications/events", tag = "schedules",
    responses((status = 200, description = "`notification` events", body = NotificationBody,
               content_type = "text/event-stream")))]
async fn notification_events(State(gw): State<Arc<Gateway>>) -> Response {
    let rx = gw.notifications.subscribe();
    let stop = gw.shutdown.clone();
    let events = futures::stream::unfold((rx, stop), |(mut rx, stop)| async move {
        loop {
            let received = tokio::select! {
                () = stop.cancelled() => return None,
                received = rx.recv() => received,
            };
            match received {
                Ok(n) => {
                    let event = SseEvent::default()
                        .event("notification")
                        .data(notification_json(&n).to_string());
                    return Some((Ok::<_, Infallible>(event), (rx, stop)));
                }
                // A slow client missed some: it can read them with GET /notifications.
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
            }
        }
    });
    Sse::new(events).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))).into_response()
}
