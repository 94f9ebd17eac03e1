//! Parsing column values back into domain values (shared by every feature's rows).

use std::str::FromStr;

use malipo_core::{Currency, Mode, Timestamp};
use malipo_service::StoreError;

pub(crate) fn corrupt(what: &str, value: &str) -> StoreError {
    StoreError::Other(format!("stored {what} `{value}` does not parse"))
}

fn parse<T: FromStr>(what: &str, value: &str) -> Result<T, StoreError> {
    value.parse().map_err(|_| corrupt(what, value))
}

pub(crate) fn mode(value: &str) -> Result<Mode, StoreError> {
    parse("mode", value)
}

pub(crate) fn currency(value: &str) -> Result<Currency, StoreError> {
    parse("currency", value)
}

pub(crate) fn ts(micros: i64) -> Timestamp {
    Timestamp::from_micros(micros)
}

/// A count or duration that must fit the column's `INTEGER`.
pub(crate) fn integer(what: &str, value: u32) -> Result<i32, StoreError> {
    i32::try_from(value).map_err(|_| StoreError::Other(format!("{what} {value} does not fit the database's INTEGER")))
}
