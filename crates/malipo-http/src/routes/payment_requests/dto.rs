//! The wire shapes of the Payment requests group (contract section 11).

use malipo_requests::PaymentRequest;
use malipo_service::NewPaymentRequest;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use utoipa::ToSchema;

use crate::problem::ApiError;
use crate::schema::{Msisdn, Reference, Text100};
use crate::wire::{amount_text, money, time, DecimalAmount};

/// `POST /biz/request` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PaymentRequestRequest {
    /// What the customer pays, in major units: a JSON number or a numeric string.
    #[schema(value_type = DecimalAmount, example = "500.00")]
    pub amount: Box<RawValue>,
    /// The merchant's reference (1–64 characters).
    #[schema(value_type = Reference, example = "INV-2026-0042")]
    pub reference: String,
    /// Optional text (at most 100 characters).
    #[schema(value_type = Option<Text100>, example = "Table 12")]
    pub description: Option<String>,
    /// Optional: the customer it is addressed to (international digits without `+`); the
    /// request also shows in that customer's pending approvals on the USSD menu.
    #[schema(value_type = Option<Msisdn>, example = "254712345678")]
    pub payer_msisdn: Option<String>,
    /// Seconds until it expires: 60 to 604800 (seven days); default 86400. A whole number
    /// (`3600` or `3600.0`).
    #[schema(value_type = Option<i64>, example = 3600, minimum = 60, maximum = 604800)]
    #[serde(default, deserialize_with = "crate::wire::optional_whole_i64")]
    pub expires_in: Option<i64>,
}

impl PaymentRequestRequest {
    /// The use case's input, the amount as its exact decimal text.
    ///
    /// # Errors
    /// 400 when the amount is neither a number nor a string.
    pub fn into_new(self) -> Result<NewPaymentRequest, ApiError> {
        Ok(NewPaymentRequest {
            amount: amount_text("amount", &self.amount)?,
            reference: self.reference,
            description: self.description,
            payer_msisdn: self.payer_msisdn,
            expires_in: self.expires_in,
        })
    }
}

/// `POST /biz/requests/{request_id}/cancel` body: none, or an empty object.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CancelRequest {}

/// A merchant payment request.
#[derive(Debug, Serialize, ToSchema)]
pub struct PaymentRequestDto {
    /// `pr_…`.
    pub request_id: String,
    /// Six digits the customer enters on the USSD menu ("Pay merchant"); unique among the open
    /// requests of the mode, and reused once the request is no longer open.
    #[schema(example = "482913")]
    pub pay_code: String,
    /// `open`, `paid`, `cancelled` or `expired`.
    pub state: &'static str,
    /// `test` or `live`.
    pub mode: &'static str,
    /// What the customer pays (two decimals).
    #[schema(value_type = f64, example = 500.00)]
    pub amount: Box<RawValue>,
    /// ISO 4217: the merchant's collection currency.
    pub currency: String,
    /// The country's `payment_request` fee, paid by the merchant: its collection account
    /// receives `amount - fee`.
    #[schema(value_type = f64, example = 4.00)]
    pub fee: Box<RawValue>,
    /// The merchant's reference.
    pub reference: String,
    /// Optional text.
    pub description: Option<String>,
    /// The customer it is addressed to, if any.
    pub payer_msisdn: Option<String>,
    /// Who paid it.
    pub paid_by_msisdn: Option<String>,
    /// The ledger transaction that paid it (`tx_…`).
    pub transaction_id: Option<String>,
    /// RFC 3339 UTC: when it stops being payable.
    pub expires_at: String,
    /// RFC 3339 UTC.
    pub created_at: String,
    /// RFC 3339 UTC.
    pub paid_at: Option<String>,
}

impl From<&PaymentRequest> for PaymentRequestDto {
    fn from(r: &PaymentRequest) -> Self {
        let c = r.currency;
        PaymentRequestDto {
            request_id: r.id.to_string(),
            pay_code: r.pay_code.to_string(),
            state: r.state.as_str(),
            mode: r.mode.as_str(),
            amount: money(r.amount, c),
            currency: c.to_string(),
            fee: money(r.fee, c),
            reference: r.reference.clone(),
            description: r.description.clone(),
            payer_msisdn: r.payer_msisdn.as_ref().map(ToString::to_string),
            paid_by_msisdn: r.paid_by_msisdn.as_ref().map(ToString::to_string),
            transaction_id: r.transaction_id.as_ref().map(ToString::to_string),
            expires_at: time(r.expires_at),
            created_at: time(r.created_at),
            paid_at: r.paid_at.map(time),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::extract::parse_json;

    #[test]
    fn a_request_keeps_the_amount_exact_and_refuses_unknown_fields() {
        let r = parse_json::<PaymentRequestRequest>(br#"{"amount":500.10,"reference":"INV-1","expires_in":60}"#).unwrap();
        let new = r.value.into_new().unwrap();
        assert_eq!((new.amount.as_str(), new.expires_in, new.payer_msisdn), ("500.10", Some(60), None));
        let e = parse_json::<PaymentRequestRequest>(br#"{"amount":"1","reference":"R-1","payer":"x"}"#).unwrap_err();
        assert!(matches!(e, ApiError::Fields(ref f) if f[0].field == "payer" && f[0].code == "unknown_field"), "{e:?}");
        let e = parse_json::<PaymentRequestRequest>(br#"{"amount":true,"reference":"R-1"}"#).unwrap().value.into_new();
        assert!(matches!(e, Err(ApiError::InvalidRequest(_))));
    }
}
