//! The OpenAPI 3.1 document, generated from the handlers' annotations as the router is built,
//! so a route cannot exist without its description.
//!
//! The handlers document what they answer themselves. What the layers in front of them answer
//! (the security middleware, the body limit, the extractors' rejections) is added to every
//! operation it applies to by [`LayerAnswers`], from the same rules the layers use
//! ([`crate::security::public`], [`crate::security::rate_limited`]), so the document cannot
//! forget a status a client may get. `tests/e2e/test_openapi_schema.py` checks the running
//! daemon against this document with schemathesis.

use std::sync::Arc;

use axum::http::Method;
use utoipa::openapi::path::Operation;
use utoipa::openapi::schema::{ObjectBuilder, Schema, SchemaType, Type};
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{ContentBuilder, OpenApi, Ref, RefOr, ResponseBuilder};
use utoipa::{Modify, OpenApi as _};
use utoipa_axum::router::OpenApiRouter;

use crate::Gateway;

#[derive(utoipa::OpenApi)]
#[openapi(
    info(
        title = "ARIA",
        description = "The HTTP API of `aria serve`: conversations, runs with streamed events, \
                       approvals, memories, tools, snapshots, audit, cost, scheduled jobs and \
                       notifications. Errors are \
                       `{\"error\": {\"code\", \"message\", \"hint\"}}` (under `/v1/`, OpenAI's \
                       shape). When a token is configured, send it as `Authorization: Bearer \
                       TOKEN` (or log in with `POST /api/v1/login` and use its cookies)."
    ),
    tags(
        (name = "meta", description = "health and login"),
        (name = "conversations", description = "conversations and messages"),
        (name = "runs", description = "runs (sessions)"),
        (name = "approvals", description = "approval questions"),
        (name = "memories", description = "long-term memories"),
        (name = "tools", description = "the agent's tools"),
        (name = "agents", description = "agent profiles: prompt, models, tools, mode, caps"),
        (name = "snapshots", description = "git restore points and rollback"),
        (name = "audit", description = "the audit log: records, verification, export"),
        (name = "cost", description = "model spend"),
        (name = "config", description = "the effective configuration"),
        (name = "schedules", description = "scheduled jobs, their runs, and notifications"),
        (name = "openai", description = "OpenAI-compatible chat completions and models"),
    )
)]
struct ApiDoc;

/// Every documented route.
pub fn api_router() -> OpenApiRouter<Arc<Gateway>> {
    let mut router = OpenApiRouter::with_openapi(ApiDoc::openapi())
        .merge(crate::routes::meta::routes())
        .merge(crate::routes::conversations::routes())
        .merge(crate::routes::runs::routes())
        .merge(crate::routes::memories::routes())
        .merge(crate::routes::resources::routes())
        .merge(crate::routes::agents::routes())
        .merge(crate::routes::schedules::routes())
        .merge(crate::ws::routes())
        .merge(crate::openai::routes());
    // After the merge: the modifier works on the operations the routes brought.
    LayerAnswers.modify(router.get_openapi_mut());
    router
}

/// The document alone (for tests and `aria serve --openapi`).
pub fn document() -> OpenApi {
    api_router().split_for_parts().1
}

