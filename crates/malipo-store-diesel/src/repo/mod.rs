//! One file per feature: the repository traits of `malipo_service::ports` on [`crate::tx::DieselTx`].

mod audit;
mod auth;
pub(crate) mod callbacks;
mod chain;
mod charges;
mod deferred;
mod endpoints;
mod idempotency;
mod ledger;
mod outbox;
mod payment_requests;
mod payouts;
mod posting;
mod queue;
mod reversals;
mod savepoint;
mod sessions;
mod users;
mod ussd;
mod wallets;
