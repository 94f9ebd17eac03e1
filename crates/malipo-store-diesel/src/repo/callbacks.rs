//! [`CallbackRepo`] on the transaction's connection: callbacks and callback secrets.

use diesel::dsl::sql;
use diesel::prelude::*;
use diesel::sql_types::Bool;
use malipo_core::{Mode, OrgId, Timestamp};
use malipo_service::{Callback, CallbackRepo, CallbackSecret, StoreError};

use crate::claim::DueRows;
use crate::error::db_error;
use crate::rows::{CallbackRow, CallbackSecretRow};
use crate::schema::{callback_secrets, callbacks};
use crate::tx::{inserted, per_backend, DieselTx, IN_CHUNK};
use crate::DbConnection;

/// The conditions of the partial indexes `callbacks_due_idx` and `callbacks_waiting_idx`, as
/// literals so that both databases can use them.
const PENDING: &str = "callbacks.state = 'pending'";
const WAITING: &str = "callbacks.state = 'waiting'";

/// Pending callbacks come due for their next attempt.
const DUE_CALLBACKS: DueRows = DueRows { table: "callbacks", id: "id", due: "next_attempt_at", filter: Some(PENDING) };

impl CallbackRepo for DieselTx<'_> {
    fn insert_callback(&mut self, callback: &Callback) -> Result<(), StoreError> {
        self.flush_due_callbacks()?;
        let row = CallbackRow::of(callback)?;
        inserted(per_backend!(&mut *self.conn, |c| diesel::insert_into(callbacks::table).values(&row).on_conflict_do_nothing().execute(c)))
    }

    fn callbacks_due(&mut self, object_id: &str, now: Timestamp) -> Result<(), StoreError> {
        if self.queue_due_callbacks(object_id, now)? {
            return Ok(());
        }
        make_due(self.conn, &[object_id], now)
    }

    fn claim_due_callbacks(&mut self, now: Timestamp, lease_until: Timestamp, limit: usize) -> Result<Vec<Callback>, StoreError> {
        self.flush_due_callbacks()?;
        let ids = DUE_CALLBACKS.claim(self.conn, now, lease_until, limit)?;
        let mut claimed = self.lock_callbacks(&ids)?;
        // In the claim's order: oldest due first.
        claimed.sort_by_key(|c| ids.iter().position(|id| *id == c.id));
        Ok(claimed)
    }

    fn lock_callbacks(&mut self, ids: &[String]) -> Result<Vec<Callback>, StoreError> {
        self.flush_due_callbacks()?;
        let mut ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        ids.sort_unstable();
        ids.dedup();
        let mut found = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(IN_CHUNK) {
            let query = callbacks::table.filter(callbacks::id.eq_any(chunk)).order(callbacks::id.asc());
            let rows = match &mut *self.conn {
                DbConnection::Pg(c) => query.select(CallbackRow::as_select()).for_update().load(c),
                // No row lock: SQLite's writers are serialised by BEGIN IMMEDIATE.
                DbConnection::Sqlite(c) => query.select(CallbackRow::as_select()).load(c),
            }
            .map_err(db_error)?;
            for row in rows {
                found.push(Callback::try_from(row)?);
            }
        }
        Ok(found)
    }

    fn update_callback(&mut self, callback: &Callback) -> Result<(), StoreError> {
        self.flush_due_callbacks()?;
        let row = CallbackRow::of(callback)?;
        let updated = diesel::update(callbacks::table.find(row.id.as_str()))
            .set((
                callbacks::state.eq(&row.state),
                callbacks::attempts.eq(row.attempts),
                callbacks::next_attempt_at.eq(row.next_attempt_at),
                callbacks::last_status.eq(row.last_status),
                callbacks::last_error.eq(&row.last_error),
                callbacks::updated_at.eq(row.updated_at),
            ))
            .execute(self.conn)
            .map_err(db_error)?;
        if updated == 0 {
            return Err(StoreError::Other(format!("no callback {} to update", row.id)));
        }
        Ok(())
    }

    fn callbacks_of_object(&mut self, org_id: &OrgId, mode: Mode, object_id: &str) -> Result<Vec<Callback>, StoreError> {
        self.flush_due_callbacks()?;
        callbacks::table
            .filter(callbacks::org_id.eq(org_id.as_str()))
            .filter(callbacks::mode.eq(mode.as_str()))
            .filter(callbacks::object_id.eq(object_id))
            .order((callbacks::created_at.asc(), callbacks::id.asc()))
            .select(CallbackRow::as_select())
            .load(self.conn)
            .map_err(db_error)?
            .into_iter()
            .map(Callback::try_from)
            .collect()
    }

    fn callback_secret(&mut self, org_id: &OrgId, mode: Mode) -> Result<Option<CallbackSecret>, StoreError> {
        callback_secrets::table
            .find((org_id.as_str(), mode.as_str()))
            .select(CallbackSecretRow::as_select())
            .first(self.conn)
            .optional()
            .map_err(db_error)?
            .map(CallbackSecret::try_from)
            .transpose()
    }

    fn insert_callback_secret(&mut self, secret: &CallbackSecret) -> Result<(), StoreError> {
        let row = CallbackSecretRow::from(secret);
        inserted(per_backend!(&mut *self.conn, |c| diesel::insert_into(callback_secrets::table)
            .values(&row)
            .on_conflict_do_nothing()
            .execute(c)))
    }

    fn update_callback_secret(&mut self, secret: &CallbackSecret) -> Result<(), StoreError> {
        let row = CallbackSecretRow::from(secret);
        let updated = diesel::update(callback_secrets::table.find((row.org_id.as_str(), row.mode.as_str())))
            .set((
                callback_secrets::secret.eq(&row.secret),
                callback_secrets::previous_secret.eq(&row.previous_secret),
                callback_secrets::previous_secret_expires_at.eq(row.previous_secret_expires_at),
                callback_secrets::updated_at.eq(row.updated_at),
            ))
            .execute(self.conn)
            .map_err(db_error)?;
        if updated == 0 {
            return Err(StoreError::Other(format!("no callback secret of {} to update", row.org_id)));
        }
        Ok(())
    }

    fn purge_callbacks(&mut self, before: Timestamp) -> Result<u64, StoreError> {
        self.flush_due_callbacks()?;
        let deleted = diesel::delete(
            callbacks::table.filter(callbacks::created_at.lt(before.as_micros())).filter(callbacks::state.eq_any(["succeeded", "failed"])),
        )
        .execute(self.conn)
        .map_err(db_error)?;
        Ok(u64::try_from(deleted).unwrap_or(u64::MAX))
    }
}

/// Makes the waiting callbacks of `objects` due at `now`: one guarded update per chunk.
pub(crate) fn make_due(conn: &mut DbConnection, objects: &[&str], now: Timestamp) -> Result<(), StoreError> {
    for chunk in objects.chunks(IN_CHUNK) {
        diesel::update(callbacks::table.filter(callbacks::object_id.eq_any(chunk)).filter(sql::<Bool>(WAITING)))
            .set((
                callbacks::state.eq("pending"),
                callbacks::next_attempt_at.eq(now.as_micros()),
                callbacks::updated_at.eq(now.as_micros()),
            ))
            .execute(conn)
            .map_err(db_error)?;
    }
    Ok(())
}
