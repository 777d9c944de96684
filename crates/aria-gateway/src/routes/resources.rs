//! What the agent has and did, beyond conversations: its tools, the git restore points under
//! its roots (and rolling back to one), the audit log (list, verify, export), model spend and
//! the effective configuration. Memories are in `memories.rs`.
//!
//! Each handler does what the matching `aria` command does, with the same store and snapshot
//! calls and the same audit records; git work and whole-log verification run on the blocking
//! pool ([`blocking`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use aria_api::AuditEvent;
use aria_store::{AuditBundle, AuditRecordRow, SpendGroup, SpendRow, Store, StoreError};
use aria_tools::{Snapshot, SnapshotError, Snapshots};
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::Gateway;
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::extract::{ApiJsonOrEmpty, ApiPath, ApiQuery, Paging};

pub fn routes() -> OpenApiRouter<Arc<Gateway>> {
    OpenApiRouter::new()
        .routes(routes!(tools))
        .routes(routes!(mcp_servers))
        .routes(routes!(mcp_tools))
        .routes(routes!(snapshots))
        .routes(routes!(rollback))
        .routes(routes!(audit))
        .routes(routes!(verify))
        .routes(routes!(export))
        .routes(routes!(cost))
        .routes(routes!(config))
}

/// Runs synchronous work (git, a whole-log verification, a long scan) on the blocking pool.
/// A panic there is a 500 for this request, not a crash of the daemon.
pub(crate) async fn blocking<T: Send + 'static>(
    what: &'static str,
    work: impl FnOnce() -> ApiResult<T> + Send + 'static,
) -> ApiResult<T> {
    tokio::task::spawn_blocking(work).await.map_err(|e| ApiError::internal(what, e))?
}

// ---------------------------------------------------------------------------------------------
// Tools
// ---------------------------------------------------------------------------------------------

/// A tool the agent may call.
#[derive(Debug, Serialize, ToSchema)]
pub struct ToolInfo {
    pub name: String,
    pub description: String,
    /// The tier of a call without arguments: `read`, `recoverable-write`, `irreversible` or
    /// `blocked`.
    pub tier: String,
    /// Whether a call's tier depends on its arguments (e.g. `shell_execute`: `ls` reads,
    /// `rm` is irreversible): then `tier` is only the tier of a call without arguments, and
    /// each call is classified when the model makes it.
    pub tier_depends_on_arguments: bool,
    /// The arguments, as a JSON Schema.
    #[schema(value_type = Object)]
    pub parameters: Value,
}

/// The agent's tools, by name.
#[utoipa::path(get, path = "/api/v1/tools", tag = "tools",
    responses((status = 200, body = Vec<ToolInfo>)))]
async fn tools(State(gw): State<Arc<Gateway>>) -> Json<Vec<ToolInfo>> {
    let registry = gw.agent.tools();
    let tools = registry
        .specs()
        .into_iter()
        .filter_map(|spec| {
            let tool = registry.get(&spec.name)?;
            let tier = tool.tier(&json!({}));
            let varies = probes(&spec.parameters).iter().any(|args| tool.tier(args) != tier);
            Some(ToolInfo {
                name: spec.name,
                description: spec.description,
                tier: tier.as_str().to_owned(),
                tier_depends_on_arguments: varies,
                parameters: spec.parameters,
            })
        })
        .collect();
    Json(tools)
}

/// The MCP servers whose tools the agent may use: name, transport (`stdio` or `http`), command
/// or URL, tier, timeout, and how many tools they offered when last listed (`aria mcp tools`).
#[utoipa::path(get, path = "/api/v1/mcp/servers", tag = "tools",
    responses((status = 200, description = "`{\"items\": [server, …]}`", body = Object)))]
async fn mcp_servers(State(gw): State<Arc<Gateway>>) -> Json<Value> {
    let items = gw.services.mcp_servers.as_ref().map(|list| list()).unwrap_or_default();
    Json(json!({ "items": items }))
}

