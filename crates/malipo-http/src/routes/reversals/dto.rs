//! The wire shapes of the Reversals group (contract section 8).

use malipo_payouts::{Reversal, ReversalOriginal};
use malipo_service::NewReversal;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use utoipa::ToSchema;

use crate::problem::ApiError;
use crate::schema::Reason255;
use crate::wire::{amount_text, money, time, DecimalAmount};

/// `POST /reversals` body: exactly one of `charge_ref`, `payout_ref` and `transaction_id`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReversalRequest {
    /// A completed charge (`ch_…`).
    #[schema(example = "ch_01JDX3C4ZQ8V7K2M5N6P", pattern = "^ch_[A-Za-z0-9_-]{1,64}$")]
    pub charge_ref: Option<String>,
    /// A completed payout (`po_…`).
    #[schema(pattern = "^po_[A-Za-z0-9_-]{1,64}$")]
    pub payout_ref: Option<String>,
    /// A completed charge's or payout's ledger transaction (`tx_…`).
    #[schema(pattern = "^tx_[A-Za-z0-9_-]{1,64}$")]
    pub transaction_id: Option<String>,
    /// How much of the original to give back, in major units (a JSON number or a numeric
    /// string); the whole of what is left when left out.
    #[schema(value_type = Option<DecimalAmount>, example = "100.00")]
    pub amount: Option<Box<RawValue>>,
    /// Why (1–255 characters).
    #[schema(value_type = Reason255, example = "customer returned the goods")]
    pub reason: String,
}

impl ReversalRequest {
    /// The use case's input, the amount as its exact decimal text.
    ///
    /// # Errors
    /// 400 when the amount is neither a number nor a string.
    pub fn into_new(self) -> Result<NewReversal, ApiError> {
        Ok(NewReversal {
            charge_ref: self.charge_ref,
            payout_ref: self.payout_ref,
            transaction_id: self.transaction_id,
            amount: self.amount.map(|a| amount_text("amount", &a)).transpose()?,
            reason: self.reason,
        })
    }
}

/// A completed reversal.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReversalDto {
    /// `rv_…`.
    pub reversal_id: String,
    /// Always `completed`: a reversal happens at once.
    pub state: &'static str,
    /// `test` or `live`.
    pub mode: &'static str,
    /// The charge reversed (`ch_…`); null for a payout.
    pub charge_ref: Option<String>,
    /// The payout reversed (`po_…`); null for a charge.
    pub payout_ref: Option<String>,
    /// The original's ledger transaction (`tx_…`).
    pub original_transaction_id: String,
    /// What was given back (two decimals); the original's `amount_reversed` rose by it.
    #[schema(value_type = f64, example = 100.00)]
    pub amount: Box<RawValue>,
    /// The share of the original's fee given back with it.
    #[schema(value_type = f64)]
    pub fee_reversed: Box<RawValue>,
    /// ISO 4217: the original's currency.
    pub currency: String,
    /// Why.
    pub reason: String,
    /// The compensating ledger transaction (`tx_…`).
    pub transaction_id: String,
    /// RFC 3339 UTC.
    pub created_at: String,
}

impl From<&Reversal> for ReversalDto {
    fn from(r: &Reversal) -> Self {
        let (charge_ref, payout_ref) = match &r.original {
            ReversalOriginal::Charge(id) => (Some(id.to_string()), None),
            ReversalOriginal::Payout(id) => (None, Some(id.to_string())),
        };
        ReversalDto {
            reversal_id: r.id.to_string(),
            state: "completed",
            mode: r.mode.as_str(),
            charge_ref,
            payout_ref,
            original_transaction_id: r.original_transaction_id.to_string(),
            amount: money(r.amount, r.currency),
            fee_reversed: money(r.fee_reversed, r.currency),
            currency: r.currency.to_string(),
            reason: r.reason.clone(),
            transaction_id: r.transaction_id.to_string(),
            created_at: time(r.created_at),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use malipo_core::ChargeRef;

    use crate::extract::parse_json;
    use crate::testing::reversal;

    #[test]
    fn a_payout_reversal_renders_every_field_of_the_contract_in_order() {
        assert_eq!(
            serde_json::to_string(&ReversalDto::from(&reversal())).unwrap(),
            concat!(
                r#"{"reversal_id":"rv_rev1","state":"completed","mode":"test","charge_ref":null,"payout_ref":"po_payout1","#,
                r#""original_transaction_id":"tx_paid1","amount":500.00,"fee_reversed":5.00,"currency":"KES","reason":"paid twice","#,
                r#""transaction_id":"tx_back1","created_at":"2025-11-22T11:00:00Z"}"#
            )
        );
    }

    #[test]
    fn a_charge_reversal_names_the_charge() {
        let mut r = reversal();
        r.original = ReversalOriginal::Charge(ChargeRef::from_trusted("ch_c1".into()));
        let json = serde_json::to_string(&ReversalDto::from(&r)).unwrap();
        assert!(json.contains(r#""charge_ref":"ch_c1","payout_ref":null,"#), "{json}");
    }

    #[test]
    fn the_amount_may_be_left_out_or_null() {
        for body in [&br#"{"charge_ref":"ch_c1","reason":"r"}"#[..], br#"{"charge_ref":"ch_c1","amount":null,"reason":"r"}"#] {
            let new = parse_json::<ReversalRequest>(body).unwrap().value.into_new().unwrap();
            assert_eq!((new.charge_ref.as_deref(), new.amount, new.reason.as_str()), (Some("ch_c1"), None, "r"));
        }
        let new =
            parse_json::<ReversalRequest>(br#"{"payout_ref":"po_1","amount":"250.5","reason":"r"}"#).unwrap().value.into_new().unwrap();
        assert_eq!((new.payout_ref.as_deref(), new.amount.as_deref()), (Some("po_1"), Some("250.5")));
        assert!(matches!(parse_json::<ReversalRequest>(br#"{"charge_ref":"ch_c1"}"#), Err(ApiError::Fields(_))));
    }
}
