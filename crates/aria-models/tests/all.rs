//! The integration tests of `aria-models`, in one binary (one link step): every provider is
//! driven against a loopback mock that speaks its real wire format.

// Every item here is test code, helpers included: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
