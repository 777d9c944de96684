//! The one error shape every endpoint answers with: `{"error": {"code", "message", "hint"}}`
//! and a status code that fits.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

/// An error answer. `code` is stable (scripts match on it); `message` says what went wrong and
/// `hint` what to do about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    pub hint: String,
}

/// The body of every error answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorDetail {
    /// `bad_request`, `unauthorized`, `forbidden`, `not_found`, `method_not_allowed`,
    /// `conflict`, `payload_too_large`, `unsupported_media_type`, `rate_limited`, `internal`,
    /// `unavailable`.
    pub code: String,
    pub message: String,
    pub hint: String,
}

impl ApiError {
    pub fn new(
        status: StatusCode,
        code: &'static str,
        message: impl Into<String>,
        hint: impl Into<String>,
    ) -> ApiError {
        ApiError { status, code, message: message.into(), hint: hint.into() }
    }

    pub fn bad_request(message: impl Into<String>, hint: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "bad_request", message, hint)
    }

    pub fn not_found(message: impl Into<String>, hint: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, "not_found", message, hint)
    }

    pub fn conflict(message: impl Into<String>, hint: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::CONFLICT, "conflict", message, hint)
    }

    pub fn forbidden(message: impl Into<String>, hint: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::FORBIDDEN, "forbidden", message, hint)
    }

    pub fn unauthorized(message: impl Into<String>) -> ApiError {
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            message,
            "send the API token as `Authorization: Bearer TOKEN` (the daemon's own is in \
             $ARIA_HOME/api-token; `aria tokens add` makes scoped ones), or open the one-time \
             login link that `aria ui` prints",
        )
    }

    pub fn unavailable(message: impl Into<String>) -> ApiError {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            message,
            "the daemon is shutting down; try again once it is back",
        )
    }

    /// A failure on ARIA's side. The details go to the log; the client learns what failed.
    pub fn internal(what: &str, error: impl std::fmt::Display) -> ApiError {
        tracing::error!("{what}: {error}");
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            format!("{what}: {error}"),
            "see the daemon's log (`$ARIA_HOME/logs`); run `aria doctor` to check the setup",
        )
    }

    pub fn body(&self) -> ErrorBody {
        ErrorBody {
            error: ErrorDetail {
                code: self.code.to_owned(),
                message: self.message.clone(),
                hint: self.hint.clone(),
            },
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(self.body())).into_response()
    }
}

impl From<aria_store::StoreError> for ApiError {
    fn from(e: aria_store::StoreError) -> ApiError {
        ApiError::internal("the database failed", e)
    }
}

pub type ApiResult<T> = Result<T, ApiError>;
