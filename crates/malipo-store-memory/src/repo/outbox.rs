//! [`OutboxRepo`] over the in-memory tables.

use std::collections::BTreeSet;

use malipo_core::{EndpointId, EventId, Mode, OrgId, Timestamp};
use malipo_service::{EventsPage, OutboxRepo, StoreError};
use malipo_webhooks::{Attempt, Delivery, DeliveryState, Event};

use crate::tx::{check, foreign_key, MemoryTx};

/// The check constraints of the `deliveries` table (`attempts >= 0` holds by type; the count
/// must also fit the column's `INTEGER`).
fn check_delivery(d: &Delivery) -> Result<(), StoreError> {
    check(i32::try_from(d.attempts).is_ok(), "deliveries_attempts_check")?;
    check((d.state == DeliveryState::Pending) == d.next_attempt_at.is_some(), "deliveries_next_attempt_check")
}

/// The `delivery_attempts` row's range (`latency_ms >= 0` holds by type; it must fit the
/// column's `INTEGER`).
fn check_attempt(a: &Attempt) -> Result<(), StoreError> {
    check(i32::try_from(a.latency_ms).is_ok(), "delivery_attempts_latency_ms_check")
}

/// Oldest first: by creation, then id.
fn by_creation(a: &Delivery, b: &Delivery) -> std::cmp::Ordering {
    (a.created_at, &a.id).cmp(&(b.created_at, &b.id))
}

