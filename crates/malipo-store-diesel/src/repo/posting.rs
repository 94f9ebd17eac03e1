//! Posting a journal: its accounts checked, its lines applied to their accounts' rows in one
//! lock order (or left waiting on hot accounts), its postings and its own row written.

use std::collections::{BTreeMap, HashMap};

use diesel::dsl::sql;
use diesel::prelude::*;
use diesel::sql_types::BigInt;
use malipo_core::AccountId;
use malipo_ledger::{AccountKind, Journal, LedgerError};
use malipo_service::StoreError;

use crate::cached::{written, CachedDsl};
use crate::error::{account_error, Fail};
use crate::repo::deferred;
use crate::rows::{self, JournalRow, NewDeferredLine, NewPosting};
use crate::schema::{accounts, deferred_lines, journals, postings};
use crate::tx::{DieselTx, KnownAccounts, Learned};
use crate::DbConnection;

/// Posts a checked journal (inside a savepoint).
pub(crate) fn post_journal(conn: &mut DbConnection, known: &KnownAccounts, learned: &mut Learned, journal: &Journal) -> Result<(), Fail> {
    post_journals(conn, known, learned, &[journal])
}

/// Posts checked journals in order, as [`post_journal`] of each in turn would, with their own
/// rows, their postings and their waiting lines each written by one statement for all of them,
/// and an account's lines applied by one update (a sandbox payer's funding and its payment: four
/// statements fewer).
pub(crate) fn post_journals(
    conn: &mut DbConnection,
    known: &KnownAccounts,
    learned: &mut Learned,
    journals: &[&Journal],
) -> Result<(), Fail> {
    // The journals' own rows and their waiting lines go first, before the first account row is
    // locked, so that an account's row is held only for its update, the postings' insert and
    // the commit. (The postings' and waiting lines' foreign keys to the journal are checked at
    // commit.) A waiting line's foreign key share-locks its hot account's row, which every
    // concurrent journal shares: written after the updates, its insert would lengthen the time
    // one merchant's row is held, which every charge of the merchant waits for
    // (docs/throughput.md, "Hot accounts").
    insert_journal_rows(conn, journals)?;
    let mut postings = Vec::new();
    let mut waiting = Vec::new();
    let mut lines = Vec::with_capacity(journals.len());
    for journal in journals {
        let (kinds, waits) = line_waits(conn, known, learned, journal)?;
        waiting.extend(waiting_lines(journal, &waits)?);
        lines.push((kinds, waits));
    }
    if !waiting.is_empty() {
        written!(rows &mut *conn, deferred_lines::table, &waiting)?;
    }
    apply_lines(conn, journals, &lines, &mut postings)?;
    // A few lines: a bounded number of statement shapes.
    if !postings.is_empty() {
        written!(rows &mut *conn, postings::table, &postings)?;
    }
    Ok(())
}

/// The kinds of a journal's accounts, and which of its lines wait.
fn line_waits(
    conn: &mut DbConnection,
    known: &KnownAccounts,
    learned: &mut Learned,
    journal: &Journal,
) -> Result<(HashMap<String, AccountKind>, Vec<bool>), Fail> {
    let kinds = line_kinds(conn, known, learned, journal)?;
    // A line that needs no funds check on a hot account waits (`repo/deferred.rs`): its
    // account's row is not touched, so journals of one merchant, or of one ledger's revenue, do
    // not queue on one row.
    let waits = journal
        .lines
        .iter()
        .map(|l| Ok(kinds.get(l.account.as_str()).ok_or_else(|| LedgerError::UnknownAccount(l.account.clone()))?.defers_line(l.amount)))
        .collect::<Result<Vec<bool>, LedgerError>>()?;
    Ok((kinds, waits))
}

