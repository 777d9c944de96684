mod harness;
mod cli_basics;
mod crash_and_cancel;
mod runs;
