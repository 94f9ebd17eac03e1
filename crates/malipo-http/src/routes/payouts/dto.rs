//! The wire shapes of the Payouts group (contract section 5) that only it uses; the payout
//! itself is shared with bulk payouts and events (`routes::shared::PayoutDto`).

use malipo_service::NewPayout;
use serde::Deserialize;
use serde_json::value::RawValue;
use utoipa::ToSchema;

use crate::problem::ApiError;
use crate::schema::{Msisdn, Reference, Text100};
use crate::wire::{amount_text, DecimalAmount};

/// `POST /payouts` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PayoutRequest {
    /// The payee's number, international digits without `+`.
    #[schema(value_type = Msisdn)]
    pub payee_msisdn: String,
    /// Amount in major units: a JSON number or a numeric string.
    #[schema(value_type = DecimalAmount, example = "1500.00")]
    pub amount: Box<RawValue>,
    /// The integrator's reference (1–64 characters).
    #[schema(value_type = Reference, example = "SALARY-11-007")]
    pub reference: String,
    /// Optional; must equal the payout account's currency.
    #[schema(example = "KES", pattern = "^[A-Z]{3}$")]
    pub currency: Option<String>,
    /// Optional text for the payee (at most 100 characters).
    #[schema(value_type = Option<Text100>, example = "November salary")]
    pub narration: Option<String>,
}

impl PayoutRequest {
    /// The use case's input, the amount as its exact decimal text.
    ///
    /// # Errors
    /// 400 when the amount is neither a number nor a string.
    pub fn into_new(self) -> Result<NewPayout, ApiError> {
        Ok(NewPayout {
            payee_msisdn: self.payee_msisdn,
            amount: amount_text("amount", &self.amount)?,
            reference: self.reference,
            currency: self.currency,
            narration: self.narration,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::extract::parse_json;

    #[test]
    fn a_payout_request_keeps_the_amount_exact_and_refuses_unknown_fields() {
        let r =
            parse_json::<PayoutRequest>(br#"{"payee_msisdn":"254712345678","amount":1500.10,"reference":"R-1","narration":"hi"}"#).unwrap();
        let new = r.value.into_new().unwrap();
        assert_eq!((new.amount.as_str(), new.currency, new.narration.as_deref()), ("1500.10", None, Some("hi")));
        let e = parse_json::<PayoutRequest>(br#"{"payee_msisdn":"254712345678","amount":"1","reference":"R-1","note":"x"}"#).unwrap_err();
        assert!(matches!(e, ApiError::Fields(ref f) if f[0].field == "note" && f[0].code == "unknown_field"), "{e:?}");
        let e =
            parse_json::<PayoutRequest>(br#"{"payee_msisdn":"254712345678","amount":true,"reference":"R-1"}"#).unwrap().value.into_new();
        assert!(matches!(e, Err(ApiError::InvalidRequest(_))));
    }
}
