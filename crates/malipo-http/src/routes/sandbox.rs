//! Sandbox helpers (contract section 11), test mode only.

use actix_web::{web, HttpRequest, HttpResponse};
use malipo_auth::Scope;
use malipo_core::Mode;
use malipo_service::{ServiceError, SimulateAction};

use crate::dto::{amount_text, ChargeDto, SandboxWalletRequest, SimulateRequest, WalletDto};
use crate::extract::{idem, parse_json, require_json, Auth, Body};
use crate::problem::{ApiError, Problem, ProblemField};
use crate::routes::{render, run, stored};
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
    post, path = "/api/v1/sandbox/charges/{charge_ref}/simulate", tag = "Channels",
    request_body = SimulateRequest,
    params(
        ("charge_ref" = String, Path, description = "A pending test charge"),
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
    require_json(&req)?;
    let parsed = parse_json::<SimulateRequest>(&body.0)?;
    let action: SimulateAction = parsed.value.action.parse().map_err(|()| {
        ApiError::Fields(vec![ProblemField {
            field: "action".into(),
            code: "invalid_value".into(),
            message: "action must be approve, decline, wrong_pin, expire or fail".into(),
        }])
    })?;
    let idem = idem(&req, &principal, "POST /sandbox/charges/{charge_ref}/simulate", None, &parsed.canonical)?;
    let charge_ref = path.into_inner();
    let outcome = run(&state, move |p| p.simulate(&principal, &charge_ref, action, &idem, &|c| render(&ChargeDto::from(c)))).await?;
    Ok(stored(outcome))
}

/// Create or top up a test wallet.
#[utoipa::path(
    post, path = "/api/v1/sandbox/wallets", tag = "Channels",
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
    require_json(&req)?;
    let parsed = parse_json::<SandboxWalletRequest>(&body.0)?;
    let w = parsed.value;
    let balance = w.balance.as_deref().map(|b| amount_text("balance", b)).transpose()?;
    let idem = idem(&req, &principal, "POST /sandbox/wallets", None, &parsed.canonical)?;
    let outcome = run(&state, move |p| {
        p.sandbox_wallet(&principal, &w.msisdn, balance.as_deref(), w.kyc_tier, &idem, &|d| render(&WalletDto::from(d)))
    })
    .await?;
    Ok(stored(outcome))
}
