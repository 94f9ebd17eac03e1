//! `charges`: charge-creation throughput and latency.
//!
//! Closed loop (default): each of `--concurrency` workers sends its next request as soon as the
//! previous one answered. Open loop (`--rate R`): request `n` is scheduled at `start + n / R`, the
//! workers take the schedule in order, and latency is measured from the *scheduled* time, so a
//! server that falls behind shows up in the percentiles instead of silently lowering the offered
//! load (no coordinated omission). Requests scheduled (or sent) during `--warmup-secs` are excluded.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use hdrhistogram::Histogram;
use reqwest::Client;
use serde::Serialize;

use crate::api;

/// How long past the end of the window an open-loop run keeps sending requests it fell behind on.
/// Requests still unsent after that are counted in `not_sent` (and in `errors`).
const OPEN_LOOP_GRACE: Duration = Duration::from_secs(10);

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// `{base_url}`, e.g. http://127.0.0.1:8080/api/v1
    #[arg(long)]
    base_url: String,
    /// The merchant's test client id (`ck_test_…`).
    #[arg(long)]
    client_id: String,
    /// The merchant's client secret.
    #[arg(long)]
    client_secret: String,
    /// Number of concurrent workers (and pooled connections).
    #[arg(long, default_value_t = 32)]
    concurrency: usize,
    /// Length of the measured window, after the warm-up.
    #[arg(long, default_value_t = 15)]
    duration_secs: u64,
    /// Total requests per second (open loop). Without it, workers send as fast as they can.
    #[arg(long)]
    rate: Option<f64>,
    /// Requests during this first part of the run are sent but not counted.
    #[arg(long, default_value_t = 0)]
    warmup_secs: u64,
}

/// The one JSON object printed on stdout.
#[derive(Debug, Serialize)]
pub(crate) struct Report {
    /// Requests counted (sent or scheduled inside the measured window).
    requests: u64,
    /// 200 responses.
    ok: u64,
    /// `requests - ok`: other statuses, transport errors and requests never sent.
    errors: u64,
    /// Responses by HTTP status.
    status_counts: BTreeMap<String, u64>,
    /// Connection failures, timeouts, unreadable bodies.
    transport_errors: u64,
    /// Open loop only: scheduled requests never sent because the run fell too far behind.
    not_sent: u64,
    concurrency: usize,
    /// The offered rate (open loop), else null.
    target_rate_per_sec: Option<f64>,
    /// From the start of the measured window to the last answer.
    duration_secs: f64,
    /// `ok / duration_secs`.
    rate_per_sec: f64,
    /// Latency percentiles of the 200 responses, in milliseconds.
    p50_ms: f64,
    p90_ms: f64,
    p99_ms: f64,
    max_ms: f64,
}

struct Plan {
    client: Client,
    url: String,
    token: String,
    rate: Option<f64>,
    start: Instant,
    measure_start: Instant,
    end: Instant,
    next: AtomicU64,
}

struct Tally {
    latency_us: Histogram<u64>,
    requests: u64,
    ok: u64,
    status: BTreeMap<u16, u64>,
    transport_errors: u64,
    not_sent: u64,
}

impl Tally {
    fn new() -> Result<Self> {
        Ok(Self {
            // 1 µs .. 120 s at 3 significant digits.
            latency_us: Histogram::new_with_bounds(1, 120_000_000, 3)?,
            requests: 0,
            ok: 0,
            status: BTreeMap::new(),
            transport_errors: 0,
            not_sent: 0,
        })
    }

    fn merge(&mut self, other: &Tally) -> Result<()> {
        self.latency_us.add(&other.latency_us)?;
        self.requests += other.requests;
        self.ok += other.ok;
        for (code, n) in &other.status {
            *self.status.entry(*code).or_default() += n;
        }
        self.transport_errors += other.transport_errors;
        self.not_sent += other.not_sent;
        Ok(())
    }
}

pub(crate) async fn run(args: Args) -> Result<serde_json::Value> {
    if args.concurrency == 0 {
        bail!("--concurrency must be at least 1");
    }
    if let Some(rate) = args.rate {
        if !(rate.is_finite() && rate > 0.0) {
            bail!("--rate must be a positive number");
        }
    }
    let base = api::base(&args.base_url);
    let client = api::client(args.concurrency)?;
    let creds = api::Credentials { client_id: args.client_id.clone(), client_secret: args.client_secret.clone() };
    let token = api::token(&client, &base, &creds).await?;

    let start = Instant::now();
    let measure_start = start + Duration::from_secs(args.warmup_secs);
    let plan = Arc::new(Plan {
        client,
        url: format!("{base}/partner/stk"),
        token,
        rate: args.rate,
        start,
        measure_start,
        end: measure_start + Duration::from_secs(args.duration_secs),
        next: AtomicU64::new(0),
    });

    let workers: Vec<_> = (0..args.concurrency).map(|_| tokio::spawn(worker(Arc::clone(&plan)))).collect();
    let mut total = Tally::new()?;
    for handle in workers {
        total.merge(&handle.await.context("worker panicked")??)?;
    }
    let duration = measure_start.elapsed().as_secs_f64();

    let ms = |q: f64| total.latency_us.value_at_quantile(q) as f64 / 1000.0;
    let report = Report {
        requests: total.requests,
        ok: total.ok,
        errors: total.requests - total.ok,
        status_counts: total.status.iter().map(|(code, n)| (code.to_string(), *n)).collect(),
        transport_errors: total.transport_errors,
        not_sent: total.not_sent,
        concurrency: args.concurrency,
        target_rate_per_sec: args.rate,
        duration_secs: duration,
        rate_per_sec: if duration > 0.0 { total.ok as f64 / duration } else { 0.0 },
        p50_ms: ms(0.50),
        p90_ms: ms(0.90),
        p99_ms: ms(0.99),
        max_ms: total.latency_us.max() as f64 / 1000.0,
    };
    Ok(serde_json::to_value(report)?)
}

async fn worker(plan: Arc<Plan>) -> Result<Tally> {
    let mut tally = Tally::new()?;
    loop {
        let n = plan.next.fetch_add(1, Ordering::Relaxed);
        // The instant latency is measured from.
        let origin = match plan.rate {
            Some(rate) => {
                let scheduled = plan.start + Duration::from_secs_f64(n as f64 / rate);
                if scheduled >= plan.end {
                    break;
                }
                if Instant::now() > plan.end + OPEN_LOOP_GRACE {
                    if scheduled >= plan.measure_start {
                        tally.requests += 1;
                        tally.not_sent += 1;
                    }
                    continue;
                }
                tokio::time::sleep_until(scheduled.into()).await;
                scheduled
            }
            None => {
                let now = Instant::now();
                if now >= plan.end {
                    break;
                }
                now
            }
        };
        let outcome = send(&plan, n).await;
        let latency = origin.elapsed();
        if origin < plan.measure_start {
            continue;
        }
        tally.requests += 1;
        match outcome {
            Ok(status) => {
                *tally.status.entry(status).or_default() += 1;
                if status == 200 {
                    tally.ok += 1;
                    let micros = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
                    tally.latency_us.saturating_record(micros.max(1));
                }
            }
            Err(_) => tally.transport_errors += 1,
        }
    }
    Ok(tally)
}

/// Sends one charge creation and reads the whole answer (so the connection is reused).
async fn send(plan: &Plan, n: u64) -> Result<u16> {
    let resp = plan.client.post(&plan.url).bearer_auth(&plan.token).json(&api::charge_body(n)).send().await?;
    let status = resp.status().as_u16();
    resp.bytes().await?;
    Ok(status)
}
