//! [`LedgerRepo`] on the transaction's connection: accounts, balances, holds, journals and postings.

use std::collections::HashMap;
use std::str::FromStr;

use diesel::dsl::sql;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Bool, Text};
use malipo_charges::ChargeKind;
use malipo_core::{AccountId, MinorUnit, Mode, OrgId, Timestamp, TransactionId};
use malipo_ledger::{
    Account, ChainLink, ChainedJournal, Journal, JournalFee, JournalKind, JournalLine, LedgerError, LedgerSnapshot, Posting,
};
use malipo_service::{AccountKey, LedgerRepo, PostingQuery, StatementLine, StoreError};

use crate::cached::written;
use crate::cached::CachedDsl;
use crate::error::{account_error, db_error, Fail};
use crate::literal::column_is;
use crate::repo::deferred::{self, WaitingLine};
use crate::repo::posting;
use crate::rows::{self, AccountRow, JournalRow};
use crate::schema::{accounts, charges, deferred_lines, journals, postings};
use crate::tx::{inserted, limit_i64, DieselTx, IN_CHUNK};
use crate::DbConnection;

/// A posting joined with its journal: id, journal id, account, amount, fee, balance after,
/// created at, journal kind, source reference.
type StatementRow = (i64, String, String, i64, i64, i64, i64, String, String);

/// The columns of a [`StatementRow`].
const STATEMENT_COLUMNS: (
    postings::id,
    postings::journal_id,
    postings::account_id,
    postings::amount,
    postings::fee,
    postings::balance_after,
    postings::created_at,
    journals::kind,
    journals::source_ref,
) = (
    postings::id,
    postings::journal_id,
    postings::account_id,
    postings::amount,
    postings::fee,
    postings::balance_after,
    postings::created_at,
    journals::kind,
    journals::source_ref,
);

/// A statement line from its row.
fn statement_line(row: StatementRow) -> Result<StatementLine, StoreError> {
    let (seq, journal_id, account, amount, fee, balance_after, created_at, kind, source_ref) = row;
    Ok(StatementLine {
        seq,
        posting: Posting {
            journal_id: TransactionId::from_trusted(journal_id),
            account: AccountId::from_trusted(account),
            amount: MinorUnit::new(amount),
            fee: MinorUnit::new(fee),
            balance_after: MinorUnit::new(balance_after),
            kind: JournalKind::from_str(&kind).map_err(|_| StoreError::Other(format!("stored journal kind `{kind}` does not parse")))?,
            source_ref,
            created_at: Timestamp::from_micros(created_at),
        },
    })
}

/// A stored journal line: journal id, account, amount, fee.
pub(crate) type LineRow = (String, String, i64, i64);

/// The `kind IN (…)` of `accounts_system_kind_key`, as a literal so that PostgreSQL can use that
/// partial index under a generic plan.
fn system_kind() -> diesel::expression::SqlLiteral<Bool> {
    sql::<Bool>("accounts.kind IN ('revenue', 'issuance', 'sandbox_funding')")
}

