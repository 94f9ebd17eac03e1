//! Webhooks: the endpoints and events API ([`Webhooks`]) and delivery of the outbox
//! ([`Deliveries`]): claiming due deliveries, signing them, and scheduling what follows each
//! attempt; and the callbacks a request asked for ([`Callbacks`]), sent the same way.

mod api;
mod callbacks;
mod delivery;
mod model;

pub use crate::ports::{DeliveryJob, SendOutcome};
pub use api::Webhooks;
pub use callbacks::{CallbackJob, CallbackSigning, Callbacks};
pub use delivery::Deliveries;
pub use model::{EndpointWithSecret, EventDetail, Redelivery};
