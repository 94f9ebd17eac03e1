//! Webhooks: events written in the same transaction as the change they report (the outbox), one
//! delivery per subscribed endpoint, the delivery schedule, and the endpoints and events API.

use std::collections::HashMap;
use std::time::Duration;

use malipo_auth::Principal;
use malipo_charges::{Charge, ChargeKind, ChargeState};
use malipo_core::{EndpointId, EventId, Mode, OrgId, Timestamp};
use malipo_idempotency::StoredResponse;
use malipo_webhooks::{
    body_signature, check_url, signature_header, Attempt, Delivery, DeliveryState, Endpoint, Event, EventFilter, RetrySchedule, Secret,
    Summary, UrlPolicy,
};

use crate::charges::Page;
use crate::error::ServiceError;
use crate::idempotency::{Idem, IdemOutcome};
use crate::platform::Platform;
use crate::ports::{read, write, Tx};

/// An endpoint that fails everything for this long is disabled.
const FAILING_DISABLES_AFTER_SECONDS: i64 = 5 * 24 * 3600;
/// The previous secret keeps signing this long after a rotation.
const ROTATION_OVERLAP_SECONDS: i64 = 24 * 3600;
/// Events are kept at least this long.
pub const EVENT_RETENTION_SECONDS: i64 = 90 * 24 * 3600;
/// A claimed delivery is re-claimable this long after its send timeout.
const LEASE_MARGIN_SECONDS: i64 = 30;

/// Renders the wire forms of events: implemented by the HTTP adapter, which owns the JSON.
pub trait EventRenderer: Send + Sync {
    /// A charge as the API shows it (the event's `data`), and the seed's top-level fields.
    fn charge(&self, charge: &Charge) -> (Vec<u8>, Summary);
    /// A cash-out (a prompt of kind `cash_out`) as the API shows it, and its summary.
    fn cash_out(&self, cash_out: &Charge) -> (Vec<u8>, Summary);
    /// The body of one delivery attempt: the envelope at `timestamp` with the body `signature`.
    fn delivery_body(&self, event: &Event, timestamp: i64, signature: &str) -> Vec<u8>;
}

/// Renders nothing useful: for platforms without an HTTP adapter (unit tests).
#[derive(Debug, Default)]
pub struct NoRenderer;

impl EventRenderer for NoRenderer {
    fn charge(&self, charge: &Charge) -> (Vec<u8>, Summary) {
        (b"{}".to_vec(), Summary { state: Some(charge.state.as_str().to_owned()), ..Summary::default() })
    }
    fn cash_out(&self, cash_out: &Charge) -> (Vec<u8>, Summary) {
        self.charge(cash_out)
    }
    fn delivery_body(&self, _: &Event, _: i64, _: &str) -> Vec<u8> {
        b"{}".to_vec()
    }
}

/// Tunables of webhook delivery.
#[derive(Clone, Debug)]
pub struct WebhookConfig {
    /// Waits between attempts.
    pub schedule: RetrySchedule,
    /// A delivery succeeds on a 2xx within this time.
    pub timeout: Duration,
    /// Let live endpoints use private addresses.
    pub allow_private: bool,
}

impl Default for WebhookConfig {
    fn default() -> Self {
        WebhookConfig { schedule: RetrySchedule::default(), timeout: Duration::from_secs(15), allow_private: false }
    }
}

impl WebhookConfig {
    /// The URL policy of a mode.
    pub fn policy(&self, mode: Mode) -> UrlPolicy {
        match mode {
            Mode::Live => UrlPolicy::live(self.allow_private),
            Mode::Test => UrlPolicy::test(self.allow_private),
        }
    }
}

