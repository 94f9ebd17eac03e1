//! The routes of the API and its error handlers.

use actix_web::{web, HttpRequest, HttpResponse};

use crate::problem::ApiError;
use crate::routes::{balance, charges, oauth, ops, sandbox, webhooks};

async fn not_found() -> Result<HttpResponse, ApiError> {
    Err(ApiError::NotFound)
}

async fn method_not_allowed() -> Result<HttpResponse, ApiError> {
    Err(ApiError::MethodNotAllowed)
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
    let resource = |path: &str| web::resource(path.to_owned()).default_service(web::to(method_not_allowed));
    cfg.app_data(web::QueryConfig::default().error_handler(query_error))
        .app_data(web::PathConfig::default().error_handler(path_error))
        .service(resource("/healthz").route(web::get().to(ops::healthz)))
        .service(resource("/readyz").route(web::get().to(ops::readyz)))
        .service(
            web::scope("/api/v1")
                .service(resource("/openapi.json").route(web::get().to(ops::openapi)))
                .service(resource("/oauth/token").route(web::post().to(oauth::token)))
                .service(resource("/oauth/revoke").route(web::post().to(oauth::revoke)))
                .service(resource("/partner/stk").route(web::post().to(charges::create)))
                .service(resource("/partner/status").route(web::get().to(charges::status)))
                .service(resource("/partner/charges").route(web::get().to(charges::list)))
                .service(resource("/partner/charges/{charge_ref}").route(web::get().to(charges::get)))
                .service(resource("/partner/balance").route(web::get().to(balance::balance)))
                .service(resource("/accounts").route(web::get().to(balance::accounts)))
                .service(resource("/sandbox/charges/{charge_ref}/simulate").route(web::post().to(sandbox::simulate)))
                .service(resource("/sandbox/wallets").route(web::post().to(sandbox::wallets)))
                .service(
                    resource("/webhooks/endpoints")
                        .route(web::post().to(webhooks::create_endpoint))
                        .route(web::get().to(webhooks::list_endpoints)),
                )
                .service(
                    resource("/webhooks/endpoints/{endpoint_id}")
                        .route(web::get().to(webhooks::get_endpoint))
                        .route(web::delete().to(webhooks::delete_endpoint)),
                )
                .service(resource("/webhooks/endpoints/{endpoint_id}/rotate-secret").route(web::post().to(webhooks::rotate_secret)))
                .service(resource("/events").route(web::get().to(webhooks::list_events)))
                .service(resource("/events/{event_id}").route(web::get().to(webhooks::get_event)))
                .service(resource("/events/{event_id}/redeliver").route(web::post().to(webhooks::redeliver)))
                .default_service(web::to(not_found)),
        )
        .default_service(web::to(not_found));
}
