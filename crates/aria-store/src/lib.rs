//! placeholder until this crate is written
