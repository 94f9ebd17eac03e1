//! `payouts`: money out, single payouts (contract section 5).
//!
//! `--count` single payouts (`POST /payouts`, KES 10.00 each to random sandbox payees) created by
//! `--concurrency` workers -> creations/s and creation p50/p99; then it polls until the
//! organisation has no `pending` payout left and reports the created -> final rate, by the server's
//! clock (first `created_at` to last `completed_at` of our payouts) and by ours.
//!
//! The payout organisation must be dedicated to the run (any pending payout of it counts as
//! unfinished) and its payout account funded (`malipo account fund`).
//!
//! The helpers the `bulk` subcommand shares with it (the amount, latency histograms, rates and
//! timestamps) live here; `bulk` imports them, never the reverse.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use hdrhistogram::Histogram;
use reqwest::Client;
use serde::{Deserialize, Serialize};
use serde_json::json;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::api;

/// The amount of every payout and bulk item, in KES.
pub(crate) const AMOUNT: &str = "10.00";

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// `{base_url}`, e.g. http://127.0.0.1:8080/api/v1
    #[arg(long)]
    base_url: String,
    /// The paying organisation's test client id (scope `payouts`).
    #[arg(long)]
    client_id: String,
    /// Its client secret.
    #[arg(long)]
    client_secret: String,
    /// Payouts to create.
    #[arg(long, default_value_t = 3000)]
    count: u64,
    /// Concurrent creation requests.
    #[arg(long, default_value_t = 32)]
    concurrency: usize,
    /// Give up waiting this long after the first creation.
    #[arg(long, default_value_t = 120)]
    timeout_secs: u64,
    /// Interval between completion checks.
    #[arg(long, default_value_t = 100)]
    poll_ms: u64,
}

