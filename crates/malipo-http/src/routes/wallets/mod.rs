//! Wallets and KYC (contract section 11): the operator's back office over customers' wallets.

pub mod dto;

use std::collections::HashMap;

use actix_web::{web, HttpRequest, HttpResponse};
use malipo_auth::Principal;
use malipo_auth::Scope;
use malipo_service::{Idem, OpenWallet, Platform, RaiseKyc, SetPin, WalletLock};
use utoipa::OpenApi;

use self::dto::{OpenWalletRequest, RaiseKycRequest, SetPinRequest, WalletReasonRequest};
use crate::extract::{Auth, Body};
use crate::handler::{bad_cursor, limit, resource, run};
use crate::idempotent::{idempotent, Input};
use crate::problem::{ApiError, Problem};
use crate::routes::shared::{ListDto, StatementLineDto, WalletDto, WalletLimitsDto};
use crate::state::AppState;

/// The group's routes, under `/api/v1`.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(resource("/wallets", "POST").route(web::post().to(open)))
        .service(resource("/wallets/{msisdn}", "GET").route(web::get().to(get)))
        .service(resource("/wallets/{msisdn}/pin", "POST").route(web::post().to(set_pin)))
        .service(resource("/wallets/{msisdn}/lock", "POST").route(web::post().to(lock)))
        .service(resource("/wallets/{msisdn}/unlock", "POST").route(web::post().to(unlock)))
        .service(resource("/wallets/{msisdn}/kyc", "POST").route(web::post().to(kyc)))
        .service(resource("/wallets/{msisdn}/transactions", "GET").route(web::get().to(transactions)));
}

/// The group's operations and objects in the OpenAPI document.
#[derive(OpenApi)]
#[openapi(
    paths(open, get, set_pin, lock, unlock, kyc, transactions),
    components(schemas(
        WalletDto,
        WalletLimitsDto,
        OpenWalletRequest,
        SetPinRequest,
        WalletReasonRequest,
        RaiseKycRequest,
        StatementLineDto
    ))
)]
pub struct Api;

/// Open a wallet in the number's country, with a zero balance. The KYC tier follows from the ID
/// given (tier 0 without one).
#[utoipa::path(
    post, path = "/api/v1/wallets", operation_id = "openWallet", tag = "Wallets",
    request_body = OpenWalletRequest,
    params(("Idempotency-Key" = String, Header, description = "Required")),
    responses(
        (status = 200, description = "The new wallet (or the original answer replayed, with Idempotent-Replayed: true)", body = WalletDto),
        (status = 400, description = "invalid_request, idempotency_key_missing", body = Problem),
        (status = 401, description = "unauthorized, invalid_token", body = Problem),
        (status = 403, description = "insufficient_scope", body = Problem),
        (status = 409, description = "invalid_state (the number already has a wallet in this mode), idempotency_in_progress", body = Problem),
        (status = 415, description = "unsupported_media_type", body = Problem),
        (status = 422, description = "validation_failed (`invalid_msisdn`, `invalid_value`, `missing_field`, `too_long`, `unknown_field`, `already_registered`), idempotency_key_reused", body = Problem),
    ),
    security(("bearer" = ["wallets"]))
)]
pub async fn open(req: HttpRequest, auth: Auth, body: Body, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let principal = auth.require(Scope::Wallets)?.clone();
    let raw = |r: OpenWalletRequest| Ok(r.into_new());
    idempotent(
        &req,
        principal,
        &state,
        "POST /wallets",
        Input::json(&body),
        raw,
        |p, principal, wallet: &OpenWallet, idem| p.wallets().open(principal, wallet, idem),
        |v| WalletDto::from(v),
    )
    .await
}

/// One wallet: state, KYC tier, balance, limits and today's use of them.
#[utoipa::path(
    get, path = "/api/v1/wallets/{msisdn}", operation_id = "getWallet", tag = "Wallets",
    params(("msisdn" = String, Path, pattern = "^[1-9][0-9]{7,14}$", description = "The wallet's number")),
    responses(
        (status = 200, description = "The wallet", body = WalletDto),
        (status = 401, description = "unauthorized, invalid_token", body = Problem),
        (status = 403, description = "insufficient_scope", body = Problem),
        (status = 404, description = "not_found", body = Problem),
    ),
    security(("bearer" = ["wallets"]))
)]
pub async fn get(auth: Auth, path: web::Path<String>, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let principal = auth.require(Scope::Wallets)?.clone();
    let msisdn = path.into_inner();
    let details = run(&state, move |p| p.wallets().details(&principal, &msisdn)).await?;
    Ok(HttpResponse::Ok().json(WalletDto::from(&details)))
}

