//! Transactions as an organisation sees them, and the daily reconciliation of one account:
//! opening and closing balance, credits, debits, fees, totals by type and the checksum.

use std::collections::BTreeMap;

use malipo_core::{AccountId, Currency, MinorUnit, Timestamp, TransactionId};
use sha2::{Digest, Sha256};

use crate::account::AccountKind;
use crate::journal::{JournalKind, LedgerError, Posting};

/// The transaction types of the API, in the order reports list them.
pub const TRANSACTION_TYPES: [&str; 9] =
    ["charge", "payout", "reversal", "transfer", "payment_request", "cash_in", "cash_out", "p2p", "fee"];

/// The API's transaction type of a journal kind: the operator funding an account is shown as a
/// `transfer` (into the account, from the operator's issuance account); the other kinds by name.
pub fn transaction_type(kind: JournalKind) -> &'static str {
    match kind {
        JournalKind::Funding => "transfer",
        other => other.as_str(),
    }
}

/// The journal kinds a transaction type stands for (none for a name that is not a type).
pub fn kinds_of_type(name: &str) -> Vec<JournalKind> {
    JournalKind::ALL.into_iter().filter(|k| transaction_type(*k) == name && *k != JournalKind::SandboxFunding).collect()
}

/// One posting on one of an organisation's accounts, as a transaction of the API.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transaction {
    /// The posting's place in ledger order (cursors).
    pub seq: i64,
    /// The journal (`tx_…`).
    pub id: TransactionId,
    /// What the journal records.
    pub kind: JournalKind,
    /// The object that caused it (`ch_…`, `po_…`, …).
    pub source_ref: String,
    /// The account.
    pub account: AccountId,
    /// The account's kind (`collection`, `payout`, `agent_float`).
    pub account_kind: AccountKind,
    /// Signed from the account's side: `net + fee`.
    pub amount: MinorUnit,
    /// What the organisation paid on it (negative when a fee came back or was earned).
    pub fee: MinorUnit,
    /// What the balance moved by.
    pub net: MinorUnit,
    /// The account's currency.
    pub currency: Currency,
    /// The account's ledger balance right after it.
    pub balance_after: MinorUnit,
    /// When posted.
    pub created_at: Timestamp,
}

impl Transaction {
    /// The transaction of a posting on an account of the given kind and currency.
    ///
    /// # Errors
    /// [`LedgerError::Overflow`].
    pub fn of_posting(seq: i64, posting: Posting, account_kind: AccountKind, currency: Currency) -> Result<Self, LedgerError> {
        Ok(Transaction {
            seq,
            amount: posting.amount.checked_add(posting.fee)?,
            fee: posting.fee,
            net: posting.amount,
            id: posting.journal_id,
            kind: posting.kind,
            source_ref: posting.source_ref,
            account: posting.account,
            account_kind,
            currency,
            balance_after: posting.balance_after,
            created_at: posting.created_at,
        })
    }

    /// The API's type name.
    pub fn type_name(&self) -> &'static str {
        transaction_type(self.kind)
    }

    /// The checksum's line for this transaction: `{transaction_id},{net}\n`, `net` as in the API.
    pub fn checksum_line(&self) -> String {
        format!("{},{}\n", self.id, self.currency.format_amount(self.net))
    }
}

/// Count and sums of one transaction type in a day.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TypeTotals {
    /// How many.
    pub count: u64,
    /// Sum of `amount`.
    pub amount: MinorUnit,
    /// Sum of `fee`.
    pub fee: MinorUnit,
    /// Sum of `net`.
    pub net: MinorUnit,
}

/// The daily reconciliation of one account.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DayReport {
    /// Balance before the day's first transaction.
    pub opening: MinorUnit,
    /// Sum of the positive `net`s.
    pub credits: MinorUnit,
    /// Sum of the negative `net`s, as a positive amount.
    pub debits: MinorUnit,
    /// Sum of the `fee`s (already inside `net`).
    pub fees: MinorUnit,
    /// `opening + credits - debits`, which is the day's last `balance_after`.
    pub closing: MinorUnit,
    /// How many transactions.
    pub count: u64,
    /// Totals of every type of [`TRANSACTION_TYPES`] (zero when none).
    pub by_type: BTreeMap<&'static str, TypeTotals>,
    /// Lowercase hex SHA-256 of the day's checksum lines in ledger order.
    pub checksum: String,
}

/// Adds a day's transactions up, in ledger order.
#[derive(Clone, Debug)]
pub struct DayTotals {
    report: DayReport,
    hasher: Sha256,
}

impl DayTotals {
    /// A day that opens at `opening`.
    pub fn new(opening: MinorUnit) -> Self {
        let by_type = TRANSACTION_TYPES.into_iter().map(|t| (t, TypeTotals::default())).collect();
        DayTotals {
            report: DayReport {
                opening,
                credits: MinorUnit::ZERO,
                debits: MinorUnit::ZERO,
                fees: MinorUnit::ZERO,
                closing: opening,
                count: 0,
                by_type,
                checksum: String::new(),
            },
            hasher: Sha256::new(),
        }
    }

