//! Prometheus metrics: request counts and latency histograms by route and status (from
//! actix-web-prom), charges by the state they entered, creations committed in groups, the background work's backlog and the
//! audit chain's sealing backlog.

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::{web, ResponseError};
use actix_web_prom::{PrometheusMetrics, PrometheusMetricsBuilder};
use malipo_charges::ChargeState;
use malipo_service::{BacklogReading, Observer, Platform};
use prometheus::core::Collector;
use prometheus::{Gauge, GaugeVec, IntCounter, IntCounterVec, IntGauge, Opts, Registry};

use crate::problem::ApiError;

/// Counts charges entering each state, and creations committed in groups.
#[derive(Clone, Debug)]
pub struct ChargeMetrics {
    entered: IntCounterVec,
    groups: IntCounter,
    grouped: IntCounter,
}

impl Observer for ChargeMetrics {
    fn charge_entered(&self, state: ChargeState) {
        self.entered.with_label_values(&[state.as_str()]).inc();
    }

    fn group_committed(&self, members: usize) {
        self.groups.inc();
        self.grouped.inc_by(u64::try_from(members).unwrap_or(u64::MAX));
    }
}

/// The backlog of due work as last measured, and whether intake is refused.
#[derive(Clone, Debug)]
pub struct BacklogMetrics {
    age: GaugeVec,
    refusing: GaugeVec,
    due: IntGauge,
    predicted: Gauge,
}

impl BacklogMetrics {
    /// Records a measurement.
    pub fn record(&self, reading: &BacklogReading) {
        self.age.with_label_values(&["charges"]).set(reading.charges_seconds);
        self.age.with_label_values(&["payouts"]).set(reading.payouts_seconds);
        let flag = |on: bool| if on { 1.0 } else { 0.0 };
        self.refusing.with_label_values(&["charges"]).set(flag(reading.refusing));
        self.refusing.with_label_values(&["payouts"]).set(flag(reading.refusing_payouts));
        self.due.set(i64::try_from(reading.charges_due).unwrap_or(i64::MAX));
        self.predicted.set(reading.predicted_seconds);
    }
}

/// Every metric the server exports, on one registry.
#[derive(Clone)]
pub struct Metrics {
    /// The request middleware, which also serves `/metrics`.
    pub requests: PrometheusMetrics,
    /// The charge observer.
    pub charges: ChargeMetrics,
    /// The backlog gauges.
    pub backlog: BacklogMetrics,
}

