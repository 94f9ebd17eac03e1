//! Accounts and balances, operator funding and ledger verification.

use std::collections::BTreeSet;

use malipo_auth::Principal;
use malipo_core::{AccountId, MinorUnit, Mode, OrgId, Timestamp, TransactionId};
use malipo_ledger::{Account, AccountKind, Journal, JournalKind, JournalLine, Violation};

use crate::core::{system_account, Core};
use crate::error::ServiceError;
use crate::needs::{self, require};
use crate::ports::{AccountKey, AuthRepo, LedgerRepo};
use crate::views::{OnLedger, Reporting, View};

/// An account with what is on its way into it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Balance {
    /// The account (balance and held).
    pub account: Account,
    /// Authorised but not yet completed into this account.
    pub pending: MinorUnit,
    /// When read.
    pub as_of: Timestamp,
    /// The organisation's country (ISO 3166-1 alpha-2): its day is the day of reports and limits.
    pub country: String,
    /// The country's time zone (IANA).
    pub time_zone: String,
}

/// When a balance was read, and whose day it was.
struct Day {
    as_of: Timestamp,
    country: String,
    time_zone: String,
}

impl Day {
    fn balance(&self, account: Account, pending: MinorUnit) -> Balance {
        let Day { as_of, country, time_zone } = self;
        Balance { account, pending, as_of: *as_of, country: country.clone(), time_zone: time_zone.clone() }
    }
}

/// A funding: the operator's issuance account credited an organisation's float or payout
/// account.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Funded {
    /// The ledger entry.
    pub transaction_id: TransactionId,
    /// The organisation funded.
    pub org_id: OrgId,
    /// Its account credited (agent float or payout).
    pub account: AccountKind,
    /// The mode.
    pub mode: Mode,
    /// How much.
    pub amount: MinorUnit,
    /// In what.
    pub currency: malipo_core::Currency,
}

impl crate::idempotency::Subject for Funded {
    fn subject(&self) -> (String, String) {
        let amount = self.currency.format_amount(self.amount);
        (self.transaction_id.to_string(), format!("{} {amount} into {} ({}, {})", self.currency, self.org_id, self.account, self.mode))
    }
}

/// What [`Accounts::check_ledger`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LedgerCheck {
    /// Every broken invariant (none when the ledger is sound).
    pub violations: Vec<Violation>,
    /// How many journals were checked.
    pub journals: usize,
    /// How many of them are not yet sealed into their chain: checked for balance and against
    /// the balances, but no chain entry yet proves them unedited.
    pub unsealed: usize,
}

/// An organisation's accounts and balances, operator funding, and ledger verification.
pub struct Accounts<'a> {
    core: &'a Core,
}

impl<'a> Accounts<'a> {
    pub(crate) fn new(core: &'a Core) -> Self {
        Accounts { core }
    }

    /// The principal's account of a kind.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`] when the organisation has no such account.
    pub fn balance(&self, principal: &Principal, kind: AccountKind) -> Result<Balance, ServiceError> {
        require(principal, &needs::READ_PAYMENTS)?;
        self.of_kind(principal, kind)
    }

    /// [`Accounts::balance`] for a use case that has checked its caller itself.
    pub(crate) fn of_kind(&self, principal: &Principal, kind: AccountKind) -> Result<Balance, ServiceError> {
        let key = AccountKey::Org { org_id: principal.org_id.clone(), mode: principal.mode, kind };
        let day = self.day_of(principal)?;
        OnLedger::read(self.core.store(), |tx| {
            let account = tx.find_account(&key)?.ok_or(ServiceError::NotFound)?;
            let pending = if kind == AccountKind::Collection { tx.pending_credits(&account.id)? } else { MinorUnit::ZERO };
            Ok(day.balance(account, pending))
        })
    }

    /// The moment of a read and the caller's organisation's day at it.
    fn day_of(&self, principal: &Principal) -> Result<Day, ServiceError> {
        let as_of = self.core.now();
        let country = self.core.country(&principal.country)?;
        Ok(Day { as_of, country: principal.country.clone(), time_zone: country.time_zone.clone() })
    }

