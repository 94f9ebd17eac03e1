//! The webhook sender: how a delivery job reaches the receiver. The job carries the event (its
//! snapshot), the signing time and the endpoint's open secrets; the channel renders and signs
//! its own payload at send time (the HTTP adapter's `webhook_request`). The app's delivery
//! worker implements it with an HTTP client that guards addresses; tests swap in a mock to
//! script receivers' answers.

use std::time::Duration;

use async_trait::async_trait;
use malipo_core::{EndpointId, EventId, Timestamp};
use malipo_webhooks::{Event, Secret, UrlPolicy};

/// One attempt to make: everything the sender needs to render and sign it.
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
    /// The event, as stored (its `data` a snapshot, or for an older row the API's JSON).
    pub event: Event,
    /// The signing time, Unix seconds (the `webhook-timestamp`).
    pub timestamp: i64,
    /// The endpoint's current secret.
    pub secret: Secret,
    /// Its previous secret while that is still valid (the signature carries both).
    pub previous_secret: Option<Secret>,
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

/// Sends delivery jobs.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait WebhookSender: Send + Sync {
    /// POSTs the job's body with its headers, within its timeout, and says what came back.
    /// Never fails: an unreachable receiver is a [`SendOutcome::Failed`].
    async fn send(&self, job: &DeliveryJob) -> SendOutcome;
}
