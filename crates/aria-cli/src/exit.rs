//! Exit codes and the error type every command returns. The codes are a contract:
//! 0 done, 1 failed, 2 usage or configuration error, 130 cancelled.

use std::process::ExitCode;

pub const OK: u8 = 0;
pub const FAILED: u8 = 1;
pub const USAGE: u8 = 2;
pub const CANCELLED: u8 = 130;

/// An error with the exit code it maps to. The message is for a person: what failed, why,
/// and what to do.
#[derive(Debug)]
pub struct CliError {
    pub code: u8,
    pub error: anyhow::Error,
}

impl CliError {
    pub fn failed(error: impl Into<anyhow::Error>) -> Self {
        CliError { code: FAILED, error: error.into() }
    }
    pub fn config(error: impl Into<anyhow::Error>) -> Self {
        CliError { code: USAGE, error: error.into() }
    }
    /// A usage or configuration error (exit 2) with this message.
    pub fn usage(message: impl std::fmt::Display) -> Self {
        CliError::config(anyhow::anyhow!("{message}"))
    }
}

impl From<crate::config::ConfigError> for CliError {
    fn from(e: crate::config::ConfigError) -> Self {
        CliError::config(e)
    }
}

impl From<aria_store::StoreError> for CliError {
    fn from(e: aria_store::StoreError) -> Self {
        CliError::failed(e)
    }
}

impl From<std::io::Error> for CliError {
    fn from(e: std::io::Error) -> Self {
        CliError::failed(e)
    }
}

impl From<serde_json::Error> for CliError {
    fn from(e: serde_json::Error) -> Self {
        CliError::failed(e)
    }
}

impl From<aria_gateway::BookError> for CliError {
    fn from(e: aria_gateway::BookError) -> Self {
        match e {
            aria_gateway::BookError::Internal(m) => CliError::failed(anyhow::anyhow!("{m}")),
            other => CliError::usage(other),
        }
    }
}

pub type CliResult<T> = Result<T, CliError>;

pub fn code(c: u8) -> ExitCode {
    ExitCode::from(c)
}
