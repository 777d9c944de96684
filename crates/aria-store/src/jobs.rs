//! Scheduled jobs and their slot claims.
//!
//! A job is a named cron schedule with an action; what the expression means and when a slot
//! is due is `aria-scheduler`'s business, this file only keeps the rows. A **slot** is one
//! scheduled instant of one job, as RFC 3339 UTC text with seconds (`2026-03-29T01:00:00Z`,
//! fixed width, so text order is time order). A slot is **claimed** before it runs: the check
//! that nobody claimed it and the insert happen in one `BEGIN IMMEDIATE` transaction, so two
//! schedulers on one database, or a restart mid-run, never both run it. A claim is finished
//! with an outcome; a claim never finished (a crash) is later marked `interrupted` and is never
//! claimed again — the primary key (job, slot) makes a second claim impossible, not just
//! unlikely.
//!
//! Every change (create, enable, disable, delete, claim, finish, interrupted) appends an audit
//! record in the same transaction.

use rusqlite::{OptionalExtension, Transaction, TransactionBehavior, params};
use serde::Serialize;
use serde_json::{Value, json};

use aria_api::AuditEvent;

use crate::StoreError;
use crate::error::sql;
use crate::store::{Store, now_rfc3339};

/// The statements of the schema step that adds jobs and slot claims.
pub(crate) const JOBS: &[&str] = &[
    "CREATE TABLE jobs (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        cron TEXT NOT NULL,
        tz TEXT NOT NULL,
        action TEXT NOT NULL,
        enabled INTEGER NOT NULL,
        created_by TEXT NOT NULL,
        roots TEXT NOT NULL,
        last_completed_slot TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    ) STRICT",
    "CREATE TABLE job_slots (
        job_id INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
        slot TEXT NOT NULL,
        claimed_at TEXT NOT NULL,
        claimed_by TEXT NOT NULL,
        missed INTEGER NOT NULL DEFAULT 0,
        finished_at TEXT,
        outcome TEXT,
        detail TEXT,
        session_id TEXT,
        PRIMARY KEY (job_id, slot)
    ) STRICT",
    "CREATE INDEX job_slots_open ON job_slots(finished_at) WHERE finished_at IS NULL",
];

/// Runs asked for by hand (`aria schedule run`) are slots too, marked so that they do not move
/// the schedule: the scheduler's "last claimed slot" counts scheduled slots only.
pub(crate) const MANUAL_RUNS: &str =
    "ALTER TABLE job_slots ADD COLUMN manual INTEGER NOT NULL DEFAULT 0";

/// The latest scheduled (not manual) slot claimed, kept on the job row so that reading every
/// job's schedule on each tick is one table scan, not a lookup per job.
pub(crate) const LAST_SCHEDULED_SLOT: &[&str] = &[
    "ALTER TABLE jobs ADD COLUMN last_scheduled_slot TEXT",
    "UPDATE jobs SET last_scheduled_slot = (SELECT MAX(s.slot) FROM job_slots s \
     WHERE s.job_id = jobs.id AND s.manual = 0)",
];

/// A job as stored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Job {
    pub id: i64,
    pub name: String,
    pub cron: String,
    /// IANA zone name.
    pub tz: String,
    /// What to do, as the scheduler's JSON (`{"kind": "notify", "message": …}`).
    pub action: Value,
    pub enabled: bool,
    /// `user` or `agent`.
    pub created_by: String,
    /// The roots the job runs with.
    pub roots: Vec<String>,
    /// The latest slot whose run finished (any outcome).
    pub last_completed_slot: Option<String>,
    /// The latest slot claimed (finished or not).
    pub last_claimed_slot: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

/// What the scheduler reads of every enabled job on each tick (no JSON to decode).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobSchedule {
    pub id: i64,
    pub name: String,
    pub cron: String,
    pub tz: String,
    pub last_claimed_slot: Option<String>,
    /// The last change to the job (creation, edit, enable, disable): slots before it are not
    /// caught up.
    pub updated_at: String,
}

/// A job to create.
#[derive(Debug, Clone, PartialEq)]
pub struct NewJob {
    pub name: String,
    pub cron: String,
    pub tz: String,
    pub action: Value,
    pub enabled: bool,
    pub created_by: String,
    pub roots: Vec<String>,
}

/// One claimed slot of a job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SlotRun {
    pub job_id: i64,
    pub slot: String,
    pub claimed_at: String,
    pub claimed_by: String,
    /// Earlier slots missed while the scheduler was down (this run is their catch-up).
    pub missed: u64,
    pub finished_at: Option<String>,
    /// `ok`, `failed`, `timeout`, `skipped` or `interrupted`; `None` while running.
    pub outcome: Option<String>,
    pub detail: Option<String>,
    pub session_id: Option<String>,
}

