//! Beginning and ending a transaction on a pooled connection, and the pause between attempts.

use std::time::Duration;

use diesel::connection::{AnsiTransactionManager, Connection, TransactionManager, TransactionManagerStatus};
use diesel::QueryResult;
use malipo_service::StoreError;

use crate::{Access, DbConnection};

/// Starts a transaction: PostgreSQL `READ COMMITTED` for writers and a read-only
/// `REPEATABLE READ` snapshot for readers; SQLite `BEGIN IMMEDIATE` (take the write lock now)
/// for writers and a deferred `BEGIN` for readers.
pub(crate) fn begin(conn: &mut DbConnection, access: Access) -> QueryResult<()> {
    match (conn, access) {
        (DbConnection::Pg(c), Access::Write) => AnsiTransactionManager::begin_transaction_sql(c, "BEGIN ISOLATION LEVEL READ COMMITTED"),
        (DbConnection::Pg(c), Access::Read) => {
            AnsiTransactionManager::begin_transaction_sql(c, "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        }
        (DbConnection::Sqlite(c), Access::Write) => AnsiTransactionManager::begin_transaction_sql(c, "BEGIN IMMEDIATE"),
        (DbConnection::Sqlite(c), Access::Read) => AnsiTransactionManager::begin_transaction_sql(c, "BEGIN"),
    }
}

/// Rolls back after a failure; a connection that failed as unreachable is not reused.
pub(crate) fn finish_failed(conn: &mut DbConnection, error: &StoreError) {
    if matches!(error, StoreError::Unavailable(_)) {
        mark_broken(conn);
    } else {
        rollback(conn);
    }
}

pub(crate) fn rollback(conn: &mut DbConnection) {
    let in_transaction = <DbConnection as Connection>::TransactionManager::transaction_manager_status_mut(conn)
        .transaction_depth()
        .is_ok_and(|d| d.is_some());
    if in_transaction {
        if let Err(e) = <DbConnection as Connection>::TransactionManager::rollback_transaction(conn) {
            // diesel marks the transaction manager broken, so the pool discards the connection.
            tracing::warn!(error = %e, "rollback failed");
        }
    }
}

/// Whether the transaction can only be rolled back (a statement failed and PostgreSQL aborted
/// it, or the connection is broken).
pub(crate) fn must_roll_back(conn: &mut DbConnection) -> bool {
    match <DbConnection as Connection>::TransactionManager::transaction_manager_status_mut(conn) {
        TransactionManagerStatus::Valid(status) => {
            status.in_transaction.as_ref().is_some_and(|t| t.requires_rollback_maybe_up_to_top_level)
        }
        TransactionManagerStatus::InError => true,
    }
}

/// Makes the pool discard this connection when it is returned.
pub(crate) fn mark_broken(conn: &mut DbConnection) {
    <DbConnection as Connection>::TransactionManager::transaction_manager_status_mut(conn).set_in_error();
}

/// A short randomised pause before attempt `attempt + 1`: 1–2 ms doubling up to 64–128 ms.
pub(crate) fn backoff(attempt: u32) -> Duration {
    use std::hash::{BuildHasher, Hasher};
    let base_micros = 1000_u64 << attempt.min(6);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(attempt);
    let jitter = h.finish() % base_micros;
    Duration::from_micros(base_micros + jitter)
}
