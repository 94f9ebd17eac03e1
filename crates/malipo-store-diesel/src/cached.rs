//! Prepared statements kept for statements diesel would prepare anew on every call (and a few
//! never kept, [`Planned`]).
//!
//! Diesel keeps a connection's prepared statements only for queries it can prove take one
//! shape; it never keeps an `UPDATE` (its `SET` list may vary), an `INSERT` with a `DEFAULT`
//! (an `Option` that is `None`), a raw SQL statement (`sql_query`, `sql`) or an `IN` list. On
//! PostgreSQL such a statement is parsed and planned on every execution, and for the short
//! statements of a charge's life parsing and planning are a large part of their cost
//! (`docs/throughput.md`, "Prepared statements and plans"); nearly every write of a charge's life
//! is one of those statements.
//!
//! [`Cached`] marks a statement whose SQL takes only a few shapes as safe to keep: the
//! connection's statement cache then prepares it once per shape, keyed by its SQL text and bind
//! types, and reuses it. Only statements whose SQL is bounded may be marked: a fixed `SET`
//! list, an insert of one row (or of a bounded number of rows), an `= ANY($1)` on PostgreSQL.
//! Never a statement whose text grows with its input (a `VALUES` list of any length, SQLite's
//! `IN (?, ?, …)`): each length would stay in every connection's cache.

use diesel::backend::Backend;
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::QueryResult;
use diesel::RunQueryDsl;

/// A statement that says whether diesel may keep it prepared (`KEPT`), whatever diesel would
/// find by walking it: [`Cached`] or [`Planned`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Prepared<Q, const KEPT: bool>(Q);

/// A statement kept prepared by its SQL text (see the module documentation).
pub(crate) type Cached<Q> = Prepared<Q, true>;

/// A statement never kept prepared: planned with its values at every execution. For a
/// background batch's reads of tables that grow from empty (the sealer's): on PostgreSQL a
/// statement kept prepared switches to a generic plan after five executions, made with the
/// statistics of that moment, and keeps it until the table is analyzed again; planned on an
/// empty table, that plan is a sequential scan, which a batch then pays on every pass as the
/// table grows (`docs/throughput.md`). Planning a batch's few statements costs little.
pub(crate) type Planned<Q> = Prepared<Q, false>;

/// `.cached()` on any statement.
pub(crate) trait CachedDsl: Sized {
    /// Marks this statement as safe to keep prepared: its SQL takes only a few shapes.
    fn cached(self) -> Cached<Self> {
        Prepared(self)
    }
}

impl<T> CachedDsl for T {}

/// `.planned()` on any statement.
pub(crate) trait PlannedDsl: Sized {
    /// Marks this statement as planned with its values at every execution (never kept).
    fn planned(self) -> Planned<Self> {
        Prepared(self)
    }
}

impl<T> PlannedDsl for T {}

impl<Q, DB, const KEPT: bool> QueryFragment<DB> for Prepared<Q, KEPT>
where
    DB: Backend,
    Q: QueryFragment<DB>,
{
    fn walk_ast<'b>(&'b self, pass: AstPass<'_, 'b, DB>) -> QueryResult<()> {
        self.0.walk_ast(pass)
    }

    fn is_safe_to_cache_prepared(&self, _backend: &DB) -> QueryResult<bool> {
        Ok(KEPT)
    }
}

/// No static id: a kept statement is keyed by its SQL text (and bind types), so each shape is
/// its own statement.
impl<Q, const KEPT: bool> QueryId for Prepared<Q, KEPT> {
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl<Q: Query, const KEPT: bool> Query for Prepared<Q, KEPT> {
    type SqlType = Q::SqlType;
}

impl<Q, Conn, const KEPT: bool> RunQueryDsl<Conn> for Prepared<Q, KEPT> {}

/// Runs an `INSERT`, `UPDATE` or `DELETE` on either backend and returns how many rows it wrote,
/// keeping it prepared. Diesel asks a statement whether it may be kept only when the statement
/// is loaded (passed by value); an executed statement is passed by reference, and a reference
/// answers for itself by walking the statement, which says no. So the statement is run
/// [`Cached`] with `RETURNING 1`, and its rows counted. SQLite too (3.35 and later): its
/// statements are prepared in process, without a round trip, but preparing one (parsing and
/// planning it) costs more than running it (`docs/throughput.md`).
macro_rules! written {
    // An insert of a few rows into `$table` (then, e.g., `on_conflict_do_nothing`, rows that
    // conflict with a unique key left out and not counted): one statement on PostgreSQL; on
    // SQLite, which runs diesel's multi-row insert as one insert per row prepared anew (and has
    // no `RETURNING` for it), one kept statement run per row.
    (rows $conn:expr, $table:expr, $rows:expr $(, $then:ident)*) => {
        match $conn {
            $crate::DbConnection::Pg(c) => $crate::cached::CachedDsl::cached(
                diesel::insert_into($table).values($rows)$(.$then())*.returning(diesel::dsl::sql::<diesel::sql_types::Integer>("1")),
            )
            .load::<i32>(c)
            .map(|rows| rows.len()),
            $crate::DbConnection::Sqlite(c) => $rows.iter().try_fold(0, |n, row| {
                $crate::cached::CachedDsl::cached(
                    diesel::insert_into($table).values(row)$(.$then())*.returning(diesel::dsl::sql::<diesel::sql_types::Integer>("1")),
                )
                .load::<i32>(c)
                .map(|rows| n + rows.len())
            }),
        }
    };
    ($conn:expr, $stmt:expr) => {
        match $conn {
            $crate::DbConnection::Pg(c) => {
                $crate::cached::CachedDsl::cached(($stmt).returning(diesel::dsl::sql::<diesel::sql_types::Integer>("1")))
                    .load::<i32>(c)
                    .map(|rows| rows.len())
            }
            $crate::DbConnection::Sqlite(c) => {
                $crate::cached::CachedDsl::cached(($stmt).returning(diesel::dsl::sql::<diesel::sql_types::Integer>("1")))
                    .load::<i32>(c)
                    .map(|rows| rows.len())
            }
        }
    };
}

pub(crate) use written;
