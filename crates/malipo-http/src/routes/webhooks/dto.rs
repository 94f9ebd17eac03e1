//! The wire shapes of the Webhooks group (contract section 12): endpoints, events, deliveries.

use malipo_service::{CallbackSigning, EndpointWithSecret, EventDetail, NewEndpoint, NewRedelivery, Redelivery};
use malipo_webhooks::{Attempt, Delivery, Endpoint, Event};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use utoipa::ToSchema;

use crate::schema::{EventKind, Text200};
use crate::wire::time;

/// Stored JSON text as a raw JSON value, emitted as written (numbers keep their form).
pub fn raw_json(bytes: &[u8]) -> Box<RawValue> {
    std::str::from_utf8(bytes)
        .ok()
        .and_then(|s| RawValue::from_string(s.to_owned()).ok())
        .unwrap_or_else(|| RawValue::from_string("{}".to_owned()).unwrap_or_default())
}

/// `POST /webhooks/endpoints` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EndpointCreateRequest {
    /// Where deliveries go: `https` in live mode (test mode also allows `http` and loopback).
    #[schema(example = "https://example.com/webhooks/malipo")]
    pub url: String,
    /// Event kinds to receive, or `["*"]` for every kind.
    #[schema(value_type = Vec<EventKind>, min_items = 1, example = json!(["charge.completed", "charge.failed"]))]
    pub events: Vec<String>,
    /// Optional, at most 200 printable characters.
    #[schema(value_type = Option<Text200>)]
    pub description: Option<String>,
}

impl EndpointCreateRequest {
    /// The use case's raw input.
    pub fn into_new(self) -> NewEndpoint {
        NewEndpoint { url: self.url, events: self.events, description: self.description }
    }
}

/// `POST /webhooks/endpoints/{endpoint_id}/rotate-secret` body: empty, or `{}`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RotateSecretRequest {}

/// A webhook endpoint. `secret` appears only when the endpoint is created and at rotation.
#[derive(Debug, Serialize, ToSchema)]
pub struct EndpointDto {
    /// `we_…`.
    pub endpoint_id: String,
    /// Where deliveries go.
    pub url: String,
    /// The event kinds it receives (`["*"]`: every kind).
    pub events: Vec<String>,
    /// Optional description.
    pub description: Option<String>,
    /// The signing secret `whsec_…` (creation and rotation answers only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    /// Whether deliveries are made.
    pub enabled: bool,
    /// Why it was disabled: `gone` (the receiver answered 410), `failing` (5 days of failures), `deleted`.
    pub disabled_reason: Option<String>,
    /// `test` or `live`.
    pub mode: &'static str,
    /// During a rotation: when the previous secret stops signing (RFC 3339 UTC).
    pub previous_secret_expires_at: Option<String>,
    /// Present and `true` on the answer to `DELETE`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub deleted: bool,
    /// RFC 3339 UTC.
    pub created_at: String,
    /// RFC 3339 UTC.
    pub updated_at: String,
}

impl From<&Endpoint> for EndpointDto {
    fn from(e: &Endpoint) -> Self {
        EndpointDto {
            endpoint_id: e.id.to_string(),
            url: e.url.clone(),
            events: e.events.to_list(),
            description: e.description.clone(),
            secret: None,
            enabled: e.enabled,
            disabled_reason: e.disabled_reason.clone(),
            mode: e.mode.as_str(),
            previous_secret_expires_at: e.previous_secret.as_ref().map(|(_, until)| time(*until)),
            deleted: e.deleted_at.is_some(),
            created_at: time(e.created_at),
            updated_at: time(e.updated_at),
        }
    }
}

impl From<&EndpointWithSecret> for EndpointDto {
    fn from(e: &EndpointWithSecret) -> Self {
        EndpointDto { secret: Some(e.secret.clone()), ..EndpointDto::from(&e.endpoint) }
    }
}

/// An event, as kept for `GET /events` (at least 90 days).
#[derive(Debug, Serialize, ToSchema)]
pub struct EventDto {
    /// `evt_…` (the `webhook-id` of its deliveries).
    pub id: String,
    /// The kind, e.g. `charge.completed`.
    pub event: String,
    /// RFC 3339 UTC.
    pub created_at: String,
    /// `test` or `live`.
    pub mode: &'static str,
    /// The object's id (`ch_…`).
    pub object_id: String,
    /// The full object at the time of the event (rendered from the event's snapshot; an older
    /// event's as stored).
    #[schema(value_type = Object)]
    pub data: Box<RawValue>,
}

impl From<&Event> for EventDto {
    fn from(e: &Event) -> Self {
        EventDto {
            id: e.id.to_string(),
            event: e.kind.clone(),
            created_at: time(e.created_at),
            mode: e.mode.as_str(),
            object_id: e.object_id.clone(),
            data: raw_json(&crate::render::event_data(e)),
        }
    }
}

