//! Balance and accounts (contract section 4).

pub mod dto;

use std::collections::HashMap;

use actix_web::{web, HttpResponse};
use malipo_auth::Scope;
use malipo_ledger::AccountKind;
use utoipa::OpenApi;

use self::dto::AccountDto;
use crate::extract::Auth;
use crate::handler::{resource, run};
use crate::problem::{ApiError, Problem};
use crate::routes::shared::{BalanceDto, ListDto};
use crate::state::AppState;

/// The group's routes, under `/api/v1`.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(resource("/partner/balance", "GET").route(web::get().to(balance)))
        .service(resource("/accounts", "GET").route(web::get().to(accounts)));
}

/// The group's operations and objects in the OpenAPI document.
#[derive(OpenApi)]
#[openapi(paths(balance, accounts), components(schemas(BalanceDto, AccountDto)))]
pub struct Api;

/// The balance of the collection (default) or payout account.
#[utoipa::path(
    get, path = "/api/v1/partner/balance", tag = "Accounts",
    params(("account" = Option<String>, Query, description = "`collection` (default) or `payout`")),
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
    get, path = "/api/v1/accounts", tag = "Accounts",
    responses((status = 200, description = "The accounts", body = ListDto<AccountDto>)),
    security(("bearer" = ["payments"]))
)]
pub async fn accounts(auth: Auth, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let principal = auth.require(Scope::Payments)?.clone();
    let list = run(&state, move |p| p.accounts().list(&principal)).await?;
    Ok(HttpResponse::Ok().json(ListDto { data: list.iter().map(AccountDto::from).collect(), has_more: false, next_cursor: None }))
}