/// One attempt to make: everything the sender needs, signed.
#[derive(Clone, Debug)]
pub struct DeliveryJob {
    /// The delivery.
    pub delivery_id: String,
    /// The claim's lease (the attempt is recorded against it).
    pub lease: Timestamp,
    /// The event (its id is the `webhook-id`).
    pub event_id: EventId,
    /// The endpoint.
    pub endpoint_id: EndpointId,
    /// Where to send.
    pub url: String,
    /// What the URL may reach.
    pub policy: UrlPolicy,
    /// Headers: `webhook-id`, `webhook-timestamp`, `webhook-signature`, `content-type`.
    pub headers: Vec<(String, String)>,
    /// The exact body.
    pub body: Vec<u8>,
    /// The send timeout.
    pub timeout: Duration,
}

/// What one attempt got.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SendOutcome {
    /// An HTTP answer.
    Answered {
        /// Its status.
        status: u16,
        /// Its `Retry-After`, for 429 and 503.
        retry_after: Option<Duration>,
    },
    /// No answer: timeout, refused connection, refused address.
    Failed(String),
}

/// An endpoint as created or rotated: with its secret in plain text, this once.
#[derive(Clone, Debug)]
pub struct EndpointWithSecret {
    /// The endpoint.
    pub endpoint: Endpoint,
    /// `whsec_…`.
    pub secret: String,
}

/// An event with its delivery attempts.
#[derive(Clone, Debug)]
pub struct EventDetail {
    /// The event.
    pub event: Event,
    /// Every attempt, oldest first.
    pub attempts: Vec<Attempt>,
    /// Its deliveries.
    pub deliveries: Vec<Delivery>,
}

/// What `POST /events/{id}/redeliver` queued.
#[derive(Clone, Debug)]
pub struct Redelivery {
    /// The event.
    pub event_id: EventId,
    /// The endpoints it was queued for.
    pub endpoint_ids: Vec<EndpointId>,
}

fn new_delivery(event: &EventId, endpoint: &EndpointId, now: Timestamp) -> Delivery {
    Delivery {
        id: format!("dlv_{}", uuid_like()),
        event_id: event.clone(),
        endpoint_id: endpoint.clone(),
        state: DeliveryState::Pending,
        attempts: 0,
        next_attempt_at: Some(now),
        created_at: now,
        updated_at: now,
    }
}

/// A time-ordered unique suffix (the event id generator's, reused).
fn uuid_like() -> String {
    EventId::new().as_str().trim_start_matches(EventId::PREFIX).to_owned()
}

/// The event kind a charge's new state is reported as.
pub fn charge_event_kind(state: ChargeState) -> Option<&'static str> {
    match state {
        ChargeState::Pending => None,
        ChargeState::Authorised => Some("charge.authorised"),
        ChargeState::Completed => Some("charge.completed"),
        ChargeState::Declined => Some("charge.declined"),
        ChargeState::Expired => Some("charge.expired"),
        ChargeState::Failed => Some("charge.failed"),
    }
}

impl Platform {
    /// Writes an event and one delivery per enabled, subscribed endpoint, in the caller's
    /// transaction: no committed change without its event, no event without its change.
    ///
    /// # Errors
    /// Storage failures (which fail the caller's transaction).
    #[allow(clippy::too_many_arguments)]
    pub fn emit(
        &self,
        tx: &mut dyn Tx,
        org_id: &OrgId,
        mode: Mode,
        kind: &str,
        object_id: &str,
        data: Vec<u8>,
        summary: Summary,
        now: Timestamp,
    ) -> Result<(), ServiceError> {
        let event = Event {
            id: EventId::new(),
            org_id: org_id.clone(),
            mode,
            kind: kind.to_owned(),
            object_id: object_id.to_owned(),
            data,
            summary,
            created_at: now,
        };
        tx.insert_event(&event)?;
        for endpoint in tx.list_endpoints(org_id, mode)? {
            if endpoint.enabled && endpoint.events.matches(kind) {
                tx.insert_delivery(&new_delivery(&event.id, &endpoint.id, now))?;
            }
        }
        Ok(())
    }

