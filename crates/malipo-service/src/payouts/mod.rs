//! Payouts (contract section 5): one payout's creation under an idempotency key with its
//! reservation, reads, and (in [`worker`]) the background work that pays or fails it; bulk
//! payouts with maker/checker in [`bulk`].

pub mod bulk;
pub mod worker;

use malipo_auth::Principal;
use malipo_core::{MinorUnit, PayoutRef};
use malipo_countries::FeeOperation;
use malipo_ledger::AccountKind;
use malipo_payouts::{Payout, PayoutFilter, PayoutState};

use crate::agents::insufficient;
use crate::backlog::{Backlog, Intake};
use crate::commands::CreatePayout;
use crate::core::{org_account_id, Core};
use crate::error::ServiceError;
use crate::idempotency::{Done, Idem};
use crate::needs::{self, require};
use crate::page::{bad_cursor, Page};
use crate::views::{OnPayouts, Reversing, View};

/// The payout use cases.
pub struct Payouts<'a> {
    core: &'a Core,
}

impl<'a> Payouts<'a> {
    pub(crate) fn new(core: &'a Core) -> Self {
        Payouts { core }
    }

    /// Reserves `amount + fee` on the payout account and stores the payout `pending`, exactly
    /// once per idempotency key.
    ///
    /// # Errors
    /// [`ServiceError::CurrencyMismatch`] (the currency named is not the payout account's),
    /// [`ServiceError::Busy`], [`ServiceError::InsufficientFunds`], idempotency errors.
    pub fn create(&self, principal: &Principal, command: &CreatePayout, idem: &Idem) -> Result<Done<Payout>, ServiceError> {
        require(principal, &needs::PAY_OUT)?;
        let country = self.core.country(&principal.country)?;
        let CreatePayout { line, currency } = command;
        if currency.is_some_and(|c| c != country.currency) {
            return Err(ServiceError::CurrencyMismatch(format!("currency must be {}, the payout account's currency", country.currency)));
        }
        let fee = country.fee(FeeOperation::Payout, line.amount);
        if let Some(replayed) = Backlog::new(self.core).take(Intake::Payout, idem)? {
            return Ok(replayed);
        }
        let now = self.core.now();
        self.core.idempotent(idem, Reversing, |tx| {
            let account = org_account_id(tx, &principal.org_id, principal.mode, AccountKind::Payout)?;
            let payout = Payout {
                id: PayoutRef::new(),
                org_id: principal.org_id.clone(),
                mode: principal.mode,
                payee_msisdn: line.payee.clone(),
                amount: line.amount,
                fee,
                currency: country.currency,
                amount_reversed: MinorUnit::ZERO,
                reference: line.reference.clone(),
                narration: line.narration.clone(),
                state: PayoutState::Pending,
                failure_reason: None,
                transaction_id: None,
                bulk_payout_id: None,
                bulk_index: None,
                payout_account: account.clone(),
                created_at: now,
                updated_at: now,
                completed_at: None,
                next_action_at: Some(now),
            };
            // The reservation is taken on the locked account row: two payouts at the same
            // moment cannot both pass a balance that only one fits.
            tx.hold(&account, payout.debit()?).map_err(ServiceError::from).map_err(insufficient)?;
            tx.insert_payouts(std::slice::from_ref(&payout))?;
            Ok(payout)
        })
    }

    /// One of the principal's payouts.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`].
    pub fn get(&self, principal: &Principal, id: &str) -> Result<Payout, ServiceError> {
        require(principal, &needs::READ_PAYOUTS)?;
        let id = PayoutRef::parse(id).map_err(|_| ServiceError::NotFound)?;
        OnPayouts::read(self.core.store(), |tx| Ok(tx.payout(&principal.org_id, principal.mode, &id)?))?.ok_or(ServiceError::NotFound)
    }

    /// The principal's payouts, newest first.
    ///
    /// # Errors
    /// [`ServiceError::Validation`] for a bad cursor.
    pub fn list(
        &self,
        principal: &Principal,
        filter: &PayoutFilter,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<Page<Payout>, ServiceError> {
        require(principal, &needs::READ_PAYOUTS)?;
        let before = cursor.map(|c| PayoutRef::parse(c).map_err(|_| bad_cursor("cursor"))).transpose()?;
        let data = OnPayouts::report(self.core.store(), |tx| {
            Ok(tx.list_payouts(&principal.org_id, principal.mode, filter, before.as_ref(), limit.saturating_add(1))?)
        })?;
        Ok(Page::from_fetched(data, limit, |p| p.id.to_string()))
    }
}
