//! Delivering the outbox: claiming due deliveries, preparing each attempt (the event, the
//! signing time and the open secrets; the sender renders and signs it), and recording
//! what each attempt got, which decides the next.

use std::collections::HashMap;

use malipo_core::{EndpointId, EventId, Timestamp};
use malipo_webhooks::{Attempt, Delivery, DeliveryState, Endpoint, Event, Secret};

use super::model::{disable, next_attempt, open_secret, FAILING_DISABLES_AFTER_SECONDS, LEASE_MARGIN_SECONDS};
use crate::core::Core;
use crate::error::ServiceError;
use crate::ports::DeliveryFlow;
use crate::ports::{DeliveryJob, SendOutcome};
use crate::views::{Delivering, View};

/// The webhook sender's use cases.
pub struct Deliveries<'a> {
    core: &'a Core,
}

impl<'a> Deliveries<'a> {
    pub(crate) fn new(core: &'a Core) -> Self {
        Deliveries { core }
    }

    fn open_secret(&self, sealed: &[u8]) -> Result<Secret, ServiceError> {
        open_secret(&self.core.cipher, sealed)
    }

    /// Claims due deliveries and prepares each attempt (to be signed as of now). Deliveries whose endpoint
    /// was deleted or disabled since are failed instead.
    ///
    /// # Errors
    /// Storage failures.
    pub fn claim(&self, limit: usize) -> Result<Vec<DeliveryJob>, ServiceError> {
        let now = self.core.now();
        let timeout = self.core.webhooks.timeout;
        let lease = now.plus_millis(i64::try_from(timeout.as_millis()).unwrap_or(i64::MAX)).plus_seconds(LEASE_MARGIN_SECONDS);
        // One transaction for the whole batch: claim, load (the deliveries and their events in
        // one read each, each endpoint once) and prepare.
        Delivering::write(self.core.store(), |tx| {
            let ids = tx.claim_due_deliveries(now, lease, limit)?;
            if ids.is_empty() {
                return Ok(vec![]);
            }
            let mut deliveries: HashMap<String, Delivery> = tx.lock_deliveries(&ids)?.into_iter().map(|d| (d.id.clone(), d)).collect();
            let event_ids: Vec<EventId> = deliveries.values().map(|d| d.event_id.clone()).collect();
            let events: HashMap<EventId, Event> = tx.events_by_id(&event_ids)?.into_iter().map(|e| (e.id.clone(), e)).collect();
            let mut endpoints = Endpoints::default();
            let mut jobs = Vec::with_capacity(ids.len());
            // In the claim's order: oldest due first.
            for id in &ids {
                let Some(mut delivery) = deliveries.remove(id) else { continue };
                let Some(endpoint) = endpoints.get(tx, &delivery.endpoint_id)? else { continue };
                // The event of the endpoint's own organisation and mode only.
                let Some(event) = events.get(&delivery.event_id).filter(|e| e.org_id == endpoint.org_id && e.mode == endpoint.mode) else {
                    continue;
                };
                if !endpoint.enabled || endpoint.deleted_at.is_some() {
                    delivery.state = DeliveryState::Failed;
                    delivery.next_attempt_at = None;
                    delivery.updated_at = now;
                    tx.update_delivery(&delivery)?;
                    continue;
                }
                // One delivery that cannot be prepared (a secret the key cannot open) must not
                // hold up the rest of the batch: it is logged and comes due again after its lease.
                match self.prepare(&delivery, endpoint, event, lease, now) {
                    Ok(job) => jobs.push(job),
                    Err(e) => tracing::error!(delivery = %id, error = %e, "cannot prepare the webhook delivery"),
                }
            }
            Ok(jobs)
        })
    }

