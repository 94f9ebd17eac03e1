//! Transactions as an organisation sees them (contract section 7): lists, one transaction, the
//! streamed export, and the daily reconciliation report.

use std::collections::VecDeque;

use malipo_auth::Principal;
use malipo_core::{AccountId, MinorUnit, Mode, OrgId, Timestamp, TransactionId};
use malipo_countries::Country;
use malipo_ledger::{kinds_of_type, Account, AccountKind, DayReport, DayTotals, Transaction};

use crate::core::Core;
use crate::error::ServiceError;
use crate::needs::{self, require};
use crate::page::{bad_cursor, Page};
use crate::ports::{LedgerRepo, PostingQuery, StatementLine};
use crate::views::{OnLedger, Reporting, View};

/// What `GET /transactions` and the export select.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TransactionFilter {
    /// Posted at or after.
    pub from: Option<Timestamp>,
    /// Posted before.
    pub to: Option<Timestamp>,
    /// A transaction type (`charge`, `transfer`, …).
    pub kind: Option<String>,
    /// An account kind (`collection`, `payout`, `agent_float`) or an `acc_` id; every account
    /// of the organisation when absent.
    pub account: Option<String>,
}

/// The daily reconciliation of one account.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reconciliation {
    /// The local calendar day.
    pub date: time::Date,
    /// The country's time zone (IANA name).
    pub time_zone: String,
    /// The day's first instant (UTC).
    pub from: Timestamp,
    /// The next day's first instant (UTC).
    pub to: Timestamp,
    /// The account.
    pub account: Account,
    /// The figures.
    pub report: DayReport,
}

/// Where an export has got to: the accounts it covers and, per account, what was read ahead.
#[derive(Debug)]
pub struct ExportRun {
    streams: Vec<AccountStream>,
}

#[derive(Debug)]
struct AccountStream {
    account: Account,
    buffered: VecDeque<StatementLine>,
    cursor: Option<i64>,
    /// The account's last posting in the export (fixed at its start).
    up_to: i64,
    done: bool,
}

/// The transactions of an organisation's accounts.
pub struct Transactions<'a> {
    core: &'a Core,
}

impl<'a> Transactions<'a> {
    pub(crate) fn new(core: &'a Core) -> Self {
        Transactions { core }
    }

