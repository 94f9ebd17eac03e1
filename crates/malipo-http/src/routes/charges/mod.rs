//! Charges (contract section 3).

pub mod dto;

use std::collections::HashMap;

use actix_web::{web, HttpRequest, HttpResponse};
use malipo_auth::Scope;
use malipo_charges::{ChargeFilter, ChargeState};
use malipo_core::Timestamp;
use malipo_service::CreateCharge;
use utoipa::OpenApi;

use self::dto::StkRequest;
use crate::extract::{Auth, Body};
use crate::handler::{bad_cursor, limit, resource, run};
use crate::idempotent::{idempotent, Input};
use crate::problem::{ApiError, Problem};
use crate::routes::shared::{ChargeDto, ListDto};
use crate::state::AppState;
use crate::wire::parse_time;

/// The group's routes, under `/api/v1`.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(resource("/partner/stk", "POST").route(web::post().to(create)))
        .service(resource("/partner/status", "GET").route(web::get().to(status)))
        .service(resource("/partner/charges", "GET").route(web::get().to(list)))
        .service(resource("/partner/charges/{charge_ref}", "GET").route(web::get().to(get)));
}

/// The group's operations and objects in the OpenAPI document.
#[derive(OpenApi)]
#[openapi(paths(create, status, list, get), components(schemas(StkRequest, ChargeDto)))]
pub struct Api;

/// Push a charge (payment prompt) to a customer's phone.
#[utoipa::path(
    post, path = "/api/v1/partner/stk", operation_id = "createCharge", tag = "Charges",
    request_body = StkRequest,
    params(("Idempotency-Key" = Option<String>, Header, description = "Optional here: the body field `idem` is the key; if both are sent they must be equal")),
    responses(
        (status = 200, description = "Charge created in state pending (or the original answer replayed, with Idempotent-Replayed: true)", body = ChargeDto),
        (status = 400, description = "invalid_request, idempotency_key_missing", body = Problem),
        (status = 401, description = "unauthorized, invalid_token", body = Problem),
        (status = 403, description = "insufficient_scope", body = Problem),
        (status = 409, description = "idempotency_in_progress", body = Problem),
        (status = 422, description = "validation_failed, currency_mismatch, idempotency_key_reused", body = Problem),
        (status = 503, description = "unavailable: the service is catching up with its due work (with Retry-After)", body = Problem),
    ),
    security(("bearer" = ["payments"]))
)]
pub async fn create(req: HttpRequest, auth: Auth, body: Body, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let principal = auth.require(Scope::Payments)?.clone();
    let input = Input::json(&body).key_in_body(|stk: &StkRequest| &stk.idem);
    idempotent(
        &req,
        principal,
        &state,
        "POST /partner/stk",
        input,
        StkRequest::into_new,
        |p, principal, charge: &CreateCharge, idem| p.charges().create(principal, charge, idem),
        |v| ChargeDto::from(v),
    )
    .await
}

/// Poll a charge by `charge_ref` or by `reference` (exactly one).
#[utoipa::path(
    get, path = "/api/v1/partner/status", operation_id = "getChargeStatus", tag = "Charges",
    params(
        ("charge_ref" = Option<String>, Query, pattern = "^ch_[A-Za-z0-9_-]{1,64}$", description = "The charge's id"),
        ("reference" = Option<String>, Query, min_length = 1, max_length = 64, description = "Your reference: the most recent charge with it"),
    ),
    responses(
        (status = 200, description = "The charge", body = ChargeDto),
        (status = 400, description = "neither or both parameters", body = Problem),
        (status = 404, description = "not_found", body = Problem),
    ),
    security(("bearer" = ["payments"]))
)]
pub async fn status(auth: Auth, query: web::Query<HashMap<String, String>>, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let principal = auth.require(Scope::Payments)?.clone();
    let q = query.into_inner();
    let charge = match (q.get("charge_ref").cloned(), q.get("reference").cloned()) {
        (Some(id), None) => run(&state, move |p| p.charges().get(&principal, &id)).await?,
        (None, Some(r)) => run(&state, move |p| p.charges().by_reference(&principal, &r)).await?,
        _ => return Err(ApiError::InvalidRequest("give exactly one of charge_ref and reference".into())),
    };
    Ok(HttpResponse::Ok().json(ChargeDto::from(&charge)))
}

fn timestamp(q: &HashMap<String, String>, name: &str) -> Result<Option<Timestamp>, ApiError> {
    q.get(name).map(|v| parse_time(name, v)).transpose()
}

/// List charges, newest first.
#[utoipa::path(
    get, path = "/api/v1/partner/charges", operation_id = "listCharges", tag = "Charges",
    params(
        ("state" = Option<String>, Query, pattern = "^(pending|authorised|completed|declined|expired|failed)$", description = "Only charges in this state"),
        ("from" = Option<String>, Query, format = DateTime, description = "Created at or after (RFC 3339)"),
        ("to" = Option<String>, Query, format = DateTime, description = "Created before (RFC 3339)"),
        ("limit" = Option<u32>, Query, description = "1 to 100, default 20"),
        ("cursor" = Option<String>, Query, pattern = "^ch_[A-Za-z0-9_-]{1,64}$", description = "next_cursor of the previous page"),
    ),
    responses(
        (status = 200, description = "A page of charges", body = ListDto<ChargeDto>),
        (status = 400, description = "bad query parameter", body = Problem),
    ),
    security(("bearer" = ["payments"]))
)]
pub async fn list(auth: Auth, query: web::Query<HashMap<String, String>>, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let principal = auth.require(Scope::Payments)?.clone();
    let q = query.into_inner();
    let filter = ChargeFilter {
        state: q.get("state").map(|s| s.parse::<ChargeState>().map_err(|e| ApiError::InvalidRequest(e.to_string()))).transpose()?,
        from: timestamp(&q, "from")?,
        to: timestamp(&q, "to")?,
        reference: None,
        payer: None,
    };
    let limit = limit(q.get("limit").map(String::as_str))?;
    let cursor = q.get("cursor").cloned();
    let page = run(&state, move |p| p.charges().list(&principal, &filter, cursor.as_deref(), limit)).await.map_err(bad_cursor)?;
    Ok(HttpResponse::Ok().json(ListDto {
        data: page.data.iter().map(ChargeDto::from).collect(),
        has_more: page.has_more,
        next_cursor: page.next_cursor,
    }))
}

/// One charge.
#[utoipa::path(
    get, path = "/api/v1/partner/charges/{charge_ref}", operation_id = "getCharge", tag = "Charges",
    params(("charge_ref" = String, Path, pattern = "^ch_[A-Za-z0-9_-]{1,64}$", description = "The charge's id")),
    responses(
        (status = 200, description = "The charge", body = ChargeDto),
        (status = 404, description = "not_found", body = Problem),
    ),
    security(("bearer" = ["payments"]))
)]
pub async fn get(auth: Auth, path: web::Path<String>, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let principal = auth.require(Scope::Payments)?.clone();
    let id = path.into_inner();
    let charge = run(&state, move |p| p.charges().get(&principal, &id)).await?;
    Ok(HttpResponse::Ok().json(ChargeDto::from(&charge)))
}
