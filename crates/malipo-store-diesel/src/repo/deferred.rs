//! Hot accounts' waiting lines (`deferred_lines`, see its migration): a line that needs no funds
//! check on an account that many journals post to is committed with its journal without
//! updating the account's row, and applied later, in order, under the account's lock: a posting
//! with its running `balance_after` per line, and the row's balance moved once for the batch.
//! An account's balance is its row's balance plus its waiting lines.

use diesel::dsl::sql;
use diesel::expression::SqlLiteral;
use diesel::prelude::*;
use diesel::sql_types::BigInt;
use malipo_core::{AccountId, MinorUnit};
use malipo_ledger::{Account, LedgerError};
use malipo_service::StoreError;

use crate::cached::{written, PlannedDsl};
use crate::error::Fail;
use crate::rows::{AccountRow, DeferredLineRow, NewPosting};
use crate::schema::{accounts, deferred_lines, postings};
use crate::tx::{limit_i64, per_backend, IN_CHUNK};
use crate::DbConnection;

/// Postings inserted by one statement (7 columns each, well within SQLite's 32,766 variables).
const INSERT_CHUNK: usize = 1_000;

/// A waiting line read with its journal's lines: journal id, line number, account, amount, fee.
pub(crate) type WaitingLine = (String, i32, String, i64, i64);

/// Applies every line waiting on `account`, oldest first, under the account's row lock
/// (PostgreSQL `FOR NO KEY UPDATE`; SQLite's writers are serialised anyway): each becomes a posting
/// with the balance after it, stamped no earlier than the account's last posting, and the row's
/// balance moves by their sum. Returns how many were applied.
///
/// Read under the lock, the waiting lines are those committed before it was granted (PostgreSQL's
/// READ COMMITTED reads each statement afresh): a second applier waits for the first and finds
/// only what came since.
pub(crate) fn apply(conn: &mut DbConnection, account: &str) -> Result<usize, Fail> {
    let head = accounts::table.find(account).select((accounts::balance, accounts::posted_at));
    let locked: Option<(i64, i64)> = match &mut *conn {
        // NO KEY UPDATE: the inserts that reference the account (postings, waiting lines) hold
        // KEY SHARE on its row until they commit, which FOR UPDATE would wait for, and make every
        // later insert wait behind it.
        DbConnection::Pg(c) => head.for_no_key_update().first(c).optional()?,
        DbConnection::Sqlite(c) => head.first(c).optional()?,
    };
    let Some((mut balance, mut posted_at)) = locked else {
        return Err(StoreError::Ledger(LedgerError::UnknownAccount(AccountId::from_trusted(account.to_owned()))).into());
    };
    let waiting: Vec<DeferredLineRow> = deferred_lines::table
        .filter(deferred_lines::account_id.eq(account))
        .order(deferred_lines::id.asc())
        .select(DeferredLineRow::as_select())
        .load(conn)?;
    if waiting.is_empty() {
        return Ok(0);
    }
    let mut new = Vec::with_capacity(waiting.len());
    for line in &waiting {
        balance = balance.checked_add(line.amount).ok_or(StoreError::Ledger(LedgerError::Overflow))?;
        posted_at = posted_at.max(line.created_at);
        new.push(NewPosting {
            journal_id: &line.journal_id,
            line_no: line.line_no,
            account_id: &line.account_id,
            amount: line.amount,
            balance_after: balance,
            created_at: posted_at,
            fee: line.fee,
        });
    }
    for chunk in new.chunks(INSERT_CHUNK) {
        per_backend!(&mut *conn, |c| diesel::insert_into(postings::table).values(chunk).execute(c))?;
    }
    // Each waiting line leaves as the posting just made of it (`deferred_lines_applied` refuses
    // any other delete).
    let ids: Vec<i64> = waiting.iter().map(|l| l.id).collect();
    let mut removed = 0_usize;
    for chunk in ids.chunks(IN_CHUNK) {
        removed = removed.saturating_add(diesel::delete(deferred_lines::table.filter(deferred_lines::id.eq_any(chunk))).execute(conn)?);
    }
    if removed != waiting.len() {
        return Err(StoreError::Other(format!("waiting lines of account {account} were applied meanwhile")).into());
    }
    written!(conn, diesel::update(accounts::table.find(account)).set((accounts::balance.eq(balance), accounts::posted_at.eq(posted_at))))?;
    Ok(waiting.len())
}

/// The accounts with lines waiting, at most `limit`, in descending id order: the order in which
/// postings lock accounts.
pub(crate) fn waiting_accounts(conn: &mut DbConnection, limit: usize) -> Result<Vec<AccountId>, Fail> {
    let found: Vec<String> = deferred_lines::table
        .select(deferred_lines::account_id)
        .distinct()
        .order(deferred_lines::account_id.desc())
        .limit(limit_i64(limit))
        .load(conn)?;
    Ok(found.into_iter().map(AccountId::from_trusted).collect())
}

/// The sum of an account's waiting lines, as a column of a query on `accounts` (zero for most):
/// read in the same statement as the row's balance, so that an applier committing between two
/// statements cannot make a line count twice or not at all.
pub(crate) fn waiting_sum() -> SqlLiteral<BigInt> {
    sql::<BigInt>("CAST(COALESCE((SELECT SUM(d.amount) FROM deferred_lines d WHERE d.account_id = accounts.id), 0) AS BIGINT)")
}

/// Accounts from their rows and the sums of their waiting lines ([`waiting_sum`]), each
/// balance with its waiting lines added.
pub(crate) fn with_waiting(rows: Vec<(AccountRow, i64)>) -> Result<Vec<Account>, StoreError> {
    rows.into_iter()
        .map(|(row, waiting)| {
            let mut account = Account::try_from(row)?;
            account.balance =
                account.balance.checked_add(MinorUnit::new(waiting)).map_err(|_| StoreError::Ledger(LedgerError::Overflow))?;
            Ok(account)
        })
        .collect()
}

/// The lines of these journals, posted and waiting, in one statement per chunk (`UNION ALL`): a
/// line applied meanwhile is read once, as one or the other.
pub(crate) fn all_lines_of(conn: &mut DbConnection, journal_ids: &[&str]) -> Result<Vec<WaitingLine>, Fail> {
    let mut lines = Vec::new();
    for chunk in journal_ids.chunks(IN_CHUNK) {
        let posted = postings::table.filter(postings::journal_id.eq_any(chunk)).select((
            postings::journal_id,
            postings::line_no,
            postings::account_id,
            postings::amount,
            postings::fee,
        ));
        let waiting = deferred_lines::table.filter(deferred_lines::journal_id.eq_any(chunk)).select((
            deferred_lines::journal_id,
            deferred_lines::line_no,
            deferred_lines::account_id,
            deferred_lines::amount,
            deferred_lines::fee,
        ));
        lines.extend(per_backend!(&mut *conn, |c| posted.union_all(waiting).planned().load::<WaitingLine>(c))?);
    }
    Ok(lines)
}