impl LedgerRepo for DieselTx<'_> {
    fn insert_account(&mut self, account: &Account) -> Result<(), StoreError> {
        let row = AccountRow::from(account);
        inserted(written!(&mut *self.conn, diesel::insert_into(accounts::table).values(&row).on_conflict_do_nothing()))?;
        self.learned.insert(account.id.as_str().to_owned(), (account.mode, account.currency, account.kind));
        Ok(())
    }

    fn account(&mut self, id: &AccountId) -> Result<Option<Account>, StoreError> {
        self.flush_journals_on(id)?;
        let row = accounts::table
            .find(id.as_str())
            .select((AccountRow::as_select(), deferred::waiting_sum()))
            .limit(1)
            .cached()
            .get_result(self.conn)
            .optional()
            .map_err(db_error)?;
        one_with_waiting(row)
    }

    fn find_account(&mut self, key: &AccountKey) -> Result<Option<Account>, StoreError> {
        self.flush_journals()?;
        let found = match key {
            AccountKey::Org { org_id, mode, kind } => accounts::table
                .filter(accounts::org_id.eq(org_id.as_str()))
                .filter(accounts::mode.eq(mode.as_str()))
                .filter(column_is("accounts.kind", kind.as_str()))
                .select((AccountRow::as_select(), deferred::waiting_sum()))
                .limit(1)
                .cached()
                .get_result(self.conn)
                .optional(),
            AccountKey::System { mode, currency, kind } => accounts::table
                .filter(accounts::mode.eq(mode.as_str()))
                .filter(accounts::currency.eq(currency.as_str()))
                .filter(column_is("accounts.kind", kind.as_str()))
                .filter(system_kind())
                .select((AccountRow::as_select(), deferred::waiting_sum()))
                .limit(1)
                .cached()
                .get_result(self.conn)
                .optional(),
        };
        let account = one_with_waiting(found.map_err(db_error)?)?;
        // Only an id the store does not know yet is told at the commit: a balance read of a
        // known account (the usual find) then takes no write lock.
        if let Some(a) = account.as_ref().filter(|a| self.known.id(key).as_ref() != Some(&a.id)) {
            self.learned_ids.push((key.clone(), a.id.clone()));
        }
        Ok(account)
    }

    fn account_id(&mut self, key: &AccountKey) -> Result<Option<AccountId>, StoreError> {
        if let Some(id) = self.known.id(key) {
            return Ok(Some(id));
        }
        Ok(self.find_account(key)?.map(|a| a.id))
    }

    fn org_accounts(&mut self, org_id: &OrgId, mode: Mode) -> Result<Vec<Account>, StoreError> {
        self.flush_journals()?;
        let rows = accounts::table
            .filter(accounts::org_id.eq(org_id.as_str()))
            .filter(accounts::mode.eq(mode.as_str()))
            .order((accounts::created_at.asc(), accounts::id.asc()))
            .select((AccountRow::as_select(), deferred::waiting_sum()))
            .cached()
            .load(self.conn)
            .map_err(db_error)?;
        deferred::with_waiting(rows)
    }

    fn hold(&mut self, account: &AccountId, amount: MinorUnit) -> Result<(), StoreError> {
        self.flush_journals_on(account)?;
        let amt = amount.get();
        let hold = |conn: &mut DbConnection| {
            written!(
                conn,
                diesel::update(
                    accounts::table
                        .filter(accounts::id.eq(account.as_str()))
                        .filter(accounts::allow_negative.or((accounts::balance - accounts::held).ge(amt))),
                )
                .set(accounts::held.eq(accounts::held + amt))
            )
            .map_err(|e| account_error(e, account))
        };
        if hold(self.conn)? > 0 {
            return Ok(());
        }
        // Refused by the row alone: credits may wait on it (a hot account). Under the account's
        // lock, with what waits applied (by this call, or by another applier meanwhile), the
        // hold is tried once more, and that answer is exact.
        deferred::apply(self.conn, account.as_str())?;
        if hold(self.conn)? > 0 {
            return Ok(());
        }
        Err(LedgerError::InsufficientFunds(account.clone()).into())
    }

    fn release(&mut self, account: &AccountId, amount: MinorUnit) -> Result<(), StoreError> {
        self.flush_journals_on(account)?;
        let amt = amount.get();
        let updated = written!(
            &mut *self.conn,
            diesel::update(accounts::table.filter(accounts::id.eq(account.as_str())).filter(accounts::held.ge(amt)))
                .set(accounts::held.eq(accounts::held - amt))
        )
        .map_err(|e| account_error(e, account))?;
        if updated > 0 {
            return Ok(());
        }
        if account_exists(self.conn, account)? {
            Err(LedgerError::ReleaseExceedsHold(account.clone()).into())
        } else {
            Err(LedgerError::UnknownAccount(account.clone()).into())
        }
    }

    fn post_journal(&mut self, journal: &Journal) -> Result<(), StoreError> {
        self.flush_journals()?;
        journal.check_balanced()?;
        // In a savepoint: a refused line undoes the lines before it, and the caller's
        // transaction stays usable (e.g. to record the failure).
        let (known, mut learned) = (self.known, std::mem::take(&mut self.learned));
        let posted = self.conn.transaction::<_, Fail, _>(|conn| posting::post_journal(conn, known, &mut learned, journal));
        // Kept whether or not the posting was: what it read is what the transaction sees.
        self.learned = learned;
        posted.map_err(StoreError::from)
    }

    fn post_journal_whole(&mut self, journal: &Journal) -> Result<(), StoreError> {
        journal.check_balanced()?;
        if self.queue_journals(&[journal])? {
            return Ok(());
        }
        let posted = posting::post_journal(self.conn, self.known, &mut self.learned, journal).map_err(StoreError::from);
        self.poisoned |= posted.is_err();
        posted
    }

    fn post_journals_whole(&mut self, journals: &[&Journal]) -> Result<(), StoreError> {
        journals.iter().try_for_each(|j| j.check_balanced())?;
        if self.queue_journals(journals)? {
            return Ok(());
        }
        let posted = posting::post_journals(self.conn, self.known, &mut self.learned, journals).map_err(StoreError::from);
        self.poisoned |= posted.is_err();
        posted
    }

    fn pending_credits(&mut self, account: &AccountId) -> Result<MinorUnit, StoreError> {
        self.flush_journals()?;
        let rows: Vec<(i64, i64)> = charges::table
            .filter(charges::merchant_account.eq(account.as_str()))
            .filter(sql::<Bool>("charges.state = 'authorised'"))
            .filter(charges::kind.eq(ChargeKind::Charge.as_str()))
            .select((charges::amount, charges::fee))
            .load(self.conn)
            .map_err(db_error)?;
        let mut total = MinorUnit::ZERO;
        for (amount, fee) in rows {
            total = total.checked_add(MinorUnit::new(amount - fee)).map_err(|_| StoreError::Ledger(LedgerError::Overflow))?;
        }
        Ok(total)
    }

    fn account_with_debits_since(&mut self, id: &AccountId, since: Timestamp) -> Result<Option<(Account, MinorUnit)>, StoreError> {
        self.flush_journals_on(id)?;
        // The debits as a column of the account's row: one statement (a correlated sum over
        // the account's debits from `since` on, by the covering index of debits). Sandbox
        // funding (a test wallet's balance set lower) is not spending; live accounts have none,
        // so only a test account's debits look their journal up.
        let debits = sql::<BigInt>(
            "CAST(COALESCE(-(SELECT SUM(p.amount) FROM postings p \
             WHERE p.account_id = accounts.id AND p.amount < 0 AND p.created_at >= ",
        )
        .bind::<BigInt, _>(since.as_micros())
        .sql(" AND (accounts.mode = ")
        .bind::<Text, _>(Mode::Live.as_str())
        .sql(" OR NOT EXISTS (SELECT 1 FROM journals j WHERE j.id = p.journal_id AND j.kind = ")
        .bind::<Text, _>(JournalKind::SandboxFunding.as_str())
        .sql("))), 0) AS BIGINT)");
        let row: Option<(AccountRow, i64, i64)> = accounts::table
            .find(id.as_str())
            .select((AccountRow::as_select(), deferred::waiting_sum(), debits))
            .limit(1)
            .cached()
            .get_result(self.conn)
            .optional()
            .map_err(db_error)?;
        let Some((row, waiting, debited)) = row else { return Ok(None) };
        Ok(one_with_waiting(Some((row, waiting)))?.map(|account| (account, MinorUnit::new(debited))))
    }

    fn account_postings(&mut self, q: &PostingQuery) -> Result<Vec<StatementLine>, StoreError> {
        self.flush_journals()?;
        let mut query = postings::table.inner_join(journals::table).filter(postings::account_id.eq(q.account.as_str())).into_boxed();
        if let Some(from) = q.from {
            query = query.filter(postings::created_at.ge(from.as_micros()));
        }
        if let Some(to) = q.to {
            query = query.filter(postings::created_at.lt(to.as_micros()));
        }
        if let Some(after) = q.after {
            query = query.filter(postings::id.gt(after));
        }
        if let Some(up_to) = q.up_to {
            query = query.filter(postings::id.le(up_to));
        }
        if !q.kinds.is_empty() {
            query = query.filter(journals::kind.eq_any(q.kinds.iter().map(|k| k.as_str()).collect::<Vec<_>>()));
        }
        query = match (q.newest_first, q.cursor) {
            (false, cursor) => query.filter(postings::id.gt(cursor.unwrap_or(0))).order(postings::id.asc()),
            (true, Some(cursor)) => query.filter(postings::id.lt(cursor)).order(postings::id.desc()),
            (true, None) => query.order(postings::id.desc()),
        };
        let rows: Vec<StatementRow> = query.limit(limit_i64(q.limit)).select(STATEMENT_COLUMNS).load(self.conn).map_err(db_error)?;
        rows.into_iter().map(statement_line).collect()
    }

    fn journal_postings(&mut self, journal: &TransactionId, accounts: &[AccountId]) -> Result<Vec<StatementLine>, StoreError> {
        self.flush_journals()?;
        let ids: Vec<&str> = accounts.iter().map(AccountId::as_str).collect();
        let rows: Vec<StatementRow> = postings::table
            .inner_join(journals::table)
            .filter(postings::journal_id.eq(journal.as_str()))
            .filter(postings::account_id.eq_any(ids))
            .order(postings::line_no.asc())
            .select(STATEMENT_COLUMNS)
            .load(self.conn)
            .map_err(db_error)?;
        rows.into_iter().map(statement_line).collect()
    }

    fn last_posting_before(&mut self, account: &AccountId, at: Timestamp) -> Result<Option<StatementLine>, StoreError> {
        self.flush_journals()?;
        let row: Option<StatementRow> = postings::table
            .inner_join(journals::table)
            .filter(postings::account_id.eq(account.as_str()))
            .filter(postings::created_at.lt(at.as_micros()))
            .order((postings::account_id.desc(), postings::created_at.desc(), postings::id.desc()))
            .select(STATEMENT_COLUMNS)
            .first(self.conn)
            .optional()
            .map_err(db_error)?;
        row.map(statement_line).transpose()
    }

    fn ledger_snapshot(&mut self, mode: Option<Mode>) -> Result<LedgerSnapshot, StoreError> {
        self.flush_journals()?;
        ledger_snapshot(self.conn, mode).map_err(StoreError::from)
    }

    fn ledger_part(&mut self, ids: &[AccountId]) -> Result<LedgerSnapshot, StoreError> {
        self.flush_journals()?;
        ledger_part(self.conn, ids).map_err(StoreError::from)
    }

    fn waiting_accounts(&mut self, limit: usize) -> Result<Vec<AccountId>, StoreError> {
        self.flush_journals()?;
        deferred::waiting_accounts(self.conn, limit).map_err(StoreError::from)
    }

    fn apply_waiting(&mut self, account: &AccountId) -> Result<usize, StoreError> {
        self.flush_journals()?;
        deferred::apply(self.conn, account.as_str()).map_err(StoreError::from)
    }
}

