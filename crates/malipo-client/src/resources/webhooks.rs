//! Webhook endpoints and events (contract section 12).

use serde::{Deserialize, Serialize};

use crate::client::{new_key, Call};
use crate::operations as ops;
use crate::{Client, Error, EventKind, List, Mode};

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
    /// Why it was disabled (`gone`, `failing`, `deleted`).
    pub disabled_reason: Option<String>,
    /// Test or live.
    pub mode: Mode,
    /// During a rotation: when the previous secret stops signing (RFC 3339, UTC).
    pub previous_secret_expires_at: Option<String>,
    /// `true` in the answer to a deletion.
    #[serde(default)]
    pub deleted: bool,
    /// RFC 3339, UTC.
    pub created_at: String,
    /// RFC 3339, UTC.
    pub updated_at: String,
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
    pub created_at: String,
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
    /// `pending`, `succeeded` or `failed`.
    pub state: String,
    /// Attempts so far.
    pub attempts: u32,
    /// When the next attempt is due (RFC 3339, UTC).
    pub next_attempt_at: Option<String>,
    /// RFC 3339, UTC.
    pub created_at: String,
}

/// One HTTP attempt of a delivery.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub struct Attempt {
    /// The endpoint.
    pub endpoint_id: String,
    /// RFC 3339, UTC.
    pub attempted_at: String,
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
    /// Registers an endpoint (`createWebhookEndpoint`): the answer carries its `secret`, shown
    /// only here and at rotation.
    ///
    /// # Errors
    /// As every call ([`Error`]); `validation_failed` for a URL the mode refuses.
    pub async fn create(&self, endpoint: &NewEndpoint) -> Result<Endpoint, Error> {
        self.client.json(&Call::json_body(ops::CREATE_WEBHOOK_ENDPOINT, &[], None, endpoint)?).await
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

    /// Deletes an endpoint (`deleteWebhookEndpoint`): no more deliveries.
    ///
    /// # Errors
    /// As every call; `not_found`.
    pub async fn delete(&self, endpoint_id: &str) -> Result<Endpoint, Error> {
        self.client.json(&Call::keyed(ops::DELETE_WEBHOOK_ENDPOINT, &[endpoint_id], &new_key())).await
    }

    /// A new secret (`rotateWebhookSecret`); the old one keeps signing beside it for 24 hours.
    ///
    /// # Errors
    /// As every call; `not_found`.
    pub async fn rotate_secret(&self, endpoint_id: &str) -> Result<Endpoint, Error> {
        let empty = serde_json::json!({});
        self.client.json(&Call::json_body(ops::ROTATE_WEBHOOK_SECRET, &[endpoint_id], None, &empty)?).await
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

    /// Queues an event again (`redeliverEvent`), to one endpoint or to every endpoint it was for.
    ///
    /// # Errors
    /// As every call; `not_found`.
    pub async fn redeliver(&self, event_id: &str, endpoint_id: Option<&str>) -> Result<Redelivery, Error> {
        self.client.json(&Call::json_body(ops::REDELIVER_EVENT, &[event_id], None, &RedeliverBody { endpoint_id })?).await
    }
}