/// `GET /api/v1/openapi.json`: [`document`] as JSON, made on the first request and kept from
/// then on (the daemon built the same document with its router, and dropped it, so that an idle
/// daemon does not hold it: its resident memory stays small).
pub async fn json() -> axum::response::Response {
    use axum::response::IntoResponse;
    static JSON: std::sync::OnceLock<axum::body::Bytes> = std::sync::OnceLock::new();
    let body = match JSON.get() {
        Some(body) => body.clone(),
        None => {
            let made = tokio::task::spawn_blocking(|| serde_json::to_vec(&document())).await;
            match made {
                Ok(Ok(made)) => JSON.get_or_init(|| made.into()).clone(),
                Ok(Err(e)) => {
                    return crate::ApiError::internal("the OpenAPI document", e).into_response();
                }
                Err(e) => {
                    return crate::ApiError::internal("the OpenAPI document", e).into_response();
                }
            }
        }
    };
    ([(axum::http::header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// The security scheme's name in the document.
pub const BEARER: &str = "bearer";

/// Documents, on every operation, the answers of the layers in front of the handlers and the
/// token the operation needs. An answer a handler documents itself is left as it is.
struct LayerAnswers;

impl Modify for LayerAnswers {
    fn modify(&self, doc: &mut OpenApi) {
        doc.components.get_or_insert_with(Default::default).add_security_scheme(
            BEARER,
            SecurityScheme::Http(
                Http::builder()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "The API token (`ARIA_API_TOKEN`, or the one `aria serve --new-token` \
                         printed), needed when the daemon has one. The web page logs in instead \
                         (`POST /api/v1/login`) and sends its cookie, plus `X-CSRF-Token` on \
                         requests that change something.",
                    ))
                    .build(),
            ),
        );
        for (path, item) in doc.paths.paths.iter_mut() {
            let operations = [
                (Method::GET, &mut item.get),
                (Method::PUT, &mut item.put),
                (Method::POST, &mut item.post),
                (Method::DELETE, &mut item.delete),
                (Method::PATCH, &mut item.patch),
            ];
            for (method, operation) in operations {
                if let Some(operation) = operation {
                    document_layers(path, &method, operation);
                }
            }
        }
    }
}

/// The answers the layers can give to one operation.
fn document_layers(path: &str, method: &Method, operation: &mut Operation) {
    let public = crate::security::public(method, path);
    operation.security = Some(vec![if public {
        // An empty requirement: no credentials needed.
        SecurityRequirement::default()
    } else {
        SecurityRequirement::new(BEARER, Vec::<String>::new())
    }]);
    let has_body = operation.request_body.is_some();
    let has_parameters = operation.parameters.as_ref().is_some_and(|p| !p.is_empty());
    let sends_body = matches!(*method, Method::POST | Method::PUT | Method::PATCH);
    let answers = [
        (
            "400",
            has_body || has_parameters,
            "a body or parameter that does not fit: not JSON, a field of the wrong type, an \
             unknown field",
        ),
        (
            "401",
            !public,
            "the API token is missing or wrong (when the daemon has one), or the login expired",
        ),
        (
            "403",
            true,
            "refused by the security layer: a `Host` that is not a loopback name on a loopback \
             listener, a foreign `Origin` or a cross-site request that would change something, or \
             a login without its `X-CSRF-Token`",
        ),
        ("413", has_body, "the body is larger than 1 MiB"),
        ("415", sends_body, "a body that is not `Content-Type: application/json`"),
        (
            "429",
            crate::security::rate_limited(method, path),
            "more requests from this client in a minute than `[server] rate_limit_per_minute`",
        ),
    ];
    let error_schema = if path.starts_with("/v1/") { "OpenAiErrorBody" } else { "ErrorBody" };
    for (status, applies, description) in answers {
        if applies && !operation.responses.responses.contains_key(status) {
            let content =
                ContentBuilder::new().schema(Some(Ref::from_schema_name(error_schema))).build();
            let response = ResponseBuilder::new()
                .description(description)
                .content("application/json", content);
            operation.responses.responses.insert(status.to_owned(), RefOr::T(response.build()));
        }
    }
}

/// The schema of a text that must say something: at least one character that is not white
/// space. White space is Unicode's `White_Space`, what `str::trim` removes, spelled out so every
/// regex dialect (ECMA-262, Python, Rust) reads the pattern the same way.
pub fn not_blank_text() -> Schema {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .min_length(Some(1))
        .pattern(Some(NOT_BLANK))
        .build()
        .into()
}

/// At least one character that is not white space (Unicode `White_Space`). The fields whose
/// schema is derived spell it out in their `pattern` attribute (which takes only a literal); a
/// test checks that every pattern in the document is this one.
pub const NOT_BLANK: &str =
    r"[^\t\n\x0B\f\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]";

/// A memory kind: `fact`, `preference`, `event`, `skill` or `document` (or `null`).
pub fn memory_kind() -> Schema {
    let kinds = aria_store::MemoryKind::ALL.iter().map(|k| Some(k.as_str()));
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::String, Type::Null]))
        .enum_values(Some(kinds.chain([None])))
        .description(Some(
            "`fact` (the default for a new memory), `preference`, `event`, `skill` or `document`",
        ))
        .build()
        .into()
}

#[cfg(test)]
mod tests;