    /// All of the principal's accounts in its mode.
    ///
    /// # Errors
    /// Storage failures.
    pub fn list(&self, principal: &Principal) -> Result<Vec<Balance>, ServiceError> {
        require(principal, &needs::READ_PAYMENTS)?;
        let day = self.day_of(principal)?;
        OnLedger::read(self.core.store(), |tx| {
            let accounts = tx.org_accounts(&principal.org_id, principal.mode)?;
            let mut out = Vec::with_capacity(accounts.len());
            for account in accounts {
                let pending = if account.kind == AccountKind::Collection { tx.pending_credits(&account.id)? } else { MinorUnit::ZERO };
                out.push(day.balance(account, pending));
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
    pub fn fund(&self, org_id: &OrgId, mode: Mode, amount: &str) -> Result<TransactionId, ServiceError> {
        let now = self.core.now();
        Reporting::write(self.core.store(), |tx| Ok(self.fund_in(tx, org_id, mode, amount, now)?.transaction_id))
    }

    /// [`Accounts::fund`] in `tx` (the back office runs it under a form's one-time key).
    ///
    /// # Errors
    /// As [`Accounts::fund`].
    pub(crate) fn fund_in(
        &self,
        tx: &mut (impl LedgerRepo + AuthRepo + ?Sized),
        org_id: &OrgId,
        mode: Mode,
        amount: &str,
        now: Timestamp,
    ) -> Result<Funded, ServiceError> {
        {
            let org = tx.org(org_id)?.ok_or(ServiceError::NotFound)?;
            let kind = match org.kind {
                malipo_auth::OrgKind::Agent => AccountKind::AgentFloat,
                malipo_auth::OrgKind::Merchant | malipo_auth::OrgKind::Corporate => AccountKind::Payout,
                other => return Err(ServiceError::field("org", "invalid_value", format!("a {other} organisation has no account to fund"))),
            };
            let target = tx.find_account(&AccountKey::Org { org_id: org.id.clone(), mode, kind })?.ok_or(ServiceError::NotFound)?;
            let amount =
                target.currency.parse_amount(amount).map_err(|e| ServiceError::field("amount", "invalid_amount", format!("amount {e}")))?;
            let issuance = system_account(tx, mode, target.currency, AccountKind::Issuance)?;
            let journal = Journal::new(
                mode,
                target.currency,
                JournalKind::Funding,
                org.id.as_str(),
                vec![JournalLine { account: issuance, amount: amount.checked_neg()? }, JournalLine { account: target.id, amount }],
                now,
            )?;
            tx.post_journal(&journal)?;
            Ok(Funded { transaction_id: journal.id, org_id: org.id, account: kind, mode, amount, currency: target.currency })
        }
    }

    /// Checks the part of the ledger that belongs to these organisations: their accounts (in
    /// both modes) and the wallets that paid them or were paid by them, with every journal
    /// touching those accounts. Each journal balances and keeps its own audit-chain entry; each
    /// of those accounts' balances equals its postings. Bounded by the organisations' own
    /// activity, unlike [`Accounts::verify_ledger`], which walks everything.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`] for an unknown organisation; storage failures.
    pub fn verify_org_ledger(&self, orgs: &[OrgId]) -> Result<Vec<Violation>, ServiceError> {
        Ok(self.check_org_ledger(orgs)?.violations)
    }

    /// [`Accounts::verify_org_ledger`], with how many journals were checked and are unsealed.
    ///
    /// # Errors
    /// As [`Accounts::verify_org_ledger`].
    pub fn check_org_ledger(&self, orgs: &[OrgId]) -> Result<LedgerCheck, ServiceError> {
        let part = Reporting::read(self.core.store(), |tx| {
            let mut ids: Vec<AccountId> = Vec::new();
            for org in orgs {
                tx.org(org)?.ok_or(ServiceError::NotFound)?;
                for mode in Mode::ALL {
                    ids.extend(tx.org_accounts(org, mode)?.into_iter().map(|a| a.id));
                }
            }
            let own: BTreeSet<AccountId> = ids.iter().cloned().collect();
            let counterparts: BTreeSet<AccountId> = tx
                .ledger_part(&ids)?
                .journals
                .iter()
                .flat_map(|cj| cj.journal.lines.iter().map(|l| l.account.clone()))
                .filter(|a| !own.contains(a))
                .collect();
            for id in counterparts {
                if tx.account(&id)?.is_some_and(|a| a.kind == AccountKind::Wallet) {
                    ids.push(id);
                }
            }
            Ok(tx.ledger_part(&ids)?)
        })?;
        Ok(LedgerCheck { violations: malipo_ledger::verify_part(&part), journals: part.journals.len(), unsealed: part.unsealed() })
    }

    /// Checks every ledger invariant (of one mode, or both). Journals not yet sealed are checked
    /// for everything but their chain entry (see [`crate::Sealer`]).
    ///
    /// # Errors
    /// Storage failures.
    pub fn verify_ledger(&self, mode: Option<Mode>) -> Result<Vec<Violation>, ServiceError> {
        Ok(self.check_ledger(mode)?.violations)
    }

    /// What `malipo ledger verify` and the console's "Verify now" run: seals every committed
    /// journal not yet sealed (the servers' sealers may be down, or a crash may have come
    /// between a commit and its seal) and applies the lines waiting on hot accounts, so that
    /// every journal is checked against its chain entry and every line is a posting; then checks.
    /// Returns how many journals it sealed, and the check.
    ///
    /// # Errors
    /// Storage failures.
    pub fn seal_and_check(&self, mode: Option<Mode>) -> Result<(usize, LedgerCheck), ServiceError> {
        let sealer = crate::sealer::Sealer::new(self.core);
        let sealed = sealer.seal_all()?;
        sealer.apply_waiting(usize::MAX)?;
        Ok((sealed, self.check_ledger(mode)?))
    }

    /// [`Accounts::seal_and_check`] for these organisations' part of the ledger
    /// ([`Accounts::check_org_ledger`]).
    ///
    /// # Errors
    /// Storage failures; [`ServiceError::NotFound`] for an unknown organisation.
    pub fn seal_and_check_orgs(&self, orgs: &[OrgId]) -> Result<(usize, LedgerCheck), ServiceError> {
        let sealer = crate::sealer::Sealer::new(self.core);
        let sealed = sealer.seal_all()?;
        sealer.apply_waiting(usize::MAX)?;
        Ok((sealed, self.check_org_ledger(orgs)?))
    }

    /// [`Accounts::verify_ledger`], with how many journals were checked and are unsealed.
    ///
    /// # Errors
    /// Storage failures.
    pub fn check_ledger(&self, mode: Option<Mode>) -> Result<LedgerCheck, ServiceError> {
        let snapshot = OnLedger::read(self.core.store(), |tx| Ok(tx.ledger_snapshot(mode)?))?;
        Ok(LedgerCheck { violations: malipo_ledger::verify(&snapshot), journals: snapshot.journals.len(), unsealed: snapshot.unsealed() })
    }
}