    fn prepare(
        &self,
        delivery: &Delivery,
        endpoint: &Endpoint,
        event: &Event,
        lease: Timestamp,
        now: Timestamp,
    ) -> Result<DeliveryJob, ServiceError> {
        let current = self.open_secret(&endpoint.secret)?;
        let previous = match &endpoint.previous_secret {
            Some((sealed, until)) if *until > now => Some(self.open_secret(sealed)?),
            _ => None,
        };
        Ok(DeliveryJob {
            delivery_id: delivery.id.clone(),
            lease,
            event_id: event.id.clone(),
            endpoint_id: endpoint.id.clone(),
            url: endpoint.url.clone(),
            policy: self.core.webhooks.policy(endpoint.mode),
            event: event.clone(),
            timestamp: now.as_unix_seconds(),
            secret: current,
            previous_secret: previous,
            timeout: self.core.webhooks.timeout,
        })
    }

    /// Records an attempt and schedules what follows: a 2xx settles the delivery; a 410 disables
    /// the endpoint; anything else is retried on the schedule (or after `Retry-After` on 429 and
    /// 503, whichever is later) until the schedule runs out; an endpoint failing everything for
    /// five days is disabled.
    ///
    /// # Errors
    /// Storage failures.
    pub fn record_attempt(&self, job: &DeliveryJob, outcome: &SendOutcome, latency_ms: u32) -> Result<(), ServiceError> {
        self.record_attempts(&[(job, outcome, latency_ms)])
    }

    /// Records several attempts in one transaction, each exactly as [`Deliveries::record_attempt`]
    /// would alone, in order (one commit, one insert of the attempts, one read of their
    /// deliveries and one write of them, instead of each per attempt). All or none are
    /// recorded: when this fails, record them one by one, so that one bad item does not hold up
    /// the rest.
    ///
    /// # Errors
    /// Storage failures.
    pub fn record_attempts(&self, attempts: &[(&DeliveryJob, &SendOutcome, u32)]) -> Result<(), ServiceError> {
        let now = self.core.now();
        Delivering::write(self.core.store(), |tx| self.record_in(tx, attempts, now))
    }

    fn record_in(
        &self,
        tx: &mut (impl DeliveryFlow + ?Sized),
        attempts: &[(&DeliveryJob, &SendOutcome, u32)],
        now: Timestamp,
    ) -> Result<(), ServiceError> {
        let rows: Vec<Attempt> = attempts.iter().map(|(job, outcome, latency_ms)| attempt(job, outcome, *latency_ms, now)).collect();
        tx.insert_attempts(&rows)?;
        let ids: Vec<String> = attempts.iter().map(|(job, _, _)| job.delivery_id.clone()).collect();
        let mut deliveries =
            Locked { rows: tx.lock_deliveries(&ids)?.into_iter().map(|d| (d.id.clone(), d)).collect(), changed: Vec::new() };
        let mut endpoints = Endpoints::default();
        for (job, outcome, _) in attempts {
            self.settle(tx, job, outcome, now, &mut deliveries, &mut endpoints)?;
        }
        deliveries.write(tx)
    }