    /// The event of a charge's move into its current state, if that state is reported.
    ///
    /// # Errors
    /// As [`Platform::emit`].
    pub fn emit_charge(&self, tx: &mut dyn Tx, charge: &Charge, now: Timestamp) -> Result<(), ServiceError> {
        let (kind, (data, summary)) = match charge.kind {
            ChargeKind::Charge => match charge_event_kind(charge.state) {
                Some(kind) => (kind, self.renderer.charge(charge)),
                None => return Ok(()),
            },
            // Of a cash-out's moves only its completion is an event (contract section 12).
            ChargeKind::CashOut if charge.state == ChargeState::Completed => ("cash_out.completed", self.renderer.cash_out(charge)),
            ChargeKind::CashOut => return Ok(()),
        };
        self.emit(tx, &charge.org_id, charge.mode, kind, charge.id.as_str(), data, summary, now)
    }

    fn open_secret(&self, sealed: &[u8]) -> Result<Secret, ServiceError> {
        let key = self.cipher.open(sealed).map_err(|e| ServiceError::Internal(e.to_string()))?;
        Secret::from_bytes(key).map_err(|e| ServiceError::Internal(e.to_string()))
    }

    /// Claims due deliveries and prepares each attempt (signed now). Deliveries whose endpoint
    /// was deleted or disabled since are failed instead.
    ///
    /// # Errors
    /// Storage failures.
    pub fn claim_deliveries(&self, limit: usize) -> Result<Vec<DeliveryJob>, ServiceError> {
        let now = self.clock.now();
        let timeout = self.webhooks.timeout;
        let lease = now.plus_millis(i64::try_from(timeout.as_millis()).unwrap_or(i64::MAX)).plus_seconds(LEASE_MARGIN_SECONDS);
        // One transaction for the whole batch: claim, load (each endpoint once) and prepare.
        write(self.store(), |tx| {
            let ids = tx.claim_due_deliveries(now, lease, limit)?;
            let mut endpoints: HashMap<EndpointId, Option<Endpoint>> = HashMap::new();
            let mut jobs = Vec::with_capacity(ids.len());
            for id in &ids {
                let Some(mut delivery) = tx.lock_delivery(id)? else { continue };
                let endpoint = match endpoints.get(&delivery.endpoint_id) {
                    Some(e) => e.clone(),
                    None => {
                        let e = tx.endpoint(&delivery.endpoint_id)?;
                        endpoints.insert(delivery.endpoint_id.clone(), e.clone());
                        e
                    }
                };
                let event = match &endpoint {
                    Some(e) => tx.event(&e.org_id, e.mode, &delivery.event_id)?,
                    None => None,
                };
                let (Some(endpoint), Some(event)) = (endpoint, event) else { continue };
                if !endpoint.enabled || endpoint.deleted_at.is_some() {
                    delivery.state = DeliveryState::Failed;
                    delivery.next_attempt_at = None;
                    delivery.updated_at = now;
                    tx.update_delivery(&delivery)?;
                    continue;
                }
                // One delivery that cannot be prepared (a secret the key cannot open) must not
                // hold up the rest of the batch: it is logged and comes due again after its lease.
                match self.prepare(&delivery, &endpoint, &event, lease, now) {
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
        let ts = now.as_unix_seconds();
        let s = &event.summary;
        let body_sig = body_signature(
            &current,
            event.id.as_str(),
            ts,
            &event.kind,
            &event.object_id,
            s.amount.as_deref(),
            s.currency.as_deref(),
            s.state.as_deref(),
        );
        let body = self.renderer.delivery_body(event, ts, &body_sig);
        let mut secrets = vec![&current];
        secrets.extend(previous.as_ref());
        let headers = vec![
            ("webhook-id".to_owned(), event.id.to_string()),
            ("webhook-timestamp".to_owned(), ts.to_string()),
            ("webhook-signature".to_owned(), signature_header(&secrets, event.id.as_str(), ts, &body)),
            ("content-type".to_owned(), "application/json".to_owned()),
            ("user-agent".to_owned(), "Malipo-Webhooks/1".to_owned()),
        ];
        Ok(DeliveryJob {
            delivery_id: delivery.id.clone(),
            lease,
            event_id: event.id.clone(),
            endpoint_id: endpoint.id.clone(),
            url: endpoint.url.clone(),
            policy: self.webhooks.policy(endpoint.mode),
            headers,
            body,
            timeout: self.webhooks.timeout,
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
        let now = self.clock.now();
        write(self.store(), |tx| {
            let attempt = Attempt {
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
            };
            tx.insert_attempt(&attempt)?;
            let Some(mut delivery) = tx.lock_delivery(&job.delivery_id)? else { return Ok(()) };
            if delivery.state != DeliveryState::Pending || delivery.next_attempt_at != Some(job.lease) {
                // The claim lapsed and another worker owns the delivery now: the attempt is on
                // record, the schedule is theirs.
                return Ok(());
            }
            let Some(mut endpoint) = tx.endpoint(&job.endpoint_id)? else { return Ok(()) };
            delivery.attempts += 1;
            delivery.updated_at = now;
            match outcome {
                SendOutcome::Answered { status, .. } if (200..300).contains(status) => {
                    delivery.state = DeliveryState::Succeeded;
                    delivery.next_attempt_at = None;
                    if endpoint.failing_since.take().is_some() {
                        endpoint.updated_at = now;
                        tx.update_endpoint(&endpoint)?;
                    }
                }
                SendOutcome::Answered { status: 410, .. } => {
                    delivery.state = DeliveryState::Failed;
                    delivery.next_attempt_at = None;
                    tx.update_delivery(&delivery)?;
                    return self.disable(tx, &mut endpoint, "gone", now);
                }
                other => {
                    let since = *endpoint.failing_since.get_or_insert(now);
                    if now.as_micros() - since.as_micros() >= FAILING_DISABLES_AFTER_SECONDS * 1_000_000 {
                        delivery.state = DeliveryState::Failed;
                        delivery.next_attempt_at = None;
                        tx.update_delivery(&delivery)?;
                        return self.disable(tx, &mut endpoint, "failing", now);
                    }
                    endpoint.updated_at = now;
                    tx.update_endpoint(&endpoint)?;
                    let retry_after = match other {
                        SendOutcome::Answered { status: 429 | 503, retry_after } => *retry_after,
                        _ => None,
                    };
                    let attempts = usize::try_from(delivery.attempts).unwrap_or(usize::MAX);
                    match self.webhooks.schedule.next_delay(attempts) {
                        Some(wait) => {
                            let wait = retry_after.map_or(wait, |r| wait.max(r.min(Duration::from_secs(86_400))));
                            delivery.next_attempt_at = Some(now.plus_millis(i64::try_from(wait.as_millis()).unwrap_or(i64::MAX)));
                        }
                        None => {
                            delivery.state = DeliveryState::Failed;
                            delivery.next_attempt_at = None;
                        }
                    }
                }
            }
            tx.update_delivery(&delivery)?;
            Ok(())
        })
    }

    fn disable(&self, tx: &mut dyn Tx, endpoint: &mut Endpoint, reason: &str, now: Timestamp) -> Result<(), ServiceError> {
        endpoint.enabled = false;
        endpoint.disabled_reason = Some(reason.to_owned());
        endpoint.updated_at = now;
        tx.update_endpoint(endpoint)?;
        for mut d in tx.pending_deliveries_of_endpoint(&endpoint.id)? {
            d.state = DeliveryState::Failed;
            d.next_attempt_at = None;
            d.updated_at = now;
            tx.update_delivery(&d)?;
        }
        tracing::warn!(endpoint = %endpoint.id, reason, "webhook endpoint disabled");
        Ok(())
    }

    // ----- the endpoints and events API -----

    fn owned_endpoint(tx: &mut dyn Tx, principal: &Principal, id: &str) -> Result<Endpoint, ServiceError> {
        let id = EndpointId::parse(id).map_err(|_| ServiceError::NotFound)?;
        tx.endpoint(&id)?
            .filter(|e| e.org_id == principal.org_id && e.mode == principal.mode && e.deleted_at.is_none())
            .ok_or(ServiceError::NotFound)
    }

    /// Registers an endpoint with a new `whsec_` secret.
    ///
    /// # Errors
    /// [`ServiceError::Validation`] for a refused URL or event list; idempotency errors.
    pub fn create_endpoint(
        &self,
        principal: &Principal,
        url: &str,
        events: &[String],
        description: Option<String>,
        idem: &Idem,
        render: &dyn Fn(&EndpointWithSecret) -> StoredResponse,
    ) -> Result<IdemOutcome, ServiceError> {
        let mut errors = Vec::new();
        let url = match check_url(url, self.webhooks.policy(principal.mode)) {
            Ok(u) => Some(u.to_string()),
            Err(e) => {
                errors.push(crate::FieldError::new("url", "invalid_url", format!("url {e}")));
                None
            }
        };
        let filter = match EventFilter::parse(events) {
            Ok(f) => Some(f),
            Err(e) => {
                errors.push(crate::FieldError::new("events", "invalid_value", e.to_string()));
                None
            }
        };
        if description.as_ref().is_some_and(|d| d.chars().count() > 200) {
            errors.push(crate::FieldError::new("description", "too_long", "description must be at most 200 characters"));
        }
        let (Some(url), Some(filter)) = (url, filter) else {
            return Err(ServiceError::Validation(errors));
        };
        if !errors.is_empty() {
            return Err(ServiceError::Validation(errors));
        }
        let secret = Secret::generate();
        let now = self.clock.now();
        let endpoint = Endpoint {
            id: EndpointId::new(),
            org_id: principal.org_id.clone(),
            mode: principal.mode,
            url,
            description,
            events: filter,
            enabled: true,
            secret: self.cipher.seal(secret.as_bytes()),
            previous_secret: None,
            disabled_reason: None,
            failing_since: None,
            deleted_at: None,
            created_at: now,
            updated_at: now,
        };
        let shown = EndpointWithSecret { endpoint: endpoint.clone(), secret: secret.to_whsec() };
        self.idempotent(
            idem,
            |tx| {
                tx.insert_endpoint(&endpoint)?;
                Ok(shown.clone())
            },
            render,
        )
    }

    /// The principal's endpoints.
    ///
    /// # Errors
    /// Storage failures.
    pub fn list_endpoints(&self, principal: &Principal) -> Result<Vec<Endpoint>, ServiceError> {
        read(self.store(), |tx| Ok(tx.list_endpoints(&principal.org_id, principal.mode)?))
    }

    /// One endpoint.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`].
    pub fn get_endpoint(&self, principal: &Principal, id: &str) -> Result<Endpoint, ServiceError> {
        read(self.store(), |tx| Self::owned_endpoint(tx, principal, id))
    }

    /// Deletes an endpoint: no more deliveries; pending ones fail.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`]; idempotency errors.
    pub fn delete_endpoint(
        &self,
        principal: &Principal,
        id: &str,
        idem: &Idem,
        render: &dyn Fn(&Endpoint) -> StoredResponse,
    ) -> Result<IdemOutcome, ServiceError> {
        self.idempotent(
            idem,
            |tx| {
                let now = self.clock.now();
                let mut endpoint = Self::owned_endpoint(tx, principal, id)?;
                endpoint.deleted_at = Some(now);
                self.disable(tx, &mut endpoint, "deleted", now)?;
                Ok(endpoint)
            },
            render,
        )
    }

    /// Rotates an endpoint's secret: the new one signs from now on, the old one beside it for 24 hours.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`]; idempotency errors.
    pub fn rotate_secret(
        &self,
        principal: &Principal,
        id: &str,
        idem: &Idem,
        render: &dyn Fn(&EndpointWithSecret) -> StoredResponse,
    ) -> Result<IdemOutcome, ServiceError> {
        let secret = Secret::generate();
        self.idempotent(
            idem,
            |tx| {
                let now = self.clock.now();
                let mut endpoint = Self::owned_endpoint(tx, principal, id)?;
                let old = std::mem::replace(&mut endpoint.secret, self.cipher.seal(secret.as_bytes()));
                endpoint.previous_secret = Some((old, now.plus_seconds(ROTATION_OVERLAP_SECONDS)));
                endpoint.updated_at = now;
                tx.update_endpoint(&endpoint)?;
                Ok(EndpointWithSecret { endpoint, secret: secret.to_whsec() })
            },
            render,
        )
    }

    /// The principal's events, oldest first after a cursor.
    ///
    /// # Errors
    /// [`ServiceError::Validation`] for a bad cursor.
    pub fn list_events(
        &self,
        principal: &Principal,
        kind: Option<&str>,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Page<Event>, ServiceError> {
        let after = after
            .map(|a| EventId::parse(a).map_err(|_| ServiceError::field("after", "invalid_cursor", "after is not an event id")))
            .transpose()?;
        let mut data = read(self.store(), |tx| Ok(tx.list_events(&principal.org_id, principal.mode, kind, after.as_ref(), limit + 1)?))?;
        let has_more = data.len() > limit;
        data.truncate(limit);
        let next_cursor = if has_more { data.last().map(|e| e.id.to_string()) } else { None };
        Ok(Page { data, has_more, next_cursor })
    }

    /// One event with its deliveries and attempts.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`].
    pub fn get_event(&self, principal: &Principal, id: &str) -> Result<EventDetail, ServiceError> {
        let id = EventId::parse(id).map_err(|_| ServiceError::NotFound)?;
        read(self.store(), |tx| {
            let event = tx.event(&principal.org_id, principal.mode, &id)?.ok_or(ServiceError::NotFound)?;
            let attempts = tx.attempts_of_event(&id)?;
            let deliveries = tx.deliveries_of_event(&id)?;
            Ok(EventDetail { event, attempts, deliveries })
        })
    }

    /// Queues an event again: to one endpoint, or to every enabled endpoint subscribed to it.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`] (event or endpoint); [`ServiceError::InvalidState`] for a
    /// disabled endpoint; idempotency errors.
    pub fn redeliver(
        &self,
        principal: &Principal,
        event_id: &str,
        endpoint_id: Option<&str>,
        idem: &Idem,
        render: &dyn Fn(&Redelivery) -> StoredResponse,
    ) -> Result<IdemOutcome, ServiceError> {
        let id = EventId::parse(event_id).map_err(|_| ServiceError::NotFound)?;
        self.idempotent(
            idem,
            |tx| {
                let now = self.clock.now();
                let event = tx.event(&principal.org_id, principal.mode, &id)?.ok_or(ServiceError::NotFound)?;
                let endpoints = match endpoint_id {
                    Some(e) => {
                        let endpoint = Self::owned_endpoint(tx, principal, e)?;
                        if !endpoint.enabled {
                            return Err(ServiceError::InvalidState("the endpoint is disabled".into()));
                        }
                        vec![endpoint]
                    }
                    None => tx
                        .list_endpoints(&principal.org_id, principal.mode)?
                        .into_iter()
                        .filter(|e| e.enabled && e.events.matches(&event.kind))
                        .collect(),
                };
                for e in &endpoints {
                    tx.insert_delivery(&new_delivery(&event.id, &e.id, now))?;
                }
                Ok(Redelivery { event_id: event.id, endpoint_ids: endpoints.into_iter().map(|e| e.id).collect() })
            },
            render,
        )
    }

    /// Deletes events older than the retention period with their deliveries and attempts.
    ///
    /// # Errors
    /// Storage failures.
    pub fn purge_events(&self) -> Result<u64, ServiceError> {
        let before = self.clock.now().plus_seconds(-EVENT_RETENTION_SECONDS);
        write(self.store(), |tx| Ok(tx.purge_events(before)?))
    }
}
