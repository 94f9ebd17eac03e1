//! The cases, by area. Each `pub fn` here is re-exported from `crate::cases` by the case list.

pub(crate) mod accounts;
pub(crate) mod auth;
pub(crate) mod charges;
pub(crate) mod idempotency;
pub(crate) mod ledger;
pub(crate) mod transactions;
pub(crate) mod ussd;
pub(crate) mod wallets;
pub(crate) mod webhooks;

use malipo_ledger::LedgerError;
use malipo_service::{ServiceError, StoreError};

/// The error a transaction ends with when the store refused a duplicate.
pub(crate) fn duplicate() -> ServiceError {
    ServiceError::Store(StoreError::Duplicate)
}

/// The error a transaction ends with when the ledger refused.
pub(crate) fn ledger_error(e: LedgerError) -> ServiceError {
    ServiceError::Store(StoreError::Ledger(e))
}
