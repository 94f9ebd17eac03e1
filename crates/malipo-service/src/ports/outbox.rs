//! The event outbox: events, their deliveries and delivery attempts.

use malipo_core::{EndpointId, EventId, Mode, OrgId, Timestamp};
use malipo_webhooks::{Attempt, Delivery, Event};

use crate::error::StoreError;

/// The event outbox: events, their deliveries and delivery attempts: part of the one transaction handle [`super::Tx`].
pub trait OutboxRepo {
    /// Inserts an event.
    ///
    /// # Errors
    /// [`StoreError::Duplicate`] if the id exists.
    fn insert_event(&mut self, event: &Event) -> Result<(), StoreError>;
    /// Inserts several events, as [`OutboxRepo::insert_event`] of each in turn would (an
    /// adapter may write them in one statement).
    ///
    /// # Errors
    /// [`StoreError::Duplicate`] if an id exists: the caller's transaction must then fail, as
    /// the others may have been inserted.
    fn insert_events(&mut self, events: &[Event]) -> Result<(), StoreError> {
        events.iter().try_for_each(|e| self.insert_event(e))
    }
    /// An event of an organisation in a mode.
    ///
    /// # Errors
    /// Storage failures.
    fn event(&mut self, org_id: &OrgId, mode: Mode, id: &EventId) -> Result<Option<Event>, StoreError>;
    /// A page of an organisation's events in a mode, of one kind when given, at most `limit`:
    /// oldest first after an id (the API's list, for catching up) or newest first before one
    /// (the console's); ids are time-ordered.
    ///
    /// # Errors
    /// Storage failures.
    fn list_events(
        &mut self,
        org_id: &OrgId,
        mode: Mode,
        kind: Option<&str>,
        page: EventsPage<'_>,
        limit: usize,
    ) -> Result<Vec<Event>, StoreError>;
    /// The events of one object (`ch_…`, `po_…`) of an organisation in a mode, oldest first (by
    /// id), at most `limit`.
    ///
    /// # Errors
    /// Storage failures.
    fn events_of_object(&mut self, org_id: &OrgId, mode: Mode, object_id: &str, limit: usize) -> Result<Vec<Event>, StoreError>;
    /// Inserts a delivery.
    ///
    /// # Errors
    /// [`StoreError::Duplicate`] if the id exists.
    fn insert_delivery(&mut self, delivery: &Delivery) -> Result<(), StoreError>;
    /// The deliveries of `ids` that exist, locked for update until the transaction ends, in id
    /// order (concurrent lockers take them in one order): one read for a batch.
    ///
    /// # Errors
    /// Storage failures.
    fn lock_deliveries(&mut self, ids: &[String]) -> Result<Vec<Delivery>, StoreError>;
    /// The events of `ids` that exist, of whichever organisation and mode (the caller checks
    /// them against what refers to them): one read for a batch.
    ///
    /// # Errors
    /// Storage failures.
    fn events_by_id(&mut self, ids: &[EventId]) -> Result<Vec<Event>, StoreError>;
    /// Overwrites a delivery's mutable fields (state, attempts, next_attempt_at, updated_at).
    ///
    /// # Errors
    /// Storage failures.
    fn update_delivery(&mut self, delivery: &Delivery) -> Result<(), StoreError>;
    /// Overwrites the mutable fields of several deliveries, as [`OutboxRepo::update_delivery`]
    /// of each in turn would (an adapter may write them in one statement).
    ///
    /// # Errors
    /// As [`OutboxRepo::update_delivery`]: a missing delivery or a refused value refuses the call.
    fn update_deliveries(&mut self, deliveries: &[Delivery]) -> Result<(), StoreError> {
        deliveries.iter().try_for_each(|d| self.update_delivery(d))
    }
    /// Claims up to `limit` pending deliveries whose `next_attempt_at <= now`, oldest due first,
    /// by setting `next_attempt_at` to `lease_until`, and returns their ids. Concurrent callers
    /// never claim the same delivery (PostgreSQL: `FOR UPDATE SKIP LOCKED`).
    ///
    /// # Errors
    /// Storage failures.
    fn claim_due_deliveries(&mut self, now: Timestamp, lease_until: Timestamp, limit: usize) -> Result<Vec<String>, StoreError>;
    /// The deliveries of an event, oldest first.
    ///
    /// # Errors
    /// Storage failures.
    fn deliveries_of_event(&mut self, event_id: &EventId) -> Result<Vec<Delivery>, StoreError>;
    /// The deliveries of several events, oldest first (by creation, then id): one read for
    /// an object's events.
    ///
    /// # Errors
    /// Storage failures.
    fn deliveries_of_events(&mut self, event_ids: &[EventId]) -> Result<Vec<Delivery>, StoreError>;
    /// The pending deliveries to an endpoint.
    ///
    /// # Errors
    /// Storage failures.
    fn pending_deliveries_of_endpoint(&mut self, endpoint_id: &EndpointId) -> Result<Vec<Delivery>, StoreError>;
    /// Appends attempts, in order: all of them or, refused, none.
    ///
    /// # Errors
    /// Storage failures; a missing delivery or a value out of range refuses them all.
    fn insert_attempts(&mut self, attempts: &[Attempt]) -> Result<(), StoreError>;
    /// The attempts of an event, oldest first.
    ///
    /// # Errors
    /// Storage failures.
    fn attempts_of_event(&mut self, event_id: &EventId) -> Result<Vec<Attempt>, StoreError>;
    /// The attempts of several events, oldest first (in the order they were recorded): one read
    /// for an object's events.
    ///
    /// # Errors
    /// Storage failures.
    fn attempts_of_events(&mut self, event_ids: &[EventId]) -> Result<Vec<Attempt>, StoreError>;
    /// Deletes events created before `before` with their deliveries and attempts; returns how
    /// many events.
    ///
    /// # Errors
    /// Storage failures.
    fn purge_events(&mut self, before: Timestamp) -> Result<u64, StoreError>;
}

/// Which page of an organisation's events [`OutboxRepo::list_events`] reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventsPage<'a> {
    /// Oldest first, with ids strictly above this one when given.
    After(Option<&'a EventId>),
    /// Newest first, with ids strictly below this one when given.
    Before(Option<&'a EventId>),
}
