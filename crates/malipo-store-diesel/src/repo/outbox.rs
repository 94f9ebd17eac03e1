//! [`OutboxRepo`] on the transaction's connection: events, deliveries and attempts.

use diesel::dsl::sql;
use diesel::prelude::*;
use diesel::sql_types::Bool;
use malipo_core::{EndpointId, EventId, Mode, OrgId, Timestamp};
use malipo_service::{EventsPage, OutboxRepo, StoreError};
use malipo_webhooks::{Attempt, Delivery, Event};

use crate::cached::written;
use crate::claim::DueRows;
use crate::error::db_error;
use crate::rows::{AttemptRow, DeliveryRow, EventRow};
use crate::schema::{deliveries, delivery_attempts, events};
use crate::tx::{inserted, limit_i64, per_backend, DieselTx, IN_CHUNK};
use crate::DbConnection;

/// The condition of the partial indexes `deliveries_due_idx` and
/// `deliveries_pending_endpoint_idx`, as a literal so that both databases can use them.
const PENDING_DELIVERY: &str = "deliveries.state = 'pending'";

/// [`PENDING_DELIVERY`] as a filter.
fn pending_delivery() -> diesel::expression::SqlLiteral<Bool> {
    sql::<Bool>(PENDING_DELIVERY)
}

/// Attempts written by one `INSERT` (seven bind parameters each).
const ATTEMPTS_PER_INSERT: usize = 128;

/// Pending deliveries come due for their next attempt.
const DUE_DELIVERIES: DueRows = DueRows { table: "deliveries", id: "id", due: "next_attempt_at", filter: Some(PENDING_DELIVERY) };

