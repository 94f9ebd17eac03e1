//! Channels (contract section 11): the USSD gateway's callback, the countries' configuration and
//! the sandbox helpers.

pub mod config;
pub mod dto;
pub mod sandbox;
pub mod ussd;

use actix_web::web;
use utoipa::openapi::schema::{AdditionalProperties, Schema};
use utoipa::openapi::{Ref, RefOr};
use utoipa::{Modify, OpenApi};

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
    )),
    modifiers(&UssdForm)
)]
pub struct Api;

/// The USSD callback as a form: the JSON body's fields, but other fields are ignored (gateways
/// add their own), so the form's schema (`UssdForm`) admits them where the JSON one does not.
struct UssdForm;

impl Modify for UssdForm {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let Some(schemas) = openapi.components.as_mut().map(|c| &mut c.schemas) else { return };
        let Some(RefOr::T(Schema::Object(json))) = schemas.get("UssdCallback") else { return };
        let mut form = json.clone();
        form.additional_properties = Some(Box::new(AdditionalProperties::FreeForm(true)));
        form.description = Some("The callback's fields as a form; other fields are ignored".into());
        schemas.insert("UssdForm".into(), RefOr::T(Schema::Object(form)));
        let form_media = "application/x-www-form-urlencoded";
        let body = openapi.paths.paths.get_mut("/api/v1/ussd").and_then(|p| p.post.as_mut()).and_then(|op| op.request_body.as_mut());
        if let Some(content) = body.and_then(|b| b.content.get_mut(form_media)) {
            content.schema = Some(Ref::from_schema_name("UssdForm").into());
        }
    }
}