    /// A page of the principal's transactions, newest first. The cursor is the last
    /// transaction's place in ledger order, so pages are stable under new postings.
    ///
    /// # Errors
    /// [`ServiceError::Validation`] (bad cursor, unknown type or account kind),
    /// [`ServiceError::NotFound`] (an `acc_` id that is not the principal's).
    pub fn list(
        &self,
        principal: &Principal,
        filter: &TransactionFilter,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<Page<Transaction>, ServiceError> {
        require(principal, &needs::READ_TRANSACTIONS)?;
        let before = cursor.map(|c| c.parse::<i64>().ok().filter(|v| *v > 0).ok_or_else(|| bad_cursor("cursor"))).transpose()?;
        let kinds = match &filter.kind {
            None => Vec::new(),
            Some(name) => {
                let kinds = kinds_of_type(name);
                if kinds.is_empty() {
                    return Err(ServiceError::field("type", "invalid_value", format!("`{name}` is not a transaction type")));
                }
                kinds
            }
        };
        let fetch = limit.saturating_add(1);
        let mut found = OnLedger::report(self.core.store(), |tx| {
            let mut found = Vec::new();
            for account in accounts(tx, &principal.org_id, principal.mode, filter.account.as_deref())? {
                // The window as a run of the account's history (seq bounds), so that a page
                // keeps to the account's index however long the history outside the window.
                let (after, up_to) = run_of(tx, &account, filter.from, filter.to)?;
                if up_to == Some(0) {
                    continue;
                }
                let q = PostingQuery {
                    account: account.id.clone(),
                    cursor: before,
                    after,
                    up_to,
                    newest_first: true,
                    from: None,
                    to: None,
                    kinds: kinds.clone(),
                    limit: fetch,
                };
                for line in tx.account_postings(&q)? {
                    found.push(transaction(&account, line)?);
                }
            }
            Ok(found)
        })?;
        // Each account's newest `limit + 1`, merged: the newest `limit + 1` of them all.
        found.sort_by_key(|t| std::cmp::Reverse(t.seq));
        found.truncate(fetch);
        Ok(Page::from_fetched(found, limit, |t| t.seq.to_string()))
    }

    /// One of the principal's transactions. A journal that moved two of its accounts (a
    /// transfer) is one transaction on each: `account` picks one (by kind or `acc_` id), else
    /// the first line's (the transfer's debit).
    ///
    /// # Errors
    /// [`ServiceError::NotFound`] (absent, or not on the principal's accounts in its mode),
    /// [`ServiceError::Validation`] (unknown account kind).
    pub fn get(&self, principal: &Principal, id: &str, account: Option<&str>) -> Result<Transaction, ServiceError> {
        require(principal, &needs::READ_TRANSACTIONS)?;
        let id = TransactionId::parse(id).map_err(|_| ServiceError::NotFound)?;
        OnLedger::read(self.core.store(), |tx| {
            let own = accounts(tx, &principal.org_id, principal.mode, account)?;
            let ids: Vec<AccountId> = own.iter().map(|a| a.id.clone()).collect();
            let line = tx.journal_postings(&id, &ids)?.into_iter().next().ok_or(ServiceError::NotFound)?;
            let account = own.iter().find(|a| a.id == line.posting.account).ok_or(ServiceError::NotFound)?;
            transaction(account, line)
        })
    }

    /// Starts an export of the principal's transactions in ledger order (oldest first): the
    /// accounts and each one's last posting (without `to`, the newest now) are resolved now, the
    /// rows are read by [`Transactions::export_batch`]. What is posted after the start is not in
    /// the export.
    ///
    /// # Errors
    /// As [`Transactions::list`] for the account.
    pub fn export(&self, principal: &Principal, filter: &TransactionFilter) -> Result<ExportRun, ServiceError> {
        require(principal, &needs::EXPORT_TRANSACTIONS)?;
        OnLedger::report(self.core.store(), |tx| {
            let mut streams = Vec::new();
            for account in accounts(tx, &principal.org_id, principal.mode, filter.account.as_deref())? {
                let (cursor, up_to) = run_of(tx, &account, filter.from, filter.to)?;
                let up_to = match up_to {
                    Some(seq) => seq,
                    None => newest_seq(tx, &account)?,
                };
                streams.push(AccountStream { account, buffered: VecDeque::new(), cursor, up_to, done: up_to == 0 });
            }
            Ok(ExportRun { streams })
        })
    }

    /// The export's next transactions in ledger order, at most `n`; empty when it is over. Each
    /// call reads at most `n` rows per account in one short read transaction, so an export of
    /// any length holds a bounded number of rows in memory and no transaction open between calls.
    ///
    /// # Errors
    /// Storage failures.
    pub fn export_batch(&self, run: &mut ExportRun, n: usize) -> Result<Vec<Transaction>, ServiceError> {
        let n = n.max(1);
        let wanted: Vec<usize> = (0..run.streams.len()).filter(|&i| run.streams[i].buffered.is_empty() && !run.streams[i].done).collect();
        let fetch = |tx: &mut dyn LedgerRepo| -> Result<Vec<Vec<StatementLine>>, ServiceError> {
            let mut all = Vec::with_capacity(wanted.len());
            for &i in &wanted {
                let s = &run.streams[i];
                let q = PostingQuery { cursor: s.cursor, up_to: Some(s.up_to), ..PostingQuery::oldest_first(s.account.id.clone(), n) };
                all.push(tx.account_postings(&q)?);
            }
            Ok(all)
        };
        let mut fetched = OnLedger::report(self.core.store(), fetch)?;
        // A replica behind the export's start has fewer rows than the extent promises: the batch
        // is read again on the primary, which has them all.
        let short = |all: &[Vec<StatementLine>]| {
            wanted.iter().zip(all).any(|(&i, lines)| short_of_extent(&run.streams[i], lines.len(), lines.last().map(|l| l.seq), n))
        };
        if short(&fetched) {
            fetched = OnLedger::read(self.core.store(), fetch)?;
        }
        for (&i, lines) in wanted.iter().zip(fetched) {
            let s = &mut run.streams[i];
            s.cursor = lines.last().map(|l| l.seq).or(s.cursor);
            s.done = lines.len() < n || s.cursor >= Some(s.up_to);
            s.buffered.extend(lines);
        }
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            // The account whose next posting comes first in ledger order; an account that ran
            // out of read-ahead (and is not done) stops the batch, so the merge stays in order.
            let Some(next) = run
                .streams
                .iter_mut()
                .filter(|s| !s.buffered.is_empty() || !s.done)
                .min_by_key(|s| s.buffered.front().map_or(i64::MIN, |l| l.seq))
            else {
                break;
            };
            let Some(line) = next.buffered.pop_front() else { break };
            out.push(transaction(&next.account, line)?);
        }
        Ok(out)
    }