/// The agent's tools that come from MCP servers (`SERVER__tool`), with the server's name.
#[utoipa::path(get, path = "/api/v1/mcp/tools", tag = "tools",
    responses((status = 200, description = "`{\"items\": [tool, …]}`: each a tool of \
        /api/v1/tools plus its `server`", body = Object)))]
async fn mcp_tools(State(gw): State<Arc<Gateway>>) -> Json<Value> {
    let servers: Vec<String> = gw
        .services
        .mcp_servers
        .as_ref()
        .map(|list| list())
        .unwrap_or_default()
        .iter()
        .filter_map(|s| s["name"].as_str().map(str::to_owned))
        .collect();
    let Json(all) = tools(State(gw)).await;
    let items: Vec<Value> = all
        .into_iter()
        .filter_map(|t| {
            let server = servers.iter().find(|s| {
                t.name.strip_prefix(s.as_str()).is_some_and(|rest| rest.starts_with("__"))
            })?;
            let mut row = serde_json::to_value(&t).ok()?;
            row["server"] = json!(server);
            Some(row)
        })
        .collect();
    Json(json!({ "items": items }))
}

/// Sample arguments for a tool's schema, to see whether its tier depends on them: the required
/// properties, alone and with each other property, filled with a few everyday values (a file,
/// a command, a URL, code). A probe, not a proof; `Tool::tier` is pure classification, so
/// calling it runs nothing.
fn probes(schema: &Value) -> Vec<Value> {
    const SAMPLES: [&str; 4] = ["README.md", "ls", "https://example.com/", "print(1)"];
    let Some(properties) = schema["properties"].as_object() else { return Vec::new() };
    let required: Vec<&str> =
        schema["required"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    let sample = |name: &str, text: &str| -> Value {
        let kind = match &properties.get(name).map(|p| &p["type"]) {
            Some(Value::String(t)) => t.as_str(),
            Some(Value::Array(ts)) => {
                ts.iter().filter_map(Value::as_str).find(|t| *t != "null").unwrap_or("string")
            }
            _ => "string",
        };
        match kind {
            "integer" | "number" => json!(1),
            "boolean" => json!(false),
            "array" => json!([]),
            "object" => json!({}),
            _ => json!(text),
        }
    };
    let mut out = Vec::new();
    for text in SAMPLES {
        let base: serde_json::Map<String, Value> =
            required.iter().map(|&name| (name.to_owned(), sample(name, text))).collect();
        out.push(Value::Object(base.clone()));
        for name in properties.keys().filter(|n| !required.contains(&n.as_str())) {
            let mut args = base.clone();
            args.insert(name.clone(), sample(name, text));
            out.push(Value::Object(args));
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Snapshots
// ---------------------------------------------------------------------------------------------

/// One restore point (as `aria snapshots list --json` prints it).
#[derive(Debug, Serialize, ToSchema)]
pub struct SnapshotBody {
    /// The id to roll back to: the snapshot branch, `snapshot/<operation>-<time>`.
    pub id: String,
    /// When it was taken (RFC 3339, UTC).
    pub time: String,
    pub unix_time: i64,
    /// What was about to happen: `file_write`, `shell_execute`, ...
    pub operation: String,
    /// The run that took it (empty when none).
    pub session: String,
    /// The working tree of the repository it belongs to.
    pub repository: String,
    /// The commit holding the restore point.
    pub commit: String,
    /// Files that differed from HEAD when it was taken (`M path`, `A path`, `D path`).
    pub files_changed: Vec<String>,
    /// Paths the operation said it was about to write, relative to the repository.
    pub targets: Vec<String>,
}

impl From<Snapshot> for SnapshotBody {
    fn from(s: Snapshot) -> SnapshotBody {
        SnapshotBody {
            time: s.time_rfc3339(),
            id: s.id.0,
            unix_time: s.time,
            operation: s.operation,
            session: s.session,
            repository: s.repository.display().to_string(),
            commit: s.commit,
            files_changed: s.files_changed,
            targets: s.targets,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SnapshotPage {
    pub items: Vec<SnapshotBody>,
    pub limit: usize,
    pub offset: usize,
    pub total: u64,
}

fn snapshots_service(gw: &Gateway) -> ApiResult<Arc<Snapshots>> {
    gw.services.snapshots.clone().ok_or_else(|| {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            "this daemon has no snapshots: it was started without them",
            "restore points are kept by `aria serve` for the repositories under its roots; \
             restart it with the roots set (`--root DIR` or `[scope] roots`), or use \
             `aria snapshots list` and `aria rollback ID`",
        )
    })
}

/// A snapshot failure in the API's shape: a client mistake (unknown or ambiguous id, a path
/// outside the roots) is 4xx with the fix, a git or file failure 500.
fn snapshot_error(e: SnapshotError) -> ApiError {
    let message = e.to_string();
    match e {
        SnapshotError::Unknown { .. } => ApiError::not_found(
            message,
            "list the restore points with GET /api/v1/snapshots and use an `id` from there",
        ),
        SnapshotError::Ambiguous { .. } => ApiError::conflict(
            message,
            "send the snapshot's repository as {\"repository\": PATH}, or use its commit id",
        ),
        SnapshotError::OutsideRoots { .. } | SnapshotError::PathOutsideRepository { .. } => {
            ApiError::bad_request(
                message,
                "`repository` must be a repository under one of the daemon's roots, as \
                 GET /api/v1/snapshots shows it",
            )
        }
        SnapshotError::NotARepository { .. } | SnapshotError::Bare { .. } => {
            ApiError::bad_request(message, "name a repository with a working tree")
        }
        SnapshotError::Unsafe { .. } => {
            ApiError::conflict(message, "move the file out of the way by hand, then try again")
        }
        SnapshotError::Git { .. } | SnapshotError::Io { .. } => {
            ApiError::internal("the snapshot operation failed", message)
        }
    }
}

/// The restore points of the repositories under the roots, newest first. ARIA takes one
/// before every write it makes.
#[utoipa::path(get, path = "/api/v1/snapshots", tag = "snapshots", params(Paging),
    responses((status = 200, body = SnapshotPage), (status = 400, body = ErrorBody),
              (status = 503, body = ErrorBody)))]
async fn snapshots(
    State(gw): State<Arc<Gateway>>,
    ApiQuery(paging): ApiQuery<Paging>,
) -> ApiResult<Json<SnapshotPage>> {
    let service = snapshots_service(&gw)?;
    let all =
        blocking("listing snapshots", move || service.list(None, None).map_err(snapshot_error))
            .await?;
    let total = u64::try_from(all.len()).unwrap_or(u64::MAX);
    let items = all
        .into_iter()
        .skip(paging.offset())
        .take(paging.limit())
        .map(SnapshotBody::from)
        .collect();
    Ok(Json(SnapshotPage { items, limit: paging.limit(), offset: paging.offset(), total }))
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RollbackBody {
    /// The repository the snapshot belongs to (its `repository` in the listing, an absolute
    /// path to a directory under the roots): needed only when two repositories have a snapshot
    /// of the same id.
    #[serde(default)]
    pub repository: Option<String>,
}

/// What a rollback did.
#[derive(Debug, Serialize, ToSchema)]
pub struct RollbackDone {
    /// The restore point rolled back to.
    pub snapshot: String,
    pub operation: String,
    pub repository: String,
    /// Every file written back or deleted, relative to the repository; empty when the files
    /// already matched.
    #[schema(value_type = Vec<Object>)]
    pub restored: Vec<Value>,
    /// The paths of `restored`.
    pub files: Vec<String>,
    /// The commit recording the rollback (on `branch`; the user's branch, HEAD and index are
    /// unchanged); `null` when nothing had to change.
    pub revert_commit: Option<String>,
    /// The branch holding the revert commit; rolling back to it undoes this rollback.
    pub branch: Option<String>,
}

/// Puts the files of a restore point back (and deletes those that did not exist then), then
/// records a revert commit on a new branch; audited as `snapshot.rollback` by the user.
#[utoipa::path(post, path = "/api/v1/snapshots/{id}/rollback", tag = "snapshots",
    params(("id" = String, Path, description = "snapshot id (branch name, with or without \
        `snapshot/`, or commit id)")),
    request_body = Option<RollbackBody>,
    responses((status = 200, body = RollbackDone), (status = 400, body = ErrorBody),
              (status = 404, body = ErrorBody), (status = 409, body = ErrorBody),
              (status = 503, body = ErrorBody)))]
async fn rollback(
    State(gw): State<Arc<Gateway>>,
    ApiPath(id): ApiPath<String>,
    ApiJsonOrEmpty(body): ApiJsonOrEmpty<RollbackBody>,
) -> ApiResult<Json<RollbackDone>> {
    let service = snapshots_service(&gw)?;
    if id.trim().is_empty() {
        return Err(ApiError::bad_request(
            "no snapshot id",
            "use an `id` from GET /api/v1/snapshots",
        ));
    }
    let repository = body.repository.as_deref().map(repository_arg).transpose()?;
    let store = gw.store.clone();
    blocking("rolling back", move || {
        let done = rollback_audited(&service, &store, &id, repository.as_deref(), "http").map_err(
            |e| match e {
                Rolled::Snapshot(e) => snapshot_error(e),
                Rolled::Store(e) => e.into(),
            },
        )?;
        Ok(Json(RollbackDone {
            files: done.restored.iter().map(|r| r.path.clone()).collect(),
            restored: done.restored.iter().map(|r| json!(r)).collect(),
            snapshot: done.snapshot.0,
            operation: done.operation,
            repository: done.repository.display().to_string(),
            revert_commit: done.revert_commit,
            branch: done.branch.map(|b| b.0),
        }))
    })
    .await
}

/// Why an audited rollback failed.
#[derive(Debug)]
pub(crate) enum Rolled {
    Snapshot(SnapshotError),
    Store(StoreError),
}

/// Puts a snapshot's files back and records it in the audit log (the same record as
/// `aria rollback`, plus the channel it came through): a rollback changes files like any other
/// change. Blocking (git work).
pub(crate) fn rollback_audited(
    service: &Snapshots,
    store: &Store,
    id: &str,
    repository: Option<&Path>,
    channel: &str,
) -> Result<aria_tools::snapshot::Rollback, Rolled> {
    let done = service.rollback(id, repository, None, "user").map_err(Rolled::Snapshot)?;
    store
        .audit_append(AuditEvent::new(
            None,
            "user",
            "snapshot.rollback",
            json!({
                "snapshot": done.snapshot,
                "repository": done.repository,
                "path": Value::Null,
                "restored": done.restored,
                "revert_commit": done.revert_commit,
                "branch": done.branch,
                "channel": channel,
            }),
        ))
        .map_err(Rolled::Store)?;
    Ok(done)
}

/// `repository` of a rollback: an absolute path to a directory.
fn repository_arg(text: &str) -> ApiResult<PathBuf> {
    let path = Path::new(text.trim());
    if !path.is_absolute() {
        return Err(ApiError::bad_request(
            format!("`repository` must be an absolute path, not `{text}`"),
            "send the snapshot's `repository` as GET /api/v1/snapshots shows it",
        ));
    }
    if !path.is_dir() {
        return Err(ApiError::bad_request(
            format!("there is no directory {}", path.display()),
            "send the snapshot's `repository` as GET /api/v1/snapshots shows it",
        ));
    }
    Ok(path.to_path_buf())
}

// ---------------------------------------------------------------------------------------------
// Audit
// ---------------------------------------------------------------------------------------------

/// Audit records by default, and at most.
const AUDIT_DEFAULT: usize = 100;
const AUDIT_MAX: usize = 1000;

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AuditQuery {
    /// The last N records (1–1000, default 100; more is read as 1000).
    #[param(value_type = Option<u64>, maximum = 4294967295u32)]
    pub last: Option<u32>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AuditRecords {
    /// Oldest first: `{seq, time, session_id, actor, kind, payload, prev_hash,
    /// session_prev_hash, hash}`, payloads redacted.
    #[schema(value_type = Vec<Object>)]
    pub items: Vec<AuditRecordRow>,
}

/// The newest audit records, oldest first.
#[utoipa::path(get, path = "/api/v1/audit", tag = "audit", params(AuditQuery),
    responses((status = 200, body = AuditRecords), (status = 400, body = ErrorBody)))]
async fn audit(
    State(gw): State<Arc<Gateway>>,
    ApiQuery(query): ApiQuery<AuditQuery>,
) -> ApiResult<Json<AuditRecords>> {
    let last = query.last.map_or(AUDIT_DEFAULT, |n| n as usize).clamp(1, AUDIT_MAX);
    Ok(Json(AuditRecords { items: gw.store.audit_list(Some(last))? }))
}

/// The first record that does not check out.
#[derive(Debug, Serialize, ToSchema)]
pub struct VerifyFailure {
    pub seq: u64,
    pub reason: String,
}

/// The audit log's last record as the anchor file beside the database recorded it.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct AuditAnchor {
    pub seq: u64,
    pub hash: String,
}

/// What `aria audit verify` reports.
#[derive(Debug, Serialize, ToSchema)]
pub struct VerifyAnswer {
    /// The chain verifies and agrees with the anchor.
    pub ok: bool,
    /// Records examined (all of them: verification does not stop at a failure).
    pub records: u64,
    pub first_failure: Option<VerifyFailure>,
    /// The anchor (`audit-head.json`) does not match the log: records were cut from its end
    /// or rewritten.
    pub anchor_problem: Option<String>,
    pub anchor: Option<AuditAnchor>,
    /// Whether the append-only triggers are present and unchanged (`false` is a warning: the
    /// database no longer refuses edits).
    pub triggers_intact: bool,
    /// One line for a person, as `aria audit verify` prints it.
    pub message: String,
}

/// Verifies the whole audit chain, and the anchor file beside the database.
#[utoipa::path(get, path = "/api/v1/audit/verify", tag = "audit",
    responses((status = 200, body = VerifyAnswer)))]
