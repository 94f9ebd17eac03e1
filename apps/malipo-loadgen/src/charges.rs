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
    #[arg(long, required_unless_present = "credentials")]
    client_id: Option<String>,
    /// The merchant's client secret.
    #[arg(long, required_unless_present = "credentials")]
    client_secret: Option<String>,
    /// JSON lines of several merchants' credentials, as for `lifecycle`: request `n` goes to
    /// merchant `n % merchants` (instead of `--client-id` and `--client-secret`).
    #[arg(long, conflicts_with_all = ["client_id", "client_secret"])]
    credentials: Option<std::path::PathBuf>,
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
    /// After a 503 or 429 with `Retry-After`, a worker waits that long before its next request
    /// (as `malipo-client` does); without it, workers send again at once (as wrk does).
    #[arg(long)]
    honor_retry_after: bool,
    /// Payers: request `n` is paid by customer `n % payers` of a fixed population (0: each by
    /// a new random number, whose wallet the sandbox opens with the payment).
    #[arg(long, default_value_t = 0)]
    payers: u64,
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
    /// One bearer token per merchant.
    tokens: Vec<String>,
    rate: Option<f64>,
    honor_retry_after: bool,
    payers: u64,
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
    let merchants = match (&args.credentials, &args.client_id, &args.client_secret) {
        (Some(path), _, _) => api::read_credentials(path)?,
        (None, Some(client_id), Some(client_secret)) => {
            vec![api::Credentials { client_id: client_id.clone(), client_secret: client_secret.clone() }]
        }
        _ => bail!("give --credentials, or --client-id with --client-secret"),
    };
    if merchants.is_empty() {
        bail!("no credentials");
    }
    let mut tokens = Vec::with_capacity(merchants.len());
    for creds in &merchants {
        tokens.push(api::token(&client, &base, creds).await?);
    }

    let start = Instant::now();
    let measure_start = start + Duration::from_secs(args.warmup_secs);
    let plan = Arc::new(Plan {
        client,
        url: format!("{base}/partner/stk"),
        tokens,
        rate: args.rate,
        honor_retry_after: args.honor_retry_after,
        payers: args.payers,
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
        if let Some(wait) = outcome.as_ref().ok().and_then(|(_, after)| *after).filter(|_| plan.honor_retry_after) {
            let until = (Instant::now() + wait).min(plan.end);
            tokio::time::sleep_until(until.into()).await;
        }
        if origin < plan.measure_start {
            continue;
        }
        tally.requests += 1;
        match outcome {
            Ok((status, _)) => {
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

/// Sends one charge creation and reads the whole answer (so the connection is reused): its
/// status, and the wait a 503 or 429 asked for.
async fn send(plan: &Plan, n: u64) -> Result<(u16, Option<Duration>)> {
    let token = &plan.tokens[usize::try_from(n).unwrap_or(0) % plan.tokens.len()];
    let resp = plan.client.post(&plan.url).bearer_auth(token).json(&api::charge_body(n, plan.payers)).send().await?;
    let status = resp.status().as_u16();
    let retry_after = matches!(status, 429 | 503)
        .then(|| resp.headers().get(reqwest::header::RETRY_AFTER)?.to_str().ok()?.trim().parse::<u64>().ok())
        .flatten()
        .map(Duration::from_secs);
    resp.bytes().await?;
    Ok((status, retry_after))
}
