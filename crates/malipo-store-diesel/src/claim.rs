//! Claiming due rows with a lease: the one query behind every background worker's claim
//! (charges, payouts, webhook deliveries).
//!
//! A claim takes up to `limit` rows whose due column is at or before `now`, oldest due first,
//! and moves their due column to `lease_until`, so that a worker that crashes with claimed rows
//! leaves them to come due again when the lease passes. Concurrent claimers never take the same
//! row: PostgreSQL skips rows another claimer has locked (`FOR UPDATE SKIP LOCKED`), and a row
//! another claimer has just leased fails the due condition when re-checked; SQLite's writers are
//! serialised by `BEGIN IMMEDIATE`, so it selects and then leases.

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Text};
use malipo_core::Timestamp;
use malipo_service::StoreError;

use crate::cached::CachedDsl;
use crate::error::db_error;
use crate::tx::{limit_i64, IN_CHUNK};
use crate::DbConnection;

/// A table whose rows come due for background work. Names are SQL identifiers written in the
/// code, never input.
pub(crate) struct DueRows {
    /// The table.
    pub(crate) table: &'static str,
    /// Its text primary key.
    pub(crate) id: &'static str,
    /// The nullable `BIGINT` timestamp at which a row is next due (`NULL`: never).
    pub(crate) due: &'static str,
    /// A further condition on the table's columns (e.g. the state a partial index is on), written
    /// as a literal so that both databases can match it to the index.
    pub(crate) filter: Option<&'static str>,
}

/// The earliest due time of [`DueRows::oldest`].
#[derive(QueryableByName)]
struct OldestRow {
    #[diesel(sql_type = diesel::sql_types::Nullable<BigInt>)]
    due_at: Option<i64>,
}

/// The number of [`DueRows::count`].
#[derive(QueryableByName)]
struct CountRow {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

/// A row of the claim queries.
#[derive(QueryableByName)]
struct ClaimedRow {
    #[diesel(sql_type = Text)]
    id: String,
    #[diesel(sql_type = BigInt)]
    due_at: i64,
}

impl DueRows {
    /// `WHERE` conditions: the filter, if any, and being due at the first bind parameter.
    fn due_condition(&self, now_param: &str) -> String {
        let due = format!("{} <= {now_param}", self.due);
        match self.filter {
            Some(filter) => format!("({filter}) AND {due}"),
            None => due,
        }
    }

    /// The earliest due time at or before `now`: the first entry of the due index.
    pub(crate) fn oldest(&self, conn: &mut DbConnection, now: Timestamp) -> Result<Option<Timestamp>, StoreError> {
        let DueRows { table, due, .. } = self;
        let query = |param: &str| format!("SELECT MIN({due}) AS due_at FROM {table} WHERE {}", self.due_condition(param));
        let row: OldestRow = match conn {
            DbConnection::Pg(c) => diesel::sql_query(query("$1")).bind::<BigInt, _>(now.as_micros()).cached().get_result(c),
            DbConnection::Sqlite(c) => diesel::sql_query(query("?")).bind::<BigInt, _>(now.as_micros()).cached().get_result(c),
        }
        .map_err(db_error)?;
        Ok(row.due_at.map(Timestamp::from_micros))
    }

    /// How many rows are due at or before `until`, counting at most `cap` (a range of the due
    /// index, stopped at the cap).
    pub(crate) fn count(&self, conn: &mut DbConnection, until: Timestamp, cap: usize) -> Result<u64, StoreError> {
        let table = self.table;
        let query = |until: &str, cap: &str| {
            format!("SELECT COUNT(*) AS n FROM (SELECT 1 AS one FROM {table} WHERE {} LIMIT {cap}) AS due", self.due_condition(until))
        };
        let row: CountRow = match conn {
            DbConnection::Pg(c) => diesel::sql_query(query("$1", "$2"))
                .bind::<BigInt, _>(until.as_micros())
                .bind::<BigInt, _>(limit_i64(cap))
                .cached()
                .get_result(c),
            DbConnection::Sqlite(c) => diesel::sql_query(query("?", "?"))
                .bind::<BigInt, _>(until.as_micros())
                .bind::<BigInt, _>(limit_i64(cap))
                .cached()
                .get_result(c),
        }
        .map_err(db_error)?;
        Ok(u64::try_from(row.n).unwrap_or(0))
    }

    /// Claims up to `limit` due rows (see the module documentation) and returns their ids,
    /// oldest due first (ties by id).
    pub(crate) fn claim(
        &self,
        conn: &mut DbConnection,
        now: Timestamp,
        lease_until: Timestamp,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let DueRows { table, id, due, .. } = self;
        let mut claimed: Vec<ClaimedRow> = match conn {
            DbConnection::Pg(c) => diesel::sql_query(format!(
                "WITH due AS ( \
                     SELECT {id} AS id, {due} AS due_at FROM {table} \
                      WHERE {condition} \
                      ORDER BY {due}, {id} \
                      LIMIT $3 \
                        FOR UPDATE SKIP LOCKED) \
                 UPDATE {table} SET {due} = $2 \
                   FROM due \
                  WHERE {table}.{id} = due.id \
                 RETURNING {table}.{id} AS id, due.due_at AS due_at",
                condition = self.due_condition("$1"),
            ))
            .bind::<BigInt, _>(now.as_micros())
            .bind::<BigInt, _>(lease_until.as_micros())
            .bind::<BigInt, _>(limit_i64(limit))
            .cached()
            .load(c)
            .map_err(db_error)?,
            DbConnection::Sqlite(c) => {
                let due_rows: Vec<ClaimedRow> = diesel::sql_query(format!(
                    "SELECT {id} AS id, {due} AS due_at FROM {table} WHERE {condition} ORDER BY {due}, {id} LIMIT ?",
                    condition = self.due_condition("?"),
                ))
                .bind::<BigInt, _>(now.as_micros())
                .bind::<BigInt, _>(limit_i64(limit))
                .cached()
                .load(c)
                .map_err(db_error)?;
                for chunk in due_rows.chunks(IN_CHUNK) {
                    let placeholders = vec!["?"; chunk.len()].join(", ");
                    let mut lease = diesel::sql_query(format!("UPDATE {table} SET {due} = ? WHERE {id} IN ({placeholders})"))
                        .into_boxed::<diesel::sqlite::Sqlite>()
                        .bind::<BigInt, _>(lease_until.as_micros());
                    for row in chunk {
                        lease = lease.bind::<Text, _>(row.id.clone());
                    }
                    lease.execute(c).map_err(db_error)?;
                }
                due_rows
            }
        };
        claimed.sort_by(|a, b| (a.due_at, &a.id).cmp(&(b.due_at, &b.id)));
        Ok(claimed.into_iter().map(|r| r.id).collect())
    }
}
