//! The API's groups, one module each.

pub(crate) mod accounts;
pub(crate) mod charges;
pub(crate) mod payouts;
pub(crate) mod reversals;
pub(crate) mod transactions;
pub(crate) mod webhooks;