/// Set the wallet's first PIN, or change it given the current one (a wrong current PIN counts as
/// a failed attempt; at the country's maximum the wallet locks).
#[utoipa::path(
    post, path = "/api/v1/wallets/{msisdn}/pin", operation_id = "setWalletPin", tag = "Wallets",
    request_body = SetPinRequest,
    params(
        ("msisdn" = String, Path, pattern = "^[1-9][0-9]{7,14}$", description = "The wallet's number"),
        ("Idempotency-Key" = String, Header, description = "Required"),
    ),
    responses(
        (status = 200, description = "The wallet, `pin_set: true`", body = WalletDto),
        (status = 400, description = "invalid_request (e.g. a PIN sent as a number), idempotency_key_missing", body = Problem),
        (status = 404, description = "not_found", body = Problem),
        (status = 409, description = "invalid_state, idempotency_in_progress", body = Problem),
        (status = 415, description = "unsupported_media_type", body = Problem),
        (status = 422, description = "validation_failed (`invalid_pin`, `weak_pin`, `wrong_pin`, `missing_field`, `unknown_field`), wallet_locked, idempotency_key_reused", body = Problem),
    ),
    security(("bearer" = ["wallets"]))
)]
pub async fn set_pin(
    req: HttpRequest,
    auth: Auth,
    path: web::Path<String>,
    body: Body,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let principal = auth.require(Scope::Wallets)?.clone();
    let msisdn = path.into_inner();
    let operation = "POST /wallets/{msisdn}/pin";
    let raw = |r: SetPinRequest| Ok(r.into_new(msisdn));
    idempotent(
        &req,
        principal,
        &state,
        operation,
        Input::json(&body),
        raw,
        |p, principal, pin: &SetPin, idem| p.wallets().set_pin(principal, pin, idem),
        |v| WalletDto::from(v),
    )
    .await
}

/// Lock a wallet: it can no longer pay or be paid, and its pending prompts fail with `wallet_locked`.
#[utoipa::path(
    post, path = "/api/v1/wallets/{msisdn}/lock", operation_id = "lockWallet", tag = "Wallets",
    request_body = WalletReasonRequest,
    params(
        ("msisdn" = String, Path, pattern = "^[1-9][0-9]{7,14}$", description = "The wallet's number"),
        ("Idempotency-Key" = String, Header, description = "Required"),
    ),
    responses(
        (status = 200, description = "The wallet, `state: locked`", body = WalletDto),
        (status = 400, description = "invalid_request, idempotency_key_missing", body = Problem),
        (status = 404, description = "not_found", body = Problem),
        (status = 409, description = "invalid_state (already locked), idempotency_in_progress", body = Problem),
        (status = 415, description = "unsupported_media_type", body = Problem),
        (status = 422, description = "validation_failed (`missing_field`, `too_long`, `invalid_value`, `unknown_field`), idempotency_key_reused", body = Problem),
    ),
    security(("bearer" = ["wallets"]))
)]
pub async fn lock(
    req: HttpRequest,
    auth: Auth,
    path: web::Path<String>,
    body: Body,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    set_lock(req, auth, path, body, state, true).await
}

/// Unlock a wallet and reset its PIN attempt count.
#[utoipa::path(
    post, path = "/api/v1/wallets/{msisdn}/unlock", operation_id = "unlockWallet", tag = "Wallets",
    request_body = WalletReasonRequest,
    params(
        ("msisdn" = String, Path, pattern = "^[1-9][0-9]{7,14}$", description = "The wallet's number"),
        ("Idempotency-Key" = String, Header, description = "Required"),
    ),
    responses(
        (status = 200, description = "The wallet, `state: active`", body = WalletDto),
        (status = 400, description = "invalid_request, idempotency_key_missing", body = Problem),
        (status = 404, description = "not_found", body = Problem),
        (status = 409, description = "invalid_state (not locked), idempotency_in_progress", body = Problem),
        (status = 415, description = "unsupported_media_type", body = Problem),
        (status = 422, description = "validation_failed (`missing_field`, `too_long`, `invalid_value`, `unknown_field`), idempotency_key_reused", body = Problem),
    ),
    security(("bearer" = ["wallets"]))
)]
pub async fn unlock(
    req: HttpRequest,
    auth: Auth,
    path: web::Path<String>,
    body: Body,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    set_lock(req, auth, path, body, state, false).await
}

