//! Snapshots: a use case's result as the service keeps it with an idempotency key, in the
//! effect's own transaction, so that a repeat of the request is given the same result whatever
//! has happened since (the front end renders it again: the same bytes, for the same renderer).
//!
//! A snapshot is JSON `{"v":1,"value":…}` of the domain value (the domain types' own serde
//! form). Its format is the service's, versioned by `v`, and pinned by the golden tests of
//! `tests/use_cases/snapshots.rs`: a change to a domain type that changes its form fails them, and
//! must then read the older version too (keys live 48 hours) and raise [`VERSION`].

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::error::ServiceError;

/// The version of the format written.
pub const VERSION: u32 = 1;

#[derive(Serialize)]
struct Writing<'a, T> {
    v: u32,
    value: &'a T,
}

#[derive(Deserialize)]
struct Reading<T> {
    v: u32,
    value: T,
}

/// `value` as a snapshot.
///
/// # Errors
/// [`ServiceError::Internal`] when it cannot be written (a map with keys that are not text).
pub fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>, ServiceError> {
    serde_json::to_vec(&Writing { v: VERSION, value }).map_err(|e| ServiceError::Internal(format!("cannot write a snapshot: {e}")))
}

/// The value a snapshot holds.
///
/// # Errors
/// [`ServiceError::Internal`] for a snapshot of another shape or an unknown version.
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ServiceError> {
    let read: Reading<T> = serde_json::from_slice(bytes).map_err(|e| ServiceError::Internal(format!("cannot read a snapshot: {e}")))?;
    if read.v != VERSION {
        return Err(ServiceError::Internal(format!("a snapshot of version {} (this version reads {VERSION})", read.v)));
    }
    Ok(read.value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_reads_back_its_value_and_refuses_another_version() {
        let bytes = encode(&("ch_1", 250_i64)).unwrap_or_default();
        assert_eq!(String::from_utf8_lossy(&bytes), r#"{"v":1,"value":["ch_1",250]}"#);
        assert_eq!(decode::<(String, i64)>(&bytes).ok(), Some(("ch_1".to_owned(), 250)));
        assert!(decode::<(String, i64)>(br#"{"v":2,"value":["ch_1",250]}"#).is_err());
        assert!(decode::<(String, i64)>(b"{\"charge_ref\":\"ch_1\"}").is_err(), "an earlier version's answer is no snapshot");
    }
}