/// The server's metrics.
///
/// # Errors
/// When a metric cannot be registered.
pub fn metrics() -> Result<Metrics, String> {
    let registry = Registry::new();
    let entered = IntCounterVec::new(Opts::new("malipo_charges_total", "Charges that entered each state, by state"), &["state"])
        .map_err(|e| e.to_string())?;
    registry.register(Box::new(entered.clone())).map_err(|e| e.to_string())?;
    let groups = IntCounter::new("malipo_create_groups_total", "Write transactions that committed two or more charge creations together")
        .map_err(|e| e.to_string())?;
    registry.register(Box::new(groups.clone())).map_err(|e| e.to_string())?;
    let grouped =
        IntCounter::new("malipo_create_group_members_total", "Charge creations committed together with others (in those transactions)")
            .map_err(|e| e.to_string())?;
    registry.register(Box::new(grouped.clone())).map_err(|e| e.to_string())?;
    let age = GaugeVec::new(
        Opts::new("malipo_backlog_age_seconds", "Seconds the oldest due item has waited for the background workers, by kind of work"),
        &["work"],
    )
    .map_err(|e| e.to_string())?;
    registry.register(Box::new(age.clone())).map_err(|e| e.to_string())?;
    let refusing = GaugeVec::new(
        Opts::new(
            "malipo_intake_refused",
            "1 while new work of the kind is refused: charges (and payouts) for the charge backlog, payouts also for their own",
        ),
        &["work"],
    )
    .map_err(|e| e.to_string())?;
    registry.register(Box::new(refusing.clone())).map_err(|e| e.to_string())?;
    let due = IntGauge::new("malipo_backlog_due_charges", "Charges due now or within the backlog bound (the workers' work ahead)")
        .map_err(|e| e.to_string())?;
    registry.register(Box::new(due.clone())).map_err(|e| e.to_string())?;
    let predicted = Gauge::new(
        "malipo_backlog_predicted_wait_seconds",
        "Seconds the due charges would take to drain at the rate last measured (an assumed one before any)",
    )
    .map_err(|e| e.to_string())?;
    registry.register(Box::new(predicted.clone())).map_err(|e| e.to_string())?;
    let prom = PrometheusMetricsBuilder::new("malipo")
        .registry(registry)
        .endpoint(METRICS_PATH)
        // Unknown paths share one label value: a scanner must not create a series per path.
        .mask_unmatched_patterns("UNKNOWN")
        .build()
        .map_err(|e| e.to_string())?;
    Ok(Metrics {
        requests: prom,
        charges: ChargeMetrics { entered, groups, grouped },
        backlog: BacklogMetrics { age, refusing, due, predicted },
    })
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

/// The read replica's state, read from the store at each scrape (nothing when there is none):
/// `malipo_db_replica_lag_seconds` (how far behind the primary it was at its last measurement,
/// -1 when it does not answer), `malipo_db_replica_max_lag_seconds` (the bound),
/// `malipo_db_replica_in_use` (1 while reports read there) and
/// `malipo_db_replica_fallbacks_total` (reports read on the primary instead).
pub struct ReplicaGauges {
    platform: Platform,
    lag: Gauge,
    max_lag: Gauge,
    in_use: IntGauge,
    fallbacks: IntCounter,
}

impl ReplicaGauges {
    /// Registers the gauges on `registry`, read from `platform`'s store.
    ///
    /// # Errors
    /// When a gauge cannot be registered.
    pub fn register(registry: &Registry, platform: Platform) -> Result<(), String> {
        let e = |e: prometheus::Error| e.to_string();
        let gauges = ReplicaGauges {
            platform,
            lag: Gauge::new("malipo_db_replica_lag_seconds", "How far the read replica is behind the primary (-1: it does not answer)")
                .map_err(e)?,
            max_lag: Gauge::new("malipo_db_replica_max_lag_seconds", "The lag past which reports read on the primary").map_err(e)?,
            in_use: IntGauge::new("malipo_db_replica_in_use", "1 while reports read on the replica").map_err(e)?,
            fallbacks: IntCounter::new(
                "malipo_db_replica_fallbacks_total",
                "Reports read on the primary because the replica was down or behind",
            )
            .map_err(e)?,
        };
        registry.register(Box::new(gauges)).map_err(e)
    }
}

impl Collector for ReplicaGauges {
    fn desc(&self) -> Vec<&prometheus::core::Desc> {
        let mut all = self.lag.desc();
        all.extend(self.max_lag.desc());
        all.extend(self.in_use.desc());
        all.extend(self.fallbacks.desc());
        all
    }

    fn collect(&self) -> Vec<prometheus::proto::MetricFamily> {
        let Some(state) = self.platform.store().replica() else { return Vec::new() };
        self.lag.set(state.lag.map_or(-1.0, |l| l.as_secs_f64()));
        self.max_lag.set(state.max_lag.as_secs_f64());
        self.in_use.set(i64::from(state.in_use));
        self.fallbacks.inc_by(state.fallbacks.saturating_sub(self.fallbacks.get()));
        let mut all = self.lag.collect();
        all.extend(self.max_lag.collect());
        all.extend(self.in_use.collect());
        all.extend(self.fallbacks.collect());
        all
    }
}

/// Who may read `/metrics` on the API's own port.
#[derive(Clone, Debug, Default)]
pub struct MetricsAccess {
    /// The bearer token a scraper sends (`MALIPO_METRICS_TOKEN`); `None`: nobody on this port
    /// (the metrics are then served only on `MALIPO_METRICS_BIND`, if set).
    pub token: Option<String>,
}

impl MetricsAccess {
    /// Whether `authorization` (the request's header) carries the token, compared as digests
    /// so that the comparison's time says nothing about the token.
    fn allows(&self, authorization: Option<&str>) -> bool {
        use sha2::{Digest, Sha256};
        let Some(token) = &self.token else { return false };
        let Some(sent) = authorization.and_then(|a| a.split_once(' ')).filter(|(s, _)| s.eq_ignore_ascii_case("bearer")) else {
            return false;
        };
        Sha256::digest(sent.1.trim().as_bytes()) == Sha256::digest(token.as_bytes())
    }
}

/// Middleware outside the metrics middleware: `/metrics` on the API's port answers only a
/// request that carries [`MetricsAccess::token`] (401 `unauthorized` otherwise), and 404 when no
/// token is configured. Per-route counts, the pool and the replica's state are an operator's,
/// not anyone's who can reach the API.
///
/// # Errors
/// Those of the inner service.
pub async fn metrics_gate<B: MessageBody + 'static>(
    req: ServiceRequest,
    next: Next<B>,
) -> Result<ServiceResponse<EitherBody<B>>, actix_web::Error> {
    if req.path() != METRICS_PATH {
        return next.call(req).await.map(ServiceResponse::map_into_left_body);
    }
    let access = req.app_data::<web::Data<MetricsAccess>>().map(|d| d.get_ref().clone()).unwrap_or_default();
    let authorization = req.headers().get(actix_web::http::header::AUTHORIZATION).and_then(|v| v.to_str().ok());
    let refusal = match (&access.token, access.allows(authorization)) {
        (_, true) => return next.call(req).await.map(ServiceResponse::map_into_left_body),
        (None, _) => ApiError::NotFound,
        (Some(_), false) => ApiError::Unauthorized,
    };
    let (req, _) = req.into_parts();
    Ok(ServiceResponse::new(req, refusal.error_response()).map_into_right_body())
}

/// Where the metrics are served.
pub const METRICS_PATH: &str = "/metrics";

/// The metrics in Prometheus's text format, for a listener of their own (`MALIPO_METRICS_BIND`).
pub fn render(registry: &Registry) -> String {
    let mut out = String::new();
    let _ = prometheus::TextEncoder::new().encode_utf8(&registry.gather(), &mut out);
    out
}
