//! Webhook endpoints and events (contract section 12).

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::client::{new_key, Call};
use crate::operations as ops;
use crate::{Client, Error, EventKind, List, Mode};

crate::names::names! {
    /// Why an endpoint was disabled.
    DisabledReason {
        Gone = "gone": "the receiver answered 410.",
        Failing = "failing": "every delivery failed for 5 days.",
        Deleted = "deleted": "the endpoint was deleted.",
    }
}

crate::names::names! {
    /// A delivery's state.
    DeliveryState {
        Pending = "pending": "not delivered yet; attempts go on.",
        Succeeded = "succeeded": "the receiver answered 2xx (final).",
        Failed = "failed": "every attempt failed (final).",
    }
}

/// A webhook endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub struct Endpoint {
    /// Its id, `we_…`.
    pub endpoint_id: String,
    /// Where deliveries go.
    pub url: String,
    /// The event kinds it receives (`["*"]`: every kind).
    pub events: Vec<String>,
    /// The integrator's description.
    pub description: Option<String>,
    /// The signing secret `whsec_…`: only in the answers to creation and rotation.
    #[serde(default)]
    pub secret: Option<String>,
    /// Whether deliveries are made.
    pub enabled: bool,
    /// Why it was disabled.
    pub disabled_reason: Option<DisabledReason>,
    /// Test or live.
    pub mode: Mode,
    /// During a rotation: when the previous secret stops signing (RFC 3339, UTC).
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub previous_secret_expires_at: Option<OffsetDateTime>,
    /// `true` in the answer to a deletion.
    #[serde(default)]
    pub deleted: bool,
    /// RFC 3339, UTC.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// RFC 3339, UTC.
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

/// An endpoint to create.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct NewEndpoint {
    /// Where deliveries go (`https`; `http` and loopback in test mode).
    pub url: String,
    /// The kinds it receives, or `["*"]`.
    pub events: Vec<String>,
    /// The integrator's description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

impl NewEndpoint {
    /// An endpoint at `url` for every event kind.
    pub fn every_event(url: impl Into<String>) -> Self {
        NewEndpoint { url: url.into(), events: vec!["*".to_owned()], description: None }
    }

    /// An endpoint at `url` for `kinds`.
    pub fn for_kinds(url: impl Into<String>, kinds: &[EventKind]) -> Self {
        NewEndpoint { url: url.into(), events: kinds.iter().map(|k| k.as_str().to_owned()).collect(), description: None }
    }
}

/// An event as the API keeps it (at least 90 days), for catching up on missed deliveries.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[non_exhaustive]
pub struct StoredEvent {
    /// Its id, `evt_…` (the `webhook-id` of its deliveries).
    pub id: String,
    /// What it reports.
    #[serde(rename = "event")]
    pub kind: EventKind,
    /// RFC 3339, UTC.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// Test or live.
    pub mode: Mode,
    /// The id of the object it is about.
    pub object_id: String,
    /// The whole object at the time of the event.
    pub data: serde_json::Value,
}

/// One delivery of an event to an endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub struct Delivery {
    /// The endpoint.
    pub endpoint_id: String,
    /// Where it is.
    pub state: DeliveryState,
    /// Attempts so far.
    pub attempts: u32,
    /// When the next attempt is due (RFC 3339, UTC).
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub next_attempt_at: Option<OffsetDateTime>,
    /// RFC 3339, UTC.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

/// One HTTP attempt of a delivery.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub struct Attempt {
    /// The endpoint.
    pub endpoint_id: String,
    /// RFC 3339, UTC.
    #[serde(with = "time::serde::rfc3339")]
    pub attempted_at: OffsetDateTime,
    /// The receiver's status, when it answered.
    pub status: Option<u16>,
    /// Milliseconds until the answer or the failure.
    pub latency_ms: u32,
    /// What went wrong.
    pub error: Option<String>,
}

/// An event with its deliveries and attempts (`GET /events/{event_id}`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[non_exhaustive]
pub struct EventDetail {
    /// The event.
    #[serde(flatten)]
    pub event: StoredEvent,
    /// One per endpoint it was queued for (and per redelivery), oldest first.
    pub deliveries: Vec<Delivery>,
    /// Every attempt, oldest first.
    pub attempts: Vec<Attempt>,
}

/// What a redelivery queued.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub struct Redelivery {
    /// The event.
    pub event_id: String,
    /// The endpoints it was queued for.
    pub endpoint_ids: Vec<String>,
}

/// The organisation's callback signing secret in this mode: it signs what the GSMA door `PUT`s
/// to an `X-Callback-URL` (verify with [`crate::Webhooks`], as a delivery).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub struct CallbackSecret {
    /// `whsec_…`.
    pub secret: String,
    /// After a rotation, until when the previous secret still signs beside this one.
    pub previous_secret_expires_at: Option<String>,
    /// When made or last rotated.
    pub updated_at: String,
}

#[derive(Serialize)]
struct RedeliverBody<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    endpoint_id: Option<&'a str>,
}

/// Webhook endpoints and events: `client.webhooks()`.
#[derive(Debug, Clone, Copy)]
pub struct WebhookEndpoints<'a> {
    pub(crate) client: &'a Client,
}

