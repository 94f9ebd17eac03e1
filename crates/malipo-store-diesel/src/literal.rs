//! Values written into a statement's SQL text instead of bound.

use diesel::dsl::sql;
use diesel::expression::SqlLiteral;
use diesel::sql_types::Bool;

/// `column = 'value'` with the value written into the SQL text rather than bound. SQLite is built
/// so that no plan depends on a bound value (`SQLITE_ENABLE_QPSG`, `.cargo/config.toml`), so a
/// partial index (`... WHERE kind = 'wallet'`, `... WHERE state = 'open'`) serves a query only
/// when the condition it is on is written in the query's text. (Without that option SQLite matched
/// it from the bound value, and prepared the statement again on every execution, inside the
/// writer's turn every other writer waits for; `docs/throughput.md`.) Each value is its own cached
/// statement. `value` is one of a closed set of names (an enum's), never input.
pub(crate) fn column_is(column: &'static str, value: &'static str) -> SqlLiteral<Bool> {
    debug_assert!(value.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'), "{value}");
    sql::<Bool>(&format!("{column} = '{value}'"))
}

/// [`column_is`] that no index of the column serves (`+column = 'value'`: SQLite and
/// PostgreSQL match an index to a bare column only), for a condition that another index of the
/// query serves better than the planner would guess.
pub(crate) fn unindexed_column_is(column: &'static str, value: &'static str) -> SqlLiteral<Bool> {
    debug_assert!(value.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'), "{value}");
    sql::<Bool>(&format!("+{column} = '{value}'"))
}
