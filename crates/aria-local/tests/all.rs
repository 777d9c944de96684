#![allow(clippy::unwrap_used, clippy::expect_used)] // helpers outside #[test] fns unwrap too
//! Integration tests of aria-local. Tests that need the real models find them in
//! `$ARIA_TEST_MODELS_DIR` (default: `target/tmp/aria-models`) and pull them there with pip
//! when missing.

mod suite;
