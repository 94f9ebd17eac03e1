//! The cases, by area. Each `pub fn` here is re-exported from `crate::cases` by the case list.

pub(crate) mod accounts;
pub(crate) mod activity;
pub(crate) mod auth;
pub(crate) mod bulk;
pub(crate) mod callbacks;
pub(crate) mod chain;
pub(crate) mod charges;
pub(crate) mod events;
pub(crate) mod hot;
pub(crate) mod idempotency;
pub(crate) mod ledger;
pub(crate) mod payment_requests;
pub(crate) mod payouts;
pub(crate) mod people;
pub(crate) mod queued;
pub(crate) mod reversals;
pub(crate) mod statements;
pub(crate) mod transactions;
pub(crate) mod ussd;
pub(crate) mod wallets;
pub(crate) mod webhooks;
