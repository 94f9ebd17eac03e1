//! Rows of idempotency.

use diesel::prelude::*;
use malipo_idempotency::{Fingerprint, IdempotencyRecord, StoredResponse};
use malipo_service::StoreError;

use super::columns::{corrupt, ts};
use crate::schema::idempotency_keys;

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = idempotency_keys, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct KeyRow {
    pub(crate) org_id: String,
    pub(crate) mode: String,
    pub(crate) operation: String,
    pub(crate) key: String,
    pub(crate) fingerprint: String,
    pub(crate) status: Option<i32>,
    pub(crate) response_body: Option<Vec<u8>>,
    pub(crate) created_at: i64,
}

impl TryFrom<KeyRow> for IdempotencyRecord {
    type Error = StoreError;
    fn try_from(r: KeyRow) -> Result<Self, StoreError> {
        let response = match (r.status, r.response_body) {
            (Some(status), Some(body)) => {
                Some(StoredResponse { status: u16::try_from(status).map_err(|_| corrupt("HTTP status", &status.to_string()))?, body })
            }
            (None, None) => None,
            _ => return Err(StoreError::Other("stored idempotency response is half written".into())),
        };
        Ok(IdempotencyRecord { fingerprint: Fingerprint::from_stored(r.fingerprint), response, created_at: ts(r.created_at) })
    }
}
