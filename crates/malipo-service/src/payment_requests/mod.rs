//! Merchant payment requests (contract section 11): a merchant asks to be paid and gets a pay
//! code; a customer pays it from the USSD menu (see [`pay`]); background work expires what is
//! left unpaid.

pub(crate) mod pay;

use malipo_auth::Principal;
use malipo_core::PaymentRequestId;
use malipo_countries::FeeOperation;
use malipo_ledger::AccountKind;
use malipo_requests::{PayCode, PaymentRequest, RequestEvent, RequestFilter, RequestState, TransitionError};

use crate::commands::{CancelPaymentRequest, CreatePaymentRequest};
use crate::core::{org_account_id, Core};
use crate::error::{ServiceError, StoreError};
use crate::events::Events;
use crate::idempotency::{Done, Idem};
use crate::needs::{self, require};
use crate::page::{bad_cursor, Page};
use crate::views::{OnRequests, Requesting, View};

/// How many pay codes are drawn for one request before giving up: a drawn code is taken by
/// another open request of the mode with probability (open requests / 1,000,000), so even a
/// million-code space half full fails twenty draws in a row about once in a million requests.
const PAY_CODE_DRAWS: usize = 20;

/// The merchant's payment request use cases.
pub struct PaymentRequests<'a> {
    core: &'a Core,
}

impl<'a> PaymentRequests<'a> {
    pub(crate) fn new(core: &'a Core) -> Self {
        PaymentRequests { core }
    }

    /// Stores a payment request `open` with a fresh pay code (drawn again while the database
    /// finds it in use by another open request of the mode), exactly once per idempotency key.
    ///
    /// # Errors
    /// [`ServiceError::CurrencyMismatch`] (a payer of another currency), idempotency errors.
    pub fn create(&self, principal: &Principal, command: &CreatePaymentRequest, idem: &Idem) -> Result<Done<PaymentRequest>, ServiceError> {
        require(principal, &needs::REQUEST_PAYMENT)?;
        let country = self.core.country(&principal.country)?;
        let currency = country.currency;
        let CreatePaymentRequest { amount, reference, description, payer, expires_in } = command;
        let (amount, expires_in) = (*amount, *expires_in);
        if let Some(payer) = payer {
            let payer_country = self.core.country_of(payer)?;
            if payer_country.currency != currency {
                return Err(ServiceError::CurrencyMismatch(format!(
                    "payer_msisdn is a {} number; this merchant collects in {currency}",
                    payer_country.code
                )));
            }
        }
        let fee = country.fee(FeeOperation::PaymentRequest, amount).min(amount);
        let now = self.core.now();
        self.core.idempotent(idem, Requesting, |tx| {
            let merchant_account = org_account_id(tx, &principal.org_id, principal.mode, AccountKind::Collection)?;
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
                    reference: reference.clone(),
                    description: description.clone(),
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
        })
    }

    /// One of the principal's payment requests.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`].
    pub fn get(&self, principal: &Principal, id: &str) -> Result<PaymentRequest, ServiceError> {
        require(principal, &needs::READ_PAYMENTS)?;
        let id = PaymentRequestId::parse(id).map_err(|_| ServiceError::NotFound)?;
        OnRequests::read(self.core.store(), |tx| Ok(tx.payment_request(&principal.org_id, principal.mode, &id)?))?
            .ok_or(ServiceError::NotFound)
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
        require(principal, &needs::READ_PAYMENTS)?;
        let before = cursor.map(|c| PaymentRequestId::parse(c).map_err(|_| bad_cursor("cursor"))).transpose()?;
        let data = OnRequests::report(self.core.store(), |tx| {
            Ok(tx.list_payment_requests(&principal.org_id, principal.mode, filter, before.as_ref(), limit.saturating_add(1))?)
        })?;
        Ok(Page::from_fetched(data, limit, |r| r.id.to_string()))
    }

    /// Cancels an open request (its pay code is free again), exactly once per idempotency key.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`]; [`ServiceError::InvalidState`] unless it is open;
    /// idempotency errors.
    pub fn cancel(&self, principal: &Principal, command: &CancelPaymentRequest, idem: &Idem) -> Result<Done<PaymentRequest>, ServiceError> {
        require(principal, &needs::REQUEST_PAYMENT)?;
        let id = &command.request;
        self.core.idempotent(idem, OnRequests, |tx| {
            let now = self.core.now();
            let mut request = tx
                .lock_payment_request(id)?
                .filter(|r| r.org_id == principal.org_id && r.mode == principal.mode)
                .ok_or(ServiceError::NotFound)?;
            request.apply(RequestEvent::Cancel, now).map_err(|e| invalid_state(e, "cancelled"))?;
            tx.update_payment_request(&request)?;
            Ok(request)
        })
    }

    /// Expires up to `limit` open requests past their expiry, each with its
    /// `payment_request.expired` event, in one transaction. Returns how many. Several instances
    /// may run this at once: each request is taken by one of them.
    ///
    /// # Errors
    /// Storage failures.
    pub fn expire_due(&self, limit: usize) -> Result<usize, ServiceError> {
        Requesting::write(self.core.store(), |tx| {
            let now = self.core.now();
            let due = tx.lock_due_payment_requests(now, limit)?;
            for mut request in due.iter().cloned() {
                request.apply(RequestEvent::Expire, now).map_err(|e| ServiceError::Internal(format!("expiring {}: {e}", request.id)))?;
                tx.update_payment_request(&request)?;
                Events.payment_request(tx, &request, now)?;
            }
            Ok(due.len())
        })
    }
}

/// The `invalid_state` refusal of a move the request's state forbids.
fn invalid_state(e: TransitionError, what: &str) -> ServiceError {
    ServiceError::InvalidState(format!("{e}; only an open payment request can be {what}"))
}
