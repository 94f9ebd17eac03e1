//! Balanced journal entries and the rules for applying them.

use std::fmt;
use std::str::FromStr;

use malipo_core::{AccountId, Currency, MinorUnit, Mode, MoneyError, Timestamp, TransactionId};

use crate::account::Account;

/// Why the ledger refused an operation.
#[derive(Debug, thiserror::Error, PartialEq, Eq, Clone)]
pub enum LedgerError {
    /// A journal needs at least two lines.
    #[error("a journal needs at least two lines")]
    TooFewLines,
    /// A line of zero moves nothing.
    #[error("journal line {0} is zero")]
    ZeroLine(usize),
    /// The lines do not sum to zero.
    #[error("journal does not balance: lines sum to {0}")]
    Unbalanced(i64),
    /// The account would go below zero (or below its reservations).
    #[error("account {0} has insufficient funds")]
    InsufficientFunds(AccountId),
    /// An account in the journal does not exist.
    #[error("account {0} does not exist")]
    UnknownAccount(AccountId),
    /// An account's currency or mode differs from the journal's.
    #[error("account {0} is in another currency or mode")]
    Mismatch(AccountId),
    /// Amounts overflowed.
    #[error("amount overflow")]
    Overflow,
    /// A reservation to release is larger than what is held.
    #[error("account {0} holds less than the release")]
    ReleaseExceedsHold(AccountId),
    /// A fee names an account that has no line in the journal.
    #[error("a fee names account {0}, which has no line in the journal")]
    FeeWithoutLine(AccountId),
}

impl From<MoneyError> for LedgerError {
    fn from(_: MoneyError) -> Self {
        LedgerError::Overflow
    }
}

/// What a journal records (the transaction `type` of the API).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum JournalKind {
    /// A completed charge.
    Charge,
    /// A payout.
    Payout,
    /// A reversal.
    Reversal,
    /// A transfer between an organisation's own accounts.
    Transfer,
    /// A paid payment request.
    PaymentRequest,
    /// Agent float to wallet.
    CashIn,
    /// Wallet to agent float.
    CashOut,
    /// Wallet to wallet.
    P2p,
    /// A fee alone.
    Fee,
    /// E-money issued into a float or payout account by the operator.
    Funding,
    /// Test money into a sandbox wallet.
    SandboxFunding,
}

impl JournalKind {
    /// Every kind.
    pub const ALL: [JournalKind; 11] = [
        JournalKind::Charge,
        JournalKind::Payout,
        JournalKind::Reversal,
        JournalKind::Transfer,
        JournalKind::PaymentRequest,
        JournalKind::CashIn,
        JournalKind::CashOut,
        JournalKind::P2p,
        JournalKind::Fee,
        JournalKind::Funding,
        JournalKind::SandboxFunding,
    ];

    /// The storage and wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            JournalKind::Charge => "charge",
            JournalKind::Payout => "payout",
            JournalKind::Reversal => "reversal",
            JournalKind::Transfer => "transfer",
            JournalKind::PaymentRequest => "payment_request",
            JournalKind::CashIn => "cash_in",
            JournalKind::CashOut => "cash_out",
            JournalKind::P2p => "p2p",
            JournalKind::Fee => "fee",
            JournalKind::Funding => "funding",
            JournalKind::SandboxFunding => "sandbox_funding",
        }
    }
}

impl fmt::Display for JournalKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for JournalKind {
    type Err = crate::account::UnknownKind;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        JournalKind::ALL.into_iter().find(|k| k.as_str() == s).ok_or_else(|| crate::account::UnknownKind(s.to_owned()))
    }
}

/// One side of a journal: `amount` is added to the account's balance (negative = money leaves).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JournalLine {
    /// The account.
    pub account: AccountId,
    /// Signed amount in the journal's currency.
    pub amount: MinorUnit,
}

/// A balanced journal entry: its lines sum to zero.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Journal {
    /// `tx_…`.
    pub id: TransactionId,
    /// The ledger it belongs to.
    pub mode: Mode,
    /// Currency of every line.
    pub currency: Currency,
    /// What it records.
    pub kind: JournalKind,
    /// The object it records (`ch_…`, `po_…`, …).
    pub source_ref: String,
    /// The lines, in order.
    pub lines: Vec<JournalLine>,
    /// What an organisation paid on this journal, per account (none when no one paid a fee).
    /// Informational: the lines already move the fee; this says whose line carried it, so that
    /// a transaction can show `amount`, `fee` and `net`. Covered by the audit chain.
    pub fees: Vec<JournalFee>,
    /// When posted.
    pub created_at: Timestamp,
}