    /// Adds the next transaction in ledger order.
    ///
    /// # Errors
    /// [`LedgerError::Overflow`]; [`LedgerError::Unbalanced`] when the transaction's
    /// `balance_after` is not the running balance plus its `net` (a gap in the day's
    /// transactions or a stored balance that disagrees with its postings).
    pub fn add(&mut self, t: &Transaction) -> Result<(), LedgerError> {
        let r = &mut self.report;
        let expected = r.closing.checked_add(t.net)?;
        if expected != t.balance_after {
            return Err(LedgerError::Unbalanced(t.balance_after.checked_sub(expected)?.get()));
        }
        if t.net.is_positive() {
            r.credits = r.credits.checked_add(t.net)?;
        } else {
            r.debits = r.debits.checked_sub(t.net)?;
        }
        r.fees = r.fees.checked_add(t.fee)?;
        r.closing = expected;
        r.count = r.count.saturating_add(1);
        let totals = r.by_type.entry(t.type_name()).or_default();
        totals.count = totals.count.saturating_add(1);
        totals.amount = totals.amount.checked_add(t.amount)?;
        totals.fee = totals.fee.checked_add(t.fee)?;
        totals.net = totals.net.checked_add(t.net)?;
        self.hasher.update(t.checksum_line().as_bytes());
        Ok(())
    }

    /// The report.
    pub fn finish(self) -> DayReport {
        DayReport { checksum: hex::encode(self.hasher.finalize()), ..self.report }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn tx(id: &str, kind: JournalKind, net: i64, fee: i64, after: i64) -> Transaction {
        Transaction {
            seq: 1,
            id: TransactionId::from_trusted(id.into()),
            kind,
            source_ref: "ch_x".into(),
            account: AccountId::from_trusted("acc_x".into()),
            account_kind: AccountKind::Collection,
            amount: MinorUnit::new(net + fee),
            fee: MinorUnit::new(fee),
            net: MinorUnit::new(net),
            currency: Currency::KES,
            balance_after: MinorUnit::new(after),
            created_at: Timestamp::from_micros(0),
        }
    }

    #[test]
    fn an_empty_day_opens_and_closes_alike_with_the_empty_checksum() {
        let r = DayTotals::new(MinorUnit::new(500)).finish();
        assert_eq!((r.opening, r.closing, r.count), (MinorUnit::new(500), MinorUnit::new(500), 0));
        assert_eq!(r.checksum, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        assert_eq!(r.by_type.len(), 9);
        assert!(r.by_type.values().all(|t| *t == TypeTotals::default()));
    }

    #[test]
    fn a_day_adds_up_and_hashes_its_lines_in_order() {
        let mut d = DayTotals::new(MinorUnit::new(1_000));
        let lines = [
            tx("tx_a", JournalKind::Charge, 24_750, 250, 25_750),
            tx("tx_b", JournalKind::Payout, -5_100, 100, 20_650),
            tx("tx_c", JournalKind::Reversal, -9_900, -100, 10_750),
            tx("tx_d", JournalKind::Funding, 250, 0, 11_000),
        ];
        for t in &lines {
            d.add(t).unwrap();
        }
        let r = d.finish();
        assert_eq!((r.credits.get(), r.debits.get(), r.fees.get(), r.closing.get()), (25_000, 15_000, 250, 11_000));
        assert_eq!(r.closing.get(), r.opening.get() + r.credits.get() - r.debits.get());
        assert_eq!(r.count, 4);
        assert_eq!(
            r.by_type["transfer"],
            TypeTotals { count: 1, amount: MinorUnit::new(250), fee: MinorUnit::ZERO, net: MinorUnit::new(250) }
        );
        assert_eq!(r.by_type["reversal"].fee.get(), -100);
        let text = "tx_a,247.50\ntx_b,-51.00\ntx_c,-99.00\ntx_d,2.50\n";
        assert_eq!(r.checksum, hex::encode(Sha256::digest(text.as_bytes())));
    }

    #[test]
    fn a_gap_in_the_running_balance_is_refused() {
        let mut d = DayTotals::new(MinorUnit::new(1_000));
        assert!(matches!(d.add(&tx("tx_a", JournalKind::Charge, 100, 0, 1_200)), Err(LedgerError::Unbalanced(100))));
    }

    #[test]
    fn types_name_kinds() {
        assert_eq!(kinds_of_type("transfer"), vec![JournalKind::Transfer, JournalKind::Funding]);
        assert_eq!(kinds_of_type("charge"), vec![JournalKind::Charge]);
        assert!(kinds_of_type("funding").is_empty());
        assert!(kinds_of_type("sandbox_funding").is_empty());
        for t in TRANSACTION_TYPES {
            assert!(!kinds_of_type(t).is_empty(), "{t}");
        }
    }
}