    /// The daily reconciliation of one of an organisation's accounts (`collection` when it has
    /// one and none is named, else its only account): the day is `date` in the organisation's
    /// country's time zone.
    ///
    /// # Errors
    /// [`ServiceError::Validation`] (date, account kind), [`ServiceError::NotFound`]
    /// (organisation, account), [`ServiceError::Internal`] when the day's transactions do not
    /// chain from the opening balance.
    pub fn daily(&self, principal: &Principal, date: &str, account: Option<&str>) -> Result<Reconciliation, ServiceError> {
        require(principal, &needs::READ_TRANSACTIONS)?;
        self.daily_of(&principal.org_id, principal.mode, date, account)
    }

    /// [`Transactions::daily`] of any organisation, for the operator's command line (whoever
    /// runs it holds the database, so there is no caller to check).
    ///
    /// # Errors
    /// As [`Transactions::daily`].
    pub fn daily_of(&self, org_id: &OrgId, mode: Mode, date: &str, account: Option<&str>) -> Result<Reconciliation, ServiceError> {
        let date = time::Date::parse(date, time::macros::format_description!("[year]-[month]-[day]"))
            .map_err(|_| ServiceError::field("date", "invalid_value", "date must be a calendar date, YYYY-MM-DD"))?;
        Reporting::report(self.core.store(), |tx| {
            let org = tx.org(org_id)?.ok_or(ServiceError::NotFound)?;
            let country = self.core.country(&org.country)?;
            let (from, to) = local_day(country, date);
            let account = report_account(tx, org_id, mode, account)?;
            // The day starts right after the account's last posting before it (whose balance opens
            // the day) and ends with its last posting before the next day.
            let opening = tx.last_posting_before(&account.id, from)?.map_or(MinorUnit::ZERO, |l| l.posting.balance_after);
            let mut totals = DayTotals::new(opening);
            let (mut cursor, up_to) = run_of(tx, &account, Some(from), Some(to))?;
            while up_to != Some(0) {
                let q = PostingQuery { cursor, up_to, ..PostingQuery::oldest_first(account.id.clone(), 10_000) };
                let lines = tx.account_postings(&q)?;
                let more = lines.len() == q.limit;
                cursor = lines.last().map(|l| l.seq);
                for line in lines {
                    totals.add(&transaction(&account, line)?).map_err(|e| {
                        ServiceError::Internal(format!("the transactions of account {} on {date} do not chain: {e}", account.id))
                    })?;
                }
                if !more {
                    break;
                }
            }
            Ok(Reconciliation { date, time_zone: country.time_zone.clone(), from, to, account: account.clone(), report: totals.finish() })
        })
    }
}

/// The UTC bounds of a country's calendar day: its local noon falls in it whatever the offset.
fn local_day(country: &Country, date: time::Date) -> (Timestamp, Timestamp) {
    let noon = Timestamp::from_offset_datetime(date.with_hms(12, 0, 0).unwrap_or(date.midnight()).assume_utc());
    country.local_day(noon.plus_seconds(i64::from(country.utc_offset_minutes).saturating_mul(-60)))
}

/// The run of an account's history posted in `[from, to)`, as `seq` bounds (after `cursor`, at
/// most `up_to`): an account's postings are in time order, so the run is unbroken, and reading it
/// by `seq` keeps to the account's index however long the history before it. `up_to` is
/// `Some(0)` when nothing was posted before `to`.
fn run_of(
    tx: &mut (impl LedgerRepo + ?Sized),
    account: &Account,
    from: Option<Timestamp>,
    to: Option<Timestamp>,
) -> Result<(Option<i64>, Option<i64>), ServiceError> {
    let cursor = match from {
        Some(from) => tx.last_posting_before(&account.id, from)?.map(|l| l.seq),
        None => None,
    };
    let up_to = match to {
        Some(to) => Some(tx.last_posting_before(&account.id, to)?.map_or(0, |l| l.seq)),
        None => None,
    };
    Ok((cursor, up_to))
}