    /// Schedules what follows one attempt of a batch, on the batch's deliveries and endpoints as
    /// this batch left them.
    fn settle(
        &self,
        tx: &mut (impl DeliveryFlow + ?Sized),
        job: &DeliveryJob,
        outcome: &SendOutcome,
        now: Timestamp,
        deliveries: &mut Locked,
        endpoints: &mut Endpoints,
    ) -> Result<(), ServiceError> {
        let Some(delivery) = deliveries.rows.get_mut(&job.delivery_id) else { return Ok(()) };
        if delivery.state != DeliveryState::Pending || delivery.next_attempt_at != Some(job.lease) {
            // The claim lapsed and another worker owns the delivery now: the attempt is on
            // record, the schedule is theirs.
            return Ok(());
        }
        let Some(endpoint) = endpoints.get(tx, &job.endpoint_id)? else { return Ok(()) };
        delivery.attempts = delivery.attempts.saturating_add(1);
        delivery.updated_at = now;
        match outcome {
            SendOutcome::Answered { status, .. } if (200..300).contains(status) => {
                delivery.state = DeliveryState::Succeeded;
                delivery.next_attempt_at = None;
                if endpoint.failing_since.take().is_some() {
                    endpoint.updated_at = now;
                    tx.update_endpoint(endpoint)?;
                }
            }
            SendOutcome::Answered { status: 410, .. } => {
                delivery.state = DeliveryState::Failed;
                delivery.next_attempt_at = None;
                deliveries.changed(&job.delivery_id);
                deliveries.write(tx)?;
                disable(tx, endpoint, "gone", now)?;
                return deliveries.reload(tx);
            }
            other => {
                let since = *endpoint.failing_since.get_or_insert(now);
                if now >= since.plus_seconds(FAILING_DISABLES_AFTER_SECONDS) {
                    delivery.state = DeliveryState::Failed;
                    delivery.next_attempt_at = None;
                    deliveries.changed(&job.delivery_id);
                    deliveries.write(tx)?;
                    disable(tx, endpoint, "failing", now)?;
                    return deliveries.reload(tx);
                }
                endpoint.updated_at = now;
                tx.update_endpoint(endpoint)?;
                let retry_after = match other {
                    SendOutcome::Answered { status: 429 | 503, retry_after } => *retry_after,
                    _ => None,
                };
                match next_attempt(&self.core.webhooks.schedule, delivery.attempts, retry_after, now) {
                    Some(at) => delivery.next_attempt_at = Some(at),
                    None => {
                        delivery.state = DeliveryState::Failed;
                        delivery.next_attempt_at = None;
                    }
                }
            }
        }
        deliveries.changed(&job.delivery_id);
        Ok(())
    }
}

/// The attempt row of one send's outcome.
fn attempt(job: &DeliveryJob, outcome: &SendOutcome, latency_ms: u32, now: Timestamp) -> Attempt {
    Attempt {
        delivery_id: job.delivery_id.clone(),
        event_id: job.event_id.clone(),
        endpoint_id: job.endpoint_id.clone(),
        attempted_at: now,
        status: match outcome {
            SendOutcome::Answered { status, .. } => Some(*status),
            SendOutcome::Failed(_) => None,
        },
        latency_ms,
        error: match outcome {
            SendOutcome::Answered { status, .. } if (200..300).contains(status) => None,
            SendOutcome::Answered { status, .. } => Some(format!("HTTP {status}")),
            SendOutcome::Failed(e) => Some(e.clone()),
        },
    }
}

/// A batch's endpoints, each read once and then kept as the batch changes it.
#[derive(Default)]
struct Endpoints(HashMap<EndpointId, Option<Endpoint>>);

impl Endpoints {
    fn get(&mut self, tx: &mut (impl DeliveryFlow + ?Sized), id: &EndpointId) -> Result<Option<&mut Endpoint>, ServiceError> {
        if !self.0.contains_key(id) {
            let found = tx.endpoint(id)?;
            self.0.insert(id.clone(), found);
        }
        Ok(self.0.get_mut(id).and_then(Option::as_mut))
    }
}

/// A batch's deliveries, locked, as the batch has changed them so far, and which of them it
/// changed since they were last written (written together, in the order first changed).
struct Locked {
    rows: HashMap<String, Delivery>,
    changed: Vec<String>,
}

impl Locked {
    fn changed(&mut self, id: &str) {
        if !self.changed.iter().any(|c| c == id) {
            self.changed.push(id.to_owned());
        }
    }

    /// Writes the changed deliveries in one call.
    fn write(&mut self, tx: &mut (impl DeliveryFlow + ?Sized)) -> Result<(), ServiceError> {
        let changed: Vec<Delivery> = self.changed.drain(..).filter_map(|id| self.rows.get(&id).cloned()).collect();
        if !changed.is_empty() {
            tx.update_deliveries(&changed)?;
        }
        Ok(())
    }

    /// Reads them again (written first): disabling an endpoint fails its pending deliveries in
    /// the store, some of this batch's among them.
    fn reload(&mut self, tx: &mut (impl DeliveryFlow + ?Sized)) -> Result<(), ServiceError> {
        self.write(tx)?;
        let ids: Vec<String> = self.rows.keys().cloned().collect();
        self.rows = tx.lock_deliveries(&ids)?.into_iter().map(|d| (d.id.clone(), d)).collect();
        Ok(())
    }
}
