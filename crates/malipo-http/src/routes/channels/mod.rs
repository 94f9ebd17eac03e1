//! Channels (contract section 11): the USSD gateway's callback, the countries' configuration and
//! the sandbox helpers.

pub mod config;
pub mod dto;
pub mod sandbox;
pub mod ussd;

use actix_web::web;
use utoipa::OpenApi;

use self::dto::{CountryDto, FeeBandDto, FeeScheduleDto, IdTypeDto, KycTierDto, SandboxWalletRequest, SimulateRequest, UssdCallback};
use crate::handler::resource;

/// The group's routes, under `/api/v1`.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(resource("/ussd", "POST").route(web::post().to(ussd::ussd)))
        .service(resource("/config/countries", "GET").route(web::get().to(config::countries)))
        .service(resource("/sandbox/charges/{charge_ref}/simulate", "POST").route(web::post().to(sandbox::simulate)))
        .service(resource("/sandbox/wallets", "POST").route(web::post().to(sandbox::wallets)));
}

/// The group's operations and objects in the OpenAPI document.
#[derive(OpenApi)]
#[openapi(
    paths(ussd::ussd, config::countries, sandbox::simulate, sandbox::wallets),
    components(schemas(
        UssdCallback,
        CountryDto,
        IdTypeDto,
        KycTierDto,
        FeeScheduleDto,
        FeeBandDto,
        SimulateRequest,
        SandboxWalletRequest
    ))
)]
pub struct Api;