/// Whether a batch of `len` rows (the last `last`) read for `stream` stopped before the stream's
/// extent although fewer than `n` came: read on a replica that does not have them yet.
fn short_of_extent(stream: &AccountStream, len: usize, last: Option<i64>, n: usize) -> bool {
    len < n && last.or(stream.cursor) < Some(stream.up_to)
}

/// The sequence number of the account's newest posting (0 when it has none).
fn newest_seq(tx: &mut (impl LedgerRepo + ?Sized), account: &Account) -> Result<i64, ServiceError> {
    let q = PostingQuery { newest_first: true, ..PostingQuery::oldest_first(account.id.clone(), 1) };
    Ok(tx.account_postings(&q)?.first().map_or(0, |l| l.seq))
}

/// The transaction of a posting on one of the organisation's accounts.
fn transaction(account: &Account, line: StatementLine) -> Result<Transaction, ServiceError> {
    Ok(Transaction::of_posting(line.seq, line.posting, account.kind, account.currency)?)
}

/// The organisation's accounts that an `account` parameter names: every one when absent, the one
/// of a kind (`collection`, …), or one by `acc_` id.
fn accounts(tx: &mut (impl LedgerRepo + ?Sized), org_id: &OrgId, mode: Mode, account: Option<&str>) -> Result<Vec<Account>, ServiceError> {
    let own = tx.org_accounts(org_id, mode)?;
    let Some(name) = account else { return Ok(own) };
    if name.starts_with("acc_") {
        return own.into_iter().find(|a| a.id.as_str() == name).map(|a| vec![a]).ok_or(ServiceError::NotFound);
    }
    let kind = name
        .parse::<AccountKind>()
        .ok()
        .filter(|k| matches!(k, AccountKind::Collection | AccountKind::Payout | AccountKind::AgentFloat))
        .ok_or_else(|| ServiceError::field("account", "invalid_value", "account must be collection, payout, agent_float or an acc_ id"))?;
    own.into_iter().find(|a| a.kind == kind).map(|a| vec![a]).ok_or(ServiceError::NotFound)
}

/// The account a report is about: the named one, else `collection`, else the only one.
fn report_account(tx: &mut (impl LedgerRepo + ?Sized), org_id: &OrgId, mode: Mode, account: Option<&str>) -> Result<Account, ServiceError> {
    let own = accounts(tx, org_id, mode, account)?;
    if account.is_none() && own.len() > 1 {
        return own.into_iter().find(|a| a.kind == AccountKind::Collection).ok_or(ServiceError::NotFound);
    }
    own.into_iter().next().ok_or(ServiceError::NotFound)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_local_day_is_the_countrys_calendar_day() {
        let kenya = malipo_countries::Countries::builtin().unwrap();
        let ke = kenya.get("KE").unwrap();
        let date = time::macros::date!(2026 - 11 - 24);
        let (from, to) = local_day(ke, date);
        assert_eq!(from.to_rfc3339(), "2026-11-23T21:00:00Z");
        assert_eq!(to.to_rfc3339(), "2026-11-24T21:00:00Z");
    }

    #[test]
    fn a_short_batch_before_the_exports_extent_is_stale() {
        let account = Account::open(None, Mode::Test, AccountKind::Collection, malipo_core::Currency::KES, None, Timestamp::from_micros(0));
        let stream = AccountStream { account, buffered: VecDeque::new(), cursor: Some(10), up_to: 20, done: false };
        assert!(!short_of_extent(&stream, 5, Some(15), 5), "a full batch: more may follow");
        assert!(!short_of_extent(&stream, 2, Some(20), 5), "reached the extent");
        assert!(short_of_extent(&stream, 2, Some(17), 5), "rows up to 20 exist: the reader is behind");
        assert!(short_of_extent(&stream, 0, None, 5), "nothing after the cursor, though the extent is further");
        let at_end = AccountStream { cursor: Some(20), ..stream };
        assert!(!short_of_extent(&at_end, 0, None, 5));
    }
}
