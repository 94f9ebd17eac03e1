//! Endpoints, events, deliveries and attempts: what the outbox stores.

use std::fmt;
use std::str::FromStr;

use malipo_core::{EndpointId, EventId, Mode, OrgId, Timestamp};

/// Every event kind Malipo emits (contract section 12).
pub const EVENT_KINDS: [&str; 14] = [
    "charge.authorised",
    "charge.completed",
    "charge.declined",
    "charge.expired",
    "charge.failed",
    "payout.completed",
    "payout.failed",
    "bulk_payout.approved",
    "bulk_payout.rejected",
    "bulk_payout.completed",
    "reversal.completed",
    "payment_request.paid",
    "payment_request.expired",
    "cash_out.completed",
];

/// Which events an endpoint receives.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum EventFilter {
    /// `["*"]`: every kind, present and future.
    All,
    /// These kinds only.
    Kinds(Vec<String>),
}

/// The filter named an unknown kind, or was empty.
#[derive(Debug, thiserror::Error, PartialEq, Eq, Clone)]
pub enum FilterError {
    /// No kinds.
    #[error("events must list at least one event kind, or \"*\"")]
    Empty,
    /// Not a kind Malipo emits.
    #[error("unknown event kind `{0}`")]
    Unknown(String),
}

impl EventFilter {
    /// From the API's list: `["*"]` or known kinds (duplicates removed, order kept).
    ///
    /// # Errors
    /// [`FilterError`].
    pub fn parse(kinds: &[String]) -> Result<Self, FilterError> {
        if kinds.is_empty() {
            return Err(FilterError::Empty);
        }
        if kinds.iter().any(|k| k == "*") {
            return Ok(EventFilter::All);
        }
        let mut out: Vec<String> = Vec::new();
        for k in kinds {
            if !EVENT_KINDS.contains(&k.as_str()) {
                return Err(FilterError::Unknown(k.clone()));
            }
            if !out.contains(k) {
                out.push(k.clone());
            }
        }
        Ok(EventFilter::Kinds(out))
    }

    /// Whether an event of `kind` goes to this endpoint.
    pub fn matches(&self, kind: &str) -> bool {
        match self {
            EventFilter::All => true,
            EventFilter::Kinds(k) => k.iter().any(|x| x == kind),
        }
    }

    /// The list as the API shows it.
    pub fn to_list(&self) -> Vec<String> {
        match self {
            EventFilter::All => vec!["*".to_owned()],
            EventFilter::Kinds(k) => k.clone(),
        }
    }

    /// Space-separated, for storage.
    pub fn to_stored(&self) -> String {
        self.to_list().join(" ")
    }

    /// From storage.
    ///
    /// # Errors
    /// [`FilterError`].
    pub fn from_stored(text: &str) -> Result<Self, FilterError> {
        Self::parse(&text.split(' ').filter(|s| !s.is_empty()).map(str::to_owned).collect::<Vec<_>>())
    }
}

/// A registered webhook endpoint. Secrets are held sealed (encrypted at rest).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Endpoint {
    /// `we_…`.
    pub id: EndpointId,
    /// The owner.
    pub org_id: OrgId,
    /// The mode.
    pub mode: Mode,
    /// Where deliveries go.
    pub url: String,
    /// Optional text.
    pub description: Option<String>,
    /// Which events.
    pub events: EventFilter,
    /// Whether deliveries are made.
    pub enabled: bool,
    /// The current signing secret, sealed.
    pub secret: Vec<u8>,
    /// The previous secret during a rotation, sealed, and when it stops signing.
    pub previous_secret: Option<(Vec<u8>, Timestamp)>,
    /// Why it was disabled (`gone` on a 410, `failing` after 5 days of failures).
    pub disabled_reason: Option<String>,
    /// Start of the current run of failures (cleared by a success).
    pub failing_since: Option<Timestamp>,
    /// When deleted (deleted endpoints are kept for the attempts that name them).
    pub deleted_at: Option<Timestamp>,
    /// When registered.
    pub created_at: Timestamp,
    /// When last changed.
    pub updated_at: Timestamp,
}

