//! The organisation a key pair acts for.

pub mod dto;

use actix_web::{web, HttpResponse};
use utoipa::OpenApi;

use self::dto::OrganisationDto;
use crate::extract::Auth;
use crate::handler::{resource, run};
use crate::problem::ApiError;
use crate::state::AppState;

/// The group's routes, under `/api/v1`.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(resource("/organisation", "GET").route(web::get().to(organisation)));
}

/// The group's operations and objects in the OpenAPI document.
#[derive(OpenApi)]
#[openapi(paths(organisation), components(schemas(OrganisationDto)))]
pub struct Api;

/// The organisation the token's key pair belongs to, its country, time zone and currency, and
/// the credential's mode and scopes (any scope may read it).
#[utoipa::path(
    get, path = "/api/v1/organisation", operation_id = "getOrganisation", tag = "Organisation",
    responses((status = 200, description = "The caller's organisation", body = OrganisationDto)),
    security(("bearer" = []))
)]
pub async fn organisation(auth: Auth, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let principal = auth.0;
    let profile = run(&state, move |p| p.profiles().get(&principal)).await?;
    Ok(HttpResponse::Ok().json(OrganisationDto::from(&profile)))
}
