//! The one integration-test binary of aria-scheduler.

// Helpers outside `#[test]` functions panic on setup failure, like the tests themselves.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
