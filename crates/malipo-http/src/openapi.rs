//! The OpenAPI 3.1 document, generated from the handlers' annotations.

use std::sync::OnceLock;

use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::dto;
use crate::problem;
use crate::routes;

struct Security;

impl Modify for Security {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new().scheme(HttpAuthScheme::Bearer).description(Some("A token from POST /api/v1/oauth/token")).build(),
            ),
        );
    }
}

/// Malipo's API.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Malipo API",
        version = "1",
        description = "Collect money from customers' phones and pay money out. Errors are RFC 9457 problem documents; amounts are decimal numbers in major units; every state-changing call carries an idempotency key."
    ),
    servers((url = "/", description = "This server")),
    paths(
        routes::oauth::token,
        routes::oauth::revoke,
        routes::charges::create,
        routes::charges::status,
        routes::charges::list,
        routes::charges::get,
        routes::balance::balance,
        routes::balance::accounts,
        routes::sandbox::simulate,
        routes::sandbox::wallets,
        routes::webhooks::create_endpoint,
        routes::webhooks::list_endpoints,
        routes::webhooks::get_endpoint,
        routes::webhooks::delete_endpoint,
        routes::webhooks::rotate_secret,
        routes::webhooks::list_events,
        routes::webhooks::get_event,
        routes::webhooks::redeliver,
        routes::ops::healthz,
        routes::ops::readyz,
        routes::ops::openapi,
    ),
    components(schemas(
        problem::Problem,
        problem::ProblemField,
        dto::TokenRequest,
        dto::TokenResponse,
        dto::RevokeRequest,
        dto::StkRequest,
        dto::ChargeDto,
        dto::BalanceDto,
        dto::AccountDto,
        dto::SimulateRequest,
        dto::SandboxWalletRequest,
        dto::WalletDto,
        dto::WalletLimitsDto,
        dto::EndpointCreateRequest,
        dto::RotateSecretRequest,
        dto::EndpointDto,
        dto::EventDto,
        dto::EventDetailDto,
        dto::DeliveryDto,
        dto::AttemptDto,
        dto::RedeliverRequest,
        dto::RedeliveryDto,
    )),
    modifiers(&Security),
    tags(
        (name = "Auth", description = "OAuth 2.0 client credentials"),
        (name = "Charges", description = "Payment prompts pushed to customers' phones"),
        (name = "Accounts", description = "Balances and accounts"),
        (name = "Channels", description = "Sandbox helpers, USSD and configuration"),
        (name = "Webhooks", description = "Events, webhook endpoints and their deliveries"),
        (name = "Operations", description = "Health, readiness and this document"),
    )
)]
pub struct ApiDoc;

/// The document as JSON (built once).
pub fn document_json() -> String {
    static DOC: OnceLock<String> = OnceLock::new();
    DOC.get_or_init(|| ApiDoc::openapi().to_pretty_json().unwrap_or_else(|_| "{}".into())).clone()
}
