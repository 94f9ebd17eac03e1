//! Transactions and daily reconciliation (contract section 7): the ledger as the merchant sees
//! it, the CSV export streamed to any writer, and a day's report checked against the export.

use std::collections::BTreeMap;

use rust_decimal::Decimal;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use time::OffsetDateTime;
use tokio::io::{AsyncWrite, AsyncWriteExt};

use crate::client::Call;
use crate::operations as ops;
use crate::{Client, Error, List};

crate::names::names! {
    /// What moved the money: a transaction's or a statement line's `type`.
    TransactionKind {
        Charge = "charge": "a charge.",
        Payout = "payout": "a payout.",
        Reversal = "reversal": "a reversal.",
        Transfer = "transfer": "a transfer between the organisation's own accounts.",
        PaymentRequest = "payment_request": "a paid payment request.",
        CashIn = "cash_in": "an agent's cash-in.",
        CashOut = "cash_out": "an agent's cash-out.",
        P2p = "p2p": "wallet to wallet.",
        Fee = "fee": "a fee.",
        SandboxFunding = "sandbox_funding": "a test wallet funded (statements of test wallets).",
    }
}

crate::names::names! {
    /// An account's kind as the API writes it in answers (`GET /accounts`, a transaction's
    /// `account`, a transfer's `from` and `to`).
    AccountType {
        Collection = "collection": "where charges land.",
        Payout = "payout": "what payouts are paid from.",
        AgentFloat = "agent_float": "an agent's float.",
    }
}

/// One balanced ledger entry on one of the merchant's accounts.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[non_exhaustive]
pub struct Transaction {
    /// Its id, `tx_…`.
    pub transaction_id: String,
    /// What moved the money.
    #[serde(rename = "type")]
    pub kind: TransactionKind,
    /// The object that caused it (a charge, payout, reversal, ...).
    pub source_ref: String,
    /// The account's kind.
    pub account: AccountType,
    /// Signed from the account's side: money in positive.
    #[serde(with = "crate::amount")]
    pub amount: Decimal,
    /// What the merchant paid on it.
    #[serde(with = "crate::amount")]
    pub fee: Decimal,
    /// `amount - fee`: what the balance moved by.
    #[serde(with = "crate::amount")]
    pub net: Decimal,
    /// The currency (ISO 4217).
    pub currency: String,
    /// The account's balance after it.
    #[serde(with = "crate::amount")]
    pub balance_after: Decimal,
    /// RFC 3339, UTC.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

/// Which transactions a list or an export holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TransactionFilter {
    /// At or after (RFC 3339).
    pub from: Option<String>,
    /// Before (RFC 3339).
    pub to: Option<String>,
    /// Only this type (lists only).
    pub kind: Option<String>,
    /// One account: a kind (`collection`, `payout`) or an `acc_` id.
    pub account: Option<String>,
}

impl TransactionFilter {
    /// Only the account `account` (a kind or an `acc_` id).
    pub fn account(mut self, account: impl Into<String>) -> Self {
        self.account = Some(account.into());
        self
    }

    /// Within `[from, to)`: RFC 3339 text or [`OffsetDateTime`]s.
    pub fn between(mut self, from: impl TimeBound, to: impl TimeBound) -> Self {
        self.from = Some(from.rfc3339());
        self.to = Some(to.rfc3339());
        self
    }
}

/// A bound of a time range in a query: RFC 3339 text, or an [`OffsetDateTime`].
pub trait TimeBound {
    /// The bound as RFC 3339 text.
    fn rfc3339(self) -> String;
}

impl TimeBound for String {
    fn rfc3339(self) -> String {
        self
    }
}

impl TimeBound for &str {
    fn rfc3339(self) -> String {
        self.to_owned()
    }
}

impl TimeBound for OffsetDateTime {
    fn rfc3339(self) -> String {
        self.format(&time::format_description::well_known::Rfc3339).unwrap_or_else(|_| self.to_string())
    }
}

impl TimeBound for &OffsetDateTime {
    fn rfc3339(self) -> String {
        (*self).rfc3339()
    }
}

