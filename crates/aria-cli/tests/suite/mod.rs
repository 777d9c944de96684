mod check;
mod cli_basics;
mod crash_and_cancel;
mod harness;
mod memory_recall;
mod models;
mod runs;
mod snapshots;
