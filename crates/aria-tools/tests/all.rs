//! The one integration-test binary of `aria-tools` (see CONVENTIONS.md: fewer link steps).
//! Everything here goes through the crate's public API only.

// Helpers outside `#[test]` functions panic on setup failure, like the tests themselves.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
