//! The routes of the API and its error handlers.

use actix_web::{web, HttpRequest, HttpResponse};

use crate::problem::ApiError;
use crate::routes::{agents, balance, charges, config, oauth, ops, sandbox, ussd, wallets, webhooks};

async fn not_found() -> Result<HttpResponse, ApiError> {
    Err(ApiError::NotFound)
}

fn query_error(err: actix_web::error::QueryPayloadError, _: &HttpRequest) -> actix_web::Error {
    ApiError::InvalidRequest(format!("bad query string: {err}")).into()
}

fn path_error(err: actix_web::error::PathError, _: &HttpRequest) -> actix_web::Error {
    ApiError::InvalidRequest(format!("bad path: {err}")).into()
}

/// Registers every route. Unknown paths answer 404 and known paths with another method 405,
/// both as problem documents.
pub fn configure(cfg: &mut web::ServiceConfig) {
    // A known path with another method: 405 with the `Allow` header RFC 9110 requires.
    let resource = |path: &str, allow: &'static str| {
        web::resource(path.to_owned())
            .default_service(web::to(move || async move { Err::<HttpResponse, _>(ApiError::MethodNotAllowed(allow)) }))
    };
    cfg.app_data(web::QueryConfig::default().error_handler(query_error))
        .app_data(web::PathConfig::default().error_handler(path_error))
        .service(resource("/healthz", "GET").route(web::get().to(ops::healthz)))
        .service(resource("/readyz", "GET").route(web::get().to(ops::readyz)))
        .service(
            web::scope("/api/v1")
                .service(resource("/openapi.json", "GET").route(web::get().to(ops::openapi)))
                .service(resource("/oauth/token", "POST").route(web::post().to(oauth::token)))
                .service(resource("/oauth/revoke", "POST").route(web::post().to(oauth::revoke)))
                .service(resource("/partner/stk", "POST").route(web::post().to(charges::create)))
                .service(resource("/partner/status", "GET").route(web::get().to(charges::status)))
                .service(resource("/partner/charges", "GET").route(web::get().to(charges::list)))
                .service(resource("/partner/charges/{charge_ref}", "GET").route(web::get().to(charges::get)))
                .service(resource("/partner/balance", "GET").route(web::get().to(balance::balance)))
                .service(resource("/accounts", "GET").route(web::get().to(balance::accounts)))
                .service(resource("/wallets", "POST").route(web::post().to(wallets::open)))
                .service(resource("/wallets/{msisdn}", "GET").route(web::get().to(wallets::get)))
                .service(resource("/wallets/{msisdn}/pin", "POST").route(web::post().to(wallets::set_pin)))
                .service(resource("/wallets/{msisdn}/lock", "POST").route(web::post().to(wallets::lock)))
                .service(resource("/wallets/{msisdn}/unlock", "POST").route(web::post().to(wallets::unlock)))
                .service(resource("/wallets/{msisdn}/kyc", "POST").route(web::post().to(wallets::kyc)))
                .service(resource("/wallets/{msisdn}/transactions", "GET").route(web::get().to(wallets::transactions)))
                .service(resource("/agents/cash-in", "POST").route(web::post().to(agents::cash_in)))
                .service(resource("/agents/cash-out", "POST").route(web::post().to(agents::cash_out)))
                .service(resource("/agents/cash-out/{withdrawal_ref}", "GET").route(web::get().to(agents::get_cash_out)))
                .service(resource("/agents/float", "GET").route(web::get().to(agents::float)))
                .service(resource("/ussd", "POST").route(web::post().to(ussd::ussd)))
                .service(resource("/config/countries", "GET").route(web::get().to(config::countries)))
                .service(resource("/sandbox/charges/{charge_ref}/simulate", "POST").route(web::post().to(sandbox::simulate)))
                .service(resource("/sandbox/wallets", "POST").route(web::post().to(sandbox::wallets)))
                .service(
                    resource("/webhooks/endpoints", "POST, GET")
                        .route(web::post().to(webhooks::create_endpoint))
                        .route(web::get().to(webhooks::list_endpoints)),
                )
                .service(
                    resource("/webhooks/endpoints/{endpoint_id}", "GET, DELETE")
                        .route(web::get().to(webhooks::get_endpoint))
                        .route(web::delete().to(webhooks::delete_endpoint)),
                )
                .service(resource("/webhooks/endpoints/{endpoint_id}/rotate-secret", "POST").route(web::post().to(webhooks::rotate_secret)))
                .service(resource("/events", "GET").route(web::get().to(webhooks::list_events)))
                .service(resource("/events/{event_id}", "GET").route(web::get().to(webhooks::get_event)))
                .service(resource("/events/{event_id}/redeliver", "POST").route(web::post().to(webhooks::redeliver)))
                .default_service(web::to(not_found)),
        )
        .default_service(web::to(not_found));
}
