//! The wire shapes of the Charges group (contract section 3) that only it uses.

use serde::Deserialize;
use serde_json::value::RawValue;
use utoipa::ToSchema;

/// `POST /partner/stk` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StkRequest {
    /// Customer phone number, international digits without `+`.
    #[schema(example = "254712345678")]
    pub payer_msisdn: String,
    /// Amount in major units: a JSON number or numeric string.
    #[schema(value_type = f64, example = 250.00)]
    pub amount: Box<RawValue>,
    /// The integrator's reference (1–64 characters).
    #[schema(example = "ORDER-1042")]
    pub reference: String,
    /// Idempotency key (1–255 visible ASCII).
    pub idem: String,
    /// Optional; must equal the merchant's collection currency.
    pub currency: Option<String>,
    /// Optional, at most 100 characters.
    pub description: Option<String>,
}