/// An account from its row, if found, with its waiting lines in its balance.
fn one_with_waiting(row: Option<(AccountRow, i64)>) -> Result<Option<Account>, StoreError> {
    match row {
        None => Ok(None),
        Some(row) => Ok(deferred::with_waiting(vec![row])?.pop()),
    }
}

fn account_exists(conn: &mut DbConnection, id: &AccountId) -> Result<bool, StoreError> {
    diesel::select(diesel::dsl::exists(accounts::table.find(id.as_str()))).get_result(conn).map_err(db_error)
}

/// Every account and journal of one mode or all.
fn ledger_snapshot(conn: &mut DbConnection, mode: Option<Mode>) -> Result<LedgerSnapshot, Fail> {
    let mut accounts_query =
        accounts::table.select((AccountRow::as_select(), deferred::waiting_sum())).order(accounts::id.asc()).into_boxed();
    let mut journals_query = journals::table
        .select(JournalRow::as_select())
        .order((journals::mode.asc(), journals::currency.asc(), journals::seq.asc(), journals::created_at.asc(), journals::id.asc()))
        .into_boxed();
    let mut lines_query = postings::table
        .inner_join(journals::table)
        .select((postings::journal_id, postings::line_no, postings::account_id, postings::amount, postings::fee))
        .into_boxed();
    let mut waiting_query = deferred_lines::table
        .inner_join(journals::table)
        .select((
            deferred_lines::journal_id,
            deferred_lines::line_no,
            deferred_lines::account_id,
            deferred_lines::amount,
            deferred_lines::fee,
        ))
        .into_boxed();
    if let Some(mode) = mode {
        accounts_query = accounts_query.filter(accounts::mode.eq(mode.as_str()));
        journals_query = journals_query.filter(journals::mode.eq(mode.as_str()));
        lines_query = lines_query.filter(journals::mode.eq(mode.as_str()));
        waiting_query = waiting_query.filter(journals::mode.eq(mode.as_str()));
    }
    let account_rows: Vec<(AccountRow, i64)> = accounts_query.load(conn)?;
    let accounts = deferred::with_waiting(account_rows)?;
    let journal_rows: Vec<JournalRow> = journals_query.load(conn)?;
    // Two statements: a snapshot is read in one read-only (repeatable read) transaction, so an
    // applier's commit between them is not seen by either.
    let mut line_rows: Vec<WaitingLine> = lines_query.load(conn)?;
    line_rows.extend(waiting_query.load::<WaitingLine>(conn)?);
    let line_rows = in_line_order(line_rows);
    Ok(LedgerSnapshot { accounts, journals: chained(journal_rows, line_rows)? })
}

