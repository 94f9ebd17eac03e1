//! Charges: creation under an idempotency key (its command parsed in [`crate::commands`]), and
//! reads.

use malipo_auth::Principal;
use malipo_charges::{Charge, ChargeFilter, ChargeKind, ChargeState};
use malipo_core::{ChargeRef, MinorUnit, Mode};
use malipo_countries::FeeOperation;
use malipo_ledger::AccountKind;

use crate::backlog::{Backlog, Intake};
use crate::commands::CreateCharge;
use crate::core::Core;
use crate::error::ServiceError;
use crate::idempotency::{Idem, IdemOutcome};
use crate::lifecycle::Lifecycle;
use crate::page::{bad_cursor, Page};
use crate::ports::{query, read, Answer};

/// The merchant-facing charge use cases.
pub struct Charges<'a> {
    core: &'a Core,
}

impl<'a> Charges<'a> {
    pub(crate) fn new(core: &'a Core) -> Self {
        Charges { core }
    }

    /// Creates a charge in state `pending`, exactly once per idempotency key. Payer-side
    /// conditions (no wallet, locked, limits, funds) are never reported here: they move the
    /// charge through its states afterwards.
    ///
    /// # Errors
    /// [`ServiceError::CurrencyMismatch`] (the currency named, or the payer's number, is not the
    /// merchant's), [`ServiceError::Busy`], idempotency errors.
    pub fn create(
        &self,
        principal: &Principal,
        command: &CreateCharge,
        idem: &Idem,
        answer: &dyn Answer<Charge>,
    ) -> Result<IdemOutcome, ServiceError> {
        let merchant_country = self.core.country(&principal.country)?;
        let currency = merchant_country.currency;
        let CreateCharge { payer, amount, currency: named, reference, description } = command;
        let amount = *amount;
        if named.is_some_and(|c| c != currency) {
            return Err(ServiceError::CurrencyMismatch(format!("currency must be {currency}, the merchant's collection currency")));
        }
        let payer_country = self.core.country_of(payer)?;
        if payer_country.currency != currency {
            return Err(ServiceError::CurrencyMismatch(format!(
                "payer_msisdn is a {} number; this merchant collects in {currency}",
                payer_country.code
            )));
        }
        let fee = merchant_country.fee(FeeOperation::Charge, amount).min(amount);
        Backlog::new(self.core).take(Intake::Charge)?;
        let now = self.core.now();
        let expires_at = now.plus_seconds(self.core.config.charge_ttl_seconds);
        // A live prompt whose payer can pay waits for the customer from the start (parked until
        // it expires): the worker's check would find the same a moment later, at the cost of a
        // transaction of its own. Any other is checked by the worker at once and fails there.
        let lifecycle = Lifecycle(self.core);
        let can_pay = principal.mode == Mode::Live
            && query(self.core.store(), |tx| lifecycle.live_refusal(tx, principal.mode, payer, (amount, amount), now))?.is_none();
        let next_action_at = if can_pay { expires_at } else { lifecycle.first_step_at(principal.mode, now) };
        let charge = move |merchant_account| Charge {
            id: ChargeRef::new(),
            kind: ChargeKind::Charge,
            commission: MinorUnit::ZERO,
            org_id: principal.org_id.clone(),
            mode: principal.mode,
            payer_msisdn: payer.clone(),
            amount,
            fee,
            currency,
            amount_reversed: MinorUnit::ZERO,
            reference: reference.clone(),
            description: description.clone(),
            state: ChargeState::Pending,
            failure_reason: None,
            transaction_id: None,
            merchant_account,
            payer_account: None,
            created_at: now,
            updated_at: now,
            expires_at,
            completed_at: None,
            next_action_at: Some(next_action_at),
        };
        let outcome = match self.core.cached_org_account_id(&principal.org_id, principal.mode, AccountKind::Collection) {
            // The usual case: the account is known, so the charge is whole before the
            // transaction and may share it with other creations' (the first charge of a
            // merchant in this process looks its account up, alone).
            Some(merchant_account) => self.core.create_charge(idem, &charge(merchant_account), answer)?,
            None => self.core.idempotent(
                idem,
                |tx| {
                    let charge = charge(self.core.org_account_id(tx, &principal.org_id, principal.mode, AccountKind::Collection)?);
                    tx.insert_charge(&charge)?;
                    Ok(charge)
                },
                answer,
            )?,
        };
        if !outcome.replayed {
            self.core.observer.charge_entered(ChargeState::Pending);
        }
        Ok(outcome)
    }

    /// One of the principal's charges.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`].
    pub fn get(&self, principal: &Principal, id: &str) -> Result<Charge, ServiceError> {
        let id = ChargeRef::parse(id).map_err(|_| ServiceError::NotFound)?;
        read(self.core.store(), |tx| Ok(tx.charge(&principal.org_id, principal.mode, &id)?))?.ok_or(ServiceError::NotFound)
    }

    /// The most recent charge with this reference.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`].
    pub fn by_reference(&self, principal: &Principal, reference: &str) -> Result<Charge, ServiceError> {
        read(self.core.store(), |tx| Ok(tx.latest_charge_by_reference(&principal.org_id, principal.mode, reference)?))?
            .ok_or(ServiceError::NotFound)
    }

    /// The principal's charges, newest first.
    ///
    /// # Errors
    /// [`ServiceError::Validation`] for a bad cursor or limit.
    pub fn list(
        &self,
        principal: &Principal,
        filter: &ChargeFilter,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<Page<Charge>, ServiceError> {
        let before = cursor.map(|c| ChargeRef::parse(c).map_err(|_| bad_cursor("cursor"))).transpose()?;
        let data = read(self.core.store(), |tx| {
            Ok(tx.list_charges(&principal.org_id, principal.mode, filter, before.as_ref(), limit.saturating_add(1))?)
        })?;
        Ok(Page::from_fetched(data, limit, |c| c.id.to_string()))
    }
}
