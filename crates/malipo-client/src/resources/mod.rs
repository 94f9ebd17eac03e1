//! The API's groups, one module each.

pub(crate) mod accounts;
pub(crate) mod agents;
pub(crate) mod bulk_payouts;
pub(crate) mod charges;
pub(crate) mod countries;
pub(crate) mod payment_requests;
pub(crate) mod payouts;
pub(crate) mod reversals;
pub(crate) mod sandbox;
pub(crate) mod transactions;
pub(crate) mod ussd;
pub(crate) mod wallets;
pub(crate) mod webhooks;
