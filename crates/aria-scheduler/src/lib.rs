//! Scheduled work for ARIA: cron expressions in IANA time zones, and the loop that runs jobs
//! exactly once per slot.
//!
//! This crate owns the meaning of a schedule ([`cron`]: which instants a job fires at, with
//! Debian's/cronie's daylight-saving rules) and the scheduler loop ([`scheduler`]: due slots,
//! catch-up after downtime, claims, concurrency, timeouts), driven by a [`scheduler::Clock`]
//! so tests run it on a fake clock. It deliberately does not run agents or send messages: a
//! job's action is handed to a [`scheduler::Runner`] that the composition root supplies
//! (`aria serve`), and the durable state (jobs, slot claims) lives in `aria-store`.
//!
//! The key design decision: **a slot is an instant, and it is claimed in the database before it
//! runs.** A slot is the scheduled instant in UTC; the claim is a row inserted in one
//! `BEGIN IMMEDIATE` transaction, so two schedulers on one database, or a restart mid-run,
//! cannot both run it. A claim that never finished is reported as interrupted and is never run
//! again by the scheduler. After downtime only the most recent missed slot runs, once, and it
//! carries the number of slots that were missed.

pub mod cron;
pub mod manage;
pub mod scheduler;
pub mod tool;
