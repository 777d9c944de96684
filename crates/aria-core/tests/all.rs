//! Integration tests of the agent loop (one test binary, see CONVENTIONS.md).
mod suite;
