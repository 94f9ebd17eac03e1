//! The wire shapes of the Transactions group (contract section 7).

use std::collections::BTreeMap;

use malipo_ledger::{Transaction, TypeTotals};
use malipo_service::Reconciliation;
use serde::Serialize;
use serde_json::value::RawValue;
use utoipa::ToSchema;

use crate::wire::{money, time};

/// One ledger journal entry as the organisation sees it, on one of its accounts.
#[derive(Debug, Serialize, ToSchema)]
pub struct TransactionDto {
    /// `tx_…`: the journal (a transfer's appears on both accounts).
    pub transaction_id: String,
    /// `charge`, `payout`, `reversal`, `transfer`, `payment_request`, `cash_in`, `cash_out`, `p2p` or `fee`.
    #[serde(rename = "type")]
    #[schema(pattern = "^(charge|payout|reversal|transfer|payment_request|cash_in|cash_out|p2p|fee)$")]
    pub kind: &'static str,
    /// The charge, payout, reversal, payment request, cash-in/out or transfer that caused it.
    pub source_ref: String,
    /// The account's kind: `collection`, `payout` or `agent_float`.
    pub account: &'static str,
    /// Signed from the account's side (money in positive, out negative): `net + fee`.
    #[schema(value_type = f64, example = 250.00)]
    pub amount: Box<RawValue>,
    /// What the organisation paid on it (negative when a fee share came back or a commission was earned).
    #[schema(value_type = f64, example = 2.50)]
    pub fee: Box<RawValue>,
    /// What the balance moved by: `amount - fee`.
    #[schema(value_type = f64, example = 247.50)]
    pub net: Box<RawValue>,
    /// ISO 4217.
    pub currency: String,
    /// The account's ledger balance right after it.
    #[schema(value_type = f64, example = 10247.50)]
    pub balance_after: Box<RawValue>,
    /// RFC 3339 UTC.
    pub created_at: String,
}

impl From<&Transaction> for TransactionDto {
    fn from(t: &Transaction) -> Self {
        let c = t.currency;
        TransactionDto {
            transaction_id: t.id.to_string(),
            kind: t.type_name(),
            source_ref: t.source_ref.clone(),
            account: t.account_kind.as_str(),
            amount: money(t.amount, c),
            fee: money(t.fee, c),
            net: money(t.net, c),
            currency: c.to_string(),
            balance_after: money(t.balance_after, c),
            created_at: time(t.created_at),
        }
    }
}

/// Count and sums of one transaction type in the day.
#[derive(Debug, Serialize, ToSchema)]
pub struct TypeTotalsDto {
    /// How many.
    pub count: u64,
    /// Sum of `amount`.
    #[schema(value_type = f64)]
    pub amount: Box<RawValue>,
    /// Sum of `fee`.
    #[schema(value_type = f64)]
    pub fee: Box<RawValue>,
    /// Sum of `net`.
    #[schema(value_type = f64)]
    pub net: Box<RawValue>,
}

/// The daily reconciliation of one account (`GET /reconciliation/daily`, `malipo recon`).
#[derive(Debug, Serialize, ToSchema)]
pub struct ReconciliationDto {
    /// The local calendar day, `YYYY-MM-DD`.
    pub date: String,
    /// The organisation's country's time zone, e.g. `Africa/Nairobi`.
    pub time_zone: String,
    /// The day's first instant (UTC, inclusive).
    pub from: String,
    /// The next day's first instant (UTC, exclusive).
    pub to: String,
    /// The account's kind.
    pub account: &'static str,
    /// ISO 4217.
    pub currency: String,
    /// Balance before the day's first transaction.
    #[schema(value_type = f64)]
    pub opening_balance: Box<RawValue>,
    /// Sum of the positive `net`s.
    #[schema(value_type = f64)]
    pub credits: Box<RawValue>,
    /// Sum of the negative `net`s, as a positive number.
    #[schema(value_type = f64)]
    pub debits: Box<RawValue>,
    /// Sum of the `fee`s (already inside `net`).
    #[schema(value_type = f64)]
    pub fees: Box<RawValue>,
    /// `opening_balance + credits - debits`: the day's last `balance_after`.
    #[schema(value_type = f64)]
    pub closing_balance: Box<RawValue>,
    /// How many transactions.
    pub transaction_count: u64,
    /// Count and sums of every transaction type (zero when none).
    pub by_type: BTreeMap<&'static str, TypeTotalsDto>,
    /// Lowercase hex SHA-256 of the day's transactions in ledger order, each `{transaction_id},{net}\n`.
    #[schema(pattern = "^[0-9a-f]{64}$")]
    pub checksum: String,
}

impl From<&Reconciliation> for ReconciliationDto {
    fn from(r: &Reconciliation) -> Self {
        let c = r.account.currency;
        let totals =
            |t: &TypeTotals| TypeTotalsDto { count: t.count, amount: money(t.amount, c), fee: money(t.fee, c), net: money(t.net, c) };
        let d = &r.report;
        ReconciliationDto {
            date: format!("{:04}-{:02}-{:02}", r.date.year(), u8::from(r.date.month()), r.date.day()),
            time_zone: r.time_zone.clone(),
            from: time(r.from),
            to: time(r.to),
            account: r.account.kind.as_str(),
            currency: c.to_string(),
            opening_balance: money(d.opening, c),
            credits: money(d.credits, c),
            debits: money(d.debits, c),
            fees: money(d.fees, c),
            closing_balance: money(d.closing, c),
            transaction_count: d.count,
            by_type: d.by_type.iter().map(|(k, t)| (*k, totals(t))).collect(),
            checksum: d.checksum.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use malipo_core::{AccountId, Currency, MinorUnit, TransactionId};
    use malipo_ledger::{AccountKind, JournalKind};

    use crate::testing::at;

    #[test]
    fn a_transaction_renders_the_contracts_fields_in_order() {
        let t = Transaction {
            seq: 3,
            id: TransactionId::from_trusted("tx_1".into()),
            kind: JournalKind::Charge,
            source_ref: "ch_1".into(),
            account: AccountId::from_trusted("acc_1".into()),
            account_kind: AccountKind::Collection,
            amount: MinorUnit::new(25_000),
            fee: MinorUnit::new(250),
            net: MinorUnit::new(24_750),
            currency: Currency::KES,
            balance_after: MinorUnit::new(124_750),
            created_at: at(0),
        };
        assert_eq!(
            serde_json::to_string(&TransactionDto::from(&t)).unwrap(),
            r#"{"transaction_id":"tx_1","type":"charge","source_ref":"ch_1","account":"collection","amount":250.00,"fee":2.50,"net":247.50,"currency":"KES","balance_after":1247.50,"created_at":"2025-11-22T10:00:00Z"}"#
        );
    }
}
