//! Charges: validation, creation under an idempotency key, and reads.

use malipo_auth::Principal;
use malipo_charges::{Charge, ChargeFilter, ChargeKind, ChargeState};
use malipo_core::{ChargeRef, Currency, MinorUnit, Mode};
use malipo_countries::FeeOperation;
use malipo_idempotency::StoredResponse;
use malipo_ledger::AccountKind;

use crate::error::{FieldError, ServiceError};
use crate::idempotency::{Idem, IdemOutcome};
use crate::platform::Platform;
use crate::ports::read;

/// The fields of `POST /partner/stk` as received (amount as its exact decimal text).
#[derive(Clone, Debug, Default)]
pub struct NewCharge {
    /// Customer phone number.
    pub payer_msisdn: String,
    /// Decimal text in major units.
    pub amount: String,
    /// Optional; must equal the merchant's collection currency.
    pub currency: Option<String>,
    /// The integrator's reference.
    pub reference: String,
    /// Optional text for the payer.
    pub description: Option<String>,
}

/// A page of results, newest first.
#[derive(Clone, Debug)]
pub struct Page<T> {
    /// The items.
    pub data: Vec<T>,
    /// Whether more follow.
    pub has_more: bool,
    /// Cursor for the next page.
    pub next_cursor: Option<String>,
}

/// Validates a free-text reference: 1 to 64 printable characters.
pub fn check_reference(field: &str, value: &str, errors: &mut Vec<FieldError>) {
    check_text(field, value, 64, true, errors);
}

/// Validates free text: not empty (nor only spaces, unless `blank_allowed`), at most
/// `max_chars` characters, no control characters. Reports the first problem under `field`.
pub fn check_text(field: &str, value: &str, max_chars: usize, blank_allowed: bool, errors: &mut Vec<FieldError>) {
    let empty = if blank_allowed { value.is_empty() } else { value.trim().is_empty() };
    if empty {
        errors.push(FieldError::new(field, "missing_field", format!("{field} must not be empty")));
    } else if value.chars().count() > max_chars {
        errors.push(FieldError::new(field, "too_long", format!("{field} must be at most {max_chars} characters")));
    } else if value.chars().any(char::is_control) {
        errors.push(FieldError::new(field, "invalid_value", format!("{field} must be printable characters")));
    }
}

/// Parses an amount in a currency, reporting problems under `field`.
pub fn check_amount(field: &str, text: &str, currency: Currency, errors: &mut Vec<FieldError>) -> Option<MinorUnit> {
    match currency.parse_amount(text) {
        Ok(v) => Some(v),
        Err(e) => {
            errors.push(FieldError::new(field, "invalid_amount", format!("{field} {e}")));
            None
        }
    }
}

impl Platform {
    /// When the worker first looks at a new prompt: after the sandbox's approval delay in test
    /// mode; at once in live mode (to check the payer before the customer is asked).
    pub(crate) fn first_step_at(&self, mode: Mode, now: malipo_core::Timestamp) -> malipo_core::Timestamp {
        match mode {
            Mode::Test => now.plus_millis(self.config.sandbox_approval_delay_ms),
            Mode::Live => now,
        }
    }

