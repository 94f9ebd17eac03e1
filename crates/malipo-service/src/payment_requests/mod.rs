//! Merchant payment requests (contract section 11): a merchant asks to be paid and gets a pay
//! code; a customer pays it from the USSD menu (see [`pay`]); background work expires what is
//! left unpaid.

pub(crate) mod pay;

use malipo_auth::Principal;
use malipo_core::{Msisdn, PaymentRequestId};
use malipo_countries::FeeOperation;
use malipo_idempotency::StoredResponse;
use malipo_ledger::AccountKind;
use malipo_requests::{
    PayCode, PaymentRequest, RequestEvent, RequestFilter, RequestState, TransitionError, DEFAULT_EXPIRES_IN_SECONDS, EXPIRES_IN_SECONDS,
};

use crate::core::Core;
use crate::error::{FieldError, ServiceError, StoreError};
use crate::events::Events;
use crate::idempotency::{Idem, IdemOutcome};
use crate::page::{bad_cursor, Page};
use crate::ports::{read, write};
use crate::validate::{check_amount, check_optional_text, check_reference};

/// How many pay codes are drawn for one request before giving up: a drawn code is taken by
/// another open request of the mode with probability (open requests / 1,000,000), so even a
/// million-code space half full fails twenty draws in a row about once in a million requests.
const PAY_CODE_DRAWS: usize = 20;

/// The fields of `POST /biz/request` as received (amount as its exact decimal text).
#[derive(Clone, Debug, Default)]
pub struct NewPaymentRequest {
    /// Decimal text in major units.
    pub amount: String,
    /// The merchant's reference.
    pub reference: String,
    /// Optional text (at most 100 characters).
    pub description: Option<String>,
    /// Optional: the customer it is addressed to.
    pub payer_msisdn: Option<String>,
    /// Optional: seconds until it expires (60 to 604,800; default 86,400).
    pub expires_in: Option<i64>,
}

/// The merchant's payment request use cases.
pub struct PaymentRequests<'a> {
    core: &'a Core,
}

impl<'a> PaymentRequests<'a> {
    pub(crate) fn new(core: &'a Core) -> Self {
        PaymentRequests { core }
    }

    /// Validates a request and stores it `open` with a fresh pay code (drawn again while the
    /// database finds it in use by another open request of the mode), exactly once per
    /// idempotency key.
    ///
    /// # Errors
    /// [`ServiceError::Validation`], [`ServiceError::CurrencyMismatch`] (a payer of another
    /// currency), idempotency errors.
    pub fn create(
        &self,
        principal: &Principal,
        new: &NewPaymentRequest,
        idem: &Idem,
        render: &dyn Fn(&PaymentRequest) -> StoredResponse,
    ) -> Result<IdemOutcome, ServiceError> {
        let country = self.core.country(&principal.country)?;
        let currency = country.currency;
        let mut errors = Vec::new();
        let amount = check_amount("amount", &new.amount, currency, &mut errors);
        if amount.is_some_and(|a| a > country.max_charge) {
            let max = currency.format_amount(country.max_charge);
            errors.push(FieldError::new(
                "amount",
                "invalid_amount",
                format!("amount exceeds the maximum single payment of {max} {currency}"),
            ));
        }
        check_reference("reference", &new.reference, &mut errors);
        check_optional_text("description", new.description.as_deref(), 100, &mut errors);
        let payer = match new.payer_msisdn.as_deref().map(|m| self.core.countries.parse_msisdn(m)) {
            None => None,
            Some(Ok(found)) => Some(found),
            Some(Err(e)) => {
                errors.push(FieldError::new("payer_msisdn", "invalid_msisdn", format!("payer_msisdn {e}")));
                None
            }
        };
        let expires_in = new.expires_in.unwrap_or(DEFAULT_EXPIRES_IN_SECONDS);
        if !EXPIRES_IN_SECONDS.contains(&expires_in) {
            let (min, max) = (EXPIRES_IN_SECONDS.start(), EXPIRES_IN_SECONDS.end());
            errors.push(FieldError::new("expires_in", "invalid_value", format!("expires_in must be {min} to {max} seconds")));
        }
        let Some(amount) = amount.filter(|_| errors.is_empty()) else {
            return Err(ServiceError::Validation(errors));
        };
        if let Some((_, payer_country)) = payer {
            if payer_country.currency != currency {
                return Err(ServiceError::CurrencyMismatch(format!(
                    "payer_msisdn is a {} number; this merchant collects in {currency}",
                    payer_country.code
                )));
            }
        }
        let payer: Option<Msisdn> = payer.map(|(m, _)| m);
        let fee = country.fee(FeeOperation::PaymentRequest, amount).min(amount);
        let now = self.core.now();
        self.core.idempotent(
            idem,
            |tx| {
                let merchant_account = self.core.org_account_id(tx, &principal.org_id, principal.mode, AccountKind::Collection)?;
                for _ in 0..PAY_CODE_DRAWS {
                    let request = PaymentRequest {
                        id: PaymentRequestId::new(),
                        org_id: principal.org_id.clone(),
                        mode: principal.mode,
                        pay_code: PayCode::random(),
                        state: RequestState::Open,
                        amount,
                        fee,
                        currency,
                        reference: new.reference.clone(),
                        description: new.description.clone(),
                        payer_msisdn: payer.clone(),
                        paid_by_msisdn: None,
                        transaction_id: None,
                        merchant_account: merchant_account.clone(),
                        expires_at: now.plus_seconds(expires_in),
                        created_at: now,
                        updated_at: now,
                        paid_at: None,
                    };
                    match tx.insert_payment_request(&request) {
                        Ok(()) => return Ok(request),
                        // The code is in use by another open request: draw again.
                        Err(StoreError::Duplicate) => {}
                        Err(e) => return Err(e.into()),
                    }
                }
                Err(ServiceError::Internal(format!("no free pay code in {PAY_CODE_DRAWS} draws")))
            },
            render,
        )
    }

