//! Balance and accounts (contract section 4).

pub mod dto;

use std::collections::HashMap;

use actix_web::{web, HttpRequest, HttpResponse};
use malipo_auth::Scope;
use malipo_ledger::AccountKind;
use malipo_service::CreateTransfer;
use utoipa::OpenApi;

use self::dto::{AccountDto, StatementDto, TransferDto, TransferRequest};
use crate::extract::{Auth, Body};
use crate::handler::{bad_cursor, limit, resource, run};
use crate::idempotent::{idempotent, Input};
use crate::problem::{ApiError, Problem};
use crate::routes::shared::{BalanceDto, ListDto, StatementLineDto};
use crate::state::AppState;
use crate::wire::{parse_time, DecimalAmount};

/// The group's routes, under `/api/v1`.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(resource("/partner/balance", "GET").route(web::get().to(balance)))
        .service(resource("/accounts", "GET").route(web::get().to(accounts)))
        .service(resource("/accounts/transfers", "POST").route(web::post().to(transfer)))
        .service(resource("/accounts/{account_id}/statement", "GET").route(web::get().to(statement)));
}

/// The group's operations and objects in the OpenAPI document.
#[derive(OpenApi)]
#[openapi(
    paths(balance, accounts, transfer, statement),
    components(schemas(BalanceDto, AccountDto, TransferRequest, TransferDto, StatementDto, StatementLineDto, DecimalAmount))
)]
pub struct Api;

/// The balance of the collection (default) or payout account.
#[utoipa::path(
    get, path = "/api/v1/partner/balance", operation_id = "getBalance", tag = "Accounts",
    params(("account" = Option<String>, Query, pattern = "^(collection|payout)$", description = "`collection` (default) or `payout`")),
    responses(
        (status = 200, description = "The balance", body = BalanceDto),
        (status = 400, description = "unknown account", body = Problem),
        (status = 404, description = "the organisation has no such account", body = Problem),
    ),
    security(("bearer" = ["payments"]))
)]
pub async fn balance(auth: Auth, query: web::Query<HashMap<String, String>>, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let principal = auth.require(Scope::Payments)?.clone();
    let kind = match query.get("account").map(String::as_str) {
        None | Some("collection") => AccountKind::Collection,
        Some("payout") => AccountKind::Payout,
        Some(_) => return Err(ApiError::InvalidRequest("account must be collection or payout".into())),
    };
    let b = run(&state, move |p| p.accounts().balance(&principal, kind)).await?;
    Ok(HttpResponse::Ok().json(BalanceDto::from(&b)))
}

/// The organisation's accounts in this mode, with balances.
#[utoipa::path(
    get, path = "/api/v1/accounts", operation_id = "listAccounts", tag = "Accounts",
    responses((status = 200, description = "The accounts", body = ListDto<AccountDto>)),
    security(("bearer" = ["payments"]))
)]
pub async fn accounts(auth: Auth, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let principal = auth.require(Scope::Payments)?.clone();
    let list = run(&state, move |p| p.accounts().list(&principal)).await?;
    Ok(HttpResponse::Ok().json(ListDto { data: list.iter().map(AccountDto::from).collect(), has_more: false, next_cursor: None }))
}

/// Move money between the organisation's own accounts (`collection` and `payout`), at once.
#[utoipa::path(
    post, path = "/api/v1/accounts/transfers", operation_id = "createTransfer", tag = "Accounts",
    request_body = TransferRequest,
    params(("Idempotency-Key" = String, Header, description = "Required: 1 to 255 visible ASCII characters")),
    responses(
        (status = 200, description = "The completed transfer (or the original answer replayed, with Idempotent-Replayed: true)", body = TransferDto),
        (status = 400, description = "invalid_request (malformed JSON, wrong types), idempotency_key_missing", body = Problem),
        (status = 401, description = "unauthorized, invalid_token", body = Problem),
        (status = 403, description = "insufficient_scope", body = Problem),
        (status = 409, description = "idempotency_in_progress", body = Problem),
        (status = 413, description = "payload_too_large (above 64 KiB)", body = Problem),
        (status = 415, description = "unsupported_media_type", body = Problem),
        (status = 422, description = "validation_failed (`invalid_value` of `from`/`to`, `invalid_amount`, `missing_field`, `unknown_field`), insufficient_funds, idempotency_key_reused", body = Problem),
        (status = 429, description = "rate_limited", body = Problem),
        (status = 503, description = "unavailable", body = Problem),
    ),
    security(("bearer" = ["payments"]))
)]
pub async fn transfer(req: HttpRequest, auth: Auth, body: Body, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let principal = auth.require(Scope::Payments)?.clone();
    let operation = "POST /accounts/transfers";
    idempotent(
        &req,
        principal,
        &state,
        operation,
        Input::json(&body),
        TransferRequest::into_new,
        |p, principal, transfer: &CreateTransfer, idem| p.transfers().transfer(principal, transfer, idem),
        |v| TransferDto::from(v),
    )
    .await
}

/// An account's statement: its ledger entries, oldest first.
#[utoipa::path(
    get, path = "/api/v1/accounts/{account_id}/statement", operation_id = "getAccountStatement", tag = "Accounts",
    params(
        ("account_id" = String, Path, pattern = "^acc_[A-Za-z0-9_-]{1,64}$", description = "`acc_…`, one of the organisation's accounts (see GET /accounts)"),
        ("from" = Option<String>, Query, format = DateTime, description = "Posted at or after (RFC 3339)"),
        ("to" = Option<String>, Query, format = DateTime, description = "Posted before (RFC 3339)"),
        ("limit" = Option<u32>, Query, description = "1 to 100, default 20"),
        ("cursor" = Option<String>, Query, pattern = "^-?[0-9]{1,18}$", description = "next_cursor of the previous page"),
    ),
    responses(
        (status = 200, description = "The account and a page of its statement", body = StatementDto),
        (status = 400, description = "invalid_request (bad query parameter or cursor)", body = Problem),
        (status = 401, description = "unauthorized, invalid_token", body = Problem),
        (status = 403, description = "insufficient_scope", body = Problem),
        (status = 404, description = "not_found (no such account of this organisation and mode)", body = Problem),
        (status = 429, description = "rate_limited", body = Problem),
        (status = 503, description = "unavailable", body = Problem),
    ),
    security(("bearer" = ["payments"]))
)]
pub async fn statement(
    auth: Auth,
    path: web::Path<String>,
    query: web::Query<HashMap<String, String>>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let principal = auth.require(Scope::Payments)?.clone();
    let q = query.into_inner();
    let window = (q.get("from").map(|v| parse_time("from", v)).transpose()?, q.get("to").map(|v| parse_time("to", v)).transpose()?);
    let limit = limit(q.get("limit").map(String::as_str))?;
    let cursor = q.get("cursor").cloned();
    let id = path.into_inner();
    let (account, page) =
        run(&state, move |p| p.transfers().statement(&principal, &id, window, cursor.as_deref(), limit)).await.map_err(bad_cursor)?;
    Ok(HttpResponse::Ok().json(StatementDto::new(&account, &page)))
}