/// One type's totals in a [`DailyReport`].
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[non_exhaustive]
pub struct TypeTotals {
    /// How many.
    pub count: u64,
    /// Their amounts.
    #[serde(with = "crate::amount")]
    pub amount: Decimal,
    /// Their fees.
    #[serde(with = "crate::amount")]
    pub fee: Decimal,
    /// Their nets.
    #[serde(with = "crate::amount")]
    pub net: Decimal,
}

/// A day's reconciliation of one account (`GET /reconciliation/daily`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[non_exhaustive]
pub struct DailyReport {
    /// The local calendar day, `YYYY-MM-DD`.
    pub date: String,
    /// The organisation's country's time zone.
    pub time_zone: String,
    /// The day's start (RFC 3339, UTC).
    #[serde(with = "time::serde::rfc3339")]
    pub from: OffsetDateTime,
    /// The next day's start (RFC 3339, UTC): the day is `[from, to)`.
    #[serde(with = "time::serde::rfc3339")]
    pub to: OffsetDateTime,
    /// The account.
    pub account: String,
    /// The currency (ISO 4217).
    pub currency: String,
    /// The balance before the day's first transaction.
    #[serde(with = "crate::amount")]
    pub opening_balance: Decimal,
    /// The sum of the positive nets.
    #[serde(with = "crate::amount")]
    pub credits: Decimal,
    /// The sum of the negative nets, as a positive number.
    #[serde(with = "crate::amount")]
    pub debits: Decimal,
    /// The sum of the fees.
    #[serde(with = "crate::amount")]
    pub fees: Decimal,
    /// `opening_balance + credits - debits`.
    #[serde(with = "crate::amount")]
    pub closing_balance: Decimal,
    /// How many transactions.
    pub transaction_count: u64,
    /// Totals by type.
    pub by_type: BTreeMap<String, TypeTotals>,
    /// Lowercase hex SHA-256 of the day's `{transaction_id},{net}\n` lines in ledger order.
    pub checksum: String,
}

/// A day's report checked against the day's export ([`Transactions::reconcile`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Reconciliation {
    /// The report as the API answered it.
    pub report: DailyReport,
    /// The checksum recomputed from the export.
    pub checksum: String,
    /// How many transactions the export holds.
    pub transaction_count: u64,
    /// Every way the export and the report disagree (empty: they agree).
    pub differences: Vec<String>,
}

impl Reconciliation {
    /// Whether the export and the report agree.
    pub fn agrees(&self) -> bool {
        self.differences.is_empty()
    }
}

/// The merchant's transactions: `client.transactions()`.
#[derive(Debug, Clone, Copy)]
pub struct Transactions<'a> {
    pub(crate) client: &'a Client,
}

