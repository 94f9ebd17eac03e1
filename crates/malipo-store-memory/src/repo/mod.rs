//! One file per feature: the repository traits of `malipo_service::ports` on [`crate::tx::MemoryTx`].

mod audit;
mod auth;
mod callbacks;
mod chain;
mod charges;
mod endpoints;
mod idempotency;
mod ledger;
mod outbox;
mod payment_requests;
mod payouts;
mod queue;
mod reversals;
mod savepoint;
mod sessions;
mod users;
mod ussd;
mod wallets;