/// The answer to a claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// This caller owns the slot and must run it, then finish it.
    Claimed,
    /// Someone claimed it before (finished or not): do not run it.
    Taken,
    /// The job is gone or disabled.
    NotRunnable,
}

const JOB_SELECT: &str = "SELECT j.id, j.name, j.cron, j.tz, j.action, j.enabled, j.created_by, \
    j.roots, j.last_completed_slot, j.last_scheduled_slot, \
    j.created_at, j.updated_at FROM jobs j";

const SLOT_SELECT: &str = "SELECT job_id, slot, claimed_at, claimed_by, missed, finished_at, \
    outcome, detail, session_id FROM job_slots";

fn job_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<(Job, String, String)> {
    Ok((
        Job {
            id: row.get(0)?,
            name: row.get(1)?,
            cron: row.get(2)?,
            tz: row.get(3)?,
            action: Value::Null,
            enabled: row.get(5)?,
            created_by: row.get(6)?,
            roots: Vec::new(),
            last_completed_slot: row.get(8)?,
            last_claimed_slot: row.get(9)?,
            created_at: row.get(10)?,
            updated_at: row.get(11)?,
        },
        row.get(4)?,
        row.get(7)?,
    ))
}

fn decode_job((mut job, action, roots): (Job, String, String)) -> Result<Job, StoreError> {
    job.action = serde_json::from_str(&action)
        .map_err(|_| StoreError::Corrupt { what: format!("the action of job {}", job.name) })?;
    job.roots = serde_json::from_str(&roots)
        .map_err(|_| StoreError::Corrupt { what: format!("the roots of job {}", job.name) })?;
    Ok(job)
}

fn slot_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<SlotRun> {
    Ok(SlotRun {
        job_id: row.get(0)?,
        slot: row.get(1)?,
        claimed_at: row.get(2)?,
        claimed_by: row.get(3)?,
        missed: row.get::<_, i64>(4)?.max(0).unsigned_abs(),
        finished_at: row.get(5)?,
        outcome: row.get(6)?,
        detail: row.get(7)?,
        session_id: row.get(8)?,
    })
}

fn encode(what: &'static str, value: &impl Serialize) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|source| StoreError::Encode { what, source })
}

impl Store {
    pub(crate) fn write_tx<T>(
        &self,
        context: &'static str,
        f: impl FnOnce(&Transaction<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut conn = self.conn();
        let tx =
            conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(sql(context))?;
        let out = f(&tx)?;
        tx.commit().map_err(sql(context))?;
        // After the commit: a scheduler that reads the fingerprint now also reads the change.
        self.jobs_changed();
        Ok(out)
    }

    fn job_audit(
        &self,
        tx: &Transaction<'_>,
        actor: &str,
        kind: &str,
        payload: Value,
    ) -> Result<(), StoreError> {
        self.append_events_in(tx, [AuditEvent::new(None, actor, kind, payload)]).map(drop)
    }

    /// Creates a job; its name must be new. Audited as `job.create` by `created_by`.
    pub fn job_create(&self, new: &NewJob) -> Result<Job, StoreError> {
        let action = encode("a job's action", &new.action)?;
        let roots = encode("a job's roots", &new.roots)?;
        self.write_tx("creating a job", |tx| {
            let exists: bool = tx
                .query_row("SELECT EXISTS (SELECT 1 FROM jobs WHERE name = ?1)", [&new.name], |r| {
                    r.get(0)
                })
                .map_err(sql("creating a job"))?;
            if exists {
                return Err(StoreError::DuplicateJob(new.name.clone()));
            }
            let now = now_rfc3339();
            tx.execute(
                "INSERT INTO jobs (name, cron, tz, action, enabled, created_by, roots, \
                 created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8)",
                params![
                    new.name,
                    new.cron,
                    new.tz,
                    action,
                    new.enabled,
                    new.created_by,
                    roots,
                    now
                ],
            )
            .map_err(sql("creating a job"))?;
            self.job_audit(
                tx,
                &new.created_by,
                "job.create",
                json!({"name": new.name, "cron": new.cron, "tz": new.tz, "action": new.action,
                       "enabled": new.enabled, "roots": new.roots}),
            )
        })?;
        self.job(&new.name)?.ok_or_else(|| StoreError::UnknownJob(new.name.clone()))
    }

    /// The job named `name`, if any.
    pub fn job(&self, name: &str) -> Result<Option<Job>, StoreError> {
        let conn = self.conn();
        let row = conn
            .query_row(&format!("{JOB_SELECT} WHERE j.name = ?1"), [name], job_row)
            .optional()
            .map_err(sql("reading a job"))?;
        row.map(decode_job).transpose()
    }

    /// Every job, by name.
    pub fn jobs(&self) -> Result<Vec<Job>, StoreError> {
        let conn = self.conn();
        let mut stmt =
            conn.prepare(&format!("{JOB_SELECT} ORDER BY j.name")).map_err(sql("listing jobs"))?;
        let rows = stmt
            .query_map([], job_row)
            .map_err(sql("listing jobs"))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(sql("listing jobs"))?;
        rows.into_iter().map(decode_job).collect()
    }

    /// The schedule of every enabled job, by id.
    pub fn job_schedules(&self) -> Result<Vec<JobSchedule>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached(
                "SELECT j.id, j.name, j.cron, j.tz, j.last_scheduled_slot, j.updated_at \
                 FROM jobs j WHERE j.enabled = 1 ORDER BY j.id",
            )
            .map_err(sql("listing job schedules"))?;
        stmt.query_map([], |r| {
            Ok(JobSchedule {
                id: r.get(0)?,
                name: r.get(1)?,
                cron: r.get(2)?,
                tz: r.get(3)?,
                last_claimed_slot: r.get(4)?,
                updated_at: r.get(5)?,
            })
        })
        .map_err(sql("listing job schedules"))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(sql("listing job schedules"))
    }

