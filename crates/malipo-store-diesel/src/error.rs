//! Mapping diesel's errors onto [`StoreError`].
//!
//! Errors are classified by diesel's kinds, which PostgreSQL's adapter derives from the SQLSTATE
//! (unique, check and foreign-key violations, serialization failures, lost connections) and
//! SQLite's from its extended result codes; constraints are named by the error's constraint
//! field. Two transient conflicts have no kind of their own: PostgreSQL's `deadlock_detected`
//! (40P01), which diesel reports as `Unknown` without its SQLSTATE, and SQLite's
//! `SQLITE_BUSY`/`SQLITE_LOCKED`. They are recognised by message text, which is certain because
//! SQLite's messages are never translated and every PostgreSQL connection is made to report in
//! English ([`ensure_english_messages`]), or refused.

use diesel::connection::SimpleConnection;
use diesel::result::{ConnectionError, DatabaseErrorKind, Error};
use diesel::RunQueryDsl;
use malipo_core::AccountId;
use malipo_ledger::LedgerError;
use malipo_service::StoreError;

/// Messages of transient conflicts that diesel reports as `Unknown`: PostgreSQL's
/// `deadlock_detected` (English on every connection, see [`ensure_english_messages`]) and SQLite's
/// `SQLITE_BUSY` / `SQLITE_LOCKED` (SQLite's messages are never translated).
const TRANSIENT: [&str; 3] = ["deadlock detected", "database is locked", "database table is locked"];

/// Whether a PostgreSQL `lc_messages` value makes the server write its messages in English
/// (the default `C`/`POSIX` locales, or any `en` locale).
pub(crate) fn english_messages(lc_messages: &str) -> bool {
    let base = lc_messages.split(['.', '@']).next().unwrap_or("").trim();
    base.is_empty() || base.eq_ignore_ascii_case("C") || base.eq_ignore_ascii_case("POSIX") || base.to_ascii_lowercase().starts_with("en")
}

/// Makes a new PostgreSQL connection report errors in English (see the module documentation):
/// keeps an English `lc_messages`, else sets it to `C` for the session, and refuses the
/// connection, naming the setting, when the role may not change it.
///
/// # Errors
/// [`ConnectionError::BadConnection`] naming `lc_messages`.
pub(crate) fn ensure_english_messages(conn: &mut diesel::PgConnection) -> Result<(), ConnectionError> {
    let setting: String = diesel::select(diesel::dsl::sql::<diesel::sql_types::Text>("current_setting('lc_messages')"))
        .get_result(conn)
        .map_err(|e| ConnectionError::BadConnection(format!("cannot read lc_messages: {e}")))?;
    if english_messages(&setting) {
        return Ok(());
    }
    conn.batch_execute("SET lc_messages TO 'C'").map_err(|_| {
        ConnectionError::BadConnection(format!(
            "PostgreSQL writes its messages in `{setting}` (lc_messages), and this role may not change that; Malipo \
             recognises deadlocks by the server's English message (diesel gives no SQLSTATE for them), so it would \
             stop retrying them. Run as a superuser: ALTER ROLE <role> SET lc_messages = 'C' (or GRANT SET ON \
             PARAMETER lc_messages TO <role>)"
        ))
    })
}

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
                DatabaseErrorKind::ClosedConnection | DatabaseErrorKind::UnableToSendCommand => match crate::deadline::take_fired() {
                    Some(limit) => StoreError::Unavailable(format!("the database did not answer within {} ms", limit.as_millis())),
                    None => StoreError::Unavailable(message.to_owned()),
                },
                // The server's deadline (`statement_timeout`, SQLSTATE 57014): "not now".
                _ if message.starts_with("canceling statement due to statement timeout") => StoreError::Unavailable(message.to_owned()),
                // A server that became a standby (a demoted primary, SQLSTATE 25006): the pool
                // must find the new primary, so the connection is dropped like a dead one.
                _ if message.contains("in a read-only transaction") => StoreError::Unavailable(message.to_owned()),
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

#[cfg(test)]
mod tests {
    use super::english_messages;

    #[test]
    fn english_message_settings_are_recognised() {
        for english in ["", "C", "C.UTF-8", "C.utf8", "POSIX", "en_US.UTF-8", "en_GB", "en_KE.utf8@euro", "English_United States.1252"] {
            assert!(english_messages(english), "{english:?}");
        }
        for other in ["de_DE.UTF-8", "fr_FR", "sw_KE.UTF-8", "pt_BR.utf8", "ru_RU", "German_Germany.1252"] {
            assert!(!english_messages(other), "{other:?}");
        }
    }
}
