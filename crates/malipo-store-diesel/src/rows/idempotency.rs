//! Rows of idempotency.

use diesel::prelude::*;
use malipo_idempotency::{Fingerprint, IdempotencyRecord, Outcome};
use malipo_service::StoreError;

use super::columns::ts;
use crate::schema::idempotency_keys;

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = idempotency_keys, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct KeyRow {
    pub(crate) org_id: String,
    pub(crate) mode: String,
    pub(crate) operation: String,
    pub(crate) key: String,
    pub(crate) fingerprint: String,
    /// Written before snapshots, with `response_body`: the front end's answer.
    pub(crate) status: Option<i32>,
    pub(crate) response_body: Option<Vec<u8>>,
    pub(crate) created_at: i64,
    pub(crate) snapshot: Option<Vec<u8>>,
}

impl TryFrom<KeyRow> for IdempotencyRecord {
    type Error = StoreError;
    fn try_from(r: KeyRow) -> Result<Self, StoreError> {
        let outcome = match (r.snapshot, r.status, r.response_body) {
            (Some(snapshot), None, None) => Some(Outcome::Snapshot(snapshot)),
            (None, Some(_), Some(body)) => Some(Outcome::Earlier(body)),
            (None, None, None) => None,
            _ => return Err(StoreError::Other("stored idempotency outcome is half written".into())),
        };
        Ok(IdempotencyRecord { fingerprint: Fingerprint::from_stored(r.fingerprint), outcome, created_at: ts(r.created_at) })
    }
}