/// Applies the journals' lines that do not wait to their accounts' rows, and adds their
/// postings (each journal's in line order) to the ones to write. An account's lines are applied
/// by one update when their journals share a time (the journals a transaction posts together:
/// a sandbox payer's funding and payment), checked as if line by line; else one update a line.
fn apply_lines<'j>(
    conn: &mut DbConnection,
    journals: &[&'j Journal],
    lines: &[(HashMap<String, AccountKind>, Vec<bool>)],
    postings: &mut Vec<NewPosting<'j>>,
) -> Result<(), Fail> {
    // Every line that does not wait, as (journal, line), by account in journal and line order.
    let mut by_account: BTreeMap<&AccountId, Vec<(usize, usize)>> = BTreeMap::new();
    for (j, journal) in journals.iter().enumerate() {
        for (i, line) in journal.lines.iter().enumerate() {
            if !lines[j].1[i] {
                by_account.entry(&line.account).or_default().push((j, i));
            }
        }
    }
    // Each line's balance after it and its posting time.
    let mut after: Vec<Vec<(i64, i64)>> = journals.iter().map(|j| vec![(0, 0); j.lines.len()]).collect();
    // Accounts in descending order, so that concurrent postings lock accounts in one order. Ids
    // are time-ordered, so the platform's shared accounts (revenue, issuance, sandbox funding),
    // opened first and touched by many journals, are locked last and held the shortest time.
    for (account, group) in by_account.iter().rev() {
        let first = journals[group[0].0];
        let kind = lines[group[0].0].0.get(account.as_str()).copied().ok_or_else(|| LedgerError::UnknownAccount((*account).clone()))?;
        // A debit checked on a hot account counts what waits on it: its waiting lines are
        // applied first, under the lock this update takes anyway, so that its postings'
        // balances run in order.
        if kind.defers_lines() {
            deferred::apply(conn, account.as_str())?;
        }
        let one_time = group.iter().all(|&(j, _)| journals[j].created_at == first.created_at);
        let runs: Vec<&[(usize, usize)]> = if one_time { vec![group.as_slice()] } else { group.chunks(1).collect() };
        for run in runs {
            let journal = journals[run[0].0];
            let amounts: Vec<i64> = run.iter().map(|&(j, i)| journals[j].lines[i].amount.get()).collect();
            // The lowest running total: no line may take the account below what it holds.
            let (mut total, mut lowest) = (0_i64, i64::MAX);
            for amount in &amounts {
                total = total.checked_add(*amount).ok_or_else(|| StoreError::Other("journal amounts overflow".into()))?;
                lowest = lowest.min(total);
            }
            match update_account(conn, journal, account, total, lowest)? {
                Some((mut balance, posted_at)) => {
                    for (k, &(j, i)) in run.iter().enumerate().rev() {
                        after[j][i] = (balance, posted_at);
                        balance -= amounts[k];
                    }
                }
                None => return Err(refused_line(conn, journal, account)?.into()),
            }
        }
    }
    for (j, journal) in journals.iter().enumerate() {
        for (i, line) in journal.lines.iter().enumerate() {
            if !lines[j].1[i] {
                postings.push(NewPosting {
                    journal_id: journal.id.as_str(),
                    line_no: line_no(i)?,
                    account_id: line.account.as_str(),
                    amount: line.amount.get(),
                    balance_after: after[j][i].0,
                    created_at: after[j][i].1,
                    fee: fee_of(journal, i),
                });
            }
        }
    }
    Ok(())
}

/// Adds `total` to an account's balance, if it is of the journal's ledger and may go negative or
/// stays at or above what it holds with `lowest` added (the rule of `Journal::apply_line`, for
/// each line of a run whose lowest running total is `lowest`). Returns the balance and the
/// posting time after it, or `None` when refused.
fn update_account(
    conn: &mut DbConnection,
    journal: &Journal,
    account: &AccountId,
    total: i64,
    lowest: i64,
) -> Result<Option<(i64, i64)>, Fail> {
    let now = journal.created_at.as_micros();
    let target = accounts::table
        .filter(accounts::id.eq(account.as_str()))
        .filter(accounts::mode.eq(journal.mode.as_str()))
        .filter(accounts::currency.eq(journal.currency.as_str()))
        .filter(accounts::allow_negative.or((accounts::balance + lowest).ge(accounts::held)));
    // The posting's time never goes back on an account (see `accounts.posted_at`).
    let later = sql::<BigInt>("CASE WHEN accounts.posted_at > ")
        .bind::<BigInt, _>(now)
        .sql(" THEN accounts.posted_at ELSE ")
        .bind::<BigInt, _>(now)
        .sql(" END");
    let set = (accounts::balance.eq(accounts::balance + total), accounts::posted_at.eq(later));
    let after: Option<(i64, i64)> = match &mut *conn {
        DbConnection::Pg(c) => {
            diesel::update(target).set(set).returning((accounts::balance, accounts::posted_at)).cached().get_result(c).optional()
        }
        DbConnection::Sqlite(c) => {
            diesel::update(target).set(set).returning((accounts::balance, accounts::posted_at)).cached().get_result(c).optional()
        }
    }
    .map_err(|e| account_error(e, account))?;
    Ok(after)
}

/// A line's fee: a journal's fee of an account goes on the first line of that account.
fn fee_of(journal: &Journal, i: usize) -> i64 {
    let account = &journal.lines[i].account;
    if journal.lines.iter().position(|l| &l.account == account) == Some(i) {
        journal.fee_of(account).get()
    } else {
        0
    }
}