impl Transactions<'_> {
    /// The transactions, newest first (`listTransactions`).
    pub fn list(&self, filter: TransactionFilter) -> List<Transaction> {
        let call = Call::to(ops::LIST_TRANSACTIONS, &[])
            .query("from", filter.from)
            .query("to", filter.to)
            .query("type", filter.kind)
            .query("account", filter.account);
        List::new(self.client, call)
    }

    /// One transaction (`getTransaction`).
    ///
    /// # Errors
    /// As every call ([`Error`]); `not_found`.
    pub async fn get(&self, transaction_id: &str) -> Result<Transaction, Error> {
        self.client.json(&Call::to(ops::GET_TRANSACTION, &[transaction_id])).await
    }

    /// Streams the CSV export (`exportTransactions`: a header row, then every transaction in
    /// ledger order) into `out` as it arrives, never holding it whole; the bytes written. The
    /// call is retried as any other until its answer starts; a failure after that ends it.
    ///
    /// # Errors
    /// As every call; [`Error::Transport`] when the body is cut short, [`Error::Io`] when `out`
    /// fails.
    pub async fn export<W: AsyncWrite + Unpin + ?Sized>(&self, filter: &TransactionFilter, out: &mut W) -> Result<u64, Error> {
        let call = Call::to(ops::EXPORT_TRANSACTIONS, &[])
            .query("from", filter.from.as_deref())
            .query("to", filter.to.as_deref())
            .query("account", filter.account.as_deref());
        let mut answer = self.client.send(&call).await?;
        let mut written = 0_u64;
        while let Some(chunk) = answer.chunk().await.map_err(Error::transport)? {
            out.write_all(&chunk).await.map_err(Error::io)?;
            written += chunk.len() as u64;
        }
        out.flush().await.map_err(Error::io)?;
        Ok(written)
    }

    /// The daily reconciliation of `account` (default `collection`) for the local day `date`
    /// (`YYYY-MM-DD`; `getDailyReconciliation`).
    ///
    /// # Errors
    /// As every call ([`Error`]).
    pub async fn daily(&self, date: &str, account: Option<&str>) -> Result<DailyReport, Error> {
        self.client.json(&Call::to(ops::GET_DAILY_RECONCILIATION, &[]).query("date", Some(date)).query("account", account)).await
    }

    /// [`Transactions::reconcile`] of the organisation's today ([`Transactions::today`]).
    ///
    /// # Errors
    /// As [`Transactions::today`] and [`Transactions::reconcile`].
    pub async fn reconcile_today(&self, account: Option<&str>) -> Result<Reconciliation, Error> {
        let today = self.today().await?;
        self.reconcile(&iso_date(today), account).await
    }

    /// The organisation's calendar day now: the `date` of today's report, whatever the hour
    /// and wherever the caller's clock is (the organisation's country from
    /// `getOrganisation`, its UTC offset from `listCountries`). A day before it,
    /// `today.previous_day()`, is the last finished one.
    ///
    /// # Errors
    /// As every call; [`Error::Decode`] when the API lists no such country.
    pub async fn today(&self) -> Result<time::Date, Error> {
        let org = self.client.accounts().organisation().await?;
        let countries = self.client.countries().list().await?;
        let offset = countries
            .iter()
            .find(|c| c.country == org.country)
            .map(|c| c.utc_offset_minutes)
            .ok_or_else(|| Error::decode(format!("the API lists no country {}", org.country)))?;
        Ok(local_date(OffsetDateTime::now_utc(), offset))
    }

    /// [`Transactions::reconcile`] of a day as `YYYY-MM-DD`.
    ///
    /// # Errors
    /// As [`Transactions::reconcile`].
    pub async fn reconcile_date(&self, date: time::Date, account: Option<&str>) -> Result<Reconciliation, Error> {
        self.reconcile(&iso_date(date), account).await
    }

    /// Fetches the report of `date` (`YYYY-MM-DD`, the organisation's calendar day: see
    /// [`Transactions::today`]) and the day's export, recomputes the checksum and the totals from
    /// the export, and says where they differ.
    ///
    /// # Errors
    /// As every call ([`Error`]); [`Error::Decode`] for an export that is not the contract's CSV.
    pub async fn reconcile(&self, date: &str, account: Option<&str>) -> Result<Reconciliation, Error> {
        let report = self.daily(date, account).await?;
        let filter = TransactionFilter::default().account(report.account.clone()).between(report.from, report.to);
        let mut csv_bytes = Vec::new();
        self.export(&filter, &mut csv_bytes).await?;
        let totals = Totals::of_export(&csv_bytes)?;
        let mut differences = Vec::new();
        let mut differ = |what: &str, report: String, export: String| {
            if report != export {
                differences.push(format!("{what}: the report says {report}, the export {export}"));
            }
        };
        differ("checksum", report.checksum.clone(), totals.checksum.clone());
        differ("transaction_count", report.transaction_count.to_string(), totals.count.to_string());
        differ("credits", report.credits.normalize().to_string(), totals.credits.normalize().to_string());
        differ("debits", report.debits.normalize().to_string(), totals.debits.normalize().to_string());
        differ("fees", report.fees.normalize().to_string(), totals.fees.normalize().to_string());
        let closing = report.opening_balance + report.credits - report.debits;
        differ("closing_balance", report.closing_balance.normalize().to_string(), closing.normalize().to_string());
        if let Some(last) = totals.last_balance {
            differ("the last balance_after", report.closing_balance.normalize().to_string(), last.normalize().to_string());
        }
        Ok(Reconciliation { report, checksum: totals.checksum, transaction_count: totals.count, differences })
    }
}