    /// Changes a job's expression, zone or action (those given). Audited as `job.edit` by
    /// `actor` with the new values.
    pub fn job_update(
        &self,
        name: &str,
        cron: Option<&str>,
        tz: Option<&str>,
        action: Option<&Value>,
        actor: &str,
    ) -> Result<(), StoreError> {
        let action_text = action.map(|a| encode("a job's action", a)).transpose()?;
        self.write_tx("editing a job", |tx| {
            let changed = tx
                .execute(
                    "UPDATE jobs SET cron = COALESCE(?2, cron), tz = COALESCE(?3, tz), \
                     action = COALESCE(?4, action), updated_at = ?5 WHERE name = ?1",
                    params![name, cron, tz, action_text, now_rfc3339()],
                )
                .map_err(sql("editing a job"))?;
            if changed == 0 {
                return Err(StoreError::UnknownJob(name.to_owned()));
            }
            self.job_audit(
                tx,
                actor,
                "job.edit",
                json!({"name": name, "cron": cron, "tz": tz, "action": action}),
            )
        })
    }

    /// Enables or disables a job. Audited as `job.enable` / `job.disable` by `actor`.
    pub fn job_set_enabled(
        &self,
        name: &str,
        enabled: bool,
        actor: &str,
    ) -> Result<(), StoreError> {
        self.write_tx("enabling or disabling a job", |tx| {
            let changed = tx
                .execute(
                    "UPDATE jobs SET enabled = ?2, updated_at = ?3 WHERE name = ?1",
                    params![name, enabled, now_rfc3339()],
                )
                .map_err(sql("enabling or disabling a job"))?;
            if changed == 0 {
                return Err(StoreError::UnknownJob(name.to_owned()));
            }
            let kind = if enabled { "job.enable" } else { "job.disable" };
            self.job_audit(tx, actor, kind, json!({"name": name}))
        })
    }

    /// Deletes a job and its slot history. Audited as `job.delete` by `actor`.
    pub fn job_delete(&self, name: &str, actor: &str) -> Result<(), StoreError> {
        self.write_tx("deleting a job", |tx| {
            let id: Option<i64> = tx
                .query_row("SELECT id FROM jobs WHERE name = ?1", [name], |r| r.get(0))
                .optional()
                .map_err(sql("deleting a job"))?;
            let Some(id) = id else { return Err(StoreError::UnknownJob(name.to_owned())) };
            tx.execute("DELETE FROM job_slots WHERE job_id = ?1", [id])
                .map_err(sql("deleting a job"))?;
            tx.execute("DELETE FROM jobs WHERE id = ?1", [id]).map_err(sql("deleting a job"))?;
            self.job_audit(tx, actor, "job.delete", json!({"name": name}))
        })
    }