fn line_no(i: usize) -> Result<i32, StoreError> {
    i32::try_from(i).map_err(|_| StoreError::Other("too many journal lines".into()))
}

/// The journal's lines that wait (`waits`), as rows.
fn waiting_lines<'j>(journal: &'j Journal, waits: &[bool]) -> Result<Vec<NewDeferredLine<'j>>, StoreError> {
    let now = journal.created_at.as_micros();
    let mut waiting = Vec::new();
    for (i, line) in journal.lines.iter().enumerate() {
        if waits[i] {
            waiting.push(NewDeferredLine {
                journal_id: journal.id.as_str(),
                line_no: line_no(i)?,
                account_id: line.account.as_str(),
                amount: line.amount.get(),
                fee: fee_of(journal, i),
                created_at: now,
            });
        }
    }
    Ok(waiting)
}

/// The journals' own rows, unsealed: no chain entry yet, and no lock on the ledger's head, which
/// every journal of the ledger would otherwise queue on until commit. The sealer
/// (`repo/chain.rs`) chains them after the commit.
fn insert_journal_rows(conn: &mut DbConnection, journals: &[&Journal]) -> Result<(), Fail> {
    let row = |journal: &Journal| JournalRow {
        id: journal.id.as_str().to_owned(),
        mode: journal.mode.as_str().to_owned(),
        currency: journal.currency.as_str().to_owned(),
        kind: journal.kind.as_str().to_owned(),
        source_ref: journal.source_ref.clone(),
        created_at: journal.created_at.as_micros(),
        seq: None,
        prev_hash: None,
        hash: None,
    };
    match journals {
        [one] => written!(conn, diesel::insert_into(journals::table).values(&row(one)))?,
        all => {
            let rows: Vec<JournalRow> = all.iter().map(|j| row(j)).collect();
            written!(rows &mut *conn, journals::table, &rows)?
        }
    };
    Ok(())
}

/// The longest journal whose account read is kept prepared (every journal Malipo posts has two to
/// four lines).
const CACHED_LINES: usize = 8;

/// The kind of each account of the journal's lines, each checked to be of the journal's ledger:
/// from what the store knows, and the accounts it does not know yet read in one statement. An
/// account not found is left out (its line is refused as unknown).
fn line_kinds(
    conn: &mut DbConnection,
    known: &KnownAccounts,
    learned: &mut Learned,
    journal: &Journal,
) -> Result<HashMap<String, AccountKind>, Fail> {
    let mut kinds = HashMap::with_capacity(journal.lines.len());
    let mut unknown: Vec<&str> = Vec::new();
    for line in &journal.lines {
        let id = line.account.as_str();
        match DieselTx::account_known(known, learned, id) {
            Some((mode, currency, kind)) => {
                if mode != journal.mode || currency != journal.currency {
                    return Err(StoreError::Ledger(LedgerError::Mismatch(line.account.clone())).into());
                }
                kinds.insert(id.to_owned(), kind);
            }
            None if !unknown.contains(&id) => unknown.push(id),
            None => {}
        }
    }
    if unknown.is_empty() {
        return Ok(kinds);
    }
    let query =
        accounts::table.filter(accounts::id.eq_any(&unknown)).select((accounts::id, accounts::mode, accounts::currency, accounts::kind));
    // Kept prepared for a journal of a few lines (SQLite's `IN (?, …)` has a shape per length;
    // PostgreSQL's `= ANY($1)` one).
    let found: Vec<(String, String, String, String)> =
        if unknown.len() <= CACHED_LINES { query.cached().load(conn)? } else { query.load(conn)? };
    for (id, mode, currency, kind) in found {
        let (mode, currency, kind) = (rows::mode(&mode)?, rows::currency(&currency)?, rows::account_kind(&kind)?);
        learned.insert(id.clone(), (mode, currency, kind));
        if mode != journal.mode || currency != journal.currency {
            return Err(StoreError::Ledger(LedgerError::Mismatch(AccountId::from_trusted(id))).into());
        }
        kinds.insert(id, kind);
    }
    Ok(kinds)
}

/// Why the conditional update of a line changed nothing.
fn refused_line(conn: &mut DbConnection, journal: &Journal, account: &AccountId) -> Result<LedgerError, Fail> {
    let found: Option<(String, String)> =
        accounts::table.find(account.as_str()).select((accounts::mode, accounts::currency)).first(conn).optional()?;
    Ok(match found {
        None => LedgerError::UnknownAccount(account.clone()),
        Some((mode, currency)) if mode != journal.mode.as_str() || currency != journal.currency.as_str() => {
            LedgerError::Mismatch(account.clone())
        }
        Some(_) => LedgerError::InsufficientFunds(account.clone()),
    })
}