/// Locks (`lock`) or unlocks a wallet: the two endpoints differ only in the use case.
async fn set_lock(
    req: HttpRequest,
    auth: Auth,
    path: web::Path<String>,
    body: Body,
    state: web::Data<AppState>,
    lock: bool,
) -> Result<HttpResponse, ApiError> {
    let principal = auth.require(Scope::Wallets)?.clone();
    let operation = if lock { "POST /wallets/{msisdn}/lock" } else { "POST /wallets/{msisdn}/unlock" };
    let msisdn = path.into_inner();
    let raw = |r: WalletReasonRequest| Ok(r.into_new(msisdn));
    let use_case = move |p: &Platform, principal: &Principal, change: &WalletLock, idem: &Idem| {
        if lock {
            p.wallets().lock(principal, change, idem)
        } else {
            p.wallets().unlock(principal, change, idem)
        }
    };
    idempotent(&req, principal, &state, operation, Input::json(&body), raw, use_case, |v| WalletDto::from(v)).await
}

/// Raise a wallet's KYC tier on an identity document that grants at least that tier.
#[utoipa::path(
    post, path = "/api/v1/wallets/{msisdn}/kyc", operation_id = "submitWalletKyc", tag = "Wallets",
    request_body = RaiseKycRequest,
    params(
        ("msisdn" = String, Path, pattern = "^[1-9][0-9]{7,14}$", description = "The wallet's number"),
        ("Idempotency-Key" = String, Header, description = "Required"),
    ),
    responses(
        (status = 200, description = "The wallet at its new tier, with the tier's limits", body = WalletDto),
        (status = 400, description = "invalid_request (e.g. a tier that is not an integer from 0 to 255), idempotency_key_missing", body = Problem),
        (status = 404, description = "not_found", body = Problem),
        (status = 409, description = "invalid_state (the tier is not above the current one), idempotency_in_progress", body = Problem),
        (status = 415, description = "unsupported_media_type", body = Problem),
        (status = 422, description = "validation_failed (`invalid_value`, `already_registered`, `missing_field`, `unknown_field`), idempotency_key_reused", body = Problem),
    ),
    security(("bearer" = ["wallets"]))
)]
pub async fn kyc(
    req: HttpRequest,
    auth: Auth,
    path: web::Path<String>,
    body: Body,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let principal = auth.require(Scope::Wallets)?.clone();
    let msisdn = path.into_inner();
    let operation = "POST /wallets/{msisdn}/kyc";
    let raw = |r: RaiseKycRequest| Ok(r.into_new(msisdn));
    idempotent(
        &req,
        principal,
        &state,
        operation,
        Input::json(&body),
        raw,
        |p, principal, kyc: &RaiseKyc, idem| p.wallets().raise_kyc(principal, kyc, idem),
        |v| WalletDto::from(v),
    )
    .await
}

/// The wallet's statement: every posting to it, oldest first.
#[utoipa::path(
    get, path = "/api/v1/wallets/{msisdn}/transactions", operation_id = "listWalletTransactions", tag = "Wallets",
    params(
        ("msisdn" = String, Path, pattern = "^[1-9][0-9]{7,14}$", description = "The wallet's number"),
        ("limit" = Option<u32>, Query, description = "1 to 100, default 20"),
        ("cursor" = Option<String>, Query, pattern = "^0*[1-9][0-9]{0,17}$", description = "next_cursor of the previous page"),
    ),
    responses(
        (status = 200, description = "A page of the statement", body = ListDto<StatementLineDto>),
        (status = 400, description = "bad query parameter", body = Problem),
        (status = 404, description = "not_found", body = Problem),
    ),
    security(("bearer" = ["wallets"]))
)]
pub async fn transactions(
    auth: Auth,
    path: web::Path<String>,
    query: web::Query<HashMap<String, String>>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let principal = auth.require(Scope::Wallets)?.clone();
    let q = query.into_inner();
    let limit = limit(q.get("limit").map(String::as_str))?;
    let cursor = q.get("cursor").cloned();
    let msisdn = path.into_inner();
    let (wallet, page) =
        run(&state, move |p| p.wallets().statement(&principal, &msisdn, cursor.as_deref(), limit)).await.map_err(bad_cursor)?;
    Ok(HttpResponse::Ok().json(ListDto {
        data: page.data.iter().map(|l| StatementLineDto::new(l, wallet.currency)).collect(),
        has_more: page.has_more,
        next_cursor: page.next_cursor,
    }))
}
