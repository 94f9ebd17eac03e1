//! The transaction handle: one connection inside a transaction begun by [`crate::DieselStore`].
//! Each feature's repository is implemented on it in `repo/<feature>.rs`.

use diesel::prelude::*;
use malipo_service::StoreError;

use crate::error::db_error;
use crate::DbConnection;

/// Runs the same diesel expression on the concrete connection of either variant, for the few
/// statements (`ON CONFLICT`, `RETURNING`) that diesel cannot build for the multi-backend.
macro_rules! per_backend {
    ($conn:expr, |$c:ident| $body:expr) => {
        match $conn {
            DbConnection::Pg($c) => $body,
            DbConnection::Sqlite($c) => $body,
        }
    };
}

/// The row `query` finds, selected as `$row`, locked for update until the transaction ends, and
/// parsed into `$domain`. SQLite takes no row lock: its writers are serialised by BEGIN
/// IMMEDIATE, so the row cannot change under the transaction.
macro_rules! locked_row {
    ($conn:expr, $query:expr, $row:ty => $domain:ty) => {{
        let query = $query;
        let found = match $conn {
            DbConnection::Pg(c) => query.select(<$row>::as_select()).for_update().first(c).optional(),
            DbConnection::Sqlite(c) => query.select(<$row>::as_select()).first(c).optional(),
        };
        found.map_err(db_error)?.map(<$domain>::try_from).transpose()
    }};
}

/// How many ids go into one `IN (…)` list.
pub(crate) const IN_CHUNK: usize = 500;

/// One transaction's connection.
pub(crate) struct DieselTx<'c> {
    pub(crate) conn: &'c mut DbConnection,
    /// A posting without a savepoint of its own failed (`post_journal_whole`): some of its
    /// lines may be applied, so the transaction must not commit.
    pub(crate) poisoned: bool,
}

impl<'c> DieselTx<'c> {
    pub(crate) fn new(conn: &'c mut DbConnection) -> Self {
        DieselTx { conn, poisoned: false }
    }
}

/// `Ok(())` when one row was inserted, [`StoreError::Duplicate`] when a unique constraint kept
/// it out (`INSERT … ON CONFLICT DO NOTHING` inserted nothing). The statement never fails on a
/// conflict, so a PostgreSQL transaction stays usable after a duplicate.
pub(crate) fn inserted(rows: QueryResult<usize>) -> Result<(), StoreError> {
    match rows.map_err(db_error)? {
        0 => Err(StoreError::Duplicate),
        _ => Ok(()),
    }
}

pub(crate) fn limit_i64(limit: usize) -> i64 {
    i64::try_from(limit).unwrap_or(i64::MAX)
}

pub(crate) use locked_row;
pub(crate) use per_backend;
