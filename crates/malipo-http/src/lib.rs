//! The HTTP adapter: actix-web handlers and their wire DTOs by group of the contract, the problem
//! format, authentication, idempotency keys, rate limits, request ids, metrics and the OpenAPI
//! document. Handlers translate; the use cases live in `malipo-service`.

pub mod app;
pub mod common_responses;
pub mod extract;
pub mod failures;
pub mod handler;
pub mod idempotent;
pub mod metrics;
pub mod openapi;
pub mod problem;
pub mod render;
pub mod request_id;
pub mod routes;
pub mod schema;
pub mod state;
pub mod wire;

#[cfg(test)]
mod testing;

pub use app::configure;
pub use metrics::{metrics, metrics_gate, BacklogMetrics, ChargeMetrics, Metrics, MetricsAccess, ReplicaGauges, SealGauges};
pub use render::{event_data, webhook_request};
pub use request_id::request_id_mw;
pub use state::{AppState, RateLimits};
