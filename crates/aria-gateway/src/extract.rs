//! Extractors whose rejections use the API's error shape: a body that is not JSON, a field of
//! the wrong type or a bad query parameter is a 400 that says which, a body over the limit a 413.

use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// A JSON body (`Content-Type: application/json` is checked by the security layer).
#[derive(Debug)]
pub struct ApiJson<T>(pub T);

impl<T, S> FromRequest<S> for ApiJson<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        match axum::Json::<T>::from_request(req, state).await {
            Ok(axum::Json(v)) => Ok(ApiJson(v)),
            Err(rejection) => Err(json_rejection(rejection)),
        }
    }
}

fn json_rejection(rejection: JsonRejection) -> ApiError {
    match rejection {
        JsonRejection::JsonDataError(e) => ApiError::bad_request(
            format!("the body does not have the expected fields: {}", e.body_text()),
            "see GET /api/v1/openapi.json for this endpoint's body",
        ),
        JsonRejection::JsonSyntaxError(e) => ApiError::bad_request(
            format!("the body is not valid JSON: {}", e.body_text()),
            "send a JSON object, e.g. {\"content\": \"hello\"}",
        ),
        JsonRejection::MissingJsonContentType(_) => ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "the body must be JSON",
            "send it with `Content-Type: application/json`",
        ),
        other if other.status() == StatusCode::PAYLOAD_TOO_LARGE => payload_too_large(),
        other => ApiError::bad_request(
            format!("the body could not be read: {}", other.body_text()),
            "send a JSON object",
        ),
    }
}

pub fn payload_too_large() -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "payload_too_large",
        format!("the body is larger than {} bytes", crate::BODY_LIMIT),
        "send less at once (a long text can be put in a file under a root and named instead)",
    )
}

/// Query parameters.
#[derive(Debug)]
pub struct ApiQuery<T>(pub T);

impl<T, S> FromRequestParts<S> for ApiQuery<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match axum::extract::Query::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Query(v)) => Ok(ApiQuery(v)),
            Err(rejection) => Err(query_rejection(&rejection)),
        }
    }
}

fn query_rejection(rejection: &QueryRejection) -> ApiError {
    ApiError::bad_request(
        format!("bad query parameters: {}", rejection.body_text()),
        "see GET /api/v1/openapi.json for this endpoint's parameters",
    )
}

/// Path parameters.
#[derive(Debug)]
pub struct ApiPath<T>(pub T);

impl<T, S> FromRequestParts<S> for ApiPath<T>
where
    T: DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match axum::extract::Path::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Path(v)) => Ok(ApiPath(v)),
            Err(rejection) => Err(path_rejection(&rejection)),
        }
    }
}

fn path_rejection(rejection: &PathRejection) -> ApiError {
    ApiError::bad_request(
        format!("bad path: {}", rejection.body_text()),
        "check the id in the path",
    )
}

/// Paging: `?limit=N&offset=N` (default 50, at most 500).
#[derive(Debug, Clone, Copy, serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct Paging {
    /// How many items (1–500, default 50).
    pub limit: Option<u32>,
    /// How many to skip (default 0).
    pub offset: Option<u32>,
}

pub const MAX_PAGE: u32 = 500;

impl Paging {
    pub fn limit(self) -> usize {
        self.limit.unwrap_or(50).clamp(1, MAX_PAGE) as usize
    }

    pub fn offset(self) -> usize {
        self.offset.unwrap_or(0) as usize
    }
}

/// A JSON body that may also be absent (an empty body is `T::default()`).
#[derive(Debug)]
pub struct ApiJsonOrEmpty<T>(pub T);

impl<T, S> FromRequest<S> for ApiJsonOrEmpty<T>
where
    T: DeserializeOwned + Default,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = axum::body::Bytes::from_request(req, state).await.map_err(|e| {
            if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                payload_too_large()
            } else {
                ApiError::bad_request(format!("the body could not be read: {}", e.body_text()), "")
            }
        })?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(ApiJsonOrEmpty(T::default()));
        }
        serde_json::from_slice(&bytes).map(ApiJsonOrEmpty).map_err(|e| {
            if e.is_data() {
                ApiError::bad_request(
                    format!("the body does not have the expected fields: {e}"),
                    "see GET /api/v1/openapi.json for this endpoint's body",
                )
            } else {
                ApiError::bad_request(
                    format!("the body is not valid JSON: {e}"),
                    "send a JSON object, e.g. {}",
                )
            }
        })
    }
}
