//! Payouts (contract section 5): one payout's creation under an idempotency key with its
//! reservation, reads, and (in [`worker`]) the background work that pays or fails it; bulk
//! payouts with maker/checker in [`bulk`].

pub mod bulk;
mod checks;
pub mod worker;

use malipo_auth::Principal;
use malipo_core::{MinorUnit, PayoutRef};
use malipo_idempotency::StoredResponse;
use malipo_ledger::AccountKind;
use malipo_payouts::{Payout, PayoutFilter, PayoutState};

use self::checks::{check_currency, check_payout};
use crate::agents::insufficient;
use crate::backlog::{Backlog, Intake};
use crate::core::Core;
use crate::error::ServiceError;
use crate::idempotency::{Idem, IdemOutcome};
use crate::page::{bad_cursor, Page};
use crate::ports::read;

/// The fields of `POST /payouts` as received (amount as its exact decimal text).
#[derive(Clone, Debug, Default)]
pub struct NewPayout {
    /// The payee's number.
    pub payee_msisdn: String,
    /// Decimal text in major units.
    pub amount: String,
    /// The integrator's reference.
    pub reference: String,
    /// Optional; must equal the payout account's currency.
    pub currency: Option<String>,
    /// Optional text for the payee (at most 100 characters).
    pub narration: Option<String>,
}

/// The payout use cases.
pub struct Payouts<'a> {
    core: &'a Core,
}

impl<'a> Payouts<'a> {
    pub(crate) fn new(core: &'a Core) -> Self {
        Payouts { core }
    }

    /// Validates a payout, reserves `amount + fee` on the payout account and stores it
    /// `pending`, exactly once per idempotency key.
    ///
    /// # Errors
    /// [`ServiceError::Validation`], [`ServiceError::CurrencyMismatch`],
    /// [`ServiceError::InsufficientFunds`], idempotency errors.
    pub fn create(
        &self,
        principal: &Principal,
        new: &NewPayout,
        idem: &Idem,
        render: &dyn Fn(&Payout) -> StoredResponse,
    ) -> Result<IdemOutcome, ServiceError> {
        let country = self.core.country(&principal.country)?;
        let mut errors = Vec::new();
        let fields = (new.payee_msisdn.as_str(), new.amount.as_str(), new.reference.as_str(), new.narration.as_deref());
        let checked = check_payout(self.core, country, "", fields, &mut errors);
        let Some(checked) = checked.filter(|_| errors.is_empty()) else {
            return Err(ServiceError::Validation(errors));
        };
        check_currency(new.currency.as_deref(), country.currency)?;
        Backlog::new(self.core).take(Intake::Payout)?;
        let now = self.core.now();
        self.core.idempotent(
            idem,
            |tx| {
                let account = self.core.org_account_id(tx, &principal.org_id, principal.mode, AccountKind::Payout)?;
                let payout = Payout {
                    id: PayoutRef::new(),
                    org_id: principal.org_id.clone(),
                    mode: principal.mode,
                    payee_msisdn: checked.payee.clone(),
                    amount: checked.amount,
                    fee: checked.fee,
                    currency: country.currency,
                    amount_reversed: MinorUnit::ZERO,
                    reference: checked.reference.clone(),
                    narration: checked.narration.clone(),
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
            },
            render,
        )
    }

    /// One of the principal's payouts.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`].
    pub fn get(&self, principal: &Principal, id: &str) -> Result<Payout, ServiceError> {
        let id = PayoutRef::parse(id).map_err(|_| ServiceError::NotFound)?;
        read(self.core.store(), |tx| Ok(tx.payout(&principal.org_id, principal.mode, &id)?))?.ok_or(ServiceError::NotFound)
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
        let before = cursor.map(|c| PayoutRef::parse(c).map_err(|_| bad_cursor("cursor"))).transpose()?;
        let data = read(self.core.store(), |tx| {
            Ok(tx.list_payouts(&principal.org_id, principal.mode, filter, before.as_ref(), limit.saturating_add(1))?)
        })?;
        Ok(Page::from_fetched(data, limit, |p| p.id.to_string()))
    }
}