impl WebhookEndpoints<'_> {
    /// Registers an endpoint (`createWebhookEndpoint`) under a new idempotency key: the answer
    /// carries its `secret`, shown only here and at rotation.
    ///
    /// # Errors
    /// As every call ([`Error`]); `validation_failed` for a URL the mode refuses.
    pub async fn create(&self, endpoint: &NewEndpoint) -> Result<Endpoint, Error> {
        self.create_with_key(endpoint, &new_key()).await
    }

    /// [`WebhookEndpoints::create`] under the caller's idempotency key: a second call with the
    /// same key and endpoint answers the same endpoint (and secret), and registers one.
    ///
    /// # Errors
    /// As [`WebhookEndpoints::create`]; `idempotency_key_reused`.
    pub async fn create_with_key(&self, endpoint: &NewEndpoint, key: &str) -> Result<Endpoint, Error> {
        self.client.json(&Call::json_body(ops::CREATE_WEBHOOK_ENDPOINT, &[], Some(key), endpoint)?).await
    }

    /// Every endpoint (`listWebhookEndpoints`).
    pub fn list(&self) -> List<Endpoint> {
        List::new(self.client, Call::to(ops::LIST_WEBHOOK_ENDPOINTS, &[]))
    }

    /// One endpoint (`getWebhookEndpoint`).
    ///
    /// # Errors
    /// As every call; `not_found`.
    pub async fn get(&self, endpoint_id: &str) -> Result<Endpoint, Error> {
        self.client.json(&Call::to(ops::GET_WEBHOOK_ENDPOINT, &[endpoint_id])).await
    }

    /// Deletes an endpoint (`deleteWebhookEndpoint`) under a new idempotency key: no more
    /// deliveries.
    ///
    /// # Errors
    /// As every call; `not_found`.
    pub async fn delete(&self, endpoint_id: &str) -> Result<Endpoint, Error> {
        self.delete_with_key(endpoint_id, &new_key()).await
    }

    /// [`WebhookEndpoints::delete`] under the caller's idempotency key.
    ///
    /// # Errors
    /// As [`WebhookEndpoints::delete`]; `idempotency_key_reused`.
    pub async fn delete_with_key(&self, endpoint_id: &str, key: &str) -> Result<Endpoint, Error> {
        self.client.json(&Call::keyed(ops::DELETE_WEBHOOK_ENDPOINT, &[endpoint_id], key)).await
    }

    /// A new secret (`rotateWebhookSecret`) under a new idempotency key; the old one keeps
    /// signing beside it for 24 hours.
    ///
    /// # Errors
    /// As every call; `not_found`.
    pub async fn rotate_secret(&self, endpoint_id: &str) -> Result<Endpoint, Error> {
        self.rotate_secret_with_key(endpoint_id, &new_key()).await
    }

    /// [`WebhookEndpoints::rotate_secret`] under the caller's idempotency key: a retry under
    /// the same key answers the same new secret instead of rotating again.
    ///
    /// # Errors
    /// As [`WebhookEndpoints::rotate_secret`]; `idempotency_key_reused`.
    pub async fn rotate_secret_with_key(&self, endpoint_id: &str, key: &str) -> Result<Endpoint, Error> {
        let empty = serde_json::json!({});
        self.client.json(&Call::json_body(ops::ROTATE_WEBHOOK_SECRET, &[endpoint_id], Some(key), &empty)?).await
    }

    /// The callback signing secret (`getCallbackSecret`), made on first ask.
    ///
    /// # Errors
    /// As every call.
    pub async fn callback_secret(&self) -> Result<CallbackSecret, Error> {
        self.client.json(&Call::to(ops::GET_CALLBACK_SECRET, &[])).await
    }

    /// A new callback signing secret (`rotateCallbackSecret`) under a new idempotency key; the
    /// old one keeps signing beside it for 24 hours.
    ///
    /// # Errors
    /// As every call.
    pub async fn rotate_callback_secret(&self) -> Result<CallbackSecret, Error> {
        let empty = serde_json::json!({});
        self.client.json(&Call::json_body(ops::ROTATE_CALLBACK_SECRET, &[], Some(&new_key()), &empty)?).await
    }

    /// Every event, oldest first (`listEvents`), of one kind when given: to catch up on missed
    /// deliveries.
    pub fn events(&self, kind: Option<EventKind>) -> List<StoredEvent> {
        List::new(self.client, Call::to(ops::LIST_EVENTS, &[]).query("type", kind.as_ref().map(EventKind::as_str)))
    }

    /// One event with its deliveries and attempts (`getEvent`).
    ///
    /// # Errors
    /// As every call; `not_found`.
    pub async fn event(&self, event_id: &str) -> Result<EventDetail, Error> {
        self.client.json(&Call::to(ops::GET_EVENT, &[event_id])).await
    }

    /// Queues an event again (`redeliverEvent`) under a new idempotency key, to one endpoint or
    /// to every endpoint it was for.
    ///
    /// # Errors
    /// As every call; `not_found`.
    pub async fn redeliver(&self, event_id: &str, endpoint_id: Option<&str>) -> Result<Redelivery, Error> {
        self.redeliver_with_key(event_id, endpoint_id, &new_key()).await
    }

    /// [`WebhookEndpoints::redeliver`] under the caller's idempotency key: queued once however
    /// often it is retried.
    ///
    /// # Errors
    /// As [`WebhookEndpoints::redeliver`]; `idempotency_key_reused`.
    pub async fn redeliver_with_key(&self, event_id: &str, endpoint_id: Option<&str>, key: &str) -> Result<Redelivery, Error> {
        self.client.json(&Call::json_body(ops::REDELIVER_EVENT, &[event_id], Some(key), &RedeliverBody { endpoint_id })?).await
    }
}
