//! The OpenAPI 3.1 document, generated from the handlers' annotations as the router is built,
//! so a route cannot exist without its description.

use std::sync::Arc;

use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;

use crate::Gateway;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "ARIA",
        description = "The HTTP API of `aria serve`: conversations, runs with streamed events, \
                       approvals, memories, tools, snapshots, audit, cost. Errors are \
                       `{\"error\": {\"code\", \"message\", \"hint\"}}`. When a token is \
                       configured, send it as `Authorization: Bearer TOKEN`."
    ),
    tags(
        (name = "meta", description = "health and login"),
        (name = "conversations", description = "conversations and messages"),
        (name = "runs", description = "runs (sessions)"),
        (name = "approvals", description = "approval questions"),
        (name = "memories", description = "long-term memories"),
        (name = "tools", description = "the agent's tools"),
        (name = "snapshots", description = "git restore points and rollback"),
        (name = "audit", description = "the audit log: records, verification, export"),
        (name = "cost", description = "model spend"),
        (name = "config", description = "the effective configuration"),
    )
)]
struct ApiDoc;

/// Every documented route.
pub fn api_router() -> OpenApiRouter<Arc<Gateway>> {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .merge(crate::routes::meta::routes())
        .merge(crate::routes::conversations::routes())
        .merge(crate::routes::runs::routes())
        .merge(crate::routes::memories::routes())
        .merge(crate::routes::resources::routes())
        .merge(crate::ws::routes())
        .merge(crate::openai::routes())
}

/// The document alone (for tests and `aria serve --openapi`).
pub fn document() -> utoipa::openapi::OpenApi {
    api_router().split_for_parts().1
}