/// The fields of a payout object the load generator reads.
#[derive(Debug, Deserialize)]
struct Payout {
    payout_ref: String,
    state: String,
    #[serde(default)]
    created_at: Option<String>,
    #[serde(default)]
    updated_at: Option<String>,
    #[serde(default)]
    completed_at: Option<String>,
    #[serde(default)]
    failure_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct PayoutPage {
    data: Vec<Payout>,
    #[serde(default)]
    has_more: bool,
    #[serde(default)]
    next_cursor: Option<String>,
}

#[derive(Debug, Serialize)]
struct PayoutsReport {
    /// Creation requests sent.
    requests: u64,
    /// Payouts created (200 answers).
    created: u64,
    /// Creation requests that did not answer 200.
    create_errors: u64,
    /// Creation answers by HTTP status ("transport" for no answer).
    status_counts: BTreeMap<String, u64>,
    concurrency: usize,
    /// From the first creation request to the last creation answer.
    creation_secs: f64,
    /// `created / creation_secs`.
    created_per_sec: f64,
    /// Latency of the 200 answers, in milliseconds.
    create_p50_ms: f64,
    create_p90_ms: f64,
    create_p99_ms: f64,
    create_max_ms: f64,
    completed: u64,
    failed: u64,
    /// Created payouts not final at the end (or missing from the listing).
    unfinished: u64,
    /// Our payouts by state at the end.
    states: BTreeMap<String, u64>,
    /// Our failed payouts by `failure_reason`.
    failure_reasons: BTreeMap<String, u64>,
    /// Server clock: first `created_at` to the last `completed_at` (or, for a failed payout
    /// without one, `updated_at`) of our final payouts.
    server_span_secs: Option<f64>,
    /// `(completed + failed) / server_span_secs`.
    lifecycle_per_sec: Option<f64>,
    /// Our clock: from the first creation request to the poll that found nothing pending.
    elapsed_secs: f64,
    /// `(completed + failed) / elapsed_secs`.
    lifecycle_per_sec_client_clock: f64,
    timed_out: bool,
}

pub(crate) async fn run(args: Args) -> Result<serde_json::Value> {
    if args.concurrency == 0 {
        bail!("--concurrency must be at least 1");
    }
    let base = api::base(&args.base_url);
    let client = api::client(args.concurrency)?;
    let creds = api::Credentials { client_id: args.client_id.clone(), client_secret: args.client_secret.clone() };
    let token = api::token(&client, &base, &creds).await?;
    // Only payouts created from here on are listed at the end (the server shares our clock).
    let since = OffsetDateTime::now_utc() - time::Duration::seconds(2);

    let start = Instant::now();
    let deadline = start + Duration::from_secs(args.timeout_secs);
    let created = create_payouts(&client, &base, &token, args.count, args.concurrency).await?;
    let creation_secs = start.elapsed().as_secs_f64();
    eprintln!("payouts: {} created in {creation_secs:.2} s", created.refs.len());

    let poll = Duration::from_millis(args.poll_ms.max(10));
    let idle_at = wait_no_pending(&client, &base, &token, deadline, poll).await;
    let elapsed = idle_at.unwrap_or_else(Instant::now).duration_since(start).as_secs_f64();

    // One pass over the payouts created since the start to classify ours.
    let mut states: BTreeMap<String, u64> = BTreeMap::new();
    let mut failure_reasons: BTreeMap<String, u64> = BTreeMap::new();
    let mut first_created: Option<OffsetDateTime> = None;
    let mut last_final: Option<OffsetDateTime> = None;
    let mut seen = 0u64;
    let mut cursor: Option<String> = None;
    let from = since.format(&Rfc3339)?;
    loop {
        let page = list_payouts(&client, &base, &token, &[("from", from.as_str())], cursor.as_deref()).await?;
        for payout in page.data.iter().filter(|p| created.refs.contains(&p.payout_ref)) {
            seen += 1;
            *states.entry(payout.state.clone()).or_default() += 1;
            if let Some(reason) = &payout.failure_reason {
                *failure_reasons.entry(reason.clone()).or_default() += 1;
            }
            first_created = earliest(first_created, payout.created_at.as_deref());
            if payout.state != "pending" {
                last_final = latest(last_final, payout.completed_at.as_deref().or(payout.updated_at.as_deref()));
            }
        }
        match page.next_cursor {
            Some(next) if page.has_more => cursor = Some(next),
            _ => break,
        }
    }
    let made = created.refs.len() as u64;
    if seen < made {
        eprintln!("payouts: {} created payouts missing from the listing", made - seen);
    }
    let completed = states.get("completed").copied().unwrap_or(0);
    let failed = states.get("failed").copied().unwrap_or(0);
    let server_span = match (first_created, last_final) {
        (Some(a), Some(b)) if b > a => Some((b - a).as_seconds_f64()),
        _ => None,
    };
    let ms = |q: f64| created.latency_us.value_at_quantile(q) as f64 / 1000.0;
    let report = PayoutsReport {
        requests: created.requests,
        created: made,
        create_errors: created.requests - made,
        status_counts: created.status,
        concurrency: args.concurrency,
        creation_secs,
        created_per_sec: per_sec(made, creation_secs),
        create_p50_ms: ms(0.50),
        create_p90_ms: ms(0.90),
        create_p99_ms: ms(0.99),
        create_max_ms: created.latency_us.max() as f64 / 1000.0,
        completed,
        failed,
        unfinished: made.saturating_sub(completed + failed),
        states,
        failure_reasons,
        server_span_secs: server_span,
        lifecycle_per_sec: server_span.map(|s| per_sec(completed + failed, s)),
        elapsed_secs: elapsed,
        lifecycle_per_sec_client_clock: per_sec(completed + failed, elapsed),
        timed_out: idle_at.is_none(),
    };
    Ok(serde_json::to_value(report)?)
}

struct Created {
    refs: HashSet<String>,
    requests: u64,
    status: BTreeMap<String, u64>,
    latency_us: Histogram<u64>,
}

pub(crate) fn histogram() -> Result<Histogram<u64>> {
    // 1 µs .. 120 s at 3 significant digits.
    Ok(Histogram::new_with_bounds(1, 120_000_000, 3)?)
}

pub(crate) fn record(histogram: &mut Histogram<u64>, latency: Duration) {
    let micros = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
    histogram.saturating_record(micros.max(1));
}

async fn create_payouts(client: &Client, base: &str, token: &str, count: u64, concurrency: usize) -> Result<Created> {
    #[derive(Deserialize)]
    struct Answer {
        payout_ref: String,
    }
    let next = Arc::new(AtomicU64::new(0));
    let url = Arc::new(format!("{base}/payouts"));
    let token = Arc::new(token.to_owned());
    let mut workers = Vec::new();
    for _ in 0..concurrency {
        let (client, next, url, token) = (client.clone(), Arc::clone(&next), Arc::clone(&url), Arc::clone(&token));
        workers.push(tokio::spawn(async move {
            let mut made = Vec::new();
            let mut status: BTreeMap<String, u64> = BTreeMap::new();
            let mut latency = histogram()?;
            let mut requests = 0u64;
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n >= count {
                    break;
                }
                requests += 1;
                let body = json!({"payee_msisdn": api::random_msisdn(), "amount": AMOUNT, "reference": format!("bench-po-{n}")});
                let sent = Instant::now();
                let answer = client
                    .post(url.as_str())
                    .bearer_auth(token.as_str())
                    .header("Idempotency-Key", Uuid::new_v4().to_string())
                    .json(&body)
                    .send()
                    .await;
                let outcome = match answer {
                    Ok(resp) => {
                        let code = resp.status().as_u16();
                        let text = resp.bytes().await;
                        match (code, text) {
                            (200, Ok(bytes)) => match serde_json::from_slice::<Answer>(&bytes) {
                                Ok(a) => {
                                    record(&mut latency, sent.elapsed());
                                    made.push(a.payout_ref);
                                    "200".to_owned()
                                }
                                Err(_) => "200 unreadable".to_owned(),
                            },
                            (code, Ok(bytes)) => {
                                if !status.keys().any(|k| k == &code.to_string()) {
                                    eprintln!("payouts: POST /payouts answered {code}: {}", String::from_utf8_lossy(&bytes));
                                }
                                code.to_string()
                            }
                            (_, Err(_)) => "transport".to_owned(),
                        }
                    }
                    Err(e) => {
                        if !status.contains_key("transport") {
                            eprintln!("payouts: POST /payouts failed: {e}");
                        }
                        "transport".to_owned()
                    }
                };
                *status.entry(outcome).or_default() += 1;
            }
            anyhow::Ok((made, requests, status, latency))
        }));
    }
    let mut total = Created { refs: HashSet::new(), requests: 0, status: BTreeMap::new(), latency_us: histogram()? };
    for worker in workers {
        let (made, requests, status, latency) = worker.await.context("creation worker panicked")??;
        total.refs.extend(made);
        total.requests += requests;
        for (k, v) in status {
            *total.status.entry(k).or_default() += v;
        }
        total.latency_us.add(&latency)?;
    }
    Ok(total)
}

