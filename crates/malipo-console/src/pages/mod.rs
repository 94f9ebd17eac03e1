//! The console's pages, one module per section. A section registers its routes here, once.

pub mod account;
pub mod agent;
pub mod audit;
pub mod auth;
pub mod charges;
pub mod corporate;
pub mod developers;
pub mod enrol;
pub mod form;
pub mod home;
pub mod invite;
pub mod ledger;
pub mod local_time;
pub mod money_common;
pub mod organisations;
pub mod payment_requests;
pub mod payouts;
pub mod reconciliation;
pub mod team;
pub mod transactions;
pub mod wallets;

use actix_web::web;

/// Every page's route, under `/console`.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.configure(crate::assets::routes)
        .configure(auth::routes)
        .configure(invite::routes)
        .configure(enrol::routes)
        .configure(account::routes)
        .configure(home::routes)
        .configure(agent::routes)
        .configure(charges::routes)
        .configure(developers::routes)
        .configure(team::routes)
        .configure(audit::routes)
        .configure(payment_requests::routes)
        .configure(payouts::routes)
        .configure(transactions::routes)
        .configure(reconciliation::routes)
        .configure(wallets::routes)
        .configure(organisations::routes)
        .configure(ledger::routes)
        .configure(corporate::routes);
}
