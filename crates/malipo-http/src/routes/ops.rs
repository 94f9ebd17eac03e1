//! Operational endpoints, outside the groups: liveness, readiness, the OpenAPI document.

use actix_web::{web, HttpResponse};
use malipo_service::{ServiceError, StoreError};
use utoipa::OpenApi;

use crate::handler::run;
use crate::problem::ApiError;
use crate::state::AppState;

/// The operations in the OpenAPI document.
#[derive(OpenApi)]
#[openapi(paths(healthz, readyz, openapi))]
pub struct Api;

/// The OpenAPI document [`openapi`] serves, as app data: the route table registers it, so that
/// this module need not import the document that lists it.
#[derive(Debug, Clone, Copy)]
pub struct Document(pub fn() -> String);

/// Process up.
#[utoipa::path(get, path = "/healthz", operation_id = "getHealth", tag = "Operations", responses((status = 200, description = "The process is up")), security(()))]
pub async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(serde_json::json!({"status": "ok"}))
}

/// Database reachable and migrations applied; 503 otherwise.
#[utoipa::path(get, path = "/readyz", operation_id = "getReadiness", tag = "Operations", responses((status = 200, description = "Ready"), (status = 503, description = "unavailable", body = crate::problem::Problem)), security(()))]
pub async fn readyz(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    match run(&state, |p| p.store().ready().map_err(ServiceError::Store)).await {
        Ok(()) => Ok(HttpResponse::Ok().json(serde_json::json!({"status": "ready"}))),
        Err(ApiError::Service(ServiceError::Store(e))) => {
            // Unavailable, with why in a word an operator can act on (not the driver's text,
            // which may name hosts).
            let unavailable = ApiError::Service(ServiceError::Store(StoreError::Unavailable(String::new())));
            let mut problem = unavailable.problem();
            problem.detail = format!("not ready: {}", not_ready_because(&e));
            Ok(HttpResponse::ServiceUnavailable()
                .content_type("application/problem+json")
                .insert_header((actix_web::http::header::RETRY_AFTER, "1"))
                .json(problem))
        }
        Err(other) => Err(other),
    }
}

/// Why the database is not ready, from the store's error.
fn not_ready_because(e: &StoreError) -> &'static str {
    let text = e.to_string();
    if text.contains("migrations are pending") {
        "database migrations are pending"
    } else if text.contains("did not answer") || text.contains("statement timeout") {
        "the database did not answer within its deadline"
    } else if text.contains("read-only") {
        "the database is read-only (a standby, not the primary)"
    } else if text.contains("timed out waiting for connection") {
        "no database connection could be made in time"
    } else {
        "the database refused or dropped the connection"
    }
}

/// This OpenAPI 3.1 document.
#[utoipa::path(get, path = "/api/v1/openapi.json", operation_id = "getOpenApiDocument", tag = "Operations", responses((status = 200, description = "The OpenAPI document")), security(()))]
pub async fn openapi(document: web::Data<Document>) -> HttpResponse {
    HttpResponse::Ok().content_type("application/json").body((document.0)())
}