/// A committed change, as the outbox keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// `evt_…` (also the `webhook-id` of every delivery of it).
    pub id: EventId,
    /// The owner.
    pub org_id: OrgId,
    /// The mode.
    pub mode: Mode,
    /// `charge.completed`, ….
    pub kind: String,
    /// The object's id (`ch_…`).
    pub object_id: String,
    /// The full object at the time of the event, as JSON (the payload's `data`).
    pub data: Vec<u8>,
    /// Top-level members of charge events (amount text, currency, state, reference).
    pub summary: Summary,
    /// When it happened.
    pub created_at: Timestamp,
}

/// The seed's top-level fields of a charge event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Amount with two decimals.
    pub amount: Option<String>,
    /// ISO 4217.
    pub currency: Option<String>,
    /// The object's state.
    pub state: Option<String>,
    /// The integrator's reference.
    pub reference: Option<String>,
}

/// Where a delivery stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeliveryState {
    /// Due at `next_attempt_at`.
    Pending,
    /// A 2xx was received.
    Succeeded,
    /// The schedule ran out, or the endpoint was disabled or deleted.
    Failed,
}

impl DeliveryState {
    /// Storage name.
    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryState::Pending => "pending",
            DeliveryState::Succeeded => "succeeded",
            DeliveryState::Failed => "failed",
        }
    }
}

impl fmt::Display for DeliveryState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for DeliveryState {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "pending" => Ok(DeliveryState::Pending),
            "succeeded" => Ok(DeliveryState::Succeeded),
            "failed" => Ok(DeliveryState::Failed),
            other => Err(format!("unknown delivery state `{other}`")),
        }
    }
}

/// One event to one endpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivery {
    /// Row id (`dlv_` + UUIDv7).
    pub id: String,
    /// The event.
    pub event_id: EventId,
    /// The endpoint.
    pub endpoint_id: EndpointId,
    /// Where it stands.
    pub state: DeliveryState,
    /// Attempts made.
    pub attempts: u32,
    /// When the next attempt is due (a lease while claimed), `None` once settled.
    pub next_attempt_at: Option<Timestamp>,
    /// When created.
    pub created_at: Timestamp,
    /// When last changed.
    pub updated_at: Timestamp,
}

/// One HTTP attempt of a delivery.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attempt {
    /// The delivery.
    pub delivery_id: String,
    /// The event.
    pub event_id: EventId,
    /// The endpoint.
    pub endpoint_id: EndpointId,
    /// When sent.
    pub attempted_at: Timestamp,
    /// The HTTP status, when an answer came.
    pub status: Option<u16>,
    /// Milliseconds until the answer (or the failure).
    pub latency_ms: u32,
    /// What went wrong, when something did (timeout, connection refused, refused address).
    pub error: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn filters() {
        assert_eq!(EventFilter::parse(&kinds(&["*"])), Ok(EventFilter::All));
        assert!(EventFilter::All.matches("charge.completed"));
        let f = EventFilter::parse(&kinds(&["charge.completed", "charge.failed", "charge.completed"])).unwrap_or(EventFilter::All);
        assert_eq!(f.to_list(), kinds(&["charge.completed", "charge.failed"]));
        assert!(f.matches("charge.failed") && !f.matches("charge.declined"));
        assert_eq!(EventFilter::parse(&[]), Err(FilterError::Empty));
        assert_eq!(EventFilter::parse(&kinds(&["charge.done"])), Err(FilterError::Unknown("charge.done".into())));
        assert_eq!(EventFilter::from_stored(&f.to_stored()), Ok(f));
        assert_eq!(EventFilter::from_stored("*"), Ok(EventFilter::All));
    }
}