impl OutboxRepo for MemoryTx<'_> {
    fn insert_event(&mut self, event: &Event) -> Result<(), StoreError> {
        if let Some(queued) = self.queued.as_mut() {
            queued.add_events(std::slice::from_ref(event));
            return Ok(());
        }
        self.insert_event_now(event)
    }

    fn event(&mut self, org_id: &OrgId, mode: Mode, id: &EventId) -> Result<Option<Event>, StoreError> {
        self.flush_events()?;
        Ok(self.r().events.get(id).filter(|e| &e.org_id == org_id && e.mode == mode).cloned())
    }

    fn list_events(
        &mut self,
        org_id: &OrgId,
        mode: Mode,
        kind: Option<&str>,
        page: EventsPage<'_>,
        limit: usize,
    ) -> Result<Vec<Event>, StoreError> {
        use std::ops::Bound::{Excluded, Unbounded};
        self.flush_events()?;
        let s = self.r();
        let theirs = |e: &&Event| &e.org_id == org_id && e.mode == mode && kind.is_none_or(|k| e.kind == k);
        let listed: Vec<Event> = match page {
            EventsPage::After(after) => {
                let from = after.map_or(Unbounded, Excluded);
                s.events.range::<EventId, _>((from, Unbounded)).map(|(_, e)| e).filter(theirs).take(limit).cloned().collect()
            }
            EventsPage::Before(before) => {
                let to = before.map_or(Unbounded, Excluded);
                s.events.range::<EventId, _>((Unbounded, to)).rev().map(|(_, e)| e).filter(theirs).take(limit).cloned().collect()
            }
        };
        Ok(listed)
    }

    fn events_of_object(&mut self, org_id: &OrgId, mode: Mode, object_id: &str, limit: usize) -> Result<Vec<Event>, StoreError> {
        self.flush_events()?;
        Ok(self
            .r()
            .events
            .values()
            .filter(|e| &e.org_id == org_id && e.mode == mode && e.object_id == object_id)
            .take(limit)
            .cloned()
            .collect())
    }

    fn insert_delivery(&mut self, delivery: &Delivery) -> Result<(), StoreError> {
        self.flush_events()?;
        let s = self.w()?;
        if s.deliveries.contains_key(&delivery.id) {
            return Err(StoreError::Duplicate);
        }
        foreign_key(s.events.contains_key(&delivery.event_id), "the delivery's event")?;
        foreign_key(s.endpoints.contains_key(&delivery.endpoint_id), "the delivery's endpoint")?;
        check_delivery(delivery)?;
        s.deliveries.insert(delivery.id.clone(), delivery.clone());
        Ok(())
    }

    fn lock_deliveries(&mut self, ids: &[String]) -> Result<Vec<Delivery>, StoreError> {
        self.flush_events()?;
        // The whole store is locked for the transaction already.
        let wanted: BTreeSet<&String> = ids.iter().collect();
        let s = self.r();
        Ok(wanted.into_iter().filter_map(|id| s.deliveries.get(id).cloned()).collect())
    }

    fn events_by_id(&mut self, ids: &[EventId]) -> Result<Vec<Event>, StoreError> {
        self.flush_events()?;
        let wanted: BTreeSet<&EventId> = ids.iter().collect();
        let s = self.r();
        Ok(wanted.into_iter().filter_map(|id| s.events.get(id).cloned()).collect())
    }

    fn update_delivery(&mut self, delivery: &Delivery) -> Result<(), StoreError> {
        self.flush_events()?;
        let s = self.w()?;
        let Some(stored) = s.deliveries.get_mut(&delivery.id) else {
            return Err(StoreError::Other(format!("no delivery {} to update", delivery.id)));
        };
        let updated = Delivery {
            state: delivery.state,
            attempts: delivery.attempts,
            next_attempt_at: delivery.next_attempt_at,
            updated_at: delivery.updated_at,
            ..stored.clone()
        };
        check_delivery(&updated)?;
        *stored = updated;
        Ok(())
    }

    fn claim_due_deliveries(&mut self, now: Timestamp, lease_until: Timestamp, limit: usize) -> Result<Vec<String>, StoreError> {
        self.flush_events()?;
        let s = self.w()?;
        let mut due: Vec<(Timestamp, String)> = s
            .deliveries
            .values()
            .filter(|d| d.state == DeliveryState::Pending)
            .filter_map(|d| d.next_attempt_at.filter(|at| *at <= now).map(|at| (at, d.id.clone())))
            .collect();
        due.sort();
        due.truncate(limit);
        let mut claimed = Vec::with_capacity(due.len());
        for (_, id) in due {
            if let Some(d) = s.deliveries.get_mut(&id) {
                d.next_attempt_at = Some(lease_until);
            }
            claimed.push(id);
        }
        Ok(claimed)
    }

    fn deliveries_of_event(&mut self, event_id: &EventId) -> Result<Vec<Delivery>, StoreError> {
        self.flush_events()?;
        let mut found: Vec<Delivery> = self.r().deliveries.values().filter(|d| &d.event_id == event_id).cloned().collect();
        found.sort_by(by_creation);
        Ok(found)
    }

    fn deliveries_of_events(&mut self, event_ids: &[EventId]) -> Result<Vec<Delivery>, StoreError> {
        self.flush_events()?;
        let wanted: BTreeSet<&EventId> = event_ids.iter().collect();
        let mut found: Vec<Delivery> = self.r().deliveries.values().filter(|d| wanted.contains(&d.event_id)).cloned().collect();
        found.sort_by(by_creation);
        Ok(found)
    }

    fn pending_deliveries_of_endpoint(&mut self, endpoint_id: &EndpointId) -> Result<Vec<Delivery>, StoreError> {
        self.flush_events()?;
        let mut found: Vec<Delivery> =
            self.r().deliveries.values().filter(|d| &d.endpoint_id == endpoint_id && d.state == DeliveryState::Pending).cloned().collect();
        found.sort_by(by_creation);
        Ok(found)
    }

    fn insert_attempts(&mut self, attempts: &[Attempt]) -> Result<(), StoreError> {
        self.flush_events()?;
        let s = self.w()?;
        for attempt in attempts {
            foreign_key(s.deliveries.contains_key(&attempt.delivery_id), "the attempt's delivery")?;
            check_attempt(attempt)?;
        }
        s.attempts.extend_from_slice(attempts);
        Ok(())
    }

    fn attempts_of_event(&mut self, event_id: &EventId) -> Result<Vec<Attempt>, StoreError> {
        self.flush_events()?;
        Ok(self.r().attempts.iter().filter(|a| &a.event_id == event_id).cloned().collect())
    }

    fn attempts_of_events(&mut self, event_ids: &[EventId]) -> Result<Vec<Attempt>, StoreError> {
        self.flush_events()?;
        let wanted: BTreeSet<&EventId> = event_ids.iter().collect();
        Ok(self.r().attempts.iter().filter(|a| wanted.contains(&a.event_id)).cloned().collect())
    }

    fn purge_events(&mut self, before: Timestamp) -> Result<u64, StoreError> {
        self.flush_events()?;
        let s = self.w()?;
        let old: BTreeSet<EventId> = s.events.values().filter(|e| e.created_at < before).map(|e| e.id.clone()).collect();
        if old.is_empty() {
            return Ok(0);
        }
        let old_deliveries: BTreeSet<String> = s.deliveries.values().filter(|d| old.contains(&d.event_id)).map(|d| d.id.clone()).collect();
        s.attempts.retain(|a| !old.contains(&a.event_id) && !old_deliveries.contains(&a.delivery_id));
        s.deliveries.retain(|id, _| !old_deliveries.contains(id));
        s.events.retain(|id, _| !old.contains(id));
        Ok(u64::try_from(old.len()).unwrap_or(u64::MAX))
    }
}

impl MemoryTx<'_> {
    /// Inserts an event now (`insert_event` when nothing is queued, and the queue's flush).
    pub(crate) fn insert_event_now(&mut self, event: &Event) -> Result<(), StoreError> {
        let s = self.w()?;
        if s.events.contains_key(&event.id) {
            return Err(StoreError::Duplicate);
        }
        foreign_key(s.orgs.contains_key(&event.org_id), "the event's organisation")?;
        s.events.insert(event.id.clone(), event.clone());
        Ok(())
    }
}
