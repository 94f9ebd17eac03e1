//! Amounts as the API writes them: JSON numbers whose text is the exact decimal (`250.00`), read
//! and written through their text, so that they keep their scale whether or not serde_json's
//! `arbitrary_precision` is on in the program (the client does not turn it on).
//!
//! Used as `#[serde(with = "crate::amount")]` on a `Decimal` and
//! `#[serde(default, with = "crate::amount::option")]` on an `Option<Decimal>`.

use std::str::FromStr;

use rust_decimal::Decimal;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

/// The decimal a JSON number or numeric string says, exactly (`250.00` keeps its two decimals).
pub(crate) fn parse(raw: &str) -> Result<Decimal, String> {
    let raw = raw.trim();
    let text = if raw.starts_with('"') { serde_json::from_str::<String>(raw).map_err(|e| e.to_string())? } else { raw.to_owned() };
    let text = text.trim();
    Decimal::from_str(text).or_else(|_| Decimal::from_scientific(text)).map_err(|e| format!("not an amount: {text:?} ({e})"))
}

/// Writes `amount` as a JSON number with its exact text (`250.00`).
///
/// # Errors
/// The serializer's.
pub(crate) fn serialize<S: Serializer>(amount: &Decimal, s: S) -> Result<S::Ok, S::Error> {
    RawValue::from_string(amount.to_string()).map_err(serde::ser::Error::custom)?.serialize(s)
}

/// Reads a JSON number (or a numeric string) as the decimal its text says.
///
/// # Errors
/// When it is neither.
pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Decimal, D::Error> {
    let raw = Box::<RawValue>::deserialize(d)?;
    parse(raw.get()).map_err(serde::de::Error::custom)
}

/// The same for an `Option<Decimal>`: `null` (or, with `#[serde(default)]`, absent) is `None`.
pub(crate) mod option {
    // By the crate path, not `super`: the module is this file's, not its parent's.
    use crate::amount::{parse, Decimal, Deserialize, Deserializer, RawValue, Serializer};

    /// Writes `Some` as [`crate::amount::serialize`] does, `None` as `null`.
    ///
    /// # Errors
    /// The serializer's.
    pub(crate) fn serialize<S: Serializer>(amount: &Option<Decimal>, s: S) -> Result<S::Ok, S::Error> {
        match amount {
            Some(amount) => crate::amount::serialize(amount, s),
            None => s.serialize_none(),
        }
    }

    /// Reads `null` as `None`, a number or numeric string as [`crate::amount::deserialize`] does.
    ///
    /// # Errors
    /// When it is none of them.
    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Decimal>, D::Error> {
        let raw = Option::<Box<RawValue>>::deserialize(d)?;
        raw.map(|raw| parse(raw.get()).map_err(serde::de::Error::custom)).transpose()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Sample {
        #[serde(with = "crate::amount")]
        amount: Decimal,
        #[serde(default, with = "crate::amount::option")]
        fee: Option<Decimal>,
    }

    #[test]
    fn amounts_keep_their_text_both_ways() {
        let s: Sample = serde_json::from_str(r#"{"amount":250.00,"fee":2.50}"#).unwrap();
        assert_eq!((s.amount.to_string(), s.fee.map(|f| f.to_string())), ("250.00".to_owned(), Some("2.50".to_owned())));
        assert_eq!(serde_json::to_string(&s).unwrap(), r#"{"amount":250.00,"fee":2.50}"#);
        let s: Sample = serde_json::from_str(r#"{"amount":"-100.10","fee":null}"#).unwrap();
        assert_eq!((s.amount.to_string(), s.fee), ("-100.10".to_owned(), None));
        let s: Sample = serde_json::from_str(r#"{"amount":1.5e2}"#).unwrap();
        assert_eq!((s.amount, s.fee), (Decimal::new(150, 0), None));
        assert!(serde_json::from_str::<Sample>(r#"{"amount":"ten"}"#).is_err());
        assert!(serde_json::from_str::<Sample>(r#"{"amount":true}"#).is_err());
    }

    #[test]
    fn an_amount_reads_from_a_parsed_value_too() {
        let value: serde_json::Value = serde_json::from_str(r#"{"amount":250.00}"#).unwrap();
        let s: Sample = serde_json::from_value(value).unwrap();
        assert_eq!(s.amount, Decimal::new(250, 0), "the same value (its scale only with arbitrary precision)");
    }
}
