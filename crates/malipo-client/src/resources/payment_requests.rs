//! Merchant payment requests (contract section 11; scope `payments`): the merchant asks to be
//! paid, and the customer pays with the request's six-digit pay code on the USSD menu ("Pay
//! merchant"), or approves it there when it is addressed to them.

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::client::{new_key, Call};
use crate::operations as ops;
use crate::{Client, Error, List, Mode};

/// A payment request's state: `open` until it is paid, cancelled or expired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum PaymentRequestState {
    /// Payable with its pay code.
    Open,
    /// Paid by a customer (final).
    Paid,
    /// Cancelled by the merchant (final).
    Cancelled,
    /// Not paid in time (final).
    Expired,
}

impl PaymentRequestState {
    /// The state as the API writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            PaymentRequestState::Open => "open",
            PaymentRequestState::Paid => "paid",
            PaymentRequestState::Cancelled => "cancelled",
            PaymentRequestState::Expired => "expired",
        }
    }

    /// Whether the request will not change again (anything but `open`).
    pub fn is_final(self) -> bool {
        self != PaymentRequestState::Open
    }
}

/// A merchant payment request.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[non_exhaustive]
pub struct PaymentRequest {
    /// Its id, `pr_…`.
    pub request_id: String,
    /// The six digits the customer enters on the USSD menu; unique among the open requests of
    /// its mode (and free again once the request is no longer open).
    pub pay_code: String,
    /// Where it is.
    pub state: PaymentRequestState,
    /// Test or live.
    pub mode: Mode,
    /// What the customer pays, in major units.
    #[serde(with = "crate::amount")]
    pub amount: Decimal,
    /// The merchant's collection currency (ISO 4217).
    pub currency: String,
    /// The fee the merchant pays: its collection account receives `amount - fee`.
    #[serde(with = "crate::amount")]
    pub fee: Decimal,
    /// The merchant's reference.
    pub reference: String,
    /// The merchant's text.
    pub description: Option<String>,
    /// The customer it is addressed to.
    pub payer_msisdn: Option<String>,
    /// The customer who paid it.
    pub paid_by_msisdn: Option<String>,
    /// The ledger transaction that paid it (`tx_…`).
    pub transaction_id: Option<String>,
    /// When it stops being payable (RFC 3339, UTC).
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
    /// RFC 3339, UTC.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// When it was paid (RFC 3339, UTC).
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub paid_at: Option<OffsetDateTime>,
}

/// A payment request to create (`POST /biz/request`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct NewPaymentRequest {
    /// What the customer pays, in major units (sent as a JSON number with its exact text).
    #[serde(with = "crate::amount")]
    pub amount: Decimal,
    /// The merchant's reference (1 to 64 characters).
    pub reference: String,
    /// The merchant's text (at most 100 characters).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The customer it is addressed to (international digits without `+`): it also shows in
    /// their pending approvals on the USSD menu.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payer_msisdn: Option<String>,
    /// Seconds until it expires, 60 to 604,800 (the API's default: 86,400).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_in: Option<u32>,
}

impl NewPaymentRequest {
    /// A request for `amount` under `reference`, payable by anyone with its pay code for a day.
    pub fn new(amount: Decimal, reference: impl Into<String>) -> Self {
        NewPaymentRequest { amount, reference: reference.into(), description: None, payer_msisdn: None, expires_in: None }
    }

    /// With the merchant's text.
    pub fn description(mut self, text: impl Into<String>) -> Self {
        self.description = Some(text.into());
        self
    }

    /// Addressed to the customer `msisdn`.
    pub fn payer_msisdn(mut self, msisdn: impl Into<String>) -> Self {
        self.payer_msisdn = Some(msisdn.into());
        self
    }

    /// Expiring `seconds` after its creation (60 to 604,800).
    pub fn expires_in(mut self, seconds: u32) -> Self {
        self.expires_in = Some(seconds);
        self
    }
}

/// Which payment requests a list holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PaymentRequestFilter {
    /// Only requests in this state.
    pub state: Option<PaymentRequestState>,
}

impl PaymentRequestFilter {
    /// Only requests in `state`.
    pub fn state(mut self, state: PaymentRequestState) -> Self {
        self.state = Some(state);
        self
    }
}

/// The payment requests of the client's merchant: `client.payment_requests()`.
#[derive(Debug, Clone, Copy)]
pub struct PaymentRequests<'a> {
    pub(crate) client: &'a Client,
}

impl PaymentRequests<'_> {
    /// Asks to be paid (`createPaymentRequest`) under a new idempotency key: the request is
    /// answered `open` with its pay code.
    ///
    /// # Errors
    /// As every call ([`Error`]); `validation_failed` (`invalid_amount`, `invalid_msisdn`,
    /// `invalid_value` for `expires_in`, ...), `currency_mismatch` for a payer of another
    /// currency.
    pub async fn create(&self, request: &NewPaymentRequest) -> Result<PaymentRequest, Error> {
        self.create_with_key(request, &new_key()).await
    }

    /// [`PaymentRequests::create`] under the caller's idempotency key.
    ///
    /// # Errors
    /// As [`PaymentRequests::create`]; `idempotency_key_reused`.
    pub async fn create_with_key(&self, request: &NewPaymentRequest, key: &str) -> Result<PaymentRequest, Error> {
        self.client.json(&Call::json_body(ops::CREATE_PAYMENT_REQUEST, &[], Some(key), request)?).await
    }

    /// One payment request (`getPaymentRequest`).
    ///
    /// # Errors
    /// As every call; `not_found`.
    pub async fn get(&self, request_id: &str) -> Result<PaymentRequest, Error> {
        self.client.json(&Call::to(ops::GET_PAYMENT_REQUEST, &[request_id])).await
    }

    /// The payment requests, newest first (`listPaymentRequests`).
    pub fn list(&self, filter: PaymentRequestFilter) -> List<PaymentRequest> {
        let call = Call::to(ops::LIST_PAYMENT_REQUESTS, &[]).query("state", filter.state.map(PaymentRequestState::as_str));
        List::new(self.client, call)
    }

    /// Cancels an open request (`cancelPaymentRequest`) under a new idempotency key: it can no
    /// longer be paid, and its pay code is free again.
    ///
    /// # Errors
    /// As every call; `invalid_state` (paid, cancelled or expired), `not_found`.
    pub async fn cancel(&self, request_id: &str) -> Result<PaymentRequest, Error> {
        self.cancel_with_key(request_id, &new_key()).await
    }

    /// [`PaymentRequests::cancel`] under the caller's idempotency key.
    ///
    /// # Errors
    /// As [`PaymentRequests::cancel`].
    pub async fn cancel_with_key(&self, request_id: &str, key: &str) -> Result<PaymentRequest, Error> {
        self.client.json(&Call::keyed(ops::CANCEL_PAYMENT_REQUEST, &[request_id], key)).await
    }
}

impl Client {
    /// Merchant payment requests, paid by customers with a pay code on the USSD menu.
    pub fn payment_requests(&self) -> PaymentRequests<'_> {
        PaymentRequests { client: self }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_request_is_sent_with_an_exact_amount_and_only_the_fields_given() {
        let r = NewPaymentRequest::new(Decimal::new(50_010, 2), "INV-1");
        assert_eq!(serde_json::to_string(&r).unwrap(), r#"{"amount":500.10,"reference":"INV-1"}"#);
        let r = r.description("Table 12").payer_msisdn("254712345678").expires_in(3600);
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            r#"{"amount":500.10,"reference":"INV-1","description":"Table 12","payer_msisdn":"254712345678","expires_in":3600}"#
        );
    }
}
