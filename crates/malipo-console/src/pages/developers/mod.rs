//! Developers (console contract section 4): the organisation's API key pairs, the session mode's
//! webhook endpoints and callback secret, and its events with their delivery attempts. Keys need
//! `Permission::ManageKeys`; endpoints and events `Permission::ManageWebhooks`.

pub mod callbacks;
pub mod endpoints;
pub mod events;
pub mod keys;
pub mod view;

use actix_web::web;

/// `/console/developers…`.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/developers", web::get().to(view::developers_page))
        .route("/developers/keys", web::post().to(keys::create))
        .route("/developers/keys/{client_id}/revoke", web::post().to(keys::revoke))
        .route("/developers/endpoints", web::post().to(endpoints::add))
        .route("/developers/endpoints/{endpoint_id}/rotate", web::post().to(endpoints::rotate))
        .route("/developers/endpoints/{endpoint_id}/disable", web::post().to(endpoints::disable))
        .route("/developers/callback-secret", web::post().to(callbacks::post))
        .route("/developers/events", web::get().to(events::list))
        .route("/developers/events/{event_id}", web::get().to(events::detail))
        .route("/developers/events/{event_id}/redeliver", web::post().to(events::redeliver));
}