    /// What identifies the state of the jobs: it changes whenever a job is created, edited,
    /// enabled, disabled, deleted, claimed or finished — through this store (a counter) or by
    /// another connection to the database (SQLite's `data_version`, which moves with any
    /// other connection's write). A scheduler that sees the same fingerprint, with no job due
    /// yet, has nothing to read.
    pub fn jobs_fingerprint(&self) -> Result<(u64, i64), StoreError> {
        let version: i64 = self
            .conn()
            .pragma_query_value(None, "data_version", |r| r.get(0))
            .map_err(sql("reading the database's data version"))?;
        Ok((self.jobs_generation.load(std::sync::atomic::Ordering::SeqCst), version))
    }

    fn jobs_changed(&self) {
        self.jobs_generation.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    /// Claims `slot` of job `job_id` for `claimed_by`, at `now` (RFC 3339 UTC). The check and
    /// the insert are one `BEGIN IMMEDIATE` transaction: of any number of callers, on any
    /// number of connections, exactly one gets [`Claim::Claimed`]. Audited as `job.claim`.
    pub fn job_claim_slot(
        &self,
        job_id: i64,
        slot: &str,
        now: &str,
        claimed_by: &str,
        missed: u64,
    ) -> Result<Claim, StoreError> {
        self.write_tx("claiming a job's slot", |tx| {
            let job: Option<(String, bool)> = tx
                .query_row("SELECT name, enabled FROM jobs WHERE id = ?1", [job_id], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })
                .optional()
                .map_err(sql("claiming a job's slot"))?;
            let Some((name, true)) = job else { return Ok(Claim::NotRunnable) };
            let taken: bool = tx
                .query_row(
                    "SELECT EXISTS (SELECT 1 FROM job_slots WHERE job_id = ?1 AND slot = ?2)",
                    params![job_id, slot],
                    |r| r.get(0),
                )
                .map_err(sql("claiming a job's slot"))?;
            if taken {
                return Ok(Claim::Taken);
            }
            tx.execute(
                "INSERT INTO job_slots (job_id, slot, claimed_at, claimed_by, missed) \
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![job_id, slot, now, claimed_by, crate::error::to_i64("missed", missed)?],
            )
            .map_err(sql("claiming a job's slot"))?;
            tx.execute(
                "UPDATE jobs SET last_scheduled_slot = ?2 WHERE id = ?1 \
                 AND (last_scheduled_slot IS NULL OR last_scheduled_slot < ?2)",
                params![job_id, slot],
            )
            .map_err(sql("claiming a job's slot"))?;
            self.job_audit(
                tx,
                "scheduler",
                "job.claim",
                json!({"name": name, "slot": slot, "by": claimed_by, "missed": missed}),
            )?;
            Ok(Claim::Claimed)
        })
    }

    /// Claims `slot` of job `job_id` for a run asked for by hand: like [`Store::job_claim_slot`]
    /// but the job may be disabled, and the claim is marked manual so the schedule does not
    /// move. Audited as `job.claim` with `manual: true`.
    pub fn job_claim_manual(
        &self,
        job_id: i64,
        slot: &str,
        now: &str,
        claimed_by: &str,
    ) -> Result<Claim, StoreError> {
        self.write_tx("claiming a job's slot", |tx| {
            let name: Option<String> = tx
                .query_row("SELECT name FROM jobs WHERE id = ?1", [job_id], |r| r.get(0))
                .optional()
                .map_err(sql("claiming a job's slot"))?;
            let Some(name) = name else { return Ok(Claim::NotRunnable) };
            let inserted = tx
                .execute(
                    "INSERT OR IGNORE INTO job_slots (job_id, slot, claimed_at, claimed_by, manual) \
                     VALUES (?1, ?2, ?3, ?4, 1)",
                    params![job_id, slot, now, claimed_by],
                )
                .map_err(sql("claiming a job's slot"))?;
            if inserted == 0 {
                return Ok(Claim::Taken);
            }
            self.job_audit(
                tx,
                "user",
                "job.claim",
                json!({"name": name, "slot": slot, "by": claimed_by, "manual": true}),
            )?;
            Ok(Claim::Claimed)
        })
    }

