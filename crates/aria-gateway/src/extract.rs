//! Extractors whose rejections use the API's error shape: a body that is not a JSON object, a
//! field of the wrong type or a bad query parameter is a 400 that says which, a body over the
//! limit a 413.

use axum::body::Bytes;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use serde::de::{DeserializeOwned, IgnoredAny};

use crate::error::{ApiError, ApiResult};

/// A JSON object as the body. The security layer refuses a body of another type; a request
/// without a body or a type is refused here (415).
#[derive(Debug)]
pub struct ApiJson<T>(pub T);

impl<T, S> FromRequest<S> for ApiJson<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        if !crate::security::is_json(req.headers()) {
            return Err(unsupported_media_type());
        }
        let bytes = body(req, state).await?;
        object(&bytes).map(ApiJson)
    }
}

fn unsupported_media_type() -> ApiError {
    ApiError::new(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported_media_type",
        "the body must be JSON",
        "send it with `Content-Type: application/json`",
    )
}

/// The body's bytes, up to [`crate::BODY_LIMIT`].
async fn body<S: Send + Sync>(req: Request, state: &S) -> ApiResult<Bytes> {
    let read = Bytes::from_request(req, state);
    let read = tokio::time::timeout(BODY_TIMEOUT, read).await.map_err(|_| body_timeout())?;
    read.map_err(|e| {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            payload_too_large()
        } else {
            ApiError::bad_request(
                format!("the body could not be read: {}", e.body_text()),
                "send the whole body as one JSON object",
            )
        }
    })
}

/// A body read as `T`. Every body of this API is a JSON object: serde would also read a struct
/// from an array of its fields in order, which is refused.
fn object<T: DeserializeOwned>(bytes: &[u8]) -> ApiResult<T> {
    let syntax = |e: serde_json::Error| {
        ApiError::bad_request(
            format!("the body is not valid JSON: {e}"),
            "send a JSON object, e.g. {\"content\": \"hello\"}",
        )
    };
    if bytes.trim_ascii_start().first() != Some(&b'{') {
        serde_json::from_slice::<IgnoredAny>(bytes).map_err(syntax)?;
        return Err(ApiError::bad_request(
            "the body is JSON but not an object",
            "send a JSON object, e.g. {\"content\": \"hello\"}",
        ));
    }
    serde_json::from_slice(bytes).map_err(|e| {
        if e.is_data() {
            ApiError::bad_request(
                format!("the body does not have the expected fields: {e}"),
                "see GET /api/v1/openapi.json for this endpoint's body",
            )
        } else {
            syntax(e)
        }
    })
}

/// How long a client may take to send a request body.
pub const BODY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

pub fn body_timeout() -> ApiError {
    ApiError::new(
        StatusCode::REQUEST_TIMEOUT,
        "request_timeout",
        format!("the body did not arrive within {} s", BODY_TIMEOUT.as_secs()),
        "send the whole body at once",
    )
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
    /// How many items (1–500, default 50; more is read as 500).
    #[param(value_type = Option<u64>, maximum = 4294967295u32)]
    pub limit: Option<u32>,
    /// How many to skip (default 0).
    #[param(value_type = Option<u64>, maximum = 4294967295u32)]
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

/// A JSON object as the body, or nothing: an absent or empty body, or `null`, is
/// `T::default()`.
#[derive(Debug)]
pub struct ApiJsonOrEmpty<T>(pub T);

impl<T, S> FromRequest<S> for ApiJsonOrEmpty<T>
where
    T: DeserializeOwned + Default,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = body(req, state).await?;
        let text = bytes.trim_ascii();
        if text.is_empty() || text == b"null" {
            return Ok(ApiJsonOrEmpty(T::default()));
        }
        object(text).map(ApiJsonOrEmpty)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Default, PartialEq, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Body {
        title: Option<String>,
    }

    #[test]
    fn bodies_are_json_objects() {
        assert_eq!(
            object::<Body>(br#" {"title": "t"}"#).unwrap(),
            Body { title: Some("t".into()) }
        );
        for (body, says) in [
            (&br#"["t"]"#[..], "not an object"),
            (b"[]", "not an object"),
            (b"\"t\"", "not an object"),
            (b"0", "not an object"),
            (b"[1", "not valid JSON"),
            (b"{", "not valid JSON"),
            (br#"{"title": 1}"#, "expected fields"),
            (br#"{"other": 1}"#, "expected fields"),
        ] {
            let e = object::<Body>(body).unwrap_err();
            assert_eq!((e.status, e.code), (StatusCode::BAD_REQUEST, "bad_request"));
            assert!(e.message.contains(says), "{}: {}", String::from_utf8_lossy(body), e.message);
            assert!(!e.hint.is_empty());
        }
    }
}

/// The client's address (loopback when the connection did not record one).
#[derive(Debug, Clone, Copy)]
pub struct ClientIp(pub std::net::IpAddr);

impl<S: Send + Sync> FromRequestParts<S> for ClientIp {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let ip = parts
            .extensions
            .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
            .map_or(std::net::IpAddr::from([127, 0, 0, 1]), |c| c.0.ip());
        Ok(ClientIp(ip))
    }
}