/// The fee an account's owner paid on a journal: positive when it paid, negative when it got a
/// fee back (a reversal's fee share) or earned one (an agent's commission).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JournalFee {
    /// The account whose line carried the fee (one of the journal's lines).
    pub account: AccountId,
    /// The fee, signed.
    pub amount: MinorUnit,
}

impl Journal {
    /// Builds a journal, checking that it balances.
    ///
    /// # Errors
    /// [`LedgerError::TooFewLines`], [`LedgerError::ZeroLine`], [`LedgerError::Unbalanced`] or
    /// [`LedgerError::Overflow`].
    pub fn new(
        mode: Mode,
        currency: Currency,
        kind: JournalKind,
        source_ref: impl Into<String>,
        lines: Vec<JournalLine>,
        now: Timestamp,
    ) -> Result<Self, LedgerError> {
        let journal = Journal {
            id: TransactionId::new(),
            mode,
            currency,
            kind,
            source_ref: source_ref.into(),
            lines,
            fees: Vec::new(),
            created_at: now,
        };
        journal.check_balanced()?;
        Ok(journal)
    }

    /// Records that `account`'s owner paid `fee` on this journal. Nothing is recorded when `fee`
    /// is zero, or when the account has no line (its line was zero and dropped, so its owner
    /// has no transaction in this journal).
    #[must_use]
    pub fn with_fee(mut self, account: &AccountId, fee: MinorUnit) -> Self {
        if fee != MinorUnit::ZERO && self.lines.iter().any(|l| &l.account == account) {
            self.fees.retain(|f| &f.account != account);
            self.fees.push(JournalFee { account: account.clone(), amount: fee });
        }
        self
    }

    /// The fee recorded for an account's line (zero when none).
    pub fn fee_of(&self, account: &AccountId) -> MinorUnit {
        self.fees.iter().find(|f| &f.account == account).map_or(MinorUnit::ZERO, |f| f.amount)
    }

    /// A journal with zero lines dropped (e.g. a zero fee), checked.
    ///
    /// # Errors
    /// As [`Journal::new`].
    pub fn new_skipping_zero(
        mode: Mode,
        currency: Currency,
        kind: JournalKind,
        source_ref: impl Into<String>,
        lines: Vec<JournalLine>,
        now: Timestamp,
    ) -> Result<Self, LedgerError> {
        let lines = lines.into_iter().filter(|l| l.amount != MinorUnit::ZERO).collect();
        Journal::new(mode, currency, kind, source_ref, lines, now)
    }

    /// Checks the balancing rules.
    ///
    /// # Errors
    /// See [`Journal::new`].
    pub fn check_balanced(&self) -> Result<(), LedgerError> {
        if self.lines.len() < 2 {
            return Err(LedgerError::TooFewLines);
        }
        let mut sum = MinorUnit::ZERO;
        for (i, line) in self.lines.iter().enumerate() {
            if line.amount == MinorUnit::ZERO {
                return Err(LedgerError::ZeroLine(i));
            }
            sum = sum.checked_add(line.amount)?;
        }
        if sum != MinorUnit::ZERO {
            return Err(LedgerError::Unbalanced(sum.get()));
        }
        if let Some(f) = self.fees.iter().find(|f| !self.lines.iter().any(|l| l.account == f.account)) {
            return Err(LedgerError::FeeWithoutLine(f.account.clone()));
        }
        Ok(())
    }

    /// Applies one line to an account in memory: checks currency and mode, adds the amount, and
    /// refuses a result below the reservations of an account that may not go negative. Adapters use
    /// the same rule in SQL; the in-memory adapter uses this directly.
    ///
    /// # Errors
    /// [`LedgerError::Mismatch`], [`LedgerError::InsufficientFunds`], [`LedgerError::Overflow`].
    pub fn apply_line(&self, account: &mut Account, amount: MinorUnit) -> Result<(), LedgerError> {
        if account.currency != self.currency || account.mode != self.mode {
            return Err(LedgerError::Mismatch(account.id.clone()));
        }
        let balance = account.balance.checked_add(amount)?;
        if !account.kind.allows_negative() && balance.get() < account.held.get() {
            return Err(LedgerError::InsufficientFunds(account.id.clone()));
        }
        account.balance = balance;
        Ok(())
    }
}

/// A posting as stored: one journal line with the account's balance after it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Posting {
    /// The journal.
    pub journal_id: TransactionId,
    /// The account.
    pub account: AccountId,
    /// Signed amount.
    pub amount: MinorUnit,
    /// The fee the account's owner paid on the journal (see [`JournalFee`]), zero when none.
    pub fee: MinorUnit,
    /// The account's balance right after this posting.
    pub balance_after: MinorUnit,
    /// The journal's kind.
    pub kind: JournalKind,
    /// The journal's source object.
    pub source_ref: String,
    /// When posted.
    pub created_at: Timestamp,
}

