//! Payouts (contract section 5).

pub mod dto;

use std::collections::HashMap;

use actix_web::{web, HttpRequest, HttpResponse};
use malipo_auth::Scope;
use malipo_core::BulkPayoutId;
use malipo_payouts::{PayoutFilter, PayoutState};
use malipo_service::CreatePayout;
use utoipa::OpenApi;

use self::dto::PayoutRequest;
use crate::extract::{Auth, Body};
use crate::handler::{bad_cursor, limit, resource, run};
use crate::idempotent::{idempotent, Input};
use crate::problem::{ApiError, Problem};
use crate::routes::shared::{ListDto, PayoutDto};
use crate::state::AppState;
use crate::wire::{parse_time, DecimalAmount};

/// The group's routes, under `/api/v1`.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(resource("/payouts", "POST, GET").route(web::post().to(create)).route(web::get().to(list)))
        .service(resource("/payouts/{payout_ref}", "GET").route(web::get().to(get)));
}

/// The group's operations and objects in the OpenAPI document.
#[derive(OpenApi)]
#[openapi(paths(create, list, get), components(schemas(PayoutRequest, PayoutDto, DecimalAmount)))]
pub struct Api;

/// A payout state given as a query parameter.
///
/// # Errors
/// 400 `invalid_request`.
pub fn state_param(value: Option<&String>) -> Result<Option<PayoutState>, ApiError> {
    value
        .map(|s| s.parse::<PayoutState>().map_err(|_| ApiError::InvalidRequest("state must be pending, completed or failed".into())))
        .transpose()
}

/// Pay money from the payout account to a customer's wallet. The amount plus the payout fee is
/// reserved at once; the payout answers `pending` and then completes or fails
/// (events `payout.completed`, `payout.failed`).
#[utoipa::path(
    post, path = "/api/v1/payouts", operation_id = "createPayout", tag = "Payouts",
    request_body = PayoutRequest,
    params(("Idempotency-Key" = String, Header, description = "Required: 1 to 255 visible ASCII characters")),
    responses(
        (status = 200, description = "The payout in state pending (or the original answer replayed, with Idempotent-Replayed: true)", body = PayoutDto),
        (status = 400, description = "invalid_request (malformed JSON, wrong types), idempotency_key_missing", body = Problem),
        (status = 401, description = "unauthorized, invalid_token", body = Problem),
        (status = 403, description = "insufficient_scope", body = Problem),
        (status = 409, description = "idempotency_in_progress", body = Problem),
        (status = 413, description = "payload_too_large (above 64 KiB)", body = Problem),
        (status = 415, description = "unsupported_media_type", body = Problem),
        (status = 422, description = "validation_failed (`invalid_msisdn`, `invalid_amount`, `too_long`, `missing_field`, `unknown_field`), insufficient_funds (amount + fee), currency_mismatch, idempotency_key_reused", body = Problem),
        (status = 429, description = "rate_limited", body = Problem),
        (status = 503, description = "unavailable", body = Problem),
    ),
    security(("bearer" = ["payouts"]))
)]
pub async fn create(req: HttpRequest, auth: Auth, body: Body, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let principal = auth.require(Scope::Payouts)?.clone();
    idempotent(
        &req,
        principal,
        &state,
        "POST /payouts",
        Input::json(&body),
        PayoutRequest::into_new,
        |p, principal, payout: &CreatePayout, idem| p.payouts().create(principal, payout, idem),
        |v| PayoutDto::from(v),
    )
    .await
}

/// List payouts (single ones and bulk payouts' items), newest first.
#[utoipa::path(
    get, path = "/api/v1/payouts", operation_id = "listPayouts", tag = "Payouts",
    params(
        ("state" = Option<String>, Query, pattern = "^(pending|completed|failed)$", description = "Only payouts in this state: `pending`, `completed`, `failed`"),
        ("from" = Option<String>, Query, format = DateTime, description = "Created at or after (RFC 3339)"),
        ("to" = Option<String>, Query, format = DateTime, description = "Created before (RFC 3339)"),
        ("bulk_payout_id" = Option<String>, Query, pattern = "^bp_[A-Za-z0-9_-]{1,64}$", description = "Only the items of this bulk payout (`bp_…`)"),
        ("limit" = Option<u32>, Query, description = "1 to 100, default 20"),
        ("cursor" = Option<String>, Query, pattern = "^po_[A-Za-z0-9_-]{1,64}$", description = "next_cursor of the previous page"),
    ),
    responses(
        (status = 200, description = "A page of payouts", body = ListDto<PayoutDto>),
        (status = 400, description = "invalid_request (bad query parameter or cursor)", body = Problem),
        (status = 401, description = "unauthorized, invalid_token", body = Problem),
        (status = 403, description = "insufficient_scope", body = Problem),
        (status = 429, description = "rate_limited", body = Problem),
        (status = 503, description = "unavailable", body = Problem),
    ),
    security(("bearer" = ["payouts"]))
)]
pub async fn list(auth: Auth, query: web::Query<HashMap<String, String>>, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let principal = auth.require(Scope::Payouts)?.clone();
    let q = query.into_inner();
    let bulk_payout_id = q
        .get("bulk_payout_id")
        .map(|id| BulkPayoutId::parse(id).map_err(|_| ApiError::InvalidRequest("bulk_payout_id must be a bulk payout id (bp_…)".into())));
    let filter = PayoutFilter {
        state: state_param(q.get("state"))?,
        from: q.get("from").map(|v| parse_time("from", v)).transpose()?,
        to: q.get("to").map(|v| parse_time("to", v)).transpose()?,
        bulk_payout_id: bulk_payout_id.transpose()?,
    };
    let limit = limit(q.get("limit").map(String::as_str))?;
    let cursor = q.get("cursor").cloned();
    let page = run(&state, move |p| p.payouts().list(&principal, &filter, cursor.as_deref(), limit)).await.map_err(bad_cursor)?;
    Ok(HttpResponse::Ok().json(ListDto {
        data: page.data.iter().map(PayoutDto::from).collect(),
        has_more: page.has_more,
        next_cursor: page.next_cursor,
    }))
}

/// One payout.
#[utoipa::path(
    get, path = "/api/v1/payouts/{payout_ref}", operation_id = "getPayout", tag = "Payouts",
    params(("payout_ref" = String, Path, pattern = "^po_[A-Za-z0-9_-]{1,64}$", description = "`po_…`")),
    responses(
        (status = 200, description = "The payout", body = PayoutDto),
        (status = 401, description = "unauthorized, invalid_token", body = Problem),
        (status = 403, description = "insufficient_scope", body = Problem),
        (status = 404, description = "not_found", body = Problem),
        (status = 429, description = "rate_limited", body = Problem),
        (status = 503, description = "unavailable", body = Problem),
    ),
    security(("bearer" = ["payouts"]))
)]
pub async fn get(auth: Auth, path: web::Path<String>, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let principal = auth.require(Scope::Payouts)?.clone();
    let id = path.into_inner();
    let payout = run(&state, move |p| p.payouts().get(&principal, &id)).await?;
    Ok(HttpResponse::Ok().json(PayoutDto::from(&payout)))
}
