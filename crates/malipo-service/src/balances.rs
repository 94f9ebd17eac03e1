//! Balances, accounts, operator funding and ledger verification.

use malipo_auth::Principal;
use malipo_core::{MinorUnit, Mode, OrgId, Timestamp, TransactionId};
use malipo_ledger::{Account, AccountKind, Journal, JournalKind, JournalLine, Violation};

use crate::error::ServiceError;
use crate::platform::Platform;
use crate::ports::{read, write, AccountKey};

/// An account with what is on its way into it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Balance {
    /// The account (balance and held).
    pub account: Account,
    /// Authorised but not yet completed into this account.
    pub pending: MinorUnit,
    /// When read.
    pub as_of: Timestamp,
}

impl Platform {
    /// The principal's account of a kind.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`] when the organisation has no such account.
    pub fn balance(&self, principal: &Principal, kind: AccountKind) -> Result<Balance, ServiceError> {
        let key = AccountKey::Org { org_id: principal.org_id.clone(), mode: principal.mode, kind };
        let as_of = self.clock.now();
        read(self.store(), |tx| {
            let account = tx.find_account(&key)?.ok_or(ServiceError::NotFound)?;
            let pending = if kind == AccountKind::Collection { tx.pending_credits(&account.id)? } else { MinorUnit::ZERO };
            Ok(Balance { account, pending, as_of })
        })
    }

    /// All of the principal's accounts in its mode.
    ///
    /// # Errors
    /// Storage failures.
    pub fn accounts(&self, principal: &Principal) -> Result<Vec<Balance>, ServiceError> {
        let as_of = self.clock.now();
        read(self.store(), |tx| {
            let accounts = tx.org_accounts(&principal.org_id, principal.mode)?;
            let mut out = Vec::with_capacity(accounts.len());
            for account in accounts {
                let pending = if account.kind == AccountKind::Collection { tx.pending_credits(&account.id)? } else { MinorUnit::ZERO };
                out.push(Balance { account, pending, as_of });
            }
            Ok(out)
        })
    }

    /// Funds an agent's float or a merchant's payout account from the operator's e-money
    /// issuance account: one balanced journal.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`] (organisation), [`ServiceError::Validation`] (amount, or a kind
    /// with nothing to fund).
    pub fn fund_account(&self, org_id: &OrgId, mode: Mode, amount: &str) -> Result<TransactionId, ServiceError> {
        let now = self.clock.now();
        write(self.store(), |tx| {
            let org = tx.org(org_id)?.ok_or(ServiceError::NotFound)?;
            let kind = match org.kind {
                malipo_auth::OrgKind::Agent => AccountKind::AgentFloat,
                malipo_auth::OrgKind::Merchant => AccountKind::Payout,
                other => return Err(ServiceError::field("org", "invalid_value", format!("a {other} organisation has no account to fund"))),
            };
            let target = tx.find_account(&AccountKey::Org { org_id: org.id.clone(), mode, kind })?.ok_or(ServiceError::NotFound)?;
            let amount =
                target.currency.parse_amount(amount).map_err(|e| ServiceError::field("amount", "invalid_amount", format!("amount {e}")))?;
            let issuance = self.system_account(tx, mode, target.currency, AccountKind::Issuance)?;
            let journal = Journal::new(
                mode,
                target.currency,
                JournalKind::Funding,
                org.id.as_str(),
                vec![JournalLine { account: issuance, amount: MinorUnit::new(-amount.get()) }, JournalLine { account: target.id, amount }],
                now,
            )?;
            tx.post_journal(&journal)?;
            Ok(journal.id)
        })
    }

    /// Checks every ledger invariant (of one mode, or both).
    ///
    /// # Errors
    /// Storage failures.
    pub fn verify_ledger(&self, mode: Option<Mode>) -> Result<Vec<Violation>, ServiceError> {
        let snapshot = read(self.store(), |tx| Ok(tx.ledger_snapshot(mode)?))?;
        Ok(malipo_ledger::verify(&snapshot))
    }
}
