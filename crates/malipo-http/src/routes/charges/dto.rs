//! The wire shapes of the Charges group (contract section 3) that only it uses.

use malipo_service::NewCharge;
use serde::Deserialize;
use serde_json::value::RawValue;
use utoipa::ToSchema;

use crate::problem::ApiError;
use crate::schema::{IdempotencyKey, Msisdn, Reference, Text100};
use crate::wire::{amount_text, DecimalAmount};

/// `POST /partner/stk` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StkRequest {
    /// Customer phone number, international digits without `+`.
    #[schema(value_type = Msisdn)]
    pub payer_msisdn: String,
    /// Amount in major units: a JSON number or numeric string.
    #[schema(value_type = DecimalAmount)]
    pub amount: Box<RawValue>,
    /// The integrator's reference (1–64 printable characters).
    #[schema(value_type = Reference, example = "ORDER-1042")]
    pub reference: String,
    /// Idempotency key (1–255 visible ASCII).
    #[schema(value_type = IdempotencyKey)]
    pub idem: String,
    /// Optional; must equal the merchant's collection currency.
    #[schema(pattern = "^[A-Z]{3}$", example = "KES")]
    pub currency: Option<String>,
    /// Optional, at most 100 printable characters.
    #[schema(value_type = Option<Text100>)]
    pub description: Option<String>,
}

impl StkRequest {
    /// The use case's raw input (the key stays with the request).
    ///
    /// # Errors
    /// 400 when the amount is neither a number nor a string.
    pub fn into_new(self) -> Result<NewCharge, ApiError> {
        Ok(NewCharge {
            payer_msisdn: self.payer_msisdn,
            amount: amount_text("amount", &self.amount)?,
            currency: self.currency,
            reference: self.reference,
            description: self.description,
        })
    }
}