/// The accounts `ids` and every journal touching them, with all their lines.
fn ledger_part(conn: &mut DbConnection, ids: &[AccountId]) -> Result<LedgerSnapshot, Fail> {
    let ids: Vec<&str> = ids.iter().map(AccountId::as_str).collect();
    let mut account_rows = Vec::new();
    let mut journal_ids: Vec<String> = Vec::new();
    for chunk in ids.chunks(IN_CHUNK) {
        account_rows.extend(
            accounts::table.filter(accounts::id.eq_any(chunk)).select((AccountRow::as_select(), deferred::waiting_sum())).load::<(
                AccountRow,
                i64,
            )>(
                conn
            )?,
        );
        journal_ids.extend(
            postings::table.filter(postings::account_id.eq_any(chunk)).select(postings::journal_id).distinct().load::<String>(conn)?,
        );
        journal_ids.extend(
            deferred_lines::table
                .filter(deferred_lines::account_id.eq_any(chunk))
                .select(deferred_lines::journal_id)
                .distinct()
                .load::<String>(conn)?,
        );
    }
    let accounts = deferred::with_waiting(account_rows)?;
    journal_ids.sort();
    journal_ids.dedup();
    let mut journal_rows = Vec::new();
    for chunk in journal_ids.chunks(IN_CHUNK) {
        journal_rows.extend(journals::table.filter(journals::id.eq_any(chunk)).select(JournalRow::as_select()).load::<JournalRow>(conn)?);
    }
    let ids: Vec<&str> = journal_ids.iter().map(String::as_str).collect();
    let line_rows = lines_of(conn, &ids)?;
    journal_rows
        .sort_by(|a, b| (&a.mode, &a.currency, a.seq, a.created_at, &a.id).cmp(&(&b.mode, &b.currency, b.seq, b.created_at, &b.id)));
    Ok(LedgerSnapshot { accounts, journals: chained(journal_rows, line_rows)? })
}

