//! Reversals (contract section 8).

pub mod dto;

use std::collections::HashMap;

use actix_web::{web, HttpRequest, HttpResponse};
use malipo_auth::Scope;
use malipo_service::CreateReversal;
use utoipa::openapi::schema::{AllOfBuilder, ObjectBuilder, OneOfBuilder, Schema, Type};
use utoipa::openapi::RefOr;
use utoipa::{Modify, OpenApi};

use self::dto::{ReversalDto, ReversalRequest};
use crate::extract::{Auth, Body};
use crate::handler::{bad_cursor, limit, resource, run};
use crate::idempotent::{idempotent, Input};
use crate::problem::{ApiError, Problem};
use crate::routes::shared::ListDto;
use crate::state::AppState;
use crate::wire::DecimalAmount;

/// The group's routes, under `/api/v1`.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(resource("/reversals", "POST, GET").route(web::post().to(create)).route(web::get().to(list)))
        .service(resource("/reversals/{reversal_id}", "GET").route(web::get().to(get)));
}

/// The group's operations and objects in the OpenAPI document.
#[derive(OpenApi)]
#[openapi(paths(create, list, get), components(schemas(ReversalRequest, ReversalDto, DecimalAmount)), modifiers(&ExactlyOneOriginal))]
pub struct Api;

/// `ReversalRequest` names exactly one original: one of `charge_ref`, `payout_ref` and
/// `transaction_id` is a string, the others absent or null (what the derive cannot say).
struct ExactlyOneOriginal;

impl Modify for ExactlyOneOriginal {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let Some(schemas) = openapi.components.as_mut().map(|c| &mut c.schemas) else { return };
        let Some(RefOr::T(request)) = schemas.remove("ReversalRequest") else { return };
        let mut one_of = OneOfBuilder::new();
        for field in ["charge_ref", "payout_ref", "transaction_id"] {
            one_of = one_of.item(ObjectBuilder::new().property(field, ObjectBuilder::new().schema_type(Type::String)).required(field));
        }
        let exact =
            AllOfBuilder::new().item(request).item(one_of).description(Some("Exactly one of charge_ref, payout_ref and transaction_id"));
        schemas.insert("ReversalRequest".into(), RefOr::T(Schema::AllOf(exact.build())));
    }
}

/// Reverse all or part of a completed charge or payout (named by its ref or its ledger
/// transaction). The fee is given back in proportion; reversals never exceed the original in sum.
#[utoipa::path(
    post, path = "/api/v1/reversals", operation_id = "createReversal", tag = "Reversals",
    request_body = ReversalRequest,
    params(("Idempotency-Key" = String, Header, description = "Required: 1 to 255 visible ASCII characters")),
    responses(
        (status = 200, description = "The completed reversal (or the original answer replayed, with Idempotent-Replayed: true)", body = ReversalDto),
        (status = 400, description = "invalid_request (malformed JSON, wrong types), idempotency_key_missing", body = Problem),
        (status = 401, description = "unauthorized, invalid_token", body = Problem),
        (status = 403, description = "insufficient_scope", body = Problem),
        (status = 404, description = "not_found (no such charge, payout or transaction of this organisation and mode)", body = Problem),
        (status = 409, description = "invalid_state (the original is not completed), idempotency_in_progress", body = Problem),
        (status = 413, description = "payload_too_large (above 64 KiB)", body = Problem),
        (status = 415, description = "unsupported_media_type", body = Problem),
        (status = 422, description = "validation_failed (not exactly one original, `invalid_amount`, `missing_field`, `too_long`, `unknown_field`), reversal_exceeds_original, insufficient_funds (the side giving money back), idempotency_key_reused", body = Problem),
        (status = 429, description = "rate_limited", body = Problem),
        (status = 503, description = "unavailable", body = Problem),
    ),
    security(("bearer" = ["reversals"]))
)]
pub async fn create(req: HttpRequest, auth: Auth, body: Body, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let principal = auth.require(Scope::Reversals)?.clone();
    idempotent(
        &req,
        principal,
        &state,
        "POST /reversals",
        Input::json(&body),
        ReversalRequest::into_new,
        |p, principal, reversal: &CreateReversal, idem| p.reversals().create(principal, reversal, idem),
        |v| ReversalDto::from(v),
    )
    .await
}

/// List reversals, newest first.
#[utoipa::path(
    get, path = "/api/v1/reversals", operation_id = "listReversals", tag = "Reversals",
    params(
        ("limit" = Option<u32>, Query, description = "1 to 100, default 20"),
        ("cursor" = Option<String>, Query, pattern = "^rv_[A-Za-z0-9_-]{1,64}$", description = "next_cursor of the previous page"),
    ),
    responses(
        (status = 200, description = "A page of reversals", body = ListDto<ReversalDto>),
        (status = 400, description = "invalid_request (bad query parameter or cursor)", body = Problem),
        (status = 401, description = "unauthorized, invalid_token", body = Problem),
        (status = 403, description = "insufficient_scope", body = Problem),
        (status = 429, description = "rate_limited", body = Problem),
        (status = 503, description = "unavailable", body = Problem),
    ),
    security(("bearer" = ["reversals"]))
)]
pub async fn list(auth: Auth, query: web::Query<HashMap<String, String>>, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let principal = auth.require(Scope::Reversals)?.clone();
    let q = query.into_inner();
    let limit = limit(q.get("limit").map(String::as_str))?;
    let cursor = q.get("cursor").cloned();
    let page = run(&state, move |p| p.reversals().list(&principal, cursor.as_deref(), limit)).await.map_err(bad_cursor)?;
    Ok(HttpResponse::Ok().json(ListDto {
        data: page.data.iter().map(ReversalDto::from).collect(),
        has_more: page.has_more,
        next_cursor: page.next_cursor,
    }))
}

/// One reversal.
#[utoipa::path(
    get, path = "/api/v1/reversals/{reversal_id}", operation_id = "getReversal", tag = "Reversals",
    params(("reversal_id" = String, Path, pattern = "^rv_[A-Za-z0-9_-]{1,64}$", description = "`rv_…`")),
    responses(
        (status = 200, description = "The reversal", body = ReversalDto),
        (status = 401, description = "unauthorized, invalid_token", body = Problem),
        (status = 403, description = "insufficient_scope", body = Problem),
        (status = 404, description = "not_found", body = Problem),
        (status = 429, description = "rate_limited", body = Problem),
        (status = 503, description = "unavailable", body = Problem),
    ),
    security(("bearer" = ["reversals"]))
)]
pub async fn get(auth: Auth, path: web::Path<String>, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let principal = auth.require(Scope::Reversals)?.clone();
    let id = path.into_inner();
    let reversal = run(&state, move |p| p.reversals().get(&principal, &id)).await?;
    Ok(HttpResponse::Ok().json(ReversalDto::from(&reversal)))
}