/// What an export adds up to.
struct Totals {
    checksum: String,
    count: u64,
    credits: Decimal,
    debits: Decimal,
    fees: Decimal,
    last_balance: Option<Decimal>,
}

impl Totals {
    fn of_export(bytes: &[u8]) -> Result<Totals, Error> {
        let bad = |e: &dyn std::fmt::Display| Error::decode(format!("the export: {e}"));
        let mut reader = csv::Reader::from_reader(bytes);
        let headers = reader.headers().map_err(|e| bad(&e))?.clone();
        let column = |name: &str| headers.iter().position(|h| h == name).ok_or_else(|| bad(&format!("no {name} column")));
        let (id, net, fee, balance) = (column("transaction_id")?, column("net")?, column("fee")?, column("balance_after")?);
        let mut hash = Sha256::new();
        let mut t = Totals {
            checksum: String::new(),
            count: 0,
            credits: Decimal::ZERO,
            debits: Decimal::ZERO,
            fees: Decimal::ZERO,
            last_balance: None,
        };
        for record in reader.records() {
            let record = record.map_err(|e| bad(&e))?;
            let field = |i: usize| record.get(i).unwrap_or_default();
            hash.update(format!("{},{}\n", field(id), field(net)).as_bytes());
            let number = |i: usize| field(i).parse::<Decimal>().map_err(|e| bad(&e));
            let n = number(net)?;
            if n.is_sign_negative() {
                t.debits -= n;
            } else {
                t.credits += n;
            }
            t.fees += number(fee)?;
            t.last_balance = Some(number(balance)?);
            t.count += 1;
        }
        t.checksum = hex::encode(hash.finalize());
        Ok(t)
    }
}

/// The calendar date at `now` in a zone `offset_minutes` from UTC.
fn local_date(now: OffsetDateTime, offset_minutes: i32) -> time::Date {
    (now + time::Duration::minutes(i64::from(offset_minutes))).date()
}

/// `YYYY-MM-DD`.
fn iso_date(date: time::Date) -> String {
    format!("{:04}-{:02}-{:02}", date.year(), u8::from(date.month()), date.day())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_organisations_day_is_its_zones_whatever_the_callers_clock() {
        let at = |s: &str| OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).unwrap();
        // 22:30 UTC is already tomorrow in Nairobi (UTC+3), still today in Accra (UTC+0).
        assert_eq!(iso_date(local_date(at("2026-11-30T22:30:00Z"), 180)), "2026-12-01");
        assert_eq!(iso_date(local_date(at("2026-11-30T22:30:00Z"), 0)), "2026-11-30");
        // 01:00 UTC is still yesterday five hours west.
        assert_eq!(iso_date(local_date(at("2026-12-01T01:00:00Z"), -300)), "2026-11-30");
        assert_eq!(iso_date(local_date(at("2026-12-31T21:00:00Z"), 180).previous_day().unwrap()), "2026-12-31");
    }

    #[test]
    fn an_exports_checksum_is_the_sha256_of_its_id_and_net_lines() {
        let csv = "transaction_id,created_at,type,source_ref,account,amount,fee,net,currency,balance_after\n\
                   tx_1,2026-11-24T08:00:00Z,charge,ch_1,collection,250.00,2.50,247.50,KES,247.50\n\
                   tx_2,2026-11-24T09:00:00Z,payout,po_1,collection,-100.00,0.00,-100.00,KES,147.50\n";
        let t = Totals::of_export(csv.as_bytes()).unwrap();
        assert_eq!(t.checksum, hex::encode(Sha256::digest(b"tx_1,247.50\ntx_2,-100.00\n")));
        assert_eq!((t.count, t.credits, t.debits, t.fees), (2, Decimal::new(24_750, 2), Decimal::new(10_000, 2), Decimal::new(250, 2)));
        assert_eq!(t.last_balance, Some(Decimal::new(14_750, 2)));
        let empty =
            Totals::of_export(b"transaction_id,created_at,type,source_ref,account,amount,fee,net,currency,balance_after\n").unwrap();
        assert_eq!(empty.checksum, hex::encode(Sha256::digest(b"")), "a day without transactions");
    }
}
