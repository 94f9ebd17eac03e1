//! Agents (contract section 11): cash-in, cash-out and the agent's float.

pub mod dto;

use actix_web::{web, HttpRequest, HttpResponse};
use malipo_auth::Scope;
use malipo_service::AgentCash;
use utoipa::OpenApi;

use self::dto::{AgentCashRequest, CashInDto, CashOutDto};
use crate::extract::{Auth, Body};
use crate::handler::{resource, run};
use crate::idempotent::{idempotent, Input};
use crate::problem::{ApiError, Problem};
use crate::routes::shared::BalanceDto;
use crate::state::AppState;

/// The group's routes, under `/api/v1`.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(resource("/agents/cash-in", "POST").route(web::post().to(cash_in)))
        .service(resource("/agents/cash-out", "POST").route(web::post().to(cash_out)))
        .service(resource("/agents/cash-out/{withdrawal_ref}", "GET").route(web::get().to(get_cash_out)))
        .service(resource("/agents/float", "GET").route(web::get().to(float)));
}

/// The group's operations and objects in the OpenAPI document.
#[derive(OpenApi)]
#[openapi(paths(cash_in, cash_out, get_cash_out, float), components(schemas(AgentCashRequest, CashInDto, CashOutDto)))]
pub struct Api;

/// Cash-in: the agent's float pays the customer's wallet at once, within the customer's limits.
#[utoipa::path(
    post, path = "/api/v1/agents/cash-in", operation_id = "createCashIn", tag = "Agents",
    request_body = AgentCashRequest,
    params(("Idempotency-Key" = String, Header, description = "Required")),
    responses(
        (status = 200, description = "The completed cash-in (or the original answer replayed, with Idempotent-Replayed: true)", body = CashInDto),
        (status = 400, description = "invalid_request, idempotency_key_missing", body = Problem),
        (status = 401, description = "unauthorized, invalid_token", body = Problem),
        (status = 403, description = "insufficient_scope", body = Problem),
        (status = 409, description = "invalid_state (the organisation has no agent float), idempotency_in_progress", body = Problem),
        (status = 415, description = "unsupported_media_type", body = Problem),
        (status = 422, description = "validation_failed (`invalid_msisdn`, `invalid_amount`, `wallet_not_found`, `missing_field`, `unknown_field`), insufficient_funds (the float), limit_exceeded, wallet_locked, currency_mismatch, idempotency_key_reused", body = Problem),
    ),
    security(("bearer" = ["agent"]))
)]
pub async fn cash_in(req: HttpRequest, auth: Auth, body: Body, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let principal = auth.require(Scope::Agent)?.clone();
    let operation = "POST /agents/cash-in";
    idempotent(
        &req,
        principal,
        &state,
        operation,
        Input::json(&body),
        AgentCashRequest::into_new,
        |p, principal, cash: &AgentCash, idem| p.agents().cash_in(principal, cash, idem),
        |v| CashInDto::from(v),
    )
    .await
}

/// Cash-out: a prompt to the customer like a charge (`wd_…`). On approval the customer's wallet
/// pays amount + fee; the float receives the amount and the agent's commission.
#[utoipa::path(
    post, path = "/api/v1/agents/cash-out", operation_id = "createCashOut", tag = "Agents",
    request_body = AgentCashRequest,
    params(("Idempotency-Key" = String, Header, description = "Required")),
    responses(
        (status = 200, description = "The cash-out in state pending (or the original answer replayed, with Idempotent-Replayed: true)", body = CashOutDto),
        (status = 400, description = "invalid_request, idempotency_key_missing", body = Problem),
        (status = 401, description = "unauthorized, invalid_token", body = Problem),
        (status = 403, description = "insufficient_scope", body = Problem),
        (status = 409, description = "invalid_state (the organisation has no agent float), idempotency_in_progress", body = Problem),
        (status = 415, description = "unsupported_media_type", body = Problem),
        (status = 422, description = "validation_failed (`invalid_msisdn`, `invalid_amount`, `missing_field`, `unknown_field`), currency_mismatch, idempotency_key_reused", body = Problem),
        (status = 503, description = "unavailable: the service is catching up with its due work (with Retry-After)", body = Problem),
    ),
    security(("bearer" = ["agent"]))
)]
pub async fn cash_out(req: HttpRequest, auth: Auth, body: Body, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let principal = auth.require(Scope::Agent)?.clone();
    let operation = "POST /agents/cash-out";
    idempotent(
        &req,
        principal,
        &state,
        operation,
        Input::json(&body),
        AgentCashRequest::into_new,
        |p, principal, cash: &AgentCash, idem| p.agents().cash_out(principal, cash, idem),
        |v| CashOutDto::from(v),
    )
    .await
}

/// One of the agent's cash-outs.
#[utoipa::path(
    get, path = "/api/v1/agents/cash-out/{withdrawal_ref}", operation_id = "getCashOut", tag = "Agents",
    params(("withdrawal_ref" = String, Path, pattern = "^wd_[A-Za-z0-9_-]{1,64}$", description = "`wd_…`")),
    responses(
        (status = 200, description = "The cash-out", body = CashOutDto),
        (status = 401, description = "unauthorized, invalid_token", body = Problem),
        (status = 403, description = "insufficient_scope", body = Problem),
        (status = 404, description = "not_found", body = Problem),
    ),
    security(("bearer" = ["agent"]))
)]
pub async fn get_cash_out(auth: Auth, path: web::Path<String>, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let principal = auth.require(Scope::Agent)?.clone();
    let id = path.into_inner();
    let cash_out = run(&state, move |p| p.agents().get_cash_out(&principal, &id)).await?;
    Ok(HttpResponse::Ok().json(CashOutDto::from(&cash_out)))
}

/// The agent's float: what it can pay out in cash-ins.
#[utoipa::path(
    get, path = "/api/v1/agents/float", operation_id = "getAgentFloat", tag = "Agents",
    responses(
        (status = 200, description = "The float (`account: agent_float`)", body = BalanceDto),
        (status = 401, description = "unauthorized, invalid_token", body = Problem),
        (status = 403, description = "insufficient_scope", body = Problem),
        (status = 404, description = "the organisation has no agent float", body = Problem),
    ),
    security(("bearer" = ["agent"]))
)]
pub async fn float(auth: Auth, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let principal = auth.require(Scope::Agent)?.clone();
    let b = run(&state, move |p| p.agents().float(&principal)).await?;
    Ok(HttpResponse::Ok().json(BalanceDto::from(&b)))
}
