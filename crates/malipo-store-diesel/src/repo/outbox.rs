//! [`OutboxRepo`] on the transaction's connection: events, deliveries and attempts.

use diesel::dsl::sql;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Bool};
use malipo_core::{EndpointId, EventId, Mode, OrgId, Timestamp};
use malipo_service::{OutboxRepo, StoreError};
use malipo_webhooks::{Attempt, Delivery, Event};

use crate::error::db_error;
use crate::rows::{AttemptRow, DeliveryRow, EventRow};
use crate::schema::{deliveries, delivery_attempts, events};
use crate::tx::{inserted, limit_i64, locked_row, per_backend, ClaimedRow, DieselTx, IN_CHUNK};
use crate::DbConnection;

/// The condition of the partial indexes `deliveries_due_idx` and
/// `deliveries_pending_endpoint_idx`, as a literal so that both databases can use them.
fn pending_delivery() -> diesel::expression::SqlLiteral<Bool> {
    sql::<Bool>("deliveries.state = 'pending'")
}

impl OutboxRepo for DieselTx<'_> {
    fn insert_event(&mut self, event: &Event) -> Result<(), StoreError> {
        let row = EventRow::from(event);
        inserted(per_backend!(&mut *self.conn, |c| diesel::insert_into(events::table).values(&row).on_conflict_do_nothing().execute(c)))
    }

    fn event(&mut self, org_id: &OrgId, mode: Mode, id: &EventId) -> Result<Option<Event>, StoreError> {
        events::table
            .filter(events::id.eq(id.as_str()))
            .filter(events::org_id.eq(org_id.as_str()))
            .filter(events::mode.eq(mode.as_str()))
            .select(EventRow::as_select())
            .first(self.conn)
            .optional()
            .map_err(db_error)?
            .map(Event::try_from)
            .transpose()
    }

    fn list_events(
        &mut self,
        org_id: &OrgId,
        mode: Mode,
        kind: Option<&str>,
        after: Option<&EventId>,
        limit: usize,
    ) -> Result<Vec<Event>, StoreError> {
        let mut query = events::table.filter(events::org_id.eq(org_id.as_str())).filter(events::mode.eq(mode.as_str())).into_boxed();
        if let Some(kind) = kind {
            query = query.filter(events::kind.eq(kind));
        }
        if let Some(after) = after {
            query = query.filter(events::id.gt(after.as_str()));
        }
        query
            .order(events::id.asc())
            .limit(limit_i64(limit))
            .select(EventRow::as_select())
            .load(self.conn)
            .map_err(db_error)?
            .into_iter()
            .map(Event::try_from)
            .collect()
    }

    fn insert_delivery(&mut self, delivery: &Delivery) -> Result<(), StoreError> {
        let row = DeliveryRow::try_from(delivery)?;
        inserted(per_backend!(&mut *self.conn, |c| diesel::insert_into(deliveries::table).values(&row).on_conflict_do_nothing().execute(c)))
    }

    fn lock_delivery(&mut self, id: &str) -> Result<Option<Delivery>, StoreError> {
        locked_row!(&mut *self.conn, deliveries::table.find(id), DeliveryRow => Delivery)
    }

    fn update_delivery(&mut self, delivery: &Delivery) -> Result<(), StoreError> {
        let row = DeliveryRow::try_from(delivery)?;
        let updated = diesel::update(deliveries::table.find(row.id.as_str()))
            .set((
                deliveries::state.eq(&row.state),
                deliveries::attempts.eq(row.attempts),
                deliveries::next_attempt_at.eq(row.next_attempt_at),
                deliveries::updated_at.eq(row.updated_at),
            ))
            .execute(self.conn)
            .map_err(db_error)?;
        if updated == 0 {
            return Err(StoreError::Other(format!("no delivery {} to update", row.id)));
        }
        Ok(())
    }

    fn claim_due_deliveries(&mut self, now: Timestamp, lease_until: Timestamp, limit: usize) -> Result<Vec<String>, StoreError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let mut claimed: Vec<(i64, String)> = match &mut *self.conn {
            DbConnection::Pg(c) => {
                // As `claim_due_charges`: rows another claimer has locked are skipped, and a row
                // another claimer has just leased fails `next_attempt_at <= now` when re-checked.
                let rows: Vec<ClaimedRow> = diesel::sql_query(
                    "WITH due AS ( \
                         SELECT id, next_attempt_at FROM deliveries \
                          WHERE state = 'pending' AND next_attempt_at <= $1 \
                          ORDER BY next_attempt_at, id \
                          LIMIT $3 \
                            FOR UPDATE SKIP LOCKED) \
                     UPDATE deliveries SET next_attempt_at = $2 \
                       FROM due \
                      WHERE deliveries.id = due.id \
                     RETURNING deliveries.id AS id, due.next_attempt_at AS due_at",
                )
                .bind::<BigInt, _>(now.as_micros())
                .bind::<BigInt, _>(lease_until.as_micros())
                .bind::<BigInt, _>(limit_i64(limit))
                .load(c)
                .map_err(db_error)?;
                rows.into_iter().map(|r| (r.due_at, r.id)).collect()
            }
            DbConnection::Sqlite(c) => {
                // Writers are serialised by BEGIN IMMEDIATE: select, then lease.
                let due: Vec<(String, Option<i64>)> = deliveries::table
                    .filter(pending_delivery())
                    .filter(deliveries::next_attempt_at.le(now.as_micros()))
                    .order((deliveries::next_attempt_at.asc(), deliveries::id.asc()))
                    .limit(limit_i64(limit))
                    .select((deliveries::id, deliveries::next_attempt_at))
                    .load(c)
                    .map_err(db_error)?;
                let ids: Vec<&str> = due.iter().map(|(id, _)| id.as_str()).collect();
                for chunk in ids.chunks(IN_CHUNK) {
                    diesel::update(deliveries::table.filter(deliveries::id.eq_any(chunk)))
                        .set(deliveries::next_attempt_at.eq(lease_until.as_micros()))
                        .execute(c)
                        .map_err(db_error)?;
                }
                due.into_iter().map(|(id, at)| (at.unwrap_or_default(), id)).collect()
            }
        };
        claimed.sort();
        Ok(claimed.into_iter().map(|(_, id)| id).collect())
    }

    fn deliveries_of_event(&mut self, event_id: &EventId) -> Result<Vec<Delivery>, StoreError> {
        deliveries::table
            .filter(deliveries::event_id.eq(event_id.as_str()))
            .order((deliveries::created_at.asc(), deliveries::id.asc()))
            .select(DeliveryRow::as_select())
            .load(self.conn)
            .map_err(db_error)?
            .into_iter()
            .map(Delivery::try_from)
            .collect()
    }

    fn pending_deliveries_of_endpoint(&mut self, endpoint_id: &EndpointId) -> Result<Vec<Delivery>, StoreError> {
        deliveries::table
            .filter(deliveries::endpoint_id.eq(endpoint_id.as_str()))
            .filter(pending_delivery())
            .order((deliveries::created_at.asc(), deliveries::id.asc()))
            .select(DeliveryRow::as_select())
            .load(self.conn)
            .map_err(db_error)?
            .into_iter()
            .map(Delivery::try_from)
            .collect()
    }

    fn insert_attempt(&mut self, attempt: &Attempt) -> Result<(), StoreError> {
        let row = AttemptRow::try_from(attempt)?;
        diesel::insert_into(delivery_attempts::table).values(&row).execute(self.conn).map_err(db_error)?;
        Ok(())
    }

    fn attempts_of_event(&mut self, event_id: &EventId) -> Result<Vec<Attempt>, StoreError> {
        delivery_attempts::table
            .filter(delivery_attempts::event_id.eq(event_id.as_str()))
            .order(delivery_attempts::id.asc())
            .select(AttemptRow::as_select())
            .load(self.conn)
            .map_err(db_error)?
            .into_iter()
            .map(Attempt::try_from)
            .collect()
    }

    fn purge_events(&mut self, before: Timestamp) -> Result<u64, StoreError> {
        // A chunk of events at a time: their attempts, then their deliveries, then the events
        // (the foreign keys allow no other order).
        let mut purged: u64 = 0;
        loop {
            let ids: Vec<String> = events::table
                .filter(events::created_at.lt(before.as_micros()))
                .select(events::id)
                .limit(limit_i64(IN_CHUNK))
                .load(self.conn)
                .map_err(db_error)?;
            if ids.is_empty() {
                return Ok(purged);
            }
            let delivery_ids: Vec<String> =
                deliveries::table.filter(deliveries::event_id.eq_any(&ids)).select(deliveries::id).load(self.conn).map_err(db_error)?;
            diesel::delete(delivery_attempts::table.filter(delivery_attempts::event_id.eq_any(&ids)))
                .execute(self.conn)
                .map_err(db_error)?;
            for chunk in delivery_ids.chunks(IN_CHUNK) {
                // Attempts naming another event than their delivery's would still block the delete.
                diesel::delete(delivery_attempts::table.filter(delivery_attempts::delivery_id.eq_any(chunk)))
                    .execute(self.conn)
                    .map_err(db_error)?;
                diesel::delete(deliveries::table.filter(deliveries::id.eq_any(chunk))).execute(self.conn).map_err(db_error)?;
            }
            let deleted = diesel::delete(events::table.filter(events::id.eq_any(&ids))).execute(self.conn).map_err(db_error)?;
            purged = purged.saturating_add(u64::try_from(deleted).unwrap_or(u64::MAX));
        }
    }
}