/// The lines of these journals (their postings and their lines still waiting on hot accounts),
/// each journal's in line order.
pub(crate) fn lines_of(conn: &mut DbConnection, journal_ids: &[&str]) -> Result<Vec<LineRow>, Fail> {
    Ok(in_line_order(deferred::all_lines_of(conn, journal_ids)?))
}

/// Posted and waiting lines together, by journal and in each journal's line order.
fn in_line_order(mut lines: Vec<WaitingLine>) -> Vec<LineRow> {
    lines.sort_unstable_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
    lines.into_iter().map(|(journal_id, _, account, amount, fee)| (journal_id, account, amount, fee)).collect()
}

/// Journals with their lines (postings grouped by journal, each journal's in line order), as the
/// verifier reads them and the sealer hashes them.
pub(crate) fn chained(journal_rows: Vec<JournalRow>, line_rows: Vec<LineRow>) -> Result<Vec<ChainedJournal>, Fail> {
    let mut lines: HashMap<String, (Vec<JournalLine>, Vec<JournalFee>)> = HashMap::new();
    for (journal_id, account, amount, fee) in line_rows {
        let (list, fees) = lines.entry(journal_id).or_default();
        let account = AccountId::from_trusted(account);
        if fee != 0 {
            fees.push(JournalFee { account: account.clone(), amount: MinorUnit::new(fee) });
        }
        list.push(JournalLine { account, amount: MinorUnit::new(amount) });
    }
    let mut journals = Vec::with_capacity(journal_rows.len());
    for row in journal_rows {
        let (line_list, fees) = lines.remove(&row.id).unwrap_or_default();
        let journal = Journal {
            id: row.transaction_id(),
            mode: rows::mode(&row.mode)?,
            currency: rows::currency(&row.currency)?,
            kind: row.journal_kind()?,
            lines: line_list,
            source_ref: row.source_ref,
            fees,
            created_at: Timestamp::from_micros(row.created_at),
        };
        // A row with a `seq` is sealed; any part of its entry missing (which `journals_seal_check`
        // forbids) reads as empty, so that the verifier reports the entry broken.
        let link = row.seq.map(|seq| ChainLink { seq, prev_hash: row.prev_hash.unwrap_or_default(), hash: row.hash.unwrap_or_default() });
        journals.push(ChainedJournal { link, journal });
    }
    Ok(journals)
}
