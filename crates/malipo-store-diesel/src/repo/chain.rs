//! [`ChainRepo`] on the transaction's connection: the sealer, which chains committed journals
//! into their ledger's audit chain after their commit (posting takes no chain lock).

use diesel::dsl::{count_star, min};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Text};
use malipo_core::Timestamp;
use malipo_ledger::{ChainLink, GENESIS_HASH};
use malipo_service::{ChainRepo, StoreError, UnsealedStats};

use crate::cached::{written, PlannedDsl};
use crate::error::{db_error, Fail};
use crate::repo::ledger::{chained, lines_of};
use crate::rows::JournalRow;
use crate::schema::{journals, ledger_heads};
use crate::tx::{limit_i64, per_backend, DieselTx};
use crate::DbConnection;

impl ChainRepo for DieselTx<'_> {
    fn seal_pending(&mut self, limit: usize) -> Result<usize, StoreError> {
        self.flush_journals()?;
        seal_pending(self.conn, limit).map_err(StoreError::from)
    }

    fn unsealed_stats(&mut self) -> Result<UnsealedStats, StoreError> {
        self.flush_journals()?;
        let (count, oldest): (i64, Option<i64>) = journals::table
            .filter(journals::seq.is_null())
            .select((count_star(), min(journals::created_at)))
            .planned()
            .get_result(self.conn)
            .map_err(db_error)?;
        Ok(UnsealedStats { count: u64::try_from(count).unwrap_or(0), oldest: oldest.map(Timestamp::from_micros) })
    }
}

/// Seals at most `limit` journals, ledger by ledger in one order (so that sealers of several
/// instances lock ledger heads in one order and never deadlock). Its reads of the unsealed
/// journals and their lines are planned on every pass (`Planned`): the tables grow from empty.
fn seal_pending(conn: &mut DbConnection, limit: usize) -> Result<usize, Fail> {
    let ledgers: Vec<(String, String)> = journals::table
        .filter(journals::seq.is_null())
        .select((journals::mode, journals::currency))
        .distinct()
        .order((journals::mode.asc(), journals::currency.asc()))
        .planned()
        .load(conn)?;
    let mut sealed = 0_usize;
    for (mode, currency) in ledgers {
        let room = limit.saturating_sub(sealed);
        if room == 0 {
            break;
        }
        sealed = sealed.saturating_add(seal_ledger(conn, &mode, &currency, room)?);
    }
    Ok(sealed)
}

/// Seals at most `limit` journals of one ledger, in (`created_at`, id) order, under its head's lock.
fn seal_ledger(conn: &mut DbConnection, mode: &str, currency: &str, limit: usize) -> Result<usize, Fail> {
    let (mut seq, mut hash) = lock_ledger_head(conn, mode, currency)?;
    // Read under the lock: another sealer that held it has committed, and what it sealed is no
    // longer unsealed (PostgreSQL's READ COMMITTED reads each statement afresh).
    let rows: Vec<JournalRow> = journals::table
        .filter(journals::mode.eq(mode))
        .filter(journals::currency.eq(currency))
        .filter(journals::seq.is_null())
        .order((journals::created_at.asc(), journals::id.asc()))
        .limit(limit_i64(limit))
        .select(JournalRow::as_select())
        .planned()
        .load(conn)?;
    if rows.is_empty() {
        return Ok(0);
    }
    let ids: Vec<&str> = rows.iter().map(|r| r.id.as_str()).collect();
    let line_rows = lines_of(conn, &ids)?;
    // Each journal as stored (its postings as lines), as the verifier will read it.
    let journals = chained(rows, line_rows)?;
    let mut links = Vec::with_capacity(journals.len());
    for cj in &journals {
        let link = ChainLink::after(seq, &hash, &cj.journal);
        (seq, hash) = (link.seq, link.hash.clone());
        links.push((cj.journal.id.as_str(), link));
    }
    for chunk in links.chunks(SEAL_CHUNK) {
        let updated = seal_links(conn, chunk)?;
        if updated != chunk.len() {
            return Err(StoreError::Other(format!("{} of {} journals were sealed meanwhile", chunk.len() - updated, chunk.len())).into());
        }
    }
    written!(
        conn,
        diesel::update(ledger_heads::table.find((mode, currency))).set((ledger_heads::seq.eq(seq), ledger_heads::hash.eq(&hash)))
    )?;
    Ok(journals.len())
}

/// Journals whose chain entries one `UPDATE` writes (four bind parameters each).
const SEAL_CHUNK: usize = 250;

/// Writes the chain entries of `links` in one statement and returns how many journals it
/// sealed. `seq IS NULL`: a journal is sealed once, whatever happens, so a journal sealed
/// meanwhile is not counted (and fails the caller's batch).
fn seal_links(conn: &mut DbConnection, links: &[(&str, ChainLink)]) -> Result<usize, Fail> {
    let sql = |param: &dyn Fn(usize) -> String| {
        let rows: Vec<String> = (0..links.len())
            .map(|i| format!("({}, {}, {}, {})", param(4 * i + 1), param(4 * i + 2), param(4 * i + 3), param(4 * i + 4)))
            .collect();
        format!(
            "WITH v (id, seq, prev_hash, hash) AS (VALUES {}) \
             UPDATE journals SET seq = v.seq, prev_hash = v.prev_hash, hash = v.hash \
             FROM v WHERE journals.id = v.id AND journals.seq IS NULL",
            rows.join(", ")
        )
    };
    macro_rules! bound {
        ($query:expr) => {{
            let mut query = $query;
            for (id, link) in links {
                query = query.bind::<Text, _>(*id).bind::<BigInt, _>(link.seq).bind::<Text, _>(&link.prev_hash).bind::<Text, _>(&link.hash);
            }
            query
        }};
    }
    let updated = match conn {
        DbConnection::Pg(c) => bound!(diesel::sql_query(sql(&|n| format!("${n}"))).into_boxed::<diesel::pg::Pg>()).execute(c)?,
        DbConnection::Sqlite(c) => bound!(diesel::sql_query(sql(&|_| "?".to_owned())).into_boxed::<diesel::sqlite::Sqlite>()).execute(c)?,
    };
    Ok(updated)
}

/// Reads a ledger's chain head, locked until the transaction ends (PostgreSQL `FOR UPDATE`: a
/// second sealer of the ledger waits for the first to commit; SQLite writers are serialised
/// anyway), creating it at the genesis if absent.
fn lock_ledger_head(conn: &mut DbConnection, mode: &str, currency: &str) -> Result<(i64, String), Fail> {
    for _ in 0..2 {
        let query = ledger_heads::table.find((mode, currency)).select((ledger_heads::seq, ledger_heads::hash));
        let head: Option<(i64, String)> = match &mut *conn {
            DbConnection::Pg(c) => query.for_update().first(c).optional()?,
            DbConnection::Sqlite(c) => query.first(c).optional()?,
        };
        if let Some(head) = head {
            return Ok(head);
        }
        // The ledger's first seal. Two can race here: the loser's insert does nothing (waiting
        // for the winner on PostgreSQL) and its next read locks the winner's row.
        per_backend!(&mut *conn, |c| diesel::insert_into(ledger_heads::table)
            .values((
                ledger_heads::mode.eq(mode),
                ledger_heads::currency.eq(currency),
                ledger_heads::seq.eq(0_i64),
                ledger_heads::hash.eq(GENESIS_HASH),
            ))
            .on_conflict_do_nothing()
            .execute(c))?;
    }
    Err(StoreError::Other(format!("ledger head {mode}/{currency} could not be created")).into())
}