    /// Validates and creates a charge in state `pending`, exactly once per idempotency key.
    /// Payer-side conditions (no wallet, locked, limits, funds) are never reported here: they
    /// move the charge through its states afterwards.
    ///
    /// # Errors
    /// [`ServiceError::Validation`], [`ServiceError::CurrencyMismatch`], idempotency errors.
    pub fn create_charge(
        &self,
        principal: &Principal,
        new: &NewCharge,
        idem: &Idem,
        render: &dyn Fn(&Charge) -> StoredResponse,
    ) -> Result<IdemOutcome, ServiceError> {
        let merchant_country = self.country(&principal.country)?;
        let currency = merchant_country.currency;
        let mut errors = Vec::new();
        let payer = match self.countries.parse_msisdn(&new.payer_msisdn) {
            Ok((m, country)) => Some((m, country)),
            Err(e) => {
                errors.push(FieldError::new("payer_msisdn", "invalid_msisdn", format!("payer_msisdn {e}")));
                None
            }
        };
        let amount = check_amount("amount", &new.amount, currency, &mut errors);
        if let Some(a) = amount {
            if a > merchant_country.max_charge {
                errors.push(FieldError::new(
                    "amount",
                    "invalid_amount",
                    format!(
                        "amount exceeds the maximum single charge of {} {currency}",
                        currency.format_amount(merchant_country.max_charge)
                    ),
                ));
            }
        }
        check_reference("reference", &new.reference, &mut errors);
        if let Some(d) = &new.description {
            if d.chars().count() > 100 {
                errors.push(FieldError::new("description", "too_long", "description must be at most 100 characters"));
            }
        }
        if let Some(c) = &new.currency {
            if Currency::new(c).is_err() {
                errors.push(FieldError::new("currency", "invalid_currency", "currency must be a three-letter ISO 4217 code"));
            }
        }
        if !errors.is_empty() {
            return Err(ServiceError::Validation(errors));
        }
        let (Some((payer, payer_country)), Some(amount)) = (payer, amount) else {
            return Err(ServiceError::Internal("validated fields missing".into()));
        };
        if let Some(c) = &new.currency {
            if c != currency.as_str() {
                return Err(ServiceError::CurrencyMismatch(format!("currency must be {currency}, the merchant's collection currency")));
            }
        }
        if payer_country.currency != currency {
            return Err(ServiceError::CurrencyMismatch(format!(
                "payer_msisdn is a {} number; this merchant collects in {currency}",
                payer_country.code
            )));
        }
        let fee = merchant_country.fee(FeeOperation::Charge, amount).min(amount);
        let now = self.clock.now();
        let next_action_at = self.first_step_at(principal.mode, now);
        let outcome = self.idempotent(
            idem,
            |tx| {
                let merchant_account = self.org_account_id(tx, &principal.org_id, principal.mode, AccountKind::Collection)?;
                let charge = Charge {
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
                    reference: new.reference.clone(),
                    description: new.description.clone(),
                    state: ChargeState::Pending,
                    failure_reason: None,
                    transaction_id: None,
                    merchant_account,
                    payer_account: None,
                    created_at: now,
                    updated_at: now,
                    expires_at: now.plus_seconds(self.config.charge_ttl_seconds),
                    completed_at: None,
                    next_action_at: Some(next_action_at),
                };
                tx.insert_charge(&charge)?;
                Ok(charge)
            },
            render,
        )?;
        if !outcome.replayed {
            self.observer.charge_entered(ChargeState::Pending);
        }
        Ok(outcome)
    }

    /// One of the principal's charges.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`].
    pub fn get_charge(&self, principal: &Principal, id: &str) -> Result<Charge, ServiceError> {
        let id = ChargeRef::parse(id).map_err(|_| ServiceError::NotFound)?;
        read(self.store(), |tx| Ok(tx.charge(&principal.org_id, principal.mode, &id)?))?.ok_or(ServiceError::NotFound)
    }

    /// The most recent charge with this reference.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`].
    pub fn charge_by_reference(&self, principal: &Principal, reference: &str) -> Result<Charge, ServiceError> {
        read(self.store(), |tx| Ok(tx.latest_charge_by_reference(&principal.org_id, principal.mode, reference)?))?
            .ok_or(ServiceError::NotFound)
    }

    /// The principal's charges, newest first.
    ///
    /// # Errors
    /// [`ServiceError::Validation`] for a bad cursor or limit.
    pub fn list_charges(
        &self,
        principal: &Principal,
        filter: &ChargeFilter,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<Page<Charge>, ServiceError> {
        let before = cursor
            .map(|c| ChargeRef::parse(c).map_err(|_| ServiceError::field("cursor", "invalid_cursor", "cursor is not valid")))
            .transpose()?;
        let mut data =
            read(self.store(), |tx| Ok(tx.list_charges(&principal.org_id, principal.mode, filter, before.as_ref(), limit + 1)?))?;
        let has_more = data.len() > limit;
        data.truncate(limit);
        let next_cursor = if has_more { data.last().map(|c| c.id.to_string()) } else { None };
        Ok(Page { data, has_more, next_cursor })
    }
}
