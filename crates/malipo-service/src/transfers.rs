//! Transfers between an organisation's own accounts, and account statements (contract
//! section 4).

use malipo_auth::Principal;
use malipo_core::{AccountId, Currency, MinorUnit, Mode, Timestamp, TransactionId};
use malipo_ledger::{Account, AccountKind, Journal, JournalKind, JournalLine};

use crate::agents::insufficient;
use crate::commands::CreateTransfer;
use crate::core::{org_account_id, Core};
use crate::error::ServiceError;
use crate::idempotency::{Done, Idem};
use crate::needs::{self, require};
use crate::page::{bad_cursor, Page};
use crate::ports::{PostingQuery, StatementLine};
use crate::views::{Charging, OnLedger, View};

/// A completed transfer between two of an organisation's accounts.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Transfer {
    /// The ledger transaction (the transfer's id).
    pub transaction_id: TransactionId,
    /// The account debited.
    pub from: AccountKind,
    /// The account credited.
    pub to: AccountKind,
    /// How much moved.
    pub amount: MinorUnit,
    /// Its currency.
    pub currency: Currency,
    /// Test or live.
    pub mode: Mode,
    /// When.
    pub created_at: Timestamp,
}

/// Transfers and statements.
pub struct Transfers<'a> {
    core: &'a Core,
}

impl<'a> Transfers<'a> {
    pub(crate) fn new(core: &'a Core) -> Self {
        Transfers { core }
    }

    /// Moves an amount from one of the principal's accounts (`collection`, `payout`) to
    /// another, exactly once per idempotency key.
    ///
    /// # Errors
    /// [`ServiceError::InsufficientFunds`], idempotency errors.
    pub fn transfer(&self, principal: &Principal, command: &CreateTransfer, idem: &Idem) -> Result<Done<Transfer>, ServiceError> {
        require(principal, &needs::TRANSFER)?;
        let currency = self.core.country(&principal.country)?.currency;
        let CreateTransfer { from, to, amount } = *command;
        let now = self.core.now();
        let mode = principal.mode;
        self.core.idempotent(idem, Charging, |tx| {
            let debit = org_account_id(tx, &principal.org_id, mode, from)?;
            let credit = org_account_id(tx, &principal.org_id, mode, to)?;
            let journal = Journal::new(
                mode,
                currency,
                JournalKind::Transfer,
                "",
                vec![JournalLine { account: debit, amount: amount.checked_neg()? }, JournalLine { account: credit, amount }],
                now,
            )?;
            // A transfer is its own source: its id is the ledger transaction's.
            let journal = Journal { source_ref: journal.id.to_string(), ..journal };
            // The ledger locks both accounts and refuses a debit below what is held.
            tx.post_journal(&journal).map_err(ServiceError::from).map_err(insufficient)?;
            Ok(Transfer { transaction_id: journal.id, from, to, amount, currency, mode, created_at: now })
        })
    }

    /// One of the principal's accounts and a page of its statement, oldest first: postings at
    /// or after `from` and before `to`.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`] (not the principal's account), [`ServiceError::Validation`]
    /// for a bad cursor.
    pub fn statement(
        &self,
        principal: &Principal,
        account_id: &str,
        window: (Option<Timestamp>, Option<Timestamp>),
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<(Account, Page<StatementLine>), ServiceError> {
        require(principal, &needs::READ_PAYMENTS)?;
        let id = AccountId::parse(account_id).map_err(|_| ServiceError::NotFound)?;
        let after = cursor.map(|c| c.parse::<i64>().map_err(|_| bad_cursor("cursor"))).transpose()?;
        let (account, lines) = OnLedger::report(self.core.store(), |tx| {
            let account = tx.account(&id)?.ok_or(ServiceError::NotFound)?;
            if account.org_id.as_ref() != Some(&principal.org_id) || account.mode != principal.mode {
                return Err(ServiceError::NotFound);
            }
            let (from, to) = window;
            let query = PostingQuery { cursor: after, from, to, ..PostingQuery::oldest_first(id.clone(), limit.saturating_add(1)) };
            let lines = tx.account_postings(&query)?;
            Ok((account, lines))
        })?;
        Ok((account, Page::from_fetched(lines, limit, |l| l.seq.to_string())))
    }
}

impl crate::idempotency::Subject for Transfer {
    fn subject(&self) -> (String, String) {
        (
            self.transaction_id.to_string(),
            format!("{} {} from {} to {}", self.currency, self.currency.format_amount(self.amount), self.from, self.to),
        )
    }
}
