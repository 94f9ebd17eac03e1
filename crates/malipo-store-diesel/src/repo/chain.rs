//! [`ChainRepo`] on the transaction's connection: the sealer, which chains committed journals
//! into their ledger's audit chain after their commit (posting takes no chain lock).

use diesel::dsl::{count_star, min};
use diesel::prelude::*;
use malipo_core::Timestamp;
use malipo_ledger::{ChainLink, GENESIS_HASH};
use malipo_service::{ChainRepo, StoreError, UnsealedStats};

use crate::error::{db_error, Fail};
use crate::repo::ledger::{chained, lines_of};
use crate::rows::JournalRow;
use crate::schema::{journals, ledger_heads};
use crate::tx::{limit_i64, per_backend, DieselTx};
use crate::DbConnection;

impl ChainRepo for DieselTx<'_> {
    fn seal_pending(&mut self, limit: usize) -> Result<usize, StoreError> {
        seal_pending(self.conn, limit).map_err(StoreError::from)
    }

    fn unsealed_stats(&mut self) -> Result<UnsealedStats, StoreError> {
        let (count, oldest): (i64, Option<i64>) = journals::table
            .filter(journals::seq.is_null())
            .select((count_star(), min(journals::created_at)))
            .first(self.conn)
            .map_err(db_error)?;
        Ok(UnsealedStats { count: u64::try_from(count).unwrap_or(0), oldest: oldest.map(Timestamp::from_micros) })
    }
}

/// Seals at most `limit` journals, ledger by ledger in one order (so that sealers of several
/// instances lock ledger heads in one order and never deadlock).
fn seal_pending(conn: &mut DbConnection, limit: usize) -> Result<usize, Fail> {
    let ledgers: Vec<(String, String)> = journals::table
        .filter(journals::seq.is_null())
        .select((journals::mode, journals::currency))
        .distinct()
        .order((journals::mode.asc(), journals::currency.asc()))
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
        .load(conn)?;
    if rows.is_empty() {
        return Ok(0);
    }
    let ids: Vec<&str> = rows.iter().map(|r| r.id.as_str()).collect();
    let line_rows = lines_of(conn, &ids)?;
    // Each journal as stored (its postings as lines), as the verifier will read it.
    let journals = chained(rows, line_rows)?;
    for cj in &journals {
        let link = ChainLink::after(seq, &hash, &cj.journal);
        // `seq IS NULL`: a journal is sealed once, whatever happens.
        let updated = diesel::update(journals::table.find(cj.journal.id.as_str()).filter(journals::seq.is_null()))
            .set((journals::seq.eq(link.seq), journals::prev_hash.eq(&link.prev_hash), journals::hash.eq(&link.hash)))
            .execute(conn)?;
        if updated != 1 {
            return Err(StoreError::Other(format!("journal {} was sealed meanwhile", cj.journal.id)).into());
        }
        (seq, hash) = (link.seq, link.hash);
    }
    diesel::update(ledger_heads::table.find((mode, currency)))
        .set((ledger_heads::seq.eq(seq), ledger_heads::hash.eq(&hash)))
        .execute(conn)?;
    Ok(journals.len())
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