async fn verify(State(gw): State<Arc<Gateway>>) -> ApiResult<Json<VerifyAnswer>> {
    let (store, data_dir) = (gw.store.clone(), gw.data_dir.clone());
    blocking("verifying the audit log", move || {
        let report = store.verify(None)?;
        let (anchor, anchor_problem) = if report.is_ok() {
            match check_anchor(&data_dir, &store) {
                Ok(anchor) => (anchor, None),
                Err(problem) => (None, Some(problem)),
            }
        } else {
            (None, None)
        };
        let message = match (&report.first_failure, &anchor_problem) {
            (Some(f), _) => format!("FAILED: record {} does not verify: {}", f.seq, f.reason),
            (None, Some(problem)) => format!("FAILED: {problem}"),
            (None, None) => format!("ok: {} records verified in the audit log", report.records),
        };
        Ok(Json(VerifyAnswer {
            ok: report.is_ok() && anchor_problem.is_none(),
            records: report.records,
            first_failure: report
                .first_failure
                .map(|f| VerifyFailure { seq: f.seq, reason: f.reason }),
            anchor_problem,
            anchor,
            triggers_intact: report.triggers_intact,
            message,
        }))
    })
    .await
}

/// Checks the anchor `$ARIA_HOME/audit-head.json` (written by `aria` after every run) against
/// the log, as `aria audit verify` does (aria-cli's `anchor::check`; keep the two in step).
/// No anchor yet is fine.
fn check_anchor(data_dir: &Path, store: &Store) -> Result<Option<AuditAnchor>, String> {
    let path = data_dir.join("audit-head.json");
    let Ok(text) = std::fs::read_to_string(&path) else { return Ok(None) };
    let anchor: AuditAnchor = serde_json::from_str(&text)
        .map_err(|e| format!("the audit anchor {} is unreadable ({e})", path.display()))?;
    match store.audit_hash_at(anchor.seq).map_err(|e| e.to_string())? {
        Some(hash) if hash == anchor.hash => Ok(Some(anchor)),
        Some(_) => Err(format!(
            "record {} does not match the hash recorded in the audit anchor: the log was rewritten",
            anchor.seq
        )),
        None => Err(format!(
            "record {} existed (the audit anchor recorded it) but is gone: records were deleted \
             from the end of the log",
            anchor.seq
        )),
    }
}

