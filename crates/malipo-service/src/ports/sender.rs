//! The webhook sender: how a signed delivery job reaches the receiver. The HTTP adapter (the
//! app's delivery worker) implements it with an HTTP client that guards addresses; tests swap in
//! a mock to script receivers' answers.

use std::time::Duration;

use async_trait::async_trait;
use malipo_core::{EndpointId, EventId, Timestamp};
use malipo_webhooks::UrlPolicy;

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

/// Sends delivery jobs.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait WebhookSender: Send + Sync {
    /// POSTs the job's body with its headers, within its timeout, and says what came back.
    /// Never fails: an unreachable receiver is a [`SendOutcome::Failed`].
    async fn send(&self, job: &DeliveryJob) -> SendOutcome;
}
