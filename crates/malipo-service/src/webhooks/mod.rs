//! Webhooks: the endpoints and events API ([`Webhooks`]) and delivery of the outbox
//! ([`Deliveries`]): claiming due deliveries, signing them, and scheduling what follows each attempt.

mod api;
mod delivery;
mod model;

pub use crate::ports::{DeliveryJob, SendOutcome};
pub use api::Webhooks;
pub use delivery::Deliveries;
pub use model::{EndpointWithSecret, EventDetail, Redelivery};