/// One run's audit records as a self-contained bundle, verifiable offline with
/// `aria audit verify --file BUNDLE` (the records of a deleted conversation's runs too).
#[utoipa::path(get, path = "/api/v1/audit/export/{session_id}", tag = "audit",
    params(("session_id" = String, Path, description = "session (run) id")),
    responses((status = 200, body = Object, description = "the bundle: {format, session_id, \
        exported_at, hash_algorithm, records}"),
              (status = 404, body = ErrorBody)))]
async fn export(
    State(gw): State<Arc<Gateway>>,
    ApiPath(session_id): ApiPath<String>,
) -> ApiResult<Json<AuditBundle>> {
    match gw.store.export_session(&session_id) {
        Ok(bundle) => Ok(Json(bundle)),
        Err(StoreError::NoAuditRecords(_)) => Err(ApiError::not_found(
            format!("no audit records for run {session_id}"),
            "check the id: list runs with GET /api/v1/runs",
        )),
        Err(e) => Err(e.into()),
    }
}

// ---------------------------------------------------------------------------------------------
// Cost, config
// ---------------------------------------------------------------------------------------------

/// Model spend (UTC periods), as `aria cost` reports it.
#[derive(Debug, Serialize, ToSchema)]
pub struct Cost {
    pub today_usd: f64,
    pub this_month_usd: f64,
    /// The configured caps: `{per_task_usd, per_day_usd, per_month_usd}` (`null`: no cap).
    #[schema(value_type = Object)]
    pub caps: Value,
    /// The start of this month (RFC 3339 UTC): `by_model` and `by_day` count from there.
    pub since: String,
    /// This month's spend per model, most expensive first:
    /// `{key, calls, input_tokens, output_tokens, cost_usd}`.
    #[schema(value_type = Vec<Object>)]
    pub by_model: Vec<SpendRow>,
    /// This month's spend per UTC day, newest first.
    #[schema(value_type = Vec<Object>)]
    pub by_day: Vec<SpendRow>,
}

/// Spend today, this month, per model and per day.
#[utoipa::path(get, path = "/api/v1/cost", tag = "cost",
    responses((status = 200, body = Cost)))]
async fn cost(State(gw): State<Arc<Gateway>>) -> ApiResult<Json<Cost>> {
    let since = aria_store::month_start_utc();
    let store = &gw.store;
    let config = &gw.services.config;
    Ok(Json(Cost {
        today_usd: store.spend_since(&aria_store::day_start_utc())?,
        this_month_usd: store.spend_since(&since)?,
        caps: json!({
            "per_task_usd": config["limits"]["max_cost_usd"],
            "per_day_usd": config["caps"]["per_day_usd"],
            "per_month_usd": config["caps"]["per_month_usd"],
        }),
        by_model: store.spend_report(SpendGroup::Model, Some(&since), 50)?,
        by_day: store.spend_report(SpendGroup::Day, Some(&since), 31)?,
        since,
    }))
}

/// The effective configuration, secrets redacted.
#[utoipa::path(get, path = "/api/v1/config", tag = "config",
    responses((status = 200, body = Object)))]
async fn config(State(gw): State<Arc<Gateway>>) -> Json<Value> {
    Json(gw.services.config.clone())
}
