//! The wire forms of money and time (contract section 1), both ways: amounts are JSON numbers
//! with two decimals in answers and a JSON number or numeric string in requests; times are
//! RFC 3339 in UTC. Every DTO and handler goes through here.

use malipo_core::{Currency, MinorUnit, Timestamp};
use serde_json::value::RawValue;

use crate::problem::ApiError;

/// An amount as a JSON number with at least two decimals (`250.00`), never through a float.
pub fn money(amount: MinorUnit, currency: Currency) -> Box<RawValue> {
    let text = currency.format_amount(amount);
    RawValue::from_string(text).unwrap_or_else(|_| RawValue::from_string("0.00".into()).unwrap_or_default())
}

/// The exact decimal text of an amount sent as a JSON number or numeric string.
///
/// # Errors
/// 400 `invalid_request` for other JSON types.
pub fn amount_text(field: &str, raw: &RawValue) -> Result<String, ApiError> {
    let text = raw.get().trim();
    if text.starts_with('"') {
        serde_json::from_str::<String>(text).map_err(|e| ApiError::InvalidRequest(format!("{field}: {e}")))
    } else if text.starts_with(|c: char| c == '-' || c.is_ascii_digit()) {
        Ok(text.to_owned())
    } else {
        Err(ApiError::InvalidRequest(format!("{field} must be a number or a numeric string")))
    }
}

/// The OpenAPI schema of an amount in a request: a decimal string or a JSON number in major
/// units, read exactly (never through a binary float). Fields typed `Box<RawValue>` name it with
/// `#[schema(value_type = DecimalAmount)]`.
pub struct DecimalAmount;

impl utoipa::PartialSchema for DecimalAmount {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Type};
        OneOfBuilder::new()
            .item(
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .pattern(Some(r"^[0-9]+(\.[0-9]+)?$"))
                    .description(Some("A decimal string in major units, e.g. \"250.00\"")),
            )
            .item(ObjectBuilder::new().schema_type(Type::Number).description(Some("A JSON number in major units, e.g. 250.00")))
            .description(Some(
                "An amount in major units, as a decimal string or a JSON number; positive, no exponent, at most the \
                 currency's ISO 4217 minor units of decimals (else 422 invalid_amount)",
            ))
            .examples(["250.00"])
            .into()
    }
}

impl utoipa::ToSchema for DecimalAmount {}

/// A time as RFC 3339 in UTC with a `Z` suffix (`2025-11-22T10:00:00Z`; a fraction only when
/// there is one).
pub fn time(t: Timestamp) -> String {
    t.to_rfc3339()
}

/// A time given in a request (e.g. a query parameter): RFC 3339, any offset.
///
/// # Errors
/// 400 `invalid_request` naming `field`.
pub fn parse_time(field: &str, text: &str) -> Result<Timestamp, ApiError> {
    Timestamp::parse_rfc3339(text).map_err(|_| ApiError::InvalidRequest(format!("{field} must be an RFC 3339 timestamp")))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap()
    }

    #[test]
    fn amounts_are_written_with_two_decimals() {
        assert_eq!(money(MinorUnit::new(25_000), Currency::KES).get(), "250.00");
        assert_eq!(money(MinorUnit::new(-150), Currency::KES).get(), "-1.50");
        assert_eq!(money(MinorUnit::new(5_000), "UGX".parse().unwrap()).get(), "5000.00");
    }

    #[test]
    fn amounts_are_read_as_exact_text() {
        assert_eq!(amount_text("amount", &raw("500.5")).unwrap(), "500.5");
        assert_eq!(amount_text("amount", &raw(r#""500.00""#)).unwrap(), "500.00");
        assert_eq!(amount_text("amount", &raw("-1")).unwrap(), "-1");
        assert_eq!(amount_text("amount", &raw("0.1000000000000000055511151231257827")).unwrap(), "0.1000000000000000055511151231257827");
        for bad in ["true", "null", "[1]", r#"{"a":1}"#] {
            let e = amount_text("balance", &raw(bad)).unwrap_err();
            assert_eq!(e.to_string(), "balance must be a number or a numeric string", "{bad}");
        }
    }

    #[test]
    fn times_are_rfc_3339_in_utc() {
        assert_eq!(time(Timestamp::from_micros(1_763_805_600_000_000)), "2025-11-22T10:00:00Z");
        assert_eq!(time(Timestamp::from_micros(1_763_805_600_000_001)), "2025-11-22T10:00:00.000001Z");
        assert_eq!(parse_time("from", "2025-11-22T13:00:00+03:00").unwrap(), Timestamp::from_micros(1_763_805_600_000_000));
        assert_eq!(parse_time("from", "yesterday").unwrap_err().to_string(), "from must be an RFC 3339 timestamp");
    }
}
