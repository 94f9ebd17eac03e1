//! Prometheus metrics: request counts and latency histograms by route and status (from
//! actix-web-prom), charges by the state they entered, and the audit chain's sealing backlog.

use actix_web_prom::{PrometheusMetrics, PrometheusMetricsBuilder};
use malipo_charges::ChargeState;
use malipo_service::Observer;
use prometheus::{Gauge, IntCounterVec, IntGauge, Opts, Registry};

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

/// The audit chain's sealing backlog, set by the sealer after each pass: the journals committed
/// but not yet sealed (`malipo_ledger_unsealed_journals`) and how long the oldest has waited
/// (`malipo_ledger_seal_lag_seconds`), during which no chain entry protects it yet.
#[derive(Clone, Debug)]
pub struct SealGauges {
    unsealed: IntGauge,
    lag: Gauge,
}

impl SealGauges {
    /// Registers both gauges on `registry` (the one [`metrics`] serves: `PrometheusMetrics::registry`).
    ///
    /// # Errors
    /// When a gauge cannot be registered.
    pub fn register(registry: &Registry) -> Result<Self, String> {
        let unsealed = IntGauge::new("malipo_ledger_unsealed_journals", "Journals committed but not yet sealed into the audit chain")
            .map_err(|e| e.to_string())?;
        let lag =
            Gauge::new("malipo_ledger_seal_lag_seconds", "Age of the oldest journal not yet sealed into the audit chain (0 when none)")
                .map_err(|e| e.to_string())?;
        registry.register(Box::new(unsealed.clone())).map_err(|e| e.to_string())?;
        registry.register(Box::new(lag.clone())).map_err(|e| e.to_string())?;
        Ok(SealGauges { unsealed, lag })
    }

    /// After a pass of the sealer: `unsealed` journals wait, the oldest for `lag`.
    pub fn set(&self, unsealed: u64, lag: std::time::Duration) {
        self.unsealed.set(i64::try_from(unsealed).unwrap_or(i64::MAX));
        self.lag.set(lag.as_secs_f64());
    }
}
