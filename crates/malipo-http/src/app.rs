//! The route table of the API and its error handlers.

use actix_web::{web, HttpRequest, HttpResponse};

use crate::handler::resource;
use crate::openapi;
use crate::problem::ApiError;
use crate::routes::{
    accounts, agents, auth, bulk, channels, charges, ops, organisation, payment_requests, payouts, reversals, transactions, wallets,
    webhooks,
};

async fn not_found() -> Result<HttpResponse, ApiError> {
    Err(ApiError::NotFound)
}

fn query_error(err: actix_web::error::QueryPayloadError, _: &HttpRequest) -> actix_web::Error {
    ApiError::InvalidRequest(format!("bad query string: {err}")).into()
}

fn path_error(err: actix_web::error::PathError, _: &HttpRequest) -> actix_web::Error {
    ApiError::InvalidRequest(format!("bad path: {err}")).into()
}

/// Registers every route: the operational endpoints, then each group's under `/api/v1`.
/// Unknown paths answer 404 and known paths with another method 405, both as problem documents.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.app_data(web::QueryConfig::default().error_handler(query_error))
        .app_data(web::PathConfig::default().error_handler(path_error))
        .app_data(web::Data::new(ops::Document(openapi::document_json)))
        .service(resource("/healthz", "GET").route(web::get().to(ops::healthz)))
        .service(resource("/readyz", "GET").route(web::get().to(ops::readyz)))
        .service(
            web::scope("/api/v1")
                .service(resource("/openapi.json", "GET").route(web::get().to(ops::openapi)))
                .configure(auth::routes)
                .configure(organisation::routes)
                .configure(charges::routes)
                .configure(accounts::routes)
                .configure(payouts::routes)
                .configure(bulk::routes)
                .configure(reversals::routes)
                .configure(transactions::routes)
                .configure(wallets::routes)
                .configure(agents::routes)
                .configure(payment_requests::routes)
                .configure(channels::routes)
                .configure(webhooks::routes)
                .default_service(web::to(not_found)),
        )
        .default_service(web::to(not_found));
}