/// One event to one endpoint.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeliveryDto {
    /// `we_…`.
    pub endpoint_id: String,
    /// `pending`, `succeeded` or `failed`.
    pub state: &'static str,
    /// Attempts made so far.
    pub attempts: u32,
    /// When the next attempt is due (RFC 3339 UTC); null once settled.
    pub next_attempt_at: Option<String>,
    /// RFC 3339 UTC.
    pub created_at: String,
}

impl From<&Delivery> for DeliveryDto {
    fn from(d: &Delivery) -> Self {
        DeliveryDto {
            endpoint_id: d.endpoint_id.to_string(),
            state: d.state.as_str(),
            attempts: d.attempts,
            next_attempt_at: d.next_attempt_at.map(time),
            created_at: time(d.created_at),
        }
    }
}

/// One HTTP attempt of a delivery.
#[derive(Debug, Serialize, ToSchema)]
pub struct AttemptDto {
    /// `we_…`.
    pub endpoint_id: String,
    /// RFC 3339 UTC.
    pub attempted_at: String,
    /// The receiver's HTTP status; null when no answer came.
    pub status: Option<u16>,
    /// Milliseconds until the answer or the failure.
    pub latency_ms: u32,
    /// What went wrong (timeout, refused connection, refused address, non-2xx status); null on success.
    pub error: Option<String>,
}

impl From<&Attempt> for AttemptDto {
    fn from(a: &Attempt) -> Self {
        AttemptDto {
            endpoint_id: a.endpoint_id.to_string(),
            attempted_at: time(a.attempted_at),
            status: a.status,
            latency_ms: a.latency_ms,
            error: a.error.clone(),
        }
    }
}

/// An event with its deliveries and their attempts (`GET /events/{event_id}`).
#[derive(Debug, Serialize, ToSchema)]
pub struct EventDetailDto {
    /// `evt_…`.
    pub id: String,
    /// The kind, e.g. `charge.completed`.
    pub event: String,
    /// RFC 3339 UTC.
    pub created_at: String,
    /// `test` or `live`.
    pub mode: &'static str,
    /// The object's id (`ch_…`).
    pub object_id: String,
    /// The full object at the time of the event.
    #[schema(value_type = Object)]
    pub data: Box<RawValue>,
    /// One per endpoint it was queued for (and per redelivery), oldest first.
    pub deliveries: Vec<DeliveryDto>,
    /// Every attempt, oldest first.
    pub attempts: Vec<AttemptDto>,
}

impl From<&EventDetail> for EventDetailDto {
    fn from(d: &EventDetail) -> Self {
        let e = EventDto::from(&d.event);
        EventDetailDto {
            id: e.id,
            event: e.event,
            created_at: e.created_at,
            mode: e.mode,
            object_id: e.object_id,
            data: e.data,
            deliveries: d.deliveries.iter().map(DeliveryDto::from).collect(),
            attempts: d.attempts.iter().map(AttemptDto::from).collect(),
        }
    }
}

/// `POST /events/{event_id}/redeliver` body (may be empty).
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RedeliverRequest {
    /// Only this endpoint; otherwise every enabled endpoint subscribed to the event's kind.
    #[schema(pattern = "^we_[A-Za-z0-9_-]{1,64}$")]
    pub endpoint_id: Option<String>,
}

impl RedeliverRequest {
    /// The use case's raw input for the event `event_id` (the path's).
    pub fn into_new(self, event_id: String) -> NewRedelivery {
        NewRedelivery { event_id, endpoint_id: self.endpoint_id }
    }
}

/// What a redelivery queued.
#[derive(Debug, Serialize, ToSchema)]
pub struct RedeliveryDto {
    /// `evt_…`.
    pub event_id: String,
    /// The endpoints it was queued for.
    pub endpoint_ids: Vec<String>,
}

impl From<&Redelivery> for RedeliveryDto {
    fn from(r: &Redelivery) -> Self {
        RedeliveryDto { event_id: r.event_id.to_string(), endpoint_ids: r.endpoint_ids.iter().map(ToString::to_string).collect() }
    }
}

/// The organisation's callback signing secret in this mode: it signs the callbacks the GSMA
/// door `PUT`s to an `X-Callback-URL` (Standard Webhooks headers, as webhook deliveries).
#[derive(Serialize, ToSchema)]
pub struct CallbackSecretDto {
    /// `whsec_…`: verify callbacks with it.
    pub secret: String,
    /// After a rotation, until when the previous secret still signs callbacks beside this one.
    pub previous_secret_expires_at: Option<String>,
    /// When made or last rotated.
    pub updated_at: String,
}

impl From<&CallbackSigning> for CallbackSecretDto {
    fn from(s: &CallbackSigning) -> Self {
        CallbackSecretDto {
            secret: s.secret.clone(),
            previous_secret_expires_at: s.previous_expires_at.map(time),
            updated_at: time(s.updated_at),
        }
    }
}
