//! End-to-end tests of the `aria` binary against loopback mock model servers.
// Helper functions in the suite unwrap too; clippy's test exemption covers only #[test] fns.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod suite;
