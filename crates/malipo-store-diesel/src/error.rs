//! Mapping diesel's errors onto [`StoreError`].

use diesel::result::{DatabaseErrorKind, Error};
use malipo_core::AccountId;
use malipo_ledger::LedgerError;
use malipo_service::StoreError;

/// Messages of transient conflicts that diesel reports as `Unknown`: PostgreSQL's
/// `deadlock_detected` and SQLite's `SQLITE_BUSY` / `SQLITE_LOCKED`.
const TRANSIENT: [&str; 3] = ["deadlock detected", "database is locked", "database table is locked"];

/// Maps a diesel error: unique violations to [`StoreError::Duplicate`], serialization failures,
/// deadlocks and a busy SQLite database to [`StoreError::Retry`], a lost connection to
/// [`StoreError::Unavailable`], anything else to [`StoreError::Other`].
pub(crate) fn db_error(e: Error) -> StoreError {
    match e {
        Error::DatabaseError(kind, info) => {
            let message = info.message();
            match kind {
                DatabaseErrorKind::UniqueViolation => StoreError::Duplicate,
                DatabaseErrorKind::SerializationFailure => StoreError::Retry,
                DatabaseErrorKind::ClosedConnection | DatabaseErrorKind::UnableToSendCommand => StoreError::Unavailable(message.to_owned()),
                _ if TRANSIENT.iter().any(|t| message.contains(t)) => StoreError::Retry,
                _ => {
                    let constraint = info.constraint_name().map(|c| format!(" ({c})")).unwrap_or_default();
                    StoreError::Other(format!("{kind:?}: {message}{constraint}"))
                }
            }
        }
        other => StoreError::Other(other.to_string()),
    }
}

/// Like [`db_error`], for a write to one account: a violated balance constraint of `accounts`
/// (`accounts_balance_check`, `accounts_held_check`) means the account lacks the funds.
pub(crate) fn account_error(e: Error, account: &AccountId) -> StoreError {
    if let Error::DatabaseError(DatabaseErrorKind::CheckViolation, info) = &e {
        let name = info.constraint_name().unwrap_or_else(|| info.message());
        if name.contains("accounts_balance_check") || name.contains("accounts_held_check") {
            return StoreError::Ledger(LedgerError::InsufficientFunds(account.clone()));
        }
    }
    db_error(e)
}

/// The error type of the adapter's internal functions, so that `?` works on diesel results.
#[derive(Debug)]
pub(crate) struct Fail(pub(crate) StoreError);

impl From<Error> for Fail {
    fn from(e: Error) -> Self {
        Fail(db_error(e))
    }
}

impl From<StoreError> for Fail {
    fn from(e: StoreError) -> Self {
        Fail(e)
    }
}

impl From<LedgerError> for Fail {
    fn from(e: LedgerError) -> Self {
        Fail(StoreError::Ledger(e))
    }
}

impl From<Fail> for StoreError {
    fn from(f: Fail) -> Self {
        f.0
    }
}
