//! [`IdempotencyRepo`] on the transaction's connection: idempotency keys.

use diesel::prelude::*;
use malipo_core::Timestamp;
use malipo_idempotency::{IdempotencyKey, IdempotencyRecord, KeyScope, Outcome};
use malipo_service::{IdempotencyRepo, StoreError};

use crate::cached::written;
use crate::error::db_error;
use crate::rows::KeyRow;
use crate::schema::idempotency_keys;
use crate::tx::DieselTx;

impl IdempotencyRepo for DieselTx<'_> {
    fn idempotency_record(&mut self, scope: &KeyScope, key: &IdempotencyKey) -> Result<Option<IdempotencyRecord>, StoreError> {
        idempotency_keys::table
            .find((scope.org_id.as_str(), scope.mode.as_str(), scope.operation.as_str(), key.as_str()))
            .select(KeyRow::as_select())
            .first(self.conn)
            .optional()
            .map_err(db_error)?
            .map(IdempotencyRecord::try_from)
            .transpose()
    }

    fn insert_key(&mut self, scope: &KeyScope, key: &IdempotencyKey, record: &IdempotencyRecord) -> Result<bool, StoreError> {
        let row = key_row(scope, key, record);
        // On PostgreSQL this waits for a concurrent uncommitted insert of the same key.
        let inserted = written!(&mut *self.conn, diesel::insert_into(idempotency_keys::table).values(&row).on_conflict_do_nothing())
            .map_err(db_error)?;
        Ok(inserted > 0)
    }

    fn insert_keys(&mut self, keys: &[(KeyScope, IdempotencyKey, IdempotencyRecord)]) -> Result<usize, StoreError> {
        let rows: Vec<KeyRow> = keys.iter().map(|(scope, key, record)| key_row(scope, key, record)).collect();
        written!(rows &mut *self.conn, idempotency_keys::table, &rows, on_conflict_do_nothing).map_err(db_error)
    }

    fn purge_keys(&mut self, before: Timestamp) -> Result<u64, StoreError> {
        let deleted = diesel::delete(idempotency_keys::table.filter(idempotency_keys::created_at.lt(before.as_micros())))
            .execute(self.conn)
            .map_err(db_error)?;
        Ok(u64::try_from(deleted).unwrap_or(u64::MAX))
    }
}

fn key_row(scope: &KeyScope, key: &IdempotencyKey, record: &IdempotencyRecord) -> KeyRow {
    KeyRow {
        org_id: scope.org_id.as_str().to_owned(),
        mode: scope.mode.as_str().to_owned(),
        operation: scope.operation.clone(),
        key: key.as_str().to_owned(),
        fingerprint: record.fingerprint.as_str().to_owned(),
        // An earlier version's answer (which the service never writes) as that version kept it.
        status: matches!(record.outcome, Some(Outcome::Earlier(_))).then_some(200),
        response_body: match &record.outcome {
            Some(Outcome::Earlier(body)) => Some(body.clone()),
            _ => None,
        },
        created_at: record.created_at.as_micros(),
        snapshot: match &record.outcome {
            Some(Outcome::Snapshot(s)) => Some(s.clone()),
            _ => None,
        },
    }
}
