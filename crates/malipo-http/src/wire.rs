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
///
/// What `malipo_core::parse_amount` accepts whatever the currency: digits with an optional
/// fraction, no sign, no exponent, not zero, at most 10^13 in major units, at most two
/// significant decimals (a currency without minor units, such as UGX, takes none: 422
/// `invalid_amount`, as does an amount above the country's maximum).
pub struct DecimalAmount;

/// [`DecimalAmount`]'s string form: a whole part of at most 13 significant digits and at most
/// two significant decimals (trailing zeros are free), not zero.
pub const AMOUNT_PATTERN: &str = r"^(0*[1-9][0-9]{0,12}(\.[0-9]{1,2}0*)?|0+\.([1-9][0-9]?|0[1-9])0*)$";

impl utoipa::PartialSchema for DecimalAmount {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Type};
        OneOfBuilder::new()
            .item(
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .pattern(Some(AMOUNT_PATTERN))
                    .description(Some("A decimal string in major units, e.g. \"250.00\"")),
            )
            .item(
                ObjectBuilder::new()
                    .schema_type(Type::Number)
                    .exclusive_minimum(Some(0))
                    .maximum(Some(9_999_999_999_999.99))
                    .multiple_of(Some(0.01))
                    .description(Some("A JSON number in major units without an exponent, e.g. 250.00")),
            )
            .description(Some(
                "An amount in major units, as a decimal string or a JSON number; positive, no exponent, at most the \
                 currency's ISO 4217 minor units of decimals (else 422 invalid_amount)",
            ))
            .examples(["250.00"])
            .into()
    }
}

impl utoipa::ToSchema for DecimalAmount {}

/// A small whole number in a request body (a KYC tier): a JSON integer from 0 to 255, also
/// written with a zero fraction (`2.0`), which JSON Schema's `integer` admits too. Use with
/// `#[serde(deserialize_with = "crate::wire::whole_u8")]`.
///
/// # Errors
/// Another JSON type, a fraction or a value out of range (400 `invalid_request`).
pub fn whole_u8<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u8, D::Error> {
    use serde::de::{Deserialize, Error, Unexpected};
    let n = serde_json::Number::deserialize(d)?;
    let text = n.to_string();
    let whole = match text.split_once('.') {
        Some((whole, fraction)) if fraction.bytes().all(|b| b == b'0') => whole,
        Some(_) => return Err(D::Error::invalid_value(Unexpected::Other(&text), &"an integer from 0 to 255")),
        None => text.as_str(),
    };
    whole.parse::<u8>().map_err(|_| D::Error::invalid_value(Unexpected::Other(&text), &"an integer from 0 to 255"))
}

/// An optional whole number of seconds in a request body (`expires_in`): a JSON integer, also
/// written with a zero fraction (`3600.0`), which JSON Schema's `integer` admits too; absent or
/// `null`: `None`. Use with `#[serde(default, deserialize_with = "crate::wire::optional_whole_i64")]`.
///
/// # Errors
/// Another JSON type, a fraction or a value out of range (400 `invalid_request`).
pub fn optional_whole_i64<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    use serde::de::{Deserialize, Error, Unexpected};
    let Some(n) = Option::<serde_json::Number>::deserialize(d)? else { return Ok(None) };
    let text = n.to_string();
    let whole = match text.split_once('.') {
        Some((whole, fraction)) if fraction.bytes().all(|b| b == b'0') => whole,
        Some(_) => return Err(D::Error::invalid_value(Unexpected::Other(&text), &"a whole number")),
        None => text.as_str(),
    };
    whole.parse::<i64>().map(Some).map_err(|_| D::Error::invalid_value(Unexpected::Other(&text), &"a whole number"))
}

/// [`whole_u8`] for an optional field (absent or `null`: `None`); use with
/// `#[serde(default, deserialize_with = "crate::wire::optional_whole_u8")]`.
///
/// # Errors
/// As [`whole_u8`].
pub fn optional_whole_u8<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u8>, D::Error> {
    #[derive(serde::Deserialize)]
    struct Whole(#[serde(deserialize_with = "whole_u8")] u8);
    Ok(<Option<Whole> as serde::Deserialize>::deserialize(d)?.map(|w| w.0))
}

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
    fn small_whole_numbers_may_carry_a_zero_fraction() {
        #[derive(Debug, serde::Deserialize)]
        struct Tiers {
            #[serde(deserialize_with = "whole_u8")]
            tier: u8,
            #[serde(default, deserialize_with = "optional_whole_u8")]
            kyc_tier: Option<u8>,
        }
        let read = |s: &str| serde_json::from_str::<Tiers>(s).map(|t| (t.tier, t.kyc_tier));
        assert_eq!(read(r#"{"tier":2}"#).unwrap(), (2, None));
        assert_eq!(read(r#"{"tier":37.0,"kyc_tier":227.00}"#).unwrap(), (37, Some(227)));
        assert_eq!(read(r#"{"tier":255,"kyc_tier":null}"#).unwrap(), (255, None));
        for bad in
            [r#"{"tier":2.5}"#, r#"{"tier":256}"#, r#"{"tier":-1}"#, r#"{"tier":"2"}"#, r#"{"tier":1e1}"#, r#"{"tier":1,"kyc_tier":0.1}"#]
        {
            assert!(read(bad).is_err(), "{bad}");
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
