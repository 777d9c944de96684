//! Integration tests of the agent loop (one test binary, see CONVENTIONS.md).
// Helper functions in the suite unwrap too; clippy's test exemption covers only #[test] fns.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod suite;