    /// Records how a claimed slot ended and moves the job's `last_completed_slot` forward.
    /// Only an unfinished claim can be finished (`false` otherwise: it was marked interrupted
    /// meanwhile, and that record stands). Audited as `job.finish`.
    pub fn job_finish_slot(
        &self,
        job_id: i64,
        slot: &str,
        now: &str,
        outcome: &str,
        detail: Option<&str>,
        session_id: Option<&str>,
    ) -> Result<bool, StoreError> {
        self.write_tx("finishing a job's slot", |tx| {
            let changed = tx
                .execute(
                    "UPDATE job_slots SET finished_at = ?3, outcome = ?4, detail = ?5, session_id = ?6 \
                     WHERE job_id = ?1 AND slot = ?2 AND finished_at IS NULL",
                    params![job_id, slot, now, outcome, detail, session_id],
                )
                .map_err(sql("finishing a job's slot"))?;
            if changed == 0 {
                return Ok(false);
            }
            tx.execute(
                "UPDATE jobs SET last_completed_slot = ?2 WHERE id = ?1 \
                 AND (last_completed_slot IS NULL OR last_completed_slot < ?2)",
                params![job_id, slot],
            )
            .map_err(sql("finishing a job's slot"))?;
            let name: String = tx
                .query_row("SELECT name FROM jobs WHERE id = ?1", [job_id], |r| r.get(0))
                .map_err(sql("finishing a job's slot"))?;
            self.job_audit(
                tx,
                "scheduler",
                "job.finish",
                json!({"name": name, "slot": slot, "outcome": outcome, "detail": detail,
                       "session_id": session_id}),
            )?;
            Ok(true)
        })
    }

    /// Marks every claim made before `claimed_before` and still unfinished as `interrupted`
    /// (its run died with its process) and returns them. They are never claimed again.
    /// Audited as `job.interrupted`, one record per slot.
    pub fn job_mark_interrupted(
        &self,
        claimed_before: &str,
        now: &str,
    ) -> Result<Vec<SlotRun>, StoreError> {
        // Most ticks find nothing: a read (on the partial index of open claims) then, no write.
        let stale: bool = self
            .conn()
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM job_slots WHERE finished_at IS NULL AND claimed_at < ?1)",
                [claimed_before],
                |r| r.get(0),
            )
            .map_err(sql("marking interrupted job runs"))?;
        if !stale {
            return Ok(Vec::new());
        }
        self.write_tx("marking interrupted job runs", |tx| {
            let mut stmt = tx
                .prepare(&format!(
                    "{SLOT_SELECT} WHERE finished_at IS NULL AND claimed_at < ?1 ORDER BY slot"
                ))
                .map_err(sql("marking interrupted job runs"))?;
            let stale = stmt
                .query_map([claimed_before], slot_row)
                .map_err(sql("marking interrupted job runs"))?
                .collect::<Result<Vec<_>, _>>()
                .map_err(sql("marking interrupted job runs"))?;
            let mut out = Vec::with_capacity(stale.len());
            for mut run in stale {
                let detail = "the run was claimed but never finished (aria stopped during it)";
                tx.execute(
                    "UPDATE job_slots SET finished_at = ?3, outcome = 'interrupted', detail = ?4 \
                     WHERE job_id = ?1 AND slot = ?2",
                    params![run.job_id, run.slot, now, detail],
                )
                .map_err(sql("marking interrupted job runs"))?;
                let name: Option<String> = tx
                    .query_row("SELECT name FROM jobs WHERE id = ?1", [run.job_id], |r| r.get(0))
                    .optional()
                    .map_err(sql("marking interrupted job runs"))?;
                self.job_audit(
                    tx,
                    "scheduler",
                    "job.interrupted",
                    json!({"name": name, "slot": run.slot, "claimed_at": run.claimed_at}),
                )?;
                run.finished_at = Some(now.to_owned());
                run.outcome = Some("interrupted".to_owned());
                run.detail = Some(detail.to_owned());
                out.push(run);
            }
            Ok(out)
        })
    }

    /// How the slots of every job finished at or after `since` (RFC 3339 UTC): `(outcome,
    /// count)`, `running` for claims not finished yet.
    pub fn job_outcomes_since(&self, since: &str) -> Result<Vec<(String, u64)>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare(
                "SELECT COALESCE(outcome, 'running'), COUNT(*) FROM job_slots \
                 WHERE claimed_at >= ?1 GROUP BY 1 ORDER BY 1",
            )
            .map_err(sql("counting job runs"))?;
        stmt.query_map([since], |r| Ok((r.get(0)?, r.get::<_, i64>(1)?.max(0).unsigned_abs())))
            .map_err(sql("counting job runs"))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(sql("counting job runs"))
    }

    /// The newest `limit` claims of a job, newest first.
    pub fn job_history(&self, job_id: i64, limit: usize) -> Result<Vec<SlotRun>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare(&format!("{SLOT_SELECT} WHERE job_id = ?1 ORDER BY slot DESC LIMIT ?2"))
            .map_err(sql("reading a job's history"))?;
        stmt.query_map(params![job_id, i64::try_from(limit).unwrap_or(i64::MAX)], slot_row)
            .map_err(sql("reading a job's history"))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(sql("reading a job's history"))
    }
}

#[cfg(test)]
mod tests;