/// Reserves `amount` of an account's available balance.
///
/// # Errors
/// [`LedgerError::InsufficientFunds`] when the available balance is smaller.
pub fn hold(account: &mut Account, amount: MinorUnit) -> Result<(), LedgerError> {
    let held = account.held.checked_add(amount)?;
    if !account.kind.allows_negative() && held.get() > account.balance.get() {
        return Err(LedgerError::InsufficientFunds(account.id.clone()));
    }
    account.held = held;
    Ok(())
}

/// Releases a reservation.
///
/// # Errors
/// [`LedgerError::ReleaseExceedsHold`] when less is held.
pub fn release(account: &mut Account, amount: MinorUnit) -> Result<(), LedgerError> {
    let held = account.held.checked_sub(amount)?;
    if held.get() < 0 {
        return Err(LedgerError::ReleaseExceedsHold(account.id.clone()));
    }
    account.held = held;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::account::AccountKind;

    fn line(a: &AccountId, v: i64) -> JournalLine {
        JournalLine { account: a.clone(), amount: MinorUnit::new(v) }
    }

    fn journal(lines: Vec<JournalLine>) -> Result<Journal, LedgerError> {
        Journal::new(Mode::Test, Currency::KES, JournalKind::Charge, "ch_x", lines, Timestamp::from_micros(0))
    }

    #[test]
    fn journals_must_balance() {
        let (a, b, c) = (AccountId::new(), AccountId::new(), AccountId::new());
        assert!(journal(vec![line(&a, -100), line(&b, 99), line(&c, 1)]).is_ok());
        assert_eq!(journal(vec![line(&a, -100), line(&b, 99)]), Err(LedgerError::Unbalanced(-1)));
        assert_eq!(journal(vec![line(&a, 0), line(&b, 0)]), Err(LedgerError::ZeroLine(0)));
        assert_eq!(journal(vec![line(&a, 5)]), Err(LedgerError::TooFewLines));
        assert_eq!(journal(vec![line(&a, i64::MAX), line(&b, 1), line(&c, -1)]), Err(LedgerError::Overflow));
    }

    #[test]
    fn zero_lines_can_be_skipped() {
        let (a, b, c) = (AccountId::new(), AccountId::new(), AccountId::new());
        let j = Journal::new_skipping_zero(
            Mode::Test,
            Currency::KES,
            JournalKind::Charge,
            "x",
            vec![line(&a, -5), line(&b, 5), line(&c, 0)],
            Timestamp::from_micros(0),
        );
        assert_eq!(j.map(|j| j.lines.len()), Ok(2));
    }

    #[test]
    fn lines_respect_holds_and_kinds() {
        let now = Timestamp::from_micros(0);
        let mut wallet = Account::open(None, Mode::Test, AccountKind::Wallet, Currency::KES, None, now);
        let mut issuance = Account::open(None, Mode::Test, AccountKind::Issuance, Currency::KES, None, now);
        let j = journal(vec![line(&issuance.id, -1000), line(&wallet.id, 1000)]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(j.apply_line(&mut issuance, MinorUnit::new(-1000)), Ok(()));
        assert_eq!(issuance.balance, MinorUnit::new(-1000), "issuance may go negative");
        assert_eq!(j.apply_line(&mut wallet, MinorUnit::new(1000)), Ok(()));
        assert_eq!(hold(&mut wallet, MinorUnit::new(600)), Ok(()));
        assert_eq!(hold(&mut wallet, MinorUnit::new(401)), Err(LedgerError::InsufficientFunds(wallet.id.clone())));
        assert_eq!(wallet.available(), MinorUnit::new(400));
        assert_eq!(
            j.apply_line(&mut wallet, MinorUnit::new(-401)),
            Err(LedgerError::InsufficientFunds(wallet.id.clone())),
            "cannot spend held money"
        );
        assert_eq!(j.apply_line(&mut wallet, MinorUnit::new(-400)), Ok(()));
        assert_eq!(release(&mut wallet, MinorUnit::new(601)), Err(LedgerError::ReleaseExceedsHold(wallet.id.clone())));
        assert_eq!(release(&mut wallet, MinorUnit::new(600)), Ok(()));
        let mut other = Account::open(None, Mode::Live, AccountKind::Wallet, Currency::KES, None, now);
        assert_eq!(j.apply_line(&mut other, MinorUnit::new(1)), Err(LedgerError::Mismatch(other.id.clone())));
    }
}