/// `GET {base}/payouts?limit=100&..` (one page).
async fn list_payouts(client: &Client, base: &str, token: &str, filters: &[(&str, &str)], cursor: Option<&str>) -> Result<PayoutPage> {
    let mut query: Vec<(&str, &str)> = vec![("limit", "100")];
    query.extend_from_slice(filters);
    if let Some(cursor) = cursor {
        query.push(("cursor", cursor));
    }
    let resp = client.get(format!("{base}/payouts")).bearer_auth(token).query(&query).send().await.context("GET /payouts")?;
    let status = resp.status();
    let body = resp.bytes().await?;
    if !status.is_success() {
        bail!("GET /payouts: {status}: {}", String::from_utf8_lossy(&body));
    }
    serde_json::from_slice(&body).context("GET /payouts: unexpected body")
}

/// Polls `GET /payouts?state=pending&limit=1` until it is empty; returns when that was seen, or
/// `None` at the deadline.
async fn wait_no_pending(client: &Client, base: &str, token: &str, deadline: Instant, poll: Duration) -> Option<Instant> {
    let mut warned = false;
    loop {
        let check = client
            .get(format!("{base}/payouts"))
            .bearer_auth(token)
            .query(&[("state", "pending"), ("limit", "1")])
            .send()
            .await
            .map_err(anyhow::Error::from);
        let pending = match check {
            Ok(resp) if resp.status().is_success() => resp.json::<PayoutPage>().await.map(|p| !p.data.is_empty()).map_err(Into::into),
            Ok(resp) => Err(anyhow::anyhow!("GET /payouts?state=pending answered {}", resp.status())),
            Err(e) => Err(e),
        };
        match pending {
            Ok(false) => return Some(Instant::now()),
            Ok(true) => {}
            Err(e) if !warned => {
                eprintln!("payouts: completion check failed: {e:#}");
                warned = true;
            }
            Err(_) => {}
        }
        if Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(poll).await;
    }
}

pub(crate) fn parse_time(s: Option<&str>) -> Option<OffsetDateTime> {
    s.and_then(|s| OffsetDateTime::parse(s, &Rfc3339).ok())
}

fn earliest(acc: Option<OffsetDateTime>, s: Option<&str>) -> Option<OffsetDateTime> {
    match (acc, parse_time(s)) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

fn latest(acc: Option<OffsetDateTime>, s: Option<&str>) -> Option<OffsetDateTime> {
    match (acc, parse_time(s)) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

pub(crate) fn per_sec(n: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        n as f64 / secs
    } else {
        0.0
    }
}