    /// One of the principal's payment requests.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`].
    pub fn get(&self, principal: &Principal, id: &str) -> Result<PaymentRequest, ServiceError> {
        let id = PaymentRequestId::parse(id).map_err(|_| ServiceError::NotFound)?;
        read(self.core.store(), |tx| Ok(tx.payment_request(&principal.org_id, principal.mode, &id)?))?.ok_or(ServiceError::NotFound)
    }

    /// The principal's payment requests, newest first.
    ///
    /// # Errors
    /// [`ServiceError::Validation`] for a bad cursor.
    pub fn list(
        &self,
        principal: &Principal,
        filter: &RequestFilter,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<Page<PaymentRequest>, ServiceError> {
        let before = cursor.map(|c| PaymentRequestId::parse(c).map_err(|_| bad_cursor("cursor"))).transpose()?;
        let data = read(self.core.store(), |tx| {
            Ok(tx.list_payment_requests(&principal.org_id, principal.mode, filter, before.as_ref(), limit.saturating_add(1))?)
        })?;
        Ok(Page::from_fetched(data, limit, |r| r.id.to_string()))
    }

    /// Cancels an open request (its pay code is free again), exactly once per idempotency key.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`]; [`ServiceError::InvalidState`] unless it is open;
    /// idempotency errors.
    pub fn cancel(
        &self,
        principal: &Principal,
        id: &str,
        idem: &Idem,
        render: &dyn Fn(&PaymentRequest) -> StoredResponse,
    ) -> Result<IdemOutcome, ServiceError> {
        let id = PaymentRequestId::parse(id).map_err(|_| ServiceError::NotFound)?;
        self.core.idempotent(
            idem,
            |tx| {
                let now = self.core.now();
                let mut request = tx
                    .lock_payment_request(&id)?
                    .filter(|r| r.org_id == principal.org_id && r.mode == principal.mode)
                    .ok_or(ServiceError::NotFound)?;
                request.apply(RequestEvent::Cancel, now).map_err(|e| invalid_state(e, "cancelled"))?;
                tx.update_payment_request(&request)?;
                Ok(request)
            },
            render,
        )
    }

    /// Expires up to `limit` open requests past their expiry, each with its
    /// `payment_request.expired` event, in one transaction. Returns how many. Several instances
    /// may run this at once: each request is taken by one of them.
    ///
    /// # Errors
    /// Storage failures.
    pub fn expire_due(&self, limit: usize) -> Result<usize, ServiceError> {
        write(self.core.store(), |tx| {
            let now = self.core.now();
            let due = tx.lock_due_payment_requests(now, limit)?;
            for mut request in due.iter().cloned() {
                request.apply(RequestEvent::Expire, now).map_err(|e| ServiceError::Internal(format!("expiring {}: {e}", request.id)))?;
                tx.update_payment_request(&request)?;
                Events(self.core).payment_request(tx, &request, now)?;
            }
            Ok(due.len())
        })
    }
}

/// The `invalid_state` refusal of a move the request's state forbids.
fn invalid_state(e: TransitionError, what: &str) -> ServiceError {
    ServiceError::InvalidState(format!("{e}; only an open payment request can be {what}"))
}
