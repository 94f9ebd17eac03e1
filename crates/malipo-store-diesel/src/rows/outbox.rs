//! Rows of the event outbox: events, deliveries, attempts.

use std::str::FromStr;

use diesel::prelude::*;
use malipo_core::{EndpointId, EventId, OrgId, Timestamp};
use malipo_service::StoreError;
use malipo_webhooks::{Attempt, Delivery, DeliveryState, Event, Summary};

use super::columns::{corrupt, integer, mode, ts};
use crate::schema::{deliveries, delivery_attempts, events};

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = events, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct EventRow {
    pub(crate) id: String,
    pub(crate) org_id: String,
    pub(crate) mode: String,
    pub(crate) kind: String,
    pub(crate) object_id: String,
    pub(crate) data: Vec<u8>,
    pub(crate) amount: Option<String>,
    pub(crate) currency: Option<String>,
    pub(crate) state: Option<String>,
    pub(crate) reference: Option<String>,
    pub(crate) created_at: i64,
}

impl From<&Event> for EventRow {
    fn from(e: &Event) -> Self {
        EventRow {
            id: e.id.as_str().to_owned(),
            org_id: e.org_id.as_str().to_owned(),
            mode: e.mode.as_str().to_owned(),
            kind: e.kind.clone(),
            object_id: e.object_id.clone(),
            data: e.data.clone(),
            amount: e.summary.amount.clone(),
            currency: e.summary.currency.clone(),
            state: e.summary.state.clone(),
            reference: e.summary.reference.clone(),
            created_at: e.created_at.as_micros(),
        }
    }
}

impl TryFrom<EventRow> for Event {
    type Error = StoreError;
    fn try_from(r: EventRow) -> Result<Self, StoreError> {
        Ok(Event {
            mode: mode(&r.mode)?,
            id: EventId::from_trusted(r.id),
            org_id: OrgId::from_trusted(r.org_id),
            kind: r.kind,
            object_id: r.object_id,
            data: r.data,
            summary: Summary { amount: r.amount, currency: r.currency, state: r.state, reference: r.reference },
            created_at: ts(r.created_at),
        })
    }
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = deliveries, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct DeliveryRow {
    pub(crate) id: String,
    pub(crate) event_id: String,
    pub(crate) endpoint_id: String,
    pub(crate) state: String,
    pub(crate) attempts: i32,
    pub(crate) next_attempt_at: Option<i64>,
    pub(crate) created_at: i64,
    pub(crate) updated_at: i64,
}

impl TryFrom<&Delivery> for DeliveryRow {
    type Error = StoreError;
    fn try_from(d: &Delivery) -> Result<Self, StoreError> {
        Ok(DeliveryRow {
            id: d.id.clone(),
            event_id: d.event_id.as_str().to_owned(),
            endpoint_id: d.endpoint_id.as_str().to_owned(),
            state: d.state.as_str().to_owned(),
            attempts: integer("delivery attempts", d.attempts)?,
            next_attempt_at: d.next_attempt_at.map(Timestamp::as_micros),
            created_at: d.created_at.as_micros(),
            updated_at: d.updated_at.as_micros(),
        })
    }
}

impl TryFrom<DeliveryRow> for Delivery {
    type Error = StoreError;
    fn try_from(r: DeliveryRow) -> Result<Self, StoreError> {
        Ok(Delivery {
            state: DeliveryState::from_str(&r.state).map_err(|_| corrupt("delivery state", &r.state))?,
            attempts: u32::try_from(r.attempts).map_err(|_| corrupt("delivery attempts", &r.attempts.to_string()))?,
            id: r.id,
            event_id: EventId::from_trusted(r.event_id),
            endpoint_id: EndpointId::from_trusted(r.endpoint_id),
            next_attempt_at: r.next_attempt_at.map(ts),
            created_at: ts(r.created_at),
            updated_at: ts(r.updated_at),
        })
    }
}

/// An attempt as stored (the id, assigned by the database, orders a delivery's attempts and is
/// not part of the domain type).
#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = delivery_attempts, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct AttemptRow {
    pub(crate) delivery_id: String,
    pub(crate) event_id: String,
    pub(crate) endpoint_id: String,
    pub(crate) attempted_at: i64,
    pub(crate) status: Option<i32>,
    pub(crate) latency_ms: i32,
    pub(crate) error: Option<String>,
}

impl TryFrom<&Attempt> for AttemptRow {
    type Error = StoreError;
    fn try_from(a: &Attempt) -> Result<Self, StoreError> {
        Ok(AttemptRow {
            delivery_id: a.delivery_id.clone(),
            event_id: a.event_id.as_str().to_owned(),
            endpoint_id: a.endpoint_id.as_str().to_owned(),
            attempted_at: a.attempted_at.as_micros(),
            status: a.status.map(i32::from),
            latency_ms: integer("attempt latency (ms)", a.latency_ms)?,
            error: a.error.clone(),
        })
    }
}

impl TryFrom<AttemptRow> for Attempt {
    type Error = StoreError;
    fn try_from(r: AttemptRow) -> Result<Self, StoreError> {
        let status = match r.status {
            Some(s) => Some(u16::try_from(s).map_err(|_| corrupt("HTTP status", &s.to_string()))?),
            None => None,
        };
        Ok(Attempt {
            status,
            latency_ms: u32::try_from(r.latency_ms).map_err(|_| corrupt("attempt latency", &r.latency_ms.to_string()))?,
            delivery_id: r.delivery_id,
            event_id: EventId::from_trusted(r.event_id),
            endpoint_id: EndpointId::from_trusted(r.endpoint_id),
            attempted_at: ts(r.attempted_at),
            error: r.error,
        })
    }
}
