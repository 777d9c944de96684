//! The API's handlers, one module per resource.

pub mod agents;
pub mod conversations;
pub mod memories;
pub mod meta;
pub mod resources;
pub mod runs;
pub mod schedules;

use axum::http::{StatusCode, Uri};

use crate::error::ApiError;

pub async fn not_found(uri: Uri) -> ApiError {
    ApiError::not_found(
        format!("nothing at {}", uri.path()),
        "the API is under /api/v1 (see GET /api/v1/openapi.json); the web UI is at /",
    )
}

pub async fn method_not_allowed(uri: Uri) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!("{} does not take this method", uri.path()),
        "see GET /api/v1/openapi.json for the methods each path takes",
    )
}
