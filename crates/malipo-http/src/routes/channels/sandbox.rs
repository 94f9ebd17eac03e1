//! Sandbox helpers (contract section 11), test mode only.

use actix_web::{web, HttpRequest, HttpResponse};
use malipo_auth::Scope;
use malipo_core::Mode;
use malipo_service::{SandboxWallet, ServiceError, Simulate};

use crate::extract::{Auth, Body};
use crate::idempotent::{idempotent, Input};
use crate::problem::{ApiError, Problem};
use crate::routes::channels::dto::{SandboxWalletRequest, SimulateRequest};
use crate::routes::shared::{ChargeDto, WalletDto};
use crate::state::AppState;

fn test_mode(auth: &Auth) -> Result<(), ApiError> {
    if auth.0.mode == Mode::Test {
        Ok(())
    } else {
        Err(ApiError::Service(ServiceError::TestModeOnly))
    }
}

/// Simulate the customer's answer to a test charge.
#[utoipa::path(
    post, path = "/api/v1/sandbox/charges/{charge_ref}/simulate", operation_id = "simulateCharge", tag = "Channels",
    request_body = SimulateRequest,
    params(
        ("charge_ref" = String, Path, pattern = "^ch_[A-Za-z0-9_-]{1,64}$", description = "A pending test charge"),
        ("Idempotency-Key" = String, Header, description = "Required"),
    ),
    responses(
        (status = 200, description = "The charge after the action", body = ChargeDto),
        (status = 403, description = "test_mode_only", body = Problem),
        (status = 404, description = "not_found", body = Problem),
        (status = 409, description = "invalid_state", body = Problem),
    ),
    security(("bearer" = ["payments"]))
)]
pub async fn simulate(
    req: HttpRequest,
    auth: Auth,
    path: web::Path<String>,
    body: Body,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let principal = auth.require(Scope::Payments)?.clone();
    test_mode(&auth)?;
    let charge_ref = path.into_inner();
    let operation = "POST /sandbox/charges/{charge_ref}/simulate";
    // The action's problem is the body's, answered before the key's.
    let input = Input::json(&body).fields_before_key();
    let raw = |r: SimulateRequest| Ok(r.into_new(charge_ref));
    idempotent(
        &req,
        principal,
        &state,
        operation,
        input,
        raw,
        |p, principal, simulation: &Simulate, idem| p.sandbox().simulate(principal, simulation, idem),
        |v| ChargeDto::from(v),
    )
    .await
}

/// Create or top up a test wallet.
#[utoipa::path(
    post, path = "/api/v1/sandbox/wallets", operation_id = "createSandboxWallet", tag = "Channels",
    request_body = SandboxWalletRequest,
    params(("Idempotency-Key" = String, Header, description = "Required")),
    responses(
        (status = 200, description = "The wallet", body = WalletDto),
        (status = 403, description = "test_mode_only", body = Problem),
        (status = 422, description = "validation_failed", body = Problem),
    ),
    security(("bearer" = ["payments"]))
)]
pub async fn wallets(req: HttpRequest, auth: Auth, body: Body, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let principal = auth.require(Scope::Payments)?.clone();
    test_mode(&auth)?;
    let raw = SandboxWalletRequest::into_new;
    idempotent(
        &req,
        principal,
        &state,
        "POST /sandbox/wallets",
        Input::json(&body),
        raw,
        |p, principal, wallet: &SandboxWallet, idem| p.sandbox().wallet(principal, wallet, idem),
        |v| WalletDto::from(v),
    )
    .await
}
