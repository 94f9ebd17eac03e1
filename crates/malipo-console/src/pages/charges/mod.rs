//! Charges (console contract section 4, Merchant): the list (newest first, filtered by state,
//! dates, phone number and reference, a page at a time), a charge's page (its fields, its state
//! history with times, its `charge.*` webhook deliveries with their attempts) and "Refund" (a
//! reversal through the same use case as `POST /reversals`).

mod detail;
mod list;
mod refund;
mod view;

use actix_web::web;

/// `/console/charges`, `/console/charges/{id}`, its timeline fragment and its refund.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/charges", web::get().to(list::list))
        .route("/charges/{id}", web::get().to(detail::charge_page))
        .route("/charges/{id}/timeline", web::get().to(detail::timeline))
        .route("/charges/{id}/refund", web::post().to(refund::refund));
}
