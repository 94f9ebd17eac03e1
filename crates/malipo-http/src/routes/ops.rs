//! Operational endpoints, outside the groups: liveness, readiness, the OpenAPI document.

use actix_web::{web, HttpResponse};
use malipo_service::ServiceError;
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
#[utoipa::path(get, path = "/healthz", tag = "Operations", responses((status = 200, description = "The process is up")), security(()))]
pub async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(serde_json::json!({"status": "ok"}))
}

/// Database reachable and migrations applied; 503 otherwise.
#[utoipa::path(get, path = "/readyz", tag = "Operations", responses((status = 200, description = "Ready"), (status = 503, description = "unavailable", body = crate::problem::Problem)), security(()))]
pub async fn readyz(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    run(&state, |p| p.store().ready().map_err(ServiceError::Store)).await.map_err(|e| match e {
        ApiError::Service(ServiceError::Store(s)) => {
            ApiError::Service(ServiceError::Store(malipo_service::StoreError::Unavailable(s.to_string())))
        }
        other => other,
    })?;
    Ok(HttpResponse::Ok().json(serde_json::json!({"status": "ready"})))
}

/// This OpenAPI 3.1 document.
#[utoipa::path(get, path = "/api/v1/openapi.json", tag = "Operations", responses((status = 200, description = "The OpenAPI document")), security(()))]
pub async fn openapi(document: web::Data<Document>) -> HttpResponse {
    HttpResponse::Ok().content_type("application/json").body((document.0)())
}
