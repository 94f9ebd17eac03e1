//! What the endpoints API and the sender share: the API's answers, the timings, and disabling
//! an endpoint (the delivery job and an attempt's outcome are the sender port's records).

use malipo_core::{EndpointId, EventId, Timestamp};
use std::time::Duration;

use malipo_webhooks::{Attempt, Delivery, DeliveryState, Endpoint, Event, RetrySchedule, Secret};

use crate::error::ServiceError;
use crate::ports::DeliveryFlow;

/// An endpoint that fails everything for this long is disabled.
pub(crate) const FAILING_DISABLES_AFTER_SECONDS: i64 = 5 * 24 * 3600;
/// The previous secret keeps signing this long after a rotation.
pub(crate) const ROTATION_OVERLAP_SECONDS: i64 = 24 * 3600;
/// A claimed delivery is re-claimable this long after its send timeout.
pub(crate) const LEASE_MARGIN_SECONDS: i64 = 30;

/// An endpoint as created or rotated: with its secret in plain text, this once.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
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
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Redelivery {
    /// The event.
    pub event_id: EventId,
    /// The endpoints it was queued for.
    pub endpoint_ids: Vec<EndpointId>,
}

/// A signing secret opened from its sealed form (an endpoint's or a callback secret).
///
/// # Errors
/// [`ServiceError::Internal`] when the key cannot open it.
pub(crate) fn open_secret(cipher: &malipo_webhooks::SecretCipher, sealed: &[u8]) -> Result<Secret, ServiceError> {
    let key = cipher.open(sealed).map_err(|e| ServiceError::Internal(e.to_string()))?;
    Secret::from_bytes(key).map_err(|e| ServiceError::Internal(e.to_string()))
}

/// When a failed attempt (the `attempts`-th) is tried again: after the schedule's wait, or the
/// receiver's `Retry-After` (capped at a day) when that is later; `None` once the schedule has
/// run out.
pub(crate) fn next_attempt(schedule: &RetrySchedule, attempts: u32, retry_after: Option<Duration>, now: Timestamp) -> Option<Timestamp> {
    let wait = schedule.next_delay(usize::try_from(attempts).unwrap_or(usize::MAX))?;
    let wait = retry_after.map_or(wait, |r| wait.max(r.min(Duration::from_secs(86_400))));
    Some(now.plus_millis(i64::try_from(wait.as_millis()).unwrap_or(i64::MAX)))
}

/// Disables an endpoint: no more deliveries; pending ones fail.
pub(crate) fn disable(
    tx: &mut (impl DeliveryFlow + ?Sized),
    endpoint: &mut Endpoint,
    reason: &str,
    now: Timestamp,
) -> Result<(), ServiceError> {
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

impl crate::idempotency::Subject for EndpointWithSecret {
    fn subject(&self) -> (String, String) {
        (self.endpoint.id.to_string(), self.endpoint.url.clone())
    }
}

impl crate::idempotency::Subject for Redelivery {
    fn subject(&self) -> (String, String) {
        let to: Vec<String> = self.endpoint_ids.iter().map(ToString::to_string).collect();
        (self.event_id.to_string(), format!("to {}", to.join(", ")))
    }
}