impl OutboxRepo for DieselTx<'_> {
    fn insert_event(&mut self, event: &Event) -> Result<(), StoreError> {
        if self.queue_events(std::slice::from_ref(event))? {
            return Ok(());
        }
        let row = EventRow::from(event);
        inserted(written!(&mut *self.conn, diesel::insert_into(events::table).values(&row).on_conflict_do_nothing()))
    }

    fn insert_events(&mut self, events: &[Event]) -> Result<(), StoreError> {
        if self.queue_events(events)? {
            return Ok(());
        }
        insert_event_rows(self.conn, events)
    }

    fn event(&mut self, org_id: &OrgId, mode: Mode, id: &EventId) -> Result<Option<Event>, StoreError> {
        self.flush_events()?;
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
        page: EventsPage<'_>,
        limit: usize,
    ) -> Result<Vec<Event>, StoreError> {
        self.flush_events()?;
        let mut query = events::table.filter(events::org_id.eq(org_id.as_str())).filter(events::mode.eq(mode.as_str())).into_boxed();
        if let Some(kind) = kind {
            query = query.filter(events::kind.eq(kind));
        }
        query = match page {
            EventsPage::After(after) => {
                let query = query.order(events::id.asc());
                match after {
                    Some(a) => query.filter(events::id.gt(a.as_str())),
                    None => query,
                }
            }
            EventsPage::Before(before) => {
                let query = query.order(events::id.desc());
                match before {
                    Some(b) => query.filter(events::id.lt(b.as_str())),
                    None => query,
                }
            }
        };
        query
            .limit(limit_i64(limit))
            .select(EventRow::as_select())
            .load(self.conn)
            .map_err(db_error)?
            .into_iter()
            .map(Event::try_from)
            .collect()
    }

    fn events_of_object(&mut self, org_id: &OrgId, mode: Mode, object_id: &str, limit: usize) -> Result<Vec<Event>, StoreError> {
        self.flush_events()?;
        // `events_object_idx` (object_id, id): an object's few events, whatever the organisation's others.
        events::table
            .filter(events::object_id.eq(object_id))
            .filter(events::org_id.eq(org_id.as_str()))
            .filter(events::mode.eq(mode.as_str()))
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
        self.flush_events()?;
        let row = DeliveryRow::try_from(delivery)?;
        inserted(written!(&mut *self.conn, diesel::insert_into(deliveries::table).values(&row).on_conflict_do_nothing()))
    }

    fn lock_deliveries(&mut self, ids: &[String]) -> Result<Vec<Delivery>, StoreError> {
        self.flush_events()?;
        let mut ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        ids.sort_unstable();
        ids.dedup();
        let mut found = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(IN_CHUNK) {
            let query = deliveries::table.filter(deliveries::id.eq_any(chunk)).order(deliveries::id.asc());
            let rows = match &mut *self.conn {
                DbConnection::Pg(c) => query.select(DeliveryRow::as_select()).for_update().load(c),
                // No row lock: SQLite's writers are serialised by BEGIN IMMEDIATE.
                DbConnection::Sqlite(c) => query.select(DeliveryRow::as_select()).load(c),
            }
            .map_err(db_error)?;
            for row in rows {
                found.push(Delivery::try_from(row)?);
            }
        }
        Ok(found)
    }

    fn events_by_id(&mut self, ids: &[EventId]) -> Result<Vec<Event>, StoreError> {
        self.flush_events()?;
        let mut ids: Vec<&str> = ids.iter().map(EventId::as_str).collect();
        ids.sort_unstable();
        ids.dedup();
        let mut found = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(IN_CHUNK) {
            let rows = events::table
                .filter(events::id.eq_any(chunk))
                .order(events::id.asc())
                .select(EventRow::as_select())
                .load(self.conn)
                .map_err(db_error)?;
            for row in rows {
                found.push(Event::try_from(row)?);
            }
        }
        Ok(found)
    }

    fn update_delivery(&mut self, delivery: &Delivery) -> Result<(), StoreError> {
        self.flush_events()?;
        let row = DeliveryRow::try_from(delivery)?;
        let updated = written!(
            &mut *self.conn,
            diesel::update(deliveries::table.find(row.id.as_str())).set((
                deliveries::state.eq(&row.state),
                deliveries::attempts.eq(row.attempts),
                deliveries::next_attempt_at.eq(row.next_attempt_at),
                deliveries::updated_at.eq(row.updated_at),
            ))
        )
        .map_err(db_error)?;
        if updated == 0 {
            return Err(StoreError::Other(format!("no delivery {} to update", row.id)));
        }
        Ok(())
    }

    fn update_deliveries(&mut self, deliveries: &[Delivery]) -> Result<(), StoreError> {
        self.flush_events()?;
        let distinct = || deliveries.iter().map(|d| d.id.as_str()).collect::<std::collections::HashSet<_>>().len() == deliveries.len();
        let c = match &mut *self.conn {
            DbConnection::Pg(c) if distinct() => c,
            // SQLite prepares and runs statements in process (one at a time costs no round trip);
            // a delivery twice is written in turn, the last write standing, as one by one.
            _ => return deliveries.iter().try_for_each(|d| self.update_delivery(d)),
        };
        let rows = deliveries.iter().map(DeliveryRow::try_from).collect::<Result<Vec<_>, _>>()?;
        for chunk in rows.chunks(UPDATE_CHUNK) {
            let updated = update_rows(c, chunk).map_err(db_error)?;
            if updated != chunk.len() {
                return Err(StoreError::Other(format!("{} of {} deliveries to update are missing", chunk.len() - updated, chunk.len())));
            }
        }
        Ok(())
    }

    fn claim_due_deliveries(&mut self, now: Timestamp, lease_until: Timestamp, limit: usize) -> Result<Vec<String>, StoreError> {
        self.flush_events()?;
        DUE_DELIVERIES.claim(self.conn, now, lease_until, limit)
    }

    fn deliveries_of_event(&mut self, event_id: &EventId) -> Result<Vec<Delivery>, StoreError> {
        self.flush_events()?;
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

    fn deliveries_of_events(&mut self, event_ids: &[EventId]) -> Result<Vec<Delivery>, StoreError> {
        self.flush_events()?;
        let ids = distinct_ids(event_ids);
        let mut found = Vec::new();
        for chunk in ids.chunks(IN_CHUNK) {
            let rows = deliveries::table
                .filter(deliveries::event_id.eq_any(chunk))
                .select(DeliveryRow::as_select())
                .load(self.conn)
                .map_err(db_error)?;
            for row in rows {
                found.push(Delivery::try_from(row)?);
            }
        }
        found.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        Ok(found)
    }

    fn pending_deliveries_of_endpoint(&mut self, endpoint_id: &EndpointId) -> Result<Vec<Delivery>, StoreError> {
        self.flush_events()?;
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

    fn insert_attempts(&mut self, attempts: &[Attempt]) -> Result<(), StoreError> {
        self.flush_events()?;
        let rows = attempts.iter().map(AttemptRow::try_from).collect::<Result<Vec<_>, _>>()?;
        let insert = |conn: &mut DbConnection, chunk: &[AttemptRow]| {
            per_backend!(conn, |c| diesel::insert_into(delivery_attempts::table).values(chunk).execute(c)).map(|_| ())
        };
        match rows.len() {
            0 => Ok(()),
            n if n <= ATTEMPTS_PER_INSERT => insert(self.conn, &rows).map_err(db_error),
            // Several statements: in a savepoint, so that a refused one undoes the ones before.
            _ => self.conn.transaction(|conn| rows.chunks(ATTEMPTS_PER_INSERT).try_for_each(|chunk| insert(conn, chunk))).map_err(db_error),
        }
    }

    fn attempts_of_event(&mut self, event_id: &EventId) -> Result<Vec<Attempt>, StoreError> {
        self.flush_events()?;
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

    fn attempts_of_events(&mut self, event_ids: &[EventId]) -> Result<Vec<Attempt>, StoreError> {
        self.flush_events()?;
        let ids = distinct_ids(event_ids);
        // In the order recorded: by the attempts' serial ids, across chunks too.
        let mut rows: Vec<(i64, AttemptRow)> = Vec::new();
        for chunk in ids.chunks(IN_CHUNK) {
            rows.extend(
                delivery_attempts::table
                    .filter(delivery_attempts::event_id.eq_any(chunk))
                    .select((delivery_attempts::id, AttemptRow::as_select()))
                    .load(self.conn)
                    .map_err(db_error)?,
            );
        }
        rows.sort_by_key(|(id, _)| *id);
        rows.into_iter().map(|(_, row)| Attempt::try_from(row)).collect()
    }

    fn purge_events(&mut self, before: Timestamp) -> Result<u64, StoreError> {
        self.flush_events()?;
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

/// The ids, sorted and each once.
fn distinct_ids(ids: &[EventId]) -> Vec<&str> {
    let mut ids: Vec<&str> = ids.iter().map(EventId::as_str).collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// Deliveries one `UPDATE` writes (five bind parameters each).
const UPDATE_CHUNK: usize = 500;

/// Writes the mutable fields of `rows` (distinct ids) in one statement on PostgreSQL and returns
/// how many it found.
fn update_rows(conn: &mut diesel::PgConnection, rows: &[DeliveryRow]) -> QueryResult<usize> {
    use diesel::sql_types::{BigInt, Integer, Nullable, Text};
    let values: Vec<String> = (0..rows.len())
        .map(|i| {
            let n = 5 * i;
            format!("(${}, ${}, ${}, ${}, ${})", n + 1, n + 2, n + 3, n + 4, n + 5)
        })
        .collect();
    let sql = format!(
        "WITH v (id, state, attempts, next_attempt_at, updated_at) AS (VALUES {}) \
         UPDATE deliveries SET state = v.state, attempts = v.attempts, next_attempt_at = v.next_attempt_at, \
         updated_at = v.updated_at FROM v WHERE deliveries.id = v.id",
        values.join(", ")
    );
    let mut query = diesel::sql_query(sql).into_boxed::<diesel::pg::Pg>();
    for row in rows {
        query = query
            .bind::<Text, _>(&row.id)
            .bind::<Text, _>(&row.state)
            .bind::<Integer, _>(row.attempts)
            .bind::<Nullable<BigInt>, _>(row.next_attempt_at)
            .bind::<BigInt, _>(row.updated_at);
    }
    query.execute(conn)
}

/// Inserts events (a few: a bounded number of statement shapes); [`StoreError::Duplicate`]
/// when an id exists.
pub(crate) fn insert_event_rows(conn: &mut DbConnection, events: &[Event]) -> Result<(), StoreError> {
    let rows: Vec<EventRow> = events.iter().map(EventRow::from).collect();
    let written = written!(rows &mut *conn, events::table, &rows, on_conflict_do_nothing).map_err(db_error)?;
    if written == rows.len() {
        Ok(())
    } else {
        Err(StoreError::Duplicate)
    }
}
