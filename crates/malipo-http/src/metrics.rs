//! Prometheus metrics: request counts and latency histograms by route and status (from
//! actix-web-prom), and charges by the state they entered.

use actix_web_prom::{PrometheusMetrics, PrometheusMetricsBuilder};
use malipo_charges::ChargeState;
use malipo_service::Observer;
use prometheus::{IntCounterVec, Opts, Registry};

/// Counts charges entering each state.
#[derive(Clone, Debug)]
pub struct ChargeMetrics {
    entered: IntCounterVec,
}

impl Observer for ChargeMetrics {
    fn charge_entered(&self, state: ChargeState) {
        self.entered.with_label_values(&[state.as_str()]).inc();
    }
}

/// The request middleware (serving `/metrics`) and the charge observer, on one registry.
///
/// # Errors
/// When a metric cannot be registered.
pub fn metrics() -> Result<(PrometheusMetrics, ChargeMetrics), String> {
    let registry = Registry::new();
    let entered = IntCounterVec::new(Opts::new("malipo_charges_total", "Charges that entered each state, by state"), &["state"])
        .map_err(|e| e.to_string())?;
    registry.register(Box::new(entered.clone())).map_err(|e| e.to_string())?;
    let prom = PrometheusMetricsBuilder::new("malipo")
        .registry(registry)
        .endpoint("/metrics")
        // Unknown paths share one label value: a scanner must not create a series per path.
        .mask_unmatched_patterns("UNKNOWN")
        .build()
        .map_err(|e| e.to_string())?;
    Ok((prom, ChargeMetrics { entered }))
}
